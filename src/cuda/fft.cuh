// The FFT family on CUDA (C++, nvcc only): what the entry point
// (fft.cu) hands its two implementations, the exact one (fft_exact.cu,
// the reference's algorithm and bits in double) and the fast one
// (fft_cufft.cu, cuFFT in the output's precision).
#ifndef EMILY_CUDA_FFT_CUH
#define EMILY_CUDA_FFT_CUH

#include "cuda/common.cuh"
#include "core/kernels.h"

namespace emily_cuda {

// One transform of every line of src along `axis` (see the fft entry of
// core/kernels.h), already checked: n >= 1, keep >= 1, lines >= 1, src
// and dst of types the mode allows.
struct FftJob {
    emily_cuda_ctx ctx;
    emily_tensor *dst;
    const emily_tensor *src;
    int axis;
    int64_t n;
    emily_fft_mode mode;
    double eps;
    int64_t keep;       // points written per line (dst->shape[axis] <= n)
    int64_t len_in;     // src->shape[axis] (0: every line is zeros)
    int64_t take;       // points read per line: len_in cut to n (to n / 2 + 1, INVERSE_REAL)
    int64_t lines;      // dst->size / keep
    int64_t s_ax, d_ax; // axis strides of src and dst
    // dst and src without the axis (views[1] is dst's again when src is
    // empty: nothing is read then, and an empty tensor has no memory)
    emily_tensor *views[2] = {NULL, NULL};

    ~FftJob() {
        emily_tensor_release(views[0]);
        emily_tensor_release(views[1]);
    }

    // doff[r], soff[r] <- the element offsets (from the buffers' starts)
    // of line r's first point in dst and src, for kernels that address
    // lines by number (device arrays of `lines` entries each).
    emily_status line_offsets(int64_t *doff, int64_t *soff) const;
};

emily_status fft_exact(FftJob &job);
emily_status fft_cufft(FftJob &job);

// The parts of a source element in its own precision (real types: an
// imaginary part of 0).
template <typename S> struct FftPoint;
template <> struct FftPoint<float> {
    typedef float P;
    static __device__ __forceinline__ P re(float v) { return v; }
    static __device__ __forceinline__ P im(float) { return 0.0f; }
};
template <> struct FftPoint<double> {
    typedef double P;
    static __device__ __forceinline__ P re(double v) { return v; }
    static __device__ __forceinline__ P im(double) { return 0.0; }
};
template <> struct FftPoint<emily_c64> {
    typedef float P;
    static __device__ __forceinline__ P re(emily_c64 v) { return v.re; }
    static __device__ __forceinline__ P im(emily_c64 v) { return v.im; }
};
template <> struct FftPoint<emily_c128> {
    typedef double P;
    static __device__ __forceinline__ P re(emily_c128 v) { return v.re; }
    static __device__ __forceinline__ P im(emily_c128 v) { return v.im; }
};

// Calls f.template operator()<S>() with S the storage type of an FFT
// source dtype (f32, f64, c64, c128; the entry point has checked it).
template <typename F> emily_status with_fft_source(emily_dtype t, F &&f) {
    switch (t) {
    case EMILY_F32: return f.template operator()<float>();
    case EMILY_F64: return f.template operator()<double>();
    case EMILY_C64: return f.template operator()<emily_c64>();
    default: return f.template operator()<emily_c128>();
    }
}

// A thread's share of a flat range: for (i = first; i < total; i += step).
__device__ __forceinline__ int64_t flat_first() { return blockIdx.x * (int64_t)blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t flat_step() { return (int64_t)gridDim.x * blockDim.x; }

} // namespace emily_cuda

#endif
