// Shared pieces of the CUDA linear algebra family (C++, nvcc only): the
// native kernels of core/kernels.h (lu_native ... eigh_native) on cuSOLVER
// and cuBLAS, in the input's own precision.
//
// Layouts. Emily's matrices are row-major; the libraries are column-major.
// A row-major m x n matrix read column-major is its transpose (n x m), so
// most kernels hand the libraries the memory as it is and solve the
// transposed problem (solve: getrs with OP_T; cholesky: potrf of the upper
// triangle; triangular_solve: trsm on the other side; determinant: det(A^T)
// = det(A); svd: A^T = U S V^T gives A = V S U^T; eigh: A^T = conj(A)).
// Only lu and qr, whose factors are not those of A^T, transpose first
// (tiled transposes through shared memory, transpose_map below).
//
// Scalars are float, double, cuFloatComplex or cuDoubleComplex (T); the
// helpers below give them one set of arithmetic for the small kernels.
// Every kernel enqueues on the op's stream; the few that must report an
// error (a singular system, a solver that did not converge) read one flag
// back at the end, after all their work is queued.
#ifndef EMILY_CUDA_LINALG_CUH
#define EMILY_CUDA_LINALG_CUH

#include <cuComplex.h>
#include <cusolverDn.h>
#include <math.h>
#include <type_traits>
#include "cuda/common.cuh"
#include "cuda/fault.h"
#include "core/kernels.h"

