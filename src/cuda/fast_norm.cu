// The CUDA engine's fused normalizations (emily/ops_fast.h): layer_norm and
// rms_norm, one warp per row.
//
// Lane k of a row's warp takes elements k, k + 32, k + 64, ... (coalesced
// loads), accumulates them in double (f64 rows: in f64) from 0.0 in that
// order, and the warp combines its lanes with an xor butterfly (offsets 16,
// 8, 4, 2, 1), after which every lane holds the row's sum: exactly the order
// of src/core/norm_rules.h, which the CPU engine follows too, so the two
// devices give the same bits. Everything after the sums (the mean, the
// scale, the affine step and every rounding) is the header's expression
// through norm_rules.h's shared helpers; the build's --fmad=false keeps
// products and sums separately rounded as on the CPU.
//
// Rows of up to 4096 elements of f16/bf16/f32 are read from memory once
// into the lanes' registers (8, 32 or 128 a lane), where the passes take
// them; longer rows and f64 rows are read at each pass (twice for rms_norm,
// three times for layer_norm, from L1/L2 after the first). Blocks hold 8
// warps and stride over the rows when there are more rows than the grid has
// warps. Reading at each pass ran at 0.54 (rms) and 0.42 (layer) of the copy
// bandwidth on the H200 (bf16 16384 x 4096, bench/gpu); a staged version
// (each warp's row copied into shared memory with 16-byte loads, the same
// sums over that copy, 16-byte stores) was slower still (0.48 and 0.30: 64
// KB of shared memory a block left 24 warps an SM, each row's phases in
// series) and was not kept.
#include "cuda/common.cuh"
#include "cuda/work_type.cuh"
#include "core/norm_rules.h"

using namespace emily_cuda;

namespace {

constexpr int WARP = 32;
constexpr int ROWS_PER_BLOCK = BLOCK / WARP;
static_assert(EMI_NORM_LANES == WARP, "the row sums' partials are a warp's lanes");

// W, the statistics type of x's dtype X; A, the affine type of the output O.
// (both work_type.cuh's work type, with its loads, roundings and stores)
template <emily_dtype X> using stat_t = work_t<X>;
template <emily_dtype O> using affine_t = work_t<O>;

// The warp's lanes summed in norm_rules.h's order (every lane gets it).
__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
    for (int s = WARP / 2; s >= 1; s /= 2) v = v + __shfl_xor_sync(0xffffffffu, v, s);
    return v;
}

template <typename W> __device__ __forceinline__ W mean_of(double sum, int64_t n) {
    if constexpr (sizeof(W) == sizeof(double)) return emi_norm_mean_f64(sum, n);
    else return emi_norm_mean_f32(sum, n);
}

// A row's elements as lane `lane` sees them: k = lane, lane + 32, ... in
// that order. PER > 0 keeps them in registers (PER a lane at most, read from
// memory once); PER = 0 reads the row from memory at each pass. Both give
// the same values in the same order, so the sums below do not depend on it.
template <emily_dtype X, int PER> struct RowView {
    storage_t<X> v[PER > 0 ? PER : 1];
    const storage_t<X> *xr;
    int64_t n;
    int lane;
    __device__ __forceinline__ RowView(const storage_t<X> *row, int64_t len, int l) : xr(row), n(len), lane(l) {
        if constexpr (PER > 0) {
#pragma unroll
            for (int i = 0; i < PER; i++) {
                int64_t j = lane + (int64_t)i * WARP;
                v[i] = j < n ? xr[j] : storage_t<X>{};
            }
        }
    }
    // f(j, element j) for each of the lane's elements in order
    template <typename F> __device__ __forceinline__ void each(F f) const {
        if constexpr (PER > 0) {
#pragma unroll
            for (int i = 0; i < PER; i++) {
                int64_t j = lane + (int64_t)i * WARP;
                if (j < n) f(j, v[i]);
            }
        } else {
            for (int64_t j = lane; j < n; j += WARP) f(j, xr[j]);
        }
    }
};

// The mean of (x - m)^2 over a row, each square rounded to W, summed in
// double by the lanes then the warp (m = 0 for rms_norm: x - 0 is x, bit
// for bit, negative zero included).
template <emily_dtype X, typename W, int PER>
__device__ __forceinline__ W mean_square(const RowView<X, PER> &row, int64_t n, W m) {
    double acc = 0.0;
    row.each([&](int64_t, storage_t<X> xv) {
        W c = load_work<X>(xv) - m;
        W sq = c * c;
        acc += (double)sq;
    });
    return mean_of<W>(warp_sum(acc), n);
}

