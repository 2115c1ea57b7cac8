/* The sum and product reducers (see reducers.h), one body per class of
 * types expanded over the dtype list: integers wrap in their own width,
 * real floats fold in double (f32 and f64 runs through simd.c), complex
 * numbers in a pair of doubles. */
#include <math.h>
#include <string.h>
#include "cpu/reduce/reducers.h"
#include "cpu/reduce/simd.h"

/* ---- integers: sum/product wrap in the type's width ------------------- */

/* The accumulator is the type's bit pattern U (EMI_BITS), and the
 * arithmetic happens in U promoted to unsigned: `+ 0u` turns a narrow U
 * into an unsigned int rather than an int, so a u16 product never
 * overflows a signed int. Signed and unsigned types of one width wrap
 * alike. */
#define UNS(v) ((v) + 0u)

#define ADD_STEP(U, a, x) ((U)(UNS(a) + UNS((U)(x))))
#define MUL_STEP(U, a, x) ((U)(UNS(a) * UNS((U)(x))))
#define INT_SUM_PRODUCT(ENUM, sfx, T)                            \
    EMI_INT_REDUCER(sum_##sfx, T, EMI_BITS(sfx), ADD_STEP, +, 0) \
    EMI_INT_REDUCER(prod_##sfx, T, EMI_BITS(sfx), MUL_STEP, *, 1)
EMI_DTYPES_INTEGER(INT_SUM_PRODUCT)

/* ---- floats: sums and products in double ------------------------------ */

/* CONTIG(x, n): the sum of a contiguous run; COLS1(a, x, n): a[j] +=
 * x[j] over a contiguous run. */
#define FLOAT_SUM(NAME, T, LOAD, STORE, CONTIG, COLS1)                                                 \
    EMI_REDUCER_INIT(NAME, double, 0.0)                                                                \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {                         \
        const T *restrict x = src;                                                                     \
        double a = *(double *)acc;                                                                     \
        if (s == 1) a += CONTIG(x, n);                                                                 \
        else                                                                                           \
            for (int64_t i = 0; i < n; i++) a += (double)LOAD(x[i * s]);                               \
        *(double *)acc = a;                                                                            \
    }                                                                                                  \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {                        \
        const T *restrict x = src;                                                                     \
        double *restrict a = acc;                                                                      \
        if (s == 1) COLS1(a, x, n);                                                                    \
        else                                                                                           \
            for (int64_t j = 0; j < n; j++) a[j] += (double)LOAD(x[j * s]);                            \
    }                                                                                                  \
    static void NAME##_merge(void *acc, const void *part) { *(double *)acc += *(const double *)part; } \
    EMI_REDUCER_STORE(NAME, T, double, STORE)                                                          \
    EMI_REDUCER(NAME, double, false)

/* f16 and bf16: plain loops over the widened values. */
#define HALF_SUM(ENUM, sfx, T)                                                       \
    static double seq_##sfx(const T *x, int64_t n) {                                 \
        double a = 0;                                                                \
        for (int64_t i = 0; i < n; i++) a += emi_to_f64_##sfx(x[i]);                 \
        return a;                                                                    \
    }                                                                                \
    static void cols_sum_##sfx(double *restrict a, const T *restrict x, int64_t n) { \
        for (int64_t j = 0; j < n; j++) a[j] += emi_to_f64_##sfx(x[j]);              \
    }                                                                                \
    FLOAT_SUM(sum_##sfx, T, emi_to_f64_##sfx, emi_from_f64_##sfx, seq_##sfx, cols_sum_##sfx)
EMI_DTYPES_HALF(HALF_SUM)

FLOAT_SUM(sum_f32, float, emi_to_f64_f32, emi_from_f64_f32, emi_simd_sum_f32, emi_simd_cols_sum_f32)

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
    for (int64_t j = 0; j < n; j++) /* an infinite sum makes the compensation NaN: the sum alone */
        d[j * ds] = isfinite(a[2 * j]) ? a[2 * j] + a[2 * j + 1] : a[2 * j];
}
static const emi_reducer sum_f64 = {2 * sizeof(double), sum_f64_init,  sum_f64_run, sum_f64_cols,
                                    sum_f64_merge,      sum_f64_store, false};

