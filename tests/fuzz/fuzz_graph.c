/* libFuzzer target: engine graph files (emily_graph_load_buffer, the
 * format of src/graph/serialize.c), then compiling and running what
 * loads.
 *
 * An input is a graph file. Loading must either succeed or fail with a
 * message and no graph. A graph that loads is compiled twice, optimized
 * (folding, dead calls, rewrites, fusion) and as built (no_optimize), and
 * both are run on the same parameters (their bytes cycled from the
 * input). Where both runs succeed their outputs must agree: the
 * optimizer promises the bits of running the calls one by one
 * (include/emily/graph.h), so a difference is a bug; NaNs compare equal
 * to NaNs whatever their sign and payload. One side may fail where the
 * other succeeds (a dropped call that would fail, a call folded at
 * compile time). No tensor may stay alive after an input.
 *
 * Limits (the harness's, as in fuzz_common.h): the parameters, the
 * constants and every call's outputs within GRAPH_MAX_ELEMENTS in all,
 * no window op or FFT (their work is bounded by integers, not elements), integer arguments outside the slow middle range,
 * and while loops capped at WHILE_LIMIT iterations (emi_graph_while_limit).
 *
 * Seeds: with EMILY_FUZZ_GRAPH_SEEDS=DIR and EMILY_FUZZ_JSON_SEEDS=DIR2 in
 * the environment, LLVMFuzzerInitialize writes into DIR one graph per
 * corpus line of DIR2 (the call with its tensor arguments as parameters)
 * and a few graphs of several calls (a fused chain, a loop, a
 * conditional), and with EMILY_FUZZ_GRAPH_DICT=FILE a dictionary of
 * the callback names; scripts/fuzz does that before the first run. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_common.h"
#include "graph/graph_impl.h"
#include "json_values.h"

#define WHILE_LIMIT 64
/* Elements of a whole graph (parameters, constants, every call's
 * outputs): a graph runs twice per input and may hold many calls, so
 * its cap is below the one-call FUZZ_MAX_ELEMENTS (an fft2 of 2^20
 * elements took 19 s here under ASan). */
#define GRAPH_MAX_ELEMENTS ((int64_t)1 << 12)
/* Window ops do output x window volume work: the window's dimensions are
 * integers, not tensors, so the element cap does not bound them (a
 * window_sum over a huge window hung a CI run at 2^16 elements). */
/* Graphs holding a window op are loaded and compiled but not run: their
 * work grows with window sizes, paddings and dilations, which are
 * integers the element cap does not bound (one hung a 60 s CI run inside
 * window_sum); fuzz_dispatch runs window ops under its own limits. */
static bool is_window_call(const graph_call *c) {
    /* FFTs likewise: their lengths are integer options (an ifft2 timed out) */
    return strncmp(c->callback, "window_", 7) == 0 || strstr(c->callback, "fft") != NULL;
}
#define MAX_OUTPUTS 64

/* ---- limits ------------------------------------------------------------- */

static bool graph_ok(const emily_graph *g, int depth, int64_t *total) {
    if (depth > GRAPH_MAX_NESTING) return false;
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        int64_t n = v->kind == GV_CONST   ? emily_tensor_size(v->tensor)
                    : v->kind == GV_PARAM ? fuzz_shape_elements(v->rank, v->shape)
                                          : 0;
        *total += n;
        if (*total > GRAPH_MAX_ELEMENTS) return false;
    }
    for (int32_t i = 0; i < g->ncalls; i++) {
        const graph_call *c = &g->calls[i];
        if (c->cond && (!graph_ok(c->cond, depth + 1, total) || !graph_ok(c->body, depth + 1, total))) return false;
        for (int b = 0; c->branches && b <= c->nclauses; b++)
            if (!graph_ok(c->branches[b], depth + 1, total)) return false;
        if (!c->cond && !c->branches && !fuzz_call_ok(&c->out, c->args, c->nargs)) return false;
        if (is_window_call(c)) return false;
        for (int k = 0; k < emi_graph_template_count(&c->out); k++) {
            const emily_value *o = emi_graph_template_at(&c->out, k);
            *total += o ? fuzz_shape_elements(o->rank, o->shape) : 0;
            if (*total > GRAPH_MAX_ELEMENTS) return false;
        }
    }
    return true;
}

