/* The kernels of the binary ops, written once for every device: which
 * operand dtypes of an op have a device kernel, the type each computes
 * in, and what one pair of elements becomes. Valid C11 and CUDA C++
 * (macros and EMILY_HD helpers only).
 *
 * Contract with the op layer (src/ops/binary.c): both operands have one
 * dtype, the compute type; the output has that dtype, or u8 for
 * comparisons and logical ops.
 *
 * An op's rule (emily/op_list.h, core/op_rules.h) decides the dtypes;
 * the op's scalar rules of core/scalar_binary.h, found by its name n,
 * decide the element:
 *   emily_sb_n_<type>(T, T)     integers (wrapping), and f32/f64: f16 and
 *                               bf16 compute in f32 (rounds like the
 *                               reference's f64), except for the _SCALAR
 *                               rules and ATAN2, whose floats all compute
 *                               in f64 (emily_sb_n_f64) and round once
 *   emily_sb_c<n>(z, w)         complex, in f64 parts
 * and comparisons and logical ops return a truth value written as u8.
 *
 * A device expands, for each X(ENUM, name, rule) of EMILY_BINARY_OPS,
 *     EMI_BINARY_KERNELS(rule)(K, ENUM, name)
 * which calls K(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP) once per kernel:
 * NAME a unique identifier; OP and DT the enum suffixes of the op and of
 * the operands' dtype (EMILY_##OP, EMILY_##DT); TS, TD and TC the storage
 * types of an operand and of the output, and the compute type; LD, F and
 * ST names of functions (or function-like macros): an output element is
 * ST(F(LD(a), LD(b))); LOOP is VEC where the CPU runs a vector loop
 * (simple arithmetic on f32/f64/integers) and SCALAR where it does not
 * (branchy rules, f16/bf16 conversions, complex). */
#ifndef EMILY_CORE_BINARY_KERNELS_H
#define EMILY_CORE_BINARY_KERNELS_H

#include "emily/ops.h"
#include "core/dtype_list.h"
#include "core/host_device.h"
#include "core/op_rules.h"
#include "core/scalar_binary.h"
#include "core/scalar_convert.h"

/* ---- the devices' checks of that contract (host code) --------------------- */

static inline emily_status emi_binary_kernel_operands(emily_binary_op op, emily_dtype a, emily_dtype b) {
    if ((unsigned)op >= EMILY_BINARY_OP_COUNT || !emily_dtype_valid(a) || a != b)
        return emily_error(EMILY_ERR_INTERNAL, "binary kernel: bad op or operand types");
    return EMILY_OK;
}

/* The dtype op's kernel writes for operands of dtype t. */
static inline emily_dtype emi_binary_kernel_output(emily_binary_op op, emily_dtype t) {
    return emi_binary_rule_is_predicate(emi_binary_rule_of(op)) ? EMILY_U8 : t;
}

/* select's kernels (src/ops/select.c hands them on): a real predicate of
 * any dtype, and both branches of the output's dtype. */
static inline emily_status emi_select_kernel_operands(emily_dtype dst, emily_dtype pred, emily_dtype on_true,
                                                      emily_dtype on_false) {
    if (emily_dtype_is_complex(pred) || !emily_dtype_valid(pred) || on_true != dst || on_false != dst)
        return emily_error(EMILY_ERR_INTERNAL, "select kernel: bad operand types");
    return EMILY_OK;
}

/* ---- loads and stores between storage and compute types ------------------ */

#define EMI_BK_ID(x) (x)
#define EMI_BK_U8(x) ((uint8_t)(x))

/* emi_bk_ld_<t>/emi_bk_st_<t>: to and from the compute type of the simple
 * ops (f32 for f16 and bf16: exact widening, one rounding back);
 * emi_bk_ldd_<t>/emi_bk_std_<t>: to and from f64. */
