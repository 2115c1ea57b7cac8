// The reduction machinery of the CUDA engine (reduce.cu, argreduce.cu):
// geometry, kernels and the launch plan. A reducer supplies the fold.
//
// Geometry. The input's dims split into kept dims (one output per
// position) and reduced dims (folded), size-1 dims dropped and neighbours
// of one kind merged when their strides allow, keeping row-major order. A
// reduced position has a linear index j, row-major over the reduced dims:
// the order Nx folds in, which decides ties (first zero for max/min, first
// or last index for argmax/argmin).
//
// Two kernels, chosen by the input's smallest stride:
//  - rows: the smallest stride is a reduced dim. A contiguous run (one
//    reduced dim of stride 1) is folded a warp per output, or per part of
//    one, with 16-byte loads and shuffles only (reduce_rows_warp); other
//    reduced strides a block per output or part (reduce_rows), combining
//    its threads' partial folds; runs of at most 16 packs take 4, 8 or 16
//    lanes each, several to a warp (reduce_rows_group);
//  - cols: the smallest stride is a kept dim. A thread folds one output,
//    so a warp reads 32 neighbouring outputs at once.
// When there are too few outputs to fill the device, each output's range
// of j is cut into parts folded separately and a finishing kernel combines
// the parts. Every combine is commutative (ties decided by index), so the
// result does not depend on how the work was cut; sums round differently
// only in the last bits of a double accumulator.
//
// Accumulators: integers wrap in (at least) their width; f16/bf16/f32 sums
// and products in double; f64 sums in double with Neumaier compensation;
// complex in a pair of doubles (products and complex sums fold each output
// in order in one thread, like the CPU: red_sequential below); max/min carry the index of the chosen
// element and a NaN flag.
#ifndef EMILY_CUDA_REDUCE_CUH
#define EMILY_CUDA_REDUCE_CUH

#include <atomic>
#include "cuda/common.cuh"
#include "core/ordered_fold.h"

namespace emily_cuda {

constexpr int RMAXD = 8;

struct RedGeom {
    int nk, nr;
    int64_t K, R;
    int64_t kshape[RMAXD], kss[RMAXD], kds[RMAXD];
    int64_t rshape[RMAXD], rss[RMAXD];
};

// The row-major walk of linear index I (a variable) over dims ND-1 .. 1
// of SHAPE (of RMAXD): STEP runs with c, dim d's coordinate, innermost dim
// first; I is left as dim 0's coordinate. A macro, so that kept_off and
// red_off below compile to what each did with the loop written out.
#define EMI_RED_UNRAVEL(I, ND, SHAPE, STEP)                   \
    _Pragma("unroll") for (int d = RMAXD - 1; d > 0; d--) {   \
        if (d < (ND)) {                                       \
            int64_t n = (SHAPE)[d], q = I / n, c = I - q * n; \
            I = q;                                            \
            STEP;                                             \
        }                                                     \
    }

// Source and destination offsets of kept index o.
__device__ __forceinline__ void kept_off(const RedGeom &g, int64_t o, int64_t &so, int64_t &dof) {
    so = 0;
    dof = 0;
    EMI_RED_UNRAVEL(o, g.nk, g.kshape, so += c * g.kss[d]; dof += c * g.kds[d]);
    if (g.nk > 0) {
        so += o * g.kss[0];
        dof += o * g.kds[0];
    }
}

// Source offset of reduced index j (relative to its kept element's).
__device__ __forceinline__ int64_t red_off(const RedGeom &g, int64_t j) {
    int64_t so = 0;
    EMI_RED_UNRAVEL(j, g.nr, g.rshape, so += c * g.rss[d]);
    return g.nr > 0 ? so + j * g.rss[0] : so;
}
#undef EMI_RED_UNRAVEL

// ---- warp/block combine of any accumulator ----------------------------------

template <typename T> __device__ __forceinline__ T shfl_down_any(T v, int delta) {
    constexpr int W = (int)((sizeof(T) + 3) / 4);
    uint32_t w[W];
    memset(w, 0, sizeof w);
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int k = 0; k < W; k++) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta);
    T r;
    memcpy(&r, w, sizeof(T));
    return r;
}

