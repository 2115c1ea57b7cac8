/* Engine graphs: the file format.
 *
 * Little-endian records in value order, replayed through the building
 * functions on load (which check them as they check any caller):
 *
 *   "EMGRAPH" 0x00, u32 version (1)
 *   then per record a tag byte:
 *     'P' param:    u8 dtype, u32 rank, i64 dims[rank]
 *     'C' constant: u8 dtype, u32 rank, i64 dims[rank], u64 nbytes, bytes
 *     'N' call:     u16 name length, name, tree out, u32 nargs, tree args[nargs]
 *     'W' while:    u32 n, i32 initial[n], u64 length, condition graph
 *                   (this format, nested), u64 length, body graph
 *     'I' cond:     u32 nclauses, i32 preds[nclauses], then per branch
 *                   (nclauses + 1): u32 ncaptured, i32 captured[ncaptured],
 *                   u64 length, branch graph
 *     'O' outputs:  u32 n, i32 values[n]   (last record)
 *   tree: u8 kind (emily_value_kind), then by kind: BOOL u8; INT i64;
 *     UINT u64; FLOAT f64; COMPLEX f64 f64; ATOM/BINARY u32 len, bytes;
 *     TUPLE/LIST u32 n, trees; OPTS u32 n, (u16 key length, key, tree)*;
 *     TEMPLATE u8 dtype, u32 rank, i64 dims; REF i32; NIL nothing.
 *
 * A constant computed by compile (folding) is written as the call it came
 * from, so a loaded graph is the graph as built. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "graph/graph_impl.h"
#include "core/bytes_append.h"

#define GRAPH_MAGIC "EMGRAPH"
#define GRAPH_VERSION 1u
#define LOAD_MAX_DEPTH 32

/* ---- writing ------------------------------------------------------------ */

typedef struct writer {
    unsigned char *buf;
    size_t len, cap;
    bool failed;
} writer;

static void put(writer *w, const void *p, size_t n) {
    if (!w->failed && !emi_bytes_append(&w->buf, &w->len, &w->cap, 4096, p, n)) w->failed = true;
}

/* the format is little-endian, as every host the engine builds for is */
static void put_u8(writer *w, unsigned v) {
    unsigned char b = (unsigned char)v;
    put(w, &b, 1);
}
static void put_u16(writer *w, uint16_t v) { put(w, &v, 2); }
static void put_u32(writer *w, uint32_t v) { put(w, &v, 4); }
static void put_i32(writer *w, int32_t v) { put(w, &v, 4); }
static void put_i64(writer *w, int64_t v) { put(w, &v, 8); }
static void put_u64(writer *w, uint64_t v) { put(w, &v, 8); }
static void put_f64(writer *w, double v) { put(w, &v, 8); }

static void put_spec(writer *w, emily_dtype dt, int rank, const int64_t *shape) {
    put_u8(w, (unsigned)dt);
    put_u32(w, (uint32_t)rank);
    for (int i = 0; i < rank; i++) put_i64(w, shape[i]);
}

static void put_tree(writer *w, const emily_value *v) {
    put_u8(w, (unsigned)v->kind);
    switch (v->kind) {
    case EMILY_V_NIL: break;
    case EMILY_V_BOOL: put_u8(w, v->b); break;
    case EMILY_V_INT: put_i64(w, v->i); break;
    case EMILY_V_UINT: put_u64(w, v->u); break;
    case EMILY_V_FLOAT: put_f64(w, v->f); break;
    case EMILY_V_COMPLEX:
        put_f64(w, v->re);
        put_f64(w, v->im);
        break;
    case EMILY_V_ATOM:
    case EMILY_V_BINARY:
        put_u32(w, (uint32_t)v->len);
        put(w, v->str, v->len);
        break;
    case EMILY_V_TUPLE:
    case EMILY_V_LIST:
        put_u32(w, (uint32_t)v->n);
        for (size_t i = 0; i < v->n; i++) put_tree(w, &v->items[i]);
        break;
    case EMILY_V_OPTS:
        put_u32(w, (uint32_t)v->n);
        for (size_t i = 0; i < v->n; i++) {
            size_t kl = strlen(v->keys[i]);
            put_u16(w, (uint16_t)kl);
            put(w, v->keys[i], kl);
            put_tree(w, &v->items[i]);
        }
        break;
    case EMILY_V_TEMPLATE: put_spec(w, v->dtype, v->rank, v->shape); break;
    case EMILY_V_REF: put_i32(w, (int32_t)v->i); break;
    case EMILY_V_TENSOR: w->failed = true; break; /* graphs hold none (add_call makes them constants) */
    }
}

