/* Vectorized folds of contiguous runs (see simd.h). The compiler
 * builds the library for baseline x86-64; the hot folds have AVX-512 and
 * AVX2 versions (function target attributes) chosen once at run time. */
#include <math.h>
#include <string.h>
#include "core/dtype_list.h"
#include "cpu/reduce/simd.h"
#include "cpu/strided.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86 1
#include <immintrin.h>
#endif

enum { ISA_BASE = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 };

/* ---- portable versions --------------------------------------------------- */

#define LANES 8
#define BASE_SUM(NAME, T)                                                             \
    static double NAME(const T *x, int64_t n) {                                       \
        double l[LANES] = {0};                                                        \
        int64_t i = 0;                                                                \
        for (; i + LANES <= n; i += LANES)                                            \
            for (int k = 0; k < LANES; k++) l[k] += (double)x[i + k];                 \
        double s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])); \
        for (; i < n; i++) s += (double)x[i];                                         \
        return s;                                                                     \
    }
BASE_SUM(base_sum_f32, float)

/* Compensated f64 sums: every lane keeps its running sum and the exact
 * rounding error of each addition (Knuth's TwoSum, branch-free), so the
 * total is the exact sum rounded about once, whatever the lane order:
 * the CPU and CUDA engines (which compensates every addition as well)
 * then agree to about an ULP even on sums that cancel. */
#define TWO_SUM_STEP(s, c, x)                 \
    do {                                      \
        double t_ = (s) + (x), b_ = t_ - (s); \
        (c) += ((s) - (t_ - b_)) + ((x)-b_);  \
        (s) = t_;                             \
    } while (0)

/* Folds lanes l[0..k) (sums) and e[0..k) (errors), then x[i..n), into
 * out[0] (sum) and out[1] (error). */
static void finish_sum2(const double *l, const double *e, int k, const double *x, int64_t i, int64_t n, double out[2]) {
    double s = 0.0, c = 0.0;
    for (int j = 0; j < k; j++) {
        TWO_SUM_STEP(s, c, l[j]);
        c += e[j];
    }
    for (; i < n; i++) TWO_SUM_STEP(s, c, x[i]);
    out[0] = s;
    out[1] = c;
}

static void base_sum2_f64(const double *x, int64_t n, double out[2]) {
    double l[LANES] = {0}, e[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) TWO_SUM_STEP(l[k], e[k], x[i + k]);
    finish_sum2(l, e, LANES, x, i, n, out);
}

#define BASE_EXT(NAME, T, BETTER)                   \
    static int NAME(const T *x, int64_t n, T *mp) { \
        T m = *mp;                                  \
        int nan = 0;                                \
        for (int64_t i = 0; i < n; i++) {           \
            T v = x[i];                             \
            nan |= v != v;                          \
            m = v BETTER m ? v : m;                 \
        }                                           \
        *mp = m;                                    \
        return nan;                                 \
    }
BASE_EXT(base_max_f32, float, >)
BASE_EXT(base_min_f32, float, <)
BASE_EXT(base_max_f64, double, >)
BASE_EXT(base_min_f64, double, <)

#define BASE_FIND(NAME, T)                                      \
    static int64_t NAME(const T *x, int64_t n, T v, int last) { \
        if (last) {                                             \
            for (int64_t i = n - 1; i >= 0; i--)                \
                if (x[i] == v) return i;                        \
        } else {                                                \
            for (int64_t i = 0; i < n; i++)                     \
                if (x[i] == v) return i;                        \
        }                                                       \
        return -1;                                              \
    }
BASE_FIND(base_find_f32, float)
BASE_FIND(base_find_f64, double)

static void base_cols_sum_f32(double *restrict acc, const float *restrict x, int64_t n) {
    for (int64_t j = 0; j < n; j++) acc[j] += (double)x[j];
}
static void base_cols_max_f32(float *restrict acc, const float *restrict x, int64_t n) {
    for (int64_t j = 0; j < n; j++) acc[j] = (x[j] > acc[j] || x[j] != x[j]) ? x[j] : acc[j];
}
static void base_cols_min_f32(float *restrict acc, const float *restrict x, int64_t n) {
    for (int64_t j = 0; j < n; j++) acc[j] = (x[j] < acc[j] || x[j] != x[j]) ? x[j] : acc[j];
}

#ifdef HAVE_X86

/* ---- sums: one body, an AVX-512 and an AVX2 instance -------------------- */

/* Sums of f32 runs in double lanes: four accumulators of W lanes, each
 * vector of W floats widened as it is loaded. */
