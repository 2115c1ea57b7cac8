/* Engine graphs (emily/graph.h): building, compiling, running, saving
 * and loading, and the errors for bad graphs. */
#include <stdlib.h>
#include "harness.h"
#include "ops/dot_fp8.h"

static const int64_t S3[1] = {3};

/* Deterministic pseudo-random values in [-2, 2). */
static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double rnd(void) { return (double)(xorshift64(&rng_state) >> 11) * 0x1p-53 * 4 - 2; }

/* A tensor of type dt and shape S holding rnd() * scale values. */
static emily_tensor *random_input(emily_dtype dt, int rank, const int64_t *S, double scale) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= S[i];
    double *xs = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) xs[i] = rnd() * scale;
    emily_tensor *x64 = t_from(EMILY_F64, rank, S, xs), *x = NULL;
    CHECK_OK(emily_as_type(x64, dt, &x));
    emily_tensor_release(x64);
    free(xs);
    return x;
}

/* A new, empty graph (NULL, a failed check, when it cannot be made). */
static emily_graph *new_graph(void) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    return g;
}

/* A new graph with one parameter of type dt and shape S (its id in *p). */
static emily_graph *graph_with_param(emily_dtype dt, int rank, const int64_t *S, int32_t *p) {
    emily_graph *g = new_graph();
    CHECK_OK(emily_graph_add_param(g, dt, rank, S, p));
    return g;
}

/* Compiles g, optimized (opt) or not, reads its statistics into *st and
 * runs it on nin inputs into nout outputs; frees g. */
static void compile_and_run(emily_graph *g, int opt, emily_tensor **in, size_t nin, emily_tensor **out, size_t nout,
                            emily_graph_stats *st) {
    emily_graph_options go = {.no_optimize = !opt};
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, &go));
    CHECK_OK(emily_graph_get_stats(g, st));
    CHECK_OK(emily_graph_run(g, in, nin, out, nout));
    emily_graph_free(g);
}

/* The optimized and unoptimized runs' results have the same bytes;
 * releases both. */
static void check_same_results(emily_tensor **res) {
    CHECK(res[0] && res[1] && t_same_bytes(res[0], res[1]));
    emily_tensor_release(res[0]);
    emily_tensor_release(res[1]);
}

/* The options of a reduction over one axis, {axes: [axis]} and, with
 * keep, keep_axes: true; the struct holds what the value points to. */
typedef struct axis_opts {
    const char *keys[2];
    emily_value axis, items[2];
} axis_opts;
static emily_value reduce_axis_opts(axis_opts *o, int64_t axis, bool keep) {
    o->keys[0] = "axes";
    o->keys[1] = "keep_axes";
    o->axis = v_int(axis);
    o->items[0] = v_list(&o->axis, 1);
    o->items[1] = (emily_value){.kind = EMILY_V_BOOL, .b = true};
    return v_opts(o->keys, o->items, keep ? 2 : 1);
}

/* A compiled graph checked, then saved, loaded, compiled and checked
 * again; every truncation of its file fails cleanly. Frees g. */
static void check_round_trip(emily_graph *g, void (*check)(emily_graph *)) {
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, NULL));
    check(g);
    void *bytes = NULL;
    size_t size = 0;
    CHECK_OK(emily_graph_save_buffer(g, &bytes, &size));
    emily_graph_free(g);
    emily_graph *h = NULL;
    CHECK_OK(emily_graph_load_buffer(bytes, size, &h));
    CHECK_OK(emily_graph_compile(h, EMILY_CPU, NULL));
    check(h);
    emily_graph_free(h);
    for (size_t n = 0; n < size; n++) {
        h = NULL;
        CHECK(emily_graph_load_buffer(bytes, n, &h) == EMILY_ERR_ARGUMENT && h == NULL);
    }
    free(bytes);
}

/* exp(x + y) * x, with an unused call and a constant-only call. */
static emily_graph *small_graph(int32_t *unused_id) {
    emily_graph *g = new_graph();
    if (!g) return NULL;
    int32_t x, y, s, e, p, u;
    emily_value out = v_tmpl(EMILY_F32, 1, S3);
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x));
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &y));
    s = GRAPH_CALL(g, "add", &out, v_ref(x), v_ref(y));
    e = GRAPH_CALL(g, "exp", &out, v_ref(s));
    p = GRAPH_CALL(g, "multiply", &out, v_ref(e), v_ref(x));
    u = GRAPH_CALL(g, "negate", &out, v_ref(s)); /* nobody uses it */
    if (unused_id) *unused_id = u;
    CHECK_OK(emily_graph_set_outputs(g, 1, &p));
    return g;
}

static void check_small_result(const emily_tensor *r, const float *x, const float *y) {
    CHECK(r && emily_tensor_dtype(r) == EMILY_F32 && t_shape_is(r, 1, S3));
    for (int i = 0; r && i < 3; i++) {
        /* the same ops one by one: exactly these bits */
        float want = expf(x[i] + y[i]) * x[i];
        emily_tensor *tx = t_from(EMILY_F32, 1, (int64_t[]){1}, &x[i]);
        emily_tensor *ty = t_from(EMILY_F32, 1, (int64_t[]){1}, &y[i]);
        emily_tensor *ts = NULL, *te = NULL, *tp = NULL;
        CHECK_OK(emily_binary(EMILY_ADD, tx, ty, EMILY_DTYPE_AUTO, &ts));
        CHECK_OK(emily_unary(EMILY_EXP, ts, &te));
        CHECK_OK(emily_binary(EMILY_MULTIPLY, te, tx, EMILY_DTYPE_AUTO, &tp));
        CHECK(tp && t_get(r, i) == t_get(tp, 0));
        CHECK(fabsf((float)t_get(r, i) - want) <= 1e-5f * fabsf(want));
        RELEASE(tx, ty, ts, te, tp);
    }
}

