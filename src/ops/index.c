/* Index family: take, take_along_axis, gather, indexed_add, indexed_put.
 *
 * Each op checks shapes, axes and types like Nx does, infers the output,
 * makes the inputs contiguous (a new reference when they already are)
 * and calls one kernel of the device's index table. Index values are
 * checked by the kernels, which see the data (see src/core/kernels.h). */
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"
#include "ops/output_shape.h"
#include "core/kernels.h"
#include "core/dtype_list.h"

/* The argument names of the ops' messages: the indexed tensor, the
 * indices, and (indexed ops) the updates. */
static const char *const tensor_names[] = {"tensor", "indices"};
static const char *const target_names[] = {"target", "indices", "updates"};

/* The checks every index op starts with: the output pointer, the n
 * inputs (ins[1] is the indices, which must be of an integer type), all
 * on one device, whose engine it stores. */
static emily_status check_index_inputs(const char *op, emily_tensor **out, int n, const emily_tensor *const *ins,
                                       const char *const *names, const emily_engine **e) {
    const emily_tensor *idx = ins[1];
    emily_status s = emi_check_args(op, out, n, ins, names);
    if (!s && !emily_dtype_is_integer(idx->dtype))
        s = emily_error(EMILY_ERR_TYPE, "%s: indices must be an integer tensor, got %s", op,
                        emily_dtype_name(idx->dtype));
    return s ? s : emi_check_same_device(op, n, ins, e);
}

static int64_t prod(const int64_t *shape, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= shape[i];
    return p;
}

/* Contiguous versions of up to 3 inputs (NULL entries stay NULL). */
static emily_status contiguous_all(int n, const emily_tensor *const *in, emily_tensor **out) {
    for (int i = 0; i < n; i++) out[i] = NULL;
    for (int i = 0; i < n; i++) {
        if (!in[i]) continue;
        emily_status s = emily_contiguous(in[i], &out[i]);
        if (s) {
            emi_release_all(n, out);
            return s;
        }
    }
    return EMILY_OK;
}

/* ---- take and take_along_axis -------------------------------------------- */

emily_status emi_take_output_shape(const emily_tensor *t, const emily_tensor *indices, int axis, int *rank,
                                   int64_t *shape) {
    int ax;
    emily_status s = emi_norm_axis("take", axis, t->rank, &ax);
    if (s) return s;
    int r = 0;
    for (int i = 0; i < ax; i++) shape[r++] = t->shape[i];
    for (int i = 0; i < indices->rank; i++) shape[r++] = indices->shape[i];
    for (int i = ax + 1; i < t->rank; i++) shape[r++] = t->shape[i];
    *rank = r;
    return EMILY_OK;
}

/* take's output: t's shape with the axis ax replaced by the indices'. */
static emily_status take_output(const char *op, const emily_tensor *t, const emily_tensor *indices, int ax,
                                emily_tensor **o) {
    int rank;
    int64_t *shape = malloc(sizeof(int64_t) * ((size_t)t->rank + (size_t)indices->rank + 1));
    if (!shape) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    emily_status s = emi_take_output_shape(t, indices, ax, &rank, shape);
    if (!s) s = emi_empty_like_device(t, t->dtype, rank, shape, o);
    free(shape);
    return s;
}

/* take_along_axis's indices: t's shape on every axis but ax. */
static emily_status check_along_indices(const char *op, const emily_tensor *t, const emily_tensor *indices, int ax) {
    if (indices->rank != t->rank)
        return emily_error(EMILY_ERR_SHAPE, "%s: indices %s must have the rank of the tensor %s", op,
                           EMILY_SHAPE_STR(indices), EMILY_SHAPE_STR(t));
    for (int i = 0; i < t->rank; i++)
        if (i != ax && indices->shape[i] != t->shape[i])
            return emily_error(EMILY_ERR_SHAPE, "%s: indices %s must match the tensor %s on every axis but %d", op,
                               EMILY_SHAPE_STR(indices), EMILY_SHAPE_STR(t), ax);
    return EMILY_OK;
}

/* take (along false) and take_along_axis (along true) share their checks
 * and their kernels' view of t as [outer, n, inner] around the axis;
 * they differ in what the indices' shape must be and in the output's
 * (take: t's with the axis replaced by the indices'; take_along_axis:
 * the indices'). */
