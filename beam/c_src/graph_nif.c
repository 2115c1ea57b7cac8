/* Emily.Native's engine-graph functions (emily/graph.h), for
 * Emily.Compiler: a graph is a resource; Emily.Backend records calls into
 * it while Emily.Compiler traces a defn expression (tensors whose data is
 * %Emily.Backend{ref: {:graph, id}} are graph values), then it is
 * compiled once and run for every call of the function. */
#include <string.h>
#include "emily_nif.h"

ErlNifResourceType *nif_graph_rt;

typedef struct graph_res {
    emily_graph *g;
} graph_res;

static void graph_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    emily_graph_free(((graph_res *)obj)->g);
}

bool nif_graph_load(ErlNifEnv *env) {
    ErlNifResourceFlags flags = ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER;
    nif_graph_rt = enif_open_resource_type(env, NULL, "emily_graph", graph_dtor, flags, NULL);
    return nif_graph_rt != NULL;
}

static bool get_graph(ErlNifEnv *env, ERL_NIF_TERM term, emily_graph **g) {
    graph_res *r;
    if (!enif_get_resource(env, term, nif_graph_rt, (void **)&r) || !r->g) return false;
    *g = r->g;
    return true;
}

ERL_NIF_TERM nif_graph_new(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    graph_res *r = enif_alloc_resource(nif_graph_rt, sizeof *r);
    if (!r) return nif_make_error(env, "graph_new: out of memory");
    r->g = NULL;
    if (emily_graph_create(&r->g)) {
        enif_release_resource(r);
        return nif_engine_error(env, "graph_new");
    }
    ERL_NIF_TERM term = enif_make_resource(env, r);
    enif_release_resource(r);
    return enif_make_tuple2(env, nif_atom.ok, term);
}

/* graph_param(graph, type, shape) -> {:ok, id} */
ERL_NIF_TERM nif_graph_param(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_param: expected an Emily graph");
    emily_dtype dt;
    ERL_NIF_TERM result;
    if (!nif_type_arg(env, argv[1], &dt, &result)) return result;
    decoder d;
    nif_decoder_init(&d, env);
    int rank;
    int64_t *shape;
    int32_t id;
    if (nif_shape_arg(&d, argv[2], "graph_param", &rank, &shape, &result)) {
        if (emily_graph_add_param(g, dt, rank, shape, &id)) result = nif_engine_error(env, "graph_param");
        else result = enif_make_tuple2(env, nif_atom.ok, enif_make_int(env, id));
    }
    nif_decoder_free(&d);
    return result;
}

static bool same_spec(emily_dtype dt, int rank, const int64_t *shape, const emily_value *v) {
    if (dt != v->dtype || rank != v->rank) return false;
    for (int i = 0; i < rank; i++)
        if (shape[i] != v->shape[i]) return false;
    return true;
}

/* A graph value used under another shape of the same size (an
 * %Nx.Tensor{} whose struct differs from the data it holds, as reshape
 * views do in eager mode) gets a reshape call of its own. */
static emily_status fit_refs(emily_graph *g, emily_value *v) {
    if (v->kind == EMILY_V_TUPLE || v->kind == EMILY_V_LIST || v->kind == EMILY_V_OPTS) {
        for (size_t i = 0; i < v->n; i++) {
            emily_status s = fit_refs(g, &v->items[i]);
            if (s) return s;
        }
        return EMILY_OK;
    }
    if (v->kind != EMILY_V_REF || v->rank < 0) return EMILY_OK;
    emily_dtype dt;
    int rank;
    const int64_t *shape;
    emily_status s = emily_graph_value_spec(g, (int32_t)v->i, &dt, &rank, &shape);
    if (s || same_spec(dt, rank, shape, v)) return s;
    if (dt != v->dtype)
        return emily_error(EMILY_ERR_ARGUMENT, "graph value %lld is %s but its tensor struct says %s", (long long)v->i,
                           emily_dtype_name(dt), emily_dtype_name(v->dtype));
    emily_value out = {.kind = EMILY_V_TEMPLATE, .dtype = v->dtype, .rank = v->rank, .shape = v->shape};
    emily_value arg = {.kind = EMILY_V_REF, .i = v->i, .rank = -1};
    int32_t id;
    if ((s = emily_graph_add_call(g, "reshape", &out, &arg, 1, &id))) return s;
    v->i = id;
    return EMILY_OK;
}

/* graph_call(graph, callback, out, args) -> {:ok, first_id} |
 * {:error, :foreign_tensor} | {:error, message} */
