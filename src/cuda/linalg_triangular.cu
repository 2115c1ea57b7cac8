// cholesky and triangular_solve on CUDA (native kernels of core/kernels.h),
// in the input's own precision, without transposing anything.
//
// cholesky: the row-major matrix read column-major is B = A^T, which for
// a Hermitian A is conj(A). potrf of B's upper triangle (A's lower one,
// the only part Nx reads) gives B = U^H U, so A = U^T conj(U): l = U^T,
// which is U's column-major memory read row-major. The factor is computed
// in place in l; the other triangle is then zeroed. A matrix that is not
// positive definite (potrf's info = k > 0: the leading minor of order k
// is not) keeps rows 0 .. k-2, the factor of the leading block, and gets
// NaN in every row from k - 1 on. Nx has no error there either: its
// algorithm takes the square root of a negative number and NaN spreads
// from that pivot's column on (entries left of it stay finite in Nx; the
// blocked potrf stops without finishing them, so those rows are NaN
// whole here). Nothing waits for the result.
//
// triangular_solve: with row-major x and b read column-major as X' = x^T
// and B' = b^T, op(A) x = b becomes X' op(A)^T = B' (a right-side solve)
// and x op(A) = b becomes op(A)^T X' = B' (left side), where A^T is the
// column-major reading of a (upper triangular when a is lower): trsm with
// OP_N for transform :none, OP_T for :transpose. :conjugate (conj(A)
// without transposing, which cuBLAS has no operation for) solves the
// conjugated system: conj(X') A^T = conj(B'). An exact zero on the
// diagonal fails as the CPU does, with its message (the first zero in
// (matrix, row) order), read back once the solve is queued. This is the
// default method (linalg: :lapack); :reference runs Nx's own substitution
// (linalg_triangular_exact.cu).
#include "cuda/linalg.cuh"

using namespace emily_cuda;
using namespace emily_cuda::la;

namespace {

// Above the diagonal of l: 0; rows from a failed pivot on: NaN.
template <typename T> __global__ void cholesky_finish(T *l, const int *info, int64_t batch, int64_t n) {
    int64_t total = batch * n * n;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / (n * n), r = (i / n) % n, c = i % n;
        int bad = info[b];
        if (bad > 0 && r >= bad - 1) l[i] = mk<T>(NAN, is_cx<T>() ? NAN : 0);
        else if (c > r) l[i] = mk<T>(0);
    }
}

template <typename T> emily_status cholesky_typed(const emily_cuda_ctx &ctx, emily_tensor *l, const emily_tensor *a) {
    int64_t n = a->shape[a->rank - 1], batch = batch_of(a, 2);
    T *ld = data_of<T>(l);
    emily_status s = check_int(ctx.op, n, "matrix size");
    if (s) return s;
    Pool pool(ctx);
    Handles h;
    int *info;
    if ((s = pool.get(batch, &info)) || (s = h.get_solver(ctx))) return s;
    cudaError_t err = cudaMemcpyAsync(ld, data_of<T>(a), (size_t)(batch * n * n) * sizeof(T), cudaMemcpyDeviceToDevice,
                                      ctx.stream);
    if (err) return emi_cuda_error(ctx.op, err);
    if (batch > 1 && n <= 128) {
        T **ptrs;
        if ((s = pointers(ctx, pool, ld, n * n, batch, &ptrs))) return s;
        s = in_chunks(batch, [&](int64_t b0, int count) -> emily_status {
            return solver_status(
                ctx.op, "potrfBatched",
                Lib<T>::potrf_batched(h.solver, CUBLAS_FILL_MODE_UPPER, (int)n, ptrs + b0, (int)n, info + b0, count));
        });
    } else {
        s = solver_each(
            ctx, pool, "potrf", batch,
            [&](size_t *dev_bytes, size_t *host_bytes) {
                return cusolverDnXpotrf_bufferSize(h.solver, h.params, CUBLAS_FILL_MODE_UPPER, n, Lib<T>::type, ld, n,
                                                   Lib<T>::type, dev_bytes, host_bytes);
            },
            [&](int64_t b, char *work, size_t dev_bytes, void *host_work, size_t host_bytes) {
                return cusolverDnXpotrf(h.solver, h.params, CUBLAS_FILL_MODE_UPPER, n, Lib<T>::type, ld + b * n * n, n,
                                        Lib<T>::type, work, dev_bytes, host_work, host_bytes, info + b);
            });
    }
    if (s) return s;
    cholesky_finish<T><<<grid_for(ctx.device, batch * n * n), BLOCK, 0, ctx.stream>>>(ld, info, batch, n);
    return emi_cuda_launched(&ctx);
}

