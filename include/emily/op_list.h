/* The one list of element-wise ops. The public enums (emily/ops.h), the
 * ops' Nx callback names, their type rules and the dispatcher's callback
 * table are all generated from these lists, so adding an op means one
 * line here plus its scalar rule (src/core/scalar_unary.h or
 * scalar_binary.h) and its device kernels.
 *
 * Each entry is X(ENUM, name, rule):
 *   ENUM  EMILY_##ENUM is the op's enum value,
 *   name  the Nx callback name (a C identifier, stringized where needed),
 *   rule  how Nx types the result (the EMILY_UNARY_RULE_* / EMILY_BINARY_RULE_*
 *         values below, without the prefix).
 * The order is the enum order, which is stable API. */
#ifndef EMILY_OP_LIST_H
#define EMILY_OP_LIST_H

/* Unary type rules (see src/ops/unary.c):
 *   FLOATING        to_floating; complex stays complex (exp ... cbrt)
 *   FLOATING_REAL   to_floating; complex is an error (erf, erfc, erf_inv)
 *   ABS             same type; complex -> its real type
 *   INTEGER         integers only, same type
 *   ROUNDING        same type, integers unchanged, complex is an error
 *   CONJUGATE       to_complex
 *   SAME            same type
 *   REAL            to_real
 *   IMAG            complex -> its part type, else to_floating
 *   PREDICATE       u8 */
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
    X(LOGICAL_NOT, logical_not, PREDICATE)                   \
    X(PHASE, phase, REAL)

/* Binary type rules (see src/ops/binary.c):
 *   ARITH      merged type, any type
 *   REAL       merged type, complex is an error
 *   FLOATING   to_floating(merged)
 *   ATAN2      to_floating(merged); complex through the real parts
 *   INTEGER    merged type, integers only
 *   EQUALITY   u8, any type
 *   ORDER      u8, complex is an error
 *   LOGICAL    u8, any type */
#define EMILY_BINARY_OPS(X)                                  \
    X(ADD, add, ARITH)                                       \
    X(SUBTRACT, subtract, ARITH)                             \
    X(MULTIPLY, multiply, ARITH)                             \
    X(POW, pow, ARITH)                                       \
    X(REMAINDER, remainder, REAL)                            \
    X(DIVIDE, divide, FLOATING)                              \
    X(ATAN2, atan2, ATAN2)                                   \
    X(MIN, min, REAL)                                        \
    X(MAX, max, REAL)                                        \
    X(QUOTIENT, quotient, INTEGER)                           \
    X(BITWISE_AND, bitwise_and, INTEGER)                     \
    X(BITWISE_OR, bitwise_or, INTEGER)                       \
    X(BITWISE_XOR, bitwise_xor, INTEGER)                     \
    X(LEFT_SHIFT, left_shift, INTEGER)                       \
    X(RIGHT_SHIFT, right_shift, INTEGER)                     \
    X(EQUAL, equal, EQUALITY)                                \
    X(NOT_EQUAL, not_equal, EQUALITY)                        \
    X(GREATER, greater, ORDER)                               \
    X(LESS, less, ORDER)                                     \
    X(GREATER_EQUAL, greater_equal, ORDER)                   \
    X(LESS_EQUAL, less_equal, ORDER)                         \
    X(LOGICAL_AND, logical_and, LOGICAL)                     \
    X(LOGICAL_OR, logical_or, LOGICAL)                       \
    X(LOGICAL_XOR, logical_xor, LOGICAL)

#endif
