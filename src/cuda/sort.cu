// CUDA kernels: sort family (sort, argsort, top_k; see src/core/kernels.h
// for the contract and src/cpu/sort.c for the CPU engine, whose results
// these match bit for bit).
//
// Every element becomes an unsigned key whose integer order is Nx's order,
// exactly as on the CPU: unsigned integers as they are, signed ones with
// the sign bit flipped, floats by the order-preserving pattern (negative
// values inverted, positive ones with the sign bit set) after -0.0 is
// read as +0.0 and every NaN as the largest key. Descending order
// complements the key: equal keys stay equal, so a stable sort on the
// complemented key gives the reverse order with ties still in their
// original order (what the CPU does too).
//
// The elements of all rows (every position of the axes other than the
// sorted one) go into one array, row after row, as (key, global index)
// pairs, and CUB's DeviceRadixSort (stable) sorts them so that each row
// ends up, in its own range, in key order with equal keys in index order:
//
//  - when the key bits plus the bits of the row number fit 64 bits, the row
//    number goes above the key (one sort on key bits + row bits; one row:
//    the key alone);
//  - otherwise (64-bit keys and several rows) two stable sorts: by key over
//    all elements, then by row number (computed from the index), which
//    keeps the key order inside each row.
//
// The sorted indices then say, for each output slot, which source element
// goes there: sort and top_k copy that element's bits (NaN payloads and
// zero signs included, so nothing is rebuilt from keys), argsort and top_k
// write its position along the axis converted like the CPU's put_index
// (emily_sc_store_int: low bits for integers, Nx's rounding for floats).
// top_k is the descending sort of the last axis, of which only the first k
// slots of each row are written; rows of 2048 to 2^16 elements with k <=
// 256 and keys of at most 32 bits (the benchmark's 32 x 50,000, k = 50)
// go instead to a per-row radix select (topk_select below) that gives the
// same k elements in the same order without sorting the rows.
//
// Rows are described by a Layout<3> over the other axes (src, out, second
// out), so any strides (negative ones included) and any axis work; layouts
// with more than MAXD unmergeable dims run as several launches (for_layout),
// rows counted in order across them. Scratch: keys and indices twice
// (CUB's double buffers) plus CUB's temporary storage, from the engine's
// caching allocator. Nothing waits for the device.
//
// Limit: the sort path takes fewer than 2^32 elements in all (its indices
// are 32-bit); larger inputs are refused with EMILY_ERR_UNSUPPORTED.
#define CCCL_DISABLE_NVTX 1
#include <cub/device/device_radix_sort.cuh>
#include "cuda/common.cuh"
#include "core/dtype_bits.h"
#include "core/kernels.h"

using namespace emily_cuda;

namespace {

// ---- keys -------------------------------------------------------------------

enum KeyKind { KEY_UNSIGNED, KEY_SIGNED, KEY_FLOAT };

// Every real type of the dtype list with its key: X(E, U, KIND, INF), U
// the unsigned type of its width, INF its +infinity pattern (floats; 0
// otherwise), from core/dtype_bits.h.
#define KEY_UNSIGNED_(E, sfx, T, X) X(E, EMI_BITS(sfx), KEY_UNSIGNED, 0)
#define KEY_SIGNED_(E, sfx, T, X) X(E, EMI_BITS(sfx), KEY_SIGNED, 0)
#define KEY_FLOAT_(E, sfx, T, X) X(E, EMI_BITS(sfx), KEY_FLOAT, EMI_INF_BITS(sfx))
#define SORT_KEYS(X)                           \
    EMI_DTYPES_UNSIGNED_WITH(KEY_UNSIGNED_, X) \
    EMI_DTYPES_SIGNED_WITH(KEY_SIGNED_, X) EMI_DTYPES_FLOAT_WITH(KEY_FLOAT_, X)

// Key of one element's bits (U: the unsigned type of the element's width).
// INF: the float's +infinity pattern (KEY_FLOAT only).
template <typename U, int KIND, uint64_t INF> struct KeyMap {
    static __device__ __forceinline__ U key(U b) {
        constexpr U SIGN = (U)((U)1 << (sizeof(U) * 8 - 1));
        if constexpr (KIND == KEY_UNSIGNED) {
            return b;
        } else if constexpr (KIND == KEY_SIGNED) {
            return (U)(b ^ SIGN);
        } else {
            // float: NaN largest, -0.0 as +0.0, then the usual mapping
            if ((U)(b & (U)~SIGN) > (U)INF) return (U) ~(U)0;
            if (b == SIGN) b = 0;
            return (b & SIGN) ? (U)~b : (U)(b | SIGN);
        }
    }
};

// keys[g] and idx[g] = g for the elements of rows [r0, r0 + L.total),
// g = row * n + j (j: position along the axis). With `seg`, the row
// number sits above the key's bits (the host only asks when they fit KT).
template <typename U, int KIND, uint64_t INF, typename KT>
__global__ void make_keys(Layout<3> L, const U *src, int64_t n, int64_t s_ax, int64_t r0, U flip, bool seg, KT *keys,
                          uint32_t *idx) {
    int64_t total = L.total * n;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / n, j = i - r * n;
        int64_t off[3];
        layout_offsets<3, int64_t>(L, r, off);
        U k = (U)(KeyMap<U, KIND, INF>::key(src[off[0] + j * s_ax]) ^ flip);
        KT c = (KT)k;
        if constexpr (sizeof(U) < sizeof(KT)) {
            if (seg) c |= (KT)(r0 + r) << (8 * sizeof(U));
        }
        int64_t g = r0 * n + i;
        keys[g] = c;
        idx[g] = (uint32_t)g;
    }
}