namespace emily_cuda {
namespace la {

// ---- scalars ------------------------------------------------------------------

template <typename T> struct real_of { typedef T type; };
template <> struct real_of<cuFloatComplex> { typedef float type; };
template <> struct real_of<cuDoubleComplex> { typedef double type; };
template <typename T> using real_t = typename real_of<T>::type;
template <typename T> __host__ __device__ constexpr bool is_cx() { return !std::is_same<T, real_t<T>>::value; }

template <typename T> __host__ __device__ inline T mk(double re, double im = 0) {
    if constexpr (std::is_same<T, cuFloatComplex>::value) return make_cuFloatComplex((float)re, (float)im);
    else if constexpr (std::is_same<T, cuDoubleComplex>::value) return make_cuDoubleComplex(re, im);
    else return (T)re;
}
template <typename T> __host__ __device__ inline real_t<T> re(T x) {
    if constexpr (is_cx<T>()) return x.x;
    else return x;
}
template <typename T> __host__ __device__ inline real_t<T> im(T x) {
    if constexpr (is_cx<T>()) return x.y;
    else return (T)0;
}
template <typename T> __device__ inline T add(T a, T b) {
    if constexpr (is_cx<T>()) return mk<T>(a.x + b.x, a.y + b.y);
    else return a + b;
}
template <typename T> __device__ inline T sub(T a, T b) {
    if constexpr (is_cx<T>()) return mk<T>(a.x - b.x, a.y - b.y);
    else return a - b;
}
template <typename T> __device__ inline T mul(T a, T b) {
    if constexpr (is_cx<T>()) return mk<T>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
    else return a * b;
}
template <typename T> __device__ inline T div(T a, T b) {
    if constexpr (std::is_same<T, cuFloatComplex>::value) return cuCdivf(a, b);
    else if constexpr (std::is_same<T, cuDoubleComplex>::value) return cuCdiv(a, b);
    else return a / b;
}
template <typename T> __host__ __device__ inline T conj(T x) {
    if constexpr (is_cx<T>()) return mk<T>(x.x, -x.y);
    else return x;
}
// |re| + |im|: LAPACK's pivot measure (cabs1)
template <typename T> __device__ inline real_t<T> abs1(T x) {
    if constexpr (is_cx<T>()) return fabs(x.x) + fabs(x.y);
    else return fabs(x);
}
template <typename T> __device__ inline real_t<T> absv(T x) {
    if constexpr (is_cx<T>()) return hypot(x.x, x.y);
    else return fabs(x);
}
template <typename T> __device__ inline bool is_zero(T x) { return re(x) == 0 && im(x) == 0; }
template <typename T> __device__ inline bool finite(T x) { return isfinite(re(x)) && isfinite(im(x)); }

// The unit factor that turns x into a non-negative real: conj(x)/|x| (1
// for 0), the CPU LAPACK path's unit_towards_real.
template <typename T> __device__ inline T unit_towards_real(T x) {
    real_t<T> mag = absv(x);
    if (mag == 0) return mk<T>(1);
    return mk<T>(re(x) / mag, -im(x) / mag);
}

// The element type of a native dtype: calls f.template operator()<T>().
template <typename F> emily_status with_solver_type(emily_dtype t, const char *op, F &&f) {
    switch (t) {
    case EMILY_F32: return f.template operator()<float>();
    case EMILY_F64: return f.template operator()<double>();
    case EMILY_C64: return f.template operator()<cuFloatComplex>();
    case EMILY_C128: return f.template operator()<cuDoubleComplex>();
    default: return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: no solver for type %s", op, emily_dtype_name(t));
    }
}

// The frame of every native entry point: begins op on a's device over the
// tensors ts, then calls f.template operator()<T>(ctx) with T the element
// type of a's dtype.
template <size_t N, typename F>
emily_status solver_entry(const char *op, const emily_tensor *a, const emily_tensor *const (&ts)[N], F &&f) {
    emily_cuda_ctx ctx;
    emily_status s = emi_cuda_begin(op, dev_of(a), (int)N, ts, &ctx);
    if (s) return s;
    return with_solver_type(a->dtype, op, [&]<typename T>() { return f.template operator()<T>(ctx); });
}

template <typename T> inline T *data_of(const emily_tensor *t) {
    return (T *)(base_of(t) + (size_t)t->offset * emily_dtype_size(t->dtype));
}

// Number of matrices: the product of the leading axes.
inline int64_t batch_of(const emily_tensor *t, int matrix_rank) {
    int64_t b = 1;
    for (int i = 0; i < t->rank - matrix_rank; i++) b *= t->shape[i];
    return b;
}

// ---- the libraries' typed entry points --------------------------------------

template <typename T> struct Lib;
#define EMI_LA_LIB(T, CT, RT, P, ORGQR, SYEVJ)                                                                         \
    template <> struct Lib<T> {                                                                                        \
        static constexpr cudaDataType type = CT, real_type = RT;                                                       \
        static cublasStatus_t trsm(cublasHandle_t h, cublasSideMode_t sd, cublasFillMode_t ul, cublasOperation_t op,   \
                                   int m, int n, const T *a, int lda, T *b, int ldb) {                                 \
            T one = mk<T>(1);                                                                                          \
            return cublas##P##trsm(h, sd, ul, op, CUBLAS_DIAG_NON_UNIT, m, n, &one, a, lda, b, ldb);                   \
        }                                                                                                              \
        static cublasStatus_t trsm_batched(cublasHandle_t h, cublasSideMode_t sd, cublasFillMode_t ul,                 \
                                           cublasOperation_t op, int m, int n, T *const *a, int lda, T *const *b,      \
                                           int ldb, int count) {                                                       \
            T one = mk<T>(1);                                                                                          \
            return cublas##P##trsmBatched(h, sd, ul, op, CUBLAS_DIAG_NON_UNIT, m, n, &one, (const T *const *)a, lda,   \
                                          b, ldb, count);                                                              \
        }                                                                                                              \
        static cublasStatus_t getrf_batched(cublasHandle_t h, int n, T *const *a, int lda, int *piv, int *info,        \
                                            int count) {                                                               \
            return cublas##P##getrfBatched(h, n, a, lda, piv, info, count);                                            \
        }                                                                                                              \
        static cublasStatus_t getrs_batched(cublasHandle_t h, cublasOperation_t op, int n, int nrhs, T *const *a,      \
                                            int lda, const int *piv, T *const *b, int ldb, int *info, int count) {     \
            return cublas##P##getrsBatched(h, op, n, nrhs, (const T *const *)a, lda, piv, b, ldb, info, count);        \
        }                                                                                                              \
        static cusolverStatus_t potrf_batched(cusolverDnHandle_t h, cublasFillMode_t ul, int n, T **a, int lda,        \
                                              int *info, int count) {                                                  \
            return cusolverDn##P##potrfBatched(h, ul, n, a, lda, info, count);                                         \
        }                                                                                                              \
        static cusolverStatus_t orgqr_size(cusolverDnHandle_t h, int m, int n, int k, const T *a, int lda,             \
                                           const T *tau, int *lwork) {                                                 \
            return cusolverDn##P##ORGQR##_bufferSize(h, m, n, k, a, lda, tau, lwork);                                  \
        }                                                                                                              \
        static cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, T *a, int lda, const T *tau, T *work, \
                                      int lwork, int *info) {                                                          \
            return cusolverDn##P##ORGQR(h, m, n, k, a, lda, tau, work, lwork, info);                                   \
        }                                                                                                              \
        static cusolverStatus_t syevj_batched_size(cusolverDnHandle_t h, int n, const T *a, const real_t<T> *w,        \
                                                   int *lwork, syevjInfo_t p, int count) {                             \
            return cusolverDn##P##SYEVJ##Batched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, a, \
                                                            n, w, lwork, p, count);                                    \
        }                                                                                                              \
        static cusolverStatus_t syevj_batched(cusolverDnHandle_t h, int n, T *a, real_t<T> *w, T *work, int lwork,     \
                                              int *info, syevjInfo_t p, int count) {                                   \
            return cusolverDn##P##SYEVJ##Batched(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, a, n, w,      \
                                                 work, lwork, info, p, count);                                         \
        }                                                                                                              \
    };
