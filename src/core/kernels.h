/* The kernel families of the device interface (src/core/engine.h): one
 * table of function pointers per family, filled by each device's engine,
 * all declared here. The op layer (src/ops) validates, infers the output,
 * builds views, allocates the output on the inputs' device and calls a
 * kernel through these tables; it never knows which device runs it.
 * Kernels may be asynchronous: they enqueue and return.
 *
 * Conventions: `dst` is a fresh contiguous tensor unless a kernel says
 * otherwise; inputs are views of any strides (zero strides for broadcast
 * axes, negative for reversed ones) on the same device. A NULL family or
 * entry is a kernel the device does not have: the op layer asks the
 * engine's supports() (EMI_KERNELS below) before it calls one, and fails
 * with EMILY_ERR_UNSUPPORTED naming op and device.
 *
 * Valid C11 and C++: the CUDA engine's .cu files include it. */
#ifndef EMILY_CORE_KERNELS_H
#define EMILY_CORE_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/ops.h"
#include "core/tensor_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- copy and convert ---- */
struct emily_copy_kernels {
    /* dst (any strides, same shape and dtype as src) <- src */
    emily_status (*copy)(emily_tensor *dst, const emily_tensor *src);
    /* dst <- src converted with Nx's as_type rules (types may differ) */
    emily_status (*convert)(emily_tensor *dst, const emily_tensor *src);
    /* the same where one side is a narrow type and the other its hub
     * (core/narrow_rules.h): narrow -> f64, narrow integer -> s64,
     * f64 -> narrow, s64 -> narrow integer */
    emily_status (*convert_narrow)(emily_tensor *dst, const emily_tensor *src);
};

/* ---- creation ---- */
struct emily_creation_kernels {
    /* every element of dst <- value converted to dst's dtype */
    emily_status (*fill)(emily_tensor *dst, const emily_scalar *value);
    emily_status (*iota)(emily_tensor *dst, int axis);
    emily_status (*eye)(emily_tensor *dst);
};

/* ---- element-wise ---- */
struct emily_elementwise_kernels {
    /* src has the op's compute type (see src/ops/unary.c); dst the
     * output type */
    emily_status (*unary)(emily_unary_op op, emily_tensor *dst, const emily_tensor *src);
    /* a and b have the same (compute) dtype and dst's shape (broadcast
     * views); dst has a's dtype, or u8 for comparisons/logical ops (the op
     * layer converts to the output type afterwards) */
    emily_status (*binary)(emily_binary_op op, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b);
    /* pred is u8-compatible integer/float (nonzero = true) in dst's shape;
     * on_true/on_false have dst's dtype and shape (broadcast views) */
    emily_status (*select)(emily_tensor *dst, const emily_tensor *pred, const emily_tensor *on_true,
                           const emily_tensor *on_false);
};

/* ---- reductions ---- */
struct emily_reduce_kernels {
    /* dst has src's rank with reduced axes of size 1 (reduced[i] true);
     * src has dst's dtype except for ALL/ANY (dst u8) */
    emily_status (*reduce)(emily_reduce_op op, emily_tensor *dst, const emily_tensor *src, const bool *reduced);
    /* axis < 0: flattened. dst holds indices in its integer dtype, with
     * src's rank and axis of size 1 (or rank 0 when flattened) */
    emily_status (*argreduce)(emily_arg_op op, emily_tensor *dst, const emily_tensor *src, int axis,
                              bool tie_break_high);
    /* a, b same dtype and shape; dst u8 scalar */
    emily_status (*all_close)(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, double rtol, double atol,
                              bool equal_nan);
};

