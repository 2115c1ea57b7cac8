/* Pattern fusion in engine graphs (src/graph/patterns.c): graphs holding
 * the composed layer norm (Axon), rms norm (Bumblebee) and softmax (Axon)
 * exactly as Emily.Compiler records them get the fused call, with results
 * within the bound docs/graph.md states of the same graph compiled with
 * no_patterns; near misses keep their calls; the switches turn it off. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

/* Deterministic pseudo-random values in [lo, lo + span). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(double lo, double span) { return lo + (double)(xorshift64(&rng_state) >> 11) * 0x1p-53 * span; }

static emily_tensor *random_tensor(emily_dtype dt, int rank, const int64_t *shape, double lo, double span) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    double *xs = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) xs[i] = rnd(lo, span);
    emily_tensor *x64 = t_from(EMILY_F64, rank, shape, xs), *x = NULL;
    CHECK_OK(emily_as_type(x64, dt, &x));
    emily_tensor_release(x64);
    free(xs);
    return x;
}

/* A one-element constant of type dt (a graph argument). */
static emily_value k(emily_dtype dt, double v) {
    emily_tensor *t64 = SCALAR(EMILY_F64, double, v), *t = NULL;
    CHECK_OK(emily_as_type(t64, dt, &t));
    emily_tensor_release(t64);
    return v_tensor(t); /* the graph retains it; released by release_constants */
}

/* The constants the builders made, released once the graph holds them. */
static emily_tensor *made[64];
static int nmade;
static emily_value kept(emily_value v) {
    made[nmade++] = v.tensor;
    return v;
}
static void release_constants(void) {
    for (int i = 0; i < nmade; i++) emily_tensor_release(made[i]);
    nmade = 0;
}

/* reduce(x, axes: [axis], keep_axes: true); the options live in o. */
typedef struct axis_opts {
    const char *keys[2];
    emily_value axis, items[2];
} axis_opts;
static emily_value axis_keep(axis_opts *o, int64_t axis) {
    o->keys[0] = "axes";
    o->keys[1] = "keep_axes";
    o->axis = v_int(axis);
    o->items[0] = v_list(&o->axis, 1);
    o->items[1] = v_bool(true);
    return v_opts(o->keys, o->items, 2);
}

static int32_t reduce_rows(emily_graph *g, const char *name, int32_t x, emily_dtype dt, int rank, const int64_t *shape,
                           int axis) {
    int64_t rs[8];
    for (int i = 0; i < rank; i++) rs[i] = i == axis ? 1 : shape[i];
    axis_opts o;
    emily_value out = v_tmpl(dt, rank, rs);
    return GRAPH_CALL(g, name, &out, v_ref(x), axis_keep(&o, axis));
}

/* Nx.mean over `axis` with keep_axes: sum, then divide by an s32 n (as
 * Nx records a number constant). */
static int32_t mean_rows(emily_graph *g, int32_t x, emily_dtype dt, int rank, const int64_t *shape, int axis) {
    int64_t rs[8];
    for (int i = 0; i < rank; i++) rs[i] = i == axis ? 1 : shape[i];
    int32_t s = reduce_rows(g, "sum", x, dt, rank, shape, axis);
    emily_value out = v_tmpl(dt, rank, rs);
    return GRAPH_CALL(g, "divide", &out, v_ref(s), kept(k(EMILY_S32, (double)shape[axis])));
}

/* ---- layer norm ----------------------------------------------------- */

enum {
    LN_AS_AXON,            /* Axon.Layers.layer_norm as recorded */
    LN_SCALE_IS_OUTPUT,    /* gamma * r is also a graph output */
    LN_CENTRED_READ_TWICE, /* x - mean read by another call too */
    LN_OTHER_AXIS,         /* the statistics over axis 0 */
    LN_OTHER_EPS,          /* the select compares with another eps than the add */
    LN_EPS_UNDER_RSQRT,    /* rsqrt(var) + eps instead of rsqrt(var + eps) */
};

/* x {rows, n} of type dt, gamma and beta {n}: Axon's layer norm, and with
 * LN_CENTRED_READ_TWICE a second output. Parameters x, gamma, beta. */
static emily_graph *layer_norm_graph(emily_dtype dt, const int64_t *shape, int variant, double eps) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    int32_t x, gamma, beta;
    int64_t n = shape[1], row[2] = {1, n}, stat[2] = {shape[0], 1};
    int axis = variant == LN_OTHER_AXIS ? 0 : 1;
    if (axis == 0) stat[0] = 1, stat[1] = shape[1];
    CHECK_OK(emily_graph_add_param(g, dt, 2, shape, &x));
    CHECK_OK(emily_graph_add_param(g, dt, 1, &n, &gamma));
    CHECK_OK(emily_graph_add_param(g, dt, 1, &n, &beta));
    emily_value full = v_tmpl(dt, 2, shape), st = v_tmpl(dt, 2, stat), rowt = v_tmpl(dt, 2, row),
                pred_t = v_tmpl(EMILY_U8, 2, stat);
    int32_t gr = GRAPH_CALL(g, "reshape", &rowt, v_ref(gamma));
    /* Nx.variance: its own mean, (x - mean)^2 as pow, the mean of that */
    int32_t mv = mean_rows(g, x, dt, 2, shape, axis);
    int32_t c2 = GRAPH_CALL(g, "subtract", &full, v_ref(x), v_ref(mv));
    int32_t sq = GRAPH_CALL(g, "pow", &full, v_ref(c2), kept(k(EMILY_S32, 2)));
    int32_t var = mean_rows(g, sq, dt, 2, shape, axis);
    double eps_cmp = variant == LN_OTHER_EPS ? eps * 2 : eps;
    int32_t pred = GRAPH_CALL(g, "greater_equal", &pred_t, v_ref(var), kept(k(dt, eps_cmp)));
    int32_t rs;
    if (variant == LN_EPS_UNDER_RSQRT) {
        int32_t r0 = GRAPH_CALL(g, "rsqrt", &st, v_ref(var));
        rs = GRAPH_CALL(g, "add", &st, kept(k(dt, eps)), v_ref(r0));
    } else {
        int32_t ve = GRAPH_CALL(g, "add", &st, kept(k(dt, eps)), v_ref(var));
        rs = GRAPH_CALL(g, "rsqrt", &st, v_ref(ve));
    }
    /* rsqrt(eps), a constant Nx computed: 1 / sqrt in double, rounded */
    double e_w = dt == EMILY_F32 ? (double)(float)eps : eps;
    double rc = dt == EMILY_F32 ? (double)(float)(1.0 / sqrt(e_w)) : 1.0 / sqrt(e_w);
    int32_t sel = GRAPH_CALL(g, "select", &st, v_ref(pred), v_ref(rs), kept(k(dt, rc)));
    int32_t scale = GRAPH_CALL(g, "multiply", axis == 1 ? &full : &rowt, v_ref(gr), v_ref(sel));
    int32_t mn = mean_rows(g, x, dt, 2, shape, axis);
    int32_t c1 = GRAPH_CALL(g, "subtract", &full, v_ref(x), v_ref(mn));
    int32_t y0 = GRAPH_CALL(g, "multiply", &full, v_ref(scale), v_ref(c1));
    int32_t br = GRAPH_CALL(g, "reshape", &rowt, v_ref(beta));
    int32_t y = GRAPH_CALL(g, "add", &full, v_ref(y0), v_ref(br));
    int32_t outs[2] = {y, -1};
    size_t nout = 1;
    if (variant == LN_SCALE_IS_OUTPUT) outs[nout++] = scale;
    if (variant == LN_CENTRED_READ_TWICE) outs[nout++] = GRAPH_CALL(g, "exp", &full, v_ref(c1));
    CHECK_OK(emily_graph_set_outputs(g, nout, outs));
    release_constants();
    return g;
}

