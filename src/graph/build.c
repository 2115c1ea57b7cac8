/* Engine graphs: building (values, calls, outputs) and freeing. */
#include <stdlib.h>
#include <string.h>
#include "graph/graph_impl.h"
#include "core/tensor_impl.h"
#include "ops/common.h"

/* Value trees nest (lists of tuples of ...); deeper than this is refused
 * rather than recursed into. */
#define GRAPH_MAX_DEPTH 32

struct graph_block {
    graph_block *next;
    size_t used, cap;
    max_align_t data[];
};

void *emi_graph_alloc(emily_graph *g, size_t n) {
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (!n) n = sizeof(max_align_t);
    graph_block *b = g->mem;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        b = malloc(sizeof *b + cap);
        if (!b) {
            emily_error(EMILY_ERR_MEMORY, "graph: out of host memory");
            return NULL;
        }
        b->next = g->mem;
        b->used = 0;
        b->cap = cap;
        g->mem = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *emi_graph_strdup(emily_graph *g, const char *s, size_t len) {
    char *d = emi_graph_alloc(g, len + 1);
    if (d && len) memcpy(d, s, len);
    return d;
}

emily_status emily_graph_create(emily_graph **out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "graph_create: NULL output");
    *out = NULL;
    emily_graph *g = calloc(1, sizeof *g);
    if (!g) return emily_error(EMILY_ERR_MEMORY, "graph_create: out of host memory");
    if (pthread_mutex_init(&g->run_lock, NULL)) {
        free(g);
        return emily_error(EMILY_ERR_INTERNAL, "graph_create: cannot create a lock");
    }
    *out = g;
    return EMILY_OK;
}

void emily_graph_free(emily_graph *g) {
    if (!g) return;
    emi_graph_replay_free(g); /* before the constants: the recording may read them */
    for (int32_t i = 0; i < g->nvalues; i++)
        if (g->values[i].kind == GV_CONST) emily_tensor_release(g->values[i].tensor);
    for (int32_t i = 0; i < g->nsteps; i++) emi_fused_group_free(g->steps[i].group);
    for (int32_t i = 0; i < g->ncalls; i++) {
        emily_graph_free(g->calls[i].cond);
        emily_graph_free(g->calls[i].body);
        for (int b = 0; g->calls[i].branches && b <= g->calls[i].nclauses; b++)
            emily_graph_free(g->calls[i].branches[b]);
        free(g->calls[i].branches);
        free(g->calls[i].ncaptured);
    }
    free(g->steps);
    free(g->values);
    free(g->calls);
    free(g->params);
    free(g->outputs);
    for (graph_block *b = g->mem, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    pthread_mutex_destroy(&g->run_lock);
    free(g);
}

static emily_status check_building(const emily_graph *g, const char *op) {
    if (!g) return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL graph", op);
    if (g->compiled) return emily_error(EMILY_ERR_ARGUMENT, "%s: the graph is compiled and can no longer change", op);
    return EMILY_OK;
}

/* The graph's growing arrays (values, params, calls): items, n of them in
 * *cap allocated, with room for one more, doubled from `first` when full
 * (moved, perhaps; *cap updated). NULL, with *s the error, when it cannot
 * grow; `what` names the array in the error. */
static void *room_for_one(void *items, int32_t n, int32_t *cap, size_t size, int32_t first, const char *what,
                          emily_status *s) {
    *s = EMILY_OK;
    if (n < *cap) return items;
    if (*cap >= INT32_MAX / 2) {
        *s = emily_error(EMILY_ERR_ARGUMENT, "graph: too many %s", what);
        return NULL;
    }
    int32_t c = *cap ? *cap * 2 : first;
    void *p = realloc(items, (size_t)c * size);
    if (!p) {
        *s = emily_error(EMILY_ERR_MEMORY, "graph: out of host memory");
        return NULL;
    }
    *cap = c;
    return p;
}

emily_status emi_graph_push_value(emily_graph *g, graph_value v, int32_t *id) {
    emily_status s;
    graph_value *nv = room_for_one(g->values, g->nvalues, &g->values_cap, sizeof *nv, 64, "values", &s);
    if (!nv) return s;
    g->values = nv;
    v.last_use = -1;
    g->values[g->nvalues] = v;
    *id = g->nvalues++;
    return EMILY_OK;
}

static emily_status copy_shape(emily_graph *g, const char *op, int rank, const int64_t *shape, const int64_t **out) {
    if (rank < 0 || rank > EMILY_MAX_RANK)
        return emily_error(EMILY_ERR_SHAPE, "%s: rank %d is out of range (0 to %d)", op, rank, EMILY_MAX_RANK);
    if (rank && !shape) return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL shape", op);
    int64_t *s = emi_graph_alloc(g, sizeof(int64_t) * ((size_t)rank + 1));
    if (!s) return EMILY_ERR_MEMORY;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return emily_error(EMILY_ERR_SHAPE, "%s: negative dimension %lld", op, (long long)shape[i]);
        s[i] = shape[i];
    }
    int64_t n;
    if (!emi_shape_size(rank, s, &n)) return emily_error(EMILY_ERR_SHAPE, "%s: the shape has too many elements", op);
    *out = s;
    return EMILY_OK;
}

