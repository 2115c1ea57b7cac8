// Shared pieces of the CUDA kernels (C++, nvcc only): strided layouts
// passed by value, index arithmetic, launch sizes and element-wise maps
// (dtype dispatch: dtype_dispatch.cuh).
//
// A Layout<N> describes N operands over one shape, each with its own
// strides in elements, after dropping size-1 dimensions and merging
// dimensions that are contiguous for every operand (so a contiguous
// tensor, or a contiguous one with a broadcast scalar, has rank 1).
// Kernels map a linear output index to per-operand offsets with at most
// MAXD divisions. A layout with more than MAXD merged dimensions is run
// as several launches, one per index of its leading dimensions.
#ifndef EMILY_CUDA_COMMON_CUH
#define EMILY_CUDA_COMMON_CUH

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>
#include <cuda_runtime.h>
#include "cuda/cuda_context.h"
#include "cuda/kernels.h"
#include "cuda/dtype_dispatch.cuh"
#include "core/scalar_convert.h"
#include "cuda/element_fn.cuh"

namespace emily_cuda {

constexpr int MAXD = 8;
constexpr int BLOCK = 256;

template <int N> struct Layout {
    int rank;      // >= 1
    int64_t total; // elements
    int64_t shape[MAXD];
    int64_t stride[N][MAXD];
};

// Per-operand element offsets of linear index i (row-major over shape).
template <int N, typename I> __device__ __forceinline__ void layout_offsets(const Layout<N> &L, I i, I (&off)[N]) {
#pragma unroll
    for (int k = 0; k < N; k++) off[k] = 0;
#pragma unroll
    for (int d = MAXD - 1; d > 0; d--) {
        if (d < L.rank) {
            I s = (I)L.shape[d];
            I q = i / s;
            I c = i - q * s;
            i = q;
#pragma unroll
            for (int k = 0; k < N; k++) off[k] += c * (I)L.stride[k][d];
        }
    }
#pragma unroll
    for (int k = 0; k < N; k++) off[k] += i * (I)L.stride[k][0];
}

// Grid size for `total` elements handled `per_thread` at a time by a
// grid-stride loop: enough blocks to fill the device, no more.
inline unsigned grid_for(int device, int64_t total, int per_thread = 1) {
    int64_t threads = (total + per_thread - 1) / per_thread;
    int64_t blocks = (threads + BLOCK - 1) / BLOCK;
    int64_t cap = (int64_t)emi_cuda_sm_count(device) * 16;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (unsigned)blocks;
}

// Grid of a flat kernel: one thread per `per_thread` elements, uncapped,
// so each thread makes a single pass (measured on an H200, 2^28-element
// f32 add: 0.789 ms with the grid capped at 16 blocks per SM and a
// grid-stride loop, 0.750 ms uncapped, PyTorch 0.751 ms).
inline unsigned flat_grid(int64_t total, int per_thread) {
    int64_t threads = (total + per_thread - 1) / per_thread;
    int64_t blocks = (threads + BLOCK - 1) / BLOCK;
    if (blocks > INT32_MAX) blocks = INT32_MAX; // the grid-stride loop does the rest
    if (blocks < 1) blocks = 1;
    return (unsigned)blocks;
}

// Merged dims of N tensors sharing one shape. Writes at most `rank` dims
// (outermost first) into dims/strides (strides[k * cap + d]).
inline int merge_dims(int N, const emily_tensor *const *ts, int cap, int64_t *dims, int64_t *strides) {
    const emily_tensor *t0 = ts[0];
    int n = 0;
    for (int d = 0; d < t0->rank; d++) {
        if (t0->shape[d] == 1) continue;
        if (n > 0) {
            bool merge = true;
            for (int k = 0; k < N; k++)
                if (strides[k * cap + n - 1] != ts[k]->strides[d] * t0->shape[d]) {
                    merge = false;
                    break;
                }
            if (merge) {
                dims[n - 1] *= t0->shape[d];
                for (int k = 0; k < N; k++) strides[k * cap + n - 1] = ts[k]->strides[d];
                continue;
            }
        }
        dims[n] = t0->shape[d];
        for (int k = 0; k < N; k++) strides[k * cap + n] = ts[k]->strides[d];
        n++;
    }
    return n;
}

// True when every offset of the layout fits an int32 index.
template <int N> inline bool layout_fits32(const Layout<N> &L) {
    if (L.total >= ((int64_t)1 << 31)) return false;
    for (int k = 0; k < N; k++) {
        int64_t span = 0;
        for (int d = 0; d < L.rank; d++)
            span += (L.stride[k][d] < 0 ? -L.stride[k][d] : L.stride[k][d]) * (L.shape[d] - 1);
        if (span >= ((int64_t)1 << 31)) return false;
    }
    return true;
}

// Calls launch(layout, offsets) for the N tensors (same shape; element
// offsets of each operand relative to its buffer start), once, or once per
// leading index when the merged rank exceeds MAXD. Stops at the first error.
template <int N, typename F> emily_status for_layout(const char *op, const emily_tensor *const *ts, F &&launch) {
    const emily_tensor *t0 = ts[0];
    if (t0->size == 0) return EMILY_OK;
    int cap = t0->rank > 0 ? t0->rank : 1;
    int64_t stack[MAXD * (N + 2)];
    int64_t *mem = stack;
    if (cap > MAXD) {
        mem = (int64_t *)malloc(sizeof(int64_t) * (size_t)cap * (N + 2));
        if (!mem) return emily_error(EMILY_ERR_MEMORY, "cuda: %s: out of host memory", op);
    }
    int64_t *dims = mem, *strides = mem + cap, *idx = mem + cap * (N + 1);
    int n = merge_dims(N, ts, cap, dims, strides);
    if (n == 0) { // a single element
        dims[0] = 1;
        for (int k = 0; k < N; k++) strides[k * cap] = 0;
        n = 1;
    }
    int outer = n > MAXD ? n - MAXD : 0;
    Layout<N> L;
    L.rank = n - outer;
    L.total = 1;
    for (int d = 0; d < L.rank; d++) {
        L.shape[d] = dims[outer + d];
        L.total *= L.shape[d];
        for (int k = 0; k < N; k++) L.stride[k][d] = strides[k * cap + outer + d];
    }
    for (int d = L.rank; d < MAXD; d++) {
        L.shape[d] = 1;
        for (int k = 0; k < N; k++) L.stride[k][d] = 0;
    }
    emily_status s = EMILY_OK;
    if (outer == 0) {
        int64_t off[N];
        for (int k = 0; k < N; k++) off[k] = ts[k]->offset;
        s = launch(L, off);
    } else {
        for (int d = 0; d < outer; d++) idx[d] = 0;
        for (;;) {
            int64_t off[N];
            for (int k = 0; k < N; k++) {
                off[k] = ts[k]->offset;
                for (int d = 0; d < outer; d++) off[k] += idx[d] * strides[k * cap + d];
            }
            s = launch(L, off);
            if (s) break;
            int d = outer - 1;
            while (d >= 0 && ++idx[d] == dims[d]) idx[d--] = 0;
            if (d < 0) break;
        }
    }
    if (mem != stack) free(mem);
    return s;
}

// Calls f.template operator()<T>() with T the storage type of dtype.
template <typename F> emily_status dispatch_storage(emily_dtype t, F &&f) {
    return with_dtype(t, "cuda",
                      [&]<emily_dtype D>() -> emily_status { return f.template operator()<storage_t<D>>(); });
}

inline int dev_of(const emily_tensor *t) { return t->buffer->device.index; }

// emi_cuda_begin for a kernel that writes dst from src, on dst's device.
inline emily_status begin_dst_src(const char *op, const emily_tensor *dst, const emily_tensor *src,
                                  emily_cuda_ctx *ctx) {
    const emily_tensor *ts[2] = {dst, src};
    return emi_cuda_begin(op, dev_of(dst), 2, ts, ctx);
}

// Waits for ctx's stream and copies n bytes of device memory to the host;
// refused while the thread records a graph (nothing has run yet: replay.c).
inline emily_status read_back(const emily_cuda_ctx &ctx, void *host, const void *dev, size_t n) {
    if (emi_cuda_capturing(ctx.device))
        return emily_error(EMILY_ERR_UNSUPPORTED, "cuda: %s: not possible while recording a graph", ctx.op);
    cudaError_t err = cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, ctx.stream);
    if (err == cudaSuccess) err = cudaStreamSynchronize(ctx.stream);
    return emi_cuda_error(ctx.op, err);
}
inline char *base_of(const emily_tensor *t) { return (char *)t->buffer->data; }

