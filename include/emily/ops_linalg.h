/* Typed operations: linear algebra (see emily/ops.h for conventions).
 *
 * Every op works on the last two axes and is batched over the leading
 * ones. Output types follow Nx.LinAlg: integer inputs give f32, f16/bf16
 * stay f16/bf16, complex stays complex (Nx.Type.to_floating).
 *
 * Two kinds of results (docs/semantics.md, "Linear algebra"):
 * - lu, cholesky, triangular_solve, solve and determinant have unique
 *   answers; Emily computes them with Nx.BinaryBackend's own operation
 *   order and per-operation rounding, so they match the reference to the
 *   last bit or two, quirks included (cholesky divides by l_jj + 1e-10,
 *   determinants of 2x2/3x3 integer matrices wrap in the input type).
 * - qr, svd and eigh have factors that are unique only up to signs (or
 *   rotations of repeated eigenspaces), and Nx's own algorithms for them
 *   are slow and, for eigh and svd, stop at a loose tolerance (Jacobi
 *   with eps 1.0e-4). They take an emily_linalg_method: by default
 *   LAPACK, in double precision, with the factors put in Nx's sign
 *   conventions; or EMILY_LINALG_REFERENCE, Nx's own algorithms run the
 *   way Nx.BinaryBackend runs them (complex inputs with the arithmetic of
 *   Elixir's Complex library), whose factors are the reference's bit for
 *   bit.
 *
 * On a CUDA device the default method of every op runs cuSOLVER/cuBLAS in
 * the input's own precision (f16, bf16 and integers in f32), in the same
 * conventions, and Nx's own algorithms fail there with
 * EMILY_ERR_UNSUPPORTED (they run on the CPU only; move the tensor with
 * emily_to_device), except triangular_solve's, which runs on the GPU too.
 * docs/semantics.md, "On CUDA", has the details. */
#ifndef EMILY_OPS_LINALG_H
#define EMILY_OPS_LINALG_H

#include <stdbool.h>
#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_transform_a {
    EMILY_TRANSFORM_NONE = 0,
    EMILY_TRANSFORM_TRANSPOSE,
    EMILY_TRANSFORM_CONJUGATE
} emily_transform_a;

/* How qr, svd and eigh (and, for Nx 0.7, lu and determinant) are computed (docs/semantics.md, "Linear
 * algebra"); on CUDA also lu, solve, determinant and triangular_solve. */
typedef enum emily_linalg_method {
    /* LAPACK (geqrf/orgqr, gesdd, syevd/heevd) in f64/c128 whatever the
     * input type, then rounded: accurate to the output type's last bits
     * and numpy's speed. Nx's conventions where the factors have a
     * choice: R's diagonal real and >= 0; eigenvalues by decreasing
     * magnitude, each eigenvector's largest entry (the first of equals)
     * real and positive; each row of vt's largest entry positive (u's
     * column with it). Nx's iteration options (eigh's :eps and :max_iter,
     * svd's :max_iter) do not apply (Nx documents that they may not);
     * qr's :eps zeroing does. Matrices with NaN or infinity go through
     * the reference algorithm, whose NaN pattern is Nx's. */
    EMILY_LINALG_LAPACK = 0,
    /* Nx's own algorithms, bit for bit with Nx.BinaryBackend. */
    EMILY_LINALG_REFERENCE,
    /* Nx 0.7's Nx.BinaryBackend, bit for bit, for Emily.Backend under Nx
     * 0.7 (its doctests print these): lu by Nx 0.7's Matrix.lu (rows
     * pivoted up front on the unreduced matrix, then Doolittle, entries
     * below :eps zeroed), determinant on that lu, eigh by Matrix.eigh
     * (Hessenberg reduction, then unshifted QR iterations until Q moves
     * less than :eps; eigenvalues in the order the iteration leaves them,
     * not sorted; a matrix not Hermitian within :eps fails with
     * EMILY_ERR_ARGUMENT), qr by the reference's Householder reflectors,
     * each multiplied in as an explicit matrix (other last bits), svd by
     * Nx 0.7's QDWH (with and without full matrices) on that eigh and qr,
     * solve by that qr and a triangular solve. lu, determinant and solve
     * take this method only (the other two compute Nx 0.8+'s
     * partial-pivoting LU). */
    EMILY_LINALG_REFERENCE_NX07
} emily_linalg_method;

/* Nx.LinAlg.triangular_solve: solves op(a) x = b (left_side) or
 * x op(a) = b, reading only the `lower` (or upper) triangle of a.
 * a: [..., n, n]; b: [..., n] (a vector per matrix), [..., n, m] (left)
 * or [..., m, n] (right), with a's batch dims. The output has b's shape
 * and the float type of merge(a, b). A zero on the diagonal fails with
 * EMILY_ERR_ARGUMENT ("can't solve for singular matrix"), as Nx raises. */
EMILY_API emily_status emily_triangular_solve(const emily_tensor *a, const emily_tensor *b, bool left_side, bool lower,
                                              emily_transform_a transform, emily_tensor **out);
/* As emily_triangular_solve, with a method. On the CPU every method is
 * Nx's substitution in double, the reference's bits. On CUDA,
 * EMILY_LINALG_LAPACK (emily_triangular_solve's) is cuBLAS's trsm in the
 * input's own precision (f16, bf16 and integers in f32), and
 * EMILY_LINALG_REFERENCE (or _NX07: Nx 0.7 solved the same way) is Nx's
 * substitution in double on the GPU, with the CPU's bits. */
EMILY_API emily_status emily_triangular_solve_opts(const emily_tensor *a, const emily_tensor *b, bool left_side,
                                                   bool lower, emily_transform_a transform, emily_linalg_method method,
                                                   emily_tensor **out);