emily_status emily_graph_add_param(emily_graph *g, emily_dtype dtype, int rank, const int64_t *shape, int32_t *value) {
    emily_status s;
    if ((s = check_building(g, "graph_add_param"))) return s;
    if (!value) return emily_error(EMILY_ERR_ARGUMENT, "graph_add_param: NULL output");
    if (!emily_dtype_known(dtype)) return emily_error(EMILY_ERR_TYPE, "graph_add_param: unknown type %d", (int)dtype);
    graph_value v = {.kind = GV_PARAM, .dtype = dtype, .rank = rank};
    if ((s = copy_shape(g, "graph_add_param", rank, shape, &v.shape))) return s;
    int32_t *np = room_for_one(g->params, g->nparams, &g->params_cap, sizeof *np, 16, "parameters", &s);
    if (!np) return s;
    g->params = np;
    v.node = g->nparams;
    if ((s = emi_graph_push_value(g, v, value))) return s;
    g->params[g->nparams++] = *value;
    return EMILY_OK;
}

emily_status emily_graph_add_const(emily_graph *g, emily_tensor *t, int32_t *value) {
    emily_status s;
    if ((s = check_building(g, "graph_add_const"))) return s;
    if (!value) return emily_error(EMILY_ERR_ARGUMENT, "graph_add_const: NULL output");
    /* any type: narrow ones too, as parameters (emily_graph_run) */
    if (!t) return emily_error(EMILY_ERR_ARGUMENT, "graph_add_const: the tensor is NULL");
    graph_value v = {.kind = GV_CONST, .node = -1, .tensor = t, .dtype = t->dtype, .rank = t->rank, .shape = t->shape};
    if ((s = emi_graph_push_value(g, v, value))) return s;
    emily_tensor_retain(t);
    return EMILY_OK;
}

