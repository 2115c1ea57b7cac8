// svd on CUDA (native kernel of core/kernels.h), real input in its own
// precision: cuSOLVER's Jacobi SVD (gesvdj; gesvdjBatched for batches of
// matrices of at most 32 x 32, PyTorch's choice too), with the QR-iteration
// gesvd for any matrix Jacobi leaves unconverged, and the factors put in
// the CPU LAPACK path's conventions (src/cpu/linalg/lapack.c): s
// descending; each row of vt with its largest-magnitude entry (the first
// of equals) positive and u's column flipped with it; u's extra columns
// (full matrices of a tall input) and vt's extra rows each with their own
// largest entry positive.
//
// The memory of a row-major m x n matrix A is the column-major n x m
// matrix C = A^T. The solvers factor C = U_C S V_C^T, so A = V_C S U_C^T:
// vt is U_C^T, which is U_C's column-major memory read row-major (a copy
// with the row signs), and u is V_C (a transpose with the column signs).
// Matrices with NaN or infinity are factored as zeros and their u, s and
// vt written as NaN (LAPACK's iterations are not defined there; the CPU
// runs Nx's own algorithm on them instead).
#include "cuda/linalg.cuh"

using namespace emily_cuda;
using namespace emily_cuda::la;

namespace {

template <typename T> struct Gesvdj;
#define EMI_LA_GESVDJ(T, P)                                                                                            \
    template <> struct Gesvdj<T> {                                                                                     \
        static cusolverStatus_t size(cusolverDnHandle_t h, int econ, int m, int n, const T *a, const T *s, const T *u, \
                                     const T *v, int *lwork, gesvdjInfo_t p) {                                         \
            return cusolverDn##P##gesvdj_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, econ, m, n, a, m, s, u, m, v, n,      \
                                                    lwork, p);                                                         \
        }                                                                                                              \
        static cusolverStatus_t run(cusolverDnHandle_t h, int econ, int m, int n, T *a, T *s, T *u, T *v, T *work,     \
                                    int lwork, int *info, gesvdjInfo_t p) {                                            \
            return cusolverDn##P##gesvdj(h, CUSOLVER_EIG_MODE_VECTOR, econ, m, n, a, m, s, u, m, v, n, work, lwork,    \
                                         info, p);                                                                     \
        }                                                                                                              \
        static cusolverStatus_t batched_size(cusolverDnHandle_t h, int m, int n, const T *a, const T *s, const T *u,   \
                                             const T *v, int *lwork, gesvdjInfo_t p, int count) {                      \
            return cusolverDn##P##gesvdjBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n,     \
                                                           lwork, p, count);                                           \
        }                                                                                                              \
        static cusolverStatus_t batched(cusolverDnHandle_t h, int m, int n, T *a, T *s, T *u, T *v, T *work,           \
                                        int lwork, int *info, gesvdjInfo_t p, int count) {                             \
            return cusolverDn##P##gesvdjBatched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, a, m, s, u, m, v, n, work, lwork,   \
                                                info, p, count);                                                       \
        }                                                                                                              \
    };
EMI_LA_GESVDJ(float, S)
EMI_LA_GESVDJ(double, D)
#undef EMI_LA_GESVDJ

// sign[b][i]: +1, or -1 where the largest entry of vt's row i (U_C's
// column i) or, past vt's rows, of u's column i (V_C's) is negative.
template <typename T>
__global__ void svd_signs(const T *uc, const T *vc, T *sign, int64_t batch, int64_t nsign, int64_t vrows, int64_t r,
                          int64_t c, int64_t ustep, int64_t vstep) {
    for (int64_t blk = blockIdx.x; blk < batch * nsign; blk += gridDim.x) {
        int64_t b = blk / nsign, i = blk % nsign;
        const T *x = i < vrows ? uc + b * ustep + i * r : vc + b * vstep + i * c;
        int64_t at = block_largest(x, i < vrows ? r : c, 1);
        if (threadIdx.x == 0) sign[blk] = x[at] < 0 ? (T)-1 : (T)1;
    }
}

// vt[b][i][j] = sign[b][i] * U_C[b](j, i)
template <typename T>
__global__ void take_vt(T *vt, const T *uc, const T *sign, int64_t batch, int64_t vrows, int64_t r, int64_t nsign,
                        int64_t ustep) {
    int64_t total = batch * vrows * r;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = e / (vrows * r), ij = e % (vrows * r), i = ij / r;
        vt[e] = sign[b * nsign + i] * uc[b * ustep + ij];
    }
}

template <typename T> struct SignedColumns : SameColumn {
    const T *sign;
    int64_t nsign;
    __device__ T operator()(int64_t b, int64_t, int64_t c, T v) const { return sign[b * nsign + c] * v; }
};