/* ---- dot ----
 *
 * The op layer (src/ops/dot.c) validates, infers the output and turns
 * any Nx dot into a batched matrix product over rank-3 views:
 *
 *     dst[b] = a[b] x bm[b]     a: [B, M, K]   bm: [B, K, N]   dst: [B, M, N]
 *
 * Each matrix of `a` and `bm` has a layout BLAS can read directly (see
 * emily_gemm_layout_of): one of its two strides is 1 and the other is a
 * valid leading dimension; the batch stride is anything (0 when the
 * operand was broadcast). The op layer copies an operand only when no
 * such view exists. `dst` is a fresh contiguous tensor.
 *
 * Types: `a` and `bm` may have any dtypes (also different ones); the
 * kernel reads each value into the output's domain as Nx.BinaryBackend
 * does: integers exactly (integer dots wrap in dst's width), floats and
 * complex numbers at the compute precision that `precision` selects
 * (see emily/ops_dot.h), then rounds once to dst's dtype (bf16 by Nx's
 * round-to-f32-then-truncate rule). The op layer guarantees dst's kind
 * can hold the inputs' (no float input to an integer dst, no complex
 * input to a real dst). K may be 0: dst is then all zeros. */
struct emily_dot_kernels {
    emily_status (*gemm)(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm,
                         emily_dot_precision precision);
    /* Optional (NULL: the op layer widens both operands to f32 and calls
     * gemm, src/ops/dot_fp8.c): dst = alpha * (a x bm) for 8-bit float
     * operands (f8_e4m3fn or f8 = E5M2, any mix but two E5M2), the
     * products exact and summed in f32 on the tensor cores, rounded once
     * to dst's dtype (f32, bf16 or f16: nearest even). The views are as
     * for gemm. EMILY_ERR_UNSUPPORTED with no message where the device
     * cannot run this product (a shape or type its library refuses):
     * the op layer then computes it widened. */
    emily_status (*gemm_fp8)(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm, float alpha);
};

/* How BLAS reads one rows x cols matrix with strides (srow, scol):
 * column_major false: row-major, element (r, c) at r * ld + c;
 * column_major true: column-major, element (r, c) at r + c * ld. */
typedef struct emily_gemm_layout {
    bool column_major;
    int64_t ld;
} emily_gemm_layout;

/* True (and *out filled) if the matrix can be handed to BLAS as it is.
 * Strides of size-1 dimensions do not matter; ld is always >= 1 and
 * >= the contiguous dimension's extent, as BLAS requires. */
static inline bool emily_gemm_layout_of(int64_t rows, int64_t cols, int64_t srow, int64_t scol,
                                        emily_gemm_layout *out) {
    int64_t mc = cols > 1 ? cols : 1, mr = rows > 1 ? rows : 1;
    if ((cols <= 1 || scol == 1) && (rows <= 1 || srow >= mc)) {
        out->column_major = false;
        out->ld = rows <= 1 ? mc : srow;
        return true;
    }
    if ((rows <= 1 || srow == 1) && (cols <= 1 || scol >= mr)) {
        out->column_major = true;
        out->ld = cols <= 1 ? mr : scol;
        return true;
    }
    return false;
}

/* ---- windows ----
 *
 * The op layer (src/ops/window.c) has checked ranks, window sizes,
 * strides, dilations and padding, and computed the output shape. All
 * parameter arrays have the input's rank. Inputs may have any strides;
 * outputs are fresh contiguous tensors with at least one element. */
struct emily_window_kernels {
    /* dst (src's dtype) <- the reduction of every window of src padded
     * by pad_lo before each axis (the op's identity as padding; negative
     * entries crop). Window position i of axis d starts at padded index
     * i * strides[d]; its elements are dilations[d] apart. See
     * emily/ops_window.h for the arithmetic. */
    emily_status (*reduce)(emily_window_op op, emily_tensor *dst, const emily_tensor *src, const int64_t *window,
                           const int64_t *strides, const int64_t *dilations, const int64_t *pad_lo);

    /* dst (src's shape, the output type) <- select and scatter: for each
     * window position (source's shape, no dilation) of src padded with
     * init (rank 0, any real dtype), the selected element (see
     * emily/ops_window.h) receives source's value; dst starts at init. */
    emily_status (*scatter)(bool is_max, emily_tensor *dst, const emily_tensor *src, const emily_tensor *source,
                            const emily_tensor *init, const int64_t *window, const int64_t *strides,
                            const int64_t *pad_lo);
};

