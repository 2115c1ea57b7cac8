/* Per-dtype scalar helpers for the CPU's type-generic kernel bodies.
 *
 * A CPU kernel is written once, as a macro of one entry (ENUM, sfx, T) of
 * src/core/dtype_list.h, and expanded over the list (or the class
 * sub-list) of the types it accepts; the body reaches what differs
 * between types through these helpers, named by suffix, so that no kernel
 * spells out a type:
 *
 *   EMI_WIDTH(sfx), EMI_BITS(sfx), EMI_INF_BITS(sfx)  core/dtype_bits.h's
 *                         width, bit-pattern type and +infinity pattern;
 *   EMI_ELEMENT_SIZES(X)  every element size in bytes, with a type of
 *                         that size (moves of bits: copies, gathers);
 *   emi_to_f64_<sfx>(x)   one element as a double, as Nx.BinaryBackend
 *                         reads it: integers converted (exactly where
 *                         they fit), f16/bf16 widened exactly, complex
 *                         numbers their real part;
 *   emi_im_of_<sfx>(x)    the imaginary part (+0.0 for real types);
 *   emi_from_f64_<sfx>(x) a double written as one element by Nx's rules
 *                         (core/scalar_convert.h: integers truncated to
 *                         their low bits, f16 rounded from the double,
 *                         bf16 through f32, complex with imaginary +0);
 *   emi_round_<sfx>(x)    for inexact types: x written as the type and
 *                         read back (complex: rounded to the part type),
 *                         as the reference writes an intermediate tensor.
 *
 * Adding a dtype: its entry in dtype_list.h, its rules in
 * scalar_convert.h, and its width (real types) and infinity (float
 * types) in core/dtype_bits.h; the static assertions below fail until
 * those exist. */
#ifndef EMILY_CPU_DTYPE_SCALARS_H
#define EMILY_CPU_DTYPE_SCALARS_H

#include <stdint.h>
#include "core/dtype_bits.h"
#include "core/dtype_list.h"
#include "core/scalar_convert.h"

#define EMI_CHECK_WIDTH_(ENUM, sfx, T) \
    _Static_assert(sizeof(EMI_BITS(sfx)) == sizeof(T), "EMI_WIDTH_" #sfx " is not " #T "'s width");
EMI_DTYPES_REAL(EMI_CHECK_WIDTH_)
#undef EMI_CHECK_WIDTH_
#define EMI_CHECK_INF_(ENUM, sfx, T) _Static_assert(EMI_INF_BITS(sfx) > 0, "EMI_INF_BITS_" #sfx " is missing");
EMI_DTYPES_FLOAT(EMI_CHECK_INF_)
#undef EMI_CHECK_INF_

/* Every element size, for kernels that move elements as bits whatever
 * their type (copies, fills, gathers): X(bytes, T) with T an integer, or
 * a pair of them, of that size. */
typedef struct emi_bits128 {
    uint64_t lo, hi;
} emi_bits128;
#define EMI_ELEMENT_SIZES(X) X(1, uint8_t) X(2, uint16_t) X(4, uint32_t) X(8, uint64_t) X(16, emi_bits128)

/* ---- reading: emi_to_f64_<sfx>, emi_im_of_<sfx> ------------------------- */

#define EMI_READ_PLAIN_(ENUM, sfx, T)                                \
    static inline double emi_to_f64_##sfx(T x) { return (double)x; } \
    static inline double emi_im_of_##sfx(T x) {                      \
        (void)x;                                                     \
        return 0.0;                                                  \
    }
#define EMI_READ_HALF_(ENUM, sfx, T)                                                  \
    static inline double emi_to_f64_##sfx(T x) { return emily_sc_##sfx##_to_f64(x); } \
    static inline double emi_im_of_##sfx(T x) {                                       \
        (void)x;                                                                      \
        return 0.0;                                                                   \
    }
#define EMI_READ_COMPLEX_(ENUM, sfx, T)                                 \
    static inline double emi_to_f64_##sfx(T x) { return (double)x.re; } \
    static inline double emi_im_of_##sfx(T x) { return (double)x.im; }
EMI_DTYPES_INTEGER(EMI_READ_PLAIN_)
EMI_DTYPES_HALF(EMI_READ_HALF_)
EMI_DTYPES_NATIVE_FLOAT(EMI_READ_PLAIN_)
EMI_DTYPES_COMPLEX(EMI_READ_COMPLEX_)
#undef EMI_READ_PLAIN_
#undef EMI_READ_HALF_
#undef EMI_READ_COMPLEX_

/* ---- writing: emi_from_f64_<sfx> ---------------------------------------- */

/* Integers and halves: scalar_convert.h's rule of that name. */
#define EMI_WRITE_RULE_(ENUM, sfx, T) \
    static inline T emi_from_f64_##sfx(double x) { return emily_sc_f64_to_##sfx(x); }
#define EMI_WRITE_NATIVE_(ENUM, sfx, T) \
    static inline T emi_from_f64_##sfx(double x) { return (T)x; }
/* each part rounded to the part type, as a C conversion does */
#define EMI_WRITE_COMPLEX_(ENUM, sfx, T)           \
    static inline T emi_from_f64_##sfx(double x) { \
        T z = {0, 0};                              \
        z.re = x;                                  \
        return z;                                  \
    }
EMI_DTYPES_INTEGER(EMI_WRITE_RULE_)
EMI_DTYPES_HALF(EMI_WRITE_RULE_)
EMI_DTYPES_NATIVE_FLOAT(EMI_WRITE_NATIVE_)
EMI_DTYPES_COMPLEX(EMI_WRITE_COMPLEX_)
#undef EMI_WRITE_RULE_
#undef EMI_WRITE_NATIVE_
#undef EMI_WRITE_COMPLEX_

/* ---- rounding: emi_round_<sfx> -------------------------------------------- */

#define EMI_ROUND_(ENUM, sfx, T) \
    static inline double emi_round_##sfx(double x) { return emi_to_f64_##sfx(emi_from_f64_##sfx(x)); }
EMI_DTYPES_INEXACT(EMI_ROUND_)
#undef EMI_ROUND_

#endif
