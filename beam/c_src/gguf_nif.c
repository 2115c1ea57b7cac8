/* Emily.Native.gguf_load/4: a GGUF file's metadata and tensors
 * (include/emily/gguf.h) as terms, for Emily.Quantization.load_gguf/2.
 *
 *   gguf_load(path, scale_type, only, device) ->
 *     {:ok, [{key, value}], [{name, {:dense, data}} | {name, {:quant, q, scales, biases, bits, group_size}}]}
 *     | {:error, message}
 *
 * path a binary; scale_type {:f, 32} | {:f, 16} | {:bf, 16}; only nil
 * (every tensor) or a list of name binaries; each data an
 * %Emily.Backend{} (nif_result_term). Values: integers, floats, binaries,
 * true/false, lists for arrays. A tensor listed but not loadable (Q6_K,
 * ...) or a name in `only` that is not in the file is an error. Runs on
 * a dirty CPU scheduler. */
#include <stdlib.h>
#include <string.h>
#include "emily_nif.h"

/* One value of a scalar type (or element i of an array of it). */
static ERL_NIF_TERM number_term(ErlNifEnv *env, const emily_gguf *g, const char *key, bool in_array, size_t i,
                                emily_gguf_value_type t) {
    if (t == EMILY_GGUF_FLOAT32 || t == EMILY_GGUF_FLOAT64) {
        double v = 0;
        if (in_array) emily_gguf_get_array_float(g, key, i, &v);
        else emily_gguf_get_float(g, key, &v);
        return enif_make_double(env, v);
    }
    int64_t v = 0;
    emily_status s = in_array ? emily_gguf_get_array_int(g, key, i, &v) : emily_gguf_get_int(g, key, &v);
    if (t == EMILY_GGUF_BOOL) return v ? nif_atom.true_ : nif_atom.false_;
    if (s) { /* a u64 above INT64_MAX */
        double d = 0;
        if (in_array) emily_gguf_get_array_float(g, key, i, &d);
        else emily_gguf_get_float(g, key, &d);
        return enif_make_uint64(env, (ErlNifUInt64)d);
    }
    return enif_make_int64(env, v);
}

static ERL_NIF_TERM bytes_term(ErlNifEnv *env, const char *s, size_t n) {
    ERL_NIF_TERM t;
    unsigned char *p = enif_make_new_binary(env, n, &t);
    if (n) memcpy(p, s, n);
    return t;
}

static ERL_NIF_TERM value_term(ErlNifEnv *env, const emily_gguf *g, const char *key, emily_gguf_value_type t) {
    if (t == EMILY_GGUF_STRING) {
        const char *s;
        size_t n;
        emily_gguf_get_string(g, key, &s, &n);
        return bytes_term(env, s, n);
    }
    if (t != EMILY_GGUF_ARRAY) return number_term(env, g, key, false, 0, t);
    emily_gguf_value_type et;
    size_t count;
    emily_gguf_get_array(g, key, &et, &count);
    ERL_NIF_TERM list = enif_make_list(env, 0);
    for (size_t i = count; i-- > 0;) {
        ERL_NIF_TERM v;
        if (et == EMILY_GGUF_STRING) {
            const char *s;
            size_t n;
            emily_gguf_get_array_string(g, key, i, &s, &n);
            v = bytes_term(env, s, n);
        } else {
            v = number_term(env, g, key, true, i, et);
        }
        list = enif_make_list_cell(env, v, list);
    }
    return list;
}

static ERL_NIF_TERM metadata(ErlNifEnv *env, const emily_gguf *g, ERL_NIF_TERM *err) {
    ERL_NIF_TERM list = enif_make_list(env, 0);
    for (size_t i = emily_gguf_key_count(g); i-- > 0;) {
        const char *k;
        size_t n;
        emily_gguf_value_type t;
        emily_gguf_key_at(g, i, &k, &n, &t);
        char *key = malloc(n + 1);
        if (!key) {
            *err = nif_make_error(env, "gguf_load: out of memory");
            return 0;
        }
        memcpy(key, k, n);
        key[n] = 0;
        ERL_NIF_TERM v = value_term(env, g, key, t);
        free(key);
        list = enif_make_list_cell(env, enif_make_tuple2(env, bytes_term(env, k, n), v), list);
    }
    return list;
}

