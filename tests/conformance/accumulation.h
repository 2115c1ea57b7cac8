/* The accumulation rules: dot and conv at FAST dot precision, and f64 and
 * c128 sums at any precision (accumulation.c explains the bounds). */
#ifndef EMILY_ACCUMULATION_H
#define EMILY_ACCUMULATION_H

#include <stdbool.h>
#include <stddef.h>
#include "emily/emily.h"

/* The callbacks whose results depend on the dot precision. */
bool accumulation_rule_op(const char *op);

/* The callbacks whose f64 and c128 results are sums, held to the
 * reference's own error bound (the corpus README's rule). */
bool f64_sum_rule_op(const char *op);

/* True when every float element of `got` (n elements of out_type) is
 * within the accumulation bound of `want`: with `fast`, the FAST bound
 * plus the reference's; without, the reference's alone. The bound is
 * computed from the call's own operands (args); out_template is the
 * call's (one EMILY_V_TEMPLATE). On failure writes the first element
 * beyond it into msg. */
bool accumulation_close(const char *op, emily_device dev, const emily_value *out_template, const emily_value *args,
                        size_t nargs, emily_dtype out_type, const void *got, const void *want, size_t n, bool fast,
                        char *msg, size_t ms);

#endif
