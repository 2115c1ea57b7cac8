/* AVX2 + FMA + F16C paths of the unary and conversion kernels (see
 * unary_simd.h). Everything in this file is compiled for that
 * instruction set by the pragma below and reached only after the
 * runtime check in unary_simd.c. */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>
#include <sleef.h>
#include <string.h>
#include "cpu/unary_simd.h"

/* Applies V (a function of one vector) to n floats; the tail goes
 * through a padded vector so every element sees the same code. */
#define MAP_PS(NAME, V)                                                                \
    static void NAME(void *d_, const void *s_, int64_t n) {                           \
        float *d = d_;                                                                 \
        const float *s = s_;                                                           \
        int64_t i = 0;                                                                 \
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, V(_mm256_loadu_ps(s + i))); \
        if (i < n) {                                                                   \
            float buf[8] = {0};                                                        \
            memcpy(buf, s + i, (size_t)(n - i) * sizeof *s);                           \
            _mm256_storeu_ps(buf, V(_mm256_loadu_ps(buf)));                            \
            memcpy(d + i, buf, (size_t)(n - i) * sizeof *d);                           \
        }                                                                              \
    }
#define MAP_PD(NAME, V)                                                                \
    static void NAME(void *d_, const void *s_, int64_t n) {                           \
        double *d = d_;                                                                \
        const double *s = s_;                                                          \
        int64_t i = 0;                                                                 \
        for (; i + 4 <= n; i += 4) _mm256_storeu_pd(d + i, V(_mm256_loadu_pd(s + i))); \
        if (i < n) {                                                                   \
            double buf[4] = {0};                                                       \
            memcpy(buf, s + i, (size_t)(n - i) * sizeof *s);                           \
            _mm256_storeu_pd(buf, V(_mm256_loadu_pd(buf)));                            \
            memcpy(d + i, buf, (size_t)(n - i) * sizeof *d);                           \
        }                                                                              \
    }

#define S(v) _mm256_set1_ps(v)

/* See unary_simd.h: the same operations as the AVX-512 version (2^n
 * applied through the exponent bits, exact for n in [-27, 0]). Nx's
 * tanh is NaN at both infinities. */
static inline __m256 tanh_ps(__m256 x) {
    __m256 ax = _mm256_andnot_ps(S(-0.0f), x);
    __m256 a = _mm256_min_ps(S(EMILY_TANH_CLAMP), ax); /* NaN stays NaN */
    __m256 s = _mm256_mul_ps(a, a);
    __m256 p = S(EMILY_TANH_P5);
    p = _mm256_fmadd_ps(p, s, S(EMILY_TANH_P4));
    p = _mm256_fmadd_ps(p, s, S(EMILY_TANH_P3));
    p = _mm256_fmadd_ps(p, s, S(EMILY_TANH_P2));
    p = _mm256_fmadd_ps(p, s, S(EMILY_TANH_P1));
    p = _mm256_fmadd_ps(p, s, S(EMILY_TANH_P0));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(a, s), p, a);
    __m256 y = _mm256_mul_ps(a, S(-2.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(y, S(EMILY_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, S(EMILY_LN2_HI), y);
    r = _mm256_fnmadd_ps(n, S(EMILY_LN2_LO), r);
    __m256 q = S(EMILY_EXP_Q4);
    q = _mm256_fmadd_ps(q, r, S(EMILY_EXP_Q3));
    q = _mm256_fmadd_ps(q, r, S(EMILY_EXP_Q2));
    q = _mm256_fmadd_ps(q, r, S(EMILY_EXP_Q1));
    q = _mm256_fmadd_ps(q, r, S(EMILY_EXP_Q0));
    __m256 e = _mm256_add_ps(S(1.0f), _mm256_fmadd_ps(_mm256_mul_ps(r, r), q, r));
    /* NaN lanes give a garbage n here; their result is NaN regardless */
    __m256i shift = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    __m256 t = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(e), shift));
    __m256 large = _mm256_sub_ps(S(1.0f), _mm256_div_ps(_mm256_add_ps(t, t), _mm256_add_ps(S(1.0f), t)));
    __m256 res = _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, S(EMILY_TANH_SMALL), _CMP_LT_OQ));
    res = _mm256_or_ps(res, _mm256_and_ps(x, S(-0.0f)));
    __m256 inf = _mm256_cmp_ps(ax, S(__builtin_inff()), _CMP_EQ_OQ);
    return _mm256_blendv_ps(res, S(__builtin_nanf("")), inf);
}
static inline __m256d tanh_pd(__m256d x) {
    __m256d r = Sleef_tanhd4_u10avx2(x);
    __m256d inf = _mm256_cmp_pd(_mm256_andnot_pd(_mm256_set1_pd(-0.0), x),
                                _mm256_set1_pd(__builtin_inf()), _CMP_EQ_OQ);
    return _mm256_blendv_pd(r, _mm256_set1_pd(__builtin_nan("")), inf);
}