#define SUM_F32(NAME, TARGET, VD, W, ZERO, LOAD_WIDE, ADD, HSUM) \
    TARGET static double NAME(const float *x, int64_t n) {       \
        VD a0 = ZERO(), a1 = a0, a2 = a0, a3 = a0;               \
        int64_t i = 0;                                           \
        for (; i + 4 * (W) <= n; i += 4 * (W)) {                 \
            a0 = ADD(a0, LOAD_WIDE(x + i));                      \
            a1 = ADD(a1, LOAD_WIDE(x + i + (W)));                \
            a2 = ADD(a2, LOAD_WIDE(x + i + 2 * (W)));            \
            a3 = ADD(a3, LOAD_WIDE(x + i + 3 * (W)));            \
        }                                                        \
        double s = HSUM(ADD(ADD(a0, a1), ADD(a2, a3)));          \
        for (; i < n; i++) s += (double)x[i];                    \
        return s;                                                \
    }

/* Two independent TwoSum chains of W lanes each (see base_sum2_f64). */
#define SUM2_F64(NAME, TARGET, VD, W, ZERO, LOADU, STOREU, ADD, SUB)     \
    TARGET static void NAME(const double *x, int64_t n, double out[2]) { \
        VD s0 = ZERO(), s1 = s0, c0 = s0, c1 = s0;                       \
        int64_t i = 0;                                                   \
        for (; i + 2 * (W) <= n; i += 2 * (W)) {                         \
            VD x0 = LOADU(x + i), x1 = LOADU(x + i + (W));               \
            VD t0 = ADD(s0, x0), t1 = ADD(s1, x1);                       \
            VD b0 = SUB(t0, s0), b1 = SUB(t1, s1);                       \
            c0 = ADD(c0, ADD(SUB(s0, SUB(t0, b0)), SUB(x0, b0)));        \
            c1 = ADD(c1, ADD(SUB(s1, SUB(t1, b1)), SUB(x1, b1)));        \
            s0 = t0;                                                     \
            s1 = t1;                                                     \
        }                                                                \
        double l[2 * (W)], e[2 * (W)];                                   \
        STOREU(l, s0);                                                   \
        STOREU(l + (W), s1);                                             \
        STOREU(e, c0);                                                   \
        STOREU(e + (W), c1);                                             \
        finish_sum2(l, e, 2 * (W), x, i, n, out);                        \
    }

/* Extremes of f32/f64 runs: two vectors of W lanes a step folded with
 * OP, a NaN seen anywhere noted (UNORD(v): v's NaN lanes as an NT,
 * merged with NAN_OR, tested with NAN_ANY), the lanes reduced by HRED. */
#define EXT(NAME, TARGET, T, V, W, LOADU, SET1, OP, NT, NAN0, UNORD, NAN_OR, NAN_ANY, HRED, BETTER) \
    TARGET static int NAME(const T *x, int64_t n, T *mp) {                                          \
        V m0 = SET1(*mp), m1 = m0;                                                                  \
        NT nan = NAN0;                                                                              \
        int64_t i = 0;                                                                              \
        for (; i + 2 * W <= n; i += 2 * W) {                                                        \
            V v0 = LOADU(x + i), v1 = LOADU(x + i + W);                                             \
            nan = NAN_OR(nan, NAN_OR(UNORD(v0), UNORD(v1)));                                        \
            m0 = OP(m0, v0);                                                                        \
            m1 = OP(m1, v1);                                                                        \
        }                                                                                           \
        T m = HRED(OP(m0, m1));                                                                     \
        int bad = NAN_ANY(nan);                                                                     \
        for (; i < n; i++) {                                                                        \
            T v = x[i];                                                                             \
            bad |= v != v;                                                                          \
            m = v BETTER m ? v : m;                                                                 \
        }                                                                                           \
        *mp = m;                                                                                    \
        return bad;                                                                                 \
    }

/* ---- AVX-512 ------------------------------------------------------------- */

#define AVX512 __attribute__((target("avx512f")))
AVX512 static inline __m512d load_wide512(const float *p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }
SUM_F32(sum_f32_avx512, AVX512, __m512d, 8, _mm512_setzero_pd, load_wide512, _mm512_add_pd, _mm512_reduce_add_pd)
SUM2_F64(sum2_f64_avx512, AVX512, __m512d, 8, _mm512_setzero_pd, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_add_pd,
         _mm512_sub_pd)

