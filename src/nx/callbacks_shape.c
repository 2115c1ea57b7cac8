/* Nx callbacks: shape family (reshape, squeeze, broadcast, transpose, pad,
 * reverse, concatenate, stack, slice, put_slice). */
#include <stdio.h>
#include <string.h>
#include "nx/callback.h"
#include "ops/output_shape.h"

/* reshape(out, tensor): the shape is Nx's option, taken from the template
 * in both modes. */
emily_status emi_cb_reshape(emily_call *c) {
    emily_tensor *t, *r;
    int rank;
    const int64_t *shape;
    emily_status s = emi_call_tensors(c, 1, 1, 1, &t);
    if (!s) s = emi_call_template(c, 0, NULL, &rank, &shape);
    if (!s) s = emily_reshape(t, rank, shape, &r);
    return s ? s : emi_call_return(c, r);
}

/* The arguments of the (out, tensor, axes) callbacks: squeeze, transpose
 * and reverse (axes nil: *n = -1). */
static emily_status tensor_axes(emily_call *c, emily_tensor **t, int **axes, int *n) {
    emily_status s = emi_call_tensors(c, 2, 2, 1, t);
    return s ? s : emi_value_axes(c, emi_call_arg(c, 1), "axes", axes, n);
}

/* squeeze(out, tensor, axes) */
emily_status emi_cb_squeeze(emily_call *c) {
    emily_tensor *t, *r;
    int *axes, n;
    emily_status s = tensor_axes(c, &t, &axes, &n);
    if (!s) s = emily_squeeze(t, n < 0 ? 0 : n, axes, &r);
    return s ? s : emi_call_return(c, r);
}

/* broadcast(out, tensor, shape, axes) */
emily_status emi_cb_broadcast(emily_call *c) {
    emily_tensor *t, *r;
    int64_t *shape;
    int rank, *axes, n;
    emily_status s = emi_call_tensors(c, 3, 3, 1, &t);
    if (!s) s = emi_value_int_list(c, emi_call_arg(c, 1), "shape", &shape, &rank);
    if (!s) s = emi_value_axes(c, emi_call_arg(c, 2), "axes", &axes, &n);
    if (!s && n >= 0 && n != emily_tensor_rank(t))
        s = emi_call_fail(c, EMILY_ERR_AXIS, "%d axes given for a tensor of rank %d", n, emily_tensor_rank(t));
    if (!s) s = emily_broadcast(t, rank, shape, n < 0 ? NULL : axes, &r);
    return s ? s : emi_call_return(c, r);
}

/* transpose(out, tensor, axes) */
emily_status emi_cb_transpose(emily_call *c) {
    emily_tensor *t, *r;
    int *axes, n;
    emily_status s = tensor_axes(c, &t, &axes, &n);
    if (!s && n >= 0 && n != emily_tensor_rank(t))
        s = emi_call_fail(c, EMILY_ERR_AXIS, "a permutation of %d axes given for a tensor of rank %d", n,
                          emily_tensor_rank(t));
    if (!s) s = emily_transpose(t, n < 0 ? NULL : axes, &r);
    return s ? s : emi_call_return(c, r);
}

/* pad(out, tensor, pad_value, [{lo, hi, interior}, ...]) */
emily_status emi_cb_pad(emily_call *c) {
    emily_tensor *tv[2], *r;
    emily_status s = emi_call_tensors(c, 3, 3, 2, tv);
    if (s) return s;
    emily_tensor *t = tv[0], *value = tv[1];
    const emily_value *cfg = emi_call_arg(c, 2);
    if (!cfg || (cfg->kind != EMILY_V_LIST && cfg->kind != EMILY_V_TUPLE))
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "the padding configuration must be a list of {lo, hi, interior}");
    int rank = emily_tensor_rank(t);
    if ((int)cfg->n != rank)
        return emi_call_fail(c, EMILY_ERR_SHAPE, "the padding configuration has %zu entries for a tensor of rank %d",
                             cfg->n, rank);
    int64_t *lo = emi_call_alloc(c, sizeof(int64_t) * (3 * cfg->n + 1));
    if (!lo) return EMILY_ERR_MEMORY;
    int64_t *hi = lo + cfg->n, *in = hi + cfg->n;
    for (size_t i = 0; i < cfg->n; i++) {
        int64_t *v;
        int n;
        char what[48];
        snprintf(what, sizeof what, "padding entry %zu", i);
        s = emi_value_int_list(c, &cfg->items[i], what, &v, &n);
        if (s) return s;
        if (n != 3 && n != 2) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be {lo, hi, interior}", what);
        lo[i] = v[0];
        hi[i] = v[1];
        in[i] = n == 3 ? v[2] : 0;
    }
    /* Nx types a number pad value by merge_number: in RUN mode the
     * template's type is the answer, so the value is cast to it first. */
    emily_dtype want = emi_call_out_type(c),
                merged = emily_type_merge(emily_tensor_dtype(t), emily_tensor_dtype(value));
    bool cast = want != EMILY_DTYPE_AUTO && merged != want;
    /* the padded shape (which grows with the padding, not the input)
     * checked against Nx's before the work */
    int64_t shape[EMILY_MAX_RANK];
    if ((s = emi_pad_output_shape(t, lo, hi, in, shape)) ||
        (s = emi_call_check_output(c, 0, cast ? emily_type_merge(emily_tensor_dtype(t), want) : merged, rank, shape)))
        return s;
    emily_tensor *vc = NULL;
    if (cast) {
        s = emily_as_type(value, want, &vc);
        if (s) return s;
        value = vc;
    }
    s = emily_pad(t, value, lo, hi, in, &r);
    emily_tensor_release(vc);
    return s ? s : emi_call_return(c, r);
}

