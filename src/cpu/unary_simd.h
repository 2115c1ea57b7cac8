/* SIMD paths of the unary kernels for contiguous f32 data.
 *
 * unary_avx2.c and unary_avx512.c are compiled for their instruction set
 * with a target pragma (never with global -m flags) and only called
 * after a runtime check of the CPU; every other CPU takes the portable
 * scalar path of unary.c. Results stay within the corpus tolerance of
 * the reference (<= 1 ULP SLEEF functions against a correctly rounded
 * double computation), and Nx's special values are patched in. */
#ifndef EMILY_CPU_UNARY_SIMD_H
#define EMILY_CPU_UNARY_SIMD_H

#include <stdint.h>
#include "emily/ops.h"

typedef void (*emily_vec_f32_fn)(float *dst, const float *src, int64_t n);

/* The best SIMD function for op on this CPU, or NULL (use the scalar
 * path). EMILY_SIMD=0 in the environment disables the SIMD paths. */
emily_vec_f32_fn emily_unary_simd_f32(emily_unary_op op);

/* Per instruction set (NULL entries: not vectorized there). */
emily_vec_f32_fn emily_unary_avx2_f32(emily_unary_op op);
emily_vec_f32_fn emily_unary_avx512_f32(emily_unary_op op);

#endif
