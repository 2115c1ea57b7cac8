/* CPU kernels: cumulative family (none yet). */
#include "cpu/kernels.h"

const struct emily_cumulative_kernels *const emily_cpu_cumulative_kernels = NULL;
