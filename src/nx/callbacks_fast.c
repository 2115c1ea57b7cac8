/* Nx callbacks: fused transformer kernels (emily/ops_fast.h).
 *
 * Emily.Fast (beam/lib/emily/fast.ex) calls Nx.block/4 with its own
 * structs; Emily.Backend.block/4 sends them here by name, with the
 * struct's fields as a final options argument, like Nx's own blocks:
 *
 *   layer_norm(out, x, gamma, [beta,] opts)   opts: epsilon (default 1.0e-5, Axon's)
 *   rms_norm(out, x, gamma, opts)             opts: epsilon (default 1.0e-6, Bumblebee's)
 *   softmax(out, x)                           over the last axis (what the engine
 *                                             graph's pattern pass substitutes,
 *                                             src/graph/patterns.c)
 *
 * The output type is inferred (the merge of the inputs' types) in both
 * modes; the dispatcher checks it against Nx's template in RUN mode. */
#include "nx/callback.h"

/* (x, gamma, [beta,] [opts]): the leading tensors (2 to max_tensors of
 * them, NULL where absent) and the epsilon option. */
static emily_status norm_args(emily_call *c, int max_tensors, emily_tensor **ts, double *eps) {
    emily_status s = emi_call_arity(c, 2, (size_t)max_tensors + 1);
    int n = 0;
    for (; !s && n < max_tensors && (size_t)n < c->nargs && c->args[n].kind == EMILY_V_TENSOR; n++)
        s = emi_call_tensor(c, (size_t)n, &ts[n]);
    if (s) return s;
    if (n < 2) {
        emily_tensor *t;
        return emi_call_tensor(c, (size_t)n, &t); /* names the argument that is not a tensor */
    }
    if ((size_t)n == c->nargs) return EMILY_OK;
    if ((size_t)n + 1 < c->nargs)
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "argument %d must be a tensor", n + 1);
    const emily_value *opts;
    if ((s = emi_call_opts(c, (size_t)n, &opts))) return s;
    return emi_opt_float(c, opts, "epsilon", NULL, eps);
}

emily_status emi_cb_layer_norm(emily_call *c) {
    emily_tensor *ts[3] = {NULL, NULL, NULL}, *r;
    double eps = 1.0e-5;
    emily_status s = norm_args(c, 3, ts, &eps);
    if (s || (s = emily_layer_norm(ts[0], ts[1], ts[2], eps, &r))) return s;
    return emi_call_return(c, r);
}

emily_status emi_cb_rms_norm(emily_call *c) {
    emily_tensor *ts[2] = {NULL, NULL}, *r;
    double eps = 1.0e-6;
    emily_status s = norm_args(c, 2, ts, &eps);
    if (s || (s = emily_rms_norm(ts[0], ts[1], eps, &r))) return s;
    return emi_call_return(c, r);
}

emily_status emi_cb_softmax(emily_call *c) {
    emily_tensor *x, *r;
    emily_status s = emi_call_arity(c, 1, 1);
    if (s || (s = emi_call_tensor(c, 0, &x)) || (s = emily_softmax(x, &r))) return s;
    return emi_call_return(c, r);
}