ERL_NIF_TERM nif_graph_call(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_call: expected an Emily graph");
    char name[64];
    if (enif_get_atom(env, argv[1], name, sizeof name, ERL_NIF_LATIN1) <= 0)
        return nif_make_error(env, "graph_call: the callback must be an atom of at most 63 characters");
    unsigned nargs;
    if (!enif_get_list_length(env, argv[3], &nargs))
        return nif_make_error(env, "graph_call: the arguments must be a proper list");
    decoder dec, *d = &dec;
    nif_decoder_init(d, env);
    d->graph_refs = true;
    ERL_NIF_TERM result;
    emily_value out;
    emily_value *args = nif_arena_alloc(d, sizeof(emily_value) * (nargs + 1));
    if (!args || !nif_decode_template(d, argv[2], &out)) goto decode_error;
    if (!nif_decode_args(d, argv[3], nargs, args)) goto decode_error;
    if (d->foreign) {
        result = enif_make_tuple2(env, nif_atom.error, nif_atom.foreign_tensor);
        goto done;
    }
    /* tensors given as data (Nx.BinaryBackend, bytes) become constants on
     * the CPU; the graph moves its constants to its device */
    if (!nif_decoder_finish(d, EMILY_CPU)) goto decode_error;
    int32_t first;
    emily_status s = EMILY_OK;
    for (unsigned i = 0; i < nargs && !s; i++) s = fit_refs(g, &args[i]);
    if (!s) s = emily_graph_add_call(g, name, &out, args, nargs, &first);
    result = s ? nif_engine_error(env, NULL) : enif_make_tuple2(env, nif_atom.ok, enif_make_int(env, first));
    goto done;
decode_error:
    result = nif_decode_error(env, d, name, "arguments");
done:
    nif_decoder_free(d);
    return result;
}

/* graph_const(graph, tensor) -> {:ok, id}: a tensor (Emily, Nx.BinaryBackend
 * or bytes) as a constant of the graph */
ERL_NIF_TERM nif_graph_const(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_const: expected an Emily graph");
    decoder dec, *d = &dec;
    nif_decoder_init(d, env);
    emily_value v;
    ERL_NIF_TERM result;
    int32_t id;
    if (!nif_decode_arg(d, 0, argv[1], &v) || !nif_decoder_finish(d, EMILY_CPU)) {
        char msg[800];
        snprintf(msg, sizeof msg, "graph_const: %s", d->err);
        result = nif_make_error(env, msg);
    } else if (d->foreign) {
        result = enif_make_tuple2(env, nif_atom.error, nif_atom.foreign_tensor);
    } else if (v.kind != EMILY_V_TENSOR) {
        result = nif_make_error(env, "graph_const: expected a tensor");
    } else if (emily_graph_add_const(g, v.tensor, &id)) {
        result = nif_engine_error(env, "graph_const");
    } else {
        result = enif_make_tuple2(env, nif_atom.ok, enif_make_int(env, id));
    }
    nif_decoder_free(d);
    return result;
}

static bool get_ids(ErlNifEnv *env, ERL_NIF_TERM list, int32_t **ids, unsigned *n);

/* graph_while(graph, cond, body, [initial_id]) -> {:ok, first_id}: the
 * graph takes cond and body (their resources can no longer be used) */
ERL_NIF_TERM nif_graph_while(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    graph_res *rc, *rb;
    if (!get_graph(env, argv[0], &g) || !enif_get_resource(env, argv[1], nif_graph_rt, (void **)&rc) ||
        !enif_get_resource(env, argv[2], nif_graph_rt, (void **)&rb) || !rc->g || !rb->g)
        return nif_make_error(env, "graph_while: expected three Emily graphs");
    if (rc == rb || rc->g == g || rb->g == g)
        return nif_make_error(env, "graph_while: the condition, the body and the graph must be three graphs");
    int32_t *ids;
    unsigned n;
    if (!get_ids(env, argv[3], &ids, &n)) return nif_make_error(env, "graph_while: expected a list of value ids");
    emily_graph *cond = rc->g, *body = rb->g;
    rc->g = NULL; /* taken, also on failure */
    rb->g = NULL;
    int32_t first;
    emily_status s = emily_graph_add_while(g, cond, body, n, ids, &first);
    enif_free(ids);
    return s ? nif_engine_error(env, "graph_while") : enif_make_tuple2(env, nif_atom.ok, enif_make_int(env, first));
}

/* graph_cond(graph, [pred_id], [branch_graph], [count], [captured_id]) ->
 * {:ok, first_id}: the graph takes the branches */
