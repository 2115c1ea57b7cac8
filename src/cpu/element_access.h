/* Element access by a dtype known only at run time, for the CPU kernels
 * that handle every type on one path (window, cumulative, all_close, the
 * linear algebra's rounding and determinant): every element is read as a 64-bit integer pattern
 * (sign-extended for signed types), a double (real floats) or two
 * doubles (complex), and written back with Nx's conversion rules
 * (src/core/scalar_convert.h). The switches are expansions of the dtype
 * list (src/core/dtype_list.h) over dtype_scalars.h's helpers. */
#ifndef EMILY_CPU_ELEMENT_ACCESS_H
#define EMILY_CPU_ELEMENT_ACCESS_H

#include <stdint.h>
#include <string.h>
#include "core/scalar_convert.h"
#include "cpu/dtype_scalars.h"
#include "emily/dtype.h"

/* 0 integer, 1 real float, 2 complex */
static inline int we_class(emily_dtype t) { return emily_dtype_is_complex(t) ? 2 : emily_dtype_is_float(t) ? 1 : 0; }

/* One case of the readers below: the element as a T in v, then EXPR. */
// clang-format off
#define WE_LOAD_CASE(ENUM, T, EXPR) \
    case EMILY_##ENUM: {            \
        T v;                        \
        memcpy(&v, p, sizeof v);    \
        return EXPR;                \
    }
#define WE_LOAD_INT_(ENUM, sfx, T) WE_LOAD_CASE(ENUM, T, (uint64_t)v)
#define WE_LOAD_F_(ENUM, sfx, T) WE_LOAD_CASE(ENUM, T, emi_to_f64_##sfx(v))
#define WE_LOAD_IM_(ENUM, sfx, T) WE_LOAD_CASE(ENUM, T, emi_im_of_##sfx(v))
// clang-format on

/* An integer's bits; a signed value's conversion to uint64_t is its
 * sign extension. 0 for other types. */
static inline uint64_t we_load_int(emily_dtype t, const char *p) {
    switch (t) {
        EMI_DTYPES_INTEGER(WE_LOAD_INT_)
    default: return 0;
    }
}

/* The value as a double (complex: the real part). */
static inline double we_load_f(emily_dtype t, const char *p) {
    switch (t) {
        EMI_DTYPES(WE_LOAD_F_)
    default: return 0.0;
    }
}

/* The imaginary part (0 for real types). */
static inline double we_load_im(emily_dtype t, const char *p) {
    switch (t) {
        EMI_DTYPES_COMPLEX(WE_LOAD_IM_)
    default: return 0.0;
    }
}

#undef WE_LOAD_CASE
#undef WE_LOAD_INT_
#undef WE_LOAD_F_
#undef WE_LOAD_IM_

static inline bool we_unsigned(emily_dtype t) {
    switch (t) {
// clang-format off
#define WE_UNSIGNED_(ENUM, sfx, T) case EMILY_##ENUM:
        // clang-format on
        EMI_DTYPES_UNSIGNED(WE_UNSIGNED_)
#undef WE_UNSIGNED_
        return true;
    default: return false;
    }
}

static inline void we_store_int(emily_dtype t, uint64_t bits, char *p) {
    emily_sc_store_int((int)t, bits, we_unsigned(t), p);
}
static inline void we_store_f(emily_dtype t, double re, double im, char *p) {
    emily_sc_store_complex((int)t, re, im, p);
}

/* x rounded to the inexact type t (complex: its part type) and read
 * back, as the reference writes an intermediate tensor of type t;
 * unchanged for other types. */
static inline double we_round(emily_dtype t, double x) {
    switch (t) {
// clang-format off
#define WE_ROUND_(ENUM, sfx, T) \
    case EMILY_##ENUM: return emi_round_##sfx(x);
        // clang-format on
        EMI_DTYPES_INEXACT(WE_ROUND_)
#undef WE_ROUND_
    default: return x;
    }
}

#endif
