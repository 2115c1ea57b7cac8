/* The CPU's fused quantized matmul (emily/ops_quant.h): x [M, K] times a
 * packed weight matrix, never decoding the whole matrix.
 *
 * Transposed (a dense layer, W {N, K}): the weights are walked in tiles of
 * TILE_ROWS rows by TILE_K columns; a tile is decoded into a buffer that
 * stays in L1 (16 KB in f32) and every row of x is dotted with its rows
 * before the next tile is decoded, so each code is decoded once per call
 * whatever M is, and for decode-size x (M of a few rows) the matmul reads
 * the packed matrix once, a quarter (4 bits) of the f32 matrix's bytes.
 * Tiles of rows are jobs on the engine's pool (src/cpu/parallel.h). Each
 * output accumulates its K-blocks in order, each block's dot as
 * `omp simd` partial sums (the reordering the header allows).
 *
 * Not transposed (W {K, N}, quantized along N): columns in blocks of
 * COL_BLOCK; for each row k of W the block is decoded once and added,
 * times x[m, k], into every output row (an axpy per row of x). */
#include <string.h>
#include "cpu/parallel.h"
#include "cpu/quant_decode.h"
#include "cpu/quant_matmul.h"

#define TILE_ROWS 8
#define TILE_K 512 /* a multiple of every group size */
#define COL_BLOCK 256
/* Multiply-adds below which the product stays on the calling thread. */
#define QMM_PARALLEL_MIN ((int64_t)1 << 18)

typedef struct qmm_job {
    const void *x, *s, *b;
    const uint8_t *q;
    void *dst;
    int64_t m, n, k, gs;
    int bits;
} qmm_job;

#define QMM(W, sfx)                                                                          \
    EMI_QUANT_HOT static W dot_##sfx(const W *restrict a, const W *restrict b, int64_t n) {  \
        W acc = 0;                                                                           \
        _Pragma("omp simd reduction(+ : acc)") for (int64_t i = 0; i < n; i++) acc +=        \
            a[i] * b[i];                                                                     \
        return acc;                                                                          \
    }                                                                                        \
    /* Tiles [t0, t1) of TILE_ROWS weight rows: their outputs, all of x's rows. */          \
    EMI_QUANT_HOT static void tiles_##sfx(void *ctx, int64_t t0, int64_t t1) {               \
        const qmm_job *j = ctx;                                                              \
        W tile[TILE_ROWS][TILE_K];                                                           \
        const W *x = j->x;                                                                   \
        W *d = j->dst;                                                                       \
        int64_t groups = j->k / j->gs, nbytes = j->k * j->bits / 8;                          \
        for (int64_t t = t0; t < t1; t++) {                                                  \
            int64_t n0 = t * TILE_ROWS, nr = j->n - n0 < TILE_ROWS ? j->n - n0 : TILE_ROWS;  \
            for (int64_t mi = 0; mi < j->m; mi++)                                            \
                for (int64_t r = 0; r < nr; r++) d[mi * j->n + n0 + r] = 0;                  \
            for (int64_t k0 = 0; k0 < j->k; k0 += TILE_K) {                                  \
                int64_t kl = j->k - k0 < TILE_K ? j->k - k0 : TILE_K;                        \
                for (int64_t r = 0; r < nr; r++)                                             \
                    emi_quant_decode_span_##sfx(tile[r], j->q + (n0 + r) * nbytes,           \
                                                (const W *)j->s + (n0 + r) * groups,         \
                                                (const W *)j->b + (n0 + r) * groups, k0, kl, \
                                                j->bits, j->gs);                             \
                for (int64_t mi = 0; mi < j->m; mi++) {                                      \
                    const W *xr = x + mi * j->k + k0;                                        \
                    W *dr = d + mi * j->n + n0;                                              \
                    for (int64_t r = 0; r < nr; r++) dr[r] += dot_##sfx(xr, tile[r], kl);    \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    /* Column blocks [c0, c1) of COL_BLOCK: W {K, N} quantized along N. */                   \
    EMI_QUANT_HOT static void cols_##sfx(void *ctx, int64_t c0, int64_t c1) {                \
        const qmm_job *j = ctx;                                                              \
        W row[COL_BLOCK];                                                                    \
        const W *x = j->x;                                                                   \
        W *d = j->dst;                                                                       \
        int64_t groups = j->n / j->gs, nbytes = j->n * j->bits / 8;                          \
        for (int64_t c = c0; c < c1; c++) {                                                  \
            int64_t n0 = c * COL_BLOCK, nl = j->n - n0 < COL_BLOCK ? j->n - n0 : COL_BLOCK;  \
            for (int64_t mi = 0; mi < j->m; mi++) memset(d + mi * j->n + n0, 0, sizeof(W) * (size_t)nl); \
            for (int64_t kk = 0; kk < j->k; kk++) {                                          \
                emi_quant_decode_span_##sfx(row, j->q + kk * nbytes,                         \
                                            (const W *)j->s + kk * groups,                   \
                                            (const W *)j->b + kk * groups, n0, nl, j->bits,  \
                                            j->gs);                                          \
                for (int64_t mi = 0; mi < j->m; mi++) {                                      \
                    W xv = x[mi * j->k + kk], *restrict dr = d + mi * j->n + n0;             \
                    _Pragma("omp simd") for (int64_t i = 0; i < nl; i++) dr[i] += xv * row[i]; \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    }

QMM(float, f32)
QMM(double, f64)

static const void *at(const emily_tensor *t) {
    return (const char *)emily_tensor_base(t) + t->offset * (int64_t)emily_dtype_size(t->dtype);
}

emily_status emi_cpu_quant_matmul(emily_tensor *dst, const emily_tensor *x, const emily_tensor *q,
                                  const emily_tensor *scales, const emily_tensor *biases, int bits,
                                  int64_t group_size, bool transpose) {
    qmm_job j = {.x = at(x), .s = at(scales), .b = at(biases), .q = at(q), .dst = (void *)at(dst),
                 .m = dst->shape[0], .n = dst->shape[1], .k = x->shape[1], .gs = group_size,
                 .bits = bits};
    bool f64 = dst->dtype == EMILY_F64;
    bool parallel = j.m * j.n * (j.k > 0 ? j.k : 1) >= QMM_PARALLEL_MIN;
    if (transpose) {
        int64_t tiles = (j.n + TILE_ROWS - 1) / TILE_ROWS;
        /* about 64K weights a job */
        int64_t per_job = ((int64_t)1 << 16) / (TILE_ROWS * (j.k > 0 ? j.k : 1));
        emi_cpu_parallel_ranges(tiles, per_job > 0 ? per_job : 1, parallel,
                                f64 ? tiles_f64 : tiles_f32, &j);
    } else {
        int64_t blocks = (j.n + COL_BLOCK - 1) / COL_BLOCK;
        emi_cpu_parallel_ranges(blocks, 1, parallel, f64 ? cols_f64 : cols_f32, &j);
    }
    return EMILY_OK;
}
