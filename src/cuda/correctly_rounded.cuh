// Nearly correctly rounded exp, sin, cos, log, pow and atan2 (double-double
// evaluation, about 100 bits, rounded once). Used where the reference's
// result depends on the last bit of each ingredient (complex tan/tanh,
// complex pow, Nx's exp(x) - 1) and for the f64 unary ops
// (cuda/unary_f64.cuh): the device's own functions are within 1-2 ULP but
// not always the correctly rounded value that the host's libm (glibc,
// which Erlang and the CPU engine call) returns for these. Outside the
// ranges handled here (huge arguments, results near overflow/underflow)
// the device's functions are used. Host+device so that a host test can
// compare with glibc (tests/unit/test_cuda_libm.c).
#ifndef EMILY_CUDA_CORRECTLY_ROUNDED_CUH
#define EMILY_CUDA_CORRECTLY_ROUNDED_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define EMILY_CR_HD __host__ __device__ inline
#else
#define EMILY_CR_HD static inline
#endif

namespace emily_cr {

struct dd {
    double hi, lo;
};

// The bits of a double and back (the libm algorithms below read and set
// exponent fields directly).
EMILY_CR_HD uint64_t bits_of(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
EMILY_CR_HD double double_of(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

EMILY_CR_HD dd two_sum(double a, double b) {
    double s = a + b, bb = s - a;
    return dd{s, (a - (s - bb)) + (b - bb)};
}
EMILY_CR_HD dd fast_two_sum(double a, double b) {
    double s = a + b;
    return dd{s, b - (s - a)};
}
EMILY_CR_HD dd dd_add(dd a, dd b) {
    dd s = two_sum(a.hi, b.hi), t = two_sum(a.lo, b.lo);
    s.lo += t.hi;
    s = fast_two_sum(s.hi, s.lo);
    s.lo += t.lo;
    return fast_two_sum(s.hi, s.lo);
}
EMILY_CR_HD dd dd_mul(dd a, dd b) {
    double p = a.hi * b.hi, e = fma(a.hi, b.hi, -p);
    e += a.hi * b.lo + a.lo * b.hi;
    return fast_two_sum(p, e);
}
EMILY_CR_HD dd dd_mul_d(dd a, double b) {
    double p = a.hi * b, e = fma(a.hi, b, -p);
    e += a.lo * b;
    return fast_two_sum(p, e);
}
EMILY_CR_HD dd dd_div_d(dd a, double b) {
    double q = a.hi / b;
    dd p = dd_mul_d(dd{q, 0.0}, b);
    double r = ((a.hi - p.hi) - p.lo + a.lo) / b;
    return fast_two_sum(q, r);
}

// ln 2 and pi/2 as sums of three doubles.
constexpr double LN2_1 = 0x1.62e42fefa39efp-1, LN2_2 = 0x1.abc9e3b39803fp-56, LN2_3 = 0x1.7b57a079a1934p-111;
constexpr double PIO2_1 = 0x1.921fb54442d18p+0, PIO2_2 = 0x1.1a62633145c07p-54, PIO2_3 = -0x1.f1976b7ed8fbcp-110;

// x - k*(c1 + c2 + c3) in double-double (k an integer, |k| < 2^31, the
// result much smaller than x when k != 0).
EMILY_CR_HD dd reduce3(double x, double k, double c1, double c2, double c3) {
    double p1 = k * c1, e1 = fma(k, c1, -p1);
    double p2 = k * c2, e2 = fma(k, c2, -p2);
    dd r = two_sum(x, -p1); // exact when x and p1 are close
    r = dd_add(r, dd{-e1, 0.0});
    r = dd_add(r, dd{-p2, -e2});
    r = dd_add(r, dd{-k * c3, 0.0});
    return r;
}

// exp(r) - 1 for |r| <= 0.36, Taylor series in double-double.
EMILY_CR_HD dd expm1_small(dd r) {
    dd term = r, sum = r;
    for (int n = 2; n <= 27; n++) {
        term = dd_div_d(dd_mul(term, r), (double)n);
        sum = dd_add(sum, term);
        if (fabs(term.hi) < 0x1p-110 * fabs(sum.hi)) break;
    }
    return sum;
}

// exp(x) = 2^k (1 + m), m in double-double; false outside the range
// (-700 up to where exp overflows: every result there is normal, so the
// scaling by 2^k is exact).
EMILY_CR_HD bool exp_parts(double x, double &k, dd &m) {
    if (!(x > -700.0 && x < 0x1.62e42fefa39efp+9)) return false;
    k = rint(x * 0x1.71547652b82fep0);
    m = expm1_small(reduce3(x, k, LN2_1, LN2_2, LN2_3));
    return true;
}

EMILY_CR_HD double cr_exp(double x) {
    double k;
    dd m;
    if (!exp_parts(x, k, m) || x < -700.0) return exp(x);
    dd e = dd_add(dd{1.0, 0.0}, m);
    return ldexp(e.hi + e.lo, (int)k);
}

EMILY_CR_HD double cr_expm1(double x) {
    if (x == 0.0 || !(fabs(x) < 700.0)) return expm1(x);
    if (fabs(x) <= 0.34) {
        dd s = expm1_small(dd{x, 0.0});
        return s.hi + s.lo;
    }
    double k;
    dd m;
    if (!exp_parts(x, k, m)) return expm1(x);
    dd e = dd_add(dd{1.0, 0.0}, m);
    double sc = ldexp(1.0, (int)k);
    e = dd{e.hi * sc, e.lo * sc};
    e = dd_add(e, dd{-1.0, 0.0});
    return e.hi + e.lo;
}

// sin and cos of r, |r| <= pi/4 + a little, in double-double.
EMILY_CR_HD void sincos_small(dd r, dd &s, dd &c) {
    dd r2 = dd_mul(r, r);
    dd term = r;
    s = r;
    for (int n = 3; n <= 31; n += 2) {
        term = dd_div_d(dd_mul(term, r2), -(double)((n - 1) * n));
        s = dd_add(s, term);
        if (fabs(term.hi) < 0x1p-110 * fabs(s.hi)) break;
    }
    term = dd{1.0, 0.0};
    c = term;
    for (int n = 2; n <= 30; n += 2) {
        term = dd_div_d(dd_mul(term, r2), -(double)((n - 1) * n));
        c = dd_add(c, term);
        if (fabs(term.hi) < 0x1p-110) break;
    }
}

// sin(x) and cos(x) in double-double; false (nothing set) outside
// |x| < 2^30 or for x = 0 (pi/2 to 161 bits leaves r = x - k pi/2 with
// an absolute error near 2^-130 there).
EMILY_CR_HD bool cr_sincos_dd(double x, dd &sn, dd &cs) {
    if (!(fabs(x) < 0x1p30) || x == 0.0) return false;
    double k = rint(x * 0x1.45f306dc9c883p-1);
    dd r = k == 0.0 ? dd{x, 0.0} : reduce3(x, k, PIO2_1, PIO2_2, PIO2_3);
    dd s, c;
    sincos_small(r, s, c);
    int q = (int)(k - 4.0 * floor(k / 4.0));
    dd ns = dd{-s.hi, -s.lo}, nc = dd{-c.hi, -c.lo};
    switch (q) {
    case 0:
        sn = s;
        cs = c;
        break;
    case 1:
        sn = c;
        cs = ns;
        break;
    case 2:
        sn = ns;
        cs = nc;
        break;
    default:
        sn = nc;
        cs = s;
        break;
    }
    return true;
}

// sin(x) and cos(x); false (nothing set) outside |x| < 2^30.
EMILY_CR_HD bool cr_sincos(double x, double &sn, double &cs) {
    if (x == 0.0) {
        sn = x;
        cs = 1.0;
        return true;
    }
    dd s, c;
    if (!cr_sincos_dd(x, s, c)) return false;
    sn = s.hi + s.lo;
    cs = c.hi + c.lo;
    return true;
}

// exp(a) for a double-double a = 2^k (1 + m); false past |a| 700.
EMILY_CR_HD bool exp_dd_parts(dd a, double &k, dd &m) {
    if (!(fabs(a.hi) < 700.0)) return false;
    k = rint(a.hi * 0x1.71547652b82fep0);
    dd r = dd_add(reduce3(a.hi, k, LN2_1, LN2_2, LN2_3), dd{a.lo, 0.0});
    m = expm1_small(r);
    return true;
}

// log(x) in double-double for 2^-1000 <= x <= 2^1000 (exp(-log x) stays
// in exp_dd_parts' range): one Newton step from the device's log, with exp
// in double-double.
EMILY_CR_HD bool log_dd_core(double x, dd &l) {
    if (!(x >= 0x1p-1000 && x <= 0x1p1000)) return false;
    double y0 = log(x), k;
    dd m;
    if (!exp_dd_parts(dd{-y0, 0.0}, k, m)) return false;
    // e = x * exp(-y0) - 1, computed as x * 2^k * (1 + m) - 1
    dd t = dd_mul_d(dd_add(dd{1.0, 0.0}, m), x);
    double sc = ldexp(1.0, (int)k);
    t = dd{t.hi * sc, t.lo * sc};
    dd e = dd_add(t, dd{-1.0, 0.0});
    // log(1 + e) = e - e^2/2 (e is about 2^-52)
    e = dd_add(e, dd{-0.5 * e.hi * e.hi, 0.0});
    l = dd_add(dd{y0, 0.0}, e);
    return true;
}

// log(x) in double-double for every finite x > 0 (subnormals too): beyond
// log_dd_core's range, log(m) + e ln 2 with x = m 2^e, m in [1, 2).
EMILY_CR_HD bool log_dd(double x, dd &l) {
    if (log_dd_core(x, l)) return true;
    if (!(x > 0.0 && x <= 0x1.fffffffffffffp+1023)) return false;
    int e;
    const double m = 2.0 * frexp(x, &e), de = (double)(e - 1);
    if (!log_dd_core(m, l)) return false;
    const double p1 = de * LN2_1, p2 = de * LN2_2;
    l = dd_add(l, dd_add(dd{p1, fma(de, LN2_1, -p1)}, dd{p2, fma(de, LN2_2, -p2)}));
    return true;
}

// log(1 + f) for a double f, |f| <= 1/16, in double-double: 2 atanh(s) =
// 2 (s + s^3/3 + s^5/5 + ...) with s = f / (2 + f). Near 1, log_dd's
// absolute accuracy (some 2^-106) is too coarse relative to a result of
// the size of f.
EMILY_CR_HD dd log1p_dd_small(double f) {
    const dd den = two_sum(2.0, f);
    const double q1 = f / den.hi;
    const dd rem = dd_add(dd{f, 0.0}, dd_mul_d(dd{-den.hi, -den.lo}, q1));
    const dd s = fast_two_sum(q1, (rem.hi + rem.lo) / den.hi);
    const dd s2 = dd_mul(s, s);
    dd pow = s, sum = s;
    for (int n = 3; n <= 41; n += 2) {
        pow = dd_mul(pow, s2);
        const dd term = dd_div_d(pow, (double)n);
        sum = dd_add(sum, term);
        if (fabs(term.hi) < 0x1p-110 * fabs(sum.hi)) break;
    }
    return dd{2.0 * sum.hi, 2.0 * sum.lo};
}

EMILY_CR_HD double cr_log(double x) {
    if (x == 1.0) return 0.0;
    if (x > 0.9375 && x < 1.0625) { // x - 1 is exact here
        const dd l = log1p_dd_small(x - 1.0);
        return l.hi + l.lo;
    }
    dd l;
    if (!log_dd(x, l)) return log(x);
    return l.hi + l.lo;
}

// pow(x, y) for finite x > 0 and finite y; the device's pow elsewhere and
// where the result is near overflow or underflow.
EMILY_CR_HD double cr_pow(double x, double y) {
    dd l;
    if (!(x > 0.0) || !isfinite(y) || y == 0.0 || x == 1.0 || !log_dd(x, l)) return pow(x, y);
    dd t = dd_mul_d(l, y);
    double k;
    dd m;
    if (!(fabs(t.hi) < 700.0) || !exp_dd_parts(t, k, m)) return pow(x, y);
    dd e = dd_add(dd{1.0, 0.0}, m);
    return ldexp(e.hi + e.lo, (int)k);
}

// atan2(y, x) for finite, nonzero, moderate x and y: one correction step
// from the device's atan2 using sin/cos in double-double.
EMILY_CR_HD double cr_atan2(double y, double x) {
    double ax = fabs(x), ay = fabs(y);
    if (!(ax >= 0x1p-500 && ax <= 0x1p500 && ay >= 0x1p-500 && ay <= 0x1p500)) return atan2(y, x);
    double t0 = atan2(y, x);
    dd s, c;
    if (!cr_sincos_dd(t0, s, c)) return t0;
    // tan(t - t0) = (y cos t0 - x sin t0) / (x cos t0 + y sin t0)
    dd num = dd_add(dd_mul_d(c, y), dd_mul_d(dd{-s.hi, -s.lo}, x));
    double den = x * c.hi + y * s.hi;
    double d = (num.hi + num.lo) / den;
    dd r = two_sum(t0, d);
    return r.hi + r.lo;
}

EMILY_CR_HD double cr_sin(double x) {
    double s, c;
    return cr_sincos(x, s, c) ? s : sin(x);
}
EMILY_CR_HD double cr_cos(double x) {
    double s, c;
    return cr_sincos(x, s, c) ? c : cos(x);
}

// cosh and sinh composed from the double-double exp and expm1 (the
// identities cosh = (e + 1/e) / 2, sinh = (t + t / (t + 1)) / 2 with t =
// expm1, as most libms compose them).
EMILY_CR_HD double cr_cosh(double x) {
    double a = fabs(x);
    if (!(a < 700.0)) return cosh(x);
    if (a < 0.5 * 0x1.62e42fefa39efp-1) {
        if (a < 0x1p-55) return 1.0;
        double t = cr_expm1(a), w = 1.0 + t;
        return 1.0 + (t * t) / (w + w);
    }
    if (a < 22.0) {
        double t = cr_exp(a);
        return 0.5 * t + 0.5 / t;
    }
    return 0.5 * cr_exp(a);
}
EMILY_CR_HD double cr_sinh(double x) {
    double a = fabs(x), h = x < 0 ? -0.5 : 0.5;
    if (!(a < 700.0)) return sinh(x);
    if (a < 22.0) {
        if (a < 0x1p-28) return x;
        double t = cr_expm1(a);
        if (a < 1.0) return h * (2.0 * t - t * t / (t + 1.0));
        return h * (t + t / (t + 1.0));
    }
    return h * cr_exp(a);
}

// asinh in double-double, rounded once (glibc's asinh misses the
// correctly rounded value on about a fifth of its inputs, so this gives
// its bits only where it is right: the doctest inputs 1, 2, 3 among them).
//  - |x| < 2^-28: x (the next term, x^3/6, is below half an ULP);
//  - |x| < 1/8: the series x - x^3/6 + 3x^5/40 - ..., term n being
//    (-1)^n p_n x^(2n+1) / (2n+1) with p_0 = 1, p_(n+1) = p_n (2n+1)/(2n+2);
//  - below 2^28: log(t), t = |x| + sqrt(x^2 + 1) in double-double, as
//    log(t.hi) + t.lo / t.hi (t.lo / t.hi is below 2^-52: its log1p is
//    itself to 2^-105);
//  - above: log(2|x|) = log(|x|) + ln 2.
// Zeros, infinities and NaN return x; the sign is x's.
EMILY_CR_HD double cr_asinh(double x) {
    const double a = fabs(x);
    if (!(a >= 0x1p-28) || a == INFINITY) return x; // also NaN
    dd r;
    if (a < 0.125) {
        const dd x2 = dd_mul(dd{a, 0.0}, dd{a, 0.0});
        dd pw = dd{a, 0.0}, p = dd{1.0, 0.0};
        r = dd{a, 0.0};
        for (int n = 1; n < 40; n++) {
            pw = dd_mul(pw, x2);
            p = dd_div_d(dd_mul_d(p, (double)(2 * n - 1)), (double)(2 * n));
            dd term = dd_div_d(dd_mul(p, pw), (double)(2 * n + 1));
            if (n & 1) term = dd{-term.hi, -term.lo};
            r = dd_add(r, term);
            if (fabs(term.hi) < 0x1p-110 * r.hi) break;
        }
    } else if (a < 0x1p28) {
        const dd q = dd_add(dd_mul(dd{a, 0.0}, dd{a, 0.0}), dd{1.0, 0.0});
        const double s0 = sqrt(q.hi);
        // one Newton step: sqrt(q) = s0 + (q - s0^2) / (2 s0)
        const dd s02 = dd_mul(dd{s0, 0.0}, dd{s0, 0.0});
        const dd diff = dd_add(q, dd{-s02.hi, -s02.lo});
        const dd sq = fast_two_sum(s0, (diff.hi + diff.lo) / (2.0 * s0));
        const dd t = dd_add(dd{a, 0.0}, sq);
        dd l;
        if (!log_dd(t.hi, l)) return asinh(x);
        r = dd_add(l, dd{t.lo / t.hi, 0.0});
    } else {
        dd l;
        if (!log_dd(a, l)) return asinh(x);
        r = dd_add(l, dd_add(dd{LN2_1, 0.0}, dd{LN2_2, 0.0}));
    }
    const double y = r.hi + r.lo;
    return x < 0 ? -y : y;
}

} // namespace emily_cr

#endif
