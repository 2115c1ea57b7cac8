/* Typed operations: discrete Fourier transforms (see emily/ops.h for
 * conventions).
 *
 * Results are Nx.BinaryBackend's: the transform is computed in double
 * precision with the reference's algorithm (radix-2 Cooley-Tukey down to
 * odd-length direct DFTs for powers of two and lengths below 1024,
 * Bluestein's chirp-z above), every component with |x| <= eps is written
 * as 0, and the result is rounded to the output type. The inverse
 * transforms divide by the length.
 *
 * On CUDA this is precision HIGHEST (emily_dot_set_precision and its
 * thread and environment variants, emily/ops_dot.h); at FAST, the default,
 * the transform is cuFFT's in the output's precision (c64 outputs in
 * single precision), with the same lengths, eps-zeroing, scaling and
 * output types, within the usual FFT error bound (about
 * u log2(n) ||y||_2, u the output's unit roundoff) of the reference. The
 * CPU computes the reference's bits at both.
 *
 * `length` 0 means the axis size (irfft: 2 * (size - 1)); a longer length
 * zero-pads the axis, a shorter one truncates it. Negative axes count
 * from the end. The output type is Nx.Type.to_complex of the input (c64
 * for integers, f16, bf16, f32; c128 for f64); irfft gives the real type. */
#ifndef EMILY_OPS_FFT_H
#define EMILY_OPS_FFT_H

#include <stdint.h>
#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

EMILY_API emily_status emily_fft(const emily_tensor *t, int64_t length, int axis, double eps, emily_tensor **out);
EMILY_API emily_status emily_ifft(const emily_tensor *t, int64_t length, int axis, double eps, emily_tensor **out);

/* Over two distinct axes: along axes[1] first, then axes[0], rounding to
 * the output type in between (as Nx's fft2 does). */
EMILY_API emily_status emily_fft2(const emily_tensor *t, const int64_t lengths[2], const int axes[2], double eps,
                                  emily_tensor **out);
EMILY_API emily_status emily_ifft2(const emily_tensor *t, const int64_t lengths[2], const int axes[2], double eps,
                                   emily_tensor **out);

/* Real input only: the first length / 2 + 1 points of the fft. */
EMILY_API emily_status emily_rfft(const emily_tensor *t, int64_t length, int axis, double eps, emily_tensor **out);
/* The real signal of `length` points whose half spectrum is t (cut or
 * zero-padded to length / 2 + 1 points, extended by conjugate symmetry). */
EMILY_API emily_status emily_irfft(const emily_tensor *t, int64_t length, int axis, double eps, emily_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