/* NaN lanes as a mask; lanes reduced by the AVX-512 reductions */
#define UNORD_PS512(v) _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)
#define UNORD_PD512(v) _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q)
#define OR16(a, b) ((__mmask16)((a) | (b)))
#define OR8(a, b) ((__mmask8)((a) | (b)))
#define MASK_ANY(m) ((m) != 0)
EXT(max_f32_avx512, AVX512, float, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_max_ps, __mmask16, 0,
    UNORD_PS512, OR16, MASK_ANY, _mm512_reduce_max_ps, >)
EXT(min_f32_avx512, AVX512, float, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_min_ps, __mmask16, 0,
    UNORD_PS512, OR16, MASK_ANY, _mm512_reduce_min_ps, <)
EXT(max_f64_avx512, AVX512, double, __m512d, 8, _mm512_loadu_pd, _mm512_set1_pd, _mm512_max_pd, __mmask8, 0,
    UNORD_PD512, OR8, MASK_ANY, _mm512_reduce_max_pd, >)
EXT(min_f64_avx512, AVX512, double, __m512d, 8, _mm512_loadu_pd, _mm512_set1_pd, _mm512_min_pd, __mmask8, 0,
    UNORD_PD512, OR8, MASK_ANY, _mm512_reduce_min_pd, <)

/* ---- AVX2 ------------------------------------------------------------------ */

__attribute__((target("avx2"))) static double hsum256(__m256d a) {
    __m128d lo = _mm256_castpd256_pd128(a), hi = _mm256_extractf128_pd(a, 1);
    lo = _mm_add_pd(lo, hi);
    return _mm_cvtsd_f64(lo) + _mm_cvtsd_f64(_mm_unpackhi_pd(lo, lo));
}

#define AVX2 __attribute__((target("avx2")))
AVX2 static inline __m256d load_wide256(const float *p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }
SUM_F32(sum_f32_avx2, AVX2, __m256d, 4, _mm256_setzero_pd, load_wide256, _mm256_add_pd, hsum256)
SUM2_F64(sum2_f64_avx2, AVX2, __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_add_pd,
         _mm256_sub_pd)

/* NaN lanes as a vector; lanes reduced in order through memory, the
 * first of equals kept (hred256_<op>_<type>) */
#define HRED256(NAME, T, V, W, BETTER)                                    \
    AVX2 static inline T NAME(V v) {                                      \
        T lanes[W];                                                       \
        memcpy(lanes, &v, sizeof lanes);                                  \
        T m = lanes[0];                                                   \
        for (int k = 1; k < W; k++) m = lanes[k] BETTER m ? lanes[k] : m; \
        return m;                                                         \
    }
HRED256(hred256_max_ps, float, __m256, 8, >)
HRED256(hred256_min_ps, float, __m256, 8, <)
HRED256(hred256_max_pd, double, __m256d, 4, >)
HRED256(hred256_min_pd, double, __m256d, 4, <)
#define UNORD_PS256(v) _mm256_cmp_ps(v, v, _CMP_UNORD_Q)
#define UNORD_PD256(v) _mm256_cmp_pd(v, v, _CMP_UNORD_Q)
#define ANY_PS256(v) (_mm256_movemask_ps(v) != 0)
#define ANY_PD256(v) (_mm256_movemask_pd(v) != 0)
EXT(max_f32_avx2, AVX2, float, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_max_ps, __m256, _mm256_set1_ps(0),
    UNORD_PS256, _mm256_or_ps, ANY_PS256, hred256_max_ps, >)
EXT(min_f32_avx2, AVX2, float, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_min_ps, __m256, _mm256_set1_ps(0),
    UNORD_PS256, _mm256_or_ps, ANY_PS256, hred256_min_ps, <)
EXT(max_f64_avx2, AVX2, double, __m256d, 4, _mm256_loadu_pd, _mm256_set1_pd, _mm256_max_pd, __m256d, _mm256_set1_pd(0),
    UNORD_PD256, _mm256_or_pd, ANY_PD256, hred256_max_pd, >)
EXT(min_f64_avx2, AVX2, double, __m256d, 4, _mm256_loadu_pd, _mm256_set1_pd, _mm256_min_pd, __m256d, _mm256_set1_pd(0),
    UNORD_PD256, _mm256_or_pd, ANY_PD256, hred256_min_pd, <)

/* ---- finding a value, column folds (AVX-512 and AVX2) --------------------- */

/* The first (`last`: the last) element equal to v, W lanes a compare:
 * EQ(a, b) gives the lanes' equality as the bits of an unsigned. */
