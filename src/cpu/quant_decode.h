/* Decoding packed codes into weights on the CPU (emily/ops_quant.h), for
 * the dequantize kernel and the quantized matmul's tiles: one span of a
 * row at a time, a group at a time, each group's codes unpacked a byte at
 * a time with the width a constant (2, 4 or 8 bits), so that the compiler
 * turns the loops into shifts, masks, conversions and one multiply and
 * one add a weight (core/quant_rules.h's decode, no fused multiply-add). */
#ifndef EMILY_CPU_QUANT_DECODE_H
#define EMILY_CPU_QUANT_DECODE_H

#include <stdint.h>
#include "core/quant_rules.h"

#include "cpu/hot_clones.h"
#define EMI_QUANT_HOT EMI_CPU_HOT

/* n codes (a multiple of 8 / BITS) from packed bytes p into out, decoded
 * with one scale and bias. */
#define EMI_QUANT_DECODE_GROUP(W, sfx, BITS)                                                   \
    static inline void emi_quant_decode_group_##sfx##_##BITS(W *restrict out,                  \
                                                             const uint8_t *restrict p,       \
                                                             int64_t n, W s, W b) {            \
        for (int64_t i = 0; i < n * (BITS) / 8; i++) {                                         \
            unsigned byte = p[i];                                                              \
            for (int e = 0; e < 8 / (BITS); e++)                                               \
                out[i * (8 / (BITS)) + e] = emi_quant_decode_##sfx(                            \
                    (byte >> (e * (BITS))) & ((1u << (BITS)) - 1u), s, b);                     \
        }                                                                                      \
    }

/* Columns [c0, c0 + len) of one packed row (c0 and len multiples of the
 * group size) into out[0..len). */
#define EMI_QUANT_DECODE_SPAN(W, sfx)                                                          \
    EMI_QUANT_DECODE_GROUP(W, sfx, 2)                                                          \
    EMI_QUANT_DECODE_GROUP(W, sfx, 4)                                                          \
    EMI_QUANT_DECODE_GROUP(W, sfx, 8)                                                          \
    static inline void emi_quant_decode_span_##sfx(W *restrict out, const uint8_t *qrow,       \
                                                   const W *srow, const W *brow, int64_t c0,   \
                                                   int64_t len, int bits, int64_t gs) {        \
        for (int64_t c = 0; c < len; c += gs) {                                                \
            int64_t g = (c0 + c) / gs;                                                         \
            const uint8_t *p = qrow + (c0 + c) * bits / 8;                                     \
            if (bits == 4) emi_quant_decode_group_##sfx##_4(out + c, p, gs, srow[g], brow[g]); \
            else if (bits == 8)                                                                \
                emi_quant_decode_group_##sfx##_8(out + c, p, gs, srow[g], brow[g]);            \
            else emi_quant_decode_group_##sfx##_2(out + c, p, gs, srow[g], brow[g]);           \
        }                                                                                      \
    }

EMI_QUANT_DECODE_SPAN(float, f32)
EMI_QUANT_DECODE_SPAN(double, f64)

#endif
