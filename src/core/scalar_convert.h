/* Nx's per-element conversion rules, written once for every device.
 *
 * These are the rules Nx.BinaryBackend applies when it writes a value
 * into a tensor of a given type (Nx 0.13.1, checked against the
 * conformance corpus):
 *
 *   - integer -> integer: the low bits of the value (wraps);
 *   - integer -> float: the integer becomes a double first (round to
 *     nearest), then the double is rounded to the target type, so s64
 *     and u64 values round twice on the way to f32/f16/bf16;
 *   - float -> float: f32 rounds to nearest even, overflow gives
 *     infinity; f16 rounds to nearest even directly from the double;
 *     bf16 rounds to f32 first and then keeps the top 16 bits
 *     (truncation), NaN written as 0x7fc0;
 *   - float -> integer: truncation toward zero to an exact integer, then
 *     its low bits (so 4.3e9 -> s32 wraps, 1e30 -> s64 keeps bits of
 *     1e30's exact value); NaN -> 0, +inf -> the type's largest value,
 *     -inf -> its smallest (0 for unsigned);
 *   - complex -> real: the real part, then the rules above;
 *   - real -> complex: the value converted to the part type, imaginary
 *     part +0.0.
 *
 * Everything here is static inline on plain C types, valid C11 and valid
 * CUDA C++ (EMILY_HD marks host+device), so the CUDA engine compiles the
 * very same rules. No compound literals, no _Generic. Compile callers
 * without floating-point contraction (GCC's -std=c11 default is off;
 * nvcc needs --fmad=false where bit-exact results matter). */
#ifndef EMILY_SCALAR_CONVERT_H
#define EMILY_SCALAR_CONVERT_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "core/host_device.h"

/* Complex element layouts: two parts, real first (Nx's c64 and c128). */
typedef struct emily_c64 {
    float re, im;
} emily_c64;
typedef struct emily_c128 {
    double re, im;
} emily_c128;

/* Defines CT name(re, im): the complex CT (any struct of two parts re,
 * im) with each part re, im converted to its part type PT. */
#define EMILY_SC_COMPLEX_MAKER(name, CT, PT) \
    EMILY_HD CT name(double re, double im) { \
        CT z;                                \
        z.re = (PT)re;                       \
        z.im = (PT)im;                       \
        return z;                            \
    }

/* ---- bit access ---------------------------------------------------------- */

/* A float type's bits as the unsigned integer of its width and back
 * (memcpy: the one type pun that is defined in C11 and in CUDA C++). */
#define EMILY_SC_BIT_CASTS_(F, U, to_bits, from_bits) \
    EMILY_HD U to_bits(F f) {                         \
        U u;                                          \
        memcpy(&u, &f, sizeof u);                     \
        return u;                                     \
    }                                                 \
    EMILY_HD F from_bits(U u) {                       \
        F f;                                          \
        memcpy(&f, &u, sizeof f);                     \
        return f;                                     \
    }
EMILY_SC_BIT_CASTS_(float, uint32_t, emily_sc_f32_bits, emily_sc_bits_f32)
EMILY_SC_BIT_CASTS_(double, uint64_t, emily_sc_f64_bits, emily_sc_bits_f64)
#undef EMILY_SC_BIT_CASTS_

/* ---- half precision ------------------------------------------------------ */

/* f16 -> f32 is exact. */
EMILY_HD float emily_sc_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return emily_sc_bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* subnormal (or zero): man * 2^-24, exact in f32 */
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return emily_sc_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

/* double -> f16, round to nearest even in one step (no double rounding);
 * overflow gives infinity, every NaN is written as Nx's 0x7e00. */
EMILY_HD uint16_t emily_sc_f64_to_f16(double x) {
    uint64_t b = emily_sc_f64_bits(x);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    int exp = (int)((b >> 52) & 0x7ff);
    uint64_t man = b & 0xfffffffffffffull;
    if (exp == 0x7ff) return man ? (uint16_t)0x7e00u : (uint16_t)(sign | 0x7c00u); /* Nx's one NaN */
    int e = exp - 1023;                                                            /* unbiased */
    if (e > 15) return (uint16_t)(sign | 0x7c00u);
    uint64_t full = man | (exp ? (1ull << 52) : 0); /* 53-bit significand */
    int shift;
    uint32_t hexp;
    if (e >= -14) { /* normal: keep 10 fraction bits */
        shift = 42;
        hexp = (uint32_t)(e + 15);
    } else { /* subnormal: value = m * 2^-24 */
        shift = 42 + (-14 - e);
        hexp = 0;
        if (shift > 63) return sign;
    }
    uint64_t kept = full >> shift;
    uint64_t rem = full & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (kept & 1))) kept++;
    uint32_t out;
    if (hexp) {
        /* kept holds the implicit bit; a carry to 0x800 bumps the exponent */
        out = (hexp << 10) + (uint32_t)(kept - 0x400);
        if (kept == 0x800) out = (hexp + 1) << 10;
        if (out >= 0x7c00u) out = 0x7c00u;
    } else {
        out = (uint32_t)kept; /* may round up into the smallest normal */
    }
    return (uint16_t)(sign | out);
}

