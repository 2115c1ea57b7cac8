/* The dot family's exact real product (src/cpu/dot_exact.c).
 *
 * dst[b] = a[b] x bm[b] for rank-3 views a [B, M, K], bm [B, K, N] of any
 * real dtypes (any strides, 0 for a broadcast batch) into a fresh
 * contiguous dst [B, M, N] of dtype f64, f32, f16 or bf16, computed as
 * Nx.BinaryBackend computes a dot: every operand value read into f64 (as
 * dot_load.h reads it), each product rounded to f64, the products added
 * in contraction order starting from +0.0, never fused, and the f64 total
 * rounded once to dst's dtype. K > 0. */
#ifndef EMILY_CPU_DOT_EXACT_H
#define EMILY_CPU_DOT_EXACT_H

#include "core/engine.h"

emily_status emily_cpu_exact_real_gemm(emily_tensor *dst, const emily_tensor *a,
                                       const emily_tensor *bm);

#endif