/* ---- comparing outputs -------------------------------------------------- */

static bool same_values(const emily_tensor *a, const emily_tensor *b) {
    emily_dtype dt = emily_tensor_dtype(a);
    /* Nx's binary form (sub-byte types packed), what emily_to_binary writes */
    size_t nb = emily_dtype_binary_size(dt, emily_tensor_size(a));
    if (dt != emily_tensor_dtype(b) || emily_tensor_size(a) != emily_tensor_size(b) ||
        emily_tensor_rank(a) != emily_tensor_rank(b))
        return false;
    for (int i = 0; i < emily_tensor_rank(a); i++)
        if (emily_tensor_shape(a)[i] != emily_tensor_shape(b)[i]) return false;
    unsigned char *x = malloc(nb + 1), *y = malloc(nb + 1);
    bool same = true;
    if (x && y && !emily_to_binary(a, x, nb) && !emily_to_binary(b, y, nb) && memcmp(x, y, nb) != 0) {
        same = false;
        if (!emily_dtype_is_integer(dt)) {
            /* differing bytes may still be NaNs of other signs/payloads:
             * compare as doubles (complex as pairs), exactly otherwise */
            emily_dtype wide = emily_dtype_is_complex(dt) ? EMILY_C128 : EMILY_F64;
            emily_tensor *wa = NULL, *wb = NULL;
            if (!emily_as_type(a, wide, &wa) && !emily_as_type(b, wide, &wb)) {
                size_t wn = emily_tensor_nbytes(wa);
                double *p = malloc(wn + 8), *q = malloc(wn + 8);
                if (p && q && !emily_to_binary(wa, p, wn) && !emily_to_binary(wb, q, wn)) {
                    same = true;
                    for (size_t k = 0; same && k < wn / sizeof(double); k++)
                        same = (isnan(p[k]) && isnan(q[k])) || memcmp(&p[k], &q[k], sizeof(double)) == 0;
                } else {
                    same = true; /* out of memory: nothing to compare */
                }
                free(p);
                free(q);
            } else {
                same = true;
            }
            emily_tensor_release(wa);
            emily_tensor_release(wb);
        }
    }
    free(x);
    free(y);
    return same;
}

/* ---- one input ---------------------------------------------------------- */

static emily_tensor *make_param(const emily_graph *g, size_t i, const uint8_t *data, size_t size) {
    emily_dtype dt;
    int rank;
    const int64_t *shape;
    if (emily_graph_param_spec(g, i, &dt, &rank, &shape)) return NULL;
    size_t nb = (size_t)fuzz_shape_elements(rank, shape) * emily_dtype_size(dt);
    unsigned char *bytes = malloc(nb + 1);
    if (!bytes) return NULL;
    for (size_t k = 0; k < nb; k++) bytes[k] = size ? data[(k * 7 + i) % size] : (unsigned char)k;
    emily_tensor *t = NULL;
    if (emily_from_binary(EMILY_CPU, dt, rank, shape, bytes, nb, &t)) t = NULL;
    free(bytes);
    return t;
}

static void release_all(emily_tensor **ts, size_t n) {
    for (size_t i = 0; i < n; i++) emily_tensor_release(ts[i]);
}

