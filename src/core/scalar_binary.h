/* Nx's per-element semantics of the binary ops, written once for every
 * device: plain static inline functions on C types, valid C11 and valid
 * CUDA C++ (see core/host_device.h). Kernels load their operands into the types
 * below, call these, and store the result.
 *
 * The reference (Nx.BinaryBackend) reads each element into an Elixir
 * number (exact integers, f64 floats, NaN and infinities as atoms),
 * applies the op and writes the result in the output type. So:
 *  - integer arithmetic wraps (two's complement) in the output width;
 *    it is done here in the unsigned type of the same width, which has
 *    no undefined behaviour;
 *  - float arithmetic is IEEE in f64 (or in f32 where that rounds to
 *    the same result: + - * / on f32/f16/bf16 operands), except where
 *    the Complex library that Nx calls answers differently (pow and
 *    atan2 with infinities, see below);
 *  - min/max return one of their operands like Erlang's max/2 (the
 *    first when they compare equal, so max(-0.0, 0.0) is -0.0), NaN if
 *    either is NaN.
 * Where Nx raises (integer division by zero, negative shifts, negative
 * integer exponents, float x/0, fmod of NaN/inf or by 0) these functions
 * return a defined value instead; for negative shifts and float
 * remainder the op layer fails first with the reference's error
 * (src/ops/binary_raises.c); docs/semantics.md lists them.
 * core/binary_kernels.h finds each op's functions by its name:
 * emily_sb_<op>_<type> for integers and f32/f64, emily_sb_c<op> for
 * complex. */
#ifndef EMILY_SCALAR_BINARY_H
#define EMILY_SCALAR_BINARY_H

#include <math.h>
#include <stdint.h>
#include "core/dtype_list.h"
#include "core/host_device.h"
#include "core/scalar_complex.h"
#include "core/scalar_convert.h"

/* Half precision storage: the conversions of core/scalar_convert.h
 * (f16 rounds to nearest even, bf16 truncates the rounded f32). */

/* ---- integers ---------------------------------------------------------
 * One set of functions per type, suffix = Nx type name. UT is the
 * unsigned type arithmetic is done in (at least 32 bits wide, so that
 * narrow operands are not promoted to a signed int that could overflow). */

#define EMILY_SB_INT_COMMON(N, T, UT, BITS)                                                                   \
    EMILY_HD T emily_sb_add_##N(T a, T b) { return (T)((UT)a + (UT)b); }                                      \
    EMILY_HD T emily_sb_subtract_##N(T a, T b) { return (T)((UT)a - (UT)b); }                                 \
    EMILY_HD T emily_sb_multiply_##N(T a, T b) { return (T)((UT)a * (UT)b); }                                 \
    EMILY_HD T emily_sb_bitwise_and_##N(T a, T b) { return (T)(a & b); }                                      \
    EMILY_HD T emily_sb_bitwise_or_##N(T a, T b) { return (T)(a | b); }                                       \
    EMILY_HD T emily_sb_bitwise_xor_##N(T a, T b) { return (T)(a ^ b); }                                      \
    EMILY_HD T emily_sb_min_##N(T a, T b) { return a <= b ? a : b; }                                          \
    EMILY_HD T emily_sb_max_##N(T a, T b) { return a >= b ? a : b; }                                          \
    /* Shifts by an amount outside [0, BITS) (negative ones included: they    \
     * are huge as UT) shift every bit out. */                               \
    EMILY_HD T emily_sb_left_shift_##N(T a, T b) { return (UT)b >= (UT)(BITS) ? (T)0 : (T)((UT)a << (UT)b); } \
    /* Exponentiation by squaring, wrapping; b is taken as non-negative. */                                   \
    EMILY_HD T emily_sb_upow_##N(T a, UT e) {                                                                 \
        UT r = 1, x = (UT)a;                                                                                  \
        while (e) {                                                                                           \
            if (e & 1u) r = (UT)(r * x);                                                                      \
            x = (UT)(x * x);                                                                                  \
            e >>= 1;                                                                                          \
        }                                                                                                     \
        return (T)r;                                                                                          \
    }

/* Quotient truncates toward zero; by zero it is -1 (all bits set) and
 * remainder by zero is the dividend, as XLA defines them (Nx raises). */
