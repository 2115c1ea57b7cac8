/* The CPU's fused quantized matmul (emily/ops_quant.h): x [M, K] times a
 * packed weight matrix, never decoding the whole matrix.
 *
 * Transposed (a dense layer, W {N, K}), two paths by M:
 *  - few rows (M below QMM_BLAS_MIN_ROWS, a decode step): quant_matvec.c
 *    decodes the codes in registers straight into the dots;
 *  - more rows (a prompt, a batch): quant_matmul_blas.c decodes blocks of
 *    W's rows into scratch and multiplies them with BLAS's gemm.
 * Both decode each code once per call (the few-rows path once per 4
 * rows of x) and run their blocks of W's rows as jobs on the engine's
 * pool (src/cpu/parallel.h).
 *
 * Not transposed (W {K, N}, quantized along N): columns in blocks of
 * COL_BLOCK; for each row k of W the block is decoded once and added,
 * times x[m, k], into every output row (an axpy per row of x). */
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/quant_decode.h"
#include "cpu/quant_matmul.h"
#include "cpu/quant_matmul_paths.h"

#define COL_BLOCK 256
/* Multiply-adds below which the product stays on the calling thread. */
#define QMM_PARALLEL_MIN ((int64_t)1 << 18)
/* Rows of x from which the BLAS path is taken (measured: bench/quant.c,
 * bench/RESULTS-quant.md). */
#define QMM_BLAS_MIN_ROWS 8
/* The BLAS path's blocks of W's rows: each gemm call packs all of x
 * again, a cost per block. So a block holds about max(256K, 256 M)
 * decoded values, at most QMM_BLAS_ROWS rows and QMM_BLAS_VALUES values
 * (4 MB in f32), and fewer rows when that would leave some of the
 * pool's threads without a block (measured at 37 and 1024 rows of x:
 * 64K-value blocks took 3-5% longer, 1M-value ones the same as 256K). */
#define QMM_BLAS_MIN_VALUES ((int64_t)1 << 18)
#define QMM_BLAS_ROWS 512
#define QMM_BLAS_VALUES ((int64_t)1 << 20)