TEST(runs_like_the_calls_one_by_one) {
    float x[3] = {0.5f, -1, 2}, y[3] = {1, 0.25f, -3};
    emily_tensor *tx = t_from(EMILY_F32, 1, S3, x), *ty = t_from(EMILY_F32, 1, S3, y);
    for (int opt = 0; opt < 2; opt++) {
        emily_graph *g = small_graph(NULL);
        emily_graph_options o = {.no_optimize = opt};
        CHECK_OK(emily_graph_compile(g, EMILY_CPU, &o));
        emily_tensor *r = NULL;
        for (int run = 0; run < 3; run++) { /* runs repeat */
            CHECK_OK(emily_graph_run(g, (emily_tensor *[]){tx, ty}, 2, &r, 1));
            check_small_result(r, x, y);
            emily_tensor_release(r);
            r = NULL;
        }
        emily_graph_stats st;
        CHECK_OK(emily_graph_get_stats(g, &st));
        CHECK(st.params == 2 && st.calls == 4 && st.outputs == 1);
        /* optimized: negate dropped, add -> exp -> multiply one fused
         * step; unoptimized: four steps, each result freed after its
         * last use (at most three 12-byte tensors at once) */
        CHECK(st.dropped == (opt ? 0 : 1) && st.steps == (opt ? 4 : 1));
        CHECK(st.fused_calls == (opt ? 0 : 3) && st.fused_groups == (opt ? 0 : 1));
        CHECK(st.peak_bytes > 0 && st.peak_bytes <= 36);
        emily_graph_free(g);
    }
    emily_tensor_release(tx);
    emily_tensor_release(ty);
}

TEST(constants_fold_and_outputs_may_repeat) {
    emily_graph *g = new_graph();
    float c[3] = {1, 2, 3};
    emily_tensor *tc = t_from(EMILY_F32, 1, S3, c);
    int32_t k, io, sum, x, r;
    CHECK_OK(emily_graph_add_const(g, tc, &k));
    emily_tensor_release(tc); /* the graph holds it */
    emily_value out = v_tmpl(EMILY_F32, 1, S3);
    emily_value iota_args[2] = {{.kind = EMILY_V_NIL}, v_list(NULL, 0)};
    CHECK_OK(emily_graph_add_call(g, "iota", &out, iota_args, 2, &io));
    sum = GRAPH_CALL(g, "add", &out, v_ref(k), v_ref(io)); /* [1, 3, 5], folded */
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x));
    r = GRAPH_CALL(g, "subtract", &out, v_ref(sum), v_ref(x));
    int32_t outs[3] = {r, sum, r};
    CHECK_OK(emily_graph_set_outputs(g, 3, outs));
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, NULL));
    emily_graph_stats st;
    CHECK_OK(emily_graph_get_stats(g, &st));
    CHECK(st.folded == 2 && st.steps == 1);
    float xv[3] = {1, 1, 1};
    emily_tensor *tx = t_from(EMILY_F32, 1, S3, xv), *res[3] = {0};
    CHECK_OK(emily_graph_run(g, &tx, 1, res, 3));
    CHECK(res[0] && res[1] && res[0] == res[2]);
    if (res[0] && res[1])
        for (int i = 0; i < 3; i++) {
            CHECK(t_get(res[1], i) == 1 + 2 * i);
            CHECK(t_get(res[0], i) == 2 * i);
        }
    for (int i = 0; i < 3; i++) emily_tensor_release(res[i]);
    emily_tensor_release(tx);
    emily_graph_free(g);
}

TEST(multi_output_calls) {
    /* top_k's two outputs, the indices only used */
    emily_graph *g = new_graph();
    int64_t s23[2] = {2, 3}, s21[2] = {2, 1};
    int32_t x, tk;
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, s23, &x));
    emily_value outs[2] = {v_tmpl(EMILY_F32, 2, s21), v_tmpl(EMILY_S32, 2, s21)};
    emily_value out = v_list(outs, 2);
    const char *keys[1] = {"k"};
    emily_value one = v_int(1);
    emily_value opts = {.kind = EMILY_V_OPTS, .items = &one, .keys = keys, .n = 1};
    tk = GRAPH_CALL(g, "top_k", &out, v_ref(x), opts);
    int32_t idx = tk + 1;
    CHECK_OK(emily_graph_set_outputs(g, 1, &idx));
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, NULL));
    float xv[6] = {1, 5, 2, 9, 0, 3};
    emily_tensor *tx = t_from(EMILY_F32, 2, s23, xv), *r = NULL;
    CHECK_OK(emily_graph_run(g, &tx, 1, &r, 1));
    CHECK(r && emily_tensor_dtype(r) == EMILY_S32 && t_get(r, 0) == 1 && t_get(r, 1) == 0);
    emily_tensor_release(r);
    emily_tensor_release(tx);
    emily_graph_free(g);
}

