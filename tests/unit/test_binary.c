/* Binary element-wise ops: Nx's output types, integer wrap-around,
 * division/shift/pow edge cases, float and complex special values,
 * mixed types, broadcasting, strided views, errors. */
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"
#include "core/tensor_impl.h"

/* Runs op and checks the raw output bytes against `want`. */
static void check_bytes(emily_binary_op op, emily_tensor *a, emily_tensor *b, emily_dtype out_type,
                        emily_dtype want_type, const void *want, size_t nbytes, int line) {
    emily_tensor *r = NULL;
    emily_status s = emily_binary(op, a, b, out_type, &r);
    if (s) {
        fprintf(stderr, "  FAIL line %d: %s -> %s\n", line, emily_binary_op_name(op), emily_last_error());
        harness_failures++;
    } else if (!t_holds(r, want_type, want, nbytes)) {
        fprintf(stderr, "  FAIL line %d: %s gave %s, unexpected bytes or type\n", line, emily_binary_op_name(op),
                emily_dtype_name(emily_tensor_dtype(r)));
        harness_failures++;
    }
    RELEASE(r, a, b);
}
#define EXPECT(op, a, b, out_type, want_type, ctype, ...) \
    check_bytes(op, a, b, out_type, want_type, (ctype[]){__VA_ARGS__}, sizeof((ctype[]){__VA_ARGS__}), __LINE__)

