/* select and clip.
 *
 * select(pred, on_true, on_false): Nx reads pred as a boolean (nonzero,
 * NaN included, is true), the branches in their own types, and writes
 * the chosen value in the output type (the merge of the branch types).
 * The output shape is pred's, unless pred is a scalar: then the
 * branches broadcast with each other.
 *
 * clip(t, min, max) with scalar min/max: Nx keeps x where x > min and
 * then where that is < max, so NaN becomes min (or max when min is NaN
 * too); built here from the greater/less kernels and select. */
#include <stdlib.h>
#include "ops/binary.h"
#include "ops/common.h"
#include "ops/output_shape.h"

/* Right-aligned broadcast of `t` into (rank, shape), each dim equal or 1. */
static bool fits_into(const emily_tensor *t, int rank, const int64_t *shape) {
    if (t->rank > rank) return false;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->shape[i], o = shape[rank - t->rank + i];
        if (d != o && d != 1) return false;
    }
    return true;
}

static emily_status check_branch(const char *arg, const emily_tensor *t, int rank, const int64_t *shape) {
    if (fits_into(t, rank, shape)) return EMILY_OK;
    char a[256], b[256];
    return emily_error(EMILY_ERR_SHAPE, "select: %s of shape %s cannot broadcast to the output shape %s", arg,
                       emi_shape_str(t->rank, t->shape, a, sizeof a), emi_shape_str(rank, shape, b, sizeof b));
}

/* The select kernel reads integer and real float predicates; a complex
 * one becomes u8 first (nonzero real or imaginary part). */
static emily_status pred_for_kernel(const emily_tensor *pred, emily_tensor **out) {
    if (!emily_dtype_is_complex(pred->dtype)) {
        emily_tensor_retain((emily_tensor *)pred);
        *out = (emily_tensor *)pred;
        return EMILY_OK;
    }
    unsigned char zero[16] = {0};
    emily_tensor *z = NULL;
    emily_status s = emily_from_binary(pred->buffer->device, pred->dtype, 0, NULL, zero, emily_dtype_size(pred->dtype),
                                       &z);
    if (!s) s = emily_binary(EMILY_NOT_EQUAL, pred, z, EMILY_DTYPE_AUTO, out);
    emily_tensor_release(z);
    return s;
}

emily_status emi_select_output_shape(const emily_tensor *pred, const emily_tensor *on_true,
                                     const emily_tensor *on_false, int *rank, int64_t *shape) {
    emily_status s = EMILY_OK;
    *rank = pred->rank;
    if (*rank == 0)
        s = emi_broadcast_shapes("select", on_true->rank, on_true->shape, on_false->rank, on_false->shape, rank, shape);
    else
        for (int i = 0; i < *rank; i++) shape[i] = pred->shape[i];
    if (!s) s = check_branch("on_true", on_true, *rank, shape);
    if (!s) s = check_branch("on_false", on_false, *rank, shape);
    return s;
}

static emily_status select_with(const emily_engine *e, const emily_tensor *pred, const emily_tensor *on_true,
                                const emily_tensor *on_false, emily_dtype o, int rank, const int64_t *shape,
                                emily_tensor **out) {
    emily_status s = emi_need_kernel("select", e, EMI_KERNEL_SELECT, 0, o);
    if (s) return s;
    emily_tensor *p = NULL, *t = NULL, *f = NULL, *pv = NULL, *tv = NULL, *fv = NULL, *dst = NULL;
    s = pred_for_kernel(pred, &p);
    if (!s) s = emi_convert_to(on_true, o, &t);
    if (!s) s = emi_convert_to(on_false, o, &f);
    if (!s) s = emi_view_as(p, rank, shape, &pv);
    if (!s) s = emi_view_as(t, rank, shape, &tv);
    if (!s) s = emi_view_as(f, rank, shape, &fv);
    if (!s) s = emi_empty_like_device(on_true, o, rank, shape, &dst);
    if (!s) s = e->elementwise->select(dst, pv, tv, fv);
    emily_tensor_release(p);
    emily_tensor_release(t);
    emily_tensor_release(f);
    emily_tensor_release(pv);
    emily_tensor_release(tv);
    emily_tensor_release(fv);
    return emi_hand_out(s, dst, out);
}

