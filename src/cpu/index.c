/* CPU kernels: index family (none yet). */
#include "cpu/kernels.h"

const struct emily_index_kernels *const emily_cpu_index_kernels = NULL;
