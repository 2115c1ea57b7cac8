/* Shape ops that build a new tensor: pad, concatenate, stack, put_slice.
 * Each allocates the output and fills it with the device's `copy` kernel
 * into strided views of the output, so no op-specific kernel exists and
 * they work on every device with `copy`. Inputs of another dtype are
 * converted first (emi_convert_to). */
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"
#include "ops/output_shape.h"

/* dst <- src through the engine (no-op for zero elements). */
static emily_status copy_into(const emily_engine *e, emily_tensor *dst, const emily_tensor *src, const char *op) {
    if (dst->size == 0) return EMILY_OK;
    if (!emi_engine_supports(e, EMI_KERNEL_COPY, 0, src->dtype))
        return emily_error(EMILY_ERR_UNSUPPORTED, "%s: the %s engine has no copy kernel", op, e->name);
    return e->copy->copy(dst, src);
}

/* ---- pad ---------------------------------------------------------------- */

emily_status emi_pad_output_shape(const emily_tensor *t, const int64_t *lo, const int64_t *hi, const int64_t *interior,
                                  int64_t *shape) {
    for (int i = 0; i < t->rank; i++) {
        int64_t in = interior ? interior[i] : 0, d = t->shape[i];
        if (in < 0)
            return emily_error(EMILY_ERR_ARGUMENT, "pad: interior padding at axis %d must be non-negative, got %lld", i,
                               (long long)in);
        /* Nx.Shape.pad's size: d + (d - 1) * interior + lo + hi */
        int64_t grown;
        if (__builtin_mul_overflow(d - 1, in, &grown) || __builtin_add_overflow(grown, d, &grown) ||
            __builtin_add_overflow(grown, lo[i], &grown) || __builtin_add_overflow(grown, hi[i], &grown))
            return emily_error(EMILY_ERR_SHAPE, "pad: padding (%lld, %lld, %lld) at axis %d is too large",
                               (long long)lo[i], (long long)hi[i], (long long)in, i);
        if (grown < 0)
            return emily_error(EMILY_ERR_SHAPE,
                               "pad: padding (%lld, %lld, %lld) at axis %d of shape %s gives a negative size",
                               (long long)lo[i], (long long)hi[i], (long long)in, i, EMILY_SHAPE_STR(t));
        shape[i] = grown;
    }
    return EMILY_OK;
}

emily_status emily_pad(const emily_tensor *t, const emily_tensor *value, const int64_t *lo, const int64_t *hi,
                       const int64_t *interior, emily_tensor **out) {
    const char *op = "pad";
    const emily_tensor *both[2] = {t, value};
    const emily_engine *e;
    emily_status s = emi_check_inputs(op, out, 2, both, (const char *const[]){"tensor", "pad value"}, &e);
    if (s) return s;
    if (value->size != 1)
        return emily_error(EMILY_ERR_SHAPE, "pad: the pad value must be a scalar, got shape %s",
                           EMILY_SHAPE_STR(value));
    int r = t->rank;
    if (r > 0 && (!lo || !hi)) return emily_error(EMILY_ERR_ARGUMENT, "pad: low or high padding is NULL");
    int64_t *buf = malloc(sizeof(int64_t) * (6 * (size_t)r + 1));
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "pad: out of host memory");
    int64_t *oshape = buf, *cnt = buf + r, *kmin = buf + 2 * r, *o0 = buf + 3 * r;
    int64_t *vstr = buf + 4 * r, *tmp = buf + 5 * r;
    bool plain = true; /* every output element comes from the input */
    int64_t size = 1;
    if ((s = emi_pad_output_shape(t, lo, hi, interior, oshape))) {
        free(buf);
        return s;
    }
    for (int i = 0; i < r; i++) {
        int64_t in = interior ? interior[i] : 0, d = t->shape[i];
        if (lo[i] > 0 || hi[i] > 0 || in > 0) plain = false;
        /* input element k lands at output position k * (in + 1) + lo */
        /* (in 128 bits: with a padding near the int64 limits and a size
         * that still fits, these differences do not) */
        int64_t step = in + 1;
        __int128 lim = (__int128)oshape[i] - 1 - lo[i]; /* k * step + lo <= oshape - 1 */
        __int128 k0 = lo[i] >= 0 ? 0 : (-(__int128)lo[i] + step - 1) / step;
        __int128 k1 = d - 1;
        if (lim < 0) k1 = -1;
        else if (d > 0 && (__int128)(d - 1) * step > lim) k1 = lim / step;
        kmin[i] = k0 < d ? (int64_t)k0 : d;
        cnt[i] = d > 0 && k1 >= k0 ? (int64_t)(k1 - k0 + 1) : 0;
        o0[i] = cnt[i] ? (int64_t)(k0 * step + lo[i]) : 0;
        size *= cnt[i];
    }
    emily_dtype dt = emily_type_merge(t->dtype, value->dtype);
    emily_tensor *tc = NULL, *vc = NULL, *res = NULL, *v = NULL;
    s = emi_convert_to(t, dt, &tc);
    if (!s && !plain) s = emi_convert_to(value, dt, &vc);
    if (!s) s = emi_empty_like_device(t, dt, r, oshape, &res);
    if (!s && !plain && res->size > 0) {
        /* the pad value read through zero strides fills the output */
        for (int i = 0; i < r; i++) tmp[i] = 0;
        s = emi_tensor_view(vc, r, oshape, tmp, vc->offset, &v);
        if (!s) s = copy_into(e, res, v, op);
        emily_tensor_release(v);
        v = NULL;
    }
    if (!s && size > 0) {
        /* the part of the input that survives negative padding, written
         * every (interior + 1) elements */
        emily_tensor *src = NULL, *dst = NULL;
        int64_t soff = tc->offset, doff = 0;
        for (int i = 0; i < r; i++) {
            soff += kmin[i] * tc->strides[i];
            doff += o0[i] * res->strides[i];
            vstr[i] = res->strides[i] * ((interior ? interior[i] : 0) + 1);
        }
        s = emi_tensor_view(tc, r, cnt, tc->strides, soff, &src);
        if (!s) s = emi_tensor_view(res, r, cnt, vstr, doff, &dst);
        if (!s) s = copy_into(e, dst, src, op);
        emily_tensor_release(src);
        emily_tensor_release(dst);
    }
    emily_tensor_release(tc);
    emily_tensor_release(vc);
    free(buf);
    return emi_hand_out(s, res, out);
}