// gesvd for the matrices Jacobi left unconverged (finite ones), written
// where Jacobi writes: s, U_C (ld r) and V_C (ld c). gesvd needs rows >=
// cols, so a wide C is factored through A (C's transpose) instead; the
// side that is gesvd's U is written in place, its VT (k x k) transposed
// into the other. One matrix at a time, each read back (rare).
template <typename T> struct Fallback {
    const emily_cuda_ctx &ctx;
    Handles &h;
    int64_t r, c, k;
    bool full, tall;
    T *g = nullptr, *tmp = nullptr;
    char *work = nullptr;
    int *info = nullptr;
    size_t dev_bytes = 0, host_bytes = 0;
    HostWork hw;
    Fallback(const emily_cuda_ctx &x, Handles &hh, int64_t rr, int64_t cc, bool f)
        : ctx(x), h(hh), r(rr), c(cc), k(rr < cc ? rr : cc), full(f), tall(rr >= cc) {}

    emily_status prepare(Pool &pool, T *sb, T *ucb, T *vcb) {
        emily_status s;
        if ((s = pool.get(r * c, &g)) || (s = pool.get(k * k, &tmp)) || (s = pool.get(1, &info))) return s;
        if ((s = xgesvd(sb, ucb, vcb, nullptr))) return s;
        if ((s = pool.get((int64_t)dev_bytes, &work))) return s;
        return hw.get(ctx.op, host_bytes);
    }

    // The workspace query (run == nullptr) or the factorization.
    emily_status xgesvd(T *sb, T *ucb, T *vcb, const void *run) {
        int64_t gm = tall ? r : c, gn = tall ? c : r;
        signed char jobu = full ? 'A' : 'S';
        T *uout = tall ? ucb : vcb;
        if (!run)
            return solver_status(ctx.op, "gesvd",
                                 cusolverDnXgesvd_bufferSize(h.solver, h.params, jobu, 'S', gm, gn, Lib<T>::type, g, gm,
                                                             Lib<T>::type, sb, Lib<T>::type, uout, gm, Lib<T>::type,
                                                             tmp, k, Lib<T>::type, &dev_bytes, &host_bytes));
        return solver_status(ctx.op, "gesvd",
                             cusolverDnXgesvd(h.solver, h.params, jobu, 'S', gm, gn, Lib<T>::type, g, gm, Lib<T>::type,
                                              sb, Lib<T>::type, uout, gm, Lib<T>::type, tmp, k, Lib<T>::type, work,
                                              dev_bytes, hw.p, host_bytes, info));
    }

    emily_status run(const T *ab, T *sb, T *ucb, T *vcb, int64_t b) {
        emily_status s;
        if (tall) {
            cudaError_t err = cudaMemcpyAsync(g, ab, (size_t)(r * c) * sizeof(T), cudaMemcpyDeviceToDevice, ctx.stream);
            if (err) return emi_cuda_error(ctx.op, err);
        } else if ((s = launch_transpose(ctx, g, ab, 1, r, c, c, r, 0, 0, Plain<T>()))) {
            return s;
        }
        if ((s = xgesvd(sb, ucb, vcb, this))) return s;
        if ((s = launch_transpose(ctx, tall ? vcb : ucb, tmp, 1, k, k, k, k, 0, 0, Plain<T>()))) return s;
        int bad = 0;
        if ((s = read_back(ctx, &bad, info, sizeof bad))) return s;
        if (bad)
            return emily_error(EMILY_ERR_INTERNAL, "cuda: svd: cuSOLVER gesvd did not converge (matrix %lld, info %d)",
                               (long long)b, bad);
        return EMILY_OK;
    }
};

