// cuFFT store callbacks of the fast FFT (src/cuda/fft_cufft.cu), compiled
// apart to LTO-IR (see the Makefile) and linked by cuFFT into its own
// last kernel at plan time (cufftXtSetJITCallback): the scaling of the
// inverse transforms and Nx's eps-zeroing then cost no pass of their own
// over the output. Each plan's callerInfo points to its FftStoreParams,
// written once when the plan is made.
#include <cufftXt.h>
#include "cuda/lto/fft_store_params.h"

namespace {

template <typename T> __device__ __forceinline__ T finish(T v, T scale, T eps) {
    v = v * scale;
    return fabs(v) <= eps ? (T)0 : v;
}

} // namespace

extern "C" __device__ void emily_fft_store_c(void *out, unsigned long long off, cufftComplex v, void *info, void *) {
    const emi_fft_store_params *p = (const emi_fft_store_params *)info;
    v.x = finish(v.x, p->scale_f, p->eps_f);
    v.y = finish(v.y, p->scale_f, p->eps_f);
    ((cufftComplex *)out)[off] = v;
}

extern "C" __device__ void emily_fft_store_z(void *out, unsigned long long off, cufftDoubleComplex v, void *info,
                                             void *) {
    const emi_fft_store_params *p = (const emi_fft_store_params *)info;
    v.x = finish(v.x, p->scale_d, p->eps_d);
    v.y = finish(v.y, p->scale_d, p->eps_d);
    ((cufftDoubleComplex *)out)[off] = v;
}

extern "C" __device__ void emily_fft_store_r(void *out, unsigned long long off, cufftReal v, void *info, void *) {
    const emi_fft_store_params *p = (const emi_fft_store_params *)info;
    ((cufftReal *)out)[off] = finish(v, p->scale_f, p->eps_f);
}

extern "C" __device__ void emily_fft_store_d(void *out, unsigned long long off, cufftDoubleReal v, void *info, void *) {
    const emi_fft_store_params *p = (const emi_fft_store_params *)info;
    ((cufftDoubleReal *)out)[off] = finish(v, p->scale_d, p->eps_d);
}
