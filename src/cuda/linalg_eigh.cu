// eigh on CUDA (native kernel of core/kernels.h), in the input's own
// precision: cuSOLVER's syevd/heevd (the 64-bit API, one call a matrix)
// or, for batches of matrices of at most 32 x 32, the batched Jacobi
// syevj/heevj (PyTorch's split), whose unconverged matrices are redone
// with syevd. The results are put in the CPU LAPACK path's conventions
// (src/cpu/linalg/lapack.c): eigenvalues by decreasing magnitude, equal
// magnitudes in the solver's (ascending) order; each eigenvector's
// largest-magnitude entry (the first of equals) real and positive.
//
// The row-major matrix read column-major is A^T, which for a Hermitian A
// is conj(A): the same eigenvalues, conjugate eigenvectors, conjugated
// back when they are written. Matrices with NaN or infinity are solved as
// zeros and their w and v written as NaN (the CPU runs Nx's algorithm on
// them instead).
#include "cuda/linalg.cuh"

using namespace emily_cuda;
using namespace emily_cuda::la;

namespace {

// Per (matrix, value i): its place in decreasing magnitude, ties in index
// order (a stable sort of LAPACK's ascending values, as the CPU's);
// ord[place] = i and w[place] = value i.
template <typename T, typename R>
__global__ void eig_order(const R *vals, T *w, int64_t *ord, int64_t batch, int64_t n) {
    int64_t total = batch * n;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = e / n, i = e % n;
        const R *vb = vals + b * n;
        R mi = fabs(vb[i]);
        int64_t place = 0;
        for (int64_t j = 0; j < n; j++) {
            R mj = fabs(vb[j]);
            place += mj > mi || (mj == mi && j < i);
        }
        ord[b * n + place] = i;
        w[b * n + place] = mk<T>(vb[i]);
    }
}

// Per eigenvector (a column of e): the unit factor that makes its largest
// entry, conjugated, real and positive, and that entry's row.
template <typename T> __global__ void eig_phases(const T *e, T *f, int64_t *arg, int64_t batch, int64_t n) {
    for (int64_t blk = blockIdx.x; blk < batch * n; blk += gridDim.x) {
        const T *x = e + blk * n; // column i of matrix b: blk = b * n + i
        int64_t at = block_largest(x, n, 1);
        if (threadIdx.x == 0) {
            f[blk] = unit_towards_real(conj(x[at]));
            arg[blk] = at;
        }
    }
}

// v[b][r][c] = conj(e_b(r, ord[c])) * f[ord[c]], the largest entry exactly
// real.
template <typename T> struct EigVectors {
    const int64_t *ord, *arg;
    const T *f;
    int64_t n;
    __device__ int64_t col(int64_t b, int64_t c) const { return ord[b * n + c]; }
    __device__ T operator()(int64_t b, int64_t r, int64_t c, T v) const {
        int64_t i = ord[b * n + c];
        T y = mul(conj(v), f[b * n + i]);
        return r == arg[b * n + i] ? mk<T>(re(y)) : y;
    }
};