#define EMI_BK_HALF_IO_(E, s, T, unused)                                         \
    EMILY_HD float emi_bk_ld_##s(T x) { return emily_sc_##s##_to_f32(x); }       \
    EMILY_HD T emi_bk_st_##s(float x) { return emily_sc_f64_to_##s((double)x); } \
    EMILY_HD double emi_bk_ldd_##s(T x) { return emily_sc_##s##_to_f64(x); }     \
    EMILY_HD T emi_bk_std_##s(double x) { return emily_sc_f64_to_##s(x); }
#define EMI_BK_NATIVE_IO_(E, s, T, unused)                    \
    EMILY_HD T emi_bk_ld_##s(T x) { return x; }               \
    EMILY_HD T emi_bk_st_##s(T x) { return x; }               \
    EMILY_HD double emi_bk_ldd_##s(T x) { return (double)x; } \
    EMILY_HD T emi_bk_std_##s(double x) { return (T)x; }
#define EMI_BK_COMPLEX_IO_(E, s, T, PE, ps, PT, unused)                                 \
    EMILY_HD emily_sb_complex emi_bk_ld_##s(T z) { return emily_sb_cmake(z.re, z.im); } \
    EMILY_HD T emi_bk_st_##s(emily_sb_complex z) {                                      \
        T r;                                                                            \
        r.re = (PT)z.re;                                                                \
        r.im = (PT)z.im;                                                                \
        return r;                                                                       \
    }
EMI_DTYPES_HALF_WITH(EMI_BK_HALF_IO_, ~)
EMI_DTYPES_NATIVE_FLOAT_WITH(EMI_BK_NATIVE_IO_, ~)
EMI_COMPLEX_PARTS_WITH(EMI_BK_COMPLEX_IO_, ~)
#undef EMI_BK_HALF_IO_
#undef EMI_BK_NATIVE_IO_
#undef EMI_BK_COMPLEX_IO_

/* ---- the kernels of one type class, for op (OP, n) ------------------------ */