static emily_status take_op(bool along, const emily_tensor *t, const emily_tensor *indices, int axis,
                            emily_tensor **out) {
    const char *op = along ? "take_along_axis" : "take";
    const emily_tensor *ins[2] = {t, indices};
    const emily_engine *e;
    int ax;
    emily_status s;
    if ((s = check_index_inputs(op, out, 2, ins, tensor_names, &e))) return s;
    if ((s = emi_norm_axis(op, axis, t->rank, &ax))) return s;
    if (along && (s = check_along_indices(op, t, indices, ax))) return s;
    if ((s = emi_need_kernel(op, e, along ? EMI_KERNEL_TAKE_ALONG_AXIS : EMI_KERNEL_TAKE, 0, t->dtype))) return s;
    emily_tensor *o;
    s = along ? emi_empty_like_device(t, t->dtype, indices->rank, indices->shape, &o)
              : take_output(op, t, indices, ax, &o);
    if (s) return s;
    if (indices->size > 0) {
        emily_tensor *c[2];
        if (!(s = contiguous_all(2, ins, c))) {
            int64_t outer = prod(t->shape, 0, ax), inner = prod(t->shape, ax + 1, t->rank);
            s = along ? e->index->take_along_axis(o, c[0], c[1], ax, outer, t->shape[ax], inner)
                      : e->index->take(o, c[0], c[1], ax, outer, t->shape[ax], inner);
            emi_release_all(2, c);
        }
    }
    return emi_hand_out(s, o, out);
}

emily_status emily_take(const emily_tensor *t, const emily_tensor *indices, int axis, emily_tensor **out) {
    return take_op(false, t, indices, axis, out);
}

emily_status emily_take_along_axis(const emily_tensor *t, const emily_tensor *indices, int axis, emily_tensor **out) {
    return take_op(true, t, indices, axis, out);
}

/* ---- axes lists of gather and indexed ops --------------------------------- */

/* Normalizes `axes` (or the leading `count` axes when NULL) into norm
 * (count entries, increasing) and marks them in mask (rank entries). */
static emily_status index_axes(const char *op, const emily_tensor *t, int naxes, const int *axes, int64_t count,
                               int *norm, bool *mask) {
    if (count > t->rank)
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: the last dimension of indices (%lld) is larger than the rank of "
                           "the tensor %s",
                           op, (long long)count, EMILY_SHAPE_STR(t));
    memset(mask, 0, (size_t)t->rank + 1);
    if (!axes) {
        for (int i = 0; i < (int)count; i++) {
            norm[i] = i;
            mask[i] = true;
        }
        return EMILY_OK;
    }
    if (naxes != count)
        return emily_error(EMILY_ERR_SHAPE, "%s: %d axes given, but the last dimension of indices is %lld", op, naxes,
                           (long long)count);
    emily_status s = emi_norm_axes(op, naxes, axes, t->rank, norm, mask);
    if (s) return s;
    for (int i = 1; i < naxes; i++)
        if (norm[i] <= norm[i - 1])
            return emily_error(EMILY_ERR_AXIS, "%s: axes must be an increasing list, got %d after %d", op, axes[i],
                               axes[i - 1]);
    return EMILY_OK;
}

/* ---- gather -------------------------------------------------------------- */

/* gather's checks of its indices and axes: norm (t's rank entries) the
 * indexed axes, in order, and the output's shape (t's rank + the
 * indices' rank entries). mask: t's rank + 1 flags of scratch. */
static emily_status gather_plan(const emily_tensor *t, const emily_tensor *indices, int naxes, const int *axes,
                                int *norm, bool *mask, int *rank, int64_t *shape) {
    const char *op = "gather";
    if (indices->rank < 1)
        return emily_error(EMILY_ERR_SHAPE, "%s: indices must have rank 1 or more, got a scalar", op);
    if (axes && naxes < 0) return emily_error(EMILY_ERR_ARGUMENT, "%s: negative number of axes (%d)", op, naxes);
    emily_status s = index_axes(op, t, naxes, axes, indices->shape[indices->rank - 1], norm, mask);
    if (s) return s;
    int r = 0;
    for (int i = 0; i < indices->rank - 1; i++) shape[r++] = indices->shape[i];
    for (int i = 0; i < t->rank; i++)
        if (!mask[i]) shape[r++] = t->shape[i];
    *rank = r;
    return EMILY_OK;
}

emily_status emi_gather_output_shape(const emily_tensor *t, const emily_tensor *indices, int naxes, const int *axes,
                                     int *rank, int64_t *shape) {
    int *norm = malloc(sizeof(int) * ((size_t)t->rank + 1));
    bool *mask = malloc((size_t)t->rank + 1);
    emily_status s = norm && mask ? gather_plan(t, indices, naxes, axes, norm, mask, rank, shape)
                                  : emily_error(EMILY_ERR_MEMORY, "gather: out of host memory");
    free(norm);
    free(mask);
    return s;
}

