// lu, determinant and solve on CUDA (native kernels of core/kernels.h):
// LU with partial pivoting in the input's own precision.
//
// Matrices of up to SMALL rows (the 65536 x 4x4 solves of a batched
// workload) never reach a library: one thread factors one matrix in
// registers (Doolittle, the pivot the first largest |re| + |im| of the
// column as LAPACK picks it) and writes p/l/u, the determinant or the
// solutions. Larger ones go to cuSOLVER's getrf/getrs (the 64-bit API,
// one call a matrix) or, for batches of more than 8 matrices below 512
// rows, cuBLAS's batched getrf/getrs (the split PyTorch uses).
//
// solve and determinant factor the memory as it is: read column-major it
// is A^T = P L U, det(A^T) = det(A), and A x = b is getrs with OP_T on
// that factorization (b transposed to column-major when it has more than
// one column). lu must factor A itself, so it transposes first.
//
// An exact zero on u's diagonal makes solve fail as the CPU does
// (EMILY_ERR_ARGUMENT, "can't solve for singular matrix"): the first
// such (matrix, step) is recorded on the device and read back once all
// the work is queued. lu and determinant never fail on it (zeros on u's
// diagonal, a zero determinant).
#include "cuda/linalg.cuh"

using namespace emily_cuda;
using namespace emily_cuda::la;