emily_status emily_select(const emily_tensor *pred, const emily_tensor *on_true, const emily_tensor *on_false,
                          emily_dtype out_type, emily_tensor **out) {
    const emily_tensor *all[3] = {pred, on_true, on_false};
    emily_status s = emi_check_args("select", out, 3, all, (const char *const[]){"pred", "on_true", "on_false"});
    if (s) return s;
    emily_dtype o = emily_type_merge(on_true->dtype, on_false->dtype);
    if (!emily_dtype_valid(o) || !emily_dtype_valid(pred->dtype))
        return emily_error(EMILY_ERR_TYPE, "select: invalid operand types");
    if (out_type != EMILY_DTYPE_AUTO) {
        if (!emily_dtype_valid(out_type))
            return emily_error(EMILY_ERR_TYPE, "select: invalid output type %d", (int)out_type);
        o = out_type;
    }
    const emily_engine *e;
    s = emi_check_same_device("select", 3, all, &e);
    if (s) return s;
    int max_rank = pred->rank, rank;
    if (on_true->rank > max_rank) max_rank = on_true->rank;
    if (on_false->rank > max_rank) max_rank = on_false->rank;
    int64_t *shape = malloc(((size_t)max_rank + 1) * sizeof *shape);
    if (!shape) return emily_error(EMILY_ERR_MEMORY, "select: out of host memory");
    s = emi_select_output_shape(pred, on_true, on_false, &rank, shape);
    if (!s) s = select_with(e, pred, on_true, on_false, o, rank, shape, out);
    free(shape);
    return s;
}

/* Defined in src/ops/binary.c: t converts into `to` without changing
 * any value (by type, or by value for a host scalar). */

emily_status emily_clip(const emily_tensor *t, const emily_tensor *min, const emily_tensor *max, emily_dtype out_type,
                        emily_tensor **out) {
    const emily_tensor *all[3] = {t, min, max};
    emily_status s = emi_check_args("clip", out, 3, all, (const char *const[]){"tensor", "min", "max"});
    if (s) return s;
    if (min->rank != 0 || max->rank != 0) {
        const emily_tensor *bad = min->rank != 0 ? min : max;
        return emily_error(EMILY_ERR_SHAPE, "clip: %s must be a scalar, got shape %s", bad == min ? "min" : "max",
                           EMILY_SHAPE_STR(bad));
    }
    emily_dtype o = emily_type_merge(t->dtype, emily_type_merge(min->dtype, max->dtype));
    if (!emily_dtype_valid(o)) return emily_error(EMILY_ERR_TYPE, "clip: invalid operand types");
    if (emily_dtype_is_complex(o))
        return emily_error(EMILY_ERR_TYPE, "clip: complex tensors are not supported, got %s, %s and %s",
                           emily_dtype_name(t->dtype), emily_dtype_name(min->dtype), emily_dtype_name(max->dtype));
    if (out_type != EMILY_DTYPE_AUTO) {
        if (!emily_dtype_valid(out_type) || emily_dtype_is_complex(out_type))
            return emily_error(EMILY_ERR_TYPE, "clip: invalid output type %s", emily_dtype_name(out_type));
        o = out_type;
    }
    const emily_engine *e;
    s = emi_check_same_device("clip", 3, all, &e);
    if (s) return s;
    /* compare and choose in a type that holds all three exactly (Nx
     * compares the values read in their own types) */
    emily_dtype c = o;
    if (!emily_dtype_is_integer(o) &&
        !(emi_binary_fits(e, t, o) && emi_binary_fits(e, min, o) && emi_binary_fits(e, max, o)))
        c = EMILY_F64;
    emily_tensor *x = NULL, *lo = NULL, *hi = NULL, *g = NULL, *c1 = NULL, *l = NULL, *r = NULL;
    s = emi_convert_to(t, c, &x);
    if (!s) s = emi_convert_to(min, c, &lo);
    if (!s) s = emi_convert_to(max, c, &hi);
    if (!s) s = emily_binary(EMILY_GREATER, x, lo, EMILY_DTYPE_AUTO, &g);
    if (!s) s = emily_select(g, x, lo, EMILY_DTYPE_AUTO, &c1);
    if (!s) s = emily_binary(EMILY_LESS, c1, hi, EMILY_DTYPE_AUTO, &l);
    if (!s) s = emily_select(l, c1, hi, EMILY_DTYPE_AUTO, &r);
    if (!s) s = emi_convert_to(r, o, out);
    emily_tensor_release(x);
    emily_tensor_release(lo);
    emily_tensor_release(hi);
    emily_tensor_release(g);
    emily_tensor_release(c1);
    emily_tensor_release(l);
    emily_tensor_release(r);
    return s;
}
