/* See enif_shim.h. Written from the external term format's documentation
 * (ERTS User's Guide, "External Term Format") and erl_nif's manual page;
 * only the behaviour terms.c can observe is modelled. */
#include "enif_shim.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    ST_ATOM,
    ST_INT,
    ST_BIG,
    ST_FLOAT,
    ST_BIN,
    ST_BITS,
    ST_TUPLE,
    ST_NIL,
    ST_CONS,
    ST_MAP,
    ST_REF,
    ST_PID,
    ST_PORT,
    ST_FUN
} sterm_kind;

typedef struct sterm sterm;
struct sterm {
    sterm_kind kind;
    int64_t i;                  /* INT; REF: first ID word */
    uint64_t u;                 /* BIG: magnitude when it fits 64 bits */
    bool neg;                   /* BIG */
    double f;                   /* FLOAT */
    const unsigned char *bytes; /* ATOM: UTF-8; BIG: magnitude (LE); BIN/BITS: data; REF/PID/PORT/FUN: encoding */
    size_t len;
    int bits;           /* BITS: bits used in the last byte (1..7) */
    bool local;         /* REF: of this VM (a resource can be one) */
    const char *latin1; /* ATOM: NULL when a character is above 255 */
    size_t latin1_len;
    ERL_NIF_TERM *items; /* TUPLE: n items; MAP: n keys then n values */
    size_t n;
    ERL_NIF_TERM head, tail; /* CONS */
};

#define T(term) ((const sterm *)(uintptr_t)(term))
#define TERM(p) ((ERL_NIF_TERM)(uintptr_t)(p))

typedef struct block {
    struct block *next;
    size_t used, cap;
    max_align_t data[];
} block;

struct enif_environment_t {
    block *blocks;
};

struct enif_resource_type_t {
    const char *name;
    void **objs;
    size_t n;
};

/* ---- env memory ---- */

ErlNifEnv *shim_env_new(void) { return calloc(1, sizeof(ErlNifEnv)); }

void shim_env_reset(ErlNifEnv *env) {
    block *b = env->blocks;
    while (b) {
        block *next = b->next;
        free(b);
        b = next;
    }
    env->blocks = NULL;
}

void shim_env_free(ErlNifEnv *env) {
    if (!env) return;
    shim_env_reset(env);
    free(env);
}

/* A VM's term heap does not fail (the VM stops first), so under the
 * allocation-failure sweep (tests/fuzz/alloc_sweep.c, linked with
 * --wrap=malloc) the shim's heap takes its blocks from the C library
 * directly and only enif_alloc and the library can fail. __real_malloc
 * exists only in a --wrap link; elsewhere this weak reference is NULL. */
extern void *__real_malloc(size_t n) __attribute__((weak));
static void *heap_malloc(size_t n) { return __real_malloc ? __real_malloc(n) : malloc(n); }

static void *env_alloc(ErlNifEnv *env, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    block *b = env->blocks;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        b = heap_malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = env->blocks;
        env->blocks = b;
    }
    void *p = (unsigned char *)b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

static sterm *new_term(ErlNifEnv *env, sterm_kind kind) {
    sterm *t = env_alloc(env, sizeof *t);
    if (t) t->kind = kind;
    return t;
}

/* ---- atoms ---- */

/* A UTF-8 atom of at most 255 characters, with its Latin-1 form when it
 * has one; NULL for invalid UTF-8. */
