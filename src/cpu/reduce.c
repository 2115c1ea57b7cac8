/* CPU kernels: reductions (sum, product, reduce_max/min, all, any),
 * argmax/argmin and all_close.
 *
 * Reductions. The input's dims are reordered by memory stride (largest
 * first) and adjacent dims of the same kind (kept / reduced) that are
 * contiguous are merged. The innermost dim then decides the loop:
 *  - it is reduced: each output folds contiguous (or strided) runs, one
 *    per position of the outer reduced dims ("row" reductions);
 *  - it is kept: blocks of up to COLS_MAX outputs are folded together, one
 *    input row at a time ("column" reductions), so reducing a leading
 *    axis of a contiguous tensor reads memory sequentially and the
 *    inner loop vectorizes across outputs.
 * Work is split over OpenMP threads by outputs, or inside the runs when
 * there are fewer outputs than threads.
 *
 * Accumulators (Nx accumulates floats in f64 and rounds once):
 * integers wrap in their own width; f16/bf16/f32/f64 sums and products
 * accumulate in double (contiguous f32/f64 runs in vector lanes, see
 * reduce_simd.c; f64 sums compensate every addition); complex in a
 * pair of doubles. max/min propagate NaN; where the result is a zero, its
 * sign is the one of the first zero in Nx's order (Erlang's max/min keep
 * the first of equals). Serial work never enters OpenMP (EMILY_PAR_FOR). */
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "core/ordered_fold.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/unary_map.h"
#include "cpu/reduce_simd.h"

typedef uint16_t half_bits;

#define PRAGMA(x) _Pragma(#x)