/* Loads tensor `name` into {name, {:dense, data}} or {name, {:quant, ...}}. */
static bool tensor_entry(ErlNifEnv *env, const emily_gguf *g, const char *name, emily_device dev, emily_dtype st,
                         ERL_NIF_TERM *out, ERL_NIF_TERM *err) {
    emily_gguf_tensor t;
    if (emily_gguf_load(g, name, dev, st, &t)) {
        *err = nif_engine_error(env, NULL);
        return false;
    }
    ERL_NIF_TERM q, s, b, d, body;
    if (t.dense) {
        emily_tensor *dense = t.dense;
        t.dense = NULL;
        if (!nif_result_term(env, dense, true, &d)) goto oom;
        body = enif_make_tuple2(env, enif_make_atom(env, "dense"), d);
    } else {
        emily_tensor *tq = t.q, *ts = t.scales, *tb = t.biases;
        t.q = t.scales = t.biases = NULL;
        bool ok = nif_result_term(env, tq, true, &q);
        ok = nif_result_term(env, ts, true, &s) && ok;
        ok = nif_result_term(env, tb, true, &b) && ok;
        if (!ok) goto oom;
        body = enif_make_tuple6(env, enif_make_atom(env, "quant"), q, s, b, enif_make_int(env, t.bits),
                                enif_make_int64(env, t.group_size));
    }
    *out = enif_make_tuple2(env, bytes_term(env, name, strlen(name)), body);
    return true;
oom:
    emily_gguf_tensor_release(&t);
    *err = nif_make_error(env, "gguf_load: out of memory");
    return false;
}

static bool term_name(ErlNifEnv *env, ERL_NIF_TERM term, char *buf, size_t size) {
    ErlNifBinary bin;
    if (!enif_inspect_binary(env, term, &bin) || bin.size >= size || memchr(bin.data, 0, bin.size)) return false;
    memcpy(buf, bin.data, bin.size);
    buf[bin.size] = 0;
    return true;
}

static ERL_NIF_TERM tensors(ErlNifEnv *env, const emily_gguf *g, ERL_NIF_TERM only, emily_device dev, emily_dtype st,
                            ERL_NIF_TERM *err) {
    ERL_NIF_TERM list = enif_make_list(env, 0), entry;
    char name[1024];
    if (enif_is_identical(only, nif_atom.nil)) {
        for (size_t i = emily_gguf_tensor_count(g); i-- > 0;) {
            emily_gguf_tensor_info info;
            emily_gguf_tensor_info_at(g, i, &info);
            if (info.name_len >= sizeof name || memchr(info.name, 0, info.name_len)) {
                *err = nif_make_error(env, "gguf_load: a tensor name too long or holding a NUL byte");
                return 0;
            }
            memcpy(name, info.name, info.name_len);
            name[info.name_len] = 0;
            if (!tensor_entry(env, g, name, dev, st, &entry, err)) return 0;
            list = enif_make_list_cell(env, entry, list);
        }
        return list;
    }
    ERL_NIF_TERM head, tail = only;
    while (enif_get_list_cell(env, tail, &head, &tail)) {
        if (!term_name(env, head, name, sizeof name)) {
            *err = nif_make_error(env, "gguf_load: :only must be a list of tensor names (strings)");
            return 0;
        }
        if (!tensor_entry(env, g, name, dev, st, &entry, err)) return 0;
        list = enif_make_list_cell(env, entry, list);
    }
    if (!enif_is_empty_list(env, tail)) {
        *err = nif_make_error(env, "gguf_load: :only must be a list of tensor names (strings)");
        return 0;
    }
    return list;
}

ERL_NIF_TERM nif_gguf_load(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    char path[4096], msg[256];
    emily_dtype st;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!term_name(env, argv[0], path, sizeof path))
        return nif_make_error(env, "gguf_load: the path must be a string without NUL bytes");
    if (!nif_term_to_dtype(env, argv[1], &st, msg, sizeof msg)) return nif_make_error(env, msg);
    if (!nif_get_device(env, argv[3], &dev, &err)) return err;
    emily_gguf *g;
    if (emily_gguf_open(path, &g)) return nif_engine_error(env, NULL);
    ERL_NIF_TERM meta = metadata(env, g, &err);
    ERL_NIF_TERM ts = meta ? tensors(env, g, argv[2], dev, st, &err) : 0;
    emily_gguf_close(g);
    if (!meta || !ts) return err;
    return enif_make_tuple3(env, nif_atom.ok, meta, ts);
}