static sterm *atom_utf8(ErlNifEnv *env, const unsigned char *s, size_t len) {
    char *latin = env_alloc(env, len + 1);
    if (!latin) return NULL;
    size_t chars = 0, nl = 0;
    bool is_latin1 = true;
    for (size_t i = 0; i < len; chars++) {
        unsigned c = s[i];
        uint32_t cp;
        size_t k;
        if (c < 0x80) {
            cp = c;
            k = 1;
        } else if ((c & 0xe0) == 0xc0) {
            cp = c & 0x1f;
            k = 2;
        } else if ((c & 0xf0) == 0xe0) {
            cp = c & 0x0f;
            k = 3;
        } else if ((c & 0xf8) == 0xf0) {
            cp = c & 0x07;
            k = 4;
        } else return NULL;
        if (len - i < k) return NULL;
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return NULL;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return NULL;
        if (cp > 255) is_latin1 = false;
        else latin[nl++] = (char)cp;
        i += k;
    }
    if (chars > 255) return NULL;
    sterm *t = new_term(env, ST_ATOM);
    if (!t) return NULL;
    t->bytes = s;
    t->len = len;
    t->latin1 = is_latin1 ? latin : NULL;
    t->latin1_len = is_latin1 ? nl : 0;
    return t;
}

static sterm *atom_latin1(ErlNifEnv *env, const unsigned char *s, size_t len) {
    if (len > 255) return NULL;
    unsigned char *u = env_alloc(env, 2 * len + 1);
    if (!u) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < 0x80) u[n++] = s[i];
        else {
            u[n++] = (unsigned char)(0xc0 | s[i] >> 6);
            u[n++] = (unsigned char)(0x80 | (s[i] & 0x3f));
        }
    }
    return atom_utf8(env, u, n);
}

/* ---- identity ---- */

static bool same(const sterm *a, const sterm *b, int depth) {
    for (;;) {
        if (a == b) return true;
        if (a->kind != b->kind || depth > SHIM_MAX_DEPTH) return false;
        switch (a->kind) {
        case ST_INT: return a->i == b->i;
        case ST_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
        case ST_NIL: return true;
        case ST_BIG:
            if (a->neg != b->neg) return false;
            /* fall through */
        case ST_ATOM:
        case ST_BIN:
        case ST_REF:
        case ST_PID:
        case ST_PORT:
        case ST_FUN:
        case ST_BITS: return a->len == b->len && a->bits == b->bits && memcmp(a->bytes, b->bytes, a->len) == 0;
        case ST_TUPLE:
            if (a->n != b->n) return false;
            for (size_t i = 0; i < a->n; i++)
                if (!same(T(a->items[i]), T(b->items[i]), depth + 1)) return false;
            return true;
        case ST_MAP:
            if (a->n != b->n) return false;
            for (size_t i = 0; i < a->n; i++) {
                size_t j = 0;
                while (j < b->n && !same(T(a->items[i]), T(b->items[j]), depth + 1)) j++;
                if (j == b->n || !same(T(a->items[a->n + i]), T(b->items[b->n + j]), depth + 1)) return false;
            }
            return true;
        case ST_CONS:
            if (!same(T(a->head), T(b->head), depth + 1)) return false;
            a = T(a->tail); /* the tail iteratively: long lists are not deep */
            b = T(b->tail);
            continue;
        }
        return false;
    }
}

/* ---- external term format ---- */

typedef struct reader {
    ErlNifEnv *env;
    const unsigned char *p, *end;
} reader;