// Row numbers of sorted global indices (the second sort of the two-sort path).
__global__ void row_keys(const uint32_t *idx, int64_t total, int64_t n, uint32_t *rows) {
    for (int64_t m = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; m < total; m += (int64_t)gridDim.x * blockDim.x)
        rows[m] = (uint32_t)((int64_t)idx[m] / n);
}

// Output slot q < kout of rows [r0, r0 + L.total): the source element at
// the slot's sorted index. VAL: copy its bits to vals (stride v_ax along
// the axis, layout operand 1); IDX: write its position to ix (dtype idt of
// ies bytes, stride i_ax, layout operand 2).
template <typename B, bool VAL, bool IDX>
__global__ void scatter_out(Layout<3> L, const B *src, int64_t n, int64_t kout, int64_t s_ax, int64_t r0,
                            const uint32_t *sorted, B *vals, int64_t v_ax, char *ix, int idt, int64_t ies,
                            int64_t i_ax) {
    int64_t total = L.total * kout;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = t / kout, q = t - r * kout;
        int64_t off[3];
        layout_offsets<3, int64_t>(L, r, off);
        int64_t row0 = (r0 + r) * n;
        int64_t p = (int64_t)sorted[row0 + q] - row0; // position along the axis
        if (VAL) vals[off[1] + q * v_ax] = src[off[0] + p * s_ax];
        if (IDX) emily_sc_store_int(idt, (uint64_t)p, 1, ix + (off[2] + q * i_ax) * ies);
    }
}

// ---- top_k by selection -------------------------------------------------------
//
// For rows of TOPK_ROW_MIN to TOPK_ROW_MAX elements and k <= TOPK_MAX (keys
// of at most 32 bits), one block per row finds the k first elements of the
// descending order without sorting the row. Each element gets the
// composite c = (complemented key << pos_bits) | position: all composites
// of a row differ, and their order is exactly the row's descending order
// with ties by position (what the sort path gives). A radix select over
// 8-bit digits, most significant first, finds the k-th smallest
// composite; the k elements at or below it are collected, each one's slot
// is the number of collected composites below its own, and values and
// positions are written to their slots.

constexpr int TOPK_MAX = 256;
constexpr int TOPK_THREADS = 512;
// Rows shorter than TOPK_ROW_MIN keep most of a block's threads idle (many
// such rows are better served by the sort).
constexpr int64_t TOPK_ROW_MIN = 2048;
constexpr int64_t TOPK_ROW_MAX = (int64_t)1 << 16;

