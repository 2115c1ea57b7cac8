/* FAST products of a few rows by a bf16 matrix read in place
 * (src/cpu/dot_bf16_rows.c). */
#ifndef EMILY_CPU_DOT_BF16_ROWS_H
#define EMILY_CPU_DOT_BF16_ROWS_H

#include "core/engine.h"

/* Whether emi_cpu_fast_bf16_rows takes these operands: M <= 4, bm bf16
 * stored with K innermost (the transpose of a [N, K] weight matrix:
 * bm->strides[1] == 1), a f32 or bf16 (any strides), a CPU with AVX2 and
 * FMA. */
bool emi_cpu_fast_bf16_rows_applies(const emily_tensor *a, const emily_tensor *bm);

/* c [B, M, N] (f32, contiguous) = a [B, M, K] x bm [B, K, N] at FAST
 * precision, where emi_cpu_fast_bf16_rows_applies: each bf16 value
 * widened exactly to f32 in registers as it is read (bm is never
 * converted as a whole), f32 fused multiply-adds. An allocation failure
 * is EMILY_ERR_MEMORY. */
emily_status emi_cpu_fast_bf16_rows(const emily_tensor *a, const emily_tensor *bm, float *c);

#endif
