// The index family on CUDA: take, take_along_axis, gather, indexed add
// and put, with the semantics of src/cpu/index.c (contracts in
// src/core/kernels.h, index family: inputs contiguous, dst fresh and contiguous).
//
// Every entry point first checks its indices on the device: one thread a
// row of indices reads each index of the row in order (any integer dtype,
// u64 values above INT64_MAX counting as negative, like the CPU's
// read_index), records the row-major position of the first bad one with
// atomicMin (so the smallest bad position, the one the CPU meets first),
// and writes each row's element offset, sum of index * axis stride, for
// the kernels after it. The host reads the flag back (one small
// synchronization) and fails with the CPU's EMILY_ERR_INDEX message
// before anything is written; only then are the moving kernels launched.
// Rows without index columns (gather and indexed ops with no axes) cannot
// fail: no read back, no wait.
//
// Moves are copies of bytes (every dtype keeps its exact bits):
//   take, gather: a flat grid over the 16/8/4/2/1-byte vectors of the
//     output runs (a run: one taken row of `inner` elements, or one
//     contiguous tail of gather); consecutive threads read and write
//     consecutive vectors of a run, so accesses are coalesced and 16 bytes
//     wide when the run and both buffers allow;
//   take_along_axis: a thread per output element.
// indexed add/put: the rows of indices are sorted by their offset with a
// stable radix sort (CUB, keys = offset, values = row), so the rows of one
// position follow one another in row order. A thread per (first sorted row
// of a position, element q of the update block) then does what the CPU
// does for that element: PUT writes the update of the last row (the last
// write wins), ADD sums the updates in row order from 0 (integers wrapping
// in dst's width, floats and complex parts in double, integer updates of a
// float target exactly in 128 bits, rounded once) and adds the target in
// its own dtype once. Every element of dst is written by at most one
// thread: no atomics on data, results do not depend on scheduling.
#include <cub/device/device_radix_sort.cuh>
#include "cuda/common.cuh"
#include "core/kernels.h"
extern "C" {
#include "ops/common.h"
}

using namespace emily_cuda;

namespace {

// ---- sizes passed by value --------------------------------------------------

// Up to CAP (size, stride) pairs: index columns (bound, axis stride), the
// non-indexed axes before the last indexed one (gather), the axes of an
// update block (indexed ops). Kernels take them as __grid_constant__
// parameters, read in place however they are indexed. CAP is SMALL for
// nearly every call; EMILY_MAX_RANK otherwise (a 16 KiB parameter, within
// the 32 KiB that sm_90 allows).
constexpr int SMALL = 8;

template <int CAP> struct Dims {
    int n;
    int64_t shape[CAP];
    int64_t stride[CAP];
};

template <int CAP> void fill_dims(Dims<CAP> &d, int n, const int64_t *shape, const int64_t *stride) {
    d.n = n;
    for (int i = 0; i < n; i++) {
        d.shape[i] = shape[i];
        d.stride[i] = stride[i];
    }
}

// Calls f.template operator()<CAP>() with the smallest CAP holding n.
template <typename F> emily_status with_cap(int n, F &&f) {
    if (n <= SMALL) return f.template operator()<SMALL>();
    return f.template operator()<EMILY_MAX_RANK>();
}

// Offset of position q, row-major over d's shape.
template <int CAP> __device__ __forceinline__ int64_t dims_offset(const Dims<CAP> &d, int64_t q) {
    int64_t off = 0;
    for (int i = d.n - 1; i >= 0; i--) {
        int64_t s = d.shape[i];
        int64_t c = q % s;
        q /= s;
        off += c * d.stride[i];
    }
    return off;
}

inline char *elem_ptr(const emily_tensor *t) {
    if (t->size == 0) return nullptr;
    return base_of(t) + (size_t)t->offset * emily_dtype_size(t->dtype);
}

// ---- checking indices --------------------------------------------------------

// Index element i of an integer array of dtype dt; u64 values above
// INT64_MAX come back as -1 (they fail every bound, like the CPU's).
__device__ __forceinline__ int64_t read_index(const char *base, int dt, int64_t i) {
    switch (dt) {
    case EMILY_U8: return ((const uint8_t *)base)[i];
    case EMILY_U16: return ((const uint16_t *)base)[i];
    case EMILY_U32: return ((const uint32_t *)base)[i];
    case EMILY_U64: {
        uint64_t v = ((const uint64_t *)base)[i];
        return v > (uint64_t)INT64_MAX ? -1 : (int64_t)v;
    }
    case EMILY_S8: return ((const int8_t *)base)[i];
    case EMILY_S16: return ((const int16_t *)base)[i];
    case EMILY_S32: return ((const int32_t *)base)[i];
    default: return ((const int64_t *)base)[i];
    }
}

// Rows of cols.n indices: index c of a row must lie in [0, cols.shape[c]).
// *first_bad <- min(itself, row-major position of each row's first bad
// index); bases[r] <- sum of index * cols.stride[c] (meaningless for a
// row with a bad index, never used then); iota[r] <- r. Both optional.
template <int CAP>
__global__ void check_kernel(const char *__restrict__ idx, int idt, int64_t rows,
                             const __grid_constant__ Dims<CAP> cols, int64_t *__restrict__ bases,
                             int64_t *__restrict__ iota, unsigned long long *first_bad) {
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows; r += step) {
        int64_t base = 0;
        for (int c = 0; c < cols.n; c++) {
            int64_t i = r * cols.n + c;
            int64_t v = read_index(idx, idt, i);
            if ((uint64_t)v >= (uint64_t)cols.shape[c]) {
                atomicMin(first_bad, (unsigned long long)i);
                break;
            }
            base += v * cols.stride[c];
        }
        if (bases) bases[r] = base;
        if (iota) iota[r] = r;
    }
}

