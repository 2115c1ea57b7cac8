/* CPU kernels: window family (none yet). */
#include "cpu/kernels.h"

const struct emily_window_kernels *const emily_cpu_window_kernels = NULL;
