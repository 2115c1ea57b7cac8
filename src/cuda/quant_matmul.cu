// The CUDA engine's quantization kernels (emily/ops_quant.h, the quant
// family of src/core/kernels.h). Every scalar step is core/quant_rules.h's,
// shared with the CPU, and the build's --fmad=false keeps q * s + b two
// roundings, so ranges, codes and dequantized weights are the CPU's bits;
// the matmul's sums are in another order than the CPU's (the header allows
// a reordered sum).
//
// ranges: a thread per group. quantize: a thread per packed byte.
// dequantize: a thread per weight. All with grid-stride loops.
//
// matmul, transposed (a dense layer, W {N, K}):
//  - decode-size x (M <= GEMV_ROWS): a warp per output column n. Lane l
//    takes the row's packed bytes l, l + 32, ... (coalesced, each byte read
//    once), decodes its 8 / bits weights and adds x[m, k] * w into one
//    accumulator per row of x; the warp then sums its lanes (xor
//    butterfly). The packed matrix is read once.
//  - more rows: 16 x 16 output tiles; per 32-wide step of K a block stages
//    16 rows of x and decodes 16 x 32 weights into shared memory, each
//    thread then sums its output's 32 products. Correctness first: no
//    register tiling yet.
// matmul, not transposed (W {K, N}, quantized along N): a thread per
// output (threads along n read neighbouring codes), a loop over k.
#include "cuda/common.cuh"
#include "core/quant_rules.h"

using namespace emily_cuda;

namespace {

constexpr int WARP = 32;
constexpr int GEMV_ROWS = 8;
constexpr int GEMV_WARPS = 8; // warps (output columns) per block
constexpr int TILE = 16;
constexpr int TILE_K = 32; // divides every group size

template <typename W> __device__ __forceinline__ W quant_scale(W lo, W hi, int bits);
template <> __device__ __forceinline__ float quant_scale(float lo, float hi, int bits) {
    return emi_quant_scale_f32(lo, hi, bits);
}
template <> __device__ __forceinline__ double quant_scale(double lo, double hi, int bits) {
    return emi_quant_scale_f64(lo, hi, bits);
}
__device__ __forceinline__ float quant_bias(float lo, float hi) { return emi_quant_bias_f32(lo, hi); }
__device__ __forceinline__ double quant_bias(double lo, double hi) { return emi_quant_bias_f64(lo, hi); }
__device__ __forceinline__ unsigned quant_code(float w, float s, float b, int bits) {
    return emi_quant_code_f32(w, s, b, bits);
}
__device__ __forceinline__ unsigned quant_code(double w, double s, double b, int bits) {
    return emi_quant_code_f64(w, s, b, bits);
}
__device__ __forceinline__ float decode(unsigned q, float s, float b) { return emi_quant_decode_f32(q, s, b); }
__device__ __forceinline__ double decode(unsigned q, double s, double b) { return emi_quant_decode_f64(q, s, b); }

template <typename W>
__global__ void ranges_kernel(const W *w, W *scales, W *biases, int64_t groups_total, int64_t cols, int64_t gs,
                              int bits) {
    int64_t groups = cols / gs;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < groups_total;
         i += (int64_t)gridDim.x * blockDim.x) {
        const W *v = w + (i / groups) * cols + (i % groups) * gs;
        W lo = (W)INFINITY, hi = (W)-INFINITY;
        for (int64_t j = 0; j < gs; j++) { // NaNs compare false: skipped
            if (v[j] < lo) lo = v[j];
            if (v[j] > hi) hi = v[j];
        }
        scales[i] = quant_scale<W>(lo, hi, bits);
        biases[i] = quant_bias(lo, hi);
    }
}

template <typename W>
__global__ void codes_kernel(const W *w, const W *scales, const W *biases, uint8_t *q, int64_t nbytes_total,
                             int64_t cols, int64_t gs, int bits) {
    int per = 8 / bits;
    int64_t row_bytes = cols / per, groups = cols / gs;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nbytes_total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / row_bytes, c0 = (i % row_bytes) * per;
        unsigned byte = 0;
        for (int e = 0; e < per; e++) {
            int64_t k = c0 + e, g = r * groups + k / gs;
            byte |= quant_code(w[r * cols + k], scales[g], biases[g], bits) << (e * bits);
        }
        q[i] = (uint8_t)byte;
    }
}

template <typename W>
__global__ void decode_kernel(const uint8_t *q, const W *scales, const W *biases, W *out, int64_t total, int64_t cols,
                              int64_t gs, int bits) {
    int64_t row_bytes = cols * bits / 8, groups = cols / gs;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / cols, k = i % cols, g = r * groups + k / gs;
        out[i] = decode(emi_quant_unpack(q + r * row_bytes, k, bits), scales[g], biases[g]);
    }
}