EMI_LA_LIB(float, CUDA_R_32F, CUDA_R_32F, S, orgqr, syevj)
EMI_LA_LIB(double, CUDA_R_64F, CUDA_R_64F, D, orgqr, syevj)
EMI_LA_LIB(cuFloatComplex, CUDA_C_32F, CUDA_R_32F, C, ungqr, heevj)
EMI_LA_LIB(cuDoubleComplex, CUDA_C_64F, CUDA_R_64F, Z, ungqr, heevj)
#undef EMI_LA_LIB

// ---- errors -------------------------------------------------------------------

inline emily_status solver_status(const char *op, const char *routine, cusolverStatus_t st) {
    if (st == CUSOLVER_STATUS_SUCCESS && emi_cuda_fault_fire(EMI_CUDA_FAULT_LIBRARY))
        st = CUSOLVER_STATUS_EXECUTION_FAILED;
    if (st == CUSOLVER_STATUS_SUCCESS) return EMILY_OK;
    return emily_error(st == CUSOLVER_STATUS_ALLOC_FAILED ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE,
                       "cuda: %s: cuSOLVER %s failed (status %d)", op, routine, (int)st);
}

inline emily_status blas_status(const char *op, const char *routine, cublasStatus_t st) {
    if (st == CUBLAS_STATUS_SUCCESS && emi_cuda_fault_fire(EMI_CUDA_FAULT_LIBRARY)) st = CUBLAS_STATUS_EXECUTION_FAILED;
    if (st == CUBLAS_STATUS_SUCCESS) return EMILY_OK;
    return emily_error(st == CUBLAS_STATUS_ALLOC_FAILED ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE,
                       "cuda: %s: cuBLAS %s failed (%s)", op, routine, cublasGetStatusString(st));
}

// The libraries take int sizes (the 64-bit API aside).
inline emily_status check_int(const char *op, int64_t v, const char *what) {
    if (v > INT32_MAX)
        return emily_error(EMILY_ERR_SHAPE, "cuda: %s: %s %lld is too large for cuSOLVER/cuBLAS", op, what,
                           (long long)v);
    return EMILY_OK;
}

// ---- scratch ------------------------------------------------------------------

// The op's temporary device buffers, freed (in stream order) when it returns.
struct Pool {
    const emily_cuda_ctx *ctx;
    void *held[16];
    int n = 0;
    explicit Pool(const emily_cuda_ctx &c) : ctx(&c) {}
    ~Pool() {
        for (int i = 0; i < n; i++) emi_cuda_scratch_free(ctx, held[i]);
    }
    Pool(const Pool &) = delete;
    Pool &operator=(const Pool &) = delete;
    template <typename X> emily_status get(int64_t count, X **out) {
        if (n == 16) return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: too many scratch buffers", ctx->op);
        void *p = nullptr;
        size_t bytes = (size_t)(count > 0 ? count : 1) * sizeof(X);
        emily_status s = emi_cuda_scratch(ctx, bytes, &p);
        if (s) return s;
        held[n++] = p;
        *out = (X *)p;
        return EMILY_OK;
    }
};

