/* AVX-512 (F + DQ) paths of the unary and conversion kernels (see
 * unary_simd.h). Compiled for that instruction set by the pragma below
 * and reached only after the runtime check in unary_simd.c. Tails use
 * masked loads and stores. */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx512f,avx512dq,avx2,fma,f16c")
#include <immintrin.h>
#include <sleef.h>
#include "cpu/unary_simd.h"

#define S(v) _mm512_set1_ps(v)
#define D(v) _mm512_set1_pd(v)

#define MAP_PS(NAME, V)                                                                \
    static void NAME(void *d_, const void *s_, int64_t n) {                           \
        float *d = d_;                                                                 \
        const float *s = s_;                                                           \
        int64_t i = 0;                                                                 \
        /* four independent vectors per step: long dependency chains then   \
         * overlap, which matters most while fresh output pages fault in */  \
        for (; i + 64 <= n; i += 64) {                                                 \
            __m512 a = _mm512_loadu_ps(s + i), b = _mm512_loadu_ps(s + i + 16);        \
            __m512 c = _mm512_loadu_ps(s + i + 32), e = _mm512_loadu_ps(s + i + 48);   \
            _mm512_storeu_ps(d + i, V(a));                                             \
            _mm512_storeu_ps(d + i + 16, V(b));                                        \
            _mm512_storeu_ps(d + i + 32, V(c));                                        \
            _mm512_storeu_ps(d + i + 48, V(e));                                        \
        }                                                                              \
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
        for (; i + 32 <= n; i += 32) {                                                 \
            __m512d a = _mm512_loadu_pd(s + i), b = _mm512_loadu_pd(s + i + 8);        \
            __m512d c = _mm512_loadu_pd(s + i + 16), e = _mm512_loadu_pd(s + i + 24);  \
            _mm512_storeu_pd(d + i, V(a));                                             \
            _mm512_storeu_pd(d + i + 8, V(b));                                         \
            _mm512_storeu_pd(d + i + 16, V(c));                                        \
            _mm512_storeu_pd(d + i + 24, V(e));                                        \
        }                                                                              \
        for (; i + 8 <= n; i += 8) _mm512_storeu_pd(d + i, V(_mm512_loadu_pd(s + i)));  \
        if (i < n) {                                                                   \
            __mmask8 m = (__mmask8)((1u << (n - i)) - 1);                              \
            _mm512_mask_storeu_pd(d + i, m, V(_mm512_maskz_loadu_pd(m, s + i)));       \
        }                                                                              \
    }
/* An f32 op computed like the reference: widen to double, apply the
 * double function, round once. */
#define F32_VIA_F64(NAME, DF)                                                          \
    static inline __m512 NAME(__m512 x) {                                              \
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));                       \
        __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1));                    \
        return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(DF(lo))),     \
                                  _mm512_cvtpd_ps(DF(hi)), 1);                         \
    }

/* ---- double functions with Nx's formulas (core/scalar_unary.h) ---------- */

static inline __m512d d_exp(__m512d x) { return Sleef_expd8_u10avx512f(x); }
/* exp(x) - 1 with the reference's cancellation: 1 + expm1(x) is exp(x)
 * rounded once, then the subtraction is exact near 1 */