/* ---- rms norm ------------------------------------------------------- */

enum {
    RMS_AS_BUMBLEBEE,      /* upcast :normalization, as recorded */
    RMS_UPCAST_READ_TWICE, /* the f32 upcast of x also an output */
    RMS_MEAN_OVER_AXIS0,   /* the mean over another axis */
};

/* x {rows, n} of type xt, weight {n} of type wt: Bumblebee's rms_norm
 * (x upcast to f32 for f16/bf16 x, and the result back to xt). */
static emily_graph *rms_norm_graph(emily_dtype xt, emily_dtype wt, const int64_t *shape, int variant, double eps) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    int32_t x, w;
    int64_t n = shape[1];
    int axis = variant == RMS_MEAN_OVER_AXIS0 ? 0 : 1;
    CHECK_OK(emily_graph_add_param(g, xt, 2, shape, &x));
    CHECK_OK(emily_graph_add_param(g, wt, 1, &n, &w));
    emily_value f32full = v_tmpl(EMILY_F32, 2, shape), xfull = v_tmpl(xt, 2, shape);
    int64_t stat[2] = {axis ? shape[0] : 1, axis ? 1 : shape[1]};
    emily_value st = v_tmpl(EMILY_F32, 2, stat);
    int32_t xf = xt == EMILY_F32 ? x : GRAPH_CALL(g, "as_type", &f32full, v_ref(x));
    int32_t sq = GRAPH_CALL(g, "pow", &f32full, v_ref(xf), kept(k(EMILY_S32, 2)));
    int32_t ms = mean_rows(g, sq, EMILY_F32, 2, shape, axis);
    int32_t a = GRAPH_CALL(g, "add", &st, kept(k(EMILY_F32, eps)), v_ref(ms));
    int32_t r = GRAPH_CALL(g, "rsqrt", &st, v_ref(a));
    int32_t t = GRAPH_CALL(g, "multiply", &f32full, v_ref(xf), v_ref(r));
    int32_t z = xt == EMILY_F32 ? t : GRAPH_CALL(g, "as_type", &xfull, v_ref(t));
    emily_value out = v_tmpl(emily_type_merge(xt, wt), 2, shape);
    int32_t y = GRAPH_CALL(g, "multiply", &out, v_ref(z), v_ref(w));
    int32_t outs[2] = {y, xf};
    CHECK_OK(emily_graph_set_outputs(g, variant == RMS_UPCAST_READ_TWICE ? 2 : 1, outs));
    release_constants();
    return g;
}

/* ---- softmax -------------------------------------------------------- */

enum {
    SM_AS_AXON,        /* Axon.Activations.softmax, axis -1 */
    SM_EXP_READ_TWICE, /* the exponentials also an output */
    SM_OVER_AXIS0,     /* over another axis */
    SM_DIVIDED,        /* exp / sum instead of (1 / sum) * exp */
};

/* x {rows, n} of type dt (an integer dt: exp makes f32 of it). */
static emily_graph *softmax_graph(emily_dtype dt, const int64_t *shape, int variant) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    int32_t x;
    int axis = variant == SM_OVER_AXIS0 ? 0 : 1;
    CHECK_OK(emily_graph_add_param(g, dt, 2, shape, &x));
    emily_dtype ft = emily_dtype_is_float(dt) ? dt : EMILY_F32;
    int64_t stat[2] = {axis ? shape[0] : 1, axis ? 1 : shape[1]};
    emily_value full = v_tmpl(dt, 2, shape), ffull = v_tmpl(ft, 2, shape), fst = v_tmpl(ft, 2, stat);
    int32_t m = reduce_rows(g, "reduce_max", x, dt, 2, shape, axis);
    int32_t d = GRAPH_CALL(g, "subtract", &full, v_ref(x), v_ref(m));
    int32_t e = GRAPH_CALL(g, "exp", &ffull, v_ref(d));
    int32_t s = reduce_rows(g, "sum", e, ft, 2, shape, axis);
    int32_t y;
    if (variant == SM_DIVIDED) {
        y = GRAPH_CALL(g, "divide", &ffull, v_ref(e), v_ref(s));
    } else {
        int32_t r = GRAPH_CALL(g, "divide", &fst, kept(k(EMILY_S32, 1)), v_ref(s));
        y = GRAPH_CALL(g, "multiply", &ffull, v_ref(r), v_ref(e));
    }
    int32_t outs[2] = {y, e};
    CHECK_OK(emily_graph_set_outputs(g, variant == SM_EXP_READ_TWICE ? 2 : 1, outs));
    release_constants();
    return g;
}

