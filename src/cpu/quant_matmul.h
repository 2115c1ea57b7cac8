/* The CPU's fused quantized matmul (src/core/kernels.h, quant family). */
#ifndef EMILY_CPU_QUANT_MATMUL_H
#define EMILY_CPU_QUANT_MATMUL_H

#include "core/engine.h"

emily_status emi_cpu_quant_matmul(emily_tensor *dst, const emily_tensor *x, const emily_tensor *q,
                                  const emily_tensor *scales, const emily_tensor *biases, int bits, int64_t group_size,
                                  bool transpose);

#endif
