/* Unary ops: Nx's output types, per-element semantics (including the
 * reference's quirks), integer wrapping, complex numbers, half types,
 * strided inputs, the SIMD paths against a double reference, errors and
 * the Nx callbacks. */
#include <float.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/scalar_unary.h"
#include "core/tensor_impl.h"
#include "cpu/parallel.h"
#include "cpu/unary_simd.h"
#include "harness.h"

static emily_tensor *un(emily_unary_op op, const emily_tensor *t) {
    emily_tensor *r = NULL;
    CHECK_OK(emily_unary(op, t, &r));
    return r;
}

/* op applied to one f64 value, read back as double */
static double f64_op(emily_unary_op op, double x) {
    emily_tensor *t = t_from(EMILY_F64, 0, NULL, &x);
    emily_tensor *r = un(op, t);
    double v = r ? t_get(r, 0) : NAN;
    emily_tensor_release(r);
    emily_tensor_release(t);
    return v;
}

static bool same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

TEST(names_round_trip) {
    for (int i = 0; i < EMILY_UNARY_OP_COUNT; i++) {
        emily_unary_op op;
        CHECK(emily_unary_op_from_name(emily_unary_op_name((emily_unary_op)i), &op) && op == (emily_unary_op)i);
    }
    CHECK(strcmp(emily_unary_op_name(EMILY_COUNT_LEADING_ZEROS), "count_leading_zeros") == 0);
    CHECK(strcmp(emily_unary_op_name((emily_unary_op)99), "?") == 0);
    emily_unary_op op;
    CHECK(!emily_unary_op_from_name("add", &op));
    CHECK(!emily_unary_op_from_name(NULL, &op));
}

TEST(output_types_follow_nx) {
    /* clang-format off */
    struct { emily_unary_op op; emily_dtype in, out; } cases[] = {
        {EMILY_EXP, EMILY_S32, EMILY_F32},     {EMILY_EXP, EMILY_U64, EMILY_F32},
        {EMILY_EXP, EMILY_BF16, EMILY_BF16},   {EMILY_SQRT, EMILY_C128, EMILY_C128},
        {EMILY_ERF_INV, EMILY_S8, EMILY_F32},  {EMILY_ABS, EMILY_C64, EMILY_F32},
        {EMILY_ABS, EMILY_S16, EMILY_S16},     {EMILY_ABS, EMILY_U8, EMILY_U8},
        {EMILY_CONJUGATE, EMILY_F64, EMILY_C128}, {EMILY_CONJUGATE, EMILY_F16, EMILY_C64},
        {EMILY_CONJUGATE, EMILY_S64, EMILY_C64}, {EMILY_REAL, EMILY_C128, EMILY_F64},
        {EMILY_REAL, EMILY_U8, EMILY_F32},     {EMILY_REAL, EMILY_BF16, EMILY_BF16},
        {EMILY_IMAG, EMILY_S32, EMILY_F32},    {EMILY_IMAG, EMILY_F16, EMILY_F16},
        {EMILY_PHASE, EMILY_C64, EMILY_F32},   {EMILY_PHASE, EMILY_S8, EMILY_F32},
        {EMILY_IS_NAN, EMILY_C64, EMILY_U8},   {EMILY_LOGICAL_NOT, EMILY_F64, EMILY_U8},
        {EMILY_NEGATE, EMILY_U32, EMILY_U32},  {EMILY_SIGN, EMILY_C64, EMILY_C64},
        {EMILY_CEIL, EMILY_S32, EMILY_S32},    {EMILY_POPULATION_COUNT, EMILY_U16, EMILY_U16},
    };
    /* clang-format on */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        emily_dtype out;
        CHECK_OK(emily_unary_type(cases[i].op, cases[i].in, &out));
        if (out != cases[i].out)
            fprintf(stderr, "  %s(%s) gave %s\n", emily_unary_op_name(cases[i].op), emily_dtype_name(cases[i].in),
                    emily_dtype_name(out));
        CHECK(out == cases[i].out);
    }
    emily_dtype out;
    CHECK_ERR(emily_unary_type(EMILY_BITWISE_NOT, EMILY_F32, &out), EMILY_ERR_TYPE,
              "bitwise_not: expects an integer type, got f32");
    CHECK(out == EMILY_DTYPE_AUTO);
    CHECK_ERR(emily_unary_type(EMILY_COUNT_LEADING_ZEROS, EMILY_C64, &out), EMILY_ERR_TYPE, "integer");
    CHECK_ERR(emily_unary_type(EMILY_ERF, EMILY_C64, &out), EMILY_ERR_TYPE, "erf: complex type c64 is not supported");
    CHECK_ERR(emily_unary_type(EMILY_ROUND, EMILY_C128, &out), EMILY_ERR_TYPE, "round: complex");
    CHECK_ERR(emily_unary_type((emily_unary_op)-1, EMILY_F32, &out), EMILY_ERR_ARGUMENT, "unknown op");
    CHECK_ERR(emily_unary_type(EMILY_EXP, (emily_dtype)30, &out), EMILY_ERR_TYPE, "exp: invalid input type");
}

