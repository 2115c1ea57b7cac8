/* CPU kernels: constant fill, iota and eye. Values are written with Nx's
 * number -> dtype rules (core/scalar_convert.h). */
#include <string.h>
#include "core/scalar_convert.h"
#include "core/scalar_element.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/unary_map.h"

typedef struct { uint64_t lo, hi; } u128;

/* Fill run functions: write the element held by ctx, ignore the input. */
#define FILL_RUN(NAME, T)                                                              \
    static void NAME(char *d_, int64_t ds, const char *s_, int64_t ss, int64_t n,      \
                     const void *ctx) {                                                \
        (void)s_;                                                                      \
        (void)ss;                                                                      \
        T v, *d = (T *)d_;                                                             \
        memcpy(&v, ctx, sizeof v);                                                     \
        if (ds == 1)                                                                   \
            for (int64_t i = 0; i < n; i++) d[i] = v;                                  \
        else                                                                           \
            for (int64_t i = 0; i < n; i++) d[i * ds] = v;                             \
    }
FILL_RUN(fill1, uint8_t)
FILL_RUN(fill2, uint16_t)
FILL_RUN(fill4, uint32_t)
FILL_RUN(fill8, uint64_t)
FILL_RUN(fill16, u128)

#define ZERO_CHUNK ((int64_t)1 << 20)
typedef struct {
    char *base;
    int64_t nbytes;
} zero_job;
static void zero_chunk(void *p, int64_t c) {
    const zero_job *j = p;
    int64_t lo = c * ZERO_CHUNK, n = j->nbytes - lo < ZERO_CHUNK ? j->nbytes - lo : ZERO_CHUNK;
    memset(j->base + lo, 0, (size_t)n);
}

emily_status emi_cpu_fill(emily_tensor *dst, const emily_scalar *value) {
    if (dst->size == 0) return EMILY_OK;
    unsigned char bytes[16] = {0};
    emi_scalar_element(dst->dtype, value, bytes);
    size_t es = emily_dtype_size(dst->dtype);
    bool zero = true;
    for (size_t i = 0; i < es; i++) zero = zero && bytes[i] == 0;
    if (zero && emily_tensor_is_contiguous(dst)) {
        /* all-zero bytes: memset, split so both cores touch (and fault
         * in) their part */
        zero_job j = {emily_tensor_base(dst), dst->size * (int64_t)es};
        int64_t chunks = (j.nbytes + ZERO_CHUNK - 1) / ZERO_CHUNK;
        if (dst->size < EMILY_PARALLEL_MIN) {
            for (int64_t c = 0; c < chunks; c++) zero_chunk(&j, c);
        } else {
            emi_cpu_parallel(chunks, zero_chunk, &j);
        }
        return EMILY_OK;
    }
    emily_run_fn fn;
    switch (es) {
    case 1: fn = fill1; break;
    case 2: fn = fill2; break;
    case 4: fn = fill4; break;
    case 8: fn = fill8; break;
    case 16: fn = fill16; break;
    default: return emily_error(EMILY_ERR_INTERNAL, "constant: bad element size %zu", es);
    }
    return emi_cpu_map(dst, dst, fn, bytes);
}

static inline emily_c64 mk_c64(double re) {
    emily_c64 z = {(float)re, 0.0f};
    return z;
}
static inline emily_c128 mk_c128(double re) {
    emily_c128 z = {re, 0.0};
    return z;
}

typedef struct {
    void *base;
    emily_dtype dtype;
    int axis;
    int64_t inner, dim, total;
} iota_job;

/* d[k] = the k-th counter value (k itself, or its index along the axis:
 * (k / inner) % dim), written as T by EXPR of the int64 `v`. */
#define IOTA_LOOP(T, EXPR)                                                             \
    do {                                                                               \
        T *d = (T *)j->base;                                                           \
        for (int64_t k = k0; k < k1; k++) {                                            \
            int64_t v = j->axis < 0 ? k : (k / j->inner) % j->dim;                     \
            d[k] = (EXPR);                                                             \
        }                                                                              \
    } while (0)

static void iota_chunk(void *p, int64_t c) {
    const iota_job *j = p;
    int64_t k0 = c * EMILY_MAP_CHUNK, k1 = j->total - k0 < EMILY_MAP_CHUNK ? j->total : k0 + EMILY_MAP_CHUNK;
    switch (j->dtype) {
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
    default: break;
    }
}

emily_status emi_cpu_iota(emily_tensor *dst, int axis) {
    if (dst->size == 0) return EMILY_OK;
    if (!emily_tensor_is_contiguous(dst))
        return emily_error(EMILY_ERR_INTERNAL, "iota: the output must be contiguous");
    if (axis >= dst->rank)
        return emily_error(EMILY_ERR_AXIS, "iota: axis %d out of range for rank %d", axis, dst->rank);
    if (!emily_dtype_valid(dst->dtype))
        return emily_error(EMILY_ERR_TYPE, "iota: invalid dtype %d", (int)dst->dtype);
    iota_job j = {emily_tensor_base(dst), dst->dtype, axis < 0 ? -1 : axis, 1, 1, dst->size};
    if (axis >= 0) {
        j.dim = dst->shape[axis];
        for (int i = axis + 1; i < dst->rank; i++) j.inner *= dst->shape[i];
    }
    int64_t chunks = (j.total + EMILY_MAP_CHUNK - 1) / EMILY_MAP_CHUNK;
    if (j.total < EMILY_PARALLEL_MIN) {
        for (int64_t c = 0; c < chunks; c++) iota_chunk(&j, c);
    } else {
        emi_cpu_parallel(chunks, iota_chunk, &j);
    }
    return EMILY_OK;
}

emily_status emi_cpu_eye(emily_tensor *dst) {
    if (dst->rank < 2)
        return emily_error(EMILY_ERR_SHAPE, "eye: the output needs rank >= 2, got %d", dst->rank);
    if (!emily_tensor_is_contiguous(dst))
        return emily_error(EMILY_ERR_INTERNAL, "eye: the output must be contiguous");
    if (dst->size == 0) return EMILY_OK;
    /* zero is all-zero bytes in every dtype; then ones on each diagonal */
    emily_scalar zero = emily_scalar_int(0);
    emily_status s = emi_cpu_fill(dst, &zero);
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
