/* The scalar steps of affine quantization (emily/ops_quant.h), written
 * once for the CPU (C11) and the CUDA kernels (nvcc) so that both devices
 * choose the same codes and decode the same weights, bit for bit. W is
 * f32 or f64 (the _f32 and _f64 twins); no step may contract into a fused
 * multiply-add (the CPU's -ffp-contract=off, nvcc's --fmad=false). */
#ifndef EMILY_CORE_QUANT_RULES_H
#define EMILY_CORE_QUANT_RULES_H

#include <math.h>
#include <stdint.h>
#include "core/host_device.h"

/* The largest code of a width: L = 2^bits - 1. */
EMILY_HD int emi_quant_levels(int bits) { return (1 << bits) - 1; }

/* Code k of a packed row: byte k * bits / 8, low bits first. */
EMILY_HD unsigned emi_quant_unpack(const uint8_t *row, int64_t k, int bits) {
    int64_t bit = k * bits;
    return ((unsigned)row[bit >> 3] >> (bit & 7)) & (unsigned)emi_quant_levels(bits);
}

/* A group's scale before its rounding to T: W(W(hi - lo) / L). lo > hi
 * (no number in the group: every element NaN) counts as lo = hi = 0. */
#define EMI_QUANT_SCALAR_RULES(W, sfx, ROUND)                                   \
    EMILY_HD W emi_quant_scale_##sfx(W lo, W hi, int bits) {                    \
        if (lo > hi) return (W)0;                                               \
        W range = hi - lo;                                                      \
        return range / (W)emi_quant_levels(bits);                               \
    }                                                                           \
    EMILY_HD W emi_quant_bias_##sfx(W lo, W hi) { return lo > hi ? (W)0 : lo; } \
    /* The code of w for the stored scale s and bias b (both read into W). */   \
    EMILY_HD unsigned emi_quant_code_##sfx(W w, W s, W b, int bits) {           \
        if (s == (W)0) return 0;                                                \
        W d = w - b;                                                            \
        W v = d / s;                                                            \
        W top = (W)emi_quant_levels(bits);                                      \
        if (!(v > (W)0)) return 0; /* also NaN */                               \
        if (v >= top) return (unsigned)emi_quant_levels(bits);                  \
        return (unsigned)ROUND(v); /* ties away from zero */                    \
    }                                                                           \
    /* The weight a code stands for: W(W(q * s) + b). */                        \
    EMILY_HD W emi_quant_decode_##sfx(unsigned q, W s, W b) {                   \
        W p = (W)q * s;                                                         \
        return p + b;                                                           \
    }

EMI_QUANT_SCALAR_RULES(float, f32, roundf)
EMI_QUANT_SCALAR_RULES(double, f64, round)
#undef EMI_QUANT_SCALAR_RULES

#endif
