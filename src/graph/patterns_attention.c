/* Engine graphs: pattern fusion of attention. Bumblebee's attention
 * (Bumblebee.Layers.attention_weights_impl and attention_output_impl) as
 * Emily.Compiler records it, after folding:
 *
 *   s  = dot(qt, [3], [0, 1], kt, [3], [0, 1])   qt {B, H, Sq, D}, kt {B, H, Skv, D}
 *   a  = multiply(scale, s)                      a one-element float constant
 *   b  = add(a, bias)                            bias broadcastable to s: Bumblebee's
 *                                                select(mask, 0, min_finite), folded
 *                                                or computed from the key mask and
 *                                                the causal iotas (with the cache's
 *                                                offset); absent: b = a
 *   p  = softmax(b)                              the softmax pattern's call, or
 *                                                Axon's composed softmax
 *   o  = dot(p, [3], [0, 1], vt, [2], [0, 1])    vt {B, H, Skv, Dv}: the root
 *
 * (dropout is no call at inference) becomes o = sdpa(qt, kt, vt, [bias,]
 * scale: scale, mask: bias given): emily_sdpa's contract with the bias as
 * its additive mask, so that a row Bumblebee masks entirely (min_finite
 * everywhere) keeps Bumblebee's value, and a computed bias needs no
 * reading. Without the multiply the scale is 1 (a query scaled
 * beforehand is then q itself).
 *
 * The contract is the expression only where it computes in its working
 * type W: q, k, v and every intermediate f32 (W = f32) or all f64; an
 * f16/bf16 model's scores and softmax are rounded to the type at each
 * step, the contract's are not, so those stay composed. Neither dot may
 * ask for precision :highest (Nx's f64 sums), nor, without the option,
 * the process setting at compile time (the kernel's dots are BLAS in W).
 *
 * Grouped-query attention: Bumblebee repeats the k and v heads
 * (Bumblebee.Utils.Nx.repeat_interleave: reshapes around a broadcast of
 * a new axis) before the transpose; where both kt and vt are transposes
 * of such repeats of k0, v0 {B, Skv, Hkv, D} by the same factor, read by
 * nothing else, the transposes become transposes of k0 and v0 and sdpa
 * reads the Hkv heads itself (head h of the repeat is head h / g of k0,
 * which is the kernel's grouping). A KV cache holds repeated heads
 * (Bumblebee repeats before caching), so there the heads stay Hq. */
#include <string.h>
#include "core/engine.h"
#include "emily/ops_dot.h"
#include "graph/patterns_impl.h"

/* v is a list of the integers want[0..n-1]. */
static bool int_list_is(const emily_value *v, const int64_t *want, size_t n) {
    if (!v || v->kind != EMILY_V_LIST || v->n != n) return false;
    for (size_t i = 0; i < n; i++)
        if (v->items[i].kind != EMILY_V_INT || v->items[i].i != want[i]) return false;
    return true;
}

/* A dot of rank-4 operands with batch axes [0, 1], contracting axis ca of
 * the left and cb of the right, of type t, computed in t by BLAS (no
 * precision :highest, by option or by the process setting). */
static graph_call *batched_dot(const matcher *m, int32_t v, int64_t ca, int64_t cb, emily_dtype t) {
    static const int64_t batch[2] = {0, 1};
    graph_call *c = emi_pat_producer(m, v, "dot");
    if (!c || (c->nargs != 6 && c->nargs != 7) || val(m, v)->dtype != t || val(m, v)->rank != 4) return NULL;
    int32_t a = emi_pat_ref_arg(c, 0), b = emi_pat_ref_arg(c, 3);
    if (a < 0 || b < 0 || val(m, a)->dtype != t || val(m, b)->dtype != t || val(m, a)->rank != 4 ||
        val(m, b)->rank != 4)
        return NULL;
    if (!int_list_is(&c->args[1], &ca, 1) || !int_list_is(&c->args[2], batch, 2) || !int_list_is(&c->args[4], &cb, 1) ||
        !int_list_is(&c->args[5], batch, 2))
        return NULL;
    const emily_value *p = c->nargs == 7 ? emi_pat_opt_of(&c->args[6], "precision") : NULL;
    if (p && p->kind == EMILY_V_ATOM) return strcmp(p->str, "fast") == 0 ? c : NULL;
    if (p && p->kind != EMILY_V_NIL) return NULL;
    return emily_dot_get_precision() == EMILY_DOT_PRECISION_FAST ? c : NULL;
}

