// Flash attention on tensor cores for f16/bf16 (emily_sdpa's CUDA fast
// path; src/cuda/attention.cu picks it and launches it).
//
// One block of NWARPS warps takes BM = 16 * NWARPS query rows of one
// (batch, head); each warp owns 16 rows. The block's q rows go through
// shared memory into registers once (as mma A fragments); k and v stream
// through shared memory in tiles of BN keys, double-buffered with
// cp.async so that the next tile loads while this one is multiplied.
// Per tile a warp computes its 16 x BN scores with mma.sync m16n8k16 (f32
// accumulators), scales and masks them, updates its rows' running max m
// and partial sums l (the online softmax: earlier partial sums and
// outputs are rescaled by exp(m_old - m_new) when the max grows), rounds
// the unnormalized probabilities to T (bf16 by Nx's truncation, f16 to
// nearest) into A fragments straight from the score accumulators, and
// accumulates P v with a second mma. At the end each row is divided by
// its sum (with the sink's term added) and written as T.
//
// Shared memory rows are padded by 16 bytes: ldmatrix reads 8 rows at one
// column, and a row pitch of 2D + 16 bytes puts those 8 reads in distinct
// bank groups for every D used here (64, 80, 96, 128).
//
// Causal blocks visit only the key tiles their last row can see; tiles
// that some row of the block must not fully see (the diagonal), the last
// partial tile, and every tile of a masked call take the masked path,
// the rest skip the per-element tests.
#ifndef EMILY_CUDA_ATTENTION_FLASH_CUH
#define EMILY_CUDA_ATTENTION_FLASH_CUH

#include <stdint.h>
#include <cuda_runtime.h>
#include "core/scalar_convert.h"

namespace emily_attention {

constexpr int BN = 64; // keys per tile
constexpr float LOG2E = 1.4426950408889634f;

// What a launch needs besides the template arguments.
struct FlashArgs {
    const uint16_t *q, *k, *v; // contiguous {B, H, S, D}, 16-byte aligned
    uint16_t *o;
    int64_t Hq, Hkv, Sq, Skv;
    float scale;
    const void *mask;   // element (0, 0, 0, 0), or nullptr
    int64_t ms[4];      // its strides in elements
    const float *sinks; // {Hq}, or nullptr
};

// Mask kinds (template argument).
enum { MASK_NONE = 0, MASK_ADD = 1, MASK_BOOL = 2 };

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid) {
    // src-size 0 fills the 16 bytes with zeros (rows past the end)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void *p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

// c += a (16x16, row) * b (16x8, col), f32 accumulators.
template <bool BF16>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two probabilities as a pair of T: bf16 as Nx writes it (the f32's top
// half: truncation), f16 rounded to nearest (the f32 is exact in double,
// so this is Nx's f64-to-f16 rounding, NaN payloads aside).
template <bool BF16> __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
    if constexpr (BF16) {
        return __byte_perm(__float_as_uint(lo), __float_as_uint(hi), 0x7632);
    } else {
        uint16_t a, b;
        asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(a) : "f"(lo));
        asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(b) : "f"(hi));
        return (uint32_t)a | ((uint32_t)b << 16);
    }
}

// One output value written as T by Nx's rules.
template <bool BF16> __device__ __forceinline__ uint16_t store_t(float x) {
    if constexpr (BF16) return emily_sc_f32_to_bf16(x);
    else return emily_sc_f64_to_f16((double)x);
}

// Shared memory of a launch: q (BM rows), then two stages of k and v (BN
// rows each), every row D + 8 elements.
template <int D, int NWARPS> constexpr size_t flash_smem_bytes() {
    return (size_t)(16 * NWARPS + 4 * BN) * (D + 8) * sizeof(uint16_t);
}

// rows [r0, r0 + nrows) of a {S, D} matrix (row pitch D) into shared rows
// of pitch D + 8; rows at or past `limit` are zero-filled.
template <int D, int THREADS>
__device__ __forceinline__ void load_rows(uint16_t *dst, const uint16_t *src, int64_t r0, int nrows, int64_t limit) {
    constexpr int CHUNKS = D / 8; // 16-byte chunks per row
    for (int c = threadIdx.x; c < nrows * CHUNKS; c += THREADS) {
        int r = c / CHUNKS, col = (c % CHUNKS) * 8;
        bool valid = r0 + r < limit;
        const uint16_t *g = valid ? src + (r0 + r) * D + col : src;
        cp_async16(dst + r * (D + 8) + col, g, valid);
    }
}