static uint64_t f64_bits(double d) {
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

TEST(op_names_round_trip) {
    for (int i = 0; i < EMILY_BINARY_OP_COUNT; i++) {
        emily_binary_op op;
        CHECK(emily_binary_op_from_name(emily_binary_op_name((emily_binary_op)i), &op));
        CHECK(op == (emily_binary_op)i);
    }
    emily_binary_op op;
    CHECK(!emily_binary_op_from_name("addd", &op));
    CHECK(!emily_binary_op_from_name(NULL, &op));
    CHECK(strcmp(emily_binary_op_name((emily_binary_op)99), "?") == 0);
}

TEST(output_types_follow_nx) {
    emily_dtype t;
    /* clang-format off */
    CHECK_OK(emily_binary_type(EMILY_ADD, EMILY_U8, EMILY_S8, &t)); CHECK(t == EMILY_S16);
    CHECK_OK(emily_binary_type(EMILY_ADD, EMILY_U64, EMILY_S8, &t)); CHECK(t == EMILY_S64);
    CHECK_OK(emily_binary_type(EMILY_MULTIPLY, EMILY_F64, EMILY_C64, &t)); CHECK(t == EMILY_C128);
    CHECK_OK(emily_binary_type(EMILY_DIVIDE, EMILY_S32, EMILY_S32, &t)); CHECK(t == EMILY_F32);
    CHECK_OK(emily_binary_type(EMILY_DIVIDE, EMILY_S64, EMILY_F64, &t)); CHECK(t == EMILY_F64);
    CHECK_OK(emily_binary_type(EMILY_ATAN2, EMILY_U8, EMILY_U8, &t)); CHECK(t == EMILY_F32);
    CHECK_OK(emily_binary_type(EMILY_POW, EMILY_U8, EMILY_U8, &t)); CHECK(t == EMILY_U8);
    CHECK_OK(emily_binary_type(EMILY_EQUAL, EMILY_C64, EMILY_F32, &t)); CHECK(t == EMILY_U8);
    CHECK_OK(emily_binary_type(EMILY_LOGICAL_XOR, EMILY_C128, EMILY_S8, &t)); CHECK(t == EMILY_U8);
    CHECK_OK(emily_binary_type(EMILY_QUOTIENT, EMILY_U32, EMILY_S32, &t)); CHECK(t == EMILY_S64);
    CHECK_OK(emily_binary_type(EMILY_MAX, EMILY_BF16, EMILY_F16, &t)); CHECK(t == EMILY_F16);
    CHECK_ERR(emily_binary_type(EMILY_QUOTIENT, EMILY_S32, EMILY_F32, &t), EMILY_ERR_TYPE, "quotient");
    CHECK(t == EMILY_DTYPE_AUTO);
    CHECK_ERR(emily_binary_type(EMILY_BITWISE_AND, EMILY_F16, EMILY_F16, &t), EMILY_ERR_TYPE, "integer");
    CHECK_ERR(emily_binary_type(EMILY_LEFT_SHIFT, EMILY_U8, EMILY_C64, &t), EMILY_ERR_TYPE, "left_shift");
    CHECK_ERR(emily_binary_type(EMILY_GREATER, EMILY_C64, EMILY_F32, &t), EMILY_ERR_TYPE, "complex");
    CHECK_ERR(emily_binary_type(EMILY_REMAINDER, EMILY_C128, EMILY_C128, &t), EMILY_ERR_TYPE, "remainder");
    CHECK_ERR(emily_binary_type(EMILY_MIN, EMILY_C64, EMILY_S8, &t), EMILY_ERR_TYPE, "min");
    /* clang-format on */
    /* complex atan2 is typed like divide (its values are checked when it runs) */
    CHECK_OK(emily_binary_type(EMILY_ATAN2, EMILY_C64, EMILY_C64, &t));
    CHECK(t == EMILY_C64);
    CHECK_OK(emily_binary_type(EMILY_ATAN2, EMILY_C64, EMILY_F64, &t));
    CHECK(t == EMILY_C128);
    CHECK_ERR(emily_binary_type(EMILY_ADD, (emily_dtype)77, EMILY_F32, &t), EMILY_ERR_TYPE, "add");
    CHECK_ERR(emily_binary_type((emily_binary_op)99, EMILY_F32, EMILY_F32, &t), EMILY_ERR_ARGUMENT, "unknown");
}

TEST(integer_arithmetic_wraps) {
    EXPECT(EMILY_ADD, VEC(EMILY_S8, int8_t, 127, -128, 5), VEC(EMILY_S8, int8_t, 1, -1, -7), EMILY_DTYPE_AUTO, EMILY_S8,
           int8_t, -128, 127, -2);
    EXPECT(EMILY_ADD, VEC(EMILY_U8, uint8_t, 255, 200), VEC(EMILY_U8, uint8_t, 1, 100), EMILY_DTYPE_AUTO, EMILY_U8,
           uint8_t, 0, 44);
    EXPECT(EMILY_SUBTRACT, VEC(EMILY_U32, uint32_t, 0, 5), VEC(EMILY_U32, uint32_t, 1, 3), EMILY_DTYPE_AUTO, EMILY_U32,
           uint32_t, UINT32_MAX, 2);
    EXPECT(EMILY_SUBTRACT, VEC(EMILY_S64, int64_t, INT64_MIN), VEC(EMILY_S64, int64_t, 1), EMILY_DTYPE_AUTO, EMILY_S64,
           int64_t, INT64_MAX);
    EXPECT(EMILY_MULTIPLY, VEC(EMILY_S32, int32_t, INT32_MAX, -3), VEC(EMILY_S32, int32_t, 2, 4), EMILY_DTYPE_AUTO,
           EMILY_S32, int32_t, -2, -12);
    EXPECT(EMILY_MULTIPLY, VEC(EMILY_U16, uint16_t, 65535), VEC(EMILY_U16, uint16_t, 65535), EMILY_DTYPE_AUTO,
           EMILY_U16, uint16_t, 1);
    EXPECT(EMILY_MULTIPLY, VEC(EMILY_S16, int16_t, -32768), VEC(EMILY_S16, int16_t, -1), EMILY_DTYPE_AUTO, EMILY_S16,
           int16_t, -32768);
    /* a weak scalar: Nx types u8 + 300 as u16 and the template says so */
    EXPECT(EMILY_ADD, VEC(EMILY_U8, uint8_t, 255, 1), SCALAR(EMILY_S32, int32_t, 300), EMILY_U16, EMILY_U16, uint16_t,
           555, 301);
}

TEST(integer_division_and_remainder) {
    EXPECT(EMILY_QUOTIENT, VEC(EMILY_S32, int32_t, -7, 7, -7, 7, INT32_MIN), VEC(EMILY_S32, int32_t, 2, -2, -2, 2, -1),
           EMILY_DTYPE_AUTO, EMILY_S32, int32_t, -3, -3, 3, 3, INT32_MIN);
    EXPECT(EMILY_REMAINDER, VEC(EMILY_S32, int32_t, -7, 7, -7, 7, INT32_MIN), VEC(EMILY_S32, int32_t, 2, -2, -2, 2, -1),
           EMILY_DTYPE_AUTO, EMILY_S32, int32_t, -1, 1, -1, 1, 0);
    EXPECT(EMILY_QUOTIENT, VEC(EMILY_S64, int64_t, INT64_MIN), VEC(EMILY_S64, int64_t, -1), EMILY_DTYPE_AUTO, EMILY_S64,
           int64_t, INT64_MIN);
    EXPECT(EMILY_REMAINDER, VEC(EMILY_S8, int8_t, -128, -128), VEC(EMILY_S8, int8_t, -1, 3), EMILY_DTYPE_AUTO, EMILY_S8,
           int8_t, 0, -2);
    EXPECT(EMILY_QUOTIENT, VEC(EMILY_U8, uint8_t, 200, 7), VEC(EMILY_U8, uint8_t, 1, 2), EMILY_DTYPE_AUTO, EMILY_U8,
           uint8_t, 200, 3);
    EXPECT(EMILY_REMAINDER, VEC(EMILY_U64, uint64_t, UINT64_MAX, 7), VEC(EMILY_U64, uint64_t, 10, 4), EMILY_DTYPE_AUTO,
           EMILY_U64, uint64_t, 5, 3);
    /* a zero divisor: Elixir's div/rem raise ArithmeticError with this
     * text (the caller picks the exception); a zero dividend is fine */
    int32_t a[3] = {9, 0, 4}, b[3] = {3, 5, 0};
    uint8_t bu[2] = {1, 0};
    emily_tensor *ta = t_from(EMILY_S32, 1, (int64_t[]){3}, a), *tb = t_from(EMILY_S32, 1, (int64_t[]){3}, b);
    emily_tensor *tu = t_from(EMILY_U8, 1, (int64_t[]){2}, bu), *r = NULL;
    CHECK_ERR(emily_binary(EMILY_QUOTIENT, ta, tb, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT,
              "bad argument in arithmetic expression");
    CHECK_ERR(emily_binary(EMILY_REMAINDER, ta, tb, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT,
              "bad argument in arithmetic expression");
    CHECK_ERR(emily_binary(EMILY_REMAINDER, tu, tu, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT,
              "bad argument in arithmetic expression");
    CHECK(r == NULL);
    int32_t zero_first[2] = {0, 6}, divisors[2] = {3, 2};
    emily_tensor *tz = t_from(EMILY_S32, 1, (int64_t[]){2}, zero_first),
                 *td = t_from(EMILY_S32, 1, (int64_t[]){2}, divisors);
    CHECK_OK(emily_binary(EMILY_QUOTIENT, tz, td, EMILY_DTYPE_AUTO, &r));
    CHECK(r && t_get(r, 0) == 0 && t_get(r, 1) == 3);
    RELEASE(tz, td, r, ta, tb, tu);
}

TEST(shifts) {
    /* by the width or more: every bit out (Erlang's bsl/bsr on exact
     * integers, written in the type) */
    EXPECT(EMILY_LEFT_SHIFT, VEC(EMILY_S32, int32_t, 1, 1, 1, 3, -1), VEC(EMILY_S32, int32_t, 31, 32, 40, 2, 4),
           EMILY_DTYPE_AUTO, EMILY_S32, int32_t, INT32_MIN, 0, 0, 12, -16);
    EXPECT(EMILY_LEFT_SHIFT, VEC(EMILY_U8, uint8_t, 255, 1), VEC(EMILY_U8, uint8_t, 1, 8), EMILY_DTYPE_AUTO, EMILY_U8,
           uint8_t, 254, 0);
    EXPECT(EMILY_RIGHT_SHIFT, VEC(EMILY_S8, int8_t, -128, -1, 64, 64, -5, 100),
           VEC(EMILY_S8, int8_t, 1, 100, 7, 8, 127, 2), EMILY_DTYPE_AUTO, EMILY_S8, int8_t, -64, -1, 0, 0, -1, 25);
    EXPECT(EMILY_RIGHT_SHIFT, VEC(EMILY_U16, uint16_t, 65535, 65535), VEC(EMILY_U16, uint16_t, 4, 16), EMILY_DTYPE_AUTO,
           EMILY_U16, uint16_t, 4095, 0);
    /* u64 >> a number: Nx types it u64, so the shift is logical */
    EXPECT(EMILY_RIGHT_SHIFT, VEC(EMILY_U64, uint64_t, UINT64_MAX, 8), SCALAR(EMILY_S32, int32_t, 1), EMILY_U64,
           EMILY_U64, uint64_t, UINT64_MAX >> 1, 4);
    /* u64 >> an s8 tensor: merged s64, still the exact (logical) value */
    EXPECT(EMILY_RIGHT_SHIFT, VEC(EMILY_U64, uint64_t, UINT64_MAX, 16), VEC(EMILY_S8, int8_t, 1, 2), EMILY_DTYPE_AUTO,
           EMILY_S64, int64_t, INT64_MAX, 4);
}

TEST(integer_pow) {
    EXPECT(EMILY_POW, VEC(EMILY_S32, int32_t, 3, -2, 2, 0, 7), VEC(EMILY_S32, int32_t, 4, 3, 31, 0, 0),
           EMILY_DTYPE_AUTO, EMILY_S32, int32_t, 81, -8, INT32_MIN, 1, 1);
    EXPECT(EMILY_POW, VEC(EMILY_S8, int8_t, 2, 3), VEC(EMILY_S8, int8_t, 7, 5), EMILY_DTYPE_AUTO, EMILY_S8, int8_t,
           -128, (int8_t)243);
    EXPECT(EMILY_POW, VEC(EMILY_S16, int16_t, 2, 1, -1, -1, 0), VEC(EMILY_S16, int16_t, -1, -5, -3, -2, -1),
           EMILY_DTYPE_AUTO, EMILY_S16, int16_t, 0, 1, -1, 1, 0);
    uint64_t want = 1;
    for (int i = 0; i < 41; i++) want *= 3;
    EXPECT(EMILY_POW, VEC(EMILY_U64, uint64_t, 3), VEC(EMILY_U64, uint64_t, 41), EMILY_DTYPE_AUTO, EMILY_U64, uint64_t,
           want);
}

TEST(bitwise) {
    EXPECT(EMILY_BITWISE_AND, VEC(EMILY_S16, int16_t, -1, 12), VEC(EMILY_S16, int16_t, 0x1234, 10), EMILY_DTYPE_AUTO,
           EMILY_S16, int16_t, 0x1234, 8);
    EXPECT(EMILY_BITWISE_OR, VEC(EMILY_U32, uint32_t, 0xf0f0f0f0u), VEC(EMILY_U32, uint32_t, 0x0f0f0f0fu),
           EMILY_DTYPE_AUTO, EMILY_U32, uint32_t, 0xffffffffu);
    /* u8 xor s8: merged s16, sign-extended operand */
    EXPECT(EMILY_BITWISE_XOR, VEC(EMILY_U8, uint8_t, 255), VEC(EMILY_S8, int8_t, -1), EMILY_DTYPE_AUTO, EMILY_S16,
           int16_t, -256);
}

TEST(float_min_max_nan_and_signed_zero) {
    EXPECT(EMILY_MAX, VEC(EMILY_F64, double, -0.0, 0.0, NAN, 1.0, -INFINITY),
           VEC(EMILY_F64, double, 0.0, -0.0, 1.0, NAN, 3.0), EMILY_DTYPE_AUTO, EMILY_F64, uint64_t, f64_bits(-0.0),
           f64_bits(0.0), f64_bits(NAN), f64_bits(NAN), f64_bits(3.0));
    EXPECT(EMILY_MIN, VEC(EMILY_F64, double, -0.0, 0.0, INFINITY, 2.0),
           VEC(EMILY_F64, double, 0.0, -0.0, 5.0, -INFINITY), EMILY_DTYPE_AUTO, EMILY_F64, uint64_t, f64_bits(-0.0),
           f64_bits(0.0), f64_bits(5.0), f64_bits(-INFINITY));
    emily_tensor *r = NULL;
    emily_tensor *a = VEC(EMILY_F32, float, NAN, 1.0f), *b = VEC(EMILY_F32, float, 2.0f, NAN);
    CHECK_OK(emily_binary(EMILY_MIN, a, b, EMILY_DTYPE_AUTO, &r));
    CHECK(isnan(t_get(r, 0)) && isnan(t_get(r, 1)));
    RELEASE(r, a, b);
}

TEST(float_comparisons_and_logical) {
    emily_tensor *a = VEC(EMILY_F32, float, NAN, 1.0f, -0.0f, INFINITY, 2.0f);
    emily_tensor *b = VEC(EMILY_F32, float, NAN, NAN, 0.0f, INFINITY, 3.0f);
    struct {
        emily_binary_op op;
        uint8_t want[5];
    } cases[] = {
        {EMILY_EQUAL, {0, 0, 1, 1, 0}},         {EMILY_NOT_EQUAL, {1, 1, 0, 0, 1}},
        {EMILY_GREATER, {0, 0, 0, 0, 0}},       {EMILY_LESS, {0, 0, 0, 0, 1}},
        {EMILY_GREATER_EQUAL, {0, 0, 1, 1, 0}}, {EMILY_LESS_EQUAL, {0, 0, 1, 1, 1}},
        {EMILY_LOGICAL_AND, {1, 1, 0, 1, 1}},   {EMILY_LOGICAL_OR, {1, 1, 0, 1, 1}},
        {EMILY_LOGICAL_XOR, {0, 0, 0, 0, 0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        emily_tensor *r = NULL;
        uint8_t got[5] = {9, 9, 9, 9, 9};
        CHECK_OK(emily_binary(cases[k].op, a, b, EMILY_DTYPE_AUTO, &r));
        CHECK(emily_tensor_dtype(r) == EMILY_U8);
        CHECK_OK(emily_to_binary(r, got, 5));
        if (memcmp(got, cases[k].want, 5)) {
            fprintf(stderr, "  FAIL: %s\n", emily_binary_op_name(cases[k].op));
            harness_failures++;
        }
        emily_tensor_release(r);
    }
    emily_tensor_release(a);
    emily_tensor_release(b);
}

TEST(float_pow_atan2_remainder_like_nx) {
    /* Complex.pow: NaN wins over 1^x and x^0; infinite exponents ignore |x| */
    EXPECT(EMILY_POW, VEC(EMILY_F64, double, NAN, 1.0, 0.5, 0.5, 0.0, 0.0, 2.0, INFINITY, -INFINITY),
           VEC(EMILY_F64, double, 0.0, NAN, INFINITY, -INFINITY, -INFINITY, INFINITY, 10.0, -1.0, 3.0),
           EMILY_DTYPE_AUTO, EMILY_F64, uint64_t, f64_bits(NAN), f64_bits(NAN), f64_bits(INFINITY), f64_bits(0.0),
           f64_bits(INFINITY), f64_bits(0.0), f64_bits(1024.0), f64_bits(0.0), f64_bits(-INFINITY));
    EXPECT(EMILY_ATAN2, VEC(EMILY_F64, double, -1.0, 1.0, INFINITY, 0.0),
           VEC(EMILY_F64, double, -INFINITY, -INFINITY, -INFINITY, 1.0), EMILY_DTYPE_AUTO, EMILY_F64, uint64_t,
           f64_bits(M_PI), f64_bits(M_PI), f64_bits(3 * M_PI / 4), f64_bits(0.0));
    /* a finite y against +inf is Complex.atan2's integer 0: +0.0 (IEEE -0.0) */
    EXPECT(EMILY_ATAN2, VEC(EMILY_F64, double, -1.0, -0.0, 2.0, -INFINITY),
           VEC(EMILY_F64, double, INFINITY, INFINITY, INFINITY, INFINITY), EMILY_DTYPE_AUTO, EMILY_F64, uint64_t,
           f64_bits(0.0), f64_bits(0.0), f64_bits(0.0), f64_bits(-M_PI / 4));
    EXPECT(EMILY_REMAINDER, VEC(EMILY_F32, float, -7.5f, 7.5f), VEC(EMILY_F32, float, 2.0f, -2.0f), EMILY_DTYPE_AUTO,
           EMILY_F32, float, -1.5f, 1.5f);
    /* integers divided are floats, computed exactly then rounded once */
    EXPECT(EMILY_DIVIDE, VEC(EMILY_S32, int32_t, 16777217, 1), VEC(EMILY_S32, int32_t, 1, 3), EMILY_DTYPE_AUTO,
           EMILY_F32, float, 16777216.0f, (float)(1.0 / 3.0));
}

/* The message of the last error is exactly `want`. */
static void check_exact_error(emily_binary_op op, emily_tensor *a, emily_tensor *b, emily_dtype out_type,
                              const char *want, int line) {
    emily_tensor *r = NULL;
    emily_status s = emily_binary(op, a, b, out_type, &r);
    if (s != EMILY_ERR_ARGUMENT || strcmp(emily_last_error(), want) != 0 || r) {
        fprintf(stderr, "  FAIL line %d: %s -> %s \"%s\", wanted \"%s\"\n", line, emily_binary_op_name(op),
                emily_status_name(s), s ? emily_last_error() : "", want);
        harness_failures++;
    }
    RELEASE(r, a, b);
}
#define EXPECT_RAISE(op, a, b, out_type, want) check_exact_error(op, a, b, out_type, want, __LINE__)

/* Nx.BinaryBackend raises ArgumentError "cannot left shift by N" for the
 * first negative count it meets (nx_test.exs); Emily fails with that
 * text. A result with no elements meets none. */
TEST(negative_shift_counts_raise) {
    EXPECT_RAISE(EMILY_LEFT_SHIFT, VEC(EMILY_S32, int32_t, 1, 2, 3), VEC(EMILY_S32, int32_t, 1, -1, -3),
                 EMILY_DTYPE_AUTO, "cannot left shift by -1");
    EXPECT_RAISE(EMILY_RIGHT_SHIFT, VEC(EMILY_S64, int64_t, 1, 2), SCALAR(EMILY_S32, int32_t, -1), EMILY_S64,
                 "cannot right shift by -1");
    /* broadcast: the first negative in the result's row-major order */
    int64_t s23[2] = {2, 3}, s21[2] = {2, 1};
    EXPECT_RAISE(EMILY_LEFT_SHIFT, t_from(EMILY_S8, 2, s23, (int8_t[]){1, 2, 3, 4, 5, 6}),
                 VEC(EMILY_S8, int8_t, 0, -7, -2), EMILY_DTYPE_AUTO, "cannot left shift by -7");
    EXPECT_RAISE(EMILY_RIGHT_SHIFT, t_from(EMILY_S16, 2, s23, (int16_t[]){1, 2, 3, 4, 5, 6}),
                 t_from(EMILY_S16, 2, s21, (int16_t[]){2, -9}), EMILY_DTYPE_AUTO, "cannot right shift by -9");
    /* the count's own value, whatever the merged type: u64 >> s8 */
    EXPECT_RAISE(EMILY_RIGHT_SHIFT, VEC(EMILY_U64, uint64_t, 5), VEC(EMILY_S8, int8_t, -128), EMILY_DTYPE_AUTO,
                 "cannot right shift by -128");
    EXPECT_RAISE(EMILY_LEFT_SHIFT, VEC(EMILY_S64, int64_t, 5), VEC(EMILY_S64, int64_t, INT64_MIN), EMILY_DTYPE_AUTO,
                 "cannot left shift by -9223372036854775808");
    /* strided counts: a reversed view [3, -4, 1] */
    emily_tensor *c = VEC(EMILY_S32, int32_t, 1, -4, 3), *rev = NULL, *r = NULL;
    CHECK_OK(emi_tensor_view(c, 1, (int64_t[]){3}, (int64_t[]){-1}, 2, &rev));
    EXPECT_RAISE(EMILY_LEFT_SHIFT, VEC(EMILY_S32, int32_t, 1, 1, 1), rev, EMILY_DTYPE_AUTO, "cannot left shift by -4");
    emily_tensor_release(c);
    /* no element, no error; unsigned counts are never negative */
    emily_tensor *z = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_S32, 2, (int64_t[]){0, 3}, &z));
    emily_tensor *neg = VEC(EMILY_S32, int32_t, -1, -1, -1);
    CHECK_OK(emily_binary(EMILY_LEFT_SHIFT, z, neg, EMILY_DTYPE_AUTO, &r));
    CHECK(r && emily_tensor_size(r) == 0);
    RELEASE(r, z, neg);
    EXPECT(EMILY_LEFT_SHIFT, VEC(EMILY_U8, uint8_t, 1), VEC(EMILY_U8, uint8_t, 255), EMILY_DTYPE_AUTO, EMILY_U8,
           uint8_t, 0);
}

/* Float remainder is Erlang's :math.fmod in the reference: a NaN or
 * infinite operand (an atom there) raises ArgumentError naming the
 * argument(s), a zero divisor raises ArithmeticError; the first element
 * that raises decides the message. Integer remainder by zero raises
 * too (integer_division_and_remainder). */
TEST(float_remainder_raises_like_fmod) {
    const char *both = "errors were found at the given arguments:\n\n  * 1st argument: not a number\n"
                       "  * 2nd argument: not a number\n";
    const char *first = "errors were found at the given arguments:\n\n  * 1st argument: not a number\n";
    const char *second = "errors were found at the given arguments:\n\n  * 2nd argument: not a number\n";
    const char *arith = "bad argument in arithmetic expression";
    /* Nx's non_finite_test: remainder(-inf, inf) */
    EXPECT_RAISE(EMILY_REMAINDER, VEC(EMILY_F32, float, -INFINITY), VEC(EMILY_F32, float, INFINITY), EMILY_DTYPE_AUTO,
                 both);
    EXPECT_RAISE(EMILY_REMAINDER, VEC(EMILY_F64, double, 1.0, NAN), VEC(EMILY_F64, double, 2.0, 0.0), EMILY_DTYPE_AUTO,
                 first);
    EXPECT_RAISE(EMILY_REMAINDER, VEC(EMILY_F64, double, 1.0, 2.0), VEC(EMILY_F64, double, 3.0, INFINITY),
                 EMILY_DTYPE_AUTO, second);
    EXPECT_RAISE(EMILY_REMAINDER, VEC(EMILY_F64, double, 1.0, 2.0), VEC(EMILY_F64, double, -0.0, NAN), EMILY_DTYPE_AUTO,
                 arith);
    /* half types; a number operand (Nx passes 0 as an s32 scalar) */
    EXPECT_RAISE(EMILY_REMAINDER, VEC(EMILY_F16, uint16_t, 0x3c00, 0x7c00), VEC(EMILY_F16, uint16_t, 0x3c00, 0x3c00),
                 EMILY_DTYPE_AUTO, first);
    EXPECT_RAISE(EMILY_REMAINDER, VEC(EMILY_F32, float, 1.5f), SCALAR(EMILY_S32, int32_t, 0), EMILY_F32, arith);
    EXPECT_RAISE(EMILY_REMAINDER, VEC(EMILY_S32, int32_t, 7, 8), VEC(EMILY_F32, float, 2.0f, 0.0f), EMILY_DTYPE_AUTO,
                 arith);
    /* broadcast: the first offending element of the result */
    int64_t s22[2] = {2, 2}, s21[2] = {2, 1};
    EXPECT_RAISE(EMILY_REMAINDER, t_from(EMILY_F32, 2, s22, (float[]){1, 2, 3, 4}),
                 t_from(EMILY_F32, 2, s21, (float[]){5, 0}), EMILY_DTYPE_AUTO, arith);
    EXPECT_RAISE(EMILY_REMAINDER, t_from(EMILY_F32, 2, s22, (float[]){1, 2, INFINITY, 4}), VEC(EMILY_F32, float, 1, 0),
                 EMILY_DTYPE_AUTO, arith);
    EXPECT_RAISE(EMILY_REMAINDER, SCALAR(EMILY_F64, double, NAN), VEC(EMILY_F64, double, 1, 2), EMILY_DTYPE_AUTO,
                 first);
    /* finite values: fmod, signed zeros kept */
    EXPECT(EMILY_REMAINDER, VEC(EMILY_F64, double, -0.0, 5.0, -5.0), VEC(EMILY_F64, double, 1.0, 3.0, 3.0),
           EMILY_DTYPE_AUTO, EMILY_F64, uint64_t, f64_bits(-0.0), f64_bits(2.0), f64_bits(-2.0));
    emily_tensor *z = NULL, *r = NULL, *zero = VEC(EMILY_F32, float, 0, 0, 0);
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, (int64_t[]){0, 3}, &z));
    CHECK_OK(emily_binary(EMILY_REMAINDER, z, zero, EMILY_DTYPE_AUTO, &r));
    CHECK(r && emily_tensor_size(r) == 0);
    RELEASE(r, z, zero);
}

/* Complex.atan2: complex operands whose imaginary parts are all zero
 * give atan2 of the real parts with imaginary part 0 (Nx's complex_test:
 * atan2(7+0i, 2+0i) is 1.2925+0i); any other raises ArithmeticError
 * "Complex.atan2 only accepts real numbers as arguments". */
TEST(complex_atan2_takes_real_parts) {
    EXPECT(EMILY_ATAN2, CVEC(EMILY_C64, float, 7, 0, -1, -0.0f, 1, 0),
           CVEC(EMILY_C64, float, 2, 0, INFINITY, 0, -INFINITY, 0), EMILY_DTYPE_AUTO, EMILY_C64, float,
           (float)atan2(7.0, 2.0), 0.0f, 0.0f, 0.0f, (float)M_PI, 0.0f);
    /* with a real operand (Nx's number 7 is an s32 scalar); c128 */
    EXPECT(EMILY_ATAN2, SCALAR(EMILY_S32, int32_t, 7), CVEC(EMILY_C128, double, 2, 0, NAN, 0), EMILY_C128, EMILY_C128,
           uint64_t, f64_bits(atan2(7.0, 2.0)), f64_bits(0.0), f64_bits(NAN), f64_bits(0.0));
    EXPECT(EMILY_ATAN2, CVEC(EMILY_C64, float, 1, 0), VEC(EMILY_F64, double, 0.0), EMILY_DTYPE_AUTO, EMILY_C128,
           uint64_t, f64_bits(M_PI / 2), f64_bits(0.0));
    const char *msg = "Complex.atan2 only accepts real numbers as arguments";
    EXPECT_RAISE(EMILY_ATAN2, SCALAR(EMILY_S32, int32_t, 7), CVEC(EMILY_C64, float, 1, 2), EMILY_C64, msg);
    EXPECT_RAISE(EMILY_ATAN2, CVEC(EMILY_C64, float, 1, 0, 1, 2), CVEC(EMILY_C64, float, 7, 0, 7, 0), EMILY_DTYPE_AUTO,
                 msg);
    /* a NaN imaginary part is not 0 either (:nan != 0 in Elixir) */
    EXPECT_RAISE(EMILY_ATAN2, CVEC(EMILY_C128, double, 1, NAN), VEC(EMILY_F64, double, 1.0), EMILY_DTYPE_AUTO, msg);
    emily_tensor *z = NULL, *r = NULL, *c = CVEC(EMILY_C64, float, 1, 2);
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_C64, 1, (int64_t[]){0}, &z));
    CHECK_OK(emily_binary(EMILY_ATAN2, z, c, EMILY_DTYPE_AUTO, &r));
    CHECK(r && emily_tensor_size(r) == 0 && emily_tensor_dtype(r) == EMILY_C64);
    RELEASE(r, z, c);
}

