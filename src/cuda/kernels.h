/* CUDA kernels of the engine table, one .cu file per family (see
 * src/core/engine.h for the conventions every kernel follows). Plain C
 * declarations: the engine table (src/cuda/engine.c) is C. */
#ifndef EMILY_CUDA_KERNELS_H
#define EMILY_CUDA_KERNELS_H

#include "cuda/cuda_context.h"
#include "core/device_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kernels and family tables every device has (core/device_kernels.h):
 * emi_cuda_copy ... emi_cuda_all_close, emi_cuda_sdpa (attention.cu),
 * emi_cuda_softmax (fast_softmax.cu), emi_cuda_rope (fast_rope.cu) and
 * the tables emi_cuda_<family>_kernels defined by the family's .cu file. */
EMI_DEVICE_KERNELS_DECLARE(emi_cuda)

/* The families only the CUDA engine has (tables defined by their files). */
extern const struct emily_conv_kernels emi_cuda_conv_kernels;
extern const struct emily_replay_ops emi_cuda_replay_ops; /* replay.c */

#ifdef __cplusplus
}
#endif
#endif