EMILY_HD float emily_sc_bf16_to_f32(uint16_t h) { return emily_sc_bits_f32((uint32_t)h << 16); }

/* Nx writes bf16 as the top half of the f32 (truncation); one NaN. */
EMILY_HD uint16_t emily_sc_f32_to_bf16(float x) {
    if (x != x) return 0x7fc0;
    return (uint16_t)(emily_sc_f32_bits(x) >> 16);
}
EMILY_HD uint16_t emily_sc_f64_to_bf16(double x) { return emily_sc_f32_to_bf16((float)x); }

EMILY_HD double emily_sc_f16_to_f64(uint16_t h) { return (double)emily_sc_f16_to_f32(h); }
EMILY_HD double emily_sc_bf16_to_f64(uint16_t h) { return (double)emily_sc_bf16_to_f32(h); }

/* ---- float -> integer ---------------------------------------------------- */

/* The low 64 bits of trunc(x) for a finite x (two's complement). */
EMILY_HD uint64_t emily_sc_trunc_bits(double x) {
    double a = fabs(x);
    uint64_t m;
    if (a < 18446744073709551616.0) {
        m = (uint64_t)a; /* truncates toward zero; in range */
    } else {
        /* a = significand * 2^e with e >= 12: the low bits are the
         * significand shifted left, or zero once shifted past 64 bits */
        uint64_t b = emily_sc_f64_bits(a);
        int e = (int)((b >> 52) & 0x7ff) - 1075;
        m = e >= 64 ? 0 : ((b & 0xfffffffffffffull) | (1ull << 52)) << e;
    }
    return x < 0 ? (uint64_t)0 - m : m;
}

/* Nx's float -> integer bits: NaN -> 0, +inf -> hi, -inf -> lo, else
 * the low bits of the truncated value. hi and lo are the target type's
 * extremes as 64-bit patterns; callers cast the result to the type. */
EMILY_HD uint64_t emily_sc_f2i_bits(double x, uint64_t hi, uint64_t lo) {
    /* the common case first (false for NaN): |x| < 2^63 truncates exactly */
    if (x > -9223372036854775808.0 && x < 9223372036854775808.0) return (uint64_t)(int64_t)x;
    if (x != x) return 0;
    if (x == INFINITY) return hi;
    if (x == -INFINITY) return lo;
    return emily_sc_trunc_bits(x);
}

EMILY_HD uint8_t emily_sc_f64_to_u8(double x) { return (uint8_t)emily_sc_f2i_bits(x, 0xffu, 0); }
EMILY_HD uint16_t emily_sc_f64_to_u16(double x) { return (uint16_t)emily_sc_f2i_bits(x, 0xffffu, 0); }
EMILY_HD uint32_t emily_sc_f64_to_u32(double x) { return (uint32_t)emily_sc_f2i_bits(x, 0xffffffffu, 0); }
EMILY_HD uint64_t emily_sc_f64_to_u64(double x) { return emily_sc_f2i_bits(x, UINT64_MAX, 0); }
/* Signed targets: the low bits reinterpreted (GCC and nvcc define the
 * narrowing conversion as modular). */
EMILY_HD int8_t emily_sc_f64_to_s8(double x) { return (int8_t)(uint8_t)emily_sc_f2i_bits(x, 0x7fu, 0x80u); }
EMILY_HD int16_t emily_sc_f64_to_s16(double x) { return (int16_t)(uint16_t)emily_sc_f2i_bits(x, 0x7fffu, 0x8000u); }
EMILY_HD int32_t emily_sc_f64_to_s32(double x) {
    return (int32_t)(uint32_t)emily_sc_f2i_bits(x, 0x7fffffffu, 0x80000000u);
}
EMILY_HD int64_t emily_sc_f64_to_s64(double x) {
    return (int64_t)emily_sc_f2i_bits(x, 0x7fffffffffffffffull, 0x8000000000000000ull);
}