TEST(half_precision_rounding) {
    /* f16: 1 + 2^-11 is a tie, rounds to even (1.0); 1 + 3*2^-11 up */
    EXPECT(EMILY_ADD, VEC(EMILY_F16, uint16_t, 0x3c00, 0x3c00), VEC(EMILY_F16, uint16_t, 0x1000, 0x1600),
           EMILY_DTYPE_AUTO, EMILY_F16, uint16_t, 0x3c00, 0x3c02);
    /* bf16: 1 + 3*2^-9 truncates to 1.0 (round to nearest would be 0x3f81) */
    EXPECT(EMILY_ADD, VEC(EMILY_BF16, uint16_t, 0x3f80), VEC(EMILY_BF16, uint16_t, 0x3bc0), EMILY_DTYPE_AUTO,
           EMILY_BF16, uint16_t, 0x3f80);
    /* f16 overflow to inf, and max/min keep the operand bits */
    EXPECT(EMILY_MULTIPLY, VEC(EMILY_F16, uint16_t, 0x7bff), VEC(EMILY_F16, uint16_t, 0x4000), EMILY_DTYPE_AUTO,
           EMILY_F16, uint16_t, 0x7c00);
    EXPECT(EMILY_MAX, VEC(EMILY_BF16, uint16_t, 0x8000, 0x3f80), VEC(EMILY_BF16, uint16_t, 0x0000, 0x7fc0),
           EMILY_DTYPE_AUTO, EMILY_BF16, uint16_t, 0x8000, 0x7fc0);
    /* bf16 and f16 compare exactly (2^-33 is 0 in f16) */
    EXPECT(EMILY_GREATER, VEC(EMILY_BF16, uint16_t, 0x2f00), VEC(EMILY_F16, uint16_t, 0x0000), EMILY_DTYPE_AUTO,
           EMILY_U8, uint8_t, 1);
}

