/* SIMD paths of the unary and conversion kernels, for contiguous data.
 *
 * unary_avx2.c and unary_avx512.c compile one body (unary_simd_body.h)
 * for their instruction set with a target pragma (never with global -m
 * flags; clang builds get per-file flags from the Makefile) and are
 * only called after a runtime check of the CPU (and of the OS's register
 * support); every other CPU takes the portable scalar paths. Results stay within
 * the corpus tolerance of the reference (SLEEF's <= 1 ULP functions
 * against the reference's double computation rounded once), conversions
 * are bit-exact, and Nx's special values are patched in. */
#ifndef EMILY_CPU_UNARY_SIMD_H
#define EMILY_CPU_UNARY_SIMD_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/ops.h"
#include "cpu/elementwise_map.h"

/* The best SIMD function on this CPU, or NULL (use the scalar path).
 * In the environment, EMILY_SIMD=0 disables every SIMD path and
 * EMILY_SIMD=avx2 stops at AVX2 (to test those paths on a bigger CPU). */
emily_vec_fn emi_unary_simd(emily_unary_op op, emily_dtype src, emily_dtype dst);
emily_vec_fn emi_convert_simd(emily_dtype src, emily_dtype dst);

/* Whether this CPU and OS run unary_avx2.c (AVX2, FMA, F16C) and
 * unary_avx512.c (also AVX-512 F and DQ), whatever EMILY_SIMD says. */
bool emi_cpu_has_avx2_set(void);
bool emi_cpu_has_avx512_set(void);

/* f32 tanh of the SIMD paths (both instruction sets run the same
 * operations, so they give the same bits). With a = min(|x|, 9.1):
 *   a < 0.5625:  a + a^3 P(a^2)            (odd minimax polynomial)
 *   otherwise:   1 - 2t / (1 + t), t = exp(-2a) = 2^n (1 + r + r^2 Q(r))
 * then the sign of x; +-inf give NaN like Nx. The coefficients were
 * fitted for this project (iteratively reweighted least squares on
 * Chebyshev nodes: 4e-11 and 3e-9 relative error). Checked on every f32
 * in [0, 9.6] against tanh computed in double and rounded once: at most
 * 1 ULP apart (SLEEF's tanhf: 2 ULP, 3.7x slower). */
#define EMILY_TANH_SMALL 0.5625f
#define EMILY_TANH_CLAMP 9.1f
#define EMILY_TANH_P5 0.002356990473344922f
#define EMILY_TANH_P4 -0.00838176067918539f
#define EMILY_TANH_P3 0.021772993728518486f
#define EMILY_TANH_P2 -0.05395830422639847f
#define EMILY_TANH_P1 0.13333286345005035f
#define EMILY_TANH_P0 -0.3333333134651184f
#define EMILY_EXP_Q4 0.0013814610429108143f
#define EMILY_EXP_Q3 0.008368710055947304f
#define EMILY_EXP_Q2 0.04166838899254799f
#define EMILY_EXP_Q1 0.1666652113199234f
#define EMILY_EXP_Q0 0.4999999403953552f
#define EMILY_LOG2E 1.44269504088896341f
#define EMILY_LN2_HI 0.693145751953125f /* ln 2 = HI + LO, HI with trailing zero bits */
#define EMILY_LN2_LO 1.428606765330187045e-06f

/* Per instruction set (NULL: not vectorized there): unary_avx2.c and
 * unary_avx512.c, both compiling unary_simd_body.h. */
emily_vec_fn emi_unary_avx2(emily_unary_op op, emily_dtype src, emily_dtype dst);
emily_vec_fn emi_unary_avx512(emily_unary_op op, emily_dtype src, emily_dtype dst);
emily_vec_fn emi_convert_avx2(emily_dtype src, emily_dtype dst);
emily_vec_fn emi_convert_avx512(emily_dtype src, emily_dtype dst);

/* The functions of an instruction set the compiler cannot target: no
 * SIMD path. */
#define EMI_UNARY_SIMD_NONE(ISA)                                                        \
    emily_vec_fn emi_unary_##ISA(emily_unary_op op, emily_dtype src, emily_dtype dst) { \
        (void)op;                                                                       \
        (void)src;                                                                      \
        (void)dst;                                                                      \
        return NULL;                                                                    \
    }                                                                                   \
    emily_vec_fn emi_convert_##ISA(emily_dtype src, emily_dtype dst) {                  \
        (void)src;                                                                      \
        (void)dst;                                                                      \
        return NULL;                                                                    \
    }

#endif
