/* Vectorized folds of contiguous runs (see reduce_simd.h). The compiler
 * builds the library for baseline x86-64; the hot folds have AVX-512 and
 * AVX2 versions (function target attributes) chosen once at run time. */
#include <math.h>
#include <string.h>
#include <stdatomic.h>
#include "cpu/reduce_simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_X86 1
#include <immintrin.h>
#endif

enum { ISA_BASE = 0, ISA_AVX2 = 1, ISA_AVX512 = 2 };

static int isa_level(void) {
    static atomic_int level = -1;
    int l = atomic_load_explicit(&level, memory_order_relaxed);
    if (l < 0) {
        l = ISA_BASE;
#ifdef HAVE_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) l = ISA_AVX512;
        else if (__builtin_cpu_supports("avx2")) l = ISA_AVX2;
#endif
        atomic_store_explicit(&level, l, memory_order_relaxed);
    }
    return l;
}

/* ---- portable versions --------------------------------------------------- */

#define LANES 8
#define BASE_SUM(NAME, T)                                                         \
    static double NAME(const T *x, int64_t n) {                                   \
        double l[LANES] = {0};                                                    \
        int64_t i = 0;                                                            \
        for (; i + LANES <= n; i += LANES)                                        \
            for (int k = 0; k < LANES; k++) l[k] += (double)x[i + k];             \
        double s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])); \
        for (; i < n; i++) s += (double)x[i];                                     \
        return s;                                                                 \
    }
BASE_SUM(base_sum_f32, float)
BASE_SUM(base_sum_f64, double)

#define BASE_EXT(NAME, T, BETTER)                                                 \
    static int NAME(const T *x, int64_t n, T *mp) {                               \
        T m = *mp;                                                                \
        int nan = 0;                                                              \
        for (int64_t i = 0; i < n; i++) {                                         \
            T v = x[i];                                                           \
            nan |= v != v;                                                        \
            m = v BETTER m ? v : m;                                               \
        }                                                                         \
        *mp = m;                                                                  \
        return nan;                                                               \
    }
BASE_EXT(base_max_f32, float, >)
BASE_EXT(base_min_f32, float, <)
BASE_EXT(base_max_f64, double, >)
BASE_EXT(base_min_f64, double, <)

#ifdef HAVE_X86

/* ---- AVX-512 ------------------------------------------------------------- */

__attribute__((target("avx512f"))) static double sum_f32_avx512(const float *x, int64_t n) {
    __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
        a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8)));
        a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 16)));
        a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm256_loadu_ps(x + i + 24)));
    }
    double s = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
    for (; i < n; i++) s += (double)x[i];
    return s;
}

__attribute__((target("avx512f"))) static double sum_f64_avx512(const double *x, int64_t n) {
    __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_add_pd(a0, _mm512_loadu_pd(x + i));
        a1 = _mm512_add_pd(a1, _mm512_loadu_pd(x + i + 8));
        a2 = _mm512_add_pd(a2, _mm512_loadu_pd(x + i + 16));
        a3 = _mm512_add_pd(a3, _mm512_loadu_pd(x + i + 24));
    }
    double s = _mm512_reduce_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
    for (; i < n; i++) s += x[i];
    return s;
}

#define EXT512(NAME, T, V, W, LOADU, SET1, OP, CMP, RED, MASK, BETTER)               \
    __attribute__((target("avx512f"))) static int NAME(const T *x, int64_t n, T *mp) { \
        V m0 = SET1(*mp), m1 = m0;                                                   \
        MASK nan = 0;                                                                \
        int64_t i = 0;                                                               \
        for (; i + 2 * W <= n; i += 2 * W) {                                         \
            V v0 = LOADU(x + i), v1 = LOADU(x + i + W);                              \
            nan |= (MASK)(CMP(v0, v0, _CMP_UNORD_Q) | CMP(v1, v1, _CMP_UNORD_Q));    \
            m0 = OP(m0, v0);                                                         \
            m1 = OP(m1, v1);                                                         \
        }                                                                            \
        T m = RED(OP(m0, m1));                                                       \
        int bad = nan != 0;                                                          \
        for (; i < n; i++) {                                                         \
            T v = x[i];                                                              \
            bad |= v != v;                                                           \
            m = v BETTER m ? v : m;                                                  \
        }                                                                            \
        *mp = m;                                                                     \
        return bad;                                                                  \
    }
EXT512(max_f32_avx512, float, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_max_ps,
       _mm512_cmp_ps_mask, _mm512_reduce_max_ps, __mmask16, >)
EXT512(min_f32_avx512, float, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_min_ps,
       _mm512_cmp_ps_mask, _mm512_reduce_min_ps, __mmask16, <)
EXT512(max_f64_avx512, double, __m512d, 8, _mm512_loadu_pd, _mm512_set1_pd, _mm512_max_pd,
       _mm512_cmp_pd_mask, _mm512_reduce_max_pd, __mmask8, >)
EXT512(min_f64_avx512, double, __m512d, 8, _mm512_loadu_pd, _mm512_set1_pd, _mm512_min_pd,
       _mm512_cmp_pd_mask, _mm512_reduce_min_pd, __mmask8, <)

/* ---- AVX2 ------------------------------------------------------------------ */

