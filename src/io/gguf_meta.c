/* The metadata accessors of emily/gguf.h: a hashed lookup of the key,
 * then the value read straight from the mapping (open checked it). */
#include <string.h>
#include "io/gguf_internal.h"

static const char *type_names[] = {"u8",   "s8",     "u16",   "s16", "u32", "s32", "f32",
                                   "bool", "string", "array", "u64", "s64", "f64"};

static const char *kv_name(const void *ctx, size_t i, size_t *len) {
    const gguf_kv *kv = (const gguf_kv *)ctx + i;
    *len = kv->key_len;
    return kv->key;
}

static const gguf_kv *lookup(const emily_gguf *g, const char *key) {
    long long i = gguf_names_find(&g->key_index, key, strlen(key), kv_name, g->kvs);
    return i < 0 ? NULL : &g->kvs[i];
}

/* The pair of `key`, or an error naming the accessor and the key. */
static emily_status find(const emily_gguf *g, const char *key, const char *fn, const void *out, const gguf_kv **kv) {
    if (!g || !key || !out) return emily_error(EMILY_ERR_ARGUMENT, "gguf_%s: NULL argument", fn);
    *kv = lookup(g, key);
    if (!*kv) return emily_error(EMILY_ERR_ARGUMENT, "gguf_%s: key %s is not in %s", fn, key, g->path);
    return EMILY_OK;
}

static emily_status wrong_type(const char *fn, const char *key, const char *want, emily_gguf_value_type got) {
    return emily_error(EMILY_ERR_TYPE, "gguf_%s: key %s holds %s, not %s", fn, key, type_names[got], want);
}

/* find, then the check that a second output (out2) is not NULL and that
 * the value is of type `want` (`what` in the message). */
static emily_status find_typed(const emily_gguf *g, const char *key, const char *fn, const void *out, const void *out2,
                               emily_gguf_value_type want, const char *what, const gguf_kv **kv) {
    emily_status s = find(g, key, fn, out, kv);
    if (s) return s;
    if (!out2) return emily_error(EMILY_ERR_ARGUMENT, "gguf_%s: NULL argument", fn);
    if ((*kv)->type != want) return wrong_type(fn, key, what, (*kv)->type);
    return EMILY_OK;
}

static bool is_integer(emily_gguf_value_type t) {
    return t != EMILY_GGUF_FLOAT32 && t != EMILY_GGUF_FLOAT64 && t != EMILY_GGUF_STRING && t != EMILY_GGUF_ARRAY;
}

/* One integer or bool value of type t at p. A u64 is returned as its
 * bits; *big says whether it is above INT64_MAX. */
static int64_t int_at(emily_gguf_value_type t, const unsigned char *p, bool *big) {
    *big = false;
    switch (t) {
    case EMILY_GGUF_UINT8:
    case EMILY_GGUF_BOOL: return p[0];
    case EMILY_GGUF_INT8: return (int8_t)p[0];
    case EMILY_GGUF_UINT16: return gguf_u16(p);
    case EMILY_GGUF_INT16: return (int16_t)gguf_u16(p);
    case EMILY_GGUF_UINT32: return gguf_u32(p);
    case EMILY_GGUF_INT32: return (int32_t)gguf_u32(p);
    case EMILY_GGUF_INT64: return (int64_t)gguf_u64(p);
    default: {
        uint64_t u = gguf_u64(p);
        *big = u > INT64_MAX;
        return (int64_t)(u & INT64_MAX);
    }
    }
}

