/* as_type and bitcast. */
#include "ops/common.h"

emily_status emily_as_type(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    emily_status s = emi_check_out("as_type", out);
    if (s) return s;
    if ((s = emi_check_tensor("as_type", "tensor", t))) return s;
    if (!emily_dtype_valid(dtype))
        return emily_error(EMILY_ERR_TYPE, "as_type: invalid target type %d", (int)dtype);
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
    if ((s = e->copy->convert(r, t))) {
        emily_tensor_release(r);
        return s;
    }
    *out = r;
    return EMILY_OK;
}

emily_status emily_bitcast(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    emily_status s = emi_check_out("bitcast", out);
    if (s) return s;
    if ((s = emi_check_tensor("bitcast", "tensor", t))) return s;
    if (!emily_dtype_valid(dtype))
        return emily_error(EMILY_ERR_TYPE, "bitcast: invalid target type %d", (int)dtype);
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
