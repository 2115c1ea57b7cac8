/* x's rows re-laid out for the quantized matmul's lane decoder
 * (src/cpu/quant_lanes.h): per chunk of the codes, field 0's elements,
 * then field 1's, ...; rows padded with zeros to whole chunks. Rows in
 * ranges on the engine's pool (for many rows of x this copy is a cost
 * of the order of the decoding's); the field count a constant in each
 * copy loop, so that it is unrolled. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/parallel.h"
#include "cpu/quant_lanes.h"
#include "cpu/quant_matmul_paths.h"

/* Rows [m0, m1) of x into xp, FIELDS = 32 / bits. */
#define LAYOUT_ROWS(W, sfx, FIELDS)                                                                  \
    static void rows_##sfx##_##FIELDS(const qmm_job *j, W *xp, int64_t kp, int64_t m0, int64_t m1) { \
        enum { VL = VL_##sfx, CHUNK = VL_##sfx * (FIELDS) };                                         \
        for (int64_t m = m0; m < m1; m++) {                                                          \
            const W *xr = (const W *)j->x + m * j->k;                                                \
            W *out = xp + m * kp;                                                                    \
            int64_t c = 0;                                                                           \
            for (; c + CHUNK <= j->k; c += CHUNK, out += CHUNK)                                      \
                for (int i = 0; i < VL; i++)                                                         \
                    _Pragma("GCC unroll 16") for (int e = 0; e < (FIELDS); e++)                      \
                        out[e * VL + i] = xr[c + i * (FIELDS) + e];                                  \
            if (c < j->k) {                                                                          \
                /* the last, partial chunk, zeros past K */                                          \
                memset(out, 0, sizeof(W) * CHUNK);                                                   \
                for (int64_t i = 0; i < VL; i++)                                                     \
                    for (int64_t e = 0; e < (FIELDS) && c + i * (FIELDS) + e < j->k; e++)            \
                        out[e * VL + i] = xr[c + i * (FIELDS) + e];                                  \
            }                                                                                        \
        }                                                                                            \
    }

#define LAYOUT(W, sfx)                                                               \
    LAYOUT_ROWS(W, sfx, 4)                                                           \
    LAYOUT_ROWS(W, sfx, 8)                                                           \
    LAYOUT_ROWS(W, sfx, 16)                                                          \
    static void layout_rows_##sfx(const qmm_job *j, W *xp, int64_t m0, int64_t m1) { \
        int64_t kp = qmm_padded_k(VL_##sfx, j->bits, j->k);                          \
        if (j->bits == 8) rows_##sfx##_4(j, xp, kp, m0, m1);                         \
        else if (j->bits == 4) rows_##sfx##_8(j, xp, kp, m0, m1);                    \
        else rows_##sfx##_16(j, xp, kp, m0, m1);                                     \
    }

LAYOUT(float, f32)
LAYOUT(double, f64)

typedef struct layout_job {
    const qmm_job *j;
    void *xp;
} layout_job;

static void layout_range(void *ctx, int64_t m0, int64_t m1) {
    const layout_job *l = ctx;
    if (l->j->f64) layout_rows_f64(l->j, l->xp, m0, m1);
    else layout_rows_f32(l->j, l->xp, m0, m1);
}

int64_t emi_qmm_lanes_padded_k(const qmm_job *j) { return qmm_padded_k(j->f64 ? VL_f64 : VL_f32, j->bits, j->k); }

void *emi_qmm_lanes_layout(const qmm_job *j) {
    int64_t kp = emi_qmm_lanes_padded_k(j);
    size_t es = j->f64 ? sizeof(double) : sizeof(float);
    void *xp = malloc(es * (size_t)(j->m * kp));
    if (!xp) return NULL;
    layout_job l = {j, xp};
    /* about 16K elements a job */
    int64_t per_job = (int64_t)16384 / kp > 0 ? (int64_t)16384 / kp : 1;
    emi_cpu_parallel_ranges(j->m, per_job, j->m * kp >= ((int64_t)1 << 16), layout_range, &l);
    return xp;
}
