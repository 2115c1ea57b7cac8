/* CUDA kernels of the engine table, one .cu file per family (see
 * src/core/engine.h for the conventions every kernel follows). Plain C
 * declarations: the engine table (src/cuda/engine.c) is C. */
#ifndef EMILY_CUDA_KERNELS_H
#define EMILY_CUDA_KERNELS_H

#include "cuda/cuda_context.h"

#ifdef __cplusplus
extern "C" {
#endif

emily_status emi_cuda_copy(emily_tensor *dst, const emily_tensor *src);
emily_status emi_cuda_convert(emily_tensor *dst, const emily_tensor *src);
emily_status emi_cuda_convert_narrow(emily_tensor *dst, const emily_tensor *src);
emily_status emi_cuda_fill(emily_tensor *dst, const emily_scalar *value);
emily_status emi_cuda_iota(emily_tensor *dst, int axis);
emily_status emi_cuda_eye(emily_tensor *dst);
emily_status emi_cuda_unary(emily_unary_op op, emily_tensor *dst, const emily_tensor *src);
emily_status emi_cuda_binary(emily_binary_op op, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b);
emily_status emi_cuda_select(emily_tensor *dst, const emily_tensor *pred, const emily_tensor *on_true,
                             const emily_tensor *on_false);
emily_status emi_cuda_reduce(emily_reduce_op op, emily_tensor *dst, const emily_tensor *src, const bool *reduced);
emily_status emi_cuda_argreduce(emily_arg_op op, emily_tensor *dst, const emily_tensor *src, int axis,
                                bool tie_break_high);
emily_status emi_cuda_all_close(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, double rtol,
                                double atol, bool equal_nan);

/* emily_sdpa's kernels (src/cuda/attention.cu), in the fast family's table. */
emily_status emi_cuda_sdpa(emily_tensor *dst, const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                           const emily_sdpa_params *p);

/* Family tables defined by the family's .cu file. */
extern const struct emily_dot_kernels emi_cuda_dot_kernels;
extern const struct emily_window_kernels emi_cuda_window_kernels;
extern const struct emily_index_kernels emi_cuda_index_kernels;
extern const struct emily_sort_kernels emi_cuda_sort_kernels;
extern const struct emily_conv_kernels emi_cuda_conv_kernels;
extern const struct emily_cumulative_kernels emi_cuda_cumulative_kernels;
extern const struct emily_fft_kernels emi_cuda_fft_kernels;
extern const struct emily_linalg_kernels emi_cuda_linalg_kernels;
extern const struct emily_fast_kernels emi_cuda_fast_kernels;
extern const struct emily_quant_kernels emi_cuda_quant_kernels;
extern const struct emily_replay_ops emi_cuda_replay_ops; /* replay.c */
/* The fast family's softmax (fast_softmax.cu; in emi_cuda_fast_kernels). */
emily_status emi_cuda_softmax(emily_tensor *dst, const emily_tensor *x);
/* The fast family's rope (fast_rope.cu; in emi_cuda_fast_kernels). */
emily_status emi_cuda_rope(emily_tensor *dst, const emily_tensor *x, const emily_tensor *positions,
                           const emily_tensor *inv_freq, const emily_rope_params *p);

#ifdef __cplusplus
}
#endif
#endif