template <typename U, int KIND, uint64_t INF>
__global__ void __launch_bounds__(TOPK_THREADS)
    topk_select(Layout<3> L, const U *src, int64_t n, int64_t s_ax, int64_t k, int pos_bits, U *vals, int64_t v_ax,
                char *ix, int idt, int64_t ies, int64_t i_ax) {
    __shared__ unsigned hist[256];
    __shared__ uint64_t cand[TOPK_MAX];
    __shared__ uint64_t want_s, mask_s;
    __shared__ int64_t need_s;
    __shared__ unsigned count_s;
    int64_t off[3];
    layout_offsets<3, int64_t>(L, (int64_t)blockIdx.x, off);
    const U *row = src + off[0];
    const U flip = (U) ~(U)0;                       // descending
    int total_bits = 8 * (int)sizeof(U) + pos_bits; // <= 64
    if (threadIdx.x == 0) {
        want_s = 0;
        mask_s = 0;
        need_s = k;
        count_s = 0;
    }
    // invariant: need_s >= 1 composites match the prefix (want_s on mask_s)
    for (int shift = (total_bits + 7) / 8 * 8 - 8; shift >= 0; shift -= 8) {
        for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
        __syncthreads();
        uint64_t want = want_s, mask = mask_s;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            U key = (U)(KeyMap<U, KIND, INF>::key(row[j * s_ax]) ^ flip);
            uint64_t c = ((uint64_t)key << pos_bits) | (uint64_t)j;
            if ((c & mask) == want) atomicAdd(&hist[(c >> shift) & 255], 1u);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            int64_t need = need_s;
            unsigned b = 0;
            while (b < 255 && (int64_t)hist[b] < need) need -= hist[b++];
            need_s = need;
            want_s = want | ((uint64_t)b << shift);
            mask_s = mask | ((uint64_t)255 << shift);
        }
        __syncthreads();
    }
    // want_s is now the k-th smallest composite: exactly k are <= it
    uint64_t kth = want_s;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        U key = (U)(KeyMap<U, KIND, INF>::key(row[j * s_ax]) ^ flip);
        uint64_t c = ((uint64_t)key << pos_bits) | (uint64_t)j;
        if (c <= kth) {
            unsigned slot = atomicAdd(&count_s, 1u);
            if (slot < (unsigned)k) cand[slot] = c;
        }
    }
    __syncthreads();
    uint64_t pos_mask = pos_bits ? (~(uint64_t)0 >> (64 - pos_bits)) : 0;
    for (int i = threadIdx.x; i < (int)k; i += blockDim.x) {
        uint64_t c = cand[i];
        int64_t rank = 0;
        for (int t = 0; t < (int)k; t++) rank += cand[t] < c;
        int64_t p = (int64_t)(c & pos_mask);
        vals[off[1] + rank * v_ax] = row[p * s_ax];
        emily_sc_store_int(idt, (uint64_t)p, 1, ix + (off[2] + rank * i_ax) * ies);
    }
}

// ---- the job ----------------------------------------------------------------

enum Job { JOB_SORT, JOB_ARGSORT, JOB_TOPK };

struct SortJob {
    emily_cuda_ctx ctx;
    Job job;
    const emily_tensor *src;
    emily_tensor *vals; // sort / top_k values (NULL for argsort)
    emily_tensor *ix;   // argsort / top_k indices (NULL for sort)
    int axis;
    bool desc;
    int64_t n, kout, rows, total;
    // views without the axis: the rows' layout (src, first out, second out)
    emily_tensor *views[3] = {NULL, NULL, NULL};
    void *arrays = NULL, *temp = NULL;

    ~SortJob() {
        if (temp) emi_cuda_scratch_free(&ctx, temp);
        if (arrays) emi_cuda_scratch_free(&ctx, arrays);
        for (int i = 0; i < 3; i++) emily_tensor_release(views[i]);
    }

    // views[i] = t without dimension `axis` (same offset).
    emily_status make_views() {
        const emily_tensor *ts[3] = {src, vals ? vals : ix, ix ? ix : vals};
        return views_without_axis(ctx.op, 3, ts, axis, views);
    }

    // Calls f(L, off, r0) for each block of rows (in row order).
    template <typename F> emily_status for_rows(F &&f) {
        const emily_tensor *ts[3] = {views[0], views[1], views[2]};
        return for_lines<3>(ctx.op, ts, f);
    }

    template <typename U, int KIND, uint64_t INF, typename KT>
    emily_status launch_keys(KT *keys, uint32_t *idx, bool seg) {
        const U *base = (const U *)base_of(src);
        int64_t s_ax = src->strides[axis];
        U flip = desc ? (U) ~(U)0 : (U)0;
        return for_rows([&](const Layout<3> &L, const int64_t *off, int64_t r0) -> emily_status {
            make_keys<U, KIND, INF, KT><<<grid_for(ctx.device, L.total * n), BLOCK, 0, ctx.stream>>>(
                L, base + off[0], n, s_ax, r0, flip, seg, keys, idx);
            return emi_cuda_launched(&ctx);
        });
    }

