/* Replays of compiled graphs on CUDA (src/graph/replay.c with the CUDA
 * engine's recordings, src/cuda/replay.c): the second run of a graph
 * records its calls as a CUDA graph and later runs replay it. Every run
 * must give the bits of the same graph run call by call (no_replay), with
 * new parameters or the same ones again; outputs handed out earlier must
 * keep their values while later runs replay; an index out of range found
 * by a replay must fail as the calls fail, and the graph must work again
 * afterwards; a graph whose run reads a value back (a slice at a tensor
 * offset) cannot be recorded and keeps running call by call. GPU cases
 * only: without a CUDA device the binary says SKIPPED. */
#include "cuda_compare.h"

enum { ROWS = 64, INNER = 128, COLS = 32, PICK = 16 };

static const int64_t XS[2] = {ROWS, INNER}, WS[2] = {INNER, COLS}, YS[2] = {ROWS, COLS}, IS[1] = {PICK},
                     PS[2] = {PICK, COLS}, SS[1] = {PICK};

/* Parameters x, w, b, idx; outputs: take(tanh(dot(x, w) + b), idx, 0),
 * its sum over axis 1, and w itself (a parameter as an output). */
static emily_graph *model_graph(int no_replay) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    if (!g) return NULL;
    int32_t x, w, b, idx;
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, XS, &x));
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, WS, &w));
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, YS, &b));
    CHECK_OK(emily_graph_add_param(g, EMILY_S64, 1, IS, &idx));
    emily_value y = v_tmpl(EMILY_F32, 2, YS), picked = v_tmpl(EMILY_F32, 2, PS), sums = v_tmpl(EMILY_F32, 1, SS);
    emily_value one = v_int(1), zero = v_int(0);
    int32_t d = GRAPH_CALL(g, "dot", &y, v_ref(x), v_list(&one, 1), v_list(NULL, 0), v_ref(w), v_list(&zero, 1),
                           v_list(NULL, 0));
    int32_t a = GRAPH_CALL(g, "add", &y, v_ref(d), v_ref(b));
    int32_t t = GRAPH_CALL(g, "tanh", &y, v_ref(a));
    int32_t p = GRAPH_CALL(g, "take", &picked, v_ref(t), v_ref(idx), v_int(0));
    const char *keys[1] = {"axes"};
    emily_value axes[1] = {v_list(&one, 1)};
    int32_t s = GRAPH_CALL(g, "sum", &sums, v_ref(p), v_opts(keys, axes, 1));
    int32_t outs[3] = {p, s, w};
    CHECK_OK(emily_graph_set_outputs(g, 3, outs));
    emily_graph_options o = {.no_replay = no_replay};
    CHECK_OK(emily_graph_compile(g, tc_device, &o));
    return g;
}

/* Indices PICK of them, each (seed * 7 + i * 5) % ROWS, or one out of
 * range at position 3 (bad). */
static emily_tensor *indices(int seed, bool bad) {
    int64_t v[PICK];
    for (int i = 0; i < PICK; i++) v[i] = (seed * 7 + i * 5) % ROWS;
    if (bad) v[3] = ROWS;
    return tc_on_device(t_from(EMILY_S64, 1, IS, v));
}

typedef struct params {
    emily_tensor *t[4];
} params;

static params new_params(int seed) {
    params p;
    p.t[0] = tc_on_device(tc_tensor(EMILY_F32, 2, XS, TC_NEAR_ONE));
    p.t[1] = tc_on_device(tc_tensor(EMILY_F32, 2, WS, TC_GENERAL));
    p.t[2] = tc_on_device(tc_tensor(EMILY_F32, 2, YS, TC_GENERAL));
    p.t[3] = indices(seed, false);
    return p;
}

static void free_params(params *p) {
    for (int i = 0; i < 4; i++) emily_tensor_release(p->t[i]);
}

static void release_all(emily_tensor **ts, int n) {
    for (int i = 0; i < n; i++) emily_tensor_release(ts[i]);
}

/* Runs g and the call-by-call graph h on p: same bits, w handed back as
 * given. Keeps g's outputs in keep (NULL: releases them). */
static void run_both(emily_graph *g, emily_graph *h, const params *p, emily_tensor **keep) {
    emily_tensor *a[3] = {NULL}, *b[3] = {NULL};
    CHECK_OK(emily_graph_run(g, p->t, 4, a, 3));
    CHECK_OK(emily_graph_run(h, p->t, 4, b, 3));
    CHECK(t_same_bytes(a[0], b[0]));
    CHECK(t_same_bytes(a[1], b[1]));
    CHECK(a[2] == p->t[1] && b[2] == p->t[1]);
    if (keep) {
        for (int i = 0; i < 3; i++) keep[i] = a[i];
    } else {
        release_all(a, 3);
    }
    release_all(b, 3);
}

static bool on_cuda(void) { return tc_device.type == EMILY_DEVICE_CUDA; }

