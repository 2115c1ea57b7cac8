/* The window family's kernel table, filled by each device's engine.
 *
 * The op layer (src/ops/window.c) has checked ranks, window sizes,
 * strides, dilations and padding, and computed the output shape. All
 * parameter arrays have the input's rank. Inputs may have any strides;
 * outputs are fresh contiguous tensors with at least one element.
 *
 * This header is valid C11 and C++ (for nvcc). */
#ifndef EMILY_OPS_WINDOW_KERNELS_H
#define EMILY_OPS_WINDOW_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct emily_window_kernels {
    /* dst (src's dtype) <- the reduction of every window of src padded
     * by pad_lo before each axis (the op's identity as padding; negative
     * entries crop). Window position i of axis d starts at padded index
     * i * strides[d]; its elements are dilations[d] apart. See
     * emily/ops_window.h for the arithmetic. */
    emily_status (*reduce)(emily_window_op op, emily_tensor *dst, const emily_tensor *src,
                           const int64_t *window, const int64_t *strides,
                           const int64_t *dilations, const int64_t *pad_lo);

    /* dst (src's shape, the output type) <- select and scatter: for each
     * window position (source's shape, no dilation) of src padded with
     * init (rank 0, any real dtype), the selected element (see
     * emily/ops_window.h) receives source's value; dst starts at init. */
    emily_status (*scatter)(bool is_max, emily_tensor *dst, const emily_tensor *src,
                            const emily_tensor *source, const emily_tensor *init,
                            const int64_t *window, const int64_t *strides,
                            const int64_t *pad_lo);
};

#ifdef __cplusplus
}
#endif
#endif
