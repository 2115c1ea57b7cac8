// The CUDA engine's scaled dot-product attention (emily/ops_fast.h,
// emily_sdpa).
//
// f16/bf16 with D = Dv in {64, 80, 96, 128} and 16-byte aligned rows run
// the flash-attention kernel on tensor cores (cuda/attention_flash.cuh).
// Everything else (f32, f64, other head sizes, Dv != D) runs a plain
// kernel: one warp per query row, the row's keys one after another, the
// warp's lanes splitting the dot over D and the output over Dv, with the
// same online softmax (running max, rescaled sums) in W and the
// probabilities rounded to T before they multiply v. It is there for
// coverage, not speed; outputs wider than 256 columns take several
// launches over column ranges, each recomputing the softmax.
#include "cuda/attention_flash.cuh"
#include "cuda/common.cuh"
#include "cuda/work_type.cuh"

using namespace emily_cuda;
using namespace emily_attention;

namespace {

// ---- the plain kernel -------------------------------------------------------

constexpr int ROWS_PER_BLOCK = 4;
constexpr int DV_CHUNK = 256; // output columns per launch
constexpr int PER_LANE = DV_CHUNK / 32;

template <typename W> __device__ __forceinline__ W exp_w(W x) {
    if constexpr (sizeof(W) == sizeof(double)) return exp(x);
    else return expf(x);
}

template <typename W> __device__ __forceinline__ W warp_sum(W v) {
#pragma unroll
    for (int s = 16; s >= 1; s /= 2) v += __shfl_xor_sync(0xffffffffu, v, s);
    return v;
}

struct PlainArgs {
    const void *q, *k, *v;
    void *o;
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    double scale;
    bool causal;
    int mask_kind; // MASK_NONE, MASK_ADD (in W), MASK_BOOL
    const void *mask;
    int64_t ms[4];
    const void *sinks; // {Hq} in W, or nullptr
    int64_t c0;        // the launch's first output column
};

template <emily_dtype T> __global__ void __launch_bounds__(ROWS_PER_BLOCK * 32) plain_kernel(const PlainArgs a) {
    typedef work_t<T> W;
    typedef storage_t<T> S;
    const int lane = threadIdx.x % 32;
    const int64_t row = (int64_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= a.B * a.Hq * a.Sq) return;
    const int64_t i = row % a.Sq, bh = row / a.Sq, b = bh / a.Hq, h = bh % a.Hq;
    const int64_t hk = h / (a.Hq / a.Hkv);
    const S *q = (const S *)a.q + row * a.D;
    const S *k = (const S *)a.k + (b * a.Hkv + hk) * a.Skv * a.D;
    const S *v = (const S *)a.v + (b * a.Hkv + hk) * a.Skv * a.Dv;
    const W s = (W)a.scale, ninf = (W)-INFINITY;
    int64_t nvis = a.Skv;
    if (a.causal) {
        int64_t last = i + a.Skv - a.Sq + 1;
        nvis = last < 0 ? 0 : last < a.Skv ? last : a.Skv;
    }
    const int64_t ncols = a.Dv - a.c0 < DV_CHUNK ? a.Dv - a.c0 : DV_CHUNK;
    const W sink = a.sinks ? ((const W *)a.sinks)[h] : ninf;
    W m = sink, l = 0, acc[PER_LANE];
#pragma unroll
    for (int c = 0; c < PER_LANE; c++) acc[c] = 0;
    bool seen = false;
    for (int64_t j = 0; j < nvis; j++) {
        W dot = 0;
        for (int64_t d = lane; d < a.D; d += 32) dot += load_work<T>(q[d]) * load_work<T>(k[j * a.D + d]);
        dot = warp_sum(dot);
        W x = dot * s;
        if (a.mask_kind != MASK_NONE) {
            int64_t off = b * a.ms[0] + h * a.ms[1] + i * a.ms[2] + j * a.ms[3];
            if (a.mask_kind == MASK_BOOL) x = ((const uint8_t *)a.mask)[off] ? x : ninf;
            else x = x + ((const W *)a.mask)[off];
        }
        if (x == ninf) continue; // masked: nothing to add, v not read
        seen = true;
        W mn = m != m ? m : (x > m || x != x ? x : m); // a NaN stays the max
        W corr = exp_w(m - mn), p = exp_w(x - mn);
        if (m == ninf) corr = 0; // first kept logit (mn finite): nothing to rescale
        l = l * corr + p;
        m = mn;
        W pt = round_work<T>(p);
#pragma unroll
        for (int c = 0; c < PER_LANE; c++) {
            int64_t d = lane + 32 * c;
            if (d < ncols) acc[c] = acc[c] * corr + pt * load_work<T>(v[j * a.Dv + a.c0 + d]);
        }
    }
    if (a.sinks) {
        W safe = m == ninf ? (W)0 : m;
        l += exp_w(sink - safe);
    }
    S *o = (S *)a.o + row * a.Dv + a.c0;
#pragma unroll
    for (int c = 0; c < PER_LANE; c++) {
        int64_t d = lane + 32 * c;
        if (d < ncols) o[d] = store_work<T>(seen && l != 0 ? acc[c] / l : (W)0);
    }
}

// ---- dispatch ------------------------------------------------------------------

template <bool BF16, int D, bool CAUSAL, int MASK>
emily_status launch_flash(const FlashArgs &fa, int64_t bh, int64_t sq, cudaStream_t stream, const char *op) {
    constexpr int NWARPS = 8;
    constexpr size_t smem = flash_smem_bytes<D, NWARPS>();
    auto kernel = flash_kernel<BF16, D, NWARPS, CAUSAL, MASK>;
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (err != cudaSuccess) return emi_cuda_error(op, err);
    dim3 grid((unsigned)bh, (unsigned)((sq + 16 * NWARPS - 1) / (16 * NWARPS)));
    kernel<<<grid, NWARPS * 32, smem, stream>>>(fa);
    return EMILY_OK;
}

template <bool BF16, int D>
emily_status flash_for(const FlashArgs &fa, bool causal, int mask, int64_t bh, int64_t sq, cudaStream_t stream,
                       const char *op) {
    if (causal) {
        if (mask == MASK_ADD) return launch_flash<BF16, D, true, MASK_ADD>(fa, bh, sq, stream, op);
        if (mask == MASK_BOOL) return launch_flash<BF16, D, true, MASK_BOOL>(fa, bh, sq, stream, op);
        return launch_flash<BF16, D, true, MASK_NONE>(fa, bh, sq, stream, op);
    }
    if (mask == MASK_ADD) return launch_flash<BF16, D, false, MASK_ADD>(fa, bh, sq, stream, op);
    if (mask == MASK_BOOL) return launch_flash<BF16, D, false, MASK_BOOL>(fa, bh, sq, stream, op);
    return launch_flash<BF16, D, false, MASK_NONE>(fa, bh, sq, stream, op);
}

template <bool BF16>
emily_status flash_by_d(const FlashArgs &fa, int64_t d, bool causal, int mask, int64_t bh, int64_t sq,
                        cudaStream_t stream, const char *op) {
    switch (d) {
    case 64: return flash_for<BF16, 64>(fa, causal, mask, bh, sq, stream, op);
    case 80: return flash_for<BF16, 80>(fa, causal, mask, bh, sq, stream, op);
    case 96: return flash_for<BF16, 96>(fa, causal, mask, bh, sq, stream, op);
    default: return flash_for<BF16, 128>(fa, causal, mask, bh, sq, stream, op);
    }
}

const char *elem_ptr(const emily_tensor *t) { return base_of(t) + (size_t)t->offset * emily_dtype_size(t->dtype); }

} // namespace