/* The scores' side of the add: s * scale (either order; the constant a
 * float one that s's type t holds, as the multiply keeps t) or s alone
 * (scale 1), s = dot(qt, kt) of shape `shape`. */
static bool scaled_scores(matcher *m, int32_t a, emily_dtype t, const graph_value *shape, attention_match *r) {
    int32_t x, y, s = a;
    emily_dtype kt;
    r->scale = 1.0;
    if (emi_pat_producer(m, a, "multiply")) {
        if (!emi_pat_binary(m, a, "multiply", t, &x, &y)) return false;
        if (emi_pat_scalar_const(m, y, &kt, &r->scale)) s = x;
        else if (emi_pat_scalar_const(m, x, &kt, &r->scale)) s = y;
        else return false;
        if (!emily_dtype_is_float(kt) || emily_type_merge(kt, t) != t) return false;
    }
    if (!emi_pat_same_shape(val(m, a), shape)) return false;
    graph_call *dc = batched_dot(m, s, 3, 3, t);
    if (!dc || !emi_pat_take(m, dc)) return false;
    r->q = emi_pat_ref_arg(dc, 0);
    r->k = emi_pat_ref_arg(dc, 3);
    const graph_value *q = val(m, r->q), *k = val(m, r->k), *sv = val(m, s);
    /* q {B, H, Sq, D}, k {B, H, Skv, D}: the dot's output {B, H, Sq, Skv} */
    return k->shape[0] == q->shape[0] && k->shape[1] == q->shape[1] && k->shape[3] == q->shape[3] &&
           emi_pat_same_shape(sv, shape);
}

/* A float bias that broadcasts to the scores' shape (Nx's right-aligned
 * rule) without widening them. */
static bool additive_bias(const matcher *m, int32_t b, const graph_value *scores) {
    const graph_value *bv = val(m, b);
    if (!emily_dtype_is_float(bv->dtype) || emily_type_merge(bv->dtype, scores->dtype) != scores->dtype || bv->rank > 4)
        return false;
    for (int d = 0; d < bv->rank; d++) {
        int64_t n = bv->shape[d], want = scores->shape[4 - bv->rank + d];
        if (n != 1 && n != want) return false;
    }
    return true;
}

/* The logits before the softmax: scaled scores plus a bias (either
 * order), or the scaled scores alone. */
static bool logits(matcher *m, int32_t l, emily_dtype t, const graph_value *shape, attention_match *r) {
    int keep = m->ninner;
    int32_t x, y;
    r->mask = -1;
    if (emi_pat_producer(m, l, "add")) {
        for (int order = 0; order < 2; order++) {
            m->ninner = keep;
            if (!emi_pat_binary(m, l, "add", t, &x, &y) || !emi_pat_same_shape(val(m, l), shape)) return false;
            int32_t a = order ? y : x, b = order ? x : y;
            if (additive_bias(m, b, shape) && scaled_scores(m, a, t, shape, r)) {
                r->mask = b;
                return true;
            }
        }
        m->ninner = keep;
        return false;
    }
    return scaled_scores(m, l, t, shape, r);
}

static int64_t product(const int64_t *xs, int from, int to) {
    int64_t p = 1;
    for (int i = from; i < to; i++) p *= xs[i];
    return p;
}

/* A value read once, by the repeat chain only, joins it. */
static bool chain_link(const matcher *m, int32_t v, attention_match *r) {
    if (m->uses[v] != 1 || val(m, v)->is_output || (size_t)r->nrepeats >= sizeof r->repeats / sizeof *r->repeats)
        return false;
    r->repeats[r->nrepeats++] = v;
    return true;
}

/* rep {B, S, Hq, D} = repeat_interleave(k0, g, axis: 2) as reshapes of a
 * broadcast of reshapes of k0 {B, S, Hq / g, D}: its k0 (or -1) and g.
 * The broadcast's one widened axis p (1 -> g, identity axes) sits where
 * the elements before it are B * S * Hkv and after it D, which makes
 * element (b, s, h, d) of rep element (b, s, h / g, d) of k0: reshapes
 * keep the row-major order. */
