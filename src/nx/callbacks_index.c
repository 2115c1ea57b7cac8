/* Nx callbacks: index family.
 *
 * take(out, tensor, indices, opts)            Nx 0.13: Nx.Block.Take's
 * take_along_axis(out, tensor, indices, opts)   fields (axis) as opts
 * take(out, tensor, indices, axis)             Nx 0.7: a bare axis
 * take_along_axis(out, tensor, indices, axis)
 * gather(out, tensor, indices, opts)           opts: axes
 * indexed_add(out, target, indices, updates, opts)   opts: axes
 * indexed_put(out, target, indices, updates, opts)
 *
 * Output shapes follow from the arguments; the type of indexed_add/put
 * is Nx.Type.merge(target, updates), which Nx decides from the inputs
 * (the template's type in RUN mode, inferred in INFER mode). */
#include <limits.h>
#include "nx/callback.h"
#include "ops/output_shape.h"

/* The axis argument: an opts list with :axis (default 0) or an integer. */
static emily_status axis_arg(emily_call *c, size_t i, int *axis) {
    *axis = 0;
    const emily_value *v = emi_call_arg(c, i);
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    int64_t a = 0;
    emily_status s = v->kind == EMILY_V_OPTS ? emi_opt_int(c, v, "axis", "axis", &a) : emi_value_int(c, v, "axis", &a);
    if (s) return s;
    if (a < INT_MIN || a > INT_MAX) return emi_call_fail(c, EMILY_ERR_AXIS, "axis %lld is out of range", (long long)a);
    *axis = (int)a;
    return EMILY_OK;
}

/* The :axes option of the opts argument at i (NULL when absent/nil). */
static emily_status axes_opt(emily_call *c, size_t i, int **axes, int *naxes) {
    *axes = NULL;
    *naxes = -1;
    const emily_value *v = emi_call_arg(c, i);
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    const emily_value *opts;
    emily_status s = emi_call_opts(c, i, &opts);
    if (s) return s;
    const emily_value *av = emi_opt_get(opts, "axes");
    if (!av) return EMILY_OK;
    return emi_value_axes(c, av, "axes", axes, naxes);
}

/* take's and gather's results grow with both operands (every index
 * picks a whole slice): their shapes are checked against Nx's before the
 * work (take: at axis; gather: at naxes axes). take_along_axis's result
 * has its indices' shape and indexed_add/put's their target's. */
static emily_status check_index_shape(emily_call *c, bool gather, const emily_tensor *t, const emily_tensor *indices,
                                      int axis, int naxes, const int *axes) {
    size_t room = (size_t)emily_tensor_rank(t) + (size_t)emily_tensor_rank(indices) + 1;
    int64_t *shape = emi_call_alloc(c, sizeof(int64_t) * room);
    if (!shape) return EMILY_ERR_MEMORY;
    int rank;
    emily_status s = gather ? emi_gather_output_shape(t, indices, naxes, axes, &rank, shape)
                            : emi_take_output_shape(t, indices, axis, &rank, shape);
    return s ? s : emi_call_check_output(c, 0, emily_tensor_dtype(t), rank, shape);
}

/* take and take_along_axis (c->op true) */
emily_status emi_cb_take(emily_call *c) {
    emily_tensor *in[2], *out;
    int axis;
    emily_status s = emi_call_tensors(c, 2, 3, 2, in);
    if (!s) s = axis_arg(c, 2, &axis);
    if (!s && !c->op) s = check_index_shape(c, false, in[0], in[1], axis, 0, NULL);
    if (!s) s = c->op ? emily_take_along_axis(in[0], in[1], axis, &out) : emily_take(in[0], in[1], axis, &out);
    return s ? s : emi_call_return(c, out);
}

emily_status emi_cb_gather(emily_call *c) {
    emily_tensor *in[2], *out;
    int *axes, naxes;
    emily_status s = emi_call_tensors(c, 2, 3, 2, in);
    if (!s) s = axes_opt(c, 2, &axes, &naxes);
    if (!s) s = check_index_shape(c, true, in[0], in[1], 0, naxes, axes);
    if (!s) s = emily_gather(in[0], in[1], naxes, axes, &out);
    return s ? s : emi_call_return(c, out);
}

/* c->op: true for indexed_add, false for indexed_put */
emily_status emi_cb_indexed(emily_call *c) {
    bool add = c->op;
    emily_tensor *in[3], *out;
    int *axes, naxes;
    emily_status s = emi_call_tensors(c, 3, 4, 3, in);
    if (!s) s = axes_opt(c, 3, &axes, &naxes);
    if (s) return s;
    s = add ? emily_indexed_add(in[0], in[1], in[2], naxes, axes, emi_call_out_type(c), &out)
            : emily_indexed_put(in[0], in[1], in[2], naxes, axes, emi_call_out_type(c), &out);
    return s ? s : emi_call_return(c, out);
}
