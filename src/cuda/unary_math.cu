// The transcendental unary ops on CUDA (exp ... cbrt with real and complex
// forms, erf, erfc, erf_inv): the per-element rules of core/scalar_unary.h,
// picked exactly as src/cpu/unary.c picks them.
#include "cuda/unary_ops.cuh"
#include "cuda/correctly_rounded.cuh"

using namespace emily_cuda;

namespace {

// Complex tan and tanh: the formulas of core/scalar_unary.h (sin(z)/cos(z),
// sinh(z)/cosh(z) through exp(+-z)), whose numerators cancel; the reference
// keeps that cancellation, so its result depends on the last bit of every
// ingredient. The ingredients here are the nearly correctly rounded ones of
// cuda/correctly_rounded.cuh (what glibc returns in nearly all cases) instead of the
// device's 1-2 ULP functions; the special cases are unchanged.
__device__ inline emily_cd cr_cmul_div(emily_cd a, emily_cd b) {
    double num_re = __dadd_rn(__dmul_rn(a.re, b.re), __dmul_rn(a.im, b.im));
    double num_im = __dsub_rn(__dmul_rn(a.im, b.re), __dmul_rn(a.re, b.im));
    double den = __dadd_rn(__dmul_rn(b.re, b.re), __dmul_rn(b.im, b.im));
    return emily_cd_make(num_re / den, num_im / den);
}
__device__ inline emily_cd cr_csin(emily_cd z) {
    if (!isfinite(z.re) || z.im != z.im) return emily_cd_make(NAN, NAN);
    if (isinf(z.im)) return emily_cd_make(z.re * z.im, z.im);
    double s, c;
    if (!emily_cr::cr_sincos(z.re, s, c)) { s = sin(z.re); c = cos(z.re); }
    return emily_cd_make(__dmul_rn(s, emily_cr::cr_cosh(z.im)), __dmul_rn(c, emily_cr::cr_sinh(z.im)));
}
__device__ inline emily_cd cr_ccos(emily_cd z) {
    if (!isfinite(z.re) || z.im != z.im) return emily_cd_make(NAN, NAN);
    if (isinf(z.im)) return emily_cd_make(INFINITY, -1.0 * z.im * z.re);
    double s, c;
    if (!emily_cr::cr_sincos(z.re, s, c)) { s = sin(z.re); c = cos(z.re); }
    return emily_cd_make(__dmul_rn(c, emily_cr::cr_cosh(z.im)), __dmul_rn(-s, emily_cr::cr_sinh(z.im)));
}
__device__ inline emily_cd cr_cexp(emily_cd z) {
    if (z.re == -INFINITY || z.re == INFINITY || isinf(z.im) || z.re != z.re || z.im != z.im)
        return emily_cd_exp(z);
    double s, c;
    if (!emily_cr::cr_sincos(z.im, s, c)) { s = sin(z.im); c = cos(z.im); }
    double rho = emily_cr::cr_exp(z.re);
    return emily_cd_make(__dmul_rn(rho, c), __dmul_rn(rho, s));
}
__device__ inline emily_cd cr_ctan(emily_cd z) { return cr_cmul_div(cr_csin(z), cr_ccos(z)); }
__device__ inline emily_cd cr_ctanh(emily_cd z) {
    emily_cd e = cr_cexp(z), f = cr_cexp(emily_cd_make(-z.re, -z.im));
    emily_cd sh = emily_cd_make(__dsub_rn(e.re, f.re) / 2.0, __dsub_rn(e.im, f.im) / 2.0);
    emily_cd ch = emily_cd_make(__dadd_rn(e.re, f.re) / 2.0, __dadd_rn(e.im, f.im) / 2.0);
    return cr_cmul_div(sh, ch);
}

// Nx's expm1 is exp(x) - 1 (core/scalar_unary.h): near 0 the subtraction
// magnifies a last-bit error of exp (8 ULP at x = 0.2 with the device's
// exp), so the device takes the nearly correctly rounded exp, which is
// what glibc returns nearly always.
// The complex one (exp(z) - 1, core/scalar_unary.h) likewise.
__device__ inline double nx_expm1(double x) { return emily_cr::cr_exp(x) - 1.0; }
__device__ inline emily_cd nx_cexpm1(emily_cd z) {
    emily_cd e = cr_cexp(z);
    return emily_cd_make(__dsub_rn(e.re, 1.0), __dsub_rn(e.im, 0.0));
}
EMILY_CUDA_REAL_RUNS(expm1, nx_expm1)
EMILY_CUDA_CPLX_RUNS(expm1, nx_cexpm1)

#define MATH_OPS(X, Y)                                                                    \
    X(exp) X(log) X(log1p) X(sigmoid) X(cos) X(sin) Y(tan) X(cosh) X(sinh)    \
    Y(tanh) X(acos) X(asin) X(atan) X(acosh) X(asinh) X(atanh) X(sqrt) X(rsqrt) X(cbrt)

#define DEF_MATH(N) EMILY_CUDA_REAL_RUNS(N, emily_sc_##N) EMILY_CUDA_CPLX_RUNS(N, emily_cd_##N)
#define DEF_MATH_CR(N) EMILY_CUDA_REAL_RUNS(N, emily_sc_##N) EMILY_CUDA_CPLX_RUNS(N, cr_c##N)
MATH_OPS(DEF_MATH, DEF_MATH_CR)
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
