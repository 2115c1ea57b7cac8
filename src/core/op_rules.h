/* The rules of the element-wise ops (the third column of
 * emily/op_list.h) as values: the op layer types an op by its rule
 * (src/ops/unary.c, binary.c), and devices build an op's kernels from
 * it (core/unary_kernels.h, core/binary_kernels.h). op_list.h describes
 * each rule. Valid C11 and CUDA C++. */
#ifndef EMILY_CORE_OP_RULES_H
#define EMILY_CORE_OP_RULES_H

#include <stdbool.h>
#include "emily/ops.h"

/* clang-format off */
#define EMI_UNARY_RULES(X)                                                             \
    X(FLOATING) X(FLOATING_REAL) X(ABS) X(INTEGER) X(ROUNDING) X(CONJUGATE) X(SAME)    \
    X(REAL) X(PHASE) X(IMAG) X(PREDICATE) X(LOGICAL)
#define EMI_BINARY_RULES(X)                                                            \
    X(ARITH) X(ARITH_SCALAR) X(REAL) X(REAL_SCALAR) X(FLOATING) X(ATAN2) X(INTEGER)    \
    X(INTEGER_SCALAR) X(EQUALITY) X(ORDER) X(LOGICAL)
/* clang-format on */

#define EMI_UNARY_RULE_ENUM_(R) EMI_UNARY_RULE_##R,
#define EMI_BINARY_RULE_ENUM_(R) EMI_BINARY_RULE_##R,
typedef enum emi_unary_rule { EMI_UNARY_RULES(EMI_UNARY_RULE_ENUM_) } emi_unary_rule;
typedef enum emi_binary_rule { EMI_BINARY_RULES(EMI_BINARY_RULE_ENUM_) } emi_binary_rule;
#undef EMI_UNARY_RULE_ENUM_
#undef EMI_BINARY_RULE_ENUM_

/* emi_unary_rule_of(op), emi_binary_rule_of(op): the rule of a valid op. */
// clang-format off
#define EMI_UNARY_RULE_CASE_(ENUM, name, rule) \
    case EMILY_##ENUM: return EMI_UNARY_RULE_##rule;
#define EMI_BINARY_RULE_CASE_(ENUM, name, rule) \
    case EMILY_##ENUM: return EMI_BINARY_RULE_##rule;
#define EMI_RULE_OF_(kind, KIND)                                                       \
    static inline emi_##kind##_rule emi_##kind##_rule_of(emily_##kind##_op op) {       \
        switch (op) {                                                                  \
            EMILY_##KIND##_OPS(EMI_##KIND##_RULE_CASE_)                                \
        default: return (emi_##kind##_rule)0;                                          \
        }                                                                              \
    }
// clang-format on
EMI_RULE_OF_(unary, UNARY)
EMI_RULE_OF_(binary, BINARY)
#undef EMI_RULE_OF_
#undef EMI_UNARY_RULE_CASE_
#undef EMI_BINARY_RULE_CASE_

/* Comparisons and logical ops: a u8 result whatever the operands. */
static inline bool emi_binary_rule_is_predicate(emi_binary_rule r) {
    return r == EMI_BINARY_RULE_EQUALITY || r == EMI_BINARY_RULE_ORDER || r == EMI_BINARY_RULE_LOGICAL;
}

#endif