ERL_NIF_TERM nif_graph_cond(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_cond: expected an Emily graph");
    int32_t *preds = NULL, *counts = NULL, *caps = NULL;
    unsigned np, nb, nc, ncap;
    ERL_NIF_TERM result;
    if (!enif_get_list_length(env, argv[2], &nb) || nb < 2 || nb > 1025)
        return nif_make_error(env, "graph_cond: expected a list of 2 to 1025 branch graphs");
    if (!get_ids(env, argv[1], &preds, &np)) return nif_make_error(env, "graph_cond: expected a list of predicate ids");
    if (!get_ids(env, argv[3], &counts, &nc)) {
        enif_free(preds);
        return nif_make_error(env, "graph_cond: expected a list of counts");
    }
    if (!get_ids(env, argv[4], &caps, &ncap)) {
        enif_free(preds);
        enif_free(counts);
        return nif_make_error(env, "graph_cond: expected a list of captured ids");
    }
    emily_graph **brs = enif_alloc(sizeof(emily_graph *) * nb);
    size_t *ncaptured = enif_alloc(sizeof(size_t) * nb);
    graph_res **res = enif_alloc(sizeof(graph_res *) * nb);
    size_t total = 0;
    bool ok = brs && ncaptured && res && np + 1 == nb && nc == nb;
    ERL_NIF_TERM head, tail = argv[2];
    for (unsigned b = 0; ok && b < nb; b++) {
        enif_get_list_cell(env, tail, &head, &tail);
        ok = enif_get_resource(env, head, nif_graph_rt, (void **)&res[b]) && res[b]->g && res[b]->g != g &&
             counts[b] >= 0;
        for (unsigned c = 0; ok && c < b; c++) ok = res[c] != res[b];
        if (ok) {
            brs[b] = res[b]->g;
            ncaptured[b] = (size_t)counts[b];
            total += (size_t)counts[b];
        }
    }
    if (!ok || total != ncap) {
        result = nif_make_error(env, "graph_cond: expected one more branch graph than predicates, distinct, with their "
                                     "captured counts adding up");
    } else {
        for (unsigned b = 0; b < nb; b++) res[b]->g = NULL; /* taken, also on failure */
        int32_t first;
        emily_status s = emily_graph_add_cond(g, np, preds, brs, ncaptured, caps, &first);
        result = s ? nif_engine_error(env, "graph_cond")
                   : enif_make_tuple2(env, nif_atom.ok, enif_make_int(env, first));
    }
    enif_free(preds);
    enif_free(counts);
    enif_free(caps);
    if (brs) enif_free(brs);
    if (ncaptured) enif_free(ncaptured);
    if (res) enif_free(res);
    return result;
}

static bool get_ids(ErlNifEnv *env, ERL_NIF_TERM list, int32_t **ids, unsigned *n) {
    if (!enif_get_list_length(env, list, n)) return false;
    *ids = enif_alloc(sizeof(int32_t) * (*n + 1));
    if (!*ids) return false;
    ERL_NIF_TERM head, tail = list;
    for (unsigned i = 0; i < *n; i++) {
        int v;
        enif_get_list_cell(env, tail, &head, &tail);
        if (!enif_get_int(env, head, &v)) {
            enif_free(*ids);
            return false;
        }
        (*ids)[i] = v;
    }
    return true;
}

/* graph_outputs(graph, [id]) -> :ok */
ERL_NIF_TERM nif_graph_outputs(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_outputs: expected an Emily graph");
    int32_t *ids;
    unsigned n;
    if (!get_ids(env, argv[1], &ids, &n)) return nif_make_error(env, "graph_outputs: expected a list of value ids");
    emily_status s = emily_graph_set_outputs(g, n, ids);
    enif_free(ids);
    return s ? nif_engine_error(env, "graph_outputs") : nif_atom.ok;
}

/* graph_compile(graph, device, optimize?, patterns?) -> :ok (dirty: folding runs calls) */
ERL_NIF_TERM nif_graph_compile(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_compile: expected an Emily graph");
    emily_device dev;
    char msg[256];
    if (!nif_term_to_device(env, argv[1], &dev, msg, sizeof msg)) return nif_make_error(env, msg);
    emily_graph_options o = {.no_optimize = enif_is_identical(argv[2], nif_atom.false_),
                             .no_patterns = enif_is_identical(argv[3], nif_atom.false_)};
    return emily_graph_compile(g, dev, &o) ? nif_engine_error(env, "graph_compile") : nif_atom.ok;
}