TEST(real_functions_and_reference_quirks) {
    CHECK(f64_op(EMILY_EXP, 1.0) == exp(1.0));
    CHECK(f64_op(EMILY_EXP, -INFINITY) == 0.0);
    /* expm1 and log1p are exp(x) - 1 and log(x + 1) in the reference */
    CHECK(f64_op(EMILY_EXPM1, 1e-10) == exp(1e-10) - 1.0);
    CHECK(f64_op(EMILY_EXPM1, -INFINITY) == -1.0);
    CHECK(f64_op(EMILY_LOG1P, 1e-12) == log(1e-12 + 1.0));
    CHECK(f64_op(EMILY_LOG, 0.0) == -INFINITY && f64_op(EMILY_LOG, -0.0) == -INFINITY);
    CHECK(isnan(f64_op(EMILY_LOG, -1.0)));
    CHECK(f64_op(EMILY_SIGMOID, 0.0) == 0.5 && f64_op(EMILY_SIGMOID, -INFINITY) == 0.0);
    CHECK(f64_op(EMILY_SIGMOID, INFINITY) == 1.0);
    CHECK(isnan(f64_op(EMILY_TANH, INFINITY)) && isnan(f64_op(EMILY_TANH, -INFINITY)));
    CHECK(f64_op(EMILY_TANH, 0.5) == tanh(0.5));
    CHECK(isnan(f64_op(EMILY_SIN, INFINITY)) && isnan(f64_op(EMILY_TAN, -INFINITY)));
    CHECK(f64_op(EMILY_ATAN, INFINITY) == M_PI / 2);
    CHECK(f64_op(EMILY_COSH, -INFINITY) == INFINITY && f64_op(EMILY_SINH, -INFINITY) == -INFINITY);
    CHECK(f64_op(EMILY_RSQRT, 4.0) == 0.5 && f64_op(EMILY_RSQRT, INFINITY) == 0.0);
    CHECK(f64_op(EMILY_CBRT, -8.0) == -2.0 && f64_op(EMILY_CBRT, 27.0) == pow(27.0, 1.0 / 3.0));
    CHECK(same_bits(f64_op(EMILY_CBRT, -0.0), 0.0));
    CHECK(f64_op(EMILY_ERF, INFINITY) == 1.0 && f64_op(EMILY_ERFC, -INFINITY) == 2.0);
    CHECK(fabs(f64_op(EMILY_ERF_INV, 0.5) - 0.4769362762044699) < 1e-6);
    CHECK(fabs(f64_op(EMILY_ERF_INV, -0.999) + 2.326753765513524) < 1e-5);
    CHECK(f64_op(EMILY_ERF_INV, 1.0) == INFINITY && f64_op(EMILY_ERF_INV, -1.0) == -INFINITY);
    CHECK(same_bits(f64_op(EMILY_ERF_INV, -0.0), 0.0));
    CHECK(isnan(f64_op(EMILY_ERF_INV, 1.5)) && isnan(f64_op(EMILY_ERF_INV, NAN)));
    /* sign: NaN and both infinities are 1; -0.0 stays */
    CHECK(f64_op(EMILY_SIGN, NAN) == 1.0 && f64_op(EMILY_SIGN, -INFINITY) == 1.0);
    CHECK(f64_op(EMILY_SIGN, -3.0) == -1.0 && same_bits(f64_op(EMILY_SIGN, -0.0), -0.0));
    /* round half away from zero, never -0.0; ceil keeps -0.0 */
    CHECK(f64_op(EMILY_ROUND, 2.5) == 3.0 && f64_op(EMILY_ROUND, -2.5) == -3.0);
    CHECK(same_bits(f64_op(EMILY_ROUND, -0.4), 0.0) && same_bits(f64_op(EMILY_ROUND, -0.0), 0.0));
    CHECK(same_bits(f64_op(EMILY_CEIL, -0.5), -0.0) && f64_op(EMILY_FLOOR, -0.5) == -1.0);
    /* abs is Erlang's (only x < 0 is negated): -0.0 stays -0.0 */
    CHECK(same_bits(f64_op(EMILY_NEGATE, 0.0), -0.0) && same_bits(f64_op(EMILY_ABS, -0.0), -0.0));
    CHECK(f64_op(EMILY_PHASE, -2.0) == M_PI && same_bits(f64_op(EMILY_PHASE, 3.0), 0.0));
    CHECK(f64_op(EMILY_PHASE, -0.0) == M_PI && isnan(f64_op(EMILY_PHASE, NAN)));
    CHECK(f64_op(EMILY_IS_NAN, NAN) == 1 && f64_op(EMILY_IS_NAN, INFINITY) == 0);
    CHECK(f64_op(EMILY_IS_INFINITY, -INFINITY) == 1 && f64_op(EMILY_IS_INFINITY, NAN) == 0);
    CHECK(f64_op(EMILY_LOGICAL_NOT, -0.0) == 1 && f64_op(EMILY_LOGICAL_NOT, NAN) == 0);
}

TEST(integers_wrap) {
    int8_t s[5] = {-128, -1, 0, 1, 127};
    int64_t five[1] = {5};
    emily_tensor *t = t_from(EMILY_S8, 1, five, s);
    emily_tensor *a = un(EMILY_ABS, t), *n = un(EMILY_NEGATE, t), *g = un(EMILY_SIGN, t);
    emily_tensor *b = un(EMILY_BITWISE_NOT, t), *c = un(EMILY_COUNT_LEADING_ZEROS, t);
    emily_tensor *p = un(EMILY_POPULATION_COUNT, t), *e = un(EMILY_EXP, t), *l = un(EMILY_LOGICAL_NOT, t);
    double wa[5] = {-128, 1, 0, 1, 127}, wn[5] = {-128, 1, 0, -1, -127}, wg[5] = {-1, -1, 0, 1, 1};
    double wb[5] = {127, 0, -1, -2, -128}, wc[5] = {0, 0, 8, 7, 1}, wp[5] = {1, 8, 0, 1, 7};
    for (int i = 0; i < 5; i++) {
        CHECK(t_get(a, i) == wa[i] && t_get(n, i) == wn[i] && t_get(g, i) == wg[i]);
        CHECK(t_get(b, i) == wb[i] && t_get(c, i) == wc[i] && t_get(p, i) == wp[i]);
        CHECK(t_get(e, i) == (double)(float)exp(s[i]));
        CHECK(t_get(l, i) == (s[i] == 0));
    }
    CHECK(emily_tensor_dtype(e) == EMILY_F32 && emily_tensor_dtype(l) == EMILY_U8);
    emily_tensor *ts[8] = {a, n, g, b, c, p, e, l};
    for (int i = 0; i < 8; i++) emily_tensor_release(ts[i]);
    emily_tensor_release(t);
    uint16_t u[3] = {0, 5, 0x8000};
    int64_t three[1] = {3};
    t = t_from(EMILY_U16, 1, three, u);
    n = un(EMILY_NEGATE, t);
    c = un(EMILY_COUNT_LEADING_ZEROS, t);
    g = un(EMILY_SIGN, t);
    CHECK(t_get(n, 1) == 65531 && t_get(n, 2) == 0x8000 && t_get(n, 0) == 0);
    CHECK(t_get(c, 0) == 16 && t_get(c, 1) == 13 && t_get(c, 2) == 0);
    CHECK(t_get(g, 0) == 0 && t_get(g, 2) == 1);
    RELEASE(n, c, g, t);
    int64_t big[2] = {INT64_MIN, -1};
    int64_t two[1] = {2};
    t = t_from(EMILY_S64, 1, two, big);
    c = un(EMILY_COUNT_LEADING_ZEROS, t);
    p = un(EMILY_POPULATION_COUNT, t);
    a = un(EMILY_ABS, t);
    CHECK(t_get(c, 0) == 0 && t_get(p, 0) == 1 && t_get(p, 1) == 64);
    CHECK(t_get(a, 0) == (double)INT64_MIN && t_get(a, 1) == 1);
    RELEASE(c, p, a, t);
}

