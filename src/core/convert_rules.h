/* as_type's rule for each element type, named by the dtype list's suffix
 * (core/dtype_list.h), so a kernel family can generate one conversion per
 * (source, target) pair on either device from two rules per type:
 *
 *   emi_cv_re_<sfx>(v), emi_cv_im_<sfx>(v)  a float or complex element's
 *                                           parts as doubles (an
 *                                           integer's: (double)v, 0.0);
 *   emi_cv_from_f64_<sfx>(re, im)           an element from such parts
 *                                           (real targets take re, by
 *                                           scalar_convert.h's rules).
 *
 * Between two integer types the conversion is a plain cast (the low
 * bits, as Nx writes them); every other pair is
 * emi_cv_from_f64_<target>(emi_cv_re_<source>(v), emi_cv_im_<source>(v)).
 * Valid C11 and CUDA C++ (EMILY_HD). */
#ifndef EMILY_CORE_CONVERT_RULES_H
#define EMILY_CORE_CONVERT_RULES_H

#include "core/dtype_list.h"
#include "core/scalar_convert.h"

/* ---- parts of a source element ------------------------------------------ */

#define EMI_CV_PARTS_REAL_(E, sfx, T)                          \
    EMILY_HD double emi_cv_re_##sfx(T v) { return (double)v; } \
    EMILY_HD double emi_cv_im_##sfx(T v) {                     \
        (void)v;                                               \
        return 0.0;                                            \
    }
EMI_DTYPES_INTEGER(EMI_CV_PARTS_REAL_)
EMI_DTYPES_NATIVE_FLOAT(EMI_CV_PARTS_REAL_)
#undef EMI_CV_PARTS_REAL_

EMILY_HD double emi_cv_re_f16(uint16_t v) { return emily_sc_f16_to_f64(v); }
EMILY_HD double emi_cv_re_bf16(uint16_t v) { return emily_sc_bf16_to_f64(v); }
EMILY_HD double emi_cv_im_f16(uint16_t v) {
    (void)v;
    return 0.0;
}
EMILY_HD double emi_cv_im_bf16(uint16_t v) {
    (void)v;
    return 0.0;
}
EMILY_HD double emi_cv_re_c64(emily_c64 v) { return (double)v.re; }
EMILY_HD double emi_cv_im_c64(emily_c64 v) { return (double)v.im; }
EMILY_HD double emi_cv_re_c128(emily_c128 v) { return v.re; }
EMILY_HD double emi_cv_im_c128(emily_c128 v) { return v.im; }

/* ---- a target element from (re, im) ---------------------------------------- */

/* Integers and the 16-bit floats: scalar_convert.h's emily_sc_f64_to_<sfx>. */
#define EMI_CV_FROM_F64_(E, sfx, T)                          \
    EMILY_HD T emi_cv_from_f64_##sfx(double re, double im) { \
        (void)im;                                            \
        return emily_sc_f64_to_##sfx(re);                    \
    }
EMI_DTYPES_INTEGER(EMI_CV_FROM_F64_)
EMI_DTYPES_HALF(EMI_CV_FROM_F64_)
#undef EMI_CV_FROM_F64_

EMILY_HD float emi_cv_from_f64_f32(double re, double im) {
    (void)im;
    return (float)re;
}
EMILY_HD double emi_cv_from_f64_f64(double re, double im) {
    (void)im;
    return re;
}
EMILY_SC_COMPLEX_MAKER(emi_cv_from_f64_c64, emily_c64, float)
EMILY_SC_COMPLEX_MAKER(emi_cv_from_f64_c128, emily_c128, double)

#endif
