// Binary ops and select on CUDA: the kernels of core/binary_kernels.h
// (the same (op, dtype) table and compute types as src/cpu/binary.c) as
// element functors. Contiguous operands (or a broadcast scalar) take the
// flat kernel with 16-byte loads; any other strides the strided one.
#include "cuda/common.cuh"
#include "cuda/binary_fns.cuh"

using namespace emily_cuda;
using namespace emily_cuda::binary_fns;

namespace {

typedef emily_status (*binary_run)(const emily_cuda_ctx &, emily_tensor *, const emily_tensor *, const emily_tensor *);

#define TABLE_KERNEL(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP) table[EMILY_##OP][EMILY_##DT] = map2<NAME>;
#define TABLE_OP(ENUM, name, rule) EMI_BINARY_KERNELS(rule)(TABLE_KERNEL, ENUM, name)
struct binary_table {
    binary_run table[EMILY_BINARY_OP_COUNT][EMILY_DTYPE_COUNT];
    binary_table() : table{} { EMILY_BINARY_OPS(TABLE_OP) }
};
const binary_table runs;

} // namespace

extern "C" emily_status emi_cuda_binary(emily_binary_op op, emily_tensor *dst, const emily_tensor *a,
                                        const emily_tensor *b) {
    emily_status s = emi_binary_kernel_operands(op, a->dtype, b->dtype);
    if (s) return s;
    binary_run fn = runs.table[op][a->dtype];
    if (!fn || dst->dtype != emi_binary_kernel_output(op, a->dtype))
        return emily_error(EMILY_ERR_TYPE, "%s: no cuda kernel for %s operands with a %s output",
                           emily_binary_op_name(op), emily_dtype_name(a->dtype), emily_dtype_name(dst->dtype));
    if (dst->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[3] = {dst, a, b};
    s = emi_cuda_begin(emily_binary_op_name(op), dev_of(dst), 3, ts, &ctx);
    return s ? s : fn(ctx, dst, a, b);
}

// ---- select ----
// The predicate is read as "nonzero" in its own dtype (integer or real
// float: NaN is true, -0.0 false); the branches are moved bit for bit.

template <typename P> __device__ __forceinline__ bool truthy(P v) { return v != 0; }
struct f16_bits {
    uint16_t v;
};

template <typename P, typename T>
__global__ void select_kernel(Layout<4> L, T *d, const P *p, const T *x, const T *y, bool half) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[4];
        layout_offsets<4, int64_t>(L, i, off);
        P pv = p[off[1]];
        bool t = half ? (((uint64_t)pv & 0x7fffu) != 0) : truthy(pv);
        d[off[0]] = t ? x[off[2]] : y[off[3]];
    }
}

template <typename P, typename T>
static emily_status select_typed(const emily_cuda_ctx &ctx, emily_tensor *dst, const emily_tensor *pred,
                                 const emily_tensor *on_true, const emily_tensor *on_false) {
    const emily_tensor *ts[4] = {dst, pred, on_true, on_false};
    T *d = (T *)base_of(dst);
    const P *p = (const P *)base_of(pred);
    const T *x = (const T *)base_of(on_true), *y = (const T *)base_of(on_false);
    bool half = pred->dtype == EMILY_F16 || pred->dtype == EMILY_BF16;
    return for_layout<4>(ctx.op, ts, [&](const Layout<4> &L, const int64_t *off) -> emily_status {
        select_kernel<P, T><<<grid_for(ctx.device, L.total), BLOCK, 0, ctx.stream>>>(L, d + off[0], p + off[1],
                                                                                     x + off[2], y + off[3], half);
        return emi_cuda_launched(&ctx);
    });
}

template <typename P>
static emily_status select_pred(const emily_cuda_ctx &ctx, emily_tensor *dst, const emily_tensor *pred,
                                const emily_tensor *on_true, const emily_tensor *on_false) {
    switch (emily_dtype_size(dst->dtype)) {
    case 1: return select_typed<P, uint8_t>(ctx, dst, pred, on_true, on_false);
    case 2: return select_typed<P, uint16_t>(ctx, dst, pred, on_true, on_false);
    case 4: return select_typed<P, uint32_t>(ctx, dst, pred, on_true, on_false);
    case 8: return select_typed<P, uint64_t>(ctx, dst, pred, on_true, on_false);
    default: return select_typed<P, b128_t>(ctx, dst, pred, on_true, on_false);
    }
}

extern "C" emily_status emi_cuda_select(emily_tensor *dst, const emily_tensor *pred, const emily_tensor *on_true,
                                        const emily_tensor *on_false) {
    emily_dtype pt = pred->dtype;
    emily_status s = emi_select_kernel_operands(dst->dtype, pt, on_true->dtype, on_false->dtype);
    if (s || dst->size == 0) return s;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[4] = {dst, pred, on_true, on_false};
    if ((s = emi_cuda_begin("select", dev_of(dst), 4, ts, &ctx))) return s;
        // integers read as their bits (the same truth), f16/bf16 as their bits
        // with select_kernel's `half` test, f32 and f64 as themselves
// clang-format off
#define SELECT_BITS(E, s, T) \
    case EMILY_##E: return select_pred<bits_of<sizeof(T)>::type>(ctx, dst, pred, on_true, on_false);
#define SELECT_AS(E, s, T) \
    case EMILY_##E: return select_pred<T>(ctx, dst, pred, on_true, on_false);
    // clang-format on
    switch (pt) {
        EMI_DTYPES_INTEGER(SELECT_BITS)
        EMI_DTYPES_HALF(SELECT_AS)
        EMI_DTYPES_NATIVE_FLOAT(SELECT_AS)
    default: return emily_error(EMILY_ERR_INTERNAL, "select kernel: bad predicate type");
    }
}
