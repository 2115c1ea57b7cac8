// The transcendental unary ops on CUDA (exp ... cbrt with real and complex
// forms, erf, erfc, erf_inv): the per-element rules of core/scalar_unary.h,
// picked exactly as src/cpu/unary.c picks them.
#include "cuda/unary_ops.cuh"

using namespace emily_cuda;

namespace {

#define MATH_OPS(X)                                                                    \
    X(exp) X(expm1) X(log) X(log1p) X(sigmoid) X(cos) X(sin) X(tan) X(cosh) X(sinh)    \
    X(tanh) X(acos) X(asin) X(atan) X(acosh) X(asinh) X(atanh) X(sqrt) X(rsqrt) X(cbrt)

#define DEF_MATH(N) EMILY_CUDA_REAL_RUNS(N, emily_sc_##N) EMILY_CUDA_CPLX_RUNS(N, emily_cd_##N)
MATH_OPS(DEF_MATH)
EMILY_CUDA_REAL_RUNS(erf, emily_sc_erf)
EMILY_CUDA_REAL_RUNS(erfc, emily_sc_erfc)
EMILY_CUDA_REAL_RUNS(erf_inv, emily_sc_erf_inv)

} // namespace

namespace emily_cuda {

unary_run unary_pick_math(emily_unary_op op, emily_dtype sd, emily_dtype dd) {
#define BOTH(N) EMILY_CUDA_PICK_REAL(N) EMILY_CUDA_PICK_CPLX(N) break;
    switch (op) {
    case EMILY_EXP: BOTH(exp)
    case EMILY_EXPM1: BOTH(expm1)
    case EMILY_LOG: BOTH(log)
    case EMILY_LOG1P: BOTH(log1p)
    case EMILY_SIGMOID: BOTH(sigmoid)
    case EMILY_COS: BOTH(cos)
    case EMILY_SIN: BOTH(sin)
    case EMILY_TAN: BOTH(tan)
    case EMILY_COSH: BOTH(cosh)
    case EMILY_SINH: BOTH(sinh)
    case EMILY_TANH: BOTH(tanh)
    case EMILY_ACOS: BOTH(acos)
    case EMILY_ASIN: BOTH(asin)
    case EMILY_ATAN: BOTH(atan)
    case EMILY_ACOSH: BOTH(acosh)
    case EMILY_ASINH: BOTH(asinh)
    case EMILY_ATANH: BOTH(atanh)
    case EMILY_SQRT: BOTH(sqrt)
    case EMILY_RSQRT: BOTH(rsqrt)
    case EMILY_CBRT: BOTH(cbrt)
    case EMILY_ERF: EMILY_CUDA_PICK_REAL(erf) break;
    case EMILY_ERFC: EMILY_CUDA_PICK_REAL(erfc) break;
    case EMILY_ERF_INV: EMILY_CUDA_PICK_REAL(erf_inv) break;
    default: break;
    }
#undef BOTH
    return NULL;
}

} // namespace emily_cuda
