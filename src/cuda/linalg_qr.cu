// qr on CUDA (native kernel of core/kernels.h): cuSOLVER's geqrf and
// orgqr/ungqr in the input's own precision, with the factors put in the
// CPU LAPACK path's conventions (src/cpu/linalg/lapack.c; the real signs
// are core/qr_signs.h, shared with it):
//   real:    the signs Nx's Householder QR gives R's diagonal (reflected
//            entries positive; the last row of a square or wide matrix
//            signed so that det(Q) is what Nx's reflections make it);
//   complex: R's diagonal real and non-negative;
// each row i of R scaled by a unit factor f_i and column i of Q by
// conj(f_i), so Q R is unchanged; then entries with |x| <= eps are 0.
//
// Each matrix is transposed into a column-major work matrix (m rows, as
// many columns as Q or R needs); geqrf runs a matrix at a time, then R and
// the signs are taken for the whole batch, orgqr runs a matrix at a time,
// and Q is transposed back with its signs. (Batches of many small
// matrices pay for a solver call each: cuSOLVER has no batched geqrf/orgqr
// pair.)
#include "cuda/linalg.cuh"
#include "core/qr_signs.h"

using namespace emily_cuda;
using namespace emily_cuda::la;

namespace {

// One thread a matrix: the unit factor of each of R's k rows, from R's
// diagonal and tau as geqrf left them (w column-major, ld m).
template <typename T>
__global__ void qr_signs(const T *w, const T *tau, T *f, int64_t batch, int64_t m, int64_t n, int64_t k,
                         int64_t wstep) {
    int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (b >= batch) return;
    const T *wb = w + b * wstep;
    const T *tb = tau + b * k;
    T *fb = f + b * k;
    if constexpr (is_cx<T>()) {
        for (int64_t i = 0; i < k; i++) fb[i] = unit_towards_real(wb[i * m + i]);
    } else {
        emi_qr_signs st = emi_qr_signs_start();
        for (int64_t i = 0; i < k; i++) fb[i] = (T)emi_qr_sign_step(&st, i, m, n, tb[i] != 0, wb[i * m + i] < 0);
    }
}

template <typename T> __device__ inline T zero_small(T v, double eps) { return (double)absv(v) <= eps ? mk<T>(0) : v; }

// R (rrows x n) from w: the upper triangle of the first k rows, row i
// times f_i (its diagonal exactly real for complex input).
template <typename T> struct TakeR : SameColumn {
    const T *f;
    int64_t k;
    double eps;
    __device__ T operator()(int64_t b, int64_t r, int64_t c, T v) const {
        if (r > c || r >= k) return mk<T>(0);
        T x = mul(v, f[b * k + r]);
        if (r == c) x = mk<T>(re(x));
        return zero_small(x, eps);
    }
};

// Q (m x qcols) from orgqr's w: column i < k times conj(f_i).
template <typename T> struct TakeQ : SameColumn {
    const T *f;
    int64_t k;
    double eps;
    __device__ T operator()(int64_t b, int64_t, int64_t c, T v) const {
        return zero_small(c < k ? mul(v, conj(f[b * k + c])) : v, eps);
    }
};

template <typename T>
emily_status qr_typed(const emily_cuda_ctx &ctx, emily_tensor *q, emily_tensor *r, const emily_tensor *a, double eps) {
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = m < n ? m : n;
    int64_t qcols = q->shape[q->rank - 1], rrows = r->shape[r->rank - 2];
    int64_t batch = batch_of(a, 2);
    T *qd = data_of<T>(q), *rd = data_of<T>(r);
    emily_status s;
    if (k == 0) { // no reflections: Q is the identity, R zeros
        if (q->size && (s = emi_cuda_eye(q))) return s;
        cudaError_t err = r->size ? cudaMemsetAsync(rd, 0, (size_t)r->size * sizeof(T), ctx.stream) : cudaSuccess;
        return emi_cuda_error(ctx.op, err);
    }
    if ((s = check_int(ctx.op, m, "row count")) || (s = check_int(ctx.op, n, "column count"))) return s;
    int64_t cols = n > qcols ? n : qcols, wstep = m * cols;
    Pool pool(ctx);
    Handles h;
    T *w, *tau, *f;
    int *info;
    if ((s = h.get_solver(ctx)) || (s = pool.get(batch * wstep, &w)) || (s = pool.get(batch * k, &tau)) ||
        (s = pool.get(batch * k, &f)) || (s = pool.get(1, &info)))
        return s;
    // column-major copies; columns n.. (a complete Q of a tall matrix) from zero
    if (cols > n) {
        cudaError_t err = cudaMemsetAsync(w, 0, (size_t)(batch * wstep) * sizeof(T), ctx.stream);
        if (err) return emi_cuda_error(ctx.op, err);
    }
    if ((s = launch_transpose(ctx, w, data_of<T>(a), batch, n, m, m, n, wstep, m * n, Plain<T>()))) return s;
    size_t dev_bytes = 0, host_bytes = 0;
    int lwork = 0;
    if ((s = solver_status(ctx.op, "geqrf",
                           cusolverDnXgeqrf_bufferSize(h.solver, h.params, m, n, Lib<T>::type, w, m, Lib<T>::type, tau,
                                                       Lib<T>::type, &dev_bytes, &host_bytes))) ||
        (s = solver_status(ctx.op, "orgqr",
                           Lib<T>::orgqr_size(h.solver, (int)m, (int)qcols, (int)k, w, (int)m, tau, &lwork))))
        return s;
    char *work;
    T *owork;
    HostWork hw;
    if ((s = pool.get((int64_t)dev_bytes, &work)) || (s = pool.get(lwork, &owork)) || (s = hw.get(ctx.op, host_bytes)))
        return s;
    for (int64_t b = 0; b < batch; b++)
        if ((s = solver_status(ctx.op, "geqrf",
                               cusolverDnXgeqrf(h.solver, h.params, m, n, Lib<T>::type, w + b * wstep, m, Lib<T>::type,
                                                tau + b * k, Lib<T>::type, work, dev_bytes, hw.p, host_bytes, info))))
            return s;
    qr_signs<T><<<grid_for(ctx.device, batch), BLOCK, 0, ctx.stream>>>(w, tau, f, batch, m, n, k, wstep);
    if ((s = emi_cuda_launched(&ctx))) return s;
    if ((s = launch_transpose(ctx, rd, w, batch, rrows, n, n, m, rrows * n, wstep, TakeR<T>{{}, f, k, eps}))) return s;
    for (int64_t b = 0; b < batch; b++)
        if ((s = solver_status(ctx.op, "orgqr",
                               Lib<T>::orgqr(h.solver, (int)m, (int)qcols, (int)k, w + b * wstep, (int)m, tau + b * k,
                                             owork, lwork, info))))
            return s;
    return launch_transpose(ctx, qd, w, batch, m, qcols, qcols, m, m * qcols, wstep, TakeQ<T>{{}, f, k, eps});
}

} // namespace

emily_status emi_cuda_qr_native(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps) {
    (void)complete; /* q's and r's shapes say it */
    return solver_entry("qr", a, {q, r, a},
                        [&]<typename T>(const emily_cuda_ctx &ctx) { return qr_typed<T>(ctx, q, r, a, eps); });
}