static inline __m512d d_expm1(__m512d x) {
    return _mm512_sub_pd(_mm512_add_pd(D(1.0), Sleef_expm1d8_u10avx512f(x)), D(1.0));
}
static inline __m512d d_log(__m512d x) { return Sleef_logd8_u10avx512f(x); }
static inline __m512d d_log1p(__m512d x) { return Sleef_logd8_u10avx512f(_mm512_add_pd(x, D(1.0))); }
static inline __m512d d_sigmoid(__m512d x) {
    __m512d e = Sleef_expd8_u10avx512f(_mm512_xor_pd(x, D(-0.0)));
    return _mm512_div_pd(D(1.0), _mm512_add_pd(D(1.0), e));
}
static inline __m512d d_cos(__m512d x) { return Sleef_cosd8_u10avx512f(x); }
static inline __m512d d_sin(__m512d x) { return Sleef_sind8_u10avx512f(x); }
static inline __m512d d_tan(__m512d x) { return Sleef_tand8_u10avx512f(x); }
static inline __m512d d_cosh(__m512d x) { return Sleef_coshd8_u10avx512f(x); }
static inline __m512d d_sinh(__m512d x) { return Sleef_sinhd8_u10avx512f(x); }
/* Nx's tanh is NaN at both infinities (sinh(inf) / cosh(inf)) */
static inline __m512d d_tanh(__m512d x) {
    __m512d r = Sleef_tanhd8_u10avx512f(x);
    __mmask8 inf = _mm512_cmp_pd_mask(_mm512_abs_pd(x), D(__builtin_inf()), _CMP_EQ_OQ);
    return _mm512_mask_mov_pd(r, inf, D(__builtin_nan("")));
}
static inline __m512d d_asin(__m512d x) { return Sleef_asind8_u10avx512f(x); }
static inline __m512d d_atan(__m512d x) { return Sleef_atand8_u10avx512f(x); }
static inline __m512d d_acosh(__m512d x) { return Sleef_acoshd8_u10avx512f(x); }
static inline __m512d d_asinh(__m512d x) { return Sleef_asinhd8_u10avx512f(x); }
static inline __m512d d_sqrt(__m512d x) { return _mm512_sqrt_pd(x); }
static inline __m512d d_rsqrt(__m512d x) { return _mm512_div_pd(D(1.0), _mm512_sqrt_pd(x)); }
/* pow(|x|, 1/3) with the sign of x for x < 0 (cbrt(-0.0) is +0.0) */
static inline __m512d d_cbrt(__m512d x) {
    __m512d p = Sleef_powd8_u10avx512f(_mm512_abs_pd(x), D(1.0 / 3.0));
    return _mm512_mask_mov_pd(p, _mm512_cmp_pd_mask(x, D(0.0), _CMP_LT_OQ), _mm512_xor_pd(p, D(-0.0)));
}
static inline __m512d d_erf(__m512d x) { return Sleef_erfd8_u10avx512f(x); }
static inline __m512d d_abs(__m512d x) { return _mm512_abs_pd(x); }
static inline __m512d d_negate(__m512d x) { return _mm512_xor_pd(x, D(-0.0)); }

/* ---- f32 functions ------------------------------------------------------- */

/* See unary_simd.h. Nx's tanh is NaN at both infinities. */
static inline __m512 f_tanh(__m512 x) {
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
static inline __m512 f_exp(__m512 x) { return Sleef_expf16_u10avx512f(x); }
static inline __m512 f_sqrt(__m512 x) { return _mm512_sqrt_ps(x); } /* correctly rounded, like the reference */
/* 1 / sqrt(x) rounded twice in f32: within 1 ULP of the reference */
static inline __m512 f_rsqrt(__m512 x) { return _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_sqrt_ps(x)); }
static inline __m512 f_log(__m512 x) { return Sleef_logf16_u10avx512f(x); }
static inline __m512 f_cos(__m512 x) { return Sleef_cosf16_u10avx512f(x); }
static inline __m512 f_sin(__m512 x) { return Sleef_sinf16_u10avx512f(x); }
static inline __m512 f_tan(__m512 x) { return Sleef_tanf16_u10avx512f(x); }
static inline __m512 f_acos(__m512 x) { return Sleef_acosf16_u10avx512f(x); }
static inline __m512 f_asin(__m512 x) { return Sleef_asinf16_u10avx512f(x); }
static inline __m512 f_atan(__m512 x) { return Sleef_atanf16_u10avx512f(x); }
static inline __m512 f_atanh(__m512 x) { return Sleef_atanhf16_u10avx512f(x); }
static inline __m512 f_erf(__m512 x) { return Sleef_erff16_u10avx512f(x); }
static inline __m512 f_erfc(__m512 x) { return Sleef_erfcf16_u15avx512f(x); }
/* the reference's cbrt(-0.0) is +0.0: adding +0.0 changes only that */
static inline __m512 f_cbrt(__m512 x) { return _mm512_add_ps(Sleef_cbrtf16_u10avx512f(x), _mm512_set1_ps(0.0f)); }
static inline __m512 f_abs(__m512 x) { return _mm512_abs_ps(x); }
static inline __m512 f_negate(__m512 x) { return _mm512_xor_ps(x, S(-0.0f)); }

/* ---- the tables ---------------------------------------------------------- */

/* ops computed in double for f32 (and directly for f64) */
/* computed in double for f32, and directly for f64 */
/* f32: computed in double like the reference. expm1 and log1p must be
 * (Nx's exp(x) - 1 and log(x + 1) cancel, and that error shows in f32);
 * SLEEF's f32 sinh/cosh lose range near 89 and asinh/acosh overflow
 * above ~1.8e19, where the double functions are fine. */
