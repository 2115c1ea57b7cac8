// Running folds on CUDA: the CPU's f32/f64 cumulative sums and its generic
// scan path (f32/f64 products, c128 sums and products, integers), each line
// one chain of dependent operations in the CPU's order (see
// src/cpu/cumulative.c), so every output has the CPU's bits:
//
//  - f32/f64 sums accumulate in double from -0.0 (a run of -0.0 stays -0.0,
//    as on the CPU), each output rounded once;
//    a row of at least 2 * EMI_CUMSUM_CHUNK elements (inner == 1) is cut
//    into chunks: each chunk's total from four interleaved accumulators
//    ((a0 + a1) + (a2 + a3)), the totals' exclusive prefix in the scan's
//    direction, then each chunk's running sum from its prefix;
//  - the generic fold starts from the line's first element (integers:
//    wrapping in their width; floats and complex in double).
//
// A chain cannot be split without changing its roundings, so the
// parallelism is the number of chains: a thread per line. Lines that are
// rows (inner == 1) go through shared memory: a block takes 32 lines, all
// its threads load 1 KiB of each at a time (coalesced, the next step's
// loads in flight while the current one is folded), warp 0 folds (lane l,
// line l) and the block stores the results. Lines `inner` apart are read
// directly, a thread per line, neighbouring threads on neighbouring
// addresses. Short rows too (a thread a row), where a block-wide step
// would be mostly idle.
#include "cuda/cumulative.cuh"
#include "core/ordered_fold.h"
#include "core/scalar_binary.h"

using namespace emily_cuda;