TEST(bad_graphs_fail_clearly) {
    emily_graph *g = NULL;
    int32_t x, y;
    emily_value out = v_tmpl(EMILY_F32, 1, S3);
    CHECK_ERR(emily_graph_create(NULL), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_graph_add_param(NULL, EMILY_F32, 1, S3, &x), EMILY_ERR_ARGUMENT, "NULL graph");
    CHECK_OK(emily_graph_create(&g));
    CHECK_ERR(emily_graph_add_param(g, (emily_dtype)99, 1, S3, &x), EMILY_ERR_TYPE, "unknown type");
    CHECK_ERR(emily_graph_add_param(g, EMILY_F32, -1, S3, &x), EMILY_ERR_SHAPE, "rank");
    CHECK_ERR(emily_graph_add_param(g, EMILY_F32, 1, (int64_t[]){-2}, &x), EMILY_ERR_SHAPE, "negative");
    CHECK_ERR(emily_graph_add_param(g, EMILY_F32, 1, NULL, &x), EMILY_ERR_ARGUMENT, "NULL shape");
    CHECK_ERR(emily_graph_add_const(g, NULL, &x), EMILY_ERR_ARGUMENT, "tensor");
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x));
    emily_value a1[1] = {v_ref(x)};
    CHECK_ERR(emily_graph_add_call(g, "no_such_op", &out, a1, 1, &y), EMILY_ERR_UNSUPPORTED,
              "unknown callback no_such_op");
    CHECK_ERR(emily_graph_add_call(g, NULL, &out, a1, 1, &y), EMILY_ERR_ARGUMENT, "NULL callback");
    CHECK_ERR(emily_graph_add_call(g, "exp", NULL, a1, 1, &y), EMILY_ERR_ARGUMENT, "NULL output template");
    emily_value not_tmpl = v_int(3);
    CHECK_ERR(emily_graph_add_call(g, "exp", &not_tmpl, a1, 1, &y), EMILY_ERR_ARGUMENT, "must be a template");
    /* a value that is not defined yet (a cycle, or a later call) */
    emily_value fwd[1] = {v_ref(7)};
    CHECK_ERR(emily_graph_add_call(g, "exp", &out, fwd, 1, &y), EMILY_ERR_ARGUMENT, "value 7 is not defined before");
    emily_value neg[1] = {v_ref(-1)};
    CHECK_ERR(emily_graph_add_call(g, "exp", &out, neg, 1, &y), EMILY_ERR_ARGUMENT, "not defined");
    CHECK_ERR(emily_graph_compile(g, EMILY_CPU, NULL), EMILY_ERR_ARGUMENT, "no outputs");
    CHECK_ERR(emily_graph_set_outputs(g, 1, (int32_t[]){5}), EMILY_ERR_ARGUMENT, "value 5, which does not exist");
    CHECK_OK(emily_graph_add_call(g, "exp", &out, a1, 1, &y));
    CHECK_OK(emily_graph_set_outputs(g, 1, &y));
    emily_tensor *r = NULL;
    CHECK_ERR(emily_graph_run(g, NULL, 0, &r, 1), EMILY_ERR_ARGUMENT, "not compiled");
    CHECK_ERR(emily_graph_compile(g, (emily_device){EMILY_DEVICE_CUDA, 77}, NULL), EMILY_ERR_DEVICE, "");
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, NULL));
    CHECK_ERR(emily_graph_compile(g, EMILY_CPU, NULL), EMILY_ERR_ARGUMENT, "already compiled");
    CHECK_ERR(emily_graph_add_param(g, EMILY_F32, 1, S3, &x), EMILY_ERR_ARGUMENT, "can no longer change");
    float v3[3] = {0}, v4[4] = {0};
    emily_tensor *t3 = t_from(EMILY_F32, 1, S3, v3), *t4 = t_from(EMILY_F32, 1, (int64_t[]){4}, v4);
    emily_tensor *ts = t_from(EMILY_S32, 1, S3, v3);
    CHECK_ERR(emily_graph_run(g, NULL, 0, &r, 1), EMILY_ERR_ARGUMENT, "0 parameters given, the graph has 1");
    CHECK_ERR(emily_graph_run(g, &t3, 1, &r, 2), EMILY_ERR_ARGUMENT, "room for 2 outputs");
    CHECK_ERR(emily_graph_run(g, &t4, 1, &r, 1), EMILY_ERR_SHAPE, "parameter 0 is f32{4}, the graph expects f32{3}");
    CHECK_ERR(emily_graph_run(g, &ts, 1, &r, 1), EMILY_ERR_SHAPE, "parameter 0 is s32{3}");
    CHECK_ERR(emily_graph_run(g, (emily_tensor *[]){NULL}, 1, &r, 1), EMILY_ERR_ARGUMENT, "parameter");
    CHECK(r == NULL);
    RELEASE(t3, t4, ts);
    emily_graph_free(g);
    emily_graph_free(NULL);
}

TEST(a_failing_call_reports_and_leaks_nothing) {
    /* the template says f32[2] where add of f32[3] gives f32[3]: the run
     * fails naming the callback, the intermediates are freed */
    emily_graph *g = new_graph();
    int32_t x, e, bad;
    emily_value out = v_tmpl(EMILY_F32, 1, S3), wrong = v_tmpl(EMILY_F32, 1, (int64_t[]){2});
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x));
    e = GRAPH_CALL(g, "exp", &out, v_ref(x));
    bad = GRAPH_CALL(g, "add", &wrong, v_ref(e), v_ref(e));
    CHECK_OK(emily_graph_set_outputs(g, 1, &bad));
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, NULL));
    float v3[3] = {0};
    emily_tensor *t3 = t_from(EMILY_F32, 1, S3, v3), *r = NULL;
    CHECK_ERR(emily_graph_run(g, &t3, 1, &r, 1), EMILY_ERR_INTERNAL, "add: output 0 is f32{3} but Nx expects f32{2}");
    CHECK(r == NULL);
    emily_tensor_release(t3);
    emily_graph_free(g);
}

