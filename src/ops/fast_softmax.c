/* Fused softmax over the last axis (emily/ops_fast.h): checks the
 * argument and hands the device's kernel (src/core/kernels.h, the fast
 * family) a contiguous x; the output has x's type and shape. */
#include "ops/common.h"
#include "core/kernels.h"

emily_status emily_softmax(const emily_tensor *x, emily_tensor **out) {
    static const char *const names[1] = {"x"};
    const emily_engine *e;
    emily_status s = emi_check_inputs("softmax", out, 1, (const emily_tensor *[]){x}, names, &e);
    if (s) return s;
    if (!emily_dtype_is_float(x->dtype))
        return emily_error(EMILY_ERR_TYPE, "softmax: x must be a real float tensor (f16, bf16, f32 or f64), got %s",
                           emily_dtype_name(x->dtype));
    if (x->rank < 1)
        return emily_error(EMILY_ERR_SHAPE,
                           "softmax: x must have rank 1 or more (the last axis is normalized), got a scalar");
    if ((s = emi_need_kernel("softmax", e, EMI_KERNEL_SOFTMAX, 0, x->dtype))) return s;
    emily_tensor *dst = NULL, *xc = NULL;
    if ((s = emi_empty_like_device(x, x->dtype, x->rank, x->shape, &dst))) return s;
    if (x->size > 0) {
        s = emily_contiguous(x, &xc);
        if (!s) s = e->fast->softmax(dst, xc);
    }
    emily_tensor_release(xc);
    return emi_hand_out(s, dst, out);
}
