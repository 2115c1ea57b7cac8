/* CPU kernels: every unary op, with Nx's per-element semantics from
 * core/scalar_unary.h. Generated run functions per (op, src, dst) are
 * picked by pick_run; contiguous inputs of the hot ops go to SIMD code
 * (unary_simd.h) when the CPU has it.
 *
 * Floating ops on f16/bf16/f32 compute in double and round once, like
 * the reference; integer inputs arrive widened to f64 with an f32
 * output (see src/ops/unary.c). */
#include <math.h>
#include "core/scalar_convert.h"
#include "core/scalar_unary.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/elementwise_map.h"
#include "cpu/unary_simd.h"

static inline emily_cd cd64(emily_c64 v) { return emily_cd_make((double)v.re, (double)v.im); }
static inline emily_cd cd128(emily_c128 v) { return emily_cd_make(v.re, v.im); }
static inline emily_c64 to_c64(emily_cd z) {
    emily_c64 r = {(float)z.re, (float)z.im};
    return r;
}
static inline emily_c128 to_c128(emily_cd z) {
    emily_c128 r = {z.re, z.im};
    return r;
}

/* ---- floating ops on real inputs ----------------------------------------- */

#define REAL_RUNS(N, F)                                                                \
    EMILY_RUN_FN(N##_f16, uint16_t, uint16_t, emily_sc_f64_to_f16(F(emily_sc_f16_to_f64(v)))) \
    EMILY_RUN_FN(N##_bf16, uint16_t, uint16_t, emily_sc_f64_to_bf16(F(emily_sc_bf16_to_f64(v)))) \
    EMILY_RUN_FN(N##_f32, float, float, (float)F((double)v))                           \
    EMILY_RUN_FN(N##_f64, double, double, F(v))                                        \
    EMILY_RUN_FN(N##_f64f32, double, float, (float)F(v))

#define CPLX_RUNS(N, CF)                                                               \
    EMILY_RUN_FN(N##_c64, emily_c64, emily_c64, to_c64(CF(cd64(v))))                  \
    EMILY_RUN_FN(N##_c128, emily_c128, emily_c128, to_c128(CF(cd128(v))))

/* ops with a real and a complex form */
#define MATH_OPS(X)                                                                    \
    X(exp) X(expm1) X(log) X(log1p) X(sigmoid) X(cos) X(sin) X(tan) X(cosh) X(sinh)    \
    X(tanh) X(acos) X(asin) X(atan) X(acosh) X(asinh) X(atanh) X(sqrt) X(rsqrt) X(cbrt)

#define DEF_MATH(N) REAL_RUNS(N, emily_sc_##N) CPLX_RUNS(N, emily_cd_##N)
MATH_OPS(DEF_MATH)
REAL_RUNS(erf, emily_sc_erf)
REAL_RUNS(erfc, emily_sc_erfc)
REAL_RUNS(erf_inv, emily_sc_erf_inv)
REAL_RUNS(abs, emily_sc_abs)
REAL_RUNS(negate, emily_sc_negate)
REAL_RUNS(ceil, emily_sc_ceil)
REAL_RUNS(floor, emily_sc_floor)
REAL_RUNS(round, emily_sc_round)
REAL_RUNS(sign, emily_sc_sign)
REAL_RUNS(phase, emily_sc_phase)

/* ---- complex-only forms -------------------------------------------------- */

static inline emily_cd cd_negate(emily_cd z) { return emily_cd_neg(z); }
static inline emily_cd cd_sign(emily_cd z) {
    (void)z; /* the reference compares a struct with 0: always "positive" */
    return emily_cd_make(1.0, 0.0);
}
static inline emily_cd cd_conjugate(emily_cd z) { return emily_cd_make(z.re, -z.im); }
CPLX_RUNS(negate, cd_negate)
CPLX_RUNS(sign, cd_sign)
CPLX_RUNS(conjugate, cd_conjugate)

/* conjugate of a real: imaginary part -0.0 for numbers; the reference's
 * NaN/infinity atoms pass through unchanged and are written with +0.0 */
static inline emily_c64 conj_f32(float v) {
    emily_c64 r = {v, isfinite(v) ? -0.0f : 0.0f};
    return r;
}
static inline emily_c128 conj_f64(double v) {
    emily_c128 r = {v, isfinite(v) ? -0.0 : 0.0};
    return r;
}
EMILY_RUN_FN(conjugate_f32c64, float, emily_c64, conj_f32(v))
EMILY_RUN_FN(conjugate_f64c128, double, emily_c128, conj_f64(v))

EMILY_RUN_FN(abs_c64, emily_c64, float, (float)emily_cd_abs(cd64(v)))
EMILY_RUN_FN(abs_c128, emily_c128, double, emily_cd_abs(cd128(v)))
EMILY_RUN_FN(phase_c64, emily_c64, float, (float)emily_cd_phase(cd64(v)))
EMILY_RUN_FN(phase_c128, emily_c128, double, emily_cd_phase(cd128(v)))
EMILY_RUN_FN(real_c64, emily_c64, float, v.re)
EMILY_RUN_FN(real_c128, emily_c128, double, v.re)
EMILY_RUN_FN(imag_c64, emily_c64, float, v.im)
EMILY_RUN_FN(imag_c128, emily_c128, double, v.im)

/* ---- predicates (u8 out) ------------------------------------------------- */

#define PRED_RUNS(N, P)                                                                \
    EMILY_RUN_FN(N##_f16, uint16_t, uint8_t, (uint8_t)P(emily_sc_f16_to_f64(v)))       \
    EMILY_RUN_FN(N##_bf16, uint16_t, uint8_t, (uint8_t)P(emily_sc_bf16_to_f64(v)))     \
    EMILY_RUN_FN(N##_f32, float, uint8_t, (uint8_t)P((double)v))                       \
    EMILY_RUN_FN(N##_f64, double, uint8_t, (uint8_t)P(v))                              \
    EMILY_RUN_FN(N##_c64, emily_c64, uint8_t, (uint8_t)(P((double)v.re) || P((double)v.im))) \
    EMILY_RUN_FN(N##_c128, emily_c128, uint8_t, (uint8_t)(P(v.re) || P(v.im)))

static inline int p_nan(double x) { return x != x; }
static inline int p_inf(double x) { return isinf(x) != 0; }
PRED_RUNS(is_nan, p_nan)
PRED_RUNS(is_infinity, p_inf)

EMILY_RUN_FN(not_u8, uint8_t, uint8_t, (uint8_t)(v == 0))
EMILY_RUN_FN(not_u16, uint16_t, uint8_t, (uint8_t)(v == 0))
EMILY_RUN_FN(not_u32, uint32_t, uint8_t, (uint8_t)(v == 0))
EMILY_RUN_FN(not_u64, uint64_t, uint8_t, (uint8_t)(v == 0))
EMILY_RUN_FN(not_s8, int8_t, uint8_t, (uint8_t)(v == 0))
EMILY_RUN_FN(not_s16, int16_t, uint8_t, (uint8_t)(v == 0))
EMILY_RUN_FN(not_s32, int32_t, uint8_t, (uint8_t)(v == 0))
EMILY_RUN_FN(not_s64, int64_t, uint8_t, (uint8_t)(v == 0))
EMILY_RUN_FN(not_f16, uint16_t, uint8_t, (uint8_t)(emily_sc_f16_to_f32(v) == 0.0f))
EMILY_RUN_FN(not_bf16, uint16_t, uint8_t, (uint8_t)(emily_sc_bf16_to_f32(v) == 0.0f))
EMILY_RUN_FN(not_f32, float, uint8_t, (uint8_t)(v == 0.0f))
EMILY_RUN_FN(not_f64, double, uint8_t, (uint8_t)(v == 0.0))
EMILY_RUN_FN(not_c64, emily_c64, uint8_t, (uint8_t)(v.re == 0.0f && v.im == 0.0f))
EMILY_RUN_FN(not_c128, emily_c128, uint8_t, (uint8_t)(v.re == 0.0 && v.im == 0.0))

/* ---- integer ops (same type in and out, wrapping) ------------------------ */

#define INT_COMMON(SN, T, UT, BITS)                                                    \
    EMILY_RUN_FN(negate_##SN, T, T, (T)((UT)0 - (UT)v))                                \
    EMILY_RUN_FN(bnot_##SN, T, T, (T)~(UT)v)                                           \
    EMILY_RUN_FN(clz_##SN, T, T, (T)emily_sc_clz((uint64_t)(UT)v, BITS))               \
    EMILY_RUN_FN(popcount_##SN, T, T, (T)emily_sc_popcount((uint64_t)(UT)v))
#define SINT(SN, T, UT, BITS)                                                          \
    INT_COMMON(SN, T, UT, BITS)                                                        \
    EMILY_RUN_FN(abs_##SN, T, T, (T)(v < 0 ? (UT)0 - (UT)v : (UT)v))                   \
    EMILY_RUN_FN(sign_##SN, T, T, (T)((v > 0) - (v < 0)))
#define UINT(SN, T, BITS)                                                              \
    INT_COMMON(SN, T, T, BITS)                                                         \
    EMILY_RUN_FN(abs_##SN, T, T, v)                                                    \
    EMILY_RUN_FN(sign_##SN, T, T, (T)(v != 0))

UINT(u8, uint8_t, 8)
UINT(u16, uint16_t, 16)
UINT(u32, uint32_t, 32)
UINT(u64, uint64_t, 64)
SINT(s8, int8_t, uint8_t, 8)
SINT(s16, int16_t, uint16_t, 16)
SINT(s32, int32_t, uint32_t, 32)
SINT(s64, int64_t, uint64_t, 64)

/* ---- selection ----------------------------------------------------------- */

#define PICK_INT(N)                                                                    \
    if (sd == dd) switch (sd) {                                                        \
        case EMILY_U8: return N##_u8;                                                  \
        case EMILY_U16: return N##_u16;                                                \
        case EMILY_U32: return N##_u32;                                                \
        case EMILY_U64: return N##_u64;                                                \
        case EMILY_S8: return N##_s8;                                                  \
        case EMILY_S16: return N##_s16;                                                \
        case EMILY_S32: return N##_s32;                                                \
        case EMILY_S64: return N##_s64;                                                \
        default: break;                                                                \
        }
#define PICK_REAL(N)                                                                   \
    if (sd == dd) switch (sd) {                                                        \
        case EMILY_F16: return N##_f16;                                                \
        case EMILY_BF16: return N##_bf16;                                              \
        case EMILY_F32: return N##_f32;                                                \
        case EMILY_F64: return N##_f64;                                                \
        default: break;                                                                \
        }                                                                              \
    if (sd == EMILY_F64 && dd == EMILY_F32) return N##_f64f32;
#define PICK_CPLX(N)                                                                   \
    if (sd == dd && sd == EMILY_C64) return N##_c64;                                   \
    if (sd == dd && sd == EMILY_C128) return N##_c128;
/* complex in, real part type out */
#define PICK_C2R(N)                                                                    \
    if (sd == EMILY_C64 && dd == EMILY_F32) return N##_c64;                            \
    if (sd == EMILY_C128 && dd == EMILY_F64) return N##_c128;
#define PICK_PRED(N)                                                                   \
    if (dd == EMILY_U8) switch (sd) {                                                  \
        case EMILY_F16: return N##_f16;                                                \
        case EMILY_BF16: return N##_bf16;                                              \
        case EMILY_F32: return N##_f32;                                                \
        case EMILY_F64: return N##_f64;                                                \
        case EMILY_C64: return N##_c64;                                                \
        case EMILY_C128: return N##_c128;                                              \
        default: break;                                                                \
        }

static emily_run_fn pick_run(emily_unary_op op, emily_dtype sd, emily_dtype dd) {
    switch (op) {
    case EMILY_EXP: PICK_REAL(exp) PICK_CPLX(exp) break;
    case EMILY_EXPM1: PICK_REAL(expm1) PICK_CPLX(expm1) break;
    case EMILY_LOG: PICK_REAL(log) PICK_CPLX(log) break;
    case EMILY_LOG1P: PICK_REAL(log1p) PICK_CPLX(log1p) break;
    case EMILY_SIGMOID: PICK_REAL(sigmoid) PICK_CPLX(sigmoid) break;
    case EMILY_COS: PICK_REAL(cos) PICK_CPLX(cos) break;
    case EMILY_SIN: PICK_REAL(sin) PICK_CPLX(sin) break;
    case EMILY_TAN: PICK_REAL(tan) PICK_CPLX(tan) break;
    case EMILY_COSH: PICK_REAL(cosh) PICK_CPLX(cosh) break;
    case EMILY_SINH: PICK_REAL(sinh) PICK_CPLX(sinh) break;
    case EMILY_TANH: PICK_REAL(tanh) PICK_CPLX(tanh) break;
    case EMILY_ACOS: PICK_REAL(acos) PICK_CPLX(acos) break;
    case EMILY_ASIN: PICK_REAL(asin) PICK_CPLX(asin) break;
    case EMILY_ATAN: PICK_REAL(atan) PICK_CPLX(atan) break;
    case EMILY_ACOSH: PICK_REAL(acosh) PICK_CPLX(acosh) break;
    case EMILY_ASINH: PICK_REAL(asinh) PICK_CPLX(asinh) break;
    case EMILY_ATANH: PICK_REAL(atanh) PICK_CPLX(atanh) break;
    case EMILY_SQRT: PICK_REAL(sqrt) PICK_CPLX(sqrt) break;
    case EMILY_RSQRT: PICK_REAL(rsqrt) PICK_CPLX(rsqrt) break;
    case EMILY_CBRT: PICK_REAL(cbrt) PICK_CPLX(cbrt) break;
    case EMILY_ERF: PICK_REAL(erf) break;
    case EMILY_ERFC: PICK_REAL(erfc) break;
    case EMILY_ERF_INV: PICK_REAL(erf_inv) break;
    case EMILY_ABS: PICK_INT(abs) PICK_REAL(abs) PICK_C2R(abs) break;
    case EMILY_NEGATE: PICK_INT(negate) PICK_REAL(negate) PICK_CPLX(negate) break;
    case EMILY_SIGN: PICK_INT(sign) PICK_REAL(sign) PICK_CPLX(sign) break;
    case EMILY_BITWISE_NOT: PICK_INT(bnot) break;
    case EMILY_COUNT_LEADING_ZEROS: PICK_INT(clz) break;
    case EMILY_POPULATION_COUNT: PICK_INT(popcount) break;
    case EMILY_CEIL: PICK_REAL(ceil) break;
    case EMILY_FLOOR: PICK_REAL(floor) break;
    case EMILY_ROUND: PICK_REAL(round) break;
    case EMILY_CONJUGATE:
        PICK_CPLX(conjugate)
        if (sd == EMILY_F32 && dd == EMILY_C64) return conjugate_f32c64;
        if (sd == EMILY_F64 && dd == EMILY_C128) return conjugate_f64c128;
        break;
    case EMILY_REAL: PICK_C2R(real) break;
    case EMILY_IMAG: PICK_C2R(imag) break;
    case EMILY_PHASE: PICK_REAL(phase) PICK_C2R(phase) break;
    case EMILY_IS_NAN: PICK_PRED(is_nan) break;
    case EMILY_IS_INFINITY: PICK_PRED(is_infinity) break;
    case EMILY_LOGICAL_NOT:
        if (dd == EMILY_U8) switch (sd) {
            case EMILY_U8: return not_u8;
            case EMILY_U16: return not_u16;
            case EMILY_U32: return not_u32;
            case EMILY_U64: return not_u64;
            case EMILY_S8: return not_s8;
            case EMILY_S16: return not_s16;
            case EMILY_S32: return not_s32;
            case EMILY_S64: return not_s64;
            case EMILY_F16: return not_f16;
            case EMILY_BF16: return not_bf16;
            case EMILY_F32: return not_f32;
            case EMILY_F64: return not_f64;
            case EMILY_C64: return not_c64;
            case EMILY_C128: return not_c128;
            default: break;
            }
        break;
    default: break;
    }
    return NULL;
}

emily_status emi_cpu_unary(emily_unary_op op, emily_tensor *dst, const emily_tensor *src) {
    if (dst->size == 0) return EMILY_OK;
    if (emily_tensor_is_contiguous(src) && emily_tensor_is_contiguous(dst)) {
        emily_vec_fn vf = emi_unary_simd(op, src->dtype, dst->dtype);
        if (vf) {
            emi_cpu_map_contiguous(dst, src, vf);
            return EMILY_OK;
        }
    }
    emily_run_fn fn = pick_run(op, src->dtype, dst->dtype);
    if (!fn)
        return emily_error(EMILY_ERR_TYPE, "%s: no cpu kernel from %s to %s", emily_unary_op_name(op),
                           emily_dtype_name(src->dtype), emily_dtype_name(dst->dtype));
    return emi_cpu_map(dst, src, fn, NULL);
}