/* reverse(out, tensor, axes) */
emily_status emi_cb_reverse(emily_call *c) {
    emily_tensor *t, *r;
    int *axes, n;
    emily_status s = tensor_axes(c, &t, &axes, &n);
    if (!s && n < 0) {
        /* nil: every axis */
        n = emily_tensor_rank(t);
        axes = emi_call_alloc(c, sizeof(int) * ((size_t)n + 1));
        if (!axes) return EMILY_ERR_MEMORY;
        for (int i = 0; i < n; i++) axes[i] = i;
    }
    if (!s) s = emily_reverse(t, n, axes, &r);
    return s ? s : emi_call_return(c, r);
}

/* concatenate(out, tensors, axis) and stack(out, tensors, axis); c->op:
 * true for stack */
emily_status emi_cb_concat_or_stack(emily_call *c) {
    bool stack = c->op;
    emily_status s = emi_call_arity(c, 2, 2);
    emily_tensor **ts, *r;
    int n;
    int64_t axis;
    if (!s) s = emi_call_tensor_list(c, 0, &ts, &n);
    if (!s) s = emi_call_int(c, 1, &axis);
    if (!s && (axis < -1000000 || axis > 1000000))
        s = emi_call_fail(c, EMILY_ERR_AXIS, "axis %lld out of range", (long long)axis);
    if (s) return s;
    const emily_tensor *const *cts = (const emily_tensor *const *)ts;
    s = stack ? emily_stack(n, cts, (int)axis, emi_call_out_type(c), &r)
              : emily_concatenate(n, cts, (int)axis, emi_call_out_type(c), &r);
    return s ? s : emi_call_return(c, r);
}

/* Start indices: integers or scalar integer tensors, one per axis. */
static emily_status start_indices(emily_call *c, size_t i, int rank, int64_t **starts) {
    int n;
    emily_status s = emi_value_int_list(c, emi_call_arg(c, i), "start indices", starts, &n);
    if (!s && n != rank)
        s = emi_call_fail(c, EMILY_ERR_SHAPE, "%d start indices given for a tensor of rank %d", n, rank);
    return s;
}

/* slice(out, tensor, start_indices, lengths, strides) */
emily_status emi_cb_slice(emily_call *c) {
    emily_tensor *t, *r;
    int64_t *starts, *lengths, *strides;
    int nl, ns;
    emily_status s = emi_call_tensors(c, 4, 4, 1, &t);
    if (s) return s;
    int rank = emily_tensor_rank(t);
    s = start_indices(c, 1, rank, &starts);
    if (!s) s = emi_value_int_list(c, emi_call_arg(c, 2), "lengths", &lengths, &nl);
    if (!s) s = emi_value_int_list(c, emi_call_arg(c, 3), "strides", &strides, &ns);
    if (!s && (nl != rank || ns != rank))
        s = emi_call_fail(c, EMILY_ERR_SHAPE, "%d lengths and %d strides given for a tensor of rank %d", nl, ns, rank);
    if (!s) s = emily_slice(t, starts, lengths, strides, &r);
    return s ? s : emi_call_return(c, r);
}

/* put_slice(out, tensor, start_indices, slice) */
emily_status emi_cb_put_slice(emily_call *c) {
    emily_status s = emi_call_arity(c, 3, 3);
    emily_tensor *t, *u, *r;
    int64_t *starts;
    if (!s) s = emi_call_tensor(c, 0, &t);
    if (!s) s = emi_call_tensor(c, 2, &u);
    if (!s) s = start_indices(c, 1, emily_tensor_rank(t), &starts);
    if (!s) s = emily_put_slice(t, starts, u, emi_call_out_type(c), &r);
    return s ? s : emi_call_return(c, r);
}
