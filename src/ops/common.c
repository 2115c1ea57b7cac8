#include <stdlib.h>
#include <string.h>
#include "ops/common.h"

const char *emi_shape_str(int rank, const int64_t *shape, char *buf, size_t size) {
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "{");
    for (int i = 0; i < rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (used < size) snprintf(buf + used, size - used, "}");
    return buf;
}

emily_status emi_check_tensor(const char *op, const char *arg, const emily_tensor *t) {
    if (!t) return emily_error(EMILY_ERR_ARGUMENT, "%s: %s is NULL", op, arg);
    if (emily_dtype_is_narrow(t->dtype))
        return emily_error(EMILY_ERR_TYPE,
                           "%s: %s is %s, a type the typed ops do not compute in: run the op through "
                           "emily_dispatch (which computes it in %s), or emily_as_type it first",
                           op, arg, emily_dtype_name(t->dtype), emily_dtype_name(emily_dtype_compute_type(t->dtype)));
    return EMILY_OK;
}

emily_status emi_check_out(const char *op, emily_tensor **out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "%s: output pointer is NULL", op);
    *out = NULL;
    return EMILY_OK;
}

emily_status emi_check_args(const char *op, emily_tensor **out, int n, const emily_tensor *const *ts,
                            const char *const *names) {
    emily_status s = emi_check_out(op, out);
    for (int i = 0; !s && i < n; i++) s = emi_check_tensor(op, names[i], ts[i]);
    return s;
}

emily_status emi_check_inputs(const char *op, emily_tensor **out, int n, const emily_tensor *const *ts,
                              const char *const *names, const emily_engine **engine) {
    emily_status s = emi_check_args(op, out, n, ts, names);
    return s ? s : emi_check_same_device(op, n, ts, engine);
}

emily_status emi_check_same_device(const char *op, int n, const emily_tensor *const *ts, const emily_engine **engine) {
    emily_device d = ts[0]->buffer->device;
    for (int i = 1; i < n; i++) {
        emily_device di = ts[i]->buffer->device;
        if (!emily_device_equal(d, di)) {
            char a[32], b[32];
            emily_device_format(d, a, sizeof a);
            emily_device_format(di, b, sizeof b);
            return emily_error(EMILY_ERR_DEVICE,
                               "%s: inputs are on different devices (%s and %s); move them explicitly", op, a, b);
        }
    }
    return emi_engine_get(d, engine);
}

emily_status emi_need_kernel(const char *op, const emily_engine *e, emi_kernel kernel, int kop, emily_dtype dtype) {
    if (!emi_engine_supports(e, kernel, kop, dtype))
        return emily_error(EMILY_ERR_UNSUPPORTED, "%s: not implemented on the %s device", op, e->name);
    return EMILY_OK;
}

emily_status emi_norm_axis(const char *op, int axis, int rank, int *out) {
    int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return emily_error(EMILY_ERR_AXIS, "%s: axis %d out of range for a tensor of rank %d", op, axis, rank);
    *out = a;
    return EMILY_OK;
}

emily_status emi_norm_axes(const char *op, int naxes, const int *axes, int rank, int *out, bool *mask) {
    bool *seen = calloc((size_t)rank + 1, 1);
    if (!seen) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    for (int i = 0; i < naxes; i++) {
        int a = 0; /* set by emi_norm_axis on success */
        emily_status s = emi_norm_axis(op, axes[i], rank, &a);
        if (s) {
            free(seen);
            return s;
        }
        if (seen[a]) {
            free(seen);
            return emily_error(EMILY_ERR_AXIS, "%s: axis %d given more than once", op, axes[i]);
        }
        seen[a] = true;
        if (out) out[i] = a;
    }
    if (mask) memcpy(mask, seen, (size_t)rank);
    free(seen);
    return EMILY_OK;
}

