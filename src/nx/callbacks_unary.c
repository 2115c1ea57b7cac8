/* Nx callbacks: every unary element-wise op, plus as_type and bitcast.
 *
 * Unary callbacks are (out, tensor): the output type and shape are
 * inferred by emily_unary in every mode. as_type and bitcast take their
 * target type from the template (it is the option Nx.as_type/2 and
 * Nx.bitcast/2 are called with). */
#include "nx/callback.h"

static emily_status cb_unary(emily_call *c) {
    emily_unary_op op;
    if (!emily_unary_op_from_name(c->name, &op))
        return emi_call_fail(c, EMILY_ERR_INTERNAL, "not a unary op");
    emily_status s = emi_call_arity(c, 1, 1);
    if (s) return s;
    emily_tensor *t, *r;
    if ((s = emi_call_tensor(c, 0, &t))) return s;
    if ((s = emily_unary(op, t, &r))) return s;
    return emi_call_return(c, r);
}

static emily_status cb_retype(emily_call *c, bool bitcast) {
    emily_status s = emi_call_arity(c, 1, 1);
    if (s) return s;
    emily_dtype dt;
    if ((s = emi_call_template(c, 0, &dt, NULL, NULL))) return s;
    emily_tensor *t, *r;
    if ((s = emi_call_tensor(c, 0, &t))) return s;
    if ((s = bitcast ? emily_bitcast(t, dt, &r) : emily_as_type(t, dt, &r))) return s;
    return emi_call_return(c, r);
}
static emily_status cb_as_type(emily_call *c) { return cb_retype(c, false); }
static emily_status cb_bitcast(emily_call *c) { return cb_retype(c, true); }

/* The handlers the registry (src/nx/callback_list.h) names. */
emily_status emi_cb_unary(emily_call *c) { return cb_unary(c); }
emily_status emi_cb_as_type(emily_call *c) { return cb_as_type(c); }
emily_status emi_cb_bitcast(emily_call *c) { return cb_bitcast(c); }