TEST(complex_arithmetic) {
    EXPECT(EMILY_MULTIPLY, CVEC(EMILY_C64, float, 1, 2), CVEC(EMILY_C64, float, 3, 4), EMILY_DTYPE_AUTO, EMILY_C64,
           float, -5, 10);
    EXPECT(EMILY_DIVIDE, CVEC(EMILY_C128, double, 1, 2), CVEC(EMILY_C128, double, 4, 0), EMILY_DTYPE_AUTO, EMILY_C128,
           double, 0.25, 0.5);
    /* a finite value over a real infinity is 0 */
    EXPECT(EMILY_DIVIDE, CVEC(EMILY_C128, double, 3, -2), CVEC(EMILY_C128, double, INFINITY, 0), EMILY_DTYPE_AUTO,
           EMILY_C128, double, 0, 0);
    EXPECT(EMILY_POW, CVEC(EMILY_C128, double, 0, 0, 0, 0, 2, 3), CVEC(EMILY_C128, double, 0, 0, 2, 0, 1, 0),
           EMILY_DTYPE_AUTO, EMILY_C128, double, 1, 0, 0, 0, 2, 3);
    EXPECT(EMILY_POW, CVEC(EMILY_C128, double, INFINITY, 0), CVEC(EMILY_C128, double, 2, 0), EMILY_DTYPE_AUTO,
           EMILY_C128, uint64_t, f64_bits(NAN), f64_bits(NAN));
    emily_tensor *r = NULL, *a = CVEC(EMILY_C64, float, 0, 1), *b = CVEC(EMILY_C64, float, 2, 0);
    CHECK_OK(emily_binary(EMILY_POW, a, b, EMILY_DTYPE_AUTO, &r)); /* i^2 = -1 */
    CHECK(fabs(t_get(r, 0) + 1) < 1e-6 && fabs(t_get_im(r, 0)) < 1e-6);
    RELEASE(r, a, b);
    /* complex against real: c64 and f32 give c64; equality on both parts */
    EXPECT(EMILY_ADD, CVEC(EMILY_C64, float, 1, 2), VEC(EMILY_F32, float, 5), EMILY_DTYPE_AUTO, EMILY_C64, float, 6, 2);
    EXPECT(EMILY_EQUAL, CVEC(EMILY_C64, float, 1, 0, 1, 1, NAN, 0), VEC(EMILY_F32, float, 1, 1, NAN), EMILY_DTYPE_AUTO,
           EMILY_U8, uint8_t, 1, 0, 0);
    EXPECT(EMILY_LOGICAL_OR, CVEC(EMILY_C128, double, 0, 0, 0, -2), CVEC(EMILY_C128, double, 0, 0, 0, 0),
           EMILY_DTYPE_AUTO, EMILY_U8, uint8_t, 0, 1);
}

