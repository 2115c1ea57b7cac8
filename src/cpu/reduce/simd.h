/* Vectorized folds of contiguous f32/f64 runs for the reduction kernels,
 * with AVX-512 / AVX2 paths picked at run time (plain C elsewhere). */
#ifndef EMILY_CPU_REDUCE_SIMD_H
#define EMILY_CPU_REDUCE_SIMD_H

#include <stdint.h>

/* Sum of x[0..n) accumulated in double (in lanes: not sequential order). */
double emi_simd_sum_f32(const float *x, int64_t n);
/* Compensated sum of x[0..n): out[0] + out[1] is the exact sum rounded
 * about once (lanes with TwoSum error terms). */
void emi_simd_sum2_f64(const double *x, int64_t n, double out[2]);

/* Fold x[0..n) into *m with max (min). Returns nonzero when a NaN was
 * seen, and then *m is unspecified. Among equal values (-0.0 and 0.0)
 * either may be kept. */
int emi_simd_max_f32(const float *x, int64_t n, float *m);
int emi_simd_min_f32(const float *x, int64_t n, float *m);
int emi_simd_max_f64(const double *x, int64_t n, double *m);
int emi_simd_min_f64(const double *x, int64_t n, double *m);

/* Index of the first (with `last`: the last) element of x[0..n) equal
 * to v (as numbers: -0.0 == 0.0), or -1. */
int64_t emi_simd_find_f32(const float *x, int64_t n, float v, int last);
int64_t emi_simd_find_f64(const double *x, int64_t n, double v, int last);

/* Column folds: acc[j] += x[j] in double; acc[j] = max/min(acc[j], x[j])
 * with a NaN in x sticking in acc. */
void emi_simd_cols_sum_f32(double *acc, const float *x, int64_t n);
void emi_simd_cols_max_f32(float *acc, const float *x, int64_t n);
void emi_simd_cols_min_f32(float *acc, const float *x, int64_t n);

#endif
