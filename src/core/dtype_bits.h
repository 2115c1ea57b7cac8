/* The bit layout of the real types of the dtype list (core/dtype_list.h),
 * by suffix, for kernels on either device that work on an element's bits:
 *
 *   EMI_WIDTH(sfx)     the bits of a real type (8 to 64);
 *   EMI_BITS(sfx)      the unsigned integer of that width: bit patterns
 *                      (sort keys), wrapping integer sums;
 *   EMI_INF_BITS(sfx)  a float type's +infinity pattern (NaN tests on
 *                      bits: a larger magnitude is a NaN).
 *
 * Valid C11 and CUDA C++; src/cpu/dtype_scalars.h checks at compile time
 * that every type of the list has its rows here. */
#ifndef EMILY_CORE_DTYPE_BITS_H
#define EMILY_CORE_DTYPE_BITS_H

#include <stdint.h>
#include "core/dtype_list.h"

#define EMI_WIDTH_u8 8
#define EMI_WIDTH_u16 16
#define EMI_WIDTH_u32 32
#define EMI_WIDTH_u64 64
#define EMI_WIDTH_s8 8
#define EMI_WIDTH_s16 16
#define EMI_WIDTH_s32 32
#define EMI_WIDTH_s64 64
#define EMI_WIDTH_f16 16
#define EMI_WIDTH_bf16 16
#define EMI_WIDTH_f32 32
#define EMI_WIDTH_f64 64
#define EMI_WIDTH(sfx) EMI_PASTE(EMI_WIDTH_, sfx)
#define EMI_BITS(sfx) EMI_PASTE(EMI_PASTE(uint, EMI_WIDTH(sfx)), _t)

#define EMI_INF_BITS_f16 0x7c00u
#define EMI_INF_BITS_bf16 0x7f80u
#define EMI_INF_BITS_f32 0x7f800000u
#define EMI_INF_BITS_f64 0x7ff0000000000000ull
#define EMI_INF_BITS(sfx) EMI_PASTE(EMI_INF_BITS_, sfx)

#endif