TEST(identity_and_constant_cases) {
    uint8_t u[2] = {3, 250};
    int32_t s[2] = {-7, 9};
    float f[2] = {1.5f, NAN};
    int64_t two[1] = {2};
    emily_tensor *tu = t_from(EMILY_U8, 1, two, u), *ts = t_from(EMILY_S32, 1, two, s);
    emily_tensor *tf = t_from(EMILY_F32, 1, two, f);
    emily_tensor *r = un(EMILY_ABS, tu);
    CHECK(r == tu);
    emily_tensor_release(r);
    r = un(EMILY_FLOOR, ts);
    CHECK(r == ts);
    emily_tensor_release(r);
    r = un(EMILY_REAL, tf);
    CHECK(r == tf);
    emily_tensor_release(r);
    r = un(EMILY_REAL, ts);
    CHECK(emily_tensor_dtype(r) == EMILY_F32 && t_get(r, 0) == -7);
    emily_tensor_release(r);
    r = un(EMILY_IMAG, tf);
    CHECK(emily_tensor_dtype(r) == EMILY_F32 && t_get(r, 1) == 0 && !signbit(t_get(r, 1)));
    emily_tensor_release(r);
    r = un(EMILY_IS_NAN, ts);
    CHECK(emily_tensor_dtype(r) == EMILY_U8 && t_get(r, 0) == 0 && t_get(r, 1) == 0);
    emily_tensor_release(r);
    r = un(EMILY_IS_INFINITY, tu);
    CHECK(t_get(r, 1) == 0);
    RELEASE(r, tu, ts, tf);
}

TEST(complex_numbers) {
    float z[8] = {3, 4, NAN, 1, 0, 0, -1, -0.0f};
    int64_t four[1] = {4};
    emily_tensor *t = t_from(EMILY_C64, 1, four, z);
    emily_tensor *a = un(EMILY_ABS, t), *ph = un(EMILY_PHASE, t), *re = un(EMILY_REAL, t);
    emily_tensor *im = un(EMILY_IMAG, t), *nan = un(EMILY_IS_NAN, t), *ln = un(EMILY_LOGICAL_NOT, t);
    emily_tensor *sg = un(EMILY_SIGN, t), *cj = un(EMILY_CONJUGATE, t), *ng = un(EMILY_NEGATE, t);
    CHECK(emily_tensor_dtype(a) == EMILY_F32 && t_get(a, 0) == 5);
    CHECK(isinf(t_get(a, 1))); /* NaN with a finite part: infinity, like the reference */
    CHECK(t_get(a, 2) == 0 && t_get(a, 3) == 1);
    CHECK(t_get(ph, 3) == (double)(float)-M_PI && t_get(ph, 2) == 0);
    CHECK(t_get(re, 0) == 3 && t_get(im, 0) == 4);
    CHECK(t_get(nan, 1) == 1 && t_get(nan, 0) == 0 && t_get(ln, 2) == 1 && t_get(ln, 3) == 0);
    float out[8];
    CHECK_OK(emily_to_binary(sg, out, sizeof out));
    CHECK(out[0] == 1 && out[1] == 0 && out[4] == 1 && out[5] == 0);
    CHECK_OK(emily_to_binary(cj, out, sizeof out));
    CHECK(out[0] == 3 && out[1] == -4 && out[6] == -1 && out[7] == 0 && !signbit(out[7]));
    CHECK_OK(emily_to_binary(ng, out, sizeof out));
    CHECK(out[0] == -3 && out[1] == -4 && same_bits(out[5], -0.0));
    emily_tensor *ts[9] = {a, ph, re, im, nan, ln, sg, cj, ng};
    for (int i = 0; i < 9; i++) emily_tensor_release(ts[i]);
    emily_tensor_release(t);
    /* exp(i*pi) = -1, sqrt(-4) = 2i, log(-1) = i*pi, in c128 */
    double w[6] = {0, M_PI, -4, 0, -1, 0};
    int64_t three[1] = {3};
    t = t_from(EMILY_C128, 1, three, w);
    emily_tensor *e = un(EMILY_EXP, t), *s = un(EMILY_SQRT, t), *l = un(EMILY_LOG, t);
    double o[6];
    CHECK_OK(emily_to_binary(e, o, sizeof o));
    CHECK(o[0] == -1.0 && fabs(o[1]) < 1e-15);
    CHECK_OK(emily_to_binary(s, o, sizeof o));
    CHECK(o[2] == 0 && o[3] == 2);
    CHECK_OK(emily_to_binary(l, o, sizeof o));
    CHECK(o[4] == 0 && o[5] == M_PI);
    RELEASE(e, s, l, t);
}

