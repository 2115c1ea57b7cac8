/* The kernels of the unary ops, written once for every device: which
 * (input, output) dtype pairs of an op reach a device kernel, and what
 * one element becomes. Valid C11 and CUDA C++ (macros and EMILY_HD
 * helpers only).
 *
 * An op's rule (emily/op_list.h, core/op_rules.h) decides the pairs; the
 * op's scalar rules, found by its name n, decide the element:
 *   emily_sc_n(double) -> double      real floats, computed in double and
 *                                     rounded once to the output
 *   emily_cd_n(emily_cd) -> emily_cd  complex to complex
 *   emily_cd_n(emily_cd) -> double    complex to its part type (abs, real,
 *                                     imag, phase)
 *   emily_cd_n_real(double)           a real to complex (conjugate)
 *   emily_si_n_<type>(T) -> T         integers (core/scalar_unary.h)
 *   emily_sc_n / emily_cd_n / emily_si_n_<type> returning int: predicates,
 *                                     written as u8
 * The real-to-real and complex-to-complex rules are called through
 * EMI_UNARY_REAL(ENUM, n, x) and EMI_UNARY_CPLX(ENUM, n, z), the f64 to f64
 * kernels' through EMI_UNARY_REAL_F64(ENUM, n, x) (by default
 * EMI_UNARY_REAL: a device may compute f64 more carefully than the
 * narrower floats, whose rounding hides the last bit of double); a device
 * that computes some op its own way defines them before including this
 * header (src/cuda/unary_ops.cuh); by default they call the shared rule.
 *
 * A device expands, for each X(ENUM, name, rule) of EMILY_UNARY_OPS,
 *     EMI_UNARY_KERNELS(rule)(K, ENUM, name)
 * which calls K(NAME, ST, DT, SRC, DST, EXPR) once per kernel: NAME a
 * unique identifier, ST and DT the storage types of one input and one
 * output element, SRC and DST their dtype enum suffixes (EMILY_##SRC),
 * EXPR the output element as an expression of the input element `v`.
 * K defines a kernel (a CPU run function, a CUDA element functor) or
 * picks one for a pair of dtypes. */
#ifndef EMILY_CORE_UNARY_KERNELS_H
#define EMILY_CORE_UNARY_KERNELS_H

#include "core/dtype_list.h"
#include "core/host_device.h"
#include "core/scalar_convert.h"
#include "core/scalar_unary.h"

#ifndef EMI_UNARY_REAL
#define EMI_UNARY_REAL(ENUM, n, x) emily_sc_##n(x)
#endif
#ifndef EMI_UNARY_CPLX
#define EMI_UNARY_CPLX(ENUM, n, z) emily_cd_##n(z)
#endif
/* EMI_UNARY_HALF(ENUM, n, s, v): the f16/bf16 kernel's element (v the
 * storage bits): the f64 rule rounded to the type; a device may reach the
 * same bits faster (cuda/unary_fns.cuh). */
#ifndef EMI_UNARY_HALF
#define EMI_UNARY_HALF(ENUM, n, s, v) emily_sc_f64_to_##s(EMI_UNARY_REAL(ENUM, n, emily_sc_##s##_to_f64(v)))
#endif
#ifndef EMI_UNARY_REAL_F64
#define EMI_UNARY_REAL_F64(ENUM, n, x) EMI_UNARY_REAL(ENUM, n, x)
#endif
/* EMI_UK_NATIVE_'s rule by storage type */
#define EMI_UK_REAL_AT_F32(ENUM, n, x) EMI_UNARY_REAL(ENUM, n, x)
#define EMI_UK_REAL_AT_F64(ENUM, n, x) EMI_UNARY_REAL_F64(ENUM, n, x)

/* A complex element as emily_cd and back (emi_cd_of_c64, emi_c64_of_cd). */
#define EMI_UK_CD_IO_(E, s, T, PE, ps, PT, unused)                                             \
    EMILY_HD emily_cd emi_cd_of_##s(T v) { return emily_cd_make((double)v.re, (double)v.im); } \
    EMILY_HD T emi_##s##_of_cd(emily_cd z) {                                                   \
        T r;                                                                                   \
        r.re = (PT)z.re;                                                                       \
        r.im = (PT)z.im;                                                                       \
        return r;                                                                              \
    }
EMI_COMPLEX_PARTS_WITH(EMI_UK_CD_IO_, ~)
#undef EMI_UK_CD_IO_

/* ---- the kernels of one type class, for op (OP, n) ------------------------ */

/* Real floats, same type in and out: f16/bf16 through double, f32 and
 * f64 computed in double; and f64 in, f32 out (an integer input the op
 * layer widened to f64). */
