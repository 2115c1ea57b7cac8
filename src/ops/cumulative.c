/* Cumulative family: cumulative_sum, _product, _max, _min.
 *
 * Checks axis and types, makes the input contiguous when it is not, and
 * runs the device's scan kernel (src/core/kernels.h) over the
 * [outer, n, inner] layout around the axis. */
#include "ops/common.h"
#include "core/kernels.h"

static const char *cum_name(emily_cumulative_op op) {
    switch (op) {
    case EMILY_CUMULATIVE_SUM: return "cumulative_sum";
    case EMILY_CUMULATIVE_PRODUCT: return "cumulative_product";
    case EMILY_CUMULATIVE_MAX: return "cumulative_max";
    case EMILY_CUMULATIVE_MIN: return "cumulative_min";
    }
    return "cumulative";
}

emily_status emily_cumulative(emily_cumulative_op op, const emily_tensor *t, int axis, bool reverse,
                              emily_tensor **out) {
    const char *name = cum_name(op);
    const emily_engine *e;
    emily_status s = emi_check_sum_to_min(name, "cumulative", (int)op, EMILY_CUMULATIVE_MIN,
                                          op == EMILY_CUMULATIVE_MAX || op == EMILY_CUMULATIVE_MIN, t, out, &e);
    if (s) return s;
    int ax = 0;
    if (t->rank == 0) {
        if (axis != 0 && axis != -1)
            return emily_error(EMILY_ERR_AXIS, "%s: axis %d out of range for a tensor of rank 0", name, axis);
    } else if ((s = emi_norm_axis(name, axis, t->rank, &ax))) {
        return s;
    }
    if (!emi_engine_supports(e, EMI_KERNEL_SCAN, op, t->dtype))
        return emily_error(EMILY_ERR_UNSUPPORTED, "%s: not implemented on the %s device", name, e->name);
    int64_t outer = 1, inner = 1, n = t->rank ? t->shape[ax] : 1;
    for (int d = 0; d < ax; d++) outer *= t->shape[d];
    for (int d = ax + 1; d < t->rank; d++) inner *= t->shape[d];
    emily_tensor *o = NULL, *src = NULL;
    if ((s = emi_empty_like_device(t, t->dtype, t->rank, t->shape, &o))) return s;
    if (t->size > 0) {
        s = emily_contiguous(t, &src);
        if (!s) s = e->cumulative->scan(op, o, src, outer, n, inner, reverse);
        emily_tensor_release(src);
    }
    return emi_hand_out(s, o, out);
}

emily_status emily_cumulative_sum(const emily_tensor *t, int axis, bool reverse, emily_tensor **out) {
    return emily_cumulative(EMILY_CUMULATIVE_SUM, t, axis, reverse, out);
}
emily_status emily_cumulative_product(const emily_tensor *t, int axis, bool reverse, emily_tensor **out) {
    return emily_cumulative(EMILY_CUMULATIVE_PRODUCT, t, axis, reverse, out);
}
emily_status emily_cumulative_max(const emily_tensor *t, int axis, bool reverse, emily_tensor **out) {
    return emily_cumulative(EMILY_CUMULATIVE_MAX, t, axis, reverse, out);
}
emily_status emily_cumulative_min(const emily_tensor *t, int axis, bool reverse, emily_tensor **out) {
    return emily_cumulative(EMILY_CUMULATIVE_MIN, t, axis, reverse, out);
}
