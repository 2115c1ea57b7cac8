/* CPU kernel: as_type conversion between any two of the dtypes, with
 * Nx's rules (core/scalar_convert.h). One run function per (src, dst)
 * pair, generated from the dtype lists (core/dtype_list.h) by the classes
 * of the two types, and picked from a dtype x dtype table. */
#include "core/dtype_list.h"
#include "core/scalar_convert.h"
#include "cpu/kernels.h"
#include "cpu/unary_simd.h"

_Static_assert(EMILY_SC_U8 == (int)EMILY_U8 && EMILY_SC_S8 == (int)EMILY_S8 && EMILY_SC_F16 == (int)EMILY_F16 &&
                   EMILY_SC_BF16 == (int)EMILY_BF16 && EMILY_SC_C128 == (int)EMILY_C128,
               "scalar_convert.h type codes must follow emily_dtype");

/* A complex element from the double values of its parts. */
#define MAKE_COMPLEX(E, s, T, PE, ps, PT, unused)    \
    static inline T make_##s(double re, double im) { \
        T z = {(PT)re, (PT)im};                      \
        return z;                                    \
    }
EMI_COMPLEX_PARTS_WITH(MAKE_COMPLEX, ~)

/* One run function from source (ss, ST) to destination (DE, ds, DT);
 * RE and IM are the source element `v` as doubles. Integers to integers
 * keep the low bits (wrap); every other pair goes through the source's
 * double value, rounded once to the destination (emily_sc_f64_to_*). */
#define CV_WRAP(DE, ds, DT, ss, ST, RE, IM) EMILY_RUN_FN(cv_##ss##_##ds, ST, DT, (DT)v)
#define CV_ROUNDED(DE, ds, DT, ss, ST, RE, IM) EMILY_RUN_FN(cv_##ss##_##ds, ST, DT, emily_sc_f64_to_##ds(RE))
#define CV_CAST(DE, ds, DT, ss, ST, RE, IM) EMILY_RUN_FN(cv_##ss##_##ds, ST, DT, (DT)(RE))
#define CV_COMPLEX(DE, ds, DT, ss, ST, RE, IM) EMILY_RUN_FN(cv_##ss##_##ds, ST, DT, make_##ds((RE), (IM)))

/* From a source to every float and complex destination. */
#define TO_INEXACT(ss, ST, RE, IM)                        \
    EMI_DTYPES_HALF_WITH(CV_ROUNDED, ss, ST, RE, IM)      \
    EMI_DTYPES_NATIVE_FLOAT_WITH(CV_CAST, ss, ST, RE, IM) \
    EMI_DTYPES_COMPLEX_WITH(CV_COMPLEX, ss, ST, RE, IM)
#define FROM_INT(SE, ss, ST) EMI_DTYPES_INTEGER_WITH(CV_WRAP, ss, ST, ~, ~) TO_INEXACT(ss, ST, (double)v, 0.0)
#define FROM_VALUE(ss, ST, RE, IM) EMI_DTYPES_INTEGER_WITH(CV_ROUNDED, ss, ST, RE, IM) TO_INEXACT(ss, ST, RE, IM)
#define FROM_HALF(SE, ss, ST) FROM_VALUE(ss, ST, emily_sc_##ss##_to_f64(v), 0.0)
#define FROM_NATIVE(SE, ss, ST) FROM_VALUE(ss, ST, (double)v, 0.0)
#define FROM_COMPLEX(SE, ss, ST) FROM_VALUE(ss, ST, (double)v.re, (double)v.im)

EMI_DTYPES_INTEGER(FROM_INT)
EMI_DTYPES_HALF(FROM_HALF)
EMI_DTYPES_NATIVE_FLOAT(FROM_NATIVE)
EMI_DTYPES_COMPLEX(FROM_COMPLEX)

#define CELL(DE, ds, DT, ss) [EMILY_##DE] = cv_##ss##_##ds,
#define ROW(SE, ss, ST) [EMILY_##SE] = {EMI_DTYPES_WITH(CELL, ss)},
static const emily_run_fn convert_table[EMILY_DTYPE_COUNT][EMILY_DTYPE_COUNT] = {EMI_DTYPES(ROW)};

emily_status emi_cpu_convert(emily_tensor *dst, const emily_tensor *src) {
    if (!emily_dtype_valid(dst->dtype) || !emily_dtype_valid(src->dtype))
        return emily_error(EMILY_ERR_TYPE, "as_type: invalid dtype (%d to %d)", (int)src->dtype, (int)dst->dtype);
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