static emily_status copy_tree(emily_graph *g, const emily_value *src, emily_value *dst, int32_t limit,
                              const char *where, int depth) {
    if (depth > GRAPH_MAX_DEPTH)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: arguments nest deeper than %d levels", where, GRAPH_MAX_DEPTH);
    *dst = *src;
    dst->items = NULL;
    dst->keys = NULL;
    dst->shape = NULL;
    dst->str = NULL;
    dst->tensor = NULL;
    emily_status s;
    switch (src->kind) {
    case EMILY_V_NIL:
    case EMILY_V_BOOL:
    case EMILY_V_INT:
    case EMILY_V_UINT:
    case EMILY_V_FLOAT:
    case EMILY_V_COMPLEX: return EMILY_OK;
    case EMILY_V_ATOM:
    case EMILY_V_BINARY:
        if (src->len && !src->str) return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL string", where);
        dst->str = emi_graph_strdup(g, src->str ? src->str : "", src->len);
        return dst->str ? EMILY_OK : EMILY_ERR_MEMORY;
    case EMILY_V_TEMPLATE:
        if (!emily_dtype_known(src->dtype))
            return emily_error(EMILY_ERR_TYPE, "%s: a template has an unknown type", where);
        return copy_shape(g, where, src->rank, src->shape, &dst->shape);
    case EMILY_V_REF:
        if (src->i < 0 || src->i >= limit)
            return emily_error(EMILY_ERR_ARGUMENT, "%s: value %lld is not defined before this call", where,
                               (long long)src->i);
        return EMILY_OK;
    case EMILY_V_TENSOR: {
        int32_t id;
        if ((s = emily_graph_add_const(g, src->tensor, &id))) return s;
        dst->kind = EMILY_V_REF;
        dst->i = id;
        return EMILY_OK;
    }
    case EMILY_V_TUPLE:
    case EMILY_V_LIST:
    case EMILY_V_OPTS:
        if (src->n && !src->items) return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL items", where);
        if (src->n > (size_t)1 << 24) return emily_error(EMILY_ERR_ARGUMENT, "%s: too many items", where);
        dst->items = emi_graph_alloc(g, sizeof(emily_value) * (src->n + 1));
        if (!dst->items) return EMILY_ERR_MEMORY;
        if (src->kind == EMILY_V_OPTS) {
            if (src->n && !src->keys) return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL option keys", where);
            const char **keys = emi_graph_alloc(g, sizeof(char *) * (src->n + 1));
            if (!keys) return EMILY_ERR_MEMORY;
            for (size_t i = 0; i < src->n; i++) {
                if (!src->keys[i]) return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL option key", where);
                if (!(keys[i] = emi_graph_strdup(g, src->keys[i], strlen(src->keys[i])))) return EMILY_ERR_MEMORY;
            }
            dst->keys = keys;
        }
        for (size_t i = 0; i < src->n; i++)
            if ((s = copy_tree(g, &src->items[i], &dst->items[i], limit, where, depth + 1))) return s;
        return EMILY_OK;
    }
    return emily_error(EMILY_ERR_ARGUMENT, "%s: unknown value kind %d", where, (int)src->kind);
}

emily_status emi_graph_copy_value(emily_graph *g, const emily_value *src, emily_value *dst, int32_t limit,
                                  const char *where) {
    return copy_tree(g, src, dst, limit, where, 0);
}

static void count_refs(const emily_value *v, int *n, emily_value **slots) {
    if (v->kind == EMILY_V_REF) {
        if (slots) slots[*n] = (emily_value *)v;
        (*n)++;
    } else if (v->kind == EMILY_V_TUPLE || v->kind == EMILY_V_LIST || v->kind == EMILY_V_OPTS) {
        for (size_t i = 0; i < v->n; i++) count_refs(&v->items[i], n, slots);
    }
}

emily_status emi_graph_collect_refs(emily_graph *g, graph_call *c) {
    int n = 0;
    for (size_t i = 0; i < c->nargs; i++) count_refs(&c->args[i], &n, NULL);
    c->refs = emi_graph_alloc(g, sizeof(emily_value *) * ((size_t)n + 1));
    if (!c->refs) return EMILY_ERR_MEMORY;
    c->nrefs = 0;
    for (size_t i = 0; i < c->nargs; i++) count_refs(&c->args[i], &c->nrefs, c->refs);
    return EMILY_OK;
}

int emi_graph_template_count(const emily_value *out) { return out->kind == EMILY_V_TEMPLATE ? 1 : (int)out->n; }

const emily_value *emi_graph_template_at(const emily_value *out, int k) {
    if (out->kind == EMILY_V_TEMPLATE) return k == 0 ? out : NULL;
    if ((out->kind == EMILY_V_LIST || out->kind == EMILY_V_TUPLE) && k >= 0 && (size_t)k < out->n &&
        out->items[k].kind == EMILY_V_TEMPLATE)
        return &out->items[k];
    return NULL;
}

static emily_status add_call_of(emily_graph *g, const char *callback, const emily_callback_entry *entry,
                                const emily_value *out, const emily_value *args, size_t nargs, int32_t *first,
                                int max_outputs);

emily_status emily_graph_add_call(emily_graph *g, const char *callback, const emily_value *out, const emily_value *args,
                                  size_t nargs, int32_t *first) {
    emily_status s;
    if ((s = check_building(g, "graph_add_call"))) return s;
    if (!first) return emily_error(EMILY_ERR_ARGUMENT, "graph_add_call: NULL output");
    if (!callback) return emily_error(EMILY_ERR_ARGUMENT, "graph_add_call: NULL callback name");
    const emily_callback_entry *entry = emi_callback_find(callback);
    if (!entry) return emily_error(EMILY_ERR_UNSUPPORTED, "graph_add_call: unknown callback %s", callback);
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "graph_add_call: %s: NULL output template", callback);
    if (nargs && !args) return emily_error(EMILY_ERR_ARGUMENT, "graph_add_call: %s: NULL arguments", callback);
    if (nargs > 64) return emily_error(EMILY_ERR_ARGUMENT, "graph_add_call: %s: %zu arguments", callback, nargs);
    return add_call_of(g, callback, entry, out, args, nargs, first, EMILY_DISPATCH_MAX_OUTPUTS);
}