// The handles of the op's stream.
struct Handles {
    cublasHandle_t blas = nullptr;
    cusolverDnHandle_t solver = nullptr;
    cusolverDnParams_t params = nullptr;
    emily_status get_blas(const emily_cuda_ctx &ctx) { return emi_cuda_cublas(&ctx, &blas); }
    emily_status get_solver(const emily_cuda_ctx &ctx) { return emi_cuda_cusolver(&ctx, &solver, &params); }
};

// A cuSOLVER parameter object (gesvdjInfo_t, syevjInfo_t), destroyed on
// return.
template <typename P, cusolverStatus_t (*Destroy)(P)> struct Owned {
    P p = nullptr;
    ~Owned() {
        if (p) Destroy(p);
    }
};

// Host workspace of the 64-bit API (usually none), freed on return.
struct HostWork {
    void *p = nullptr;
    ~HostWork() { free(p); }
    emily_status get(const char *op, size_t bytes) {
        if (!bytes || p) return EMILY_OK;
        p = malloc(bytes);
        if (!p) return emily_error(EMILY_ERR_MEMORY, "cuda: %s: out of host memory", op);
        return EMILY_OK;
    }
};

// A cuSOLVER 64-bit-API routine run on each of a batch of matrices in
// turn: size(&dev_bytes, &host_bytes) queries its work sizes, which come
// from the pool (device, held with the pool) and the heap (host, freed on
// return), then call(b, work, dev_bytes, host_work, host_bytes) runs it on
// matrix b. The first failure stops the batch.
template <typename Size, typename Call>
emily_status solver_each(const emily_cuda_ctx &ctx, Pool &pool, const char *routine, int64_t batch, Size &&size,
                         Call &&call) {
    size_t dev_bytes = 0, host_bytes = 0;
    emily_status s;
    if ((s = solver_status(ctx.op, routine, size(&dev_bytes, &host_bytes)))) return s;
    char *work;
    HostWork hw;
    if ((s = pool.get((int64_t)dev_bytes, &work)) || (s = hw.get(ctx.op, host_bytes))) return s;
    for (int64_t b = 0; b < batch; b++)
        if ((s = solver_status(ctx.op, routine, call(b, work, dev_bytes, hw.p, host_bytes)))) return s;
    return EMILY_OK;
}

// ---- small kernels shared by the ops -------------------------------------------

// out[i] = base + i * stride, the pointer arrays of the batched routines.
template <typename T> __global__ void fill_pointers(T **out, T *base, int64_t stride, int64_t count) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = base + i * stride;
}

template <typename T>
emily_status pointers(const emily_cuda_ctx &ctx, Pool &pool, T *base, int64_t stride, int64_t count, T ***out) {
    emily_status s = pool.get(count, out);
    if (s) return s;
    fill_pointers<T><<<grid_for(ctx.device, count), BLOCK, 0, ctx.stream>>>(*out, base, stride, count);
    return emi_cuda_launched(&ctx);
}

template <typename T> __global__ void set_all(T *x, int64_t count, T v) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = v;
}

// dst (row-major, per matrix rows x cols, leading dimension ldd) from src
// read column-major (element (r, c) at c * lds + r): dst[r][c] =
// f(b, r, c, src(r, f.col(b, c))). 32 x 32 tiles through shared memory,
// so both sides are read and written along their contiguous direction;
// f.col lets a transpose gather permuted columns (eigh's order).
constexpr int TILE = 32;

struct SameColumn {
    __device__ int64_t col(int64_t, int64_t c) const { return c; }
};

template <typename T, typename F>
__global__ void transpose_map(T *dst, const T *src, int64_t batch, int64_t rows, int64_t cols, int64_t ldd, int64_t lds,
                              int64_t dst_step, int64_t src_step, F f) {
    __shared__ T tile[TILE][TILE + 1];
    int64_t r0 = (int64_t)blockIdx.x * TILE, c0 = (int64_t)blockIdx.y * TILE;
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
        const T *s = src + b * src_step;
        // load: threads along r read down a column of src
        for (int j = threadIdx.y; j < TILE; j += blockDim.y) {
            int64_t r = r0 + threadIdx.x, c = c0 + j;
            if (r < rows && c < cols) tile[j][threadIdx.x] = s[f.col(b, c) * lds + r];
        }
        __syncthreads();
        // store: threads along c write along a row of dst
        for (int j = threadIdx.y; j < TILE; j += blockDim.y) {
            int64_t r = r0 + j, c = c0 + threadIdx.x;
            if (r < rows && c < cols) dst[b * dst_step + r * ldd + c] = f(b, r, c, tile[threadIdx.x][j]);
        }
        __syncthreads();
    }
}