extern "C" emily_status emi_cuda_sdpa(emily_tensor *dst, const emily_tensor *q, const emily_tensor *k,
                                      const emily_tensor *v, const emily_sdpa_params *p) {
    static const char *op = "sdpa";
    emily_cuda_ctx ctx;
    const emily_tensor *ts[6] = {dst, q, k, v, p->mask, p->sinks};
    emily_status s = emi_cuda_begin(op, dev_of(dst), 6, ts, &ctx);
    if (s) return s;
    int mask = !p->mask ? MASK_NONE : p->mask->dtype == EMILY_U8 ? MASK_BOOL : MASK_ADD;
    int64_t ms[4] = {0, 0, 0, 0};
    if (p->mask) memcpy(ms, p->mask->strides, sizeof ms);
    const char *qp = elem_ptr(q), *kp = elem_ptr(k), *vp = elem_ptr(v);
    char *op_ = (char *)elem_ptr(dst);
    bool half = q->dtype == EMILY_F16 || q->dtype == EMILY_BF16;
    bool flash = half && p->D == p->Dv && (p->D == 64 || p->D == 80 || p->D == 96 || p->D == 128) && aligned16(qp) &&
                 aligned16(kp) && aligned16(vp) && aligned16(op_) && p->Sq <= (int64_t)65535 * 128 &&
                 p->B * p->Hq <= INT32_MAX;
    if (flash) {
        FlashArgs fa;
        fa.q = (const uint16_t *)qp, fa.k = (const uint16_t *)kp, fa.v = (const uint16_t *)vp;
        fa.o = (uint16_t *)op_;
        fa.Hq = p->Hq, fa.Hkv = p->Hkv, fa.Sq = p->Sq, fa.Skv = p->Skv;
        fa.scale = (float)p->scale;
        fa.mask = p->mask ? elem_ptr(p->mask) : nullptr;
        memcpy(fa.ms, ms, sizeof ms);
        fa.sinks = p->sinks ? (const float *)elem_ptr(p->sinks) : nullptr;
        int64_t bh = p->B * p->Hq;
        s = q->dtype == EMILY_BF16 ? flash_by_d<true>(fa, p->D, p->causal, mask, bh, p->Sq, ctx.stream, op)
                                   : flash_by_d<false>(fa, p->D, p->causal, mask, bh, p->Sq, ctx.stream, op);
        if (s) return s;
        return emi_cuda_launched(&ctx);
    }
    PlainArgs a;
    a.q = qp, a.k = kp, a.v = vp, a.o = op_;
    a.B = p->B, a.Hq = p->Hq, a.Hkv = p->Hkv, a.Sq = p->Sq, a.Skv = p->Skv, a.D = p->D, a.Dv = p->Dv;
    a.scale = p->scale;
    a.causal = p->causal;
    a.mask_kind = mask;
    a.mask = p->mask ? elem_ptr(p->mask) : nullptr;
    memcpy(a.ms, ms, sizeof ms);
    a.sinks = p->sinks ? elem_ptr(p->sinks) : nullptr;
    int64_t rows = p->B * p->Hq * p->Sq, blocks = (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK;
    if (blocks > INT32_MAX)
        return emily_error(EMILY_ERR_UNSUPPORTED, "cuda: %s: %lld query rows exceed one launch", op, (long long)rows);
    s = with_dtype(q->dtype, op, [&]<emily_dtype T>() -> emily_status {
        if constexpr (!is_float(T)) {
            return emily_error(EMILY_ERR_TYPE, "cuda: %s: q must be a real float tensor", op);
        } else {
            for (int64_t c0 = 0; c0 < p->Dv; c0 += DV_CHUNK) {
                a.c0 = c0;
                plain_kernel<T><<<(unsigned)blocks, ROWS_PER_BLOCK * 32, 0, ctx.stream>>>(a);
            }
            return EMILY_OK;
        }
    });
    if (s) return s;
    return emi_cuda_launched(&ctx);
}
