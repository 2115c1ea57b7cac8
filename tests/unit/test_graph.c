/* Engine graphs (emily/graph.h): building, compiling, running, saving
 * and loading, and the errors for bad graphs. */
#include <stdlib.h>
#include "harness.h"

static const int64_t S3[1] = {3};

static emily_value v_ref(int32_t id) { return (emily_value){.kind = EMILY_V_REF, .i = id}; }
static emily_value v_tmpl(emily_dtype dt, int rank, const int64_t *shape) {
    return (emily_value){.kind = EMILY_V_TEMPLATE, .dtype = dt, .rank = rank, .shape = shape};
}
static emily_value v_int(int64_t i) { return (emily_value){.kind = EMILY_V_INT, .i = i}; }
static emily_value v_list(emily_value *items, size_t n) {
    return (emily_value){.kind = EMILY_V_LIST, .items = items, .n = n};
}

/* exp(x + y) * x, with an unused call and a constant-only call. */
static emily_graph *small_graph(int32_t *unused_id) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    if (!g) return NULL;
    int32_t x, y, s, e, p, u;
    emily_value out = v_tmpl(EMILY_F32, 1, S3);
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x));
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &y));
    emily_value a2[2] = {v_ref(x), v_ref(y)};
    CHECK_OK(emily_graph_add_call(g, "add", &out, a2, 2, &s));
    emily_value a1[1] = {v_ref(s)};
    CHECK_OK(emily_graph_add_call(g, "exp", &out, a1, 1, &e));
    emily_value m2[2] = {v_ref(e), v_ref(x)};
    CHECK_OK(emily_graph_add_call(g, "multiply", &out, m2, 2, &p));
    CHECK_OK(emily_graph_add_call(g, "negate", &out, a1, 1, &u)); /* nobody uses it */
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
        emily_tensor *tmp[5] = {tx, ty, ts, te, tp};
        for (int k = 0; k < 5; k++) emily_tensor_release(tmp[k]);
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
        CHECK(st.dropped == (opt ? 0 : 1) && st.steps == (opt ? 4 : 3));
        /* add's and exp's results are freed after their last use: at most
         * two 12-byte intermediates exist at once */
        CHECK(st.peak_bytes > 0 && st.peak_bytes <= 24 + (opt ? 12 : 0));
        emily_graph_free(g);
    }
    emily_tensor_release(tx);
    emily_tensor_release(ty);
}

TEST(constants_fold_and_outputs_may_repeat) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    float c[3] = {1, 2, 3};
    emily_tensor *tc = t_from(EMILY_F32, 1, S3, c);
    int32_t k, io, sum, x, r;
    CHECK_OK(emily_graph_add_const(g, tc, &k));
    emily_tensor_release(tc); /* the graph holds it */
    emily_value out = v_tmpl(EMILY_F32, 1, S3);
    emily_value iota_args[2] = {{.kind = EMILY_V_NIL}, v_list(NULL, 0)};
    CHECK_OK(emily_graph_add_call(g, "iota", &out, iota_args, 2, &io));
    emily_value a2[2] = {v_ref(k), v_ref(io)};
    CHECK_OK(emily_graph_add_call(g, "add", &out, a2, 2, &sum)); /* [1, 3, 5], folded */
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x));
    emily_value b2[2] = {v_ref(sum), v_ref(x)};
    CHECK_OK(emily_graph_add_call(g, "subtract", &out, b2, 2, &r));
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
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    int64_t s23[2] = {2, 3}, s21[2] = {2, 1};
    int32_t x, tk;
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, s23, &x));
    emily_value outs[2] = {v_tmpl(EMILY_F32, 2, s21), v_tmpl(EMILY_S32, 2, s21)};
    emily_value out = v_list(outs, 2);
    const char *keys[1] = {"k"};
    emily_value one = v_int(1);
    emily_value opts = {.kind = EMILY_V_OPTS, .items = &one, .keys = keys, .n = 1};
    emily_value args[2] = {v_ref(x), opts};
    CHECK_OK(emily_graph_add_call(g, "top_k", &out, args, 2, &tk));
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
    CHECK_ERR(emily_graph_add_call(g, "no_such_op", &out, a1, 1, &y), EMILY_ERR_UNSUPPORTED, "unknown callback no_such_op");
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
    emily_tensor_release(t3);
    emily_tensor_release(t4);
    emily_tensor_release(ts);
    emily_graph_free(g);
    emily_graph_free(NULL);
}

TEST(a_failing_call_reports_and_leaks_nothing) {
    /* the template says f32[2] where add of f32[3] gives f32[3]: the run
     * fails naming the callback, the intermediates are freed */
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    int32_t x, e, bad;
    emily_value out = v_tmpl(EMILY_F32, 1, S3), wrong = v_tmpl(EMILY_F32, 1, (int64_t[]){2});
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 1, S3, &x));
    emily_value a1[1] = {v_ref(x)};
    CHECK_OK(emily_graph_add_call(g, "exp", &out, a1, 1, &e));
    emily_value a2[2] = {v_ref(e), v_ref(e)};
    CHECK_OK(emily_graph_add_call(g, "add", &wrong, a2, 2, &bad));
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

RUN_TESTS("graph", CASE(runs_like_the_calls_one_by_one), CASE(constants_fold_and_outputs_may_repeat),
          CASE(multi_output_calls), CASE(bad_graphs_fail_clearly), CASE(a_failing_call_reports_and_leaks_nothing),
          CASE(save_and_load_round_trip))
