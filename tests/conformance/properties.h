/* Decompositions whose factors are not unique (signs of singular and
 * eigen vectors, ...) are checked by what defines them instead of bit
 * patterns: reconstruction, orthogonality, triangularity, ordering, and
 * the parts that are unique compared with the corpus within a stated
 * tolerance (docs/semantics.md, "Checking decompositions"). */
#ifndef EMILY_PROPERTIES_H
#define EMILY_PROPERTIES_H

#include <stdbool.h>
#include <jansson.h>
#include "emily/emily.h"

/* True when `op` is checked by its properties. */
bool property_checked_op(const char *op);
/* Which properties an op is checked by, for the runner's report. */
const char *property_description(const char *op);
/* Checks the outputs of `op` on `input` (the first tensor argument);
 * returns true if they satisfy the op's defining properties. Does not
 * see the corpus: prefer property_check_expected. */
bool property_check(const char *op, const emily_value *args, size_t nargs,
                    const emily_dispatch_result *got, char *msg, size_t msgsize);
/* The same, and the unique parts of the outputs (singular values,
 * eigenvalues, QR factors up to the sign of each column/row) compared
 * with `expected`, the corpus case's "result" (a list of tensors as
 * JSON); NULL skips that comparison. */
bool property_check_expected(const char *op, const emily_value *args, size_t nargs,
                             const emily_dispatch_result *got, const json_t *expected, char *msg,
                             size_t msgsize);

#endif
