/* x's rows re-laid out for the quantized matmul's lane decoder
 * (src/cpu/quant_lanes.h): per chunk of the codes, field 0's elements,
 * then field 1's, ...; rows padded with zeros to whole chunks. */
#include <stdlib.h>
#include "cpu/quant_lanes.h"
#include "cpu/quant_matmul_paths.h"

#define LAYOUT(W, sfx)                                                                        \
    static W *layout_##sfx(const qmm_job *j) {                                                \
        const W *x = j->x;                                                                    \
        int64_t fields = 32 / j->bits, chunk = QMM_CHUNK(VL_##sfx, j->bits);                  \
        int64_t kp = qmm_padded_k(VL_##sfx, j->bits, j->k);                                   \
        W *xp = calloc((size_t)(j->m * kp), sizeof(W));                                       \
        if (!xp) return NULL;                                                                 \
        for (int64_t m = 0; m < j->m; m++) {                                                  \
            const W *xr = x + m * j->k;                                                       \
            W *out = xp + m * kp;                                                             \
            int64_t c = 0;                                                                    \
            for (; c + chunk <= j->k; c += chunk)                                             \
                for (int64_t e = 0; e < fields; e++)                                          \
                    for (int64_t i = 0; i < VL_##sfx; i++)                                    \
                        out[c + e * VL_##sfx + i] = xr[c + i * fields + e];                   \
            /* the last, partial chunk; the rest of it stays 0 */                             \
            for (int64_t i = 0; i < VL_##sfx; i++)                                            \
                for (int64_t e = 0; e < fields && c + i * fields + e < j->k; e++)             \
                    out[c + e * VL_##sfx + i] = xr[c + i * fields + e];                       \
        }                                                                                     \
        return xp;                                                                            \
    }

LAYOUT(float, f32)
LAYOUT(double, f64)

void *emi_qmm_lanes_layout(const qmm_job *j) {
    return j->f64 ? (void *)layout_f64(j) : (void *)layout_f32(j);
}

int64_t emi_qmm_lanes_padded_k(const qmm_job *j) {
    return qmm_padded_k(j->f64 ? VL_f64 : VL_f32, j->bits, j->k);
}
