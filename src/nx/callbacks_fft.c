/* Nx callbacks: FFTs.
 *
 * fft/ifft(out, tensor, opts) with opts :length, :axis, :eps (Nx 0.7 and
 * 0.13 alike); fft2/ifft2(out, tensor, opts) with :lengths, :axes, :eps
 * (Nx 0.13 records Nx.Block.FFT2/IFFT2 that way); rfft/irfft (Nx 0.13's
 * Nx.Block.RFFT/IRFFT) with :length, :axis, :eps. Missing options take
 * Nx's defaults (last axis, the axis size, eps 1.0e-10); a :power_of_two
 * length is resolved as Nx resolves it. The output type and shape are
 * inferred by the typed functions. */
#include <stdio.h>
#include <string.h>
#include "nx/callback.h"
#include "ops/output_shape.h"

#define DEFAULT_EPS 1.0e-10

static emily_status get_eps(emily_call *c, const emily_value *opts, double *eps) {
    *eps = DEFAULT_EPS;
    return emi_opt_float(c, opts, "eps", NULL, eps);
}

static int64_t next_pow2(int64_t n) {
    int64_t p = 1;
    while (p < n && p < ((int64_t)1 << 62)) p *= 2;
    return p;
}

/* A length option: an integer, :power_of_two (of `size`), or absent (0:
 * the typed function's default). */
static emily_status get_length(emily_call *c, const emily_value *v, const char *what, int64_t size, int64_t *out) {
    *out = 0;
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    if (v->kind == EMILY_V_ATOM && strcmp(v->str, "power_of_two") == 0) {
        *out = next_pow2(size);
        return EMILY_OK;
    }
    emily_status s = emi_value_int(c, v, what, out);
    if (s) return s;
    if (*out <= 0)
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be a positive integer, got %lld", what, (long long)*out);
    return EMILY_OK;
}

static emily_status get_axis(emily_call *c, const emily_value *v, const char *what, int *axis) {
    *axis = -1;
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    int64_t a;
    emily_status s = emi_value_int(c, v, what, &a);
    if (s) return s;
    if (a < -1000000 || a > 1000000)
        return emi_call_fail(c, EMILY_ERR_AXIS, "%s %lld out of range", what, (long long)a);
    *axis = (int)a;
    return EMILY_OK;
}

static int64_t axis_size(const emily_tensor *t, int axis) {
    int r = emily_tensor_rank(t), a = axis < 0 ? axis + r : axis;
    return a >= 0 && a < r ? emily_tensor_shape(t)[a] : 0;
}

typedef emily_status (*fft1_fn)(const emily_tensor *, int64_t, int, double, emily_tensor **);

/* The result's type and shape (a :length or :lengths option makes it as
 * large as asked, up to 2^40 elements an axis) checked against Nx's
 * before the work. fft2: the two axes of emi_fft2_output_shape; else the
 * one of emi_fft_output_shape. */
static emily_status check_fft_shape(emily_call *c, emi_fft_kind kind, bool fft2, const emily_tensor *t,
                                    const int64_t *lengths, const int *axes) {
    int64_t *shape = emi_call_alloc(c, sizeof(int64_t) * ((size_t)emily_tensor_rank(t) + 1));
    if (!shape) return EMILY_ERR_MEMORY;
    emily_dtype dtype;
    emily_status s = fft2 ? emi_fft2_output_shape(kind, t, lengths, axes, &dtype, shape)
                          : emi_fft_output_shape(kind, t, lengths[0], axes[0], &dtype, shape);
    return s ? s : emi_call_check_output(c, 0, dtype, emily_tensor_rank(t), shape);
}

static emily_status run1(emily_call *c, emi_fft_kind kind, fft1_fn fn) {
    emily_tensor *t, *out;
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 1, &t, &opts);
    if (s) return s;
    int axis;
    int64_t length;
    double eps;
    if ((s = get_axis(c, emi_opt_get(opts, "axis"), "option :axis", &axis)) ||
        (s = get_length(c, emi_opt_get(opts, "length"), "option :length", axis_size(t, axis), &length)) ||
        (s = get_eps(c, opts, &eps)) || (s = check_fft_shape(c, kind, false, t, &length, &axis)))
        return s;
    if ((s = fn(t, length, axis, eps, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_fft(emily_call *c) { return run1(c, EMI_FFT, emily_fft); }
emily_status emi_cb_ifft(emily_call *c) { return run1(c, EMI_IFFT, emily_ifft); }
emily_status emi_cb_rfft(emily_call *c) { return run1(c, EMI_RFFT, emily_rfft); }
emily_status emi_cb_irfft(emily_call *c) { return run1(c, EMI_IRFFT, emily_irfft); }

typedef emily_status (*fft2_fn)(const emily_tensor *, const int64_t[2], const int[2], double, emily_tensor **);

static emily_status run2(emily_call *c, emi_fft_kind kind, fft2_fn fn) {
    emily_tensor *t, *out;
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 1, &t, &opts);
    if (s) return s;
    int axes[2] = {-2, -1};
    const emily_value *av = emi_opt_get(opts, "axes");
    if (av && av->kind != EMILY_V_NIL) {
        int *a, na;
        if ((s = emi_value_axes(c, av, "option :axes", &a, &na))) return s;
        if (na != 2) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "expected :axes to be a list with 2 axes, got %d", na);
        axes[0] = a[0];
        axes[1] = a[1];
    }
    int64_t lengths[2] = {0, 0};
    const emily_value *lv = emi_opt_get(opts, "lengths");
    if (lv && lv->kind != EMILY_V_NIL) {
        if ((lv->kind != EMILY_V_LIST && lv->kind != EMILY_V_TUPLE) || lv->n != 2)
            return emi_call_fail(c, EMILY_ERR_ARGUMENT, "expected :lengths to be a list of 2 lengths or :power_of_two");
        for (int i = 0; i < 2; i++)
            if ((s = get_length(c, &lv->items[i], "option :lengths", axis_size(t, axes[i]), &lengths[i]))) return s;
    }
    double eps;
    if ((s = get_eps(c, opts, &eps)) || (s = check_fft_shape(c, kind, true, t, lengths, axes))) return s;
    if ((s = fn(t, lengths, axes, eps, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_fft2(emily_call *c) { return run2(c, EMI_FFT, emily_fft2); }
emily_status emi_cb_ifft2(emily_call *c) { return run2(c, EMI_IFFT, emily_ifft2); }