MAP_PS(exp_f32, Sleef_expf8_u10avx2)
MAP_PS(tanh_f32, tanh_ps)
MAP_PD(exp_f64, Sleef_expd4_u10avx2)
MAP_PD(tanh_f64, tanh_pd)

emily_vec_fn emily_unary_avx2(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    if (src != dst) return NULL;
    if (src == EMILY_F32) {
        switch (op) {
        case EMILY_EXP: return exp_f32;
        case EMILY_TANH: return tanh_f32;
        default: return NULL;
        }
    }
    if (src == EMILY_F64) {
        switch (op) {
        case EMILY_EXP: return exp_f64;
        case EMILY_TANH: return tanh_f64;
        default: return NULL;
        }
    }
    return NULL;
}

/* ---- conversions --------------------------------------------------------- */

/* NaN inputs become the f32 quiet NaN whose halves are Nx's NaNs (bf16
 * 0x7fc0; f16 0x7e00 through F16C). */
static inline __m256 canonical_nan(__m256 x) {
    __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), nan);
}

/* 8 floats -> 8 f16 (round to nearest even, like Nx from the double) */
static inline __m128i f16_of(__m256 x) {
    return _mm256_cvtps_ph(canonical_nan(x), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* 16 floats -> 16 bf16 (the top halves) */
static inline __m256i bf16_of(__m256 a, __m256 b) {
    __m256i ha = _mm256_srli_epi32(_mm256_castps_si256(canonical_nan(a)), 16);
    __m256i hb = _mm256_srli_epi32(_mm256_castps_si256(canonical_nan(b)), 16);
    /* packus interleaves 128-bit lanes: a0 b0 a1 b1 -> a0 a1 b0 b1 */
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(ha, hb), 0xd8);
}

static void f32_to_f16(void *d_, const void *s_, int64_t n) {
    uint16_t *d = d_;
    const float *s = s_;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm_storeu_si128((__m128i *)(d + i), f16_of(_mm256_loadu_ps(s + i)));
    if (i < n) {
        float buf[8] = {0};
        uint16_t out[8];
        memcpy(buf, s + i, (size_t)(n - i) * sizeof *s);
        _mm_storeu_si128((__m128i *)out, f16_of(_mm256_loadu_ps(buf)));
        memcpy(d + i, out, (size_t)(n - i) * sizeof *d);
    }
}

static void f32_to_bf16(void *d_, const void *s_, int64_t n) {
    uint16_t *d = d_;
    const float *s = s_;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(d + i),
                            bf16_of(_mm256_loadu_ps(s + i), _mm256_loadu_ps(s + i + 8)));
    if (i < n) {
        float buf[16] = {0};
        uint16_t out[16];
        memcpy(buf, s + i, (size_t)(n - i) * sizeof *s);
        _mm256_storeu_si256((__m256i *)out, bf16_of(_mm256_loadu_ps(buf), _mm256_loadu_ps(buf + 8)));
        memcpy(d + i, out, (size_t)(n - i) * sizeof *d);
    }
}

emily_vec_fn emily_convert_avx2(emily_dtype src, emily_dtype dst) {
    if (src == EMILY_F32 && dst == EMILY_F16) return f32_to_f16;
    if (src == EMILY_F32 && dst == EMILY_BF16) return f32_to_bf16;
    return NULL;
}

#else /* not x86-64 with GCC: no AVX2 paths */
#include "cpu/unary_simd.h"
emily_vec_fn emily_unary_avx2(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    (void)op; (void)src; (void)dst;
    return NULL;
}
emily_vec_fn emily_convert_avx2(emily_dtype src, emily_dtype dst) {
    (void)src; (void)dst;
    return NULL;
}
#endif