static void run_input(const uint8_t *data, size_t size) {
    emily_graph *opt = NULL, *plain = NULL;
    if (emily_graph_load_buffer(data, size, &opt) != EMILY_OK) {
        if (opt || !emily_last_error()[0]) abort(); /* fails with a message and nothing else */
        return;
    }
    int64_t total = 0;
    size_t np = emily_graph_num_params(opt), no = emily_graph_num_outputs(opt);
    if (!graph_ok(opt, 0, &total) || no > MAX_OUTPUTS || emily_graph_load_buffer(data, size, &plain)) {
        emily_graph_free(opt);
        return;
    }
    emily_tensor **params = calloc(np + 1, sizeof *params);
    emily_tensor *a[MAX_OUTPUTS] = {0}, *b[MAX_OUTPUTS] = {0};
    bool have_params = params != NULL;
    for (size_t i = 0; have_params && i < np; i++) have_params = (params[i] = make_param(opt, i, data, size));
    emily_graph_options plain_opts = {.no_optimize = 1};
    if (have_params && !emily_graph_compile(opt, EMILY_CPU, NULL) &&
        !emily_graph_compile(plain, EMILY_CPU, &plain_opts)) {
        emily_status sa = emily_graph_run(opt, params, np, a, no);
        emily_status sb = emily_graph_run(plain, params, np, b, no);
        if ((sa && !emily_last_error()[0]) || (sb && !emily_last_error()[0])) abort();
        for (size_t k = 0; !sa && !sb && k < no; k++)
            if (!same_values(a[k], b[k])) {
                fprintf(stderr, "fuzz_graph: output %zu differs between the optimized and the plain run\n", k);
                abort();
            }
        if (!sa) release_all(a, no);
        if (!sb) release_all(b, no);
    }
    if (params) release_all(params, np);
    free(params);
    emily_graph_free(opt);
    emily_graph_free(plain);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t tensors = emily_live_tensors(), buffers = emily_live_buffers();
    run_input(data, size);
    fuzz_check_live(tensors, buffers, "fuzz_graph");
    return 0;
}

/* ---- seeds -------------------------------------------------------------- */

static void save(emily_graph *g, const char *dir, const char *name) {
    void *bytes = NULL;
    size_t n = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (emily_graph_save_buffer(g, &bytes, &n) == EMILY_OK) {
        FILE *f = fopen(path, "wb");
        if (f) {
            fwrite(bytes, 1, n, f);
            fclose(f);
        }
        free(bytes);
    }
}

/* One corpus line as a graph: its top-level tensor arguments become
 * parameters. */
static void seed_from_line(const char *dir, const char *name, const char *text, size_t len) {
    json_error_t jerr;
    json_t *line = json_loadb(text, len, 0, &jerr);
    if (!line) return;
    const char *op = json_string_value(json_object_get(line, "op"));
    jv_tree out = {0}, args = {0};
    char msg[512];
    emily_graph *g = NULL;
    if (op && jv_decode(&out, json_object_get(line, "out"), EMILY_CPU, true, msg, sizeof msg) == 0 &&
        jv_decode(&args, json_object_get(line, "args"), EMILY_CPU, false, msg, sizeof msg) == 0 &&
        args.root->kind == EMILY_V_LIST && emily_graph_create(&g) == EMILY_OK) {
        bool ok = true;
        for (size_t i = 0; ok && i < args.root->n; i++) {
            emily_value *v = &args.root->items[i];
            if (v->kind != EMILY_V_TENSOR || !v->tensor) continue;
            int32_t id;
            const emily_tensor *t = v->tensor;
            ok = emily_graph_add_param(g, emily_tensor_dtype(t), emily_tensor_rank(t), emily_tensor_shape(t), &id) ==
                 EMILY_OK;
            *v = (emily_value){.kind = EMILY_V_REF, .i = id};
        }
        int32_t first;
        int nout = emi_graph_template_count(out.root);
        int32_t outs[MAX_OUTPUTS];
        if (ok && nout > 0 && nout <= MAX_OUTPUTS &&
            emily_graph_add_call(g, op, out.root, args.root->items, args.root->n, &first) == EMILY_OK) {
            for (int k = 0; k < nout; k++) outs[k] = first + k;
            if (emily_graph_set_outputs(g, (size_t)nout, outs) == EMILY_OK) save(g, dir, name);
        }
    }
    emily_graph_free(g);
    jv_free(&out);
    jv_free(&args);
    json_decref(line);
}

