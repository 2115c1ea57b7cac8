/* Reductions: sum, product, reduce_max, reduce_min, all, any (over a set
 * of axes), argmax/argmin (over one axis or the flattened tensor) and
 * all_close. Validation and Nx's output types live here; the device's
 * reduce/argreduce/all_close kernels do the work on a contiguous output
 * that keeps the reduced axes at size 1, which becomes a view without
 * them unless the caller keeps them. */
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"

static const char *const reduce_names[EMILY_REDUCE_OP_COUNT] = {"sum",        "product", "reduce_max",
                                                                "reduce_min", "all",     "any"};

/* The output of a kernel that kept reduced axes at size 1, without them
 * unless keep is set (a view; takes the reference to `full`). */
static emily_status drop_axes(emily_tensor *full, const bool *mask, bool keep, emily_tensor **out) {
    if (keep) {
        *out = full;
        return EMILY_OK;
    }
    int64_t *shape = malloc(sizeof(int64_t) * ((size_t)full->rank + 1));
    if (!shape) {
        emily_tensor_release(full);
        return emily_error(EMILY_ERR_MEMORY, "reduce: out of host memory");
    }
    int r = 0;
    for (int i = 0; i < full->rank; i++)
        if (!mask[i]) shape[r++] = full->shape[i];
    emily_status s = emi_tensor_view(full, r, shape, NULL, full->offset, out);
    emily_tensor_release(full);
    free(shape);
    return s;
}

/* Nx's output type of a reduction of a `t`-typed tensor. */
static emily_status reduce_type(const char *op, emily_reduce_op rop, emily_dtype t, emily_dtype out_type,
                                emily_dtype *dt) {
    if (out_type != EMILY_DTYPE_AUTO && !emily_dtype_valid(out_type))
        return emily_error(EMILY_ERR_TYPE, "%s: invalid output type %d", op, (int)out_type);
    switch (rop) {
    case EMILY_REDUCE_SUM:
    case EMILY_REDUCE_PRODUCT:
        *dt = out_type == EMILY_DTYPE_AUTO ? emily_type_to_aggregate(t) : out_type;
        return EMILY_OK;
    case EMILY_REDUCE_MAX:
    case EMILY_REDUCE_MIN:
        *dt = out_type == EMILY_DTYPE_AUTO ? t : out_type;
        if (emily_dtype_is_complex(*dt))
            return emily_error(EMILY_ERR_TYPE, "%s: complex tensors (%s) are not ordered", op, emily_dtype_name(*dt));
        return EMILY_OK;
    default:
        if (out_type != EMILY_DTYPE_AUTO && out_type != EMILY_U8)
            return emily_error(EMILY_ERR_TYPE, "%s: the output type is u8, %s was asked", op,
                               emily_dtype_name(out_type));
        *dt = EMILY_U8;
        return EMILY_OK;
    }
}

emily_status emily_reduce(emily_reduce_op rop, const emily_tensor *t, int naxes, const int *axes, bool keep_axes,
                          emily_dtype out_type, emily_tensor **out) {
    if ((unsigned)rop >= EMILY_REDUCE_OP_COUNT)
        return emily_error(EMILY_ERR_ARGUMENT, "reduce: unknown reduction %d", (int)rop);
    const char *op = reduce_names[rop];
    const emily_engine *e;
    emily_status s = emi_check_inputs(op, out, 1, &t, (const char *const[]){"tensor"}, &e);
    if (s) return s;
    if (axes && naxes < 0) return emily_error(EMILY_ERR_AXIS, "%s: negative axis count %d", op, naxes);
    if (!axes && naxes > 0) return emily_error(EMILY_ERR_ARGUMENT, "%s: axes is NULL", op);
    emily_dtype dt = EMILY_DTYPE_AUTO;
    if ((s = reduce_type(op, rop, t->dtype, out_type, &dt))) return s;
    bool *mask = calloc((size_t)t->rank + 1, 1);
    if (!mask) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    if (axes) {
        s = emi_norm_axes(op, naxes, axes, t->rank, NULL, mask);
        if (s) {
            free(mask);
            return s;
        }
    } else {
        for (int i = 0; i < t->rank; i++) mask[i] = true;
    }
    if (axes && naxes == 0) {
        /* Nx reduces nothing: the tensor converted to the output type */
        free(mask);
        return emi_convert_to(t, dt, out);
    }
    int64_t *shape = malloc(sizeof(int64_t) * ((size_t)t->rank + 1));
    if (!shape) {
        free(mask);
        return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    }
    int64_t outsize = 1;
    bool empty_axis = false;
    for (int i = 0; i < t->rank; i++) {
        shape[i] = mask[i] ? 1 : t->shape[i];
        outsize *= shape[i];
        if (mask[i] && t->shape[i] == 0) empty_axis = true;
    }
    if ((rop == EMILY_REDUCE_MAX || rop == EMILY_REDUCE_MIN) && empty_axis && outsize > 0) {
        free(mask);
        free(shape);
        return emily_error(EMILY_ERR_SHAPE, "%s: cannot reduce the empty axes of a tensor of shape %s", op,
                           EMILY_SHAPE_STR(t));
    }
    emily_tensor *src = NULL, *full = NULL;
    bool logical = rop == EMILY_REDUCE_ALL || rop == EMILY_REDUCE_ANY;
    if (logical) {
        /* all/any read any dtype */
        emily_tensor_retain((emily_tensor *)t);
        src = (emily_tensor *)t;
    } else {
        s = emi_convert_to(t, dt, &src);
    }
    if (!s) s = emi_empty_like_device(t, dt, t->rank, shape, &full);
    if (!s && full->size > 0) {
        if (!emi_engine_supports(e, EMI_KERNEL_REDUCE, rop, src->dtype))
            s = emily_error(EMILY_ERR_UNSUPPORTED, "%s: not available on the %s engine", op, e->name);
        else s = e->reduce->reduce(rop, full, src, mask);
    }
    emily_tensor_release(src);
    if (!s) s = drop_axes(full, mask, keep_axes, out);
    else emily_tensor_release(full);
    free(mask);
    free(shape);
    return s;
}

