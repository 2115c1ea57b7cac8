/* Nx callbacks: cumulative family.
 *
 * cumulative_sum|product|max|min(out, tensor, opts)
 *     opts: axis (default 0), reverse (default false). Nx 0.13 sends the
 *     Nx.Block.Cumulative* struct's fields as this final opts argument;
 *     Nx 0.7 called the optional callback with the same keyword list. A
 *     bare integer in its place is taken as the axis. The output type and
 *     shape are the input's, inferred in both modes. */
#include <limits.h>
#include "nx/callback.h"

/* c->op: the emily_cumulative_op */
emily_status emi_cb_cumulative(emily_call *c) {
    emily_cumulative_op op = (emily_cumulative_op)c->op;
    emily_tensor *t, *r;
    emily_status s = emi_call_tensors(c, 1, 2, 1, &t);
    if (s) return s;
    int64_t axis = 0;
    bool reverse = false;
    const emily_value *a = emi_call_arg(c, 1);
    if (a && a->kind == EMILY_V_INT) {
        axis = a->i;
    } else if (a && a->kind != EMILY_V_NIL) {
        const emily_value *opts;
        if ((s = emi_call_opts(c, 1, &opts))) return s;
        if ((s = emi_opt_int(c, opts, "axis", "axis", &axis)) ||
            (s = emi_opt_bool(c, opts, "reverse", "reverse", &reverse)))
            return s;
    }
    if (axis < INT_MIN || axis > INT_MAX)
        return emi_call_fail(c, EMILY_ERR_AXIS, "axis %lld is out of range", (long long)axis);
    if ((s = emily_cumulative(op, t, (int)axis, reverse, &r))) return s;
    return emi_call_return(c, r);
}