#define EMI_UK_HALF_(E, s, T, K, OP, n) K(uk_##n##_##s##_##s, T, T, E, E, EMI_UNARY_HALF(OP, n, s, v))
#define EMI_UK_NATIVE_(E, s, T, K, OP, n) K(uk_##n##_##s##_##s, T, T, E, E, (T)EMI_UK_REAL_AT_##E(OP, n, (double)v))
#define EMI_UK_ON_FLOAT_(K, OP, n)                         \
    EMI_DTYPES_HALF_WITH(EMI_UK_HALF_, K, OP, n)           \
    EMI_DTYPES_NATIVE_FLOAT_WITH(EMI_UK_NATIVE_, K, OP, n) \
    K(uk_##n##_f64_f32, double, float, F64, F32, (float)EMI_UNARY_REAL(OP, n, v))

/* Complex, same type in and out, computed in emily_cd. */
#define EMI_UK_CPLX_(E, s, T, K, OP, n) \
    K(uk_##n##_##s##_##s, T, T, E, E, emi_##s##_of_cd(EMI_UNARY_CPLX(OP, n, emi_cd_of_##s(v))))
#define EMI_UK_ON_CPLX_(K, OP, n) EMI_DTYPES_COMPLEX_WITH(EMI_UK_CPLX_, K, OP, n)

/* Complex in, its part type out. */
#define EMI_UK_C2R_(E, s, T, PE, ps, PT, K, OP, n) \
    K(uk_##n##_##s##_##ps, T, PT, E, PE, (PT)emily_cd_##n(emi_cd_of_##s(v)))
#define EMI_UK_TO_PART_(K, OP, n) EMI_COMPLEX_PARTS_WITH(EMI_UK_C2R_, K, OP, n)

/* A part type in, complex out. */
#define EMI_UK_R2C_(E, s, T, PE, ps, PT, K, OP, n) \
    K(uk_##n##_##ps##_##s, PT, T, PE, E, emi_##s##_of_cd(emily_cd_##n##_real((double)v)))
#define EMI_UK_FROM_PART_(K, OP, n) EMI_COMPLEX_PARTS_WITH(EMI_UK_R2C_, K, OP, n)

/* Integers, same type in and out. */
#define EMI_UK_INT_(E, s, T, K, OP, n) K(uk_##n##_##s##_##s, T, T, E, E, emily_si_##n##_##s(v))
#define EMI_UK_ON_INT_(K, OP, n) EMI_DTYPES_INTEGER_WITH(EMI_UK_INT_, K, OP, n)

/* Predicates: any class in, u8 out. */
#define EMI_UK_TEST_INT_(E, s, T, K, OP, n) K(uk_##n##_##s##_u8, T, uint8_t, E, U8, (uint8_t)emily_si_##n##_##s(v))
#define EMI_UK_TEST_HALF_(E, s, T, K, OP, n) \
    K(uk_##n##_##s##_u8, T, uint8_t, E, U8, (uint8_t)emily_sc_##n(emily_sc_##s##_to_f64(v)))
#define EMI_UK_TEST_NATIVE_(E, s, T, K, OP, n) K(uk_##n##_##s##_u8, T, uint8_t, E, U8, (uint8_t)emily_sc_##n((double)v))
#define EMI_UK_TEST_CPLX_(E, s, T, K, OP, n) \
    K(uk_##n##_##s##_u8, T, uint8_t, E, U8, (uint8_t)emily_cd_##n(emi_cd_of_##s(v)))
#define EMI_UK_TEST_INEXACT_(K, OP, n)                          \
    EMI_DTYPES_HALF_WITH(EMI_UK_TEST_HALF_, K, OP, n)           \
    EMI_DTYPES_NATIVE_FLOAT_WITH(EMI_UK_TEST_NATIVE_, K, OP, n) \
    EMI_DTYPES_COMPLEX_WITH(EMI_UK_TEST_CPLX_, K, OP, n)

/* ---- the kernels of each rule ---------------------------------------------- */

#define EMI_UNARY_KERNELS(rule) EMI_UK_##rule
#define EMI_UK_FLOATING(K, OP, n) EMI_UK_ON_FLOAT_(K, OP, n) EMI_UK_ON_CPLX_(K, OP, n)
#define EMI_UK_FLOATING_REAL(K, OP, n) EMI_UK_ON_FLOAT_(K, OP, n)
#define EMI_UK_ABS(K, OP, n) EMI_UK_ON_INT_(K, OP, n) EMI_UK_ON_FLOAT_(K, OP, n) EMI_UK_TO_PART_(K, OP, n)
#define EMI_UK_INTEGER(K, OP, n) EMI_UK_ON_INT_(K, OP, n)
#define EMI_UK_ROUNDING(K, OP, n) EMI_UK_ON_FLOAT_(K, OP, n)
#define EMI_UK_CONJUGATE(K, OP, n) EMI_UK_ON_CPLX_(K, OP, n) EMI_UK_FROM_PART_(K, OP, n)
#define EMI_UK_SAME(K, OP, n) EMI_UK_ON_INT_(K, OP, n) EMI_UK_ON_FLOAT_(K, OP, n) EMI_UK_ON_CPLX_(K, OP, n)
#define EMI_UK_REAL(K, OP, n) EMI_UK_TO_PART_(K, OP, n)
#define EMI_UK_PHASE(K, OP, n) EMI_UK_ON_FLOAT_(K, OP, n) EMI_UK_TO_PART_(K, OP, n)
#define EMI_UK_IMAG(K, OP, n) EMI_UK_TO_PART_(K, OP, n)
#define EMI_UK_PREDICATE(K, OP, n) EMI_UK_TEST_INEXACT_(K, OP, n)
#define EMI_UK_LOGICAL(K, OP, n) EMI_DTYPES_INTEGER_WITH(EMI_UK_TEST_INT_, K, OP, n) EMI_UK_TEST_INEXACT_(K, OP, n)

#endif
