/* The fused softmax's element types, one list for both devices' kernels
 * (src/cpu/fast_softmax.c, src/cuda/fast_softmax.cu), which expand it with
 * their own X(E, sfx, T, C, SUM_ST) per type:
 *
 *   E       the dtype (EMILY_##E);
 *   sfx     the suffix of its loads and stores (core/binary_kernels.h's
 *           emi_bk_ld_##sfx / emi_bk_st_##sfx) and of its exp;
 *   T       its storage type;
 *   C       the type the row's arithmetic runs in (f32 for f16/bf16, as
 *           emily_binary's);
 *   SUM_ST  the double row sum rounded to the type as emily_sum stores it
 *           (core/scalar_convert.h's rounding for f16/bf16).
 */
#ifndef EMILY_CORE_SOFTMAX_TYPES_H
#define EMILY_CORE_SOFTMAX_TYPES_H

#define EMI_SOFTMAX_SUM_AS_F32(v) ((float)(v))
#define EMI_SOFTMAX_SUM_AS_F64(v) (v)

#define EMI_SOFTMAX_TYPES(X)                             \
    X(F16, f16, uint16_t, float, emily_sc_f64_to_f16)    \
    X(BF16, bf16, uint16_t, float, emily_sc_f64_to_bf16) \
    X(F32, f32, float, float, EMI_SOFTMAX_SUM_AS_F32)    \
    X(F64, f64, double, double, EMI_SOFTMAX_SUM_AS_F64)

#endif
