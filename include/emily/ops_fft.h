/* Typed operations: fft family (see emily/ops.h for conventions). */
#ifndef EMILY_OPS_FFT_H
#define EMILY_OPS_FFT_H

#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