/* ---- the narrow types (Nx 0.9-0.11) --------------------------------------- */

/* f8 (E5M2) is f16's top byte: decoding is exact. (Nx.BinaryBackend's
 * reader decodes the 3 subnormal magnitudes 0x01-0x03 as normals,
 * 2^-15 * (1 + m/4); its own writer does not round-trip them. Emily
 * reads them as the format defines them, m * 2^-16: docs/semantics.md.) */
EMILY_HD double emily_sc_f8e5m2_to_f64(uint8_t v) { return emily_sc_f16_to_f64((uint16_t)((uint16_t)v << 8)); }
/* Nx writes f8 as the top byte of the f16 the value rounds to (nearest
 * even from the double, overflow to infinity): truncation after one
 * rounding, NaN 0x7e. */
EMILY_HD uint8_t emily_sc_f64_to_f8e5m2(double x) { return (uint8_t)(emily_sc_f64_to_f16(x) >> 8); }

/* f8_e4m3fn: 4 exponent bits (bias 7), 3 fraction bits, no infinity,
 * S.1111.111 the only NaN; decoding is exact. */
EMILY_HD double emily_sc_f8e4m3_to_f64(uint8_t v) {
    int e = (v >> 3) & 0xf, m = v & 7;
    if (e == 15 && m == 7) return NAN;
    double mag = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
    return (v & 0x80) ? -mag : mag;
}
/* Nx.Floating.dump_f8_e4m3fn, step by step: NaN -> 0x7f; +-inf
 * saturate to +-448 (0x7e/0xfe); a zero keeps its sign; otherwise the
 * value clamped to [-448, 448], its exponent floor(log2|x|), and the
 * fraction rounded half away from zero (Elixir's round/1) and clamped to
 * 0..7: a fraction that rounds up to 8 stays 7 (no carry into the
 * exponent), and at exponent 15 a 7 becomes 6 (448, the largest). Below
 * 2^-6 the value is a subnormal m/8 * 2^-6 with m clamped the same way. */
EMILY_HD uint8_t emily_sc_f64_to_f8e4m3(double x) {
    if (x != x) return 0x7f;
    uint8_t sign = signbit(x) ? 0x80 : 0;
    if (x == 0) return sign;
    double a = fabs(x);
    if (a > 448.0) a = 448.0;
    /* the exponent floor(log2 a), exactly: frexp is exact everywhere,
     * while CUDA's device log2 missed it at 8.0 (2.99...: 7.5 came out) */
    int ex;
    (void)frexp(a, &ex);
    int e = ex - 1 + 7;
    if (e <= 0) {
        double m = round(a * 512.0); /* a / 2^-6 * 8 */
        return (uint8_t)(sign | (m > 7 ? 7 : (int)m));
    }
    if (e > 15) return (uint8_t)(sign | 0x7e);
    double m = round((a / ldexp(1.0, e - 7) - 1.0) * 8.0);
    int mi = m < 0 ? 0 : m > 7 ? 7 : (int)m;
    if (e == 15 && mi == 7) mi = 6;
    return (uint8_t)(sign | (e << 3) | mi);
}

/* Sub-byte integers hold their value sign- (s2, s4) or zero-extended
 * (u2, u4) in a byte. Writing one keeps the low bits, as for the other
 * integer types; from a float, Nx's truncation with NaN -> 0 and +-inf
 * -> the type's extremes (emily_sc_f2i_bits). */
EMILY_HD int8_t emily_sc_wrap_s(uint64_t bits, int nbits) {
    uint8_t low = (uint8_t)(bits & ((1u << nbits) - 1u));
    return (int8_t)(low & (1u << (nbits - 1)) ? low - (1 << nbits) : low);
}
EMILY_HD uint8_t emily_sc_wrap_u(uint64_t bits, int nbits) { return (uint8_t)(bits & ((1u << nbits) - 1u)); }
EMILY_HD int8_t emily_sc_f64_to_s_narrow(double x, int nbits) {
    uint64_t hi = (1u << (nbits - 1)) - 1u, lo = (uint64_t)0 - (1u << (nbits - 1));
    return emily_sc_wrap_s(emily_sc_f2i_bits(x, hi, lo), nbits);
}
EMILY_HD uint8_t emily_sc_f64_to_u_narrow(double x, int nbits) {
    return emily_sc_wrap_u(emily_sc_f2i_bits(x, (1u << nbits) - 1u, 0), nbits);
}

/* ---- scalars of any kind -> one element ---------------------------------- */

