/* Complex arithmetic of the linear-algebra kernels (reference.h), step
 * by step as Elixir's Complex library computes it, so that results round
 * like the reference's. Rounding to a tensor type stays with each
 * caller (it differs in how a complex type's parts are rounded). */
#ifndef EMILY_CPU_LINALG_COMPLEX_H
#define EMILY_CPU_LINALG_COMPLEX_H

#include <math.h>
#include <stdbool.h>

typedef struct zd {
    double re, im;
} zd;

static inline zd zadd(zd a, zd b) { return (zd){a.re + b.re, a.im + b.im}; }
static inline zd zsub(zd a, zd b) { return (zd){a.re - b.re, a.im - b.im}; }
static inline zd zmul(zd a, zd b) { return (zd){a.re * b.re - a.im * b.im, a.im * b.re + a.re * b.im}; }
static inline zd zconj(zd a) { return (zd){a.re, -a.im}; }
static inline zd zdiv(zd a, zd b) {
    double den = b.re * b.re + b.im * b.im;
    return (zd){(a.re * b.re + a.im * b.im) / den, (a.im * b.re - a.re * b.im) / den};
}
static inline bool zzero(zd a) { return a.re == 0 && a.im == 0; }
/* A real number in a complex operation: Complex.new(x, 0). */
static inline zd zr(double x) { return (zd){x, 0}; }
/* Complex.abs: scaled to avoid overflow, exact for pure real/imaginary. */
static inline double zabs(zd a) {
    double x = fabs(a.re), y = fabs(a.im);
    if (x == 0) return y;
    if (y == 0) return x;
    if (x > y) return x * sqrt(1.0 + y / x * (y / x));
    return y * sqrt(1.0 + x / y * (x / y));
}
/* Complex.sqrt (principal root). */
static inline zd zsqrt(zd z) {
    double r = z.re, i = z.im;
    if (isnan(r) || isnan(i)) return (zd){NAN, NAN};
    if (isinf(i)) return (zd){INFINITY, i};
    if (r == INFINITY) return (zd){INFINITY, 0};
    if (r == -INFINITY) return (zd){0, INFINITY};
    if (r == 0 && i == 0) return z;
    double x = fabs(r), y = fabs(i), w;
    if (x >= y) w = sqrt(x) * sqrt(0.5 * (1.0 + sqrt(1.0 + y / x * (y / x))));
    else w = sqrt(y) * sqrt(0.5 * (x / y + sqrt(1.0 + x / y * (x / y))));
    if (r >= 0) return (zd){w, i / (2 * w)};
    double i2 = i >= 0 ? w : -w;
    return (zd){i / (2 * i2), i2};
}

#endif
