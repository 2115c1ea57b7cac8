// The window family on CUDA (window_reduce.cu, window_scatter.cu): the
// per-axis description of a window op that its kernels take by value.
//
// Axis d of the input (extent in[d], stride ist[d] elements) has out[d]
// window positions; position c starts at input index c * step[d] - pad[d]
// (pad: pad_lo, negative crops) and its win[d] elements are dil[d] apart.
// Indices outside [0, in[d]) are padding. See emily/ops_window.h.
#ifndef EMILY_CUDA_WINDOW_CUH
#define EMILY_CUDA_WINDOW_CUH

#include "cuda/common.cuh"
#include "core/kernels.h"

namespace emily_cuda {

// The op layer's limit on a window's rank (src/ops/window.c), and the
// rank most windows stay within: kernels keep a few per-axis counters in
// arrays of CAP entries (local memory, reserved per resident thread), so
// they come in both sizes.
constexpr int WIN_CAP = 64;
constexpr int WIN_SMALL = 8;

struct WinAxes {
    int rank;
    int64_t out[WIN_CAP], in[WIN_CAP], ist[WIN_CAP];
    int64_t win[WIN_CAP], step[WIN_CAP], dil[WIN_CAP], pad[WIN_CAP];
    int64_t aux[WIN_CAP], aux2[WIN_CAP]; // per-kernel extras (window_scatter.cu)
};

// The axes of src with out_shape window positions (dilations may be NULL:
// all 1). Fails when the rank is above WIN_CAP.
inline emily_status win_axes(const char *op, WinAxes &g, const emily_tensor *src, const int64_t *out_shape,
                             const int64_t *window, const int64_t *strides, const int64_t *dilations,
                             const int64_t *pad_lo) {
    if (src->rank > WIN_CAP)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: rank %d is above %d", op, src->rank, WIN_CAP);
    g.rank = src->rank;
    for (int d = 0; d < g.rank; d++) {
        g.out[d] = out_shape[d];
        g.in[d] = src->shape[d];
        g.ist[d] = src->strides[d];
        g.win[d] = window[d];
        g.step[d] = strides[d];
        g.dil[d] = dilations ? dilations[d] : 1;
        g.pad[d] = pad_lo[d];
        g.aux[d] = g.aux2[d] = 0;
    }
    return EMILY_OK;
}

// floor(a / b) and ceil(a / b) for b > 0 and any a.
__device__ __forceinline__ int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
__device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// window_scatter_max/min (window_scatter.cu), the family's second entry.
emily_status window_scatter(bool is_max, emily_tensor *dst, const emily_tensor *src, const emily_tensor *source,
                            const emily_tensor *init, const int64_t *window, const int64_t *strides,
                            const int64_t *pad_lo);

} // namespace emily_cuda

#endif
