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
/* Always inlined: a decoder left out of line is compiled once for the
 * baseline ISA, while inlined into an EMI_QUANT_HOT caller it is compiled
 * again inside each of its clones (AVX2, AVX-512) and vectorized there. */
#define EMI_QUANT_INLINE static inline __attribute__((always_inline))

/* n codes (a multiple of 8 / BITS, at most 128) from packed bytes p into
 * out, decoded with one scale and bias: first the codes, one byte each in
 * element order (a shift and a mask per field, stored interleaved: byte i
 * holds elements i * 8 / BITS ...), then the weights (a conversion, a
 * multiply and an add each). Two `omp simd` loops: GCC's -O2 cost model
 * leaves loops of a run-time length scalar unless told, and would not
 * vectorize the two fused into one. */
#define EMI_QUANT_DECODE_GROUP(W, sfx, BITS)                                                                           \
    EMI_QUANT_INLINE void emi_quant_decode_group_##sfx##_##BITS(W *restrict out, const uint8_t *restrict p, int64_t n, \
                                                                W s, W b) {                                            \
        uint8_t codes[128];                                                                                            \
        _Pragma("omp simd") for (int64_t i = 0; i < n * (BITS) / 8; i++) for (int e = 0; e < 8 / (BITS); e++)          \
            codes[i * (8 / (BITS)) + e] = (uint8_t)((p[i] >> (e * (BITS))) & ((1u << (BITS)) - 1u));                   \
        /* emi_quant_decode's W(W(q * s) + b), the code converted from a      \
         * signed int (the same value): AVX2 converts int32 lanes, not uint32 */                                        \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++) {                                                          \
            W w = (W)(int32_t)codes[i] * s;                                                                            \
            out[i] = w + b;                                                                                            \
        }                                                                                                              \
    }

/* Columns [c0, c0 + len) of one packed row (c0 and len multiples of the
 * group size) into out[0..len). */
#define EMI_QUANT_DECODE_SPAN(W, sfx)                                                                                 \
    EMI_QUANT_DECODE_GROUP(W, sfx, 2)                                                                                 \
    EMI_QUANT_DECODE_GROUP(W, sfx, 4)                                                                                 \
    EMI_QUANT_DECODE_GROUP(W, sfx, 8)                                                                                 \
    EMI_QUANT_INLINE void emi_quant_decode_span_##sfx(W *restrict out, const uint8_t *qrow, const W *srow,            \
                                                      const W *brow, int64_t c0, int64_t len, int bits, int64_t gs) { \
        for (int64_t c = 0; c < len; c += gs) {                                                                       \
            int64_t g = (c0 + c) / gs;                                                                                \
            const uint8_t *p = qrow + (c0 + c) * bits / 8;                                                            \
            if (bits == 4) emi_quant_decode_group_##sfx##_4(out + c, p, gs, srow[g], brow[g]);                        \
            else if (bits == 8) emi_quant_decode_group_##sfx##_8(out + c, p, gs, srow[g], brow[g]);                   \
            else emi_quant_decode_group_##sfx##_2(out + c, p, gs, srow[g], brow[g]);                                  \
        }                                                                                                             \
    }

EMI_QUANT_DECODE_SPAN(float, f32)
EMI_QUANT_DECODE_SPAN(double, f64)

#endif
