/* Nx callbacks: dot family (dot, conv).
 *
 * dot(out, left, contract_axes1, batch_axes1, right, contract_axes2,
 *     batch_axes2): the output type is Nx.Type.merge of the inputs, which
 * Nx decides from the inputs alone; the template's type is passed in RUN
 * mode (emi_call_out_type) and inferred in INFER mode. Two 8-bit float
 * operands reach it only through src/nx/dot_fp8.c (the dispatcher
 * widens them otherwise): they run as emily_dot_fp8, on the tensor cores
 * at FAST precision, widened to f32 at HIGHEST (Nx's f64 sums, rounded
 * once, as before). */
#include <string.h>
#include "nx/callback.h"
#include "ops/dot_plan.h"
#include "ops/conv.h"
#include "ops/dot_fp8.h"
#include "nx/dot_fp8.h"

/* The per-call `precision: :highest | :fast` option (absent or nil: the
 * process setting, emily_dot_get_precision) as a thread override. */
static emily_status precision_opt(emily_call *c, const emily_value *opts, emily_dot_precision *p) {
    *p = EMILY_DOT_PRECISION_PROCESS;
    const emily_value *v = opts ? emi_opt_get(opts, "precision") : NULL;
    if (!v) return EMILY_OK;
    const char *name;
    emily_status s = emi_value_atom(c, v, "option :precision", true, &name);
    if (s || !name) return s;
    if (strcmp(name, "highest") == 0) *p = EMILY_DOT_PRECISION_HIGHEST;
    else if (strcmp(name, "fast") == 0) *p = EMILY_DOT_PRECISION_FAST;
    else return emi_call_fail(c, EMILY_ERR_ARGUMENT, "option :precision must be :highest or :fast, got :%s", name);
    return EMILY_OK;
}

/* Runs emily_dot/emily_conv under the call's precision. */
static void precision_enter(emily_dot_precision p, emily_dot_precision *saved) {
    *saved = EMILY_DOT_PRECISION_PROCESS;
    if (p != EMILY_DOT_PRECISION_PROCESS) emily_dot_set_thread_precision(p, saved);
}

static void precision_leave(emily_dot_precision p, emily_dot_precision saved) {
    if (p != EMILY_DOT_PRECISION_PROCESS) emily_dot_set_thread_precision(saved, NULL);
}

emily_status emi_cb_dot(emily_call *c) {
    emily_status s = emi_call_arity(c, 6, 7);
    if (s) return s;
    const emily_value *opts = NULL;
    emily_dot_precision precision;
    if (c->nargs > 6 && (s = emi_call_opts(c, 6, &opts))) return s;
    if ((s = precision_opt(c, opts, &precision))) return s;
    emily_tensor *a, *b;
    int *ca, *ba, *cb, *bb, nca, nba, ncb, nbb;
    if ((s = emi_call_tensor(c, 0, &a))) return s;
    if ((s = emi_value_axes(c, emi_call_arg(c, 1), "contract_axes1", &ca, &nca))) return s;
    if ((s = emi_value_axes(c, emi_call_arg(c, 2), "batch_axes1", &ba, &nba))) return s;
    if ((s = emi_call_tensor(c, 3, &b))) return s;
    if ((s = emi_value_axes(c, emi_call_arg(c, 4), "contract_axes2", &cb, &ncb))) return s;
    if ((s = emi_value_axes(c, emi_call_arg(c, 5), "batch_axes2", &bb, &nbb))) return s;
    /* nil axes lists mean "none" */
    if (nca < 0) nca = 0;
    if (nba < 0) nba = 0;
    if (ncb < 0) ncb = 0;
    if (nbb < 0) nbb = 0;
    /* the product's shape (an outer product of two small operands is
     * huge) checked against Nx's before the work */
    int rank;
    int64_t *shape = emi_call_alloc(c, sizeof(int64_t) * ((size_t)emily_tensor_rank(a) + emily_tensor_rank(b) + 1));
    if (!shape) return EMILY_ERR_MEMORY;
    if ((s = emi_dot_output_shape("dot", a, nca, ca, nba, ba, b, ncb, cb, nbb, bb, &rank, shape)) ||
        (s = emi_call_check_output(c, 0, emi_call_out_type(c), rank, shape)))
        return s;
    emily_tensor *out;
    emily_dot_precision saved;
    precision_enter(precision, &saved);
    if (emi_dot_fp8_operands(a, b)) /* from src/nx/dot_fp8.c only: the FP8 path, FAST */
        s = emi_dot_fp8_run(a, nca, ca, nba, ba, 1.0f, b, ncb, cb, nbb, bb, 1.0f, emi_call_out_type(c),
                            emily_dot_get_precision() == EMILY_DOT_PRECISION_FAST, &out);
    else s = emily_dot(a, nca, ca, nba, ba, b, ncb, cb, nbb, bb, emi_call_out_type(c), &out);
    precision_leave(precision, saved);
    if (s) return s;
    return emi_call_return(c, out);
}

/* An integer list option with one entry per spatial dimension (a bare
 * integer applies to all; absent: NULL, the default). */
