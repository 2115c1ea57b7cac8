/* The FFT family's kernel table, filled by each device's engine.
 *
 * One kernel transforms every line of a tensor along one axis. The op
 * layer (src/ops/fft.c) validates, infers the output and hands the
 * kernel a source of a type it reads directly; fft2 is two calls.
 *
 * Keep this header valid C11 and C++ (a CUDA engine may include it). */
#ifndef EMILY_OPS_FFT_KERNELS_H
#define EMILY_OPS_FFT_KERNELS_H

#include <stdint.h>
#include "core/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_fft_mode {
    EMILY_FFT_FORWARD = 0,
    /* conj, forward, conj, divide by n (Nx's ifft) */
    EMILY_FFT_INVERSE,
    /* Nx's irfft: the line is a half spectrum, cut or zero-padded to
     * n / 2 + 1 points, extended to n points with the conjugates of
     * points n - n/2 - 1 .. 1 (in that order), inverse-transformed; dst
     * receives the real parts. */
    EMILY_FFT_INVERSE_REAL
} emily_fft_mode;

struct emily_fft_kernels {
    /* Each line of src along `axis` is cut or zero-padded to n points
     * (see EMILY_FFT_INVERSE_REAL), transformed as Nx.BinaryBackend does
     * (double precision, its algorithm and operation order), components
     * with |x| <= eps set to 0, and the first dst->shape[axis] points
     * (<= n) are written, rounded to dst's type, along dst's axis.
     * src: f32, f64, c64 or c128, any strides, src->shape[axis] may be 0.
     * dst: contiguous, src's shape except along axis; c64/c128 (f32/f64
     * for EMILY_FFT_INVERSE_REAL). n >= 1. */
    emily_status (*fft)(emily_tensor *dst, const emily_tensor *src, int axis, int64_t n,
                        emily_fft_mode mode, double eps);
};

#ifdef __cplusplus
}
#endif
#endif
