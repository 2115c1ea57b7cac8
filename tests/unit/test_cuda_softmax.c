/* The CUDA engine's fused softmax (src/cuda/fast_softmax.cu) against the
 * same device's composed calls (reduce_max, subtract, exp, sum, divide,
 * multiply: what the graph pattern replaces), and engine graphs on the
 * device with the pattern substituted against the same graphs without.
 *
 * Tolerance: f16, bf16 and f32 none (every step is the composed calls'
 * element rule, the device's exp kernel included; only the row sum's
 * order differs, and a double sum of these rows rounds to the same value
 * in either order); f64 sums in f64 in another order: 1e-15 relative. The
 * CPU's kernel uses the CPU's exp (SIMD, within 1 ulp of the device's),
 * so against the CPU a few ulp (4 of the type). GPU cases only: without a
 * CUDA device the binary says SKIPPED. */
#include <math.h>
#include "cuda_compare.h"

static const emily_dtype floats[4] = {EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64};

/* The composed softmax over the last axis with the typed API, as Axon's
 * expression runs eagerly on x's device. */
static emily_status composed(const emily_tensor *x, emily_tensor **out) {
    int rank = emily_tensor_rank(x), axis = rank - 1;
    emily_dtype t = emily_tensor_dtype(x);
    emily_tensor *m = NULL, *d = NULL, *e = NULL, *s = NULL, *one = NULL, *one_d = NULL, *r = NULL;
    emily_status st = emily_reduce(EMILY_REDUCE_MAX, x, 1, &axis, true, t, &m);
    if (!st) st = emily_binary(EMILY_SUBTRACT, x, m, t, &d);
    if (!st) st = emily_unary(EMILY_EXP, d, &e);
    if (!st) st = emily_reduce(EMILY_REDUCE_SUM, e, 1, &axis, true, t, &s);
    if (!st) st = emily_from_binary(EMILY_CPU, EMILY_S32, 0, NULL, (int32_t[]){1}, 4, &one);
    if (!st) st = emily_to_device(one, emily_tensor_device(x), &one_d);
    if (!st) st = emily_binary(EMILY_DIVIDE, one_d, s, t, &r);
    if (!st) st = emily_binary(EMILY_MULTIPLY, r, e, t, out);
    emily_tensor *all[7] = {m, d, e, s, one, one_d, r};
    for (int i = 0; i < 7; i++) emily_tensor_release(all[i]);
    return st;
}

/* Whether a and b (same type and shape, on the CPU) agree: bytes (NaN
 * matches NaN) when ulps is 0, else within ulps of the type (f64: as a
 * relative 1e-15). */
/* t's elements as doubles (malloc'd; t_get would read the tensor back
 * once per element). */
static double *as_doubles(const emily_tensor *t) {
    int64_t n = emily_tensor_size(t);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    emily_tensor *w = NULL;
    CHECK_OK(emily_as_type(t, EMILY_F64, &w));
    CHECK_OK(emily_to_binary(w, v, sizeof(double) * (size_t)n));
    emily_tensor_release(w);
    return v;
}

static bool agree(const char *what, const emily_tensor *a, const emily_tensor *b, int ulps) {
    if (ulps == 0) return tc_same(what, a, b);
    emily_dtype t = emily_tensor_dtype(a);
    double unit = t == EMILY_F64 ? 1e-15 : t == EMILY_F32 ? 0x1p-23 : t == EMILY_F16 ? 0x1p-10 : 0x1p-7;
    double *xs = as_doubles(a), *ys = as_doubles(b);
    bool ok = true;
    for (int64_t i = 0; ok && i < emily_tensor_size(a); i++) {
        double x = xs[i], y = ys[i];
        if (isnan(x) && isnan(y)) continue;
        if (!(fabs(x - y) <= ulps * unit * fmax(fabs(y), 0x1p-20))) {
            fprintf(stderr, "  %s: element %lld: %.17g against %.17g\n", what, (long long)i, x, y);
            ok = false;
        }
    }
    free(xs);
    free(ys);
    return ok;
}

static emily_tensor *on_cpu(emily_tensor *t) {
    emily_tensor *c = NULL;
    CHECK_OK(emily_to_device(t, EMILY_CPU, &c));
    emily_tensor_release(t);
    return c;
}

static void softmax_case(const char *label, emily_dtype t, int rank, const int64_t *shape, int kind) {
    emily_tensor *x = tc_tensor(t, rank, shape, kind), *xd = NULL, *fused = NULL, *comp = NULL, *cpu = NULL;
    CHECK_OK(emily_to_device(x, tc_device, &xd));
    CHECK_OK(emily_softmax(xd, &fused));
    CHECK_OK(composed(xd, &comp));
    CHECK_OK(emily_softmax(x, &cpu));
    char what[160];
    snprintf(what, sizeof what, "softmax %s %s", emily_dtype_name(t), label);
    fused = on_cpu(fused);
    comp = on_cpu(comp);
    CHECK(agree(what, fused, comp, t == EMILY_F64 ? 1 : 0));
    CHECK(agree(what, fused, cpu, 4));
    RELEASE(x, xd, fused, comp, cpu);
}