/* Nx.LinAlg.lu: a = p . l . u with partial pivoting (square matrices).
 * p has a's type (0/1 entries); l (unit lower) and u (upper) the float
 * type. Singular matrices give zeros on u's diagonal, no error. */
EMILY_API emily_status emily_lu(const emily_tensor *a, emily_tensor **p, emily_tensor **l, emily_tensor **u);
/* As emily_lu, with a method: EMILY_LINALG_REFERENCE_NX07 is Nx 0.7's lu
 * (its :eps, 1.0e-10 by default, zeroes small entries); the other methods
 * are emily_lu and ignore eps. */
EMILY_API emily_status emily_lu_opts(const emily_tensor *a, double eps, emily_linalg_method method, emily_tensor **p,
                                     emily_tensor **l, emily_tensor **u);

/* Nx.LinAlg.cholesky: the lower factor l of a = l . l^H (only the lower
 * triangle of a is read). Like Nx, no positive-definiteness check:
 * a non-positive pivot gives NaN. */
EMILY_API emily_status emily_cholesky(const emily_tensor *a, emily_tensor **out);

/* Nx.LinAlg.solve: a x = b through lu and two triangular solves, as Nx
 * does. b: [..., n] or [..., n, m] with a's batch dims. A singular
 * matrix fails like triangular_solve. */
EMILY_API emily_status emily_solve(const emily_tensor *a, const emily_tensor *b, emily_tensor **out);
/* As emily_solve; EMILY_LINALG_REFERENCE_NX07 is Nx 0.7's solve, qr(a)
 * and triangular_solve(r, adjoint(q) . b) with Nx 0.7's qr. */
EMILY_API emily_status emily_solve_opts(const emily_tensor *a, const emily_tensor *b, emily_linalg_method method,
                                        emily_tensor **out);

/* Nx.LinAlg.determinant: [..., n, n] -> [...]. */
EMILY_API emily_status emily_determinant(const emily_tensor *a, emily_tensor **out);
/* As emily_determinant; EMILY_LINALG_REFERENCE_NX07 uses Nx 0.7's lu for
 * matrices of 4x4 and larger (as Nx 0.7 does). */
EMILY_API emily_status emily_determinant_opts(const emily_tensor *a, emily_linalg_method method, emily_tensor **out);

typedef enum emily_qr_mode { EMILY_QR_REDUCED = 0, EMILY_QR_COMPLETE } emily_qr_mode;

/* Nx.LinAlg.qr of [..., m, n] (k = min(m, n)): reduced gives q [..., m, k]
 * and r [..., k, n]; complete gives q [..., m, m] and r [..., m, n].
 * Entries with |x| <= eps become 0 (Nx's :eps). For real input R's
 * diagonal is non-negative with either method (the reference: Nx's
 * Householder algorithm with its rounding); for complex input LAPACK's
 * is real and non-negative, the reference's keeps the phase Nx's complex
 * reflector gives it. emily_qr uses EMILY_LINALG_LAPACK. */
EMILY_API emily_status emily_qr(const emily_tensor *a, emily_qr_mode mode, double eps, emily_tensor **q,
                                emily_tensor **r);
EMILY_API emily_status emily_qr_opts(const emily_tensor *a, emily_qr_mode mode, double eps, emily_linalg_method method,
                                     emily_tensor **q, emily_tensor **r);

/* Nx.LinAlg.svd of real [..., m, n] (Nx rejects complex input): u, s
 * (descending) and vt. full_matrices: u [..., m, m], vt [..., n, n];
 * otherwise u [..., m, k], vt [..., k, n]. The reference method runs
 * Nx's algorithms with its rounding: without full matrices eigh of the
 * Gram matrix A^T A, with them QDWH and eigh of the polar factor
 * (:max_iter bounds both iterations). emily_svd uses EMILY_LINALG_LAPACK
 * (and max_iter 100, Nx's default, were it the reference). */
EMILY_API emily_status emily_svd(const emily_tensor *a, bool full_matrices, emily_tensor **u, emily_tensor **s,
                                 emily_tensor **vt);
EMILY_API emily_status emily_svd_opts(const emily_tensor *a, bool full_matrices, int64_t max_iter,
                                      emily_linalg_method method, emily_tensor **u, emily_tensor **s,
                                      emily_tensor **vt);

/* Nx.LinAlg.eigh of Hermitian [..., n, n]: eigenvalues [..., n] ordered
 * by decreasing magnitude, as Nx orders them, and the eigenvectors as the
 * columns of [..., n, n]. Both have the float type of a (complex inputs
 * give complex outputs, as in Nx; LAPACK's eigenvalues have zero
 * imaginary parts). The reference method is Nx's Jacobi algorithm
 * (Nx.LinAlg.BlockEigh, reading the whole matrix) with the reference's
 * rounding, stopping rule (eps, max_iter sweeps) and zeroing of entries
 * with |x| <= eps (complex eigenvalues keep the imaginary parts Nx's
 * rotations leave). emily_eigh uses EMILY_LINALG_LAPACK (and Nx's
 * defaults eps 1.0e-4, max_iter 1000, were it the reference). */
EMILY_API emily_status emily_eigh(const emily_tensor *a, emily_tensor **eigenvalues, emily_tensor **eigenvectors);
EMILY_API emily_status emily_eigh_opts(const emily_tensor *a, double eps, int64_t max_iter, emily_linalg_method method,
                                       emily_tensor **eigenvalues, emily_tensor **eigenvectors);

#ifdef __cplusplus
}
#endif
#endif