// What the CPU's index_error needs besides the index: the tensor whose
// shape the message shows, and either the indexed axes (the shape shows
// them first, the axis is the index's column) or, with axes NULL, the one
// axis (take_along_axis).
struct ErrInfo {
    const emily_tensor *t;
    int ncols;
    const int *axes;
    int axis;
};

// The CPU's message for the index at row-major position `bad` of idx.
emily_status index_error(const emily_cuda_ctx &ctx, const emily_tensor *idx, uint64_t bad, const ErrInfo &e) {
    size_t es = emily_dtype_size(idx->dtype);
    unsigned char raw[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    emily_status s = read_back(ctx, raw, elem_ptr(idx) + (size_t)bad * es, es);
    if (s) return s;
    return emi_index_error(ctx.op, raw, idx->dtype, (int64_t)bad, e.ncols, e.axes, e.axis, e.t);
}

// Checks `rows` rows of cols.n indices of idx (see check_kernel), fails
// with the CPU's message. `flag` is 8 bytes of scratch. `then` queues the
// op's own work once the check is queued, before its flag is read back,
// so that the device runs both without waiting for the host in between;
// it may only use what the check wrote (bases, iota: offsets in range
// even for a bad index, whose row then stops at its in-range columns).
template <int CAP, class Then>
emily_status check_indices(const emily_cuda_ctx &ctx, const emily_tensor *idx, int64_t rows, const Dims<CAP> &cols,
                           int64_t *bases, int64_t *iota, unsigned long long *flag, const ErrInfo &e, Then &&then) {
    if (rows <= 0) return then();
    bool can_fail = cols.n > 0;
    if (!can_fail && !bases && !iota) return then();
    // While recording a graph the flag cannot be read back: the check is
    // the recording's, read after each replay (replay.c).
    bool deferred = can_fail && emi_cuda_capturing(ctx.device);
    if (deferred) {
        emily_status s = emi_cuda_deferred_flag(&ctx, &flag);
        if (s) return s;
    }
    if (can_fail) {
        cudaError_t err = cudaMemsetAsync(flag, 0xff, sizeof *flag, ctx.stream);
        if (err != cudaSuccess) return emi_cuda_error(ctx.op, err);
    }
    const char *ip = can_fail ? elem_ptr(idx) : nullptr;
    check_kernel<CAP><<<flat_grid(rows, 1), BLOCK, 0, ctx.stream>>>(ip, (int)idx->dtype, rows, cols, bases, iota, flag);
    emily_status s = emi_cuda_launched(&ctx);
    if (!s) s = then();
    if (s || !can_fail || deferred) return s;
    unsigned long long bad = 0;
    if ((s = read_back(ctx, &bad, flag, sizeof bad))) return s;
    if (bad == ~0ull) return EMILY_OK;
    return index_error(ctx, idx, bad, e);
}

template <int CAP>
emily_status check_indices(const emily_cuda_ctx &ctx, const emily_tensor *idx, int64_t rows, const Dims<CAP> &cols,
                           int64_t *bases, int64_t *iota, unsigned long long *flag, const ErrInfo &e) {
    return check_indices(ctx, idx, rows, cols, bases, iota, flag, e, [] { return EMILY_OK; });
}

// ---- scratch -------------------------------------------------------------------

// One scratch allocation cut into 256-byte aligned parts.
struct Scratch {
    const emily_cuda_ctx *ctx = nullptr;
    char *base = nullptr;
    ~Scratch() {
        if (base) emi_cuda_scratch_free(ctx, base);
    }
    static size_t up(size_t n) { return (n + 255) & ~(size_t)255; }
    emily_status alloc(const emily_cuda_ctx &c, size_t nbytes) {
        ctx = &c;
        void *p = nullptr;
        emily_status s = emi_cuda_scratch(&c, nbytes, &p);
        base = (char *)p;
        return s;
    }
};

// ---- take and gather: runs of bytes ------------------------------------------

// Source byte offset of run u of take: dst run (o, j) <- src run (o, idx[j]).
struct TakeSrc {
    const int64_t *tab; // idx as int64
    int64_t m, n, run;  // indices, taken axis size, bytes per run
    bool one_outer;     // outer == 1: u is j
    __device__ __forceinline__ int64_t operator()(int64_t u) const {
        if (one_outer) return tab[u] * run;
        int64_t o = u / m, j = u - o * m;
        return (o * n + tab[j]) * run;
    }
};

// Source byte offset of run u of gather: (row, q) <- the row's offset plus
// pre position q's offset, in elements of es bytes.
template <int CAP> struct GatherSrc {
    const int64_t *bases;
    int64_t pre_count, es;
    Dims<CAP> pre;
    __device__ __forceinline__ int64_t operator()(int64_t u) const {
        int64_t row = u / pre_count, q = u - row * pre_count;
        return (bases[row] + dims_offset(pre, q)) * es;
    }
};

// dst is `total` vectors of W bytes, runs of vpr vectors: vector i is
// vector k of run u, read from src + f(u) (W-aligned) + k vectors.
template <typename I, int W, class Src>
__global__ void copy_runs(char *__restrict__ dst, const char *__restrict__ src, I total, I vpr,
                          const __grid_constant__ Src f) {
    typedef typename bits_of<W>::type V;
    I step = (I)gridDim.x * blockDim.x;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += step) {
        I u = i / vpr, k = i - u * vpr;
        ((V *)dst)[i] = ((const V *)(src + f((int64_t)u)))[k];
    }
}

