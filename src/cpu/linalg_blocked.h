/* Blocked versions of the reference-exact LU and Cholesky kernels
 * (linalg.c): the same operations on every element, in the same order,
 * with the bulk of the work in emily_xupdate (exact_update.h), so their
 * results equal the unblocked loops' bit for bit. */
#ifndef EMILY_CPU_LINALG_BLOCKED_H
#define EMILY_CPU_LINALG_BLOCKED_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/dtype.h"

/* Rounds a double to the real type t (the part type for complex t), as
 * the reference writes an intermediate tensor of type t. */
static inline double emily_linalg_rnd(emily_dtype t, double x) {
    switch (t) {
    case EMILY_F32:
    case EMILY_C64:
        return (double)(float)x;
    case EMILY_F16:
        return (double)emily_f16_to_f32(emily_f64_to_f16(x));
    case EMILY_BF16:
        return (double)emily_bf16_to_f32(emily_f32_to_bf16((float)x));
    default:
        return x;
    }
}

/* The reference's eps (1.0e-10) reaches the computation as a scalar
 * constant tensor of type f32, so it is f32(1.0e-10). */
#define EMILY_CHOLESKY_EPS ((double)1.0e-10f)

/* Nx.LinAlg.LU on a row-major n x n matrix in place, work type w (f64,
 * or f32 held in doubles; false for any other): on return a holds L's
 * multipliers below the diagonal and U on and above it, perm the row
 * permutation (perm[i] = original row of row i), as lu_real in linalg.c.
 * False when out of memory, before a is touched. */
bool emi_cpu_lu_blocked(double *a, int64_t n, int64_t *perm, emily_dtype w);

/* Nx.LinAlg.Cholesky of a row-major n x n matrix a (values of the real
 * type w, held as doubles) into l, as cholesky_real in linalg.c. False
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
