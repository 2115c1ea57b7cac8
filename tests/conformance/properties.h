/* Decompositions whose factors are not unique (signs of singular and
 * eigen vectors, ...) are checked by what defines them instead of bit
 * patterns: reconstruction, orthogonality, triangularity, ordering. */
#ifndef EMILY_PROPERTIES_H
#define EMILY_PROPERTIES_H

#include <stdbool.h>
#include "emily/emily.h"

/* True when `op` is checked by its properties. */
bool property_checked_op(const char *op);
/* Which properties an op is checked by, for the runner's report. */
const char *property_description(const char *op);
/* Checks the outputs of `op` on `input` (the first tensor argument);
 * returns true if they satisfy the op's defining properties. */
bool property_check(const char *op, const emily_value *args, size_t nargs,
                    const emily_dispatch_result *got, char *msg, size_t msgsize);

#endif
