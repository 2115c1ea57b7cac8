/* The last step of Nx's determinant for n >= 4, shared by the CPU's two
 * LU generations (determinant.c: Nx 0.8+'s LU, nx07/kernels.c: Nx 0.7's). */
#ifndef EMILY_CPU_LINALG_DET_H
#define EMILY_CPU_LINALG_DET_H

#include <stdbool.h>
#include <stdint.h>
#include "cpu/linalg/complex.h"
#include "emily/dtype.h"

/* u: n x n doubles (cx: zd) of type w, perm: lu's row permutation. */
zd emi_cpu_det_from_lu(const void *u, const int64_t *perm, int64_t n, emily_dtype w, bool cx);

#endif
