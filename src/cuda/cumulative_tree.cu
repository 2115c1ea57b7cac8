// Nx's associative scan on CUDA: the combines of the CPU's tree_scan
// (src/cpu/cumulative.c), each with the same operands in the same
// argument order, so every intermediate value (rounded to the element
// type after each step) and every tie (the sign of equal zeros, which NaN
// wins) is the CPU's.
//
// The tree of a line x[0..n): level 0 is x, level l+1 has n >> (l+1)
// values, up[l+1][k] = f(up[l][2k+1], up[l][2k]). Going down, the final
// values of level l follow from those of level l+1:
//     fin[l][0]  = up[l][0]
//     fin[l][i]  = fin[l+1][(i-1)/2]            i odd
//     fin[l][i]  = f(fin[l+1][i/2-1], up[l][i]) i even > 0
// (the CPU's recursion, both parities of n alike), and fin[top] = up[top]
// where fewer than two values are left.
//
// A block holds TILE = 2^11 level-0 slots (2^10 for c128; the numbers
// below are for 2^11) and every level above them in
// shared memory. Lines of at most TILE elements fit a segment of
// P = (n rounded up to a power of two) slots, TILE / P of them per block:
// the whole tree of each runs in one kernel. Longer lines are cut into
// tiles of TILE elements (aligned in scan order); the tile's top slot
// (level 11) is up[11][t] of the whole line, so
//   1. tree_kernel<UP> writes each full tile's top value to `aggs`;
//   2. the aggs of each line, a line of n >> 11 values, are scanned by
//      the same code (recursively: ceil(log_2048 n) rounds);
//   3. tree_kernel<DOWN> recomputes the tile's up-sweep and goes down from
//      fin[11][t] = aggs[t]; at a tile's first position of each level the
//      left operand is the last position of the tile before, whose final
//      value (an odd position copying from above, level after level) is
//      aggs[t - 1].
// Integer scans use the same code: their combines are exact, any order
// gives the same result.
#include "cuda/cumulative.cuh"
#include "core/scalar_binary.h"

using namespace emily_cuda;

