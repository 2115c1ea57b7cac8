/* The shared half of emily_dot and emily_dot_fp8 (src/ops/dot.c): axis
 * validation and the rank-3 views every dot runs on
 * (src/core/kernels.h, "dot"). Messages start with `op`. */
#ifndef EMILY_OPS_DOT_PLAN_H
#define EMILY_OPS_DOT_PLAN_H

#include "core/engine.h"

/* The counts and axis lists agree, and both tensors are on one device
 * (*e: its engine). Types are the caller's to check. */
emily_status emi_dot_check(const char *op, const emily_tensor *a, int ncontract_a, const int *contract_a, int nbatch_a,
                           const int *batch_a, const emily_tensor *b, int ncontract_b, const int *contract_b,
                           int nbatch_b, const int *batch_b, const emily_engine **e);

/* The axes themselves: in range, none twice, paired sizes equal (what
 * emi_dot_views_make checks first), for a caller that may not make the
 * views. */
emily_status emi_dot_check_axes(const char *op, const emily_tensor *a, int ncontract, const int *contract_a, int nbatch,
                                const int *batch_a, const emily_tensor *b, const int *contract_b, const int *batch_b);

/* emi_dot_check's checks of the counts and lists, emi_dot_check_axes's
 * of the axes, then the output's shape (a's batch dims, a's free dims,
 * b's free dims; room for a's rank + b's rank entries): emily_dot's
 * shape without the work (the dot callback checks it against Nx's
 * template first). */
emily_status emi_dot_output_shape(const char *op, const emily_tensor *a, int ncontract_a, const int *contract_a,
                                  int nbatch_a, const int *batch_a, const emily_tensor *b, int ncontract_b,
                                  const int *contract_b, int nbatch_b, const int *batch_b, int *rank, int64_t *shape);

/* res: the fresh output (dtype dt, Nx's shape) on the inputs' device;
 * unless it is empty, a3 [B, M, K] and b3 [B, K, N] (views, or copies
 * where no BLAS-readable view exists) and d3, res seen as [B, M, N].
 * On failure nothing is left to release. */
typedef struct emi_dot_views {
    emily_tensor *res, *a3, *b3, *d3;
} emi_dot_views;

emily_status emi_dot_views_make(const char *op, const emily_tensor *a, int ncontract, const int *contract_a, int nbatch,
                                const int *batch_a, const emily_tensor *b, const int *contract_b, const int *batch_b,
                                emily_dtype dt, emi_dot_views *v);
/* Releases a3, b3 and d3 (res stays the caller's). */
void emi_dot_views_release(emi_dot_views *v);

#endif
