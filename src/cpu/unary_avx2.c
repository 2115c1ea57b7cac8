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

#define S(v) _mm256_set1_ps(v)
#define D(v) _mm256_set1_pd(v)

/* Applies V (a function of one vector) to n elements; the tail goes
 * through a padded vector so every element sees the same code. */
#define MAP_PS(NAME, V)                                                                \
    static void NAME(void *d_, const void *s_, int64_t n) {                           \
        float *d = d_;                                                                 \
        const float *s = s_;                                                           \
        int64_t i = 0;                                                                 \
        /* four independent vectors per step: long dependency chains then   \
         * overlap, which matters most while fresh output pages fault in */  \
        for (; i + 32 <= n; i += 32) {                                                 \
            __m256 a = _mm256_loadu_ps(s + i), b = _mm256_loadu_ps(s + i + 8);         \
            __m256 c = _mm256_loadu_ps(s + i + 16), e = _mm256_loadu_ps(s + i + 24);   \
            _mm256_storeu_ps(d + i, V(a));                                             \
            _mm256_storeu_ps(d + i + 8, V(b));                                         \
            _mm256_storeu_ps(d + i + 16, V(c));                                        \
            _mm256_storeu_ps(d + i + 24, V(e));                                        \
        }                                                                              \
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
        for (; i + 16 <= n; i += 16) {                                                 \
            __m256d a = _mm256_loadu_pd(s + i), b = _mm256_loadu_pd(s + i + 4);        \
            __m256d c = _mm256_loadu_pd(s + i + 8), e = _mm256_loadu_pd(s + i + 12);   \
            _mm256_storeu_pd(d + i, V(a));                                             \
            _mm256_storeu_pd(d + i + 4, V(b));                                         \
            _mm256_storeu_pd(d + i + 8, V(c));                                         \
            _mm256_storeu_pd(d + i + 12, V(e));                                        \
        }                                                                              \
        for (; i + 4 <= n; i += 4) _mm256_storeu_pd(d + i, V(_mm256_loadu_pd(s + i))); \
        if (i < n) {                                                                   \
            double buf[4] = {0};                                                       \
            memcpy(buf, s + i, (size_t)(n - i) * sizeof *s);                           \
            _mm256_storeu_pd(buf, V(_mm256_loadu_pd(buf)));                            \
            memcpy(d + i, buf, (size_t)(n - i) * sizeof *d);                           \
        }                                                                              \
    }
/* An f32 op computed like the reference: widen to double, apply the
 * double function, round once. */
#define F32_VIA_F64(NAME, DF)                                                          \
    static inline __m256 NAME(__m256 x) {                                              \
        __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));                       \
        __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));                     \
        return _mm256_set_m128(_mm256_cvtpd_ps(DF(hi)), _mm256_cvtpd_ps(DF(lo)));      \
    }

static inline __m256d abs_pd(__m256d x) { return _mm256_andnot_pd(D(-0.0), x); }

/* ---- double functions with Nx's formulas (core/scalar_unary.h) ---------- */

static inline __m256d d_exp(__m256d x) { return Sleef_expd4_u10avx2(x); }
/* exp(x) - 1 with the reference's cancellation: 1 + expm1(x) is exp(x)
 * rounded once, then the subtraction is exact near 1 */
static inline __m256d d_expm1(__m256d x) {
    return _mm256_sub_pd(_mm256_add_pd(D(1.0), Sleef_expm1d4_u10avx2(x)), D(1.0));
}
static inline __m256d d_log(__m256d x) { return Sleef_logd4_u10avx2(x); }
static inline __m256d d_log1p(__m256d x) { return Sleef_logd4_u10avx2(_mm256_add_pd(x, D(1.0))); }
static inline __m256d d_sigmoid(__m256d x) {
    __m256d e = Sleef_expd4_u10avx2(_mm256_xor_pd(x, D(-0.0)));
    return _mm256_div_pd(D(1.0), _mm256_add_pd(D(1.0), e));
}
static inline __m256d d_cos(__m256d x) { return Sleef_cosd4_u10avx2(x); }
static inline __m256d d_sin(__m256d x) { return Sleef_sind4_u10avx2(x); }
static inline __m256d d_tan(__m256d x) { return Sleef_tand4_u10avx2(x); }
static inline __m256d d_cosh(__m256d x) { return Sleef_coshd4_u10avx2(x); }
static inline __m256d d_sinh(__m256d x) { return Sleef_sinhd4_u10avx2(x); }
/* Nx's tanh is NaN at both infinities (sinh(inf) / cosh(inf)) */
static inline __m256d d_tanh(__m256d x) {
    __m256d r = Sleef_tanhd4_u10avx2(x);
    __m256d inf = _mm256_cmp_pd(abs_pd(x), D(__builtin_inf()), _CMP_EQ_OQ);
    return _mm256_blendv_pd(r, D(__builtin_nan("")), inf);
}
static inline __m256d d_asin(__m256d x) { return Sleef_asind4_u10avx2(x); }
static inline __m256d d_atan(__m256d x) { return Sleef_atand4_u10avx2(x); }
static inline __m256d d_acosh(__m256d x) { return Sleef_acoshd4_u10avx2(x); }
static inline __m256d d_asinh(__m256d x) { return Sleef_asinhd4_u10avx2(x); }
static inline __m256d d_sqrt(__m256d x) { return _mm256_sqrt_pd(x); }
static inline __m256d d_rsqrt(__m256d x) { return _mm256_div_pd(D(1.0), _mm256_sqrt_pd(x)); }
/* pow(|x|, 1/3) with the sign of x for x < 0 (cbrt(-0.0) is +0.0) */
static inline __m256d d_cbrt(__m256d x) {
    __m256d p = Sleef_powd4_u10avx2(abs_pd(x), D(1.0 / 3.0));
    return _mm256_blendv_pd(p, _mm256_xor_pd(p, D(-0.0)), _mm256_cmp_pd(x, D(0.0), _CMP_LT_OQ));
}
static inline __m256d d_erf(__m256d x) { return Sleef_erfd4_u10avx2(x); }
static inline __m256d d_abs(__m256d x) { return abs_pd(x); }
static inline __m256d d_negate(__m256d x) { return _mm256_xor_pd(x, D(-0.0)); }