/* rsqrt of complex numbers is Complex.divide(1, Complex.sqrt(z)):
 * Complex.sqrt gives inf + yi -> :infinity + 0i, whose reciprocal is
 * 0 + 0i (Nx's non_finite_test: rsqrt(inf + 3i) is 0.0+0.0i); every
 * other non-finite part ends in :nan atoms, so NaN + NaN i. c64 and c128,
 * each special value in each part. */
TEST(complex_rsqrt_of_non_finite_values) {
    const double specials[3] = {INFINITY, -INFINITY, NAN};
    for (int c128 = 0; c128 < 2; c128++)
        for (int k = 0; k < 3; k++)
            for (int part = 0; part < 2; part++)
                for (int other = 0; other < 3; other++) {
                    /* the other part: finite (3, -2) or the same kind of special */
                    double o = other == 0 ? 3.0 : other == 1 ? -2.0 : specials[k];
                    double re = part == 0 ? specials[k] : o, im = part == 0 ? o : specials[k];
                    emily_tensor *t = NULL, *r = NULL;
                    if (c128) t = t_from(EMILY_C128, 0, NULL, (double[]){re, im});
                    else t = t_from(EMILY_C64, 0, NULL, (float[]){(float)re, (float)im});
                    r = un(EMILY_RSQRT, t);
                    double got[2] = {NAN, NAN};
                    if (r && c128) CHECK_OK(emily_to_binary(r, got, sizeof got));
                    if (r && !c128) {
                        float g[2];
                        CHECK_OK(emily_to_binary(r, g, sizeof g));
                        got[0] = g[0];
                        got[1] = g[1];
                    }
                    /* Complex.sqrt's clauses in order: a NaN part, then an
                     * infinite imaginary part, then the real infinities */
                    bool zero = !isnan(re) && !isnan(im) && !isinf(im) && re == INFINITY;
                    bool ok = zero ? same_bits(got[0], 0.0) && same_bits(got[1], 0.0) : isnan(got[0]) && isnan(got[1]);
                    if (!ok)
                        fprintf(stderr, "  rsqrt(%g%+gi) %s = %g%+gi\n", re, im, c128 ? "c128" : "c64", got[0], got[1]);
                    CHECK(ok);
                    emily_tensor_release(r);
                    emily_tensor_release(t);
                }
    /* finite values keep the textbook 1 / sqrt(z): rsqrt(-4) = -0.5i */
    emily_tensor *t = t_from(EMILY_C128, 0, NULL, (double[]){-4, 0}), *r = un(EMILY_RSQRT, t);
    double o[2] = {NAN, NAN};
    if (r) CHECK_OK(emily_to_binary(r, o, sizeof o));
    CHECK(o[0] == 0 && o[1] == -0.5);
    emily_tensor_release(r);
    emily_tensor_release(t);
}

TEST(conjugate_of_reals) {
    float f[3] = {2, NAN, -INFINITY};
    int64_t three[1] = {3};
    emily_tensor *t = t_from(EMILY_F32, 1, three, f);
    emily_tensor *c = un(EMILY_CONJUGATE, t);
    float o[6];
    CHECK(emily_tensor_dtype(c) == EMILY_C64);
    CHECK_OK(emily_to_binary(c, o, sizeof o));
    /* numbers get -0.0; the reference's NaN/infinity atoms get +0.0 */
    CHECK(o[0] == 2 && same_bits(o[1], -0.0) && isnan(o[2]) && same_bits(o[3], 0.0));
    CHECK(o[4] == -INFINITY && same_bits(o[5], 0.0));
    emily_tensor_release(c);
    emily_tensor_release(t);
    int16_t s[1] = {-3};
    int64_t one[1] = {1};
    t = t_from(EMILY_S16, 1, one, s);
    c = un(EMILY_CONJUGATE, t);
    CHECK_OK(emily_to_binary(c, o, 8));
    CHECK(o[0] == -3 && same_bits(o[1], -0.0));
    emily_tensor_release(c);
    emily_tensor_release(t);
}

TEST(half_types_round_once) {
    uint16_t h[3] = {emily_f64_to_f16(2.0), 0x7c00, emily_f64_to_f16(-1.0)};
    int64_t three[1] = {3};
    emily_tensor *t = t_from(EMILY_F16, 1, three, h);
    emily_tensor *s = un(EMILY_SQRT, t), *th = un(EMILY_TANH, t);
    CHECK(emily_tensor_dtype(s) == EMILY_F16);
    CHECK(t_get(s, 0) == emily_f16_to_f32(emily_f64_to_f16(sqrt(2.0))));
    CHECK(isinf(t_get(s, 1)) && isnan(t_get(s, 2)) && isnan(t_get(th, 1)));
    RELEASE(s, th, t);
    uint16_t b[2] = {0x3f80, 0x4000}; /* bf16 1, 2 */
    int64_t two[1] = {2};
    t = t_from(EMILY_BF16, 1, two, b);
    emily_tensor *e = un(EMILY_EXP, t);
    uint16_t o[2];
    CHECK_OK(emily_to_binary(e, o, sizeof o));
    CHECK(o[0] == emily_f32_to_bf16((float)exp(1.0)) && o[1] == emily_f32_to_bf16((float)exp(2.0)));
    CHECK(o[0] == 0x402d); /* 2.71875: truncated, not rounded to 0x402e */
    emily_tensor_release(e);
    emily_tensor_release(t);
}

