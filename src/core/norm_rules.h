/* The per-row scalar steps of layer_norm and rms_norm (emily/ops_fast.h),
 * written once for the CPU (C11) and the CUDA kernels (nvcc), so both
 * devices round every intermediate the same way: a row's sums come in as
 * doubles (the f16/bf16/f32 statistics are accumulated in double, f64 in
 * f64) and everything after them is here.
 *
 * Softmax's row sums are EMI_NORM_LANES interleaved partial sums (element
 * j into partial j mod EMI_NORM_LANES, each in index order) combined
 * pairwise: partial k with k + 16, then with k + 8, 4, 2, 1, which is a
 * warp's xor butterfly (every lane k < s adds lane k + s).
 *
 * layer_norm's and rms_norm's row sums take EMI_NORM_CHUNK consecutive
 * elements a lane, so a GPU lane reads them with one 16-byte load:
 * element j goes to partial j mod EMI_NORM_PARTIALS (= 8 x 32), each in
 * index order from 0.0; partial q = 8k + t is lane k's t-th, a lane's 8
 * are combined t with t + 4, then + 2, + 1, and the 32 lane totals by the
 * butterfly above. Both devices use exactly these orders;
 * emi_norm_combine is the CPU's copy of the butterfly. */
#ifndef EMILY_CORE_NORM_RULES_H
#define EMILY_CORE_NORM_RULES_H

#include <math.h>
#include <stdint.h>
#include "core/host_device.h"

#define EMI_NORM_LANES 32
#define EMI_NORM_CHUNK 8
#define EMI_NORM_PARTIALS (EMI_NORM_LANES * EMI_NORM_CHUNK)

/* The partial sums l[0..EMI_NORM_LANES) combined in the butterfly's order
 * (overwrites l). */
EMILY_HD double emi_norm_combine(double *l) {
    for (int s = EMI_NORM_LANES / 2; s >= 1; s /= 2)
        for (int k = 0; k < s; k++) l[k] = l[k] + l[k + s];
    return l[0];
}

/* Nx.mean: the sum rounded to the statistics type, then divided by n
 * (Nx.BinaryBackend divides in double and rounds once; for f32 operands
 * that is the f32 quotient, and n need not be exact in f32). */
EMILY_HD float emi_norm_mean_f32(double sum, int64_t n) { return (float)((double)(float)sum / (double)n); }
EMILY_HD double emi_norm_mean_f64(double sum, int64_t n) { return sum / (double)n; }

/* Nx.rsqrt as Nx.BinaryBackend computes it: 1 / sqrt in double, rounded
 * once to the type. */
EMILY_HD float emi_norm_rsqrt_f32(float v) { return (float)(1.0 / sqrt((double)v)); }
EMILY_HD double emi_norm_rsqrt_f64(double v) { return 1.0 / sqrt(v); }

/* layer_norm's scale: Axon's select(var >= eps, rsqrt(var + eps),
 * rsqrt(eps)), e already rounded to the statistics type. */
EMILY_HD float emi_layer_norm_r_f32(float var, float e) {
    return var >= e ? emi_norm_rsqrt_f32(var + e) : emi_norm_rsqrt_f32(e);
}
EMILY_HD double emi_layer_norm_r_f64(double var, double e) {
    return var >= e ? emi_norm_rsqrt_f64(var + e) : emi_norm_rsqrt_f64(e);
}

/* rms_norm's scale: rsqrt(mean(x^2) + eps). */
EMILY_HD float emi_rms_norm_r_f32(float ms, float e) { return emi_norm_rsqrt_f32(ms + e); }
EMILY_HD double emi_rms_norm_r_f64(double ms, double e) { return emi_norm_rsqrt_f64(ms + e); }

#endif