/* ---- concatenate / stack ------------------------------------------------ */

/* Copies each of the n pieces (already of the output's rank, with the
 * output's shape except along `axis`) into consecutive slabs of a new
 * tensor of type dt. */
static emily_status concat_pieces(const char *op, const emily_engine *e, int n, emily_tensor *const *pieces, int axis,
                                  emily_dtype dt, emily_tensor **out) {
    int r = pieces[0]->rank;
    int64_t *shape = malloc(sizeof(int64_t) * ((size_t)r + 1));
    if (!shape) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    memcpy(shape, pieces[0]->shape, sizeof(int64_t) * (size_t)r);
    shape[axis] = 0;
    for (int k = 0; k < n; k++) shape[axis] += pieces[k]->shape[axis];
    emily_tensor *res = NULL;
    emily_status s = emi_empty_like_device(pieces[0], dt, r, shape, &res);
    int64_t at = 0;
    for (int k = 0; !s && k < n; k++) {
        emily_tensor *conv = NULL, *dst = NULL;
        s = emi_convert_to(pieces[k], dt, &conv);
        if (!s) {
            memcpy(shape, pieces[k]->shape, sizeof(int64_t) * (size_t)r);
            s = emi_tensor_view(res, r, shape, res->strides, at * res->strides[axis], &dst);
        }
        if (!s) s = copy_into(e, dst, conv, op);
        at += pieces[k]->shape[axis];
        emily_tensor_release(conv);
        emily_tensor_release(dst);
    }
    free(shape);
    return emi_hand_out(s, res, out);
}

/* The checks concatenate (stacking false) and stack (true) share: the
 * output pointer, a non-empty list of tensors on one device, the output
 * type (*dt: the inputs' merged type when out_type is AUTO), the axis
 * (*ax, normalized against the output's rank: one more than the
 * inputs' when stacking) and the inputs' shapes, which must be equal
 * (concatenate: but along the axis). */
static emily_status check_list(const char *op, bool stacking, int n, const emily_tensor *const *ts, int axis,
                               emily_dtype out_type, emily_tensor **out, const emily_engine **e, emily_dtype *dt,
                               int *ax) {
    emily_status s = emi_check_out(op, out);
    if (s) return s;
    if (n < 1 || !ts) return emily_error(EMILY_ERR_ARGUMENT, "%s: expected a non-empty list of tensors", op);
    for (int k = 0; k < n; k++) {
        if (!ts[k]) return emily_error(EMILY_ERR_ARGUMENT, "%s: tensor %d of the list is NULL", op, k);
    }
    if ((s = emi_check_same_device(op, n, ts, e))) return s;
    if (out_type != EMILY_DTYPE_AUTO && !emily_dtype_valid(out_type))
        return emily_error(EMILY_ERR_TYPE, "%s: invalid output type %d", op, (int)out_type);
    emily_dtype m = ts[0]->dtype;
    for (int k = 1; k < n; k++) m = emily_type_merge(m, ts[k]->dtype);
    *dt = out_type == EMILY_DTYPE_AUTO ? m : out_type;
    int r = ts[0]->rank;
    if (r == 0 && !stacking) return emily_error(EMILY_ERR_SHAPE, "concatenate: cannot concatenate scalars (rank 0)");
    if ((s = emi_norm_axis(op, axis, stacking ? r + 1 : r, ax))) return s;
    for (int k = 1; k < n; k++) {
        bool ok = ts[k]->rank == r;
        for (int i = 0; ok && i < r; i++) ok = (!stacking && i == *ax) || ts[k]->shape[i] == ts[0]->shape[i];
        if (ok) continue;
        char b[256];
        if (stacking)
            return emily_error(EMILY_ERR_SHAPE, "stack: tensor %d has shape %s, expected %s like tensor 0", k,
                               EMILY_SHAPE_STR(ts[k]), emi_shape_str(r, ts[0]->shape, b, sizeof b));
        return emily_error(EMILY_ERR_SHAPE, "concatenate: tensor %d has shape %s, incompatible with %s along axis %d",
                           k, EMILY_SHAPE_STR(ts[k]), emi_shape_str(r, ts[0]->shape, b, sizeof b), *ax);
    }
    return EMILY_OK;
}

