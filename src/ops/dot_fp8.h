/* emily_dot_fp8's engine room (src/ops/dot_fp8.c), for the dispatcher's
 * dot of two 8-bit float tensors (src/nx/dot_fp8.c) and for the tests. */
#ifndef EMILY_OPS_DOT_FP8_H
#define EMILY_OPS_DOT_FP8_H

#include <stdbool.h>
#include "emily/ops.h"

/* emily_dot_fp8, on the device's FP8 kernel where `tensor_cores` and the
 * device has one that takes the product, else widened (both operands
 * converted to f32, emily_dot at the thread's precision). */
emily_status emi_dot_fp8_run(const emily_tensor *a, int ncontract_a, const int *contract_a, int nbatch_a,
                             const int *batch_a, float a_scale, const emily_tensor *b, int ncontract_b,
                             const int *contract_b, int nbatch_b, const int *batch_b, float b_scale,
                             emily_dtype out_type, bool tensor_cores, emily_tensor **out);

/* How many FP8 dots this process ran on a device's FP8 kernel and how
 * many widened (either may be NULL): the tests see which path ran. */
void emi_dot_fp8_counts(long long *tensor_cores, long long *widened);

#endif
