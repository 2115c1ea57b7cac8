/* Nx callbacks: fused transformer kernels (emily/ops_fast.h).
 *
 * Emily.Fast (beam/lib/emily/fast.ex) calls Nx.block/4 with its own
 * structs; Emily.Backend.block/4 sends them here by name, with the
 * struct's fields as a final options argument, like Nx's own blocks:
 *
 *   layer_norm(out, x, gamma, [beta,] opts)   opts: epsilon (default 1.0e-5, Axon's)
 *   rms_norm(out, x, gamma, opts)             opts: epsilon (default 1.0e-6, Bumblebee's)
 *   sdpa(out, q, k, v, [mask,] [sinks,] opts)  opts: scale (default 1/sqrt(D)),
 *        causal (false), mask and sinks (booleans: whether that tensor is
 *        among the arguments; both false by default); the engine graph's
 *        pattern pass substitutes it for Bumblebee's attention
 *   rope(out, x, positions, [inv_freq,] opts)  opts: dims (nil or 0: D), base
 *        (10000), traditional (false), scaling (nil/:none, :linear, :dynamic,
 *        :llama3), factor, low_frequency_factor, high_frequency_factor,
 *        original_max_positions, sequence_length, and inv_frequency (a
 *        boolean: whether the explicit table follows positions)
 *   softmax(out, x)                           over the last axis (what the engine
 *                                             graph's pattern pass substitutes,
 *                                             src/graph/patterns.c)
 *
 * The output type is inferred (the merge of the inputs' types) in both
 * modes; the dispatcher checks it against Nx's template in RUN mode. */
#include <math.h>
#include <string.h>
#include "nx/callback.h"
#include "ops/output_shape.h"

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
    if ((size_t)n + 1 < c->nargs) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "argument %d must be a tensor", n + 1);
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

/* The arity check (min to max arguments), then the call's tensor count
 * and its trailing options where the last argument is an options list
 * (else *opts is NULL). */
static emily_status tensors_then_opts(emily_call *c, size_t min, size_t max, size_t *ntensors,
                                      const emily_value **opts) {
    *opts = NULL;
    emily_status s = emi_call_arity(c, min, max);
    if (s) return s;
    *ntensors = c->nargs;
    if (c->args[c->nargs - 1].kind != EMILY_V_OPTS) return EMILY_OK;
    *ntensors = c->nargs - 1;
    return emi_call_opts(c, *ntensors, opts);
}

/* sdpa: q, k, v, then the mask and the sinks where the options say they
 * are there (a mask and sinks are both tensors: position alone cannot
 * tell one from the other). */
emily_status emi_cb_sdpa(emily_call *c) {
    const emily_value *opts;
    size_t ntensors;
    emily_status s = tensors_then_opts(c, 3, 6, &ntensors, &opts);
    if (s) return s;
    bool causal = false, has_mask = false, has_sinks = false;
    if ((s = emi_opt_bool(c, opts, "causal", NULL, &causal)) || (s = emi_opt_bool(c, opts, "mask", NULL, &has_mask)) ||
        (s = emi_opt_bool(c, opts, "sinks", NULL, &has_sinks)))
        return s;
    size_t want = 3 + (has_mask ? 1 : 0) + (has_sinks ? 1 : 0);
    if (ntensors != want)
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "expected %zu tensors (q, k, v%s%s) before the options, got %zu",
                             want, has_mask ? ", mask" : "", has_sinks ? ", sinks" : "", ntensors);
    emily_tensor *ts[5] = {NULL, NULL, NULL, NULL, NULL}, *r;
    for (size_t i = 0; i < ntensors; i++)
        if ((s = emi_call_tensor(c, i, &ts[i]))) return s;
    emily_sdpa_options o = {
        .causal = causal, .mask = has_mask ? ts[3] : NULL, .sinks = has_sinks ? ts[has_mask ? 4 : 3] : NULL};
    /* the default scale, 1/sqrt(D), as Bumblebee's default (computed in
     * double here; Emily.Fast always passes its scale) */
    int64_t d = emily_tensor_rank(ts[0]) == 4 ? emily_tensor_shape(ts[0])[3] : 0;
    o.scale = d > 0 ? 1.0 / sqrt((double)d) : 1.0;
    if ((s = emi_opt_float(c, opts, "scale", NULL, &o.scale))) return s;
    /* {B, Hq, Sq, Dv} grows with q's and v's sizes together: checked
     * against Nx's before the work */
    int64_t shape[4];
    if ((s = emi_sdpa_output_shape(ts[0], ts[1], ts[2], shape)) ||
        (s = emi_call_check_output(c, 0, emily_tensor_dtype(ts[0]), 4, shape)))
        return s;
    if ((s = emily_sdpa(ts[0], ts[1], ts[2], &o, &r))) return s;
    return emi_call_return(c, r);
}

