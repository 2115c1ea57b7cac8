/* What the other element-wise ops (select, clip in src/ops/select.c)
 * take from the binary op layer (binary.c). */
#ifndef EMILY_OPS_BINARY_H
#define EMILY_OPS_BINARY_H

#include "core/engine.h"

/* t converts into `to` without changing any value (a one-element tensor
 * by its value, where the engine's memory is host memory). */
bool emi_binary_fits(const emily_engine *e, const emily_tensor *t, emily_dtype to);

/* t broadcast to (rank, shape): a new reference to t itself when its
 * shape is already that (no view to build for same-shape operands). */
emily_status emi_view_as(const emily_tensor *t, int rank, const int64_t *shape, emily_tensor **out);

#endif