/* ---- indexing ----
 *
 * The op layer (src/ops/index.c) validates shapes, axes and types and
 * hands the kernels contiguous tensors (row-major, offset anywhere):
 * `src`, `idx` and `updates` are made contiguous when they are views;
 * `dst` is a fresh contiguous tensor. Index tensors have any integer
 * dtype. Index VALUES are data the op layer never reads (they may live
 * on a device): each kernel checks every index it uses against its
 * axis and fails with EMILY_ERR_INDEX (the reference's message: value,
 * axis and shape of its gather, see src/cpu/index.c) before it reads or
 * writes anything out of bounds. A kernel
 * that fails may leave dst partly written; the op layer releases it. */
typedef enum emily_indexed_op { EMILY_INDEXED_ADD = 0, EMILY_INDEXED_PUT = 1 } emily_indexed_op;

/* The error an index kernel returns for the bad index at row-major
 * position `bad` of its index tensor (dtype dt, rows of ncols), whose
 * bytes the caller has read to host memory at `elem`: the reference's
 * exact message (src/ops/index.c). */
emily_status emi_index_error(const char *op, const void *elem, emily_dtype dt, int64_t bad, int ncols, const int *axes,
                             int axis, const emily_tensor *t);

struct emily_index_kernels {
    /* src viewed as [outer, n, inner], idx as [m] (flat, any shape),
     * dst as [outer, m, inner], all of src's dtype:
     *   dst[o, j, r] = src[o, idx[j], r]
     * n is src's size on the taken axis, `axis` its number (for
     * messages). */
    emily_status (*take)(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int axis, int64_t outer,
                         int64_t n, int64_t inner);

    /* src viewed as [outer, n, inner], idx and dst as [outer, m, inner]:
     *   dst[o, j, r] = src[o, idx[o, j, r], r] */
    emily_status (*take_along_axis)(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int axis,
                                    int64_t outer, int64_t n, int64_t inner);

    /* idx is [rows, naxes] (flat), axes increasing and distinct; dst is
     * [rows, rest...] where rest are src's axes not in `axes`, in order:
     *   dst[r, p...] = src[axes <- idx[r, :], others <- p...] */
    emily_status (*gather)(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int naxes,
                           const int *axes);

    /* dst (dst's dtype, target's shape) already holds target converted
     * to dst's dtype. idx is [n, naxes] (axes increasing), updates is
     * [n, u...] with one size per non-indexed axis of target, in order
     * (each at most that axis' size). For each row j, the block
     * target[axes <- idx[j, :], others <- u...] is updated:
     *   PUT: dst <- updates[j, u...] converted to dst's dtype, in row
     *        order (the last row of a repeated position wins);
     *   ADD: dst <- target + (0 + u_1 + u_2 + ...), the sum of every
     *        update of the position taken in row order; integers wrap in
     *        dst's width, floats and complex numbers are summed in double
     *        precision and rounded once to dst's dtype. target is read in
     *        its own dtype. */
    emily_status (*indexed)(emily_indexed_op op, emily_tensor *dst, const emily_tensor *target, const emily_tensor *idx,
                            const emily_tensor *updates, int naxes, const int *axes);
};

/* ---- sorting ----
 *
 * Every kernel works along one axis of `src` (any strides, real dtype:
 * integer or float, never complex). The order is Nx.BinaryBackend's
 * (see emily/ops_sort.h): a stable sort where -0.0 equals +0.0, NaN is
 * above +inf and all NaNs are equal; descending is the reverse order
 * with ties still in their original order. Output tensors are fresh and
 * contiguous. The op layer has checked axis, types and k. */
struct emily_sort_kernels {
    /* dst (src's dtype and shape) <- src sorted along axis; elements
     * keep their exact bits (NaN payloads, the sign of zero). */
    emily_status (*sort)(emily_tensor *dst, const emily_tensor *src, int axis, bool descending);

    /* dst (src's shape, any real dtype) <- the positions along axis of
     * src's elements in sorted order, converted to dst's dtype. */
    emily_status (*argsort)(emily_tensor *dst, const emily_tensor *src, int axis, bool descending);

