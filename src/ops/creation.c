/* Creation: constant, iota, eye. */
#include "ops/common.h"
#include "core/scalar_element.h"
#include "core/tensor_impl.h"

/* Checks the output pointer, the dtype and shape of a new tensor, and
 * gets the device's engine. */
static emily_status check_new(const char *op, emily_tensor **out, emily_device device, emily_dtype dtype, int rank,
                              const int64_t *shape, const emily_engine **e) {
    emily_status s = emi_check_out(op, out);
    if (s) return s;
    if (!emily_dtype_valid(dtype)) return emily_error(EMILY_ERR_TYPE, "%s: invalid type %d", op, (int)dtype);
    if (rank < 0) return emily_error(EMILY_ERR_SHAPE, "%s: negative rank %d", op, rank);
    if (rank > 0 && !shape) return emily_error(EMILY_ERR_ARGUMENT, "%s: shape is NULL", op);
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0) {
            char buf[256];
            return emily_error(EMILY_ERR_SHAPE, "%s: negative dimension in shape %s", op,
                               emi_shape_str(rank, shape, buf, sizeof buf));
        }
    return emi_engine_get(device, e);
}

static emily_status unsupported(const char *op, emily_device device) {
    char dev[32];
    emily_device_format(device, dev, sizeof dev);
    return emily_error(EMILY_ERR_UNSUPPORTED, "%s: not available on device %s", op, dev);
}

emily_status emily_constant(emily_device device, emily_dtype dtype, int rank, const int64_t *shape, emily_scalar value,
                            emily_tensor **out) {
    const emily_engine *e;
    emily_status s = check_new("constant", out, device, dtype, rank, shape, &e);
    if (s) return s;
    if (value.kind != EMILY_SCALAR_INT && value.kind != EMILY_SCALAR_UINT && value.kind != EMILY_SCALAR_FLOAT &&
        value.kind != EMILY_SCALAR_COMPLEX)
        return emily_error(EMILY_ERR_ARGUMENT, "constant: invalid scalar kind %d", (int)value.kind);
    if (!emi_engine_supports(e, EMI_KERNEL_FILL, 0, dtype)) return unsupported("constant", device);
    emily_tensor *t;
    if ((s = emily_empty(device, dtype, rank, shape, &t))) return s;
    s = e->creation->fill(t, &value);
    if (!s && t->size == 1) { /* its bytes known here: a device scalar's mirror */
        unsigned char bytes[16];
        emi_scalar_element(dtype, &value, bytes);
        emi_buffer_mirror(t->buffer, bytes, emily_dtype_size(dtype));
    }
    return emi_hand_out(s, t, out);
}

emily_status emily_iota(emily_device device, emily_dtype dtype, int rank, const int64_t *shape, int axis,
                        emily_tensor **out) {
    const emily_engine *e;
    emily_status s = check_new("iota", out, device, dtype, rank, shape, &e);
    if (s) return s;
    if (axis >= rank)
        return emily_error(EMILY_ERR_AXIS, "iota: axis %d out of range for a shape of rank %d", axis, rank);
    if (!emi_engine_supports(e, EMI_KERNEL_IOTA, 0, dtype)) return unsupported("iota", device);
    emily_tensor *t;
    if ((s = emily_empty(device, dtype, rank, shape, &t))) return s;
    return emi_hand_out(e->creation->iota(t, axis < 0 ? -1 : axis), t, out);
}

emily_status emily_eye(emily_device device, emily_dtype dtype, int rank, const int64_t *shape, emily_tensor **out) {
    const emily_engine *e;
    emily_status s = check_new("eye", out, device, dtype, rank, shape, &e);
    if (s) return s;
    if (rank < 2) {
        char buf[256];
        return emily_error(EMILY_ERR_SHAPE, "eye: expects a shape with at least 2 dimensions, got %s",
                           emi_shape_str(rank, shape, buf, sizeof buf));
    }
    if (!emi_engine_supports(e, EMI_KERNEL_EYE, 0, dtype)) return unsupported("eye", device);
    emily_tensor *t;
    if ((s = emily_empty(device, dtype, rank, shape, &t))) return s;
    return emi_hand_out(e->creation->eye(t), t, out);
}