template <typename T, typename F>
emily_status launch_transpose(const emily_cuda_ctx &ctx, T *dst, const T *src, int64_t batch, int64_t rows,
                              int64_t cols, int64_t ldd, int64_t lds, int64_t dst_step, int64_t src_step, F f) {
    if (batch <= 0 || rows <= 0 || cols <= 0) return EMILY_OK;
    int64_t gx = (rows + TILE - 1) / TILE, gy = (cols + TILE - 1) / TILE;
    if (gy > 65535) return emily_error(EMILY_ERR_SHAPE, "cuda: %s: %lld columns are too many", ctx.op, (long long)cols);
    int64_t gz = batch < 65535 ? batch : 65535;
    dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)gz), block(TILE, 8);
    transpose_map<T, F><<<grid, block, 0, ctx.stream>>>(dst, src, batch, rows, cols, ldd, lds, dst_step, src_step, f);
    return emi_cuda_launched(&ctx);
}

// The plain transpose and the conjugating one (as transpose_map functors).
template <typename T> struct Plain : SameColumn {
    __device__ T operator()(int64_t, int64_t, int64_t, T v) const { return v; }
};

// Per matrix, flag[b] = 1 if matrix b of x (per elements each) holds a
// NaN or an infinity, and then its copy in w is zeroed: the iterative
// solvers (svd, eigh) run on finite data, and the op writes NaN for those
// matrices afterwards (nan_where).
template <typename T> __global__ void flag_nonfinite(const T *x, int64_t batch, int64_t per, int *flag) {
    int64_t total = batch * per;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        if (!finite(x[i])) flag[i / per] = 1;
}

template <typename T> __global__ void nan_where(T *x, int64_t batch, int64_t per, const int *flag) {
    int64_t total = batch * per;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        if (flag[i / per]) x[i] = mk<T>(NAN, is_cx<T>() ? NAN : 0);
}

template <typename T> __global__ void zero_where(T *x, int64_t batch, int64_t per, const int *flag) {
    int64_t total = batch * per;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        if (flag[i / per]) x[i] = mk<T>(0);
}

// The first matrix whose solver reported a failure (info != 0), among
// the finite ones (flag 0): the iterative solvers' stragglers.
template <typename I>
__global__ void first_failed(const I *info, const int *flag, int64_t batch, unsigned long long *out) {
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < batch; b += (int64_t)gridDim.x * blockDim.x)
        if (info[b] != 0 && !flag[b]) atomicMin(out, (unsigned long long)b);
}

// After a Jacobi solve of a batch: *b0, the first straggler (first_failed
// into the device word `first`, which holds ~0 before), read back: ~0ull
// when every finite matrix converged.
inline emily_status first_straggler(const emily_cuda_ctx &ctx, const int *info, const int *flag, int64_t batch,
                                    unsigned long long *first, unsigned long long *b0) {
    first_failed<int><<<grid_for(ctx.device, batch), BLOCK, 0, ctx.stream>>>(info, flag, batch, first);
    emily_status s = emi_cuda_launched(&ctx);
    *b0 = 0;
    if (!s) s = read_back(ctx, b0, first, sizeof *b0);
    return s;
}

// Where there are stragglers: every matrix's info (*host [0, batch)) and
// non-finite flag (*host [batch, 2 batch)) in host memory the caller
// frees (NULL after a failure).
inline emily_status straggler_infos(const emily_cuda_ctx &ctx, const int *info, const int *flag, int64_t batch,
                                    int **host) {
    int *h = (int *)malloc((size_t)batch * 2 * sizeof(int));
    *host = NULL;
    if (!h) return emily_error(EMILY_ERR_MEMORY, "cuda: %s: out of host memory", ctx.op);
    emily_status s = read_back(ctx, h, info, (size_t)batch * sizeof(int));
    if (!s) s = read_back(ctx, h + batch, flag, (size_t)batch * sizeof(int));
    if (s) free(h);
    else *host = h;
    return s;
}

// Index of the largest |x| among count elements `stride` apart, the first
// of equals (NaN never wins), reduced by one block of LARGEST_THREADS.
constexpr int LARGEST_THREADS = 256;