namespace {

constexpr int SMALL = 8;

// Loads matrix b (N x N, row-major) into registers and factors it in
// place: a holds L below the diagonal (unit diagonal implied) and U on and
// above it; perm[i] is the input row now at row i. Returns the first step
// with an exact zero pivot, or -1; *odd is the parity of the row swaps.
template <typename T, int N> __device__ int small_lu(const T *src, T (&a)[N][N], int (&perm)[N], bool *odd) {
#pragma unroll
    for (int i = 0; i < N; i++) {
        perm[i] = i;
#pragma unroll
        for (int j = 0; j < N; j++) a[i][j] = src[i * N + j];
    }
    int zero = -1;
    bool parity = false;
#pragma unroll
    for (int k = 0; k < N; k++) {
        int p = k;
        real_t<T> best = abs1(a[k][k]);
#pragma unroll
        for (int i = k + 1; i < N; i++) {
            real_t<T> v = abs1(a[i][k]);
            if (v > best) {
                best = v;
                p = i;
            }
        }
        // the swap with a run-time row, written so that every index stays
        // a constant (registers, not local memory)
#pragma unroll
        for (int i = k + 1; i < N; i++)
            if (i == p) {
#pragma unroll
                for (int j = 0; j < N; j++) {
                    T t = a[k][j];
                    a[k][j] = a[i][j];
                    a[i][j] = t;
                }
                int t = perm[k];
                perm[k] = perm[i];
                perm[i] = t;
                parity = !parity;
            }
        if (is_zero(a[k][k])) {
            if (zero < 0) zero = k;
            continue; // the column below is zero too: nothing to eliminate
        }
#pragma unroll
        for (int i = k + 1; i < N; i++) {
            a[i][k] = div(a[i][k], a[k][k]);
#pragma unroll
            for (int j = k + 1; j < N; j++) a[i][j] = sub(a[i][j], mul(a[i][k], a[k][j]));
        }
    }
    *odd = parity;
    return zero;
}

// small_lu's results for one matrix, as the kernels below use them.
template <typename T, int N> struct SmallLu {
    T f[N][N];
    int perm[N];
    bool odd;
    int zero;
    __device__ explicit SmallLu(const T *src) { zero = small_lu<T, N>(src, f, perm, &odd); }
};

template <typename T, int N> __global__ void small_lu_kernel(const T *a, T *p, T *l, T *u, int64_t batch) {
    int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (b >= batch) return;
    SmallLu<T, N> lu(a + b * N * N);
    int64_t o = b * N * N;
#pragma unroll
    for (int i = 0; i < N; i++) {
#pragma unroll
        for (int j = 0; j < N; j++) {
            l[o + i * N + j] = i > j ? lu.f[i][j] : mk<T>(i == j ? 1 : 0);
            u[o + i * N + j] = i <= j ? lu.f[i][j] : mk<T>(0);
            p[o + i * N + j] = mk<T>(0);
        }
    }
    // a = p . l . u: row i of l . u is input row lu.perm[i]
#pragma unroll
    for (int i = 0; i < N; i++) p[o + lu.perm[i] * N + i] = mk<T>(1);
}

template <typename T, int N> __global__ void small_det_kernel(const T *a, T *det, int64_t batch) {
    int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (b >= batch) return;
    SmallLu<T, N> lu(a + b * N * N);
    T d = mk<T>(lu.odd ? -1 : 1);
#pragma unroll
    for (int i = 0; i < N; i++) d = mul(d, lu.f[i][i]);
    det[b] = lu.zero >= 0 ? mk<T>(0) : d;
}

// Solves every right-hand side (the m columns of b, row-major n x m) of
// one matrix; records the first singular (matrix, step) in *bad.
template <typename T, int N>
__global__ void small_solve_kernel(const T *a, const T *bm, T *x, int64_t batch, int64_t m, unsigned long long *bad) {
    int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (b >= batch) return;
    SmallLu<T, N> lu(a + b * N * N);
    if (lu.zero >= 0) {
        atomicMin(bad, (unsigned long long)(b * N + lu.zero));
        return;
    }
    const T *bb = bm + b * N * m;
    T *xb = x + b * N * m;
    for (int64_t c = 0; c < m; c++) {
        T y[N];
#pragma unroll
        for (int i = 0; i < N; i++) {
            T v = bb[lu.perm[i] * m + c];
#pragma unroll
            for (int j = 0; j < i; j++) v = sub(v, mul(lu.f[i][j], y[j]));
            y[i] = v;
        }
#pragma unroll
        for (int i = N - 1; i >= 0; i--) {
            T v = y[i];
#pragma unroll
            for (int j = i + 1; j < N; j++) v = sub(v, mul(lu.f[i][j], y[j]));
            y[i] = div(v, lu.f[i][i]);
        }
#pragma unroll
        for (int i = 0; i < N; i++) xb[i * m + c] = y[i];
    }
}

// Calls f.template operator()<N>() for n in 1..SMALL.
template <typename F> emily_status with_small(int64_t n, F &&f) {
    switch (n) {
    case 1: return f.template operator()<1>();
    case 2: return f.template operator()<2>();
    case 3: return f.template operator()<3>();
    case 4: return f.template operator()<4>();
    case 5: return f.template operator()<5>();
    case 6: return f.template operator()<6>();
    case 7: return f.template operator()<7>();
    case 8: return f.template operator()<8>();
    default: return emily_error(EMILY_ERR_INTERNAL, "cuda: linalg: no small kernel for n = %lld", (long long)n);
    }
}

inline unsigned blocks_for(int64_t count, int threads) { return (unsigned)((count + threads - 1) / threads); }
constexpr int SMALL_THREADS = 128;

// ---- the library path -----------------------------------------------------------

// getrf of `batch` column-major n x n matrices at w (stride n * n), in
// place: pivots (1-based, LAPACK's) in piv64 (one call a matrix) or piv32
// (cuBLAS batched), one info per matrix. Which one is used: *batched.
template <typename T> struct Factored {
    int64_t *piv64 = nullptr;
    int *piv32 = nullptr;
    int *info = nullptr;
    T **ptrs = nullptr; // the batched path's matrix pointers
    bool batched = false;
};

inline bool use_batched(int64_t batch, int64_t n) { return batch > 8 && n < 512; }

template <typename T>
emily_status getrf_all(const emily_cuda_ctx &ctx, Pool &pool, Handles &h, T *w, int64_t batch, int64_t n,
                       Factored<T> &f) {
    emily_status s;
    if ((s = pool.get(batch, &f.info))) return s;
    f.batched = use_batched(batch, n);
    if (f.batched) {
        if ((s = h.get_blas(ctx)) || (s = pool.get(batch * n, &f.piv32)) ||
            (s = pointers(ctx, pool, w, n * n, batch, &f.ptrs)))
            return s;
        return in_chunks(batch, [&](int64_t b0, int count) -> emily_status {
            return blas_status(
                ctx.op, "getrfBatched",
                Lib<T>::getrf_batched(h.blas, (int)n, f.ptrs + b0, (int)n, f.piv32 + b0 * n, f.info + b0, count));
        });
    }
    if ((s = h.get_solver(ctx)) || (s = pool.get(batch * n, &f.piv64))) return s;
    return solver_each(
        ctx, pool, "getrf", batch,
        [&](size_t *dev_bytes, size_t *host_bytes) {
            return cusolverDnXgetrf_bufferSize(h.solver, h.params, n, n, Lib<T>::type, w, n, Lib<T>::type, dev_bytes,
                                               host_bytes);
        },
        [&](int64_t b, char *work, size_t dev_bytes, void *host_work, size_t host_bytes) {
            return cusolverDnXgetrf(h.solver, h.params, n, n, Lib<T>::type, w + b * n * n, n, f.piv64 + b * n,
                                    Lib<T>::type, work, dev_bytes, host_work, host_bytes, f.info + b);
        });
}

// getrf_all on a copy of a's memory (A^T, column-major): solve and
// determinant factor the transposed matrix, which needs no transpose.
template <typename T>
emily_status factor_transposed(const emily_cuda_ctx &ctx, Pool &pool, Handles &h, const T *ad, int64_t batch, int64_t n,
                               T **w, Factored<T> &f) {
    emily_status s;
    if ((s = check_int(ctx.op, n, "matrix size")) || (s = pool.get(batch * n * n, w))) return s;
    cudaError_t err = cudaMemcpyAsync(*w, ad, (size_t)(batch * n * n) * sizeof(T), cudaMemcpyDeviceToDevice,
                                      ctx.stream);
    if (err) return emi_cuda_error(ctx.op, err);
    return getrf_all(ctx, pool, h, *w, batch, n, f);
}

// The row permutation of matrix b from its pivots: perm[i] is the input row
// at row i of l . u; p[perm[i]][i] = 1 (p zeroed before).
template <typename T, typename I>
__global__ void perm_kernel(const I *piv, int64_t *perm, T *p, int64_t batch, int64_t n) {
    int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (b >= batch) return;
    int64_t *pm = perm + b * n;
    for (int64_t i = 0; i < n; i++) pm[i] = i;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = (int64_t)piv[b * n + i] - 1;
        int64_t t = pm[i];
        pm[i] = pm[j];
        pm[j] = t;
    }
    for (int64_t i = 0; i < n; i++) p[b * n * n + pm[i] * n + i] = mk<T>(1);
}

