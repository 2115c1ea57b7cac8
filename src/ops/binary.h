/* What the other element-wise ops (select, clip in src/ops/select.c)
 * take from the binary op layer (binary.c). */
#ifndef EMILY_OPS_BINARY_H
#define EMILY_OPS_BINARY_H

#include "core/engine.h"

/* t converts into `to` without changing any value (a one-element tensor
 * by its value, where the engine's memory is host memory or a mirror of
 * it). */
bool emi_binary_fits(const emily_engine *e, const emily_tensor *t, emily_dtype to);

/* The type emily_binary computes op in, for operands of dtypes at and bt
 * with output type o (Nx's, or the caller's): a and b are the operands
 * themselves, or NULL for one known only by its dtype (it then fits a
 * type by its dtype alone, as a kernel's result does). False where
 * emily_binary does more than convert both operands to *c, run the
 * kernel and convert its result to o (complex atan2, u64 against a
 * signed type). Graph fusion (src/graph/fuse_lower.c) follows it. */
bool emi_binary_compute_type(const emily_engine *e, emily_binary_op op, emily_dtype at, const emily_tensor *a,
                             emily_dtype bt, const emily_tensor *b, emily_dtype o, emily_dtype *c);

/* t broadcast to (rank, shape): a new reference to t itself when its
 * shape is already that (no view to build for same-shape operands). */
emily_status emi_view_as(const emily_tensor *t, int rank, const int64_t *shape, emily_tensor **out);

#endif
