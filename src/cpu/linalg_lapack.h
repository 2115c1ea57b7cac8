/* The LAPACK kernels of qr, svd and eigh (linalg_lapack.c), which
 * linalg.c puts in the CPU engine's linalg table beside Nx's own
 * algorithms. Arguments as the table's qr_lapack/svd_lapack/eigh_lapack
 * (core/kernels.h). */
#ifndef EMILY_CPU_LINALG_LAPACK_H
#define EMILY_CPU_LINALG_LAPACK_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/tensor.h"

emily_status emi_cpu_lapack_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                                 bool complete, double eps, emily_dtype work);
emily_status emi_cpu_lapack_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                                  const emily_tensor *a, bool full_matrices, int64_t max_iter,
                                  emily_dtype work, bool integer_input);
emily_status emi_cpu_lapack_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a,
                                   double eps, int64_t max_iter, emily_dtype work);

#endif