TEST(save_and_load_round_trip) {
    float x[3] = {0.5f, -1, 2}, y[3] = {1, 0.25f, -3};
    emily_tensor *tx = t_from(EMILY_F32, 1, S3, x), *ty = t_from(EMILY_F32, 1, S3, y);
    emily_graph *g = small_graph(NULL);
    /* a constant too */
    void *bytes = NULL;
    size_t size = 0;
    CHECK_OK(emily_graph_compile(g, EMILY_CPU, NULL));
    CHECK_OK(emily_graph_save_buffer(g, &bytes, &size));
    emily_graph_free(g);
    emily_graph *h = NULL;
    CHECK_OK(emily_graph_load_buffer(bytes, size, &h));
    CHECK(emily_graph_num_params(h) == 2 && emily_graph_num_outputs(h) == 1);
    emily_dtype dt;
    int rank;
    const int64_t *shape;
    CHECK_OK(emily_graph_param_spec(h, 1, &dt, &rank, &shape));
    CHECK(dt == EMILY_F32 && rank == 1 && shape[0] == 3);
    CHECK_ERR(emily_graph_param_spec(h, 2, &dt, &rank, &shape), EMILY_ERR_ARGUMENT, "parameter 2 of 2");
    CHECK_OK(emily_graph_compile(h, EMILY_CPU, NULL));
    emily_tensor *r = NULL;
    CHECK_OK(emily_graph_run(h, (emily_tensor *[]){tx, ty}, 2, &r, 1));
    check_small_result(r, x, y);
    emily_tensor_release(r);
    emily_graph_free(h);

    /* through a file */
    const char *path = "build-test-graph.emg";
    g = small_graph(NULL);
    CHECK_OK(emily_graph_save(g, path));
    emily_graph_free(g);
    CHECK_OK(emily_graph_load(path, &h));
    emily_graph_free(h);
    remove(path);
    CHECK_ERR(emily_graph_load("/nonexistent/graph.emg", &h), EMILY_ERR_ARGUMENT, "cannot open");

    /* every truncation fails cleanly; every one-byte corruption either
     * fails or loads a graph that compiles or fails cleanly */
    unsigned char *b = bytes;
    for (size_t n = 0; n < size; n++) {
        h = (emily_graph *)1;
        CHECK(emily_graph_load_buffer(b, n, &h) == EMILY_ERR_ARGUMENT);
        CHECK(h == NULL);
    }
    unsigned char *copy = malloc(size);
    for (size_t i = 0; copy && i < size; i++) {
        static const unsigned char flips[3] = {0xff, 0x01, 0x80};
        for (int f = 0; f < 3; f++) {
            memcpy(copy, b, size);
            copy[i] ^= flips[f];
            h = NULL;
            if (emily_graph_load_buffer(copy, size, &h) == EMILY_OK) {
                if (emily_graph_compile(h, EMILY_CPU, NULL) == EMILY_OK && emily_graph_num_params(h) == 2) {
                    emily_tensor *rr = NULL;
                    emily_status st = emily_graph_run(h, (emily_tensor *[]){tx, ty}, 2, &rr, 1);
                    if (st == EMILY_OK) emily_tensor_release(rr);
                }
                emily_graph_free(h);
            }
        }
    }
    free(copy);
    CHECK_ERR(emily_graph_load_buffer("EMGRAPH\0\2\0\0\0", 12, &h), EMILY_ERR_ARGUMENT, "format version 2");
    CHECK_ERR(emily_graph_load_buffer("NOTAGRAPH...", 12, &h), EMILY_ERR_ARGUMENT, "not an Emily graph");
    free(bytes);
    emily_tensor_release(tx);
    emily_tensor_release(ty);
}

/* pow(x, 2) becomes x * x for f32/f16/bf16 only, with the same bits as
 * the pow callback for every kind of value. */
TEST(pow_two_is_rewritten_with_the_same_bits) {
    static const emily_dtype types[4] = {EMILY_F32, EMILY_F16, EMILY_BF16, EMILY_F64};
    double xs[10] = {1.5, -0.0, 0.0, NAN, INFINITY, -INFINITY, 3.0e38, 1.0e-30, -7.25e-3, 65519.0};
    int64_t s10[1] = {10};
    for (int ti = 0; ti < 4; ti++) {
        emily_dtype dt = types[ti];
        emily_tensor *x64 = t_from(EMILY_F64, 1, s10, xs), *x = NULL, *want = NULL;
        CHECK_OK(emily_as_type(x64, dt, &x));
        double two = 2;
        emily_tensor *t2 = t_from(EMILY_F64, 0, NULL, &two);
        CHECK_OK(emily_binary(EMILY_POW, x, t2, dt, &want));
        int32_t p, c, r;
        emily_graph *g = graph_with_param(dt, 1, s10, &p);
        CHECK_OK(emily_graph_add_const(g, t2, &c));
        emily_value out = v_tmpl(dt, 1, s10);
        r = GRAPH_CALL(g, "pow", &out, v_ref(p), v_ref(c));
        CHECK_OK(emily_graph_set_outputs(g, 1, &r));
        CHECK_OK(emily_graph_compile(g, EMILY_CPU, NULL));
        emily_graph_stats st;
        CHECK_OK(emily_graph_get_stats(g, &st));
        CHECK(st.rewritten == (dt == EMILY_F64 ? 0 : 1));
        emily_tensor *got = NULL;
        CHECK_OK(emily_graph_run(g, &x, 1, &got, 1));
        CHECK(got && want && t_same_bytes(got, want));
        RELEASE(x64, x, want, t2, got);
        emily_graph_free(g);
    }
}

/* A random elementwise program over broadcasting inputs: fused (slabs,
 * threads) and unfused runs give identical bytes, for shapes whose slab
 * axis is first, inner, short or long. */