static bool have(const reader *r, size_t n) { return (size_t)(r->end - r->p) >= n; }
static uint32_t be(const unsigned char *p, int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

static sterm *decode(reader *r, int depth);

static sterm *integer(ErlNifEnv *env, bool neg, const unsigned char *mag, size_t n) {
    while (n > 0 && mag[n - 1] == 0) n--;
    uint64_t u = 0; /* the magnitude, when it fits in 64 bits (read only then) */
    if (n <= 8) {
        for (size_t i = n; i-- > 0;) u = u << 8 | mag[i];
        if (!neg && u <= (uint64_t)INT64_MAX) {
            sterm *t = new_term(env, ST_INT);
            if (t) t->i = (int64_t)u;
            return t;
        }
        if (neg && u <= (uint64_t)INT64_MAX + 1) {
            sterm *t = new_term(env, ST_INT);
            if (t) t->i = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
            return t;
        }
    }
    sterm *t = new_term(env, ST_BIG);
    if (!t) return NULL;
    t->neg = neg;
    t->u = u;
    t->bytes = mag;
    t->len = n;
    return t;
}

static sterm *float_term(ErlNifEnv *env, double f) {
    if (!isfinite(f)) return NULL; /* binary_to_term refuses NaN and infinities */
    sterm *t = new_term(env, ST_FLOAT);
    if (t) t->f = f;
    return t;
}

/* An atom term (the node of a reference, pid or port; a fun's module). */
static bool atom_field(reader *r, int depth) {
    sterm *a = decode(r, depth + 1);
    return a && a->kind == ST_ATOM;
}

/* A term whose identity is its encoding (references, pids, ports, export
 * funs): `fixed` bytes after the atom(s). */
static sterm *opaque(reader *r, const unsigned char *start, sterm_kind kind, int atoms, size_t fixed, int depth) {
    for (int k = 0; k < atoms; k++)
        if (!atom_field(r, depth)) return NULL;
    if (!have(r, fixed)) return NULL;
    r->p += fixed;
    sterm *t = new_term(r->env, kind);
    if (!t) return NULL;
    t->bytes = start;
    t->len = (size_t)(r->p - start);
    return t;
}

static sterm *list(reader *r, size_t n, int depth) {
    /* every element takes at least one byte */
    if (!have(r, n)) return NULL;
    sterm *first = NULL, *last = NULL;
    for (size_t i = 0; i < n; i++) {
        sterm *cell = new_term(r->env, ST_CONS), *h = decode(r, depth + 1);
        if (!cell || !h) return NULL;
        cell->head = TERM(h);
        if (last) last->tail = TERM(cell);
        else first = cell;
        last = cell;
    }
    sterm *tail = decode(r, depth + 1);
    if (!tail) return NULL;
    if (!last) return tail; /* LIST_EXT of length 0: its tail */
    last->tail = TERM(tail);
    return first;
}

static sterm *decode(reader *r, int depth) {
    if (depth > SHIM_MAX_DEPTH || !have(r, 1)) return NULL;
    ErlNifEnv *env = r->env;
    const unsigned char *start = r->p;
    unsigned tag = *r->p++;
    switch (tag) {
    case 97: /* SMALL_INTEGER_EXT */
        if (!have(r, 1)) return NULL;
        return integer(env, false, r->p++, 1);
    case 98: { /* INTEGER_EXT */
        if (!have(r, 4)) return NULL;
        int32_t v = (int32_t)be(r->p, 4);
        r->p += 4;
        sterm *t = new_term(env, ST_INT);
        if (t) t->i = v;
        return t;
    }
    case 110:   /* SMALL_BIG_EXT */
    case 111: { /* LARGE_BIG_EXT */
        int w = tag == 110 ? 1 : 4;
        if (!have(r, (size_t)w + 1)) return NULL;
        size_t n = be(r->p, w);
        unsigned sign = r->p[w];
        r->p += w + 1;
        if (sign > 1 || !have(r, n)) return NULL;
        const unsigned char *mag = r->p;
        r->p += n;
        return integer(env, sign == 1, mag, n);
    }
    case 70: { /* NEW_FLOAT_EXT */
        if (!have(r, 8)) return NULL;
        uint64_t bits = (uint64_t)be(r->p, 4) << 32 | be(r->p + 4, 4);
        r->p += 8;
        double f;
        memcpy(&f, &bits, sizeof f);
        return float_term(env, f);
    }
    case 99: { /* FLOAT_EXT: "%.20e" in 31 bytes */
        if (!have(r, 31)) return NULL;
        char s[32];
        memcpy(s, r->p, 31);
        s[31] = 0;
        r->p += 31;
        char *endp;
        double f = strtod(s, &endp);
        if (endp == s) return NULL;
        return float_term(env, f);
    }
    case 100:   /* ATOM_EXT */
    case 115:   /* SMALL_ATOM_EXT */
    case 118:   /* ATOM_UTF8_EXT */
    case 119: { /* SMALL_ATOM_UTF8_EXT */
        int w = tag == 100 || tag == 118 ? 2 : 1;
        if (!have(r, (size_t)w)) return NULL;
        size_t n = be(r->p, w);
        r->p += w;
        if (!have(r, n)) return NULL;
        const unsigned char *s = r->p;
        r->p += n;
        return tag == 118 || tag == 119 ? atom_utf8(env, s, n) : atom_latin1(env, s, n);
    }
    case 109: { /* BINARY_EXT */
        if (!have(r, 4)) return NULL;
        size_t n = be(r->p, 4);
        r->p += 4;
        if (!have(r, n)) return NULL;
        sterm *t = new_term(env, ST_BIN);
        if (!t) return NULL;
        t->bytes = r->p;
        t->len = n;
        r->p += n;
        return t;
    }
    case 77: { /* BIT_BINARY_EXT */
        if (!have(r, 5)) return NULL;
        size_t n = be(r->p, 4);
        unsigned bits = r->p[4];
        r->p += 5;
        /* an empty one has 0 bits, any other 1 to 8 in its last byte */
        if ((bits == 0) != (n == 0) || bits > 8 || !have(r, n)) return NULL;
        bool whole = bits == 0 || bits == 8;
        sterm *t = new_term(env, whole ? ST_BIN : ST_BITS);
        if (!t) return NULL;
        t->bytes = r->p;
        t->len = n;
        t->bits = whole ? 0 : (int)bits;
        r->p += n;
        return t;
    }
    case 104:   /* SMALL_TUPLE_EXT */
    case 105: { /* LARGE_TUPLE_EXT */
        int w = tag == 104 ? 1 : 4;
        if (!have(r, (size_t)w)) return NULL;
        size_t n = be(r->p, w);
        r->p += w;
        if (!have(r, n)) return NULL;
        sterm *t = new_term(env, ST_TUPLE);
        if (!t) return NULL;
        t->n = n;
        t->items = env_alloc(env, (n + 1) * sizeof *t->items);
        if (!t->items) return NULL;
        for (size_t i = 0; i < n; i++) {
            sterm *e = decode(r, depth + 1);
            if (!e) return NULL;
            t->items[i] = TERM(e);
        }
        return t;
    }
    case 106: /* NIL_EXT */ return new_term(env, ST_NIL);
    case 107: { /* STRING_EXT: a list of bytes */
        if (!have(r, 2)) return NULL;
        size_t n = be(r->p, 2);
        r->p += 2;
        if (!have(r, n)) return NULL;
        sterm *t = new_term(env, ST_NIL);
        for (size_t i = n; t && i-- > 0;) {
            sterm *cell = new_term(env, ST_CONS), *h = integer(env, false, r->p + i, 1);
            if (!cell || !h) return NULL;
            cell->head = TERM(h);
            cell->tail = TERM(t);
            t = cell;
        }
        r->p += n;
        return t;
    }
    case 108: { /* LIST_EXT */
        if (!have(r, 4)) return NULL;
        size_t n = be(r->p, 4);
        r->p += 4;
        return list(r, n, depth);
    }
    case 116: { /* MAP_EXT */
        if (!have(r, 4)) return NULL;
        size_t n = be(r->p, 4);
        r->p += 4;
        if (n > 4096 || !have(r, 2 * n)) return NULL;
        sterm *t = new_term(env, ST_MAP);
        if (!t) return NULL;
        t->n = n;
        t->items = env_alloc(env, (2 * n + 1) * sizeof *t->items);
        if (!t->items) return NULL;
        for (size_t i = 0; i < n; i++) {
            sterm *k = decode(r, depth + 1), *v = k ? decode(r, depth + 1) : NULL;
            if (!v) return NULL;
            for (size_t j = 0; j < i; j++) /* binary_to_term refuses duplicate keys */
                if (same(T(t->items[j]), k, 0)) return NULL;
            t->items[i] = TERM(k);
            t->items[n + i] = TERM(v);
        }
        return t;
    }
    case 90:    /* NEWER_REFERENCE_EXT: Len, Node, Creation(4), ID(4 * Len) */
    case 114:   /* NEW_REFERENCE_EXT: Len, Node, Creation(1), ID(4 * Len) */
    case 101: { /* REFERENCE_EXT: Node, ID(4), Creation(1) */
        size_t n = 1;
        if (tag != 101) {
            if (!have(r, 2)) return NULL;
            n = be(r->p, 2);
            r->p += 2;
            if (n < 1 || n > 5) return NULL;
        }
        sterm *node = decode(r, depth + 1);
        if (!node || node->kind != ST_ATOM) return NULL;
        int cw = tag == 90 ? 4 : 1;
        if (!have(r, (size_t)cw + 4 * n)) return NULL;
        const unsigned char *id = tag == 101 ? r->p : r->p + cw;
        uint32_t creation = be(tag == 101 ? r->p + 4 : r->p, cw);
        r->p += (size_t)cw + 4 * n;
        sterm *t = new_term(env, ST_REF);
        if (!t) return NULL;
        t->bytes = start;
        t->len = (size_t)(r->p - start);
        t->i = be(id, 4);
        /* The VM's own references (here those of a VM without distribution,
         * node nonode@nohost, creation 0) have 18 bits in their first ID
         * word, and only they can be resources; another node's may have
         * anything and are never resources. */
        t->local = node->len == 13 && memcmp(node->bytes, "nonode@nohost", 13) == 0 && creation == 0;
        if (t->local && t->i >= (1 << 18)) return NULL;
        return t;
    }
    case 88: return opaque(r, start, ST_PID, 1, 12, depth);   /* NEW_PID_EXT */
    case 103: return opaque(r, start, ST_PID, 1, 9, depth);   /* PID_EXT */
    case 89: return opaque(r, start, ST_PORT, 1, 8, depth);   /* NEW_PORT_EXT */
    case 120: return opaque(r, start, ST_PORT, 1, 12, depth); /* V4_PORT_EXT */
    case 102: return opaque(r, start, ST_PORT, 1, 5, depth);  /* PORT_EXT */
    case 113: { /* EXPORT_EXT: Module, Function, Arity (a small integer) */
        if (!atom_field(r, depth) || !atom_field(r, depth) || !have(r, 2) || r->p[0] != 97) return NULL;
        r->p += 2;
        sterm *t = new_term(env, ST_FUN);
        if (!t) return NULL;
        t->bytes = start;
        t->len = (size_t)(r->p - start);
        return t;
    }
    default: /* compressed terms, atom cache references, local funs */ return NULL;
    }
}

int shim_binary_to_term(ErlNifEnv *env, const unsigned char *data, size_t size, ERL_NIF_TERM *out) {
    if (size < 1 || data[0] != 131) return -1;
    unsigned char *copy = env_alloc(env, size);
    if (!copy) return -1;
    memcpy(copy, data, size);
    reader r = {env, copy + 1, copy + size};
    sterm *t = decode(&r, 0);
    if (!t) return -1; /* (binary_to_term/1 ignores bytes after the term) */
    *out = TERM(t);
    return 0;
}

/* ---- resources ---- */

ErlNifResourceType *shim_resource_type(const char *name) {
    ErlNifResourceType *t = calloc(1, sizeof *t);
    if (t) t->name = name;
    return t;
}

void shim_set_resources(ErlNifResourceType *type, void **objs, size_t n) {
    type->objs = objs;
    type->n = n;
}

/* ---- the enif_ functions terms.c calls ---- */

void *enif_alloc(size_t size) { return malloc(size); }
void enif_free(void *ptr) { free(ptr); }

/* The enif_is_ tests of one term kind. */
#define SHIM_IS_KIND(fn, KIND)                  \
    int fn(ErlNifEnv *env, ERL_NIF_TERM term) { \
        (void)env;                              \
        return T(term)->kind == KIND;           \
    }
SHIM_IS_KIND(enif_is_atom, ST_ATOM)
SHIM_IS_KIND(enif_is_ref, ST_REF)
SHIM_IS_KIND(enif_is_tuple, ST_TUPLE)
SHIM_IS_KIND(enif_is_map, ST_MAP)
#undef SHIM_IS_KIND
int enif_is_list(ErlNifEnv *env, ERL_NIF_TERM term) {
    (void)env;
    return T(term)->kind == ST_CONS || T(term)->kind == ST_NIL;
}
int enif_is_identical(ERL_NIF_TERM lhs, ERL_NIF_TERM rhs) { return same(T(lhs), T(rhs), 0); }

ErlNifTermType enif_term_type(ErlNifEnv *env, ERL_NIF_TERM term) {
    (void)env;
    switch (T(term)->kind) {
    case ST_ATOM: return ERL_NIF_TERM_TYPE_ATOM;
    case ST_INT:
    case ST_BIG: return ERL_NIF_TERM_TYPE_INTEGER;
    case ST_FLOAT: return ERL_NIF_TERM_TYPE_FLOAT;
    case ST_BIN:
    case ST_BITS: return ERL_NIF_TERM_TYPE_BITSTRING;
    case ST_TUPLE: return ERL_NIF_TERM_TYPE_TUPLE;
    case ST_NIL:
    case ST_CONS: return ERL_NIF_TERM_TYPE_LIST;
    case ST_MAP: return ERL_NIF_TERM_TYPE_MAP;
    case ST_REF: return ERL_NIF_TERM_TYPE_REFERENCE;
    case ST_PID: return ERL_NIF_TERM_TYPE_PID;
    case ST_PORT: return ERL_NIF_TERM_TYPE_PORT;
    case ST_FUN: return ERL_NIF_TERM_TYPE_FUN;
    }
    return ERL_NIF_TERM_TYPE_FUN;
}

int enif_get_int(ErlNifEnv *env, ERL_NIF_TERM term, int *ip) {
    (void)env;
    const sterm *t = T(term);
    if (t->kind != ST_INT || t->i < INT32_MIN || t->i > INT32_MAX) return 0;
    *ip = (int)t->i;
    return 1;
}
int enif_get_long(ErlNifEnv *env, ERL_NIF_TERM term, long *ip) {
    (void)env;
    const sterm *t = T(term);
    if (t->kind != ST_INT) return 0;
    *ip = (long)t->i;
    return 1;
}
int enif_get_ulong(ErlNifEnv *env, ERL_NIF_TERM term, unsigned long *ip) {
    (void)env;
    const sterm *t = T(term);
    if (t->kind == ST_INT && t->i >= 0) {
        *ip = (unsigned long)t->i;
        return 1;
    }
    if (t->kind == ST_BIG && !t->neg && t->len <= 8) {
        *ip = (unsigned long)t->u;
        return 1;
    }
    return 0;
}
int enif_get_double(ErlNifEnv *env, ERL_NIF_TERM term, double *dp) {
    (void)env;
    if (T(term)->kind != ST_FLOAT) return 0;
    *dp = T(term)->f;
    return 1;
}

int enif_get_atom_length(ErlNifEnv *env, ERL_NIF_TERM atom, unsigned *len, ErlNifCharEncoding enc) {
    (void)env;
    const sterm *t = T(atom);
    if (t->kind != ST_ATOM || enc != ERL_NIF_LATIN1 || !t->latin1) return 0;
    *len = (unsigned)t->latin1_len;
    return 1;
}
int enif_get_atom(ErlNifEnv *env, ERL_NIF_TERM atom, char *buf, unsigned len, ErlNifCharEncoding enc) {
    (void)env;
    const sterm *t = T(atom);
    if (t->kind != ST_ATOM || enc != ERL_NIF_LATIN1 || !t->latin1 || t->latin1_len + 1 > len) return 0;
    memcpy(buf, t->latin1, t->latin1_len);
    buf[t->latin1_len] = 0;
    return (int)t->latin1_len + 1;
}

int enif_inspect_binary(ErlNifEnv *env, ERL_NIF_TERM bin_term, ErlNifBinary *bin) {
    (void)env;
    const sterm *t = T(bin_term);
    if (t->kind != ST_BIN) return 0;
    memset(bin, 0, sizeof *bin);
    bin->size = t->len;
    bin->data = (unsigned char *)(uintptr_t)t->bytes;
    return 1;
}

int enif_get_tuple(ErlNifEnv *env, ERL_NIF_TERM tpl, int *arity, const ERL_NIF_TERM **array) {
    (void)env;
    const sterm *t = T(tpl);
    if (t->kind != ST_TUPLE) return 0;
    *arity = (int)t->n;
    *array = t->items;
    return 1;
}

int enif_get_list_cell(ErlNifEnv *env, ERL_NIF_TERM term, ERL_NIF_TERM *head, ERL_NIF_TERM *tail) {
    (void)env;
    const sterm *t = T(term);
    if (t->kind != ST_CONS) return 0;
    *head = t->head;
    *tail = t->tail;
    return 1;
}
int enif_get_list_length(ErlNifEnv *env, ERL_NIF_TERM term, unsigned *len) {
    (void)env;
    unsigned n = 0;
    const sterm *t = T(term);
    while (t->kind == ST_CONS) {
        n++;
        t = T(t->tail);
    }
    if (t->kind != ST_NIL) return 0;
    *len = n;
    return 1;
}

int enif_get_map_value(ErlNifEnv *env, ERL_NIF_TERM map, ERL_NIF_TERM key, ERL_NIF_TERM *value) {
    (void)env;
    const sterm *m = T(map);
    if (m->kind != ST_MAP) return 0;
    for (size_t i = 0; i < m->n; i++)
        if (same(T(m->items[i]), T(key), 0)) {
            *value = m->items[m->n + i];
            return 1;
        }
    return 0;
}

int enif_get_resource(ErlNifEnv *env, ERL_NIF_TERM term, ErlNifResourceType *type, void **objp) {
    (void)env;
    const sterm *t = T(term);
    if (t->kind != ST_REF || !t->local || !type || type->n == 0) return 0;
    uint64_t k = (uint64_t)t->i % (type->n + 1);
    if (k == type->n) return 0;
    *objp = type->objs[k];
    return 1;
}

/* Term makers (nif_dtype_to_term, nif_shape_to_term, nif_device_to_term). The real
 * ones cannot fail; these return a term of [] when memory runs out. */
static sterm nomem = {.kind = ST_NIL};

static ERL_NIF_TERM made(sterm *t) { return TERM(t ? t : &nomem); }

ERL_NIF_TERM enif_make_atom(ErlNifEnv *env, const char *name) {
    return made(atom_latin1(env, (const unsigned char *)name, strlen(name)));
}
ERL_NIF_TERM enif_make_long(ErlNifEnv *env, long i) {
    sterm *t = new_term(env, ST_INT);
    if (t) t->i = i;
    return made(t);
}
ERL_NIF_TERM enif_make_int(ErlNifEnv *env, int i) { return enif_make_long(env, i); }

ERL_NIF_TERM enif_make_tuple_from_array(ErlNifEnv *env, const ERL_NIF_TERM arr[], unsigned cnt) {
    sterm *t = new_term(env, ST_TUPLE);
    if (!t) return made(NULL);
    t->items = env_alloc(env, ((size_t)cnt + 1) * sizeof *t->items);
    if (!t->items) return made(NULL);
    if (cnt) memcpy(t->items, arr, cnt * sizeof *arr);
    t->n = cnt;
    return made(t);
}
ERL_NIF_TERM enif_make_tuple(ErlNifEnv *env, unsigned cnt, ...) {
    ERL_NIF_TERM items[16];
    if (cnt > 16) return made(NULL);
    va_list ap;
    va_start(ap, cnt);
    for (unsigned i = 0; i < cnt; i++) items[i] = va_arg(ap, ERL_NIF_TERM);
    va_end(ap);
    return enif_make_tuple_from_array(env, items, cnt);
}
