/* Nx callbacks: window family.
 *
 * window_sum|product|max|min(out, tensor, window_dimensions, opts)
 *     opts: padding ([{lo, hi}, ...]), strides, window_dilations
 * window_scatter_max|min(out, tensor, source, init_value, window_dimensions, opts)
 *     opts: padding, strides
 * Nx has already turned :valid/:same padding and integer strides into
 * per-axis lists; the output type and shape are inferred in both modes. */
#include <stdio.h>
#include "nx/callback.h"
#include "ops/output_shape.h"

typedef struct win_args {
    int rank;
    int64_t *window, *strides, *lo, *hi, *dilations;
} win_args;

/* A per-axis integer list option (absent or nil: NULL). */
static emily_status opt_list(emily_call *c, const emily_value *opts, const char *key, int rank, int64_t **out) {
    *out = NULL;
    const emily_value *v = opts ? emi_opt_get(opts, key) : NULL;
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    if (v->kind == EMILY_V_INT) {
        int64_t *a = emi_call_alloc(c, sizeof(int64_t) * ((size_t)rank + 1));
        if (!a) return EMILY_ERR_MEMORY;
        for (int d = 0; d < rank; d++) a[d] = v->i;
        *out = a;
        return EMILY_OK;
    }
    int n;
    emily_status s = emi_value_int_list(c, v, key, out, &n);
    if (s) return s;
    if (n != rank) return emi_call_fail(c, EMILY_ERR_SHAPE, "%s has %d entries for a tensor of rank %d", key, n, rank);
    return EMILY_OK;
}

static emily_status decode_window(emily_call *c, const emily_tensor *t, size_t wi, bool dilations, win_args *a) {
    emily_status s;
    a->rank = emily_tensor_rank(t);
    int n;
    if ((s = emi_value_int_list(c, emi_call_arg(c, wi), "window_dimensions", &a->window, &n))) return s;
    if (n != a->rank)
        return emi_call_fail(c, EMILY_ERR_SHAPE, "window_dimensions has %d entries for a tensor of rank %d", n,
                             a->rank);
    const emily_value *opts = NULL;
    if (c->nargs > wi + 1 && (s = emi_call_opts(c, wi + 1, &opts))) return s;
    if ((s = opt_list(c, opts, "strides", a->rank, &a->strides))) return s;
    a->dilations = NULL;
    if (dilations && (s = opt_list(c, opts, "window_dilations", a->rank, &a->dilations))) return s;
    a->lo = a->hi = NULL;
    const emily_value *pad = opts ? emi_opt_get(opts, "padding") : NULL;
    if (pad && pad->kind != EMILY_V_NIL) {
        if (pad->kind != EMILY_V_LIST && pad->kind != EMILY_V_TUPLE)
            return emi_call_fail(c, EMILY_ERR_ARGUMENT, "padding must be a list of {lo, hi}");
        if ((int)pad->n != a->rank)
            return emi_call_fail(c, EMILY_ERR_SHAPE, "padding has %zu entries for a tensor of rank %d", pad->n,
                                 a->rank);
        a->lo = emi_call_alloc(c, sizeof(int64_t) * (2 * (size_t)a->rank + 1));
        if (!a->lo) return EMILY_ERR_MEMORY;
        a->hi = a->lo + a->rank;
        for (int d = 0; d < a->rank; d++) {
            int64_t *v;
            int m;
            char what[48];
            snprintf(what, sizeof what, "padding entry %d", d);
            if ((s = emi_value_int_list(c, &pad->items[d], what, &v, &m))) return s;
            if (m != 2) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be {lo, hi}", what);
            a->lo[d] = v[0];
            a->hi[d] = v[1];
        }
    }
    return EMILY_OK;
}

/* c->op: the emily_window_op */
emily_status emi_cb_window_reduce(emily_call *c) {
    emily_window_op op = (emily_window_op)c->op;
    emily_tensor *t, *r;
    win_args a;
    emily_status s = emi_call_tensors(c, 2, 3, 1, &t);
    if (!s) s = decode_window(c, t, 1, true, &a);
    if (s) return s;
    /* the window positions (padding can make them many more than the
     * input's elements) checked against Nx's shape before the work */
    int64_t shape[EMILY_MAX_RANK];
    if ((s = emi_window_output_shape(c->name, t, a.rank, a.window, a.strides, a.lo, a.hi, a.dilations, shape)) ||
        (s = emi_call_check_output(c, 0, emily_tensor_dtype(t), a.rank, shape)))
        return s;
    s = emily_window_reduce(op, t, a.rank, a.window, a.strides, a.lo, a.hi, a.dilations, &r);
    return s ? s : emi_call_return(c, r);
}

/* c->op: true for window_scatter_max, false for window_scatter_min */
emily_status emi_cb_window_scatter(emily_call *c) {
    bool is_max = c->op;
    emily_tensor *in[3], *r;
    win_args a;
    emily_status s = emi_call_tensors(c, 4, 5, 3, in);
    if (!s) s = decode_window(c, in[0], 3, false, &a);
    if (s) return s;
    /* the result is the input's shape, but the work grows with the
     * window, which padding can make huge: Nx's template first */
    if ((s = emi_call_check_output(c, 0, emily_type_merge(emily_tensor_dtype(in[1]), emily_tensor_dtype(in[2])),
                                   emily_tensor_rank(in[0]), emily_tensor_shape(in[0]))))
        return s;
    s = is_max ? emily_window_scatter_max(in[0], in[1], in[2], a.rank, a.window, a.strides, a.lo, a.hi, &r)
               : emily_window_scatter_min(in[0], in[1], in[2], a.rank, a.window, a.strides, a.lo, a.hi, &r);
    return s ? s : emi_call_return(c, r);
}