static void fused_matches_unfused(int rank, const int64_t *S, emily_dtype dt) {
    /* inputs: x of shape S, a row vector of S's last dim, a column of S's
     * first dims (broadcast last dim), a scalar */
    int64_t row_shape[1] = {S[rank - 1]}, col_shape[8];
    for (int i = 0; i < rank; i++) col_shape[i] = i == rank - 1 ? 1 : S[i];
    emily_tensor *in[3];
    in[0] = random_input(dt, rank, S, 1);
    in[1] = random_input(dt, 1, row_shape, 1);
    in[2] = random_input(dt, rank, col_shape, 1);
    emily_tensor *outs[2][3] = {{0}};
    for (int opt = 0; opt < 2; opt++) {
        int32_t x, r, c, half, t1, t2, t3, t4, t5, t6, t7, t8;
        emily_graph *g = graph_with_param(dt, rank, S, &x);
        CHECK_OK(emily_graph_add_param(g, dt, 1, row_shape, &r));
        CHECK_OK(emily_graph_add_param(g, dt, rank, col_shape, &c));
        double hv = 0.5;
        emily_tensor *h64 = t_from(EMILY_F64, 0, NULL, &hv), *h = NULL;
        CHECK_OK(emily_as_type(h64, dt, &h));
        CHECK_OK(emily_graph_add_const(g, h, &half));
        emily_value o = v_tmpl(dt, rank, S), ou8 = v_tmpl(EMILY_U8, rank, S), of64 = v_tmpl(EMILY_F64, rank, S);
        t1 = GRAPH_CALL(g, "add", &o, v_ref(x), v_ref(r));          /* x + row */
        t2 = GRAPH_CALL(g, "multiply", &o, v_ref(t1), v_ref(half)); /* * 0.5 */
        t3 = GRAPH_CALL(g, "tanh", &o, v_ref(t2));
        t4 = GRAPH_CALL(g, "less", &ou8, v_ref(t3), v_ref(c)); /* tanh(..) < col */
        t5 = GRAPH_CALL(g, "select", &o, v_ref(t4), v_ref(t2), v_ref(x));
        t6 = GRAPH_CALL(g, "exp", &o, v_ref(t5));
        t7 = GRAPH_CALL(g, "as_type", &of64, v_ref(t6));
        t8 = GRAPH_CALL(g, "divide", &o, v_ref(t6), v_ref(t3));
        int32_t results[3] = {t7, t8, t3}; /* t3 also leaves the group */
        CHECK_OK(emily_graph_set_outputs(g, 3, results));
        emily_graph_stats st;
        compile_and_run(g, opt, in, 3, outs[opt], 3, &st);
        CHECK(st.fused_calls == (opt ? 8 : 0) && st.steps == (opt ? 1 : 8));
        emily_tensor_release(h64);
        emily_tensor_release(h);
    }
    for (int k = 0; k < 3; k++) {
        emily_tensor *u = outs[0][k], *f = outs[1][k];
        bool same = u && f && t_same_bytes(u, f);
        if (!same) fprintf(stderr, "  fused output %d of %s rank %d differs\n", k, emily_dtype_name(dt), rank);
        CHECK(same);
        emily_tensor_release(u);
        emily_tensor_release(f);
    }
    for (int i = 0; i < 3; i++) emily_tensor_release(in[i]);
}

TEST(fused_chains_give_the_unfused_bits) {
    static const emily_dtype types[4] = {EMILY_F32, EMILY_F64, EMILY_BF16, EMILY_F16};
    for (int ti = 0; ti < 4; ti++) {
        fused_matches_unfused(2, (int64_t[]){300, 97}, types[ti]);     /* many slabs, threads */
        fused_matches_unfused(3, (int64_t[]){1, 129, 385}, types[ti]); /* leading 1: slab axis 1 */
        fused_matches_unfused(1, (int64_t[]){70001}, types[ti]);       /* one long row */
        fused_matches_unfused(2, (int64_t[]){3, 40000}, types[ti]);    /* rows above a slab */
        fused_matches_unfused(2, (int64_t[]){1, 1}, types[ti]);
    }
}

/* u = -x joins exp(u) and cos(u) in one set; exp's value also goes to a
 * sum that runs before cos, so the set is cut there: {negate, exp} runs
 * before the sum (u and exp's value leave it), {cos, multiply} after it.
 * Results unchanged. */
TEST(groups_read_early_are_not_fused) {
    int64_t s4[1] = {4};
    float xv[4] = {0, 1, 2, 3};
    emily_tensor *tx = t_from(EMILY_F32, 1, s4, xv);
    for (int opt = 0; opt < 2; opt++) {
        int32_t x, u, v, sum, c, m;
        emily_graph *g = graph_with_param(EMILY_F32, 1, s4, &x);
        emily_value o = v_tmpl(EMILY_F32, 1, s4), o0 = v_tmpl(EMILY_F32, 0, NULL);
        u = GRAPH_CALL(g, "negate", &o, v_ref(x));
        v = GRAPH_CALL(g, "exp", &o, v_ref(u));
        axis_opts ao;
        sum = GRAPH_CALL(g, "sum", &o0, v_ref(v), reduce_axis_opts(&ao, 0, false));
        c = GRAPH_CALL(g, "cos", &o, v_ref(u));
        m = GRAPH_CALL(g, "multiply", &o, v_ref(c), v_ref(sum));
        CHECK_OK(emily_graph_set_outputs(g, 1, &m));
        emily_graph_stats st;
        emily_tensor *res = NULL;
        compile_and_run(g, opt, &tx, 1, &res, 1, &st);
        CHECK(st.steps == (opt ? 3 : 5) && st.fused_calls == (opt ? 4 : 0) && st.fused_groups == (opt ? 2 : 0));
        double total = 0;
        for (int i = 0; i < 4; i++) total += (double)expf(-xv[i]);
        for (int i = 0; res && i < 4; i++) CHECK(fabs(t_get(res, i) - cos(-xv[i]) * total) < 1e-5);
        emily_tensor_release(res);
    }
    emily_tensor_release(tx);
}

/* Several groups separated by reductions (a layer norm's shape, three
 * times): each group runs with its own calls, fused and unfused runs give
 * the same bytes. (A compile that rebuilt groups from steps it was
 * compacting mixed up the calls of later groups.) */