// The combine of every thread's acc; valid in thread 0. blockDim.x is a
// multiple of 32 and at most BLOCK.
template <class Red>
__device__ typename Red::Acc block_combine(const Red &red, typename Red::Acc acc, typename Red::Acc *sh) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc = red.combine(acc, shfl_down_any(acc, off));
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) sh[w] = acc;
    __syncthreads();
    if (w == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? sh[lane] : red.init();
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) acc = red.combine(acc, shfl_down_any(acc, off));
    }
    __syncthreads();
    return acc;
}

// ---- kernels ------------------------------------------------------------

// Folds the contiguous run row[lo, hi) into acc, thread t of nt taking
// every nt-th 16-byte pack (an unaligned head and the tail element by
// element). UNROLL packs are loaded before any is folded, into UNROLL
// accumulators, so each thread keeps several loads in flight and no
// single dependency chain of adds limits it; the accumulators are
// combined at the end (every combine is commutative, ties go by index).
template <class Red>
__device__ __forceinline__ typename Red::Acc fold_contig(const Red &red, const typename Red::S *row, int64_t lo,
                                                         int64_t hi, int t, int nt) {
    typedef typename Red::S S;
    typedef typename Red::Acc Acc;
    constexpr int V = vec_of<S>();
    constexpr int UNROLL = 4;
    Acc acc = red.init();
    int64_t head = (int64_t)(((16 - ((uintptr_t)(row + lo) & 15)) & 15) / sizeof(S));
    if (head > hi - lo) head = hi - lo;
    for (int64_t j = lo + t; j < lo + head; j += nt) acc = red.combine(acc, red.load(row[j], j));
    int64_t vb = lo + head, nvec = (hi - vb) / V;
    const pack_t<S, V> *pv = (const pack_t<S, V> *)(row + vb);
    int64_t k = t;
    if (k + (int64_t)(UNROLL - 1) * nt < nvec) {
        Acc part[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) part[u] = red.init();
        for (; k + (int64_t)(UNROLL - 1) * nt < nvec; k += (int64_t)UNROLL * nt) {
            pack_t<S, V> x[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) x[u] = pv[k + u * nt];
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
#pragma unroll
                for (int e = 0; e < V; e++)
                    part[u] = red.combine(part[u], red.load(x[u].v[e], vb + (k + u * nt) * V + e));
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++) acc = red.combine(acc, part[u]);
    }
    for (; k < nvec; k += nt) {
        pack_t<S, V> x = pv[k];
#pragma unroll
        for (int e = 0; e < V; e++) acc = red.combine(acc, red.load(x.v[e], vb + k * V + e));
    }
    for (int64_t j = vb + nvec * V + t; j < hi; j += nt) acc = red.combine(acc, red.load(row[j], j));
    return acc;
}

template <class Red>
__global__ void __launch_bounds__(BLOCK) reduce_rows(RedGeom g, Red red, const typename Red::S *src,
                                                     typename Red::D *dst, typename Red::Acc *part_out, int parts) {
    typedef typename Red::Acc Acc;
    __shared__ Acc sh[BLOCK / 32];
    int64_t items = g.K * parts;
    for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {
        int64_t o = it / parts;
        int p = (int)(it - o * parts);
        int64_t lo = g.R * p / parts, hi = g.R * (p + 1) / parts;
        int64_t so, dof;
        kept_off(g, o, so, dof);
        Acc acc = red.init();
        for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x)
            acc = red.combine(acc, red.load(src[so + red_off(g, j)], j));
        acc = block_combine(red, acc, sh);
        if (threadIdx.x == 0) {
            if (parts == 1) dst[dof] = red.store(acc);
            else part_out[it] = acc; // [o][p]
        }
    }
}

