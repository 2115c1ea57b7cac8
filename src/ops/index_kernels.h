/* The index family's kernel table, filled by each device's engine.
 *
 * The op layer (src/ops/index.c) validates shapes, axes and types and
 * hands the kernels contiguous tensors (row-major, offset anywhere):
 * `src`, `idx` and `updates` are made contiguous when they are views;
 * `dst` is a fresh contiguous tensor. Index tensors have any integer
 * dtype. Index VALUES are data the op layer never reads (they may live
 * on a device): each kernel checks every index it uses against its
 * axis and fails with EMILY_ERR_INDEX (the reference's message: value,
 * axis and shape of its gather, see src/cpu/index.c) before it reads or
 * writes anything out of bounds. A kernel
 * that fails may leave dst partly written; the op layer releases it.
 *
 * This header is valid C11 and C++ (for nvcc). */
#ifndef EMILY_OPS_INDEX_KERNELS_H
#define EMILY_OPS_INDEX_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_indexed_op {
    EMILY_INDEXED_ADD = 0,
    EMILY_INDEXED_PUT = 1
} emily_indexed_op;

struct emily_index_kernels {
    /* src viewed as [outer, n, inner], idx as [m] (flat, any shape),
     * dst as [outer, m, inner], all of src's dtype:
     *   dst[o, j, r] = src[o, idx[j], r]
     * n is src's size on the taken axis, `axis` its number (for
     * messages). */
    emily_status (*take)(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx,
                         int axis, int64_t outer, int64_t n, int64_t inner);

    /* src viewed as [outer, n, inner], idx and dst as [outer, m, inner]:
     *   dst[o, j, r] = src[o, idx[o, j, r], r] */
    emily_status (*take_along_axis)(emily_tensor *dst, const emily_tensor *src,
                                    const emily_tensor *idx, int axis, int64_t outer, int64_t n,
                                    int64_t inner);

    /* idx is [rows, naxes] (flat), axes increasing and distinct; dst is
     * [rows, rest...] where rest are src's axes not in `axes`, in order:
     *   dst[r, p...] = src[axes <- idx[r, :], others <- p...] */
    emily_status (*gather)(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx,
                           int naxes, const int *axes);

    /* dst (dst's dtype, target's shape) already holds target converted
     * to dst's dtype. idx is [n, naxes] (axes increasing), updates is
     * [n, u...] with one size per non-indexed axis of target, in order
     * (each at most that axis' size). For each row j, the block
     * target[axes <- idx[j, :], others <- u...] is updated:
     *   PUT: dst <- updates[j, u...] converted to dst's dtype, in row
     *        order (the last row of a repeated position wins);
     *   ADD: dst <- target + (0 + u_1 + u_2 + ...), the sum of every
     *        update of the position taken in row order; integers wrap in
     *        dst's width, floats and complex numbers are summed in double
     *        precision and rounded once to dst's dtype. target is read in
     *        its own dtype. */
    emily_status (*indexed)(emily_indexed_op op, emily_tensor *dst, const emily_tensor *target,
                            const emily_tensor *idx, const emily_tensor *updates, int naxes,
                            const int *axes);
};

#ifdef __cplusplus
}
#endif
#endif