// Transposed, few rows of x: a warp per output column n.
template <typename W>
__global__ void __launch_bounds__(GEMV_WARPS *WARP)
    gemv_kernel(const W *x, const uint8_t *q, const W *scales, const W *biases, W *dst, int64_t m, int64_t n, int64_t k,
                int64_t gs, int bits) {
    int lane = threadIdx.x % WARP;
    int64_t col = blockIdx.x * (int64_t)GEMV_WARPS + threadIdx.x / WARP;
    if (col >= n) return;
    int per = 8 / bits;
    unsigned mask = (1u << bits) - 1u;
    int64_t row_bytes = k * bits / 8, groups = k / gs;
    const uint8_t *qrow = q + col * row_bytes;
    const W *srow = scales + col * groups, *brow = biases + col * groups;
    for (int64_t m0 = 0; m0 < m; m0 += GEMV_ROWS) {
        int mr = m - m0 < GEMV_ROWS ? (int)(m - m0) : GEMV_ROWS;
        W acc[GEMV_ROWS];
#pragma unroll
        for (int r = 0; r < GEMV_ROWS; r++) acc[r] = 0;
        for (int64_t i = lane; i < row_bytes; i += WARP) {
            unsigned byte = qrow[i];
            int64_t k0 = i * per, g = k0 / gs;
            W s = srow[g], b = brow[g];
            for (int e = 0; e < per; e++) {
                W wv = decode((byte >> (e * bits)) & mask, s, b);
#pragma unroll
                for (int r = 0; r < GEMV_ROWS; r++)
                    if (r < mr) acc[r] += x[(m0 + r) * k + k0 + e] * wv;
            }
        }
#pragma unroll
        for (int r = 0; r < GEMV_ROWS; r++) {
            W v = acc[r];
            for (int o = WARP / 2; o >= 1; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
            if (lane == 0 && r < mr) dst[(m0 + r) * n + col] = v;
        }
    }
}

// Transposed, many rows: 16 x 16 output tiles through shared memory.
template <typename W>
__global__ void __launch_bounds__(TILE *TILE)
    tiled_kernel(const W *x, const uint8_t *q, const W *scales, const W *biases, W *dst, int64_t m, int64_t n,
                 int64_t k, int64_t gs, int bits) {
    __shared__ W xs[TILE][TILE_K + 1];
    __shared__ W ws[TILE][TILE_K + 1];
    int tx = threadIdx.x, ty = threadIdx.y, t = ty * TILE + tx;
    int64_t m0 = blockIdx.y * (int64_t)TILE, n0 = blockIdx.x * (int64_t)TILE;
    int64_t row_bytes = k * bits / 8, groups = k / gs;
    W acc = 0;
    for (int64_t k0 = 0; k0 < k; k0 += TILE_K) {
        // 256 threads stage 16 x 32 of x and decode 16 x 32 weights: two each
        for (int e = t; e < TILE * TILE_K; e += TILE * TILE) {
            int r = e / TILE_K, c = e % TILE_K;
            int64_t gm = m0 + r, gn = n0 + r, gk = k0 + c;
            xs[r][c] = gm < m ? x[gm * k + gk] : (W)0;
            ws[r][c] = gn < n ? decode(emi_quant_unpack(q + gn * row_bytes, gk, bits), scales[gn * groups + gk / gs],
                                       biases[gn * groups + gk / gs])
                              : (W)0;
        }
        __syncthreads();
#pragma unroll 8
        for (int c = 0; c < TILE_K; c++) acc += xs[ty][c] * ws[tx][c];
        __syncthreads();
    }
    int64_t gm = m0 + ty, gn = n0 + tx;
    if (gm < m && gn < n) dst[gm * n + gn] = acc;
}

// Not transposed: W {K, N} quantized along N; a thread per output.
template <typename W>
__global__ void columns_kernel(const W *x, const uint8_t *q, const W *scales, const W *biases, W *dst, int64_t m,
                               int64_t n, int64_t k, int64_t gs, int bits) {
    int64_t row_bytes = n * bits / 8, groups = n / gs;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t mi = i / n, c = i % n, g = c / gs;
        W acc = 0;
        for (int64_t kk = 0; kk < k; kk++)
            acc += x[mi * k + kk] * decode(emi_quant_unpack(q + kk * row_bytes, c, bits), scales[kk * groups + g],
                                           biases[kk * groups + g]);
        dst[i] = acc;
    }
}

template <typename T> T *ptr(const emily_tensor *t) {
    return (T *)(base_of(t) + (size_t)t->offset * emily_dtype_size(t->dtype));
}

bool is_wide(const emily_tensor *t) { return t->dtype == EMILY_F32 || t->dtype == EMILY_F64; }

// Runs fn.template operator()<W>() for the compute type of t (f32 or f64).
template <typename F> emily_status with_work(const char *op, const emily_tensor *t, F &&fn) {
    if (t->dtype == EMILY_F32) return fn.template operator()<float>();
    if (t->dtype == EMILY_F64) return fn.template operator()<double>();
    return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: expects f32 or f64 operands, got %s", op,
                       emily_dtype_name(t->dtype));
}