emily_status emily_gather(const emily_tensor *t, const emily_tensor *indices, int naxes, const int *axes,
                          emily_tensor **out) {
    const char *op = "gather";
    const emily_tensor *ins[2] = {t, indices};
    const emily_engine *e;
    emily_status s;
    if ((s = check_index_inputs(op, out, 2, ins, tensor_names, &e))) return s;
    int *norm = malloc(sizeof(int) * ((size_t)t->rank + 1));
    bool *mask = malloc((size_t)t->rank + 1);
    int64_t *shape = malloc(sizeof(int64_t) * ((size_t)t->rank + (size_t)indices->rank + 1));
    emily_tensor *o = NULL, *c[2] = {NULL, NULL};
    int rank;
    if (!norm || !mask || !shape) {
        s = emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
        goto done;
    }
    if ((s = gather_plan(t, indices, naxes, axes, norm, mask, &rank, shape))) goto done;
    if ((s = emi_need_kernel(op, e, EMI_KERNEL_GATHER, 0, t->dtype))) goto done;
    int64_t last = indices->shape[indices->rank - 1];
    if ((s = emi_empty_like_device(t, t->dtype, rank, shape, &o))) goto done;
    if (indices->size > 0 || (last == 0 && o->size > 0)) {
        if ((s = contiguous_all(2, ins, c))) goto done;
        s = e->index->gather(o, c[0], c[1], (int)last, norm);
    }
done:
    emi_release_all(2, c);
    free(norm);
    free(mask);
    free(shape);
    return emi_hand_out(s, o, out);
}

/* ---- indexed_add / indexed_put ------------------------------------------- */

/* Can `out` hold values of kind `in` (Nx only widens kinds)? */
static bool kind_fits(emily_dtype in, emily_dtype out) {
    if (emily_dtype_is_complex(out)) return true;
    if (emily_dtype_is_complex(in)) return false;
    if (emily_dtype_is_float(out)) return true;
    return emily_dtype_is_integer(in);
}

static emily_status indexed(emily_indexed_op iop, const emily_tensor *target, const emily_tensor *indices,
                            const emily_tensor *updates, int naxes, const int *axes, emily_dtype out_type,
                            emily_tensor **out) {
    const char *op = iop == EMILY_INDEXED_ADD ? "indexed_add" : "indexed_put";
    const emily_tensor *ins[3] = {target, indices, updates};
    const emily_engine *e;
    emily_status s;
    if ((s = check_index_inputs(op, out, 3, ins, target_names, &e))) return s;
    if (indices->rank != 2)
        return emily_error(EMILY_ERR_SHAPE, "%s: indices must be a rank 2 tensor {n, i}, got %s", op,
                           EMILY_SHAPE_STR(indices));
    if (updates->rank < 1 || updates->shape[0] != indices->shape[0])
        return emily_error(EMILY_ERR_SHAPE, "%s: the leading axis of indices %s and of updates %s must match", op,
                           EMILY_SHAPE_STR(indices), EMILY_SHAPE_STR(updates));
    if (axes && naxes < 0) return emily_error(EMILY_ERR_ARGUMENT, "%s: negative number of axes (%d)", op, naxes);
    int64_t ni = indices->shape[1];
    if (ni > target->rank || updates->rank - 1 + ni != target->rank)
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: the rank of the target %s must be the rank of updates %s plus the "
                           "last dimension of indices %s minus one",
                           op, EMILY_SHAPE_STR(target), EMILY_SHAPE_STR(updates), EMILY_SHAPE_STR(indices));
    emily_dtype dt = out_type;
    if (dt == EMILY_DTYPE_AUTO) {
        dt = emily_type_merge(target->dtype, updates->dtype);
    } else if (!emily_dtype_valid(dt)) {
        return emily_error(EMILY_ERR_TYPE, "%s: invalid output type %d", op, (int)dt);
    } else if (!kind_fits(target->dtype, dt) || !kind_fits(updates->dtype, dt)) {
        return emily_error(EMILY_ERR_TYPE, "%s: output type %s cannot hold target %s and updates %s", op,
                           emily_dtype_name(dt), emily_dtype_name(target->dtype), emily_dtype_name(updates->dtype));
    }
    int *norm = malloc(sizeof(int) * ((size_t)target->rank + 1));
    bool *mask = malloc((size_t)target->rank + 1);
    emily_tensor *o = NULL, *c[3] = {NULL, NULL, NULL};
    if (!norm || !mask) {
        s = emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
        goto done;
    }
    if ((s = index_axes(op, target, naxes, axes, ni, norm, mask))) goto done;
    for (int i = 0, u = 1; i < target->rank; i++) {
        if (mask[i]) continue;
        if (updates->shape[u] > target->shape[i]) {
            s = emily_error(EMILY_ERR_SHAPE, "%s: axis %d of updates %s is larger than axis %d of the target %s", op, u,
                            EMILY_SHAPE_STR(updates), i, EMILY_SHAPE_STR(target));
            goto done;
        }
        u++;
    }
    if ((s = emi_need_kernel(op, e, EMI_KERNEL_INDEXED, 0, target->dtype))) goto done;
    if ((s = emi_empty_like_device(target, dt, target->rank, target->shape, &o))) goto done;
    if (o->size > 0) {
        s = dt == target->dtype ? e->copy->copy(o, target) : e->copy->convert(o, target);
        if (s) goto done;
    }
    if (indices->shape[0] > 0) {
        if ((s = contiguous_all(3, ins, c))) goto done;
        s = e->index->indexed(iop, o, c[0], c[1], c[2], (int)ni, norm);
    }
