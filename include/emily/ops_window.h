/* Typed operations: window family (see emily/ops.h for conventions).
 *
 * A window op slides a window of `window[d]` elements over every axis d
 * of a rank-r tensor. The input is first padded with pad_lo[d] elements
 * before and pad_hi[d] after each axis (negative entries crop); window
 * positions start every strides[d] elements of the padded axis, and the
 * window's elements are dilations[d] apart. The output has
 *   (pad_lo + n + pad_hi - ((window - 1) * dilation + 1)) / stride + 1
 * elements along each axis, which must be at least 1.
 *
 * strides and dilations may be NULL (all 1); pad_lo and pad_hi may be
 * NULL (no padding). Every array has `rank` entries (the tensor's rank).
 *
 * Padding is the reduction's identity, as Nx.BinaryBackend pads:
 * 0 for sums, 1 for products, -inf (the smallest integer) for max and
 * +inf (the largest integer) for min. Results keep the input's type;
 * float sums and products are computed in f64 in the window's row-major
 * order and rounded once; integers wrap. Max and min propagate NaN; on
 * equal values (-0.0 and +0.0) the later element of the window wins.
 * Complex tensors are accepted by sum and product only. */
#ifndef EMILY_OPS_WINDOW_H
#define EMILY_OPS_WINDOW_H

#include <stdint.h>
#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_window_op {
    EMILY_WINDOW_SUM = 0,
    EMILY_WINDOW_PRODUCT,
    EMILY_WINDOW_MAX,
    EMILY_WINDOW_MIN
} emily_window_op;

EMILY_API emily_status emily_window_reduce(emily_window_op op, const emily_tensor *t, int rank, const int64_t *window,
                                           const int64_t *strides, const int64_t *pad_lo, const int64_t *pad_hi,
                                           const int64_t *dilations, emily_tensor **out);

/* Nx.window_sum, window_product, window_max and window_min: emily_window_reduce
 * with the op fixed. The four share one signature, declared once as a
 * function type. */
typedef emily_status emily_window_reduce_fn(const emily_tensor *t, int rank, const int64_t *window,
                                            const int64_t *strides, const int64_t *pad_lo, const int64_t *pad_hi,
                                            const int64_t *dilations, emily_tensor **out);
EMILY_API emily_window_reduce_fn emily_window_sum, emily_window_product, emily_window_max, emily_window_min;

/* Nx.window_scatter_max / window_scatter_min (select and scatter).
 *
 * For every window position (no dilation) of t padded with init_value,
 * one element is selected: scanning the window in row-major order from
 * its first element, an element is taken whenever it is >= (max) or
 * <= (min) the one taken so far, so the last of equal values wins and
 * a NaN is taken only as the window's first element. The matching
 * element of `source` (shape: the window positions) is added to the
 * selected position; positions that fall in the padding are dropped.
 * The output has t's shape and the type merge(source, init_value);
 * every position starts at init_value (a rank-0 tensor) and sums what
 * it receives. Complex types are rejected. */
typedef emily_status emily_window_scatter_fn(const emily_tensor *t, const emily_tensor *source,
                                             const emily_tensor *init_value, int rank, const int64_t *window,
                                             const int64_t *strides, const int64_t *pad_lo, const int64_t *pad_hi,
                                             emily_tensor **out);
EMILY_API emily_window_scatter_fn emily_window_scatter_max, emily_window_scatter_min;

#ifdef __cplusplus
}
#endif
#endif
