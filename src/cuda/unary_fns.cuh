// The unary ops' element functions on CUDA: every kernel of
// core/unary_kernels.h as a functor (unary_kernels::NAME, with S, D and
// apply), and the device's own forms of a few scalar rules. Device code
// only, no runtime headers: the kernels of unary_ops.cuh instantiate it,
// and the fused kernels that NVRTC compiles (cuda/fused.c) include it too,
// so a fused element is computed by the very same function.
#ifndef EMILY_CUDA_UNARY_FNS_CUH
#define EMILY_CUDA_UNARY_FNS_CUH

#include "cuda/element_fn.cuh"
#include "cuda/correctly_rounded.cuh"
#include "cuda/unary_f64.cuh"
#include "core/op_rules.h"
#include "core/scalar_unary.h"

namespace emily_cuda {


// Everything below is private to the file that includes it (as the
// kernels of one .cu file are).
namespace {

// Complex tan and tanh: the formulas of core/scalar_unary.h (sin(z)/cos(z),
// sinh(z)/cosh(z) through exp(+-z)), whose numerators cancel; the reference
// keeps that cancellation, so its result depends on the last bit of every
// ingredient. The ingredients here are those of cuda/unary_f64.cuh (glibc's
// bits in nearly all cases) instead of the device's 1-2 ULP functions; the
// special cases are unchanged.
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
    // 0 - sin(re), not -sin(re): as emily_cd_cos (core/scalar_unary.h)
    return emily_cd_make(__dmul_rn(c, emily_cr::cr_cosh(z.im)), __dmul_rn(__dsub_rn(0.0, s), emily_cr::cr_sinh(z.im)));
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
__device__ inline double nx_expm1(double x) { return emily_cr::f64_expm1(x); }
__device__ inline emily_cd nx_cexpm1(emily_cd z) {
    emily_cd e = cr_cexp(z);
    return emily_cd_make(__dsub_rn(e.re, 1.0), __dsub_rn(e.im, 0.0));
}

// The device's own form of an op's real or complex rule, where it has
// one (`own`); the kernels call the shared rule otherwise. f64_rule: the
// f64 kernels' own form (cuda/unary_f64.cuh), ahead of real_rule.
template <emily_unary_op OP> struct real_rule {
    static constexpr bool own = false;
    static __device__ double f(double x) { return x; }
};
template <emily_unary_op OP> struct f64_rule {
    static constexpr bool own = false;
    static __device__ double f(double x) { return x; }
};
template <emily_unary_op OP> struct cplx_rule {
    static constexpr bool own = false;
    static __device__ emily_cd f(emily_cd z) { return z; }
};
#define EMI_CUDA_OWN_RULE_(KIND, OP, T, FN)                                            \
    template <> struct KIND##_rule<EMILY_##OP> {                                       \
        static constexpr bool own = true;                                              \
        static __device__ T f(T x) { return FN(x); }                                   \
    };
EMI_CUDA_OWN_RULE_(real, EXPM1, double, nx_expm1)
EMI_CUDA_OWN_RULE_(cplx, EXPM1, emily_cd, nx_cexpm1)
EMI_CUDA_OWN_RULE_(cplx, TAN, emily_cd, cr_ctan)
EMI_CUDA_OWN_RULE_(cplx, TANH, emily_cd, cr_ctanh)
#define EMI_CUDA_F64_RULE_(ENUM, name) EMI_CUDA_OWN_RULE_(f64, ENUM, double, emily_cr::f64_##name)
EMI_CUDA_F64_OPS(EMI_CUDA_F64_RULE_)
#undef EMI_CUDA_F64_RULE_
#undef EMI_CUDA_OWN_RULE_

} // namespace
} // namespace emily_cuda

#define EMI_UNARY_REAL(ENUM, n, x)                                                     \
    (emily_cuda::real_rule<EMILY_##ENUM>::own ? emily_cuda::real_rule<EMILY_##ENUM>::f(x) : emily_sc_##n(x))
#define EMI_UNARY_REAL_F64(ENUM, n, x)                                                 \
    (emily_cuda::f64_rule<EMILY_##ENUM>::own ? emily_cuda::f64_rule<EMILY_##ENUM>::f(x) : EMI_UNARY_REAL(ENUM, n, x))
#define EMI_UNARY_CPLX(ENUM, n, z)                                                     \
    (emily_cuda::cplx_rule<EMILY_##ENUM>::own ? emily_cuda::cplx_rule<EMILY_##ENUM>::f(z) : emily_cd_##n(z))
#include "core/unary_kernels.h"

namespace emily_cuda {
namespace {
namespace unary_kernels {

#define EMI_CUDA_UNARY_KERNEL_(NAME, ST, DT, SRC, DST, EXPR) EMILY_CUDA_FN1(NAME, ST, DT, EXPR)
#define EMI_CUDA_UNARY_OP_(ENUM, name, rule) EMI_UNARY_KERNELS(rule)(EMI_CUDA_UNARY_KERNEL_, ENUM, name)
EMILY_UNARY_OPS(EMI_CUDA_UNARY_OP_)
#undef EMI_CUDA_UNARY_KERNEL_
#undef EMI_CUDA_UNARY_OP_

} // namespace unary_kernels

} // namespace
} // namespace emily_cuda

#endif
