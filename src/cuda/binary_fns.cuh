// The binary ops' element functions on CUDA: every kernel of
// core/binary_kernels.h as a functor (binary_fns::NAME, with S, D and
// apply), with the device's own form of complex pow. Device code only, no
// runtime headers: binary.cu instantiates its maps over them, and the
// fused kernels that NVRTC compiles (cuda/fused.c) include them too.
#ifndef EMILY_CUDA_BINARY_FNS_CUH
#define EMILY_CUDA_BINARY_FNS_CUH

#include "core/binary_kernels.h"
#include "cuda/correctly_rounded.cuh"

namespace emily_cuda {
namespace binary_fns {

// Complex pow: emily_sb_cpow's rules and polar formula, with the nearly
// correctly rounded log, atan2, pow, exp, cos and sin of cuda/correctly_rounded.cuh
// (what glibc returns, nearly always): the angle w.re*theta + w.im*log(rho)
// can be large, so a last-bit difference in an ingredient moves the result
// far more than the corpus's 4 ULP (and flips the sign of overflowed parts).
__device__ inline emily_sb_complex cr_cpow(emily_sb_complex z, emily_sb_complex w) {
    int zero = z.re == 0 && z.im == 0;
    if (zero || !emily_sb_finite(z.re) || !emily_sb_finite(z.im) || !emily_sb_finite(w.re) || !emily_sb_finite(w.im) ||
        (w.re == 1 && w.im == 0) || (w.re == -1 && w.im == 0))
        return emily_sb_cpow(z, w);
    double rho = emily_sb_cabs(z), theta = emily_cr::cr_atan2(z.im, z.re);
    if (z.re == 0 || z.im == 0) theta = atan2(z.im, z.re); // exact cases (0, +-pi/2, pi)
    double s = __dmul_rn(emily_cr::cr_pow(rho, w.re), emily_cr::cr_exp(-w.im * theta));
    double r = __dadd_rn(__dmul_rn(w.re, theta), __dmul_rn(w.im, emily_cr::cr_log(rho)));
    double sn, cs;
    if (!emily_cr::cr_sincos(r, sn, cs)) {
        sn = sin(r);
        cs = cos(r);
    }
    return emily_sb_cmake(__dmul_rn(s, cs), __dmul_rn(s, sn));
}

// The device's own form of an op's rule for one compute type: apply()
// calls the shared rule it is given, or replaces it.
template <emily_binary_op OP, typename TC> struct device_rule {
    template <typename F> static __device__ __forceinline__ auto apply(F shared, TC a, TC b) { return shared(a, b); }
};
template <> struct device_rule<EMILY_POW, emily_sb_complex> {
    template <typename F>
    static __device__ __forceinline__ emily_sb_complex apply(F, emily_sb_complex z, emily_sb_complex w) {
        return cr_cpow(z, w);
    }
};

// NAME: storage TS in, TD out; computed in TC as ST(F(LD(a), LD(b))).
#define DEF_KERNEL(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP)                 \
    struct NAME {                                                             \
        typedef TS S;                                                         \
        typedef TD D;                                                         \
        typedef device_rule<EMILY_##OP, TC> rule;                             \
        static __device__ __forceinline__ TD apply(TS a, TS b) {              \
            TC x = LD(a), y = LD(b);                                          \
            return ST(rule::apply([](TC p, TC q) { return F(p, q); }, x, y)); \
        }                                                                     \
    };
#define DEF_OP(ENUM, name, rule) EMI_BINARY_KERNELS(rule)(DEF_KERNEL, ENUM, name)
EMILY_BINARY_OPS(DEF_OP)

} // namespace binary_fns
} // namespace emily_cuda

#endif