#define FIND(NAME, TARGET, T, V, W, LOADU, SET1, EQ)                   \
    TARGET static int64_t NAME(const T *x, int64_t n, T v, int last) { \
        V vv = SET1(v);                                                \
        if (!last) {                                                   \
            int64_t i = 0;                                             \
            for (; i + W <= n; i += W) {                               \
                unsigned m = EQ(LOADU(x + i), vv);                     \
                if (m) return i + __builtin_ctz(m);                    \
            }                                                          \
            for (; i < n; i++)                                         \
                if (x[i] == v) return i;                               \
        } else {                                                       \
            int64_t i = n;                                             \
            for (; i >= W; i -= W) {                                   \
                unsigned m = EQ(LOADU(x + i - W), vv);                 \
                if (m) return i - W + (31 - __builtin_clz(m));         \
            }                                                          \
            for (; i > 0; i--)                                         \
                if (x[i - 1] == v) return i - 1;                       \
        }                                                              \
        return -1;                                                     \
    }
#define EQ_PS512(a, b) ((__mmask16)_mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ))
#define EQ_PD512(a, b) ((__mmask8)_mm512_cmp_pd_mask(a, b, _CMP_EQ_OQ))
#define EQ_PS256(a, b) ((unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)))
#define EQ_PD256(a, b) ((unsigned)_mm256_movemask_pd(_mm256_cmp_pd(a, b, _CMP_EQ_OQ)))
FIND(find_f32_avx512, AVX512, float, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, EQ_PS512)
FIND(find_f64_avx512, AVX512, double, __m512d, 8, _mm512_loadu_pd, _mm512_set1_pd, EQ_PD512)
FIND(find_f32_avx2, AVX2, float, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, EQ_PS256)
FIND(find_f64_avx2, AVX2, double, __m256d, 4, _mm256_loadu_pd, _mm256_set1_pd, EQ_PD256)

/* acc[j] += x[j] in double lanes, two vectors of W a step. */
#define COLS_SUM_F32(NAME, TARGET, VD, W, LOAD_WIDE, LOADU, STOREU, ADD) \
    TARGET static void NAME(double *acc, const float *x, int64_t n) {    \
        int64_t j = 0;                                                   \
        for (; j + 2 * (W) <= n; j += 2 * (W)) {                         \
            VD lo = LOAD_WIDE(x + j), hi = LOAD_WIDE(x + j + (W));       \
            STOREU(acc + j, ADD(LOADU(acc + j), lo));                    \
            STOREU(acc + j + (W), ADD(LOADU(acc + j + (W)), hi));        \
        }                                                                \
        for (; j < n; j++) acc[j] += (double)x[j];                       \
    }
COLS_SUM_F32(cols_sum_f32_avx512, AVX512, __m512d, 8, load_wide512, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_add_pd)
COLS_SUM_F32(cols_sum_f32_avx2, AVX2, __m256d, 4, load_wide256, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_add_pd)

#define COLS_EXT512(NAME, PRED, BETTER)                                                                            \
    __attribute__((target("avx512f"))) static void NAME(float *acc, const float *x, int64_t n) {                   \
        int64_t j = 0;                                                                                             \
        for (; j + 16 <= n; j += 16) {                                                                             \
            __m512 a = _mm512_loadu_ps(acc + j), v = _mm512_loadu_ps(x + j);                                       \
            __mmask16 take = (__mmask16)(_mm512_cmp_ps_mask(v, a, PRED) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)); \
            _mm512_storeu_ps(acc + j, _mm512_mask_blend_ps(take, a, v));                                           \
        }                                                                                                          \
        for (; j < n; j++) acc[j] = (x[j] BETTER acc[j] || x[j] != x[j]) ? x[j] : acc[j];                          \
    }
COLS_EXT512(cols_max_f32_avx512, _CMP_GT_OQ, >)
COLS_EXT512(cols_min_f32_avx512, _CMP_LT_OQ, <)

#define COLS_EXT256(NAME, PRED, BETTER)                                                               \
    __attribute__((target("avx2"))) static void NAME(float *acc, const float *x, int64_t n) {         \
        int64_t j = 0;                                                                                \
        for (; j + 8 <= n; j += 8) {                                                                  \
            __m256 a = _mm256_loadu_ps(acc + j), v = _mm256_loadu_ps(x + j);                          \
            __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, a, PRED), _mm256_cmp_ps(v, v, _CMP_UNORD_Q)); \
            _mm256_storeu_ps(acc + j, _mm256_blendv_ps(a, v, take));                                  \
        }                                                                                             \
        for (; j < n; j++) acc[j] = (x[j] BETTER acc[j] || x[j] != x[j]) ? x[j] : acc[j];             \
    }
