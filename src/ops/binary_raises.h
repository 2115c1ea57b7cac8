/* Binary ops whose reference raises for some operand values (see
 * binary_raises.c and docs/semantics.md, "Binary ops"). */
#ifndef EMILY_OPS_BINARY_RAISES_H
#define EMILY_OPS_BINARY_RAISES_H

#include "core/engine.h"

/* Fails with EMILY_ERR_ARGUMENT and the reference's own message when
 * Nx.BinaryBackend raises for op applied to a and b broadcast to (rank,
 * shape) with output type o: a negative shift count, a float remainder
 * with a non-finite operand or a zero divisor, complex atan2 operands
 * with a nonzero imaginary part. Reads back at most a few scalars (any
 * device); does nothing for the other ops or an empty result. */
emily_status emi_binary_check_raises(emily_binary_op op, const emily_tensor *a, const emily_tensor *b, emily_dtype o,
                                     int rank, const int64_t *shape);

#endif