#define EMILY_SB_SIGNED(N, T, UT, BITS)                                              \
    EMILY_SB_INT_COMMON(N, T, UT, BITS)                                              \
    EMILY_HD T emily_sb_quotient_##N(T a, T b) {                                     \
        if (b == 0) return (T)-1;                                                    \
        if (b == -1) return (T)(0u - (UT)a); /* MIN / -1 wraps to MIN */             \
        return (T)(a / b);                                                           \
    }                                                                                \
    EMILY_HD T emily_sb_remainder_##N(T a, T b) {                                    \
        if (b == 0) return a;                                                        \
        if (b == -1) return 0;                                                       \
        return (T)(a % b);                                                           \
    }                                                                                \
    /* Arithmetic shift written without shifting a negative value. */                \
    EMILY_HD T emily_sb_right_shift_##N(T a, T b) {                                  \
        if ((UT)b >= (UT)(BITS)) return a < 0 ? (T)-1 : (T)0;                        \
        return a < 0 ? (T) ~(T)((T)~a >> b) : (T)(a >> b);                           \
    }                                                                                \
    /* Negative exponents: 1/a^n truncated (1 for a == 1, +-1 for a == -1,   \
     * else 0; 0 for a == 0 too). */       \
    EMILY_HD T emily_sb_pow_##N(T a, T b) {                                          \
        if (b < 0) return a == 1 ? (T)1 : a == -1 ? ((b & 1) ? (T)-1 : (T)1) : (T)0; \
        return emily_sb_upow_##N(a, (UT)b);                                          \
    }

#define EMILY_SB_UNSIGNED(N, T, UT, BITS)                                                              \
    EMILY_SB_INT_COMMON(N, T, UT, BITS)                                                                \
    EMILY_HD T emily_sb_quotient_##N(T a, T b) { return b == 0 ? (T) ~(T)0 : (T)(a / b); }             \
    EMILY_HD T emily_sb_remainder_##N(T a, T b) { return b == 0 ? a : (T)(a % b); }                    \
    EMILY_HD T emily_sb_right_shift_##N(T a, T b) { return (UT)b >= (UT)(BITS) ? (T)0 : (T)(a >> b); } \
    EMILY_HD T emily_sb_pow_##N(T a, T b) { return emily_sb_upow_##N(a, (UT)b); }

EMILY_SB_UNSIGNED(u8, uint8_t, uint32_t, 8)
EMILY_SB_UNSIGNED(u16, uint16_t, uint32_t, 16)
EMILY_SB_UNSIGNED(u32, uint32_t, uint32_t, 32)
EMILY_SB_UNSIGNED(u64, uint64_t, uint64_t, 64)
EMILY_SB_SIGNED(s8, int8_t, uint32_t, 8)
EMILY_SB_SIGNED(s16, int16_t, uint32_t, 16)
EMILY_SB_SIGNED(s32, int32_t, uint32_t, 32)
EMILY_SB_SIGNED(s64, int64_t, uint64_t, 64)

/* ---- comparisons and logical ops on integers and floats ----------------
 * A truth value (the op writes it as u8): IEEE comparisons (NaN is
 * unequal to everything, nonzero for the logical ops). One function per
 * op and type; f16 and bf16 compare as f32. */
#define EMILY_SB_PREDICATES_(E, s, T)                                               \
    EMILY_HD int emily_sb_equal_##s(T a, T b) { return a == b; }                    \
    EMILY_HD int emily_sb_not_equal_##s(T a, T b) { return a != b; }                \
    EMILY_HD int emily_sb_greater_##s(T a, T b) { return a > b; }                   \
    EMILY_HD int emily_sb_less_##s(T a, T b) { return a < b; }                      \
    EMILY_HD int emily_sb_greater_equal_##s(T a, T b) { return a >= b; }            \
    EMILY_HD int emily_sb_less_equal_##s(T a, T b) { return a <= b; }               \
    EMILY_HD int emily_sb_logical_and_##s(T a, T b) { return (a != 0) & (b != 0); } \
    EMILY_HD int emily_sb_logical_or_##s(T a, T b) { return (a != 0) | (b != 0); }  \
    EMILY_HD int emily_sb_logical_xor_##s(T a, T b) { return (a != 0) ^ (b != 0); }
