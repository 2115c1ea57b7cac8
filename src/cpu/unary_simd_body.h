/* The SIMD paths of the unary and conversion kernels (see unary_simd.h),
 * written once for every instruction set: unary_avx2.c and
 * unary_avx512.c each compile this body for their own set (a target
 * pragma, or clang's per-file flags in the Makefile) after defining the
 * vector layer it is written against:
 *
 *   SIMD_ISA                the set's name: emi_unary_<SIMD_ISA> and
 *                           emi_convert_<SIMD_ISA> are defined here
 *   SIMD_PREFIX             the intrinsics' prefix (_mm256_): V(add_ps) is
 *                           _mm256_add_ps; used for the operations both
 *                           sets spell alike
 *   vf, vd, vh              NF floats, ND doubles, NF f16 (as integers)
 *   mf, md                  the result of a comparison of vf / vd
 *   VF_CMP, VD_CMP(a, b, p) compare with _CMP_ predicate p
 *   VF_SELECT, VD_SELECT(m, t, f)   t where m is set, f elsewhere
 *   VF_ROUND(x)             to the nearest integer, ties to even
 *   VF_SCALE2(e, n)         e * 2^n for integral n in [-27, 0]
 *   VF_FROM_BITS(i), VF_BITS(x)     vf <-> its 32-bit lanes
 *   VF_WIDEN_LO, VF_WIDEN_HI(x)     the low / high half of x as a vd
 *   VF_NARROW_JOIN(lo, hi)  two vd rounded to floats, joined into a vf
 *   VH_LOAD(p), VH_STORE(p, h)      NF f16 from / to memory
 *   VF_TO_PH(x), VF_FROM_PH(h)      floats <-> f16 (F16C rounding)
 *   BF16_OF_16(p, KEEP)     16 floats at p -> 16 bf16 bits (a __m256i),
 *                           each float first passed through KEEP
 *   vf_load_part, vf_store_part, vd_load_part, vd_store_part (p, k, ...):
 *                           the first k < NF (ND) elements, the other
 *                           lanes zero on load and untouched on store
 *   SLEEF_F(fn, ulp), SLEEF_D(fn, ulp): SLEEF's vector functions
 *
 * Not a header of its own: only those two files include it, once each. */

#define SIMD_PASTE_(a, b) a##b
#define SIMD_PASTE(a, b) SIMD_PASTE_(a, b)
#define V(op) SIMD_PASTE(SIMD_PREFIX, op)
#define S(v) V(set1_ps)(v)
#define D(v) V(set1_pd)(v)

/* Applies F (a function of one vector) to n elements of type T, NV to a
 * vector VT (intrinsic suffix SFX); the tail goes through a partial
 * vector, so every element sees the same code. */