namespace {

// The accumulator of one line for dtype D and op OP: load reads an element
// (a double, a pair of doubles, or the integer itself), step folds one in,
// store writes the accumulator as an element (Nx's rules, as the CPU's
// we_store_f / we_store_int).
template <emily_dtype D, int OP> struct Fold {
    typedef storage_t<D> S;
    typedef typename std::conditional<is_complex(D), emily_sb_complex,
                                      typename std::conditional<is_integer(D), S, double>::type>::type A;

    static __device__ __forceinline__ A load(S x) {
        if constexpr (is_complex(D)) return emily_sb_cmake(cv_rules<D>::re(x), cv_rules<D>::im(x));
        else if constexpr (is_integer(D)) return x;
        else return cv_rules<D>::re(x);
    }
    static __device__ __forceinline__ A step(A acc, A v) {
        if constexpr (is_integer(D)) return int_fold(OP, acc, v);
        else if constexpr (is_complex(D))
            return OP == EMILY_CUMULATIVE_SUM ? emily_sb_cadd(acc, v) : emily_sb_cmultiply(acc, v);
        else return OP == EMILY_CUMULATIVE_SUM ? acc + v : acc * v;
    }
    static __device__ __forceinline__ S store(A acc) {
        if constexpr (is_complex(D)) return cv_rules<D>::from_f64(acc.re, acc.im);
        else if constexpr (is_integer(D)) return acc;
        else return cv_rules<D>::from_f64(acc, 0.0);
    }
};

// Calls f.template operator()<OP>() with the op as a constant (kernels
// switch once, outside their loops).
template <typename F> __device__ __forceinline__ void with_op(int op, F &&f) {
    switch (op) {
    case EMILY_CUMULATIVE_SUM: f.template operator()<EMILY_CUMULATIVE_SUM>(); break;
    case EMILY_CUMULATIVE_PRODUCT: f.template operator()<EMILY_CUMULATIVE_PRODUCT>(); break;
    case EMILY_CUMULATIVE_MAX: f.template operator()<EMILY_CUMULATIVE_MAX>(); break;
    default: f.template operator()<EMILY_CUMULATIVE_MIN>(); break;
    }
}

// ---- a thread per line --------------------------------------------------------

// from_zero: the f32/f64 sum (acc = -0.0 + x0 + ...); otherwise acc = x0.
template <emily_dtype D>
__global__ void line_thread_kernel(int op, ScanLines L, bool from_zero, const storage_t<D> *__restrict__ src,
                                   storage_t<D> *__restrict__ dst) {
    with_op(op, [&]<int OP>() {
        typedef Fold<D, OP> F;
        for (int64_t l = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; l < L.count;
             l += (int64_t)gridDim.x * blockDim.x) {
            int64_t off = L.at(l, 0), step = L.rev ? -L.inner : L.inner;
            typename F::A acc = F::load(src[off]);
            if constexpr (!is_integer(D) && !is_complex(D))
                if (from_zero) acc = -0.0 + acc;
            dst[off] = F::store(acc);
            for (int64_t k = 1; k < L.n; k++) {
                off += step;
                acc = F::step(acc, F::load(src[off]));
                dst[off] = F::store(acc);
            }
        }
    });
}

// ---- rows through shared memory -----------------------------------------------

constexpr int ROW_LANES = 32;    // lines per block: the lanes of warp 0
constexpr int ROW_THREADS = 256; // loaders and storers
constexpr int ROW_BYTES = 1024;  // of each line per step
// Rows shorter than this take a thread each (line_thread_kernel).
constexpr int64_t ROW_MIN = 64;

// Lines of a row-wise scan: rows of n cut into `nch` chunks of `chunk`
// (nch = 1, chunk = n: whole rows).
struct RowLines {
    int64_t n, chunk, nch, count;
    bool rev;
};

enum RowMode {
    ROW_SUM,   // running sum from the line's prefix (tot; -0.0 without)
    ROW_FOLD,  // running fold from the line's first element
    ROW_TOTALS // the chunk total of four interleaved accumulators -> tot
};

template <emily_dtype D, RowMode MODE>
__global__ void __launch_bounds__(ROW_THREADS)
    row_kernel(int op, RowLines g, const storage_t<D> *__restrict__ src, storage_t<D> *__restrict__ dst, double *tot) {
    typedef storage_t<D> S;
    constexpr int W = ROW_BYTES / (int)sizeof(S); // positions per line per step
    constexpr int PER = ROW_LANES * W / ROW_THREADS;
    __shared__ S tile[ROW_LANES][W + 1];
    __shared__ int64_t lstart[ROW_LANES], llen[ROW_LANES];
    const int t = threadIdx.x, lane = t & 31;
    const bool folder = t < 32;
    int64_t nsteps = ((g.chunk < g.n ? g.chunk : g.n) + W - 1) / W;
    for (int64_t q0 = (int64_t)blockIdx.x * ROW_LANES; q0 < g.count; q0 += (int64_t)gridDim.x * ROW_LANES) {
        if (t < ROW_LANES) {
            int64_t q = q0 + t, len = 0, start = 0;
            if (q < g.count) {
                int64_t r = q / g.nch, c = q - r * g.nch;
                start = r * g.n + c * g.chunk;
                len = g.n - c * g.chunk < g.chunk ? g.n - c * g.chunk : g.chunk;
            }
            lstart[t] = start;
            llen[t] = len;
        }
        __syncthreads();
        // element k of this thread in a step: line (t + k * ROW_THREADS) / W
        S reg[PER];
        auto load_step = [&](int64_t s) {
#pragma unroll
            for (int k = 0; k < PER; k++) {
                int e = t + k * ROW_THREADS, l = e / W, w = e % W;
                int64_t u = s * W + w, len = llen[l];
                if (u < len) reg[k] = src[lstart[l] + (g.rev && MODE != ROW_TOTALS ? len - 1 - u : u)];
            }
        };
        load_step(0);
        typename Fold<D, EMILY_CUMULATIVE_SUM>::A acc{};
        bool have = false;
        double a0 = -0.0, a1 = -0.0, a2 = -0.0, a3 = -0.0;
        int64_t mylen = llen[lane];
        if constexpr (MODE == ROW_SUM) {
            if constexpr (!is_integer(D) && !is_complex(D)) {
                acc = tot && q0 + lane < g.count ? tot[q0 + lane] : -0.0;
                have = true;
            }
        }
        for (int64_t s = 0; s < nsteps; s++) {
            __syncthreads(); // the previous step's tile is stored
#pragma unroll
            for (int k = 0; k < PER; k++) {
                int e = t + k * ROW_THREADS, l = e / W, w = e % W;
                if (s * W + w < llen[l]) tile[l][w] = reg[k];
            }
            __syncthreads();
            if (s + 1 < nsteps) load_step(s + 1);
            if (folder) {
                int64_t left = mylen - s * W;
                int cnt = left < W ? (int)(left > 0 ? left : 0) : W;
                if constexpr (MODE == ROW_TOTALS) {
                    if constexpr (!is_integer(D) && !is_complex(D)) {
                        // positions s*W + w, w % 4 picking the accumulator;
                        // past the last multiple of 4 everything goes to a0
                        int64_t n4 = mylen & ~(int64_t)3;
                        for (int w = 0; w < cnt; w += 4) {
                            int64_t u = s * W + w;
                            double x0 = cv_rules<D>::re(tile[lane][w]);
                            if (u < n4) {
                                a0 += x0;
                                a1 += cv_rules<D>::re(tile[lane][w + 1]);
                                a2 += cv_rules<D>::re(tile[lane][w + 2]);
                                a3 += cv_rules<D>::re(tile[lane][w + 3]);
                            } else {
                                a0 += x0;
                                for (int j = 1; j < 4 && w + j < cnt; j++) a0 += cv_rules<D>::re(tile[lane][w + j]);
                            }
                        }
                    }
                } else {
                    with_op(op, [&]<int OP>() {
                        typedef Fold<D, OP> F;
                        typename F::A a = acc;
                        bool h = have;
#pragma unroll 8
                        for (int w = 0; w < cnt; w++) {
                            typename F::A v = F::load(tile[lane][w]);
                            a = h ? F::step(a, v) : v;
                            h = true;
                            tile[lane][w] = F::store(a);
                        }
                        acc = a;
                        have = h;
                    });
                }
            }
            __syncthreads();
            if constexpr (MODE != ROW_TOTALS) {
#pragma unroll
                for (int k = 0; k < PER; k++) {
                    int e = t + k * ROW_THREADS, l = e / W, w = e % W;
                    int64_t u = s * W + w, len = llen[l];
                    if (u < len) dst[lstart[l] + (g.rev ? len - 1 - u : u)] = tile[l][w];
                }
            }
        }
        if constexpr (MODE == ROW_TOTALS)
            if (folder && q0 + lane < g.count) tot[q0 + lane] = (a0 + a1) + (a2 + a3);
        __syncthreads(); // lstart/llen of the next group
    }
}

// Each row's chunk totals -> their exclusive prefix in the scan's
// direction (run = -0.0; each chunk gets run, then run += its total), a warp
// per row: lanes load 32 totals at a time, every lane runs the same chain.
__global__ void chunk_prefix_kernel(double *tot, int64_t rows, int64_t nch, bool rev) {
    int lane = threadIdx.x & 31;
    int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5,
            nwarps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t r = warp; r < rows; r += nwarps) {
        double *row = tot + r * nch, run = -0.0;
        for (int64_t b = 0; b < nch; b += 32) {
            int64_t k = b + lane, c = rev ? nch - 1 - k : k;
            double t = k < nch ? row[c] : 0.0, mine = 0.0;
            for (int m = 0; m < 32 && b + m < nch; m++) {
                double tm = __shfl_sync(0xffffffffu, t, m);
                if (lane == m) mine = run;
                run = run + tm;
            }
            if (k < nch) row[c] = mine;
        }
    }
}