    template <typename KT> emily_status keys_of(KT *keys, uint32_t *idx, bool seg) {
        // a key wider than KT has no keys of this kind
        switch (src->dtype) {
#define KEYS_CASE_(E, U, KIND, INF)                                                                  \
    case EMILY_##E:                                                                                  \
        if constexpr (sizeof(U) <= sizeof(KT)) return launch_keys<U, KIND, INF, KT>(keys, idx, seg); \
        break;
            SORT_KEYS(KEYS_CASE_)
#undef KEYS_CASE_
        default: break;
        }
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: no %d-bit keys for %s", ctx.op, (int)(8 * sizeof(KT)),
                           emily_dtype_name(src->dtype));
    }

    // CUB's radix sort of `total` pairs on key bits [0, end_bit): with temp
    // NULL it only sets *bytes (the temporary storage it needs).
    template <typename KT>
    emily_status radix(cub::DoubleBuffer<KT> &k, cub::DoubleBuffer<uint32_t> &v, int end_bit, size_t *bytes) {
        size_t b = *bytes;
        emily_status s = emi_cuda_error(
            ctx.op, cub::DeviceRadixSort::SortPairs(temp, b, k, v, (uint32_t)total, 0, end_bit, ctx.stream));
        if (!temp) *bytes = b;
        return s;
    }

    // Scratch: two key arrays of ks bytes per element and two index arrays.
    emily_status alloc_arrays(size_t ks, char **k0, char **k1, uint32_t **i0, uint32_t **i1) {
        size_t kb = ((size_t)total * ks + 255) & ~(size_t)255;
        size_t ib = ((size_t)total * 4 + 255) & ~(size_t)255;
        emily_status s = emi_cuda_scratch(&ctx, 2 * kb + 2 * ib, &arrays);
        if (s) return s;
        char *p = (char *)arrays;
        *k0 = p;
        *k1 = p + kb;
        *i0 = (uint32_t *)(p + 2 * kb);
        *i1 = (uint32_t *)(p + 2 * kb + ib);
        return EMILY_OK;
    }

    // One sort of (row above key, index) pairs; returns the sorted indices.
    template <typename KT> emily_status sort_one(int end_bit, bool seg, const uint32_t **sorted) {
        char *k0, *k1;
        uint32_t *i0, *i1;
        emily_status s = alloc_arrays(sizeof(KT), &k0, &k1, &i0, &i1);
        if (!s) s = keys_of<KT>((KT *)k0, i0, seg);
        if (s) return s;
        cub::DoubleBuffer<KT> k((KT *)k0, (KT *)k1);
        cub::DoubleBuffer<uint32_t> v(i0, i1);
        size_t bytes = 0;
        if ((s = radix(k, v, end_bit, &bytes))) return s;
        if ((s = emi_cuda_scratch(&ctx, bytes, &temp))) return s;
        if ((s = radix(k, v, end_bit, &bytes))) return s;
        *sorted = v.Current();
        return EMILY_OK;
    }

    // 64-bit keys, several rows: sort by key, then (stably) by row.
    emily_status sort_two(int row_bits, const uint32_t **sorted) {
        char *k0, *k1;
        uint32_t *i0, *i1;
        emily_status s = alloc_arrays(8, &k0, &k1, &i0, &i1);
        if (!s) s = keys_of<uint64_t>((uint64_t *)k0, i0, false);
        if (s) return s;
        cub::DoubleBuffer<uint64_t> k((uint64_t *)k0, (uint64_t *)k1);
        cub::DoubleBuffer<uint32_t> v(i0, i1);
        // the row keys reuse the key arrays once the first sort is done
        cub::DoubleBuffer<uint32_t> rk((uint32_t *)k0, (uint32_t *)k1);
        size_t b1 = 0, b2 = 0;
        if ((s = radix(k, v, 64, &b1))) return s;
        if ((s = radix(rk, v, row_bits, &b2))) return s;
        size_t bytes = b1 > b2 ? b1 : b2;
        if ((s = emi_cuda_scratch(&ctx, bytes, &temp))) return s;
        if ((s = radix(k, v, 64, &bytes))) return s;
        // the first sort's keys are no longer needed: rk's arrays are free
        cub::DoubleBuffer<uint32_t> vi(v.Current(), v.Alternate());
        row_keys<<<grid_for(ctx.device, total), BLOCK, 0, ctx.stream>>>(vi.Current(), total, n, rk.Current());
        if ((s = emi_cuda_launched(&ctx))) return s;
        if ((s = radix(rk, vi, row_bits, &bytes))) return s;
        *sorted = vi.Current();
        return EMILY_OK;
    }

    template <typename B, bool VAL, bool IDX> emily_status launch_out(const uint32_t *sorted) {
        const B *sb = (const B *)base_of(src);
        B *vb = vals ? (B *)base_of(vals) : NULL;
        char *ib = ix ? base_of(ix) : NULL;
        int idt = ix ? (int)ix->dtype : 0;
        int64_t ies = ix ? (int64_t)emily_dtype_size(ix->dtype) : 0;
        int64_t s_ax = src->strides[axis], v_ax = vals ? vals->strides[axis] : 0, i_ax = ix ? ix->strides[axis] : 0;
        return for_rows([&](const Layout<3> &L, const int64_t *off, int64_t r0) -> emily_status {
            scatter_out<B, VAL, IDX><<<grid_for(ctx.device, L.total * kout), BLOCK, 0, ctx.stream>>>(
                L, sb + off[0], n, kout, s_ax, r0, sorted, VAL ? vb + off[1] : NULL, v_ax,
                IDX ? ib + off[2] * ies : NULL, idt, ies, i_ax);
            return emi_cuda_launched(&ctx);
        });
    }

    template <bool VAL, bool IDX> emily_status out_by_size(const uint32_t *sorted) {
        switch (emily_dtype_size(src->dtype)) {
        case 1: return launch_out<uint8_t, VAL, IDX>(sorted);
        case 2: return launch_out<uint16_t, VAL, IDX>(sorted);
        case 4: return launch_out<uint32_t, VAL, IDX>(sorted);
        default: return launch_out<uint64_t, VAL, IDX>(sorted);
        }
    }

    template <typename U, int KIND, uint64_t INF> emily_status launch_select(int pos_bits) {
        const U *sb = (const U *)base_of(src);
        U *vb = (U *)base_of(vals);
        char *ib = base_of(ix);
        int idt = (int)ix->dtype;
        int64_t ies = (int64_t)emily_dtype_size(ix->dtype);
        int64_t s_ax = src->strides[axis], v_ax = vals->strides[axis], i_ax = ix->strides[axis];
        return for_rows([&](const Layout<3> &L, const int64_t *off, int64_t) -> emily_status {
            topk_select<U, KIND, INF><<<(unsigned)L.total, TOPK_THREADS, 0, ctx.stream>>>(
                L, sb + off[0], n, s_ax, kout, pos_bits, vb + off[1], v_ax, ib + off[2] * ies, idt, ies, i_ax);
            return emi_cuda_launched(&ctx);
        });
    }

    emily_status no_selection() {
        return emily_error(EMILY_ERR_INTERNAL, "cuda: top_k: no selection for %s", emily_dtype_name(src->dtype));
    }

    // The selection takes keys of at most 32 bits.
    template <typename U, int KIND, uint64_t INF> emily_status select_narrow(int pos_bits) {
        if constexpr (sizeof(U) <= 4) return launch_select<U, KIND, INF>(pos_bits);
        else return no_selection();
    }

    // top_k of short rows with a small k and keys of <= 32 bits, by selection.
    emily_status select_top_k() {
        int pos_bits = 0;
        while (((uint64_t)(n - 1) >> pos_bits) != 0) pos_bits++;
        switch (src->dtype) {
#define SELECT_CASE_(E, U, KIND, INF) \
    case EMILY_##E: return select_narrow<U, KIND, INF>(pos_bits);
            SORT_KEYS(SELECT_CASE_)
#undef SELECT_CASE_
        default: return no_selection();
        }
    }

    emily_status run() {
        if (src->size == 0) return EMILY_OK;
        n = src->shape[axis];
        total = src->size;
        rows = total / n;
        if (job == JOB_TOPK && emily_dtype_size(src->dtype) <= 4 && kout <= TOPK_MAX && n >= TOPK_ROW_MIN &&
            n <= TOPK_ROW_MAX && rows <= INT32_MAX) {
            emily_status s = make_views();
            return s ? s : select_top_k();
        }
        if ((uint64_t)total > UINT32_MAX)
            return emily_error(EMILY_ERR_UNSUPPORTED, "cuda: %s: %lld elements: the CUDA sort takes fewer than 2^32",
                               ctx.op, (long long)total);
        emily_status s = make_views();
        if (s) return s;
        int key_bits = (int)emily_dtype_size(src->dtype) * 8, row_bits = 0;
        while (row_bits < 32 && ((uint64_t)(rows - 1) >> row_bits) != 0) row_bits++;
        const uint32_t *sorted = NULL;
        if (key_bits + row_bits <= 32) s = sort_one<uint32_t>(key_bits + row_bits, row_bits > 0, &sorted);
        else if (key_bits + row_bits <= 64) s = sort_one<uint64_t>(key_bits + row_bits, row_bits > 0, &sorted);
        else s = sort_two(row_bits, &sorted);
        if (s) return s;
        switch (job) {
        case JOB_SORT: return out_by_size<true, false>(sorted);
        case JOB_ARGSORT: return launch_out<uint8_t, false, true>(sorted);
        default: return out_by_size<true, true>(sorted);
        }
    }
};