/* A loop's condition or body, or a conditional's branch: its own saved
 * bytes, their length first. */
static emily_status put_subgraph(writer *w, const emily_graph *sub) {
    void *sb;
    size_t sn;
    emily_status s = emily_graph_save_buffer(sub, &sb, &sn);
    if (s) return s;
    put_u64(w, sn);
    put(w, sb, sn);
    free(sb);
    return EMILY_OK;
}

emily_status emily_graph_save_buffer(const emily_graph *g, void **bytes, size_t *size) {
    if (!g || !bytes || !size) return emily_error(EMILY_ERR_ARGUMENT, "graph_save: NULL argument");
    *bytes = NULL;
    *size = 0;
    writer w = {0};
    put(&w, GRAPH_MAGIC, 8);
    put_u32(&w, GRAPH_VERSION);
    emily_status s = EMILY_OK;
    for (int32_t i = 0; i < g->nvalues && !s && !w.failed; i++) {
        const graph_value *v = &g->values[i];
        if (v->kind == GV_PARAM) {
            put_u8(&w, 'P');
            put_spec(&w, v->dtype, v->rank, v->shape);
        } else if (v->kind == GV_CONST && !v->folded) {
            size_t nb = emily_dtype_binary_size(emily_tensor_dtype(v->tensor), emily_tensor_size(v->tensor));
            void *host = malloc(nb ? nb : 1);
            if (!host) {
                s = emily_error(EMILY_ERR_MEMORY, "graph_save: out of host memory");
                break;
            }
            if (!(s = emily_to_binary(v->tensor, host, nb))) {
                put_u8(&w, 'C');
                put_spec(&w, v->dtype, v->rank, v->shape);
                put_u64(&w, nb);
                put(&w, host, nb);
            }
            free(host);
        } else if (v->k == 0 && g->calls[v->node].cond) { /* a loop */
            const graph_call *c = &g->calls[v->node];
            put_u8(&w, 'W');
            put_u32(&w, (uint32_t)c->nargs);
            for (size_t a = 0; a < c->nargs; a++) put_i32(&w, (int32_t)c->args[a].i);
            if (!(s = put_subgraph(&w, c->cond))) s = put_subgraph(&w, c->body);
        } else if (v->k == 0 && g->calls[v->node].branches) { /* a conditional */
            const graph_call *c = &g->calls[v->node];
            put_u8(&w, 'I');
            put_u32(&w, (uint32_t)c->nclauses);
            for (int k = 0; k < c->nclauses; k++) put_i32(&w, (int32_t)c->args[k].i);
            size_t off = (size_t)c->nclauses;
            for (int b = 0; b <= c->nclauses && !s; b++) {
                put_u32(&w, (uint32_t)c->ncaptured[b]);
                for (size_t i = 0; i < c->ncaptured[b]; i++) put_i32(&w, (int32_t)c->args[off + i].i);
                off += c->ncaptured[b];
                s = put_subgraph(&w, c->branches[b]);
            }
        } else if (v->k == 0) { /* the first output of a call (folded or not) */
            const graph_call *c = &g->calls[v->node];
            size_t nl = strlen(c->callback);
            put_u8(&w, 'N');
            put_u16(&w, (uint16_t)nl);
            put(&w, c->callback, nl);
            put_tree(&w, &c->out);
            put_u32(&w, (uint32_t)c->nargs);
            for (size_t a = 0; a < c->nargs; a++) put_tree(&w, &c->args[a]);
        }
    }
    if (!s) {
        put_u8(&w, 'O');
        put_u32(&w, (uint32_t)g->noutputs);
        for (int32_t k = 0; k < g->noutputs; k++) put_i32(&w, g->outputs[k]);
    }
    if (!s && w.failed) s = emily_error(EMILY_ERR_MEMORY, "graph_save: out of host memory");
    if (s) {
        free(w.buf);
        return s;
    }
    *bytes = w.buf;
    *size = w.len;
    return EMILY_OK;
}