/* ---- f32 functions ------------------------------------------------------- */

/* See unary_simd.h: the same operations as the AVX-512 version (2^n
 * applied through the exponent bits, exact for n in [-27, 0]). Nx's
 * tanh is NaN at both infinities. */
static inline __m256 f_tanh(__m256 x) {
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
static inline __m256 f_exp(__m256 x) { return Sleef_expf8_u10avx2(x); }
static inline __m256 f_sqrt(__m256 x) { return _mm256_sqrt_ps(x); } /* correctly rounded, like the reference */
/* 1 / sqrt(x) rounded twice in f32: within 1 ULP of the reference */
static inline __m256 f_rsqrt(__m256 x) { return _mm256_div_ps(_mm256_set1_ps(1.0f), _mm256_sqrt_ps(x)); }
static inline __m256 f_log(__m256 x) { return Sleef_logf8_u10avx2(x); }
static inline __m256 f_cos(__m256 x) { return Sleef_cosf8_u10avx2(x); }
static inline __m256 f_sin(__m256 x) { return Sleef_sinf8_u10avx2(x); }
static inline __m256 f_tan(__m256 x) { return Sleef_tanf8_u10avx2(x); }
static inline __m256 f_acos(__m256 x) { return Sleef_acosf8_u10avx2(x); }
static inline __m256 f_asin(__m256 x) { return Sleef_asinf8_u10avx2(x); }
static inline __m256 f_atan(__m256 x) { return Sleef_atanf8_u10avx2(x); }
static inline __m256 f_atanh(__m256 x) { return Sleef_atanhf8_u10avx2(x); }
static inline __m256 f_erf(__m256 x) { return Sleef_erff8_u10avx2(x); }
static inline __m256 f_erfc(__m256 x) { return Sleef_erfcf8_u15avx2(x); }
/* the reference's cbrt(-0.0) is +0.0: adding +0.0 changes only that */
static inline __m256 f_cbrt(__m256 x) { return _mm256_add_ps(Sleef_cbrtf8_u10avx2(x), _mm256_set1_ps(0.0f)); }
static inline __m256 f_abs(__m256 x) { return _mm256_andnot_ps(S(-0.0f), x); }
static inline __m256 f_negate(__m256 x) { return _mm256_xor_ps(x, S(-0.0f)); }

/* ---- the tables (the same lists as unary_avx512.c) ----------------------- */

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

emily_vec_fn emi_unary_avx2(emily_unary_op op, emily_dtype src, emily_dtype dst) {
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

/* f16 -> f32 is exact (F16C) */
static void f16_to_f32(void *d_, const void *s_, int64_t n) {
    float *d = d_;
    const uint16_t *s = s_;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    if (i < n) {
        uint16_t in[8] = {0};
        float out[8];
        memcpy(in, s + i, (size_t)(n - i) * sizeof *s);
        _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)in)));
        memcpy(d + i, out, (size_t)(n - i) * sizeof *d);
    }
}

emily_vec_fn emi_convert_avx2(emily_dtype src, emily_dtype dst) {
    if (src == EMILY_F16 && dst == EMILY_F32) return f16_to_f32;
    if (src == EMILY_F32 && dst == EMILY_F16) return f32_to_f16;
    if (src == EMILY_F32 && dst == EMILY_BF16) return f32_to_bf16;
    return NULL;
}

#else /* not x86-64 with GCC: no AVX2 paths */
#include "cpu/unary_simd.h"
emily_vec_fn emi_unary_avx2(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    (void)op; (void)src; (void)dst;
    return NULL;
}
emily_vec_fn emi_convert_avx2(emily_dtype src, emily_dtype dst) {
    (void)src; (void)dst;
    return NULL;
}
#endif
