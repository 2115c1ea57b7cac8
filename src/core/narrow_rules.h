/* The narrow types' conversion rules, one line each, for both devices.
 *
 * A narrow type (emily/dtype.h: f8, f8_e4m3fn, s2, s4, u2, u4) converts
 * through a hub type that holds every value of both sides exactly: its
 * values go to f64 (every narrow type) or s64 (the integers); values
 * come to it from f64 (every narrow type, Nx's float rules) or from s64
 * (the integers: the low bits). emily_as_type chains the device's
 * ordinary conversions with these (ops/convert.c), so each device needs
 * only the few kernels listed here.
 *
 * X(ENUM, sfx, T, to_f64, from_f64, from_s64): T is the byte a value is
 * stored in; to_f64(v), from_f64(x) and from_s64(bits) are expressions
 * (from_s64 is from_f64 of the value for the floats, never used: their
 * hub is f64 both ways). Valid C11 and CUDA C++. */
#ifndef EMILY_CORE_NARROW_RULES_H
#define EMILY_CORE_NARROW_RULES_H

#include "core/scalar_convert.h"

/* clang-format off */
#define EMI_NARROW_TYPES(X)                                                              \
    X(F8_E5M2, f8, uint8_t, emily_sc_f8e5m2_to_f64(v), emily_sc_f64_to_f8e5m2(x),       \
      emily_sc_f64_to_f8e5m2((double)(int64_t)b))                                        \
    X(F8_E4M3FN, f8e4m3, uint8_t, emily_sc_f8e4m3_to_f64(v), emily_sc_f64_to_f8e4m3(x), \
      emily_sc_f64_to_f8e4m3((double)(int64_t)b))                                        \
    X(S2, s2, int8_t, (double)v, emily_sc_f64_to_s_narrow(x, 2), emily_sc_wrap_s(b, 2))  \
    X(S4, s4, int8_t, (double)v, emily_sc_f64_to_s_narrow(x, 4), emily_sc_wrap_s(b, 4))  \
    X(U2, u2, uint8_t, (double)v, emily_sc_f64_to_u_narrow(x, 2), emily_sc_wrap_u(b, 2)) \
    X(U4, u4, uint8_t, (double)v, emily_sc_f64_to_u_narrow(x, 4), emily_sc_wrap_u(b, 4))
/* clang-format on */

#endif