namespace {

constexpr int TILE_LOG = 11; // TILE = 2^11 (2^10 for c128: TileOf)
constexpr int TREE_THREADS = 256;

// The tile of dtype D: TILE, or half of it for 16-byte elements (c128),
// whose levels would not fit 48 KiB of static shared memory. Tiles are
// aligned blocks of the line and the levels above them are the same
// tree over the tiles' tops, so the order of operations does not depend
// on the tile's size.
template <emily_dtype D> struct TileOf {
    static constexpr int LOG = sizeof(storage_t<D>) > 8 ? TILE_LOG - 1 : TILE_LOG;
    static constexpr int SIZE = 1 << LOG;
};

// Offset of level l in a block's shared array of a tile of T slots:
// level l has T >> l slots.
template <int T> __device__ __forceinline__ int level_base(int l) { return 2 * T - ((2 * T) >> l); }

// The pair function of the CPU's tree scan on elements of dtype D (stored
// values: f16/bf16 bits, c64 pairs): pmax/pmin/padd/pmul, their result
// rounded to D (round_to) as the CPU writes it.
template <emily_dtype D> struct TreePair {
    typedef storage_t<D> S;
    typedef cv_rules<D> R;

    static __device__ __forceinline__ S f(int op, S a, S b) {
        if constexpr (is_integer(D)) {
            return int_fold(op, a, b);
        } else if constexpr (is_complex(D)) {
            emily_sb_complex x = emily_sb_cmake(R::re(a), R::im(a)), y = emily_sb_cmake(R::re(b), R::im(b));
            emily_sb_complex z = op == EMILY_CUMULATIVE_SUM ? emily_sb_cadd(x, y) : emily_sb_cmultiply(x, y);
            return R::from_f64(z.re, z.im);
        } else {
            double x = R::re(a), y = R::re(b);
            switch (op) {
            // emily_sb_max_f64/min_f64 on the values, keeping the chosen
            // element's bits: a NaN operand wins (the first one if both)
            case EMILY_CUMULATIVE_MAX: return x != x ? a : y != y ? b : x >= y ? a : b;
            case EMILY_CUMULATIVE_MIN: return x != x ? a : y != y ? b : x <= y ? a : b;
            // padd of two reals: the imaginary parts are 0 + 0
            case EMILY_CUMULATIVE_SUM: return R::from_f64(x + y, 0.0);
            default: return R::from_f64(x * y, 0.0);
            }
        }
    }

    // The element the CPU stores for a final value: we_store_f(we_load_f(v)).
    // Exact for every value except NaN bits: f16/bf16 write Nx's one NaN (the
    // shared conversion), f32 goes through a double on x86 (a signalling NaN
    // comes back quiet), f64 and integers are copied.
    static __device__ __forceinline__ S out(S v) {
        if constexpr (D == EMILY_F32) {
            uint32_t b = emily_sc_f32_bits(v);
            return (b & 0x7fffffffu) > 0x7f800000u ? emily_sc_bits_f32(b | 0x00400000u) : v;
        } else if constexpr (is_half(D) || is_complex(D)) {
            return R::from_f64(R::re(v), R::im(v));
        } else {
            return v;
        }
    }
};

// One call's geometry: segments of P slots (a power of two <= TILE), `ntl`
// of them per line (1 when n <= TILE, else P = TILE), TILE / P per block.
struct TreeGeom {
    ScanLines L;
    int P, logP;
    int64_t ntl;     // segments (tiles) per line
    int64_t nagg;    // full tiles per line (n >> TILE_LOG) when ntl > 1
    int64_t nblocks; // blocks of TILE / P segments
    bool colmajor;   // load and store line-fastest (neighbouring lines are
                     // neighbours in memory: inner > 1, several per block)
};

enum TreePass { UP, DOWN };

// Level-0 slot of element e of a block's load/store loop.
__device__ __forceinline__ void slot_of(const TreeGeom &g, int spb, int e, int &q, int &i) {
    if (g.colmajor) {
        q = e % spb;
        i = e / spb;
    } else {
        q = e >> g.logP;
        i = e & (g.P - 1);
    }
}

template <emily_dtype D, TreePass PASS>
__global__ void __launch_bounds__(TREE_THREADS)
    tree_kernel(int op, TreeGeom g, const storage_t<D> *src, storage_t<D> *dst, storage_t<D> *aggs, bool final) {
    typedef storage_t<D> S;
    typedef TreePair<D> F;
    constexpr int T = TileOf<D>::SIZE;
    __shared__ S lev[2 * T];
    const int spb = T >> g.logP; // segments per block
    const int64_t n = g.L.n;
    for (int64_t b = blockIdx.x; b < g.nblocks; b += gridDim.x) {
        // segment q of this block: line line0 + q, tile tl (one segment a
        // block when lines are cut into tiles)
        int64_t line0, tl;
        if (g.ntl > 1) {
            line0 = b / g.ntl;
            tl = b - line0 * g.ntl;
        } else {
            line0 = b * spb;
            tl = 0;
        }
        int nq = g.ntl > 1 ? 1 : (int)(g.L.count - line0 < spb ? g.L.count - line0 : spb);

        for (int e = threadIdx.x; e < T; e += blockDim.x) {
            int q, i;
            slot_of(g, spb, e, q, i);
            int64_t pos = tl * g.P + i;
            if (q < nq && pos < n) lev[q * g.P + i] = src[g.L.at(line0 + q, pos)];
        }
        // up-sweep: level l+1 from level l
        for (int l = 0; l < g.logP; l++) {
            __syncthreads();
            const S *lo = lev + level_base<T>(l);
            S *hi = lev + level_base<T>(l + 1);
            int segw = g.P >> (l + 1), cnt = nq * segw;
            int64_t exist = n >> (l + 1);
            for (int e = threadIdx.x; e < cnt; e += blockDim.x) {
                int i = e & (segw - 1);
                if (tl * segw + i < exist) hi[e] = F::f(op, lo[2 * e + 1], lo[2 * e]);
            }
        }
        __syncthreads();
        if constexpr (PASS == UP) {
            // a full tile's top value (one segment a block here)
            if (threadIdx.x == 0 && tl < g.nagg) aggs[line0 * g.nagg + tl] = lev[level_base<T>(g.logP)];
            __syncthreads();
            continue;
        } else {
            // the top of a tile of a cut line is its scanned aggregate
            bool cut = g.ntl > 1;
            if (cut && threadIdx.x == 0 && tl < g.nagg) lev[level_base<T>(g.logP)] = aggs[line0 * g.nagg + tl];
            S carry = lev[0]; // the previous tile's final top (read only where tl > 0)
            if (cut && tl > 0) carry = aggs[line0 * g.nagg + tl - 1];
            for (int l = g.logP - 1; l >= 0; l--) {
                __syncthreads();
                S *cur = lev + level_base<T>(l);
                const S *up = lev + level_base<T>(l + 1);
                int segw = g.P >> l, cnt = nq * segw;
                int64_t exist = n >> l;
                for (int e = threadIdx.x; e < cnt; e += blockDim.x) {
                    int i = e & (segw - 1);
                    int64_t pos = tl * segw + i;
                    if (pos >= exist || pos == 0) continue;
                    if (i & 1) cur[e] = up[e >> 1];
                    else cur[e] = F::f(op, i > 0 ? up[(e >> 1) - 1] : carry, cur[e]);
                }
            }
            __syncthreads();
            for (int e = threadIdx.x; e < T; e += blockDim.x) {
                int q, i;
                slot_of(g, spb, e, q, i);
                int64_t pos = tl * g.P + i;
                if (q < nq && pos < n) {
                    S v = lev[q * g.P + i];
                    dst[g.L.at(line0 + q, pos)] = final ? F::out(v) : v;
                }
            }
            __syncthreads();
        }
    }
}

template <emily_dtype D>
emily_status tree_run(const emily_cuda_ctx &ctx, int op, const ScanLines &L, const storage_t<D> *src, storage_t<D> *dst,
                      bool final) {
    typedef storage_t<D> S;
    constexpr int T = TileOf<D>::SIZE, TLOG = TileOf<D>::LOG;
    TreeGeom g;
    g.L = L;
    if (L.n <= T) {
        g.logP = 0;
        while (((int64_t)1 << g.logP) < L.n) g.logP++;
        g.ntl = 1;
        g.nagg = 0;
    } else {
        g.logP = TLOG;
        g.ntl = (L.n + T - 1) / T;
        g.nagg = L.n >> TLOG;
    }
    g.P = 1 << g.logP;
    int spb = T >> g.logP;
    g.nblocks = g.ntl > 1 ? L.count * g.ntl : (L.count + spb - 1) / spb;
    g.colmajor = L.inner > 1 && spb > 1;
    unsigned grid = (unsigned)(g.nblocks < INT32_MAX ? g.nblocks : INT32_MAX);
    S *aggs = NULL;
    emily_status s = EMILY_OK;
    if (g.ntl > 1) {
        if ((s = emi_cuda_scratch(&ctx, (size_t)(L.count * g.nagg) * sizeof(S), (void **)&aggs))) return s;
        tree_kernel<D, UP><<<grid, TREE_THREADS, 0, ctx.stream>>>(op, g, src, dst, aggs, final);
        s = emi_cuda_launched(&ctx);
        ScanLines A = {g.nagg, 1, L.count, false};
        if (!s) s = tree_run<D>(ctx, op, A, aggs, aggs, false);
    }
    if (!s) {
        tree_kernel<D, DOWN><<<grid, TREE_THREADS, 0, ctx.stream>>>(op, g, src, dst, aggs, final);
        s = emi_cuda_launched(&ctx);
    }
    if (aggs) emi_cuda_scratch_free(&ctx, aggs);
    return s;
}

} // namespace

namespace emily_cuda {

emily_status scan_tree(const emily_cuda_ctx &ctx, emily_cumulative_op op, emily_dtype dt, const void *src, void *dst,
                       const ScanLines &L) {
    return with_dtype(dt, ctx.op, [&]<emily_dtype D>() -> emily_status {
        typedef storage_t<D> S;
        return tree_run<D>(ctx, (int)op, L, (const S *)src, (S *)dst, true);
    });
}

} // namespace emily_cuda