template <emily_dtype D>
emily_status seq_run(const emily_cuda_ctx &ctx, int op, const ScanLines &L, const storage_t<D> *src,
                     storage_t<D> *dst) {
    constexpr bool native = D == EMILY_F32 || D == EMILY_F64;
    bool sum = native && op == EMILY_CUMULATIVE_SUM;
    // integers come here only for lines `inner` apart (cumulative.cu)
    if (is_integer(D) || L.inner > 1 || L.n < ROW_MIN) {
        line_thread_kernel<D><<<grid_for(ctx.device, L.count), BLOCK, 0, ctx.stream>>>(op, L, sum, src, dst);
        return emi_cuda_launched(&ctx);
    }
    auto blocks = [&](int64_t lines) {
        int64_t b = (lines + ROW_LANES - 1) / ROW_LANES;
        return (unsigned)(b < INT32_MAX ? b : INT32_MAX);
    };
    RowLines g = {L.n, L.n, 1, L.count, L.rev};
    if constexpr (!is_integer(D)) {
        if (!sum) {
            row_kernel<D, ROW_FOLD><<<blocks(g.count), ROW_THREADS, 0, ctx.stream>>>(op, g, src, dst, NULL);
            return emi_cuda_launched(&ctx);
        }
    }
    if constexpr (native) {
        if (L.n < 2 * EMI_CUMSUM_CHUNK) {
            row_kernel<D, ROW_SUM><<<blocks(g.count), ROW_THREADS, 0, ctx.stream>>>(op, g, src, dst, NULL);
            return emi_cuda_launched(&ctx);
        }
        // the CPU's chunks: totals, their prefix, the runs
        g.chunk = EMI_CUMSUM_CHUNK;
        g.nch = (L.n + EMI_CUMSUM_CHUNK - 1) / EMI_CUMSUM_CHUNK;
        g.count = L.count * g.nch;
        double *tot = NULL;
        emily_status s = emi_cuda_scratch(&ctx, (size_t)g.count * sizeof(double), (void **)&tot);
        if (s) return s;
        row_kernel<D, ROW_TOTALS><<<blocks(g.count), ROW_THREADS, 0, ctx.stream>>>(op, g, src, dst, tot);
        s = emi_cuda_launched(&ctx);
        if (!s) {
            chunk_prefix_kernel<<<grid_for(ctx.device, L.count * 32), BLOCK, 0, ctx.stream>>>(tot, L.count, g.nch,
                                                                                              L.rev);
            s = emi_cuda_launched(&ctx);
        }
        if (!s) {
            row_kernel<D, ROW_SUM><<<blocks(g.count), ROW_THREADS, 0, ctx.stream>>>(op, g, src, dst, tot);
            s = emi_cuda_launched(&ctx);
        }
        emi_cuda_scratch_free(&ctx, tot);
        return s;
    } else {
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: no running sum for %s", ctx.op, emily_dtype_name(D));
    }
}

} // namespace

namespace emily_cuda {

emily_status scan_sequential(const emily_cuda_ctx &ctx, emily_cumulative_op op, emily_dtype dt, const void *src,
                             void *dst, const ScanLines &L) {
    return with_dtype(dt, ctx.op, [&]<emily_dtype D>() -> emily_status {
        typedef storage_t<D> S;
        if constexpr (is_integer(D) || D == EMILY_F32 || D == EMILY_F64 || D == EMILY_C128)
            return seq_run<D>(ctx, (int)op, L, (const S *)src, (S *)dst);
        else return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: %s scans run as a tree", ctx.op, emily_dtype_name(dt));
    });
}

} // namespace emily_cuda
