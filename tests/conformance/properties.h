/* Decompositions whose factors are not unique (signs of singular and
 * eigen vectors, ...) are checked by what defines them instead of bit
 * patterns: reconstruction, orthogonality, triangularity, ordering, and
 * the parts that are unique compared with the corpus within a stated
 * tolerance (docs/semantics.md, "Checking decompositions"); so are the
 * other linear algebra ops on devices that do not run Nx's algorithms. */
#ifndef EMILY_PROPERTIES_H
#define EMILY_PROPERTIES_H

#include <stdbool.h>
#include <jansson.h>
#include "emily/emily.h"

/* True when `op` is checked by its properties (qr, svd, eigh: always). */
bool property_checked_op(const char *op);
/* lu, cholesky, triangular_solve, solve and determinant: unique answers,
 * compared bit for bit where the engine runs Nx's algorithms (the CPU);
 * on a device that computes them otherwise (a GPU, in the input's own
 * precision) the runner checks them by their defining properties
 * (properties_exact.c). */
bool property_exact_op(const char *op);
const char *property_exact_description(const char *op);
bool property_exact_check(const char *op, const emily_value *args, size_t nargs, const emily_dispatch_result *got,
                          const json_t *expected, char *msg, size_t msgsize);
/* Which properties an op is checked by, for the runner's report. */
const char *property_description(const char *op);
/* Checks the outputs of `op` on `input` (the first tensor argument);
 * returns true if they satisfy the op's defining properties. Does not
 * see the corpus: prefer property_check_expected. */
bool property_check(const char *op, const emily_value *args, size_t nargs, const emily_dispatch_result *got, char *msg,
                    size_t msgsize);
/* The same, and the unique parts of the outputs (singular values,
 * eigenvalues, QR factors up to the sign of each column/row) compared
 * with `expected`, the corpus case's "result" (a list of tensors as
 * JSON); NULL skips that comparison. */
bool property_check_expected(const char *op, const emily_value *args, size_t nargs, const emily_dispatch_result *got,
                             const json_t *expected, char *msg, size_t msgsize);

#endif
