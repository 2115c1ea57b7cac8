/* Nx callbacks: creation family (constant, iota, eye).
 *
 * Nx's public API passes the type and shape of a new tensor as options,
 * so these take both from the output template in every mode. */
#include "nx/callback.h"

/* The new tensor's type and shape: the output template's. */
typedef struct new_spec {
    emily_dtype dt;
    int rank;
    const int64_t *shape;
} new_spec;

/* Checks the arity and reads the template. */
static emily_status new_tensor(emily_call *c, size_t min, size_t max, new_spec *n) {
    emily_status s = emi_call_arity(c, min, max);
    return s ? s : emi_call_template(c, 0, &n->dt, &n->rank, &n->shape);
}

/* constant(out, number, backend_options) */
emily_status emi_cb_constant(emily_call *c) {
    new_spec n;
    emily_scalar v;
    emily_tensor *t;
    emily_status s = new_tensor(c, 1, 2, &n);
    if (!s) s = emi_value_scalar(c, emi_call_arg(c, 0), "the constant", &v);
    if (!s) s = emily_constant(c->device, n.dt, n.rank, n.shape, v, &t);
    return s ? s : emi_call_return(c, t);
}

/* iota(out, axis | nil, backend_options) */
emily_status emi_cb_iota(emily_call *c) {
    new_spec n;
    emily_status s = new_tensor(c, 1, 2, &n);
    if (s) return s;
    const emily_value *a = emi_call_arg(c, 0);
    int axis = -1;
    if (a && a->kind != EMILY_V_NIL) {
        int64_t v;
        if ((s = emi_value_int(c, a, "the axis", &v))) return s;
        if (v < 0 || v >= n.rank)
            return emi_call_fail(c, EMILY_ERR_AXIS, "axis %lld out of range for a shape of rank %d", (long long)v,
                                 n.rank);
        axis = (int)v;
    }
    emily_tensor *t;
    if ((s = emily_iota(c->device, n.dt, n.rank, n.shape, axis, &t))) return s;
    return emi_call_return(c, t);
}

/* eye(out, backend_options) */
emily_status emi_cb_eye(emily_call *c) {
    new_spec n;
    emily_tensor *t;
    emily_status s = new_tensor(c, 0, 1, &n);
    if (!s) s = emily_eye(c->device, n.dt, n.rank, n.shape, &t);
    return s ? s : emi_call_return(c, t);
}
