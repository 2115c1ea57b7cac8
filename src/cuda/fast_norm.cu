// The CUDA engine's fused normalizations (emily/ops_fast.h): layer_norm and
// rms_norm, one warp per row.
//
// Lane k of a row's warp takes the chunks of 8 consecutive elements at
// 256 i + 8 k (one 16-byte load each for 2-byte types, two for f32), sums
// element 256 i + 8 k + t into its t-th partial in double (f64 rows: in
// f64) from 0.0, adds its partials t + 4, + 2, + 1 into t, and the warp
// combines its lanes with an xor butterfly (offsets 16, 8, 4, 2, 1), after
// which every lane holds the row's sum: exactly the order of
// src/core/norm_rules.h, which the CPU engine follows too, so the two
// devices give the same bits. Everything after the sums (the mean, the
// scale, the affine step and every rounding) is the header's expression
// through norm_rules.h's shared helpers; the build's --fmad=false keeps
// products and sums separately rounded as on the CPU.
//
// Rows of up to 1024 elements of f16/bf16/f32 whose chunks are whole and
// aligned (below) are read from memory once into the lanes' registers,
// where the passes take them; other rows and f64 rows are read at each
// pass (twice for rms_norm, three times for layer_norm, from L1/L2 after
// the first). gamma and beta are read 8 at a time, and the output written
// 8 at a time, where the row length is a multiple of 8 and every pointer
// 16-byte aligned (else element by element, in the same order). Blocks
// hold 8 warps and stride over the rows when there are more rows than the
// grid has warps.
//
// History (bf16 16384 x 4096 on the H200, bench/gpu): one element a lane
// at k, k + 32, ... (the order softmax keeps: 2-byte loads and stores, and
// gamma/beta read an element at a time) ran at 0.54 (rms) and 0.42
// (layer) of the copy bandwidth; the same with its register rows capped at
// 1024 as here took rms 0.134-0.136 ms and layer 0.176-0.180 where this
// kernel took 0.116-0.119 and 0.142-0.147 (same machine, alternating
// runs); a staged version (each warp's row copied into shared memory with
// 16-byte loads) was slower still (0.48 and 0.30 of the copy: 64 KB of
// shared memory a block left 24 warps an SM) and was not kept.
#include "cuda/common.cuh"
#include "cuda/work_type.cuh"
#include "core/norm_rules.h"

using namespace emily_cuda;