// for_layout over a destination and one source, with each run's first
// elements typed: launch(L, d, s) with d a D* into dst, s an S* into src.
template <typename D, typename S, typename F>
emily_status for_layout_ds(const char *op, emily_tensor *dst, const emily_tensor *src, F &&launch) {
    const emily_tensor *ts[2] = {dst, src};
    D *dp = (D *)base_of(dst);
    const S *sp = (const S *)base_of(src);
    return for_layout<2>(op, ts, [&](const Layout<2> &L, const int64_t *off) -> emily_status {
        return launch(L, dp + off[0], sp + off[1]);
    });
}

// ---- integer folds ------------------------------------------------------------
//
// One step of an integer fold of the cumulative and window families, whose
// op enums share the order SUM, PRODUCT, MAX, MIN: sums and products wrap
// in the element's width (the low bits of the CPU's 64-bit arithmetic),
// max and min compare by the type's signedness.
static_assert((int)EMILY_CUMULATIVE_SUM == (int)EMILY_WINDOW_SUM &&
                  (int)EMILY_CUMULATIVE_PRODUCT == (int)EMILY_WINDOW_PRODUCT &&
                  (int)EMILY_CUMULATIVE_MAX == (int)EMILY_WINDOW_MAX &&
                  (int)EMILY_CUMULATIVE_MIN == (int)EMILY_WINDOW_MIN,
              "the fold ops of the cumulative and window families differ");
