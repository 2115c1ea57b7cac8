/* Typed operations: index family (see emily/ops.h for conventions).
 *
 * Index tensors may have any integer type. An index outside its axis
 * (negative, or not below the axis' size) fails with EMILY_ERR_INDEX and
 * the message Nx.BinaryBackend raises for it, word for word ("index 3 is
 * out of bounds for axis 0 in shape {2, 2}": the first bad index, the
 * axis and shape of the reference's gather; docs/semantics.md); nothing
 * is read or written out of bounds. Axes may be negative (counted from
 * the end). */
#ifndef EMILY_OPS_INDEX_H
#define EMILY_OPS_INDEX_H

#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nx.take: the slices of `t` along `axis` picked by `indices` (any
 * shape). The output's shape is t's with that axis replaced by indices'
 * shape; its type is t's. */
EMILY_API emily_status emily_take(const emily_tensor *t, const emily_tensor *indices, int axis, emily_tensor **out);

/* Nx.take_along_axis: out[..., j, ...] = t[..., indices[..., j, ...], ...]
 * along `axis`; indices has t's rank and t's sizes on every other axis.
 * The output has indices' shape and t's type. */
EMILY_API emily_status emily_take_along_axis(const emily_tensor *t, const emily_tensor *indices, int axis,
                                             emily_tensor **out);

/* Nx.gather: each row of the last dimension of `indices` (rank >= 1)
 * gives the positions on `axes` (an increasing list of naxes distinct
 * axes, as many as that last dimension; axes NULL: the leading axes);
 * the other axes of t are taken whole. The output's shape is indices'
 * shape without its last dimension, followed by t's non-indexed axes. */
EMILY_API emily_status emily_gather(const emily_tensor *t, const emily_tensor *indices, int naxes, const int *axes,
                                    emily_tensor **out);

/* Nx.indexed_add / Nx.indexed_put. indices is {n, i} (i = naxes, or
 * t's rank when axes is NULL: the leading axes); updates is {n, ...}
 * whose trailing sizes fit t's non-indexed axes (at most their sizes;
 * a smaller update covers the block at the start of those axes), or {n}
 * when every axis is indexed. out_type: EMILY_DTYPE_AUTO for Nx's
 * Nx.Type.merge(target, updates); an explicit type must hold both kinds.
 *
 * indexed_add sums every update of one position like Nx.BinaryBackend:
 * in the order given, starting from 0, then adds the target's value;
 * floats in double precision rounded once to the output type, integers
 * wrapping. indexed_put keeps the last update of a repeated position. */
EMILY_API emily_status emily_indexed_add(const emily_tensor *target, const emily_tensor *indices,
                                         const emily_tensor *updates, int naxes, const int *axes, emily_dtype out_type,
                                         emily_tensor **out);
EMILY_API emily_status emily_indexed_put(const emily_tensor *target, const emily_tensor *indices,
                                         const emily_tensor *updates, int naxes, const int *axes, emily_dtype out_type,
                                         emily_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
