/* What the fast FFT's store callbacks (fft_store.cu) read through their
 * callerInfo: the output scale (1, or 1/n for the inverse transforms) and
 * the eps below which Nx writes a component as 0, in both precisions
 * (eps_f: the largest float <= eps, so |x| <= eps_f exactly when the
 * float x has |x| <= eps). */
#ifndef EMILY_CUDA_LTO_FFT_STORE_PARAMS_H
#define EMILY_CUDA_LTO_FFT_STORE_PARAMS_H

typedef struct emi_fft_store_params {
    double scale_d, eps_d;
    float scale_f, eps_f;
} emi_fft_store_params;

#endif
