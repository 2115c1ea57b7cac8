/* Nx callbacks: every unary element-wise op, plus as_type and bitcast.
 *
 * Unary callbacks are (out, tensor): the output type and shape are
 * inferred by emily_unary in every mode. as_type and bitcast take their
 * target type from the template (it is the option Nx.as_type/2 and
 * Nx.bitcast/2 are called with). */
#include "nx/callback.h"

emily_status emi_cb_unary(emily_call *c) {
    emily_unary_op op;
    if (!emily_unary_op_from_name(c->name, &op)) return emi_call_fail(c, EMILY_ERR_INTERNAL, "not a unary op");
    emily_tensor *t, *r;
    emily_status s = emi_call_tensors(c, 1, 1, 1, &t);
    if (!s) s = emily_unary(op, t, &r);
    return s ? s : emi_call_return(c, r);
}

/* as_type and bitcast: the target type is the template's. */
static emily_status cb_retype(emily_call *c, bool bitcast) {
    emily_dtype dt;
    emily_tensor *t, *r;
    emily_status s = emi_call_arity(c, 1, 1);
    if (!s) s = emi_call_template(c, 0, &dt, NULL, NULL);
    if (!s) s = emi_call_tensor(c, 0, &t);
    if (!s) s = bitcast ? emily_bitcast(t, dt, &r) : emily_as_type(t, dt, &r);
    return s ? s : emi_call_return(c, r);
}

emily_status emi_cb_as_type(emily_call *c) { return cb_retype(c, false); }
emily_status emi_cb_bitcast(emily_call *c) { return cb_retype(c, true); }