// Contiguous runs a warp each: an item is an output (or a part of one),
// folded by one warp with shuffles only, so no block barrier stands
// between one item and the next. Used for short rows (many outputs) and,
// cut into parts, for long ones.
template <class Red>
__global__ void __launch_bounds__(BLOCK)
    reduce_rows_warp(RedGeom g, Red red, const typename Red::S *src, typename Red::D *dst, typename Red::Acc *part_out,
                     int parts) {
    typedef typename Red::Acc Acc;
    int lane = (int)(threadIdx.x & 31);
    int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    int64_t items = g.K * parts;
    for (int64_t it = warp; it < items; it += nwarps) {
        int64_t o = it / parts;
        int p = (int)(it - o * parts);
        int64_t lo = g.R * p / parts, hi = g.R * (p + 1) / parts;
        int64_t so, dof;
        kept_off(g, o, so, dof);
        Acc acc = fold_contig(red, src + so, lo, hi, lane, 32);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) acc = red.combine(acc, shfl_down_any(acc, off));
        if (lane == 0) {
            if (parts == 1) dst[dof] = red.store(acc);
            else part_out[it] = acc; // [o][p]
        }
    }
}

// Short contiguous runs (at most 16 packs): G lanes fold a run, so a warp
// folds 32 / G outputs at once (a warp to a 128-element bf16 run left half
// its lanes idle, and each run's load waited alone). The same folds as
// reduce_rows_warp's, cut among G threads instead of 32 (every combine is
// commutative; ties go by index).
template <class Red, int G>
__global__ void __launch_bounds__(BLOCK)
    reduce_rows_group(RedGeom g, Red red, const typename Red::S *src, typename Red::D *dst) {
    typedef typename Red::Acc Acc;
    constexpr int PER_WARP = 32 / G;
    int lane = (int)(threadIdx.x & 31), gl = lane % G;
    int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    int64_t nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    // every lane runs every turn: the shuffles need the whole warp
    for (int64_t base = warp * PER_WARP; base < g.K; base += nwarps * PER_WARP) {
        int64_t o = base + lane / G, so = 0, dof = 0;
        Acc acc = red.init();
        if (o < g.K) {
            kept_off(g, o, so, dof);
            acc = fold_contig(red, src + so, 0, g.R, gl, G);
        }
#pragma unroll
        for (int off = G / 2; off > 0; off >>= 1) acc = red.combine(acc, shfl_down_any(acc, off));
        if (gl == 0 && o < g.K) dst[dof] = red.store(acc);
    }
}

// chunk > 0: part p is j in [p * chunk, (p + 1) * chunk) (the sequential
// reducers' fixed cut, the CPU's too); else the range is cut evenly.
template <class Red>
__global__ void reduce_cols(RedGeom g, Red red, const typename Red::S *src, typename Red::D *dst,
                            typename Red::Acc *part_out, int parts, int64_t chunk) {
    typedef typename Red::Acc Acc;
    int64_t items = g.K * parts;
    for (int64_t it = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; it < items;
         it += (int64_t)gridDim.x * blockDim.x) {
        int p = (int)(it / g.K);
        int64_t o = it - (int64_t)p * g.K;
        int64_t lo = chunk ? p * chunk : g.R * p / parts;
        int64_t hi = chunk ? (lo + chunk < g.R ? lo + chunk : g.R) : g.R * (p + 1) / parts;
        int64_t so, dof;
        kept_off(g, o, so, dof);
        Acc acc = red.init();
        if (g.nr == 1) {
            int64_t rs = g.rss[0];
#pragma unroll 4
            for (int64_t j = lo; j < hi; j++) acc = red.combine(acc, red.load(src[so + j * rs], j));
        } else {
            for (int64_t j = lo; j < hi; j++) acc = red.combine(acc, red.load(src[so + red_off(g, j)], j));
        }
        if (parts == 1) dst[dof] = red.store(acc);
        else part_out[(int64_t)p * g.K + o] = acc; // [p][o]
    }
}

