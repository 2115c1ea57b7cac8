/* Emily.Native: the NIF's entry points.
 *
 * The function table and module callbacks, the functions on devices,
 * streams and the engine's settings, and the helpers every part uses.
 * The other jobs have files of their own: tensor_nif.c (tensor
 * resources and data), export_nif.c (to_pointer/from_pointer),
 * dispatch_nif.c (dispatch/6, the hot path), graph_nif.c (engine graphs)
 * and terms.c (Erlang terms <-> the dispatcher's values). Failures
 * return {:error, message}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emily_nif.h"
#include "test_hooks.h"

ErlNifResourceType *nif_tensor_rt;
ErlNifResourceType *nif_stream_rt;

static void stream_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    stream_res *r = obj;
    if (r->s) emily_stream_free(r->s);
    r->s = NULL;
}

/* ---- helpers (emily_nif.h) ---- */

ERL_NIF_TERM nif_make_binary_str(ErlNifEnv *env, const char *s) {
    ERL_NIF_TERM bin;
    size_t n = strlen(s);
    unsigned char *p = enif_make_new_binary(env, n, &bin);
    if (p) memcpy(p, s, n);
    return bin;
}

ERL_NIF_TERM nif_make_error(ErlNifEnv *env, const char *msg) {
    return enif_make_tuple2(env, nif_atom.error, nif_make_binary_str(env, msg));
}

ERL_NIF_TERM nif_engine_error(ErlNifEnv *env, const char *context) {
    char msg[1024];
    if (context) snprintf(msg, sizeof msg, "%s: %s", context, emily_last_error());
    else snprintf(msg, sizeof msg, "%s", emily_last_error());
    return nif_make_error(env, msg);
}

bool nif_get_device(ErlNifEnv *env, ERL_NIF_TERM term, emily_device *dev, ERL_NIF_TERM *err) {
    char msg[128];
    if (!nif_term_to_device(env, term, dev, msg, sizeof msg)) {
        *err = nif_make_error(env, msg);
        return false;
    }
    return true;
}

bool nif_type_arg(ErlNifEnv *env, ERL_NIF_TERM t, emily_dtype *out, ERL_NIF_TERM *err) {
    char msg[256];
    if (nif_term_to_dtype(env, t, out, msg, sizeof msg)) return true;
    *err = nif_make_error(env, msg);
    return false;
}

bool nif_shape_arg(decoder *d, ERL_NIF_TERM t, const char *name, int *rank, int64_t **shape, ERL_NIF_TERM *err) {
    if (nif_term_to_shape(d->env, t, rank, shape, d)) return true;
    nif_prefix_err(d, name);
    *err = nif_make_error(d->env, d->err);
    return false;
}

ERL_NIF_TERM nif_decode_error(ErlNifEnv *env, const decoder *d, const char *name, const char *what) {
    char msg[1024];
    if (d && d->err[0]) snprintf(msg, sizeof msg, "%s: %s", name, d->err);
    else snprintf(msg, sizeof msg, "%s: cannot decode the %s", name, what);
    return nif_make_error(env, msg);
}

/* ---- devices, streams, introspection ---- */

/* f(device) for a device argument: :ok, or the engine's error after
 * "<what>: " (nothing before it for NULL). */
static ERL_NIF_TERM on_device(ErlNifEnv *env, ERL_NIF_TERM arg, emily_status (*f)(emily_device), const char *what) {
    emily_device dev;
    ERL_NIF_TERM err;
    if (!nif_get_device(env, arg, &dev, &err)) return err;
    return f(dev) ? nif_engine_error(env, what) : nif_atom.ok;
}

ERL_NIF_TERM nif_devices(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    ERL_NIF_TERM list = enif_make_list(env, 0);
    int n = emily_device_count(EMILY_DEVICE_CUDA);
    for (int i = n - 1; i >= 0; i--)
        list = enif_make_list_cell(env, nif_device_to_term(env, (emily_device){EMILY_DEVICE_CUDA, i}), list);
    return enif_make_list_cell(env, nif_atom.cpu, list);
}

ERL_NIF_TERM nif_device_check(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return on_device(env, argv[0], emily_device_check, NULL);
}

ERL_NIF_TERM nif_version(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    return nif_make_binary_str(env, emily_version());
}

ERL_NIF_TERM nif_callbacks(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    const char *const *names = emily_dispatch_callbacks();
    ERL_NIF_TERM list = enif_make_list(env, 0);
    size_t n = 0;
    while (names[n]) n++;
    while (n-- > 0) list = enif_make_list_cell(env, enif_make_atom(env, names[n]), list);
    return list;
}

