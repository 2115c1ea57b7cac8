#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "json_values.h"

static void *track(jv_tree *t, void *p) {
    if (!p) return NULL;
    if (t->nallocs == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        void **a = realloc(t->allocs, cap * sizeof *a);
        if (!a) {
            free(p);
            return NULL;
        }
        t->allocs = a;
        t->cap = cap;
    }
    t->allocs[t->nallocs++] = p;
    return p;
}

static int track_tensor(jv_tree *t, emily_tensor *x) {
    if (t->ntensors == t->tcap) {
        size_t cap = t->tcap ? t->tcap * 2 : 8;
        emily_tensor **a = realloc(t->tensors, cap * sizeof *a);
        if (!a) return -1;
        t->tensors = a;
        t->tcap = cap;
    }
    t->tensors[t->ntensors++] = x;
    return 0;
}

void jv_free(jv_tree *t) {
    for (size_t i = 0; i < t->ntensors; i++) emily_tensor_release(t->tensors[i]);
    for (size_t i = 0; i < t->nallocs; i++) free(t->allocs[i]);
    free(t->allocs);
    free(t->tensors);
    memset(t, 0, sizeof *t);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *b64_encode(const unsigned char *d, size_t n) {
    char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
        *o++ = B64[v >> 18 & 63];
        *o++ = B64[v >> 12 & 63];
        *o++ = i + 1 < n ? B64[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? B64[v & 63] : '=';
    }
    *o = 0;
    return out;
}

unsigned char *b64_decode(const char *s, size_t *n) {
    size_t len = strlen(s);
    unsigned char *out = malloc(len / 4 * 3 + 3), *o = out;
    if (!out) return NULL;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        const char *p = strchr(B64, s[i]);
        if (s[i] == '=' || !p || !s[i]) continue;
        acc = acc << 6 | (uint32_t)(p - B64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *o++ = (unsigned char)(acc >> bits & 0xff);
        }
    }
    *n = (size_t)(o - out);
    return out;
}

static int read_shape(jv_tree *t, const json_t *shape, int *rank, int64_t **dims) {
    if (!json_is_array(shape)) return -1;
    size_t r = json_array_size(shape);
    int64_t *d = track(t, malloc(sizeof(int64_t) * (r + 1)));
    if (!d) return -1;
    for (size_t i = 0; i < r; i++) d[i] = json_integer_value(json_array_get(shape, i));
    *rank = (int)r;
    *dims = d;
    return 0;
}

static double number_of(const emily_value *v) {
    if (v->kind == EMILY_V_INT) return (double)v->i;
    if (v->kind == EMILY_V_FLOAT) return v->f;
    if (v->kind == EMILY_V_ATOM)
        return strcmp(v->str, "nan") == 0 ? NAN : strcmp(v->str, "infinity") == 0 ? INFINITY : -INFINITY;
    return NAN;
}