/* ---- attention ------------------------------------------------------ */

enum {
    ATT_AS_BUMBLEBEE,         /* BERT: padding mask, multi-head */
    ATT_CAUSAL_GROUPED,       /* Llama without a cache: causal and key mask, kv heads repeated */
    ATT_NO_BIAS,              /* no bias added, no scale multiply (scale 1) */
    ATT_GROUPED_REPEAT_READ,  /* the repeated k also a graph output: no regrouping */
    ATT_DIVIDED_SCALE,        /* scores / sqrt(D) instead of * (1 / sqrt(D)) */
    ATT_HEAD_SCALE,           /* the scale a {1, H, 1, 1} tensor, not one number */
    ATT_WEIGHTS_OUTPUT,       /* the probabilities also a graph output */
    ATT_SCORES_READ_TWICE,    /* the scaled scores read by another call */
    ATT_F64_BIAS,             /* an f64 bias: the logits widen to f64 */
    ATT_INT_BIAS,             /* an s32 bias: not an additive float mask */
    ATT_KEYS_CONTRACTED_ON_2, /* k transposed to {B, H, D, S}, contracted on axis 2 */
    ATT_HIGHEST_DOTS,         /* the dots ask for precision :highest */
};

/* Dimensions of the attention graphs. */
enum { AB = 3, AS = 24, AH = 4, AD = 16 };

static emily_value axes_list(emily_value *items, const int64_t *xs, size_t n) {
    for (size_t i = 0; i < n; i++) items[i] = v_int(xs[i]);
    return v_list(items, n);
}

/* transpose(x, [0, 2, 1, 3]) of a rank-4 x of shape s (type dt) */
static int32_t swap12(emily_graph *g, int32_t x, emily_dtype dt, const int64_t *s) {
    static const int64_t perm[4] = {0, 2, 1, 3};
    int64_t t[4] = {s[0], s[2], s[1], s[3]}; /* the graph copies the template */
    emily_value items[4], out = v_tmpl(dt, 4, t);
    return GRAPH_CALL(g, "transpose", &out, v_ref(x), axes_list(items, perm, 4));
}

/* dot(a, [ca], [0, 1], b, [cb], [0, 1]) of type dt and shape s, with
 * [precision: :highest] when highest */
static int32_t batched_dot_call(emily_graph *g, int32_t a, int64_t ca, int32_t b, int64_t cb, emily_dtype dt,
                                const int64_t *s, bool highest) {
    static const int64_t batch[2] = {0, 1};
    emily_value i1[1], i2[2], i3[1], i4[2], out = v_tmpl(dt, 4, s), pitems[1] = {v_atom("highest")};
    pitems[0].len = strlen("highest");
    const char *pkeys[1] = {"precision"};
    if (highest)
        return GRAPH_CALL(g, "dot", &out, v_ref(a), axes_list(i1, &ca, 1), axes_list(i2, batch, 2), v_ref(b),
                          axes_list(i3, &cb, 1), axes_list(i4, batch, 2), v_opts(pkeys, pitems, 1));
    return GRAPH_CALL(g, "dot", &out, v_ref(a), axes_list(i1, &ca, 1), axes_list(i2, batch, 2), v_ref(b),
                      axes_list(i3, &cb, 1), axes_list(i4, batch, 2));
}

/* Bumblebee.Utils.Nx.repeat_interleave(x, g, axis: 2) of x {B, S, Hkv, D}
 * as Nx records it: new axis, tile (a rank-10 reshape, the broadcast of
 * the repeated axis, a reshape back), flatten. */