static inline float ld_f16(half_bits h) { return emily_f16_to_f32(h); }
static inline float ld_bf16(half_bits h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline half_bits st_f16(double x) { return emily_f64_to_f16(x); }
static inline half_bits st_bf16(double x) { return emily_f32_to_bf16((float)x); }

/* ======================================================================
 * Reducers: one table of functions per (op, input dtype).
 * ==================================================================== */

#define COLS_MAX 8192 /* outputs folded together by a column reduction */

/* Reductions read each element once with a few vector instructions:
 * below this many elements (1 MiB of f32) a thread team costs more than
 * it saves. */
#define REDUCE_PAR_MIN ((int64_t)1 << 18)

typedef struct reducer {
    size_t acc_size;
    /* n accumulators <- the fold's starting value */
    void (*init)(void *acc, int64_t n);
    /* acc <- fold(acc, x[0], x[s], ..., x[(n-1)s]) */
    void (*run)(void *acc, const void *x, int64_t n, int64_t s);
    /* acc[j] <- fold(acc[j], x[j*s]) for j < n */
    void (*cols)(void *acc, const void *x, int64_t n, int64_t s);
    /* acc <- fold(acc, part) where part folded later elements */
    void (*merge)(void *acc, const void *part);
    /* dst[j*ds] <- acc[j] in the output dtype, j < n */
    void (*store)(void *dst, int64_t ds, const void *acc, int64_t n);
    /* The fold's result depends on its order (float products, complex sums
     * and products): each output folds in Nx's order, and past
     * ORDERED_CHUNK elements in fixed chunks combined in order, never in
     * parts that depend on the thread count (the CUDA engine cuts the
     * same chunks, so both devices agree bit for bit). */
    bool ordered;
} reducer;

/* The chunk of an ordered fold, shared with the CUDA engine. */
#define ORDERED_CHUNK EMI_ORDERED_CHUNK

/* ---- integers: sum/product wrap in the type's width ------------------- */

#define INT_FOLD(NAME, T, U, P, OP, ID)                                                   \
    static void NAME##_init(void *acc, int64_t n) {                                    \
        U *restrict a = acc;                                                           \
        for (int64_t i = 0; i < n; i++) a[i] = (U)(ID);                                \
    }                                                                                  \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {         \
        const T *restrict x = src;                                                              \
        U a = *(U *)acc;                                                               \
        if (s == 1) {                                                                  \
            PRAGMA(omp simd reduction(OP:a))                                   \
            for (int64_t i = 0; i < n; i++) a = (U)((P)a OP (P)(U)x[i]);               \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++) a = (U)((P)a OP (P)(U)x[i * s]);           \
        }                                                                              \
        *(U *)acc = a;                                                                 \
    }                                                                                  \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {        \
        const T *restrict x = src;                                                              \
        U *restrict a = acc;                                                           \
        if (s == 1)                                                                    \
            PRAGMA(omp simd)                                                           \
            for (int64_t j = 0; j < n; j++) a[j] = (U)((P)a[j] OP (P)(U)x[j]);         \
        else                                                                           \
            for (int64_t j = 0; j < n; j++) a[j] = (U)((P)a[j] OP (P)(U)x[j * s]);     \
    }                                                                                  \
    static void NAME##_merge(void *acc, const void *part) {                            \
        *(U *)acc = (U)((P) * (U *)acc OP (P) * (const U *)part);                  \
    }                                                                                  \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {      \
        T *d = dst;                                                                    \
        const U *a = acc;                                                              \
        for (int64_t j = 0; j < n; j++) memcpy(&d[j * ds], &a[j], sizeof(T));          \
    }                                                                                  \
    static const reducer NAME = {sizeof(U), NAME##_init, NAME##_run, NAME##_cols,      \
                                 NAME##_merge, NAME##_store, false};

/* P: the type the arithmetic happens in (unsigned int for narrow types,
 * so that a u16 product never overflows a signed int) */
#define INT_SUMPROD(SUF, T, U, P)               \
    INT_FOLD(sum_##SUF, T, U, P, +, 0)          \
    INT_FOLD(prod_##SUF, T, U, P, *, 1)

INT_SUMPROD(u8, uint8_t, uint8_t, unsigned)
INT_SUMPROD(u16, uint16_t, uint16_t, unsigned)
INT_SUMPROD(u32, uint32_t, uint32_t, uint32_t)
INT_SUMPROD(u64, uint64_t, uint64_t, uint64_t)
INT_SUMPROD(s8, int8_t, uint8_t, unsigned)
INT_SUMPROD(s16, int16_t, uint16_t, unsigned)
INT_SUMPROD(s32, int32_t, uint32_t, uint32_t)
INT_SUMPROD(s64, int64_t, uint64_t, uint64_t)

/* ---- floats: sums and products in double ------------------------------ */

#define ID_LOAD(v) (v)


#define FLOAT_SUM(NAME, T, LOAD, STORE, CONTIG, COLS1)                                        \
    static void NAME##_init(void *acc, int64_t n) {                                    \
        double *restrict a = acc;                                                      \
        for (int64_t i = 0; i < n; i++) a[i] = 0.0;                                    \
    }                                                                                  \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {         \
        const T *restrict x = src;                                                              \
        double a = *(double *)acc;                                                     \
        if (s == 1) a += CONTIG(x, n);                                                 \
        else                                                                           \
            for (int64_t i = 0; i < n; i++) a += (double)LOAD(x[i * s]);               \
        *(double *)acc = a;                                                            \
    }                                                                                  \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {        \
        const T *restrict x = src;                                                              \
        double *restrict a = acc;                                                      \
        if (s == 1)                                                                    \
            COLS1(a, x, n);                                                            \
        else                                                                           \
            for (int64_t j = 0; j < n; j++) a[j] += (double)LOAD(x[j * s]);            \
    }                                                                                  \
    static void NAME##_merge(void *acc, const void *part) {                            \
        *(double *)acc += *(const double *)part;                                       \
    }                                                                                  \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {      \
        T *d = dst;                                                                    \
        const double *a = acc;                                                         \
        for (int64_t j = 0; j < n; j++) d[j * ds] = STORE(a[j]);                       \
    }                                                                                  \
    static const reducer NAME = {sizeof(double), NAME##_init, NAME##_run, NAME##_cols, \
                                 NAME##_merge, NAME##_store, false};

static double seq_f16(const half_bits *x, int64_t n) {
    double a = 0;
    for (int64_t i = 0; i < n; i++) a += ld_f16(x[i]);
    return a;
}
static double seq_bf16(const half_bits *x, int64_t n) {
    double a = 0;
    for (int64_t i = 0; i < n; i++) a += ld_bf16(x[i]);
    return a;
}
static void cols_sum_f16(double *restrict a, const half_bits *restrict x, int64_t n) {
    for (int64_t j = 0; j < n; j++) a[j] += ld_f16(x[j]);
}
static void cols_sum_bf16(double *restrict a, const half_bits *restrict x, int64_t n) {
    for (int64_t j = 0; j < n; j++) a[j] += ld_bf16(x[j]);
}
#define TO_F32(a) ((float)(a))
#define TO_F64(a) (a)
FLOAT_SUM(sum_f16, half_bits, ld_f16, st_f16, seq_f16, cols_sum_f16)
FLOAT_SUM(sum_bf16, half_bits, ld_bf16, st_bf16, seq_bf16, cols_sum_bf16)
FLOAT_SUM(sum_f32, float, ID_LOAD, TO_F32, emi_simd_sum_f32, emi_simd_cols_sum_f32)

/* f64 sums keep a compensation term next to the sum. */
static void sum_f64_init(void *acc, int64_t n) {
    double *a = acc;
    for (int64_t i = 0; i < 2 * n; i++) a[i] = 0.0;
}
static inline void neumaier(double *a, double v) {
    double t = a[0] + v;
    if (fabs(a[0]) >= fabs(v)) a[1] += (a[0] - t) + v;
    else a[1] += (v - t) + a[0];
    a[0] = t;
}
static void sum_f64_run(void *acc, const void *src, int64_t n, int64_t s) {
    const double *x = src;
    double *a = acc;
    if (s == 1) {
        double part[2];
        emi_simd_sum2_f64(x, n, part);
        neumaier(a, part[0]);
        a[1] += part[1];
    } else {
        for (int64_t i = 0; i < n; i++) neumaier(a, x[i * s]);
    }
}
static void sum_f64_cols(void *acc, const void *src, int64_t n, int64_t s) {
    const double *x = src;
    double *a = acc;
    for (int64_t j = 0; j < n; j++) neumaier(a + 2 * j, x[j * s]);
}
static void sum_f64_merge(void *acc, const void *part) {
    const double *p = part;
    double *a = acc;
    neumaier(a, p[0]);
    a[1] += p[1];
}
static void sum_f64_store(void *dst, int64_t ds, const void *acc, int64_t n) {
    double *d = dst;
    const double *a = acc;
    for (int64_t j = 0; j < n; j++)
        /* an infinite sum makes the compensation NaN: the sum alone */
        d[j * ds] = isfinite(a[2 * j]) ? a[2 * j] + a[2 * j + 1] : a[2 * j];
}
static const reducer sum_f64 = {2 * sizeof(double), sum_f64_init, sum_f64_run, sum_f64_cols,
                                sum_f64_merge, sum_f64_store, false};

#define FLOAT_PROD(NAME, T, LOAD, STORE)                                               \
    static void NAME##_init(void *acc, int64_t n) {                                    \
        double *restrict a = acc;                                                      \
        for (int64_t i = 0; i < n; i++) a[i] = 1.0;                                    \
    }                                                                                  \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {         \
        const T *restrict x = src;                                                              \
        double a = *(double *)acc;                                                     \
        for (int64_t i = 0; i < n; i++) a *= (double)LOAD(x[i * s]);                   \
        *(double *)acc = a;                                                            \
    }                                                                                  \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {        \
        const T *restrict x = src;                                                              \
        double *restrict a = acc;                                                      \
        for (int64_t j = 0; j < n; j++) a[j] *= (double)LOAD(x[j * s]);                \
    }                                                                                  \
    static void NAME##_merge(void *acc, const void *part) {                            \
        *(double *)acc *= *(const double *)part;                                       \
    }                                                                                  \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {      \
        T *d = dst;                                                                    \
        const double *a = acc;                                                         \
        for (int64_t j = 0; j < n; j++) d[j * ds] = STORE(a[j]);                       \
    }                                                                                  \
    static const reducer NAME = {sizeof(double), NAME##_init, NAME##_run, NAME##_cols, \
                                 NAME##_merge, NAME##_store, true};

FLOAT_PROD(prod_f16, half_bits, ld_f16, st_f16)
FLOAT_PROD(prod_bf16, half_bits, ld_bf16, st_bf16)
FLOAT_PROD(prod_f32, float, ID_LOAD, TO_F32)
FLOAT_PROD(prod_f64, double, ID_LOAD, TO_F64)

/* ---- complex: {re, im} in double ---------------------------------------- */

#define COMPLEX_FOLD(NAME, T, IS_SUM)                                                  \
    static void NAME##_init(void *acc, int64_t n) {                                    \
        double *restrict a = acc;                                                      \
        for (int64_t i = 0; i < n; i++) { a[2 * i] = IS_SUM ? 0.0 : 1.0; a[2 * i + 1] = 0.0; } \
    }                                                                                  \
    static inline void NAME##_step(double *a, double re, double im) {                  \
        if (IS_SUM) {                                                                  \
            a[0] += re;                                                                \
            a[1] += im;                                                                \
        } else {                                                                       \
            double r = a[0] * re - a[1] * im, i = a[0] * im + a[1] * re;               \
            a[0] = r;                                                                  \
            a[1] = i;                                                                  \
        }                                                                              \
    }                                                                                  \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {         \
        const T *restrict x = src;                                                              \
        for (int64_t i = 0; i < n; i++)                                                \
            NAME##_step(acc, (double)x[2 * i * s], (double)x[2 * i * s + 1]);          \
    }                                                                                  \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {        \
        const T *restrict x = src;                                                              \
        double *restrict a = acc;                                                      \
        for (int64_t j = 0; j < n; j++)                                                \
            NAME##_step(a + 2 * j, (double)x[2 * j * s], (double)x[2 * j * s + 1]);    \
    }                                                                                  \
    static void NAME##_merge(void *acc, const void *part) {                            \
        const double *p = part;                                                        \
        NAME##_step(acc, p[0], p[1]);                                                  \
    }                                                                                  \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {      \
        T *d = dst;                                                                    \
        const double *a = acc;                                                         \
        for (int64_t j = 0; j < n; j++) {                                              \
            d[2 * j * ds] = (T)a[2 * j];                                               \
            d[2 * j * ds + 1] = (T)a[2 * j + 1];                                       \
        }                                                                              \
    }                                                                                  \
    static const reducer NAME = {2 * sizeof(double), NAME##_init, NAME##_run,          \
                                 NAME##_cols, NAME##_merge, NAME##_store, true};

COMPLEX_FOLD(sum_c64, float, 1)
COMPLEX_FOLD(sum_c128, double, 1)
COMPLEX_FOLD(prod_c64, float, 0)
COMPLEX_FOLD(prod_c128, double, 0)

/* ---- max / min ------------------------------------------------------------ */

/* Integers: fold in the type itself. */
#define INT_EXTREME(NAME, T, INITV, BETTER, RED)                                       \
    static void NAME##_init(void *acc, int64_t n) {                                    \
        T *restrict a = acc;                                                           \
        for (int64_t i = 0; i < n; i++) a[i] = INITV;                                  \
    }                                                                                  \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {         \
        const T *restrict x = src;                                                              \
        T m = *(T *)acc;                                                               \
        if (s == 1) {                                                                  \
            PRAGMA(omp simd reduction(RED:m))                                  \
            for (int64_t i = 0; i < n; i++) m = x[i] BETTER m ? x[i] : m;              \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++) m = x[i * s] BETTER m ? x[i * s] : m;      \
        }                                                                              \
        *(T *)acc = m;                                                                 \
    }                                                                                  \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {        \
        const T *restrict x = src;                                                              \
        T *restrict a = acc;                                                           \
        if (s == 1)                                                                    \
            PRAGMA(omp simd)                                                           \
            for (int64_t j = 0; j < n; j++) a[j] = x[j] BETTER a[j] ? x[j] : a[j];     \
        else                                                                           \
            for (int64_t j = 0; j < n; j++) a[j] = x[j * s] BETTER a[j] ? x[j * s] : a[j]; \
    }                                                                                  \
    static void NAME##_merge(void *acc, const void *part) {                            \
        T p = *(const T *)part;                                                        \
        if (p BETTER *(T *)acc) *(T *)acc = p;                                         \
    }                                                                                  \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {      \
        T *d = dst;                                                                    \
        const T *a = acc;                                                              \
        for (int64_t j = 0; j < n; j++) d[j * ds] = a[j];                              \
    }                                                                                  \
    static const reducer NAME = {sizeof(T), NAME##_init, NAME##_run, NAME##_cols,      \
                                 NAME##_merge, NAME##_store, false};

#define INT_MAXMIN(SUF, T, LO, HI)                      \
    INT_EXTREME(max_##SUF, T, LO, >, max)               \
    INT_EXTREME(min_##SUF, T, HI, <, min)

INT_MAXMIN(u8, uint8_t, 0, UINT8_MAX)
INT_MAXMIN(u16, uint16_t, 0, UINT16_MAX)
INT_MAXMIN(u32, uint32_t, 0, UINT32_MAX)
INT_MAXMIN(u64, uint64_t, 0, UINT64_MAX)
INT_MAXMIN(s8, int8_t, INT8_MIN, INT8_MAX)
INT_MAXMIN(s16, int16_t, INT16_MIN, INT16_MAX)
INT_MAXMIN(s32, int32_t, INT32_MIN, INT32_MAX)
INT_MAXMIN(s64, int64_t, INT64_MIN, INT64_MAX)

/* Floats: fold in C (float or double) with a sticky NaN. CONTIG folds a
 * contiguous run into *m and says whether it saw a NaN. */
#define EXT_GENERIC(NAME, T, C, LOAD, BETTER, RED)                                     \
    static int NAME(const T *x, int64_t n, C *mp) {                                    \
        C m = *mp;                                                                     \
        int nan = 0;                                                                   \
        PRAGMA(omp simd reduction(RED:m) reduction(|:nan))                             \
        for (int64_t i = 0; i < n; i++) {                                              \
            C v = LOAD(x[i]);                                                          \
            nan |= v != v;                                                             \
            m = v BETTER m ? v : m;                                                    \
        }                                                                              \
        *mp = m;                                                                       \
        return nan;                                                                    \
    }

#define FLOAT_EXTREME(NAME, T, C, LOAD, STORE, INITV, BETTER, CONTIG, COLS1)                  \
    static void NAME##_init(void *acc, int64_t n) {                                    \
        C *restrict a = acc;                                                           \
        for (int64_t i = 0; i < n; i++) a[i] = INITV;                                  \
    }                                                                                  \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {         \
        const T *restrict x = src;                                                              \
        C m = *(C *)acc;                                                               \
        if (m != m) return;                                                            \
        int nan = 0;                                                                   \
        if (s == 1) {                                                                  \
            nan = CONTIG(x, n, &m);                                                    \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++) {                                          \
                C v = LOAD(x[i * s]);                                                  \
                nan |= v != v;                                                         \
                m = v BETTER m ? v : m;                                                \
            }                                                                          \
        }                                                                              \
        *(C *)acc = nan ? (C)NAN : m;                                                  \
    }                                                                                  \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {        \
        const T *restrict x = src;                                                              \
        C *restrict a = acc;                                                           \
        if (s == 1) {                                                                  \
            COLS1(a, x, n);                                                            \
        } else {                                                                       \
            for (int64_t j = 0; j < n; j++) {                                          \
                C v = LOAD(x[j * s]);                                                  \
                a[j] = (v BETTER a[j] || v != v) ? v : a[j];                           \
            }                                                                          \
        }                                                                              \
    }                                                                                  \
    static void NAME##_merge(void *acc, const void *part) {                            \
        C p = *(const C *)part, *a = acc;                                              \
        if (*a != *a) return;                                                          \
        if (p != p || p BETTER *a) *a = p;                                             \
    }                                                                                  \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {      \
        T *d = dst;                                                                    \
        const C *a = acc;                                                              \
        for (int64_t j = 0; j < n; j++) d[j * ds] = STORE(a[j]);                       \
    }                                                                                  \
    static const reducer NAME = {sizeof(C), NAME##_init, NAME##_run, NAME##_cols,      \
                                 NAME##_merge, NAME##_store, false};

EXT_GENERIC(ext_max_f16, half_bits, float, ld_f16, >, max)
EXT_GENERIC(ext_min_f16, half_bits, float, ld_f16, <, min)
EXT_GENERIC(ext_max_bf16, half_bits, float, ld_bf16, >, max)
EXT_GENERIC(ext_min_bf16, half_bits, float, ld_bf16, <, min)
/* contiguous column folds */
#define COLS_GENERIC(NAME, T, C, LOAD, BETTER)                                         \
    static void NAME(C *restrict a, const T *restrict x, int64_t n) {                  \
        PRAGMA(omp simd)                                                               \
        for (int64_t j = 0; j < n; j++) {                                              \
            C v = LOAD(x[j]);                                                          \
            a[j] = (v BETTER a[j] || v != v) ? v : a[j];                               \
        }                                                                              \
    }
COLS_GENERIC(cols_max_f16, half_bits, float, ld_f16, >)
COLS_GENERIC(cols_min_f16, half_bits, float, ld_f16, <)
COLS_GENERIC(cols_max_bf16, half_bits, float, ld_bf16, >)
COLS_GENERIC(cols_min_bf16, half_bits, float, ld_bf16, <)
COLS_GENERIC(cols_max_f64, double, double, ID_LOAD, >)
COLS_GENERIC(cols_min_f64, double, double, ID_LOAD, <)
#define cols_max_f32 emi_simd_cols_max_f32
#define cols_min_f32 emi_simd_cols_min_f32
#define ext_max_f32 emi_simd_max_f32
#define ext_min_f32 emi_simd_min_f32
#define ext_max_f64 emi_simd_max_f64
#define ext_min_f64 emi_simd_min_f64

#define FLOAT_MAXMIN(SUF, T, C, LOAD, STORE)                                                    \
    FLOAT_EXTREME(max_##SUF, T, C, LOAD, STORE, (C)-INFINITY, >, ext_max_##SUF, cols_max_##SUF) \
    FLOAT_EXTREME(min_##SUF, T, C, LOAD, STORE, (C)INFINITY, <, ext_min_##SUF, cols_min_##SUF)

FLOAT_MAXMIN(f16, half_bits, float, ld_f16, st_f16)
FLOAT_MAXMIN(bf16, half_bits, float, ld_bf16, st_bf16)
FLOAT_MAXMIN(f32, float, float, ID_LOAD, ID_LOAD)
FLOAT_MAXMIN(f64, double, double, ID_LOAD, ID_LOAD)

/* ---- all / any: u8 results of "x != 0" ------------------------------------ */

#define TRUTH_FOLD(NAME, T, NONZERO, IS_ALL)                                           \
    static void NAME##_init(void *acc, int64_t n) {                                    \
        memset(acc, IS_ALL ? 1 : 0, (size_t)n);                                        \
    }                                                                                  \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {         \
        const T *restrict x = src;                                                              \
        uint8_t a = *(uint8_t *)acc;                                                   \
        if (IS_ALL) {                                                                  \
            for (int64_t i = 0; i < n && a; i++) a = (uint8_t)(a & (NONZERO(x, i * s) ? 1 : 0)); \
        } else {                                                                       \
            for (int64_t i = 0; i < n && !a; i++) a = (uint8_t)(a | (NONZERO(x, i * s) ? 1 : 0)); \
        }                                                                              \
        *(uint8_t *)acc = a;                                                           \
    }                                                                                  \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {        \
        const T *restrict x = src;                                                              \
        uint8_t *restrict a = acc;                                                     \
        for (int64_t j = 0; j < n; j++) {                                              \
            uint8_t v = NONZERO(x, j * s) ? 1 : 0;                                     \
            a[j] = (uint8_t)(IS_ALL ? (a[j] & v) : (a[j] | v));                        \
        }                                                                              \
    }                                                                                  \
    static void NAME##_merge(void *acc, const void *part) {                            \
        uint8_t *a = acc, p = *(const uint8_t *)part;                                  \
        *a = (uint8_t)(IS_ALL ? (*a & p) : (*a | p));                                  \
    }                                                                                  \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {      \
        uint8_t *d = dst;                                                              \
        const uint8_t *a = acc;                                                        \
        for (int64_t j = 0; j < n; j++) d[j * ds] = a[j];                              \
    }                                                                                  \
    static const reducer NAME = {1, NAME##_init, NAME##_run, NAME##_cols, NAME##_merge, \
                                 NAME##_store, false};

#define NZ_PLAIN(x, i) ((x)[i] != 0)
#define NZ_HALF(x, i) (((x)[i] & 0x7fff) != 0)
/* Nx compares a complex number with the integer 0 as Erlang terms: a
 * %Complex{} struct never equals 0, so every complex element is "true". */
#define NZ_COMPLEX(x, i) ((void)(x), (void)(i), 1)

#define TRUTH(SUF, T, NZ)                   \
    TRUTH_FOLD(all_##SUF, T, NZ, 1)         \
    TRUTH_FOLD(any_##SUF, T, NZ, 0)

TRUTH(u8, uint8_t, NZ_PLAIN)
TRUTH(u16, uint16_t, NZ_PLAIN)
TRUTH(u32, uint32_t, NZ_PLAIN)
TRUTH(u64, uint64_t, NZ_PLAIN)
TRUTH(s8, int8_t, NZ_PLAIN)
TRUTH(s16, int16_t, NZ_PLAIN)
TRUTH(s32, int32_t, NZ_PLAIN)
TRUTH(s64, int64_t, NZ_PLAIN)
TRUTH(f16, half_bits, NZ_HALF)
TRUTH(bf16, half_bits, NZ_HALF)
TRUTH(f32, float, NZ_PLAIN)
TRUTH(f64, double, NZ_PLAIN)
TRUTH(c64, float, NZ_COMPLEX)
TRUTH(c128, double, NZ_COMPLEX)

/* [op][dtype] in emily_dtype order */
static const reducer *const reducers[EMILY_REDUCE_OP_COUNT][EMILY_DTYPE_COUNT] = {
    [EMILY_REDUCE_SUM] = {&sum_u8, &sum_u16, &sum_u32, &sum_u64, &sum_s8, &sum_s16, &sum_s32,
                          &sum_s64, &sum_f16, &sum_bf16, &sum_f32, &sum_f64, &sum_c64, &sum_c128},
    [EMILY_REDUCE_PRODUCT] = {&prod_u8, &prod_u16, &prod_u32, &prod_u64, &prod_s8, &prod_s16,
                              &prod_s32, &prod_s64, &prod_f16, &prod_bf16, &prod_f32, &prod_f64,
                              &prod_c64, &prod_c128},
    [EMILY_REDUCE_MAX] = {&max_u8, &max_u16, &max_u32, &max_u64, &max_s8, &max_s16, &max_s32,
                          &max_s64, &max_f16, &max_bf16, &max_f32, &max_f64, NULL, NULL},
    [EMILY_REDUCE_MIN] = {&min_u8, &min_u16, &min_u32, &min_u64, &min_s8, &min_s16, &min_s32,
                          &min_s64, &min_f16, &min_bf16, &min_f32, &min_f64, NULL, NULL},
    [EMILY_REDUCE_ALL] = {&all_u8, &all_u16, &all_u32, &all_u64, &all_s8, &all_s16, &all_s32,
                          &all_s64, &all_f16, &all_bf16, &all_f32, &all_f64, &all_c64, &all_c128},
    [EMILY_REDUCE_ANY] = {&any_u8, &any_u16, &any_u32, &any_u64, &any_s8, &any_s16, &any_s32,
                          &any_s64, &any_f16, &any_bf16, &any_f32, &any_f64, &any_c64, &any_c128},
};

/* ======================================================================
 * The reduction driver.
 * ==================================================================== */

typedef struct rdim {
    int64_t n, ss, ds; /* size, source stride, destination stride */
    bool red;
} rdim;

/* Element offsets of position `pos` of an odometer over dims[0..nd). */
static void odo(const rdim *dims, int nd, int64_t pos, int64_t *so, int64_t *dof) {
    int64_t s = 0, d = 0;
    for (int k = nd - 1; k >= 0; k--) {
        int64_t i = pos % dims[k].n;
        pos /= dims[k].n;
        s += i * dims[k].ss;
        d += i * dims[k].ds;
    }
    *so = s;
    if (dof) *dof = d;
}

static inline int64_t stride_key(int64_t s) { return s == 0 ? INT64_MAX : (s < 0 ? -s : s); }

typedef struct rplan {
    rdim *kept, *red;   /* outer kept / outer reduced dims, outermost first */
    int nk, nr;
    int64_t nK, nR;     /* their position counts */
    rdim run;           /* the innermost dim */
} rplan;

static emily_status plan_reduce(const emily_tensor *dst, const emily_tensor *src, const bool *reduced,
                                rdim *buf, rplan *p) {
    int r = src->rank, n = 0;
    for (int i = 0; i < r; i++) {
        if (src->shape[i] == 1) continue;
        buf[n].n = src->shape[i];
        buf[n].ss = src->strides[i];
        buf[n].red = reduced[i];
        buf[n].ds = reduced[i] ? 0 : dst->strides[i];
        n++;
    }
    /* stable sort by stride, largest first (broadcast dims outermost) */
    for (int i = 1; i < n; i++) {
        rdim d = buf[i];
        int j = i - 1;
        while (j >= 0 && stride_key(buf[j].ss) < stride_key(d.ss)) { buf[j + 1] = buf[j]; j--; }
        buf[j + 1] = d;
    }
    /* merge contiguous neighbours of the same kind */
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0) {
            rdim *o = &buf[m - 1];
            if (o->red == buf[i].red && o->ss == buf[i].ss * buf[i].n &&
                o->ds == buf[i].ds * buf[i].n) {
                o->n *= buf[i].n;
                o->ss = buf[i].ss;
                o->ds = buf[i].ds;
                continue;
            }
        }
        buf[m++] = buf[i];
    }
    if (m == 0) {
        p->run = (rdim){.n = 1, .ss = 0, .ds = 0, .red = true};
    } else {
        p->run = buf[--m];
    }
    /* split the outer dims: kept then reduced, each in order */
    rdim *k = buf + r, *rd = buf + 2 * r;
    p->nk = p->nr = 0;
    p->nK = p->nR = 1;
    for (int i = 0; i < m; i++) {
        if (buf[i].red) { rd[p->nr++] = buf[i]; p->nR *= buf[i].n; }
        else { k[p->nk++] = buf[i]; p->nK *= buf[i].n; }
    }
    p->kept = k;
    p->red = rd;
    return EMILY_OK;
}

typedef struct { _Alignas(16) unsigned char b[32]; } accbuf;

/* Folds the flattened (outer reduced position, run index) range [a, b)
 * of one output into acc. */
static void fold_span(const reducer *R, const rplan *p, const char *base, size_t es, int64_t a,
                      int64_t b, void *acc) {
    int64_t rn = p->run.n;
    while (a < b) {
        int64_t r = a / rn, j = a % rn;
        int64_t len = rn - j < b - a ? rn - j : b - a;
        int64_t ro;
        odo(p->red, p->nr, r, &ro, NULL);
        R->run(acc, base + (ro + j * p->run.ss) * (int64_t)es, len, p->run.ss);
        a += len;
    }
}

/* An ordered fold of one output's per elements: in order, or past
 * ORDERED_CHUNK chunk by chunk (each from the fold's start), the chunks
 * combined in order starting from the first. */
static void fold_ordered(const reducer *R, const rplan *p, const char *base, size_t es, int64_t per,
                         void *acc) {
    R->init(acc, 1);
    fold_span(R, p, base, es, 0, per < ORDERED_CHUNK ? per : ORDERED_CHUNK, acc);
    for (int64_t lo = ORDERED_CHUNK; lo < per; lo += ORDERED_CHUNK) {
        accbuf part;
        R->init(part.b, 1);
        fold_span(R, p, base, es, lo, per - lo < ORDERED_CHUNK ? per : lo + ORDERED_CHUNK, part.b);
        R->merge(acc, part.b);
    }
}

/* Few outputs with long ordered folds: their fixed chunks over threads,
 * then each output's chunks combined in order. False when out of memory
 * (the caller folds serially: same result). */
static bool reduce_rows_ordered_chunks(const reducer *R, const rplan *p, const char *sbase, size_t ses,
                                       char *dbase, size_t des, int64_t per) {
    int64_t nc = (per + ORDERED_CHUNK - 1) / ORDERED_CHUNK, units = p->nK * nc;
    accbuf *parts = malloc(sizeof(accbuf) * (size_t)units);
    if (!parts) return false;
    EMILY_PAR_FOR(true, u, units, {
        int64_t o = u / nc, c = u % nc, ko, kd;
        odo(p->kept, p->nk, o, &ko, &kd);
        int64_t lo = c * ORDERED_CHUNK, hi = per - lo < ORDERED_CHUNK ? per : lo + ORDERED_CHUNK;
        R->init(parts[u].b, 1);
        fold_span(R, p, sbase + ko * (int64_t)ses, ses, lo, hi, parts[u].b);
    });
    for (int64_t o = 0; o < p->nK; o++) {
        int64_t ko, kd;
        odo(p->kept, p->nk, o, &ko, &kd);
        for (int64_t c = 1; c < nc; c++) R->merge(parts[o * nc].b, parts[o * nc + c].b);
        R->store(dbase + kd * (int64_t)des, 0, parts[o * nc].b, 1);
    }
    free(parts);
    return true;
}

/* Many outputs, each folded whole by one thread: blocks of outputs are
 * jobs of the engine's caller-runs pool (an OpenMP team per reduction
 * waited a scheduler slice for a descheduled thread on a loaded host). */
typedef struct rows_job {
    const reducer *R;
    const rplan *p;
    const char *sbase;
    char *dbase;
    size_t ses, des;
    int64_t per;
} rows_job;

static void rows_range(void *ctx, int64_t o0, int64_t o1) {
    const rows_job *j = ctx;
    const reducer *R = j->R;
    const rplan *p = j->p;
    for (int64_t o = o0; o < o1; o++) {
        int64_t ko, kd;
        odo(p->kept, p->nk, o, &ko, &kd);
        accbuf acc;
        if (R->ordered) {
            fold_ordered(R, p, j->sbase + ko * (int64_t)j->ses, j->ses, j->per, acc.b);
        } else {
            R->init(acc.b, 1);
            fold_span(R, p, j->sbase + ko * (int64_t)j->ses, j->ses, 0, j->per, acc.b);
        }
        R->store(j->dbase + kd * (int64_t)j->des, 0, acc.b, 1);
    }
}

static void rows_on_pool(const reducer *R, const rplan *p, const char *sbase, size_t ses, char *dbase,
                         size_t des, int64_t per, bool par) {
    rows_job j = {R, p, sbase, dbase, ses, des, per};
    /* about REDUCE_PAR_MIN / 4 elements a job */
    int64_t want = per > 0 ? (REDUCE_PAR_MIN / 4) / per : p->nK;
    emi_cpu_parallel_ranges(p->nK, want, par, rows_range, &j);
}

static void reduce_rows(const reducer *R, const rplan *p, const char *sbase, size_t ses, char *dbase,
                        size_t des, int64_t total) {
    int nth = omp_get_max_threads();
    int64_t per = p->nR * p->run.n; /* elements per output */
    bool par = total >= REDUCE_PAR_MIN && nth > 1;
    if (R->ordered) {
        if (par && p->nK < 2 * (int64_t)nth && per > ORDERED_CHUNK &&
            reduce_rows_ordered_chunks(R, p, sbase, ses, dbase, des, per))
            return;
        rows_on_pool(R, p, sbase, ses, dbase, des, per, par);
        return;
    }
    if (par && p->nK < 2 * (int64_t)nth && per >= REDUCE_PAR_MIN / 4) {
        /* few outputs: split each one's elements over the threads */
        accbuf *parts = malloc(sizeof(accbuf) * (size_t)nth);
        if (parts) {
            for (int64_t o = 0; o < p->nK; o++) {
                int64_t ko, kd;
                odo(p->kept, p->nk, o, &ko, &kd);
                const char *b = sbase + ko * (int64_t)ses;
                int used = nth;
#pragma omp parallel num_threads(nth)
                {
                    int t = omp_get_thread_num(), T = omp_get_num_threads();
#pragma omp single
                    used = T;
                    int64_t lo = per * t / T, hi = per * (t + 1) / T;
                    R->init(parts[t].b, 1);
                    fold_span(R, p, b, ses, lo, hi, parts[t].b);
                }
                accbuf acc;
                R->init(acc.b, 1);
                for (int t = 0; t < used; t++) R->merge(acc.b, parts[t].b);
                R->store(dbase + kd * (int64_t)des, 0, acc.b, 1);
            }
            free(parts);
            return;
        }
    }
    rows_on_pool(R, p, sbase, ses, dbase, des, per, par);
}

/* Column reductions: each task folds a block of up to COLS_MAX outputs
 * (consecutive along the innermost, kept dim) over the reduced rows, one
 * row segment at a time, so the input is read in long sequential
 * stretches and the fold vectorizes across outputs. With fewer blocks
 * than threads, the rows are split too and the partial folds merged in
 * order. */
static emily_status reduce_cols(const reducer *R, const rplan *p, const char *sbase, size_t ses,
                                char *dbase, size_t des, int64_t total) {
    int nth = omp_get_max_threads();
    bool par = total >= REDUCE_PAR_MIN && nth > 1;
    int64_t T = par ? nth : 1, rn = p->run.n, bw = COLS_MAX;
    if (par && p->nK < T) {
        int64_t want = (rn + T - 1) / T;
        want = (want + 63) / 64 * 64;
        if (want < bw) bw = want;
    }
    if (bw > rn) bw = rn;
    int64_t nblk = (rn + bw - 1) / bw, tasks = p->nK * nblk;
    int64_t parts = 1;
    if (R->ordered) parts = (p->nR + ORDERED_CHUNK - 1) / ORDERED_CHUNK; /* fixed chunks of rows */
    else if (par && tasks < T && p->nR >= 4 * T) parts = T / tasks;
    size_t as = R->acc_size;
    /* accumulators: one block per thread, or per (block, row part) */
    int64_t slots = parts > 1 ? tasks * parts : T;
    unsigned char *bufs = malloc((size_t)slots * (size_t)bw * as + 64);
    if (!bufs) return emily_error(EMILY_ERR_MEMORY, "reduce: out of host memory");
    int64_t units = tasks * parts;
    EMILY_PAR_FOR(par, u, units, {
        int64_t task = u / parts, part = u % parts;
        int64_t o = task / nblk, j0 = (task % nblk) * bw;
        int64_t len = rn - j0 < bw ? rn - j0 : bw;
        unsigned char *acc = bufs + (size_t)(parts > 1 ? u : omp_get_thread_num()) * (size_t)bw * as;
        int64_t ko, kd;
        odo(p->kept, p->nk, o, &ko, &kd);
        R->init(acc, len);
        const char *b = sbase + (ko + j0 * p->run.ss) * (int64_t)ses;
        int64_t r0 = p->nR * part / parts, r1 = p->nR * (part + 1) / parts;
        if (R->ordered) {
            r0 = part * ORDERED_CHUNK;
            r1 = p->nR - r0 < ORDERED_CHUNK ? p->nR : r0 + ORDERED_CHUNK;
        }
        for (int64_t r = r0; r < r1; r++) {
            int64_t ro;
            odo(p->red, p->nr, r, &ro, NULL);
            R->cols(acc, b + ro * (int64_t)ses, len, p->run.ss);
        }
        if (parts == 1) R->store(dbase + (kd + j0 * p->run.ds) * (int64_t)des, p->run.ds, acc, len);
    });
    if (parts > 1) {
        for (int64_t task = 0; task < tasks; task++) {
            int64_t o = task / nblk, j0 = (task % nblk) * bw;
            int64_t len = rn - j0 < bw ? rn - j0 : bw;
            unsigned char *acc = bufs + (size_t)(task * parts) * (size_t)bw * as;
            for (int64_t part = 1; part < parts; part++) {
                const unsigned char *pa = bufs + (size_t)(task * parts + part) * (size_t)bw * as;
                for (int64_t j = 0; j < len; j++) R->merge(acc + (size_t)j * as, pa + (size_t)j * as);
            }
            int64_t ko, kd;
            odo(p->kept, p->nk, o, &ko, &kd);
            R->store(dbase + (kd + j0 * p->run.ds) * (int64_t)des, p->run.ds, acc, len);
        }
    }
    free(bufs);
    return EMILY_OK;
}

static bool is_zero_bits(emily_dtype dt, const char *p) {
    switch (dt) {
    case EMILY_F16: case EMILY_BF16: { uint16_t h; memcpy(&h, p, 2); return (h & 0x7fff) == 0; }
    case EMILY_F32: { float f; memcpy(&f, p, 4); return f == 0.0f; }
    case EMILY_F64: { double f; memcpy(&f, p, 8); return f == 0.0; }
    default: return false;
    }
}

/* Nx folds max/min keeping the first of equal values, so a zero result
 * carries the sign of the first zero in row-major order of the reduced
 * axes. Rewrites the zero outputs with that zero. */
static emily_status fix_zero_signs(emily_tensor *dst, const emily_tensor *src, const bool *reduced) {
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
            if (is_zero_bits(src->dtype, sp)) { memcpy(dp, sp, es); break; }
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

emily_status emi_cpu_reduce(emily_reduce_op op, emily_tensor *dst, const emily_tensor *src,
                              const bool *reduced) {
    if ((unsigned)op >= EMILY_REDUCE_OP_COUNT || !emily_dtype_valid(src->dtype))
        return emily_error(EMILY_ERR_INTERNAL, "reduce: bad op or dtype");
    const reducer *R = reducers[op][src->dtype];
    if (!R) return emily_error(EMILY_ERR_TYPE, "reduce: %s is not supported for this operation",
                               emily_dtype_name(src->dtype));
    if (dst->size == 0) return EMILY_OK;
    size_t ses = emily_dtype_size(src->dtype), des = emily_dtype_size(dst->dtype);
    char *dbase = emily_tensor_base(dst);
    if (src->size == 0) {
        /* every output folds nothing: the starting value */
        if (op == EMILY_REDUCE_MAX || op == EMILY_REDUCE_MIN)
            return emily_error(EMILY_ERR_SHAPE, "reduce: cannot take the max/min of an empty axis");
        _Alignas(64) unsigned char acc[32];
        R->init(acc, 1);
        for (int64_t o = 0; o < dst->size; o++) R->store(dbase + o * (int64_t)des, 0, acc, 1);
        return EMILY_OK;
    }
    rdim *buf = malloc(sizeof(rdim) * (3 * (size_t)src->rank + 1));
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "reduce: out of host memory");
    rplan p;
    emily_status s = plan_reduce(dst, src, reduced, buf, &p);
    if (!s) {
        const char *sbase = emily_tensor_base(src);
        if (p.run.red) reduce_rows(R, &p, sbase, ses, dbase, des, src->size);
        else s = reduce_cols(R, &p, sbase, ses, dbase, des, src->size);
        /* only over a finished fold: the first error is the answer (the
         * fix-up's own success must not hide a failed fold's status) */
        if (!s && (op == EMILY_REDUCE_MAX || op == EMILY_REDUCE_MIN) && emily_dtype_is_float(src->dtype))
            s = fix_zero_signs(dst, src, reduced);
    }
    free(buf);
    return s;
}

/* ======================================================================
 * argmax / argmin
 *
 * Nx's fold: a NaN always takes the index (so the last NaN wins); a
 * non-NaN value takes it when strictly better, or equal with
 * tie_break: :high. Values compare as numbers (-0.0 == 0.0).
 * ==================================================================== */

typedef struct argst {
    int64_t idx, nan_idx; /* -1: none yet */
    union { int64_t i; uint64_t u; double f; } best;
} argst;

typedef enum { K_SIGNED, K_UNSIGNED, K_FLOAT } argkind;

typedef struct argops {
    argkind kind;
    /* folds x[0..n) (stride s) whose first index is `base` into st */
    void (*scan)(argst *st, const void *x, int64_t n, int64_t s, int64_t base, bool is_min, bool high);
    /* for each of n columns (stride js), the index along the axis
     * (n_axis values, stride as) that the fold picks */
    void (*cols)(const void *x, int64_t n, int64_t js, int64_t n_axis, int64_t as, bool is_min,
                 bool high, int64_t *out);
} argops;

#define ARG_BLOCK 2048 /* elements whose extreme is found before its index */
#define ARG_COLS 256   /* columns scanned together along an outer axis */

/* One pass over the rows of a column block, branch-free so that it
 * vectorizes (IDX is as wide as C where possible). */
#define ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, CMP)                                     \
    for (int64_t i = 1; i < n_axis; i++) {                                             \
        const T *restrict row = x + i * as;                                            \
        PRAGMA(omp simd)                                                               \
        for (int64_t j = 0; j < n; j++) {                                              \
            C v = LOAD(row[j * js]), b = best[j];                                      \
            int isn = ISNAN(v);                                                        \
            int take = (isn ^ 1) & (ISNAN(b) | (v CMP b));                              \
            nanidx[j] = isn ? (IDX)i : nanidx[j];                                      \
            best[j] = take ? v : b;                                                    \
            at[j] = take ? (IDX)i : at[j];                                             \
        }                                                                              \
    }

#define ARG_TYPE(NAME, T, C, FIELD, LOAD, ISNAN, EXTMAX, EXTMIN, IDX, FIND)            \
    static inline bool NAME##_wins(C v, C best, bool is_min, bool high) {              \
        return is_min ? (v < best || (high && v == best)) : (v > best || (high && v == best)); \
    }                                                                                  \
    static void NAME##_scan(argst *st, const void *src, int64_t n, int64_t s, int64_t base, \
                            bool is_min, bool high) {                                  \
        const T *restrict x = src;                                                              \
        C best = (C)st->best.FIELD;                                                    \
        int64_t i = 0;                                                                 \
        if (s == 1) {                                                                  \
            /* blocks: find each block's extreme vectorized, and look for its \
             * index only when the block improves on the best so far */               \
            for (; i < n; i += ARG_BLOCK) {                                            \
                const T *xb = x + i;                                                   \
                int len = n - i < ARG_BLOCK ? (int)(n - i) : ARG_BLOCK;                \
                C m = LOAD(xb[0]);                                                     \
                int nan = is_min ? EXTMIN(xb, len, &m) : EXTMAX(xb, len, &m);          \
                if (nan) {                                                             \
                    for (int k = len - 1; k >= 0; k--)                                 \
                        if (ISNAN(LOAD(xb[k]))) { st->nan_idx = base + i + k; break; } \
                    continue;                                                          \
                }                                                                      \
                if (st->idx < 0 || NAME##_wins(m, best, is_min, high)) {               \
                    int64_t k = FIND(xb, len, m, high);                                \
                    best = m;                                                          \
                    st->idx = base + i + (k < 0 ? 0 : k);                              \
                }                                                                      \
            }                                                                          \
        }                                                                              \
        for (; i < n; i++) {                                                           \
            C v = LOAD(x[i * s]);                                                      \
            if (ISNAN(v)) st->nan_idx = base + i;                                      \
            else if (st->idx < 0 || NAME##_wins(v, best, is_min, high)) {              \
                best = v;                                                              \
                st->idx = base + i;                                                    \
            }                                                                          \
        }                                                                              \
        st->best.FIELD = best;                                                         \
    }                                                                                  \
    static void NAME##_cols(const void *src, int64_t n, int64_t js, int64_t n_axis, int64_t as, \
                            bool is_min, bool high, int64_t *out) {                    \
        const T *restrict x = src;                                                     \
        C best[ARG_COLS];                                                              \
        IDX at[ARG_COLS], nanidx[ARG_COLS];                                            \
        for (int64_t j = 0; j < n; j++) {                                              \
            best[j] = LOAD(x[j * js]);                                                 \
            at[j] = 0;                                                                 \
            nanidx[j] = ISNAN(best[j]) ? 0 : -1;                                       \
        }                                                                              \
        if (is_min) {                                                                  \
            if (high) { ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, <=) }                     \
            else { ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, <) }                         \
        } else {                                                                       \
            if (high) { ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, >=) }                     \
            else { ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, >) }                         \
        }                                                                              \
        for (int64_t j = 0; j < n; j++) out[j] = nanidx[j] >= 0 ? nanidx[j] : at[j];   \
    }                                                                                  \
    static const argops NAME = {FIELD##_KIND, NAME##_scan, NAME##_cols};

#define i_KIND K_SIGNED
#define u_KIND K_UNSIGNED
#define f_KIND K_FLOAT
#define NO_NAN(v) ((void)(v), 0)
#define IS_NAN(v) ((v) != (v))

/* block extremes of the integer types (a NaN is never seen) */
#define INT_BLOCK_EXT(SUF, T)                                                          \
    EXT_GENERIC(ext_max_##SUF, T, T, ID_LOAD, >, max)                                  \
    EXT_GENERIC(ext_min_##SUF, T, T, ID_LOAD, <, min)
INT_BLOCK_EXT(u8, uint8_t)
INT_BLOCK_EXT(u16, uint16_t)
INT_BLOCK_EXT(u32, uint32_t)
INT_BLOCK_EXT(u64, uint64_t)
INT_BLOCK_EXT(s8, int8_t)
INT_BLOCK_EXT(s16, int16_t)
INT_BLOCK_EXT(s32, int32_t)
INT_BLOCK_EXT(s64, int64_t)

/* the index of the first (last) element equal to v in a block */
#define FIND_GENERIC(NAME, T, C, LOAD)                                                 \
    static int64_t NAME(const T *x, int64_t n, C v, int last) {                        \
        if (last) {                                                                    \
            for (int64_t k = n - 1; k >= 0; k--)                                       \
                if (LOAD(x[k]) == v) return k;                                         \
        } else {                                                                       \
            for (int64_t k = 0; k < n; k++)                                            \
                if (LOAD(x[k]) == v) return k;                                         \
        }                                                                              \
        return -1;                                                                     \
    }
FIND_GENERIC(find_u8, uint8_t, uint8_t, ID_LOAD)
FIND_GENERIC(find_u16, uint16_t, uint16_t, ID_LOAD)
FIND_GENERIC(find_u32, uint32_t, uint32_t, ID_LOAD)
FIND_GENERIC(find_u64, uint64_t, uint64_t, ID_LOAD)
FIND_GENERIC(find_s8, int8_t, int8_t, ID_LOAD)
FIND_GENERIC(find_s16, int16_t, int16_t, ID_LOAD)
FIND_GENERIC(find_s32, int32_t, int32_t, ID_LOAD)
FIND_GENERIC(find_s64, int64_t, int64_t, ID_LOAD)
FIND_GENERIC(find_f16, half_bits, float, ld_f16)
FIND_GENERIC(find_bf16, half_bits, float, ld_bf16)
#define find_f32 emi_simd_find_f32
#define find_f64 emi_simd_find_f64

/* IDX: the index type of column scans (int32_t: axes up to INT32_MAX) */
#define ARG_OF(SUF, T, C, FIELD, LOAD, ISNAN, IDX) \
    ARG_TYPE(arg_##SUF, T, C, FIELD, LOAD, ISNAN, ext_max_##SUF, ext_min_##SUF, IDX, find_##SUF)
ARG_OF(u8, uint8_t, uint8_t, u, ID_LOAD, NO_NAN, int32_t)
ARG_OF(u16, uint16_t, uint16_t, u, ID_LOAD, NO_NAN, int32_t)
ARG_OF(u32, uint32_t, uint32_t, u, ID_LOAD, NO_NAN, int32_t)
ARG_OF(u64, uint64_t, uint64_t, u, ID_LOAD, NO_NAN, int64_t)
ARG_OF(s8, int8_t, int8_t, i, ID_LOAD, NO_NAN, int32_t)
ARG_OF(s16, int16_t, int16_t, i, ID_LOAD, NO_NAN, int32_t)
ARG_OF(s32, int32_t, int32_t, i, ID_LOAD, NO_NAN, int32_t)
ARG_OF(s64, int64_t, int64_t, i, ID_LOAD, NO_NAN, int64_t)
ARG_OF(f16, half_bits, float, f, ld_f16, IS_NAN, int32_t)
ARG_OF(bf16, half_bits, float, f, ld_bf16, IS_NAN, int32_t)
ARG_OF(f32, float, float, f, ID_LOAD, IS_NAN, int32_t)
ARG_OF(f64, double, double, f, ID_LOAD, IS_NAN, int64_t)

static const argops *const arg_table[EMILY_DTYPE_COUNT] = {
    &arg_u8, &arg_u16, &arg_u32, &arg_u64, &arg_s8, &arg_s16, &arg_s32, &arg_s64,
    &arg_f16, &arg_bf16, &arg_f32, &arg_f64, NULL, NULL};

/* a <- the fold of a's elements then b's */
static void arg_merge(argkind kind, argst *a, const argst *b, bool is_min, bool high) {
    if (b->nan_idx >= 0) a->nan_idx = b->nan_idx;
    if (b->idx < 0) return;
    bool wins;
    if (a->idx < 0) wins = true;
    else if (kind == K_SIGNED)
        wins = is_min ? (b->best.i < a->best.i || (high && b->best.i == a->best.i))
                      : (b->best.i > a->best.i || (high && b->best.i == a->best.i));
    else if (kind == K_UNSIGNED)
        wins = is_min ? (b->best.u < a->best.u || (high && b->best.u == a->best.u))
                      : (b->best.u > a->best.u || (high && b->best.u == a->best.u));
    else
        wins = is_min ? (b->best.f < a->best.f || (high && b->best.f == a->best.f))
                      : (b->best.f > a->best.f || (high && b->best.f == a->best.f));
    if (wins) {
        a->best = b->best;
        a->idx = b->idx;
    }
}

static inline int64_t arg_result(const argst *st) { return st->nan_idx >= 0 ? st->nan_idx : st->idx; }

static void store_index(emily_dtype dt, char *p, int64_t v) {
    switch (emily_dtype_size(dt)) {
    case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

static const argst ARG_START = {.idx = -1, .nan_idx = -1, .best = {.i = 0}};

/* One run of n elements (stride s), split over threads when long. */
static int64_t arg_run(const argops *A, const char *x, size_t es, int64_t n, int64_t s, bool is_min,
                       bool high, bool allow_par) {
    int nth = omp_get_max_threads();
    argst st = ARG_START;
    if (allow_par && n >= REDUCE_PAR_MIN && nth > 1) {
        argst *parts = malloc(sizeof(argst) * (size_t)nth);
        if (parts) {
            int used = nth;
#pragma omp parallel num_threads(nth)
            {
                int t = omp_get_thread_num(), T = omp_get_num_threads();
#pragma omp single
                used = T;
                int64_t lo = n * t / T, hi = n * (t + 1) / T;
                parts[t] = ARG_START;
                A->scan(&parts[t], x + lo * s * (int64_t)es, hi - lo, s, lo, is_min, high);
            }
            for (int t = 0; t < used; t++) arg_merge(A->kind, &st, &parts[t], is_min, high);
            free(parts);
            return arg_result(&st);
        }
    }
    A->scan(&st, x, n, s, 0, is_min, high);
    return arg_result(&st);
}

emily_status emi_cpu_argreduce(emily_arg_op op, emily_tensor *dst, const emily_tensor *src, int axis,
                                 bool tie_break_high) {
    const argops *A = emily_dtype_valid(src->dtype) ? arg_table[src->dtype] : NULL;
    if (!A) return emily_error(EMILY_ERR_TYPE, "argreduce: %s is not supported", emily_dtype_name(src->dtype));
    if (dst->size == 0) return EMILY_OK;
    bool is_min = op == EMILY_ARGMIN, high = tie_break_high;
    size_t es = emily_dtype_size(src->dtype), des = emily_dtype_size(dst->dtype);
    const char *sbase = emily_tensor_base(src);
    char *dbase = emily_tensor_base(dst);
    if (src->size == 0) return emily_error(EMILY_ERR_SHAPE, "argreduce: cannot reduce an empty axis");

    if (axis < 0) {
        /* the flattened tensor, in row-major order */
        const emily_tensor *ts[1] = {src};
        emily_iter it;
        emily_status s = emi_iter_tensors(&it, 1, ts);
        if (s) return s;
        int64_t res;
        if (it.outer_n == 1) {
            res = arg_run(A, sbase, es, it.inner_n, it.inner_stride[0], is_min, high, true);
        } else {
            argst st = ARG_START;
            for (int64_t pos = 0; pos < it.outer_n; pos++) {
                int64_t off;
                emi_iter_offsets(&it, pos, &off);
                argst part = ARG_START;
                A->scan(&part, sbase + off * (int64_t)es, it.inner_n, it.inner_stride[0],
                        pos * it.inner_n, is_min, high);
                arg_merge(A->kind, &st, &part, is_min, high);
            }
            res = arg_result(&st);
        }
        emi_iter_free(&it);
        store_index(dst->dtype, dbase, res);
        return EMILY_OK;
    }

    /* along one axis: iterate over the outputs (src's shape with the
     * axis at size 1) */
    int r = src->rank;
    int64_t *buf = malloc(sizeof(int64_t) * (2 * (size_t)r + 1));
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "argreduce: out of host memory");
    int64_t *oshape = buf, *sstr = buf + r;
    for (int i = 0; i < r; i++) {
        oshape[i] = i == axis ? 1 : src->shape[i];
        sstr[i] = i == axis ? 0 : src->strides[i];
    }
    const int64_t *strides[2] = {sstr, dst->strides};
    emily_iter it;
    emily_status s = emi_iter_init(&it, 2, r, oshape, strides);
    free(buf);
    if (s) return s;
    int64_t na = src->shape[axis], as = src->strides[axis];
    int64_t in = it.inner_n, is = it.inner_stride[0], ids = it.inner_stride[1];
    int64_t key_axis = as < 0 ? -as : as, key_in = is < 0 ? -is : is;
    bool columns = in > 1 && key_in < key_axis && na <= INT32_MAX;
    bool par = src->size >= REDUCE_PAR_MIN && omp_get_max_threads() > 1;
    if (columns) {
        int64_t nblk = (in + ARG_COLS - 1) / ARG_COLS, tasks = it.outer_n * nblk;
        EMILY_PAR_FOR(par, task, tasks, {
            int64_t pos = task / nblk, j0 = (task % nblk) * ARG_COLS;
            int64_t len = in - j0 < ARG_COLS ? in - j0 : ARG_COLS;
            int64_t off[2], idx[ARG_COLS];
            emi_iter_offsets(&it, pos, off);
            A->cols(sbase + (off[0] + j0 * is) * (int64_t)es, len, is, na, as, is_min, high, idx);
            for (int64_t j = 0; j < len; j++)
                store_index(dst->dtype, dbase + (off[1] + (j0 + j) * ids) * (int64_t)des, idx[j]);
        });
    } else {
        int64_t outs = it.outer_n * in;
        bool few = outs < 2 * (int64_t)omp_get_max_threads();
        EMILY_PAR_FOR(par && !few, o, outs, {
            int64_t pos = o / in, j = o % in, off[2];
            emi_iter_offsets(&it, pos, off);
            int64_t res = arg_run(A, sbase + (off[0] + j * is) * (int64_t)es, es, na, as, is_min, high,
                                  par && few);
            store_index(dst->dtype, dbase + (off[1] + j * ids) * (int64_t)des, res);
        });
    }
    emi_iter_free(&it);
    return EMILY_OK;
}

/* ======================================================================
 * all_close: |a - b| <= atol + rtol * |b| element-wise, as Nx computes it
 * (each step rounded to the tensors' type; rtol and atol arrive as f32
 * scalars), infinities compared for equality, NaNs equal when asked.
 * ==================================================================== */

static inline double round_to(emily_dtype dt, double v) {
    switch (dt) {
    case EMILY_F16: return emily_f16_to_f32(emily_f64_to_f16(v));
    case EMILY_BF16: return ld_bf16(emily_f32_to_bf16((float)v));
    case EMILY_F32: case EMILY_C64: return (double)(float)v;
    default: return v;
    }
}

typedef struct acparams {
    emily_dtype dt;
    double rtol, atol;
    bool equal_nan;
} acparams;

static bool close_float(const acparams *p, double x, double y) {
    bool ok;
    if (isinf(x) || isinf(y)) ok = x == y;
    else {
        double ad = fabs(round_to(p->dt, x - y));
        double tol = round_to(p->dt, p->atol + round_to(p->dt, p->rtol * fabs(y)));
        ok = ad <= tol;
    }
    if (p->equal_nan && isnan(x) && isnan(y)) ok = true;
    return ok;
}

static inline bool part_eq(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static bool close_complex(const acparams *p, double xr, double xi, double yr, double yi) {
    bool ok;
    if (isinf(xr) || isinf(xi) || isinf(yr) || isinf(yi)) {
        /* Nx compares the two %Complex{} structs: parts equal as terms */
        ok = part_eq(xr, yr) && part_eq(xi, yi);
    } else {
        double dr = round_to(p->dt, xr - yr), di = round_to(p->dt, xi - yi);
        double ad = round_to(p->dt, hypot(dr, di));
        double ab = round_to(p->dt, hypot(yr, yi));
        double tol = round_to(p->dt, p->atol + round_to(p->dt, p->rtol * ab));
        ok = ad <= tol;
    }
    if (p->equal_nan && (isnan(xr) || isnan(xi)) && (isnan(yr) || isnan(yi))) ok = true;
    return ok;
}

/* Integers: the difference and its absolute value wrap in the type; the
 * bound is computed in f64 and compared exactly. */
#define CLOSE_INT(T, U, NEG)                                                                \
    {                                                                                    \
        T x = ((const T *)pa)[i * sa], y = ((const T *)pb)[i * sb];                      \
        T d, ad;                                                                         \
        U du = (U)((U)x - (U)y);                                                         \
        memcpy(&d, &du, sizeof d);                                                       \
        if (NEG(d)) { U nu = (U)(0 - du); memcpy(&ad, &nu, sizeof ad); }                 \
        else ad = d;                                                                     \
        double tol = p->atol + p->rtol * fabs((double)y);                                \
        ok = (long double)ad <= (long double)tol;                                        \
    }

#define NEVER_NEG(d) ((void)(d), 0)
#define IS_NEG(d) ((d) < 0)

static bool close_at(const acparams *p, const char *pa, int64_t sa, const char *pb, int64_t sb, int64_t i) {
    bool ok = true;
    switch (p->dt) {
    case EMILY_U8: CLOSE_INT(uint8_t, uint8_t, NEVER_NEG) break;
    case EMILY_U16: CLOSE_INT(uint16_t, uint16_t, NEVER_NEG) break;
    case EMILY_U32: CLOSE_INT(uint32_t, uint32_t, NEVER_NEG) break;
    case EMILY_U64: CLOSE_INT(uint64_t, uint64_t, NEVER_NEG) break;
    case EMILY_S8: CLOSE_INT(int8_t, uint8_t, IS_NEG) break;
    case EMILY_S16: CLOSE_INT(int16_t, uint16_t, IS_NEG) break;
    case EMILY_S32: CLOSE_INT(int32_t, uint32_t, IS_NEG) break;
    case EMILY_S64: CLOSE_INT(int64_t, uint64_t, IS_NEG) break;
    case EMILY_F16:
        ok = close_float(p, ld_f16(((const half_bits *)pa)[i * sa]), ld_f16(((const half_bits *)pb)[i * sb]));
        break;
    case EMILY_BF16:
        ok = close_float(p, ld_bf16(((const half_bits *)pa)[i * sa]), ld_bf16(((const half_bits *)pb)[i * sb]));
        break;
    case EMILY_F32: ok = close_float(p, ((const float *)pa)[i * sa], ((const float *)pb)[i * sb]); break;
    case EMILY_F64: ok = close_float(p, ((const double *)pa)[i * sa], ((const double *)pb)[i * sb]); break;
    case EMILY_C64: {
        const float *x = (const float *)pa + 2 * i * sa, *y = (const float *)pb + 2 * i * sb;
        ok = close_complex(p, x[0], x[1], y[0], y[1]);
        break;
    }
    case EMILY_C128: {
        const double *x = (const double *)pa + 2 * i * sa, *y = (const double *)pb + 2 * i * sb;
        ok = close_complex(p, x[0], x[1], y[0], y[1]);
        break;
    }
    default: break;
    }
    return ok;
}

emily_status emi_cpu_all_close(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b,
                                 double rtol, double atol, bool equal_nan) {
    acparams p = {.dt = a->dtype, .rtol = (double)(float)rtol, .atol = (double)(float)atol,
                  .equal_nan = equal_nan};
    uint8_t result = 1;
    if (a->size > 0) {
        const emily_tensor *ts[2] = {a, b};
        emily_iter it;
        emily_status s = emi_iter_tensors(&it, 2, ts);
        if (s) return s;
        size_t es = emily_dtype_size(a->dtype);
        const char *ab = emily_tensor_base(a), *bb = emily_tensor_base(b);
        atomic_int all = 1; /* cleared by any element not close; stops the others */
        EMILY_PAR_FOR(a->size >= EMILY_PARALLEL_MIN, pos, it.outer_n, {
            int64_t off[2];
            emi_iter_offsets(&it, pos, off);
            const char *pa = ab + off[0] * (int64_t)es, *pb = bb + off[1] * (int64_t)es;
            for (int64_t i = 0; i < it.inner_n && atomic_load_explicit(&all, memory_order_relaxed); i++)
                if (!close_at(&p, pa, it.inner_stride[0], pb, it.inner_stride[1], i))
                    atomic_store_explicit(&all, 0, memory_order_relaxed);
        });
        emi_iter_free(&it);
        result = (uint8_t)atomic_load(&all);
    }
    memcpy(emily_tensor_base(dst), &result, 1);
    return EMILY_OK;
}