    /* Along the last axis: values (src's dtype) and indices (any real
     * dtype) get the first k entries of the descending order, with
     * values' exact bits. values and indices have src's shape with the
     * last axis k (1 <= k <= its size). */
    emily_status (*top_k)(emily_tensor *values, emily_tensor *indices, const emily_tensor *src, int64_t k);
};

/* ---- scans ----
 *
 * The op layer (src/ops/cumulative.c) has checked the axis and types;
 * src is contiguous and viewed as [outer, n, inner] around the scanned
 * axis (n >= 1); dst is fresh, contiguous, with src's dtype and shape. */
struct emily_cumulative_kernels {
    emily_status (*scan)(emily_cumulative_op op, emily_tensor *dst, const emily_tensor *src, int64_t outer, int64_t n,
                         int64_t inner, bool reverse);
};

/* ---- transforms ----
 *
 * One kernel transforms every line of a tensor along one axis. The op
 * layer (src/ops/fft.c) validates, infers the output and hands the
 * kernel a source of a type it reads directly; fft2 is two calls. */
typedef enum emily_fft_mode {
    EMILY_FFT_FORWARD = 0,
    /* conj, forward, conj, divide by n (Nx's ifft) */
    EMILY_FFT_INVERSE,
    /* Nx's irfft: the line is a half spectrum, cut or zero-padded to
     * n / 2 + 1 points, extended to n points with the conjugates of
     * points n - n/2 - 1 .. 1 (in that order), inverse-transformed; dst
     * receives the real parts. */
    EMILY_FFT_INVERSE_REAL
} emily_fft_mode;

struct emily_fft_kernels {
    /* Each line of src along `axis` is cut or zero-padded to n points
     * (see EMILY_FFT_INVERSE_REAL), transformed, components with
     * |x| <= eps set to 0, and the first dst->shape[axis] points (<= n)
     * are written, rounded to dst's type, along dst's axis.
     * src: f32, f64, c64 or c128, any strides, src->shape[axis] may be 0.
     * dst: contiguous, src's shape except along axis; c64/c128 (f32/f64
     * for EMILY_FFT_INVERSE_REAL). n >= 1.
     * HIGHEST: transformed as Nx.BinaryBackend does (double precision,
     * its algorithm and operation order), its bits. FAST: the device's
     * own FFT may work in dst's precision instead (c64 in single; the CPU
     * computes as at HIGHEST). */
    emily_status (*fft)(emily_tensor *dst, const emily_tensor *src, int axis, int64_t n, emily_fft_mode mode,
                        double eps, emily_dot_precision precision);
};

/* The reference's tables for a length-n transform, built on the host by
 * the CPU engine (src/cpu/fft.c) with the host's cos/sin, so that another
 * device running the same operations in the same order gets the CPU's
 * bits (the CUDA engine's exact FFT uploads them). Lengths that are
 * powers of two or below 1024 run directly: the line in leaf order (slot
 * r * q + i holds point rev_s(r) + 2^s i, rev_s the s-bit reversal),
 * direct DFTs of the q-point leaves, then s radix-2 stages. Other lengths
 * run Bluestein's transform through the direct power-of-two plan of
 * length m. */
typedef struct emi_fft_tables {
    int64_t n;
    bool bluestein;
    /* the direct plan: of length n, or m (q = 1) for Bluestein */
    int64_t len, q;
    int s;
    const double *tw_re, *tw_im;     /* len - q stage twiddles: stage t (1..s) at q (2^(t-1) - 1) */
    const double *leaf_re, *leaf_im; /* q x q leaf twiddles at [i q + k]; NULL when q == 1 */
    /* Bluestein: the chirp w (n points) and the transformed filter b (m) */
    int64_t m;
    const double *w_re, *w_im, *b_re, *b_im;
    void *plan; /* held until emi_fft_tables_put */
} emi_fft_tables;

emily_status emi_fft_tables_get(int64_t n, emi_fft_tables *out);
void emi_fft_tables_put(emi_fft_tables *t);

/* ---- linear algebra ----
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
 * returns them as they are), so a batch of empty matrices costs nothing. */