template <int W, class Src>
emily_status runs_w(const emily_cuda_ctx &ctx, char *dst, const char *src, int64_t runs, int64_t run_bytes,
                    const Src &f) {
    int64_t vpr = run_bytes / W, total = runs * vpr;
    if (total <= INT32_MAX) // i + step stays below 2^32
        copy_runs<uint32_t, W, Src>
            <<<flat_grid(total, 1), BLOCK, 0, ctx.stream>>>(dst, src, (uint32_t)total, (uint32_t)vpr, f);
    else
        copy_runs<uint64_t, W, Src>
            <<<flat_grid(total, 1), BLOCK, 0, ctx.stream>>>(dst, src, (uint64_t)total, (uint64_t)vpr, f);
    return emi_cuda_launched(&ctx);
}

// Copies `runs` runs of run_bytes bytes into dst (consecutive) from src at
// f(u); every f(u) is a multiple of run_bytes, so the widest vector that
// divides run_bytes and both buffers' alignment serves every run.
template <class Src>
emily_status copy_all_runs(const emily_cuda_ctx &ctx, char *dst, const char *src, int64_t runs, int64_t run_bytes,
                           const Src &f) {
    if (runs <= 0 || run_bytes <= 0) return EMILY_OK;
    int w = 16;
    while (w > 1 && (run_bytes % w || (uintptr_t)dst % (uintptr_t)w || (uintptr_t)src % (uintptr_t)w)) w /= 2;
    switch (w) {
    case 16: return runs_w<16>(ctx, dst, src, runs, run_bytes, f);
    case 8: return runs_w<8>(ctx, dst, src, runs, run_bytes, f);
    case 4: return runs_w<4>(ctx, dst, src, runs, run_bytes, f);
    case 2: return runs_w<2>(ctx, dst, src, runs, run_bytes, f);
    default: return runs_w<1>(ctx, dst, src, runs, run_bytes, f);
    }
}