TEST(many_groups_between_reductions) {
    int64_t S[2] = {64, 48}, R[2] = {64, 1};
    emily_tensor *x = random_input(EMILY_F32, 2, S, 1), *res[2] = {0};
    int64_t fused = 0;
    for (int opt = 0; opt < 2; opt++) {
        int32_t cur, t1, t2, t3, t4, t5;
        emily_graph *g = graph_with_param(EMILY_F32, 2, S, &cur);
        emily_value o = v_tmpl(EMILY_F32, 2, S), orr = v_tmpl(EMILY_F32, 2, R);
        axis_opts ao;
        emily_value opts = reduce_axis_opts(&ao, 1, true);
        for (int layer = 0; layer < 3; layer++) {
            t1 = GRAPH_CALL(g, "sin", &o, v_ref(cur));
            t2 = GRAPH_CALL(g, "add", &o, v_ref(t1), v_ref(cur));
            t3 = GRAPH_CALL(g, "sum", &orr, v_ref(t2), opts);
            t4 = GRAPH_CALL(g, "subtract", &o, v_ref(t2), v_ref(t3));
            t5 = GRAPH_CALL(g, "tanh", &o, v_ref(t4));
            cur = t5;
        }
        CHECK_OK(emily_graph_set_outputs(g, 1, &cur));
        emily_graph_stats st;
        compile_and_run(g, opt, &x, 1, &res[opt], 1, &st);
        fused = st.fused_calls;
    }
    /* per layer: sin+add (add's value also goes to the sum) and
     * subtract+tanh+next sin+add chains */
    CHECK(fused >= 6);
    check_same_results(res);
    emily_tensor_release(x);
}

/* while {i, x}: i < 5: {i + 1, x * 2} */
static emily_graph *loop_graph(bool bad_body) {
    emily_value si = v_tmpl(EMILY_S32, 0, NULL), x3 = v_tmpl(EMILY_F32, 1, S3), u8 = v_tmpl(EMILY_U8, 0, NULL);
    emily_graph *cond = new_graph(), *body = new_graph(), *g = new_graph();
    int32_t ci, cx, five, lt, bi, bx, one, two, ni, nx, i0, x0, first;
    int32_t five_v = 5, one_v = 1;
    float two_v = 2;
    CHECK_OK(emily_graph_add_param(cond, EMILY_S32, 0, NULL, &ci));
    CHECK_OK(emily_graph_add_param(cond, EMILY_F32, 1, S3, &cx));
    emily_tensor *t5 = t_from(EMILY_S32, 0, NULL, &five_v), *t1 = t_from(EMILY_S32, 0, NULL, &one_v);
    emily_tensor *t2 = t_from(EMILY_F32, 0, NULL, &two_v);
    CHECK_OK(emily_graph_add_const(cond, t5, &five));
    lt = GRAPH_CALL(cond, "less", &u8, v_ref(ci), v_ref(five));
    CHECK_OK(emily_graph_set_outputs(cond, 1, &lt));
    CHECK_OK(emily_graph_add_param(body, EMILY_S32, 0, NULL, &bi));
    CHECK_OK(emily_graph_add_param(body, EMILY_F32, 1, S3, &bx));
    CHECK_OK(emily_graph_add_const(body, t1, &one));
    CHECK_OK(emily_graph_add_const(body, t2, &two));
    ni = GRAPH_CALL(body, "add", &si, v_ref(bi), v_ref(one));
    nx = GRAPH_CALL(body, "multiply", &x3, v_ref(bx), v_ref(two));
    int32_t bouts[2] = {ni, bad_body ? ni : nx};
    CHECK_OK(emily_graph_set_outputs(body, 2, bouts));
    CHECK_OK(emily_graph_add_param(g, EMILY_S32, 0, NULL, &i0));
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x0));
    int32_t init[2] = {i0, x0};
    emily_status st = emily_graph_add_while(g, cond, body, 2, init, &first);
    if (bad_body) {
        CHECK(st == EMILY_ERR_SHAPE && strstr(emily_last_error(), "state value 1 is f32{3}"));
        emily_graph_free(g);
        g = NULL;
    } else {
        CHECK_OK(st);
        int32_t outs[2] = {first, first + 1};
        CHECK_OK(emily_graph_set_outputs(g, 2, outs));
    }
    RELEASE(t5, t1, t2);
    return g;
}

static void check_loop(emily_graph *g) {
    int32_t i0 = 0;
    float xs[3] = {1, -0.5f, 3};
    emily_tensor *ti = t_from(EMILY_S32, 0, NULL, &i0), *tx = t_from(EMILY_F32, 1, S3, xs), *res[2] = {0};
    CHECK_OK(emily_graph_run(g, (emily_tensor *[]){ti, tx}, 2, res, 2));
    CHECK(res[0] && t_get(res[0], 0) == 5);
    for (int k = 0; res[1] && k < 3; k++) CHECK(t_get(res[1], k) == xs[k] * 32);
    /* a state that fails the condition at once comes back as it went in */
    emily_tensor_release(res[0]);
    emily_tensor_release(res[1]);
    int32_t i9 = 9;
    emily_tensor *t9 = t_from(EMILY_S32, 0, NULL, &i9);
    CHECK_OK(emily_graph_run(g, (emily_tensor *[]){t9, tx}, 2, res, 2));
    CHECK(res[0] == t9 && res[1] == tx);
    RELEASE(res[0], res[1], t9, ti, tx);
}