TEST(mixed_types) {
    EXPECT(EMILY_ADD, VEC(EMILY_U8, uint8_t, 255), VEC(EMILY_S8, int8_t, -128), EMILY_DTYPE_AUTO, EMILY_S16, int16_t,
           127);
    EXPECT(EMILY_ADD, VEC(EMILY_S32, int32_t, 16777217), VEC(EMILY_F32, float, 1.0f), EMILY_DTYPE_AUTO, EMILY_F32,
           float, 16777218.0f);
    EXPECT(EMILY_MULTIPLY, VEC(EMILY_F16, uint16_t, 0x3c00), VEC(EMILY_F64, double, 0.1), EMILY_DTYPE_AUTO, EMILY_F64,
           double, 0.1);
    /* Nx types f16 * 0.1 as f16: computed in f64, rounded once */
    EXPECT(EMILY_MULTIPLY, VEC(EMILY_F16, uint16_t, 0x4200), SCALAR(EMILY_F32, float, 0.1f), EMILY_F16, EMILY_F16,
           uint16_t, 0x34cd);
    /* a number operand whose value f32 holds computes in f32; one it does
     * not (2^24 + 1) computes exactly: 3 * 16777217 rounds to 50331652 */
    EXPECT(EMILY_MULTIPLY, VEC(EMILY_F32, float, 3.0f, 0.5f), SCALAR(EMILY_S32, int32_t, 2), EMILY_F32, EMILY_F32,
           float, 6.0f, 1.0f);
    EXPECT(EMILY_MULTIPLY, VEC(EMILY_F32, float, 3.0f), SCALAR(EMILY_S32, int32_t, 16777217), EMILY_F32, EMILY_F32,
           float, 50331652.0f);
    EXPECT(EMILY_LESS, VEC(EMILY_F32, float, 16777216.0f, -1.0f), SCALAR(EMILY_S32, int32_t, 16777217),
           EMILY_DTYPE_AUTO, EMILY_U8, uint8_t, 1, 1);
    EXPECT(EMILY_GREATER, VEC(EMILY_BF16, uint16_t, 0x3f80, 0xbf80), SCALAR(EMILY_F32, float, 0.0f), EMILY_DTYPE_AUTO,
           EMILY_U8, uint8_t, 1, 0);
    /* s32 against f32 compared exactly (2^24 + 1 > 2^24) */
    EXPECT(EMILY_GREATER, VEC(EMILY_S32, int32_t, 16777217), VEC(EMILY_F32, float, 16777216.0f), EMILY_DTYPE_AUTO,
           EMILY_U8, uint8_t, 1);
}