emily_status cuda_take(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int axis, int64_t outer,
                       int64_t n, int64_t inner) {
    emily_cuda_ctx ctx;
    const emily_tensor *ts[3] = {dst, src, idx};
    emily_status s = emi_cuda_begin("take", dev_of(src), 3, ts, &ctx);
    if (s) return s;
    int64_t m = idx->size;
    Scratch sc;
    if ((s = sc.alloc(ctx, 256 + Scratch::up(sizeof(int64_t) * (size_t)m)))) return s;
    unsigned long long *flag = (unsigned long long *)sc.base;
    int64_t *tab = (int64_t *)(sc.base + 256);
    Dims<SMALL> cols;
    int64_t one = 1;
    fill_dims(cols, 1, &n, &one);
    ErrInfo e = {src, 1, &axis, axis};
    size_t es = emily_dtype_size(src->dtype);
    TakeSrc f = {tab, m, n, inner * (int64_t)es, outer == 1};
    return check_indices(ctx, idx, m, cols, tab, nullptr, flag, e, [&] {
        if (dst->size == 0) return EMILY_OK; // indices checked, nothing to move
        return copy_all_runs(ctx, elem_ptr(dst), elem_ptr(src), outer * m, inner * (int64_t)es, f);
    });
}

// ---- take_along_axis ------------------------------------------------------------

// dst[o, j, r] = src[o, idx[o, j, r], r] (indices checked), a thread an element.
template <int ES>
__global__ void along_kernel(char *__restrict__ dst, const char *__restrict__ src, const char *__restrict__ idx,
                             int idt, int64_t total, int64_t m, int64_t n, int64_t inner) {
    typedef typename bits_of<ES>::type T;
    int64_t step = (int64_t)gridDim.x * blockDim.x, slab = m * inner;
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < total; u += step) {
        int64_t o = u / slab, r = u % inner;
        int64_t v = read_index(idx, idt, u);
        ((T *)dst)[u] = ((const T *)src)[(o * n + v) * inner + r];
    }
}

emily_status cuda_take_along_axis(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int axis,
                                  int64_t outer, int64_t n, int64_t inner) {
    emily_cuda_ctx ctx;
    const emily_tensor *ts[3] = {dst, src, idx};
    emily_status s = emi_cuda_begin("take_along_axis", dev_of(src), 3, ts, &ctx);
    if (s) return s;
    int64_t total = idx->size;
    if (total == 0) return EMILY_OK;
    Scratch sc;
    if ((s = sc.alloc(ctx, 256))) return s;
    Dims<SMALL> cols;
    int64_t one = 1;
    fill_dims(cols, 1, &n, &one);
    ErrInfo e = {src, 1, nullptr, axis};
    if ((s = check_indices(ctx, idx, total, cols, nullptr, nullptr, (unsigned long long *)sc.base, e))) return s;
    int64_t m = total / (outer * inner);
    char *d = elem_ptr(dst);
    const char *sp = elem_ptr(src), *ip = elem_ptr(idx);
    int idt = (int)idx->dtype;
    unsigned grid = flat_grid(total, 1);
    switch (emily_dtype_size(src->dtype)) {
    case 1: along_kernel<1><<<grid, BLOCK, 0, ctx.stream>>>(d, sp, ip, idt, total, m, n, inner); break;
    case 2: along_kernel<2><<<grid, BLOCK, 0, ctx.stream>>>(d, sp, ip, idt, total, m, n, inner); break;
    case 4: along_kernel<4><<<grid, BLOCK, 0, ctx.stream>>>(d, sp, ip, idt, total, m, n, inner); break;
    case 8: along_kernel<8><<<grid, BLOCK, 0, ctx.stream>>>(d, sp, ip, idt, total, m, n, inner); break;
    default: along_kernel<16><<<grid, BLOCK, 0, ctx.stream>>>(d, sp, ip, idt, total, m, n, inner); break;
    }
    return emi_cuda_launched(&ctx);
}

// ---- layout of gather and indexed ops (the CPU's rest_init) ----------------------

