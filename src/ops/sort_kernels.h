/* The sort family's kernel table, filled by each device's engine.
 *
 * Every kernel works along one axis of `src` (any strides, real dtype:
 * integer or float, never complex). The order is Nx.BinaryBackend's
 * (see emily/ops_sort.h): a stable sort where -0.0 equals +0.0, NaN is
 * above +inf and all NaNs are equal; descending is the reverse order
 * with ties still in their original order. Output tensors are fresh and
 * contiguous. The op layer has checked axis, types and k.
 *
 * This header is valid C11 and C++ (for nvcc). */
#ifndef EMILY_OPS_SORT_KERNELS_H
#define EMILY_OPS_SORT_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct emily_sort_kernels {
    /* dst (src's dtype and shape) <- src sorted along axis; elements
     * keep their exact bits (NaN payloads, the sign of zero). */
    emily_status (*sort)(emily_tensor *dst, const emily_tensor *src, int axis, bool descending);

    /* dst (src's shape, any real dtype) <- the positions along axis of
     * src's elements in sorted order, converted to dst's dtype. */
    emily_status (*argsort)(emily_tensor *dst, const emily_tensor *src, int axis,
                            bool descending);

    /* Along the last axis: values (src's dtype) and indices (any real
     * dtype) get the first k entries of the descending order, with
     * values' exact bits. values and indices have src's shape with the
     * last axis k (1 <= k <= its size). */
    emily_status (*top_k)(emily_tensor *values, emily_tensor *indices, const emily_tensor *src,
                          int64_t k);
};

#ifdef __cplusplus
}
#endif
#endif
