/* Nx callbacks: creation family (constant, iota, eye).
 *
 * Nx's public API passes the type and shape of a new tensor as options,
 * so these take both from the output template in every mode. */
#include "nx/callback.h"

/* constant(out, number, backend_options) */
emily_status emi_cb_constant(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_dtype dt;
    int rank;
    const int64_t *shape;
    if ((s = emi_call_template(c, 0, &dt, &rank, &shape))) return s;
    emily_scalar v;
    if ((s = emi_value_scalar(c, emi_call_arg(c, 0), "the constant", &v))) return s;
    emily_tensor *t;
    if ((s = emily_constant(c->device, dt, rank, shape, v, &t))) return s;
    return emi_call_return(c, t);
}

/* iota(out, axis | nil, backend_options) */
emily_status emi_cb_iota(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_dtype dt;
    int rank;
    const int64_t *shape;
    if ((s = emi_call_template(c, 0, &dt, &rank, &shape))) return s;
    const emily_value *a = emi_call_arg(c, 0);
    int axis = -1;
    if (a && a->kind != EMILY_V_NIL) {
        int64_t v;
        if ((s = emi_value_int(c, a, "the axis", &v))) return s;
        if (v < 0 || v >= rank)
            return emi_call_fail(c, EMILY_ERR_AXIS, "axis %lld out of range for a shape of rank %d",
                             (long long)v, rank);
        axis = (int)v;
    }
    emily_tensor *t;
    if ((s = emily_iota(c->device, dt, rank, shape, axis, &t))) return s;
    return emi_call_return(c, t);
}

/* eye(out, backend_options) */
emily_status emi_cb_eye(emily_call *c) {
    emily_status s = emi_call_arity(c, 0, 1);
    if (s) return s;
    emily_dtype dt;
    int rank;
    const int64_t *shape;
    if ((s = emi_call_template(c, 0, &dt, &rank, &shape))) return s;
    emily_tensor *t;
    if ((s = emily_eye(c->device, dt, rank, shape, &t))) return s;
    return emi_call_return(c, t);
}