emily_status emily_graph_save(const emily_graph *g, const char *path) {
    if (!path) return emily_error(EMILY_ERR_ARGUMENT, "graph_save: NULL path");
    void *bytes;
    size_t size;
    emily_status s = emily_graph_save_buffer(g, &bytes, &size);
    if (s) return s;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(bytes);
        return emily_error(EMILY_ERR_ARGUMENT, "graph_save: cannot open %s for writing", path);
    }
    bool ok = fwrite(bytes, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    free(bytes);
    return ok ? EMILY_OK : emily_error(EMILY_ERR_ARGUMENT, "graph_save: cannot write %s", path);
}

/* ---- reading ------------------------------------------------------------ */

typedef struct reader {
    const unsigned char *p;
    size_t len, pos;
    emily_graph *g; /* trees are built in the graph's memory */
    int depth;      /* of loop bodies */
} reader;

static emily_status truncated(const reader *r) {
    return emily_error(EMILY_ERR_ARGUMENT, "graph_load: the file ends early (byte %zu)", r->pos);
}

static emily_status get(reader *r, void *dst, size_t n) {
    if (r->len - r->pos < n) return truncated(r);
    memcpy(dst, r->p + r->pos, n);
    r->pos += n;
    return EMILY_OK;
}

static emily_status get_spec(reader *r, emily_dtype *dt, int *rank, int64_t **shape) {
    uint8_t d = 0;
    uint32_t rk = 0;
    emily_status s;
    if ((s = get(r, &d, 1)) || (s = get(r, &rk, 4))) return s;
    if (!emily_dtype_known((emily_dtype)d))
        return emily_error(EMILY_ERR_ARGUMENT, "graph_load: unknown type %u at byte %zu", d, r->pos);
    if (rk > EMILY_MAX_RANK)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_load: rank %u at byte %zu is out of range", rk, r->pos);
    if ((size_t)rk * 8 > r->len - r->pos) return truncated(r);
    int64_t *dims = emi_graph_alloc(r->g, sizeof(int64_t) * ((size_t)rk + 1));
    if (!dims) return EMILY_ERR_MEMORY;
    for (uint32_t i = 0; i < rk; i++)
        if ((s = get(r, &dims[i], 8))) return s;
    *dt = (emily_dtype)d;
    *rank = (int)rk;
    *shape = dims;
    return EMILY_OK;
}