COLS_EXT256(cols_max_f32_avx2, _CMP_GT_OQ, >)
COLS_EXT256(cols_min_f32_avx2, _CMP_LT_OQ, <)

// clang-format off
#define DISPATCH_FIND(T, SUF)                                                     \
    int64_t emi_simd_find_##SUF(const T *x, int64_t n, T v, int last) {         \
        switch (emi_cpu_isa()) {                                                \
        case ISA_AVX512: return find_##SUF##_avx512(x, n, v, last);               \
        case ISA_AVX2: return find_##SUF##_avx2(x, n, v, last);                   \
        default: return base_find_##SUF(x, n, v, last);                           \
        }                                                                         \
    }
#define DISPATCH_COLS(T, A, OP)                                                   \
    void emi_simd_cols_##OP##_f32(A *acc, const T *x, int64_t n) {              \
        switch (emi_cpu_isa()) {                                                \
        case ISA_AVX512: cols_##OP##_f32_avx512(acc, x, n); break;                \
        case ISA_AVX2: cols_##OP##_f32_avx2(acc, x, n); break;                    \
        default: base_cols_##OP##_f32(acc, x, n); break;                          \
        }                                                                         \
    }
// clang-format on

// clang-format off
#define DISPATCH_SUM(T, SUF)                                                      \
    double emi_simd_sum_##SUF(const T *x, int64_t n) {                          \
        switch (emi_cpu_isa()) {                                                    \
        case ISA_AVX512: return sum_##SUF##_avx512(x, n);                         \
        case ISA_AVX2: return sum_##SUF##_avx2(x, n);                             \
        default: return base_sum_##SUF(x, n);                                     \
        }                                                                         \
    }
#define DISPATCH_SUM2_F64                                                         \
    void emi_simd_sum2_f64(const double *x, int64_t n, double out[2]) {         \
        switch (emi_cpu_isa()) {                                                \
        case ISA_AVX512: sum2_f64_avx512(x, n, out); break;                       \
        case ISA_AVX2: sum2_f64_avx2(x, n, out); break;                           \
        default: base_sum2_f64(x, n, out); break;                                 \
        }                                                                         \
    }
#define DISPATCH_EXT(T, OP, SUF)                                                  \
    int emi_simd_##OP##_##SUF(const T *x, int64_t n, T *m) {                    \
        if (*m != *m) return 1;                                                   \
        switch (emi_cpu_isa()) {                                                    \
        case ISA_AVX512: return OP##_##SUF##_avx512(x, n, m);                     \
        case ISA_AVX2: return OP##_##SUF##_avx2(x, n, m);                         \
        default: return base_##OP##_##SUF(x, n, m);                               \
        }                                                                         \
    }
// clang-format on

#else /* not x86-64: the portable versions */

#define DISPATCH_SUM(T, SUF)                           \
    double emi_simd_sum_##SUF(const T *x, int64_t n) { \
        (void)emi_cpu_isa;                             \
        return base_sum_##SUF(x, n);                   \
    }
#define DISPATCH_SUM2_F64 \
    void emi_simd_sum2_f64(const double *x, int64_t n, double out[2]) { base_sum2_f64(x, n, out); }
#define DISPATCH_EXT(T, OP, SUF)                             \
    int emi_simd_##OP##_##SUF(const T *x, int64_t n, T *m) { \
        if (*m != *m) return 1;                              \
        return base_##OP##_##SUF(x, n, m);                   \
    }
#define DISPATCH_FIND(T, SUF) \
    int64_t emi_simd_find_##SUF(const T *x, int64_t n, T v, int last) { return base_find_##SUF(x, n, v, last); }
#define DISPATCH_COLS(T, A, OP) \
    void emi_simd_cols_##OP##_f32(A *acc, const T *x, int64_t n) { base_cols_##OP##_f32(acc, x, n); }

#endif

/* the entry points: extremes and finds for f32 and f64, f32 sums and
 * columns, f64 compensated sums */
#define DISPATCH_NATIVE(ENUM, sfx, T) \
    DISPATCH_EXT(T, max, sfx)         \
    DISPATCH_EXT(T, min, sfx)         \
    DISPATCH_FIND(T, sfx)
EMI_DTYPES_NATIVE_FLOAT(DISPATCH_NATIVE)
DISPATCH_SUM(float, f32)
DISPATCH_SUM2_F64
DISPATCH_COLS(float, double, sum)
DISPATCH_COLS(float, float, max)
DISPATCH_COLS(float, float, min)
