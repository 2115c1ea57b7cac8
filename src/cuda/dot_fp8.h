/* The dot family's FP8 tensor-core product (src/cuda/dot_fp8.cu,
 * cuBLASLt), the gemm_fp8 entry of the CUDA dot kernel table
 * (src/cuda/dot.cu; contract: src/core/kernels.h). */
#ifndef EMILY_CUDA_DOT_FP8_H
#define EMILY_CUDA_DOT_FP8_H

#include "core/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

emily_status emi_cuda_gemm_fp8(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm, float alpha);

#ifdef __cplusplus
}
#endif
#endif
