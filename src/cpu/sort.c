/* CPU kernels: sort family (none yet). */
#include "cpu/kernels.h"

const struct emily_sort_kernels *const emily_cpu_sort_kernels = NULL;
