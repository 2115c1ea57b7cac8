/* Nx 0.7's own linear algebra, for Emily.Backend under Nx 0.7 with
 * EMILY_LINALG_REFERENCE_NX07: Nx 0.7.2's Nx.BinaryBackend.Matrix.lu and
 * Nx.BinaryBackend.Matrix.eigh, computed the way that module computes
 * them (Elixir floats, i.e. double precision throughout, rounded to the
 * output type only when written), so that results are the reference's
 * bit for bit. Nx 0.8 replaced both (Nx.LinAlg.LU, Nx.LinAlg.BlockEigh),
 * which ../lu.c and ../eigh.c reproduce. The table's *_nx07 kernels
 * (../linalg.h) are built on these (kernels.c), and on the nx07 forms of
 * ../qr.c and ../svd.c. */
#ifndef EMILY_CPU_LINALG_NX07_NX07_H
#define EMILY_CPU_LINALG_NX07_NX07_H

#include <stdbool.h>
#include <stdint.h>
#include "cpu/linalg/complex.h"
#include "emily/tensor.h"

/* Results of the eigh routines. */
enum { NX07_OK = 0, NX07_NOT_HERMITIAN = 1, NX07_NO_MEMORY = 2 };

/* Matrix.eigh on one n x n matrix a (row-major, the input tensor's
 * values as doubles; complex: re/im pairs) with Nx's :eps and :max_iter:
 * w the n eigenvalues (real parts, after Nx's zeroing of |x| < eps),
 * v the n x n matrix whose columns are the eigenvectors, in Matrix.eigh's
 * order (no sorting). NX07_NOT_HERMITIAN when |a - adjoint(a)| > eps
 * somewhere (Nx raises "matrix must be hermitian, ..."). */
int emi_cpu_nx07_eigh_real(const double *a, int64_t n, double eps, int64_t max_iter, double *w, double *v);
int emi_cpu_nx07_eigh_complex(const zd *a, int64_t n, double eps, int64_t max_iter, double *w, zd *v);

/* Matrix.lu on one n x n matrix a (row-major, the input's values as
 * doubles), permuted in place: perm[j] is the input row that ends up in
 * row j (A = P L U with P[perm[j]][j] = 1); l (unit lower) and u (upper)
 * n x n. tmp: scratch for one row. */
void emi_cpu_nx07_lu_real(double *a, int64_t n, double eps, int64_t *perm, double *l, double *u, char *tmp);
void emi_cpu_nx07_lu_complex(zd *a, int64_t n, double eps, int64_t *perm, zd *l, zd *u, char *tmp);

#endif