static int32_t repeat_source(const matcher *m, int32_t rep, int64_t *groups, attention_match *r) {
    const graph_value *rv = val(m, rep);
    int32_t cur = rep;
    graph_call *c;
    while ((c = emi_pat_producer(m, cur, "reshape")) != NULL) {
        if (!chain_link(m, cur, r) || (cur = emi_pat_ref_arg(c, 0)) < 0) return -1;
    }
    c = emi_pat_producer(m, cur, "broadcast");
    if (!c || c->nargs != 3 || !chain_link(m, cur, r)) return -1;
    int32_t in = emi_pat_ref_arg(c, 0);
    const graph_value *o = val(m, cur), *i = in >= 0 ? val(m, in) : NULL;
    if (!i || i->rank != o->rank || i->dtype != o->dtype || o->rank > 16) return -1;
    int64_t ident[16];
    for (int d = 0; d < o->rank; d++) ident[d] = d;
    if (!int_list_is(&c->args[2], ident, (size_t)o->rank)) return -1;
    int p = -1;
    for (int d = 0; d < o->rank; d++) {
        if (i->shape[d] == o->shape[d]) continue;
        if (p >= 0 || i->shape[d] != 1) return -1;
        p = d;
    }
    if (p < 0) return -1;
    int64_t g = o->shape[p], hq = rv->shape[2];
    if (g < 2 || hq % g != 0) return -1;
    int64_t hkv = hq / g, b = rv->shape[0], s = rv->shape[1], dd = rv->shape[3];
    if (product(o->shape, p + 1, o->rank) != dd || product(o->shape, 0, p) != b * s * hkv) return -1;
    for (cur = in;;) {
        const graph_value *cv = val(m, cur);
        if (cv->rank == 4 && cv->shape[0] == b && cv->shape[1] == s && cv->shape[2] == hkv && cv->shape[3] == dd) break;
        if (!(c = emi_pat_producer(m, cur, "reshape")) || !chain_link(m, cur, r) || (cur = emi_pat_ref_arg(c, 0)) < 0)
            return -1;
    }
    *groups = g;
    return cur;
}

/* kt = transpose(rep, [0, 2, 1, 3]) read only by the scores' dot, rep a
 * repeat of heads: the unrepeated value (or -1) and the factor. */
static int32_t grouped_heads(const matcher *m, int32_t kt, int64_t *groups, attention_match *r) {
    static const int64_t swap[4] = {0, 2, 1, 3};
    graph_call *c = emi_pat_producer(m, kt, "transpose");
    if (!c || c->nargs != 2 || m->uses[kt] != 1 || val(m, kt)->is_output || !int_list_is(&c->args[1], swap, 4))
        return -1;
    int32_t rep = emi_pat_ref_arg(c, 0);
    for (int d = 0; d < 4; d++)
        if (val(m, kt)->shape[d] <= 0) return -1;
    return rep < 0 ? -1 : repeat_source(m, rep, groups, r);
}

bool emi_pat_match_attention(matcher *m, const graph_call *root, attention_match *r) {
    memset(r, 0, sizeof *r);
    r->k_transpose = r->v_transpose = r->k_grouped = r->v_grouped = r->mask = -1;
    m->ninner = 0;
    const graph_value *out = val(m, root->first);
    emily_dtype t = out->dtype;
    if (t != EMILY_F32 && t != EMILY_F64) return false;
    graph_call *oc = (graph_call *)root;
    if (batched_dot(m, root->first, 3, 2, t) != oc) return false;
    int32_t p = emi_pat_ref_arg(root, 0), l = -1;
    r->v = emi_pat_ref_arg(root, 3);
    r->type = t;
    const graph_value *pv = val(m, p), *vv = val(m, r->v);
    /* p {B, H, Sq, Skv}, v {B, H, Skv, Dv} */
    if (vv->shape[0] != pv->shape[0] || vv->shape[1] != pv->shape[1] || vv->shape[2] != pv->shape[3]) return false;
    graph_call *sc = emi_pat_producer(m, p, "softmax");
    if (sc) {
        if (sc->nargs != 1 || (l = emi_pat_ref_arg(sc, 0)) < 0 || !emi_pat_take(m, sc)) return false;
        r->took_softmax = m->made[p] != 0;
    } else {
        graph_call *mc = emi_pat_producer(m, p, "multiply");
        if (!mc || !emi_pat_softmax_body(m, mc, true, &l)) return false;
    }
    if (val(m, p)->dtype != t || val(m, l)->dtype != t || !emi_pat_same_shape(val(m, l), pv)) return false;
    if (!logits(m, l, t, pv, r) || !emi_pat_closed(m, root)) return false;
    /* grouped heads: both k and v repeats of the same factor, or neither */
    int64_t gk = 0, gv = 0;
    int32_t k0 = grouped_heads(m, r->k, &gk, r), v0 = k0 >= 0 ? grouped_heads(m, r->v, &gv, r) : -1;
    if (k0 >= 0 && v0 >= 0 && gk == gv) {
        r->k_transpose = r->k;
        r->v_transpose = r->v;
        r->k_grouped = k0;
        r->v_grouped = v0;
    } else {
        r->nrepeats = 0;
    }
    return true;
}

