/* Packed codes decoded straight into vector registers, for the
 * quantized matmul's paths (src/cpu/quant_matvec.c decodes into its
 * dots, src/cpu/quant_matmul_blas.c into BLAS's blocks).
 *
 * A row's codes are read a chunk at a time: CHUNK_BYTES = 4 * VL bytes
 * (VL: a vector's lanes, 8 floats or 4 doubles), one 32-bit lane of a
 * vector per 4 bytes, so no widening is needed; field e (of 32 / bits)
 * of every lane is cut out with one shift and one mask and holds, in
 * lane i, element i * (32 / bits) + e of the chunk. A decoded vector
 * thus holds every (32 / bits)-th weight, and x's rows are re-laid out
 * once per call to match (emi_qmm_lanes_layout: per chunk, field 0's
 * elements, then field 1's, ...), padded with zeros to whole chunks.
 * The sums over K do not depend on that order beyond the reordering
 * the header allows.
 *
 * Each weight is decoded as the header says, A(A(q * s) + b): a
 * conversion of the (exact, < 256) code, one multiply and one add, no
 * fused multiply-add (-ffp-contract=off). GCC vector extensions, always
 * inlined into EMI_QUANT_HOT functions, so that each target clone
 * (AVX2, AVX-512, baseline) gets its ISA's instructions; vectors pass
 * through pointers (a vector argument or result by value has an ABI
 * that depends on the ISA, which GCC and clang warn about). */
#ifndef EMILY_CPU_QUANT_LANES_H
#define EMILY_CPU_QUANT_LANES_H

#include <stdint.h>
#include <string.h>
#include "cpu/quant_decode.h"

/* Elements of one chunk. */
#define QMM_CHUNK(VL, bits) ((int64_t)(VL)*32 / (bits))

#define QMM_LANE_TYPES(W, sfx, VLANES)                                  \
    enum { VL_##sfx = VLANES };                                         \
    typedef W v_##sfx __attribute__((vector_size(VLANES * sizeof(W)))); \
    typedef int32_t vi_##sfx __attribute__((vector_size(VLANES * 4)));  \
    typedef uint32_t vu_##sfx __attribute__((vector_size(VLANES * 4)));

QMM_LANE_TYPES(float, f32, 8)
QMM_LANE_TYPES(double, f64, 4)

/* Several groups' values across a vector's lanes (GCC builds a vector
 * from scalars through the stack; these are broadcasts and shuffles):
 * f32, 2 groups: lanes 0-3 and 4-7; 4 groups: pairs of lanes. f64, 2
 * groups: pairs of lanes; 4: one each. */
typedef float v4_f32 __attribute__((vector_size(16)));
typedef double v2_f64 __attribute__((vector_size(16)));
#define QMM_SPREAD_f32(out, v, gpc)                                                              \
    do {                                                                                         \
        if ((gpc) == 2) {                                                                        \
            v4_f32 lo = {(v)[0], (v)[0], (v)[0], (v)[0]}, hi = {(v)[1], (v)[1], (v)[1], (v)[1]}; \
            *(out) = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);                    \
        } else {                                                                                 \
            v4_f32 four;                                                                         \
            memcpy(&four, (v), sizeof four);                                                     \
            *(out) = __builtin_shufflevector(four, four, 0, 0, 1, 1, 2, 2, 3, 3);                \
        }                                                                                        \
    } while (0)
#define QMM_SPREAD_f64(out, v, gpc)                                 \
    do {                                                            \
        if ((gpc) == 2) {                                           \
            v2_f64 two;                                             \
            memcpy(&two, (v), sizeof two);                          \
            *(out) = __builtin_shufflevector(two, two, 0, 0, 1, 1); \
        } else {                                                    \
            memcpy((out), (v), sizeof *(out));                      \
        }                                                           \
    } while (0)

/* One chunk of a row: its codes, and each lane's scale and bias. */
#define QMM_LANE_CHUNK(sfx) \
    typedef struct {        \
        vu_##sfx raw;       \
        v_##sfx s, b;       \
    } chunk_##sfx;

QMM_LANE_CHUNK(f32)
QMM_LANE_CHUNK(f64)