static emily_value tmpl(emily_dtype dt, int rank, const int64_t *shape) {
    return (emily_value){.kind = EMILY_V_TEMPLATE, .dtype = dt, .rank = rank, .shape = shape};
}
static emily_value ref(int32_t id) { return (emily_value){.kind = EMILY_V_REF, .i = id}; }

/* exp(x + y) * x, summed over the last axis: a fused chain and a
 * reduction. */
static void seed_chain(const char *dir) {
    static const int64_t s23[2] = {2, 3}, s2[1] = {2};
    emily_graph *g = NULL;
    if (emily_graph_create(&g)) return;
    int32_t x, y, s, e, p, r;
    emily_value o = tmpl(EMILY_F32, 2, s23), o2 = tmpl(EMILY_F32, 1, s2);
    emily_value axes_items[1] = {{.kind = EMILY_V_INT, .i = 1}};
    emily_value keys[2] = {{.kind = EMILY_V_LIST, .items = axes_items, .n = 1}, {.kind = EMILY_V_BOOL, .b = false}};
    const char *names[2] = {"axes", "keep_axes"};
    emily_value opts = {.kind = EMILY_V_OPTS, .items = keys, .keys = names, .n = 2};
    bool ok = !emily_graph_add_param(g, EMILY_F32, 2, s23, &x) && !emily_graph_add_param(g, EMILY_F32, 2, s23, &y) &&
              !emily_graph_add_call(g, "add", &o, (emily_value[]){ref(x), ref(y)}, 2, &s) &&
              !emily_graph_add_call(g, "exp", &o, (emily_value[]){ref(s)}, 1, &e) &&
              !emily_graph_add_call(g, "multiply", &o, (emily_value[]){ref(e), ref(x)}, 2, &p) &&
              !emily_graph_add_call(g, "sum", &o2, (emily_value[]){ref(p), opts}, 2, &r) &&
              !emily_graph_set_outputs(g, 2, (int32_t[]){r, p});
    if (ok) save(g, dir, "graph-chain");
    emily_graph_free(g);
}

/* while i < 5: i = i + 1, with a second state value doubled each time;
 * then a cond on the result. */
