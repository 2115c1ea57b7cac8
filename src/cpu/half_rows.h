/* Rows of the 16-bit float types (core/dtype_list.h's EMI_DTYPES_HALF)
 * computed in f32, for the CPU kernels that widen an f16/bf16 row once,
 * work in f32 and write the result back (the fused normalizations, sdpa).
 * Each helper picks the type's rule from the one list, so a kernel names
 * no half type, and returns false (writing nothing) for a type that is
 * not a half type, leaving f32/f64 to the caller's own path. */
#ifndef EMILY_CPU_HALF_ROWS_H
#define EMILY_CPU_HALF_ROWS_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/dtype.h"
#include "cpu/dtype_scalars.h"

/* n elements of t widened to f32: exact. */
static inline bool emi_half_row_to_f32(emily_dtype t, const uint16_t *x, float *y, int64_t n) {
    switch (t) {
#define EMI_HALF_WIDEN_(ENUM, sfx, T)                                         \
    case EMILY_##ENUM:                                                        \
        for (int64_t k = 0; k < n; k++) y[k] = emily_sc_##sfx##_to_f32(x[k]); \
        return true;
        EMI_DTYPES_HALF(EMI_HALF_WIDEN_)
#undef EMI_HALF_WIDEN_
    default: return false;
    }
}

/* n f32 values written as t by Nx's rules (each rounded once, from its
 * double: emi_from_f64_<sfx>). */
static inline bool emi_half_row_from_f32(emily_dtype t, const float *x, uint16_t *y, int64_t n) {
    switch (t) {
#define EMI_HALF_NARROW_(ENUM, sfx, T)                                           \
    case EMILY_##ENUM:                                                           \
        for (int64_t k = 0; k < n; k++) y[k] = emi_from_f64_##sfx((double)x[k]); \
        return true;
        EMI_DTYPES_HALF(EMI_HALF_NARROW_)
#undef EMI_HALF_NARROW_
    default: return false;
    }
}

/* x written as t and read back (emi_round_<sfx>); x itself when t is not
 * a half type. */
static inline float emi_half_round_f32(emily_dtype t, float x) {
    switch (t) {
#define EMI_HALF_ROUND_(ENUM, sfx, T) \
    case EMILY_##ENUM: return (float)emi_round_##sfx((double)x);
        EMI_DTYPES_HALF(EMI_HALF_ROUND_)
#undef EMI_HALF_ROUND_
    default: return x;
    }
}

#endif
