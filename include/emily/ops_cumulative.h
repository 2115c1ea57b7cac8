/* Typed operations: cumulative family (see emily/ops.h for conventions).
 *
 * Nx.cumulative_sum / _product / _max / _min along `axis` (negative
 * counts from the end; a rank-0 tensor accepts 0 or -1 and is returned
 * as a copy). `reverse` accumulates from the end of the axis. The output
 * has the input's type and shape.
 *
 * Integers wrap. f32, f64 and c128 sums and products accumulate in f64
 * (parts) along the axis and round each output once; f16, bf16 and c64
 * ones replay Nx.BinaryBackend's associative scan with its rounding to
 * the type after every step (a narrow type's answer depends on it). Max and min
 * propagate NaN; where -0.0 and +0.0 tie, the sign Nx.BinaryBackend's
 * associative scan gives is kept (it applies Nx.max/Nx.min pairwise in a
 * fixed tree order). Max and min reject complex tensors. */
#ifndef EMILY_OPS_CUMULATIVE_H
#define EMILY_OPS_CUMULATIVE_H

#include <stdbool.h>
#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_cumulative_op {
    EMILY_CUMULATIVE_SUM = 0,
    EMILY_CUMULATIVE_PRODUCT,
    EMILY_CUMULATIVE_MAX,
    EMILY_CUMULATIVE_MIN
} emily_cumulative_op;

EMILY_API emily_status emily_cumulative(emily_cumulative_op op, const emily_tensor *t, int axis, bool reverse,
                                        emily_tensor **out);
EMILY_API emily_status emily_cumulative_sum(const emily_tensor *t, int axis, bool reverse, emily_tensor **out);
EMILY_API emily_status emily_cumulative_product(const emily_tensor *t, int axis, bool reverse, emily_tensor **out);
EMILY_API emily_status emily_cumulative_max(const emily_tensor *t, int axis, bool reverse, emily_tensor **out);
EMILY_API emily_status emily_cumulative_min(const emily_tensor *t, int axis, bool reverse, emily_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