// Of a contiguous tensor t indexed on `axes` (increasing): the non-indexed
// axes of size > 1 before the last indexed axis ("pre"), the contiguous
// tail after it, and each indexed axis' size and stride.
struct Rest {
    int npre = 0;
    int64_t pre_count = 1, tail = 1;
    int64_t *mem = nullptr; // pre_shape, pre_stride, bounds, axis_stride
    int64_t *pre_shape = nullptr, *pre_stride = nullptr, *bounds = nullptr, *axis_stride = nullptr;
    ~Rest() { free(mem); }
    emily_status init(const char *op, const emily_tensor *t, int naxes, const int *axes) {
        int r = t->rank;
        size_t cap = (size_t)r + 1;
        mem = (int64_t *)malloc(sizeof(int64_t) * 5 * cap);
        bool *indexed = (bool *)calloc(cap, 1);
        if (!mem || !indexed) {
            free(indexed);
            return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
        }
        pre_shape = mem;
        pre_stride = mem + cap;
        bounds = mem + 2 * cap;
        axis_stride = mem + 3 * cap;
        int64_t *strides = mem + 4 * cap;
        int64_t st = 1;
        for (int i = r - 1; i >= 0; i--) {
            strides[i] = st;
            st *= t->shape[i];
        }
        for (int j = 0; j < naxes; j++) indexed[axes[j]] = true;
        int last = naxes > 0 ? axes[naxes - 1] : -1;
        for (int i = r - 1; i > last; i--) tail *= t->shape[i];
        for (int i = 0; i < last; i++) {
            if (indexed[i] || t->shape[i] == 1) continue;
            pre_shape[npre] = t->shape[i];
            pre_stride[npre] = strides[i];
            pre_count *= t->shape[i];
            npre++;
        }
        free(indexed);
        for (int j = 0; j < naxes; j++) {
            bounds[j] = t->shape[axes[j]];
            axis_stride[j] = strides[axes[j]];
        }
        return EMILY_OK;
    }
};

emily_status cuda_gather(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int naxes,
                         const int *axes) {
    emily_cuda_ctx ctx;
    const emily_tensor *ts[3] = {dst, src, idx};
    emily_status s = emi_cuda_begin("gather", dev_of(src), 3, ts, &ctx);
    if (s) return s;
    Rest l;
    if ((s = l.init("gather", src, naxes, axes))) return s;
    int64_t rows = 1;
    for (int i = 0; i < idx->rank - 1; i++) rows *= idx->shape[i];
    if (rows == 0) return EMILY_OK; // no indices, no output
    Scratch sc;
    if ((s = sc.alloc(ctx, 256 + Scratch::up(sizeof(int64_t) * (size_t)rows)))) return s;
    int64_t *bases = (int64_t *)(sc.base + 256);
    ErrInfo e = {src, naxes, axes, 0};
    int64_t es = (int64_t)emily_dtype_size(src->dtype);
    char *d = elem_ptr(dst);
    const char *sp = elem_ptr(src);
    auto move = [&]() -> emily_status {
        if (dst->size == 0) return EMILY_OK;
        return with_cap(l.npre, [&]<int CAP>() -> emily_status {
            GatherSrc<CAP> f;
            f.bases = bases;
            f.pre_count = l.pre_count;
            f.es = es;
            fill_dims(f.pre, l.npre, l.pre_shape, l.pre_stride);
            return copy_all_runs(ctx, d, sp, rows * l.pre_count, l.tail * es, f);
        });
    };
    return with_cap(naxes, [&]<int CAP>() -> emily_status {
        Dims<CAP> cols;
        fill_dims(cols, naxes, l.bounds, l.axis_stride);
        return check_indices(ctx, idx, rows, cols, bases, nullptr, (unsigned long long *)sc.base, e, move);
    });
}

// ---- indexed add / put ------------------------------------------------------------

// A value read from one element (the CPU's sval): integers as 64-bit
// patterns with their signedness, floats and complex numbers as doubles.
struct SVal {
    int kind; // 0 integer, 1 real, 2 complex
    bool is_unsigned;
    uint64_t bits;
    double re, im;
};

