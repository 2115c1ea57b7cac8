/* CPU kernels: constant fill, iota and eye. Values are written with Nx's
 * number -> dtype rules (core/scalar_convert.h). */
#include <string.h>
#include "core/scalar_convert.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"

/* The bytes of one element of `dtype` holding the scalar. */
static void scalar_bytes(emily_dtype dtype, const emily_scalar *v, unsigned char *out) {
    switch (v->kind) {
    case EMILY_SCALAR_INT: emily_sc_store_int((int)dtype, (uint64_t)v->i, 0, out); break;
    case EMILY_SCALAR_UINT: emily_sc_store_int((int)dtype, v->u, 1, out); break;
    case EMILY_SCALAR_FLOAT: emily_sc_store_complex((int)dtype, v->re, 0.0, out); break;
    case EMILY_SCALAR_COMPLEX: emily_sc_store_complex((int)dtype, v->re, v->im, out); break;
    }
}

typedef struct { uint64_t lo, hi; } u128;

#define FILL_LOOP(T)                                                                   \
    do {                                                                               \
        T val;                                                                         \
        memcpy(&val, bytes, sizeof val);                                               \
        _Pragma("omp parallel for if (total >= EMILY_PARALLEL_MIN) schedule(static)")  \
        for (int64_t pos = 0; pos < it.outer_n; pos++) {                               \
            int64_t off[1];                                                            \
            emily_iter_offsets(&it, pos, off);                                         \
            T *d = (T *)base + off[0];                                                 \
            int64_t st = it.inner_stride[0];                                           \
            if (st == 1)                                                               \
                for (int64_t i = 0; i < it.inner_n; i++) d[i] = val;                   \
            else                                                                       \
                for (int64_t i = 0; i < it.inner_n; i++) d[i * st] = val;              \
        }                                                                              \
    } while (0)

emily_status emily_cpu_fill(emily_tensor *dst, const emily_scalar *value) {
    if (dst->size == 0) return EMILY_OK;
    unsigned char bytes[16] = {0};
    scalar_bytes(dst->dtype, value, bytes);
    size_t es = emily_dtype_size(dst->dtype);
    int64_t total = dst->size;
    char *base = emily_tensor_base(dst);
    bool zero = true;
    for (size_t i = 0; i < es; i++) zero = zero && bytes[i] == 0;
    if (zero && emily_tensor_is_contiguous(dst)) {
        /* split so both cores touch (and fault in) their half */
        int64_t nbytes = total * (int64_t)es, chunk = 1 << 20;
        int64_t nchunks = (nbytes + chunk - 1) / chunk;
        #pragma omp parallel for if (nchunks > 1) schedule(static)
        for (int64_t c = 0; c < nchunks; c++) {
            int64_t lo = c * chunk, n = nbytes - lo < chunk ? nbytes - lo : chunk;
            memset(base + lo, 0, (size_t)n);
        }
        return EMILY_OK;
    }
    const emily_tensor *ts[1] = {dst};
    emily_iter it;
    emily_status s = emily_iter_tensors(&it, 1, ts);
    if (s) return s;
    switch (es) {
    case 1: FILL_LOOP(uint8_t); break;
    case 2: FILL_LOOP(uint16_t); break;
    case 4: FILL_LOOP(uint32_t); break;
    case 8: FILL_LOOP(uint64_t); break;
    case 16: FILL_LOOP(u128); break;
    default: s = emily_error(EMILY_ERR_INTERNAL, "constant: bad element size %zu", es);
    }
    emily_iter_free(&it);
    return s;
}

static inline emily_c64 mk_c64(double re) {
    emily_c64 z = {(float)re, 0.0f};
    return z;
}
static inline emily_c128 mk_c128(double re) {
    emily_c128 z = {re, 0.0};
    return z;
}

/* d[k] = the k-th counter value (k itself, or its index along the axis:
 * (k / inner) % dim), written as T by EXPR of the int64 `v`. */