static int32_t repeat_heads(emily_graph *g, int32_t x, emily_dtype dt, int64_t hkv, int64_t groups) {
    static int64_t s5[5], s10[10], b10[10], r5[5], s4[4];
    int64_t s5v[5] = {AB, AS, hkv, 1, AD}, s10v[10] = {1, AB, 1, AS, 1, hkv, 1, 1, 1, AD},
            r5v[5] = {AB, AS, hkv, groups, AD}, s4v[4] = {AB, AS, hkv * groups, AD};
    memcpy(s5, s5v, sizeof s5);
    memcpy(s10, s10v, sizeof s10);
    memcpy(b10, s10v, sizeof b10);
    b10[6] = groups;
    memcpy(r5, r5v, sizeof r5);
    memcpy(s4, s4v, sizeof s4);
    static const int64_t ident[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    emily_value o5 = v_tmpl(dt, 5, s5), o10 = v_tmpl(dt, 10, s10), ob = v_tmpl(dt, 10, b10), or5 = v_tmpl(dt, 5, r5),
                o4 = v_tmpl(dt, 4, s4), shape_items[10], axis_items[10];
    int32_t a = GRAPH_CALL(g, "reshape", &o5, v_ref(x));
    int32_t b = GRAPH_CALL(g, "reshape", &o10, v_ref(a));
    int32_t c = GRAPH_CALL(g, "broadcast", &ob, v_ref(b), axes_list(shape_items, b10, 10),
                           axes_list(axis_items, ident, 10));
    int32_t d = GRAPH_CALL(g, "reshape", &or5, v_ref(c));
    return GRAPH_CALL(g, "reshape", &o4, v_ref(d));
}

/* Bumblebee's attention (attention_weights_impl, attention_output_impl)
 * over q {B, S, H, D}, k and v {B, S, Hkv, D} of type dt and a key mask
 * u32 {B, S}: the padding mask (and the causal one) as the bias
 * select(mask, 0, min_finite), Axon's softmax composed, the output
 * transposed back to {B, S, H, D}. Parameters q, k, v, key mask. */
static emily_graph *attention_graph(emily_dtype dt, int variant) {
    bool grouped = variant == ATT_CAUSAL_GROUPED || variant == ATT_GROUPED_REPEAT_READ;
    int64_t hkv = grouped ? AH / 2 : AH;
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    int32_t q, kp, vp, km;
    static const int64_t qs[4] = {AB, AS, AH, AD}, ms[2] = {AB, AS}, hs[4] = {AB, AH, AS, AD}, ss[4] = {AB, AH, AS, AS},
                         st[4] = {AB, AH, AS, 1}, m3[3] = {AB, 1, AS}, m4[4] = {AB, 1, 1, AS}, mc[4] = {AB, 1, AS, AS},
                         kts[4] = {AB, AH, AD, AS}, hsc[4] = {1, AH, 1, 1};
    int64_t kvs[4] = {AB, AS, hkv, AD};
    CHECK_OK(emily_graph_add_param(g, dt, 4, qs, &q));
    CHECK_OK(emily_graph_add_param(g, dt, 4, kvs, &kp));
    CHECK_OK(emily_graph_add_param(g, dt, 4, kvs, &vp));
    CHECK_OK(emily_graph_add_param(g, EMILY_U32, 2, ms, &km));
    bool highest = variant == ATT_HIGHEST_DOTS;
    int32_t kr = grouped ? repeat_heads(g, kp, dt, hkv, AH / hkv) : kp;
    int32_t vr = grouped ? repeat_heads(g, vp, dt, hkv, AH / hkv) : vp;
    int32_t qt = swap12(g, q, dt, qs), s;
    if (variant == ATT_KEYS_CONTRACTED_ON_2) {
        static const int64_t perm[4] = {0, 2, 3, 1};
        emily_value items[4], out = v_tmpl(dt, 4, kts);
        int32_t kt2 = GRAPH_CALL(g, "transpose", &out, v_ref(kr), axes_list(items, perm, 4));
        s = batched_dot_call(g, qt, 3, kt2, 2, dt, ss, false);
    } else {
        s = batched_dot_call(g, qt, 3, swap12(g, kr, dt, qs), 3, dt, ss, highest);
    }
    emily_value full = v_tmpl(dt, 4, ss);
    /* Bumblebee's scale: 1 / as_type(sqrt(D)), a constant of q's type */
    double scale = dt == EMILY_F64 ? 1 / sqrt((double)AD) : (double)(float)(1 / (float)sqrt((double)AD));
    int32_t a = s;
    if (variant == ATT_DIVIDED_SCALE) {
        a = GRAPH_CALL(g, "divide", &full, v_ref(s), kept(k(dt, sqrt((double)AD))));
    } else if (variant == ATT_HEAD_SCALE) {
        double per_head[AH] = {0.25, 0.125, 0.5, 0.25}; /* the same in both builds */
        emily_tensor *h64 = t_from(EMILY_F64, 4, hsc, per_head), *hsv = NULL;
        CHECK_OK(emily_as_type(h64, dt, &hsv));
        emily_tensor_release(h64);
        a = GRAPH_CALL(g, "multiply", &full, kept(v_tensor(hsv)), v_ref(s));
    } else if (variant != ATT_NO_BIAS) {
        a = GRAPH_CALL(g, "multiply", &full, kept(k(dt, scale)), v_ref(s));
    }
    int32_t l = a;
    emily_dtype lt = dt; /* the logits' type */
    if (variant != ATT_NO_BIAS) {
        emily_value o3 = v_tmpl(EMILY_U32, 3, m3), o4 = v_tmpl(EMILY_U32, 4, m4);
        int32_t r3 = GRAPH_CALL(g, "reshape", &o3, v_ref(km));
        int32_t r4 = GRAPH_CALL(g, "reshape", &o4, v_ref(r3));
        int32_t both;
        bool causal = variant == ATT_CAUSAL_GROUPED || variant == ATT_GROUPED_REPEAT_READ;
        if (causal) {
            /* Bumblebee's causal mask iota({S, 1}) >= iota({1, S}), folded */
            static const int64_t cs[4] = {1, 1, AS, AS};
            uint8_t tri[AS * AS];
            for (int i = 0; i < AS; i++)
                for (int j = 0; j < AS; j++) tri[i * AS + j] = j <= i;
            emily_tensor *ct = t_from(EMILY_U8, 4, cs, tri);
            emily_value ob = v_tmpl(EMILY_U8, 4, mc);
            both = GRAPH_CALL(g, "logical_and", &ob, v_ref(r4), kept(v_tensor(ct)));
        } else {
            emily_value ob = v_tmpl(EMILY_U8, 4, m4);
            both = GRAPH_CALL(g, "logical_and", &ob, v_ref(r4), kept(k(EMILY_S32, 1)));
        }
        emily_dtype bt = variant == ATT_F64_BIAS ? EMILY_F64 : variant == ATT_INT_BIAS ? EMILY_S32 : dt;
        double lowest = bt == EMILY_F64 ? -DBL_MAX : bt == EMILY_S32 ? -2147483647.0 - 1 : -(double)FLT_MAX;
        if (dt == EMILY_BF16 && bt == dt) lowest = -0x1.fep127;
        lt = emily_type_merge(dt, bt);
        emily_value bo = v_tmpl(bt, 4, causal ? mc : m4), lo = v_tmpl(lt, 4, ss);
        int32_t bias = GRAPH_CALL(g, "select", &bo, v_ref(both), kept(k(bt, 0)), kept(k(bt, lowest)));
        l = GRAPH_CALL(g, "add", &lo, v_ref(a), v_ref(bias));
    }
    emily_value lfull = v_tmpl(lt, 4, ss), lstat = v_tmpl(lt, 4, st);
    int32_t mx = reduce_rows(g, "reduce_max", l, lt, 4, ss, 3);
    int32_t d = GRAPH_CALL(g, "subtract", &lfull, v_ref(l), v_ref(mx));
    int32_t e = GRAPH_CALL(g, "exp", &lfull, v_ref(d));
    int32_t sm = reduce_rows(g, "sum", e, lt, 4, ss, 3);
    int32_t r = GRAPH_CALL(g, "divide", &lstat, kept(k(EMILY_S32, 1)), v_ref(sm));
    int32_t p = GRAPH_CALL(g, "multiply", &lfull, v_ref(r), v_ref(e));
    if (lt != dt) {
        emily_value back = v_tmpl(dt, 4, ss);
        p = GRAPH_CALL(g, "as_type", &back, v_ref(p));
    }
    int32_t o = batched_dot_call(g, p, 3, swap12(g, vr, dt, qs), 2, dt, hs, highest);
    int32_t y = swap12(g, o, dt, hs);
    int32_t outs[2] = {y, -1};
    size_t nout = 1;
    if (variant == ATT_WEIGHTS_OUTPUT) outs[nout++] = p;
    if (variant == ATT_SCORES_READ_TWICE) outs[nout++] = GRAPH_CALL(g, "exp", &full, v_ref(a));
    if (variant == ATT_GROUPED_REPEAT_READ) outs[nout++] = kr;
    CHECK_OK(emily_graph_set_outputs(g, nout, outs));
    release_constants();
    return g;
}

/* ---- running -------------------------------------------------------- */

/* Compiles g (patterns on unless off), runs it on in, and gives its
 * stats; the outputs go to out (nout of them). Frees g. */
static void run_graph(emily_graph *g, bool off, emily_tensor **in, size_t nin, emily_tensor **out, size_t nout,
                      emily_graph_stats *st) {
    emily_graph_options o = {.no_patterns = off};
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, &o));
    CHECK_OK(emily_graph_get_stats(g, st));
    CHECK_OK(emily_graph_run(g, in, nin, out, nout));
    emily_graph_free(g);
}

