/* Nx callbacks: reduce family (sum, product, reduce_max, reduce_min, all,
 * any, argmax, argmin, all_close). */
#include <string.h>
#include "nx/callback.h"
#include "ops/common.h"

/* The result's shape must be Nx's before the work: an empty input's
 * result is filled with the starting value however large its kept dims
 * are (fuzz_graph: `any` of a {0, ...} tensor kept u8{50331650} where the
 * template said {2}, 5 s under ASan). Axes the reduction itself would
 * refuse are left to it, so that its error is the one reported. */
static emily_status check_reduced_shape(emily_call *c, const emily_tensor *t, const int *axes, int n, bool keep) {
    int rank = emily_tensor_rank(t), out_rank = 0;
    const int64_t *shape = emily_tensor_shape(t);
    bool reduced[EMILY_MAX_RANK] = {false};
    int64_t out[EMILY_MAX_RANK];
    if (n < 0)
        for (int i = 0; i < rank; i++) reduced[i] = true;
    else if (emi_norm_axes(c->name, n, axes, rank, NULL, reduced)) return EMILY_OK; /* emily_reduce reports it */
    for (int i = 0; i < rank; i++)
        if (!reduced[i]) out[out_rank++] = shape[i];
        else if (keep) out[out_rank++] = 1;
    return emi_call_check_output(c, 0, EMILY_DTYPE_AUTO, out_rank, out);
}

/* op(out, tensor, [axes: axes | nil, keep_axes: bool]) */
emily_status emi_cb_aggregate(emily_call *c) {
    emily_reduce_op op = (emily_reduce_op)c->op;
    emily_tensor *t, *r;
    const emily_value *opts;
    int *axes = NULL, n = -1;
    bool keep = false;
    emily_status s = emi_call_tensors(c, 2, 2, 1, &t);
    if (!s) s = emi_call_opts(c, 1, &opts);
    if (s) return s;
    const emily_value *v = emi_opt_get(opts, "axes");
    if (v) s = emi_value_axes(c, v, "option :axes", &axes, &n);
    if (!s) s = emi_opt_bool(c, opts, "keep_axes", NULL, &keep);
    if (!s) s = check_reduced_shape(c, t, axes, n, keep);
    if (s) return s;
    /* sum/product/max/min: Nx fixes the type from the input's (in RUN
     * mode the template's type is passed, and equals that inference) */
    emily_dtype want = op == EMILY_REDUCE_ALL || op == EMILY_REDUCE_ANY ? EMILY_DTYPE_AUTO : emi_call_out_type(c);
    s = emily_reduce(op, t, n < 0 ? 0 : n, n < 0 ? NULL : axes, keep, want, &r);
    return s ? s : emi_call_return(c, r);
}

/* argmax/argmin(out, tensor, [axis: int | nil, keep_axis: bool,
 * tie_break: :low | :high]). The index type is Nx's :type option, which
 * reaches a backend only through the template: taken from it in both
 * modes. */
emily_status emi_cb_argreduce(emily_call *c) {
    emily_arg_op op = (emily_arg_op)c->op;
    emily_tensor *t, *r;
    const emily_value *opts;
    emily_dtype dt;
    emily_status s = emi_call_tensors(c, 2, 2, 1, &t);
    if (!s) s = emi_call_opts(c, 1, &opts);
    if (!s) s = emi_call_template(c, 0, &dt, NULL, NULL);
    if (s) return s;
    int64_t axis = -1;
    bool keep = false, high = false;
    const emily_value *v = emi_opt_get(opts, "axis");
    if (v && v->kind != EMILY_V_NIL) {
        s = emi_value_int(c, v, "option :axis", &axis);
        if (s) return s;
        int rank = emily_tensor_rank(t);
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank)
            return emi_call_fail(c, EMILY_ERR_AXIS, "axis %lld out of range for a tensor of rank %d", (long long)v->i,
                                 rank);
    }
    if ((s = emi_opt_bool(c, opts, "keep_axis", NULL, &keep))) return s;
    v = emi_opt_get(opts, "tie_break");
    if (v) {
        const char *tb;
        if ((s = emi_value_atom(c, v, "option :tie_break", true, &tb))) return s;
        if (tb && strcmp(tb, "high") == 0) high = true;
        else if (tb && strcmp(tb, "low") != 0)
            return emi_call_fail(c, EMILY_ERR_ARGUMENT, "option :tie_break must be :low or :high, got :%s", tb);
    }
    s = emily_argreduce(op, t, (int)axis, keep, high, dt, &r);
    return s ? s : emi_call_return(c, r);
}

/* all_close(out, a, b, [equal_nan:, rtol:, atol:]) */
emily_status emi_cb_all_close(emily_call *c) {
    emily_tensor *ab[2], *r;
    emily_status s = emi_call_tensors(c, 2, 3, 2, ab);
    if (s) return s;
    double rtol = 1e-5, atol = 1e-8;
    bool equal_nan = false;
    if (c->nargs > 2) {
        const emily_value *opts, *v;
        if ((s = emi_call_opts(c, 2, &opts))) return s;
        if ((v = emi_opt_get(opts, "rtol")) && (s = emi_value_float(c, v, "option :rtol", &rtol))) return s;
        if ((v = emi_opt_get(opts, "atol")) && (s = emi_value_float(c, v, "option :atol", &atol))) return s;
        /* Nx reads the option by truthiness (`if opts[:equal_nan]`) and its
         * own test helpers pass nil: nil is false, as on Nx.BinaryBackend. */
        if ((s = emi_opt_bool(c, opts, "equal_nan", NULL, &equal_nan))) return s;
    }
    s = emily_all_close(ab[0], ab[1], rtol, atol, equal_nan, &r);
    return s ? s : emi_call_return(c, r);
}
