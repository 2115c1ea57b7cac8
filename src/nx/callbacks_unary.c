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

const emily_callback_entry emi_callbacks_unary[] = {
    {"exp", cb_unary},
    {"expm1", cb_unary},
    {"log", cb_unary},
    {"log1p", cb_unary},
    {"sigmoid", cb_unary},
    {"cos", cb_unary},
    {"sin", cb_unary},
    {"tan", cb_unary},
    {"cosh", cb_unary},
    {"sinh", cb_unary},
    {"tanh", cb_unary},
    {"acos", cb_unary},
    {"asin", cb_unary},
    {"atan", cb_unary},
    {"acosh", cb_unary},
    {"asinh", cb_unary},
    {"atanh", cb_unary},
    {"sqrt", cb_unary},
    {"rsqrt", cb_unary},
    {"cbrt", cb_unary},
    {"erf", cb_unary},
    {"erfc", cb_unary},
    {"erf_inv", cb_unary},
    {"abs", cb_unary},
    {"bitwise_not", cb_unary},
    {"ceil", cb_unary},
    {"conjugate", cb_unary},
    {"floor", cb_unary},
    {"negate", cb_unary},
    {"round", cb_unary},
    {"sign", cb_unary},
    {"count_leading_zeros", cb_unary},
    {"population_count", cb_unary},
    {"real", cb_unary},
    {"imag", cb_unary},
    {"is_nan", cb_unary},
    {"is_infinity", cb_unary},
    {"logical_not", cb_unary},
    {"phase", cb_unary},
    {"as_type", cb_as_type},
    {"bitcast", cb_bitcast},
    {NULL, NULL},
};