/* The largest |a - b| / (1 + |b|) over the elements (NaN where one is NaN
 * and the other not). */
static double max_rel_diff(const emily_tensor *a, const emily_tensor *b) {
    double worst = 0;
    for (int64_t i = 0; i < emily_tensor_size(a); i++) {
        double x = t_get(a, i), y = t_get(b, i);
        if (isnan(x) || isnan(y)) {
            if (isnan(x) != isnan(y)) return NAN;
            continue;
        }
        double d = fabs(x - y) / (1 + fabs(y));
        if (d > worst) worst = d;
    }
    return worst;
}

/* Builds the graph twice (make(variant)), runs it with and without
 * patterns on the inputs, and checks the substitution count (of the
 * pattern's stat, through *which) and that the outputs agree within tol
 * (0: byte for byte). */
typedef emily_graph *(*make_fn)(int variant);
static void check_pattern(make_fn make, int variant, emily_tensor **in, size_t nin, size_t nout, int64_t want,
                          size_t which, double tol) {
    emily_tensor *on[2] = {NULL, NULL}, *off[2] = {NULL, NULL};
    emily_graph_stats s_on, s_off;
    run_graph(make(variant), false, in, nin, on, nout, &s_on);
    run_graph(make(variant), true, in, nin, off, nout, &s_off);
    const int64_t *counts_on = (const int64_t *)((const char *)&s_on + which);
    CHECK(*counts_on == want && s_on.patterns == want && s_off.patterns == 0);
    if (want) CHECK(s_on.steps < s_off.steps);
    for (size_t i = 0; i < nout; i++) {
        CHECK(on[i] && off[i] && emily_tensor_dtype(on[i]) == emily_tensor_dtype(off[i]));
        if (tol == 0) CHECK(t_same_bytes(on[i], off[i]));
        else CHECK(max_rel_diff(on[i], off[i]) <= tol);
    }
    RELEASE(on[0], on[1], off[0], off[1]);
}

#define STAT(field) offsetof(emily_graph_stats, field)

static const int64_t SHAPE[2] = {37, 96};
static emily_dtype cur_dt, cur_wt;

static emily_graph *make_ln(int variant) { return layer_norm_graph(cur_dt, SHAPE, variant, 1e-5); }
static emily_graph *make_rms(int variant) { return rms_norm_graph(cur_dt, cur_wt, SHAPE, variant, 1e-6); }
static emily_graph *make_sm(int variant) { return softmax_graph(cur_dt, SHAPE, variant); }

/* f32: the composed rsqrt is the CPU's SIMD one (within 1 ulp of the
 * rounded double the kernel takes), so outputs agree within a few ulp
 * (2.4e-7 * (1 + |y|) measured); f64 within the reordered sums' bound
 * (7.8e-16 measured). */
TEST(layer_norm_substituted) {
    emily_dtype dts[2] = {EMILY_F32, EMILY_F64};
    double tol[2] = {8 * 0x1p-24, 64 * 0x1p-53};
    for (int i = 0; i < 2; i++) {
        cur_dt = dts[i];
        int64_t n = SHAPE[1];
        emily_tensor *in[3] = {random_tensor(cur_dt, 2, SHAPE, -3, 8), random_tensor(cur_dt, 1, &n, -2, 4),
                               random_tensor(cur_dt, 1, &n, -2, 4)};
        check_pattern(make_ln, LN_AS_AXON, in, 3, 1, 1, STAT(pattern_layer_norm), tol[i]);
        RELEASE(in[0], in[1], in[2]);
    }
}

TEST(layer_norm_near_misses_kept) {
    cur_dt = EMILY_F32;
    int64_t n = SHAPE[1];
    emily_tensor *in[3] = {random_tensor(cur_dt, 2, SHAPE, -3, 8), random_tensor(cur_dt, 1, &n, -2, 4),
                           random_tensor(cur_dt, 1, &n, -2, 4)};
    check_pattern(make_ln, LN_SCALE_IS_OUTPUT, in, 3, 2, 0, STAT(pattern_layer_norm), 0);
    check_pattern(make_ln, LN_CENTRED_READ_TWICE, in, 3, 2, 0, STAT(pattern_layer_norm), 0);
    check_pattern(make_ln, LN_OTHER_EPS, in, 3, 1, 0, STAT(pattern_layer_norm), 0);
    check_pattern(make_ln, LN_EPS_UNDER_RSQRT, in, 3, 1, 0, STAT(pattern_layer_norm), 0);
    RELEASE(in[0], in[1], in[2]);
    /* the statistics over axis 0 of a square x (every shape still fits) */
    static const int64_t sq[2] = {96, 96};
    emily_tensor *xs = random_tensor(cur_dt, 2, sq, -3, 8), *gs = random_tensor(cur_dt, 1, &n, -2, 4);
    emily_graph *g = layer_norm_graph(cur_dt, sq, LN_OTHER_AXIS, 1e-5);
    emily_tensor *out = NULL;
    emily_graph_stats st;
    run_graph(g, false, (emily_tensor *[]){xs, gs, gs}, 3, &out, 1, &st);
    CHECK(st.patterns == 0);
    RELEASE(xs, gs, out);
    /* f16 and bf16: Axon computes in the type, the kernel in f32 */
    emily_dtype halves[2] = {EMILY_F16, EMILY_BF16};
    for (int i = 0; i < 2; i++) {
        cur_dt = halves[i];
        emily_tensor *hin[3] = {random_tensor(cur_dt, 2, SHAPE, -3, 8), random_tensor(cur_dt, 1, &n, -2, 4),
                                random_tensor(cur_dt, 1, &n, -2, 4)};
        check_pattern(make_ln, LN_AS_AXON, hin, 3, 1, 0, STAT(pattern_layer_norm), 0);
        RELEASE(hin[0], hin[1], hin[2]);
    }
}

