/* How a result is compared with the corpus (../shared/conformance/README.md,
 * "Comparing"). */
#ifndef EMILY_COMPARE_H
#define EMILY_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include "emily/emily.h"

/* True for ops that only move, select or convert values: their float
 * results must match bit for bit (any NaN matches any NaN, since Nx
 * writes one canonical NaN). */
bool compare_is_exact_op(const char *op);

/* Compares `got` bytes with `want` bytes of n elements of dtype. For
 * exact ops: bitwise. Otherwise integers bitwise and floats within
 * max_ulp(dtype) units in the last place, NaN == NaN. On mismatch writes
 * the first differing element into msg. */
bool compare_data(const char *op, emily_dtype dtype, const void *got, const void *want, size_t n, char *msg,
                  size_t msgsize);

/* The tolerance in ULP for float arithmetic of a dtype. */
int compare_max_ulp(emily_dtype dtype);

#endif
