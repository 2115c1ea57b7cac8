// Shared pieces of the CUDA kernels (C++, nvcc only): strided layouts
// passed by value, index arithmetic, launch sizes and dtype dispatch.
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
#include <cuda_runtime.h>
#include "cuda/cuda_context.h"
#include "cuda/kernels.h"

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
template <int N, typename I>
__device__ __forceinline__ void layout_offsets(const Layout<N> &L, I i, I (&off)[N]) {
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
    int64_t cap = (int64_t)emily_cuda_sm_count(device) * 16;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    return (unsigned)blocks;
}

// Merged dims of N tensors sharing one shape. Writes at most `rank` dims
// (outermost first) into dims/strides (strides[k * cap + d]).
inline int merge_dims(int N, const emily_tensor *const *ts, int cap, int64_t *dims,
                      int64_t *strides) {
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
        for (int d = 0; d < L.rank; d++) span += (L.stride[k][d] < 0 ? -L.stride[k][d] : L.stride[k][d]) * (L.shape[d] - 1);
        if (span >= ((int64_t)1 << 31)) return false;
    }
    return true;
}

// Calls launch(layout, offsets) for the N tensors (same shape; element
// offsets of each operand relative to its buffer start), once, or once per
// leading index when the merged rank exceeds MAXD. Stops at the first error.
template <int N, typename F>
emily_status for_layout(const char *op, const emily_tensor *const *ts, F &&launch) {
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

// Element types by dtype.
struct c64_t { float re, im; };
struct c128_t { double re, im; };
struct alignas(16) b128_t { uint64_t lo, hi; };

template <typename T> __device__ __forceinline__ T *elem_ptr(void *base, int64_t off) {
    return (T *)base + off;
}

// Calls f.template operator()<T>() with T the storage type of dtype
// (uint16_t for f16 and bf16). Returns f's status.
template <typename F> emily_status dispatch_storage(emily_dtype t, F &&f) {
    switch (t) {
    case EMILY_U8: return f.template operator()<uint8_t>();
    case EMILY_U16: return f.template operator()<uint16_t>();
    case EMILY_U32: return f.template operator()<uint32_t>();
    case EMILY_U64: return f.template operator()<uint64_t>();
    case EMILY_S8: return f.template operator()<int8_t>();
    case EMILY_S16: return f.template operator()<int16_t>();
    case EMILY_S32: return f.template operator()<int32_t>();
    case EMILY_S64: return f.template operator()<int64_t>();
    case EMILY_F16: return f.template operator()<uint16_t>();
    case EMILY_BF16: return f.template operator()<uint16_t>();
    case EMILY_F32: return f.template operator()<float>();
    case EMILY_F64: return f.template operator()<double>();
    case EMILY_C64: return f.template operator()<c64_t>();
    case EMILY_C128: return f.template operator()<c128_t>();
    default: return emily_error(EMILY_ERR_TYPE, "cuda: invalid dtype %d", (int)t);
    }
}

// Raw bits of an element by its size.
template <size_t S> struct bits_of;
template <> struct bits_of<1> { typedef uint8_t type; };
template <> struct bits_of<2> { typedef uint16_t type; };
template <> struct bits_of<4> { typedef uint32_t type; };
template <> struct bits_of<8> { typedef uint64_t type; };
template <> struct bits_of<16> { typedef b128_t type; };

inline int dev_of(const emily_tensor *t) { return t->buffer->device.index; }
inline char *base_of(const emily_tensor *t) { return (char *)t->buffer->data; }

} // namespace emily_cuda

#endif
