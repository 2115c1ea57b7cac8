/* as_type and bitcast. */
#include "ops/common.h"

/* The checks both ops start with: the output pointer, the tensor, and a
 * valid target type. */
static emily_status check_target(const char *op, const emily_tensor *t, emily_dtype dtype,
                                 emily_tensor **out) {
    emily_status s = emi_check_args(op, out, 1, &t, (const char *const[]){"tensor"});
    if (!s && !emily_dtype_valid(dtype))
        s = emily_error(EMILY_ERR_TYPE, "%s: invalid target type %d", op, (int)dtype);
    return s;
}

emily_status emily_as_type(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    emily_status s = check_target("as_type", t, dtype, out);
    if (s) return s;
    /* Nx returns the tensor itself when the type does not change */
    if (t->dtype == dtype) {
        emily_tensor_retain((emily_tensor *)t);
        *out = (emily_tensor *)t;
        return EMILY_OK;
    }
    const emily_engine *e;
    if ((s = emi_check_same_device("as_type", 1, &t, &e))) return s;
    if (!e->supports(e, EMI_KERNEL_CONVERT, 0, (const emily_dtype[]){dtype, t->dtype}, 2)) {
        char dev[32];
        emily_device_format(t->buffer->device, dev, sizeof dev);
        return emily_error(EMILY_ERR_UNSUPPORTED, "as_type: not available on device %s", dev);
    }
    emily_tensor *r;
    if ((s = emi_empty_like_device(t, dtype, t->rank, t->shape, &r))) return s;
    return emi_hand_out(e->copy->convert(r, t), r, out);
}

emily_status emily_bitcast(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    emily_status s = check_target("bitcast", t, dtype, out);
    if (s) return s;
    if (emily_dtype_is_complex(t->dtype) || emily_dtype_is_complex(dtype))
        return emily_error(EMILY_ERR_TYPE, "bitcast: complex types are not supported (%s to %s)",
                           emily_dtype_name(t->dtype), emily_dtype_name(dtype));
    if (emily_dtype_size(t->dtype) != emily_dtype_size(dtype))
        return emily_error(EMILY_ERR_TYPE,
                           "bitcast: input type width must match the new type width, got %s and %s",
                           emily_dtype_name(t->dtype), emily_dtype_name(dtype));
    /* Same element size: the same bytes under new strides-in-elements, so
     * a view of the buffer with another dtype (no copy). */
    return emi_tensor_wrap(t->buffer, dtype, t->rank, t->shape, t->strides, t->offset, out);
}
