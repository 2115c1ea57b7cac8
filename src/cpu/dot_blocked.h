/* The dot family's blocked real products (src/cpu/dot_blocked.c).
 *
 * Both compute dst[b] = a[b] x bm[b] for rank-3 views a [B, M, K], bm
 * [B, K, N] of any real dtypes (any strides, 0 for a broadcast batch)
 * into a fresh contiguous dst [B, M, N]; K > 0.
 *
 * emi_cpu_exact_real_gemm (dst f64, f32, f16 or bf16): as
 * Nx.BinaryBackend computes a dot: every operand value read into f64 (as
 * dot_load.h reads it), each product rounded to f64, the products added
 * in contraction order starting from +0.0, never fused, and the f64 total
 * rounded once to dst's dtype.
 *
 * emi_cpu_fast_f32_gemm (dst f32, f16 or bf16): FAST precision, values
 * read into f32, fused multiply-adds in f32 in contraction order, the f32
 * total rounded once to dst's dtype. */
#ifndef EMILY_CPU_DOT_BLOCKED_H
#define EMILY_CPU_DOT_BLOCKED_H

#include "core/engine.h"

emily_status emi_cpu_exact_real_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm);
emily_status emi_cpu_fast_f32_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm);

/* FAST f32 products of 1 to 4 rows (dst, a, bm all f32, bm's and a's
 * innermost strides 1) as streams over bm: f32 fused multiply-adds in
 * contraction order from +0.0, the blocked FAST path's sequence. False
 * (nothing done) where it does not apply or the CPU lacks AVX-512. */
bool emi_cpu_fast_f32_gemv(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm);

#endif
