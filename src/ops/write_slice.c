/* emily_write_slice: the one op that writes into an existing tensor. A
 * decoder's key/value cache grows by one token per step; put_slice would
 * copy the whole cache to add that token, this writes the token's rows
 * where they belong. Everything else in the engine is functional, so the
 * op guards what immutability gave for free: the target's buffer loses
 * its host mirror (tensor_impl.h: a mirror assumes the bytes never
 * change), and starts are checked, not clamped, because a clamped write
 * would overwrite rows the caller meant to keep. */
#include "ops/common.h"

emily_status emily_write_slice(emily_tensor *target, const int64_t *starts, const emily_tensor *update) {
    const char *op = "write_slice";
    if (!target || !update)
        return emily_error(EMILY_ERR_ARGUMENT, "write_slice: %s is NULL", !target ? "the target" : "the update");
    const emily_engine *e;
    const emily_tensor *both[2] = {target, update};
    emily_status s = emi_check_same_device(op, 2, both, &e);
    if (s) return s;
    if (target->dtype != update->dtype)
        return emily_error(EMILY_ERR_TYPE,
                           "write_slice: the update is %s, the target %s (convert it first: "
                           "a write does not change the target's type)",
                           emily_dtype_name(update->dtype), emily_dtype_name(target->dtype));
    int r = target->rank;
    if (update->rank != r)
        return emily_error(EMILY_ERR_SHAPE,
                           "write_slice: an update of shape %s into a target of shape %s (ranks differ)",
                           EMILY_SHAPE_STR(update), EMILY_SHAPE_STR(target));
    if (r > 0 && !starts) return emily_error(EMILY_ERR_ARGUMENT, "write_slice: start indices are NULL");
    int64_t off = target->offset;
    for (int i = 0; i < r; i++) {
        if (starts[i] < 0 || update->shape[i] > target->shape[i] || starts[i] > target->shape[i] - update->shape[i])
            return emily_error(EMILY_ERR_SHAPE,
                               "write_slice: an update of shape %s at start %lld of axis %d does not fit "
                               "in the target of shape %s",
                               EMILY_SHAPE_STR(update), (long long)starts[i], i, EMILY_SHAPE_STR(target));
        off += starts[i] * target->strides[i];
    }
    if (update->size == 0) return EMILY_OK;
    for (int i = 0; i < r; i++)
        if (target->strides[i] == 0 && update->shape[i] > 1)
            return emily_error(EMILY_ERR_SHAPE,
                               "write_slice: axis %d of the target is broadcast (stride 0): "
                               "one element stands for all of it, so it cannot take %lld rows",
                               i, (long long)update->shape[i]);
    s = emi_need_kernel(op, e, EMI_KERNEL_COPY, 0, update->dtype);
    if (s) return s;
    emily_tensor *dst = NULL;
    /* the view's offset is absolute (from the buffer's start) */
    s = emi_tensor_view(target, r, update->shape, target->strides, off, &dst);
    if (s) return s;
    target->buffer->mirror_bytes = 0;
    s = e->copy->copy(dst, update);
    emily_tensor_release(dst);
    return s;
}