template <typename S> __device__ __forceinline__ S int_fold(int op, S acc, S x) {
    typedef typename std::conditional<sizeof(S) <= 4, uint32_t, uint64_t>::type U;
    switch (op) {
    case EMILY_CUMULATIVE_SUM: return (S)((U)acc + (U)x);
    case EMILY_CUMULATIVE_PRODUCT: return (S)((U)acc * (U)x);
    case EMILY_CUMULATIVE_MAX: return x > acc ? x : acc;
    default: return x < acc ? x : acc;
    }
}

// ---- lines along one axis ----------------------------------------------------
//
// Kernels that work along one axis (sort, FFT) enumerate the lines through
// views of their tensors without that axis: for_layout over the views
// gives each line's first elements; the axis stride does the rest.

// views[i] <- ts[i] without dimension `axis` (same buffer and offset);
// the caller releases them (emily_tensor_release).
inline emily_status views_without_axis(const char *op, int n, const emily_tensor *const *ts, int axis,
                                       emily_tensor **views) {
    for (int i = 0; i < n; i++) views[i] = NULL;
    int r = ts[0]->rank;
    int64_t *mem = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)(r > 1 ? r : 1));
    if (!mem) return emily_error(EMILY_ERR_MEMORY, "cuda: %s: out of host memory", op);
    int64_t *shape = mem, *strides = mem + (r > 1 ? r : 1);
    emily_status s = EMILY_OK;
    for (int i = 0; i < n && !s; i++) {
        int m = 0;
        for (int d = 0; d < r; d++) {
            if (d == axis) continue;
            shape[m] = ts[i]->shape[d];
            strides[m++] = ts[i]->strides[d];
        }
        s = emi_tensor_view(ts[i], r - 1, shape, strides, ts[i]->offset, &views[i]);
    }
    free(mem);
    return s;
}