static emily_status add_call_of(emily_graph *g, const char *callback, const emily_callback_entry *entry,
                                const emily_value *out, const emily_value *args, size_t nargs, int32_t *first,
                                int max_outputs) {
    emily_status s;
    if (out->kind != EMILY_V_TEMPLATE && out->kind != EMILY_V_LIST && out->kind != EMILY_V_TUPLE)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_add_call: %s: the output must be a template or a list of them",
                           callback);
    int nout = emi_graph_template_count(out);
    for (int k = 0; k < nout; k++)
        if (!emi_graph_template_at(out, k))
            return emily_error(EMILY_ERR_ARGUMENT, "graph_add_call: %s: output %d is not a template", callback, k);
    if (nout < 1 || nout > max_outputs)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_add_call: %s: %d outputs (1 to %d)", callback, nout, max_outputs);
    graph_call *nc = room_for_one(g->calls, g->ncalls, &g->calls_cap, sizeof *nc, 64, "calls", &s);
    if (!nc) return s;
    g->calls = nc;
    char where[96];
    snprintf(where, sizeof where, "graph_add_call: %s", callback);
    graph_call c = {.entry = entry, .nargs = nargs, .fused_group = -1};
    int32_t limit = g->nvalues;
    int32_t values_before = g->nvalues;
    if (!(c.callback = emi_graph_strdup(g, callback, strlen(callback)))) return EMILY_ERR_MEMORY;
    if ((s = emi_graph_copy_value(g, out, &c.out, limit, where))) goto undo;
    if (!(c.args = emi_graph_alloc(g, sizeof(emily_value) * (nargs + 1)))) {
        s = EMILY_ERR_MEMORY;
        goto undo;
    }
    for (size_t i = 0; i < nargs; i++)
        if ((s = emi_graph_copy_value(g, &args[i], &c.args[i], limit, where))) goto undo;
    if ((s = emi_graph_collect_refs(g, &c))) goto undo;
    c.nout = nout;
    c.first = g->nvalues;
    for (int k = 0; k < nout; k++) {
        const emily_value *t = emi_graph_template_at(&c.out, k);
        graph_value v = {
            .kind = GV_CALL, .node = g->ncalls, .k = k, .dtype = t->dtype, .rank = t->rank, .shape = t->shape};
        int32_t id;
        if ((s = emi_graph_push_value(g, v, &id))) goto undo;
    }
    g->calls[g->ncalls++] = c;
    *first = c.first;
    return EMILY_OK;
undo:
    /* constants taken from this call's arguments go again */
    while (g->nvalues > values_before) {
        graph_value *v = &g->values[--g->nvalues];
        if (v->kind == GV_CONST) emily_tensor_release(v->tensor);
    }
    return s;
}

emily_status emily_graph_set_outputs(emily_graph *g, size_t n, const int32_t *values) {
    emily_status s;
    if ((s = check_building(g, "graph_set_outputs"))) return s;
    if (n && !values) return emily_error(EMILY_ERR_ARGUMENT, "graph_set_outputs: NULL values");
    if (n > (size_t)INT32_MAX / 2) return emily_error(EMILY_ERR_ARGUMENT, "graph_set_outputs: too many outputs");
    for (size_t i = 0; i < n; i++)
        if (values[i] < 0 || values[i] >= g->nvalues)
            return emily_error(EMILY_ERR_ARGUMENT, "graph_set_outputs: output %zu names value %d, which does not exist",
                               i, (int)values[i]);
    int32_t *o = malloc((n + 1) * sizeof *o);
    if (!o) return emily_error(EMILY_ERR_MEMORY, "graph: out of host memory");
    if (n) memcpy(o, values, n * sizeof *o);
    free(g->outputs);
    g->outputs = o;
    g->noutputs = (int32_t)n;
    return EMILY_OK;
}

