// The CUDA engine's rotary position embedding (emily/ops_fast.h,
// emily_rope): one block per token (grid-stride over tokens), a thread per
// frequency pair, which computes its angle's cos and sin once and rotates
// that pair in every head of the token.
//
// The steps are core/rope_rules.h's, which the CPU kernel shares, with no
// contraction into FMAs (--fmad=false); cos and sin are computed in double
// by the engine's nearly correctly rounded double-double sincos
// (cuda/correctly_rounded.cuh: |angle| < 2^30, the device's own sin/cos
// beyond) and rounded to f32, where the CPU calls glibc's (correctly
// rounded but for rare inputs): both round to the same f32 but where a
// double result falls within an ULP or two of an f32 rounding boundary.
#include "cuda/common.cuh"
#include "cuda/correctly_rounded.cuh"
#include "core/rope_rules.h"

// In emily_cuda's own unnamed namespace, as the softmax kernel is.
namespace emily_cuda {
namespace {

constexpr int ROPE_THREADS = 128;

template <emily_dtype X> struct rope_type;
#define EMI_ROPE_TYPE_(E, sfx)                                                                                         \
    template <> struct rope_type<EMILY_##E> {                                                                          \
        typedef storage_t<EMILY_##E> T;                                                                                \
        static __device__ __forceinline__ void pair(T *u, T *v, float c, float s) { emi_rope_pair_##sfx(u, v, c, s); } \
    };
EMI_ROPE_TYPE_(F16, f16)
EMI_ROPE_TYPE_(BF16, bf16)
EMI_ROPE_TYPE_(F32, f32)
EMI_ROPE_TYPE_(F64, f64)
#undef EMI_ROPE_TYPE_

template <emily_dtype X>
__global__ void __launch_bounds__(ROPE_THREADS)
    rope_kernel(const storage_t<X> *__restrict__ x, storage_t<X> *__restrict__ y, const int64_t *__restrict__ pos,
                const float *__restrict__ inv, emily_rope_params p, int64_t tokens) {
    typedef storage_t<X> T;
    const int64_t h = p.dims / 2;
    for (int64_t tok = blockIdx.x; tok < tokens; tok += gridDim.x) {
        const int64_t s = tok % p.S;
        const double pf = emi_rope_position(pos[p.batched_positions ? tok : s], p.linear, p.linear_factor);
        const T *xt = x + tok * p.H * p.D;
        T *yt = y + tok * p.H * p.D;
        for (int64_t i = threadIdx.x; i < h; i += blockDim.x) {
            const double a = (double)emi_rope_angle(pf, inv[i]);
            double sn, cs;
            if (!emily_cr::cr_sincos(a, sn, cs)) {
                sn = sin(a);
                cs = cos(a);
            }
            const float c32 = (float)cs, s32 = (float)sn;
            const int64_t iu = p.traditional ? 2 * i : i, iv = p.traditional ? 2 * i + 1 : i + h;
            for (int64_t hd = 0; hd < p.H; hd++) {
                T u = xt[hd * p.D + iu], v = xt[hd * p.D + iv];
                rope_type<X>::pair(&u, &v, c32, s32);
                yt[hd * p.D + iu] = u;
                yt[hd * p.D + iv] = v;
            }
        }
        for (int64_t j = p.dims + threadIdx.x; j < p.D; j += blockDim.x)
            for (int64_t hd = 0; hd < p.H; hd++) yt[hd * p.D + j] = xt[hd * p.D + j];
    }
}

emily_status cuda_rope(emily_tensor *dst, const emily_tensor *x, const emily_tensor *positions,
                       const emily_tensor *inv_freq, const emily_rope_params *p) {
    if (x->size == 0) return EMILY_OK;
    bool ok = x->rank == 4 && dst->size == x->size && dst->dtype == x->dtype && positions->dtype == EMILY_S64 &&
              inv_freq->dtype == EMILY_F32 && emily_tensor_is_contiguous(x) && emily_tensor_is_contiguous(dst) &&
              emily_tensor_is_contiguous(positions) && emily_tensor_is_contiguous(inv_freq);
    if (!ok)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: rope: expects contiguous x, s64 positions, an f32 table and an "
                                               "output of x's type");
    emily_cuda_ctx ctx;
    const emily_tensor *ts[4] = {dst, x, positions, inv_freq};
    emily_status s = emi_cuda_begin("rope", dev_of(dst), 4, ts, &ctx);
    if (s) return s;
    const int64_t tokens = p->B * p->S, cap = (int64_t)emi_cuda_sm_count(ctx.device) * 32;
    const unsigned grid = (unsigned)(tokens < cap ? tokens : cap);
    const int64_t h = p->dims / 2, rest = p->D - p->dims, wide = h > rest ? h : rest;
    const int threads = wide >= ROPE_THREADS ? ROPE_THREADS : (int)((wide + 31) / 32 * 32);
    const int block = threads > 0 ? threads : 32;
    auto at = [](const emily_tensor *t) { return base_of(t) + (size_t)t->offset * emily_dtype_size(t->dtype); };
    const int64_t *pp = (const int64_t *)at(positions);
    const float *ip = (const float *)at(inv_freq);
    const char *xp = at(x);
    char *yp = at(dst);
    s = with_dtype(x->dtype, "rope", [&]<emily_dtype X>() -> emily_status {
        if constexpr (!is_float(X)) {
            return emily_error(EMILY_ERR_TYPE, "cuda: rope: x must be a real float tensor");
        } else {
            rope_kernel<X>
                <<<grid, block, 0, ctx.stream>>>((const storage_t<X> *)xp, (storage_t<X> *)yp, pp, ip, *p, tokens);
            return EMILY_OK;
        }
    });
    if (s) return s;
    return emi_cuda_launched(&ctx);
}

} // namespace
} // namespace emily_cuda

extern "C" emily_status emi_cuda_rope(emily_tensor *dst, const emily_tensor *x, const emily_tensor *positions,
                                      const emily_tensor *inv_freq, const emily_rope_params *p) {
    return emily_cuda::cuda_rope(dst, x, positions, inv_freq, p);
}