struct emily_linalg_kernels {
    /* a: [..., n, n] wide, values already of type `work`. p (0/1 entries),
     * l, u: [..., n, n] wide. Nx.LinAlg.LU's algorithm. */
    emily_status (*lu)(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a, emily_dtype work);
    /* a: [..., n, n] wide, values of type `work`; l: [..., n, n] wide.
     * Nx.LinAlg.Cholesky's algorithm with its eps (1e-10). */
    emily_status (*cholesky)(emily_tensor *l, const emily_tensor *a, emily_dtype work);
    /* a: [B..., n, n], b: [B..., n] when b_vector, else [B..., n, m]
     * (left_side) or [B..., m, n]; both wide; x: b's shape, wide.
     * Computed in double as Nx.BinaryBackend.Matrix.ts does; a zero on
     * the diagonal fails with EMILY_ERR_ARGUMENT. */
    emily_status (*triangular_solve)(emily_tensor *x, const emily_tensor *a, const emily_tensor *b, bool b_vector,
                                     bool left_side, bool lower, emily_transform_a transform);
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
    emily_status (*solve)(emily_tensor *x, const emily_tensor *a, const emily_tensor *b, bool b_vector);
    /* a: [..., m, n] wide (any type's values); q: [..., m, m] if complete
     * else [..., m, k]; r: [..., m, n] if complete else [..., k, n] (a wide
     * input, m < n, gives q [..., m, m] and r [..., m, n] either way).
     * Nx.LinAlg.QR's Householder algorithm in `work` (complex inputs: its
     * complex reflector); entries with |x| <= f32(eps) are written as 0
     * (Nx's :eps). */
    emily_status (*qr)(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps,
                       emily_dtype work);
    /* a: real [..., m, n] wide (values of a's type; `integer_input` when
     * that is an integer type); u: [..., m, m|k], s: [..., k] (f64,
     * descending), vt: [..., n|k, n]. Nx.LinAlg.SVD in `work` with
     * :max_iter: without full matrices its Gram-matrix path, with them
     * QDWH. */
    emily_status (*svd)(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a, bool full_matrices,
                        int64_t max_iter, emily_dtype work, bool integer_input);
    /* a: [..., n, n] Hermitian, wide; w: [..., n] wide (complex for
     * complex input, as Nx types it) in Nx's order: by decreasing
     * magnitude, ties in index order; v: [..., n, n] wide, the eigenvectors
     * as columns in w's order. Nx.LinAlg.BlockEigh (Jacobi, the whole
     * matrix read) in `work` with Nx's :eps and :max_iter. */
    emily_status (*eigh)(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter,
                         emily_dtype work);
    /* EMILY_LINALG_LAPACK's kernels: the same arguments and outputs as
     * qr, svd and eigh above (eigh's eps and max_iter, svd's max_iter,
     * `work` and `integer_input` unused), computed in the wide type on
     * finite input, factors in Nx's sign conventions (emily/ops_linalg.h).
     * NULL: the device has no such library and the reference runs. */
    emily_status (*qr_lapack)(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps,
                              emily_dtype work);
    emily_status (*svd_lapack)(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                               bool full_matrices, int64_t max_iter, emily_dtype work, bool integer_input);
    emily_status (*eigh_lapack)(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter,
                                emily_dtype work);
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
    emily_status (*lu_nx07)(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a, double eps);
    emily_status (*qr_nx07)(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps,
                            emily_dtype work);
    emily_status (*determinant_nx07)(emily_tensor *det, const emily_tensor *a, emily_dtype work);
    emily_status (*eigh_nx07)(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter);
    emily_status (*svd_nx07)(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                             bool full_matrices, int64_t max_iter, emily_dtype work, bool integer_input);
    /* EMILY_LINALG_LAPACK on a device whose solver library computes in
     * the input's own precision (CUDA: cuSOLVER and cuBLAS); NULL where
     * the device has none (the CPU: its default is the kernels above).
     * Where present the op layer uses them for the default method of
     * every op, and Nx's own algorithms (EMILY_LINALG_REFERENCE...) are
     * not run on the device.
     *
     * Inputs and outputs share one "native" type: f32, f64, c64 or c128
     * (the op layer computes f16/bf16 and integer inputs in f32 and rounds
     * the results to Nx's output type). Inputs are contiguous row-major
     * batches, outputs fresh and contiguous; the shapes are those of the
     * entries above. Results are LAPACK's (no intermediate rounding to a
     * work type, no Nx :eps quirks except qr's zeroing), put in the CPU
     * LAPACK path's conventions (emily/ops_linalg.h): lu's p as a 0/1
     * matrix with a = p . l . u; qr's R diagonal as Nx's Householder
     * signs (complex: real >= 0); svd's s descending, each row of vt with
     * its largest entry positive; eigh's values by decreasing magnitude
     * (eigh's w has the input's type: complex with zero imaginary parts
     * for complex input), each eigenvector's largest entry real > 0.
     * Errors as the CPU reports them: triangular_solve and solve fail
     * with EMILY_ERR_ARGUMENT ("can't solve for singular matrix") on an
     * exact zero on the (triangular or u's) diagonal; cholesky of a
     * matrix that is not positive definite gives NaN (from the failing
     * pivot's row on), no error.
     *
     * Not in EMI_KERNELS: they are the optional device path of the default
     * method rather than kernels every engine must have (the CPU has every
     * kernel of that list, and its default stays the entries above), so
     * the op layer reads the pointers: NULL is "use the entries above". */
    emily_status (*lu_native)(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a);
    emily_status (*cholesky_native)(emily_tensor *l, const emily_tensor *a);
    emily_status (*triangular_solve_native)(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                                            bool b_vector, bool left_side, bool lower, emily_transform_a transform);
    emily_status (*solve_native)(emily_tensor *x, const emily_tensor *a, const emily_tensor *b, bool b_vector);
    emily_status (*determinant_native)(emily_tensor *det, const emily_tensor *a);
    emily_status (*qr_native)(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps);
    emily_status (*svd_native)(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                               bool full_matrices);
    emily_status (*eigh_native)(emily_tensor *w, emily_tensor *v, const emily_tensor *a);
};

