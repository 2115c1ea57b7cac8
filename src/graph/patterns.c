/* Engine graphs: pattern fusion. Recognizes, in any graph, the composed
 * forms of the fused transformer ops (emily/ops_fast.h) as Axon and
 * Bumblebee write them and Emily.Compiler records them, and makes the
 * last call of each match the fused call; the others, read by nothing
 * else, are then dead calls that compile drops.
 *
 *   layer_norm  Axon.Layers.layer_norm (channel_index -1): mean, Nx.variance
 *               (its own mean, (x - mean)^2 as x * x or pow), the select of
 *               rsqrt(var + eps) and rsqrt(eps), gamma * that, times x - mean,
 *               plus beta; f32 or f64 throughout (the contract computes
 *               f16/bf16 in f32, Axon in the type: not the same rounding);
 *   rms_norm    Bumblebee.Layers.rms_norm, upcast :normalization: x (f16/bf16
 *               upcast to f32, or f32), mean(x * x) + eps, rsqrt, x times it,
 *               back to x's type, times the weight;
 *   softmax     Axon.Activations.softmax over the last axis: x - reduce_max,
 *               exp, 1 / sum times the exponentials, in any float type;
 *   attention   Bumblebee's attention as one sdpa call (patterns_attention.c).
 *
 * A match is substituted only when it is the contract exactly: the types
 * of every intermediate are the contract's, reductions are over the last
 * axis only with keep_axes, the constants are the contract's (n, eps the
 * same value in both of layer_norm's places, rsqrt(eps) the kernel's,
 * the numerator 1), gamma and beta are vectors of the last axis (or
 * reshapes of them), and no intermediate is a graph output or read by a
 * call outside the match. docs/graph.md says what each substitution
 * changes in rounding (the order of a row's sums).
 *
 * Runs after constant folding and the pow rewrite (so eps and n are
 * constants, and x^2 is x * x), before dead calls are dropped.
 * Calls are visited in order, so a softmax is substituted before the
 * attention holding it is seen (which then takes the softmax call in);
 * uses[] follows each substitution, so that the calls it left dead are
 * neither roots nor count as readers.
 * emily_graph_options.no_patterns or EMILY_GRAPH_PATTERNS=0 turns it off;
 * EMILY_GRAPH_TRACE=1 prints each substitution, EMILY_GRAPH_DUMP=1 the
 * graph's calls before the pass. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"
#include "core/norm_rules.h"
#include "core/tensor_impl.h"
#include "graph/graph_impl.h"
#include "graph/patterns_impl.h"

/* The live call that makes value v, if it is `name`'s only output. */
graph_call *emi_pat_producer(const matcher *m, int32_t v, const char *name) {
    if (v < 0 || val(m, v)->kind != GV_CALL) return NULL;
    graph_call *c = &m->g->calls[val(m, v)->node];
    if (c->folded || c->nout != 1 || strcmp(c->callback, name) != 0) return NULL;
    return c;
}

/* Argument i of c when it is a value reference, else -1. */
int32_t emi_pat_ref_arg(const graph_call *c, size_t i) {
    return i < c->nargs && c->args[i].kind == EMILY_V_REF ? (int32_t)c->args[i].i : -1;
}

/* c's value joins the match's intermediates (once). */
bool emi_pat_take(matcher *m, const graph_call *c) {
    for (int i = 0; i < m->ninner; i++)
        if (m->inner[i] == c->first) return true;
    if ((size_t)m->ninner >= sizeof m->inner / sizeof *m->inner) return false;
    m->inner[m->ninner++] = c->first;
    return true;
}