TEST(strided_inputs) {
    double d[6] = {0.5, 1, 2, 3, 4, 5};
    int64_t shape[2] = {2, 3};
    emily_tensor *t = t_from(EMILY_F64, 2, shape, d), *tv = NULL, *bv = NULL;
    int64_t tshape[2] = {3, 2}, tstrides[2] = {1, 3};
    CHECK_OK(emi_tensor_view(t, 2, tshape, tstrides, 0, &tv));
    emily_tensor *r = un(EMILY_SQRT, tv);
    double want[6] = {sqrt(0.5), sqrt(3), 1, 2, sqrt(2), sqrt(5)};
    for (int i = 0; i < 6; i++) CHECK(t_get(r, i) == want[i]);
    emily_tensor_release(r);
    int64_t bshape[3] = {2, 2, 3}, bstrides[3] = {0, 3, 1};
    CHECK_OK(emi_tensor_view(t, 3, bshape, bstrides, 0, &bv));
    r = un(EMILY_NEGATE, bv);
    CHECK(t_get(r, 0) == -0.5 && t_get(r, 6) == -0.5 && t_get(r, 11) == -5);
    emily_tensor_release(r);
    /* a strided f32 view of a long line (no SIMD, threaded) */
    int64_t n[1] = {100000};
    emily_tensor *big = NULL, *bigf = NULL, *half = NULL;
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_F32, 1, n, 0, &big));
    int64_t hshape[1] = {50000}, hstr[1] = {-2};
    CHECK_OK(emi_tensor_view(big, 1, hshape, hstr, 99999, &half));
    bigf = un(EMILY_LOG, half);
    CHECK(t_get(bigf, 0) == (double)(float)log(99999.0) && t_get(bigf, 49999) == (double)(float)log(1.0));
    RELEASE(bigf, half, big, tv, bv, t);
}

TEST(zero_size_and_scalars) {
    int64_t empty[3] = {2, 0, 2};
    emily_tensor *t = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_C64, 3, empty, &t));
    for (int op = 0; op < EMILY_UNARY_OP_COUNT; op++) {
        emily_dtype out;
        if (emily_unary_type((emily_unary_op)op, EMILY_C64, &out)) continue;
        emily_tensor *r = un((emily_unary_op)op, t);
        CHECK(r && emily_tensor_size(r) == 0 && t_shape_is(r, 3, empty) && emily_tensor_dtype(r) == out);
        emily_tensor_release(r);
    }
    emily_tensor_release(t);
    /* every op on every type it accepts, at rank 0 */
    for (int dt = 0; dt < EMILY_DTYPE_COUNT; dt++) {
        emily_tensor *s = NULL;
        CHECK_OK(emily_constant(EMILY_CPU, (emily_dtype)dt, 0, NULL, emily_scalar_int(1), &s));
        for (int op = 0; op < EMILY_UNARY_OP_COUNT; op++) {
            emily_dtype out;
            if (emily_unary_type((emily_unary_op)op, (emily_dtype)dt, &out)) continue;
            emily_tensor *r = NULL;
            emily_status st = emily_unary((emily_unary_op)op, s, &r);
            if (st || !r || emily_tensor_dtype(r) != out || emily_tensor_rank(r) != 0) {
                fprintf(stderr, "  %s(%s): %s\n", emily_unary_op_name((emily_unary_op)op),
                        emily_dtype_name((emily_dtype)dt), st ? emily_last_error() : "wrong output");
                CHECK(false);
            }
            emily_tensor_release(r);
        }
        emily_tensor_release(s);
    }
}

/* f32 results against the double computation rounded once, in ULPs */
static int64_t ulp_diff(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT32_MAX;
    if (isinf(a) || isinf(b)) return a == b ? 0 : INT32_MAX;
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? -(int64_t)(ia & 0x7fffffff) : ia, ob = ib < 0 ? -(int64_t)(ib & 0x7fffffff) : ib;
    return oa > ob ? oa - ob : ob - oa;
}

/* The scalar semantics (core/scalar_unary.h) are the reference. */
static double ref_op(emily_unary_op op, double x) {
    switch (op) {
    case EMILY_EXP: return emily_sc_exp(x);
    case EMILY_EXPM1: return emily_sc_expm1(x);
    case EMILY_LOG: return emily_sc_log(x);
    case EMILY_LOG1P: return emily_sc_log1p(x);
    case EMILY_SIGMOID: return emily_sc_sigmoid(x);
    case EMILY_COS: return emily_sc_cos(x);
    case EMILY_SIN: return emily_sc_sin(x);
    case EMILY_TAN: return emily_sc_tan(x);
    case EMILY_COSH: return emily_sc_cosh(x);
    case EMILY_SINH: return emily_sc_sinh(x);
    case EMILY_TANH: return emily_sc_tanh(x);
    case EMILY_ACOS: return emily_sc_acos(x);
    case EMILY_ASIN: return emily_sc_asin(x);
    case EMILY_ATAN: return emily_sc_atan(x);
    case EMILY_ACOSH: return emily_sc_acosh(x);
    case EMILY_ASINH: return emily_sc_asinh(x);
    case EMILY_ATANH: return emily_sc_atanh(x);
    case EMILY_SQRT: return emily_sc_sqrt(x);
    case EMILY_RSQRT: return emily_sc_rsqrt(x);
    case EMILY_CBRT: return emily_sc_cbrt(x);
    case EMILY_ERF: return emily_sc_erf(x);
    case EMILY_ERFC: return emily_sc_erfc(x);
    case EMILY_ERF_INV: return emily_sc_erf_inv(x);
    case EMILY_ABS: return emily_sc_abs(x);
    case EMILY_NEGATE: return emily_sc_negate(x);
    case EMILY_CEIL: return emily_sc_ceil(x);
    case EMILY_FLOOR: return emily_sc_floor(x);
    case EMILY_ROUND: return emily_sc_round(x);
    case EMILY_SIGN: return emily_sc_sign(x);
    case EMILY_PHASE: return emily_sc_phase(x);
    default: return NAN;
    }
}