/* ---- convolution (optional) ----
 *
 * A device may compute Nx.conv with a kernel of its own (the CUDA engine
 * does, on cuDNN). Without one, or when it declines a case, the op layer
 * (src/ops/conv.c) computes the conv as dots (im2col with the device's
 * copy kernel, then its gemm). Not listed in EMI_KERNELS: that list is
 * the kernels an op cannot run without, and no op needs this one.
 *
 * The op layer has validated the options and applied the permutations:
 * the operands are views in standard order with any strides,
 *   input  [N, C, spatial...]      C = groups * I
 *   kernel [O, I, window...]       O divisible by groups
 *   dst    [N, O, out spatial...]  a view of a fresh output (no overlap)
 *   dst[n, o, y...] = sum over i, w... of
 *       input[n, g * I + i, y * strides - padding + w * dilations] * kernel[o, i, w...]
 * with g = o / (O / groups), zeros outside the input, no kernel flip
 * (cross-correlation). Batch groups, input dilation and padding that is
 * not the same non-negative amount on both sides never reach the kernel
 * as such: the op layer pads the input itself (emily_pad) and passes
 * padding 0, or keeps batch groups on its own path. `precision` is the
 * dot precision the conv runs at (emily/ops_dot.h).
 *
 * A case the kernel does not compute (types, precision, sizes, or none
 * of the device library's algorithms takes it) returns
 * EMILY_ERR_UNSUPPORTED with nothing written to dst and no error message
 * set: the op layer then takes its own path. Any other error is the
 * conv's error. */
typedef struct emily_conv_params {
    int spatial;              /* spatial axes: the operands' rank - 2 */
    int64_t groups;           /* feature groups (>= 1) */
    const int64_t *strides;   /* per spatial axis, >= 1 */
    const int64_t *padding;   /* zeros before and after, per spatial axis, >= 0 */
    const int64_t *dilations; /* kernel dilation per spatial axis, >= 1 */
} emily_conv_params;

