/* The linear algebra family's kernel table, filled by each device's
 * engine.
 *
 * The op layer (src/ops/linalg.c) validates, infers output types and
 * shapes, and converts inputs; kernels see contiguous row-major batches
 * of matrices (every leading axis is a batch axis) in a "wide" type:
 * f64 for real problems, c128 for complex ones. Kernels write wide
 * outputs (fresh contiguous tensors); the op layer rounds them to the
 * output type.
 *
 * Kernels that reproduce Nx.BinaryBackend's arithmetic take `work`, the
 * Nx type the reference computes in (f16, bf16, f32, f64, c64 or c128):
 * after every Nx-level operation they round the value to `work`, exactly
 * as the reference writes every intermediate tensor.
 *
 * A kernel is not called when all its outputs are empty (the op layer
 * returns them as they are), so a batch of empty matrices costs nothing.
 *
 * Keep this header valid C11 and C++ (a CUDA engine may include it). */
#ifndef EMILY_OPS_LINALG_KERNELS_H
#define EMILY_OPS_LINALG_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "core/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

struct emily_linalg_kernels {
    /* a: [..., n, n] wide, values already of type `work`. p (0/1 entries),
     * l, u: [..., n, n] wide. Nx.LinAlg.LU's algorithm. */
    emily_status (*lu)(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a,
                       emily_dtype work);
    /* a: [..., n, n] wide, values of type `work`; l: [..., n, n] wide.
     * Nx.LinAlg.Cholesky's algorithm with its eps (1e-10). */
    emily_status (*cholesky)(emily_tensor *l, const emily_tensor *a, emily_dtype work);
    /* a: [B..., n, n], b: [B..., n] when b_vector, else [B..., n, m]
     * (left_side) or [B..., m, n]; both wide; x: b's shape, wide.
     * Computed in double as Nx.BinaryBackend.Matrix.ts does; a zero on
     * the diagonal fails with EMILY_ERR_ARGUMENT. */
    emily_status (*triangular_solve)(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                                     bool b_vector, bool left_side, bool lower,
                                     emily_transform_a transform);
    /* a: [..., n, n] in its own (any) type, contiguous; det: [...] wide.
     * Nx.LinAlg.determinant's algorithm: explicit products for 2x2 and
     * 3x3 (integer inputs wrap in their type), LU otherwise, with
     * intermediate rounding to `work`. */
    emily_status (*determinant)(emily_tensor *det, const emily_tensor *a, emily_dtype work);
    /* Optional (NULL: the op layer composes lu, dot and triangular_solve).
     * a: [B..., n, n] f64, b: [B..., n] (b_vector) or [B..., n, m] f64,
     * both contiguous; x: b's shape, f64. Nx.LinAlg.solve's composition
     * with the exact (HIGHEST) f64 dot, with the same bits; an exact zero
     * on u's diagonal fails as triangular_solve does. */
    emily_status (*solve)(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                          bool b_vector);
    /* a: [..., m, n] wide (any type's values); q: [..., m, m] if complete
     * else [..., m, k]; r: [..., m, n] if complete else [..., k, n] (a wide
     * input, m < n, gives q [..., m, m] and r [..., m, n] either way).
     * Nx.LinAlg.QR's Householder algorithm in `work` (complex inputs: its
     * complex reflector); entries with |x| <= f32(eps) are written as 0
     * (Nx's :eps). */
    emily_status (*qr)(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete,
                       double eps, emily_dtype work);
    /* a: real [..., m, n] wide (values of a's type; `integer_input` when
     * that is an integer type); u: [..., m, m|k], s: [..., k] (f64,
     * descending), vt: [..., n|k, n]. Nx.LinAlg.SVD in `work` with
     * :max_iter: without full matrices its Gram-matrix path, with them
     * QDWH. */
    emily_status (*svd)(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                        bool full_matrices, int64_t max_iter, emily_dtype work, bool integer_input);
    /* a: [..., n, n] Hermitian, wide; w: [..., n] wide (complex for
     * complex input, as Nx types it) in Nx's order: by decreasing
     * magnitude, ties in index order; v: [..., n, n] wide, the eigenvectors
     * as columns in w's order. Nx.LinAlg.BlockEigh (Jacobi, the whole
     * matrix read) in `work` with Nx's :eps and :max_iter. */
    emily_status (*eigh)(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps,
                         int64_t max_iter, emily_dtype work);
    /* EMILY_LINALG_LAPACK's kernels: the same arguments and outputs as
     * qr, svd and eigh above (eigh's eps and max_iter, svd's max_iter,
     * `work` and `integer_input` unused), computed in the wide type on
     * finite input, factors in Nx's sign conventions (emily/ops_linalg.h).
     * NULL: the device has no such library and the reference runs. */
    emily_status (*qr_lapack)(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                              bool complete, double eps, emily_dtype work);
    emily_status (*svd_lapack)(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                               const emily_tensor *a, bool full_matrices, int64_t max_iter,
                               emily_dtype work, bool integer_input);
    emily_status (*eigh_lapack)(emily_tensor *w, emily_tensor *v, const emily_tensor *a,
                                double eps, int64_t max_iter, emily_dtype work);
    /* EMILY_LINALG_REFERENCE_NX07's kernels, Nx 0.7's algorithms
     * (emily/ops_linalg.h); NULL where the device has none. lu_nx07 and
     * eigh_nx07 read a wide a holding the input's own values (Nx 0.7's
     * Matrix module reads the tensor's binary, integers exactly) and
     * write outputs as lu and eigh do, eigh's in its own order (no
     * sorting), EMILY_ERR_ARGUMENT when a is not Hermitian within eps.
     * determinant_nx07: a [..., n, n] wide with the input's values, n >= 4
     * (smaller ones are Nx's explicit products, as for determinant),
     * through lu_nx07. qr_nx07: as qr, each reflection an explicit matrix
     * multiplied in (Nx 0.7's Nx.LinAlg.QR). svd_nx07: as svd, Nx 0.7's
     * Nx.LinAlg.SVD (QDWH with and without full matrices) on eigh_nx07
     * and qr_nx07. */
    emily_status (*lu_nx07)(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a,
                            double eps);
    emily_status (*qr_nx07)(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete,
                            double eps, emily_dtype work);
    emily_status (*determinant_nx07)(emily_tensor *det, const emily_tensor *a, emily_dtype work);
    emily_status (*eigh_nx07)(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps,
                              int64_t max_iter);
    emily_status (*svd_nx07)(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                             bool full_matrices, int64_t max_iter, emily_dtype work,
                             bool integer_input);
};

#ifdef __cplusplus
}
#endif
#endif