template <typename T>
emily_status eigh_typed(const emily_cuda_ctx &ctx, emily_tensor *w, emily_tensor *v, const emily_tensor *a) {
    typedef real_t<T> R;
    int64_t n = a->shape[a->rank - 1], batch = batch_of(a, 2), nn = n * n;
    const T *ad = data_of<T>(a);
    T *wd = data_of<T>(w), *vd = data_of<T>(v);
    emily_status s = check_int(ctx.op, n, "matrix size");
    if (s) return s;
    Pool pool(ctx);
    Handles h;
    T *e, *f;
    R *vals;
    int *flag, *info;
    int64_t *ord, *arg;
    unsigned long long *first;
    if ((s = h.get_solver(ctx)) || (s = pool.get(batch * nn, &e)) || (s = pool.get(batch * n, &vals)) ||
        (s = pool.get(batch * n, &f)) || (s = pool.get(batch * n, &ord)) || (s = pool.get(batch * n, &arg)) ||
        (s = pool.get(batch, &flag)) || (s = pool.get(batch, &info)) || (s = pool.get(1, &first)))
        return s;
    cudaError_t err = cudaMemsetAsync(flag, 0, (size_t)batch * sizeof(int), ctx.stream);
    if (!err) err = cudaMemsetAsync(first, 0xff, sizeof *first, ctx.stream);
    if (!err) err = cudaMemcpyAsync(e, ad, (size_t)(batch * nn) * sizeof(T), cudaMemcpyDeviceToDevice, ctx.stream);
    if (err) return emi_cuda_error(ctx.op, err);
    flag_nonfinite<T><<<grid_for(ctx.device, batch * nn), BLOCK, 0, ctx.stream>>>(ad, batch, nn, flag);
    zero_where<T><<<grid_for(ctx.device, batch * nn), BLOCK, 0, ctx.stream>>>(e, batch, nn, flag);
    if ((s = emi_cuda_launched(&ctx))) return s;
    bool batched = batch > 1 && n <= 32;
    // syevd's workspace (also the stragglers' of the batched Jacobi)
    size_t dev_bytes = 0, host_bytes = 0;
    char *work;
    HostWork hw;
    if ((s = solver_status(ctx.op, "syevd",
                           cusolverDnXsyevd_bufferSize(h.solver, h.params, CUSOLVER_EIG_MODE_VECTOR,
                                                       CUBLAS_FILL_MODE_UPPER, n, Lib<T>::type, e, n, Lib<T>::real_type,
                                                       vals, Lib<T>::type, &dev_bytes, &host_bytes))) ||
        (s = pool.get((int64_t)dev_bytes, &work)) || (s = hw.get(ctx.op, host_bytes)))
        return s;
    auto syevd = [&](int64_t b) -> emily_status {
        return solver_status(ctx.op, "syevd",
                             cusolverDnXsyevd(h.solver, h.params, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n,
                                              Lib<T>::type, e + b * nn, n, Lib<T>::real_type, vals + b * n,
                                              Lib<T>::type, work, dev_bytes, hw.p, host_bytes, info + b));
    };
    if (batched) {
        Owned<syevjInfo_t, cusolverDnDestroySyevjInfo> sp;
        int lwork = 0;
        T *jwork;
        if ((s = check_int(ctx.op, batch, "batch size")) ||
            (s = solver_status(ctx.op, "syevjBatched", cusolverDnCreateSyevjInfo(&sp.p))) ||
            (s = solver_status(ctx.op, "syevjBatched", cusolverDnXsyevjSetSortEig(sp.p, 1))) ||
            (s = solver_status(ctx.op, "syevjBatched",
                               Lib<T>::syevj_batched_size(h.solver, (int)n, e, vals, &lwork, sp.p, (int)batch))) ||
            (s = pool.get(lwork, &jwork)) ||
            (s = solver_status(ctx.op, "syevjBatched",
                               Lib<T>::syevj_batched(h.solver, (int)n, e, vals, jwork, lwork, info, sp.p, (int)batch))))
            return s;
    } else {
        for (int64_t b = 0; b < batch; b++)
            if ((s = syevd(b))) return s;
    }
    unsigned long long b0;
    if ((s = first_straggler(ctx, info, flag, batch, first, &b0))) return s;
    if (b0 != ~0ull) {
        // Jacobi's stragglers get syevd; syevd failing is an error
        if (!batched)
            return emily_error(EMILY_ERR_INTERNAL, "cuda: eigh: cuSOLVER syevd did not converge (matrix %llu)", b0);
        int *hinfo;
        if ((s = straggler_infos(ctx, info, flag, batch, &hinfo))) return s;
        for (int64_t b = (int64_t)b0; !s && b < batch; b++) {
            if (hinfo[b] == 0 || hinfo[batch + b]) continue;
            int again = 0;
            err = cudaMemcpyAsync(e + b * nn, ad + b * nn, (size_t)nn * sizeof(T), cudaMemcpyDeviceToDevice,
                                  ctx.stream);
            if (err) s = emi_cuda_error(ctx.op, err);
            if (!s) s = syevd(b);
            if (!s) s = read_back(ctx, &again, info + b, sizeof again);
            if (!s && again)
                s = emily_error(EMILY_ERR_INTERNAL, "cuda: eigh: cuSOLVER syevd did not converge (matrix %lld)",
                                (long long)b);
        }
        free(hinfo);
        if (s) return s;
    }
    eig_order<T, R><<<grid_for(ctx.device, batch * n), BLOCK, 0, ctx.stream>>>(vals, wd, ord, batch, n);
    int64_t blocks = batch * n < 65536 * 16 ? batch * n : 65536 * 16;
    eig_phases<T><<<(unsigned)blocks, LARGEST_THREADS, 0, ctx.stream>>>(e, f, arg, batch, n);
    if ((s = emi_cuda_launched(&ctx))) return s;
    if ((s = launch_transpose(ctx, vd, e, batch, n, n, n, n, nn, nn, EigVectors<T>{ord, arg, f, n}))) return s;
    nan_where<T><<<grid_for(ctx.device, batch * n), BLOCK, 0, ctx.stream>>>(wd, batch, n, flag);
    nan_where<T><<<grid_for(ctx.device, batch * nn), BLOCK, 0, ctx.stream>>>(vd, batch, nn, flag);
    return emi_cuda_launched(&ctx);
}

} // namespace

emily_status emi_cuda_eigh_native(emily_tensor *w, emily_tensor *v, const emily_tensor *a) {
    return solver_entry("eigh", a, {w, v, a},
                        [&]<typename T>(const emily_cuda_ctx &ctx) { return eigh_typed<T>(ctx, w, v, a); });
}