struct emily_conv_kernels {
    emily_status (*conv)(emily_tensor *dst, const emily_tensor *input, const emily_tensor *kernel,
                         const emily_conv_params *p, emily_dot_precision precision);
};

/* How many convs a device's conv kernel has computed in this process
 * (src/ops/conv.c counts them), so tests and benchmarks can tell which
 * path ran. */
int64_t emi_conv_device_count(void);

/* ---- fused transformer kernels ----
 *
 * Each computes the expression emily/ops_fast.h writes out for its op,
 * with its order of the row sums (src/core/norm_rules.h), so that every
 * device gives the same bits. The op layer (src/ops/fast_norm.c) has
 * checked shapes and types and hands the kernels contiguous tensors: x
 * of rank >= 1 (f16, bf16, f32 or f64) seen as rows of n = its last axis
 * (n >= 1, at least one row); gamma and beta of shape {n} in the affine
 * type (f32, or f64 when dst is f64); beta NULL for no bias; dst fresh,
 * x's shape, in the output type. */
/* sdpa (emily_sdpa's expression): the op layer (src/ops/fast_sdpa.c)
 * has checked everything and hands contiguous q, k, v of one float type
 * T, a fresh dst {B, Hq, Sq, Dv} of T with at least one element, and: */
typedef struct emily_sdpa_params {
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    double scale;
    bool causal;
    /* NULL, or a view of shape {B, Hq, Sq, Skv} (zero strides where it
     * broadcasts) of type u8 (boolean: nonzero keeps) or W (additive) */
    const emily_tensor *mask;
    const emily_tensor *sinks; /* NULL, or {Hq} contiguous in W */
} emily_sdpa_params;

/* rope (emily_rope's expression): the op layer (src/ops/fast_rope.c)
 * hands a contiguous x {B, S, H, D} (f16, bf16, f32 or f64) with at least
 * one element, a fresh dst of x's type and shape, contiguous s64
 * positions ({B, S}, or {S} shared by the batch) and the contiguous f32
 * table inv_freq {dims / 2} (any scaling but linear already applied). */
typedef struct emily_rope_params {
    int64_t B, S, H, D, dims;
    bool traditional;       /* pairs (2i, 2i + 1); else (i, i + dims / 2) */
    bool batched_positions; /* positions {B, S}; else {S} */
    bool linear;            /* positions divided by linear_factor first */
    float linear_factor;    /* f32(factor) */
} emily_rope_params;

struct emily_fast_kernels {
    emily_status (*layer_norm)(emily_tensor *dst, const emily_tensor *x, const emily_tensor *gamma,
                               const emily_tensor *beta, double eps);
    emily_status (*rms_norm)(emily_tensor *dst, const emily_tensor *x, const emily_tensor *gamma, double eps);
    emily_status (*sdpa)(emily_tensor *dst, const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                         const emily_sdpa_params *p);
    /* softmax over the last axis: x contiguous (f16, bf16, f32 or f64),
     * dst fresh with x's type and shape. */
    emily_status (*softmax)(emily_tensor *dst, const emily_tensor *x);
    emily_status (*rope)(emily_tensor *dst, const emily_tensor *x, const emily_tensor *positions,
                         const emily_tensor *inv_freq, const emily_rope_params *p);
};

/* ---- quantization (emily/ops_quant.h) ----
 *
 * The op layer (src/ops/quant.c) has checked bits (2, 4, 8), group_size
 * (32, 64, 128), types and shapes, and hands the kernels contiguous
 * tensors whose float operands all have one compute type W, f32 or f64
 * (it converts before and after), with core/quant_rules.h's steps for
 * every scalar. Rows are matrices [rows, cols], cols a multiple of
 * group_size; q is u8 [rows, cols * bits / 8]; scales and biases are
 * [rows, cols / group_size]; every dst is fresh. */