TEST(u64_against_signed_is_exact) {
    const uint64_t big = (1ull << 63) + 5;
    EXPECT(EMILY_MIN, VEC(EMILY_U64, uint64_t, big, 7, 2), VEC(EMILY_S8, int8_t, 3, -1, 5), EMILY_DTYPE_AUTO, EMILY_S64,
           int64_t, 3, -1, 2);
    EXPECT(EMILY_MAX, VEC(EMILY_S8, int8_t, 3, -1, 5), VEC(EMILY_U64, uint64_t, big, 7, 2), EMILY_DTYPE_AUTO, EMILY_S64,
           int64_t, INT64_MIN + 5, 7, 5);
    EXPECT(EMILY_GREATER, VEC(EMILY_U64, uint64_t, big, 0, 5), VEC(EMILY_S64, int64_t, -1, -1, 5), EMILY_DTYPE_AUTO,
           EMILY_U8, uint8_t, 1, 1, 0);
    EXPECT(EMILY_LESS_EQUAL, VEC(EMILY_S64, int64_t, -1, INT64_MAX, 5), VEC(EMILY_U64, uint64_t, 0, big, 5),
           EMILY_DTYPE_AUTO, EMILY_U8, uint8_t, 1, 1, 1);
    EXPECT(EMILY_EQUAL, VEC(EMILY_U64, uint64_t, UINT64_MAX, 5), VEC(EMILY_S16, int16_t, -1, 5), EMILY_DTYPE_AUTO,
           EMILY_U8, uint8_t, 0, 1);
    EXPECT(EMILY_NOT_EQUAL, VEC(EMILY_S16, int16_t, -1, 5), VEC(EMILY_U64, uint64_t, UINT64_MAX, 5), EMILY_DTYPE_AUTO,
           EMILY_U8, uint8_t, 1, 0);
    EXPECT(EMILY_QUOTIENT, VEC(EMILY_U64, uint64_t, big, 7), VEC(EMILY_S8, int8_t, -1, 2), EMILY_DTYPE_AUTO, EMILY_S64,
           int64_t, (int64_t)(0 - big), 3);
    EXPECT(EMILY_QUOTIENT, VEC(EMILY_S8, int8_t, -7, 7, -7, 7), VEC(EMILY_U64, uint64_t, 2, big, 3, 1),
           EMILY_DTYPE_AUTO, EMILY_S64, int64_t, -3, 0, -2, 7);
    EXPECT(EMILY_REMAINDER, VEC(EMILY_U64, uint64_t, UINT64_MAX, 9), VEC(EMILY_S8, int8_t, -10, 4), EMILY_DTYPE_AUTO,
           EMILY_S64, int64_t, 5, 1);
    EXPECT(EMILY_REMAINDER, VEC(EMILY_S8, int8_t, -7, -7), VEC(EMILY_U64, uint64_t, big, 4), EMILY_DTYPE_AUTO,
           EMILY_S64, int64_t, -7, -3);
}

