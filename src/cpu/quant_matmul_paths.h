/* The paths of the CPU's fused quantized matmul (src/cpu/quant_matmul.c
 * picks one): the job they share and their range functions, each run
 * over [lo, hi) of its own unit by the engine's pool. */
#ifndef EMILY_CPU_QUANT_MATMUL_PATHS_H
#define EMILY_CPU_QUANT_MATMUL_PATHS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* dst {m, n} = x {m, k} times W, W packed as q/s/b (bits, group gs); x,
 * s, b and dst of the accumulation type (f32, or f64 when f64). xp: x
 * re-laid out for the lane decoder (emi_qmm_lanes_layout); rows: W's
 * rows per block of the BLAS path, xrows: x's rows per job of it;
 * failed: set by a job that could not get its scratch. */
typedef struct qmm_job {
    const void *x, *xp, *s, *b;
    const uint8_t *q;
    void *dst;
    int64_t m, n, k, gs, rows, xrows;
    int bits;
    bool f64;
    atomic_bool failed;
} qmm_job;

/* Few rows of x, W {N, K}: units are tiles of QMM_VEC_ROWS rows of W. */
#define QMM_VEC_ROWS 4
void emi_qmm_vec_tiles(void *ctx, int64_t t0, int64_t t1);
/* x re-laid out for the lane decoder (src/cpu/quant_lanes.h) that both
 * paths read W with, in a new buffer (free() it; NULL when out of
 * memory): m rows of emi_qmm_lanes_padded_k(j) elements. */
void *emi_qmm_lanes_layout(const qmm_job *j);
int64_t emi_qmm_lanes_padded_k(const qmm_job *j);

/* Many rows of x, W {N, K}: units are (block of j->rows rows of W,
 * block of j->xrows rows of x) pairs, x's blocks varying fastest; W's
 * block decoded into scratch and multiplied by BLAS with x's (j->xp). */
void emi_qmm_blas_blocks(void *ctx, int64_t b0, int64_t b1);

#endif