template <typename T> __device__ int64_t block_largest(const T *x, int64_t count, int64_t stride) {
    __shared__ double mag[LARGEST_THREADS];
    __shared__ int64_t at[LARGEST_THREADS];
    double best = -1;
    int64_t where = INT64_MAX;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
        double m = (double)absv(x[i * stride]);
        if (m > best) {
            best = m;
            where = i;
        }
    }
    mag[threadIdx.x] = best;
    at[threadIdx.x] = where;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) {
            double m = mag[threadIdx.x + half];
            int64_t w = at[threadIdx.x + half];
            if (m > mag[threadIdx.x] || (m == mag[threadIdx.x] && w < at[threadIdx.x])) {
                mag[threadIdx.x] = m;
                at[threadIdx.x] = w;
            }
        }
        __syncthreads();
    }
    int64_t r = at[0] == INT64_MAX ? 0 : at[0];
    __syncthreads();
    return r;
}

// Runs f(offset, count) over [0, total) in pieces the int-sized batched
// routines accept.
template <typename F> emily_status in_chunks(int64_t total, F &&f) {
    const int64_t chunk = (int64_t)1 << 30;
    for (int64_t b0 = 0; b0 < total; b0 += chunk) {
        emily_status s = f(b0, (int)(total - b0 < chunk ? total - b0 : chunk));
        if (s) return s;
    }
    return EMILY_OK;
}

// ---- triangular_solve's zero pivots ----------------------------------------------

// The first exact zero on the diagonals of a (batch x n x n), by (matrix,
// row), into *bad.
template <typename T> __global__ void zero_diagonal(const T *a, int64_t batch, int64_t n, unsigned long long *bad) {
    int64_t total = batch * n;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = i / n, r = i % n;
        if (is_zero(a[b * n * n + r * n + r])) atomicMin(bad, (unsigned long long)i);
    }
}

// Queues the search for a zero pivot (*bad: all ones when there is none);
// the solve is queued after it and zero_pivot_error reports it at the end,
// so nothing waits in between.
template <typename T>
emily_status queue_zero_diagonal(const emily_cuda_ctx &ctx, Pool &pool, const T *a, int64_t batch, int64_t n,
                                 unsigned long long **bad) {
    emily_status s = pool.get(1, bad);
    if (s) return s;
    cudaError_t err = cudaMemsetAsync(*bad, 0xff, sizeof **bad, ctx.stream);
    if (err) return emi_cuda_error(ctx.op, err);
    zero_diagonal<T><<<grid_for(ctx.device, batch * n), BLOCK, 0, ctx.stream>>>(a, batch, n, *bad);
    return emi_cuda_launched(&ctx);
}

// Waits for the stream; the CPU's error for the first zero pivot, if any.
inline emily_status zero_pivot_error(const emily_cuda_ctx &ctx, const unsigned long long *bad, int64_t n) {
    unsigned long long v = 0;
    emily_status s = read_back(ctx, &v, bad, sizeof v);
    if (s || v == ~0ull) return s;
    return emily_error(EMILY_ERR_ARGUMENT,
                       "triangular_solve: can't solve for singular matrix (zero on the diagonal at row "
                       "%lld of matrix %lld)",
                       (long long)(v % (unsigned long long)n), (long long)(v / (unsigned long long)n));
}

} // namespace la
} // namespace emily_cuda

// The entry points (the family table is in linalg.cu).
// Nx.BinaryBackend's triangular_solve (linalg: :reference), the CPU
// kernel's contract: wide (f64/c128) contiguous a, b and x.
emily_status emi_cuda_triangular_solve_exact(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                                             bool b_vector, bool left_side, bool lower, emily_transform_a transform);
emily_status emi_cuda_lu_native(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a);
emily_status emi_cuda_solve_native(emily_tensor *x, const emily_tensor *a, const emily_tensor *b, bool b_vector);
emily_status emi_cuda_determinant_native(emily_tensor *det, const emily_tensor *a);
emily_status emi_cuda_cholesky_native(emily_tensor *l, const emily_tensor *a);
emily_status emi_cuda_triangular_solve_native(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                                              bool b_vector, bool left_side, bool lower, emily_transform_a transform);
emily_status emi_cuda_qr_native(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps);
emily_status emi_cuda_svd_native(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                                 bool full_matrices);
emily_status emi_cuda_eigh_native(emily_tensor *w, emily_tensor *v, const emily_tensor *a);

#endif