/* Integers in their own type; LOOP as the rule says. */
#define EMI_BK_INT_(E, s, T, K, OP, n, LOOP) \
    K(bk_##n##_##s, OP, E, T, T, T, EMI_BK_ID, emily_sb_##n##_##s, EMI_BK_ID, LOOP)
#define EMI_BK_ON_INT_(K, OP, n, LOOP) EMI_DTYPES_INTEGER_WITH(EMI_BK_INT_, K, OP, n, LOOP)

/* Floats in f32 (f16, bf16, f32) or f64. */
#define EMI_BK_HALF_(E, s, T, K, OP, n) \
    K(bk_##n##_##s, OP, E, T, T, float, emi_bk_ld_##s, emily_sb_##n##_f32, emi_bk_st_##s, SCALAR)
#define EMI_BK_NATIVE_(E, s, T, K, OP, n) \
    K(bk_##n##_##s, OP, E, T, T, T, emi_bk_ld_##s, emily_sb_##n##_##s, emi_bk_st_##s, VEC)
#define EMI_BK_ON_FLOAT_(K, OP, n) \
    EMI_DTYPES_HALF_WITH(EMI_BK_HALF_, K, OP, n) EMI_DTYPES_NATIVE_FLOAT_WITH(EMI_BK_NATIVE_, K, OP, n)

/* Floats all in f64, rounded once. */
#define EMI_BK_WIDE_(E, s, T, K, OP, n) \
    K(bk_##n##_##s, OP, E, T, T, double, emi_bk_ldd_##s, emily_sb_##n##_f64, emi_bk_std_##s, SCALAR)
#define EMI_BK_ON_FLOAT_F64_(K, OP, n) EMI_DTYPES_FLOAT_WITH(EMI_BK_WIDE_, K, OP, n)

/* Complex in f64 parts. */
#define EMI_BK_CPLX_(E, s, T, K, OP, n) \
    K(bk_##n##_##s, OP, E, T, T, emily_sb_complex, emi_bk_ld_##s, emily_sb_c##n, emi_bk_st_##s, SCALAR)
#define EMI_BK_ON_CPLX_(K, OP, n) EMI_DTYPES_COMPLEX_WITH(EMI_BK_CPLX_, K, OP, n)

/* Comparisons and logical ops: the same compute types, u8 out. */
#define EMI_BK_TEST_INT_(E, s, T, K, OP, n) \
    K(bk_##n##_##s, OP, E, T, uint8_t, T, EMI_BK_ID, emily_sb_##n##_##s, EMI_BK_U8, VEC)
#define EMI_BK_TEST_HALF_(E, s, T, K, OP, n) \
    K(bk_##n##_##s, OP, E, T, uint8_t, float, emi_bk_ld_##s, emily_sb_##n##_f32, EMI_BK_U8, SCALAR)
#define EMI_BK_TEST_NATIVE_(E, s, T, K, OP, n) \
    K(bk_##n##_##s, OP, E, T, uint8_t, T, emi_bk_ld_##s, emily_sb_##n##_##s, EMI_BK_U8, VEC)
#define EMI_BK_TEST_CPLX_(E, s, T, K, OP, n) \
    K(bk_##n##_##s, OP, E, T, uint8_t, emily_sb_complex, emi_bk_ld_##s, emily_sb_c##n, EMI_BK_U8, SCALAR)
#define EMI_BK_TEST_REAL_(K, OP, n)                     \
    EMI_DTYPES_INTEGER_WITH(EMI_BK_TEST_INT_, K, OP, n) \
    EMI_DTYPES_HALF_WITH(EMI_BK_TEST_HALF_, K, OP, n)   \
    EMI_DTYPES_NATIVE_FLOAT_WITH(EMI_BK_TEST_NATIVE_, K, OP, n)

/* ---- the kernels of each rule ---------------------------------------------- */

#define EMI_BINARY_KERNELS(rule) EMI_BK_##rule
#define EMI_BK_ARITH(K, OP, n) EMI_BK_ON_INT_(K, OP, n, VEC) EMI_BK_ON_FLOAT_(K, OP, n) EMI_BK_ON_CPLX_(K, OP, n)
#define EMI_BK_ARITH_SCALAR(K, OP, n) \
    EMI_BK_ON_INT_(K, OP, n, SCALAR) EMI_BK_ON_FLOAT_F64_(K, OP, n) EMI_BK_ON_CPLX_(K, OP, n)
#define EMI_BK_REAL(K, OP, n) EMI_BK_ON_INT_(K, OP, n, VEC) EMI_BK_ON_FLOAT_(K, OP, n)
#define EMI_BK_REAL_SCALAR(K, OP, n) EMI_BK_ON_INT_(K, OP, n, SCALAR) EMI_BK_ON_FLOAT_F64_(K, OP, n)
#define EMI_BK_FLOATING(K, OP, n) EMI_BK_ON_FLOAT_(K, OP, n) EMI_BK_ON_CPLX_(K, OP, n)
#define EMI_BK_ATAN2(K, OP, n) EMI_BK_ON_FLOAT_F64_(K, OP, n)
#define EMI_BK_INTEGER(K, OP, n) EMI_BK_ON_INT_(K, OP, n, VEC)
#define EMI_BK_INTEGER_SCALAR(K, OP, n) EMI_BK_ON_INT_(K, OP, n, SCALAR)
#define EMI_BK_EQUALITY(K, OP, n) EMI_BK_TEST_REAL_(K, OP, n) EMI_DTYPES_COMPLEX_WITH(EMI_BK_TEST_CPLX_, K, OP, n)
#define EMI_BK_ORDER(K, OP, n) EMI_BK_TEST_REAL_(K, OP, n)
#define EMI_BK_LOGICAL(K, OP, n) EMI_BK_TEST_REAL_(K, OP, n) EMI_DTYPES_COMPLEX_WITH(EMI_BK_TEST_CPLX_, K, OP, n)

#endif