TEST(gpu_replays_give_the_calls_bits) {
    emily_graph *g = model_graph(0), *h = model_graph(1);
    params pa = new_params(1), pb = new_params(2);
    emily_tensor *first[3] = {NULL};
    run_both(g, h, &pa, first); /* runs the calls */
    run_both(g, h, &pa, NULL);  /* records, then replays */
    run_both(g, h, &pb, NULL);  /* every parameter new */
    run_both(g, h, &pa, NULL);
    run_both(g, h, &pb, NULL);
    run_both(g, h, &pb, NULL); /* the same tensors again: nothing copied in */
    emily_graph_stats st, sh;
    CHECK_OK(emily_graph_get_stats(g, &st));
    CHECK_OK(emily_graph_get_stats(h, &sh));
    if (on_cuda()) CHECK(st.replays == 5 && st.replay_bytes > 0);
    CHECK(sh.replays == 0 && sh.replay_bytes == 0);
    /* the first run's outputs are untouched by the replays since */
    emily_tensor *again[3] = {NULL};
    CHECK_OK(emily_graph_run(h, pa.t, 4, again, 3));
    CHECK(t_same_bytes(first[0], again[0]) && t_same_bytes(first[1], again[1]));
    release_all(first, 3);
    release_all(again, 3);
    free_params(&pa);
    free_params(&pb);
    emily_graph_free(g);
    emily_graph_free(h);
}

TEST(gpu_replay_index_out_of_range_fails_like_the_calls) {
    emily_graph *g = model_graph(0), *h = model_graph(1);
    params p = new_params(3);
    run_both(g, h, &p, NULL);
    run_both(g, h, &p, NULL); /* recorded */
    emily_tensor *good = p.t[3];
    p.t[3] = indices(3, true);
    emily_tensor *a[3] = {NULL}, *b[3] = {NULL};
    emily_status sg = emily_graph_run(g, p.t, 4, a, 3);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", emily_last_error());
    emily_status sh = emily_graph_run(h, p.t, 4, b, 3);
    CHECK(sg == EMILY_ERR_INDEX && sh == EMILY_ERR_INDEX);
    CHECK(strcmp(msg, emily_last_error()) == 0);
    CHECK(a[0] == NULL && b[0] == NULL);
    emily_tensor_release(p.t[3]);
    p.t[3] = good;
    run_both(g, h, &p, NULL); /* replays again */
    emily_graph_stats st;
    CHECK_OK(emily_graph_get_stats(g, &st));
    if (on_cuda()) CHECK(st.replays == 2); /* runs 2 and 4 (run 3's check failed: the calls ran it) */
    free_params(&p);
    emily_graph_free(g);
    emily_graph_free(h);
}

/* x[i : i + 2, :] with i a parameter: the slice reads i back, which a
 * recording cannot do, so every run runs the calls. */
TEST(gpu_graphs_that_read_back_run_the_calls) {
    emily_graph *g = NULL;
    CHECK_OK(emily_graph_create(&g));
    if (!g) return;
    int32_t x, i;
    CHECK_OK(emily_graph_add_param(g, EMILY_F32, 2, YS, &x));
    CHECK_OK(emily_graph_add_param(g, EMILY_S64, 0, NULL, &i));
    static const int64_t two[2] = {2, COLS};
    emily_value out = v_tmpl(EMILY_F32, 2, two);
    emily_value starts[2] = {v_ref(i), v_int(0)}, lengths[2] = {v_int(2), v_int(COLS)},
                strides[2] = {v_int(1), v_int(1)};
    int32_t sl = GRAPH_CALL(g, "slice", &out, v_ref(x), v_list(starts, 2), v_list(lengths, 2), v_list(strides, 2));
    int32_t e = GRAPH_CALL(g, "exp", &out, v_ref(sl));
    CHECK_OK(emily_graph_set_outputs(g, 1, &e));
    CHECK_OK(emily_graph_compile(g, tc_device, NULL));
    emily_tensor *xt = tc_on_device(tc_tensor(EMILY_F32, 2, YS, TC_GENERAL));
    for (int run = 0; run < 4; run++) {
        emily_tensor *it = tc_on_device(SCALAR(EMILY_S64, int64_t, run * 3));
        emily_tensor *in[2] = {xt, it}, *r = NULL, *want = NULL, *part = NULL;
        CHECK_OK(emily_graph_run(g, in, 2, &r, 1));
        CHECK_OK(emily_slice(xt, (int64_t[]){run * 3, 0}, two, (int64_t[]){1, 1}, &part));
        CHECK_OK(emily_unary(EMILY_EXP, part, &want));
        CHECK(t_same_bytes(r, want));
        emily_tensor_release(r);
        emily_tensor_release(want);
        emily_tensor_release(part);
        emily_tensor_release(it);
    }
    emily_graph_stats st;
    CHECK_OK(emily_graph_get_stats(g, &st));
    CHECK(st.replays == 0);
    emily_tensor_release(xt);
    emily_graph_free(g);
}

TC_MAIN("cuda_graph", CASE(gpu_replays_give_the_calls_bits), CASE(gpu_replay_index_out_of_range_fails_like_the_calls),
        CASE(gpu_graphs_that_read_back_run_the_calls))