#define QMM(W, sfx)                                                                                      \
    /* Column blocks [c0, c1) of COL_BLOCK: W {K, N} quantized along N. */                               \
    EMI_QUANT_HOT static void cols_##sfx(void *ctx, int64_t c0, int64_t c1) {                            \
        const qmm_job *j = ctx;                                                                          \
        W row[COL_BLOCK];                                                                                \
        const W *x = j->x;                                                                               \
        W *d = j->dst;                                                                                   \
        int64_t groups = j->n / j->gs, nbytes = j->n * j->bits / 8;                                      \
        for (int64_t c = c0; c < c1; c++) {                                                              \
            int64_t n0 = c * COL_BLOCK, nl = j->n - n0 < COL_BLOCK ? j->n - n0 : COL_BLOCK;              \
            for (int64_t mi = 0; mi < j->m; mi++) memset(d + mi * j->n + n0, 0, sizeof(W) * (size_t)nl); \
            for (int64_t kk = 0; kk < j->k; kk++) {                                                      \
                emi_quant_decode_span_##sfx(row, j->q + kk * nbytes, (const W *)j->s + kk * groups,      \
                                            (const W *)j->b + kk * groups, n0, nl, j->bits, j->gs);      \
                for (int64_t mi = 0; mi < j->m; mi++) {                                                  \
                    W xv = x[mi * j->k + kk], *restrict dr = d + mi * j->n + n0;                         \
                    _Pragma("omp simd") for (int64_t i = 0; i < nl; i++) dr[i] += xv * row[i];           \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }

QMM(float, f32)
QMM(double, f64)

static const void *at(const emily_tensor *t) {
    return (const char *)emily_tensor_base(t) + t->offset * (int64_t)emily_dtype_size(t->dtype);
}

static int64_t blas_rows(int64_t m, int64_t n, int64_t kp) {
    int64_t threads = omp_get_max_threads();
    int64_t rows = (n + 2 * threads - 1) / (2 * threads);
    int64_t values = m * 256 > QMM_BLAS_MIN_VALUES ? m * 256 : QMM_BLAS_MIN_VALUES;
    values = values < QMM_BLAS_VALUES ? values : QMM_BLAS_VALUES;
    int64_t most = values / kp < QMM_BLAS_ROWS ? values / kp : QMM_BLAS_ROWS;
    rows = rows < most ? rows : most;
    rows = (rows + 15) / 16 * 16;
    return rows < n ? rows : n;
}

/* W {N, K}: the few-rows or the BLAS path, both reading x re-laid out
 * for the lane decoder. */
static emily_status transposed(qmm_job *j, bool parallel) {
    int64_t kp = emi_qmm_lanes_padded_k(j);
    bool blas = j->m >= QMM_BLAS_MIN_ROWS && j->m <= INT_MAX && j->n <= INT_MAX && kp <= INT_MAX;
    void *xp = emi_qmm_lanes_layout(j);
    if (!xp)
        return emily_error(EMILY_ERR_MEMORY, "quantized_matmul: out of host memory for x's %lld x %lld copy",
                           (long long)j->m, (long long)kp);
    j->xp = xp;
    if (blas) {
        j->rows = blas_rows(j->m, j->n, kp);
        /* few blocks of W (a narrow N): x's rows cut too, at least 64 a job */
        int64_t blocks = (j->n + j->rows - 1) / j->rows, want = 2 * omp_get_max_threads();
        int64_t xblocks = blocks < want ? (want + blocks - 1) / blocks : 1;
        xblocks = xblocks < j->m / 64 ? xblocks : j->m / 64 > 1 ? j->m / 64 : 1;
        j->xrows = (j->m + xblocks - 1) / xblocks;
        emi_cpu_blas_one_thread();
        emi_cpu_parallel_ranges(blocks * ((j->m + j->xrows - 1) / j->xrows), 1, parallel, emi_qmm_blas_blocks, j);
    } else {
        int64_t tiles = (j->n + QMM_VEC_ROWS - 1) / QMM_VEC_ROWS;
        /* about 64K weights a job */
        int64_t per_job = ((int64_t)1 << 16) / (QMM_VEC_ROWS * j->k);
        emi_cpu_parallel_ranges(tiles, per_job > 0 ? per_job : 1, parallel, emi_qmm_vec_tiles, j);
    }
    free(xp);
    if (atomic_load(&j->failed))
        return emily_error(EMILY_ERR_MEMORY,
                           "quantized_matmul: out of host memory for a decoded block of %lld x "
                           "%lld weights",
                           (long long)j->rows, (long long)kp);
    return EMILY_OK;
}

emily_status emi_cpu_quant_matmul(emily_tensor *dst, const emily_tensor *x, const emily_tensor *q,
                                  const emily_tensor *scales, const emily_tensor *biases, int bits, int64_t group_size,
                                  bool transpose) {
    qmm_job j = {.x = at(x),
                 .s = at(scales),
                 .b = at(biases),
                 .q = at(q),
                 .dst = (void *)at(dst),
                 .m = dst->shape[0],
                 .n = dst->shape[1],
                 .k = x->shape[1],
                 .gs = group_size,
                 .bits = bits,
                 .f64 = dst->dtype == EMILY_F64};
    atomic_init(&j.failed, false);
    if (j.m == 0 || j.n == 0) return EMILY_OK;
    if (j.k == 0) {
        memset(j.dst, 0, (size_t)(j.m * j.n) * emily_dtype_size(dst->dtype));
        return EMILY_OK;
    }
    bool parallel = j.m * j.n * j.k >= QMM_PARALLEL_MIN;
    if (transpose) return transposed(&j, parallel);
    int64_t blocks = (j.n + COL_BLOCK - 1) / COL_BLOCK;
    emi_cpu_parallel_ranges(blocks, 1, parallel, j.f64 ? cols_f64 : cols_f32, &j);
    return EMILY_OK;
}