__device__ __forceinline__ SVal load_value(const char *p, int dt) {
    SVal v = {0, false, 0, 0.0, 0.0};
    switch (dt) {
// clang-format off
#define EMI_LOAD_UNSIGNED_(E, sfx, T) \
    case EMILY_##E: v.is_unsigned = true; v.bits = *(const T *)p; break;
#define EMI_LOAD_SIGNED_(E, sfx, T) \
    case EMILY_##E: v.bits = (uint64_t)(int64_t) * (const T *)p; break;
#define EMI_LOAD_INEXACT_(E, sfx, T)                   \
    case EMILY_##E:                                    \
        v.kind = is_complex(EMILY_##E) ? 2 : 1;        \
        v.re = cv_rules<EMILY_##E>::re(*(const T *)p); \
        v.im = cv_rules<EMILY_##E>::im(*(const T *)p); \
        break;
        // clang-format on
        EMI_DTYPES_UNSIGNED(EMI_LOAD_UNSIGNED_)
        EMI_DTYPES_SIGNED(EMI_LOAD_SIGNED_)
        EMI_DTYPES_INEXACT(EMI_LOAD_INEXACT_)
#undef EMI_LOAD_UNSIGNED_
#undef EMI_LOAD_SIGNED_
#undef EMI_LOAD_INEXACT_
    default: break; // every dtype is one of the list's
    }
    return v;
}

__device__ __forceinline__ double sval_real(const SVal &v) {
    if (v.kind) return v.re;
    return v.is_unsigned ? (double)v.bits : (double)(int64_t)v.bits;
}

// Writes v into one element of dtype dt with Nx's conversion rules.
__device__ __forceinline__ void store_value(char *p, int dt, const SVal &v) {
    if (v.kind == 0) emily_sc_store_int(dt, v.bits, v.is_unsigned, p);
    else emily_sc_store_complex(dt, v.re, v.kind == 2 ? v.im : 0.0, p);
}

__device__ __forceinline__ void copy_elem(char *d, const char *s, int es) {
    switch (es) {
    case 1: *(uint8_t *)d = *(const uint8_t *)s; break;
    case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
    case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
    case 8: *(uint64_t *)d = *(const uint64_t *)s; break;
    default: *(b128_t *)d = *(const b128_t *)s; break;
    }
}

// The exact sum of integer updates (the CPU's __int128), two's complement.
struct I128 {
    uint64_t lo, hi;
};

__host__ __device__ __forceinline__ void i128_add(I128 &a, uint64_t bits, bool is_unsigned) {
    uint64_t ext = (!is_unsigned && (int64_t)bits < 0) ? ~0ull : 0ull;
    uint64_t lo = a.lo + bits;
    a.hi += ext + (lo < a.lo ? 1ull : 0ull);
    a.lo = lo;
}

// Rounded to the nearest double, ties to even (as the CPU's conversion).
__host__ __device__ __forceinline__ double i128_to_double(I128 a) {
    bool neg = (int64_t)a.hi < 0;
    uint64_t lo = a.lo, hi = a.hi;
    if (neg) { // magnitude (2^127 for the most negative value, as unsigned)
        lo = ~lo + 1;
        hi = ~hi + (lo == 0 ? 1ull : 0ull);
    }
    double r;
    if (hi == 0) {
        r = (double)lo;
    } else {
        // the top 64 bits, with the bits shifted out kept as a sticky bit:
        // bit 0 lies 10 places below the rounding position of a double, so
        // rounding v rounds the full value
#ifdef __CUDA_ARCH__
        int z = __clzll((long long)hi);
#else
        int z = __builtin_clzll(hi);
#endif
        int sh = 64 - z;
        uint64_t v, dropped;
        if (z == 0) {
            v = hi;
            dropped = lo;
        } else {
            v = (hi << z) | (lo >> sh);
            dropped = lo << z;
        }
        v |= dropped != 0 ? 1ull : 0ull;
        r = ldexp((double)v, sh); // exact: a power of two below 2^128
    }
    return neg ? -r : r;
}

template <int CAP> struct Apply {
    int put;              // EMILY_INDEXED_PUT
    int64_t n, bsize;     // rows, elements of an update block
    const uint64_t *keys; // row offsets, sorted
    const int64_t *rows;  // row of each sorted key (row order within a key)
    char *dst;
    const char *target, *upd;
    int dt, tt, ut, des, tes, ues;
    Dims<CAP> blk; // update block axes on the target (sizes and strides)
};

// Thread (i, q): if sorted row i is the first of its offset, element q of
// that position's block gets the CPU's result for it. DT >= 0: output,
// target and updates are all of dtype DT (known at compile time, so the
// loads and stores need no dispatch per element); -1: p's dtypes.
template <int CAP, int DT> __global__ void indexed_kernel(const __grid_constant__ Apply<CAP> p) {
    const int dt = DT >= 0 ? DT : p.dt, tt = DT >= 0 ? DT : p.tt, ut = DT >= 0 ? DT : p.ut;
    int64_t total = p.n * p.bsize, step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += step) {
        int64_t i = t / p.bsize, q = t - i * p.bsize;
        uint64_t key = p.keys[i];
        if (i > 0 && p.keys[i - 1] == key) continue;
        // end of the rows of this offset: gallop, then bisect
        int64_t lo = i, hi = i + 1;
        while (hi < p.n && p.keys[hi] == key) {
            lo = hi;
            hi = i + 2 * (hi - i);
        }
        if (hi > p.n) hi = p.n;
        while (hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;
            if (p.keys[mid] == key) lo = mid;
            else hi = mid;
        }
        int64_t end = hi;
        int64_t pos = (int64_t)key + dims_offset(p.blk, q);
        char *d = p.dst + pos * p.des;
        if (p.put) { // the last row wins
            const char *u = p.upd + (p.rows[end - 1] * p.bsize + q) * p.ues;
            if (ut == dt) copy_elem(d, u, p.des);
            else store_value(d, dt, load_value(u, ut));
        } else if (dt <= EMILY_S64) { // integers wrap in dst's width
            SVal cur = load_value(d, dt);
            for (int64_t k = i; k < end; k++)
                cur.bits += load_value(p.upd + (p.rows[k] * p.bsize + q) * p.ues, ut).bits;
            store_value(d, dt, cur);
        } else { // floats and complex numbers: 0 + u1 + u2 + ... in row order, then the target
            bool int_updates = ut <= EMILY_S64;
            double re = 0.0, im = -0.0;
            I128 isum = {0, 0};
#pragma unroll 4
            for (int64_t k = i; k < end; k++) {
                SVal v = load_value(p.upd + (p.rows[k] * p.bsize + q) * p.ues, ut);
                if (int_updates) {
                    i128_add(isum, v.bits, v.is_unsigned);
                } else {
                    re += v.re;
                    if (v.kind == 2) im += v.im;
                }
            }
            SVal tv = load_value(p.target + pos * p.tes, tt);
            double sre = int_updates ? i128_to_double(isum) : re;
            SVal r = {2, false, 0, 0.0, 0.0};
            r.re = sval_real(tv) + sre;
            r.im = (tv.kind == 2 ? tv.im : -0.0) + im;
            store_value(d, dt, r);
        }
    }
}

