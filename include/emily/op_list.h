/* The one list of element-wise ops. The public enums (emily/ops.h), the
 * ops' Nx callback names, their type rules, the dispatcher's callback
 * table and every device's kernels for them are generated from these
 * lists, so adding an op means one line here plus its scalar rules
 * (src/core/scalar_unary.h or scalar_binary.h, named after the op: see
 * src/core/unary_kernels.h and binary_kernels.h for the names each rule
 * needs).
 *
 * Each entry is X(ENUM, name, rule):
 *   ENUM  EMILY_##ENUM is the op's enum value,
 *   name  the Nx callback name (a C identifier, stringized where needed),
 *   rule  how Nx types the result and which operand types reach a device
 *         kernel (the EMI_UNARY_RULE_* / EMI_BINARY_RULE_* values of
 *         src/core/op_rules.h, without the prefix; listed below).
 * The order is the enum order, which is stable API. */
#ifndef EMILY_OP_LIST_H
#define EMILY_OP_LIST_H

/* Unary rules (src/ops/unary.c applies them; "kernels" are the operand
 * types a device kernel sees, the op layer answers the others):
 *   FLOATING        to_floating; complex stays complex; integers are
 *                   computed in f64 (exp ... cbrt)
 *   FLOATING_REAL   the same, complex is an error (erf, erfc, erf_inv)
 *   ABS             same type; complex -> its part type; unsigned
 *                   integers are returned as they are
 *   INTEGER         integers only, same type
 *   ROUNDING        same type, integers returned as they are, complex is
 *                   an error
 *   CONJUGATE       to_complex; a real input is computed in its part type
 *   SAME            same type
 *   REAL            to_real: complex -> its part, floats returned as
 *                   they are, integers converted
 *   PHASE           to_real; integers are computed in f64
 *   IMAG            complex -> its part type; anything else gives zeros
 *                   of to_floating
 *   PREDICATE       u8; integers give zeros without a kernel
 *   LOGICAL         u8, a kernel for every type */
/* clang-format off */
#define EMILY_UNARY_OPS(X)                                   \
    X(EXP, exp, FLOATING)                                    \
    X(EXPM1, expm1, FLOATING)                                \
    X(LOG, log, FLOATING)                                    \
    X(LOG1P, log1p, FLOATING)                                \
    X(SIGMOID, sigmoid, FLOATING)                            \
    X(COS, cos, FLOATING)                                    \
    X(SIN, sin, FLOATING)                                    \
    X(TAN, tan, FLOATING)                                    \
    X(COSH, cosh, FLOATING)                                  \
    X(SINH, sinh, FLOATING)                                  \
    X(TANH, tanh, FLOATING)                                  \
    X(ACOS, acos, FLOATING)                                  \
    X(ASIN, asin, FLOATING)                                  \
    X(ATAN, atan, FLOATING)                                  \
    X(ACOSH, acosh, FLOATING)                                \
    X(ASINH, asinh, FLOATING)                                \
    X(ATANH, atanh, FLOATING)                                \
    X(SQRT, sqrt, FLOATING)                                  \
    X(RSQRT, rsqrt, FLOATING)                                \
    X(CBRT, cbrt, FLOATING)                                  \
    X(ERF, erf, FLOATING_REAL)                               \
    X(ERFC, erfc, FLOATING_REAL)                             \
    X(ERF_INV, erf_inv, FLOATING_REAL)                       \
    X(ABS, abs, ABS)                                         \
    X(BITWISE_NOT, bitwise_not, INTEGER)                     \
    X(CEIL, ceil, ROUNDING)                                  \
    X(CONJUGATE, conjugate, CONJUGATE)                       \
    X(FLOOR, floor, ROUNDING)                                \
    X(NEGATE, negate, SAME)                                  \
    X(ROUND, round, ROUNDING)                                \
    X(SIGN, sign, SAME)                                      \
    X(COUNT_LEADING_ZEROS, count_leading_zeros, INTEGER)     \
    X(POPULATION_COUNT, population_count, INTEGER)           \
    X(REAL, real, REAL)                                      \
    X(IMAG, imag, IMAG)                                      \
    X(IS_NAN, is_nan, PREDICATE)                             \
    X(IS_INFINITY, is_infinity, PREDICATE)                   \
    X(LOGICAL_NOT, logical_not, LOGICAL)                     \
    X(PHASE, phase, PHASE)
/* clang-format on */

/* Binary rules (src/ops/binary.c applies them):
 *   ARITH           merged type, any type
 *   REAL            merged type, complex is an error
 *   FLOATING        to_floating(merged)
 *   ATAN2           to_floating(merged); complex through the real parts
 *   INTEGER         merged type, integers only
 *   EQUALITY        u8, any type
 *   ORDER           u8, complex is an error
 *   LOGICAL         u8, any type
 * and the rules of ops whose element function branches (x_SCALAR and
 * ATAN2): the same types, but the CPU runs them one element at a time
 * instead of as a vector loop, and real floats are computed in f64 and
 * rounded once (the f32 computation would not always round the same):
 *   ARITH_SCALAR    as ARITH
 *   REAL_SCALAR     as REAL
 *   INTEGER_SCALAR  as INTEGER */
/* clang-format off */
#define EMILY_BINARY_OPS(X)                                  \
    X(ADD, add, ARITH)                                       \
    X(SUBTRACT, subtract, ARITH)                             \
    X(MULTIPLY, multiply, ARITH)                             \
    X(POW, pow, ARITH_SCALAR)                                \
    X(REMAINDER, remainder, REAL_SCALAR)                     \
    X(DIVIDE, divide, FLOATING)                              \
    X(ATAN2, atan2, ATAN2)                                   \
    X(MIN, min, REAL)                                        \
    X(MAX, max, REAL)                                        \
    X(QUOTIENT, quotient, INTEGER_SCALAR)                    \
    X(BITWISE_AND, bitwise_and, INTEGER)                     \
    X(BITWISE_OR, bitwise_or, INTEGER)                       \
    X(BITWISE_XOR, bitwise_xor, INTEGER)                     \
    X(LEFT_SHIFT, left_shift, INTEGER_SCALAR)                \
    X(RIGHT_SHIFT, right_shift, INTEGER_SCALAR)              \
    X(EQUAL, equal, EQUALITY)                                \
    X(NOT_EQUAL, not_equal, EQUALITY)                        \
    X(GREATER, greater, ORDER)                               \
    X(LESS, less, ORDER)                                     \
    X(GREATER_EQUAL, greater_equal, ORDER)                   \
    X(LESS_EQUAL, less_equal, ORDER)                         \
    X(LOGICAL_AND, logical_and, LOGICAL)                     \
    X(LOGICAL_OR, logical_or, LOGICAL)                       \
    X(LOGICAL_XOR, logical_xor, LOGICAL)
/* clang-format on */

#endif
