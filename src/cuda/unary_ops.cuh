// Shared by the unary kernel files: the run-function type and helpers.
#ifndef EMILY_CUDA_UNARY_OPS_CUH
#define EMILY_CUDA_UNARY_OPS_CUH

#include "cuda/common.cuh"
#include "core/scalar_unary.h"

namespace emily_cuda {

typedef emily_status (*unary_run)(const emily_cuda_ctx &, emily_tensor *, const emily_tensor *);

__device__ __forceinline__ emily_cd cd64(emily_c64 v) { return emily_cd_make((double)v.re, (double)v.im); }
__device__ __forceinline__ emily_cd cd128(emily_c128 v) { return emily_cd_make(v.re, v.im); }
__device__ __forceinline__ emily_c64 to_c64(emily_cd z) {
    emily_c64 r;
    r.re = (float)z.re;
    r.im = (float)z.im;
    return r;
}
__device__ __forceinline__ emily_c128 to_c128(emily_cd z) {
    emily_c128 r;
    r.re = z.re;
    r.im = z.im;
    return r;
}

// The transcendental ops (exp ... cbrt, erf, erfc, erf_inv): unary_math.cu.
unary_run unary_pick_math(emily_unary_op op, emily_dtype sd, emily_dtype dd);

} // namespace emily_cuda

// Floating ops on real inputs: f16/bf16/f32 compute in double and round
// once; f64 -> f32 is an integer input widened by the op layer.
#define EMILY_CUDA_REAL_RUNS(N, F)                                                     \
    EMILY_CUDA_FN1(N##_f16, uint16_t, uint16_t, emily_sc_f64_to_f16(F(emily_sc_f16_to_f64(v)))) \
    EMILY_CUDA_FN1(N##_bf16, uint16_t, uint16_t, emily_sc_f64_to_bf16(F(emily_sc_bf16_to_f64(v)))) \
    EMILY_CUDA_FN1(N##_f32, float, float, (float)F((double)v))                         \
    EMILY_CUDA_FN1(N##_f64, double, double, F(v))                                      \
    EMILY_CUDA_FN1(N##_f64f32, double, float, (float)F(v))

#define EMILY_CUDA_CPLX_RUNS(N, CF)                                                    \
    EMILY_CUDA_FN1(N##_c64, emily_c64, emily_c64, to_c64(CF(cd64(v))))                 \
    EMILY_CUDA_FN1(N##_c128, emily_c128, emily_c128, to_c128(CF(cd128(v))))

#define EMILY_CUDA_PICK_REAL(N)                                                        \
    if (sd == dd) switch (sd) {                                                        \
        case EMILY_F16: return map1<N##_f16>;                                          \
        case EMILY_BF16: return map1<N##_bf16>;                                        \
        case EMILY_F32: return map1<N##_f32>;                                          \
        case EMILY_F64: return map1<N##_f64>;                                          \
        default: break;                                                                \
        }                                                                              \
    if (sd == EMILY_F64 && dd == EMILY_F32) return map1<N##_f64f32>;
#define EMILY_CUDA_PICK_CPLX(N)                                                        \
    if (sd == dd && sd == EMILY_C64) return map1<N##_c64>;                             \
    if (sd == dd && sd == EMILY_C128) return map1<N##_c128>;

#endif
