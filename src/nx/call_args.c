/* Decoding callback arguments into C values. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error_prefix.h"
#include "nx/callback.h"
#include "ops/common.h"

struct emily_arena_block {
    emily_arena_block *next;
    max_align_t data[];
};

void *emi_call_alloc(emily_call *c, size_t nbytes) {
    emily_arena_block *b = malloc(sizeof *b + (nbytes ? nbytes : 1));
    if (!b) {
        emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", c->name);
        return NULL;
    }
    b->next = c->arena;
    c->arena = b;
    return b->data;
}

void emi_call_arena_free(emily_call *c) {
    while (c->arena) {
        emily_arena_block *next = c->arena->next;
        free(c->arena);
        c->arena = next;
    }
}

emily_status emi_call_fail(emily_call *c, emily_status code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emily_status s = emi_verror_prefixed(code, c->name, NULL, fmt, ap);
    va_end(ap);
    return s;
}

emily_status emi_call_arity(emily_call *c, size_t min, size_t max) {
    if (c->nargs < min || c->nargs > max)
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "expected %zu to %zu arguments, got %zu", min, max, c->nargs);
    return EMILY_OK;
}

const emily_value *emi_call_arg(emily_call *c, size_t i) { return i < c->nargs ? &c->args[i] : NULL; }

static const char *kind_name(emily_value_kind k) {
    static const char *names[] = {"nil",    "boolean", "integer", "integer",      "float",  "complex", "atom",
                                  "binary", "tuple",   "list",    "keyword list", "tensor", "template"};
    return (unsigned)k < sizeof names / sizeof *names ? names[k] : "?";
}

emily_status emi_call_tensor(emily_call *c, size_t i, emily_tensor **t) {
    const emily_value *v = emi_call_arg(c, i);
    if (!v) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "argument %zu is missing", i + 1);
    if (v->kind != EMILY_V_TENSOR || !v->tensor)
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "argument %zu must be a tensor, got %s", i + 1, kind_name(v->kind));
    *t = v->tensor;
    return EMILY_OK;
}

emily_status emi_call_tensor_list(emily_call *c, size_t i, emily_tensor ***ts, int *n) {
    const emily_value *v = emi_call_arg(c, i);
    if (!v || (v->kind != EMILY_V_LIST && v->kind != EMILY_V_TUPLE))
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "argument %zu must be a list of tensors", i + 1);
    emily_tensor **out = emi_call_alloc(c, (v->n + 1) * sizeof *out);
    if (!out) return EMILY_ERR_MEMORY;
    for (size_t k = 0; k < v->n; k++) {
        if (v->items[k].kind != EMILY_V_TENSOR || !v->items[k].tensor)
            return emi_call_fail(c, EMILY_ERR_ARGUMENT, "argument %zu: element %zu is not a tensor", i + 1, k);
        out[k] = v->items[k].tensor;
    }
    *ts = out;
    *n = (int)v->n;
    return EMILY_OK;
}

emily_status emi_value_int(emily_call *c, const emily_value *v, const char *what, int64_t *out) {
    if (!v) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s is missing", what);
    if (v->kind == EMILY_V_INT) {
        *out = v->i;
        return EMILY_OK;
    }
    if (v->kind == EMILY_V_TENSOR && v->tensor) return emi_value_tensor_int(c, v->tensor, what, out);
    return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be an integer, got %s", what, kind_name(v->kind));
}

emily_status emi_call_int(emily_call *c, size_t i, int64_t *v) {
    char what[32];
    snprintf(what, sizeof what, "argument %zu", i + 1);
    return emi_value_int(c, emi_call_arg(c, i), what, v);
}

emily_status emi_value_float(emily_call *c, const emily_value *v, const char *what, double *out) {
    if (!v) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s is missing", what);
    if (v->kind == EMILY_V_FLOAT) {
        *out = v->f;
        return EMILY_OK;
    }
    if (v->kind == EMILY_V_INT) {
        *out = (double)v->i;
        return EMILY_OK;
    }
    if (v->kind == EMILY_V_UINT) {
        *out = (double)v->u;
        return EMILY_OK;
    }
    return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be a number, got %s", what, kind_name(v->kind));
}

emily_status emi_value_bool(emily_call *c, const emily_value *v, const char *what, bool *out) {
    if (!v) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s is missing", what);
    if (v->kind == EMILY_V_BOOL) {
        *out = v->b;
        return EMILY_OK;
    }
    return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be true or false, got %s", what, kind_name(v->kind));
}

emily_status emi_value_atom(emily_call *c, const emily_value *v, const char *what, bool allow_nil, const char **out) {
    if (!v) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s is missing", what);
    if (v->kind == EMILY_V_ATOM) {
        *out = v->str;
        return EMILY_OK;
    }
    if (allow_nil && v->kind == EMILY_V_NIL) {
        *out = NULL;
        return EMILY_OK;
    }
    return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be an atom, got %s", what, kind_name(v->kind));
}

emily_status emi_value_int_list(emily_call *c, const emily_value *v, const char *what, int64_t **out, int *n) {
    if (!v || (v->kind != EMILY_V_LIST && v->kind != EMILY_V_TUPLE))
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be a list of integers", what);
    int64_t *vals = emi_call_alloc(c, (v->n + 1) * sizeof *vals);
    if (!vals) return EMILY_ERR_MEMORY;
    for (size_t k = 0; k < v->n; k++) {
        char w[96];
        snprintf(w, sizeof w, "%s[%zu]", what, k);
        emily_status s = emi_value_int(c, &v->items[k], w, &vals[k]);
        if (s) return s;
    }
    *out = vals;
    *n = (int)v->n;
    return EMILY_OK;
}

emily_status emi_value_axes(emily_call *c, const emily_value *v, const char *what, int **out, int *n) {
    if (v && v->kind == EMILY_V_NIL) {
        *out = NULL;
        *n = -1;
        return EMILY_OK;
    }
    int64_t *vals;
    emily_status s = emi_value_int_list(c, v, what, &vals, n);
    if (s) return s;
    int *axes = emi_call_alloc(c, ((size_t)*n + 1) * sizeof *axes);
    if (!axes) return EMILY_ERR_MEMORY;
    for (int k = 0; k < *n; k++) {
        if (vals[k] < -1000000 || vals[k] > 1000000)
            return emi_call_fail(c, EMILY_ERR_AXIS, "%s: axis %lld out of range", what, (long long)vals[k]);
        axes[k] = (int)vals[k];
    }
    *out = axes;
    return EMILY_OK;
}

emily_status emi_value_scalar(emily_call *c, const emily_value *v, const char *what, emily_scalar *out) {
    if (!v) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s is missing", what);
    switch (v->kind) {
    case EMILY_V_INT: *out = emily_scalar_int(v->i); return EMILY_OK;
    case EMILY_V_UINT: *out = (emily_scalar){.kind = EMILY_SCALAR_UINT, .u = v->u}; return EMILY_OK;
    case EMILY_V_FLOAT: *out = emily_scalar_float(v->f); return EMILY_OK;
    case EMILY_V_COMPLEX: *out = emily_scalar_complex(v->re, v->im); return EMILY_OK;
    case EMILY_V_ATOM:
        if (strcmp(v->str, "nan") == 0) {
            *out = emily_scalar_float(__builtin_nan(""));
            return EMILY_OK;
        }
        if (strcmp(v->str, "infinity") == 0) {
            *out = emily_scalar_float(__builtin_inf());
            return EMILY_OK;
        }
        if (strcmp(v->str, "neg_infinity") == 0) {
            *out = emily_scalar_float(-__builtin_inf());
            return EMILY_OK;
        }
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s: unknown number atom :%s", what, v->str);
    default: return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be a number, got %s", what, kind_name(v->kind));
    }
}

emily_status emi_value_tensor_int(emily_call *c, const emily_tensor *t, const char *what, int64_t *out) {
    if (emily_tensor_size(t) != 1 || !emily_dtype_is_integer(emily_tensor_dtype(t)))
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s must be an integer scalar tensor", what);
    emily_dtype dt = emily_tensor_dtype(t);
    unsigned char raw[8] = {0};
    emily_status s = emily_to_binary(t, raw, emily_dtype_size(dt));
    if (s) return s;
    if (dt == EMILY_U64) { /* saturates above INT64_MAX; every other integer fits */
        uint64_t x;
        memcpy(&x, raw, sizeof x);
        *out = x > INT64_MAX ? INT64_MAX : (int64_t)x;
        return EMILY_OK;
    }
    switch (dt) {
// clang-format off
#define READ_INT_(ENUM, sfx, T)      \
    case EMILY_##ENUM: {             \
        T x;                         \
        memcpy(&x, raw, sizeof x);   \
        *out = (int64_t)x;           \
        break;                       \
    }
        // clang-format on
        EMI_DTYPES_INTEGER(READ_INT_)
