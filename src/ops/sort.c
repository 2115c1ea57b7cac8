/* Sort family: sort, argsort, top_k.
 *
 * Checks axis, types and k like Nx, allocates the outputs and runs the
 * device's sort kernels (src/core/kernels.h), which take any strides.
 * A rank-0 tensor is sorted as a one-element row. */
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"
#include "core/kernels.h"

static const char *const tensor_name[] = {"tensor"};

static emily_status check_sortable(const char *op, const emily_tensor *t) {
    if (emily_dtype_is_complex(t->dtype))
        return emily_error(EMILY_ERR_TYPE, "%s: complex tensors (%s) cannot be sorted", op, emily_dtype_name(t->dtype));
    return EMILY_OK;
}

static emily_status check_direction(const char *op, emily_sort_direction d) {
    if (d != EMILY_SORT_ASC && d != EMILY_SORT_DESC)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: unknown direction %d (asc or desc)", op, (int)d);
    return EMILY_OK;
}

/* Common checks of sort and argsort; *ax is the normalized axis. */
static emily_status sort_prologue(const char *op, emi_kernel kernel, const emily_tensor *t, int axis,
                                  emily_sort_direction d, emily_tensor **out, const struct emily_sort_kernels **k,
                                  int *ax) {
    const emily_engine *e;
    emily_status s = emi_check_args(op, out, 1, &t, tensor_name);
    if (!s) s = check_sortable(op, t);
    if (!s) s = check_direction(op, d);
    if (!s) s = emi_check_same_device(op, 1, &t, &e);
    if (s) return s;
    if (t->rank == 0) {
        if (axis != 0 && axis != -1)
            return emily_error(EMILY_ERR_AXIS, "%s: axis %d out of range for a tensor of rank 0", op, axis);
        *ax = 0;
    } else if ((s = emi_norm_axis(op, axis, t->rank, ax))) {
        return s;
    }
    if ((s = emi_need_kernel(op, e, kernel, 0, t->dtype))) return s;
    *k = e->sort;
    return EMILY_OK;
}

/* Rank-1 views of a rank-0 input and output, so kernels see one row. */
static emily_status as_row(const emily_tensor *t, emily_tensor **v) {
    int64_t one = 1, st = 1;
    return emi_tensor_view(t, 1, &one, &st, t->offset, v);
}

/* Runs kind 0 (sort) or 1 (argsort) on src/dst, viewing rank 0 as a row. */
static emily_status run_sort(const struct emily_sort_kernels *k, int kind, emily_tensor *dst, const emily_tensor *src,
                             int axis, bool desc) {
    if (src->size == 0) return EMILY_OK;
    emily_tensor *sv = NULL, *dv = NULL;
    emily_status s = EMILY_OK;
    if (src->rank == 0) {
        if ((s = as_row(src, &sv)) || (s = as_row(dst, &dv))) goto done;
        src = sv;
        dst = dv;
    }
    s = kind == 0 ? k->sort(dst, src, axis, desc) : k->argsort(dst, src, axis, desc);
done:
    emily_tensor_release(sv);
    emily_tensor_release(dv);
    return s;
}

emily_status emily_sort(const emily_tensor *t, int axis, emily_sort_direction direction, bool stable,
                        emily_tensor **out) {
    (void)stable; /* every sort is stable */
    const char *op = "sort";
    const struct emily_sort_kernels *k = NULL;
    int ax;
    emily_status s = sort_prologue(op, EMI_KERNEL_SORT, t, axis, direction, out, &k, &ax);
    if (s) return s;
    emily_tensor *o;
    if ((s = emi_empty_like_device(t, t->dtype, t->rank, t->shape, &o))) return s;
    return emi_hand_out(run_sort(k, 0, o, t, ax, direction == EMILY_SORT_DESC), o, out);
}

static emily_status index_type(const char *op, emily_dtype in, emily_dtype *out) {
    if (in == EMILY_DTYPE_AUTO) {
        *out = EMILY_S32;
        return EMILY_OK;
    }
    if (!emily_dtype_valid(in) || emily_dtype_is_complex(in))
        return emily_error(EMILY_ERR_TYPE, "%s: the index type must be a real type, got %s", op,
                           emily_dtype_valid(in) ? emily_dtype_name(in) : "an invalid type");
    *out = in;
    return EMILY_OK;
}

emily_status emily_argsort(const emily_tensor *t, int axis, emily_sort_direction direction, bool stable,
                           emily_dtype out_type, emily_tensor **out) {
    (void)stable;
    const char *op = "argsort";
    const struct emily_sort_kernels *k = NULL;
    int ax;
    emily_dtype dt;
    emily_status s = sort_prologue(op, EMI_KERNEL_ARGSORT, t, axis, direction, out, &k, &ax);
    if (s) return s;
    if ((s = index_type(op, out_type, &dt))) return s;
    emily_tensor *o;
    if ((s = emi_empty_like_device(t, dt, t->rank, t->shape, &o))) return s;
    return emi_hand_out(run_sort(k, 1, o, t, ax, direction == EMILY_SORT_DESC), o, out);
}

emily_status emily_top_k(const emily_tensor *t, int64_t k, emily_dtype index_type_, emily_tensor **values,
                         emily_tensor **indices) {
    const char *op = "top_k";
    const emily_engine *e;
    emily_status s = emi_check_out(op, values);
    if (!s) s = emi_check_args(op, indices, 1, &t, tensor_name);
    if (!s) s = check_sortable(op, t);
    if (!s) s = emi_check_same_device(op, 1, &t, &e);
    if (s) return s;
    if (t->rank < 1) return emily_error(EMILY_ERR_SHAPE, "%s: the input must have rank 1 or more", op);
    int64_t last = t->shape[t->rank - 1];
    if (k < 1) return emily_error(EMILY_ERR_ARGUMENT, "%s: k must be at least 1, got %lld", op, (long long)k);
    if (k > last)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: k (%lld) is larger than the last axis of the input %s", op,
                           (long long)k, EMILY_SHAPE_STR(t));
    emily_dtype it;
    if ((s = index_type(op, index_type_, &it))) return s;
    if ((s = emi_need_kernel(op, e, EMI_KERNEL_TOP_K, 0, t->dtype))) return s;
    int64_t *shape = malloc(sizeof(int64_t) * (size_t)t->rank);
    if (!shape) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
    shape[t->rank - 1] = k;
    emily_tensor *v = NULL, *ix = NULL;
    s = emi_empty_like_device(t, t->dtype, t->rank, shape, &v);
    if (!s) s = emi_empty_like_device(t, it, t->rank, shape, &ix);
    free(shape);
    if (!s && v->size > 0) s = e->sort->top_k(v, ix, t, k);
    if (s) {
        emily_tensor_release(v);
        emily_tensor_release(ix);
        return s;
    }
    *values = v;
    *indices = ix;
    return EMILY_OK;
}
