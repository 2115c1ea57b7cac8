/* The dot family's kernel table, filled by each device's engine.
 *
 * The op layer (src/ops/dot.c) validates, infers the output and turns
 * any Nx dot into a batched matrix product over rank-3 views:
 *
 *     dst[b] = a[b] x bm[b]     a: [B, M, K]   bm: [B, K, N]   dst: [B, M, N]
 *
 * Each matrix of `a` and `bm` has a layout BLAS can read directly (see
 * emily_gemm_layout_of): one of its two strides is 1 and the other is a
 * valid leading dimension; the batch stride is anything (0 when the
 * operand was broadcast). The op layer copies an operand only when no
 * such view exists. `dst` is a fresh contiguous tensor.
 *
 * Types: `a` and `bm` may have any dtypes (also different ones); the
 * kernel reads each value into the output's domain as Nx.BinaryBackend
 * does: integers exactly (integer dots wrap in dst's width), floats and
 * complex numbers at the compute precision that `precision` selects
 * (see emily/ops_dot.h), then rounds once to dst's dtype (bf16 by Nx's
 * round-to-f32-then-truncate rule). The op layer guarantees dst's kind
 * can hold the inputs' (no float input to an integer dst, no complex
 * input to a real dst). K may be 0: dst is then all zeros.
 *
 * This header is also compiled by nvcc (src/cuda/dot.cu): keep it valid
 * C11 and C++. */
#ifndef EMILY_OPS_DOT_KERNELS_H
#define EMILY_OPS_DOT_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct emily_dot_kernels {
    emily_status (*gemm)(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm,
                         emily_dot_precision precision);
};

/* How BLAS reads one rows x cols matrix with strides (srow, scol):
 * column_major false: row-major, element (r, c) at r * ld + c;
 * column_major true: column-major, element (r, c) at r + c * ld. */
typedef struct emily_gemm_layout {
    bool column_major;
    int64_t ld;
} emily_gemm_layout;

/* True (and *out filled) if the matrix can be handed to BLAS as it is.
 * Strides of size-1 dimensions do not matter; ld is always >= 1 and
 * >= the contiguous dimension's extent, as BLAS requires. */
static inline bool emily_gemm_layout_of(int64_t rows, int64_t cols, int64_t srow, int64_t scol,
                                        emily_gemm_layout *out) {
    int64_t mc = cols > 1 ? cols : 1, mr = rows > 1 ? rows : 1;
    if ((cols <= 1 || scol == 1) && (rows <= 1 || srow >= mc)) {
        out->column_major = false;
        out->ld = rows <= 1 ? mc : srow;
        return true;
    }
    if ((rows <= 1 || srow == 1) && (cols <= 1 || scol >= mr)) {
        out->column_major = true;
        out->ld = cols <= 1 ? mr : scol;
        return true;
    }
    return false;
}

/* Device tables (NULL where a device has none). */
extern const struct emily_dot_kernels emi_cuda_dot_kernels;

#ifdef __cplusplus
}
#endif
#endif