size_t emily_graph_num_params(const emily_graph *g) { return g ? (size_t)g->nparams : 0; }
size_t emily_graph_num_outputs(const emily_graph *g) { return g ? (size_t)g->noutputs : 0; }

emily_status emily_graph_param_spec(const emily_graph *g, size_t i, emily_dtype *dtype, int *rank,
                                    const int64_t **shape) {
    if (!g) return emily_error(EMILY_ERR_ARGUMENT, "graph_param_spec: NULL graph");
    if (i >= (size_t)g->nparams)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_param_spec: parameter %zu of %d", i, (int)g->nparams);
    const graph_value *v = &g->values[g->params[i]];
    if (dtype) *dtype = v->dtype;
    if (rank) *rank = v->rank;
    if (shape) *shape = v->shape;
    return EMILY_OK;
}

emily_status emily_graph_get_stats(const emily_graph *g, emily_graph_stats *stats) {
    if (!g || !stats) return emily_error(EMILY_ERR_ARGUMENT, "graph_get_stats: NULL argument");
    *stats = g->stats;
    return EMILY_OK;
}

emily_status emily_graph_value_spec(const emily_graph *g, int32_t value, emily_dtype *dtype, int *rank,
                                    const int64_t **shape) {
    if (!g) return emily_error(EMILY_ERR_ARGUMENT, "graph_value_spec: NULL graph");
    if (value < 0 || value >= g->nvalues)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_value_spec: value %d does not exist", (int)value);
    const graph_value *v = &g->values[value];
    if (dtype) *dtype = v->dtype;
    if (rank) *rank = v->rank;
    if (shape) *shape = v->shape;
    return EMILY_OK;
}

static bool same_spec(const graph_value *a, emily_dtype dt, int rank, const int64_t *shape) {
    if (a->dtype != dt || a->rank != rank) return false;
    for (int i = 0; i < rank; i++)
        if (a->shape[i] != shape[i]) return false;
    return true;
}

static int graph_depth(const emily_graph *g) {
    int d = 0;
    for (int32_t i = 0; g && i < g->ncalls; i++) {
        int c = graph_depth(g->calls[i].cond), b = graph_depth(g->calls[i].body);
        if (c > d) d = c;
        if (b > d) d = b;
        for (int k = 0; g->calls[i].branches && k <= g->calls[i].nclauses; k++) {
            int x = graph_depth(g->calls[i].branches[k]);
            if (x > d) d = x;
        }
    }
    return g ? d + 1 : 0;
}