static int decode(jv_tree *t, const json_t *j, emily_value *v, emily_device dev, bool as_template, char *err,
                  size_t es) {
    memset(v, 0, sizeof *v);
    if (as_template && json_is_object(j) && json_object_get(j, "type")) {
        v->kind = EMILY_V_TEMPLATE;
        v->dtype = emily_dtype_from_name(json_string_value(json_object_get(j, "type")));
        int64_t *dims;
        if (read_shape(t, json_object_get(j, "shape"), &v->rank, &dims)) goto bad;
        v->shape = dims;
        return 0;
    }
    if (json_is_null(j)) {
        v->kind = EMILY_V_NIL;
        return 0;
    }
    if (json_is_boolean(j)) {
        v->kind = EMILY_V_BOOL;
        v->b = json_is_true(j);
        return 0;
    }
    if (json_is_integer(j)) {
        v->kind = EMILY_V_INT;
        v->i = json_integer_value(j);
        return 0;
    }
    if (json_is_real(j)) {
        v->kind = EMILY_V_FLOAT;
        v->f = json_real_value(j);
        return 0;
    }
    const json_t *arr = NULL;
    if (json_is_array(j)) {
        arr = j;
        v->kind = EMILY_V_LIST;
    } else if (json_is_object(j) && (arr = json_object_get(j, "tuple"))) v->kind = EMILY_V_TUPLE;
    if (arr) {
        size_t n = json_array_size(arr);
        v->n = n;
        v->items = track(t, calloc(n + 1, sizeof *v->items));
        if (!v->items) goto oom;
        for (size_t i = 0; i < n; i++)
            if (decode(t, json_array_get(arr, i), &v->items[i], dev, as_template, err, es)) return -1;
        return 0;
    }
    if (!json_is_object(j)) goto bad;
    const json_t *x;
    if ((x = json_object_get(j, "opts"))) {
        /* jansson keeps object insertion order, so key order is kept */
        v->kind = EMILY_V_OPTS;
        size_t n = json_object_size(x);
        v->n = n;
        v->items = track(t, calloc(n + 1, sizeof *v->items));
        v->keys = track(t, calloc(n + 1, sizeof *v->keys));
        if (!v->items || !v->keys) goto oom;
        size_t i = 0;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)x, key, val) {
            v->keys[i] = key;
            if (decode(t, val, &v->items[i], dev, false, err, es)) return -1;
            i++;
        }
        return 0;
    }
    if ((x = json_object_get(j, "tensor"))) {
        int rank;
        int64_t *dims;
        emily_dtype dt = emily_dtype_from_name(json_string_value(json_object_get(x, "type")));
        if (read_shape(t, json_object_get(x, "shape"), &rank, &dims)) goto bad;
        const char *data = json_string_value(json_object_get(x, "data"));
        if (!data || dt == EMILY_DTYPE_AUTO) goto bad;
        size_t nb;
        unsigned char *bytes = b64_decode(data, &nb);
        if (!bytes) goto oom;
        emily_tensor *tt;
        emily_status s = emily_from_binary(dev, dt, rank, dims, bytes, nb, &tt);
        free(bytes);
        if (s) {
            snprintf(err, es, "tensor argument: %s", emily_last_error());
            return -1;
        }
        if (track_tensor(t, tt)) {
            emily_tensor_release(tt);
            goto oom;
        }
        v->kind = EMILY_V_TENSOR;
        v->tensor = tt;
        return 0;
    }
    if ((x = json_object_get(j, "int"))) {
        const char *s = json_string_value(x);
        if (!s) goto bad;
        if (s[0] == '-') {
            v->kind = EMILY_V_INT;
            v->i = strtoll(s, NULL, 10);
        } else {
            unsigned long long u = strtoull(s, NULL, 10);
            if (u > INT64_MAX) {
                v->kind = EMILY_V_UINT;
                v->u = u;
            } else {
                v->kind = EMILY_V_INT;
                v->i = (int64_t)u;
            }
        }
        return 0;
    }
    if ((x = json_object_get(j, "atom"))) {
        v->kind = EMILY_V_ATOM;
        v->str = json_string_value(x);
        if (!v->str) goto bad; /* not a string: fail with the message */
        return 0;
    }
    if ((x = json_object_get(j, "complex"))) {
        emily_value a, b;
        if (json_array_size(x) != 2 || decode(t, json_array_get(x, 0), &a, dev, false, err, es) ||
            decode(t, json_array_get(x, 1), &b, dev, false, err, es))
            goto bad;
        v->kind = EMILY_V_COMPLEX;
        v->re = number_of(&a);
        v->im = number_of(&b);
        return 0;
    }
    if ((x = json_object_get(j, "binary"))) {
        size_t nb;
        const char *txt = json_string_value(x);
        unsigned char *bytes = track(t, b64_decode(txt ? txt : "", &nb));
        if (!bytes) goto oom;
        v->kind = EMILY_V_BINARY;
        v->str = (const char *)bytes;
        v->len = nb;
        return 0;
    }
bad:
    snprintf(err, es, "cannot decode a JSON argument");
    return -1;
oom:
    snprintf(err, es, "out of memory decoding JSON");
    return -1;
}

int jv_decode(jv_tree *tree, const json_t *json, emily_device device, bool as_template, char *err, size_t errsize) {
    tree->root = track(tree, calloc(1, sizeof(emily_value)));
    if (!tree->root) {
        snprintf(err, errsize, "out of memory");
        return -1;
    }
    return decode(tree, json, tree->root, device, as_template, err, errsize);
}

json_t *jv_encode_tensor(const emily_tensor *t) {
    size_t nb = emily_dtype_binary_size(emily_tensor_dtype(t), emily_tensor_size(t));
    unsigned char *bytes = malloc(nb ? nb : 1);
    if (!bytes) return NULL;
    if (emily_to_binary(t, bytes, nb)) {
        free(bytes);
        return NULL;
    }
    char *b64 = b64_encode(bytes, nb);
    free(bytes);
    if (!b64) return NULL;
    json_t *shape = json_array();
    for (int i = 0; i < emily_tensor_rank(t); i++) json_array_append_new(shape, json_integer(emily_tensor_shape(t)[i]));
    json_t *o = json_pack("{s:s, s:o, s:s}", "type", emily_dtype_name(emily_tensor_dtype(t)), "shape", shape, "data",
                          b64);
    free(b64);
    return o;
}