// l and u of lu from the column-major factors (transpose_map functors).
template <typename T> struct UnitLower : SameColumn {
    __device__ T operator()(int64_t, int64_t r, int64_t c, T v) const { return r > c ? v : mk<T>(r == c ? 1 : 0); }
};
template <typename T> struct Upper : SameColumn {
    __device__ T operator()(int64_t, int64_t r, int64_t c, T v) const { return r <= c ? v : mk<T>(0); }
};

// One block a matrix: the product of the diagonal, the sign of the pivots'
// permutation, 0 where a diagonal entry is exactly 0 (as the CPU's).
template <typename T, typename I> __global__ void det_kernel(const T *w, const I *piv, T *det, int64_t n) {
    __shared__ T prod[LARGEST_THREADS];
    __shared__ int swaps[LARGEST_THREADS], zero[LARGEST_THREADS];
    int64_t b = blockIdx.x;
    const T *m = w + b * n * n;
    T acc = mk<T>(1);
    int sw = 0, z = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        T d = m[i * n + i];
        z |= is_zero(d);
        acc = mul(acc, d);
        sw += (int64_t)piv[b * n + i] != i + 1;
    }
    prod[threadIdx.x] = acc;
    swaps[threadIdx.x] = sw;
    zero[threadIdx.x] = z;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            prod[threadIdx.x] = mul(prod[threadIdx.x], prod[threadIdx.x + half]);
            swaps[threadIdx.x] += swaps[threadIdx.x + half];
            zero[threadIdx.x] |= zero[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) det[b] = zero[0] ? mk<T>(0) : mul(mk<T>(swaps[0] % 2 ? -1 : 1), prod[0]);
}

// The first (matrix, step) whose getrf info reports an exact zero pivot.
__global__ void singular_kernel(const int *info, int64_t batch, int64_t n, unsigned long long *bad) {
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < batch; b += (int64_t)gridDim.x * blockDim.x)
        if (info[b] > 0) atomicMin(bad, (unsigned long long)(b * n + info[b] - 1));
}