static int64_t ulp_diff64(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INT64_MAX;
    if (isinf(a) || isinf(b)) return a == b ? 0 : INT64_MAX;
    int64_t ia, ib;
    memcpy(&ia, &a, 8);
    memcpy(&ib, &b, 8);
    ia = ia < 0 ? -(ia & INT64_MAX) : ia;
    ib = ib < 0 ? -(ib & INT64_MAX) : ib;
    return ia > ib ? ia - ib : ib - ia;
}

TEST(f32_fast_paths_match_the_double_reference) {
    /* long lines (SIMD + threads) and short tails of every length */
    emily_unary_op ops[] = {EMILY_EXP,   EMILY_EXPM1, EMILY_LOG,   EMILY_LOG1P, EMILY_SIGMOID, EMILY_COS,
                            EMILY_SIN,   EMILY_TAN,   EMILY_COSH,  EMILY_SINH,  EMILY_TANH,    EMILY_ACOS,
                            EMILY_ASIN,  EMILY_ATAN,  EMILY_ACOSH, EMILY_ASINH, EMILY_ATANH,   EMILY_SQRT,
                            EMILY_RSQRT, EMILY_CBRT,  EMILY_ERF,   EMILY_ERFC,  EMILY_ABS,     EMILY_NEGATE};
    int64_t n = 70001;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    uint32_t seed = 12345;
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 200.0f; /* [-100, 100) */
        if (i % 7 == 0) x[i] *= 1e-6f;
    }
    float specials[] = {NAN,    INFINITY, -INFINITY, 0.0f,     -0.0f, 88.7f, -103.5f,
                        1e-40f, -1e-40f,  FLT_MAX,   -FLT_MAX, 0.5f,  -9.0f, 9.0f};
    for (size_t k = 0; k < sizeof specials / sizeof *specials; k++) x[(int64_t)k * 997 + 3] = specials[k];
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        for (int64_t len = 1;; len = len < 40 ? len + 1 : len * 13 < n ? len * 13 : n) {
            int64_t shape[1] = {len};
            emily_tensor *t = t_from(EMILY_F32, 1, shape, x);
            emily_tensor *r = un(ops[o], t);
            if (r) CHECK_OK(emily_to_binary(r, y, (size_t)shape[0] * 4));
            int64_t worst = 0, at = 0;
            for (int64_t i = 0; r && i < shape[0]; i++) {
                int64_t d = ulp_diff(y[i], (float)ref_op(ops[o], x[i]));
                if (d > worst) worst = d, at = i;
            }
            if (worst > 2)
                fprintf(stderr, "  %s n=%lld: %lld ulp at x=%.9g (got %.9g want %.9g)\n", emily_unary_op_name(ops[o]),
                        (long long)shape[0], (long long)worst, x[at], y[at], (float)ref_op(ops[o], x[at]));
            CHECK(worst <= 2);
            emily_tensor_release(r);
            emily_tensor_release(t);
            if (len == n) break;
        }
    }
    free(x);
    free(y);
}

/* Each instruction set's functions, called directly (the runtime choice
 * only ever exercises the best one): against the double reference, and
 * tanh bit-identical across instruction sets. */
static bool cpu_has(const char *isa) {
    return strcmp(isa, "avx2") == 0 ? emi_cpu_has_avx2_set() : emi_cpu_has_avx512_set();
}

/* f64 acos, acosh, atanh and erfc are glibc's bits (what the reference
 * computes, through Erlang's :math) on every path: a long contiguous line
 * (SIMD-eligible, threaded) and its tails. */
TEST(f64_functions_with_glibc_bits) {
    emily_unary_op ops[] = {EMILY_ACOS, EMILY_ACOSH, EMILY_ATANH, EMILY_ERFC};
    double (*libm[])(double) = {acos, acosh, atanh, erfc};
    int64_t n = 50001;
    double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    uint32_t seed = 777;
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
        for (int64_t i = 0; i < n; i++) {
            seed = seed * 1664525u + 1013904223u;
            double u = (double)(seed >> 8) / 16777216.0; /* [0, 1) */
            x[i] = ops[o] == EMILY_ACOSH ? 1.0 + 99.0 * u : ops[o] == EMILY_ERFC ? 25.0 * u - 5.0 : 2.0 * u - 1.0;
        }
        x[0] = 0.5, x[1] = 2.0, x[2] = 3.0; /* Nx's doctest values */
        int64_t lens[] = {1, 7, 37, 2401, n};
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            int64_t len = lens[li], shape[1] = {len};
            emily_tensor *t = t_from(EMILY_F64, 1, shape, x);
            emily_tensor *r = un(ops[o], t);
            int64_t bad = 0;
            if (r) CHECK_OK(emily_to_binary(r, y, (size_t)len * 8));
            for (int64_t i = 0; r && i < len; i++) {
                double want = libm[o](x[i]);
                if (memcmp(&want, &y[i], 8) != 0) bad++;
            }
            if (bad)
                fprintf(stderr, "  %s f64 n=%lld: %lld results differ from glibc\n", emily_unary_op_name(ops[o]),
                        (long long)len, (long long)bad);
            CHECK(r && bad == 0);
            emily_tensor_release(t);
            emily_tensor_release(r);
        }
    }
    free(x);
    free(y);
}

