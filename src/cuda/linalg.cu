// The CUDA engine's linear algebra table: the native kernels (the default
// method, on cuSOLVER and cuBLAS in the input's own precision; see
// linalg.cuh) and, of Nx's own algorithms, triangular_solve's
// (linalg: :reference, the CPU kernel's bits: linalg_triangular_exact.cu).
// The other reference algorithms run on the CPU only: the op layer says
// so when a tensor on the GPU asks for them.
#include "cuda/linalg.cuh"

extern "C" const struct emily_linalg_kernels emi_cuda_linalg_kernels = {
    .triangular_solve = emi_cuda_triangular_solve_exact,
    .lu_native = emi_cuda_lu_native,
    .cholesky_native = emi_cuda_cholesky_native,
    .triangular_solve_native = emi_cuda_triangular_solve_native,
    .solve_native = emi_cuda_solve_native,
    .determinant_native = emi_cuda_determinant_native,
    .qr_native = emi_cuda_qr_native,
    .svd_native = emi_cuda_svd_native,
    .eigh_native = emi_cuda_eigh_native,
};