template <bool BF16, int D, int NWARPS, bool CAUSAL, int MASK>
__global__ void __launch_bounds__(NWARPS * 32) flash_kernel(const FlashArgs a) {
    constexpr int BM = 16 * NWARPS, THREADS = NWARPS * 32, P = D + 8;
    constexpr int NT = BN / 8; // score n-tiles per warp
    constexpr int KD = D / 16; // k-steps over D
    constexpr int DT = D / 8;  // output n-tiles
    extern __shared__ __align__(16) uint16_t smem[];
    uint16_t *sq = smem, *sk = smem + BM * P, *sv = sk + 2 * BN * P;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int64_t bh = blockIdx.x, b = bh / a.Hq, h = bh % a.Hq;
    const int64_t hk = h / (a.Hq / a.Hkv);
    // causal: the heaviest query blocks (the last ones) first
    const int64_t qb = CAUSAL ? (int64_t)gridDim.y - 1 - blockIdx.y : blockIdx.y;
    const int64_t q0 = qb * BM, shift = a.Skv - a.Sq;
    const uint16_t *qg = a.q + (bh * a.Sq) * D;
    const uint16_t *kg = a.k + ((b * a.Hkv + hk) * a.Skv) * D;
    const uint16_t *vg = a.v + ((b * a.Hkv + hk) * a.Skv) * D;

    // keys the block sees: [0, kend)
    int64_t kend = a.Skv;
    if (CAUSAL) {
        int64_t last = q0 + BM - 1 + shift + 1;
        kend = last < 0 ? 0 : last < a.Skv ? last : a.Skv;
    }
    const int ntiles = (int)((kend + BN - 1) / BN);

    load_rows<D, THREADS>(sq, qg, q0, BM, a.Sq);
    cp_async_commit();
    if (ntiles > 0) {
        load_rows<D, THREADS>(sk, kg, 0, BN, kend);
        load_rows<D, THREADS>(sv, vg, 0, BN, kend);
    }
    cp_async_commit();

    // this thread's rows: ra (c[0], c[1]) and ra + 8 (c[2], c[3])
    const int64_t ra = q0 + warp * 16 + g, rb = ra + 8;
    const float sink = a.sinks ? a.sinks[h] : -INFINITY;
    float m[2] = {sink, sink}, l[2] = {0.f, 0.f};
    bool seen[2] = {false, false};
    float o[DT][4];
#pragma unroll
    for (int i = 0; i < DT; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    uint32_t qf[KD][4];

    for (int kt = 0; kt < ntiles; kt++) {
        cp_async_wait_all();
        __syncthreads();
        if (kt == 0) {
            const uint16_t *base = sq + (warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * P + (lane / 16) * 8;
#pragma unroll
            for (int ks = 0; ks < KD; ks++) ldmatrix_x4(qf[ks], base + ks * 16);
        }
        const int stage = kt & 1;
        if (kt + 1 < ntiles) {
            load_rows<D, THREADS>(sk + (stage ^ 1) * BN * P, kg, (int64_t)(kt + 1) * BN, BN, kend);
            load_rows<D, THREADS>(sv + (stage ^ 1) * BN * P, vg, (int64_t)(kt + 1) * BN, BN, kend);
        }
        cp_async_commit();
        const uint16_t *tk = sk + stage * BN * P, *tv = sv + stage * BN * P;
        const int64_t k0 = (int64_t)kt * BN;

        // S = q k^T for this warp's 16 rows and the tile's BN keys
        float s[NT][4];
#pragma unroll
        for (int n = 0; n < NT; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
        for (int ks = 0; ks < KD; ks++) {
#pragma unroll
            for (int np = 0; np < NT / 2; np++) {
                uint32_t kb[4];
                const uint16_t *p = tk + (np * 16 + (lane % 8) + (lane / 16) * 8) * P + ks * 16 + ((lane / 8) % 2) * 8;
                ldmatrix_x4(kb, p);
                mma16816<BF16>(s[2 * np], qf[ks], kb[0], kb[1]);
                mma16816<BF16>(s[2 * np + 1], qf[ks], kb[2], kb[3]);
            }
        }

        // scale, mask, and the tile's row maxima
        const bool masked = MASK != MASK_NONE || k0 + BN > kend || (CAUSAL && k0 + BN - 1 > q0 + shift);
        float tmax[2] = {-INFINITY, -INFINITY};
        if (!masked) {
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    s[n][e] = s[n][e] * a.scale;
                    tmax[e / 2] = fmaxf(tmax[e / 2], s[n][e]);
                }
            seen[0] = seen[1] = true;
        } else {
#pragma unroll
            for (int n = 0; n < NT; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int64_t row = e < 2 ? ra : rb, key = k0 + n * 8 + 2 * t + (e & 1);
                    float x = s[n][e] * a.scale;
                    bool keep = key < kend && row < a.Sq;
                    if (CAUSAL) keep = keep && key <= row + shift;
                    if (MASK != MASK_NONE && keep) {
                        int64_t off = b * a.ms[0] + h * a.ms[1] + row * a.ms[2] + key * a.ms[3];
                        if (MASK == MASK_BOOL) keep = ((const uint8_t *)a.mask)[off] != 0;
                        else x = x + ((const float *)a.mask)[off];
                    }
                    x = keep ? x : -INFINITY;
                    // a NaN logit counts as seen (its row is NaN through l)
                    seen[e / 2] = seen[e / 2] || !(x == -INFINITY);
                    s[n][e] = x;
                    tmax[e / 2] = fmaxf(tmax[e / 2], x);
                }
        }

        // the online softmax: new maxima, rescale, probabilities
        float corr[2], msub[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            tmax[r] = fmaxf(tmax[r], __shfl_xor_sync(0xffffffffu, tmax[r], 1));
            tmax[r] = fmaxf(tmax[r], __shfl_xor_sync(0xffffffffu, tmax[r], 2));
            float mn = fmaxf(m[r], tmax[r]);
            // every logit so far -inf: subtract 0 (no -inf - -inf)
            float safe = mn == -INFINITY ? 0.f : mn;
            corr[r] = exp2f((m[r] - safe) * LOG2E);
            m[r] = mn;
            msub[r] = safe * LOG2E;
            l[r] *= corr[r];
        }
#pragma unroll
        for (int i = 0; i < DT; i++) {
            o[i][0] *= corr[0], o[i][1] *= corr[0];
            o[i][2] *= corr[1], o[i][3] *= corr[1];
        }
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float p = exp2f(__fmaf_rn(s[n][e], LOG2E, -msub[e / 2]));
                s[n][e] = p;
                l[e / 2] += p;
            }

            // O += P v: the score accumulators of n-tiles 2kk and 2kk + 1 are
            // the A fragment of keys [16 kk, 16 kk + 16)
#pragma unroll
        for (int kk = 0; kk < NT / 2; kk++) {
            uint32_t pa[4] = {pack2<BF16>(s[2 * kk][0], s[2 * kk][1]), pack2<BF16>(s[2 * kk][2], s[2 * kk][3]),
                              pack2<BF16>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack2<BF16>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
            for (int dp = 0; dp < DT / 2; dp++) {
                uint32_t vb[4];
                const uint16_t *p = tv + (kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8) * P + dp * 16 + (lane / 16) * 8;
                ldmatrix_x4_trans(vb, p);
                mma16816<BF16>(o[2 * dp], pa, vb[0], vb[1]);
                mma16816<BF16>(o[2 * dp + 1], pa, vb[2], vb[3]);
            }
        }
    }

    // a block that saw no key never waited for its q rows' copies
    if (ntiles == 0) cp_async_wait_all();

    // the rows' sums (the quad's partial sums, then the sink), and out
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        float sum = l[r];
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        // every lane of the warp must reach each shuffle (a short-circuit
        // `any || shfl` skipped it where `any` was true: undefined, and it
        // zeroed or garbled rows whose keys only some lanes of the quad saw)
        int any = seen[r] ? 1 : 0;
        any |= __shfl_xor_sync(0xffffffffu, any, 1);
        any |= __shfl_xor_sync(0xffffffffu, any, 2);
        if (a.sinks) {
            float safe = m[r] == -INFINITY ? 0.f : m[r];
            sum += exp2f((sink - safe) * LOG2E);
        }
        // fully masked rows (no key kept, or nothing to divide) are 0
        inv[r] = any && sum != 0.f ? 1.f / sum : 0.f;
    }
    uint16_t *og = a.o + (bh * a.Sq) * D;
#pragma unroll
    for (int i = 0; i < DT; i++) {
        const int col = i * 8 + 2 * t;
#pragma unroll
        for (int r = 0; r < 2; r++) {
            const int64_t row = r ? rb : ra;
            if (row >= a.Sq) continue;
            // 0 * (inf or NaN accumulated from a masked key's v) stays 0
            float x0 = inv[r] == 0.f ? 0.f : o[i][2 * r] * inv[r];
            float x1 = inv[r] == 0.f ? 0.f : o[i][2 * r + 1] * inv[r];
            uint32_t w = (uint32_t)store_t<BF16>(x0) | ((uint32_t)store_t<BF16>(x1) << 16);
            *(uint32_t *)(og + row * D + col) = w;
        }
    }
}

} // namespace emily_attention

#endif
