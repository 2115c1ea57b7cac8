/* The shapes (and where it is not the caller's to know, the types) of
 * the ops whose result can be much larger than their operands, computed
 * without any work, with the errors the ops give for the same arguments:
 * each op computes its own output shape with the function here, and the
 * Nx callbacks (src/nx/callbacks_*.c) call it first to check Nx's output
 * template before the work (emi_call_check_output). conv's is
 * emi_conv_output_shape (ops/conv.h), dot's emi_dot_output_shape
 * (ops/dot_plan.h). Shapes are written into `shape`, which has room for
 * the number of entries each function names. */
#ifndef EMILY_OPS_OUTPUT_SHAPE_H
#define EMILY_OPS_OUTPUT_SHAPE_H

#include "emily/emily.h"

/* select(pred, on_true, on_false): pred's shape, or the branches'
 * broadcast when pred is a scalar; fails as emily_select does when a
 * branch cannot broadcast to it. Room: the largest rank of the three. */
emily_status emi_select_output_shape(const emily_tensor *pred, const emily_tensor *on_true,
                                     const emily_tensor *on_false, int *rank, int64_t *shape);

/* pad(t, lo, hi, interior) (interior NULL: none): Nx.Shape.pad's size on
 * each axis; fails on a negative interior padding and on a size that
 * overflows or is negative. Room: t's rank. */
emily_status emi_pad_output_shape(const emily_tensor *t, const int64_t *lo, const int64_t *hi, const int64_t *interior,
                                  int64_t *shape);

/* The window positions of window_sum/product/max/min (`op` names the op
 * in messages): checks the configuration like Nx.Shape.pool. NULL
 * strides, padding and dilations are the defaults (1, 0, 1). Room:
 * rank. window_scatter_max/min's source must have this shape; their
 * result has t's. */
emily_status emi_window_output_shape(const char *op, const emily_tensor *t, int rank, const int64_t *window,
                                     const int64_t *strides, const int64_t *pad_lo, const int64_t *pad_hi,
                                     const int64_t *dilations, int64_t *shape);

/* take(t, indices, axis): t's shape with the axis replaced by the
 * indices'. Room: t's rank - 1 + the indices' rank. */
emily_status emi_take_output_shape(const emily_tensor *t, const emily_tensor *indices, int axis, int *rank,
                                   int64_t *shape);

/* gather(t, indices, axes) (axes NULL: the leading ones): the indices'
 * shape but the last, then t's axes not indexed. Room: t's rank + the
 * indices' rank. */
emily_status emi_gather_output_shape(const emily_tensor *t, const emily_tensor *indices, int naxes, const int *axes,
                                     int *rank, int64_t *shape);

/* The one-axis transforms. */
typedef enum emi_fft_kind { EMI_FFT, EMI_IFFT, EMI_RFFT, EMI_IRFFT } emi_fft_kind;

/* emily_fft/ifft/rfft/irfft(t, length, axis)'s type and shape (length 0:
 * the default). Room: t's rank. */
emily_status emi_fft_output_shape(emi_fft_kind kind, const emily_tensor *t, int64_t length, int axis,
                                  emily_dtype *dtype, int64_t *shape);

/* emily_fft2/ifft2 (kind EMI_FFT or EMI_IFFT)'s type and shape. Room:
 * t's rank. */
emily_status emi_fft2_output_shape(emi_fft_kind kind, const emily_tensor *t, const int64_t lengths[2],
                                   const int axes[2], emily_dtype *dtype, int64_t *shape);

/* emily_sdpa(q, k, v)'s shape, {B, Hq, Sq, Dv}, after its checks of the
 * three shapes. */
emily_status emi_sdpa_output_shape(const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                                   int64_t shape[4]);

/* emily_quantized_matmul(x, q, scales, biases, bits, group_size,
 * transpose)'s type and shape (x's, N on the last axis), after its
 * checks of the arguments. Room: x's rank. */
emily_status emi_quantized_matmul_output_shape(const emily_tensor *x, const emily_tensor *q, const emily_tensor *scales,
                                               const emily_tensor *biases, int bits, int64_t group_size, bool transpose,
                                               emily_dtype *dtype, int64_t *shape);

#endif
