/* The CPU engine's linear algebra kernels, one for each slot of the
 * linalg table (core/kernels.h for their arguments; table.c puts
 * them in it):
 *
 * - Nx's own algorithms (Nx 0.8 and later), computed the way
 *   Nx.BinaryBackend runs them so that results are the reference's to the
 *   last bit: lu.c, cholesky.c, triangular_solve.c, solve.c (the fused
 *   f64 solve), determinant.c, qr.c, eigh.c, svd.c (reference.h is what
 *   they share; blocked.c the blocked LU and Cholesky on exact_update.c);
 * - LAPACK's qr, svd and eigh put in Nx's conventions (lapack.c, the
 *   default method);
 * - Nx 0.7's algorithms, for EMILY_LINALG_REFERENCE_NX07 (nx07/, and the
 *   nx07 variants of qr.c and svd.c). */
#ifndef EMILY_CPU_LINALG_LINALG_H
#define EMILY_CPU_LINALG_LINALG_H

#include <stdbool.h>
#include <stdint.h>
#include "core/kernels.h"

/* The slots that several methods fill share a signature. */
typedef emily_status emi_qr_kernel(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps,
                                   emily_dtype work);
typedef emily_status emi_svd_kernel(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                                    bool full_matrices, int64_t max_iter, emily_dtype work, bool integer_input);
typedef emily_status emi_determinant_kernel(emily_tensor *det, const emily_tensor *a, emily_dtype w);

/* Nx's algorithms */
emily_status emi_cpu_linalg_lu(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a, emily_dtype w);
emily_status emi_cpu_linalg_cholesky(emily_tensor *l, const emily_tensor *a, emily_dtype w);
emily_status emi_cpu_linalg_triangular_solve(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                                             bool b_vector, bool left_side, bool lower, emily_transform_a transform);
emily_status emi_cpu_linalg_solve(emily_tensor *x, const emily_tensor *a, const emily_tensor *b, bool b_vector);
emi_determinant_kernel emi_cpu_linalg_determinant;
emi_qr_kernel emi_cpu_linalg_qr;
emi_svd_kernel emi_cpu_linalg_svd;
emily_status emi_cpu_linalg_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter,
                                 emily_dtype work);

/* LAPACK (the same signature for eigh) */
emi_qr_kernel emi_cpu_lapack_qr;
emi_svd_kernel emi_cpu_lapack_svd;
emily_status emi_cpu_lapack_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter,
                                 emily_dtype work);

/* Nx 0.7: nx07/kernels.c (lu, determinant, eigh), qr.c and svd.c */
emily_status emi_cpu_nx07_lu(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a, double eps);
emi_determinant_kernel emi_cpu_nx07_determinant;
emily_status emi_cpu_nx07_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter);
emi_qr_kernel emi_cpu_nx07_qr;
emi_svd_kernel emi_cpu_nx07_svd;

#endif
