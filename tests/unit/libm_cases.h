/* The inputs on which test_cuda_libm holds the CUDA engine's f64 math to
 * glibc, shared with tools/libdevice_host (which measures the device's own
 * functions on the same inputs): each op's domain, its CPU scalar rule
 * (core/scalar_unary.h, glibc), the special values and Nx's doctest
 * inputs, and the pseudo-random draw. Valid C11 and C++. */
#ifndef EMILY_TEST_LIBM_CASES_H
#define EMILY_TEST_LIBM_CASES_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "core/scalar_unary.h"
#include "emily/ops.h"

/* Same bits, or both NaN. */
static inline bool libm_same(double a, double b) {
    uint64_t ua, ub;
    memcpy(&ua, &a, 8);
    memcpy(&ub, &b, 8);
    return ua == ub || (a != a && b != b);
}

/* One op: the CPU's scalar rule, the domain its random inputs come from
 * (|x| = m 2^e, m in [1, 2), e in [emin, emax], negative too when neg),
 * whether its special values and doctest inputs must all give glibc's
 * bits, and the most inputs of 100000 on which it may differ from glibc:
 * the inputs where glibc's own exp, log, sin, cos, tan, asin, acos, atan
 * or pow misrounds, about 1 in 1000 to 1 in 100000 (docs/semantics.md),
 * with room for the spread of such rare counts; sinh (about 1000) and
 * cosh (about 20), composed from exp and expm1, also where glibc's
 * composition rounds otherwise; asinh, correctly rounded, where glibc's
 * misrounds (about 16000: every one of them checked with mpmath). */
typedef struct libm_op {
    emily_unary_op op;
    const char *name;
    double (*cpu)(double);
    int emin, emax;
    bool neg, special;
    int bound;
} libm_op;

static const libm_op LIBM_OPS[] = {
    {EMILY_EXP, "exp", emily_sc_exp, -60, 10, true, true, 60},
    {EMILY_EXPM1, "expm1", emily_sc_expm1, -60, 10, true, true, 40},
    {EMILY_LOG, "log", emily_sc_log, -1074, 1023, true, true, 10},
    {EMILY_LOG1P, "log1p", emily_sc_log1p, -60, 60, true, true, 30},
    {EMILY_SIGMOID, "sigmoid", emily_sc_sigmoid, -60, 10, true, true, 30},
    {EMILY_SIN, "sin", emily_sc_sin, -60, 29, true, true, 130},
    {EMILY_COS, "cos", emily_sc_cos, -60, 29, true, true, 130},
    {EMILY_TAN, "tan", emily_sc_tan, -60, 29, true, true, 180},
    {EMILY_ASIN, "asin", emily_sc_asin, -60, 0, true, true, 80},
    {EMILY_ACOS, "acos", emily_sc_acos, -60, 0, true, true, 10},
    {EMILY_ATAN, "atan", emily_sc_atan, -600, 600, true, true, 10},
    {EMILY_SINH, "sinh", emily_sc_sinh, -60, 10, true, true, 1300},
    {EMILY_COSH, "cosh", emily_sc_cosh, -60, 10, true, true, 40},
    {EMILY_ASINH, "asinh", emily_sc_asinh, -60, 60, true, false, 17500},
    {EMILY_CBRT, "cbrt", emily_sc_cbrt, -1074, 1023, true, true, 190},
};
enum { LIBM_NOPS = sizeof LIBM_OPS / sizeof LIBM_OPS[0], LIBM_NRANDOM = 100000 };

/* |x| = m 2^e, m uniform in [1, 2), e uniform in [emin, emax], either sign
 * when neg; from the state *rng (xorshift64). */
static inline uint64_t libm_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}
static inline double libm_draw(uint64_t *rng, int emin, int emax, bool neg) {
    uint64_t r = libm_next(rng);
    int e = emin + (int)(r % (uint64_t)(emax - emin + 1));
    double m = 1.0 + (double)(libm_next(rng) >> 12) * 0x1p-52;
    double x = ldexp(m, e); /* below 2^-1022 ldexp rounds to a subnormal */
    return neg && ((r >> 40) & 1) ? -x : x;
}

/* Special values and the doctest inputs (Nx's doctests of these ops run
 * on 1, 2, 3 or on 0.1, 0.5, 0.9): every op must give glibc's bits. */
static const double LIBM_SPECIAL[] = {
    0.0,
    -0.0,
    INFINITY,
    -INFINITY,
    NAN,
    1.0,
    -1.0,
    2.0,
    -2.0,
    3.0,
    0.1,
    0.5,
    0.9,
    -0.5,
    DBL_MIN,
    -DBL_MIN,
    DBL_TRUE_MIN,
    -DBL_TRUE_MIN,
    0x1p-1023,
    DBL_MAX,
    -DBL_MAX,
    0x1p-28,
    0x1p-29,
    0x1p-55,
    0x1p-60,
    22.0,
    -22.0,
    0.84375,
    1.25,
    2.857142857142857,
    6.0,
    -6.0,
    28.0,
    0x1p28,
    -0x1p28,
    0x1p20,
    0x1p52,
    700.0,
    -700.0,
    709.78,
    710.4,
    -710.4,
    745.2,
    -745.2,
    0.34657359027997264,
    1.0397207708399179,
    1.5707963267948966,
    3.141592653589793,
    0.9999999999999999,
    -0.9999999999999999,
    1.0000000000000002,
    0.41421356237309503,
    -0.2928932188134524,
    0x1p500,
    0x1p-500,
    1e300,
    -1e-300,
};
enum { LIBM_NSPECIAL = sizeof LIBM_SPECIAL / sizeof LIBM_SPECIAL[0] };

/* Ops whose special values glibc itself misrounds (asinh: 0.1, 0x1p-28's
 * neighbours...; its correctly rounded value is computed here) must still
 * give glibc's bits on Nx's doctest inputs, where glibc is right. */
static const struct {
    emily_unary_op op;
    double x;
} LIBM_DOCTEST[] = {{EMILY_ASINH, 1.0}, {EMILY_ASINH, 2.0}, {EMILY_ASINH, 3.0}};
enum { LIBM_NDOCTEST = sizeof LIBM_DOCTEST / sizeof LIBM_DOCTEST[0] };

#endif
