/* CPU kernels: dot family (none yet). */
#include "cpu/kernels.h"

const struct emily_dot_kernels *const emily_cpu_dot_kernels = NULL;
