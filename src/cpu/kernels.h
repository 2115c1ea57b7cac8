/* CPU kernels, one file per family (see src/core/engine.h for the
 * conventions every kernel follows). */
#ifndef EMILY_CPU_KERNELS_H
#define EMILY_CPU_KERNELS_H

#include "core/engine.h"
#include "core/device_kernels.h"

/* The kernels and family tables every device has (core/device_kernels.h):
 * emi_cpu_copy ... emi_cpu_all_close, emi_cpu_sdpa (src/cpu/sdpa.c),
 * emi_cpu_softmax (src/cpu/fast_softmax.c), emi_cpu_rope
 * (src/cpu/fast_rope.c) and the tables emi_cpu_<family>_kernels defined
 * by the family's file (the engine table takes their addresses, constants
 * its initializer can use). */
EMI_DEVICE_KERNELS_DECLARE(emi_cpu)

/* OpenBLAS on one thread from now on (once per process): the engine's
 * pool runs the products in parallel (src/cpu/dot.c says why). Every
 * kernel that calls BLAS calls it first. */
void emi_cpu_blas_one_thread(void);

#endif