static emily_status get_tree(reader *r, emily_value *v, int depth) {
    if (depth > LOAD_MAX_DEPTH)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_load: values nest deeper than %d at byte %zu", LOAD_MAX_DEPTH,
                           r->pos);
    uint8_t kind = 0;
    emily_status s;
    if ((s = get(r, &kind, 1))) return s;
    memset(v, 0, sizeof *v);
    v->kind = (emily_value_kind)kind;
    uint32_t n = 0;
    switch (v->kind) {
    case EMILY_V_NIL: return EMILY_OK;
    case EMILY_V_BOOL: {
        uint8_t b = 0;
        if ((s = get(r, &b, 1))) return s;
        v->b = b != 0;
        return EMILY_OK;
    }
    case EMILY_V_INT: return get(r, &v->i, 8);
    case EMILY_V_UINT: return get(r, &v->u, 8);
    case EMILY_V_FLOAT: return get(r, &v->f, 8);
    case EMILY_V_COMPLEX:
        if ((s = get(r, &v->re, 8))) return s;
        return get(r, &v->im, 8);
    case EMILY_V_ATOM:
    case EMILY_V_BINARY: {
        if ((s = get(r, &n, 4))) return s;
        if (n > r->len - r->pos) return truncated(r);
        char *str = emi_graph_strdup(r->g, (const char *)r->p + r->pos, n);
        if (!str) return EMILY_ERR_MEMORY;
        r->pos += n;
        v->str = str;
        v->len = n;
        return EMILY_OK;
    }
    case EMILY_V_TUPLE:
    case EMILY_V_LIST:
    case EMILY_V_OPTS: {
        if ((s = get(r, &n, 4))) return s;
        if (n > r->len - r->pos) return truncated(r); /* each item takes a byte at least */
        emily_value *items = emi_graph_alloc(r->g, sizeof(emily_value) * ((size_t)n + 1));
        const char **keys = v->kind == EMILY_V_OPTS ? emi_graph_alloc(r->g, sizeof(char *) * ((size_t)n + 1)) : NULL;
        if (!items || (v->kind == EMILY_V_OPTS && !keys)) return EMILY_ERR_MEMORY;
        for (uint32_t i = 0; i < n; i++) {
            if (keys) {
                uint16_t kl = 0;
                if ((s = get(r, &kl, 2))) return s;
                if (kl > r->len - r->pos) return truncated(r);
                if (!(keys[i] = emi_graph_strdup(r->g, (const char *)r->p + r->pos, kl))) return EMILY_ERR_MEMORY;
                if (memchr(keys[i], 0, kl))
                    return emily_error(EMILY_ERR_ARGUMENT, "graph_load: an option key holds a NUL byte at byte %zu",
                                       r->pos);
                r->pos += kl;
            }
            if ((s = get_tree(r, &items[i], depth + 1))) return s;
        }
        v->items = items;
        v->keys = keys;
        v->n = n;
        return EMILY_OK;
    }
    case EMILY_V_TEMPLATE: {
        int64_t *shape;
        if ((s = get_spec(r, &v->dtype, &v->rank, &shape))) return s;
        v->shape = shape;
        return EMILY_OK;
    }
    case EMILY_V_REF: {
        int32_t id = 0;
        if ((s = get(r, &id, 4))) return s;
        v->i = id;
        return EMILY_OK;
    }
    case EMILY_V_TENSOR: break;
    }
    return emily_error(EMILY_ERR_ARGUMENT, "graph_load: unknown value kind %u at byte %zu", kind, r->pos - 1);
}

static emily_status load_nested(const void *bytes, size_t size, int depth, emily_graph **out);