ERL_NIF_TERM nif_live_tensors(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    return enif_make_tuple2(env, enif_make_int64(env, emily_live_tensors()),
                            enif_make_int64(env, emily_live_buffers()));
}

ERL_NIF_TERM nif_synchronize(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return on_device(env, argv[0], emily_synchronize, "synchronize");
}

ERL_NIF_TERM nif_memory_stats(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!nif_get_device(env, argv[0], &dev, &err)) return err;
    emily_memory_stats st;
    if (emily_memory_stats_get(dev, &st)) return nif_engine_error(env, "memory_stats");
    ERL_NIF_TERM keys[3] = {nif_atom.active, nif_atom.peak, nif_atom.cached};
    ERL_NIF_TERM vals[3] = {enif_make_uint64(env, st.active), enif_make_uint64(env, st.peak),
                            enif_make_uint64(env, st.cached)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, vals, 3, &map);
    return map;
}

ERL_NIF_TERM nif_release_cache(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return on_device(env, argv[0], emily_memory_release_cache, "release_cache");
}

/* The engine's process-wide dot precision (emily_dot_set_precision):
 * :highest (Nx.BinaryBackend's answers) or :fast (BLAS in each type's own
 * precision). */
ERL_NIF_TERM nif_dot_precision(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc, (void)argv;
    return enif_make_atom(env, emily_dot_get_precision() == EMILY_DOT_PRECISION_FAST ? "fast" : "highest");
}

ERL_NIF_TERM nif_set_dot_precision(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    char name[16];
    if (enif_get_atom(env, argv[0], name, sizeof name, ERL_NIF_LATIN1) > 0) {
        if (strcmp(name, "highest") == 0) emily_dot_set_precision(EMILY_DOT_PRECISION_HIGHEST);
        else if (strcmp(name, "fast") == 0) emily_dot_set_precision(EMILY_DOT_PRECISION_FAST);
        else goto bad;
        return nif_atom.ok;
    }
bad:
    return nif_make_error(env, "dot precision: expected :highest or :fast");
}

ERL_NIF_TERM nif_stream_new(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!nif_get_device(env, argv[0], &dev, &err)) return err;
    emily_stream *s;
    if (emily_stream_new(dev, &s)) return nif_engine_error(env, "stream_new");
    stream_res *r = enif_alloc_resource(nif_stream_rt, sizeof *r);
    if (!r) {
        emily_stream_free(s);
        return nif_make_error(env, "stream_new: out of memory");
    }
    r->s = s;
    r->device = dev;
    ERL_NIF_TERM term = enif_make_resource(env, r);
    enif_release_resource(r);
    return term;
}

ERL_NIF_TERM nif_stream_synchronize(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    stream_res *r;
    if (!enif_get_resource(env, argv[0], nif_stream_rt, (void **)&r) || !r->s)
        return nif_make_error(env, "stream_synchronize: expected an Emily stream");
    if (emily_stream_synchronize(r->s)) return nif_engine_error(env, "stream_synchronize");
    return nif_atom.ok;
}

ERL_NIF_TERM nif_stream_device(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    stream_res *r;
    if (!enif_get_resource(env, argv[0], nif_stream_rt, (void **)&r))
        return nif_make_error(env, "stream_device: expected an Emily stream");
    return nif_device_to_term(env, r->device);
}

/* ---- module ---- */

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info) {
    (void)priv;
    (void)info;
    ErlNifResourceFlags flags = ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER;
    /* the type's name changes with tensor_res's layout (v2: `pin`, v3:
     * `export_addr`): an upgrade then leaves the old library's resources
     * to its own destructor instead of handing them to one that reads
     * another layout (Emily.Backend tensors among them come back through
     * their bytes) */
    nif_tensor_rt = enif_open_resource_type(env, NULL, "emily_tensor_v3", nif_tensor_dtor, flags, NULL);
    nif_stream_rt = enif_open_resource_type(env, NULL, "emily_stream", stream_dtor, flags, NULL);
    if (!nif_tensor_rt || !nif_stream_rt || !nif_graph_load(env)) return 1;
    if (!nif_exports_load()) return 1;
    nif_atoms_init(env);
    return nif_dispatch_load(env) ? 0 : 1;
}

static int upgrade(ErlNifEnv *env, void **priv, void **old_priv, ERL_NIF_TERM info) {
    (void)old_priv;
    return load(env, priv, info);
}

#define NIF_ENTRY(name, arity, flags) {#name, arity, nif_##name, flags},
static ErlNifFunc nif_funcs[] = {NIF_FUNCTIONS(NIF_ENTRY) NIF_TEST_FUNCTIONS(NIF_ENTRY)};
#undef NIF_ENTRY

ERL_NIF_INIT(Elixir.Emily.Native, nif_funcs, load, NULL, upgrade, NULL)