// The sort's buffers (cuda_indexed): keys (offsets) and rows in and out,
// CUB's temporary storage, the key bits, rows and block size.
struct SortBufs {
    uint64_t *keys_in, *keys_out;
    int64_t *rows_in, *rows_out;
    void *temp;
    size_t temp_bytes;
    int bits;
    int64_t n, bsize;
};

// indexed_add/put after the check: rows sorted by offset (stable), then
// one thread per (first row of an offset, block element).
emily_status sort_and_apply(emily_indexed_op iop, const emily_cuda_ctx &ctx, emily_tensor *dst,
                            const emily_tensor *target, const emily_tensor *updates, int naxes, const int *axes,
                            const SortBufs &w) {
    const char *op = ctx.op;
    int64_t n = w.n, bsize = w.bsize;
    uint64_t *keys_out = w.keys_out;
    int64_t *rows_out = w.rows_out;
    size_t temp_bytes = w.temp_bytes; // (CUB takes it by reference)
    emily_status s;
    cudaError_t err = cub::DeviceRadixSort::SortPairs(w.temp, temp_bytes, (const uint64_t *)w.keys_in, keys_out,
                                                      (const int64_t *)w.rows_in, rows_out, n, 0, w.bits, ctx.stream);
    if (err != cudaSuccess) return emi_cuda_error(op, err);
    if ((s = emi_cuda_launched(&ctx))) return s;

    // the update block's axes on the target (the CPU's block_offsets):
    // each non-indexed axis of the target, with the update's size on it
    int r = target->rank;
    int64_t *bmem = (int64_t *)malloc(sizeof(int64_t) * 3 * ((size_t)r + 1));
    if (!bmem) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    int64_t *strides = bmem, *bshape = bmem + r + 1, *bstride = bmem + 2 * (r + 1);
    int64_t st = 1;
    for (int i = r - 1; i >= 0; i--) {
        strides[i] = st;
        st *= target->shape[i];
    }
    int nb = 0;
    for (int i = 0, k = 0, u = 0; i < r; i++) {
        if (k < naxes && axes[k] == i) {
            k++;
            continue;
        }
        int64_t size = updates->shape[1 + u++];
        if (size == 1) continue; // adds nothing to any offset
        bshape[nb] = size;
        bstride[nb] = strides[i];
        nb++;
    }
    s = with_cap(nb, [&]<int CAP>() -> emily_status {
        Apply<CAP> p;
        p.put = iop == EMILY_INDEXED_PUT;
        p.n = n;
        p.bsize = bsize;
        p.keys = keys_out;
        p.rows = rows_out;
        p.dst = elem_ptr(dst);
        p.target = elem_ptr(target);
        p.upd = elem_ptr(updates);
        p.dt = (int)dst->dtype;
        p.tt = (int)target->dtype;
        p.ut = (int)updates->dtype;
        p.des = (int)emily_dtype_size(dst->dtype);
        p.tes = (int)emily_dtype_size(target->dtype);
        p.ues = (int)emily_dtype_size(updates->dtype);
        fill_dims(p.blk, nb, bshape, bstride);
        unsigned grid = flat_grid(n * bsize, 1);
        bool same = p.dt == p.tt && p.dt == p.ut;
        if (same && p.dt == EMILY_F32) indexed_kernel<CAP, EMILY_F32><<<grid, BLOCK, 0, ctx.stream>>>(p);
        else if (same && p.dt == EMILY_BF16) indexed_kernel<CAP, EMILY_BF16><<<grid, BLOCK, 0, ctx.stream>>>(p);
        else if (same && p.dt == EMILY_F16) indexed_kernel<CAP, EMILY_F16><<<grid, BLOCK, 0, ctx.stream>>>(p);
        else indexed_kernel<CAP, -1><<<grid, BLOCK, 0, ctx.stream>>>(p);
        return emi_cuda_launched(&ctx);
    });
    free(bmem);
    return s;
}

