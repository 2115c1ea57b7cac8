/* FAST products of a few rows by a bf16 matrix read in place
 * (src/cpu/dot_bf16_rows.c). */
#ifndef EMILY_CPU_DOT_BF16_ROWS_H
#define EMILY_CPU_DOT_BF16_ROWS_H

#include "core/engine.h"

/* c [B, M, N] (f32, contiguous) = a [B, M, K] x bm [B, K, N] at FAST
 * precision for M <= 4 and a bm of bf16 stored with K innermost (the
 * transpose of a [N, K] weight matrix: bm->strides[1] == 1), a f32 or
 * bf16 (any strides): each bf16 value widened exactly to f32 in registers
 * as it is read (bm is never converted as a whole), f32 fused
 * multiply-adds. *done is false, and nothing is written, where it does
 * not apply (other shapes or types, a CPU without AVX2 and FMA); an
 * allocation failure is EMILY_ERR_MEMORY. */
emily_status emi_cpu_fast_bf16_rows(const emily_tensor *a, const emily_tensor *bm, float *c, bool *done);

/* Whether emi_cpu_fast_bf16_rows takes these operands (no allocation). */
bool emi_cpu_fast_bf16_rows_applies(const emily_tensor *a, const emily_tensor *bm);

#endif
