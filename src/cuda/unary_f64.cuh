// The f64 form of the transcendental unary ops on CUDA: Nx's formulas of
// core/scalar_unary.h (exp(x) - 1, log(x + 1), 1 / (1 + exp(-x)), cbrt as
// pow(|x|, 1/3)) over functions correctly rounded in double-double, where
// the host's libm (glibc, what the reference calls) is nearly correctly
// rounded too, so that they print as the reference does; the device's own
// functions differ in the last bit on 1-16% of inputs: exp, log, sin, cos,
// pow (cuda/correctly_rounded.cuh), tan, atan, asin, acos
// (cuda/correctly_rounded_trig.cuh), and sinh, cosh composed from exp and
// expm1. tanh, asinh, acosh, atanh, erf and erfc keep the device's
// functions: glibc misrounds 5-27% of their inputs, so only its own
// algorithms would give its bits, and those are not ours to copy
// (docs/semantics.md, "f64 math on CUDA").
// f16, bf16 and f32 keep the device's functions: their one rounding to the
// narrower type hides the last bit of double. Host+device so that
// tests/unit/test_cuda_libm.c checks these very functions against the CPU
// engine's scalar rules.
#ifndef EMILY_CUDA_UNARY_F64_CUH
#define EMILY_CUDA_UNARY_F64_CUH

#include "core/scalar_unary.h"
#include "cuda/correctly_rounded.cuh"
#include "cuda/correctly_rounded_trig.cuh"

namespace emily_cr {

// f64_<name>(x): the form of op <name> (listed in EMI_CUDA_F64_OPS below).
#define EMI_F64_FORM(name, expr) \
    EMILY_CR_HD double f64_##name(double x) { return expr; }
EMI_F64_FORM(exp, cr_exp(x))
// exp(x) - 1 subtracts near 1: a last-bit error of exp becomes ~1000 ULP
EMI_F64_FORM(expm1, EMI_NX_EXPM1(cr_exp, x))
EMI_F64_FORM(log, cr_log(x))
EMI_F64_FORM(log1p, EMI_NX_LOG1P(cr_log, x))
EMI_F64_FORM(sigmoid, EMI_NX_SIGMOID(cr_exp, x))
EMI_F64_FORM(sin, cr_sin(x))
EMI_F64_FORM(cos, cr_cos(x))
EMI_F64_FORM(tan, cr_tan(x))
EMI_F64_FORM(asin, cr_asin(x))
EMI_F64_FORM(acos, cr_acos(x))
EMI_F64_FORM(atan, cr_atan(x))
EMI_F64_FORM(sinh, cr_sinh(x))
EMI_F64_FORM(cosh, cr_cosh(x))
EMI_F64_FORM(asinh, cr_asinh(x))
// pow(x, 1/3) for x >= 0 (so -0.0 gives +0.0), the negated root of |x|
// below zero
EMILY_CR_HD double f64_cbrt(double x) { return x >= 0 ? cr_pow(x, 1.0 / 3.0) : -cr_pow(-x, 1.0 / 3.0); }

} // namespace emily_cr

// The ops with an f64 form here, X(ENUM, name): unary_ops.cuh registers
// them, the host test walks them.
// clang-format off
#define EMI_CUDA_F64_OPS(X)                                                                  \
    X(EXP, exp) X(EXPM1, expm1) X(LOG, log) X(LOG1P, log1p) X(SIGMOID, sigmoid) X(SIN, sin) X(COS, cos)       \
    X(TAN, tan) X(ASIN, asin) X(ACOS, acos) X(ATAN, atan) X(SINH, sinh) X(COSH, cosh)         \
    X(ASINH, asinh) X(CBRT, cbrt)
// clang-format on

#endif