/* f32 x: within a few ulp (the composed rsqrt is the SIMD one); f16 and
 * bf16 x: the normalized value is rounded to the type, so an ulp of r can
 * move it by one ulp of the type. */
TEST(rms_norm_substituted) {
    struct {
        emily_dtype x, w;
        double tol;
    } cases[] = {{EMILY_F32, EMILY_F32, 4 * 0x1p-24},
                 {EMILY_BF16, EMILY_BF16, 2 * 0x1p-8},
                 {EMILY_BF16, EMILY_F32, 2 * 0x1p-8},
                 {EMILY_F16, EMILY_F16, 2 * 0x1p-11},
                 {EMILY_F32, EMILY_F64, 4 * 0x1p-24}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cur_dt = cases[i].x;
        cur_wt = cases[i].w;
        int64_t n = SHAPE[1];
        emily_tensor *in[2] = {random_tensor(cur_dt, 2, SHAPE, -3, 8), random_tensor(cur_wt, 1, &n, -2, 4)};
        check_pattern(make_rms, RMS_AS_BUMBLEBEE, in, 2, 1, 1, STAT(pattern_rms_norm), cases[i].tol);
        RELEASE(in[0], in[1]);
    }
}

TEST(rms_norm_near_misses_kept) {
    int64_t n = SHAPE[1];
    cur_dt = EMILY_BF16;
    cur_wt = EMILY_BF16;
    emily_tensor *in[2] = {random_tensor(cur_dt, 2, SHAPE, -3, 8), random_tensor(cur_wt, 1, &n, -2, 4)};
    check_pattern(make_rms, RMS_UPCAST_READ_TWICE, in, 2, 2, 0, STAT(pattern_rms_norm), 0);
    RELEASE(in[0], in[1]);
    /* the weight f16 with bf16 x: the product converts z to f16 first */
    cur_wt = EMILY_F16;
    emily_tensor *in2[2] = {random_tensor(cur_dt, 2, SHAPE, -3, 8), random_tensor(cur_wt, 1, &n, -2, 4)};
    check_pattern(make_rms, RMS_AS_BUMBLEBEE, in2, 2, 1, 0, STAT(pattern_rms_norm), 0);
    RELEASE(in2[0], in2[1]);
    static const int64_t sq[2] = {96, 96};
    emily_tensor *xs = random_tensor(EMILY_F32, 2, sq, -3, 8), *ws = random_tensor(EMILY_F32, 1, &n, -2, 4),
                 *out = NULL;
    emily_graph_stats st;
    run_graph(rms_norm_graph(EMILY_F32, EMILY_F32, sq, RMS_MEAN_OVER_AXIS0, 1e-6), false, (emily_tensor *[]){xs, ws}, 2,
              &out, 1, &st);
    CHECK(st.patterns == 0);
    RELEASE(xs, ws, out);
}

/* Every step is the composed calls' own rule (the exp kernel included):
 * f32, bf16 and f16 byte for byte on this data (their double sums round
 * alike); f64 sums in f64 in another order (4.8e-17 measured). */
TEST(softmax_substituted) {
    emily_dtype dts[4] = {EMILY_F32, EMILY_F64, EMILY_BF16, EMILY_F16};
    for (int i = 0; i < 4; i++) {
        cur_dt = dts[i];
        emily_tensor *x = random_tensor(cur_dt, 2, SHAPE, -20, 30);
        check_pattern(make_sm, SM_AS_AXON, &x, 1, 1, 1, STAT(pattern_softmax), cur_dt == EMILY_F64 ? 1e-15 : 0);
        emily_tensor_release(x);
    }
}

TEST(softmax_near_misses_kept) {
    cur_dt = EMILY_F32;
    emily_tensor *x = random_tensor(cur_dt, 2, SHAPE, -20, 30);
    check_pattern(make_sm, SM_EXP_READ_TWICE, &x, 1, 2, 0, STAT(pattern_softmax), 0);
    check_pattern(make_sm, SM_DIVIDED, &x, 1, 1, 0, STAT(pattern_softmax), 0);
    check_pattern(make_sm, SM_OVER_AXIS0, &x, 1, 1, 0, STAT(pattern_softmax), 0);
    emily_tensor_release(x);
    /* integers: exp makes f32 of x - max, not the contract's types */
    cur_dt = EMILY_S32;
    emily_tensor *xi = random_tensor(cur_dt, 2, SHAPE, -20, 30);
    check_pattern(make_sm, SM_AS_AXON, &xi, 1, 1, 0, STAT(pattern_softmax), 0);
    emily_tensor_release(xi);
}