TEST(while_loops) {
    check_round_trip(loop_graph(false), check_loop); /* saved and loaded, loops included */
    CHECK(loop_graph(true) == NULL);
    /* bad loops: the sub-graphs are freed with the error */
    emily_graph *a = NULL, *b = NULL, *c = NULL;
    int32_t x, first;
    CHECK_OK(emily_graph_create(&a));
    CHECK_OK(emily_graph_create(&b));
    CHECK_OK(emily_graph_create(&c));
    CHECK_OK(emily_graph_add_param(c, EMILY_F32, 1, S3, &x));
    CHECK_ERR(emily_graph_add_while(c, a, b, 1, &x, &first), EMILY_ERR_ARGUMENT, "the condition takes 0 parameters");
    CHECK_OK(emily_graph_create(&a));
    CHECK_ERR(emily_graph_add_while(c, a, a, 1, &x, &first), EMILY_ERR_ARGUMENT, "three graphs");
    CHECK_ERR(emily_graph_add_while(c, c, a, 1, &x, &first), EMILY_ERR_ARGUMENT, "three graphs");
    CHECK_OK(emily_graph_create(&b));
    CHECK_ERR(emily_graph_add_while(c, a, b, 0, &x, &first), EMILY_ERR_ARGUMENT, "0 state values");
    emily_graph_free(c);
}

/* cond: k == 0 -> x * 2; k == 1 -> x + x + x; else -> -exp(x), with
 * exp(x) computed outside and captured. */
static emily_graph *cond_graph(void) {
    emily_value x3 = v_tmpl(EMILY_F32, 1, S3), u8 = v_tmpl(EMILY_U8, 0, NULL);
    emily_graph *g = NULL, *br[3] = {NULL, NULL, NULL};
    CHECK_OK(emily_graph_create(&g));
    for (int b = 0; b < 3; b++) CHECK_OK(emily_graph_create(&br[b]));
    int32_t x, k, y, zero, one, p0, p1, first, bx, t, u, r;
    int32_t z = 0, o = 1;
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x));
    CHECK_OK(emily_graph_add_param(g, EMILY_S32, 0, NULL, &k));
    emily_tensor *tz = t_from(EMILY_S32, 0, NULL, &z), *to = t_from(EMILY_S32, 0, NULL, &o);
    float two_v = 2;
    emily_tensor *t2 = t_from(EMILY_F32, 0, NULL, &two_v);
    CHECK_OK(emily_graph_add_const(g, tz, &zero));
    CHECK_OK(emily_graph_add_const(g, to, &one));
    y = GRAPH_CALL(g, "exp", &x3, v_ref(x));
    p0 = GRAPH_CALL(g, "equal", &u8, v_ref(k), v_ref(zero));
    p1 = GRAPH_CALL(g, "equal", &u8, v_ref(k), v_ref(one));
    /* branch 0: x * 2 */
    int32_t c2;
    CHECK_OK(emily_graph_add_param(br[0], EMILY_F32, 1, S3, &bx));
    CHECK_OK(emily_graph_add_const(br[0], t2, &c2));
    r = GRAPH_CALL(br[0], "multiply", &x3, v_ref(bx), v_ref(c2));
    CHECK_OK(emily_graph_set_outputs(br[0], 1, &r));
    /* branch 1: x + x + x */
    CHECK_OK(emily_graph_add_param(br[1], EMILY_F32, 1, S3, &bx));
    t = GRAPH_CALL(br[1], "add", &x3, v_ref(bx), v_ref(bx));
    u = GRAPH_CALL(br[1], "add", &x3, v_ref(t), v_ref(bx));
    CHECK_OK(emily_graph_set_outputs(br[1], 1, &u));
    /* last: -y */
    CHECK_OK(emily_graph_add_param(br[2], EMILY_F32, 1, S3, &bx));
    r = GRAPH_CALL(br[2], "negate", &x3, v_ref(bx));
    CHECK_OK(emily_graph_set_outputs(br[2], 1, &r));
    int32_t preds[2] = {p0, p1}, caps[3] = {x, x, y};
    size_t ncap[3] = {1, 1, 1};
    CHECK_OK(emily_graph_add_cond(g, 2, preds, br, ncap, caps, &first));
    CHECK_OK(emily_graph_set_outputs(g, 1, &first));
    RELEASE(tz, to, t2);
    return g;
}

static void check_cond(emily_graph *g) {
    float xs[3] = {1, -0.5f, 2};
    emily_tensor *tx = t_from(EMILY_F32, 1, S3, xs);
    for (int32_t k = 0; k < 3; k++) {
        emily_tensor *tk = t_from(EMILY_S32, 0, NULL, &k), *r = NULL;
        CHECK_OK(emily_graph_run(g, (emily_tensor *[]){tx, tk}, 2, &r, 1));
        for (int i = 0; r && i < 3; i++) {
            float want = k == 0 ? xs[i] * 2 : k == 1 ? xs[i] + xs[i] + xs[i] : -expf(xs[i]);
            CHECK(fabsf((float)t_get(r, i) - want) <= 1e-6f * fabsf(want));
        }
        emily_tensor_release(r);
        emily_tensor_release(tk);
    }
    emily_tensor_release(tx);
}

TEST(cond_picks_one_branch) {
    check_round_trip(cond_graph(), check_cond);
    /* bad conditionals */
    emily_graph *c = NULL, *br[2] = {NULL, NULL};
    int32_t x, first;
    size_t ncap[2] = {0, 0};
    CHECK_OK(emily_graph_create(&c));
    CHECK_OK(emily_graph_add_param(c, EMILY_F32, 1, S3, &x));
    CHECK_ERR(emily_graph_add_cond(c, 0, &x, br, ncap, NULL, &first), EMILY_ERR_ARGUMENT, "0 clauses");
    CHECK_OK(emily_graph_create(&br[0]));
    br[1] = br[0];
    CHECK_ERR(emily_graph_add_cond(c, 1, &x, br, ncap, NULL, &first), EMILY_ERR_ARGUMENT, "one graph");
    CHECK_OK(emily_graph_create(&br[1]));
    /* a predicate that is not a scalar: the branches are taken (freed) */
    CHECK_ERR(emily_graph_add_cond(c, 1, &x, br, ncap, NULL, &first), EMILY_ERR_ARGUMENT, "outputs");
    emily_graph_free(c);
}

