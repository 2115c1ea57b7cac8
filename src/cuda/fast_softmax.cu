// The CUDA engine's fused softmax over the last axis (emily/ops_fast.h),
// one warp per row.
//
// Lane k of a row's warp takes elements k, k + 32, k + 64, ... (coalesced
// loads). The row's max is folded as reduce_max does (NaN wins), then
// each lane computes its exponentials e_j = X(exp(X(x_j - m))) through the
// very element function the unary exp kernel runs (cuda/unary_fns.cuh) and
// emily_binary's arithmetic (core/binary_kernels.h's loads and stores:
// f16/bf16 in f32), accumulates them in double (f64: in f64) in index
// order, and the warp combines its lanes with an xor butterfly (16, 8, 4,
// 2, 1): src/core/norm_rules.h's order, which the CPU kernel follows, so
// both devices give the same bits wherever their exp kernels agree. The
// exponentials are computed again for the output (the same bits) rather
// than kept: a row's register budget does not hold long rows.
#include "cuda/common.cuh"
#include "cuda/unary_fns.cuh"
#include "core/binary_kernels.h"
#include "core/norm_rules.h"
#include "core/softmax_types.h"

// In emily_cuda's own unnamed namespace, as the unary kernels are: a
// second unnamed namespace beside theirs makes the kernel's launch stub
// ambiguous.
namespace emily_cuda {
namespace {

constexpr int WARP = 32;
constexpr int ROWS_PER_BLOCK = BLOCK / WARP;
static_assert(EMI_NORM_LANES == WARP, "the row sums' partials are a warp's lanes");

// Per type: the storage, the compute type of the arithmetic (f32 for
// f16/bf16), the exp element function, the loads and stores.
template <emily_dtype X> struct sm;
#define EMI_SOFTMAX_TYPE_(E, s, T_, C, SUM_ST)                                                             \
    template <> struct sm<EMILY_##E> {                                                                     \
        typedef storage_t<EMILY_##E> T;                                                                    \
        typedef C compute;                                                                                 \
        static __device__ __forceinline__ C ld(T v) { return emi_bk_ld_##s(v); }                           \
        static __device__ __forceinline__ T st(C v) { return emi_bk_st_##s(v); }                           \
        static __device__ __forceinline__ T exp(T v) { return unary_kernels::uk_exp_##s##_##s::apply(v); } \
        static __device__ __forceinline__ T sum_st(double v) { return SUM_ST(v); }                         \
    };
EMI_SOFTMAX_TYPES(EMI_SOFTMAX_TYPE_)
#undef EMI_SOFTMAX_TYPE_

// The warp's lanes summed in norm_rules.h's order (every lane gets it).
template <typename A> __device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
    for (int s = WARP / 2; s >= 1; s /= 2) v = v + __shfl_xor_sync(0xffffffffu, v, s);
    return v;
}

template <emily_dtype X>
__global__ void __launch_bounds__(BLOCK)
    softmax_kernel(const storage_t<X> *__restrict__ x, storage_t<X> *__restrict__ y, int64_t rows, int64_t n) {
    typedef sm<X> S;
    typedef typename S::compute C;
    const int lane = (int)(threadIdx.x % WARP);
    const int64_t nwarps = (int64_t)gridDim.x * ROWS_PER_BLOCK;
    for (int64_t row = (int64_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP; row < rows; row += nwarps) {
        const storage_t<X> *xr = x + row * n;
        storage_t<X> *yr = y + row * n;
        C m = (C)-INFINITY;
        bool nan = false;
        for (int64_t j = lane; j < n; j += WARP) {
            C v = S::ld(xr[j]);
            nan |= v != v;
            m = v > m ? v : m;
        }
#pragma unroll
        for (int s = WARP / 2; s >= 1; s /= 2) {
            C o = __shfl_xor_sync(0xffffffffu, m, s);
            m = o > m ? o : m;
        }
        if (__any_sync(0xffffffffu, nan)) m = (C)NAN;
        // f16/bf16/f32 sums in double, f64 in f64 (the same type here)
        double acc = 0.0;
        for (int64_t j = lane; j < n; j += WARP) acc += (double)S::ld(S::exp(S::st(S::ld(xr[j]) - m)));
        C s = S::ld(S::sum_st(warp_sum(acc)));
        C r = S::ld(S::st((C)1 / s));
        for (int64_t j = lane; j < n; j += WARP) yr[j] = S::st(r * S::ld(S::exp(S::st(S::ld(xr[j]) - m))));
    }
}

emily_status cuda_softmax(emily_tensor *dst, const emily_tensor *x) {
    if (x->size == 0) return EMILY_OK;
    int64_t n = x->rank > 0 ? x->shape[x->rank - 1] : 0;
    bool ok = n > 0 && x->size % n == 0 && dst->size == x->size && dst->dtype == x->dtype &&
              emily_tensor_is_contiguous(x) && emily_tensor_is_contiguous(dst);
    if (!ok) return emily_error(EMILY_ERR_INTERNAL, "cuda: softmax: expects contiguous rows and an output of x's type");
    int64_t rows = x->size / n;
    emily_cuda_ctx ctx;
    emily_status s = begin_dst_src("softmax", dst, x, &ctx);
    if (s) return s;
    int64_t blocks = (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK, cap = (int64_t)emi_cuda_sm_count(ctx.device) * 32;
    unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
    const char *xp = base_of(x) + (size_t)x->offset * emily_dtype_size(x->dtype);
    char *yp = base_of(dst) + (size_t)dst->offset * emily_dtype_size(dst->dtype);
    s = with_dtype(x->dtype, "softmax", [&]<emily_dtype X>() -> emily_status {
        if constexpr (!is_float(X)) {
            return emily_error(EMILY_ERR_TYPE, "cuda: softmax: x must be a real float tensor");
        } else {
            softmax_kernel<X><<<grid, BLOCK, 0, ctx.stream>>>((const storage_t<X> *)xp, (storage_t<X> *)yp, rows, n);
            return EMILY_OK;
        }
    });
    if (s) return s;
    return emi_cuda_launched(&ctx);
}

} // namespace
} // namespace emily_cuda

extern "C" emily_status emi_cuda_softmax(emily_tensor *dst, const emily_tensor *x) {
    return emily_cuda::cuda_softmax(dst, x);
}
