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
    if (!emily_cr::cr_sincos(z.re, s, c)) {
        s = sin(z.re);
        c = cos(z.re);
    }
    return emily_cd_make(__dmul_rn(s, emily_cr::cr_cosh(z.im)), __dmul_rn(c, emily_cr::cr_sinh(z.im)));
}
__device__ inline emily_cd cr_ccos(emily_cd z) {
    if (!isfinite(z.re) || z.im != z.im) return emily_cd_make(NAN, NAN);
    if (isinf(z.im)) return emily_cd_make(INFINITY, -1.0 * z.im * z.re);
    double s, c;
    if (!emily_cr::cr_sincos(z.re, s, c)) {
        s = sin(z.re);
        c = cos(z.re);
    }
    // 0 - sin(re), not -sin(re): as emily_cd_cos (core/scalar_unary.h)
    return emily_cd_make(__dmul_rn(c, emily_cr::cr_cosh(z.im)), __dmul_rn(__dsub_rn(0.0, s), emily_cr::cr_sinh(z.im)));
}
__device__ inline emily_cd cr_cexp(emily_cd z) {
    if (z.re == -INFINITY || z.re == INFINITY || isinf(z.im) || z.re != z.re || z.im != z.im) return emily_cd_exp(z);
    double s, c;
    if (!emily_cr::cr_sincos(z.im, s, c)) {
        s = sin(z.im);
        c = cos(z.im);
    }
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
#define EMI_CUDA_OWN_RULE_(KIND, OP, T, FN)          \
    template <> struct KIND##_rule<EMILY_##OP> {     \
        static constexpr bool own = true;            \
        static __device__ T f(T x) { return FN(x); } \
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

// f16/bf16 through an f32 function (the device's, with the documented
// bound on its error in ulps: CUDA C Programming Guide, "Mathematical
// Functions", single precision, IEEE flags): y = f(x) in f32; when every
// f32 value within bound + 2 ulps of y rounds (the type's store of a
// double) to the same 16-bit value, so does the f64 rule's result, which
// lies within 1 ulp of the exact value and so inside that interval: that
// value is the answer, bit for bit. Otherwise (near a rounding boundary,
// zero, subnormal, infinite or NaN results) the f64 rule runs. For the
// ops whose Nx definition is the plain function (expm1, log1p and sigmoid
// are formulas with cancellations: they keep the f64 rule).
namespace emily_cuda {
namespace {

template <emily_unary_op OP> struct f32_fn {
    static constexpr int ulps = -1;
    static __device__ float f(float x) { return x; }
};
#define EMI_CUDA_F32_FN_(OP, FN, ULPS)                       \
    template <> struct f32_fn<EMILY_##OP> {                  \
        static constexpr int ulps = ULPS;                    \
        static __device__ float f(float x) { return FN(x); } \
    };
EMI_CUDA_F32_FN_(EXP, expf, 2)
EMI_CUDA_F32_FN_(LOG, logf, 1)
EMI_CUDA_F32_FN_(SIN, sinf, 2)
EMI_CUDA_F32_FN_(COS, cosf, 2)
EMI_CUDA_F32_FN_(TANH, tanhf, 2)
EMI_CUDA_F32_FN_(ERF, erff, 2)
EMI_CUDA_F32_FN_(SQRT, sqrtf, 0)
EMI_CUDA_F32_FN_(RSQRT, rsqrtf, 2)
#undef EMI_CUDA_F32_FN_

template <emily_unary_op OP, typename Exact, typename ToF32, typename Store>
__device__ __forceinline__ uint16_t half_unary(uint16_t h, Exact exact, ToF32 to_f32, Store store) {
    if constexpr (f32_fn<OP>::ulps >= 0) {
        float x = to_f32(h), y = f32_fn<OP>::f(x);
        // a finite input (the f64 rule has cases of its own for the
        // infinities: f16 tanh(inf) is NaN there) and a finite, normal y
        if (isfinite(x) && isfinite(y) && fabsf(y) >= 1.17549435e-38f) {
            // the bound in ulps of the exact value's binade: twice as many
            // steps of y's bits where y lies in the binade below; one more
            // (twice) for the f64 result's own rounding to f32
            const unsigned m = 2 * f32_fn<OP>::ulps + 2;
            unsigned b = __float_as_uint(y);
            float lo = __uint_as_float(b - m), hi = __uint_as_float(b + m);
            if (isfinite(lo) && isfinite(hi)) {
                uint16_t a = store((double)lo);
                if (a == store((double)hi)) return a;
            }
        }
    }
    return exact(h);
}

} // namespace
} // namespace emily_cuda

#define EMI_UNARY_HALF(ENUM, n, s, v)                                                                           \
    emily_cuda::half_unary<EMILY_##ENUM>(                                                                       \
        v, [](uint16_t h_) { return emily_sc_f64_to_##s(EMI_UNARY_REAL(ENUM, n, emily_sc_##s##_to_f64(h_))); }, \
        emily_sc_##s##_to_f32, emily_sc_f64_to_##s)
#define EMI_UNARY_REAL(ENUM, n, x) \
    (emily_cuda::real_rule<EMILY_##ENUM>::own ? emily_cuda::real_rule<EMILY_##ENUM>::f(x) : emily_sc_##n(x))
#define EMI_UNARY_REAL_F64(ENUM, n, x) \
    (emily_cuda::f64_rule<EMILY_##ENUM>::own ? emily_cuda::f64_rule<EMILY_##ENUM>::f(x) : EMI_UNARY_REAL(ENUM, n, x))
#define EMI_UNARY_CPLX(ENUM, n, z) \
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