emily_status singular_error(const emily_cuda_ctx &ctx, const unsigned long long *bad, int64_t n) {
    unsigned long long v = 0;
    emily_status s = read_back(ctx, &v, bad, sizeof v);
    if (s || v == ~0ull) return s;
    return emily_error(EMILY_ERR_ARGUMENT,
                       "solve: can't solve for singular matrix (zero pivot at step %lld of matrix %lld)",
                       (long long)(v % (unsigned long long)n), (long long)(v / (unsigned long long)n));
}

template <typename T>
emily_status lu_typed(const emily_cuda_ctx &ctx, emily_tensor *p, emily_tensor *l, emily_tensor *u,
                      const emily_tensor *a) {
    int64_t n = a->shape[a->rank - 1], batch = batch_of(a, 2);
    const T *ad = data_of<T>(a);
    T *pd = data_of<T>(p), *ld = data_of<T>(l), *ud = data_of<T>(u);
    if (n <= SMALL)
        return with_small(n, [&]<int N>() -> emily_status {
            small_lu_kernel<T, N>
                <<<blocks_for(batch, SMALL_THREADS), SMALL_THREADS, 0, ctx.stream>>>(ad, pd, ld, ud, batch);
            return emi_cuda_launched(&ctx);
        });
    emily_status s;
    if ((s = check_int(ctx.op, n, "matrix size"))) return s;
    Pool pool(ctx);
    Handles h;
    T *w;
    int64_t *perm;
    Factored<T> f;
    if ((s = pool.get(batch * n * n, &w)) || (s = pool.get(batch * n, &perm))) return s;
    // a column-major copy of A: getrf must factor A, not A^T
    if ((s = launch_transpose(ctx, w, ad, batch, n, n, n, n, n * n, n * n, Plain<T>()))) return s;
    if ((s = getrf_all(ctx, pool, h, w, batch, n, f))) return s;
    if ((s = launch_transpose(ctx, ld, w, batch, n, n, n, n, n * n, n * n, UnitLower<T>())) ||
        (s = launch_transpose(ctx, ud, w, batch, n, n, n, n, n * n, n * n, Upper<T>())))
        return s;
    cudaError_t err = cudaMemsetAsync(pd, 0, (size_t)(batch * n * n) * sizeof(T), ctx.stream);
    if (err) return emi_cuda_error(ctx.op, err);
    if (f.batched)
        perm_kernel<T, int>
            <<<blocks_for(batch, SMALL_THREADS), SMALL_THREADS, 0, ctx.stream>>>(f.piv32, perm, pd, batch, n);
    else
        perm_kernel<T, int64_t>
            <<<blocks_for(batch, SMALL_THREADS), SMALL_THREADS, 0, ctx.stream>>>(f.piv64, perm, pd, batch, n);
    return emi_cuda_launched(&ctx);
}

template <typename T> emily_status det_typed(const emily_cuda_ctx &ctx, emily_tensor *det, const emily_tensor *a) {
    int64_t n = a->shape[a->rank - 1], batch = batch_of(a, 2);
    const T *ad = data_of<T>(a);
    T *dd = data_of<T>(det);
    if (n == 0) { // the determinant of a 0 x 0 matrix
        set_all<T><<<grid_for(ctx.device, batch), BLOCK, 0, ctx.stream>>>(dd, batch, mk<T>(1));
        return emi_cuda_launched(&ctx);
    }
    if (n <= SMALL)
        return with_small(n, [&]<int N>() -> emily_status {
            small_det_kernel<T, N><<<blocks_for(batch, SMALL_THREADS), SMALL_THREADS, 0, ctx.stream>>>(ad, dd, batch);
            return emi_cuda_launched(&ctx);
        });
    Pool pool(ctx);
    Handles h;
    T *w;
    Factored<T> f;
    emily_status s = factor_transposed(ctx, pool, h, ad, batch, n, &w, f);
    if (s) return s;
    if (batch > INT32_MAX) return emily_error(EMILY_ERR_SHAPE, "cuda: determinant: too many matrices");
    if (f.batched) det_kernel<T, int><<<(unsigned)batch, LARGEST_THREADS, 0, ctx.stream>>>(w, f.piv32, dd, n);
    else det_kernel<T, int64_t><<<(unsigned)batch, LARGEST_THREADS, 0, ctx.stream>>>(w, f.piv64, dd, n);
    return emi_cuda_launched(&ctx);
}

