/* AVX-512 (F + DQ) paths of the unary and conversion kernels (see
 * unary_simd.h). Compiled for that instruction set by the pragma below
 * and reached only after the runtime check in unary_simd.c. Tails use
 * masked loads and stores. */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx512f,avx512dq,avx2,fma,f16c")
#include <immintrin.h>
#include <sleef.h>
#include "cpu/unary_simd.h"

#define MAP_PS(NAME, V)                                                                \
    static void NAME(void *d_, const void *s_, int64_t n) {                           \
        float *d = d_;                                                                 \
        const float *s = s_;                                                           \
        int64_t i = 0;                                                                 \
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, V(_mm512_loadu_ps(s + i))); \
        if (i < n) {                                                                   \
            __mmask16 m = (__mmask16)((1u << (n - i)) - 1);                            \
            _mm512_mask_storeu_ps(d + i, m, V(_mm512_maskz_loadu_ps(m, s + i)));       \
        }                                                                              \
    }
#define MAP_PD(NAME, V)                                                                \
    static void NAME(void *d_, const void *s_, int64_t n) {                           \
        double *d = d_;                                                                \
        const double *s = s_;                                                          \
        int64_t i = 0;                                                                 \
        for (; i + 8 <= n; i += 8) _mm512_storeu_pd(d + i, V(_mm512_loadu_pd(s + i)));  \
        if (i < n) {                                                                   \
            __mmask8 m = (__mmask8)((1u << (n - i)) - 1);                              \
            _mm512_mask_storeu_pd(d + i, m, V(_mm512_maskz_loadu_pd(m, s + i)));       \
        }                                                                              \
    }

#define S(v) _mm512_set1_ps(v)

/* See unary_simd.h. Nx's tanh is NaN at both infinities. */
static inline __m512 tanh_ps(__m512 x) {
    __m512 a = _mm512_min_ps(S(EMILY_TANH_CLAMP), _mm512_abs_ps(x)); /* NaN stays NaN */
    __m512 s = _mm512_mul_ps(a, a);
    __m512 p = S(EMILY_TANH_P5);
    p = _mm512_fmadd_ps(p, s, S(EMILY_TANH_P4));
    p = _mm512_fmadd_ps(p, s, S(EMILY_TANH_P3));
    p = _mm512_fmadd_ps(p, s, S(EMILY_TANH_P2));
    p = _mm512_fmadd_ps(p, s, S(EMILY_TANH_P1));
    p = _mm512_fmadd_ps(p, s, S(EMILY_TANH_P0));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(a, s), p, a);
    __m512 y = _mm512_mul_ps(a, S(-2.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(y, S(EMILY_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, S(EMILY_LN2_HI), y);
    r = _mm512_fnmadd_ps(n, S(EMILY_LN2_LO), r);
    __m512 q = S(EMILY_EXP_Q4);
    q = _mm512_fmadd_ps(q, r, S(EMILY_EXP_Q3));
    q = _mm512_fmadd_ps(q, r, S(EMILY_EXP_Q2));
    q = _mm512_fmadd_ps(q, r, S(EMILY_EXP_Q1));
    q = _mm512_fmadd_ps(q, r, S(EMILY_EXP_Q0));
    __m512 e = _mm512_add_ps(S(1.0f), _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r));
    __m512 t = _mm512_scalef_ps(e, n); /* exact: n in [-27, 0] */
    __m512 large = _mm512_sub_ps(S(1.0f), _mm512_div_ps(_mm512_add_ps(t, t), _mm512_add_ps(S(1.0f), t)));
    __m512 res = _mm512_mask_mov_ps(large, _mm512_cmp_ps_mask(a, S(EMILY_TANH_SMALL), _CMP_LT_OQ), small);
    res = _mm512_or_ps(res, _mm512_and_ps(x, S(-0.0f)));
    __mmask16 inf = _mm512_cmp_ps_mask(_mm512_abs_ps(x), S(__builtin_inff()), _CMP_EQ_OQ);
    return _mm512_mask_mov_ps(res, inf, S(__builtin_nanf("")));
}
static inline __m512d tanh_pd(__m512d x) {
    __m512d r = Sleef_tanhd8_u10avx512f(x);
    __mmask8 inf = _mm512_cmp_pd_mask(_mm512_abs_pd(x), _mm512_set1_pd(__builtin_inf()), _CMP_EQ_OQ);
    return _mm512_mask_mov_pd(r, inf, _mm512_set1_pd(__builtin_nan("")));
}

MAP_PS(exp_f32, Sleef_expf16_u10avx512f)
MAP_PS(tanh_f32, tanh_ps)
MAP_PD(exp_f64, Sleef_expd8_u10avx512f)
MAP_PD(tanh_f64, tanh_pd)

emily_vec_fn emily_unary_avx512(emily_unary_op op, emily_dtype src, emily_dtype dst) {
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
 * 0x7fc0; f16 0x7e00). */
static inline __m512 canonical_nan(__m512 x) {
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_mov_ps(x, nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000)));
}

static void f32_to_f16(void *d_, const void *s_, int64_t n) {
    uint16_t *d = d_;
    const float *s = s_;
    const int mode = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(d + i), _mm512_cvtps_ph(canonical_nan(_mm512_loadu_ps(s + i)), mode));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m256i h = _mm512_cvtps_ph(canonical_nan(_mm512_maskz_loadu_ps(m, s + i)), mode);
        uint16_t out[16];
        _mm256_storeu_si256((__m256i *)out, h);
        for (int64_t k = 0; k < n - i; k++) d[i + k] = out[k];
    }
}

static inline __m256i bf16_of(__m512 x) {
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(canonical_nan(x)), 16));
}

static void f32_to_bf16(void *d_, const void *s_, int64_t n) {
    uint16_t *d = d_;
    const float *s = s_;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(d + i), bf16_of(_mm512_loadu_ps(s + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        uint16_t out[16];
        _mm256_storeu_si256((__m256i *)out, bf16_of(_mm512_maskz_loadu_ps(m, s + i)));
        for (int64_t k = 0; k < n - i; k++) d[i + k] = out[k];
    }
}

emily_vec_fn emily_convert_avx512(emily_dtype src, emily_dtype dst) {
    if (src == EMILY_F32 && dst == EMILY_F16) return f32_to_f16;
    if (src == EMILY_F32 && dst == EMILY_BF16) return f32_to_bf16;
    return NULL;
}

#else /* not x86-64 with GCC: no AVX-512 paths */
#include "cpu/unary_simd.h"
emily_vec_fn emily_unary_avx512(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    (void)op; (void)src; (void)dst;
    return NULL;
}
emily_vec_fn emily_convert_avx512(emily_dtype src, emily_dtype dst) {
    (void)src; (void)dst;
    return NULL;
}
#endif