template <emily_dtype X, emily_dtype O, bool RMS, int PER>
__global__ void __launch_bounds__(BLOCK)
    norm_kernel(const storage_t<X> *__restrict__ x, storage_t<O> *__restrict__ y, const affine_t<O> *__restrict__ g,
                const affine_t<O> *__restrict__ b, int64_t rows, int64_t n, stat_t<X> e) {
    typedef stat_t<X> W;
    typedef affine_t<O> A;
    const int lane = (int)(threadIdx.x % WARP);
    const int64_t nwarps = (int64_t)gridDim.x * ROWS_PER_BLOCK;
    for (int64_t row = (int64_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP; row < rows; row += nwarps) {
        const RowView<X, PER> xr(x + row * n, n, lane);
        storage_t<O> *yr = y + row * n;
        if constexpr (RMS) {
            W ms = mean_square<X, W, PER>(xr, n, (W)0), r;
            if constexpr (sizeof(W) == sizeof(double)) r = emi_rms_norm_r_f64(ms, e);
            else r = emi_rms_norm_r_f32(ms, e);
            xr.each([&](int64_t j, storage_t<X> xv) {
                W z = round_work<X>(load_work<X>(xv) * r);
                A v = (A)z * g[j];
                yr[j] = store_work<O>(v);
            });
        } else {
            double acc = 0.0;
            xr.each([&](int64_t, storage_t<X> xv) { acc += (double)load_work<X>(xv); });
            W m = mean_of<W>(warp_sum(acc), n);
            W var = mean_square<X, W, PER>(xr, n, m), r;
            if constexpr (sizeof(W) == sizeof(double)) r = emi_layer_norm_r_f64(var, e);
            else r = emi_layer_norm_r_f32(var, e);
            xr.each([&](int64_t j, storage_t<X> xv) {
                W c = load_work<X>(xv) - m;
                A s = g[j] * (A)r;
                A p = s * (A)c;
                yr[j] = store_work<O>(b ? p + b[j] : p);
            });
        }
    }
}

// Launches the kernel whose register row holds n: rows of up to 4096
// elements of 2- or 4-byte types stay in registers (read once), longer rows
// and f64 ones are read at each pass.
template <emily_dtype X, emily_dtype O, bool RMS>
void launch_norm(unsigned grid, cudaStream_t stream, const storage_t<X> *x, storage_t<O> *y, const affine_t<O> *g,
                 const affine_t<O> *b, int64_t rows, int64_t n, stat_t<X> e) {
    if constexpr (X != EMILY_F64) {
        if (n <= 8 * WARP) return norm_kernel<X, O, RMS, 8><<<grid, BLOCK, 0, stream>>>(x, y, g, b, rows, n, e);
        if (n <= 32 * WARP) return norm_kernel<X, O, RMS, 32><<<grid, BLOCK, 0, stream>>>(x, y, g, b, rows, n, e);
        if (n <= 128 * WARP) return norm_kernel<X, O, RMS, 128><<<grid, BLOCK, 0, stream>>>(x, y, g, b, rows, n, e);
    }
    norm_kernel<X, O, RMS, 0><<<grid, BLOCK, 0, stream>>>(x, y, g, b, rows, n, e);
}

emily_status cuda_norm(const char *op, bool rms, emily_tensor *dst, const emily_tensor *x, const emily_tensor *g,
                       const emily_tensor *b, double eps) {
    if (x->size == 0) return EMILY_OK;
    int64_t n = x->rank > 0 ? x->shape[x->rank - 1] : 0;
    emily_dtype atype = dst->dtype == EMILY_F64 ? EMILY_F64 : EMILY_F32;
    bool ok = n > 0 && x->size % n == 0 && dst->size == x->size && emily_tensor_is_contiguous(x) &&
              emily_tensor_is_contiguous(dst) && g && g->size == n && g->dtype == atype &&
              emily_tensor_is_contiguous(g) &&
              (!b || (b->size == n && b->dtype == atype && emily_tensor_is_contiguous(b)));
    if (!ok)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: expects contiguous rows and vectors of the affine type", op);
    int64_t rows = x->size / n;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[4] = {dst, x, g, b};
    emily_status s = emi_cuda_begin(op, dev_of(dst), 4, ts, &ctx);
    if (s) return s;
    int64_t blocks = (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, cap = (int64_t)emi_cuda_sm_count(ctx.device) * 32;
    unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
    const char *xp = base_of(x) + (size_t)x->offset * emily_dtype_size(x->dtype);
    char *yp = base_of(dst) + (size_t)dst->offset * emily_dtype_size(dst->dtype);
    const char *gp = base_of(g) + (size_t)g->offset * emily_dtype_size(g->dtype);
    const char *bp = b ? base_of(b) + (size_t)b->offset * emily_dtype_size(b->dtype) : nullptr;
    s = with_dtype(x->dtype, op, [&]<emily_dtype X>() -> emily_status {
        if constexpr (!is_float(X)) {
            return emily_error(EMILY_ERR_TYPE, "cuda: %s: x must be a real float tensor", op);
        } else {
            return with_dtype(dst->dtype, op, [&]<emily_dtype O>() -> emily_status {
                // an f64 x makes an f64 output (the merge of the types)
                if constexpr (!is_float(O) || (X == EMILY_F64 && O != EMILY_F64)) {
                    return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: a %s x cannot give a %s output", op,
                                       emily_dtype_name(X), emily_dtype_name(O));
                } else {
                    typedef affine_t<O> A;
                    auto xs = (const storage_t<X> *)xp;
                    auto ys = (storage_t<O> *)yp;
                    auto e = (stat_t<X>)eps;
                    if (rms) launch_norm<X, O, true>(grid, ctx.stream, xs, ys, (const A *)gp, nullptr, rows, n, e);
                    else launch_norm<X, O, false>(grid, ctx.stream, xs, ys, (const A *)gp, (const A *)bp, rows, n, e);
                    return EMILY_OK;
                }
            });
        }
    });
    if (s) return s;
    return emi_cuda_launched(&ctx);
}

emily_status cuda_layer_norm(emily_tensor *dst, const emily_tensor *x, const emily_tensor *gamma,
                             const emily_tensor *beta, double eps) {
    return cuda_norm("layer_norm", false, dst, x, gamma, beta, eps);
}

emily_status cuda_rms_norm(emily_tensor *dst, const emily_tensor *x, const emily_tensor *gamma, double eps) {
    return cuda_norm("rms_norm", true, dst, x, gamma, nullptr, eps);
}

} // namespace

// sdpa: src/cuda/attention.cu; softmax: src/cuda/fast_softmax.cu
extern "C" const struct emily_fast_kernels emi_cuda_fast_kernels = {cuda_layer_norm, cuda_rms_norm, emi_cuda_sdpa,
                                                                    emi_cuda_softmax, emi_cuda_rope};