done:
    emi_release_all(3, c);
    free(norm);
    free(mask);
    return emi_hand_out(s, o, out);
}

emily_status emily_indexed_add(const emily_tensor *target, const emily_tensor *indices, const emily_tensor *updates,
                               int naxes, const int *axes, emily_dtype out_type, emily_tensor **out) {
    return indexed(EMILY_INDEXED_ADD, target, indices, updates, naxes, axes, out_type, out);
}

emily_status emily_indexed_put(const emily_tensor *target, const emily_tensor *indices, const emily_tensor *updates,
                               int naxes, const int *axes, emily_dtype out_type, emily_tensor **out) {
    return indexed(EMILY_INDEXED_PUT, target, indices, updates, naxes, axes, out_type, out);
}

/* The reference's error for a bad index, "index I is out of bounds for
 * axis A in shape S", as Nx.BinaryBackend's gather and indexed ops raise
 * it (Nx 0.13 runs take and take_along_axis through gather): those first
 * transpose the tensor so that the indexed axes come first, in order,
 * unless they already do, and A is the index's position in its row. So
 * with `axes` (gather, indexed ops; take: its one axis) S is t's shape
 * with those axes moved to the front and A the column c; without
 * (take_along_axis, whose gather indexes every axis in order) S is t's
 * shape and A is `axis`. No op name: Nx's suite (and users' rescue
 * clauses) match this text exactly. Both devices' kernels call it. */
emily_status emi_index_error(const char *op, const void *elem, emily_dtype dt, int64_t bad, int ncols, const int *axes,
                             int axis, const emily_tensor *t) {
    int c = (int)(bad % ncols);
    char buf[256];
    if (axes) {
        emi_scratch sc;
        emily_status s = emi_scratch_get(op, &sc, (size_t)t->rank + 1, (size_t)t->rank + 1);
        if (s) return s;
        int64_t *shape = sc.ints;
        bool *indexed = sc.flags;
        int r = 0;
        for (int i = 0; i < ncols; i++) {
            shape[r++] = t->shape[axes[i]];
            indexed[axes[i]] = true;
        }
        for (int i = 0; i < t->rank; i++)
            if (!indexed[i]) shape[r++] = t->shape[i];
        emi_shape_str(t->rank, shape, buf, sizeof buf);
        emi_scratch_free(&sc);
    } else {
        emi_shape_str(t->rank, t->shape, buf, sizeof buf);
    }
    int ax = axes ? c : axis;
    if (dt == EMILY_U64) {
        uint64_t v;
        memcpy(&v, elem, sizeof v);
        return emily_error(EMILY_ERR_INDEX, "index %llu is out of bounds for axis %d in shape %s",
                           (unsigned long long)v, ax, buf);
    }
    long long v = 0;
    switch (dt) {
// clang-format off
#define READ_INDEX(ENUM, sfx, T)      \
    case EMILY_##ENUM: {              \
        T x;                          \
        memcpy(&x, elem, sizeof x);   \
        v = (long long)x;             \
        break;                        \
    }
        // clang-format on
        EMI_DTYPES_INTEGER(READ_INDEX)
#undef READ_INDEX
    default: break;
    }
    return emily_error(EMILY_ERR_INDEX, "index %lld is out of bounds for axis %d in shape %s", v, ax, buf);
}
