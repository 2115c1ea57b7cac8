/* Blocked versions of the reference-exact LU and Cholesky kernels
 * (lu.c, cholesky.c): the same operations on every element, in the same order,
 * with the bulk of the work in emily_xupdate (exact_update.h), so their
 * results equal the unblocked loops' bit for bit. */
#ifndef EMILY_CPU_LINALG_BLOCKED_H
#define EMILY_CPU_LINALG_BLOCKED_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/dtype.h"

/* Nx.LinAlg.LU on a row-major n x n matrix in place, work type w (f64,
 * or f32 held in doubles; false for any other): on return a holds L's
 * multipliers below the diagonal and U on and above it, perm the row
 * permutation (perm[i] = original row of row i), as emi_linalg_lu_real.
 * False when out of memory, before a is touched. */
bool emi_cpu_lu_blocked(double *a, int64_t n, int64_t *perm, emily_dtype w);

/* Nx.LinAlg.Cholesky of a row-major n x n matrix a (values of the real
 * type w, held as doubles) into l, as cholesky.c's unblocked loop. False
 * when out of memory. */
bool emi_cpu_cholesky_blocked(const double *a, double *l, int64_t n, emily_dtype w);

/* Matrices of at least this order take the blocked paths (default
 * EMILY_LINALG_BLOCK_MIN_DEFAULT, or the environment's
 * EMILY_LINALG_BLOCK_MIN, read once). Tests lower it to run the blocked code on
 * small matrices and raise it to get the unblocked result to compare with;
 * a factorization already running keeps the path it took. */
#define EMILY_LINALG_BLOCK_MIN_DEFAULT 64
void emi_cpu_linalg_set_block_min(int64_t n);
int64_t emi_cpu_linalg_block_min(void);

#endif