// for_layout over line views, with the number of the launch's first line:
// f(L, off, r0), lines counted in row order across launches.
template <int N, typename F> emily_status for_lines(const char *op, const emily_tensor *const *views, F &&f) {
    int64_t r0 = 0;
    return for_layout<N>(op, views, [&](const Layout<N> &L, const int64_t *off) -> emily_status {
        emily_status s = f(L, off, r0);
        r0 += L.total;
        return s;
    });
}

// ---- element-wise maps ------------------------------------------------------
//
// Over the element functions of cuda/element_fn.cuh.

template <typename F> __global__ void map1_kernel(Layout<2> L, typename F::D *d, const typename F::S *s) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        layout_offsets<2, int64_t>(L, i, off);
        d[off[0]] = F::apply(s[off[1]]);
    }
}

template <typename T, int V> struct alignas(sizeof(T) * V) pack_t { T v[V]; };
// Elements per thread of the flat kernels: 16-byte loads of the input.
template <typename T> __host__ __device__ constexpr int vec_of() { return sizeof(T) >= 16 ? 1 : (int)(16 / sizeof(T)); }
// Packs a thread of a binary flat kernel loads before it computes any:
// several 16-byte loads in flight per thread are what bandwidth needs.
// Only where a pack of the output fits 16 bytes too (wider outputs would
// hold too many registers).
template <typename S, typename D> __host__ __device__ constexpr int flat_unroll() {
    return sizeof(D) * vec_of<S>() <= 16 ? 4 : 1;
}

inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

// Contiguous output and input: 16-byte loads, V elements a pack. (Not
// unrolled: unary functions are often long, and one copy of each is
// enough; the loads of neighbouring threads keep the bus busy.)
template <typename F> __global__ void map1_flat(int64_t n, typename F::D *d, const typename F::S *s) {
    typedef typename F::S S;
    typedef typename F::D D;
    constexpr int V = vec_of<S>();
    int64_t nv = n / V, tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, step = (int64_t)gridDim.x * blockDim.x;
    const pack_t<S, V> *ps = (const pack_t<S, V> *)s;
    pack_t<D, V> *pd = (pack_t<D, V> *)d;
    for (int64_t j = tid; j < nv; j += step) {
        pack_t<S, V> x = ps[j];
        pack_t<D, V> y;
#pragma unroll
        for (int k = 0; k < V; k++) y.v[k] = F::apply(x.v[k]);
        pd[j] = y;
    }
    for (int64_t i = nv * V + tid; i < n; i += step) d[i] = F::apply(s[i]);
}

// dst <- F(src) over any strides (same shape).
template <typename F> emily_status map1(const emily_cuda_ctx &ctx, emily_tensor *dst, const emily_tensor *src) {
    typedef typename F::S S;
    typedef typename F::D D;
    return for_layout_ds<D, S>(ctx.op, dst, src, [&](const Layout<2> &L, D *d, const S *x) -> emily_status {
        constexpr int V = vec_of<S>();
        // one element, or both runs contiguous and pack-aligned
        bool flat = L.rank == 1 && (L.total == 1 || (L.stride[0][0] == 1 && L.stride[1][0] == 1 &&
                                                     ((uintptr_t)d % (sizeof(D) * V)) == 0 && aligned16(x)));
        if (flat) map1_flat<F><<<flat_grid(L.total, V), BLOCK, 0, ctx.stream>>>(L.total, d, x);
        else map1_kernel<F><<<grid_for(ctx.device, L.total), BLOCK, 0, ctx.stream>>>(L, d, x);
        return emi_cuda_launched(&ctx);
    });
}

// Contiguous outputs with inputs that are contiguous (step 1) or one
// broadcast element (step 0): 16-byte loads and stores, V elements a pack,
// flat_unroll packs a step.
template <typename F>
__device__ __forceinline__ void map2_pack(const typename F::S *a, int sa, typename F::S a0, const typename F::S *b,
                                          int sb, typename F::S b0, int64_t j,
                                          pack_t<typename F::S, vec_of<typename F::S>()> &pa,
                                          pack_t<typename F::S, vec_of<typename F::S>()> &pb) {
    typedef typename F::S S;
    constexpr int V = vec_of<S>();
    if (sa) pa = ((const pack_t<S, V> *)a)[j];
    else
#pragma unroll
        for (int k = 0; k < V; k++) pa.v[k] = a0;
    if (sb) pb = ((const pack_t<S, V> *)b)[j];
    else
#pragma unroll
        for (int k = 0; k < V; k++) pb.v[k] = b0;
}

