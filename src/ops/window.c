/* Window family: window_sum/product/max/min and window_scatter_max/min.
 *
 * Checks ranks, window sizes, strides, dilations and padding like Nx's
 * Nx.Shape.pool, computes the output shape and runs the device's window
 * kernels (src/core/kernels.h). */
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"
#include "ops/output_shape.h"
#include "core/kernels.h"

#define WINDOW_MAX_RANK 64

static const char *reduce_name(emily_window_op op) {
    switch (op) {
    case EMILY_WINDOW_SUM: return "window_sum";
    case EMILY_WINDOW_PRODUCT: return "window_product";
    case EMILY_WINDOW_MAX: return "window_max";
    case EMILY_WINDOW_MIN: return "window_min";
    }
    return "window_reduce";
}

static emily_status check_list(const char *op, const char *what, int rank, const int64_t *v) {
    if (!v) return EMILY_OK;
    for (int d = 0; d < rank; d++)
        if (v[d] < 1)
            return emily_error(EMILY_ERR_ARGUMENT, "%s: %s must be positive, got %lld on axis %d", op, what,
                               (long long)v[d], d);
    return EMILY_OK;
}

/* Validates the window configuration against t and computes the window
 * positions (rank entries; ops/output_shape.h). */
emily_status emi_window_output_shape(const char *op, const emily_tensor *t, int rank, const int64_t *window,
                                     const int64_t *strides, const int64_t *pad_lo, const int64_t *pad_hi,
                                     const int64_t *dilations, int64_t *out_shape) {
    emily_status s;
    if (rank != t->rank)
        return emily_error(EMILY_ERR_SHAPE, "%s: the window has rank %d but the tensor %s has rank %d", op, rank,
                           EMILY_SHAPE_STR(t), t->rank);
    if (rank > WINDOW_MAX_RANK)
        return emily_error(EMILY_ERR_SHAPE, "%s: rank %d is above the supported %d", op, rank, WINDOW_MAX_RANK);
    if (rank > 0 && !window) return emily_error(EMILY_ERR_ARGUMENT, "%s: window dimensions are NULL", op);
    if ((s = check_list(op, "window dimensions", rank, window))) return s;
    if ((s = check_list(op, "strides", rank, strides))) return s;
    if ((s = check_list(op, "window dilations", rank, dilations))) return s;
    for (int d = 0; d < rank; d++) {
        int64_t lo = pad_lo ? pad_lo[d] : 0, hi = pad_hi ? pad_hi[d] : 0;
        int64_t dil = dilations ? dilations[d] : 1, st = strides ? strides[d] : 1;
        int64_t padded, span, eff;
        if (__builtin_add_overflow(lo, hi, &padded) || __builtin_add_overflow(padded, t->shape[d], &padded))
            return emily_error(EMILY_ERR_ARGUMENT, "%s: padding on axis %d overflows", op, d);
        if (padded < 0)
            return emily_error(EMILY_ERR_SHAPE, "%s: padding {%lld, %lld} makes axis %d of %s negative (%lld)", op,
                               (long long)lo, (long long)hi, d, EMILY_SHAPE_STR(t), (long long)padded);
        if (__builtin_mul_overflow(window[d] - 1, dil, &span) || __builtin_add_overflow(span, 1, &eff))
            return emily_error(EMILY_ERR_ARGUMENT, "%s: dilated window on axis %d overflows", op, d);
        if (eff > padded)
            return emily_error(EMILY_ERR_SHAPE,
                               "%s: the window (%lld, dilated to %lld) is larger than axis %d "
                               "of %s after padding (%lld): the result would be empty",
                               op, (long long)window[d], (long long)eff, d, EMILY_SHAPE_STR(t), (long long)padded);
        out_shape[d] = (padded - eff) / st + 1;
    }
    return EMILY_OK;
}

/* The device's window table, when it has `kernel` for `wop` on t's type. */
static emily_status window_table(const char *op, const emily_engine *e, emi_kernel kernel, int wop,
                                 const emily_tensor *t, const struct emily_window_kernels **k) {
    if (!emi_engine_supports(e, kernel, wop, t->dtype))
        return emily_error(EMILY_ERR_UNSUPPORTED, "%s: not implemented on the %s device", op, e->name);
    *k = e->window;
    return EMILY_OK;
}

/* Fills an array of rank entries with v (arrays given as NULL). */
static const int64_t *or_fill(const int64_t *given, int64_t *buf, int rank, int64_t v) {
    if (given) return given;
    for (int d = 0; d < rank; d++) buf[d] = v;
    return buf;
}

emily_status emily_window_reduce(emily_window_op op, const emily_tensor *t, int rank, const int64_t *window,
                                 const int64_t *strides, const int64_t *pad_lo, const int64_t *pad_hi,
                                 const int64_t *dilations, emily_tensor **out) {
    const char *name = reduce_name(op);
    const emily_engine *e;
    emily_status s = emi_check_sum_to_min(name, "window_reduce", (int)op, EMILY_WINDOW_MIN,
                                          op == EMILY_WINDOW_MAX || op == EMILY_WINDOW_MIN, t, out, &e);
    if (s) return s;
    int64_t shape[WINDOW_MAX_RANK], ones[WINDOW_MAX_RANK], zeros[WINDOW_MAX_RANK];
    if ((s = emi_window_output_shape(name, t, rank, window, strides, pad_lo, pad_hi, dilations, shape))) return s;
    const struct emily_window_kernels *k = NULL;
    if ((s = window_table(name, e, EMI_KERNEL_WINDOW_REDUCE, op, t, &k))) return s;
    emily_tensor *o;
    if ((s = emi_empty_like_device(t, t->dtype, rank, shape, &o))) return s;
    if (o->size > 0)
        s = k->reduce(op, o, t, window, or_fill(strides, ones, rank, 1), or_fill(dilations, ones, rank, 1),
                      or_fill(pad_lo, zeros, rank, 0));
    return emi_hand_out(s, o, out);
}