/* graph_run(graph, [tensor]) -> {:ok, [%Emily.Backend{}]} (dirty) */
ERL_NIF_TERM nif_graph_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_run: expected an Emily graph");
    unsigned np;
    if (!enif_get_list_length(env, argv[1], &np))
        return nif_make_error(env, "graph_run: the parameters must be a list");
    decoder dec, *d = &dec;
    nif_decoder_init(d, env);
    ERL_NIF_TERM result;
    char msg[1024];
    size_t no = emily_graph_num_outputs(g);
    emily_value *vals = nif_arena_alloc(d, sizeof(emily_value) * (np + 1));
    emily_tensor **params = nif_arena_alloc(d, sizeof(emily_tensor *) * (np + 1));
    emily_tensor **outs = nif_arena_alloc(d, sizeof(emily_tensor *) * (no + 1));
    ERL_NIF_TERM *items = nif_arena_alloc(d, sizeof(ERL_NIF_TERM) * (no + 1));
    if (!vals || !params || !outs || !items) goto decode_error;
    if (!nif_decode_args(d, argv[1], np, vals)) goto decode_error;
    if (d->foreign) {
        result = enif_make_tuple2(env, nif_atom.error, nif_atom.foreign_tensor);
        goto done;
    }
    emily_device dev = d->have_device ? d->device : EMILY_CPU;
    if (!nif_decoder_finish(d, dev)) goto decode_error;
    for (unsigned i = 0; i < np; i++) {
        if (vals[i].kind != EMILY_V_TENSOR) {
            snprintf(msg, sizeof msg, "graph_run: parameter %u is not a tensor", i);
            result = nif_make_error(env, msg);
            goto done;
        }
        params[i] = vals[i].tensor;
    }
    if (emily_graph_run(g, params, np, outs, no)) {
        result = nif_engine_error(env, "graph_run");
        goto done;
    }
    bool made = true;
    for (size_t k = 0; k < no; k++) {
        if (!made) emily_tensor_release(outs[k]);
        else made = nif_result_term(env, outs[k], true, &items[k]);
    }
    result = made ? enif_make_tuple2(env, nif_atom.ok, enif_make_list_from_array(env, items, (unsigned)no))
                  : nif_make_error(env, "graph_run: out of memory making the result terms");
    goto done;
decode_error:
    result = nif_decode_error(env, d, "graph_run", "parameters");
done:
    nif_decoder_free(d);
    return result;
}

/* graph_save(graph, path) -> :ok */
ERL_NIF_TERM nif_graph_save(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_save: expected an Emily graph");
    ErlNifBinary path;
    if (!enif_inspect_binary(env, argv[1], &path) || path.size == 0 || path.size > 4000 ||
        memchr(path.data, 0, path.size))
        return nif_make_error(env, "graph_save: the path must be a non-empty binary without NUL bytes");
    char p[4096];
    memcpy(p, path.data, path.size);
    p[path.size] = 0;
    return emily_graph_save(g, p) ? nif_engine_error(env, "graph_save") : nif_atom.ok;
}

/* graph_stats(graph) -> map */
ERL_NIF_TERM nif_graph_stats(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_graph *g;
    if (!get_graph(env, argv[0], &g)) return nif_make_error(env, "graph_stats: expected an Emily graph");
    emily_graph_stats st;
    emily_graph_get_stats(g, &st);
    const char *names[] = {"params",           "constants",       "calls",
                           "folded",           "dropped",         "rewritten",
                           "fused_calls",      "fused_groups",    "steps",
                           "outputs",          "peak_bytes",      "replays",
                           "replay_bytes",     "patterns",        "pattern_layer_norm",
                           "pattern_rms_norm", "pattern_softmax", "pattern_attention"};
    int64_t values[] = {st.params,           st.constants,       st.calls,
                        st.folded,           st.dropped,         st.rewritten,
                        st.fused_calls,      st.fused_groups,    st.steps,
                        st.outputs,          st.peak_bytes,      st.replays,
                        st.replay_bytes,     st.patterns,        st.pattern_layer_norm,
                        st.pattern_rms_norm, st.pattern_softmax, st.pattern_attention};
    enum { NSTATS = sizeof values / sizeof *values };
    ERL_NIF_TERM keys[NSTATS], vs[NSTATS], map;
    for (int i = 0; i < NSTATS; i++) {
        keys[i] = enif_make_atom(env, names[i]);
        vs[i] = enif_make_int64(env, values[i]);
    }
    enif_make_map_from_arrays(env, keys, vs, NSTATS, &map);
    return map;
}