TEST(broadcasting_and_scalars) {
    int64_t s23[2] = {2, 3};
    emily_tensor *a = t_from(EMILY_S32, 2, s23, (int32_t[]){1, 2, 3, 4, 5, 6});
    emily_tensor *row = VEC(EMILY_S32, int32_t, 10, 20, 30);
    emily_tensor *col = t_from(EMILY_S32, 2, (int64_t[]){2, 1}, (int32_t[]){100, 200});
    emily_tensor *r = NULL;
    CHECK_OK(emily_binary(EMILY_ADD, a, row, EMILY_DTYPE_AUTO, &r));
    CHECK(t_shape_is(r, 2, s23));
    CHECK(t_get(r, 0) == 11 && t_get(r, 5) == 36);
    emily_tensor_release(r);
    CHECK_OK(emily_binary(EMILY_SUBTRACT, col, row, EMILY_DTYPE_AUTO, &r)); /* {2,1} - {3} */
    CHECK(t_shape_is(r, 2, s23));
    CHECK(t_get(r, 0) == 90 && t_get(r, 2) == 70 && t_get(r, 3) == 190);
    emily_tensor_release(r);
    emily_tensor *sc = SCALAR(EMILY_S32, int32_t, 2);
    CHECK_OK(emily_binary(EMILY_MULTIPLY, sc, a, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 5) == 12);
    emily_tensor_release(r);
    CHECK_OK(emily_binary(EMILY_POW, sc, sc, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_rank(r) == 0 && t_get(r, 0) == 4);
    emily_tensor_release(r);
    emily_tensor *two = VEC(EMILY_S32, int32_t, 1, 2);
    CHECK_ERR(emily_binary(EMILY_ADD, a, two, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "cannot broadcast");
    CHECK(r == NULL);
    RELEASE(two, a, row, col, sc);
}

TEST(zero_size_and_rank0) {
    emily_tensor *z = NULL, *r = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, (int64_t[]){0, 3}, &z));
    emily_tensor *row = VEC(EMILY_F32, float, 1, 2, 3);
    CHECK_OK(emily_binary(EMILY_ADD, z, row, EMILY_DTYPE_AUTO, &r));
    CHECK(t_shape_is(r, 2, (int64_t[]){0, 3}) && emily_tensor_size(r) == 0);
    emily_tensor_release(r);
    CHECK_OK(emily_binary(EMILY_LESS, row, z, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_U8 && emily_tensor_size(r) == 0);
    RELEASE(r, z, row);
}

/* Views: reversed (negative strides), transposed, broadcast (zero strides). */
TEST(strided_views) {
    emily_tensor *a = VEC(EMILY_F64, double, 1, 2, 3, 4);
    emily_tensor *rev = NULL, *r = NULL;
    CHECK_OK(emi_tensor_view(a, 1, (int64_t[]){4}, (int64_t[]){-1}, 3, &rev));
    CHECK_OK(emily_binary(EMILY_SUBTRACT, a, rev, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == -3 && t_get(r, 1) == -1 && t_get(r, 2) == 1 && t_get(r, 3) == 3);
    emily_tensor_release(r);
    /* a 2x2 transpose of [[1,2],[3,4]] times itself */
    emily_tensor *tr = NULL;
    CHECK_OK(emi_tensor_view(a, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 0, &tr)); /* [[1,3],[2,4]] */
    emily_tensor *rev2 = NULL;
    CHECK_OK(emi_tensor_view(a, 2, (int64_t[]){2, 2}, (int64_t[]){-2, -1}, 3, &rev2)); /* [[4,3],[2,1]] */
    CHECK_OK(emily_binary(EMILY_MULTIPLY, tr, rev2, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 4 && t_get(r, 1) == 9 && t_get(r, 2) == 4 && t_get(r, 3) == 4);
    RELEASE(r, rev, rev2, tr, a);
}

/* Large enough for the threaded, chunked paths: contiguous, scalar
 * broadcast on either side, transposed, and a broadcast row. */
TEST(large_inputs_match_a_scalar_loop) {
    const int64_t n = 300, m = 701; /* n*m > EMILY_PARALLEL_MIN, m not a multiple of anything */
    float *x = malloc(sizeof(float) * (size_t)(n * m)), *y = malloc(sizeof(float) * (size_t)(n * m));
    float *got = malloc(sizeof(float) * (size_t)(n * m));
    if (!ALLOCATED(x, y, got)) return;
    for (int64_t i = 0; i < n * m; i++) {
        x[i] = (float)(i % 97) - 48.5f;
        y[i] = (float)((i * 7) % 101) * 0.25f;
    }
    emily_tensor *a = t_from(EMILY_F32, 2, (int64_t[]){n, m}, x);
    emily_tensor *b = t_from(EMILY_F32, 2, (int64_t[]){n, m}, y);
    emily_tensor *s = SCALAR(EMILY_F32, float, 1.5f), *r = NULL;
    CHECK_OK(emily_binary(EMILY_ADD, a, b, EMILY_DTYPE_AUTO, &r));
    CHECK_OK(emily_to_binary(r, got, sizeof(float) * (size_t)(n * m)));
    int bad = 0;
    for (int64_t i = 0; i < n * m; i++) bad += got[i] != x[i] + y[i];
    CHECK(bad == 0);
    emily_tensor_release(r);
    CHECK_OK(emily_binary(EMILY_MULTIPLY, s, a, EMILY_DTYPE_AUTO, &r));
    CHECK_OK(emily_to_binary(r, got, sizeof(float) * (size_t)(n * m)));
    bad = 0;
    for (int64_t i = 0; i < n * m; i++) bad += got[i] != 1.5f * x[i];
    CHECK(bad == 0);
    emily_tensor_release(r);
    CHECK_OK(emily_binary(EMILY_DIVIDE, b, s, EMILY_DTYPE_AUTO, &r));
    CHECK_OK(emily_to_binary(r, got, sizeof(float) * (size_t)(n * m)));
    bad = 0;
    for (int64_t i = 0; i < n * m; i++) bad += got[i] != y[i] / 1.5f;
    CHECK(bad == 0);
    emily_tensor_release(r);
    /* a transposed (m, n) view minus a broadcast row of n */
    emily_tensor *at = NULL, *rowv = NULL;
    CHECK_OK(emi_tensor_view(a, 2, (int64_t[]){m, n}, (int64_t[]){1, m}, 0, &at));
    CHECK_OK(emi_tensor_view(b, 1, (int64_t[]){n}, (int64_t[]){1}, 0, &rowv));
    CHECK_OK(emily_binary(EMILY_SUBTRACT, at, rowv, EMILY_DTYPE_AUTO, &r));
    CHECK_OK(emily_to_binary(r, got, sizeof(float) * (size_t)(n * m)));
    bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) bad += got[i * n + j] != x[j * m + i] - y[j];
    CHECK(bad == 0);
    emily_tensor_release(r);
    CHECK_OK(emily_binary(EMILY_GREATER_EQUAL, at, rowv, EMILY_DTYPE_AUTO, &r));
    uint8_t *p = malloc((size_t)(n * m));
    if (p) {
        CHECK_OK(emily_to_binary(r, p, (size_t)(n * m)));
        bad = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) bad += p[i * n + j] != (x[j * m + i] >= y[j]);
        CHECK(bad == 0);
        free(p);
    }
    RELEASE(r, at, rowv, a, b, s);
    free(x);
    free(y);
    free(got);
}

/* Every op on every pair of dtypes, with raw edge bit patterns (zeros,
 * all ones, sign bits, NaN/inf patterns, extremes): succeeds exactly when
 * Nx allows the types, with Nx's output type, and without undefined
 * behaviour (run under UBSan) or leaks. */
TEST(all_ops_all_dtype_pairs) {
    static const uint8_t pat[8] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe, 0x3c, 0x55};
    unsigned char bytes[2][8 * 16];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 8; i++)
            for (int j = 0; j < 16; j++)
                bytes[k][i * 16 + j] = (j == 15 || j == 7 || j == 3 || j == 1) ? pat[(i + k * 3) % 8]
                                                                               : pat[(i * 5 + j + k) % 8];
    int mismatches = 0;
    for (int op = 0; op < EMILY_BINARY_OP_COUNT; op++)
        for (int ta = 0; ta < EMILY_DTYPE_COUNT; ta++)
            for (int tb = 0; tb < EMILY_DTYPE_COUNT; tb++) {
                emily_tensor *a = t_from((emily_dtype)ta, 1, (int64_t[]){8}, bytes[0]);
                emily_tensor *b = t_from((emily_dtype)tb, 2, (int64_t[]){1, 8}, bytes[1]);
                emily_tensor *r = NULL;
                emily_dtype want;
                emily_status st = emily_binary_type((emily_binary_op)op, (emily_dtype)ta, (emily_dtype)tb, &want);
                emily_status sr = emily_binary((emily_binary_op)op, a, b, EMILY_DTYPE_AUTO, &r);
                /* where the reference raises for the values (negative shift
                 * counts, fmod's NaN/inf/zero, complex atan2 with an
                 * imaginary part) the types are fine but the op fails */
                bool raises = op == EMILY_LEFT_SHIFT || op == EMILY_RIGHT_SHIFT || op == EMILY_REMAINDER ||
                              op == EMILY_ATAN2;
                bool value_error = st == EMILY_OK && sr == EMILY_ERR_ARGUMENT && raises;
                if (!value_error &&
                    ((st == EMILY_OK) != (sr == EMILY_OK) ||
                     (sr == EMILY_OK && (emily_tensor_dtype(r) != want || !t_shape_is(r, 2, (int64_t[]){1, 8}))))) {
                    if (mismatches++ < 5)
                        fprintf(stderr, "  %s(%s, %s): %s\n", emily_binary_op_name((emily_binary_op)op),
                                emily_dtype_name((emily_dtype)ta), emily_dtype_name((emily_dtype)tb),
                                sr ? emily_last_error() : "unexpected type or shape");
                }
                RELEASE(r, a, b);
            }
    CHECK(mismatches == 0);
}