emily_status emily_graph_add_while(emily_graph *g, emily_graph *cond, emily_graph *body, size_t n,
                                   const int32_t *initial, int32_t *first) {
    /* the same graph twice: nothing is taken (freeing it once would leave
     * the caller's other pointer dangling) */
    if (cond && (cond == g || body == g || cond == body))
        return emily_error(EMILY_ERR_ARGUMENT,
                           "graph_add_while: the condition, the body and the graph must be three graphs");
    emily_status s = check_building(g, "graph_add_while");
    if (!s && (!cond || !body || !first || (n && !initial)))
        s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_while: NULL argument");
    if (!s && (cond->compiled || body->compiled))
        s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_while: the condition and the body must not be compiled");
    if (!s && (n == 0 || n > 4096))
        s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_while: %zu state values (1 to 4096)", n);
    if (!s && ((size_t)cond->nparams != n || (size_t)body->nparams != n))
        s = emily_error(EMILY_ERR_ARGUMENT,
                        "graph_add_while: the state has %zu values; the condition takes %d parameters, the body %d", n,
                        (int)cond->nparams, (int)body->nparams);
    if (!s && (cond->noutputs != 1 || (size_t)body->noutputs != n))
        s = emily_error(EMILY_ERR_ARGUMENT,
                        "graph_add_while: the condition must have 1 output (it has %d), the body %zu (it has %d)",
                        (int)cond->noutputs, n, (int)body->noutputs);
    if (!s && graph_depth(cond) + graph_depth(body) > GRAPH_MAX_NESTING)
        s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_while: loops nest deeper than %d", GRAPH_MAX_NESTING);
    for (size_t i = 0; !s && i < n; i++) {
        if (initial[i] < 0 || initial[i] >= g->nvalues) {
            s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_while: state value %zu (%d) is not defined", i,
                            (int)initial[i]);
            break;
        }
        const graph_value *v = &g->values[initial[i]], *cp = &cond->values[cond->params[i]],
                          *bp = &body->values[body->params[i]], *bo = &body->values[body->outputs[i]];
        if (!same_spec(cp, v->dtype, v->rank, v->shape) || !same_spec(bp, v->dtype, v->rank, v->shape) ||
            !same_spec(bo, v->dtype, v->rank, v->shape)) {
            char a[256];
            s = emily_error(EMILY_ERR_SHAPE,
                            "graph_add_while: state value %zu is %s%s; the condition's and the body's parameter %zu "
                            "and the body's output %zu must be too",
                            i, emily_dtype_name(v->dtype), emi_shape_str(v->rank, v->shape, a, sizeof a), i, i);
        }
    }
    if (!s) {
        const graph_value *p = &cond->values[cond->outputs[0]];
        if (p->rank != 0 || emily_dtype_is_complex(p->dtype))
            s = emily_error(EMILY_ERR_SHAPE, "graph_add_while: the condition must give a real scalar, not %s rank %d",
                            emily_dtype_name(p->dtype), p->rank);
    }
    if (s) {
        emily_graph_free(cond);
        emily_graph_free(body);
        return s;
    }
    /* the state's templates and references, as an ordinary call's */
    emily_value *tmpl = malloc(sizeof(emily_value) * n), *refs = malloc(sizeof(emily_value) * n);
    if (!tmpl || !refs) {
        free(tmpl);
        free(refs);
        emily_graph_free(cond);
        emily_graph_free(body);
        return emily_error(EMILY_ERR_MEMORY, "graph: out of host memory");
    }
    for (size_t i = 0; i < n; i++) {
        const graph_value *v = &g->values[initial[i]];
        tmpl[i] = (emily_value){.kind = EMILY_V_TEMPLATE, .dtype = v->dtype, .rank = v->rank, .shape = v->shape};
        refs[i] = (emily_value){.kind = EMILY_V_REF, .i = initial[i]};
    }
    emily_value out = {.kind = EMILY_V_LIST, .items = tmpl, .n = n};
    s = add_call_of(g, "while", NULL, &out, refs, n, first, n);
    free(tmpl);
    free(refs);
    if (s) {
        emily_graph_free(cond);
        emily_graph_free(body);
        return s;
    }
    g->calls[g->ncalls - 1].cond = cond;
    g->calls[g->ncalls - 1].body = body;
    return EMILY_OK;
}

static void free_branches(emily_graph **branches, size_t n) {
    for (size_t b = 0; b < n; b++) emily_graph_free(branches[b]);
}