TEST(simd_paths_of_each_instruction_set) {
    typedef emily_vec_fn (*getter)(emily_unary_op, emily_dtype, emily_dtype);
    struct {
        const char *isa;
        getter get;
    } isas[2] = {{"avx2", emi_unary_avx2}, {"avx512", emi_unary_avx512}};
    /* a sample of every f32 bit pattern (both signs: huge, tiny,
     * subnormal, NaN), denser in [0, 9.6], plus specials; the f64 inputs
     * are those values times a factor that fills in the low bits */
    int64_t n = 0, cap = 1100000;
    float *x = malloc((size_t)cap * sizeof *x);
    float *y[2] = {malloc((size_t)cap * sizeof(float)), malloc((size_t)cap * sizeof(float))};
    float *ytanh[2] = {malloc((size_t)cap * sizeof(float)), malloc((size_t)cap * sizeof(float))};
    double *xd = malloc((size_t)cap * sizeof *xd), *yd = malloc((size_t)cap * sizeof *yd);
    for (uint32_t b = 0; b <= 0x4119999au && n + 2 < cap; b += 4099) {
        float f;
        memcpy(&f, &b, 4);
        x[n++] = f;
        x[n++] = -f;
    }
    for (uint64_t b = 0x4119999au; b <= 0xffffffffull && n + 1 < cap; b += 9973) {
        uint32_t u = (uint32_t)b;
        memcpy(&x[n++], &u, 4);
    }
    float specials[] = {NAN,    -NAN,    INFINITY, -INFINITY, 0.0f,       -0.0f,    9.1f,
                        1e-30f, 0.5625f, 88.0f,    -100.0f,   FLT_MAX,    -FLT_MAX, 1.0f,
                        -1.0f,  1e-10f,  -1e-10f,  3e-9f,     1.5707964f, 710.0f,   -745.5f};
    for (size_t k = 0; k < sizeof specials / sizeof *specials; k++) x[n++] = specials[k];
    for (int64_t i = 0; i < n; i++) xd[i] = (double)x[i] * 1.0000000123456789;
    emily_unary_op ops[] = {EMILY_EXP,   EMILY_EXPM1, EMILY_LOG,   EMILY_LOG1P, EMILY_SIGMOID, EMILY_COS,
                            EMILY_SIN,   EMILY_TAN,   EMILY_COSH,  EMILY_SINH,  EMILY_TANH,    EMILY_ACOS,
                            EMILY_ASIN,  EMILY_ATAN,  EMILY_ACOSH, EMILY_ASINH, EMILY_ATANH,   EMILY_SQRT,
                            EMILY_RSQRT, EMILY_CBRT,  EMILY_ERF,   EMILY_ERFC,  EMILY_ABS,     EMILY_NEGATE};
    int ran = 0;
    for (int k = 0; k < 2; k++) {
        if (!cpu_has(isas[k].isa)) continue;
        ran++;
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
            const char *name = emily_unary_op_name(ops[o]);
            emily_vec_fn f32 = isas[k].get(ops[o], EMILY_F32, EMILY_F32);
            emily_vec_fn f64 = isas[k].get(ops[o], EMILY_F64, EMILY_F64);
            /* f64 expm1/sinh/cosh (SLEEF's range and cancellation) and
             * acos/acosh/atanh/erfc (glibc's bits, the reference's) stay
             * on the libm path on purpose */
            bool no64 = ops[o] == EMILY_EXPM1 || ops[o] == EMILY_SINH || ops[o] == EMILY_COSH || ops[o] == EMILY_ACOS ||
                        ops[o] == EMILY_ACOSH || ops[o] == EMILY_ATANH || ops[o] == EMILY_ERFC;
            CHECK(f32 && (f64 != NULL) == !no64);
            if (!f32) continue;
            for (int64_t len = 1; len <= 37; len++) f32(y[k], x + 1000, len); /* tails */
            f32(y[k], x, n);
            int64_t worst = 0, at = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t d = ulp_diff(y[k][i], (float)ref_op(ops[o], x[i]));
                if (d > worst) worst = d, at = i;
            }
            int64_t bound = ops[o] == EMILY_TANH ? 1 : 2;
            if (worst > bound)
                fprintf(stderr, "  %s %s f32: %lld ulp at %.9g (got %.9g want %.9g)\n", isas[k].isa, name,
                        (long long)worst, x[at], y[k][at], (float)ref_op(ops[o], x[at]));
            CHECK(worst <= bound);
            if (ops[o] == EMILY_TANH) memcpy(ytanh[k], y[k], (size_t)n * sizeof(float));
            if (ops[o] == EMILY_TANH && ran == 2) /* the same bits on both (NaN aside) */
                for (int64_t i = 0; i < n; i++)
                    if (memcmp(&ytanh[0][i], &ytanh[1][i], 4) != 0 && !(isnan(ytanh[0][i]) && isnan(ytanh[1][i]))) {
                        CHECK(false);
                        break;
                    }
            if (!f64) continue;
            f64(yd, xd, n);
            worst = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t d = ulp_diff64(yd[i], ref_op(ops[o], xd[i]));
                if (d > worst) worst = d, at = i;
            }
            if (worst > 3)
                fprintf(stderr, "  %s %s f64: %lld ulp at %.17g (got %.17g want %.17g)\n", isas[k].isa, name,
                        (long long)worst, xd[at], yd[at], ref_op(ops[o], xd[at]));
            CHECK(worst <= 3);
        }
    }
    if (!ran) fprintf(stderr, "  (no AVX2/AVX-512 here: SIMD paths not tested)\n");
    free(x);
    free(y[0]);
    free(y[1]);
    free(ytanh[0]);
    free(ytanh[1]);
    free(xd);
    free(yd);
}

/* The caller-runs parallel loop: every chunk exactly once, from several
 * user threads at once (one job runs threaded, the others serially),
 * with nested calls, and again in a forked child. */
typedef struct {
    atomic_int counts[512];
    int nested;
} loop_job;

static void count_chunk(void *p, int64_t c) {
    loop_job *j = p;
    atomic_fetch_add(&j->counts[c], 1);
    if (j->nested && c == 0) {
        loop_job inner = {.nested = 0};
        emi_cpu_parallel(7, count_chunk, &inner);
        for (int i = 0; i < 7; i++)
            if (atomic_load(&inner.counts[i]) != 1) atomic_fetch_add(&j->counts[511], 1000);
    }
}

