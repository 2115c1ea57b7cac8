/* The cumulative family's kernel table, filled by each device's engine.
 *
 * The op layer (src/ops/cumulative.c) has checked the axis and types;
 * src is contiguous and viewed as [outer, n, inner] around the scanned
 * axis (n >= 1); dst is fresh, contiguous, with src's dtype and shape.
 *
 * This header is valid C11 and C++ (for nvcc). */
#ifndef EMILY_OPS_CUMULATIVE_KERNELS_H
#define EMILY_OPS_CUMULATIVE_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct emily_cumulative_kernels {
    emily_status (*scan)(emily_cumulative_op op, emily_tensor *dst, const emily_tensor *src,
                         int64_t outer, int64_t n, int64_t inner, bool reverse);
};

#ifdef __cplusplus
}
#endif
#endif