static emily_status spatial_list(emily_call *c, const emily_value *opts, const char *key, int d, const int64_t **out) {
    *out = NULL;
    const emily_value *v = emi_opt_get(opts, key);
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    int64_t *vals = emi_call_alloc(c, sizeof(int64_t) * ((size_t)d + 1));
    if (!vals) return EMILY_ERR_MEMORY;
    if (v->kind == EMILY_V_INT) {
        for (int i = 0; i < d; i++) vals[i] = v->i;
    } else {
        int64_t *list;
        int n;
        emily_status s = emi_value_int_list(c, v, key, &list, &n);
        if (s) return s;
        if (n != d)
            return emi_call_fail(c, EMILY_ERR_ARGUMENT,
                                 "%s has %d entries, the input has %d spatial "
                                 "dimensions",
                                 key, n, d);
        for (int i = 0; i < d; i++) vals[i] = list[i];
    }
    *out = vals;
    return EMILY_OK;
}

static emily_status permutation(emily_call *c, const emily_value *opts, const char *key, int r, const int **out) {
    *out = NULL;
    const emily_value *v = emi_opt_get(opts, key);
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    int *axes, n;
    emily_status s = emi_value_axes(c, v, key, &axes, &n);
    if (s) return s;
    if (n != r) return emi_call_fail(c, EMILY_ERR_AXIS, "%s has %d entries for rank %d", key, n, r);
    *out = axes;
    return EMILY_OK;
}

/* A group-size option (absent or nil: 1). emily_conv_opts reads 0 as
 * "not given", but Nx passes the user's value, and Nx refuses 0 (its
 * rem(channels, 0) raises) as well as negative sizes, so both fail here
 * instead of running as 1. */
static emily_status group_size(emily_call *c, const emily_value *opts, const char *key, int64_t *out) {
    *out = 1;
    const emily_value *v = opts ? emi_opt_get(opts, key) : NULL;
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    emily_status s = emi_value_int(c, v, key, out);
    if (s) return s;
    if (*out < 1)
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be a positive integer, got %lld", key, (long long)*out);
    return EMILY_OK;
}

/* conv(out, input, kernel, opts): strides, padding ([{lo, hi}, ...]),
 * input_dilation, kernel_dilation, feature_group_size, batch_group_size
 * and the three permutations. The output type is Nx's to_floating of the
 * merged input types: inferred, or the template's in RUN mode. */
emily_status emi_cb_conv(emily_call *c) {
    emily_tensor *tk[2];
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 2, tk, &opts);
    if (s) return s;
    emily_tensor *t = tk[0], *k = tk[1];
    int r = emily_tensor_rank(t), d = r > 2 ? r - 2 : 0;
    emily_conv_opts o = {0};
    if ((s = spatial_list(c, opts, "strides", d, &o.strides))) return s;
    if ((s = spatial_list(c, opts, "input_dilation", d, &o.input_dilation))) return s;
    if ((s = spatial_list(c, opts, "kernel_dilation", d, &o.kernel_dilation))) return s;
    const emily_value *pad = opts ? emi_opt_get(opts, "padding") : NULL;
    if (pad && pad->kind != EMILY_V_NIL) {
        if ((pad->kind != EMILY_V_LIST && pad->kind != EMILY_V_TUPLE) || (int)pad->n != d)
            return emi_call_fail(c, EMILY_ERR_ARGUMENT, "padding must be a list of %d {lo, hi} pairs", d);
        int64_t *lo = emi_call_alloc(c, sizeof(int64_t) * ((size_t)d + 1));
        int64_t *hi = emi_call_alloc(c, sizeof(int64_t) * ((size_t)d + 1));
        if (!lo || !hi) return EMILY_ERR_MEMORY;
        for (int i = 0; i < d; i++) {
            const emily_value *e = &pad->items[i];
            if ((e->kind != EMILY_V_TUPLE && e->kind != EMILY_V_LIST) || e->n != 2)
                return emi_call_fail(c, EMILY_ERR_ARGUMENT, "padding entry %d must be a {lo, hi} pair", i);
            if ((s = emi_value_int(c, &e->items[0], "padding", &lo[i]))) return s;
            if ((s = emi_value_int(c, &e->items[1], "padding", &hi[i]))) return s;
        }
        o.padding_lo = lo;
        o.padding_hi = hi;
    }
    if ((s = group_size(c, opts, "feature_group_size", &o.feature_group_size)) ||
        (s = group_size(c, opts, "batch_group_size", &o.batch_group_size)))
        return s;
    if ((s = permutation(c, opts, "input_permutation", r, &o.input_permutation))) return s;
    if ((s = permutation(c, opts, "kernel_permutation", r, &o.kernel_permutation))) return s;
    if ((s = permutation(c, opts, "output_permutation", r, &o.output_permutation))) return s;
    emily_dot_precision precision, saved;
    if ((s = precision_opt(c, opts, &precision))) return s;
    /* options that disagree with Nx's output shape fail before the work
     * (an input dilation can make the im2col patches huge) */
    int rank;
    int64_t shape[64];
    if ((s = emi_conv_output_shape(t, k, &o, &rank, shape)) ||
        (s = emi_call_check_output(c, 0, emi_call_out_type(c), rank, shape)))
        return s;
    emily_tensor *out;
    precision_enter(precision, &saved);
    s = emily_conv(t, k, &o, emi_call_out_type(c), &out);
    precision_leave(precision, saved);
    if (s) return s;
    return emi_call_return(c, out);
}
