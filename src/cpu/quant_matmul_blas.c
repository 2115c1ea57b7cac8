/* The quantized matmul's many-rows path (a prompt, a batch of
 * sentences): a block of j->rows rows of W {N, K} is decoded whole into
 * scratch by the lane decoder (src/cpu/quant_lanes.h: each weight the
 * header's A(A(q * s) + b), the elements of each chunk in the decoder's
 * order, K padded to whole chunks with zero weights) and multiplied by
 * BLAS's gemm with all of x (re-laid out in the same order, padded with
 * zeros), x {M, Kp} times the block transposed into the block's columns
 * of out. Each code is decoded once per call, whatever M is (once per
 * block of x's rows when a few blocks of W's rows are cut by x's rows as
 * well, to give every thread work), and the product runs at BLAS's
 * speed. The blocks are jobs on the engine's
 * pool, BLAS on one thread in each (as src/cpu/dot.c runs it). A job's
 * scratch is its own, taken per job: at most (threads) x rows x Kp
 * values exist at once, never the whole of W. */
#include <cblas.h>
#include <stdbool.h>
#include <stdlib.h>
#include "cpu/quant_lanes.h"
#include "cpu/quant_matmul_paths.h"

#define DECODE_ROWS(W, sfx, BITS)                                                                                 \
    EMI_QUANT_INLINE void decode_##sfx##_##BITS(const qmm_job *j, W *out, int64_t kp, int64_t n0, int64_t rows) { \
        int64_t groups = j->k / j->gs, nbytes = j->k * (BITS) / 8;                                                \
        int64_t chunk = QMM_CHUNK(VL_##sfx, BITS), whole = j->k / chunk;                                          \
        int gpc = qmm_groups_per_chunk(VL_##sfx, BITS, j->gs), gshift = qmm_log2(j->gs);                          \
        for (int64_t r = 0; r < rows; r++) {                                                                      \
            const uint8_t *q = j->q + (n0 + r) * nbytes;                                                          \
            const W *s = (const W *)j->s + (n0 + r) * groups, *b = (const W *)j->b + (n0 + r) * groups;           \
            for (int64_t c = 0; c * chunk < kp; c++) {                                                            \
                chunk_##sfx ch;                                                                                   \
                if (c < whole) qmm_chunk_##sfx(&ch, q, s, b, c, gshift, BITS, gpc);                               \
                else qmm_chunk_tail_##sfx(&ch, q, s, b, c, j->k, gshift, BITS);                                   \
                _Pragma("GCC unroll 16") for (int e = 0; e < 32 / (BITS); e++) {                                  \
                    v_##sfx w;                                                                                    \
                    qmm_field_##sfx(&w, &ch, e, BITS);                                                            \
                    memcpy(out + r * kp + c * chunk + e * VL_##sfx, &w, sizeof w);                                \
                }                                                                                                 \
            }                                                                                                     \
        }                                                                                                         \
    }

#define BLAS_BLOCKS(W, sfx, GEMM)                                                                                     \
    DECODE_ROWS(W, sfx, 2)                                                                                            \
    DECODE_ROWS(W, sfx, 4)                                                                                            \
    DECODE_ROWS(W, sfx, 8)                                                                                            \
    EMI_QUANT_HOT static void decode_rows_##sfx(const qmm_job *j, W *out, int64_t kp, int64_t n0, int64_t rows) {     \
        if (j->bits == 4) decode_##sfx##_4(j, out, kp, n0, rows);                                                     \
        else if (j->bits == 8) decode_##sfx##_8(j, out, kp, n0, rows);                                                \
        else decode_##sfx##_2(j, out, kp, n0, rows);                                                                  \
    }                                                                                                                 \
    static void blocks_##sfx(qmm_job *j, int64_t t0, int64_t t1) {                                                    \
        int64_t kp = emi_qmm_lanes_padded_k(j), xblocks = (j->m + j->xrows - 1) / j->xrows;                           \
        W *tile = malloc(sizeof(W) * (size_t)(j->rows * kp));                                                         \
        if (!tile) {                                                                                                  \
            atomic_store(&j->failed, true);                                                                           \
            return;                                                                                                   \
        }                                                                                                             \
        int64_t decoded = -1;                                                                                         \
        for (int64_t t = t0; t < t1; t++) {                                                                           \
            int64_t blk = t / xblocks, m0 = (t % xblocks) * j->xrows;                                                 \
            int64_t n0 = blk * j->rows, rows = j->n - n0 < j->rows ? j->n - n0 : j->rows;                             \
            int64_t ms = j->m - m0 < j->xrows ? j->m - m0 : j->xrows;                                                 \
            if (blk != decoded) decode_rows_##sfx(j, tile, kp, n0, rows), decoded = blk;                              \
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)ms, (int)rows, (int)kp, 1, (const W *)j->xp + m0 * kp, \
                 (int)kp, tile, (int)kp, 0, (W *)j->dst + m0 * j->n + n0, (int)j->n);                                 \
        }                                                                                                             \
        free(tile);                                                                                                   \
    }

BLAS_BLOCKS(float, f32, cblas_sgemm)
BLAS_BLOCKS(double, f64, cblas_dgemm)

void emi_qmm_blas_blocks(void *ctx, int64_t b0, int64_t b1) {
    qmm_job *j = ctx;
    if (j->f64) blocks_f64(j, b0, b1);
    else blocks_f32(j, b0, b1);
}