emily_status check_real(const char *op, const emily_tensor *src) {
    if (!emily_dtype_valid(src->dtype) || emily_dtype_is_complex(src->dtype))
        return emily_error(EMILY_ERR_TYPE, "cuda: %s: %s cannot be sorted", op,
                           emily_dtype_valid(src->dtype) ? emily_dtype_name(src->dtype) : "an invalid type");
    return EMILY_OK;
}

emily_status check_index(const char *op, const emily_tensor *ix) {
    if (!emily_dtype_valid(ix->dtype) || emily_dtype_is_complex(ix->dtype))
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: the index output must have a real type", op);
    return EMILY_OK;
}

emily_status run_job(const char *op, Job job, const emily_tensor *src, emily_tensor *vals, emily_tensor *ix, int axis,
                     bool desc, int64_t kout) {
    emily_status s = check_real(op, src);
    if (!s && ix) s = check_index(op, ix);
    if (s) return s;
    if (axis < 0 || axis >= src->rank)
        return emily_error(EMILY_ERR_AXIS, "cuda: %s: axis %d out of range for rank %d", op, axis, src->rank);
    if (src->size == 0 || (vals ? vals->size : ix->size) == 0) return EMILY_OK;
    SortJob j;
    j.job = job;
    j.src = src;
    j.vals = vals;
    j.ix = ix;
    j.axis = axis;
    j.desc = desc;
    j.kout = kout;
    const emily_tensor *ts[3] = {src, vals, ix};
    s = emi_cuda_begin(op, dev_of(src), 3, ts, &j.ctx);
    if (s) return s;
    return j.run();
}