/* Rows shorter and longer than a warp, more rows than the grid has warps,
 * edge values (NaN, infinities) and empty tensors, every float type. */
TEST(gpu_softmax_against_composed) {
    static const int64_t one[2] = {17, 1}, warp[2] = {64, 32}, lng[2] = {3, 20001}, many[2] = {50000, 8},
                         attn[4] = {8, 12, 128, 128}, empty[2] = {0, 8}, empty_rows[3] = {2, 3, 0};
    for (int i = 0; i < 4; i++) {
        emily_dtype t = floats[i];
        softmax_case("[17,1]", t, 2, one, TC_GENERAL);
        softmax_case("[64,32]", t, 2, warp, TC_GENERAL);
        softmax_case("[3,20001]", t, 2, lng, TC_GENERAL);
        softmax_case("[50000,8]", t, 2, many, TC_GENERAL);
        softmax_case("[8,12,128,128]", t, 4, attn, TC_GENERAL);
        softmax_case("[64,32] ties", t, 2, warp, TC_TIES);
        softmax_case("[0,8]", t, 2, empty, TC_GENERAL);
        /* rows of length 0 (reduce_max refuses them, as Nx does): empty */
        emily_tensor *x = tc_tensor(t, 3, empty_rows, TC_GENERAL), *xd = NULL, *y = NULL;
        CHECK_OK(emily_to_device(x, tc_device, &xd));
        CHECK_OK(emily_softmax(xd, &y));
        CHECK(t_shape_is(y, 3, empty_rows) && emily_tensor_dtype(y) == t);
        RELEASE(x, xd, y);
    }
}

/* A graph of Axon's softmax compiled for the device: substituted (the
 * stats say so) and equal to the same graph with no_patterns. */
TEST(gpu_softmax_pattern_in_a_graph) {
    static const int64_t shape[2] = {300, 77}, stat[2] = {300, 1};
    for (int i = 0; i < 4; i++) {
        emily_dtype t = floats[i];
        emily_tensor *x = tc_tensor(t, 2, shape, TC_GENERAL), *xd = NULL, *res[2] = {NULL, NULL};
        CHECK_OK(emily_to_device(x, tc_device, &xd));
        for (int off = 0; off < 2; off++) {
            emily_graph *g = NULL;
            int32_t p;
            CHECK_OK(emily_graph_create(&g));
            CHECK_OK(emily_graph_add_param(g, t, 2, shape, &p));
            const char *keys[2] = {"axes", "keep_axes"};
            emily_value ax = v_int(1), items[2] = {v_list(&ax, 1), v_bool(true)};
            emily_value full = v_tmpl(t, 2, shape), st = v_tmpl(t, 2, stat);
            emily_tensor *one = SCALAR(EMILY_S32, int32_t, 1);
            int32_t m = GRAPH_CALL(g, "reduce_max", &st, v_ref(p), v_opts(keys, items, 2));
            int32_t d = GRAPH_CALL(g, "subtract", &full, v_ref(p), v_ref(m));
            int32_t e = GRAPH_CALL(g, "exp", &full, v_ref(d));
            int32_t s = GRAPH_CALL(g, "sum", &st, v_ref(e), v_opts(keys, items, 2));
            int32_t r = GRAPH_CALL(g, "divide", &st, v_tensor(one), v_ref(s));
            int32_t y = GRAPH_CALL(g, "multiply", &full, v_ref(r), v_ref(e));
            emily_tensor_release(one);
            CHECK_OK(emily_graph_set_outputs(g, 1, &y));
            emily_graph_options o = {.no_patterns = off};
            CHECK_OK(emily_graph_compile(g, tc_device, &o));
            emily_graph_stats gs;
            CHECK_OK(emily_graph_get_stats(g, &gs));
            CHECK(gs.pattern_softmax == (off ? 0 : 1));
            for (int run = 0; run < 3; run++) { /* the second and third replay */
                emily_tensor_release(res[off]);
                res[off] = NULL;
                CHECK_OK(emily_graph_run(g, &xd, 1, &res[off], 1));
            }
            res[off] = on_cpu(res[off]);
            emily_graph_free(g);
        }
        char what[80];
        snprintf(what, sizeof what, "graph softmax %s", emily_dtype_name(t));
        CHECK(agree(what, res[0], res[1], t == EMILY_F64 ? 1 : 0));
        RELEASE(x, xd, res[0], res[1]);
    }
}

TC_MAIN("cuda_softmax", CASE(gpu_softmax_against_composed), CASE(gpu_softmax_pattern_in_a_graph))