emily_status emi_cb_softmax(emily_call *c) {
    emily_tensor *x, *r;
    emily_status s = emi_call_arity(c, 1, 1);
    if (s || (s = emi_call_tensor(c, 0, &x)) || (s = emily_softmax(x, &r))) return s;
    return emi_call_return(c, r);
}

/* rope's :scaling option: an atom (nil or absent: none). */
static emily_status rope_scaling(emily_call *c, const emily_value *opts, emily_rope_scaling *out) {
    static const char *const names[4] = {"none", "linear", "dynamic", "llama3"};
    const emily_value *v = emi_opt_get(opts, "scaling");
    const char *name = NULL;
    emily_status s;
    if (v && (s = emi_value_atom(c, v, "option :scaling", true, &name))) return s;
    if (!name) return EMILY_OK;
    for (int k = 0; k < 4; k++)
        if (strcmp(name, names[k]) == 0) {
            *out = (emily_rope_scaling)k;
            return EMILY_OK;
        }
    return emi_call_fail(c, EMILY_ERR_ARGUMENT, "option :scaling must be :none, :linear, :dynamic or :llama3, got :%s",
                         name);
}

emily_status emi_cb_rope(emily_call *c) {
    const emily_value *opts;
    size_t ntensors;
    emily_status s = tensors_then_opts(c, 2, 4, &ntensors, &opts);
    if (s) return s;
    emily_rope_options o = {.base = 10000.0};
    bool has_table = false;
    if ((s = emi_opt_int(c, opts, "dims", NULL, &o.dims)) || (s = emi_opt_float(c, opts, "base", NULL, &o.base)) ||
        (s = emi_opt_bool(c, opts, "traditional", NULL, &o.traditional)) || (s = rope_scaling(c, opts, &o.scaling)) ||
        (s = emi_opt_float(c, opts, "factor", NULL, &o.factor)) ||
        (s = emi_opt_float(c, opts, "low_frequency_factor", NULL, &o.low_frequency_factor)) ||
        (s = emi_opt_float(c, opts, "high_frequency_factor", NULL, &o.high_frequency_factor)) ||
        (s = emi_opt_int(c, opts, "original_max_positions", NULL, &o.original_max_positions)) ||
        (s = emi_opt_int(c, opts, "sequence_length", NULL, &o.sequence_length)) ||
        (s = emi_opt_bool(c, opts, "inv_frequency", NULL, &has_table)))
        return s;
    size_t want = has_table ? 3 : 2;
    if (ntensors != want)
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "expected %zu tensors (x, positions%s) before the options, got %zu",
                             want, has_table ? ", inv_freq" : "", ntensors);
    emily_tensor *ts[3] = {NULL, NULL, NULL}, *r;
    for (size_t i = 0; i < ntensors; i++)
        if ((s = emi_call_tensor(c, i, &ts[i]))) return s;
    o.inv_freq = ts[2];
    if ((s = emily_rope(ts[0], ts[1], &o, &r))) return s;
    return emi_call_return(c, r);
}
