/* The radix-2 butterfly of the exact FFT, shared by the CPU engine
 * (src/cpu/fft.c) and the CUDA engine's exact path (src/cuda/fft_exact.cu)
 * so that both combine in the reference's order and give the same bits. */
#ifndef EMILY_CORE_FFT_BUTTERFLY_H
#define EMILY_CORE_FFT_BUTTERFLY_H

#include "core/host_device.h"

/* t = (c + i s) * odd; even + t; even - t, in place: (er, ei) is the even
 * point, (or_, oi) the odd one. */
EMILY_HD void emi_fft_butterfly(double c, double s, double *er, double *ei, double *or_, double *oi) {
    double xr = *or_, xi = *oi;
    double tr = c * xr - s * xi, ti = s * xr + c * xi;
    double ur = *er, ui = *ei;
    *er = ur + tr;
    *ei = ui + ti;
    *or_ = ur - tr;
    *oi = ui - ti;
}

#endif