template <typename T> __global__ void conj_copy(T *dst, const T *src, int64_t count) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = conj(src[i]);
}

template <typename T>
emily_status triangular_typed(const emily_cuda_ctx &ctx, emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                              bool b_vector, bool left_side, bool lower, emily_transform_a transform) {
    int64_t n = a->shape[a->rank - 1], batch = batch_of(a, 2);
    // the other dimension of b's matrix (1 for a vector)
    int64_t m = b_vector ? 1 : left_side ? b->shape[b->rank - 1] : b->shape[b->rank - 2];
    int64_t per = n * m;
    const T *ad = data_of<T>(a);
    T *xd = data_of<T>(x);
    bool conjugate = transform == EMILY_TRANSFORM_CONJUGATE && is_cx<T>();
    emily_status s;
    if ((s = check_int(ctx.op, n, "matrix size")) || (s = check_int(ctx.op, m, "right-hand side count"))) return s;
    Pool pool(ctx);
    Handles h;
    unsigned long long *bad;
    if ((s = h.get_blas(ctx)) || (s = queue_zero_diagonal(ctx, pool, ad, batch, n, &bad))) return s;
    cudaError_t err;
    // trsm solves in place: x starts as b (conjugated for :conjugate)
    if (conjugate) {
        conj_copy<T><<<grid_for(ctx.device, batch * per), BLOCK, 0, ctx.stream>>>(xd, data_of<T>(b), batch * per);
        if ((s = emi_cuda_launched(&ctx))) return s;
    } else if ((err = cudaMemcpyAsync(xd, data_of<T>(b), (size_t)(batch * per) * sizeof(T), cudaMemcpyDeviceToDevice,
                                      ctx.stream))) {
        return emi_cuda_error(ctx.op, err);
    }
    cublasSideMode_t side = left_side ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT;
    cublasFillMode_t uplo = lower ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
    cublasOperation_t op = transform == EMILY_TRANSFORM_TRANSPOSE ? CUBLAS_OP_T : CUBLAS_OP_N;
    // X' is rows x cols column-major
    int rows = (int)(left_side ? m : n), cols = (int)(left_side ? n : m);
    if (batch == 1) {
        s = blas_status(ctx.op, "trsm", Lib<T>::trsm(h.blas, side, uplo, op, rows, cols, ad, (int)n, xd, rows));
    } else {
        T **ap, **xp;
        if ((s = pointers(ctx, pool, (T *)ad, n * n, batch, &ap)) || (s = pointers(ctx, pool, xd, per, batch, &xp)))
            return s;
        s = in_chunks(batch, [&](int64_t b0, int count) -> emily_status {
            return blas_status(
                ctx.op, "trsmBatched",
                Lib<T>::trsm_batched(h.blas, side, uplo, op, rows, cols, ap + b0, (int)n, xp + b0, rows, count));
        });
    }
    if (s) return s;
    if (conjugate) {
        conj_copy<T><<<grid_for(ctx.device, batch * per), BLOCK, 0, ctx.stream>>>(xd, xd, batch * per);
        if ((s = emi_cuda_launched(&ctx))) return s;
    }
    return zero_pivot_error(ctx, bad, n);
}

} // namespace

emily_status emi_cuda_cholesky_native(emily_tensor *l, const emily_tensor *a) {
    return solver_entry("cholesky", a, {l, a},
                        [&]<typename T>(const emily_cuda_ctx &ctx) { return cholesky_typed<T>(ctx, l, a); });
}

emily_status emi_cuda_triangular_solve_native(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                                              bool b_vector, bool left_side, bool lower, emily_transform_a transform) {
    return solver_entry("triangular_solve", a, {x, a, b}, [&]<typename T>(const emily_cuda_ctx &ctx) {
        return triangular_typed<T>(ctx, x, a, b, b_vector, left_side, lower, transform);
    });
}