static emily_status load_records(reader *r) {
    emily_graph *g = r->g;
    emily_status s;
    char magic[8];
    uint32_t version = 0;
    if ((s = get(r, magic, 8))) return s;
    if (memcmp(magic, GRAPH_MAGIC, 8) != 0) return emily_error(EMILY_ERR_ARGUMENT, "graph_load: not an Emily graph");
    if ((s = get(r, &version, 4))) return s;
    if (version != GRAPH_VERSION)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_load: format version %u, this library reads %u", version,
                           GRAPH_VERSION);
    for (;;) {
        uint8_t tag = 0;
        if ((s = get(r, &tag, 1))) return s;
        int32_t id = 0;
        if (tag == 'P' || tag == 'C') {
            emily_dtype dt;
            int rank;
            int64_t *shape;
            if ((s = get_spec(r, &dt, &rank, &shape))) return s;
            if (tag == 'P') {
                if ((s = emily_graph_add_param(g, dt, rank, shape, &id))) return s;
                continue;
            }
            uint64_t nb = 0;
            if ((s = get(r, &nb, 8))) return s;
            if (nb > r->len - r->pos) return truncated(r);
            emily_tensor *t;
            if ((s = emily_from_binary(EMILY_CPU, dt, rank, shape, r->p + r->pos, (size_t)nb, &t))) return s;
            r->pos += nb;
            s = emily_graph_add_const(g, t, &id);
            emily_tensor_release(t);
            if (s) return s;
        } else if (tag == 'N') {
            uint16_t nl = 0;
            char name[256];
            if ((s = get(r, &nl, 2))) return s;
            if (nl == 0 || nl >= sizeof name)
                return emily_error(EMILY_ERR_ARGUMENT, "graph_load: bad callback name at byte %zu", r->pos);
            if ((s = get(r, name, nl))) return s;
            name[nl] = 0;
            if (strlen(name) != nl)
                return emily_error(EMILY_ERR_ARGUMENT, "graph_load: a callback name holds a NUL byte");
            emily_value out;
            uint32_t nargs = 0;
            if ((s = get_tree(r, &out, 0)) || (s = get(r, &nargs, 4))) return s;
            if (nargs > 64) return emily_error(EMILY_ERR_ARGUMENT, "graph_load: %s with %u arguments", name, nargs);
            emily_value args[65];
            for (uint32_t a = 0; a < nargs; a++)
                if ((s = get_tree(r, &args[a], 0))) return s;
            if ((s = emily_graph_add_call(g, name, &out, args, nargs, &id))) return s;
        } else if (tag == 'W') {
            uint32_t n = 0;
            if ((s = get(r, &n, 4))) return s;
            if (n == 0 || n > 4096)
                return emily_error(EMILY_ERR_ARGUMENT, "graph_load: a loop with %u state values", n);
            if ((size_t)n * 4 > r->len - r->pos) return truncated(r);
            int32_t *ids = malloc((size_t)n * sizeof *ids);
            if (!ids) return emily_error(EMILY_ERR_MEMORY, "graph_load: out of host memory");
            for (uint32_t k = 0; k < n; k++) memcpy(&ids[k], r->p + r->pos + 4 * (size_t)k, 4);
            r->pos += (size_t)n * 4;
            emily_graph *subs[2] = {NULL, NULL};
            for (int k = 0; k < 2 && !s; k++) {
                uint64_t sn = 0;
                if ((s = get(r, &sn, 8))) break;
                if (sn > r->len - r->pos) {
                    s = truncated(r);
                    break;
                }
                if (r->depth >= GRAPH_MAX_NESTING) {
                    s = emily_error(EMILY_ERR_ARGUMENT, "graph_load: loops nest deeper than %d", GRAPH_MAX_NESTING);
                    break;
                }
                s = load_nested(r->p + r->pos, (size_t)sn, r->depth + 1, &subs[k]);
                r->pos += (size_t)sn;
            }
            if (s) {
                emily_graph_free(subs[0]);
                emily_graph_free(subs[1]);
                free(ids);
                return s;
            }
            s = emily_graph_add_while(g, subs[0], subs[1], n, ids, &id); /* takes subs */
            free(ids);
            if (s) return s;
        } else if (tag == 'I') {
            uint32_t nc = 0;
            if ((s = get(r, &nc, 4))) return s;
            if (nc == 0 || nc > 1024) return emily_error(EMILY_ERR_ARGUMENT, "graph_load: a cond with %u clauses", nc);
            if ((size_t)nc * 4 > r->len - r->pos) return truncated(r);
            if (r->depth >= GRAPH_MAX_NESTING)
                return emily_error(EMILY_ERR_ARGUMENT, "graph_load: conditionals and loops nest deeper than %d",
                                   GRAPH_MAX_NESTING);
            size_t nb = (size_t)nc + 1;
            int32_t *preds = malloc(sizeof(int32_t) * nc), *caps = NULL;
            emily_graph **brs = calloc(nb, sizeof *brs);
            size_t *ncap = calloc(nb, sizeof *ncap), total = 0;
            if (!preds || !brs || !ncap) s = emily_error(EMILY_ERR_MEMORY, "graph_load: out of host memory");
            for (uint32_t k = 0; !s && k < nc; k++) memcpy(&preds[k], r->p + r->pos + 4 * (size_t)k, 4);
            if (!s) r->pos += (size_t)nc * 4;
            for (size_t b = 0; !s && b < nb; b++) {
                uint32_t n = 0;
                uint64_t sn = 0;
                if ((s = get(r, &n, 4))) break;
                if (n > 65536 || (size_t)n * 4 > r->len - r->pos) {
                    s = truncated(r);
                    break;
                }
                int32_t *more = realloc(caps, sizeof(int32_t) * (total + n + 1));
                if (!more) {
                    s = emily_error(EMILY_ERR_MEMORY, "graph_load: out of host memory");
                    break;
                }
                caps = more;
                for (uint32_t i = 0; i < n; i++) memcpy(&caps[total + i], r->p + r->pos + 4 * (size_t)i, 4);
                r->pos += (size_t)n * 4;
                ncap[b] = n;
                total += n;
                if ((s = get(r, &sn, 8))) break;
                if (sn > r->len - r->pos) {
                    s = truncated(r);
                    break;
                }
                s = load_nested(r->p + r->pos, (size_t)sn, r->depth + 1, &brs[b]);
                r->pos += (size_t)sn;
            }
            if (!s) s = emily_graph_add_cond(g, nc, preds, brs, ncap, caps, &id); /* takes brs */
            else
                for (size_t b = 0; b < nb && brs; b++) emily_graph_free(brs[b]);
            free(preds);
            free(caps);
            free(brs);
            free(ncap);
            if (s) return s;
        } else if (tag == 'O') {
            uint32_t n = 0;
            if ((s = get(r, &n, 4))) return s;
            if ((size_t)n * 4 > r->len - r->pos) return truncated(r);
            int32_t *ids = malloc(((size_t)n + 1) * sizeof *ids);
            if (!ids) return emily_error(EMILY_ERR_MEMORY, "graph_load: out of host memory");
            for (uint32_t k = 0; k < n; k++) memcpy(&ids[k], r->p + r->pos + 4 * (size_t)k, 4);
            r->pos += (size_t)n * 4;
            s = emily_graph_set_outputs(g, n, ids);
            free(ids);
            if (s) return s;
            if (r->pos != r->len)
                return emily_error(EMILY_ERR_ARGUMENT, "graph_load: %zu bytes after the outputs", r->len - r->pos);
            return EMILY_OK;
        } else {
            return emily_error(EMILY_ERR_ARGUMENT, "graph_load: unknown record '%c' (0x%02x) at byte %zu",
                               tag >= 32 && tag < 127 ? tag : '?', tag, r->pos - 1);
        }
    }
}

