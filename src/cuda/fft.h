/* Internals of the CUDA FFT that tests and benchmarks reach (C; linked
 * from libemily.a): which plans the fast path (cuFFT, precision FAST)
 * makes. */
#ifndef EMILY_CUDA_FFT_H
#define EMILY_CUDA_FFT_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Plans whose output goes straight to the result may carry a store
 * callback (scaling and eps-zeroing inside cuFFT's last kernel, linked at
 * plan time through nvJitLink); without one, a separate pass over the
 * output does that work. Off unless EMILY_CUDA_FFT_CALLBACKS=1 (a JIT
 * link per new plan); changing it affects new plans only
 * (plans already cached keep theirs). */
void emi_cuda_fft_set_callbacks(bool on);
bool emi_cuda_fft_callbacks(void); /* whether plans take the store callback now */

/* Counts since the process started: plans made with a callback, plans
 * that asked for one and were made without it because cuFFT refused it
 * (no nvJitLink at run time, or a failed link), and plans made without
 * asking. */
typedef struct emi_cuda_fft_plan_counts {
    int64_t with_callback, callback_refused, plain;
} emi_cuda_fft_plan_counts;
void emi_cuda_fft_plan_counts_get(emi_cuda_fft_plan_counts *out);

#ifdef __cplusplus
}
#endif
#endif
