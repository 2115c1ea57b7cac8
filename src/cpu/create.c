/* CPU kernels: constant fill, iota and eye. Values are written with Nx's
 * number -> dtype rules (core/scalar_convert.h). */
#include <string.h>
#include "core/scalar_convert.h"
#include "cpu/dtype_scalars.h"
#include "core/scalar_element.h"
#include "core/iota_layout.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/elementwise_map.h"
#include "cpu/parallel.h"

/* Fill run functions, one per element size (fill_1 .. fill_16): write
 * the element held by ctx, ignore the input. */
#define FILL_RUN(BYTES, T)                                                                                   \
    static void fill_##BYTES(char *d_, int64_t ds, const char *s_, int64_t ss, int64_t n, const void *ctx) { \
        (void)s_;                                                                                            \
        (void)ss;                                                                                            \
        T v, *d = (T *)d_;                                                                                   \
        memcpy(&v, ctx, sizeof v);                                                                           \
        if (ds == 1)                                                                                         \
            for (int64_t i = 0; i < n; i++) d[i] = v;                                                        \
        else                                                                                                 \
            for (int64_t i = 0; i < n; i++) d[i * ds] = v;                                                   \
    }
EMI_ELEMENT_SIZES(FILL_RUN)

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
    switch (es) {
// clang-format off
#define FILL_CASE(BYTES, T) \
    case BYTES: return emi_cpu_map(dst, dst, fill_##BYTES, bytes);
        // clang-format on
        EMI_ELEMENT_SIZES(FILL_CASE)
#undef FILL_CASE
    default: return emily_error(EMILY_ERR_INTERNAL, "constant: bad element size %zu", es);
    }
}

typedef struct {
    void *base;
    emily_dtype dtype;
    int axis;
    int64_t inner, dim, total;
} iota_job;

/* Chunk [k0, k1) of d[k] = the k-th counter value (k itself, or its
 * index along the axis: (k / inner) % dim), one function per dtype:
 * integers take the int64 value's low bits, the other types the value
 * through a double, as Nx writes an integer into a float tensor. */
#define IOTA_LOOP(sfx, T, EXPR)                                         \
    static void iota_##sfx(const iota_job *j, int64_t k0, int64_t k1) { \
        T *d = (T *)j->base;                                            \
        for (int64_t k = k0; k < k1; k++) {                             \
            int64_t v = j->axis < 0 ? k : (k / j->inner) % j->dim;      \
            d[k] = (EXPR);                                              \
        }                                                               \
    }
#define IOTA_INTEGER(ENUM, sfx, T) IOTA_LOOP(sfx, T, (T)v)
#define IOTA_INEXACT(ENUM, sfx, T) IOTA_LOOP(sfx, T, emi_from_f64_##sfx((double)v))
EMI_DTYPES_INTEGER(IOTA_INTEGER)
EMI_DTYPES_INEXACT(IOTA_INEXACT)

static void iota_chunk(void *p, int64_t c) {
    const iota_job *j = p;
    int64_t k0 = c * EMILY_MAP_CHUNK, k1 = j->total - k0 < EMILY_MAP_CHUNK ? j->total : k0 + EMILY_MAP_CHUNK;
    switch (j->dtype) {
// clang-format off
#define IOTA_CASE(ENUM, sfx, T) \
    case EMILY_##ENUM: iota_##sfx(j, k0, k1); break;
        // clang-format on
        EMI_DTYPES(IOTA_CASE)
#undef IOTA_CASE
    default: break;
    }
}

emily_status emi_cpu_iota(emily_tensor *dst, int axis) {
    if (dst->size == 0) return EMILY_OK;
    iota_job j = {emily_tensor_base(dst), dst->dtype, axis < 0 ? -1 : axis, 1, 1, dst->size};
    emily_status s = emi_iota_layout(dst, axis, &j.dim, &j.inner);
    if (s) return s;
    if (!emily_dtype_valid(dst->dtype)) return emily_error(EMILY_ERR_TYPE, "iota: invalid dtype %d", (int)dst->dtype);
    int64_t chunks = (j.total + EMILY_MAP_CHUNK - 1) / EMILY_MAP_CHUNK;
    if (j.total < EMILY_PARALLEL_MIN) {
        for (int64_t c = 0; c < chunks; c++) iota_chunk(&j, c);
    } else {
        emi_cpu_parallel(chunks, iota_chunk, &j);
    }
    return EMILY_OK;
}

emily_status emi_cpu_eye(emily_tensor *dst) {
    if (dst->rank < 2) return emily_error(EMILY_ERR_SHAPE, "eye: the output needs rank >= 2, got %d", dst->rank);
    if (!emily_tensor_is_contiguous(dst)) return emily_error(EMILY_ERR_INTERNAL, "eye: the output must be contiguous");
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
        for (int64_t i = 0; i < diag; i++) memcpy(base + (size_t)(b * m * n + i * n + i) * es, one, es);
    return EMILY_OK;
}
