/* The quantized matmul's few-rows path (a decode step's x {1, K}, a
 * short prompt's handful of rows): W {N, K}'s codes are decoded into
 * vector registers (src/cpu/quant_lanes.h) and multiplied into the
 * outputs at once, nothing stored, so the product reads the packed
 * matrix once (at 4 bits an eighth of the f32 matrix's bytes).
 *
 * A tile is QMM_VEC_ROWS rows of W. Every decoded vector is used by up
 * to 4 rows of x (MR) and every vector of x by up to 4 rows of W (R),
 * the products summed in per-lane partial sums (MR * R vectors, kept in
 * registers), then across the lanes: an order the header allows. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/quant_lanes.h"
#include "cpu/quant_matmul_paths.h"

/* Chunk c of R rows of W (qr, sr, br: their codes, scales, biases;
 * tail: the last, partial chunk) into acc against MR rows of x (xr:
 * their re-laid-out rows). A row's chunk is read when its turn comes,
 * so that only one is live next to the accumulators. */
#define VEC_STEP(W, sfx, BITS, MR, R)                                                                    \
    EMI_QUANT_INLINE void step_##sfx##_##BITS##_##MR##x##R(                                              \
        v_##sfx acc[MR][R], const W *const *xr, int64_t c, const uint8_t *const *qr, const W *const *sr, \
        const W *const *br, int gshift, int gpc, bool tail, int64_t k) {                                 \
        enum { VL = VL_##sfx, FIELDS = 32 / (BITS) };                                                    \
        _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) {                                          \
            chunk_##sfx ch;                                                                              \
            if (tail) qmm_chunk_tail_##sfx(&ch, qr[r], sr[r], br[r], c, k, gshift, BITS);                \
            else qmm_chunk_##sfx(&ch, qr[r], sr[r], br[r], c, gshift, BITS, gpc);                        \
            _Pragma("GCC unroll 16") for (int e = 0; e < FIELDS; e++) {                                  \
                v_##sfx w;                                                                               \
                qmm_field_##sfx(&w, &ch, e, BITS);                                                       \
                _Pragma("GCC unroll 4") for (int m = 0; m < (MR); m++) {                                 \
                    v_##sfx xv;                                                                          \
                    memcpy(&xv, xr[m] + c * QMM_CHUNK(VL, BITS) + e * VL, sizeof xv);                    \
                    acc[m][r] += xv * w;                                                                 \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }

/* One kernel: MR rows of x (xr: their re-laid-out rows) against R rows
 * of W (qr, sr, br: their codes, scales, biases), out[m][r] the dots. */
#define VEC_KERNEL(W, sfx, BITS, MR, R)                                                                                \
    VEC_STEP(W, sfx, BITS, MR, R)                                                                                      \
    EMI_QUANT_INLINE void vec_##sfx##_##BITS##_##MR##x##R(const qmm_job *j, int gpc, const W *const *xr,               \
                                                          const uint8_t *const *qr, const W *const *sr,                \
                                                          const W *const *br, W out[MR][R]) {                          \
        v_##sfx acc[MR][R];                                                                                            \
        _Pragma("GCC unroll 4") for (int m = 0; m < (MR); m++) _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++)   \
            acc[m][r] = (v_##sfx){0};                                                                                  \
        int gshift = qmm_log2(j->gs);                                                                                  \
        int64_t whole = j->k / QMM_CHUNK(VL_##sfx, BITS);                                                              \
        for (int64_t c = 0; c < whole; c++)                                                                            \
            step_##sfx##_##BITS##_##MR##x##R(acc, xr, c, qr, sr, br, gshift, gpc, false, j->k);                        \
        if (whole * QMM_CHUNK(VL_##sfx, BITS) < j->k)                                                                  \
            step_##sfx##_##BITS##_##MR##x##R(acc, xr, whole, qr, sr, br, gshift, gpc, true, j->k);                     \
        _Pragma("GCC unroll 4") for (int m = 0; m < (MR); m++) _Pragma("GCC unroll 4") for (int r = 0; r < (R); r++) { \
            W t = 0;                                                                                                   \
            for (int i = 0; i < VL_##sfx; i++) t += acc[m][r][i];                                                      \
            out[m][r] = t;                                                                                             \
        }                                                                                                              \
    }

/* The kernels of one width: 1 row of x by 4 of W (a decode step), 2 by
 * 4, 4 by 2. */
#define VEC_WIDTH(W, sfx, BITS)                                                                              \
    VEC_KERNEL(W, sfx, BITS, 1, 4)                                                                           \
    VEC_KERNEL(W, sfx, BITS, 2, 4)                                                                           \
    VEC_KERNEL(W, sfx, BITS, 4, 2)                                                                           \
    EMI_QUANT_INLINE void vec_rows_##sfx##_##BITS(const qmm_job *j, int gpc, int64_t mr, const W *const *xr, \
                                                  const uint8_t **qr, const W **sr, const W **br,            \
                                                  W out[4][QMM_VEC_ROWS]) {                                  \
        if (mr == 1) {                                                                                       \
            vec_##sfx##_##BITS##_1x4(j, gpc, xr, qr, sr, br, out);                                           \
        } else if (mr == 2) {                                                                                \
            vec_##sfx##_##BITS##_2x4(j, gpc, xr, qr, sr, br, out);                                           \
        } else {                                                                                             \
            W half[4][2];                                                                                    \
            for (int h = 0; h < 2; h++) {                                                                    \
                vec_##sfx##_##BITS##_4x2(j, gpc, xr, qr + 2 * h, sr + 2 * h, br + 2 * h, half);              \
                for (int m = 0; m < 4; m++) out[m][2 * h] = half[m][0], out[m][2 * h + 1] = half[m][1];      \
            }                                                                                                \
        }                                                                                                    \
    }

#define VEC_TILES(W, sfx)                                                                                            \
    VEC_WIDTH(W, sfx, 2)                                                                                             \
    VEC_WIDTH(W, sfx, 4)                                                                                             \
    VEC_WIDTH(W, sfx, 8)                                                                                             \
    EMI_QUANT_HOT static void vec_tiles_##sfx(const qmm_job *j, int64_t t0, int64_t t1) {                            \
        const W *x = j->xp, *s = j->s, *b = j->b;                                                                    \
        W *d = j->dst;                                                                                               \
        int64_t groups = j->k / j->gs, nbytes = j->k * j->bits / 8;                                                  \
        int64_t kp = qmm_padded_k(VL_##sfx, j->bits, j->k);                                                          \
        int gpc = qmm_groups_per_chunk(VL_##sfx, j->bits, j->gs);                                                    \
        for (int64_t t = t0; t < t1; t++) {                                                                          \
            int64_t n0 = t * QMM_VEC_ROWS;                                                                           \
            const uint8_t *qr[QMM_VEC_ROWS];                                                                         \
            const W *sr[QMM_VEC_ROWS], *br[QMM_VEC_ROWS];                                                            \
            /* rows past N repeat the last one; their sums are dropped */                                            \
            for (int r = 0; r < QMM_VEC_ROWS; r++) {                                                                 \
                int64_t n = n0 + r < j->n ? n0 + r : j->n - 1;                                                       \
                qr[r] = j->q + n * nbytes, sr[r] = s + n * groups, br[r] = b + n * groups;                           \
            }                                                                                                        \
            for (int64_t m0 = 0; m0 < j->m;) {                                                                       \
                /* 1, 2 or 4 rows of x (3: 4, the last repeated, its sums dropped) */                                \
                int64_t left = j->m - m0, mr = left >= 3 ? 4 : left;                                                 \
                const W *xr[4];                                                                                      \
                for (int m = 0; m < 4; m++) xr[m] = x + (m < left ? m0 + m : j->m - 1) * kp;                         \
                W out[4][QMM_VEC_ROWS];                                                                              \
                if (j->bits == 4) vec_rows_##sfx##_4(j, gpc, mr, xr, qr, sr, br, out);                               \
                else if (j->bits == 8) vec_rows_##sfx##_8(j, gpc, mr, xr, qr, sr, br, out);                          \
                else vec_rows_##sfx##_2(j, gpc, mr, xr, qr, sr, br, out);                                            \
                for (int64_t m = 0; m < mr && m < left; m++)                                                         \
                    for (int r = 0; r < QMM_VEC_ROWS && n0 + r < j->n; r++) d[(m0 + m) * j->n + n0 + r] = out[m][r]; \
                m0 += mr < left ? mr : left;                                                                         \
            }                                                                                                        \
        }                                                                                                            \
    }

VEC_TILES(float, f32)
VEC_TILES(double, f64)

void emi_qmm_vec_tiles(void *ctx, int64_t t0, int64_t t1) {
    const qmm_job *j = ctx;
    if (j->f64) vec_tiles_f64(j, t0, t1);
    else vec_tiles_f32(j, t0, t1);
}