#define QMM_LANES(W, sfx)                                                                                         \
    /* A group's value for every lane, GPC whole groups in the chunk    \
     * (lane i in group i * GPC / VL; GPC > 1 for groups smaller than a \
     * chunk), from broadcasts and shuffles of the GPC values. */                                         \
    EMI_QUANT_INLINE void qmm_spread_##sfx(v_##sfx *out, const W *v, int gpc) {                                   \
        if (gpc == 1) {                                                                                           \
            v_##sfx r = {0};                                                                                      \
            for (int i = 0; i < VL_##sfx; i++) r[i] = v[0];                                                       \
            *out = r;                                                                                             \
        } else {                                                                                                  \
            QMM_SPREAD_##sfx(out, v, gpc);                                                                        \
        }                                                                                                         \
    }                                                                                                             \
    /* Whole chunk c of a row (q, s, b: its codes, scales, biases; groups \
     * of 1 << gshift), gpc (1, 2 or 4) a constant in each branch. */                                       \
    EMI_QUANT_INLINE void qmm_chunk_##sfx(chunk_##sfx *ch, const uint8_t *q, const W *s, const W *b, int64_t c,   \
                                          int gshift, int bits, int gpc) {                                        \
        int64_t g = (c * QMM_CHUNK(VL_##sfx, bits)) >> gshift;                                                    \
        memcpy(&ch->raw, q + c * 4 * VL_##sfx, sizeof ch->raw);                                                   \
        if (gpc == 1) qmm_spread_##sfx(&ch->s, s + g, 1), qmm_spread_##sfx(&ch->b, b + g, 1);                     \
        else if (gpc == 2) qmm_spread_##sfx(&ch->s, s + g, 2), qmm_spread_##sfx(&ch->b, b + g, 2);                \
        else qmm_spread_##sfx(&ch->s, s + g, 4), qmm_spread_##sfx(&ch->b, b + g, 4);                              \
    }                                                                                                             \
    /* The last, partial chunk c (K not a multiple of a chunk's            \
     * elements): a zero-padded copy of its codes, scale and bias 0 past K \
     * (weights exactly 0, against x's zero padding). */                                      \
    static inline void qmm_chunk_tail_##sfx(chunk_##sfx *ch, const uint8_t *q, const W *s, const W *b, int64_t c, \
                                            int64_t k, int gshift, int bits) {                                    \
        int64_t e0 = c * QMM_CHUNK(VL_##sfx, bits);                                                               \
        uint8_t pad[4 * VL_##sfx] = {0};                                                                          \
        memcpy(pad, q + c * 4 * VL_##sfx, (size_t)((k - e0) * bits / 8));                                         \
        memcpy(&ch->raw, pad, sizeof ch->raw);                                                                    \
        for (int i = 0; i < VL_##sfx; i++) {                                                                      \
            /* lane i: elements e0 + i * 32 / bits ..., in one group */                                           \
            int64_t el = e0 + (int64_t)i * (32 / bits);                                                           \
            ch->s[i] = el < k ? s[el >> gshift] : 0;                                                              \
            ch->b[i] = el < k ? b[el >> gshift] : 0;                                                              \
        }                                                                                                         \
    }                                                                                                             \
    /* Field e of a chunk's lanes, decoded: W(W(q * s) + b). */                                                   \
    EMI_QUANT_INLINE void qmm_field_##sfx(v_##sfx *out, const chunk_##sfx *ch, int e, int bits) {                 \
        vi_##sfx code = (vi_##sfx)((ch->raw >> (unsigned)(e * bits)) & ((1u << bits) - 1u));                      \
        v_##sfx w = __builtin_convertvector(code, v_##sfx) * ch->s;                                               \
        *out = w + ch->b;                                                                                         \
    }

QMM_LANES(float, f32)
QMM_LANES(double, f64)

/* Groups per chunk for a row's chunks (1, 2 or 4). */
static inline int qmm_groups_per_chunk(int64_t vl, int bits, int64_t gs) {
    int64_t chunk = QMM_CHUNK(vl, bits);
    return chunk > gs ? (int)(chunk / gs) : 1;
}

/* log2 of a group size (a power of two). */
static inline int qmm_log2(int64_t gs) {
    int shift = 0;
    while (((int64_t)1 << shift) < gs) shift++;
    return shift;
}

/* K padded to whole chunks. */
static inline int64_t qmm_padded_k(int64_t vl, int bits, int64_t k) {
    int64_t chunk = QMM_CHUNK(vl, bits);
    return (k + chunk - 1) / chunk * chunk;
}

#endif