TEST(bad_arguments) {
    emily_tensor *a = VEC(EMILY_F32, float, 1, 2), *i = VEC(EMILY_S32, int32_t, 1, 2), *r = NULL;
    CHECK_ERR(emily_binary(EMILY_ADD, NULL, a, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, "left operand is NULL");
    CHECK_ERR(emily_binary(EMILY_ADD, a, NULL, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, "right operand is NULL");
    CHECK_ERR(emily_binary(EMILY_ADD, a, a, EMILY_DTYPE_AUTO, NULL), EMILY_ERR_ARGUMENT, "output pointer");
    CHECK_ERR(emily_binary((emily_binary_op)-1, a, a, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, "unknown op");
    CHECK_ERR(emily_binary(EMILY_BITWISE_OR, a, i, EMILY_DTYPE_AUTO, &r), EMILY_ERR_TYPE, "bitwise_or");
    CHECK_ERR(emily_binary(EMILY_EQUAL, a, a, EMILY_S32, &r), EMILY_ERR_TYPE, "output type s32");
    CHECK_ERR(emily_binary(EMILY_ADD, a, a, EMILY_S32, &r), EMILY_ERR_TYPE, "does not fit");
    CHECK_ERR(emily_binary(EMILY_ADD, i, i, EMILY_C64, &r), EMILY_ERR_TYPE, "does not fit");
    CHECK_ERR(emily_binary(EMILY_ADD, a, a, (emily_dtype)42, &r), EMILY_ERR_TYPE, "invalid output type");
    CHECK(r == NULL);
    emily_tensor_release(a);
    emily_tensor_release(i);
}

/* The kernels follow the rules: every (op, type, type) that
 * emily_binary_type accepts runs, with the type it gives, on operands
 * that raise nowhere (ones; core/binary_kernels.h has a kernel for each
 * compute type the op layer picks), and the others fail with a type
 * error. */
TEST(every_accepted_type_pair_has_a_kernel) {
    int64_t n = 3;
    for (int op = 0; op < EMILY_BINARY_OP_COUNT; op++)
        for (int ta = 0; ta < EMILY_DTYPE_COUNT; ta++)
            for (int tb = 0; tb < EMILY_DTYPE_COUNT; tb++) {
                emily_tensor *a = NULL, *b = NULL, *r = NULL;
                CHECK_OK(emily_constant(EMILY_CPU, (emily_dtype)ta, 1, &n, emily_scalar_int(1), &a));
                CHECK_OK(emily_constant(EMILY_CPU, (emily_dtype)tb, 1, &n, emily_scalar_int(1), &b));
                emily_binary_op o = (emily_binary_op)op;
                emily_dtype want;
                if (a && b && emily_binary_type(o, (emily_dtype)ta, (emily_dtype)tb, &want) == EMILY_OK) {
                    CHECK_OK(emily_binary(o, a, b, EMILY_DTYPE_AUTO, &r));
                    CHECK(!r || emily_tensor_dtype(r) == want);
                } else if (a && b) {
                    CHECK_ERR(emily_binary(o, a, b, EMILY_DTYPE_AUTO, &r), EMILY_ERR_TYPE, emily_binary_op_name(o));
                }
                RELEASE(r, a, b);
            }
}

RUN_TESTS("binary", CASE(op_names_round_trip), CASE(output_types_follow_nx),
          CASE(every_accepted_type_pair_has_a_kernel), CASE(integer_arithmetic_wraps),
          CASE(integer_division_and_remainder), CASE(shifts), CASE(integer_pow), CASE(bitwise),
          CASE(float_min_max_nan_and_signed_zero), CASE(float_comparisons_and_logical),
          CASE(float_pow_atan2_remainder_like_nx), CASE(negative_shift_counts_raise),
          CASE(float_remainder_raises_like_fmod), CASE(complex_atan2_takes_real_parts), CASE(half_precision_rounding),
          CASE(complex_arithmetic), CASE(mixed_types), CASE(u64_against_signed_is_exact),
          CASE(broadcasting_and_scalars), CASE(zero_size_and_rank0), CASE(strided_views),
          CASE(large_inputs_match_a_scalar_loop), CASE(all_ops_all_dtype_pairs), CASE(bad_arguments))
