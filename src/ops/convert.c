/* as_type and bitcast. */
#include "ops/common.h"

/* The checks both ops start with: the output pointer, the tensor, and a
 * known target type. (Not emi_check_args: these two ops take the narrow
 * types, which it refuses.) */
static emily_status check_target(const char *op, const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    emily_status s = emi_check_out(op, out);
    if (!s && !t) s = emily_error(EMILY_ERR_ARGUMENT, "%s: tensor is NULL", op);
    if (!s && !emily_dtype_known(dtype)) s = emily_error(EMILY_ERR_TYPE, "%s: invalid target type %d", op, (int)dtype);
    return s;
}

/* dst <- t in dtype with one kernel: the ordinary conversion between two
 * computed types, or a narrow type's to or from its hub. */
static emily_status convert_step(const emily_engine *e, const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    bool narrow = emily_dtype_is_narrow(t->dtype) || emily_dtype_is_narrow(dtype);
    if (!e->supports(e, narrow ? EMI_KERNEL_CONVERT_NARROW : EMI_KERNEL_CONVERT, 0,
                     (const emily_dtype[]){dtype, t->dtype}, 2)) {
        char dev[32];
        emily_device_format(t->buffer->device, dev, sizeof dev);
        return emily_error(EMILY_ERR_UNSUPPORTED, "as_type: not available on device %s", dev);
    }
    emily_tensor *r;
    emily_status s = emi_empty_like_device(t, dtype, t->rank, t->shape, &r);
    if (s) return s;
    return emi_hand_out(narrow ? e->copy->convert_narrow(r, t) : e->copy->convert(r, t), r, out);
}

/* The hub a narrow type converts through on its way to or from `other`
 * (core/narrow_rules.h): s64 between two integer types (the low bits),
 * f64 otherwise (Nx's float rules; f64 holds every narrow value). */
static emily_dtype hub_for(emily_dtype narrow, emily_dtype other) {
    return emily_dtype_is_integer(narrow) && emily_dtype_is_integer(other) ? EMILY_S64 : EMILY_F64;
}

/* t (any type) in dtype (any other type): one step between computed
 * types; through the hub where a side is narrow (a narrow source first
 * goes to its hub, which then converts on; a narrow target is reached
 * from its hub). */
static emily_status convert_any(const emily_engine *e, const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    if (t->dtype == dtype) {
        emily_tensor_retain((emily_tensor *)t);
        *out = (emily_tensor *)t;
        return EMILY_OK;
    }
    emily_dtype hub;
    if (emily_dtype_is_narrow(t->dtype)) hub = hub_for(t->dtype, dtype);
    else if (emily_dtype_is_narrow(dtype)) hub = hub_for(dtype, t->dtype);
    else return convert_step(e, t, dtype, out);
    if (hub == dtype || hub == t->dtype) return convert_step(e, t, dtype, out);
    emily_tensor *mid;
    emily_status s = convert_step(e, t, hub, &mid);
    if (s) return s;
    s = convert_any(e, mid, dtype, out);
    emily_tensor_release(mid);
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
    return convert_any(e, t, dtype, out);
}

emily_status emily_bitcast(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    emily_status s = check_target("bitcast", t, dtype, out);
    if (s) return s;
    if (emily_dtype_is_complex(t->dtype) || emily_dtype_is_complex(dtype))
        return emily_error(EMILY_ERR_TYPE, "bitcast: complex types are not supported (%s to %s)",
                           emily_dtype_name(t->dtype), emily_dtype_name(dtype));
    if (emily_dtype_bits(t->dtype) != emily_dtype_bits(dtype))
        return emily_error(EMILY_ERR_TYPE, "bitcast: input type width must match the new type width, got %s and %s",
                           emily_dtype_name(t->dtype), emily_dtype_name(dtype));
    /* s2 <-> u2, s4 <-> u4: the same bits, but a byte holds the value
     * sign- or zero-extended, so the bytes change: the low bits kept */
    if (emily_dtype_bits(dtype) < 8 && t->dtype != dtype) return emily_as_type(t, dtype, out);
    /* Same element size: the same bytes under new strides-in-elements, so
     * a view of the buffer with another dtype (no copy). */
    return emi_tensor_wrap(t->buffer, dtype, t->rank, t->shape, t->strides, t->offset, out);
}
