// argmax / argmin on CUDA over the reduction machinery of reduce.cuh, with
// the rules of src/cpu/reduce/: a NaN always takes the index (so the last
// NaN wins); otherwise the extreme's first index (its last with
// tie_break: :high); values compare as numbers (-0.0 == 0.0).
#include "cuda/reduce.cuh"

using namespace emily_cuda;

namespace {

template <class L, typename C, bool FLOAT, typename I> struct ArgRed {
    typedef typename L::T S;
    typedef I D;
    struct Acc {
        C best;
        int64_t idx, nan_idx; // -1: none
    };
    bool is_min, high;
    __device__ Acc init() const { return Acc{(C)0, -1, -1}; }
    __device__ Acc load(S x, int64_t j) const {
        C v = (C)L::ld(x);
        if (FLOAT && v != v) return Acc{(C)0, -1, j};
        return Acc{v, j, -1};
    }
    __device__ Acc combine(Acc a, Acc b) const {
        int64_t nan_idx = a.nan_idx > b.nan_idx ? a.nan_idx : b.nan_idx;
        Acc r;
        if (a.idx < 0) r = b;
        else if (b.idx < 0) r = a;
        else {
            bool b_better = is_min ? b.best < a.best : b.best > a.best;
            bool a_better = is_min ? a.best < b.best : a.best > b.best;
            if (b_better) r = b;
            else if (a_better) r = a;
            else r = (high ? b.idx > a.idx : b.idx < a.idx) ? b : a;
        }
        r.nan_idx = nan_idx;
        return r;
    }
    __device__ I store(Acc a) const { return (I)(a.nan_idx >= 0 ? a.nan_idx : a.idx); }
};

// The output's integer dtype only matters by its width (indices are
// written as their low bits, like the CPU).
template <class L, typename C, bool FLOAT>
emily_status arg_out(const emily_cuda_ctx &ctx, bool is_min, bool high, emily_tensor *dst, const emily_tensor *src,
                     const bool *m) {
    switch (emily_dtype_size(dst->dtype)) {
    case 1: {
        ArgRed<L, C, FLOAT, uint8_t> r;
        r.is_min = is_min;
        r.high = high;
        return reduce_with(ctx, r, dst, src, m);
    }
    case 2: {
        ArgRed<L, C, FLOAT, uint16_t> r;
        r.is_min = is_min;
        r.high = high;
        return reduce_with(ctx, r, dst, src, m);
    }
    case 4: {
        ArgRed<L, C, FLOAT, uint32_t> r;
        r.is_min = is_min;
        r.high = high;
        return reduce_with(ctx, r, dst, src, m);
    }
    default: {
        ArgRed<L, C, FLOAT, uint64_t> r;
        r.is_min = is_min;
        r.high = high;
        return reduce_with(ctx, r, dst, src, m);
    }
    }
}

} // namespace

extern "C" emily_status emi_cuda_argreduce(emily_arg_op op, emily_tensor *dst, const emily_tensor *src, int axis,
                                           bool tie_break_high) {
    if (!emily_dtype_is_integer(dst->dtype))
        return emily_error(EMILY_ERR_INTERNAL, "argreduce kernel: the output must be an integer type");
    if (!emily_dtype_valid(src->dtype) || emily_dtype_is_complex(src->dtype))
        return emily_error(EMILY_ERR_TYPE, "argreduce: %s is not supported", emily_dtype_name(src->dtype));
    if (axis >= src->rank)
        return emily_error(EMILY_ERR_AXIS, "argreduce: axis %d out of range for rank %d", axis, src->rank);
    if (dst->size == 0) return EMILY_OK;
    if (src->size == 0) return emily_error(EMILY_ERR_SHAPE, "argreduce: cannot reduce an empty axis");
    bool is_min = op == EMILY_ARGMIN;
    bool *mask = (bool *)malloc((size_t)src->rank + 1);
    if (!mask) return emily_error(EMILY_ERR_MEMORY, "argreduce: out of host memory");
    for (int i = 0; i < src->rank; i++) mask[i] = axis < 0 || i == axis;
    // The flattened form has a rank-0 output: view it with src's rank.
    emily_tensor *view = NULL;
    emily_status s = EMILY_OK;
    if (dst->rank != src->rank) {
        int64_t *shape = (int64_t *)calloc((size_t)src->rank + 1, sizeof(int64_t));
        if (!shape) s = emily_error(EMILY_ERR_MEMORY, "argreduce: out of host memory");
        else {
            for (int i = 0; i < src->rank; i++) shape[i] = 1;
            s = emi_tensor_view(dst, src->rank, shape, NULL, dst->offset, &view);
            free(shape);
        }
    }
    emily_tensor *out = view ? view : dst;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[2] = {out, src};
    if (!s) s = emi_cuda_begin(is_min ? "argmin" : "argmax", dev_of(dst), 2, ts, &ctx);
    if (!s) {
        bool h = tie_break_high;
        s = with_dtype(src->dtype, ctx.op, [&]<emily_dtype D>() -> emily_status {
            if constexpr (is_complex(D)) // refused above
                return emily_error(EMILY_ERR_TYPE, "argreduce: %s is not supported", emily_dtype_name(D));
            else return arg_out<Ld<D>, typename Ld<D>::C, is_float(D)>(ctx, is_min, h, out, src, mask);
        });
    }
    emily_tensor_release(view);
    free(mask);
    return s;
}