// Combines each output's parts (element (o, p) at o * so + p * sp).
template <class Red>
__global__ void __launch_bounds__(BLOCK) reduce_finish(RedGeom g, Red red, const typename Red::Acc *parts_in, int parts,
                                                       int64_t so_, int64_t sp, typename Red::D *dst) {
    typedef typename Red::Acc Acc;
    __shared__ Acc sh[BLOCK / 32];
    constexpr int U = 8; // loads in flight per thread: parts can number thousands
    for (int64_t o = blockIdx.x; o < g.K; o += gridDim.x) {
        Acc acc = red.init();
        int p = threadIdx.x;
        for (; p + (U - 1) * (int)blockDim.x < parts; p += U * (int)blockDim.x) {
            Acc x[U];
#pragma unroll
            for (int u = 0; u < U; u++) x[u] = parts_in[o * so_ + (int64_t)(p + u * (int)blockDim.x) * sp];
#pragma unroll
            for (int u = 0; u < U; u++) acc = red.combine(acc, x[u]);
        }
        for (; p < parts; p += blockDim.x) acc = red.combine(acc, parts_in[o * so_ + (int64_t)p * sp]);
        acc = block_combine(red, acc, sh);
        if (threadIdx.x == 0) {
            int64_t so, dof;
            kept_off(g, o, so, dof);
            dst[dof] = red.store(acc);
        }
    }
}

// Sequential reducers: one thread per output combines its parts in order
// (parts at [p][o]), as the CPU merges its chunks.
template <class Red>
__global__ void reduce_finish_seq(RedGeom g, Red red, const typename Red::Acc *parts_in, int parts,
                                  typename Red::D *dst) {
    typedef typename Red::Acc Acc;
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < g.K; o += (int64_t)gridDim.x * blockDim.x) {
        Acc acc = red.init();
        for (int p = 0; p < parts; p++) acc = red.combine(acc, parts_in[(int64_t)p * g.K + o]);
        int64_t so, dof;
        kept_off(g, o, so, dof);
        dst[dof] = red.store(acc);
    }
}

// ---- geometry -----------------------------------------------------------

// Fills g from the input and the reduced mask; *rows tells which kernel
// reads the input along its smallest stride. Fails past RMAXD dims.
inline emily_status make_geom(const char *op, const emily_tensor *dst, const emily_tensor *src, const bool *reduced,
                              RedGeom &g, bool &rows) {
    memset(&g, 0, sizeof g);
    g.K = g.R = 1;
    int64_t best = INT64_MAX;
    bool best_red = true;
    for (int i = 0; i < src->rank; i++) {
        int64_t n = src->shape[i], ss = src->strides[i];
        if (n == 1) continue;
        int64_t key = ss < 0 ? -ss : ss;
        if (key < best || (key == best && reduced[i])) {
            best = key;
            best_red = reduced[i];
        }
        if (reduced[i]) {
            g.R *= n;
            if (g.nr > 0 && g.rss[g.nr - 1] == ss * n) {
                g.rshape[g.nr - 1] *= n;
                g.rss[g.nr - 1] = ss;
                continue;
            }
            if (g.nr == RMAXD) goto too_many;
            g.rshape[g.nr] = n;
            g.rss[g.nr++] = ss;
        } else {
            int64_t ds = dst->strides[i];
            g.K *= n;
            if (g.nk > 0 && g.kss[g.nk - 1] == ss * n && g.kds[g.nk - 1] == ds * n) {
                g.kshape[g.nk - 1] *= n;
                g.kss[g.nk - 1] = ss;
                g.kds[g.nk - 1] = ds;
                continue;
            }
            if (g.nk == RMAXD) goto too_many;
            g.kshape[g.nk] = n;
            g.kss[g.nk] = ss;
            g.kds[g.nk++] = ds;
        }
    }
    rows = best_red || g.K == 1;
    return EMILY_OK;
too_many:
    return emily_error(EMILY_ERR_UNSUPPORTED,
                       "cuda: %s: more than %d kept or reduced dims that cannot be merged (rank %d); "
                       "make the input contiguous first",
                       op, RMAXD, src->rank);
}

// A reducer with `static constexpr bool sequential = true` folds each
// output in j order in one thread (the cols kernel), as the CPU does:
// products and complex sums round (and overflow into inf/NaN) differently
// in any other order. Past SEQ_MAX elements per output both devices cut
// the run at multiples of SEQ_MAX, fold each chunk in order and combine
// the chunks in order (core/ordered_fold.h), so the two agree bit for bit
// at every length and thread count.
template <class Red> constexpr bool red_sequential() {
    if constexpr (requires { Red::sequential; }) return Red::sequential;
    else return false;
}
constexpr int64_t SEQ_MAX = EMI_ORDERED_CHUNK;