/* emily_window_sum, _product, _max and _min: emily_window_reduce with
 * their op. */
#define WINDOW_REDUCE_ENTRY(name, OP)                                                                                \
    emily_status emily_window_##name(const emily_tensor *t, int rank, const int64_t *window, const int64_t *strides, \
                                     const int64_t *pad_lo, const int64_t *pad_hi, const int64_t *dilations,         \
                                     emily_tensor **out) {                                                           \
        return emily_window_reduce(OP, t, rank, window, strides, pad_lo, pad_hi, dilations, out);                    \
    }
WINDOW_REDUCE_ENTRY(sum, EMILY_WINDOW_SUM)
WINDOW_REDUCE_ENTRY(product, EMILY_WINDOW_PRODUCT)
WINDOW_REDUCE_ENTRY(max, EMILY_WINDOW_MAX)
WINDOW_REDUCE_ENTRY(min, EMILY_WINDOW_MIN)
#undef WINDOW_REDUCE_ENTRY

static emily_status window_scatter(bool is_max, const emily_tensor *t, const emily_tensor *source,
                                   const emily_tensor *init, int rank, const int64_t *window, const int64_t *strides,
                                   const int64_t *pad_lo, const int64_t *pad_hi, emily_tensor **out) {
    const char *name = is_max ? "window_scatter_max" : "window_scatter_min";
    emily_status s;
    if ((s = emi_check_out(name, out))) return s;
    if ((s = emi_check_tensor(name, "tensor", t))) return s;
    if ((s = emi_check_tensor(name, "source", source))) return s;
    if ((s = emi_check_tensor(name, "init_value", init))) return s;
    const emily_tensor *all[3] = {t, source, init};
    const char *names[3] = {"tensor", "source", "init_value"};
    for (int i = 0; i < 3; i++) {
        if (!emily_dtype_valid(all[i]->dtype))
            return emily_error(EMILY_ERR_TYPE, "%s: %s has an invalid type", name, names[i]);
        if (emily_dtype_is_complex(all[i]->dtype))
            return emily_error(EMILY_ERR_TYPE, "%s: complex %s (%s) is not supported", name, names[i],
                               emily_dtype_name(all[i]->dtype));
    }
    if (init->size != 1 || init->rank != 0)
        return emily_error(EMILY_ERR_SHAPE, "%s: init_value must be a scalar (rank 0), got %s", name,
                           EMILY_SHAPE_STR(init));
    const emily_engine *e;
    if ((s = emi_check_same_device(name, 3, all, &e))) return s;
    int64_t shape[WINDOW_MAX_RANK], zeros[WINDOW_MAX_RANK], ones[WINDOW_MAX_RANK];
    if ((s = emi_window_output_shape(name, t, rank, window, strides, pad_lo, pad_hi, NULL, shape))) return s;
    bool match = source->rank == rank;
    for (int d = 0; match && d < rank; d++) match = source->shape[d] == shape[d];
    if (!match)
        return emily_error(EMILY_ERR_SHAPE, "%s: source shape %s must match the window positions %s of tensor %s", name,
                           EMILY_SHAPE_STR(source), emi_shape_str(rank, shape, (char[256]){0}, 256),
                           EMILY_SHAPE_STR(t));
    emily_dtype ot = emily_type_merge(source->dtype, init->dtype);
    const struct emily_window_kernels *k = NULL;
    if ((s = window_table(name, e, EMI_KERNEL_WINDOW_SCATTER, is_max, t, &k))) return s;
    emily_tensor *o;
    if ((s = emi_empty_like_device(t, ot, t->rank, t->shape, &o))) return s;
    if (o->size > 0)
        s = k->scatter(is_max, o, t, source, init, window, or_fill(strides, ones, rank, 1),
                       or_fill(pad_lo, zeros, rank, 0));
    return emi_hand_out(s, o, out);
}

/* emily_window_scatter_max and _min: window_scatter, selecting the max or
 * the min. */
#define WINDOW_SCATTER_ENTRY(name, IS_MAX)                                                                         \
    emily_status emily_window_scatter_##name(const emily_tensor *t, const emily_tensor *source,                    \
                                             const emily_tensor *init_value, int rank, const int64_t *window,      \
                                             const int64_t *strides, const int64_t *pad_lo, const int64_t *pad_hi, \
                                             emily_tensor **out) {                                                 \
        return window_scatter(IS_MAX, t, source, init_value, rank, window, strides, pad_lo, pad_hi, out);          \
    }
WINDOW_SCATTER_ENTRY(max, true)
WINDOW_SCATTER_ENTRY(min, false)
#undef WINDOW_SCATTER_ENTRY