static emily_status load_nested(const void *bytes, size_t size, int depth, emily_graph **out) {
    *out = NULL;
    emily_graph *g;
    emily_status s = emily_graph_create(&g);
    if (s) return s;
    reader r = {.p = bytes, .len = size, .g = g, .depth = depth};
    if ((s = load_records(&r))) {
        emily_graph_free(g);
        return s;
    }
    *out = g;
    return EMILY_OK;
}

emily_status emily_graph_load_buffer(const void *bytes, size_t size, emily_graph **out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "graph_load: NULL output");
    *out = NULL;
    if (!bytes && size) return emily_error(EMILY_ERR_ARGUMENT, "graph_load: NULL bytes");
    return load_nested(bytes, size, 0, out);
}

emily_status emily_graph_load(const char *path, emily_graph **out) {
    if (!path || !out) return emily_error(EMILY_ERR_ARGUMENT, "graph_load: NULL argument");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return emily_error(EMILY_ERR_ARGUMENT, "graph_load: cannot open %s", path);
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (cap - len < 65536) {
            size_t ncap = cap ? cap * 2 : 1 << 20;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return emily_error(EMILY_ERR_MEMORY, "graph_load: out of host memory");
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    bool err = ferror(f);
    fclose(f);
    emily_status s = err ? emily_error(EMILY_ERR_ARGUMENT, "graph_load: cannot read %s", path)
                         : emily_graph_load_buffer(buf, len, out);
    free(buf);
    return s;
}