#define MAP_LANES(NAME, F, T, VT, NV, SFX)                                             \
    static void NAME(void *d_, const void *s_, int64_t n) {                            \
        T *d = d_;                                                                     \
        const T *s = s_;                                                               \
        int64_t i = 0;                                                                 \
        /* four independent vectors per step: long dependency chains then   \
         * overlap, which matters most while fresh output pages fault in */          \
        for (; i + 4 * NV <= n; i += 4 * NV) {                                         \
            VT a = V(loadu_##SFX)(s + i), b = V(loadu_##SFX)(s + i + NV);              \
            VT c = V(loadu_##SFX)(s + i + 2 * NV), e = V(loadu_##SFX)(s + i + 3 * NV); \
            V(storeu_##SFX)(d + i, F(a));                                              \
            V(storeu_##SFX)(d + i + NV, F(b));                                         \
            V(storeu_##SFX)(d + i + 2 * NV, F(c));                                     \
            V(storeu_##SFX)(d + i + 3 * NV, F(e));                                     \
        }                                                                              \
        for (; i + NV <= n; i += NV) V(storeu_##SFX)(d + i, F(V(loadu_##SFX)(s + i))); \
        if (i < n) VT##_store_part(d + i, n - i, F(VT##_load_part(s + i, n - i)));     \
    }
#define MAP_PS(NAME, F) MAP_LANES(NAME, F, float, vf, NF, ps)
#define MAP_PD(NAME, F) MAP_LANES(NAME, F, double, vd, ND, pd)
/* An f32 op computed like the reference: widen to double, apply the
 * double function, round once. */
#define F32_VIA_F64(NAME, DF)                        \
    static inline vf NAME(vf x) {                    \
        vd lo = VF_WIDEN_LO(x), hi = VF_WIDEN_HI(x); \
        return VF_NARROW_JOIN(DF(lo), DF(hi));       \
    }

/* |x| with the sign bit cleared, for the formulas below */
static inline vf f_mag(vf x) { return V(andnot_ps)(S(-0.0f), x); }
static inline vd d_mag(vd x) { return V(andnot_pd)(D(-0.0), x); }
/* the abs op: Erlang's abs negates only x < 0, so -0.0 (and NaN) pass
 * through unchanged, like emily_sc_abs */
static inline vf f_abs(vf x) { return VF_SELECT(VF_CMP(x, S(0.0f), _CMP_LT_OQ), V(xor_ps)(x, S(-0.0f)), x); }
static inline vd d_abs(vd x) { return VD_SELECT(VD_CMP(x, D(0.0), _CMP_LT_OQ), V(xor_pd)(x, D(-0.0)), x); }

/* ---- double functions with Nx's formulas (core/scalar_unary.h) ---------- */

static inline vd d_exp(vd x) { return SLEEF_D(exp, u10)(x); }
/* exp(x) - 1 with the reference's cancellation: 1 + expm1(x) is exp(x)
 * rounded once, then the subtraction is exact near 1 */
static inline vd d_expm1(vd x) { return V(sub_pd)(V(add_pd)(D(1.0), SLEEF_D(expm1, u10)(x)), D(1.0)); }
static inline vd d_log(vd x) { return SLEEF_D(log, u10)(x); }
static inline vd d_log1p(vd x) { return SLEEF_D(log, u10)(V(add_pd)(x, D(1.0))); }
static inline vd d_sigmoid(vd x) {
    vd e = SLEEF_D(exp, u10)(V(xor_pd)(x, D(-0.0)));
    return V(div_pd)(D(1.0), V(add_pd)(D(1.0), e));
}
static inline vd d_cos(vd x) { return SLEEF_D(cos, u10)(x); }
static inline vd d_sin(vd x) { return SLEEF_D(sin, u10)(x); }
static inline vd d_tan(vd x) { return SLEEF_D(tan, u10)(x); }
static inline vd d_cosh(vd x) { return SLEEF_D(cosh, u10)(x); }
static inline vd d_sinh(vd x) { return SLEEF_D(sinh, u10)(x); }
/* Nx's tanh is NaN at both infinities (sinh(inf) / cosh(inf)) */
static inline vd d_tanh(vd x) {
    vd r = SLEEF_D(tanh, u10)(x);
    return VD_SELECT(VD_CMP(d_mag(x), D(__builtin_inf()), _CMP_EQ_OQ), D(__builtin_nan("")), r);
}
static inline vd d_asin(vd x) { return SLEEF_D(asin, u10)(x); }
static inline vd d_atan(vd x) { return SLEEF_D(atan, u10)(x); }
static inline vd d_acosh(vd x) { return SLEEF_D(acosh, u10)(x); }
static inline vd d_asinh(vd x) { return SLEEF_D(asinh, u10)(x); }
static inline vd d_sqrt(vd x) { return V(sqrt_pd)(x); }
static inline vd d_rsqrt(vd x) { return V(div_pd)(D(1.0), V(sqrt_pd)(x)); }
/* pow(|x|, 1/3) with the sign of x for x < 0 (cbrt(-0.0) is +0.0) */
static inline vd d_cbrt(vd x) {
    vd p = SLEEF_D(pow, u10)(d_mag(x), D(1.0 / 3.0));
    return VD_SELECT(VD_CMP(x, D(0.0), _CMP_LT_OQ), V(xor_pd)(p, D(-0.0)), p);
}
static inline vd d_erf(vd x) { return SLEEF_D(erf, u10)(x); }
static inline vd d_negate(vd x) { return V(xor_pd)(x, D(-0.0)); }

/* ---- f32 functions ------------------------------------------------------- */

/* See unary_simd.h (both instruction sets run the same operations, so
 * they give the same bits). Nx's tanh is NaN at both infinities. */
static inline vf f_tanh(vf x) {
    vf ax = f_mag(x);
    vf a = V(min_ps)(S(EMILY_TANH_CLAMP), ax); /* NaN stays NaN */
    vf s = V(mul_ps)(a, a);
    vf p = S(EMILY_TANH_P5);
    p = V(fmadd_ps)(p, s, S(EMILY_TANH_P4));
    p = V(fmadd_ps)(p, s, S(EMILY_TANH_P3));
    p = V(fmadd_ps)(p, s, S(EMILY_TANH_P2));
    p = V(fmadd_ps)(p, s, S(EMILY_TANH_P1));
    p = V(fmadd_ps)(p, s, S(EMILY_TANH_P0));
    vf small = V(fmadd_ps)(V(mul_ps)(a, s), p, a);
    vf y = V(mul_ps)(a, S(-2.0f));
    vf n = VF_ROUND(V(mul_ps)(y, S(EMILY_LOG2E)));
    vf r = V(fnmadd_ps)(n, S(EMILY_LN2_HI), y);
    r = V(fnmadd_ps)(n, S(EMILY_LN2_LO), r);
    vf q = S(EMILY_EXP_Q4);
    q = V(fmadd_ps)(q, r, S(EMILY_EXP_Q3));
    q = V(fmadd_ps)(q, r, S(EMILY_EXP_Q2));
    q = V(fmadd_ps)(q, r, S(EMILY_EXP_Q1));
    q = V(fmadd_ps)(q, r, S(EMILY_EXP_Q0));
    vf e = V(add_ps)(S(1.0f), V(fmadd_ps)(V(mul_ps)(r, r), q, r));
    vf t = VF_SCALE2(e, n);
    vf large = V(sub_ps)(S(1.0f), V(div_ps)(V(add_ps)(t, t), V(add_ps)(S(1.0f), t)));
    vf res = VF_SELECT(VF_CMP(a, S(EMILY_TANH_SMALL), _CMP_LT_OQ), small, large);
    res = V(or_ps)(res, V(and_ps)(x, S(-0.0f)));
    return VF_SELECT(VF_CMP(ax, S(__builtin_inff()), _CMP_EQ_OQ), S(__builtin_nanf("")), res);
}
static inline vf f_exp(vf x) { return SLEEF_F(exp, u10)(x); }
static inline vf f_sqrt(vf x) { return V(sqrt_ps)(x); } /* correctly rounded, like the reference */
/* 1 / sqrt(x) rounded twice in f32: within 1 ULP of the reference */
static inline vf f_rsqrt(vf x) { return V(div_ps)(S(1.0f), V(sqrt_ps)(x)); }
static inline vf f_log(vf x) { return SLEEF_F(log, u10)(x); }
static inline vf f_cos(vf x) { return SLEEF_F(cos, u10)(x); }
static inline vf f_sin(vf x) { return SLEEF_F(sin, u10)(x); }
static inline vf f_tan(vf x) { return SLEEF_F(tan, u10)(x); }
static inline vf f_acos(vf x) { return SLEEF_F(acos, u10)(x); }
static inline vf f_asin(vf x) { return SLEEF_F(asin, u10)(x); }
static inline vf f_atan(vf x) { return SLEEF_F(atan, u10)(x); }
static inline vf f_atanh(vf x) { return SLEEF_F(atanh, u10)(x); }
static inline vf f_erf(vf x) { return SLEEF_F(erf, u10)(x); }
static inline vf f_erfc(vf x) { return SLEEF_F(erfc, u15)(x); }
/* the reference's cbrt(-0.0) is +0.0: adding +0.0 changes only that */
static inline vf f_cbrt(vf x) { return V(add_ps)(SLEEF_F(cbrt, u10)(x), S(0.0f)); }
static inline vf f_negate(vf x) { return V(xor_ps)(x, S(-0.0f)); }

/* ---- the tables ---------------------------------------------------------- */

/* f32: computed in double like the reference. expm1 and log1p must be
 * (Nx's exp(x) - 1 and log(x + 1) cancel, and that error shows in f32);
 * SLEEF's f32 sinh/cosh lose range near 89 and asinh/acosh overflow
 * above ~1.8e19, where the double functions are fine. */
/* clang-format off */
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
/* clang-format on */

#define DEF_VIA32(OP, N) F32_VIA_F64(fv_##N, d_##N) MAP_PS(run32_##N, fv_##N)
#define DEF_F32(OP, N) MAP_PS(run32_##N, f_##N)
#define DEF_F64(OP, N) MAP_PD(run64_##N, d_##N)
F32_VIA_F64_OPS(DEF_VIA32)
F32_OPS(DEF_F32)
F64_OPS(DEF_F64)

emily_vec_fn SIMD_PASTE(emi_unary_, SIMD_ISA)(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    if (src != dst) return NULL;
// clang-format off
#define CASE32(OP, N) case EMILY_##OP: return run32_##N;
#define CASE64(OP, N) case EMILY_##OP: return run64_##N;
    // clang-format on
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
static inline vf canonical_nan(vf x) {
    return VF_SELECT(VF_CMP(x, x, _CMP_UNORD_Q), VF_FROM_BITS(V(set1_epi32)(0x7fc00000)), x);
}

/* NF floats -> NF f16 (round to nearest even, like Nx from the double) */
static void f32_to_f16(void *d_, const void *s_, int64_t n) {
    uint16_t *d = d_;
    const float *s = s_;
    int64_t i = 0;
    for (; i + NF <= n; i += NF) VH_STORE(d + i, VF_TO_PH(canonical_nan(V(loadu_ps)(s + i))));
    if (i < n) {
        uint16_t out[NF];
        VH_STORE(out, VF_TO_PH(canonical_nan(vf_load_part(s + i, n - i))));
        memcpy(d + i, out, (size_t)(n - i) * sizeof *d);
    }
}

/* 16 floats -> 16 bf16 (the top halves) */
static void f32_to_bf16(void *d_, const void *s_, int64_t n) {
    uint16_t *d = d_;
    const float *s = s_;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm256_storeu_si256((__m256i *)(d + i), BF16_OF_16(s + i, canonical_nan));
    if (i < n) {
        float in[16] = {0};
        uint16_t out[16];
        memcpy(in, s + i, (size_t)(n - i) * sizeof *s);
        _mm256_storeu_si256((__m256i *)out, BF16_OF_16(in, canonical_nan));
        memcpy(d + i, out, (size_t)(n - i) * sizeof *d);
    }
}

/* f16 -> f32 is exact (F16C) */
static void f16_to_f32(void *d_, const void *s_, int64_t n) {
    float *d = d_;
    const uint16_t *s = s_;
    int64_t i = 0;
    for (; i + NF <= n; i += NF) V(storeu_ps)(d + i, VF_FROM_PH(VH_LOAD(s + i)));
    if (i < n) {
        uint16_t in[NF] = {0};
        memcpy(in, s + i, (size_t)(n - i) * sizeof *s);
        vf_store_part(d + i, n - i, VF_FROM_PH(VH_LOAD(in)));
    }
}

emily_vec_fn SIMD_PASTE(emi_convert_, SIMD_ISA)(emily_dtype src, emily_dtype dst) {
    if (src == EMILY_F16 && dst == EMILY_F32) return f16_to_f32;
    if (src == EMILY_F32 && dst == EMILY_F16) return f32_to_f16;
    if (src == EMILY_F32 && dst == EMILY_BF16) return f32_to_bf16;
    return NULL;
}