/* Softmax over the last axis (reduce_max, subtract, exp, sum, divide):
 * with keep_axes reductions over trailing axes the whole softmax is one
 * group, and its bytes are the unfused ones; f32 and bf16, slabs of
 * several rows and of one. */
static void softmax_fused(emily_dtype dt, int rank, const int64_t *S) {
    int64_t R[8];
    for (int i = 0; i < rank; i++) R[i] = i == rank - 1 ? 1 : S[i];
    emily_tensor *x = random_input(dt, rank, S, 8), *res[2] = {0};
    int64_t steps[2] = {0}, fused[2] = {0};
    for (int opt = 0; opt < 2; opt++) {
        int32_t p, m, d, e, sm, r;
        emily_graph *g = graph_with_param(dt, rank, S, &p);
        emily_value o = v_tmpl(dt, rank, S), orr = v_tmpl(dt, rank, R);
        axis_opts ao;
        emily_value opts = reduce_axis_opts(&ao, rank - 1, true);
        m = GRAPH_CALL(g, "reduce_max", &orr, v_ref(p), opts);
        d = GRAPH_CALL(g, "subtract", &o, v_ref(p), v_ref(m));
        e = GRAPH_CALL(g, "exp", &o, v_ref(d));
        sm = GRAPH_CALL(g, "sum", &orr, v_ref(e), opts);
        r = GRAPH_CALL(g, "divide", &o, v_ref(e), v_ref(sm));
        CHECK_OK(emily_graph_set_outputs(g, 1, &r));
        emily_graph_stats st;
        compile_and_run(g, opt, &x, 1, &res[opt], 1, &st);
        steps[opt] = st.steps;
        fused[opt] = st.fused_calls;
    }
    CHECK(steps[0] == 5 && steps[1] == 1 && fused[1] == 5);
    check_same_results(res);
    emily_tensor_release(x);
}

/* A graph takes 8-bit float parameters (Emily.Compiler's f8 arguments)
 * and a dot of two of them takes the eager dispatch's route (the graph's
 * calls go through the same dispatcher entry): emily_dot_fp8 on an
 * engine with an FP8 GEMM (CUDA, compute capability 8.9+: one count of
 * emi_dot_fp8_counts per run), both operands widened to f32 elsewhere
 * (the CPU: no count either way). Same bytes as the eager call, for an
 * 8-bit template (Nx's merge of the two types) and an f32 one. */
TEST(fp8_dot_runs_emily_dot_fp8) {
    static const int64_t AS[2] = {4, 32}, BS[2] = {32, 8}, YS[2] = {4, 8};
    emily_tensor *a = random_input(EMILY_F8_E4M3FN, 2, AS, 1), *b = random_input(EMILY_F8_E4M3FN, 2, BS, 1);
    emily_dtype outs[2] = {EMILY_F8_E4M3FN, EMILY_F32};
    for (int i = 0; i < 2; i++) {
        emily_value y = v_tmpl(outs[i], 2, YS), one = v_int(1), zero = v_int(0);
        emily_value args[6] = {v_tensor(a), v_list(&one, 1),  v_list(NULL, 0),
                               v_tensor(b), v_list(&zero, 1), v_list(NULL, 0)};
        emily_dispatch_result eager = {0};
        long long tc0, w0, tc1, w1;
        emi_dot_fp8_counts(&tc0, &w0);
        CHECK_OK(emily_dispatch("dot", EMILY_CPU, &y, args, 6, EMILY_DISPATCH_RUN, &eager));
        emi_dot_fp8_counts(&tc1, &w1);
        long long eager_fp8 = tc1 + w1 - tc0 - w0;
        int32_t pa, pb;
        emily_graph *g = graph_with_param(EMILY_F8_E4M3FN, 2, AS, &pa);
        CHECK_OK(emily_graph_add_param(g, EMILY_F8_E4M3FN, 2, BS, &pb));
        int32_t d = GRAPH_CALL(g, "dot", &y, v_ref(pa), v_list(&one, 1), v_list(NULL, 0), v_ref(pb), v_list(&zero, 1),
                               v_list(NULL, 0));
        CHECK_OK(emily_graph_set_outputs(g, 1, &d));
        emily_tensor *r = NULL;
        emily_graph_stats st;
        emi_dot_fp8_counts(&tc0, &w0);
        compile_and_run(g, 1, (emily_tensor *[]){a, b}, 2, &r, 1, &st);
        emi_dot_fp8_counts(&tc1, &w1);
        CHECK(tc1 + w1 - tc0 - w0 == eager_fp8);
        CHECK(eager.n == 1 && r && t_same_bytes(r, eager.tensors[0]));
        CHECK(r && emily_tensor_dtype(r) == outs[i]);
        emily_tensor_release(r);
        emily_dispatch_result_release(&eager);
    }
    RELEASE(a, b);
}

TEST(softmax_is_one_group) {
    softmax_fused(EMILY_F32, 3, (int64_t[]){37, 5, 300});
    softmax_fused(EMILY_BF16, 3, (int64_t[]){37, 5, 300});
    softmax_fused(EMILY_F32, 2, (int64_t[]){3, 70000}); /* one row a slab */
    softmax_fused(EMILY_F64, 4, (int64_t[]){1, 6, 8, 129});
}

RUN_TESTS("graph", CASE(fp8_dot_runs_emily_dot_fp8), CASE(softmax_is_one_group), CASE(cond_picks_one_branch),
          CASE(while_loops), CASE(many_groups_between_reductions), CASE(fused_chains_give_the_unfused_bits),
          CASE(groups_read_early_are_not_fused), CASE(pow_two_is_rewritten_with_the_same_bits),
          CASE(runs_like_the_calls_one_by_one), CASE(constants_fold_and_outputs_may_repeat), CASE(multi_output_calls),
          CASE(bad_graphs_fail_clearly), CASE(a_failing_call_reports_and_leaks_nothing), CASE(save_and_load_round_trip))
