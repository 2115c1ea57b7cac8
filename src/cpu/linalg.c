/* CPU kernels: linalg family (none yet). */
#include "cpu/kernels.h"

const struct emily_linalg_kernels *const emily_cpu_linalg_kernels = NULL;
