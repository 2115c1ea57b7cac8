/* CPU kernels, one file per family (see src/core/engine.h for the
 * conventions every kernel follows). */
#ifndef EMILY_CPU_KERNELS_H
#define EMILY_CPU_KERNELS_H

#include "core/engine.h"

emily_status emi_cpu_copy(emily_tensor *dst, const emily_tensor *src);
emily_status emi_cpu_convert(emily_tensor *dst, const emily_tensor *src);
emily_status emi_cpu_convert_narrow(emily_tensor *dst, const emily_tensor *src);
emily_status emi_cpu_fill(emily_tensor *dst, const emily_scalar *value);
emily_status emi_cpu_iota(emily_tensor *dst, int axis);
emily_status emi_cpu_eye(emily_tensor *dst);
emily_status emi_cpu_unary(emily_unary_op op, emily_tensor *dst, const emily_tensor *src);
emily_status emi_cpu_binary(emily_binary_op op, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b);
emily_status emi_cpu_select(emily_tensor *dst, const emily_tensor *pred, const emily_tensor *on_true,
                            const emily_tensor *on_false);
emily_status emi_cpu_reduce(emily_reduce_op op, emily_tensor *dst, const emily_tensor *src, const bool *reduced);
emily_status emi_cpu_argreduce(emily_arg_op op, emily_tensor *dst, const emily_tensor *src, int axis,
                               bool tie_break_high);
emily_status emi_cpu_all_close(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, double rtol,
                               double atol, bool equal_nan);

/* OpenBLAS on one thread from now on (once per process): the engine's
 * pool runs the products in parallel (src/cpu/dot.c says why). Every
 * kernel that calls BLAS calls it first. */
void emi_cpu_blas_one_thread(void);

/* emily_sdpa's kernel (src/cpu/sdpa.c), in the fast family's table. */
emily_status emi_cpu_sdpa(emily_tensor *dst, const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                          const emily_sdpa_params *p);

/* Family tables defined by the family's file (the engine table takes
 * their addresses, constants its initializer can use). */
extern const struct emily_dot_kernels emi_cpu_dot_kernels;
extern const struct emily_window_kernels emi_cpu_window_kernels;
extern const struct emily_index_kernels emi_cpu_index_kernels;
extern const struct emily_sort_kernels emi_cpu_sort_kernels;
extern const struct emily_cumulative_kernels emi_cpu_cumulative_kernels;
extern const struct emily_fft_kernels emi_cpu_fft_kernels;
extern const struct emily_linalg_kernels emi_cpu_linalg_kernels;
extern const struct emily_fast_kernels emi_cpu_fast_kernels;
/* The fast family's softmax (src/cpu/fast_softmax.c; in the table above). */
emily_status emi_cpu_softmax(emily_tensor *dst, const emily_tensor *x);
/* The fast family's rope (src/cpu/fast_rope.c; in the table above). */
emily_status emi_cpu_rope(emily_tensor *dst, const emily_tensor *x, const emily_tensor *positions,
                          const emily_tensor *inv_freq, const emily_rope_params *p);
extern const struct emily_quant_kernels emi_cpu_quant_kernels;

#endif