emily_status emily_concatenate(int n, const emily_tensor *const *ts, int axis, emily_dtype out_type,
                               emily_tensor **out) {
    const emily_engine *e;
    emily_dtype dt;
    int ax;
    emily_status s = check_list("concatenate", false, n, ts, axis, out_type, out, &e, &dt, &ax);
    if (s) return s;
    return concat_pieces("concatenate", e, n, (emily_tensor *const *)ts, ax, dt, out);
}

emily_status emily_stack(int n, const emily_tensor *const *ts, int axis, emily_dtype out_type, emily_tensor **out) {
    const char *op = "stack";
    const emily_engine *e;
    emily_dtype dt;
    int ax;
    emily_status s = check_list(op, true, n, ts, axis, out_type, out, &e, &dt, &ax);
    if (s) return s;
    int r = ts[0]->rank;
    emily_tensor **pieces = calloc((size_t)n, sizeof *pieces);
    int64_t *buf = malloc(sizeof(int64_t) * (2 * (size_t)r + 2));
    if (!pieces || !buf) {
        free(pieces);
        free(buf);
        return emily_error(EMILY_ERR_MEMORY, "stack: out of host memory");
    }
    int64_t *shape = buf, *strides = buf + r + 1;
    for (int k = 0; !s && k < n; k++) {
        /* each input gains an axis of size 1 at `ax` */
        for (int i = 0, j = 0; i <= r; i++) {
            if (i == ax) {
                shape[i] = 1;
                strides[i] = 0;
                continue;
            }
            shape[i] = ts[k]->shape[j];
            strides[i] = ts[k]->strides[j];
            j++;
        }
        s = emi_tensor_view(ts[k], r + 1, shape, strides, ts[k]->offset, &pieces[k]);
    }
    if (!s) s = concat_pieces(op, e, n, pieces, ax, dt, out);
    emi_release_all(n, pieces);
    free(pieces);
    free(buf);
    return s;
}

/* ---- put_slice ---------------------------------------------------------- */

emily_status emily_put_slice(const emily_tensor *t, const int64_t *starts, const emily_tensor *update,
                             emily_dtype out_type, emily_tensor **out) {
    const char *op = "put_slice";
    const emily_tensor *both[2] = {t, update};
    const emily_engine *e;
    emily_status s = emi_check_inputs(op, out, 2, both, (const char *const[]){"tensor", "slice"}, &e);
    if (s) return s;
    if (out_type != EMILY_DTYPE_AUTO && !emily_dtype_valid(out_type))
        return emily_error(EMILY_ERR_TYPE, "put_slice: invalid output type %d", (int)out_type);
    int r = t->rank;
    bool ok = update->rank == r;
    for (int i = 0; ok && i < r; i++) ok = update->shape[i] <= t->shape[i];
    if (!ok)
        return emily_error(EMILY_ERR_SHAPE, "put_slice: the slice of shape %s does not fit in the tensor of shape %s",
                           EMILY_SHAPE_STR(update), EMILY_SHAPE_STR(t));
    if (r > 0 && !starts) return emily_error(EMILY_ERR_ARGUMENT, "put_slice: start indices are NULL");
    emily_dtype dt = out_type == EMILY_DTYPE_AUTO ? emily_type_merge(t->dtype, update->dtype) : out_type;
    emily_tensor *tc = NULL, *uc = NULL, *res = NULL, *dst = NULL;
    s = emi_convert_to(t, dt, &tc);
    if (!s) s = emi_convert_to(update, dt, &uc);
    if (!s) s = emi_empty_like_device(t, dt, r, t->shape, &res);
    if (!s) s = copy_into(e, res, tc, op);
    if (!s && update->size > 0) {
        int64_t off = 0;
        for (int i = 0; i < r; i++) {
            int64_t st = starts[i];
            if (st > t->shape[i] - update->shape[i]) st = t->shape[i] - update->shape[i];
            if (st < 0) st = 0;
            off += st * res->strides[i];
        }
        s = emi_tensor_view(res, r, update->shape, res->strides, off, &dst);
        if (!s) s = copy_into(e, dst, uc, op);
    }
    emily_tensor_release(tc);
    emily_tensor_release(uc);
    emily_tensor_release(dst);
    return emi_hand_out(s, res, out);
}