// The start and end every quant kernel but the product shares: nothing
// for an empty out, emi_cuda_begin over ts on on's device, then
// launch.template operator()<W>(ctx) for typed's work type (f32 or f64)
// and the launch check.
template <int N, typename F>
emily_status run_work(const char *op, const emily_tensor *out, const emily_tensor *on, const emily_tensor *typed,
                      const emily_tensor *const (&ts)[N], F &&launch) {
    if (out->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    emily_status s = emi_cuda_begin(op, dev_of(on), N, ts, &ctx);
    if (s) return s;
    s = with_work(op, typed, [&]<typename W>() -> emily_status { return launch.template operator()<W>(ctx); });
    return s ? s : emi_cuda_launched(&ctx);
}

emily_status cuda_ranges(emily_tensor *scales, emily_tensor *biases, const emily_tensor *w, int bits, int64_t gs) {
    const emily_tensor *ts[3] = {scales, biases, w};
    return run_work("quantize", scales, w, w, ts, [&]<typename W>(const emily_cuda_ctx &ctx) -> emily_status {
        ranges_kernel<W><<<grid_for(ctx.device, scales->size), BLOCK, 0, ctx.stream>>>(
            ptr<W>(w), ptr<W>(scales), ptr<W>(biases), scales->size, w->shape[1], gs, bits);
        return EMILY_OK;
    });
}

emily_status cuda_quantize(emily_tensor *q, const emily_tensor *w, const emily_tensor *scales,
                           const emily_tensor *biases, int bits, int64_t gs) {
    const emily_tensor *ts[4] = {q, w, scales, biases};
    return run_work("quantize", q, w, w, ts, [&]<typename W>(const emily_cuda_ctx &ctx) -> emily_status {
        codes_kernel<W><<<grid_for(ctx.device, q->size), BLOCK, 0, ctx.stream>>>(
            ptr<W>(w), ptr<W>(scales), ptr<W>(biases), ptr<uint8_t>(q), q->size, w->shape[1], gs, bits);
        return EMILY_OK;
    });
}

emily_status cuda_dequantize(emily_tensor *dst, const emily_tensor *q, const emily_tensor *scales,
                             const emily_tensor *biases, int bits, int64_t gs) {
    const emily_tensor *ts[4] = {dst, q, scales, biases};
    return run_work("dequantize", dst, dst, dst, ts, [&]<typename W>(const emily_cuda_ctx &ctx) -> emily_status {
        decode_kernel<W><<<grid_for(ctx.device, dst->size), BLOCK, 0, ctx.stream>>>(
            ptr<uint8_t>(q), ptr<W>(scales), ptr<W>(biases), ptr<W>(dst), dst->size, dst->shape[1], gs, bits);
        return EMILY_OK;
    });
}

emily_status cuda_matmul(emily_tensor *dst, const emily_tensor *x, const emily_tensor *q, const emily_tensor *scales,
                         const emily_tensor *biases, int bits, int64_t gs, bool transpose) {
    if (dst->size == 0) return EMILY_OK;
    if (!is_wide(dst) || x->dtype != dst->dtype || scales->dtype != dst->dtype)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: quantized_matmul: expects x, scales and dst of one type");
    emily_cuda_ctx ctx;
    const emily_tensor *ts[5] = {dst, x, q, scales, biases};
    emily_status s = emi_cuda_begin("quantized_matmul", dev_of(dst), 5, ts, &ctx);
    if (s) return s;
    int64_t m = dst->shape[0], n = dst->shape[1], k = x->shape[1];
    s = with_work("quantized_matmul", dst, [&]<typename W>() -> emily_status {
        const W *xp = ptr<W>(x), *sp = ptr<W>(scales), *bp = ptr<W>(biases);
        const uint8_t *qp = ptr<uint8_t>(q);
        W *dp = ptr<W>(dst);
        if (!transpose) {
            columns_kernel<W>
                <<<grid_for(ctx.device, m * n), BLOCK, 0, ctx.stream>>>(xp, qp, sp, bp, dp, m, n, k, gs, bits);
        } else if (m <= 4 * GEMV_ROWS) {
            unsigned grid = (unsigned)((n + GEMV_WARPS - 1) / GEMV_WARPS);
            gemv_kernel<W><<<grid, GEMV_WARPS * WARP, 0, ctx.stream>>>(xp, qp, sp, bp, dp, m, n, k, gs, bits);
        } else {
            if ((m + TILE - 1) / TILE > 65535)
                return emily_error(EMILY_ERR_UNSUPPORTED,
                                   "cuda: quantized_matmul: %lld rows of x exceed the tiled "
                                   "kernel's grid",
                                   (long long)m);
            dim3 grid((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
            tiled_kernel<W><<<grid, dim3(TILE, TILE), 0, ctx.stream>>>(xp, qp, sp, bp, dp, m, n, k, gs, bits);
        }
        return EMILY_OK;
    });
    return s ? s : emi_cuda_launched(&ctx);
}

} // namespace

extern "C" const struct emily_quant_kernels emi_cuda_quant_kernels = {cuda_ranges, cuda_quantize, cuda_dequantize,
                                                                      cuda_matmul};