emily_status emily_argreduce(emily_arg_op aop, const emily_tensor *t, int axis, bool keep_axis, bool tie_break_high,
                             emily_dtype out_type, emily_tensor **out) {
    if (aop != EMILY_ARGMAX && aop != EMILY_ARGMIN)
        return emily_error(EMILY_ERR_ARGUMENT, "argreduce: unknown operation %d", (int)aop);
    const char *op = aop == EMILY_ARGMAX ? "argmax" : "argmin";
    const emily_engine *e;
    emily_status s = emi_check_inputs(op, out, 1, &t, (const char *const[]){"tensor"}, &e);
    if (s) return s;
    emily_dtype dt = out_type == EMILY_DTYPE_AUTO ? EMILY_S32 : out_type;
    if (!emily_dtype_valid(dt) || !emily_dtype_is_integer(dt))
        return emily_error(EMILY_ERR_TYPE, "%s: the index type must be an integer type, got %s", op,
                           emily_dtype_name(dt));
    if (emily_dtype_is_complex(t->dtype))
        return emily_error(EMILY_ERR_TYPE, "%s: complex tensors (%s) are not ordered", op, emily_dtype_name(t->dtype));
    if (axis >= t->rank)
        return emily_error(EMILY_ERR_AXIS, "%s: axis %d out of range for a tensor of rank %d", op, axis, t->rank);
    int r = axis < 0 ? 0 : t->rank;
    emi_scratch sc;
    if ((s = emi_scratch_get(op, &sc, (size_t)t->rank + 1, (size_t)t->rank + 1))) return s;
    int64_t *shape = sc.ints;
    bool *mask = sc.flags;
    int64_t outsize = 1;
    for (int i = 0; i < r; i++) {
        shape[i] = i == axis ? 1 : t->shape[i];
        mask[i] = i == axis;
        outsize *= shape[i];
    }
    int64_t extent = axis < 0 ? t->size : t->shape[axis];
    emily_tensor *full = NULL;
    if (extent == 0 && outsize > 0)
        s = emily_error(EMILY_ERR_SHAPE, "%s: cannot take the index of an extreme over an empty %s (shape %s)", op,
                        axis < 0 ? "tensor" : "axis", EMILY_SHAPE_STR(t));
    if (!s) s = emi_empty_like_device(t, dt, r, shape, &full);
    if (!s && full->size > 0) {
        if (!emi_engine_supports(e, EMI_KERNEL_ARGREDUCE, aop, t->dtype))
            s = emily_error(EMILY_ERR_UNSUPPORTED, "%s: not available on the %s engine", op, e->name);
        else s = e->reduce->argreduce(aop, full, t, axis, tie_break_high);
    }
    if (!s) s = drop_axes(full, mask, keep_axis || axis < 0, out);
    else emily_tensor_release(full);
    emi_scratch_free(&sc);
    return s;
}

emily_status emily_all_close(const emily_tensor *a, const emily_tensor *b, double rtol, double atol, bool equal_nan,
                             emily_tensor **out) {
    const char *op = "all_close";
    const emily_tensor *both[2] = {a, b};
    const emily_engine *e;
    emily_status s = emi_check_inputs(op, out, 2, both, (const char *const[]){"a", "b"}, &e);
    if (s) return s;
    int rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t *shape = malloc(sizeof(int64_t) * ((size_t)rank + 1));
    if (!shape) return emily_error(EMILY_ERR_MEMORY, "all_close: out of host memory");
    s = emi_broadcast_shapes(op, a->rank, a->shape, b->rank, b->shape, &rank, shape);
    emily_dtype dt = emily_type_merge(a->dtype, b->dtype);
    emily_tensor *ac = NULL, *bc = NULL, *av = NULL, *bv = NULL, *res = NULL;
    if (!s) s = emi_convert_to(a, dt, &ac);
    if (!s) s = emi_convert_to(b, dt, &bc);
    if (!s) s = emi_broadcast_view(ac, rank, shape, &av);
    if (!s) s = emi_broadcast_view(bc, rank, shape, &bv);
    if (!s) s = emi_empty_like_device(a, EMILY_U8, 0, NULL, &res);
    if (!s) {
        if (!emi_engine_supports(e, EMI_KERNEL_ALL_CLOSE, 0, dt))
            s = emily_error(EMILY_ERR_UNSUPPORTED, "all_close: not available on the %s engine", e->name);
        else s = e->reduce->all_close(res, av, bv, rtol, atol, equal_nan);
    }
    emily_tensor_release(ac);
    emily_tensor_release(bc);
    emily_tensor_release(av);
    emily_tensor_release(bv);
    free(shape);
    return emi_hand_out(s, res, out);
}