emily_status cuda_sort(emily_tensor *dst, const emily_tensor *src, int axis, bool descending) {
    if (src->rank == 0) return emily_error(EMILY_ERR_INTERNAL, "cuda: sort: rank 0 reaches the kernel");
    if (dst->dtype != src->dtype)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: sort: the output must have the input's type");
    return run_job("sort", JOB_SORT, src, dst, NULL, axis, descending,
                   axis >= 0 && axis < src->rank ? src->shape[axis] : 0);
}

emily_status cuda_argsort(emily_tensor *dst, const emily_tensor *src, int axis, bool descending) {
    if (src->rank == 0) return emily_error(EMILY_ERR_INTERNAL, "cuda: argsort: rank 0 reaches the kernel");
    return run_job("argsort", JOB_ARGSORT, src, NULL, dst, axis, descending,
                   axis >= 0 && axis < src->rank ? src->shape[axis] : 0);
}

emily_status cuda_top_k(emily_tensor *values, emily_tensor *indices, const emily_tensor *src, int64_t k) {
    if (src->rank == 0) return emily_error(EMILY_ERR_INTERNAL, "cuda: top_k: rank 0 reaches the kernel");
    int last = src->rank - 1;
    if (values->dtype != src->dtype || k < 1 || k > src->shape[last] || values->shape[last] != k ||
        indices->shape[last] != k)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: top_k: bad outputs for k = %lld", (long long)k);
    return run_job("top_k", JOB_TOPK, src, values, indices, last, true, k);
}

} // namespace

extern "C" const struct emily_sort_kernels emi_cuda_sort_kernels = {cuda_sort, cuda_argsort, cuda_top_k};