namespace {

constexpr int WARP = 32;
constexpr int ROWS_PER_BLOCK = BLOCK / WARP;
constexpr int CHUNK = EMI_NORM_CHUNK; // consecutive elements a lane takes
constexpr int SPAN = WARP * CHUNK;    // a warp's elements a step
static_assert(EMI_NORM_LANES == WARP, "the row sums' partials are a warp's lanes");

// W, the statistics type of x's dtype X; A, the affine type of the output O.
// (both work_type.cuh's work type, with its loads, roundings and stores)
template <emily_dtype X> using stat_t = work_t<X>;
template <emily_dtype O> using affine_t = work_t<O>;

// 8 consecutive elements, moved with 16-byte loads and stores
template <typename T> struct alignas(16) Chunk { T e[CHUNK]; };

// The chunk of p at j: whole when vec (every chunk whole and aligned),
// else element by element up to n (zeros past it).
template <typename T> __device__ __forceinline__ Chunk<T> load_chunk(const T *p, int64_t j, int64_t n, bool vec) {
    Chunk<T> c;
    if (vec) return *reinterpret_cast<const Chunk<T> *>(p + j);
#pragma unroll
    for (int t = 0; t < CHUNK; t++) c.e[t] = j + t < n ? p[j + t] : T{};
    return c;
}

template <typename T>
__device__ __forceinline__ void store_chunk(T *p, int64_t j, int64_t n, bool vec, const Chunk<T> &c) {
    if (vec) {
        *reinterpret_cast<Chunk<T> *>(p + j) = c;
        return;
    }
#pragma unroll
    for (int t = 0; t < CHUNK; t++)
        if (j + t < n) p[j + t] = c.e[t];
}

// Hides a register chunk of 2-byte elements from the compiler before a
// pass, so it widens them again (one instruction each for bf16) instead of
// keeping the whole row widened to float across the passes: twice the
// registers, and fewer warps an SM.
template <typename T> __device__ __forceinline__ void rewiden(Chunk<T> &c) {
    if constexpr (sizeof(T) == 2) {
        uint32_t w[CHUNK / 2];
        memcpy(w, c.e, sizeof w);
#pragma unroll
        for (int k = 0; k < CHUNK / 2; k++) asm volatile("" : "+r"(w[k]));
        memcpy(c.e, w, sizeof w);
    }
}

// A lane's partials combined, then the warp's lanes, in norm_rules.h's
// order (every lane gets the row's sum).
__device__ __forceinline__ double row_sum(double (&part)[CHUNK]) {
#pragma unroll
    for (int s = CHUNK / 2; s >= 1; s /= 2)
#pragma unroll
        for (int t = 0; t < s; t++) part[t] = part[t] + part[t + s];
    double v = part[0];
#pragma unroll
    for (int s = WARP / 2; s >= 1; s /= 2) v = v + __shfl_xor_sync(0xffffffffu, v, s);
    return v;
}

template <typename W> __device__ __forceinline__ W mean_of(double sum, int64_t n) {
    if constexpr (sizeof(W) == sizeof(double)) return emi_norm_mean_f64(sum, n);
    else return emi_norm_mean_f32(sum, n);
}

// A row's chunks as lane `lane` sees them: the chunk at 256 i + 8 lane for
// i = 0, 1, ... in that order. PER > 0 keeps them in registers (PER
// chunks a lane at most, read from memory once) and takes whole aligned
// chunks only (vec; so no element needs a bounds check, which would keep
// a flag an element alive across the passes); PER = 0 reads the row from
// memory at each pass, chunk by chunk where vec, else element by element.
// Both give the same values in the same order, so the sums below do not
// depend on it.
template <emily_dtype X, int PER> struct RowView {
    Chunk<storage_t<X>> v[PER > 0 ? PER : 1];
    const storage_t<X> *xr;
    int64_t n;
    int64_t first; // the lane's first element, 8 lane
    bool vec;
    __device__ __forceinline__ RowView(const storage_t<X> *row, int64_t len, int lane, bool vector)
        : xr(row), n(len), first((int64_t)lane * CHUNK), vec(vector) {
        if constexpr (PER > 0) {
#pragma unroll
            for (int i = 0; i < PER; i++) {
                int64_t j = first + (int64_t)i * SPAN;
                if (j < n) v[i] = load_chunk(xr, j, n, vec);
                rewiden(v[i]); // packed from here on, whichever load filled it
            }
        }
    }
    // f(j, chunk at j) for each of the lane's chunks in order
    template <typename F> __device__ __forceinline__ void each(F f) {
        if constexpr (PER > 0) {
#pragma unroll
            for (int i = 0; i < PER; i++) {
                int64_t j = first + (int64_t)i * SPAN;
                rewiden(v[i]);
                if (j < n) f(j, v[i]);
            }
        } else {
            for (int64_t j = first; j < n; j += SPAN) f(j, load_chunk(xr, j, n, vec));
        }
    }
};

// SUM term(x_j) over a row in norm_rules.h's order (elements past n, in a
// row's last chunk, add nothing).
template <emily_dtype X, int PER, typename Term>
__device__ __forceinline__ double sum_row(RowView<X, PER> &row, Term term) {
    double part[CHUNK];
#pragma unroll
    for (int t = 0; t < CHUNK; t++) part[t] = 0.0;
    row.each([&](int64_t j, const Chunk<storage_t<X>> &c) {
#pragma unroll
        for (int t = 0; t < CHUNK; t++)
            if (PER > 0 || j + t < row.n) part[t] += (double)term(load_work<X>(c.e[t]));
    });
    return row_sum(part);
}

template <emily_dtype X, emily_dtype O, bool RMS, int PER>
__global__ void __launch_bounds__(BLOCK)
    norm_kernel(const storage_t<X> *__restrict__ x, storage_t<O> *__restrict__ y, const affine_t<O> *__restrict__ g,
                const affine_t<O> *__restrict__ b, int64_t rows, int64_t n, stat_t<X> e, bool vector) {
    typedef stat_t<X> W;
    typedef affine_t<O> A;
    const bool vec = PER > 0 || vector; // launch_norm keeps the registers for whole aligned chunks
    const int lane = (int)(threadIdx.x % WARP);
    const int64_t nwarps = (int64_t)gridDim.x * ROWS_PER_BLOCK;
    for (int64_t row = (int64_t)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / WARP; row < rows; row += nwarps) {
        RowView<X, PER> xr(x + row * n, n, lane, vec);
        storage_t<O> *yr = y + row * n;
        if constexpr (RMS) {
            // the mean of x^2, each square rounded to W
            W ms = mean_of<W>(sum_row(xr, [](W v) { return v * v; }), n), r;
            if constexpr (sizeof(W) == sizeof(double)) r = emi_rms_norm_r_f64(ms, e);
            else r = emi_rms_norm_r_f32(ms, e);
            xr.each([&](int64_t j, const Chunk<storage_t<X>> &c) {
                Chunk<A> gc = load_chunk(g, j, n, vec);
                Chunk<storage_t<O>> out;
#pragma unroll
                for (int t = 0; t < CHUNK; t++) {
                    W z = round_work<X>(load_work<X>(c.e[t]) * r);
                    A v = (A)z * gc.e[t];
                    out.e[t] = store_work<O>(v);
                }
                store_chunk(yr, j, n, vec, out);
            });
        } else {
            W m = mean_of<W>(sum_row(xr, [](W v) { return v; }), n);
            // the mean of (x - m)^2, each difference and square rounded to W
            W var = mean_of<W>(sum_row(xr,
                                       [m](W v) {
                                           W c = v - m;
                                           return c * c;
                                       }),
                               n),
              r;
            if constexpr (sizeof(W) == sizeof(double)) r = emi_layer_norm_r_f64(var, e);
            else r = emi_layer_norm_r_f32(var, e);
            xr.each([&](int64_t j, const Chunk<storage_t<X>> &c) {
                Chunk<A> gc = load_chunk(g, j, n, vec), bc;
                if (b) bc = load_chunk(b, j, n, vec);
                Chunk<storage_t<O>> out;
#pragma unroll
                for (int t = 0; t < CHUNK; t++) {
                    W cv = load_work<X>(c.e[t]) - m;
                    A s = gc.e[t] * (A)r;
                    A p = s * (A)cv;
                    out.e[t] = store_work<O>(b ? p + bc.e[t] : p);
                }
                store_chunk(yr, j, n, vec, out);
            });
        }
    }
}

// Launches the kernel whose register row holds n: rows of up to 1024
// elements of 2- or 4-byte types stay in registers (read once) where
// their chunks are whole and aligned; longer rows, the others and f64
// ones are read at each pass. (Keeping rows of up to 4096 in registers
// ran slower on the H200, bf16 16384 x 4096: rms 0.114 -> 0.144 ms at 128
// registers and two blocks an SM, 0.115 at ~170 and one block an SM;
// layer 0.137 -> 0.173 and 0.148: the warps an SM count more than the
// passes' reads from L1/L2. Unrolling the re-reading loop by 4 on an H100:
// rms 0.153 -> 0.365 ms, layer 0.229 -> 0.196; not kept.)
template <emily_dtype X, emily_dtype O, bool RMS>
void launch_norm(unsigned grid, cudaStream_t stream, const storage_t<X> *x, storage_t<O> *y, const affine_t<O> *g,
                 const affine_t<O> *b, int64_t rows, int64_t n, stat_t<X> e, bool vec) {
    if constexpr (X != EMILY_F64) {
        if (!vec) return norm_kernel<X, O, RMS, 0><<<grid, BLOCK, 0, stream>>>(x, y, g, b, rows, n, e, vec);
        if (n <= 2 * SPAN) return norm_kernel<X, O, RMS, 2><<<grid, BLOCK, 0, stream>>>(x, y, g, b, rows, n, e, vec);
        if (n <= 4 * SPAN) return norm_kernel<X, O, RMS, 4><<<grid, BLOCK, 0, stream>>>(x, y, g, b, rows, n, e, vec);
    }
    norm_kernel<X, O, RMS, 0><<<grid, BLOCK, 0, stream>>>(x, y, g, b, rows, n, e, vec);
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
    // every chunk whole and every chunk's address 16-byte aligned
    bool vec = n % CHUNK == 0 && aligned16(xp) && aligned16(yp) && aligned16(gp) && (!bp || aligned16(bp));
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
                    if (rms) launch_norm<X, O, true>(grid, ctx.stream, xs, ys, (const A *)gp, nullptr, rows, n, e, vec);
                    else
                        launch_norm<X, O, false>(grid, ctx.stream, xs, ys, (const A *)gp, (const A *)bp, rows, n, e,
                                                 vec);
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
