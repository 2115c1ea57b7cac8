// Unary ops on CUDA: the non-transcendental ones here (abs, negate, sign,
// rounding, complex parts, predicates, integer bit ops), the rest in
// unary_math.cu. The same per-element rules and the same choice of
// (op, input dtype, output dtype) as src/cpu/unary.c.
#include "cuda/unary_ops.cuh"

using namespace emily_cuda;

namespace {

EMILY_CUDA_REAL_RUNS(abs, emily_sc_abs)
EMILY_CUDA_REAL_RUNS(negate, emily_sc_negate)
EMILY_CUDA_REAL_RUNS(ceil, emily_sc_ceil)
EMILY_CUDA_REAL_RUNS(floor, emily_sc_floor)
EMILY_CUDA_REAL_RUNS(round, emily_sc_round)
EMILY_CUDA_REAL_RUNS(sign, emily_sc_sign)
EMILY_CUDA_REAL_RUNS(phase, emily_sc_phase)

__device__ __forceinline__ emily_cd cd_negate(emily_cd z) { return emily_cd_neg(z); }
__device__ __forceinline__ emily_cd cd_sign(emily_cd z) {
    (void)z; // the reference compares a struct with 0: always "positive"
    return emily_cd_make(1.0, 0.0);
}
__device__ __forceinline__ emily_cd cd_conjugate(emily_cd z) { return emily_cd_make(z.re, -z.im); }
EMILY_CUDA_CPLX_RUNS(negate, cd_negate)
EMILY_CUDA_CPLX_RUNS(sign, cd_sign)
EMILY_CUDA_CPLX_RUNS(conjugate, cd_conjugate)

// conjugate of a real: imaginary part -0.0 for numbers, +0.0 for NaN/inf
__device__ __forceinline__ emily_c64 conj_f32(float v) {
    emily_c64 r;
    r.re = v;
    r.im = isfinite(v) ? -0.0f : 0.0f;
    return r;
}
__device__ __forceinline__ emily_c128 conj_f64(double v) {
    emily_c128 r;
    r.re = v;
    r.im = isfinite(v) ? -0.0 : 0.0;
    return r;
}
EMILY_CUDA_FN1(conjugate_f32c64, float, emily_c64, conj_f32(v))
EMILY_CUDA_FN1(conjugate_f64c128, double, emily_c128, conj_f64(v))

EMILY_CUDA_FN1(abs_c64, emily_c64, float, (float)emily_cd_abs(cd64(v)))
EMILY_CUDA_FN1(abs_c128, emily_c128, double, emily_cd_abs(cd128(v)))
EMILY_CUDA_FN1(phase_c64, emily_c64, float, (float)emily_cd_phase(cd64(v)))
EMILY_CUDA_FN1(phase_c128, emily_c128, double, emily_cd_phase(cd128(v)))
EMILY_CUDA_FN1(real_c64, emily_c64, float, v.re)
EMILY_CUDA_FN1(real_c128, emily_c128, double, v.re)
EMILY_CUDA_FN1(imag_c64, emily_c64, float, v.im)
EMILY_CUDA_FN1(imag_c128, emily_c128, double, v.im)

// predicates (u8 out)
__device__ __forceinline__ int p_nan(double x) { return x != x; }
__device__ __forceinline__ int p_inf(double x) { return isinf(x) != 0; }
#define PRED_RUNS(N, P)                                                                \
    EMILY_CUDA_FN1(N##_f16, uint16_t, uint8_t, (uint8_t)P(emily_sc_f16_to_f64(v)))     \
    EMILY_CUDA_FN1(N##_bf16, uint16_t, uint8_t, (uint8_t)P(emily_sc_bf16_to_f64(v)))   \
    EMILY_CUDA_FN1(N##_f32, float, uint8_t, (uint8_t)P((double)v))                     \
    EMILY_CUDA_FN1(N##_f64, double, uint8_t, (uint8_t)P(v))                            \
    EMILY_CUDA_FN1(N##_c64, emily_c64, uint8_t, (uint8_t)(P((double)v.re) || P((double)v.im))) \
    EMILY_CUDA_FN1(N##_c128, emily_c128, uint8_t, (uint8_t)(P(v.re) || P(v.im)))
PRED_RUNS(is_nan, p_nan)
PRED_RUNS(is_infinity, p_inf)

EMILY_CUDA_FN1(not_u8, uint8_t, uint8_t, (uint8_t)(v == 0))
EMILY_CUDA_FN1(not_u16, uint16_t, uint8_t, (uint8_t)(v == 0))
EMILY_CUDA_FN1(not_u32, uint32_t, uint8_t, (uint8_t)(v == 0))
EMILY_CUDA_FN1(not_u64, uint64_t, uint8_t, (uint8_t)(v == 0))
EMILY_CUDA_FN1(not_s8, int8_t, uint8_t, (uint8_t)(v == 0))
EMILY_CUDA_FN1(not_s16, int16_t, uint8_t, (uint8_t)(v == 0))
EMILY_CUDA_FN1(not_s32, int32_t, uint8_t, (uint8_t)(v == 0))
EMILY_CUDA_FN1(not_s64, int64_t, uint8_t, (uint8_t)(v == 0))
EMILY_CUDA_FN1(not_f16, uint16_t, uint8_t, (uint8_t)(emily_sc_f16_to_f32(v) == 0.0f))
EMILY_CUDA_FN1(not_bf16, uint16_t, uint8_t, (uint8_t)(emily_sc_bf16_to_f32(v) == 0.0f))
EMILY_CUDA_FN1(not_f32, float, uint8_t, (uint8_t)(v == 0.0f))
EMILY_CUDA_FN1(not_f64, double, uint8_t, (uint8_t)(v == 0.0))
EMILY_CUDA_FN1(not_c64, emily_c64, uint8_t, (uint8_t)(v.re == 0.0f && v.im == 0.0f))
EMILY_CUDA_FN1(not_c128, emily_c128, uint8_t, (uint8_t)(v.re == 0.0 && v.im == 0.0))

// integer ops (same type in and out, wrapping)
#define INT_COMMON(SN, T, UT, BITS)                                                    \
    EMILY_CUDA_FN1(negate_##SN, T, T, (T)((UT)0 - (UT)v))                              \
    EMILY_CUDA_FN1(bnot_##SN, T, T, (T)~(UT)v)                                         \
    EMILY_CUDA_FN1(clz_##SN, T, T, (T)emily_sc_clz((uint64_t)(UT)v, BITS))             \
    EMILY_CUDA_FN1(popcount_##SN, T, T, (T)emily_sc_popcount((uint64_t)(UT)v))
#define SINT(SN, T, UT, BITS)                                                          \
    INT_COMMON(SN, T, UT, BITS)                                                        \
    EMILY_CUDA_FN1(abs_##SN, T, T, (T)(v < 0 ? (UT)0 - (UT)v : (UT)v))                 \
    EMILY_CUDA_FN1(sign_##SN, T, T, (T)((v > 0) - (v < 0)))
#define UINT(SN, T, BITS)                                                              \
    INT_COMMON(SN, T, T, BITS)                                                         \
    EMILY_CUDA_FN1(abs_##SN, T, T, v)                                                  \
    EMILY_CUDA_FN1(sign_##SN, T, T, (T)(v != 0))

UINT(u8, uint8_t, 8)
UINT(u16, uint16_t, 16)
UINT(u32, uint32_t, 32)
UINT(u64, uint64_t, 64)
SINT(s8, int8_t, uint8_t, 8)
SINT(s16, int16_t, uint16_t, 16)
SINT(s32, int32_t, uint32_t, 32)
SINT(s64, int64_t, uint64_t, 64)

#define PICK_INT(N)                                                                    \
    if (sd == dd) switch (sd) {                                                        \
        case EMILY_U8: return map1<N##_u8>;                                            \
        case EMILY_U16: return map1<N##_u16>;                                          \
        case EMILY_U32: return map1<N##_u32>;                                          \
        case EMILY_U64: return map1<N##_u64>;                                          \
        case EMILY_S8: return map1<N##_s8>;                                            \
        case EMILY_S16: return map1<N##_s16>;                                          \
        case EMILY_S32: return map1<N##_s32>;                                          \
        case EMILY_S64: return map1<N##_s64>;                                          \
        default: break;                                                                \
        }
#define PICK_C2R(N)                                                                    \
    if (sd == EMILY_C64 && dd == EMILY_F32) return map1<N##_c64>;                      \
    if (sd == EMILY_C128 && dd == EMILY_F64) return map1<N##_c128>;
#define PICK_PRED(N)                                                                   \
    if (dd == EMILY_U8) switch (sd) {                                                  \
        case EMILY_F16: return map1<N##_f16>;                                          \
        case EMILY_BF16: return map1<N##_bf16>;                                        \
        case EMILY_F32: return map1<N##_f32>;                                          \
        case EMILY_F64: return map1<N##_f64>;                                          \
        case EMILY_C64: return map1<N##_c64>;                                          \
        case EMILY_C128: return map1<N##_c128>;                                        \
        default: break;                                                                \
        }

unary_run pick_run(emily_unary_op op, emily_dtype sd, emily_dtype dd) {
    switch (op) {
    case EMILY_ABS: PICK_INT(abs) EMILY_CUDA_PICK_REAL(abs) PICK_C2R(abs) break;
    case EMILY_NEGATE: PICK_INT(negate) EMILY_CUDA_PICK_REAL(negate) EMILY_CUDA_PICK_CPLX(negate) break;
    case EMILY_SIGN: PICK_INT(sign) EMILY_CUDA_PICK_REAL(sign) EMILY_CUDA_PICK_CPLX(sign) break;
    case EMILY_BITWISE_NOT: PICK_INT(bnot) break;
    case EMILY_COUNT_LEADING_ZEROS: PICK_INT(clz) break;
    case EMILY_POPULATION_COUNT: PICK_INT(popcount) break;
    case EMILY_CEIL: EMILY_CUDA_PICK_REAL(ceil) break;
    case EMILY_FLOOR: EMILY_CUDA_PICK_REAL(floor) break;
    case EMILY_ROUND: EMILY_CUDA_PICK_REAL(round) break;
    case EMILY_CONJUGATE:
        EMILY_CUDA_PICK_CPLX(conjugate)
        if (sd == EMILY_F32 && dd == EMILY_C64) return map1<conjugate_f32c64>;
        if (sd == EMILY_F64 && dd == EMILY_C128) return map1<conjugate_f64c128>;
        break;
    case EMILY_REAL: PICK_C2R(real) break;
    case EMILY_IMAG: PICK_C2R(imag) break;
    case EMILY_PHASE: EMILY_CUDA_PICK_REAL(phase) PICK_C2R(phase) break;
    case EMILY_IS_NAN: PICK_PRED(is_nan) break;
    case EMILY_IS_INFINITY: PICK_PRED(is_infinity) break;
    case EMILY_LOGICAL_NOT:
        if (dd == EMILY_U8) switch (sd) {
            case EMILY_U8: return map1<not_u8>;
            case EMILY_U16: return map1<not_u16>;
            case EMILY_U32: return map1<not_u32>;
            case EMILY_U64: return map1<not_u64>;
            case EMILY_S8: return map1<not_s8>;
            case EMILY_S16: return map1<not_s16>;
            case EMILY_S32: return map1<not_s32>;
            case EMILY_S64: return map1<not_s64>;
            case EMILY_F16: return map1<not_f16>;
            case EMILY_BF16: return map1<not_bf16>;
            case EMILY_F32: return map1<not_f32>;
            case EMILY_F64: return map1<not_f64>;
            case EMILY_C64: return map1<not_c64>;
            case EMILY_C128: return map1<not_c128>;
            default: break;
            }
        break;
    default: return unary_pick_math(op, sd, dd);
    }
    return NULL;
}

} // namespace

extern "C" emily_status emi_cuda_unary(emily_unary_op op, emily_tensor *dst, const emily_tensor *src) {
    if ((unsigned)op >= EMILY_UNARY_OP_COUNT)
        return emily_error(EMILY_ERR_INTERNAL, "unary kernel: bad op %d", (int)op);
    unary_run fn = pick_run(op, src->dtype, dst->dtype);
    if (!fn)
        return emily_error(EMILY_ERR_TYPE, "%s: no cuda kernel from %s to %s", emily_unary_op_name(op),
                           emily_dtype_name(src->dtype), emily_dtype_name(dst->dtype));
    if (dst->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[2] = {dst, src};
    emily_status s = emi_cuda_begin(emily_unary_op_name(op), dev_of(dst), 2, ts, &ctx);
    return s ? s : fn(ctx, dst, src);
}