static int run_loops(unsigned seed, int jobs) {
    int bad = 0;
    for (int k = 0; k < jobs; k++) {
        seed = seed * 1103515245u + 12345u;
        int64_t n = 1 + (seed >> 16) % 500;
        loop_job *j = calloc(1, sizeof *j);
        if (!j) return 1;
        j->nested = k % 17 == 0;
        emi_cpu_parallel(n, count_chunk, j);
        for (int64_t c = 0; c < n; c++) bad += atomic_load(&j->counts[c]) != 1;
        bad += atomic_load(&j->counts[511]) >= 1000;
        free(j);
    }
    return bad;
}

static void *loop_thread(void *arg) {
    intptr_t bad = run_loops((unsigned)(uintptr_t)arg, 3000);
    return (void *)bad;
}

TEST(parallel_loop_runs_every_chunk_once) {
    CHECK(run_loops(1, 2000) == 0);
    pthread_t th[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&th[i], NULL, loop_thread, (void *)(uintptr_t)(i + 7)) == 0);
    for (int i = 0; i < 4; i++) {
        void *bad = NULL;
        pthread_join(th[i], &bad);
        CHECK(bad == NULL);
    }
    emi_cpu_parallel(0, count_chunk, NULL); /* nothing to do */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(run_loops(3, 500) == 0 ? 0 : 1);
    int status = -1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(bad_input) {
    float f = 1;
    emily_tensor *t = t_from(EMILY_F32, 0, NULL, &f), *r = NULL;
    CHECK_ERR(emily_unary(EMILY_BITWISE_NOT, t, &r), EMILY_ERR_TYPE, "bitwise_not: expects an integer type, got f32");
    CHECK_ERR(emily_unary(EMILY_EXP, NULL, &r), EMILY_ERR_ARGUMENT, "exp: tensor is NULL");
    CHECK_ERR(emily_unary(EMILY_EXP, t, NULL), EMILY_ERR_ARGUMENT, "output pointer is NULL");
    CHECK_ERR(emily_unary((emily_unary_op)EMILY_UNARY_OP_COUNT, t, &r), EMILY_ERR_ARGUMENT, "unknown op");
    CHECK(r == NULL);
    emily_tensor_release(t);
    float z[2] = {1, 1};
    t = t_from(EMILY_C64, 0, NULL, z);
    CHECK_ERR(emily_unary(EMILY_ERFC, t, &r), EMILY_ERR_TYPE, "erfc: complex type c64 is not supported");
    CHECK_ERR(emily_unary(EMILY_CEIL, t, &r), EMILY_ERR_TYPE, "ceil");
    emily_tensor_release(t);
}

/* The kernels follow the rules: every (op, type) that emily_unary_type
 * accepts runs (core/unary_kernels.h has a kernel for each input the op
 * layer hands on), and the others fail with a type error. */
TEST(every_accepted_type_has_a_kernel) {
    int64_t n = 3;
    unsigned char zeros[3 * 16] = {0};
    for (int op = 0; op < EMILY_UNARY_OP_COUNT; op++)
        for (int dt = 0; dt < EMILY_DTYPE_COUNT; dt++) {
            emily_tensor *t = t_from((emily_dtype)dt, 1, &n, zeros), *r = NULL;
            emily_dtype want;
            if (emily_unary_type((emily_unary_op)op, (emily_dtype)dt, &want) == EMILY_OK) {
                CHECK_OK(emily_unary((emily_unary_op)op, t, &r));
                CHECK(!r || emily_tensor_dtype(r) == want);
            } else {
                CHECK_ERR(emily_unary((emily_unary_op)op, t, &r), EMILY_ERR_TYPE,
                          emily_unary_op_name((emily_unary_op)op));
            }
            emily_tensor_release(r);
            emily_tensor_release(t);
        }
}

TEST(callbacks) {
    int64_t two[1] = {2};
    emily_tensor *t = VEC(EMILY_F32, float, -1, 4);
    emily_value out = v_tmpl(EMILY_F32, 1, two), arg = v_tensor(t);
    emily_dispatch_result r = {0};
    CHECK_OK(emily_dispatch("sqrt", EMILY_CPU, &out, &arg, 1, EMILY_DISPATCH_INFER, &r));
    CHECK(r.n == 1 && isnan(t_get(r.tensors[0], 0)) && t_get(r.tensors[0], 1) == 2);
    emily_dispatch_result_release(&r);
    out.dtype = EMILY_U8;
    CHECK_OK(emily_dispatch("logical_not", EMILY_CPU, &out, &arg, 1, EMILY_DISPATCH_RUN, &r));
    emily_dispatch_result_release(&r);
    /* RUN mode checks the template: abs of f32 is not u8 */
    CHECK_ERR(emily_dispatch("abs", EMILY_CPU, &out, &arg, 1, EMILY_DISPATCH_RUN, &r), EMILY_ERR_INTERNAL,
              "abs: output 0 is f32{2} but Nx expects u8{2}");
    CHECK_ERR(emily_dispatch("population_count", EMILY_CPU, &out, &arg, 1, EMILY_DISPATCH_RUN, &r), EMILY_ERR_TYPE,
              "population_count: expects an integer type, got f32");
    emily_value two_args[2] = {arg, arg};
    CHECK_ERR(emily_dispatch("exp", EMILY_CPU, &out, two_args, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "exp: expected 1 to 1 arguments, got 2");
    emily_tensor_release(t);
}

RUN_TESTS("unary", CASE(names_round_trip), CASE(output_types_follow_nx), CASE(every_accepted_type_has_a_kernel),
          CASE(real_functions_and_reference_quirks), CASE(integers_wrap), CASE(identity_and_constant_cases),
          CASE(complex_numbers), CASE(complex_rsqrt_of_non_finite_values), CASE(conjugate_of_reals),
          CASE(half_types_round_once), CASE(strided_inputs), CASE(zero_size_and_scalars),
          CASE(f32_fast_paths_match_the_double_reference), CASE(f64_functions_with_glibc_bits),
          CASE(simd_paths_of_each_instruction_set), CASE(parallel_loop_runs_every_chunk_once), CASE(bad_input),
          CASE(callbacks))
