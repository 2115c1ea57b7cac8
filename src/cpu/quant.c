/* The CPU's quantization kernels (emily/ops_quant.h, src/core/kernels.h's
 * quant family): group ranges, codes and dequantization, rows in jobs on
 * the engine's pool; every scalar step is core/quant_rules.h's, shared
 * with the CUDA engine, so both devices store the same codes. The fused
 * matmul is in quant_matmul.c. */
#include <stdlib.h>
#include "core/quant_rules.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/quant_decode.h"
#include "cpu/quant_matmul.h"

/* Work items below which a kernel stays on the calling thread. */
#define QUANT_PARALLEL_MIN ((int64_t)1 << 16)

typedef struct quant_job {
    const void *w;    /* [rows, cols] W (ranges, quantize) */
    const uint8_t *q; /* packed codes (dequantize) */
    uint8_t *qout;    /* packed codes (quantize) */
    void *s, *b;      /* [rows, groups] W */
    void *out;        /* [rows, cols] W (dequantize) */
    int64_t cols, gs;
    int bits;
} quant_job;

static const void *at(const emily_tensor *t) {
    return (const char *)emily_tensor_base(t) + t->offset * (int64_t)emily_dtype_size(t->dtype);
}

/* Rows [r0, r1): one job's share of each kernel, per compute type. */
#define QUANT_ROWS(W, sfx)                                                                                          \
    static void ranges_##sfx(void *ctx, int64_t r0, int64_t r1) {                                                   \
        const quant_job *j = ctx;                                                                                   \
        int64_t groups = j->cols / j->gs;                                                                           \
        for (int64_t r = r0; r < r1; r++)                                                                           \
            for (int64_t g = 0; g < groups; g++) {                                                                  \
                const W *v = (const W *)j->w + r * j->cols + g * j->gs;                                             \
                W lo = (W)INFINITY, hi = (W)-INFINITY;                                                              \
                for (int64_t i = 0; i < j->gs; i++) { /* NaNs compare false: skipped */                             \
                    if (v[i] < lo) lo = v[i];                                                                       \
                    if (v[i] > hi) hi = v[i];                                                                       \
                }                                                                                                   \
                ((W *)j->s)[r * groups + g] = emi_quant_scale_##sfx(lo, hi, j->bits);                               \
                ((W *)j->b)[r * groups + g] = emi_quant_bias_##sfx(lo, hi);                                         \
            }                                                                                                       \
    }                                                                                                               \
    static void codes_##sfx(void *ctx, int64_t r0, int64_t r1) {                                                    \
        const quant_job *j = ctx;                                                                                   \
        int64_t groups = j->cols / j->gs, per = 8 / j->bits, nbytes = j->cols / per;                                \
        for (int64_t r = r0; r < r1; r++) {                                                                         \
            const W *v = (const W *)j->w + r * j->cols;                                                             \
            const W *s = (const W *)j->s + r * groups, *b = (const W *)j->b + r * groups;                           \
            uint8_t *o = j->qout + r * nbytes;                                                                      \
            for (int64_t i = 0; i < nbytes; i++) {                                                                  \
                unsigned byte = 0;                                                                                  \
                for (int e = 0; e < per; e++) {                                                                     \
                    int64_t k = i * per + e, g = k / j->gs;                                                         \
                    byte |= emi_quant_code_##sfx(v[k], s[g], b[g], j->bits) << (e * j->bits);                       \
                }                                                                                                   \
                o[i] = (uint8_t)byte;                                                                               \
            }                                                                                                       \
        }                                                                                                           \
    }                                                                                                               \
    static void decode_##sfx(void *ctx, int64_t r0, int64_t r1) {                                                   \
        const quant_job *j = ctx;                                                                                   \
        int64_t groups = j->cols / j->gs, nbytes = j->cols * j->bits / 8;                                           \
        for (int64_t r = r0; r < r1; r++)                                                                           \
            emi_quant_decode_span_##sfx((W *)j->out + r * j->cols, j->q + r * nbytes, (const W *)j->s + r * groups, \
                                        (const W *)j->b + r * groups, 0, j->cols, j->bits, j->gs);                  \
    }

QUANT_ROWS(float, f32)
QUANT_ROWS(double, f64)

/* Runs fn_f32 or fn_f64 (by rows_of's type) over the rows of rows_of
 * ([rows, cols]: w, or dst for dequantize), j filled in with the scales,
 * biases and group layout. */
static emily_status run_rows(quant_job j, const emily_tensor *rows_of, const emily_tensor *scales,
                             const emily_tensor *biases, int bits, int64_t group_size, emily_range_fn fn_f32,
                             emily_range_fn fn_f64) {
    j.s = (void *)at(scales);
    j.b = (void *)at(biases);
    j.cols = rows_of->shape[1];
    j.gs = group_size;
    j.bits = bits;
    int64_t rows = rows_of->shape[0], cols = j.cols > 0 ? j.cols : 1;
    int64_t per_job = QUANT_PARALLEL_MIN / 4 / cols;
    emi_cpu_parallel_ranges(rows, per_job > 0 ? per_job : 1, rows * cols >= QUANT_PARALLEL_MIN,
                            rows_of->dtype == EMILY_F64 ? fn_f64 : fn_f32, &j);
    return EMILY_OK;
}

static emily_status cpu_ranges(emily_tensor *scales, emily_tensor *biases, const emily_tensor *w, int bits,
                               int64_t group_size) {
    quant_job j = {.w = at(w)};
    return run_rows(j, w, scales, biases, bits, group_size, ranges_f32, ranges_f64);
}

static emily_status cpu_quantize(emily_tensor *q, const emily_tensor *w, const emily_tensor *scales,
                                 const emily_tensor *biases, int bits, int64_t group_size) {
    quant_job j = {.w = at(w), .qout = (uint8_t *)at(q)};
    return run_rows(j, w, scales, biases, bits, group_size, codes_f32, codes_f64);
}

static emily_status cpu_dequantize(emily_tensor *dst, const emily_tensor *q, const emily_tensor *scales,
                                   const emily_tensor *biases, int bits, int64_t group_size) {
    quant_job j = {.q = at(q), .out = (void *)at(dst)};
    return run_rows(j, dst, scales, biases, bits, group_size, decode_f32, decode_f64);
}

const struct emily_quant_kernels emi_cpu_quant_kernels = {
    .ranges = cpu_ranges,
    .quantize = cpu_quantize,
    .dequantize = cpu_dequantize,
    .matmul = emi_cpu_quant_matmul,
};
