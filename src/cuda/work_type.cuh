// The work type of the fused float kernels that compute in float for
// f16/bf16/f32 and in double for f64 (attention.cu's plain kernel,
// fast_norm.cu), and the moves between it and the element storage: one
// definition, so both round f16/bf16 by the same rules (Nx's: f16 from
// the double, bf16 from the float, both exact widenings first).
#ifndef EMILY_CUDA_WORK_TYPE_CUH
#define EMILY_CUDA_WORK_TYPE_CUH

#include <type_traits>
#include "cuda/dtype_dispatch.cuh"
#include "core/scalar_convert.h"

namespace emily_cuda {

template <emily_dtype T> using work_t = typename std::conditional<T == EMILY_F64, double, float>::type;

// One element of T read exactly into the work type.
template <emily_dtype T> __device__ __forceinline__ work_t<T> load_work(storage_t<T> v) {
    if constexpr (T == EMILY_F16) return emily_sc_f16_to_f32(v);
    else if constexpr (T == EMILY_BF16) return emily_sc_bf16_to_f32(v);
    else return v;
}

// A work value rounded to T by Nx's rules and read back.
template <emily_dtype T> __device__ __forceinline__ work_t<T> round_work(work_t<T> v) {
    if constexpr (T == EMILY_F16) return emily_sc_f16_to_f32(emily_sc_f64_to_f16((double)v));
    else if constexpr (T == EMILY_BF16) return emily_sc_bf16_to_f32(emily_sc_f32_to_bf16(v));
    else return v;
}

// A work value written as T by Nx's rules.
template <emily_dtype T> __device__ __forceinline__ storage_t<T> store_work(work_t<T> v) {
    if constexpr (T == EMILY_F16) return emily_sc_f64_to_f16((double)v);
    else if constexpr (T == EMILY_BF16) return emily_sc_f32_to_bf16(v);
    else return v;
}

} // namespace emily_cuda

#endif