EMI_DTYPES_INTEGER(EMILY_SB_PREDICATES_)
EMI_DTYPES_NATIVE_FLOAT(EMILY_SB_PREDICATES_)
#undef EMILY_SB_PREDICATES_

/* ---- real floats ------------------------------------------------------ */

/* + - * / in f32 or f64: for f32, f16 and bf16 operands (computed in f32)
 * these round to the same value as the reference's f64 computation
 * rounded to the operand type.
 * Division follows Complex.divide where it answers before dividing: a
 * number over an infinity is the integer 0 (+0.0, where IEEE gives a
 * signed zero), and an infinity over y >= 0 is itself, which -0.0
 * passes (IEEE: inf / -0.0 is -inf). */
#define EMILY_SB_FLOAT_ARITH_(E, s, T)                                      \
    EMILY_HD T emily_sb_add_##s(T a, T b) { return a + b; }                 \
    EMILY_HD T emily_sb_subtract_##s(T a, T b) { return a - b; }            \
    EMILY_HD T emily_sb_multiply_##s(T a, T b) { return a * b; }            \
    EMILY_HD T emily_sb_divide_##s(T a, T b) {                              \
        T q = a / b;                                                        \
        if (q == 0 && (b == (T)INFINITY || b == (T)-INFINITY)) return (T)0; \
        if (b == 0 && (a == (T)INFINITY || a == (T)-INFINITY)) return a;    \
        return q;                                                           \
    }
EMI_DTYPES_NATIVE_FLOAT(EMILY_SB_FLOAT_ARITH_)
#undef EMILY_SB_FLOAT_ARITH_

/* Erlang's max/min after Nx's NaN clauses: NaN wins, then the first
 * operand unless the second is strictly larger (smaller). */
EMILY_HD double emily_sb_max_f64(double a, double b) { return a != a ? a : b != b ? b : a >= b ? a : b; }
EMILY_HD double emily_sb_min_f64(double a, double b) { return a != a ? a : b != b ? b : a <= b ? a : b; }
EMILY_HD float emily_sb_max_f32(float a, float b) { return a != a ? a : b != b ? b : a >= b ? a : b; }
EMILY_HD float emily_sb_min_f32(float a, float b) { return a != a ? a : b != b ? b : a <= b ? a : b; }

EMILY_HD double emily_sb_remainder_f64(double a, double b) { return fmod(a, b); }

/* Complex.pow on real operands: NaN anywhere gives NaN (even 1^NaN and
 * NaN^0); an infinite exponent gives 0 for a zero base and inf
 * otherwise (+inf) or the reverse (-inf), whatever |base| is; an
 * infinite base follows IEEE except that a negative exponent gives the
 * integer 0, +0.0 (IEEE: (-inf)^-3 is -0.0). */
EMILY_HD double emily_sb_pow_f64(double x, double y) {
    if (x != x || y != y) return x + y;
    if (y == INFINITY) return x == 0 ? 0.0 : INFINITY;
    if (y == -INFINITY) return x == 0 ? INFINITY : 0.0;
    if (x == INFINITY) return y > 0 ? INFINITY : y == 0 ? 1.0 : 0.0;
    if (x == -INFINITY && y < 0) return 0.0;
    return pow(x, y);
}

/* Complex.atan2(y, x): a finite y against x = -inf gives +pi and
 * against x = +inf the integer 0, i.e. +0.0, whatever y's sign (IEEE:
 * -pi and -0.0 for negative y); otherwise as IEEE. */
EMILY_HD double emily_sb_atan2_f64(double y, double x) {
    if (y != y || x != x) return x + y;
    if (x == -INFINITY && y > -INFINITY && y < INFINITY) return 3.141592653589793;
    if (x == INFINITY && y > -INFINITY && y < INFINITY) return 0.0;
    return atan2(y, x);
}

/* ---- complex ----------------------------------------------------------
 * Computed in f64 parts with the Complex library's formulas (no scaling,
 * no C99 Annex G recovery of infinities). */

/* The binary rules' name for the shared complex pair. */
typedef emily_cd emily_sb_complex;

EMILY_HD emily_sb_complex emily_sb_cmake(double re, double im) { return emily_cd_make(re, im); }

EMILY_HD int emily_sb_finite(double x) { return x - x == 0; }