static double float_at(emily_gguf_value_type t, const unsigned char *p) {
    if (t == EMILY_GGUF_FLOAT32) {
        uint32_t b = gguf_u32(p);
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    if (t == EMILY_GGUF_FLOAT64) {
        uint64_t b = gguf_u64(p);
        double d;
        memcpy(&d, &b, sizeof d);
        return d;
    }
    if (t == EMILY_GGUF_UINT64) return (double)gguf_u64(p);
    bool big;
    return (double)int_at(t, p, &big);
}

static emily_status read_int(const char *fn, const char *key, emily_gguf_value_type t, const unsigned char *p,
                             int64_t *out) {
    if (!is_integer(t)) return wrong_type(fn, key, "an integer or bool", t);
    bool big;
    int64_t v = int_at(t, p, &big);
    if (big)
        return emily_error(EMILY_ERR_TYPE, "gguf_%s: key %s holds the u64 %llu, above INT64_MAX", fn, key,
                           (unsigned long long)gguf_u64(p));
    *out = v;
    return EMILY_OK;
}

static emily_status read_float(const char *fn, const char *key, emily_gguf_value_type t, const unsigned char *p,
                               double *out) {
    if (!is_integer(t) && t != EMILY_GGUF_FLOAT32 && t != EMILY_GGUF_FLOAT64) return wrong_type(fn, key, "a number", t);
    if (t == EMILY_GGUF_BOOL) return wrong_type(fn, key, "a number", t);
    *out = float_at(t, p);
    return EMILY_OK;
}

bool emily_gguf_has_key(const emily_gguf *g, const char *key) { return g && key && lookup(g, key) != NULL; }

size_t emily_gguf_key_count(const emily_gguf *g) { return g ? g->kv_count : 0; }

emily_status emily_gguf_key_at(const emily_gguf *g, size_t i, const char **key, size_t *len,
                               emily_gguf_value_type *type) {
    if (!g || !key || !len || !type) return emily_error(EMILY_ERR_ARGUMENT, "gguf_key_at: NULL argument");
    if (i >= g->kv_count)
        return emily_error(EMILY_ERR_INDEX, "gguf_key_at: index %zu, the file has %zu keys", i, g->kv_count);
    *key = g->kvs[i].key;
    *len = g->kvs[i].key_len;
    *type = g->kvs[i].type;
    return EMILY_OK;
}

emily_status emily_gguf_get_int(const emily_gguf *g, const char *key, int64_t *out) {
    const gguf_kv *kv;
    emily_status s = find(g, key, "get_int", out, &kv);
    return s ? s : read_int("get_int", key, kv->type, kv->value, out);
}

emily_status emily_gguf_get_float(const emily_gguf *g, const char *key, double *out) {
    const gguf_kv *kv;
    emily_status s = find(g, key, "get_float", out, &kv);
    return s ? s : read_float("get_float", key, kv->type, kv->value, out);
}

emily_status emily_gguf_get_string(const emily_gguf *g, const char *key, const char **str, size_t *len) {
    const gguf_kv *kv;
    emily_status s = find_typed(g, key, "get_string", str, len, EMILY_GGUF_STRING, "a string", &kv);
    if (s) return s;
    *str = (const char *)kv->value;
    *len = (size_t)kv->len;
    return EMILY_OK;
}

emily_status emily_gguf_get_array(const emily_gguf *g, const char *key, emily_gguf_value_type *elem, size_t *count) {
    const gguf_kv *kv;
    emily_status s = find_typed(g, key, "get_array", elem, count, EMILY_GGUF_ARRAY, "an array", &kv);
    if (s) return s;
    *elem = kv->elem;
    *count = (size_t)kv->len;
    return EMILY_OK;
}

/* The array of `key`, and the check of index i against its count. */
static emily_status element(const emily_gguf *g, const char *key, size_t i, const char *fn, const void *out,
                            const gguf_kv **kv) {
    /* out is both outputs: the element's second one, if any, is checked after the index */
    emily_status s = find_typed(g, key, fn, out, out, EMILY_GGUF_ARRAY, "an array", kv);
    if (s) return s;
    if (i >= (*kv)->len)
        return emily_error(EMILY_ERR_INDEX, "gguf_%s: index %zu of key %s, an array of %llu", fn, i, key,
                           (unsigned long long)(*kv)->len);
    return EMILY_OK;
}

emily_status emily_gguf_get_array_string(const emily_gguf *g, const char *key, size_t i, const char **str,
                                         size_t *len) {
    const gguf_kv *kv;
    emily_status s = element(g, key, i, "get_array_string", str, &kv);
    if (s) return s;
    if (!len) return emily_error(EMILY_ERR_ARGUMENT, "gguf_get_array_string: NULL argument");
    if (kv->elem != EMILY_GGUF_STRING)
        return emily_error(EMILY_ERR_TYPE, "gguf_get_array_string: key %s is an array of %s, not of strings", key,
                           type_names[kv->elem]);
    const unsigned char *p = g->map + kv->strings[i];
    *len = (size_t)gguf_u64(p);
    *str = (const char *)p + 8;
    return EMILY_OK;
}

emily_status emily_gguf_get_array_int(const emily_gguf *g, const char *key, size_t i, int64_t *out) {
    const gguf_kv *kv;
    emily_status s = element(g, key, i, "get_array_int", out, &kv);
    if (s) return s;
    if (!is_integer(kv->elem))
        return emily_error(EMILY_ERR_TYPE, "gguf_get_array_int: key %s is an array of %s, not of integers", key,
                           type_names[kv->elem]);
    return read_int("get_array_int", key, kv->elem, kv->value + i * gguf_scalar_size(kv->elem), out);
}

emily_status emily_gguf_get_array_float(const emily_gguf *g, const char *key, size_t i, double *out) {
    const gguf_kv *kv;
    emily_status s = element(g, key, i, "get_array_float", out, &kv);
    if (s) return s;
    if (!is_integer(kv->elem) && kv->elem != EMILY_GGUF_FLOAT32 && kv->elem != EMILY_GGUF_FLOAT64)
        return emily_error(EMILY_ERR_TYPE, "gguf_get_array_float: key %s is an array of %s, not of numbers", key,
                           type_names[kv->elem]);
    return read_float("get_array_float", key, kv->elem, kv->value + i * gguf_scalar_size(kv->elem), out);
}
