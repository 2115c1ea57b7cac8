/* The CPU engine's linalg table: which kernel (linalg.h) fills each
 * slot of core/kernels.h. */
#include "cpu/kernels.h"
#include "cpu/linalg/linalg.h"

const struct emily_linalg_kernels emi_cpu_linalg_kernels = {
    .lu = emi_cpu_linalg_lu,
    .cholesky = emi_cpu_linalg_cholesky,
    .triangular_solve = emi_cpu_linalg_triangular_solve,
    .solve = emi_cpu_linalg_solve,
    .determinant = emi_cpu_linalg_determinant,
    .qr = emi_cpu_linalg_qr,
    .svd = emi_cpu_linalg_svd,
    .eigh = emi_cpu_linalg_eigh,
    .qr_lapack = emi_cpu_lapack_qr,
    .svd_lapack = emi_cpu_lapack_svd,
    .eigh_lapack = emi_cpu_lapack_eigh,
    .lu_nx07 = emi_cpu_nx07_lu,
    .qr_nx07 = emi_cpu_nx07_qr,
    .determinant_nx07 = emi_cpu_nx07_determinant,
    .eigh_nx07 = emi_cpu_nx07_eigh,
    .svd_nx07 = emi_cpu_nx07_svd,
};
