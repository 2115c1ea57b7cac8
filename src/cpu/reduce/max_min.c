/* The reduce_max and reduce_min reducers (see reducers.h), one body per
 * class of types expanded over the dtype list, and the fix-up that gives
 * a zero result the sign Nx's fold gives it.
 *
 * Integers fold in the type itself; floats in C (float for f16, bf16 and
 * f32, double for f64) with a sticky NaN, contiguous f32/f64 runs
 * through simd.c. Complex numbers have no order (no reducer). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/reduce/reducers.h"
#include "cpu/reduce/simd.h"

/* ---- integers ----------------------------------------------------------- */

#define MAX_STEP(T, a, x) ((x) > (a) ? (x) : (a))
#define MIN_STEP(T, a, x) ((x) < (a) ? (x) : (a))

/* The folds start from the type's smallest (max) and largest (min)
 * value: an unsigned type's are 0 and all ones, a signed type's the
 * largest is the half of its bits' all ones. */
#define UNSIGNED_MAX_MIN(ENUM, sfx, T)                 \
    EMI_INT_REDUCER(max_##sfx, T, T, MAX_STEP, max, 0) \
    EMI_INT_REDUCER(min_##sfx, T, T, MIN_STEP, min, (T) ~(T)0)
#define SIGNED_LARGEST(sfx, T) ((T)((EMI_BITS(sfx)) ~(EMI_BITS(sfx))0 >> 1))
#define SIGNED_MAX_MIN(ENUM, sfx, T)                                                  \
    EMI_INT_REDUCER(max_##sfx, T, T, MAX_STEP, max, (T)(-SIGNED_LARGEST(sfx, T) - 1)) \
    EMI_INT_REDUCER(min_##sfx, T, T, MIN_STEP, min, SIGNED_LARGEST(sfx, T))
EMI_DTYPES_UNSIGNED(UNSIGNED_MAX_MIN)
EMI_DTYPES_SIGNED(SIGNED_MAX_MIN)

/* ---- floats ---------------------------------------------------------------- */

/* CONTIG(x, n, &m) folds a contiguous run into m and says whether it saw
 * a NaN; COLS1(a, x, n) folds a contiguous run into the accumulators. */
#define FLOAT_EXTREME(NAME, T, C, LOAD, STORE, INITV, BETTER, CONTIG, COLS1)    \
    EMI_REDUCER_INIT(NAME, C, INITV)                                            \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {  \
        const T *restrict x = src;                                              \
        C m = *(C *)acc;                                                        \
        if (m != m) return;                                                     \
        int nan = 0;                                                            \
        if (s == 1) {                                                           \
            nan = CONTIG(x, n, &m);                                             \
        } else {                                                                \
            for (int64_t i = 0; i < n; i++) {                                   \
                C v = LOAD(x[i * s]);                                           \
                nan |= v != v;                                                  \
                m = v BETTER m ? v : m;                                         \
            }                                                                   \
        }                                                                       \
        *(C *)acc = nan ? (C)NAN : m;                                           \
    }                                                                           \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) { \
        const T *restrict x = src;                                              \
        C *restrict a = acc;                                                    \
        if (s == 1) {                                                           \
            COLS1(a, x, n);                                                     \
        } else {                                                                \
            for (int64_t j = 0; j < n; j++) {                                   \
                C v = LOAD(x[j * s]);                                           \
                a[j] = (v BETTER a[j] || v != v) ? v : a[j];                    \
            }                                                                   \
        }                                                                       \
    }                                                                           \
    static void NAME##_merge(void *acc, const void *part) {                     \
        C p = *(const C *)part, *a = acc;                                       \
        if (*a != *a) return;                                                   \
        if (p != p || p BETTER * a) *a = p;                                     \
    }                                                                           \
    EMI_REDUCER_STORE(NAME, T, C, STORE)                                        \
    EMI_REDUCER(NAME, C, false)

/* contiguous column folds */
#define COLS_GENERIC(NAME, T, C, LOAD, BETTER)                        \
    static void NAME(C *restrict a, const T *restrict x, int64_t n) { \
        PRAGMA(omp simd)                                              \
        for (int64_t j = 0; j < n; j++) {                             \
            C v = LOAD(x[j]);                                         \
            a[j] = (v BETTER a[j] || v != v) ? v : a[j];              \
        }                                                             \
    }

#define FLOAT_MAX_MIN(sfx, T, C, LOAD, STORE)                                                   \
    FLOAT_EXTREME(max_##sfx, T, C, LOAD, STORE, (C)-INFINITY, >, ext_max_##sfx, cols_max_##sfx) \
    FLOAT_EXTREME(min_##sfx, T, C, LOAD, STORE, (C)INFINITY, <, ext_min_##sfx, cols_min_##sfx)

/* f16 and bf16 fold in float, with generic vectorizable loops. */
#define HALF_MAX_MIN(ENUM, sfx, T)                                            \
    EMI_EXTREME_RUN(ext_max_##sfx, T, float, emily_sc_##sfx##_to_f32, >, max) \
    EMI_EXTREME_RUN(ext_min_##sfx, T, float, emily_sc_##sfx##_to_f32, <, min) \
    COLS_GENERIC(cols_max_##sfx, T, float, emily_sc_##sfx##_to_f32, >)        \
    COLS_GENERIC(cols_min_##sfx, T, float, emily_sc_##sfx##_to_f32, <)        \
    FLOAT_MAX_MIN(sfx, T, float, emily_sc_##sfx##_to_f32, emi_from_f64_##sfx)
EMI_DTYPES_HALF(HALF_MAX_MIN)

/* f32 and f64 fold in their own type: simd.c's runs (and f32 columns),
 * a generic loop for f64 columns. */
#define ext_max_f32 emi_simd_max_f32
#define ext_min_f32 emi_simd_min_f32
#define cols_max_f32 emi_simd_cols_max_f32
#define cols_min_f32 emi_simd_cols_min_f32
#define ext_max_f64 emi_simd_max_f64
#define ext_min_f64 emi_simd_min_f64
COLS_GENERIC(cols_max_f64, double, double, EMI_AS_IS, >)
COLS_GENERIC(cols_min_f64, double, double, EMI_AS_IS, <)
#define NATIVE_MAX_MIN(ENUM, sfx, T) FLOAT_MAX_MIN(sfx, T, T, EMI_AS_IS, EMI_AS_IS)
EMI_DTYPES_NATIVE_FLOAT(NATIVE_MAX_MIN)

#define MAX_ENTRY(ENUM, sfx, T) EMI_REDUCER_ENTRY(ENUM, max_##sfx)
#define MIN_ENTRY(ENUM, sfx, T) EMI_REDUCER_ENTRY(ENUM, min_##sfx)
const emi_reducer *const emi_reduce_max[EMILY_DTYPE_COUNT] = {EMI_DTYPES_REAL(MAX_ENTRY)};
const emi_reducer *const emi_reduce_min[EMILY_DTYPE_COUNT] = {EMI_DTYPES_REAL(MIN_ENTRY)};

/* ---- the sign of a zero result -------------------------------------------- */

static bool is_zero_bits(emily_dtype dt, const char *p) {
    switch (dt) {
// clang-format off
#define HALF_IS_ZERO(ENUM, sfx, T)                                                     \
    case EMILY_##ENUM: {                                                               \
        T h;                                                                           \
        memcpy(&h, p, sizeof h);                                                       \
        return (h & 0x7fffu) == 0;                                                     \
    }
#define NATIVE_IS_ZERO(ENUM, sfx, T)                                                   \
    case EMILY_##ENUM: {                                                               \
        T f;                                                                           \
        memcpy(&f, p, sizeof f);                                                       \
        return f == 0;                                                                 \
    }
        // clang-format on
        EMI_DTYPES_HALF(HALF_IS_ZERO)
        EMI_DTYPES_NATIVE_FLOAT(NATIVE_IS_ZERO)
#undef HALF_IS_ZERO
#undef NATIVE_IS_ZERO
    default: return false;
    }
}

emily_status emi_reduce_fix_zero_signs(emily_tensor *dst, const emily_tensor *src, const bool *reduced) {
    size_t es = emily_dtype_size(src->dtype);
    const char *sbase = emily_tensor_base(src);
    char *dbase = emily_tensor_base(dst);
    int r = src->rank;
    int64_t *idx = calloc((size_t)r + 1, sizeof(int64_t));
    if (!idx) return emily_error(EMILY_ERR_MEMORY, "reduce: out of host memory");
    for (int64_t o = 0; o < dst->size; o++) {
        char *dp = dbase + o * (int64_t)es;
        if (!is_zero_bits(dst->dtype, dp)) continue;
        /* kept coordinates of output o (dst is contiguous, src's rank) */
        int64_t rem = o, base = 0;
        for (int i = r - 1; i >= 0; i--) {
            int64_t c = rem % dst->shape[i];
            rem /= dst->shape[i];
            base += c * src->strides[i];
            idx[i] = 0;
        }
        /* walk the reduced coordinates row-major */
        for (;;) {
            int64_t off = base;
            for (int i = 0; i < r; i++)
                if (reduced[i]) off += idx[i] * src->strides[i];
            const char *sp = sbase + off * (int64_t)es;
            if (is_zero_bits(src->dtype, sp)) {
                memcpy(dp, sp, es);
                break;
            }
            int i = r - 1;
            for (; i >= 0; i--) {
                if (!reduced[i]) continue;
                if (++idx[i] < src->shape[i]) break;
                idx[i] = 0;
            }
            if (i < 0) break;
        }
    }
    free(idx);
    return EMILY_OK;
}