#define F32_VIA_F64_OPS(X)                                                             \
    X(EXPM1, expm1) X(LOG1P, log1p) X(SIGMOID, sigmoid) X(COSH, cosh) X(SINH, sinh)    \
    X(ACOSH, acosh) X(ASINH, asinh)
/* f32: their own f32 form (SLEEF's <= 1 ULP functions, or exact) */
#define F32_OPS(X)                                                                     \
    X(EXP, exp) X(TANH, tanh) X(SQRT, sqrt) X(RSQRT, rsqrt) X(ABS, abs) X(NEGATE, negate) \
    X(LOG, log) X(COS, cos) X(SIN, sin) X(TAN, tan) X(ACOS, acos) X(ASIN, asin)        \
    X(ATAN, atan) X(ATANH, atanh) X(ERF, erf) X(ERFC, erfc) X(CBRT, cbrt)
/* f64. Not here, so on the libm path: expm1 (Nx's exp(x) - 1 turns a
 * one-ULP difference in exp near 1 into ~1000 ULP), sinh/cosh (SLEEF's
 * overflow above 709 where libm is finite to 710.47), and acos, acosh,
 * atanh, erfc, which are bit-identical to glibc (what Nx.BinaryBackend
 * calls, through Erlang's :math) only on the scalar path: SLEEF's differ
 * in the last bit on 2-30% of inputs (docs/semantics.md, speed cost
 * there too). */
#define F64_OPS(X)                                                                     \
    X(EXP, exp) X(TANH, tanh) X(SQRT, sqrt) X(RSQRT, rsqrt) X(ABS, abs) X(NEGATE, negate) \
    X(LOG, log) X(LOG1P, log1p) X(SIGMOID, sigmoid) X(COS, cos) X(SIN, sin) X(TAN, tan) \
    X(ASIN, asin) X(ATAN, atan) X(ASINH, asinh) X(CBRT, cbrt) X(ERF, erf)

#define DEF_VIA32(OP, N) F32_VIA_F64(fv_##N, d_##N) MAP_PS(run32_##N, fv_##N)
#define DEF_F32(OP, N) MAP_PS(run32_##N, f_##N)
#define DEF_F64(OP, N) MAP_PD(run64_##N, d_##N)
F32_VIA_F64_OPS(DEF_VIA32)
F32_OPS(DEF_F32)
F64_OPS(DEF_F64)

emily_vec_fn emi_unary_avx512(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    if (src != dst) return NULL;
#define CASE32(OP, N) case EMILY_##OP: return run32_##N;
#define CASE64(OP, N) case EMILY_##OP: return run64_##N;
    if (src == EMILY_F32) {
        switch (op) {
            F32_VIA_F64_OPS(CASE32)
            F32_OPS(CASE32)
        default: return NULL;
        }
    }
    if (src == EMILY_F64) {
        switch (op) {
            F64_OPS(CASE64)
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
    /* an integer constant expression, as the intrinsic requires (clang
     * refuses a const variable) */
    enum { mode = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC };
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

/* f16 -> f32 is exact (F16C) */
static void f16_to_f32(void *d_, const void *s_, int64_t n) {
    float *d = d_;
    const uint16_t *s = s_;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i))));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        uint16_t in[16] = {0};
        for (int64_t k = 0; k < n - i; k++) in[k] = s[i + k];
        _mm512_mask_storeu_ps(d + i, m, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)in)));
    }
}

emily_vec_fn emi_convert_avx512(emily_dtype src, emily_dtype dst) {
    if (src == EMILY_F16 && dst == EMILY_F32) return f16_to_f32;
    if (src == EMILY_F32 && dst == EMILY_F16) return f32_to_f16;
    if (src == EMILY_F32 && dst == EMILY_BF16) return f32_to_bf16;
    return NULL;
}

#else /* not x86-64 with GCC: no AVX-512 paths */
#include "cpu/unary_simd.h"
emily_vec_fn emi_unary_avx512(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    (void)op; (void)src; (void)dst;
    return NULL;
}
emily_vec_fn emi_convert_avx512(emily_dtype src, emily_dtype dst) {
    (void)src; (void)dst;
    return NULL;
}
#endif