// Blocks of BLOCK threads of kernel k that fit on the device at once
// (its registers and shared memory decide), at least one per SM. Asked
// once per kernel: the answer depends on the kernel's resources only.
template <typename K> int64_t resident_blocks(K k, int64_t sms) {
    static std::atomic<int> per_sm{0};
    int n = per_sm.load(std::memory_order_relaxed);
    if (n == 0) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, BLOCK, 0) != cudaSuccess || n < 1) {
            (void)cudaGetLastError();
            n = 1;
        }
        per_sm.store(n, std::memory_order_relaxed);
    }
    return sms * n;
}

// Runs Red over the geometry: picks the kernel and how many parts each
// output's range is cut into.
template <class Red>
emily_status run_reduce(const emily_cuda_ctx &ctx, const RedGeom &g, bool rows_in, const Red &red,
                        const emily_tensor *src, emily_tensor *dst) {
    typedef typename Red::S S;
    typedef typename Red::D D;
    typedef typename Red::Acc Acc;
    const S *sp = (const S *)base_of(src) + src->offset;
    D *dp = (D *)base_of(dst) + dst->offset;
    int64_t sms = emi_cuda_sm_count(ctx.device);
    int parts = 1;
    int64_t chunk = 0;
    const bool seq = red_sequential<Red>();
    const bool rows = rows_in && !seq;
    // contiguous runs go a warp each (long ones cut into parts): on an
    // H200 the sum of 2^28 f32 took 0.2724 ms so, 0.2756 ms with a block
    // per part; other strides a block each
    const bool by_warp = rows && g.nr == 1 && g.rss[0] == 1;
    if (seq) {
        // one thread per output, j in order; fixed chunks past SEQ_MAX
        if (g.R > SEQ_MAX) {
            chunk = SEQ_MAX;
            parts = (int)((g.R + SEQ_MAX - 1) / SEQ_MAX);
        }
    } else if (rows) {
        // as many items as can be resident at once: one full wave (a
        // second, partial wave would run the last parts at a fraction of
        // the bandwidth)
        int64_t slots = by_warp ? resident_blocks(reduce_rows_warp<Red>, sms) * (BLOCK / 32)
                                : resident_blocks(reduce_rows<Red>, sms);
        int64_t want = (slots + g.K - 1) / g.K, most = g.R / 4096;
        if (want > most) want = most;
        if (want > 16384) want = 16384;
        if (want > 1) parts = (int)want;
    } else {
        int64_t threads = sms * 2048, want = (threads + g.K - 1) / g.K, most = g.R / 64;
        if (want > most) want = most;
        if (want > 65536) want = 65536;
        if (want > 1) parts = (int)want;
    }
    Acc *buf = NULL;
    if (parts > 1) {
        emily_status s = emi_cuda_scratch(&ctx, sizeof(Acc) * (size_t)g.K * (size_t)parts, (void **)&buf);
        if (s) return s;
    }
    int64_t items = g.K * parts;
    // packs (16 bytes) of one run, for the short-run kernel
    int64_t packs = (g.R * (int64_t)sizeof(S) + 15) / 16;
    if (by_warp && parts == 1 && packs <= 16) {
        int G = packs <= 4 ? 4 : packs <= 8 ? 8 : 16;
        int64_t per_block = (BLOCK / 32) * (32 / G), blocks = (g.K + per_block - 1) / per_block;
        int64_t cap = (G == 4   ? resident_blocks(reduce_rows_group<Red, 4>, sms)
                       : G == 8 ? resident_blocks(reduce_rows_group<Red, 8>, sms)
                                : resident_blocks(reduce_rows_group<Red, 16>, sms));
        if (blocks > cap) blocks = cap;
        if (G == 4) reduce_rows_group<Red, 4><<<(unsigned)blocks, BLOCK, 0, ctx.stream>>>(g, red, sp, dp);
        else if (G == 8) reduce_rows_group<Red, 8><<<(unsigned)blocks, BLOCK, 0, ctx.stream>>>(g, red, sp, dp);
        else reduce_rows_group<Red, 16><<<(unsigned)blocks, BLOCK, 0, ctx.stream>>>(g, red, sp, dp);
    } else if (by_warp) {
        int64_t warps_per_block = BLOCK / 32, cap = resident_blocks(reduce_rows_warp<Red>, sms);
        int64_t blocks = (items + warps_per_block - 1) / warps_per_block;
        if (blocks > cap) blocks = cap;
        reduce_rows_warp<Red><<<(unsigned)blocks, BLOCK, 0, ctx.stream>>>(g, red, sp, dp, buf, parts);
    } else if (rows) {
        int64_t cap = sms * 16, blocks = items < cap ? items : cap;
        reduce_rows<Red><<<(unsigned)blocks, BLOCK, 0, ctx.stream>>>(g, red, sp, dp, buf, parts);
    } else {
        reduce_cols<Red><<<grid_for(ctx.device, items), BLOCK, 0, ctx.stream>>>(g, red, sp, dp, buf, parts, chunk);
    }
    emily_status s = emi_cuda_launched(&ctx);
    if (!s && parts > 1 && seq) {
        reduce_finish_seq<Red><<<grid_for(ctx.device, g.K), BLOCK, 0, ctx.stream>>>(g, red, buf, parts, dp);
        s = emi_cuda_launched(&ctx);
    } else if (!s && parts > 1) {
        int64_t cap = sms * 16, blocks = g.K < cap ? g.K : cap;
        int64_t so = rows ? parts : 1, spp = rows ? 1 : g.K;
        reduce_finish<Red><<<(unsigned)blocks, BLOCK, 0, ctx.stream>>>(g, red, buf, parts, so, spp, dp);
        s = emi_cuda_launched(&ctx);
    }
    if (buf) emi_cuda_scratch_free(&ctx, buf);
    return s;
}

