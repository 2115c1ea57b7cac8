// The cumulative family on CUDA (cumulative_sum/product/max/min): the two
// ways its kernels run, shared by cumulative.cu (the entry point, which
// picks one as the CPU engine picks its path), cumulative_tree.cu and
// cumulative_seq.cu.
//
// src and dst are contiguous and viewed as [outer, n, inner] around the
// scanned axis. A "line" is one scan: the n elements of (r, j), r < outer,
// j < inner, `inner` apart, taken from the end when the scan is reversed.
// Line number l = r * inner + j.
//
//  - tree (cumulative_tree.cu): Nx's associative scan, the exact order of
//    combines the CPU replays (src/cpu/cumulative.c, tree_scan), computed
//    level by level in parallel. The CPU's path for float max/min and for
//    every f16, bf16 and c64 scan; integers take it too, since their
//    combines are exact and any order gives the CPU's wrap-around result.
//  - sequential (cumulative_seq.cu): one running accumulator per line in
//    double (pairs of doubles for complex, 64 bits wrapping for integers),
//    as the CPU's fast f32/f64 sums (fixed chunks of long rows:
//    core/ordered_fold.h) and its generic path (f32/f64 products, c128
//    sums and products) fold: each accumulator a chain of dependent
//    additions or products, exactly the CPU's.
#ifndef EMILY_CUDA_CUMULATIVE_CUH
#define EMILY_CUDA_CUMULATIVE_CUH

#include "cuda/common.cuh"
#include "core/kernels.h"

namespace emily_cuda {

// The lines of a scan over a contiguous [outer, n, inner] tensor.
struct ScanLines {
    int64_t n;     // elements per line (>= 1)
    int64_t inner; // distance between a line's elements (1: lines are rows)
    int64_t count; // lines: outer * inner
    bool rev;      // scan from the end

    // Element offset of the k-th element in scan order of line l.
    __host__ __device__ __forceinline__ int64_t at(int64_t l, int64_t k) const {
        int64_t kk = rev ? n - 1 - k : k;
        if (inner == 1) return l * n + kk;
        int64_t r = l / inner, j = l - r * inner;
        return (r * n + kk) * inner + j;
    }
};

// dst <- the scan of src (both of dtype dt, storage bits) in Nx's tree
// order; any op, dtypes: integers, floats (max/min, and f16/bf16 sums and
// products), c64 sums and products.
emily_status scan_tree(const emily_cuda_ctx &ctx, emily_cumulative_op op, emily_dtype dt, const void *src, void *dst,
                       const ScanLines &L);

// dst <- the running fold of each line in order (dtypes f32, f64, c128 and
// integers). f32/f64 sums start from +0.0 and cut rows of at least twice
// EMI_CUMSUM_CHUNK elements (inner == 1) into the CPU's chunks; every other
// fold starts from the line's first element.
emily_status scan_sequential(const emily_cuda_ctx &ctx, emily_cumulative_op op, emily_dtype dt, const void *src,
                             void *dst, const ScanLines &L);

} // namespace emily_cuda

#endif
