/* Typed operations: sort family (see emily/ops.h for conventions).
 *
 * Order, as Nx.BinaryBackend sorts: ascending puts -inf first, then the
 * numbers, +inf, and NaN last (every NaN is equal to every other); -0.0
 * and +0.0 are equal. Descending is the exact reverse order. Equal
 * elements always keep their original order (in both directions), so
 * every sort is stable and `stable` changes nothing; it is accepted
 * because Nx passes it. Complex tensors cannot be sorted. */
#ifndef EMILY_OPS_SORT_H
#define EMILY_OPS_SORT_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_sort_direction { EMILY_SORT_ASC = 0, EMILY_SORT_DESC = 1 } emily_sort_direction;

/* Nx.sort along `axis` (negative counts from the end; a rank-0 tensor
 * accepts axis 0 or -1 and is returned as it is). */
EMILY_API emily_status emily_sort(const emily_tensor *t, int axis, emily_sort_direction direction, bool stable,
                                  emily_tensor **out);

/* Nx.argsort: the original positions along `axis` in sorted order.
 * out_type: any real type (EMILY_DTYPE_AUTO: s32, Nx's default);
 * positions are written with Nx's conversion rules (wrapping integers). */
EMILY_API emily_status emily_argsort(const emily_tensor *t, int axis, emily_sort_direction direction, bool stable,
                                     emily_dtype out_type, emily_tensor **out);

/* Nx.top_k: the k largest entries of the last axis (1 <= k <= its size)
 * in descending order (ties by position), and their positions in
 * `index_type` (EMILY_DTYPE_AUTO: s32, as Nx 0.13; Nx 0.7 asks s64). */
EMILY_API emily_status emily_top_k(const emily_tensor *t, int64_t k, emily_dtype index_type, emily_tensor **values,
                                   emily_tensor **indices);

#ifdef __cplusplus
}
#endif
#endif