template <typename F>
__global__ void map2_flat(int64_t n, typename F::D *d, const typename F::S *a, int sa, const typename F::S *b, int sb) {
    typedef typename F::S S;
    typedef typename F::D D;
    constexpr int V = vec_of<S>(), U = flat_unroll<S, D>();
    int64_t nv = n / V, tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, step = (int64_t)gridDim.x * blockDim.x,
            j = tid;
    S a0 = a[0], b0 = b[0];
    pack_t<D, V> *pd = (pack_t<D, V> *)d;
    for (; j + (U - 1) * step < nv; j += U * step) {
        pack_t<S, V> pa[U], pb[U];
#pragma unroll
        for (int u = 0; u < U; u++) map2_pack<F>(a, sa, a0, b, sb, b0, j + u * step, pa[u], pb[u]);
#pragma unroll
        for (int u = 0; u < U; u++) {
            pack_t<D, V> y;
#pragma unroll
            for (int k = 0; k < V; k++) y.v[k] = F::apply(pa[u].v[k], pb[u].v[k]);
            pd[j + u * step] = y;
        }
    }
    for (; j < nv; j += step) {
        pack_t<S, V> pa, pb;
        map2_pack<F>(a, sa, a0, b, sb, b0, j, pa, pb);
        pack_t<D, V> y;
#pragma unroll
        for (int k = 0; k < V; k++) y.v[k] = F::apply(pa.v[k], pb.v[k]);
        pd[j] = y;
    }
    for (int64_t i = nv * V + tid; i < n; i += step) d[i] = F::apply(a[sa ? i : 0], b[sb ? i : 0]);
}

template <typename F>
__global__ void map2_kernel(Layout<3> L, typename F::D *d, const typename F::S *a, const typename F::S *b) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[3];
        layout_offsets<3, int64_t>(L, i, off);
        d[off[0]] = F::apply(a[off[1]], b[off[2]]);
    }
}

// dst <- F(a, b) over any strides (same shape; broadcast views welcome).
template <typename F>
emily_status map2(const emily_cuda_ctx &ctx, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b) {
    typedef typename F::S S;
    typedef typename F::D D;
    const emily_tensor *ts[3] = {dst, a, b};
    D *dp = (D *)base_of(dst);
    const S *ap = (const S *)base_of(a), *bp = (const S *)base_of(b);
    return for_layout<3>(ctx.op, ts, [&](const Layout<3> &L, const int64_t *off) -> emily_status {
        D *d = dp + off[0];
        const S *x = ap + off[1], *y = bp + off[2];
        int64_t sd = L.stride[0][0], sa = L.stride[1][0], sb = L.stride[2][0];
        constexpr int V = vec_of<S>();
        // one element (the smallest launch), or contiguous runs with
        // broadcast scalars, pack-aligned
        bool one = L.total == 1;
        if (L.rank == 1 && (one || sd == 1) && (sa == 0 || sa == 1) && (sb == 0 || sb == 1) &&
            (one ||
             (((uintptr_t)d % (sizeof(D) * V)) == 0 && (sa == 0 || aligned16(x)) && (sb == 0 || aligned16(y))))) {
            map2_flat<F><<<flat_grid(L.total, V * flat_unroll<S, D>()), BLOCK, 0, ctx.stream>>>(L.total, d, x, (int)sa,
                                                                                                y, (int)sb);
        } else {
            map2_kernel<F><<<grid_for(ctx.device, L.total), BLOCK, 0, ctx.stream>>>(L, d, x, y);
        }
        return emi_cuda_launched(&ctx);
    });
}

} // namespace emily_cuda

#endif