emily_status emi_broadcast_shapes(const char *op, int ra, const int64_t *sa, int rb, const int64_t *sb, int *rank,
                                  int64_t *shape) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
        if (da == db || db == 1) shape[i] = da;
        else if (da == 1) shape[i] = db;
        else {
            char x[256], y[256];
            return emily_error(EMILY_ERR_SHAPE, "%s: cannot broadcast shapes %s and %s", op,
                               emi_shape_str(ra, sa, x, sizeof x), emi_shape_str(rb, sb, y, sizeof y));
        }
    }
    *rank = r;
    return EMILY_OK;
}

emily_status emi_broadcast_view(const emily_tensor *t, int rank, const int64_t *shape, emily_tensor **out) {
    int64_t *strides = calloc((size_t)rank + 1, sizeof(int64_t));
    if (!strides) return emily_error(EMILY_ERR_MEMORY, "broadcast: out of host memory");
    int off = rank - t->rank;
    for (int i = 0; i < t->rank; i++) strides[i + off] = t->shape[i] == shape[i + off] ? t->strides[i] : 0;
    emily_status s = emi_tensor_view(t, rank, shape, strides, t->offset, out);
    free(strides);
    return s;
}

emily_status emi_empty_like_device(const emily_tensor *t, emily_dtype dtype, int rank, const int64_t *shape,
                                   emily_tensor **out) {
    return emily_empty(t->buffer->device, dtype, rank, shape, out);
}

emily_status emi_convert_to(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    if (t->dtype == dtype) {
        emily_tensor_retain((emily_tensor *)t);
        *out = (emily_tensor *)t;
        return EMILY_OK;
    }
    return emily_as_type(t, dtype, out);
}

emily_status emi_contiguous_as(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    emily_tensor *converted = NULL;
    emily_status s = emi_convert_to(t, dtype, &converted);
    if (!s) s = emily_contiguous(converted, out);
    emily_tensor_release(converted);
    return s;
}

emily_status emi_apply_scalar(emily_device device, emily_binary_op op, emily_dtype dt, emily_scalar v,
                              emily_tensor **r) {
    emily_tensor *c, *applied;
    emily_status s = emily_constant(device, dt, 0, NULL, v, &c);
    if (s) return s;
    s = emily_binary(op, *r, c, dt, &applied);
    emily_tensor_release(c);
    if (s) return s;
    emily_tensor_release(*r);
    *r = applied;
    return EMILY_OK;
}

emily_status emi_scratch_get(const char *op, emi_scratch *sc, size_t nints, size_t nflags) {
    sc->ints = nints <= EMI_SCRATCH_INLINE ? sc->ints_here : malloc(sizeof(int64_t) * nints);
    sc->flags = nflags <= EMI_SCRATCH_INLINE ? sc->flags_here : malloc(nflags);
    if (sc->ints && sc->flags) {
        memset(sc->flags, 0, nflags);
        return EMILY_OK;
    }
    emi_scratch_free(sc);
    return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
}

void emi_scratch_free(emi_scratch *sc) {
    if (sc->ints != sc->ints_here) free(sc->ints);
    if (sc->flags != sc->flags_here) free(sc->flags);
    sc->ints = sc->ints_here;
    sc->flags = sc->flags_here;
}

emily_status emi_check_sum_to_min(const char *name, const char *family, int op, int last, bool is_max_min,
                                  const emily_tensor *t, emily_tensor **out, const emily_engine **engine) {
    emily_status s;
    if ((s = emi_check_out(name, out))) return s;
    if ((unsigned)op > (unsigned)last) return emily_error(EMILY_ERR_ARGUMENT, "%s: unknown op %d", family, op);
    if ((s = emi_check_tensor(name, "tensor", t))) return s;
    if (!emily_dtype_valid(t->dtype)) return emily_error(EMILY_ERR_TYPE, "%s: invalid tensor type", name);
    if (is_max_min && emily_dtype_is_complex(t->dtype))
        return emily_error(EMILY_ERR_TYPE, "%s: complex tensors (%s) are not supported", name,
                           emily_dtype_name(t->dtype));
    return emi_check_same_device(name, 1, &t, engine);
}

int emi_name_index(const char *const *names, int n, const char *name) {
    if (!name) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

void emi_release_all(int n, emily_tensor **ts) {
    for (int i = 0; i < n; i++) emily_tensor_release(ts[i]);
}