static void seed_loop(const char *dir) {
    emily_graph *g = NULL, *cond = NULL, *body = NULL, *then_g = NULL, *else_g = NULL;
    if (emily_graph_create(&g) || emily_graph_create(&cond) || emily_graph_create(&body) ||
        emily_graph_create(&then_g) || emily_graph_create(&else_g)) {
        emily_graph_free(g);
        emily_graph_free(cond);
        emily_graph_free(body);
        emily_graph_free(then_g);
        emily_graph_free(else_g);
        return;
    }
    static const int64_t s3[1] = {3};
    emily_value si = tmpl(EMILY_S32, 0, NULL), sf = tmpl(EMILY_F32, 1, s3), su = tmpl(EMILY_U8, 0, NULL);
    int32_t ci, cf, lt, bi, bf, ni, nf;
    /* scalar operands are tensors, as Nx hands them to a backend (the
     * graphs retain them as constants) */
    emily_tensor *five = NULL, *one = NULL;
    if (emily_constant(EMILY_CPU, EMILY_S32, 0, NULL, emily_scalar_int(5), &five) ||
        emily_constant(EMILY_CPU, EMILY_S32, 0, NULL, emily_scalar_int(1), &one))
        five = one = NULL;
    emily_value five_v = {.kind = EMILY_V_TENSOR, .tensor = five}, one_v = {.kind = EMILY_V_TENSOR, .tensor = one};
    bool ok = five && one && !emily_graph_add_param(cond, EMILY_S32, 0, NULL, &ci) &&
              !emily_graph_add_param(cond, EMILY_F32, 1, s3, &cf) &&
              !emily_graph_add_call(cond, "less", &su, (emily_value[]){ref(ci), five_v}, 2, &lt) &&
              !emily_graph_set_outputs(cond, 1, &lt) && !emily_graph_add_param(body, EMILY_S32, 0, NULL, &bi) &&
              !emily_graph_add_param(body, EMILY_F32, 1, s3, &bf) &&
              !emily_graph_add_call(body, "add", &si, (emily_value[]){ref(bi), one_v}, 2, &ni) &&
              !emily_graph_add_call(body, "add", &sf, (emily_value[]){ref(bf), ref(bf)}, 2, &nf) &&
              !emily_graph_set_outputs(body, 2, (int32_t[]){ni, nf});
    int32_t i0, f0, loop, pred, then_x, else_x, then_r, else_r, picked;
    ok = ok && !emily_graph_add_param(g, EMILY_S32, 0, NULL, &i0) && !emily_graph_add_param(g, EMILY_F32, 1, s3, &f0);
    if (!ok) {
        emily_graph_free(cond);
        emily_graph_free(body);
    } else {
        ok = !emily_graph_add_while(g, cond, body, 2, (int32_t[]){i0, f0}, &loop);
    }
    ok = ok && !emily_graph_add_call(g, "greater", &su, (emily_value[]){ref(loop), five_v}, 2, &pred) &&
         !emily_graph_add_param(then_g, EMILY_F32, 1, s3, &then_x) &&
         !emily_graph_add_call(then_g, "negate", &sf, (emily_value[]){ref(then_x)}, 1, &then_r) &&
         !emily_graph_set_outputs(then_g, 1, &then_r) && !emily_graph_add_param(else_g, EMILY_F32, 1, s3, &else_x) &&
         !emily_graph_add_call(else_g, "exp", &sf, (emily_value[]){ref(else_x)}, 1, &else_r) &&
         !emily_graph_set_outputs(else_g, 1, &else_r);
    if (ok) {
        emily_graph *branches[2] = {then_g, else_g};
        then_g = else_g = NULL; /* the graph takes them */
        ok = !emily_graph_add_cond(g, 1, &pred, branches, (size_t[]){1, 1}, (int32_t[]){loop + 1, loop + 1}, &picked) &&
             !emily_graph_set_outputs(g, 2, (int32_t[]){loop, picked});
    }
    if (ok) save(g, dir, "graph-loop");
    emily_tensor_release(five);
    emily_tensor_release(one);
    emily_graph_free(then_g);
    emily_graph_free(else_g);
    emily_graph_free(g);
}

/* A libFuzzer dictionary of the callback names as the format writes them
 * (u16 length, then the name) and the record tags. */
static void write_dict(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    for (const char *const *name = emily_dispatch_callbacks(); *name; name++) {
        size_t n = strlen(*name);
        fprintf(f, "\"\\x%02x\\x%02x%s\"\n", (unsigned)(n & 0xff), (unsigned)(n >> 8), *name);
    }
    fputs("\"EMGRAPH\\x00\\x01\\x00\\x00\\x00\"\n\"P\"\n\"C\"\n\"N\"\n\"W\"\n\"I\"\n\"O\"\n", f);
    fclose(f);
}

static void write_seeds(const char *dir, const char *json_dir) {
    DIR *d = opendir(json_dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4096], name[4096];
        snprintf(path, sizeof path, "%s/%s", json_dir, e->d_name);
        snprintf(name, sizeof name, "call-%s", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        seed_from_line(dir, name, buf, n);
    }
    if (d) closedir(d);
    seed_chain(dir);
    seed_loop(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_single_thread();
    emi_graph_while_limit = WHILE_LIMIT;
    const char *dir = getenv("EMILY_FUZZ_GRAPH_SEEDS"), *json_dir = getenv("EMILY_FUZZ_JSON_SEEDS");
    const char *dict = getenv("EMILY_FUZZ_GRAPH_DICT");
    if (dir && json_dir) write_seeds(dir, json_dir);
    if (dict) write_dict(dict);
    return 0;
}