emily_status emily_graph_add_cond(emily_graph *g, size_t nclauses, const int32_t *preds, emily_graph **branches,
                                  const size_t *ncaptured, const int32_t *captured, int32_t *first) {
    if (!branches || !ncaptured || !first || (nclauses && !preds))
        return emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: NULL argument");
    if (nclauses == 0 || nclauses > 1024)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: %zu clauses (1 to 1024)", nclauses);
    size_t nb = nclauses + 1, total = 0;
    for (size_t b = 0; b < nb; b++) {
        if (!branches[b] || branches[b] == g)
            return emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: branch %zu is NULL or the graph itself", b);
        for (size_t c = 0; c < b; c++)
            if (branches[c] == branches[b])
                return emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: branches %zu and %zu are one graph", c, b);
    }
    emily_status s = check_building(g, "graph_add_cond");
    for (size_t b = 0; !s && b < nb; b++) {
        const emily_graph *br = branches[b];
        if (br->compiled) s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: branch %zu is compiled", b);
        else if ((size_t)br->nparams != ncaptured[b])
            s = emily_error(EMILY_ERR_ARGUMENT,
                            "graph_add_cond: branch %zu takes %d parameters, %zu values are captured", b,
                            (int)br->nparams, ncaptured[b]);
        else if (br->noutputs < 1 || br->noutputs != branches[0]->noutputs)
            s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: branch %zu has %d outputs, branch 0 %d", b,
                            (int)br->noutputs, (int)branches[0]->noutputs);
        total += ncaptured[b];
    }
    if (!s && total && !captured) s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: NULL captured values");
    if (!s && total > 65536) s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: %zu captured values", total);
    for (size_t b = 0; !s && b < nb; b++)
        if (graph_depth(branches[b]) >= GRAPH_MAX_NESTING)
            s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: conditionals and loops nest deeper than %d",
                            GRAPH_MAX_NESTING);
    for (size_t k = 0; !s && k < nclauses; k++) {
        if (preds[k] < 0 || preds[k] >= g->nvalues) {
            s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: predicate %zu (%d) is not defined", k, (int)preds[k]);
            break;
        }
        const graph_value *p = &g->values[preds[k]];
        if (p->rank != 0 || emily_dtype_is_complex(p->dtype))
            s = emily_error(EMILY_ERR_SHAPE, "graph_add_cond: predicate %zu must be a real scalar, not %s rank %d", k,
                            emily_dtype_name(p->dtype), p->rank);
    }
    size_t off = 0;
    for (size_t b = 0; !s && b < nb; b++) {
        const emily_graph *br = branches[b];
        for (size_t i = 0; !s && i < ncaptured[b]; i++) {
            int32_t id = captured[off + i];
            if (id < 0 || id >= g->nvalues) {
                s = emily_error(EMILY_ERR_ARGUMENT, "graph_add_cond: captured value %d is not defined", (int)id);
                break;
            }
            const graph_value *v = &g->values[id], *bp = &br->values[br->params[i]];
            if (!same_spec(bp, v->dtype, v->rank, v->shape))
                s = emily_error(EMILY_ERR_SHAPE, "graph_add_cond: parameter %zu of branch %zu does not match its value",
                                i, b);
        }
        off += ncaptured[b];
        for (int32_t k = 0; !s && k < br->noutputs; k++) {
            const graph_value *o = &br->values[br->outputs[k]], *o0 = &branches[0]->values[branches[0]->outputs[k]];
            if (!same_spec(o, o0->dtype, o0->rank, o0->shape))
                s = emily_error(EMILY_ERR_SHAPE, "graph_add_cond: output %d of branch %zu differs from branch 0's",
                                (int)k, b);
        }
    }
    if (s) {
        free_branches(branches, nb);
        return s;
    }
    int32_t nout = branches[0]->noutputs;
    size_t nargs = nclauses + total;
    emily_value *tmpl = malloc(sizeof(emily_value) * (size_t)nout), *refs = malloc(sizeof(emily_value) * (nargs + 1));
    emily_graph **owned = malloc(sizeof(emily_graph *) * nb);
    size_t *counts = malloc(sizeof(size_t) * nb);
    if (!tmpl || !refs || !owned || !counts) {
        free(tmpl);
        free(refs);
        free(owned);
        free(counts);
        free_branches(branches, nb);
        return emily_error(EMILY_ERR_MEMORY, "graph: out of host memory");
    }
    for (int32_t k = 0; k < nout; k++) {
        const graph_value *o = &branches[0]->values[branches[0]->outputs[k]];
        tmpl[k] = (emily_value){.kind = EMILY_V_TEMPLATE, .dtype = o->dtype, .rank = o->rank, .shape = o->shape};
    }
    for (size_t k = 0; k < nclauses; k++) refs[k] = (emily_value){.kind = EMILY_V_REF, .i = preds[k]};
    for (size_t i = 0; i < total; i++) refs[nclauses + i] = (emily_value){.kind = EMILY_V_REF, .i = captured[i]};
    emily_value out = {.kind = EMILY_V_LIST, .items = tmpl, .n = (size_t)nout};
    s = add_call_of(g, "cond", NULL, &out, refs, nargs, first, 65536);
    free(tmpl);
    free(refs);
    if (s) {
        free(owned);
        free(counts);
        free_branches(branches, nb);
        return s;
    }
    graph_call *c = &g->calls[g->ncalls - 1];
    memcpy(owned, branches, sizeof(emily_graph *) * nb);
    memcpy(counts, ncaptured, sizeof(size_t) * nb);
    c->branches = owned;
    c->nclauses = (int)nclauses;
    c->ncaptured = counts;
    return EMILY_OK;
}
