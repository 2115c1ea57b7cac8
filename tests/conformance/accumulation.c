/* The accumulation rules: how far a float sum may be from the reference's.
 *
 * Each output element of these callbacks is a k-term sum (of products for
 * dot and conv) whose rounding error is bounded by the standard result
 * (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1):
 *
 *     |fl(sum a_i b_i) - sum a_i b_i| <= gamma_k * sum |a_i| |b_i|,
 *     gamma_k = k u / (1 - k u),
 *
 * u the accumulation type's unit roundoff, whatever the order of the sums
 * and with or without fused multiply-adds; for complex products
 * sqrt(2) gamma_{k+2} (the products' own rounding). Sum |a_i||b_i| (or
 * sum |a_i|) is computed by running the same callback on |a| and |b|
 * widened to f64 at HIGHEST precision.
 *
 * - FAST dot precision (dot and conv): an f32 dot sums in f32 (f16/bf16
 *   too, rounded once at the end) and an f64 dot in f64, in BLAS's order.
 *   A result passes within the sum of its bound and the reference's (the
 *   reference summed in f64 in order: u = 2^-53).
 * - f64 and c128 sums (sum, cumulative_sum, window_sum, dot, conv; the
 *   corpus README's rule): the reference's in-order f64 sum carries its
 *   own error of up to gamma_k(2^-53) sum |a_i|, and Emily's compensated
 *   sums are nearly exact, so a result passes within the reference's
 *   bound of the reference's answer.
 *
 * Both add the usual ULP tolerance for the output's own rounding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "accumulation.h"
#include "compare.h"
#include "../float_parts.h"

static bool is_product_sum(const char *op) { return strcmp(op, "dot") == 0 || strcmp(op, "conv") == 0; }

bool accumulation_rule_op(const char *op) { return is_product_sum(op); }

bool f64_sum_rule_op(const char *op) {
    return is_product_sum(op) || strcmp(op, "sum") == 0 || strcmp(op, "cumulative_sum") == 0 ||
           strcmp(op, "window_sum") == 0;
}

/* The tensors of a call that are multiplied and summed (dot, conv), or
 * the one that is summed (j == i). */
static void operand_positions(const char *op, size_t *i, size_t *j) {
    if (strcmp(op, "dot") == 0) {
        *i = 0;
        *j = 3;
    } else if (strcmp(op, "conv") == 0) {
        *i = 0;
        *j = 1;
    } else {
        *i = 0;
        *j = 0;
    }
}

/* The option `key` of a call's trailing opts, or NULL. */
static const emily_value *option(const emily_value *args, size_t nargs, const char *key) {
    for (size_t a = 0; a < nargs; a++)
        if (args[a].kind == EMILY_V_OPTS)
            for (size_t n = 0; n < args[a].n; n++)
                if (strcmp(args[a].keys[n], key) == 0) return &args[a].items[n];
    return NULL;
}

/* Terms summed per output element: the contracted dims for dot (a's
 * contract axes), the kernel's elements per output channel for conv, the
 * input's elements per output element for sum, the axis's length for
 * cumulative_sum and the window's elements for window_sum. */
static int64_t terms_per_output(const char *op, const emily_value *args, size_t nargs, int64_t out_elements) {
    const emily_tensor *x = args[0].tensor;
    if (strcmp(op, "sum") == 0) return out_elements > 0 ? emily_tensor_size(x) / out_elements : 0;
    if (strcmp(op, "cumulative_sum") == 0) {
        const emily_value *axis = option(args, nargs, "axis");
        int r = emily_tensor_rank(x);
        int64_t ax = axis && axis->kind == EMILY_V_INT ? axis->i : 0;
        if (ax < 0) ax += r;
        return ax >= 0 && ax < r ? emily_tensor_shape(x)[ax] : emily_tensor_size(x);
    }
    if (strcmp(op, "window_sum") == 0) {
        int64_t k = 1;
        const emily_value *w = nargs > 1 ? &args[1] : NULL;
        for (size_t n = 0; w && (w->kind == EMILY_V_TUPLE || w->kind == EMILY_V_LIST) && n < w->n; n++)
            k *= w->items[n].i;
        return k;
    }
    if (strcmp(op, "dot") == 0) {
        const emily_tensor *a = args[0].tensor;
        const emily_value *axes = &args[1];
        int64_t k = 1;
        int r = emily_tensor_rank(a);
        for (size_t n = 0; (axes->kind == EMILY_V_LIST || axes->kind == EMILY_V_TUPLE) && n < axes->n; n++) {
            int64_t ax = axes->items[n].i;
            if (ax < 0) ax += r;
            if (ax >= 0 && ax < r) k *= emily_tensor_shape(a)[ax];
        }
        return k;
    }
    const emily_tensor *kernel = args[1].tensor;
    int r = emily_tensor_rank(kernel);
    int out_axis = 0; /* the kernel axis holding output channels */
    if (nargs > 2 && args[2].kind == EMILY_V_OPTS)
        for (size_t n = 0; n < args[2].n; n++)
            if (strcmp(args[2].keys[n], "kernel_permutation") == 0 && args[2].items[n].kind == EMILY_V_LIST &&
                args[2].items[n].n > 0)
                out_axis = (int)args[2].items[n].items[0].i;
    int64_t out_channels = out_axis < r ? emily_tensor_shape(kernel)[out_axis] : 1;
    return out_channels > 0 ? emily_tensor_size(kernel) / out_channels : 0;
}

