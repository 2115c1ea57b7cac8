/* CPU kernel: as_type conversion between any two of the 14 dtypes, with
 * Nx's rules (core/scalar_convert.h). One run function per (src, dst)
 * pair, generated below, picked from a 14x14 table. */
#include "core/scalar_convert.h"
#include "cpu/kernels.h"
#include "cpu/unary_simd.h"

_Static_assert(EMILY_SC_U8 == (int)EMILY_U8 && EMILY_SC_S8 == (int)EMILY_S8 &&
                   EMILY_SC_F16 == (int)EMILY_F16 && EMILY_SC_BF16 == (int)EMILY_BF16 &&
                   EMILY_SC_C128 == (int)EMILY_C128,
               "scalar_convert.h type codes must follow emily_dtype");

static inline emily_c64 mk_c64(double re, double im) {
    emily_c64 z = {(float)re, (float)im};
    return z;
}
static inline emily_c128 mk_c128(double re, double im) {
    emily_c128 z = {re, im};
    return z;
}

#define RUN_FN EMILY_RUN_FN

/* From an integer source: integers wrap, everything else goes through
 * the double value of the integer. */
#define FROM_INT(SN, ST)                                                               \
    RUN_FN(cv_##SN##_u8, ST, uint8_t, (uint8_t)v)                                      \
    RUN_FN(cv_##SN##_u16, ST, uint16_t, (uint16_t)v)                                   \
    RUN_FN(cv_##SN##_u32, ST, uint32_t, (uint32_t)v)                                   \
    RUN_FN(cv_##SN##_u64, ST, uint64_t, (uint64_t)v)                                   \
    RUN_FN(cv_##SN##_s8, ST, int8_t, (int8_t)v)                                        \
    RUN_FN(cv_##SN##_s16, ST, int16_t, (int16_t)v)                                     \
    RUN_FN(cv_##SN##_s32, ST, int32_t, (int32_t)v)                                     \
    RUN_FN(cv_##SN##_s64, ST, int64_t, (int64_t)v)                                     \
    RUN_FN(cv_##SN##_f16, ST, uint16_t, emily_sc_f64_to_f16((double)v))                \
    RUN_FN(cv_##SN##_bf16, ST, uint16_t, emily_sc_f64_to_bf16((double)v))              \
    RUN_FN(cv_##SN##_f32, ST, float, (float)(double)v)                                 \
    RUN_FN(cv_##SN##_f64, ST, double, (double)v)                                       \
    RUN_FN(cv_##SN##_c64, ST, emily_c64, mk_c64((double)v, 0.0))                       \
    RUN_FN(cv_##SN##_c128, ST, emily_c128, mk_c128((double)v, 0.0))

/* From a float or complex source: RE and IM are double expressions of v. */
#define FROM_FLOAT(SN, ST, RE, IM)                                                     \
    RUN_FN(cv_##SN##_u8, ST, uint8_t, emily_sc_f64_to_u8(RE))                          \
    RUN_FN(cv_##SN##_u16, ST, uint16_t, emily_sc_f64_to_u16(RE))                       \
    RUN_FN(cv_##SN##_u32, ST, uint32_t, emily_sc_f64_to_u32(RE))                       \
    RUN_FN(cv_##SN##_u64, ST, uint64_t, emily_sc_f64_to_u64(RE))                       \
    RUN_FN(cv_##SN##_s8, ST, int8_t, emily_sc_f64_to_s8(RE))                           \
    RUN_FN(cv_##SN##_s16, ST, int16_t, emily_sc_f64_to_s16(RE))                        \
    RUN_FN(cv_##SN##_s32, ST, int32_t, emily_sc_f64_to_s32(RE))                        \
    RUN_FN(cv_##SN##_s64, ST, int64_t, emily_sc_f64_to_s64(RE))                        \
    RUN_FN(cv_##SN##_f16, ST, uint16_t, emily_sc_f64_to_f16(RE))                       \
    RUN_FN(cv_##SN##_bf16, ST, uint16_t, emily_sc_f64_to_bf16(RE))                     \
    RUN_FN(cv_##SN##_f32, ST, float, (float)(RE))                                      \
    RUN_FN(cv_##SN##_f64, ST, double, (RE))                                            \
    RUN_FN(cv_##SN##_c64, ST, emily_c64, mk_c64((RE), (IM)))                           \
    RUN_FN(cv_##SN##_c128, ST, emily_c128, mk_c128((RE), (IM)))

FROM_INT(u8, uint8_t)
FROM_INT(u16, uint16_t)
FROM_INT(u32, uint32_t)
FROM_INT(u64, uint64_t)
FROM_INT(s8, int8_t)
FROM_INT(s16, int16_t)
FROM_INT(s32, int32_t)
FROM_INT(s64, int64_t)
FROM_FLOAT(f16, uint16_t, emily_sc_f16_to_f64(v), 0.0)
FROM_FLOAT(bf16, uint16_t, emily_sc_bf16_to_f64(v), 0.0)
FROM_FLOAT(f32, float, (double)v, 0.0)
FROM_FLOAT(f64, double, v, 0.0)
FROM_FLOAT(c64, emily_c64, (double)v.re, (double)v.im)
FROM_FLOAT(c128, emily_c128, v.re, v.im)

#define ROW(SN)                                                                        \
    {cv_##SN##_u8, cv_##SN##_u16, cv_##SN##_u32, cv_##SN##_u64, cv_##SN##_s8,          \
     cv_##SN##_s16, cv_##SN##_s32, cv_##SN##_s64, cv_##SN##_f16, cv_##SN##_bf16,       \
     cv_##SN##_f32, cv_##SN##_f64, cv_##SN##_c64, cv_##SN##_c128}

static const emily_run_fn convert_table[EMILY_DTYPE_COUNT][EMILY_DTYPE_COUNT] = {
    ROW(u8),  ROW(u16), ROW(u32), ROW(u64), ROW(s8),  ROW(s16), ROW(s32),
    ROW(s64), ROW(f16), ROW(bf16), ROW(f32), ROW(f64), ROW(c64), ROW(c128),
};

emily_status emi_cpu_convert(emily_tensor *dst, const emily_tensor *src) {
    if (!emily_dtype_valid(dst->dtype) || !emily_dtype_valid(src->dtype))
        return emily_error(EMILY_ERR_TYPE, "as_type: invalid dtype (%d to %d)", (int)src->dtype,
                           (int)dst->dtype);
    if (dst->dtype == src->dtype) return emi_cpu_copy(dst, src);
    if (dst->size > 0 && emily_tensor_is_contiguous(src) && emily_tensor_is_contiguous(dst)) {
        emily_vec_fn vf = emi_convert_simd(src->dtype, dst->dtype);
        if (vf) {
            emi_cpu_map_contiguous(dst, src, vf);
            return EMILY_OK;
        }
    }
    return emi_cpu_map(dst, src, convert_table[src->dtype][dst->dtype], NULL);
}
