/* Pattern fusion in engine graphs (src/graph/patterns.c): graphs holding
 * the composed layer norm (Axon), rms norm (Bumblebee) and softmax (Axon)
 * exactly as Emily.Compiler records them get the fused call, with results
 * within the bound docs/graph.md states of the same graph compiled with
 * no_patterns; near misses keep their calls; the switches turn it off. */
#include <math.h>
#include <stdlib.h>
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

static int32_t reduce_rows(emily_graph *g, const char *name, int32_t x, emily_dtype dt, int rank,
                           const int64_t *shape, int axis) {
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
    LN_AS_AXON,          /* Axon.Layers.layer_norm as recorded */
    LN_SCALE_IS_OUTPUT,  /* gamma * r is also a graph output */
    LN_CENTRED_READ_TWICE, /* x - mean read by another call too */
    LN_OTHER_AXIS,       /* the statistics over axis 0 */
    LN_OTHER_EPS,        /* the select compares with another eps than the add */
    LN_EPS_UNDER_RSQRT,  /* rsqrt(var) + eps instead of rsqrt(var + eps) */
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
    RMS_AS_BUMBLEBEE,    /* upcast :normalization, as recorded */
    RMS_UPCAST_READ_TWICE, /* the f32 upcast of x also an output */
    RMS_MEAN_OVER_AXIS0, /* the mean over another axis */
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
    SM_AS_AXON,          /* Axon.Activations.softmax, axis -1 */
    SM_EXP_READ_TWICE,   /* the exponentials also an output */
    SM_OVER_AXIS0,       /* over another axis */
    SM_DIVIDED,          /* exp / sum instead of (1 / sum) * exp */
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
    struct { emily_dtype x, w; double tol; } cases[] = {{EMILY_F32, EMILY_F32, 4 * 0x1p-24},
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
    emily_tensor *xs = random_tensor(EMILY_F32, 2, sq, -3, 8), *ws = random_tensor(EMILY_F32, 1, &n, -2, 4), *out = NULL;
    emily_graph_stats st;
    run_graph(rms_norm_graph(EMILY_F32, EMILY_F32, sq, RMS_MEAN_OVER_AXIS0, 1e-6), false,
              (emily_tensor *[]){xs, ws}, 2, &out, 1, &st);
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
    float xs[20] = {1, 2, NAN, 3, 4, /* a NaN: the row is NaN */
                    1, INFINITY, 2, 3, 4, /* +inf: NaN (inf - inf) */
                    -INFINITY, 0, 1, -INFINITY, 2, /* -inf: 0 */
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
TEST(switches) {
    cur_dt = EMILY_F32;
    emily_tensor *x = random_tensor(cur_dt, 2, SHAPE, -20, 30), *out = NULL;
    emily_graph_stats s;
    run_graph(make_sm(SM_AS_AXON), true, &x, 1, &out, 1, &s);
    CHECK(s.patterns == 0);
    emily_tensor_release(out);
    setenv("EMILY_GRAPH_PATTERNS", "0", 1);
    run_graph(make_sm(SM_AS_AXON), false, &x, 1, &out, 1, &s);
    CHECK(s.patterns == 0);
    emily_tensor_release(out);
    setenv("EMILY_GRAPH_PATTERNS", "layer_norm,rms_norm", 1);
    run_graph(make_sm(SM_AS_AXON), false, &x, 1, &out, 1, &s);
    CHECK(s.patterns == 0);
    emily_tensor_release(out);
    setenv("EMILY_GRAPH_PATTERNS", "rms_norm,softmax", 1);
    run_graph(make_sm(SM_AS_AXON), false, &x, 1, &out, 1, &s);
    CHECK(s.patterns == 1);
    emily_tensor_release(out);
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

RUN_TESTS("graph_patterns", CASE(layer_norm_substituted), CASE(layer_norm_near_misses_kept),
          CASE(rms_norm_substituted), CASE(rms_norm_near_misses_kept), CASE(softmax_substituted),
          CASE(softmax_near_misses_kept), CASE(softmax_edge_values), CASE(switches), CASE(saved_after_substitution),
          CASE(softmax_op))