template <typename T>
emily_status solve_typed(const emily_cuda_ctx &ctx, emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                         bool b_vector) {
    int64_t n = a->shape[a->rank - 1], batch = batch_of(a, 2);
    int64_t m = b_vector ? 1 : b->shape[b->rank - 1];
    const T *ad = data_of<T>(a), *bd = data_of<T>(b);
    T *xd = data_of<T>(x);
    Pool pool(ctx);
    unsigned long long *bad;
    emily_status s = pool.get(1, &bad);
    if (s) return s;
    cudaError_t err = cudaMemsetAsync(bad, 0xff, sizeof *bad, ctx.stream);
    if (err) return emi_cuda_error(ctx.op, err);
    if (n <= SMALL) {
        s = with_small(n, [&]<int N>() -> emily_status {
            small_solve_kernel<T, N>
                <<<blocks_for(batch, SMALL_THREADS), SMALL_THREADS, 0, ctx.stream>>>(ad, bd, xd, batch, m, bad);
            return emi_cuda_launched(&ctx);
        });
        return s ? s : singular_error(ctx, bad, n);
    }
    Handles h;
    T *w, *bc = xd;
    Factored<T> f;
    if ((s = check_int(ctx.op, m, "right-hand side count")) ||
        (s = factor_transposed(ctx, pool, h, ad, batch, n, &w, f)))
        return s;
    // b column-major (n x m per matrix): a single column is that already
    if (m > 1) {
        if ((s = pool.get(batch * n * m, &bc)) ||
            (s = launch_transpose(ctx, bc, bd, batch, m, n, n, m, n * m, n * m, Plain<T>())))
            return s;
    } else if ((err = cudaMemcpyAsync(xd, bd, (size_t)(batch * n) * sizeof(T), cudaMemcpyDeviceToDevice, ctx.stream))) {
        return emi_cuda_error(ctx.op, err);
    }
    // w holds A^T = P L U: A x = b is the transposed solve
    if (f.batched) {
        T **bptr;
        if ((s = pointers(ctx, pool, bc, n * m, batch, &bptr))) return s;
        s = in_chunks(batch, [&](int64_t b0, int count) -> emily_status {
            int info = 0;
            return blas_status(ctx.op, "getrsBatched",
                               Lib<T>::getrs_batched(h.blas, CUBLAS_OP_T, (int)n, (int)m, f.ptrs + b0, (int)n,
                                                     f.piv32 + b0 * n, bptr + b0, (int)n, &info, count));
        });
        if (s) return s;
    } else {
        int *info2;
        if ((s = pool.get(1, &info2))) return s;
        for (int64_t i = 0; i < batch; i++)
            if ((s = solver_status(ctx.op, "getrs",
                                   cusolverDnXgetrs(h.solver, h.params, CUBLAS_OP_T, n, m, Lib<T>::type, w + i * n * n,
                                                    n, f.piv64 + i * n, Lib<T>::type, bc + i * n * m, n, info2))))
                return s;
    }
    if (m > 1 && (s = launch_transpose(ctx, xd, bc, batch, n, m, m, n, n * m, n * m, Plain<T>()))) return s;
    singular_kernel<<<grid_for(ctx.device, batch), BLOCK, 0, ctx.stream>>>(f.info, batch, n, bad);
    if ((s = emi_cuda_launched(&ctx))) return s;
    return singular_error(ctx, bad, n);
}

} // namespace

emily_status emi_cuda_lu_native(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a) {
    return solver_entry("lu", a, {p, l, u, a},
                        [&]<typename T>(const emily_cuda_ctx &ctx) { return lu_typed<T>(ctx, p, l, u, a); });
}

emily_status emi_cuda_determinant_native(emily_tensor *det, const emily_tensor *a) {
    return solver_entry("determinant", a, {det, a},
                        [&]<typename T>(const emily_cuda_ctx &ctx) { return det_typed<T>(ctx, det, a); });
}

emily_status emi_cuda_solve_native(emily_tensor *x, const emily_tensor *a, const emily_tensor *b, bool b_vector) {
    return solver_entry("solve", a, {x, a, b},
                        [&]<typename T>(const emily_cuda_ctx &ctx) { return solve_typed<T>(ctx, x, a, b, b_vector); });
}