// Storage <-> compute of each real dtype, shared by the reducers: C is
// the type values compare and fold in (f16/bf16 in float).
struct LdF16 {
    typedef uint16_t T;
    typedef float C;
    static __device__ float ld(uint16_t v) { return emily_sc_f16_to_f32(v); }
    static __device__ uint16_t st(double x) { return emily_sc_f64_to_f16(x); }
};
struct LdBF16 {
    typedef uint16_t T;
    typedef float C;
    static __device__ float ld(uint16_t v) { return emily_sc_bf16_to_f32(v); }
    static __device__ uint16_t st(double x) { return emily_sc_f32_to_bf16((float)x); }
};
struct LdF32 {
    typedef float T;
    typedef float C;
    static __device__ float ld(float v) { return v; }
    static __device__ float st(double x) { return (float)x; }
};
struct LdF64 {
    typedef double T;
    typedef double C;
    static __device__ double ld(double v) { return v; }
    static __device__ double st(double x) { return x; }
};
template <typename V> struct LdInt {
    typedef V T;
    typedef V C;
    static __device__ V ld(V v) { return v; }
};

// Ld<D>: the loader of real dtype D.
template <emily_dtype D> struct ld_of;
#define EMI_CUDA_LD_INT_(E, sfx, T) \
    template <> struct ld_of<EMILY_##E> { typedef LdInt<T> type; };
EMI_DTYPES_INTEGER(EMI_CUDA_LD_INT_)
#undef EMI_CUDA_LD_INT_
template <> struct ld_of<EMILY_F16> { typedef LdF16 type; };
template <> struct ld_of<EMILY_BF16> { typedef LdBF16 type; };
template <> struct ld_of<EMILY_F32> { typedef LdF32 type; };
template <> struct ld_of<EMILY_F64> { typedef LdF64 type; };
template <emily_dtype D> using Ld = typename ld_of<D>::type;

template <class Red>
emily_status reduce_with(const emily_cuda_ctx &ctx, const Red &red, emily_tensor *dst, const emily_tensor *src,
                         const bool *reduced) {
    RedGeom g;
    bool rows;
    emily_status s = make_geom(ctx.op, dst, src, reduced, g, rows);
    return s ? s : run_reduce(ctx, g, rows, red, src, dst);
}

} // namespace emily_cuda

#endif