#undef READ_INT_
    default: break;
    }
    return EMILY_OK;
}

emily_status emi_call_opts(emily_call *c, size_t i, const emily_value **opts) {
    const emily_value *v = emi_call_arg(c, i);
    if (!v || (v->kind != EMILY_V_OPTS && !(v->kind == EMILY_V_LIST && v->n == 0)))
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "argument %zu must be a keyword list", i + 1);
    *opts = v;
    return EMILY_OK;
}

emily_status emi_call_tensors(emily_call *c, size_t min, size_t max, int n, emily_tensor **ts) {
    emily_status s = emi_call_arity(c, min, max);
    for (int i = 0; !s && i < n; i++) s = emi_call_tensor(c, (size_t)i, &ts[i]);
    return s;
}

emily_status emi_call_tensors_opts(emily_call *c, int n, emily_tensor **ts, const emily_value **opts) {
    *opts = NULL;
    emily_status s = emi_call_tensors(c, (size_t)n, (size_t)n + 1, n, ts);
    if (s || c->nargs <= (size_t)n) return s;
    return emi_call_opts(c, (size_t)n, opts);
}

const emily_value *emi_opt_get(const emily_value *opts, const char *key) {
    if (!opts || opts->kind != EMILY_V_OPTS) return NULL;
    for (size_t k = 0; k < opts->n; k++)
        if (opts->keys[k] && strcmp(opts->keys[k], key) == 0) return &opts->items[k];
    return NULL;
}