template <typename T>
emily_status svd_typed(const emily_cuda_ctx &ctx, emily_tensor *u, emily_tensor *sv, emily_tensor *vt,
                       const emily_tensor *a, bool full) {
    if constexpr (is_cx<T>()) {
        (void)u, (void)sv, (void)vt, (void)a, (void)full;
        return emily_error(EMILY_ERR_TYPE, "svd: complex tensors are not supported");
    } else {
        int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = m < n ? m : n;
        int64_t ucols = u->shape[u->rank - 1], vrows = vt->shape[vt->rank - 2];
        int64_t batch = batch_of(a, 2), r = n, c = m; // C = A^T is r x c
        emily_status s;
        if (k == 0) {
            if ((u->size && (s = emi_cuda_eye(u))) || (vt->size && (s = emi_cuda_eye(vt)))) return s;
            return EMILY_OK;
        }
        if ((s = check_int(ctx.op, m, "row count")) || (s = check_int(ctx.op, n, "column count"))) return s;
        const T *ad = data_of<T>(a);
        T *ud = data_of<T>(u), *sd = data_of<T>(sv), *vd = data_of<T>(vt);
        bool batched = batch > 1 && r <= 32 && c <= 32;
        // gesvdjBatched always computes full U_C and V_C
        int64_t ustep = r * (batched ? r : vrows), vstep = c * (batched ? c : ucols);
        int64_t nsign = ucols > vrows ? ucols : vrows;
        Pool pool(ctx);
        Handles h;
        Owned<gesvdjInfo_t, cusolverDnDestroyGesvdjInfo> gp;
        T *w, *uc, *vc, *sign;
        int *flag, *info;
        unsigned long long *first;
        if ((s = h.get_solver(ctx)) || (s = pool.get(batch * m * n, &w)) || (s = pool.get(batch * ustep, &uc)) ||
            (s = pool.get(batch * vstep, &vc)) || (s = pool.get(batch * nsign, &sign)) ||
            (s = pool.get(batch, &flag)) || (s = pool.get(batch, &info)) || (s = pool.get(1, &first)))
            return s;
        if ((s = solver_status(ctx.op, "gesvdj", cusolverDnCreateGesvdjInfo(&gp.p))) ||
            (s = solver_status(ctx.op, "gesvdj", cusolverDnXgesvdjSetSortEig(gp.p, 1))))
            return s;
        cudaError_t err = cudaMemsetAsync(flag, 0, (size_t)batch * sizeof(int), ctx.stream);
        if (!err) err = cudaMemsetAsync(first, 0xff, sizeof *first, ctx.stream);
        if (!err)
            err = cudaMemcpyAsync(w, ad, (size_t)(batch * m * n) * sizeof(T), cudaMemcpyDeviceToDevice, ctx.stream);
        if (err) return emi_cuda_error(ctx.op, err);
        flag_nonfinite<T><<<grid_for(ctx.device, batch * m * n), BLOCK, 0, ctx.stream>>>(ad, batch, m * n, flag);
        zero_where<T><<<grid_for(ctx.device, batch * m * n), BLOCK, 0, ctx.stream>>>(w, batch, m * n, flag);
        if ((s = emi_cuda_launched(&ctx))) return s;
        int lwork = 0;
        T *work;
        if (batched) {
            if ((s = check_int(ctx.op, batch, "batch size")) ||
                (s = solver_status(
                     ctx.op, "gesvdjBatched",
                     Gesvdj<T>::batched_size(h.solver, (int)r, (int)c, w, sd, uc, vc, &lwork, gp.p, (int)batch))) ||
                (s = pool.get(lwork, &work)) ||
                (s = solver_status(
                     ctx.op, "gesvdjBatched",
                     Gesvdj<T>::batched(h.solver, (int)r, (int)c, w, sd, uc, vc, work, lwork, info, gp.p, (int)batch))))
                return s;
        } else {
            int econ = full ? 0 : 1;
            if ((s = solver_status(ctx.op, "gesvdj",
                                   Gesvdj<T>::size(h.solver, econ, (int)r, (int)c, w, sd, uc, vc, &lwork, gp.p))) ||
                (s = pool.get(lwork, &work)))
                return s;
            for (int64_t b = 0; b < batch; b++)
                if ((s = solver_status(ctx.op, "gesvdj",
                                       Gesvdj<T>::run(h.solver, econ, (int)r, (int)c, w + b * m * n, sd + b * k,
                                                      uc + b * ustep, vc + b * vstep, work, lwork, info + b, gp.p))))
                    return s;
        }
        // Jacobi's stragglers: gesvd, one matrix at a time (rare; waits)
        unsigned long long b0;
        if ((s = first_straggler(ctx, info, flag, batch, first, &b0))) return s;
        if (b0 != ~0ull) {
            int *hinfo;
            if ((s = straggler_infos(ctx, info, flag, batch, &hinfo))) return s;
            Fallback<T> fb(ctx, h, r, c, full);
            s = fb.prepare(pool, sd, uc, vc);
            for (int64_t b = (int64_t)b0; !s && b < batch; b++)
                if (hinfo[b] != 0 && !hinfo[batch + b])
                    s = fb.run(ad + b * m * n, sd + b * k, uc + b * ustep, vc + b * vstep, b);
            free(hinfo);
            if (s) return s;
        }
        if (batch * nsign > 0) {
            int64_t blocks = batch * nsign < 65536 * 16 ? batch * nsign : 65536 * 16;
            svd_signs<T><<<(unsigned)blocks, LARGEST_THREADS, 0, ctx.stream>>>(uc, vc, sign, batch, nsign, vrows, r, c,
                                                                               ustep, vstep);
        }
        take_vt<T><<<grid_for(ctx.device, batch * vrows * r), BLOCK, 0, ctx.stream>>>(vd, uc, sign, batch, vrows, r,
                                                                                      nsign, ustep);
        if ((s = emi_cuda_launched(&ctx))) return s;
        if ((s = launch_transpose(ctx, ud, vc, batch, m, ucols, ucols, c, m * ucols, vstep,
                                  SignedColumns<T>{{}, sign, nsign})))
            return s;
        nan_where<T><<<grid_for(ctx.device, batch * m * ucols), BLOCK, 0, ctx.stream>>>(ud, batch, m * ucols, flag);
        nan_where<T><<<grid_for(ctx.device, batch * k), BLOCK, 0, ctx.stream>>>(sd, batch, k, flag);
        nan_where<T><<<grid_for(ctx.device, batch * vrows * n), BLOCK, 0, ctx.stream>>>(vd, batch, vrows * n, flag);
        return emi_cuda_launched(&ctx);
    }
}

} // namespace

emily_status emi_cuda_svd_native(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                                 bool full_matrices) {
    return solver_entry("svd", a, {u, s, vt, a}, [&]<typename T>(const emily_cuda_ctx &ctx) {
        return svd_typed<T>(ctx, u, s, vt, a, full_matrices);
    });
}