/* Edge values: the fused softmax gives the composed calls' NaNs and zeros. */
TEST(softmax_edge_values) {
    static const int64_t shape[2] = {4, 5};
    float xs[20] = {1,         2,         NAN,       3,         4, /* a NaN: the row is NaN */
                    1,         INFINITY,  2,         3,         4, /* +inf: NaN (inf - inf) */
                    -INFINITY, 0,         1,         -INFINITY, 2, /* -inf: 0 */
                    -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    emily_tensor *x = t_from(EMILY_F32, 2, shape, xs), *on = NULL, *off = NULL;
    emily_graph_stats s;
    run_graph(softmax_graph(EMILY_F32, shape, SM_AS_AXON), false, &x, 1, &on, 1, &s);
    CHECK(s.pattern_softmax == 1);
    run_graph(softmax_graph(EMILY_F32, shape, SM_AS_AXON), true, &x, 1, &off, 1, &s);
    CHECK(t_same_bytes(on, off) || max_rel_diff(on, off) == 0);
    CHECK(isnan(t_get(on, 0)) && isnan(t_get(on, 5)) && t_get(on, 10) == 0 && isnan(t_get(on, 15)));
    RELEASE(x, on, off);
}

/* emily_graph_options.no_patterns and EMILY_GRAPH_PATTERNS=0 leave the
 * calls; a list in EMILY_GRAPH_PATTERNS keeps only the patterns named. */
/* The patterns that Axon's softmax graph gets with no_patterns = off,
 * after EMILY_GRAPH_PATTERNS is set to env (NULL: left as it is). */
static int64_t softmax_patterns(emily_tensor *x, bool off, const char *env) {
    if (env) setenv("EMILY_GRAPH_PATTERNS", env, 1);
    emily_tensor *out = NULL;
    emily_graph_stats s;
    run_graph(make_sm(SM_AS_AXON), off, &x, 1, &out, 1, &s);
    emily_tensor_release(out);
    return s.patterns;
}

TEST(switches) {
    cur_dt = EMILY_F32;
    emily_tensor *x = random_tensor(cur_dt, 2, SHAPE, -20, 30);
    emily_graph_stats s;
    CHECK(softmax_patterns(x, true, NULL) == 0);
    CHECK(softmax_patterns(x, false, "0") == 0);
    CHECK(softmax_patterns(x, false, "layer_norm,rms_norm") == 0);
    CHECK(softmax_patterns(x, false, "rms_norm,softmax") == 1);
    unsetenv("EMILY_GRAPH_PATTERNS");
    /* no optimization at all: no patterns either */
    emily_graph *g = make_sm(SM_AS_AXON);
    emily_graph_options o = {.no_optimize = 1};
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, &o));
    CHECK_OK(emily_graph_get_stats(g, &s));
    CHECK(s.patterns == 0);
    emily_graph_free(g);
    emily_tensor_release(x);
}

/* A substituted graph saves and loads: the fused call is a callback like
 * any other. */
TEST(saved_after_substitution) {
    cur_dt = EMILY_F32;
    emily_tensor *x = random_tensor(cur_dt, 2, SHAPE, -20, 30), *a = NULL, *b = NULL;
    emily_graph *g = make_sm(SM_AS_AXON), *l = NULL;
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, NULL));
    void *bytes = NULL;
    size_t size = 0;
    CHECK_OK(emily_graph_save_buffer(g, &bytes, &size));
    CHECK_OK(emily_graph_load_buffer(bytes, size, &l));
    CHECK_OK(emily_graph_compile(l, EMILY_CPU, NULL));
    CHECK_OK(emily_graph_run(g, &x, 1, &a, 1));
    CHECK_OK(emily_graph_run(l, &x, 1, &b, 1));
    CHECK(t_same_bytes(a, b));
    free(bytes);
    emily_graph_free(g);
    emily_graph_free(l);
    RELEASE(x, a, b);
}

/* Attention's inputs: q, k, v (kv heads hkv) in [-2, 2) of type dt, and
 * the key mask: batch 0 keeps every key, batch 1 the first 17, batch 2
 * none (Bumblebee's min_finite bias then weighs every key alike). */
static void attention_inputs(emily_dtype dt, int64_t hkv, emily_tensor **in) {
    static const int64_t qs[4] = {AB, AS, AH, AD}, ms[2] = {AB, AS};
    int64_t kvs[4] = {AB, AS, hkv, AD};
    uint32_t mask[AB * AS];
    for (int b = 0; b < AB; b++)
        for (int j = 0; j < AS; j++) mask[b * AS + j] = b == 0 || (b == 1 && j < 17);
    in[0] = random_tensor(dt, 4, qs, -2, 4);
    in[1] = random_tensor(dt, 4, kvs, -2, 4);
    in[2] = random_tensor(dt, 4, kvs, -2, 4);
    in[3] = t_from(EMILY_U32, 2, ms, mask);
}

/* Compiles attention_graph(dt, variant) with and without patterns and
 * checks the counts (attention, softmax), the calls the substitution
 * dropped (dropped_more: the attention's 9, plus the 10 calls of the
 * repeats of k and v where sdpa reads the kv heads itself) and that the
 * outputs agree within tol ((|a - b| / (1 + |b|); 0: byte for byte). */
static void check_attention(emily_dtype dt, int variant, int64_t want_att, int64_t want_sm, int64_t dropped_more,
                            size_t nout, double tol) {
    bool grouped = variant == ATT_CAUSAL_GROUPED || variant == ATT_GROUPED_REPEAT_READ;
    emily_tensor *in[4], *on[2] = {NULL, NULL}, *off[2] = {NULL, NULL};
    attention_inputs(dt, grouped ? AH / 2 : AH, in);
    emily_graph_stats s_on, s_off;
    run_graph(attention_graph(dt, variant), false, in, 4, on, nout, &s_on);
    run_graph(attention_graph(dt, variant), true, in, 4, off, nout, &s_off);
    CHECK(s_on.pattern_attention == want_att && s_on.pattern_softmax == want_sm &&
          s_on.patterns == want_att + want_sm && s_off.patterns == 0);
    if (want_att) CHECK(s_on.dropped - s_off.dropped == dropped_more);
    for (size_t i = 0; i < nout; i++) {
        CHECK(on[i] && off[i] && emily_tensor_dtype(on[i]) == emily_tensor_dtype(off[i]));
        double d = tol == 0 ? (t_same_bytes(on[i], off[i]) ? 0 : 1) : max_rel_diff(on[i], off[i]);
        if (!(d <= tol))
            fprintf(stderr, "  variant %d output %zu: %g > %g (%g)\n", variant, i, d, tol, max_rel_diff(on[i], off[i]));
        CHECK(d <= tol);
        if (getenv("ATT_MEASURE"))
            fprintf(stderr, "measure variant %d dt %d: %g\n", variant, (int)dt, max_rel_diff(on[i], off[i]));
    }
    RELEASE(in[0], in[1], in[2], in[3], on[0], on[1], off[0], off[1]);
}