__attribute__((target("avx2"))) static double hsum256(__m256d a) {
    __m128d lo = _mm256_castpd256_pd128(a), hi = _mm256_extractf128_pd(a, 1);
    lo = _mm_add_pd(lo, hi);
    return _mm_cvtsd_f64(lo) + _mm_cvtsd_f64(_mm_unpackhi_pd(lo, lo));
}

__attribute__((target("avx2"))) static double sum_f32_avx2(const float *x, int64_t n) {
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
        a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4)));
        a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 8)));
        a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm_loadu_ps(x + i + 12)));
    }
    double s = hsum256(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    for (; i < n; i++) s += (double)x[i];
    return s;
}

__attribute__((target("avx2"))) static double sum_f64_avx2(const double *x, int64_t n) {
    __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_add_pd(a0, _mm256_loadu_pd(x + i));
        a1 = _mm256_add_pd(a1, _mm256_loadu_pd(x + i + 4));
        a2 = _mm256_add_pd(a2, _mm256_loadu_pd(x + i + 8));
        a3 = _mm256_add_pd(a3, _mm256_loadu_pd(x + i + 12));
    }
    double s = hsum256(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
    for (; i < n; i++) s += x[i];
    return s;
}

#define EXT256(NAME, T, V, W, LOADU, SET1, OP, CMP, OR, MOVEMASK, BETTER)            \
    __attribute__((target("avx2"))) static int NAME(const T *x, int64_t n, T *mp) {  \
        V m0 = SET1(*mp), m1 = m0, nan = SET1(0);                                    \
        int64_t i = 0;                                                               \
        for (; i + 2 * W <= n; i += 2 * W) {                                         \
            V v0 = LOADU(x + i), v1 = LOADU(x + i + W);                              \
            nan = OR(nan, OR(CMP(v0, v0, _CMP_UNORD_Q), CMP(v1, v1, _CMP_UNORD_Q))); \
            m0 = OP(m0, v0);                                                         \
            m1 = OP(m1, v1);                                                         \
        }                                                                            \
        T lanes[W];                                                                  \
        m0 = OP(m0, m1);                                                             \
        memcpy(lanes, &m0, sizeof lanes);                                            \
        T m = lanes[0];                                                              \
        for (int k = 1; k < W; k++) m = lanes[k] BETTER m ? lanes[k] : m;            \
        int bad = MOVEMASK(nan) != 0;                                                \
        for (; i < n; i++) {                                                         \
            T v = x[i];                                                              \
            bad |= v != v;                                                           \
            m = v BETTER m ? v : m;                                                  \
        }                                                                            \
        *mp = m;                                                                     \
        return bad;                                                                  \
    }
EXT256(max_f32_avx2, float, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_max_ps, _mm256_cmp_ps,
       _mm256_or_ps, _mm256_movemask_ps, >)
EXT256(min_f32_avx2, float, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_min_ps, _mm256_cmp_ps,
       _mm256_or_ps, _mm256_movemask_ps, <)
EXT256(max_f64_avx2, double, __m256d, 4, _mm256_loadu_pd, _mm256_set1_pd, _mm256_max_pd, _mm256_cmp_pd,
       _mm256_or_pd, _mm256_movemask_pd, >)
EXT256(min_f64_avx2, double, __m256d, 4, _mm256_loadu_pd, _mm256_set1_pd, _mm256_min_pd, _mm256_cmp_pd,
       _mm256_or_pd, _mm256_movemask_pd, <)

#define DISPATCH_SUM(T, SUF)                                                      \
    double emily_simd_sum_##SUF(const T *x, int64_t n) {                          \
        switch (isa_level()) {                                                    \
        case ISA_AVX512: return sum_##SUF##_avx512(x, n);                         \
        case ISA_AVX2: return sum_##SUF##_avx2(x, n);                             \
        default: return base_sum_##SUF(x, n);                                     \
        }                                                                         \
    }
#define DISPATCH_EXT(T, OP, SUF)                                                  \
    int emily_simd_##OP##_##SUF(const T *x, int64_t n, T *m) {                    \
        if (*m != *m) return 1;                                                   \
        switch (isa_level()) {                                                    \
        case ISA_AVX512: return OP##_##SUF##_avx512(x, n, m);                     \
        case ISA_AVX2: return OP##_##SUF##_avx2(x, n, m);                         \
        default: return base_##OP##_##SUF(x, n, m);                               \
        }                                                                         \
    }

#else /* not x86-64: the portable versions */

#define DISPATCH_SUM(T, SUF) \
    double emily_simd_sum_##SUF(const T *x, int64_t n) { (void)isa_level; return base_sum_##SUF(x, n); }
#define DISPATCH_EXT(T, OP, SUF)                                                  \
    int emily_simd_##OP##_##SUF(const T *x, int64_t n, T *m) {                    \
        if (*m != *m) return 1;                                                   \
        return base_##OP##_##SUF(x, n, m);                                        \
    }

#endif

DISPATCH_SUM(float, f32)
DISPATCH_SUM(double, f64)
DISPATCH_EXT(float, max, f32)
DISPATCH_EXT(float, min, f32)
DISPATCH_EXT(double, max, f64)
DISPATCH_EXT(double, min, f64)