bool emi_pat_same_shape(const graph_value *a, const graph_value *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

/* v has x's shape with the last axis 1 (a row's statistic). */
static bool row_shape(const graph_value *v, const graph_value *x) {
    if (v->rank != x->rank || x->rank < 1) return false;
    for (int i = 0; i < x->rank - 1; i++)
        if (v->shape[i] != x->shape[i]) return false;
    return v->shape[x->rank - 1] == 1;
}

/* The value and type of a one-element real constant. */
bool emi_pat_scalar_const(const matcher *m, int32_t v, emily_dtype *dtype, double *out) {
    if (v < 0) return false;
    const graph_value *gv = val(m, v);
    if (gv->kind != GV_CONST || emily_tensor_size(gv->tensor) != 1 || emily_dtype_is_complex(gv->dtype)) return false;
    emily_tensor *wide = NULL;
    bool ok = !emily_as_type(gv->tensor, EMILY_F64, &wide) && !emily_to_binary(wide, out, sizeof *out);
    emily_tensor_release(wide);
    if (dtype) *dtype = gv->dtype;
    return ok;
}

const emily_value *emi_pat_opt_of(const emily_value *opts, const char *key) {
    for (size_t i = 0; opts && opts->kind == EMILY_V_OPTS && i < opts->n; i++)
        if (strcmp(opts->keys[i], key) == 0) return &opts->items[i];
    return NULL;
}

/* v = name(src, axes: [last], keep_axes: true) of type t; *src its input. */
static bool row_reduction(matcher *m, int32_t v, const char *name, emily_dtype t, int32_t *src) {
    graph_call *c = emi_pat_producer(m, v, name);
    if (!c || c->nargs != 2 || (*src = emi_pat_ref_arg(c, 0)) < 0 || c->args[1].kind != EMILY_V_OPTS) return false;
    const graph_value *in = val(m, *src);
    const emily_value *keep = emi_pat_opt_of(&c->args[1], "keep_axes"), *axes = emi_pat_opt_of(&c->args[1], "axes");
    if (!keep || keep->kind != EMILY_V_BOOL || !keep->b || !axes || axes->kind != EMILY_V_LIST || axes->n != 1 ||
        axes->items[0].kind != EMILY_V_INT)
        return false;
    int64_t ax = axes->items[0].i;
    if ((ax != in->rank - 1 && ax != -1) || in->dtype != t || val(m, v)->dtype != t || !row_shape(val(m, v), in))
        return false;
    return emi_pat_take(m, c);
}

/* A two-argument call `name` making v of type t; *a and *b its arguments
 * (value references). */
bool emi_pat_binary(matcher *m, int32_t v, const char *name, emily_dtype t, int32_t *a, int32_t *b) {
    graph_call *c = emi_pat_producer(m, v, name);
    if (!c || c->nargs != 2 || val(m, v)->dtype != t) return false;
    *a = emi_pat_ref_arg(c, 0);
    *b = emi_pat_ref_arg(c, 1);
    return *a >= 0 && *b >= 0 && emi_pat_take(m, c);
}

/* Of a binary call's two arguments, the one that is a scalar constant
 * (*k, value *kv, type *kt) and the other (*other). */
static bool split_const(const matcher *m, int32_t a, int32_t b, int32_t *other, emily_dtype *kt, double *kv) {
    if (emi_pat_scalar_const(m, b, kt, kv)) {
        *other = a;
        return true;
    }
    if (emi_pat_scalar_const(m, a, kt, kv)) {
        *other = b;
        return true;
    }
    return false;
}

/* v = sum(src, last axis) / n (Nx.mean over the last axis), of type t. */
static bool row_mean(matcher *m, int32_t v, emily_dtype t, int32_t *src) {
    int32_t s, n;
    double nv;
    if (!emi_pat_binary(m, v, "divide", t, &s, &n) || !emi_pat_scalar_const(m, n, NULL, &nv) ||
        !row_reduction(m, s, "sum", t, src))
        return false;
    const graph_value *in = val(m, *src);
    return nv == (double)in->shape[in->rank - 1];
}

/* v = c * c, or pow(c, 2) (f64, which the pow rewrite leaves), of type t;
 * *c the squared value. */
static bool square(matcher *m, int32_t v, emily_dtype t, int32_t *c) {
    int32_t a, b;
    emily_dtype kt;
    double two;
    if (emi_pat_producer(m, v, "multiply"))
        return emi_pat_binary(m, v, "multiply", t, &a, &b) && a == b && (*c = a) >= 0;
    return emi_pat_binary(m, v, "pow", t, c, &b) && emi_pat_scalar_const(m, b, &kt, &two) && two == 2.0 &&
           val(m, *c)->dtype == t;
}

/* A vector of the last axis of x: a value of shape {n}, or a reshape of
 * one to {1, ..., 1, n} (Axon's parameter reshape): its {n} value, or -1. */
static int32_t row_vector(const matcher *m, int32_t v, const graph_value *x) {
    int64_t n = x->shape[x->rank - 1];
    const graph_value *gv = val(m, v);
    if (gv->rank == 1 && gv->shape[0] == n) return v;
    graph_call *r = emi_pat_producer(m, v, "reshape");
    if (!r || gv->rank < 1 || gv->shape[gv->rank - 1] != n) return -1;
    for (int i = 0; i < gv->rank - 1; i++)
        if (gv->shape[i] != 1) return -1;
    int32_t src = emi_pat_ref_arg(r, 0);
    if (src < 0 || val(m, src)->rank != 1 || val(m, src)->shape[0] != n || val(m, src)->dtype != gv->dtype) return -1;
    return src;
}

/* Every intermediate is read only by the match's calls and the root (each
 * of its uses is an argument of one of them) and none is a graph output. */
bool emi_pat_closed(const matcher *m, const graph_call *root) {
    for (int i = 0; i < m->ninner; i++) {
        int32_t v = m->inner[i], inside = 0;
        if (m->g->values[v].is_output) return false;
        for (int k = 0; k < m->ninner; k++) {
            const graph_call *c = &m->g->calls[m->g->values[m->inner[k]].node];
            for (int r = 0; r < c->nrefs; r++) inside += c->refs[r]->i == v;
        }
        for (int r = 0; r < root->nrefs; r++) inside += root->refs[r]->i == v;
        if (inside != m->uses[v]) return false;
    }
    return true;
}

/* ---- the patterns ----------------------------------------------------- */

typedef struct match {
    int32_t x, gamma, beta; /* -1: absent */
    double eps;
} match;

/* Axon's normalize after its mean_and_variance: c1 = x - mean,
 * sc = gamma * select(var >= eps, rsqrt(var + eps), rsqrt(eps)) (either
 * operand order), var = Nx.variance (its own mean of x). */
static bool layer_norm_body(matcher *m, int32_t c1, int32_t sc, const graph_value *out, emily_dtype t, match *r) {
    int32_t mean1, src, a, b, gv, sel;
    if (!emi_pat_binary(m, c1, "subtract", t, &r->x, &mean1) || !emi_pat_same_shape(val(m, c1), out)) return false;
    const graph_value *xv = val(m, r->x);
    if (!emi_pat_same_shape(xv, out) || xv->dtype != t || !row_mean(m, mean1, t, &src) || src != r->x) return false;
    if (!emi_pat_binary(m, sc, "multiply", t, &a, &b) || !emi_pat_same_shape(val(m, sc), out)) return false;
    bool a_is_sel = emi_pat_producer(m, a, "select") != NULL;
    sel = a_is_sel ? a : b;
    gv = a_is_sel ? b : a;
    graph_call *sl = emi_pat_producer(m, sel, "select");
    if (!sl || sl->nargs != 3 || val(m, sel)->dtype != t || !row_shape(val(m, sel), xv) || !emi_pat_take(m, sl))
        return false;
    int32_t pred = emi_pat_ref_arg(sl, 0), rs = emi_pat_ref_arg(sl, 1), rc = emi_pat_ref_arg(sl, 2), var, e1, ve, p, q,
            var2, sq, c2, mean2;
    emily_dtype kt;
    double e1v, e2v, rcv;
    if (pred < 0 || !emi_pat_binary(m, pred, "greater_equal", val(m, pred)->dtype, &var, &e1) ||
        !emi_pat_scalar_const(m, e1, &kt, &e1v) || kt != t)
        return false;
    graph_call *rsq = emi_pat_producer(m, rs, "rsqrt");
    if (!rsq || rsq->nargs != 1 || val(m, rs)->dtype != t || !emi_pat_take(m, rsq)) return false;
    ve = emi_pat_ref_arg(rsq, 0);
    if (!emi_pat_binary(m, ve, "add", t, &p, &q) || !split_const(m, p, q, &var2, &kt, &e2v) || kt != t || var2 != var ||
        e2v != e1v)
        return false;
    /* rsqrt(eps): a constant the kernel's W(1 / sqrt(e)) */
    if (!emi_pat_scalar_const(m, rc, &kt, &rcv) || kt != t ||
        rcv != (t == EMILY_F32 ? (double)emi_norm_rsqrt_f32((float)e1v) : emi_norm_rsqrt_f64(e1v)))
        return false;
    /* var = mean((x - mean)^2) */
    if (!row_mean(m, var, t, &sq) || !square(m, sq, t, &c2) || !emi_pat_same_shape(val(m, sq), out) ||
        !emi_pat_binary(m, c2, "subtract", t, &src, &mean2) || src != r->x || !row_mean(m, mean2, t, &src) ||
        src != r->x)
        return false;
    r->eps = e1v; /* the constant's value: the kernel's W(eps) is exactly it */
    r->gamma = row_vector(m, gv, xv);
    return r->gamma >= 0 && val(m, r->gamma)->dtype == t;
}

/* root = add(y0, beta), y0 = (gamma * r) * (x - mean), either operand
 * order at each step; f32 or f64 throughout. */
static bool match_layer_norm(matcher *m, const graph_call *root, match *r) {
    const graph_value *out = val(m, root->first);
    emily_dtype t = out->dtype;
    if ((t != EMILY_F32 && t != EMILY_F64) || out->rank < 1 || root->nargs != 2) return false;
    for (int order = 0; order < 2; order++) {
        int32_t y0 = emi_pat_ref_arg(root, (size_t)order), b = emi_pat_ref_arg(root, (size_t)(1 - order)), p, q;
        m->ninner = 0;
        if (y0 < 0 || b < 0 || !emi_pat_binary(m, y0, "multiply", t, &p, &q) || !emi_pat_same_shape(val(m, y0), out))
            continue;
        int keep = m->ninner;
        for (int inner = 0; inner < 2; inner++) {
            m->ninner = keep;
            if (!layer_norm_body(m, inner ? q : p, inner ? p : q, out, t, r)) continue;
            r->beta = row_vector(m, b, val(m, r->x));
            if (r->beta < 0 || val(m, r->beta)->dtype != t || !emi_pat_closed(m, root)) continue;
            return true;
        }
    }
    return false;
}

/* Bumblebee's rms_norm (upcast :normalization) ending at root =
 * multiply(z, weight): z = as_type(xf * rsqrt(mean(xf * xf) + eps), X)
 * with xf = as_type(x, f32) for f16/bf16 x, or z = x * rsqrt(...) for
 * f32 x (either operand order). */
static bool rms_body(matcher *m, int32_t zv, int32_t wv, const graph_value *out, match *r) {
    emily_dtype x_t = val(m, zv)->dtype;
    int32_t tv = zv, p, q, ms, sqv, xf, a;
    emily_dtype kt;
    if (x_t == EMILY_F16 || x_t == EMILY_BF16) {
        graph_call *back = emi_pat_producer(m, zv, "as_type");
        if (!back || (tv = emi_pat_ref_arg(back, 0)) < 0 || !emi_pat_take(m, back)) return false;
    } else if (x_t != EMILY_F32) {
        return false;
    }
    if (!emi_pat_same_shape(val(m, zv), out) || !emi_pat_binary(m, tv, "multiply", EMILY_F32, &p, &q)) return false;
    bool p_is_r = emi_pat_producer(m, p, "rsqrt") != NULL;
    int32_t rv = p_is_r ? p : q;
    xf = p_is_r ? q : p;
    graph_call *rc = emi_pat_producer(m, rv, "rsqrt");
    if (!rc || rc->nargs != 1 || val(m, rv)->dtype != EMILY_F32 || !emi_pat_take(m, rc)) return false;
    const graph_value *xfv = val(m, xf);
    if (xfv->dtype != EMILY_F32 || !emi_pat_same_shape(xfv, out) || !row_shape(val(m, rv), xfv)) return false;
    a = emi_pat_ref_arg(rc, 0);
    if (!emi_pat_binary(m, a, "add", EMILY_F32, &p, &q) || !split_const(m, p, q, &ms, &kt, &r->eps) || kt != EMILY_F32)
        return false;
    if (!row_mean(m, ms, EMILY_F32, &sqv) || !emi_pat_binary(m, sqv, "multiply", EMILY_F32, &p, &q) || p != xf ||
        q != xf)
        return false;
    if (x_t == EMILY_F32) {
        r->x = xf;
    } else {
        graph_call *up = emi_pat_producer(m, xf, "as_type");
        if (!up || (r->x = emi_pat_ref_arg(up, 0)) < 0 || val(m, r->x)->dtype != x_t || !emi_pat_take(m, up))
            return false;
    }
    /* the weight: z * w computes in the output type O = merge(X, G) as the
     * contract does (A(z * w)) when w is X, or f32/f64 and O itself (z
     * widens exactly); other mixes convert w to O first */
    r->gamma = row_vector(m, wv, val(m, r->x));
    if (r->gamma < 0) return false;
    emily_dtype g_t = val(m, r->gamma)->dtype;
    if (!emily_dtype_is_float(g_t) || emily_type_merge(x_t, g_t) != out->dtype) return false;
    return g_t == x_t || ((g_t == EMILY_F32 || g_t == EMILY_F64) && out->dtype == g_t);
}

static bool match_rms_norm(matcher *m, const graph_call *root, match *r) {
    const graph_value *out = val(m, root->first);
    if (!emily_dtype_is_float(out->dtype) || out->rank < 1 || root->nargs != 2) return false;
    for (int order = 0; order < 2; order++) {
        int32_t zv = emi_pat_ref_arg(root, (size_t)order), wv = emi_pat_ref_arg(root, (size_t)(1 - order));
        m->ninner = 0;
        if (zv >= 0 && wv >= 0 && rms_body(m, zv, wv, out, r) && emi_pat_closed(m, root)) return true;
    }
    return false;
}

/* Axon's softmax over the last axis ending at root = multiply(1 / s, e):
 * e = exp(x - reduce_max(x)), s = sum(e), all in x's type. The calls join
 * the intermediates after those already taken. */
bool emi_pat_softmax_body(matcher *m, const graph_call *root, bool add_root, int32_t *x) {
    const graph_value *out = val(m, root->first);
    emily_dtype t = out->dtype;
    if (!emily_dtype_is_float(t) || out->rank < 1 || root->nargs != 2 || strcmp(root->callback, "multiply") != 0)
        return false;
    int keep = m->ninner;
    for (int order = 0; order < 2; order++) {
        int32_t rv = emi_pat_ref_arg(root, (size_t)order), ev = emi_pat_ref_arg(root, (size_t)(1 - order)), one, sv, dv,
                mv, src;
        emily_dtype kt;
        double onev;
        m->ninner = keep;
        if (add_root && !emi_pat_take(m, root)) return false;
        if (rv < 0 || ev < 0 || !emi_pat_binary(m, rv, "divide", t, &one, &sv) ||
            !emi_pat_scalar_const(m, one, &kt, &onev) || onev != 1.0 || !row_shape(val(m, rv), out))
            continue;
        graph_call *ec = emi_pat_producer(m, ev, "exp");
        if (!ec || ec->nargs != 1 || val(m, ev)->dtype != t || !emi_pat_same_shape(val(m, ev), out) ||
            !emi_pat_take(m, ec))
            continue;
        dv = emi_pat_ref_arg(ec, 0);
        if (!emi_pat_binary(m, dv, "subtract", t, x, &mv) || !emi_pat_same_shape(val(m, dv), out)) continue;
        if (val(m, *x)->dtype != t || !emi_pat_same_shape(val(m, *x), out)) continue;
        if (!row_reduction(m, mv, "reduce_max", t, &src) || src != *x) continue;
        if (!row_reduction(m, sv, "sum", t, &src) || src != ev) continue;
        return true;
    }
    m->ninner = keep;
    return false;
}

static bool match_softmax(matcher *m, const graph_call *root, match *r) {
    m->ninner = 0;
    return emi_pat_softmax_body(m, root, false, &r->x) && emi_pat_closed(m, root);
}

/* ---- substitution ----------------------------------------------------- */

/* root becomes callback(x, [gamma,] [beta,] [epsilon: eps]) with its own
 * output template. */
static emily_status substitute(emily_graph *g, graph_call *root, const char *callback, const match *r, bool with_eps) {
    const emily_callback_entry *entry = emi_callback_find(callback);
    if (!entry) return emily_error(EMILY_ERR_INTERNAL, "graph_compile: no callback %s", callback);
    emily_value *args = emi_graph_alloc(g, sizeof(emily_value) * 4);
    if (!args) return EMILY_ERR_MEMORY;
    size_t n = 0;
    int32_t ins[3] = {r->x, r->gamma, r->beta};
    for (int i = 0; i < 3; i++)
        if (ins[i] >= 0) args[n++] = (emily_value){.kind = EMILY_V_REF, .i = ins[i]};
    if (with_eps) {
        const char **keys = emi_graph_alloc(g, sizeof(char *));
        emily_value *items = emi_graph_alloc(g, sizeof(emily_value));
        if (!keys || !items) return EMILY_ERR_MEMORY;
        keys[0] = "epsilon";
        items[0] = (emily_value){.kind = EMILY_V_FLOAT, .f = r->eps};
        args[n++] = (emily_value){.kind = EMILY_V_OPTS, .keys = keys, .items = items, .n = 1};
    }
    root->callback = callback;
    root->entry = entry;
    root->args = args;
    root->nargs = n;
    return emi_graph_collect_refs(g, root);
}

/* EMILY_GRAPH_PATTERNS: "0" turns the pass off; a comma-separated list of
 * pattern names keeps only those (to tell their effects apart). */
static bool pattern_enabled(const char *name) {
    const char *v = getenv("EMILY_GRAPH_PATTERNS");
    if (!v || !v[0] || strcmp(v, "1") == 0) return true;
    size_t n = strlen(name);
    for (const char *p = v; (p = strstr(p, name)) != NULL; p += n)
        if ((p == v || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return true;
    return false;
}

static bool trace_on(void) {
    const char *v = getenv("EMILY_GRAPH_TRACE");
    return v && v[0] && strcmp(v, "0") != 0;
}

/* uses[] after root's substitution: the old arguments' references go,
 * the new ones come, and the intermediates (read by nothing else, so
 * dead now) stop reading theirs. */
static void count_refs(matcher *m, const graph_call *c, int32_t delta) {
    for (int r = 0; r < c->nrefs; r++) m->uses[c->refs[r]->i] += delta;
}
static void retire_intermediates(matcher *m) {
    for (int i = 0; i < m->ninner; i++) count_refs(m, &m->g->calls[val(m, m->inner[i])->node], -1);
}

emily_status emi_graph_patterns(emily_graph *g, const emily_graph_options *opts) {
    const char *env = getenv("EMILY_GRAPH_PATTERNS");
    if ((opts && opts->no_patterns) || (env && strcmp(env, "0") == 0)) return EMILY_OK;
    const char *dump = getenv("EMILY_GRAPH_DUMP");
    if (dump && dump[0] && strcmp(dump, "0") != 0) emi_graph_dump(g, stderr);
    const emily_engine *eng = emi_engine_for(g->device.type);
    int32_t *uses = calloc((size_t)g->nvalues + 1, sizeof *uses);
    uint8_t *made = calloc((size_t)g->nvalues + 1, 1);
    if (!uses || !made) {
        free(uses);
        free(made);
        return emily_error(EMILY_ERR_MEMORY, "graph_compile: out of host memory");
    }
    for (int32_t ci = 0; ci < g->ncalls; ci++) {
        const graph_call *c = &g->calls[ci];
        if (c->folded) continue;
        for (int r = 0; r < c->nrefs; r++) uses[c->refs[r]->i]++;
    }
    for (int32_t i = 0; i < g->noutputs; i++) g->values[g->outputs[i]].is_output = true;
    matcher m = {.g = g, .uses = uses, .made = made};
    emily_status s = EMILY_OK;
    bool trace = trace_on();
    for (int32_t ci = 0; ci < g->ncalls && !s; ci++) {
        graph_call *c = &g->calls[ci];
        /* a call read by nothing (an earlier substitution's leftovers) is
         * no root: compile drops it */
        if (c->folded || c->nout != 1 || !c->entry || (!uses[c->first] && !g->values[c->first].is_output)) continue;
        match r = {.x = -1, .gamma = -1, .beta = -1};
        attention_match at;
        const char *name = NULL;
        emi_kernel kernel = EMI_KERNEL_SOFTMAX;
        int64_t *count = NULL;
        if (strcmp(c->callback, "add") == 0 && match_layer_norm(&m, c, &r)) {
            name = "layer_norm";
            kernel = EMI_KERNEL_LAYER_NORM;
            count = &g->stats.pattern_layer_norm;
        } else if (strcmp(c->callback, "multiply") == 0 && match_rms_norm(&m, c, &r)) {
            name = "rms_norm";
            kernel = EMI_KERNEL_RMS_NORM;
            count = &g->stats.pattern_rms_norm;
        } else if (strcmp(c->callback, "multiply") == 0 && match_softmax(&m, c, &r)) {
            name = "softmax";
            count = &g->stats.pattern_softmax;
        } else if (strcmp(c->callback, "dot") == 0 && emi_pat_match_attention(&m, c, &at)) {
            name = "attention";
            kernel = EMI_KERNEL_SDPA;
            count = &g->stats.pattern_attention;
            r.x = at.q;
        }
        if (!name || !pattern_enabled(name) || !eng || !emi_engine_supports(eng, kernel, 0, val(&m, r.x)->dtype))
            continue;
        count_refs(&m, c, -1);
        if (kernel == EMI_KERNEL_SDPA) s = emi_pat_substitute_attention(&m, c, &at);
        else s = substitute(g, c, name, &r, kernel != EMI_KERNEL_SOFTMAX);
        if (s) break;
        count_refs(&m, c, 1);
        retire_intermediates(&m);
        (*count)++;
        g->stats.patterns++;
        if (kernel == EMI_KERNEL_SOFTMAX) made[c->first] = 1;
        /* a softmax this pass made and attention took in counts as the attention */
        if (kernel == EMI_KERNEL_SDPA && at.took_softmax) g->stats.pattern_softmax--, g->stats.patterns--;
        if (!trace) continue;
        if (kernel == EMI_KERNEL_SDPA)
            fprintf(stderr,
                    "emily graph: attention substituted for %d calls ending at value %d (q %d, k %d, v %d, mask %d, "
                    "scale %g%s)\n",
                    m.ninner + 1, (int)c->first, (int)at.q, (int)at.k, (int)at.v, (int)at.mask, at.scale,
                    at.k_transpose >= 0 ? ", grouped kv heads" : "");
        else
            fprintf(stderr,
                    "emily graph: %s substituted for %d calls ending at value %d (x %d, gamma %d, beta %d, eps %g)\n",
                    name, m.ninner + 1, (int)c->first, (int)r.x, (int)r.gamma, (int)r.beta, r.eps);
    }
    free(uses);
    free(made);
    return s;
}