/* The transpose making kt reads k0 instead of its repeat: kt becomes
 * {B, Hkv, S, D}. */
static emily_status regroup(matcher *m, int32_t kt, int32_t k0) {
    emily_graph *g = m->g;
    graph_value *v = &g->values[kt];
    graph_call *c = &g->calls[v->node];
    const graph_value *src = &g->values[k0];
    int64_t *shape = emi_graph_alloc(g, sizeof(int64_t) * 4);
    if (!shape) return EMILY_ERR_MEMORY;
    shape[0] = src->shape[0];
    shape[1] = src->shape[2];
    shape[2] = src->shape[1];
    shape[3] = src->shape[3];
    for (int r = 0; r < c->nrefs; r++) m->uses[c->refs[r]->i]--;
    c->args[0] = (emily_value){.kind = EMILY_V_REF, .i = k0};
    c->out.shape = shape;
    v->shape = shape;
    emily_status s = emi_graph_collect_refs(g, c);
    for (int r = 0; r < c->nrefs; r++) m->uses[c->refs[r]->i]++;
    return s;
}

emily_status emi_pat_substitute_attention(matcher *m, graph_call *root, const attention_match *r) {
    emily_graph *g = m->g;
    const emily_callback_entry *entry = emi_callback_find("sdpa");
    if (!entry) return emily_error(EMILY_ERR_INTERNAL, "graph_compile: no callback sdpa");
    emily_status s;
    if (r->k_transpose >= 0) {
        /* the repeats' calls go dead (each of their values was read once,
         * by the next call of its chain): their references go; the
         * transposes then read k0 and v0 */
        for (int i = 0; i < r->nrepeats; i++) {
            const graph_call *c = &g->calls[val(m, r->repeats[i])->node];
            for (int k = 0; k < c->nrefs; k++) m->uses[c->refs[k]->i]--;
        }
        if ((s = regroup(m, r->k_transpose, r->k_grouped)) || (s = regroup(m, r->v_transpose, r->v_grouped))) return s;
    }
    emily_value *args = emi_graph_alloc(g, sizeof(emily_value) * 5);
    const char **keys = emi_graph_alloc(g, sizeof(char *) * 3);
    emily_value *items = emi_graph_alloc(g, sizeof(emily_value) * 3);
    if (!args || !keys || !items) return EMILY_ERR_MEMORY;
    size_t n = 0;
    args[n++] = (emily_value){.kind = EMILY_V_REF, .i = r->q};
    args[n++] = (emily_value){.kind = EMILY_V_REF, .i = r->k};
    args[n++] = (emily_value){.kind = EMILY_V_REF, .i = r->v};
    if (r->mask >= 0) args[n++] = (emily_value){.kind = EMILY_V_REF, .i = r->mask};
    keys[0] = "scale";
    items[0] = (emily_value){.kind = EMILY_V_FLOAT, .f = r->scale};
    keys[1] = "causal";
    items[1] = (emily_value){.kind = EMILY_V_BOOL, .b = false};
    keys[2] = "mask";
    items[2] = (emily_value){.kind = EMILY_V_BOOL, .b = r->mask >= 0};
    args[n++] = (emily_value){.kind = EMILY_V_OPTS, .keys = keys, .items = items, .n = 3};
    root->callback = "sdpa";
    root->entry = entry;
    root->args = args;
    root->nargs = n;
    return emi_graph_collect_refs(g, root);
}