#define IOTA_LOOP(T, EXPR)                                                             \
    do {                                                                               \
        T *d = (T *)base;                                                              \
        _Pragma("omp parallel for if (total >= EMILY_PARALLEL_MIN) schedule(static)")  \
        for (int64_t k = 0; k < total; k++) {                                          \
            int64_t v = axis < 0 ? k : (k / inner) % dim;                              \
            d[k] = (EXPR);                                                             \
        }                                                                              \
    } while (0)

emily_status emily_cpu_iota(emily_tensor *dst, int axis) {
    if (dst->size == 0) return EMILY_OK;
    if (!emily_tensor_is_contiguous(dst))
        return emily_error(EMILY_ERR_INTERNAL, "iota: the output must be contiguous");
    if (axis >= dst->rank)
        return emily_error(EMILY_ERR_AXIS, "iota: axis %d out of range for rank %d", axis, dst->rank);
    int64_t inner = 1, dim = 1, total = dst->size;
    if (axis >= 0) {
        dim = dst->shape[axis];
        for (int i = axis + 1; i < dst->rank; i++) inner *= dst->shape[i];
    }
    void *base = emily_tensor_base(dst);
    switch (dst->dtype) {
    case EMILY_U8: IOTA_LOOP(uint8_t, (uint8_t)v); break;
    case EMILY_U16: IOTA_LOOP(uint16_t, (uint16_t)v); break;
    case EMILY_U32: IOTA_LOOP(uint32_t, (uint32_t)v); break;
    case EMILY_U64: IOTA_LOOP(uint64_t, (uint64_t)v); break;
    case EMILY_S8: IOTA_LOOP(int8_t, (int8_t)v); break;
    case EMILY_S16: IOTA_LOOP(int16_t, (int16_t)v); break;
    case EMILY_S32: IOTA_LOOP(int32_t, (int32_t)v); break;
    case EMILY_S64: IOTA_LOOP(int64_t, v); break;
    case EMILY_F16: IOTA_LOOP(uint16_t, emily_sc_f64_to_f16((double)v)); break;
    case EMILY_BF16: IOTA_LOOP(uint16_t, emily_sc_f64_to_bf16((double)v)); break;
    case EMILY_F32: IOTA_LOOP(float, (float)(double)v); break;
    case EMILY_F64: IOTA_LOOP(double, (double)v); break;
    case EMILY_C64: IOTA_LOOP(emily_c64, mk_c64((double)v)); break;
    case EMILY_C128: IOTA_LOOP(emily_c128, mk_c128((double)v)); break;
    default: return emily_error(EMILY_ERR_TYPE, "iota: invalid dtype %d", (int)dst->dtype);
    }
    return EMILY_OK;
}

emily_status emily_cpu_eye(emily_tensor *dst) {
    if (dst->rank < 2)
        return emily_error(EMILY_ERR_SHAPE, "eye: the output needs rank >= 2, got %d", dst->rank);
    if (!emily_tensor_is_contiguous(dst))
        return emily_error(EMILY_ERR_INTERNAL, "eye: the output must be contiguous");
    if (dst->size == 0) return EMILY_OK;
    /* zero is all-zero bytes in every dtype; then ones on each diagonal */
    emily_scalar zero = emily_scalar_int(0);
    emily_status s = emily_cpu_fill(dst, &zero);
    if (s) return s;
    unsigned char one[16] = {0};
    emily_sc_store_int((int)dst->dtype, 1, 0, one);
    size_t es = emily_dtype_size(dst->dtype);
    int64_t m = dst->shape[dst->rank - 2], n = dst->shape[dst->rank - 1];
    int64_t batches = dst->size / (m * n), diag = m < n ? m : n;
    char *base = emily_tensor_base(dst);
    for (int64_t b = 0; b < batches; b++)
        for (int64_t i = 0; i < diag; i++)
            memcpy(base + (size_t)(b * m * n + i * n + i) * es, one, es);
    return EMILY_OK;
}
