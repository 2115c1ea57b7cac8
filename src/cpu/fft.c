/* CPU kernels: fft family (none yet). */
#include "cpu/kernels.h"

const struct emily_fft_kernels *const emily_cpu_fft_kernels = NULL;