EMILY_HD emily_sb_complex emily_sb_cadd(emily_sb_complex a, emily_sb_complex b) {
    return emily_sb_cmake(a.re + b.re, a.im + b.im);
}
EMILY_HD emily_sb_complex emily_sb_csubtract(emily_sb_complex a, emily_sb_complex b) {
    return emily_sb_cmake(a.re - b.re, a.im - b.im);
}
EMILY_HD emily_sb_complex emily_sb_cmultiply(emily_sb_complex a, emily_sb_complex b) {
    return emily_sb_cmake(a.re * b.re - a.im * b.im, a.im * b.re + a.re * b.im);
}

/* A finite value over a real infinity is 0; otherwise the textbook
 * formula over |b|^2. */
EMILY_HD emily_sb_complex emily_sb_cdivide(emily_sb_complex a, emily_sb_complex b) {
    if (b.im == 0 && !emily_sb_finite(b.re) && b.re == b.re && emily_sb_finite(a.re) && emily_sb_finite(a.im))
        return emily_sb_cmake(0.0, 0.0);
    double den = b.re * b.re + b.im * b.im;
    return emily_sb_cmake((a.re * b.re + a.im * b.im) / den, (a.im * b.re - a.re * b.im) / den);
}

/* |z| as Complex.abs computes it (scaled, one square root). */
EMILY_HD double emily_sb_cabs(emily_sb_complex z) {
    double x = fabs(z.re), y = fabs(z.im);
    if (x == 0) return y;
    if (y == 0) return x;
    if (x > y) return x * sqrt(1.0 + y / x * (y / x));
    return y * sqrt(1.0 + x / y * (x / y));
}

/* Complex.pow: 0^inf is 0; any other non-finite part gives NaN+NaN i;
 * 0^0 = 1, 0^w = 0; w = 1 and w = -1 are exact (z, 1/z); otherwise the
 * polar form. */
EMILY_HD emily_sb_complex emily_sb_cpow(emily_sb_complex z, emily_sb_complex w) {
    int zero = z.re == 0 && z.im == 0;
    if (zero && w.re == INFINITY && w.im == 0) return emily_sb_cmake(0.0, 0.0);
    if (!emily_sb_finite(z.re) || !emily_sb_finite(z.im) || !emily_sb_finite(w.re) || !emily_sb_finite(w.im))
        return emily_sb_cmake(NAN, NAN);
    if (zero) return (w.re == 0 && w.im == 0) ? emily_sb_cmake(1.0, 0.0) : emily_sb_cmake(0.0, 0.0);
    if (w.re == 1 && w.im == 0) return z;
    if (w.re == -1 && w.im == 0) return emily_sb_cdivide(emily_sb_cmake(1.0, 0.0), z);
    double rho = emily_sb_cabs(z), theta = atan2(z.im, z.re);
    double s = emily_sb_pow_f64(rho, w.re) * exp(-w.im * theta);
    double r = w.re * theta + w.im * log(rho);
    return emily_sb_cmake(s * cos(r), s * sin(r));
}

/* Complex equality is IEEE on both parts (a NaN part is unequal). Nx
 * compares Complex structs with ==, under which two NaN atoms are equal;
 * docs/semantics.md explains why Emily keeps IEEE here. */
EMILY_HD int emily_sb_cequal(emily_sb_complex a, emily_sb_complex b) { return a.re == b.re && a.im == b.im; }

EMILY_HD int emily_sb_cnonzero(emily_sb_complex a) { return a.re != 0 || a.im != 0; }
EMILY_HD int emily_sb_cnot_equal(emily_sb_complex a, emily_sb_complex b) { return !emily_sb_cequal(a, b); }
EMILY_HD int emily_sb_clogical_and(emily_sb_complex a, emily_sb_complex b) {
    return emily_sb_cnonzero(a) & emily_sb_cnonzero(b);
}
EMILY_HD int emily_sb_clogical_or(emily_sb_complex a, emily_sb_complex b) {
    return emily_sb_cnonzero(a) | emily_sb_cnonzero(b);
}
EMILY_HD int emily_sb_clogical_xor(emily_sb_complex a, emily_sb_complex b) {
    return emily_sb_cnonzero(a) ^ emily_sb_cnonzero(b);
}

#endif