emily_status cuda_indexed(emily_indexed_op iop, emily_tensor *dst, const emily_tensor *target, const emily_tensor *idx,
                          const emily_tensor *updates, int naxes, const int *axes) {
    const char *op = iop == EMILY_INDEXED_ADD ? "indexed_add" : "indexed_put";
    emily_cuda_ctx ctx;
    const emily_tensor *ts[4] = {dst, target, idx, updates};
    emily_status s = emi_cuda_begin(op, dev_of(dst), 4, ts, &ctx);
    if (s) return s;
    int64_t n = updates->shape[0];
    if (n <= 0) return EMILY_OK;
    int64_t bsize = updates->size / n;
    Rest l;
    if ((s = l.init(op, target, naxes, axes))) return s;

    // rows by offset, row order kept among equal offsets (the radix sort
    // is stable), on the bits an offset below target->size can have:
    // keys and values in and out, then CUB's temporary storage
    int bits = 1;
    while (bits < 64 && ((uint64_t)(target->size - 1) >> bits) != 0) bits++;
    size_t arr = Scratch::up(sizeof(int64_t) * (size_t)n), temp_bytes = 0;
    cudaError_t err = cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, (const uint64_t *)nullptr,
                                                      (uint64_t *)nullptr, (const int64_t *)nullptr, (int64_t *)nullptr,
                                                      n, 0, bits, ctx.stream);
    if (err != cudaSuccess) return emi_cuda_error(op, err);
    Scratch sc;
    if ((s = sc.alloc(ctx, 256 + 4 * arr + Scratch::up(temp_bytes)))) return s;
    SortBufs w = {(uint64_t *)(sc.base + 256),
                  (uint64_t *)(sc.base + 256 + arr),
                  (int64_t *)(sc.base + 256 + 2 * arr),
                  (int64_t *)(sc.base + 256 + 3 * arr),
                  sc.base + 256 + 4 * arr,
                  temp_bytes,
                  bits,
                  n,
                  bsize};

    ErrInfo e = {target, naxes, axes, 0};
    // the sort and the update, queued before the check's flag is read back
    // (check_indices): keys_in are in-range offsets even for a bad index
    auto apply = [&]() -> emily_status {
        if (bsize == 0 || dst->size == 0) return EMILY_OK;
        return sort_and_apply(iop, ctx, dst, target, updates, naxes, axes, w);
    };
    return with_cap(naxes, [&]<int CAP>() -> emily_status {
        Dims<CAP> cols;
        fill_dims(cols, naxes, l.bounds, l.axis_stride);
        return check_indices(ctx, idx, n, cols, (int64_t *)w.keys_in, w.rows_in, (unsigned long long *)sc.base, e,
                             apply);
    });
}

} // namespace

extern "C" const struct emily_index_kernels emi_cuda_index_kernels = {
    cuda_take,
    cuda_take_along_axis,
    cuda_gather,
    cuda_indexed,
};