struct emily_quant_kernels {
    /* scales, biases (W) <- each group's emi_quant_scale / emi_quant_bias
     * of w [rows, cols] (W), not yet rounded to the stored type */
    emily_status (*ranges)(emily_tensor *scales, emily_tensor *biases, const emily_tensor *w, int bits,
                           int64_t group_size);
    /* q <- the packed codes of w for the stored scales and biases (W) */
    emily_status (*quantize)(emily_tensor *q, const emily_tensor *w, const emily_tensor *scales,
                             const emily_tensor *biases, int bits, int64_t group_size);
    /* dst [rows, cols] (W) <- emi_quant_decode of every code */
    emily_status (*dequantize)(emily_tensor *dst, const emily_tensor *q, const emily_tensor *scales,
                               const emily_tensor *biases, int bits, int64_t group_size);
    /* dst [M, N] (W, the accumulation type) <- x [M, K] (W) times the
     * decoded weights: transpose, q's rows are N (W {N, K}); otherwise
     * its rows are K (W {K, N}). Sums in W, any order. */
    emily_status (*matmul)(emily_tensor *dst, const emily_tensor *x, const emily_tensor *q, const emily_tensor *scales,
                           const emily_tensor *biases, int bits, int64_t group_size, bool transpose);
};

/* Every kernel of every family, for the engine's supports() query:
 * X(ID, family, entry) is the kernel EMI_KERNEL_<ID>, the entry `entry`
 * of the engine's table `family`. */
/* clang-format off */
#define EMI_KERNELS(X)                                                              \
    X(COPY, copy, copy) X(CONVERT, copy, convert)                                   \
    X(CONVERT_NARROW, copy, convert_narrow)                                         \
    X(FILL, creation, fill) X(IOTA, creation, iota) X(EYE, creation, eye)           \
    X(UNARY, elementwise, unary) X(BINARY, elementwise, binary)                     \
    X(SELECT, elementwise, select)                                                  \
    X(REDUCE, reduce, reduce) X(ARGREDUCE, reduce, argreduce)                       \
    X(ALL_CLOSE, reduce, all_close)                                                 \
    X(GEMM, dot, gemm) X(GEMM_FP8, dot, gemm_fp8)                                   \
    X(WINDOW_REDUCE, window, reduce) X(WINDOW_SCATTER, window, scatter)             \
    X(TAKE, index, take) X(TAKE_ALONG_AXIS, index, take_along_axis)                 \
    X(GATHER, index, gather) X(INDEXED, index, indexed)                             \
    X(SORT, sort, sort) X(ARGSORT, sort, argsort) X(TOP_K, sort, top_k)             \
    X(SCAN, cumulative, scan)                                                       \
    X(FFT, fft, fft)                                                                \
    X(LU, linalg, lu) X(CHOLESKY, linalg, cholesky)                                 \
    X(TRIANGULAR_SOLVE, linalg, triangular_solve) X(DETERMINANT, linalg, determinant) \
    X(SOLVE, linalg, solve) X(QR, linalg, qr) X(SVD, linalg, svd) X(EIGH, linalg, eigh) \
    X(QR_LAPACK, linalg, qr_lapack) X(SVD_LAPACK, linalg, svd_lapack)               \
    X(EIGH_LAPACK, linalg, eigh_lapack) X(LU_NX07, linalg, lu_nx07)                 \
    X(QR_NX07, linalg, qr_nx07) X(DETERMINANT_NX07, linalg, determinant_nx07)       \
    X(EIGH_NX07, linalg, eigh_nx07) X(SVD_NX07, linalg, svd_nx07)                   \
    X(LAYER_NORM, fast, layer_norm) X(RMS_NORM, fast, rms_norm) X(SDPA, fast, sdpa)   \
    X(SOFTMAX, fast, softmax) X(ROPE, fast, rope)                                   \
    X(QUANT_RANGES, quant, ranges) X(QUANTIZE, quant, quantize)                     \
    X(DEQUANTIZE, quant, dequantize) X(QUANT_MATMUL, quant, matmul)
/* clang-format on */

#define EMI_KERNEL_ID(ID, family, entry) EMI_KERNEL_##ID,
typedef enum emi_kernel { EMI_KERNELS(EMI_KERNEL_ID) EMI_KERNEL_COUNT } emi_kernel;
#undef EMI_KERNEL_ID

#ifdef __cplusplus
}
#endif
#endif