#define FLOAT_PROD(ENUM, sfx, T)                                                                             \
    EMI_REDUCER_INIT(prod_##sfx, double, 1.0)                                                                \
    static void prod_##sfx##_run(void *acc, const void *src, int64_t n, int64_t s) {                         \
        const T *restrict x = src;                                                                           \
        double a = *(double *)acc;                                                                           \
        for (int64_t i = 0; i < n; i++) a *= emi_to_f64_##sfx(x[i * s]);                                     \
        *(double *)acc = a;                                                                                  \
    }                                                                                                        \
    static void prod_##sfx##_cols(void *acc, const void *src, int64_t n, int64_t s) {                        \
        const T *restrict x = src;                                                                           \
        double *restrict a = acc;                                                                            \
        for (int64_t j = 0; j < n; j++) a[j] *= emi_to_f64_##sfx(x[j * s]);                                  \
    }                                                                                                        \
    static void prod_##sfx##_merge(void *acc, const void *part) { *(double *)acc *= *(const double *)part; } \
    EMI_REDUCER_STORE(prod_##sfx, T, double, emi_from_f64_##sfx)                                             \
    EMI_REDUCER(prod_##sfx, double, true)
EMI_DTYPES_FLOAT(FLOAT_PROD)

/* ---- complex: {re, im} in double ---------------------------------------- */

#define COMPLEX_FOLD(NAME, T, IS_SUM)                                                                     \
    static void NAME##_init(void *acc, int64_t n) {                                                       \
        double *restrict a = acc;                                                                         \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            a[2 * i] = IS_SUM ? 0.0 : 1.0;                                                                \
            a[2 * i + 1] = 0.0;                                                                           \
        }                                                                                                 \
    }                                                                                                     \
    static inline void NAME##_step(double *a, double re, double im) {                                     \
        if (IS_SUM) {                                                                                     \
            a[0] += re;                                                                                   \
            a[1] += im;                                                                                   \
        } else {                                                                                          \
            double r = a[0] * re - a[1] * im, i = a[0] * im + a[1] * re;                                  \
            a[0] = r;                                                                                     \
            a[1] = i;                                                                                     \
        }                                                                                                 \
    }                                                                                                     \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {                            \
        const T *restrict x = src;                                                                        \
        for (int64_t i = 0; i < n; i++) NAME##_step(acc, (double)x[i * s].re, (double)x[i * s].im);       \
    }                                                                                                     \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {                           \
        const T *restrict x = src;                                                                        \
        double *restrict a = acc;                                                                         \
        for (int64_t j = 0; j < n; j++) NAME##_step(a + 2 * j, (double)x[j * s].re, (double)x[j * s].im); \
    }                                                                                                     \
    static void NAME##_merge(void *acc, const void *part) {                                               \
        const double *p = part;                                                                           \
        NAME##_step(acc, p[0], p[1]);                                                                     \
    }                                                                                                     \
    /* each part rounded to the part type, as a C conversion does */                                      \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {                         \
        T *d = dst;                                                                                       \
        const double *a = acc;                                                                            \
        for (int64_t j = 0; j < n; j++) {                                                                 \
            d[j * ds].re = a[2 * j];                                                                      \
            d[j * ds].im = a[2 * j + 1];                                                                  \
        }                                                                                                 \
    }                                                                                                     \
    EMI_REDUCER(NAME, emily_c128, true) /* {re, im} in double */

#define COMPLEX_SUM_PRODUCT(ENUM, sfx, T) \
    COMPLEX_FOLD(sum_##sfx, T, 1)         \
    COMPLEX_FOLD(prod_##sfx, T, 0)
EMI_DTYPES_COMPLEX(COMPLEX_SUM_PRODUCT)

/* ---- the tables ----------------------------------------------------------- */

#define SUM_ENTRY(ENUM, sfx, T) EMI_REDUCER_ENTRY(ENUM, sum_##sfx)
#define PROD_ENTRY(ENUM, sfx, T) EMI_REDUCER_ENTRY(ENUM, prod_##sfx)
const emi_reducer *const emi_reduce_sum[EMILY_DTYPE_COUNT] = {EMI_DTYPES(SUM_ENTRY)};
const emi_reducer *const emi_reduce_product[EMILY_DTYPE_COUNT] = {EMI_DTYPES(PROD_ENTRY)};