/* f32: the dots are BLAS's in both (another blocking: another order of
 * the 16- and 24-term sums), the probabilities E / Z where Axon takes
 * (1 / Z) * E (an ulp each), so outputs agree within a few ulp of the
 * values (|v| < 2): 9.5e-8 measured, about 1.6 ulp; f64 3.0e-16. */
TEST(attention_substituted) {
    double f32_tol = 4 * 0x1p-24, f64_tol = 8 * 0x1p-53;
    check_attention(EMILY_F32, ATT_AS_BUMBLEBEE, 1, 0, 9, 1, f32_tol);
    check_attention(EMILY_F64, ATT_AS_BUMBLEBEE, 1, 0, 9, 1, f64_tol);
    check_attention(EMILY_F32, ATT_CAUSAL_GROUPED, 1, 0, 19, 1, f32_tol);
    check_attention(EMILY_F64, ATT_CAUSAL_GROUPED, 1, 0, 19, 1, f64_tol);
    /* no bias and no scale: sdpa(q, k, v, scale: 1); 7 calls */
    check_attention(EMILY_F32, ATT_NO_BIAS, 1, 0, 7, 1, f32_tol);
    /* the repeat read elsewhere: the repeated heads go to sdpa as they are */
    check_attention(EMILY_F32, ATT_GROUPED_REPEAT_READ, 1, 0, 9, 2, f32_tol);
    /* the softmax pattern off: attention takes Axon's composed softmax */
    setenv("EMILY_GRAPH_PATTERNS", "attention", 1);
    check_attention(EMILY_F32, ATT_AS_BUMBLEBEE, 1, 0, 9, 1, f32_tol);
    check_attention(EMILY_F32, ATT_CAUSAL_GROUPED, 1, 0, 19, 1, f32_tol);
    /* attention off: the softmax alone */
    setenv("EMILY_GRAPH_PATTERNS", "softmax", 1);
    check_attention(EMILY_F32, ATT_AS_BUMBLEBEE, 0, 1, 0, 1, 0);
    unsetenv("EMILY_GRAPH_PATTERNS");
}

/* Near misses keep the attention's calls (the softmax inside is still
 * substituted where it is Axon's): the outputs are the composed ones. */
TEST(attention_near_misses_kept) {
    check_attention(EMILY_F32, ATT_DIVIDED_SCALE, 0, 1, 0, 1, 0);
    check_attention(EMILY_F32, ATT_HEAD_SCALE, 0, 1, 0, 1, 0);
    check_attention(EMILY_F32, ATT_WEIGHTS_OUTPUT, 0, 1, 0, 2, 0);
    check_attention(EMILY_F32, ATT_SCORES_READ_TWICE, 0, 1, 0, 2, 0);
    check_attention(EMILY_F32, ATT_KEYS_CONTRACTED_ON_2, 0, 1, 0, 1, 0);
    check_attention(EMILY_F32, ATT_HIGHEST_DOTS, 0, 1, 0, 1, 0);
    /* an f64 bias widens the logits to f64 (the softmax is f64's) */
    check_attention(EMILY_F32, ATT_F64_BIAS, 0, 1, 0, 1, 0);
    /* an integer bias: sdpa would read a u8 mask as keep/drop */
    check_attention(EMILY_F32, ATT_INT_BIAS, 0, 1, 0, 1, 0);
    /* f16/bf16: Bumblebee rounds the scores and the softmax to the type,
     * the contract computes them in f32 */
    check_attention(EMILY_BF16, ATT_AS_BUMBLEBEE, 0, 1, 0, 1, 0);
    check_attention(EMILY_F16, ATT_CAUSAL_GROUPED, 0, 1, 0, 1, 0);
    /* the process asks for Nx's f64 dot sums */
    emily_dot_precision saved = emily_dot_get_precision();
    emily_dot_set_precision(EMILY_DOT_PRECISION_HIGHEST);
    check_attention(EMILY_F32, ATT_AS_BUMBLEBEE, 0, 1, 0, 1, 0);
    emily_dot_set_precision(saved);
}

/* The op itself, eagerly: the composed ops' bytes on f32 and bf16 rows,
 * and its errors. */
TEST(softmax_op) {
    static const int64_t shape[3] = {3, 5, 70};
    emily_tensor *x = random_tensor(EMILY_BF16, 3, shape, -10, 20), *y = NULL;
    CHECK_OK(emily_softmax(x, &y));
    CHECK(emily_tensor_dtype(y) == EMILY_BF16 && t_shape_is(y, 3, shape));
    for (int64_t r = 0; r < 15; r++) {
        double s = 0;
        for (int64_t j = 0; j < 70; j++) s += t_get(y, r * 70 + j);
        CHECK(fabs(s - 1) < 0.05);
    }
    emily_tensor *i = t_iota(EMILY_S32, 1, (int64_t[]){4}), *sc = SCALAR(EMILY_F32, float, 1), *bad = NULL;
    CHECK_ERR(emily_softmax(i, &bad), EMILY_ERR_TYPE, "real float");
    CHECK_ERR(emily_softmax(sc, &bad), EMILY_ERR_SHAPE, "rank 1");
    CHECK_ERR(emily_softmax(NULL, &bad), EMILY_ERR_ARGUMENT, "softmax");
    static const int64_t empty[2] = {0, 4};
    emily_tensor *e = t_from(EMILY_F32, 2, empty, NULL), *ey = NULL;
    CHECK_OK(emily_softmax(e, &ey));
    CHECK(t_shape_is(ey, 2, empty));
    RELEASE(x, y, i, sc, e, ey);
}

RUN_TESTS("graph_patterns", CASE(layer_norm_substituted), CASE(layer_norm_near_misses_kept), CASE(rms_norm_substituted),
          CASE(rms_norm_near_misses_kept), CASE(softmax_substituted), CASE(softmax_near_misses_kept),
          CASE(softmax_edge_values), CASE(switches), CASE(saved_after_substitution), CASE(softmax_op),
          CASE(attention_substituted), CASE(attention_near_misses_kept))