static double gamma_k(double k, double u) { return k * u < 0.5 ? k * u / (1 - k * u) : INFINITY; }

/* |x| as f64 (complex: the modulus). */
static emily_status abs_f64(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *m;
    emily_status s = emily_unary(EMILY_ABS, x, &m);
    if (s) return s;
    s = emily_as_type(m, EMILY_F64, out);
    emily_tensor_release(m);
    return s;
}

/* The value of one float part at p. */
static double part_value(emily_dtype part, const unsigned char *p) {
    uint64_t bits;
    int width;
    return fp_part(part, p, &bits, &width);
}

/* The spacing of floats of `part` at v (one ULP). */
static double ulp_at(emily_dtype part, double v) {
    int mant = part == EMILY_F16         ? 11
               : part == EMILY_BF16      ? 8
               : part == EMILY_F32       ? 24
               : part == EMILY_F8_E5M2   ? 3
               : part == EMILY_F8_E4M3FN ? 4
                                         : 53;
    int min_exp = part == EMILY_F16 || part == EMILY_F8_E5M2 ? -14
                  : part == EMILY_F8_E4M3FN                  ? -6
                  : part == EMILY_BF16 || part == EMILY_F32  ? -126
                                                             : -1022;
    int e;
    frexp(fabs(v), &e); /* v = f * 2^e, f in [0.5, 1) */
    if (e - 1 < min_exp) e = min_exp + 1;
    return ldexp(1.0, e - mant);
}

bool accumulation_close(const char *op, emily_device dev, const emily_value *out_template, const emily_value *args,
                        size_t nargs, emily_dtype out_type, const void *got, const void *want, size_t n, bool fast,
                        char *msg, size_t ms) {
    size_t ia, ib;
    operand_positions(op, &ia, &ib);
    if (ib >= nargs || args[ia].kind != EMILY_V_TENSOR || args[ib].kind != EMILY_V_TENSOR) {
        snprintf(msg, ms, "accumulation rule: no operands");
        return false;
    }
    const emily_tensor *a = args[ia].tensor, *b = args[ib].tensor;
    bool products = ia != ib;
    bool complex = products &&
                   (emily_dtype_is_complex(emily_tensor_dtype(a)) || emily_dtype_is_complex(emily_tensor_dtype(b)));
    emily_dtype part = out_type == EMILY_C64 ? EMILY_F32 : out_type == EMILY_C128 ? EMILY_F64 : out_type;
    /* FAST sums f16, bf16, f32 and c64 in f32, f64 and c128 in f64 */
    double u = part == EMILY_F64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
    double k = (double)terms_per_output(op, args, nargs, (int64_t)n) + (complex ? 2 : 0);
    double scale = complex ? sqrt(2.0) : 1.0;
    double reference_bound = gamma_k(k, ldexp(1.0, -53));
    double bound_per_sum = scale * (fast ? gamma_k(k, u) + reference_bound : reference_bound);

    emily_tensor *aa = NULL, *ab = NULL;
    emily_value *wide = calloc(nargs, sizeof *wide);
    emily_dispatch_result sums = {0};
    bool ok = false;
    emily_dot_precision saved;
    if (!wide || abs_f64(a, &aa) || (products && abs_f64(b, &ab))) {
        snprintf(msg, ms, "accumulation rule: %s", emily_last_error());
        goto done;
    }
    memcpy(wide, args, nargs * sizeof *wide);
    wide[ia].tensor = aa;
    if (products) wide[ib].tensor = ab;
    emily_dot_set_thread_precision(EMILY_DOT_PRECISION_HIGHEST, &saved);
    emily_value wide_out = *out_template; /* same shape, f64 */
    wide_out.dtype = EMILY_F64;
    emily_status s = emily_dispatch(op, dev, &wide_out, wide, nargs, EMILY_DISPATCH_RUN, &sums);
    emily_dot_set_thread_precision(saved, NULL);
    if (s || sums.n != 1 || (size_t)emily_tensor_size(sums.tensors[0]) != n) {
        snprintf(msg, ms, "accumulation rule: sum of |a||b| failed: %s", s ? emily_last_error() : "shape");
        goto done;
    }
    double *mag = malloc(n * sizeof *mag + 1);
    if (!mag || emily_to_binary(sums.tensors[0], mag, n * sizeof *mag)) {
        free(mag);
        snprintf(msg, ms, "accumulation rule: out of memory");
        goto done;
    }
    size_t ps = emily_dtype_size(part), parts = emily_dtype_is_complex(out_type) ? 2 : 1;
    ok = true;
    for (size_t i = 0; ok && i < n * parts; i++) {
        double g = part_value(part, (const unsigned char *)got + i * ps);
        double w = part_value(part, (const unsigned char *)want + i * ps);
        if (isnan(g) || isnan(w)) ok = isnan(g) && isnan(w);
        else if (isinf(g) || isinf(w)) ok = g == w;
        else {
            double allowed = bound_per_sum * mag[i / parts] + compare_max_ulp(part) * ulp_at(part, w);
            ok = fabs(g - w) <= allowed;
        }
        if (!ok)
            snprintf(msg, ms, "element %zu: got %.17g, want %.17g, beyond the accumulation bound %.3g", i / parts, g, w,
                     bound_per_sum * mag[i / parts]);
    }
    free(mag);
done:
    emily_dispatch_result_release(&sums);
    emily_tensor_release(aa);
    emily_tensor_release(ab);
    free(wide);
    return ok;
}
