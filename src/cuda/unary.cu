// Unary ops on CUDA: the kernels of unary_ops.cuh for every op but the
// transcendental ones (unary_math.cu), and the entry point.
#include "cuda/unary_ops.cuh"

using namespace emily_cuda;

extern "C" emily_status emi_cuda_unary(emily_unary_op op, emily_tensor *dst, const emily_tensor *src) {
    if ((unsigned)op >= EMILY_UNARY_OP_COUNT)
        return emily_error(EMILY_ERR_INTERNAL, "unary kernel: bad op %d", (int)op);
    unary_run fn = is_math_rule(emi_unary_rule_of(op)) ? unary_pick_math(op, src->dtype, dst->dtype)
                                                       : pick_unary<false>(op, src->dtype, dst->dtype);
    if (!fn)
        return emily_error(EMILY_ERR_TYPE, "%s: no cuda kernel from %s to %s", emily_unary_op_name(op),
                           emily_dtype_name(src->dtype), emily_dtype_name(dst->dtype));
    if (dst->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    emily_status s = begin_dst_src(emily_unary_op_name(op), dst, src, &ctx);
    return s ? s : fn(ctx, dst, src);
}
