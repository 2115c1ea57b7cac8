// Nearly correctly rounded tan, atan, asin and acos (double-double
// evaluation, about 100 bits, rounded once), for the f64 unary ops
// (cuda/unary_f64.cuh). glibc's tan, atan, asin and acos (IBM's accurate
// library) return the correctly rounded value on all but about 1 input in
// 1300 (tan) to 1 in 100000 (atan); the device's are within 1-2 ULP and
// differ from glibc's on 1-11% of inputs (tools/libdevice_host). Special
// arguments (NaN, infinities, |x| > 1 for asin/acos) and arguments past
// the ranges handled here go to the device's function, as in
// cuda/correctly_rounded.cuh.
#ifndef EMILY_CUDA_CORRECTLY_ROUNDED_TRIG_CUH
#define EMILY_CUDA_CORRECTLY_ROUNDED_TRIG_CUH

#include "cuda/correctly_rounded.cuh"

namespace emily_cr {

// tan(x) = sin(x) / cos(x), both in double-double, for 0 < |x| < 2^30
// (cr_sincos_dd's range); the quotient's second term from the remainder
// s - q c.
EMILY_CR_HD double cr_tan(double x) {
    if (x == 0.0) return x; // keeps the sign of zero
    dd s, c;
    if (!cr_sincos_dd(x, s, c)) return tan(x);
    const double q = s.hi / c.hi;
    const dd rem = dd_add(s, dd_mul_d(dd{-c.hi, -c.lo}, q));
    const dd t = fast_two_sum(q, (rem.hi + rem.lo) / c.hi);
    return t.hi + t.lo;
}

// asin(x) in double-double for a double-double |x| <= 1/2 (x.lo much
// smaller than x.hi): one Newton step from the device's asin, y = y0 + (x -
// sin y0) / cos y0, with sin and cos in double-double; the step is about
// one ulp of y0, so its own error is some 2^-50 ulp.
EMILY_CR_HD dd asin_dd_small(dd x) {
    const double y0 = asin(x.hi);
    dd s, c;
    if (!cr_sincos_dd(y0, s, c)) return dd{y0, 0.0}; // y0 == 0: x is zero
    const dd num = dd_add(x, dd{-s.hi, -s.lo});
    return two_sum(y0, (num.hi + num.lo) / c.hi);
}

// asin(sqrt((1 - a) / 2)) in double-double for 1/2 < a <= 1, the half
// angle of acos(a): (1 - a) / 2 is exact, its square root is carried as a
// double-double.
EMILY_CR_HD dd half_acos_dd(double a) {
    const double z = (1.0 - a) * 0.5;
    if (z == 0.0) return dd{0.0, 0.0};
    const double r = sqrt(z);
    return asin_dd_small(fast_two_sum(r, -fma(r, r, -z) / (2.0 * r)));
}

// asin(x) = x for |x| <= 1/2, pi/2 - 2 h above (h = half_acos_dd(|x|)),
// with the sign of x.
EMILY_CR_HD double cr_asin(double x) {
    const double ax = fabs(x);
    if (!(ax <= 1.0)) return asin(x); // NaN and |x| > 1
    if (ax < 0x1p-26) return x;       // asin(x) = x + x^3/6 rounds to x; zeros keep their sign
    dd a;
    if (ax <= 0.5) {
        a = asin_dd_small(dd{ax, 0.0});
    } else {
        const dd h = half_acos_dd(ax);
        a = dd_add(dd{PIO2_1, PIO2_2}, dd{-2.0 * h.hi, -2.0 * h.lo});
    }
    const double r = a.hi + a.lo;
    return x < 0 ? -r : r;
}

// acos(x) = pi/2 - asin(x) for |x| <= 1/2, 2 h above, pi - 2 h below
// (h = half_acos_dd(|x|)).
EMILY_CR_HD double cr_acos(double x) {
    const double ax = fabs(x);
    if (!(ax <= 1.0)) return acos(x);
    dd r;
    if (ax <= 0.5) {
        const dd a = ax < 0x1p-60 ? dd{x, 0.0} : asin_dd_small(dd{x, 0.0});
        r = dd_add(dd{PIO2_1, PIO2_2}, dd{-a.hi, -a.lo});
    } else {
        const dd h = half_acos_dd(ax), h2 = dd{2.0 * h.hi, 2.0 * h.lo};
        r = x > 0 ? h2 : dd_add(dd{2.0 * PIO2_1, 2.0 * PIO2_2}, dd{-h2.hi, -h2.lo});
    }
    return r.hi + r.lo;
}

// atan(x) for 2^-500 <= |x| <= 2^500: cr_atan2(x, 1), one correction step
// from the device's atan2 with sin and cos in double-double; atan(x) = x
// below (x - x^3/3 rounds to x), the device's atan above (+-pi/2 rounded,
// as glibc's) and for NaN.
EMILY_CR_HD double cr_atan(double x) {
    const double ax = fabs(x);
    if (ax < 0x1p-500) return x;
    if (!(ax <= 0x1p500)) return atan(x);
    return cr_atan2(x, 1.0);
}

} // namespace emily_cr

#endif
