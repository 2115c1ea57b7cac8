/* The per-element steps of emily_rope (emily/ops_fast.h), written once for
 * the CPU (C11) and the CUDA kernel (nvcc), so that both devices round
 * every intermediate the same way: a token's angles from its position and
 * the f32 frequency table, and one pair's rotation in x's type. cos and
 * sin themselves are each device's (the C library's on the host, the
 * double-double ones of cuda/correctly_rounded.cuh on the GPU), computed
 * in double and rounded to f32 here. */
#ifndef EMILY_CORE_ROPE_RULES_H
#define EMILY_CORE_ROPE_RULES_H

#include <stdint.h>
#include "core/binary_kernels.h"
#include "core/host_device.h"

/* The position the angles use: p, or for linear scaling f32(p / factor)
 * (factor already rounded to f32), as a double (exact). */
EMILY_HD double emi_rope_position(int64_t p, bool linear, float factor) {
    return linear ? (double)(float)((double)p / (double)factor) : (double)p;
}

/* a = f32(p * inv): the product in double (exact while |p| < 2^29, or p
 * is an f32 value), rounded once. */
EMILY_HD float emi_rope_angle(double p, float inv) { return (float)(p * (double)inv); }

/* One pair (u, v) rotated by the angle whose f32 cos and sin are c32 and
 * s32, in storage type T with arithmetic in C (f32 for f16/bf16: exact
 * products, one rounding by Nx's rules through emi_bk_st):
 *   c = T(c32), s = T(s32)
 *   u' = T(T(u * c) - T(v * s)),  v' = T(T(v * c) + T(u * s))
 * Bumblebee's x * cos + rotate_half(x) * sin: rotate_half's -v times s is
 * -(v * s) exactly, and a + -b is a - b. */
#define EMI_ROPE_PAIR_(E, sfx, T, C)                                      \
    EMILY_HD void emi_rope_pair_##sfx(T *u, T *v, float c32, float s32) { \
        C c = emi_bk_ld_##sfx(emi_bk_st_##sfx((C)c32));                   \
        C s = emi_bk_ld_##sfx(emi_bk_st_##sfx((C)s32));                   \
        C a = emi_bk_ld_##sfx(*u), b = emi_bk_ld_##sfx(*v);               \
        C ac = emi_bk_ld_##sfx(emi_bk_st_##sfx(a * c));                   \
        C bs = emi_bk_ld_##sfx(emi_bk_st_##sfx(b * s));                   \
        C bc = emi_bk_ld_##sfx(emi_bk_st_##sfx(b * c));                   \
        C as = emi_bk_ld_##sfx(emi_bk_st_##sfx(a * s));                   \
        *u = emi_bk_st_##sfx(ac - bs);                                    \
        *v = emi_bk_st_##sfx(bc + as);                                    \
    }
EMI_ROPE_PAIR_(F16, f16, uint16_t, float)
EMI_ROPE_PAIR_(BF16, bf16, uint16_t, float)
EMI_ROPE_PAIR_(F32, f32, float, float)
EMI_ROPE_PAIR_(F64, f64, double, double)
#undef EMI_ROPE_PAIR_

#endif