/* The value of an option that is given and not nil (NULL otherwise), and
 * its name for messages in what (the caller's, or "option :key"). */
static const emily_value *opt_given(const emily_value *opts, const char *key, const char *what, char *buf, size_t size,
                                    const char **name) {
    const emily_value *v = emi_opt_get(opts, key);
    if (!v || v->kind == EMILY_V_NIL) return NULL;
    if (what) {
        *name = what;
    } else {
        snprintf(buf, size, "option :%s", key);
        *name = buf;
    }
    return v;
}

emily_status emi_opt_int(emily_call *c, const emily_value *opts, const char *key, const char *what, int64_t *out) {
    char buf[64];
    const emily_value *v = opt_given(opts, key, what, buf, sizeof buf, &what);
    return v ? emi_value_int(c, v, what, out) : EMILY_OK;
}

emily_status emi_opt_float(emily_call *c, const emily_value *opts, const char *key, const char *what, double *out) {
    char buf[64];
    const emily_value *v = opt_given(opts, key, what, buf, sizeof buf, &what);
    return v ? emi_value_float(c, v, what, out) : EMILY_OK;
}

emily_status emi_opt_bool(emily_call *c, const emily_value *opts, const char *key, const char *what, bool *out) {
    char buf[64];
    const emily_value *v = opt_given(opts, key, what, buf, sizeof buf, &what);
    return v ? emi_value_bool(c, v, what, out) : EMILY_OK;
}

emily_status emi_opt_need(emily_call *c, const emily_value *opts, const char *key, const emily_value **out) {
    *out = emi_opt_get(opts, key);
    if (!*out) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "option :%s is missing", key);
    return EMILY_OK;
}

static const emily_value *template_at(const emily_value *out, int k) {
    if (!out) return NULL;
    if (out->kind == EMILY_V_TEMPLATE) return k == 0 ? out : NULL;
    if ((out->kind == EMILY_V_LIST || out->kind == EMILY_V_TUPLE) && (size_t)k < out->n &&
        out->items[k].kind == EMILY_V_TEMPLATE)
        return &out->items[k];
    return NULL;
}

emily_status emi_call_template(emily_call *c, int k, emily_dtype *dtype, int *rank, const int64_t **shape) {
    const emily_value *t = template_at(c->out, k);
    if (!t) return emi_call_fail(c, EMILY_ERR_ARGUMENT, "output template %d is missing", k);
    if (!emily_dtype_known(t->dtype))
        return emi_call_fail(c, EMILY_ERR_TYPE, "output template %d has an invalid type", k);
    if (dtype) *dtype = t->dtype;
    if (rank) *rank = t->rank;
    if (shape) *shape = t->shape;
    return EMILY_OK;
}

emily_status emi_call_check_output(emily_call *c, int k, emily_dtype dtype, int rank, const int64_t *shape) {
    if (c->mode == EMILY_DISPATCH_INFER) return EMILY_OK;
    emily_dtype want_dt;
    int want_rank;
    const int64_t *want_shape;
    emily_status s = emi_call_template(c, k, &want_dt, &want_rank, &want_shape);
    if (s) return s;
    bool same = (dtype == EMILY_DTYPE_AUTO || dtype == want_dt) && rank == want_rank;
    for (int i = 0; same && i < rank; i++) same = shape[i] == want_shape[i];
    if (same) return EMILY_OK;
    char a[256], b[256];
    return emi_call_fail(c, EMILY_ERR_INTERNAL, "output %d is %s%s but Nx expects %s%s", k,
                         dtype == EMILY_DTYPE_AUTO ? "" : emily_dtype_name(dtype),
                         emi_shape_str(rank, shape, a, sizeof a), emily_dtype_name(want_dt),
                         emi_shape_str(want_rank, want_shape, b, sizeof b));
}

emily_dtype emi_call_out_type(emily_call *c) {
    if (c->mode == EMILY_DISPATCH_INFER) return EMILY_DTYPE_AUTO;
    const emily_value *t = template_at(c->out, 0);
    return t ? t->dtype : EMILY_DTYPE_AUTO;
}

emily_status emi_call_return(emily_call *c, emily_tensor *t) {
    if (c->result->n >= EMILY_DISPATCH_MAX_OUTPUTS) {
        emily_tensor_release(t);
        return emi_call_fail(c, EMILY_ERR_INTERNAL, "too many outputs");
    }
    c->result->tensors[c->result->n++] = t;
    return EMILY_OK;
}