/* Type codes as in emily/dtype.h (kept as ints so this header needs no
 * other include). */
enum {
    EMILY_SC_U8 = 0,
    EMILY_SC_U16,
    EMILY_SC_U32,
    EMILY_SC_U64,
    EMILY_SC_S8,
    EMILY_SC_S16,
    EMILY_SC_S32,
    EMILY_SC_S64,
    EMILY_SC_F16,
    EMILY_SC_BF16,
    EMILY_SC_F32,
    EMILY_SC_F64,
    EMILY_SC_C64,
    EMILY_SC_C128
};

/* The writers' step: value as a T (two values: a complex T[2]) at out. */
#define EMILY_SC_PUT_(T, value)      \
    do {                             \
        T v_ = (value);              \
        memcpy(out, &v_, sizeof v_); \
    } while (0)
#define EMILY_SC_PUT2_(T, re, im)   \
    do {                            \
        T v_[2] = {(re), (im)};     \
        memcpy(out, v_, sizeof v_); \
    } while (0)
/* The inexact targets' cases, the same for both writers (re, and im for
 * complex, rounded to the type), and the default: nothing written. */
// clang-format off
#define EMILY_SC_PUT_INEXACT_OR_NOTHING_(re, im)                                        \
    case EMILY_SC_F16: EMILY_SC_PUT_(uint16_t, emily_sc_f64_to_f16(re)); break;          \
    case EMILY_SC_BF16: EMILY_SC_PUT_(uint16_t, emily_sc_f64_to_bf16(re)); break;        \
    case EMILY_SC_F32: EMILY_SC_PUT_(float, (float)(re)); break;                         \
    case EMILY_SC_F64: EMILY_SC_PUT_(double, (re)); break;                               \
    case EMILY_SC_C64: EMILY_SC_PUT2_(float, (float)(re), (float)(im)); break;           \
    case EMILY_SC_C128: EMILY_SC_PUT2_(double, (re), (im)); break;                       \
    default: break
// clang-format on

/* Writes an integer (given as its 64-bit pattern and whether it is
 * unsigned) into one element of `dtype` at `out`. */
EMILY_HD void emily_sc_store_int(int dtype, uint64_t bits, int is_unsigned, void *out) {
    double d = is_unsigned ? (double)bits : (double)(int64_t)bits;
    switch (dtype) {
        EMILY_SC_PUT_INEXACT_OR_NOTHING_(d, 0.0);
    case EMILY_SC_U8:
    case EMILY_SC_S8: EMILY_SC_PUT_(uint8_t, (uint8_t)bits); break;
    case EMILY_SC_U16:
    case EMILY_SC_S16: EMILY_SC_PUT_(uint16_t, (uint16_t)bits); break;
    case EMILY_SC_U32:
    case EMILY_SC_S32: EMILY_SC_PUT_(uint32_t, (uint32_t)bits); break;
    case EMILY_SC_U64:
    case EMILY_SC_S64: EMILY_SC_PUT_(uint64_t, bits); break;
    }
}

/* Writes a complex value (im ignored for real targets, which take the
 * real part like as_type does) into one element of `dtype`. */
EMILY_HD void emily_sc_store_complex(int dtype, double re, double im, void *out) {
    switch (dtype) {
        EMILY_SC_PUT_INEXACT_OR_NOTHING_(re, im);
    case EMILY_SC_U8: EMILY_SC_PUT_(uint8_t, emily_sc_f64_to_u8(re)); break;
    case EMILY_SC_U16: EMILY_SC_PUT_(uint16_t, emily_sc_f64_to_u16(re)); break;
    case EMILY_SC_U32: EMILY_SC_PUT_(uint32_t, emily_sc_f64_to_u32(re)); break;
    case EMILY_SC_U64: EMILY_SC_PUT_(uint64_t, emily_sc_f64_to_u64(re)); break;
    case EMILY_SC_S8: EMILY_SC_PUT_(int8_t, emily_sc_f64_to_s8(re)); break;
    case EMILY_SC_S16: EMILY_SC_PUT_(int16_t, emily_sc_f64_to_s16(re)); break;
    case EMILY_SC_S32: EMILY_SC_PUT_(int32_t, emily_sc_f64_to_s32(re)); break;
    case EMILY_SC_S64: EMILY_SC_PUT_(int64_t, emily_sc_f64_to_s64(re)); break;
    }
}

#undef EMILY_SC_PUT_INEXACT_OR_NOTHING_
#undef EMILY_SC_PUT2_
#undef EMILY_SC_PUT_

#endif
