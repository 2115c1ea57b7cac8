/* Erlang terms <-> the dispatcher's emily_value trees.
 *
 * The mapping is the one of the conformance corpus (see
 * ../shared/conformance/README.md): numbers, atoms, binaries, tuples,
 * lists, keyword lists (a list whose items are all {atom, value}),
 * %Complex{} and tensors. A tensor is an %Nx.Tensor{} whose data is an
 * %Emily.Backend{ref: resource, bytes: binary | nil} (or any map with such
 * a :ref), a bare tensor resource, or an %Nx.BinaryBackend{} tensor, which
 * is imported on the call's device. An %Emily.Backend{} whose resource is
 * not of this VM (it came from another node) is imported from its :bytes
 * the same way. Tensors of other backends set `foreign` so that Elixir
 * can move them and retry; so does a quantized matrix
 * (%Emily.Backend{ref: {:quantized, ...}}, Emily.Quantization), which
 * Elixir dequantizes for every callback but the dots it runs as
 * quantized_matmul. */
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emily_nif.h"

#define MAX_DEPTH 48

struct arena_block {
    arena_block *next;
    size_t cap, used;
    max_align_t data[];
};

struct pending_import {
    emily_value *v;
    const unsigned char *bytes;
    size_t nbytes;
    emily_dtype dtype;
    int rank;
    int64_t *shape;
    const char *what; /* for messages */
};

const char nif_not_carried_msg[] =
    "the reference is not an Emily tensor of this node and its struct carries no bytes: "
    "only CPU tensors contiguous in memory cross BEAM nodes (or term_to_binary) intact, "
    "a GPU tensor or a non-contiguous view (transpose, broadcast, strided slice) does not. "
    "Copy it before sending: Nx.backend_copy(t, Nx.BinaryBackend) or "
    "Nx.backend_copy(t, {Emily.Backend, device: :cpu}); with Nx.Serving, "
    "in distributed_preprocessing or distributed_postprocessing";

nif_atoms nif_atom;

/* The atoms every NIF function compares with (made once, at load; the
 * fuzz harness of terms.c makes them the same way). */
void nif_atoms_init(ErlNifEnv *env) {
#define ATOM(field, name) nif_atom.field = enif_make_atom(env, name)
    ATOM(ok, "ok");
    ATOM(error, "error");
    ATOM(nil, "nil");
    ATOM(true_, "true");
    ATOM(false_, "false");
    ATOM(foreign_tensor, "foreign_tensor");
    ATOM(already_deallocated, "already_deallocated");
    ATOM(graph, "graph");
    ATOM(quantized, "quantized");
    ATOM(cpu, "cpu");
    ATOM(cuda, "cuda");
    ATOM(s, "s");
    ATOM(u, "u");
    ATOM(f, "f");
    ATOM(bf, "bf");
    ATOM(c, "c");
    ATOM(f8_e4m3fn, "f8_e4m3fn");
    ATOM(struct_, "__struct__");
    ATOM(data, "data");
    ATOM(ref, "ref");
    ATOM(bytes, "bytes");
    ATOM(state, "state");
    ATOM(type, "type");
    ATOM(shape, "shape");
    ATOM(re, "re");
    ATOM(im, "im");
    ATOM(nx_tensor, "Elixir.Nx.Tensor");
    ATOM(nx_binary_backend, "Elixir.Nx.BinaryBackend");
    ATOM(complex, "Elixir.Complex");
    ATOM(emily_backend, "Elixir.Emily.Backend");
    ATOM(active, "active");
    ATOM(peak, "peak");
    ATOM(cached, "cached");
#undef ATOM
}

void nif_decoder_init(decoder *d, ErlNifEnv *env) {
    d->env = env;
    d->ar.blocks = NULL;
    d->ar.used = 0;
    d->held = NULL;
    d->nheld = d->held_cap = 0;
    d->pend = NULL;
    d->npend = d->pend_cap = 0;
    d->have_device = false;
    d->device = EMILY_CPU;
    d->foreign = false;
    d->graph_refs = false;
    d->depth = 0;
    d->npath = 0;
    d->elements = 0;
    d->err[0] = 0;
}

void nif_decoder_free(decoder *d) {
    for (size_t i = 0; i < d->nheld; i++) emily_tensor_release(d->held[i]);
    free(d->held);
    free(d->pend);
    arena_block *b = d->ar.blocks;
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
    d->held = NULL;
    d->pend = NULL;
    d->ar.blocks = NULL;
    d->nheld = d->npend = 0;
}

/* Where the decoder is, for messages: "argument 2[1] option :axes". It
 * is kept as a stack of small items and formatted only on failure. */
static void path_push(decoder *d, char kind, unsigned index, const char *key) {
    if (d->npath < (int)(sizeof d->path / sizeof *d->path)) d->path[d->npath] = (path_item){kind, index, key};
    d->npath++;
}
static void path_pop(decoder *d) { d->npath--; }

static size_t path_str(const decoder *d, char *buf, size_t size) {
    size_t n = 0;
    int depth = d->npath < (int)(sizeof d->path / sizeof *d->path) ? d->npath : (int)(sizeof d->path / sizeof *d->path);
    buf[0] = 0;
    for (int i = 0; i < depth && n < size; i++) {
        const path_item *p = &d->path[i];
        int w = 0;
        switch (p->kind) {
        case 'a': w = snprintf(buf + n, size - n, "argument %u", p->index + 1); break;
        case 'l': w = snprintf(buf + n, size - n, "[%u]", p->index); break;
        case 't': w = snprintf(buf + n, size - n, "{%u}", p->index); break;
        case 'k': w = snprintf(buf + n, size - n, " option :%s", p->key ? p->key : "?"); break;
        default: break;
        }
        if (w > 0) n += (size_t)w;
    }
    return n < size ? n : size - 1;
}

static void fail(decoder *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(decoder *d, const char *fmt, ...) {
    char where[160];
    path_str(d, where, sizeof where);
    int n = snprintf(d->err, sizeof d->err, "%s: ", where[0] ? where : "argument");
    if (n < 0 || (size_t)n >= sizeof d->err) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err + n, sizeof d->err - (size_t)n, fmt, ap);
    va_end(ap);
}

void nif_prefix_err(decoder *d, const char *prefix) {
    char tmp[sizeof d->err];
    memcpy(tmp, d->err, sizeof tmp);
    tmp[sizeof tmp - 1] = 0;
    size_t p = strlen(prefix), n = strlen(tmp);
    if (p > 200) p = 200;
    if (p + 2 + n >= sizeof d->err) n = sizeof d->err - p - 3;
    memcpy(d->err, prefix, p);
    memcpy(d->err + p, ": ", 2);
    memcpy(d->err + p + 2, tmp, n);
    d->err[p + 2 + n] = 0;
}

void *nif_arena_alloc(decoder *d, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    /* 16-byte alignment from the address itself: the decoder may live in
     * memory aligned to 8 only */
    uintptr_t base = (uintptr_t)d->ar.first;
    size_t start = (size_t)(((base + d->ar.used + 15) & ~(uintptr_t)15) - base);
    if (start + n <= sizeof d->ar.first) {
        d->ar.used = start + n;
        return d->ar.first + start;
    }
    arena_block *b = d->ar.blocks;
    if (!b || b->used + n > b->cap) {
        size_t cap = n > 8192 ? n : 8192;
        b = malloc(sizeof *b + cap);
        if (!b) {
            snprintf(d->err, sizeof d->err, "out of host memory decoding arguments");
            return NULL;
        }
        b->cap = cap;
        b->used = 0;
        b->next = d->ar.blocks;
        d->ar.blocks = b;
    }
    void *p = (unsigned char *)b->data + b->used;
    b->used += n;
    return p;
}

/* Bytes of a binary argument that stay where they are until the call
 * ends. Binaries of up to 64 bytes (ERTS's heap binaries) live on the
 * process heap, which a garbage collection between a call's two
 * schedulers (dispatch_nif.c) may move: those are copied into the arena.
 * Larger ones are off the heap, kept alive by the call's terms. NULL
 * (with d->err) when out of memory. */
#define HEAP_BINARY_MAX 64
static const unsigned char *stable_bytes(decoder *d, const ErlNifBinary *bin) {
    if (bin->size > HEAP_BINARY_MAX) return bin->data;
    unsigned char *p = nif_arena_alloc(d, bin->size);
    if (p && bin->size) memcpy(p, bin->data, bin->size);
    return p;
}

static bool hold(decoder *d, emily_tensor *t) {
    if (d->nheld == d->held_cap) {
        size_t cap = d->held_cap ? d->held_cap * 2 : 8;
        emily_tensor **h = realloc(d->held, cap * sizeof *h);
        if (!h) {
            emily_tensor_release(t);
            snprintf(d->err, sizeof d->err, "out of host memory decoding arguments");
            return false;
        }
        d->held = h;
        d->held_cap = cap;
    }
    d->held[d->nheld++] = t;
    return true;
}

const char *nif_spec_str(emily_dtype t, int rank, const int64_t *shape, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "%s", emily_dtype_name(t));
    for (int i = 0; i < rank && n < size; i++) n += (size_t)snprintf(buf + n, size - n, "[%lld]", (long long)shape[i]);
    return buf;
}

/* ---- types, shapes, devices ---- */

bool nif_term_to_dtype(ErlNifEnv *env, ERL_NIF_TERM t, emily_dtype *out, char *err, size_t es) {
    const ERL_NIF_TERM *el;
    int arity;
    int bits;
    if (!enif_get_tuple(env, t, &arity, &el) || arity != 2 || !enif_is_atom(env, el[0]) ||
        !enif_get_int(env, el[1], &bits)) {
        snprintf(err, es, "expected a type such as {:f, 32}");
        return false;
    }
    emily_dtype dt = EMILY_DTYPE_AUTO;
    if (enif_is_identical(el[0], nif_atom.u)) dt = emily_dtype_make(EMILY_KIND_UNSIGNED, bits);
    else if (enif_is_identical(el[0], nif_atom.s)) dt = emily_dtype_make(EMILY_KIND_SIGNED, bits);
    else if (enif_is_identical(el[0], nif_atom.f)) dt = emily_dtype_make(EMILY_KIND_FLOAT, bits);
    else if (enif_is_identical(el[0], nif_atom.bf)) dt = emily_dtype_make(EMILY_KIND_BFLOAT, bits);
    else if (enif_is_identical(el[0], nif_atom.c)) dt = emily_dtype_make(EMILY_KIND_COMPLEX, bits);
    else if (enif_is_identical(el[0], nif_atom.f8_e4m3fn)) dt = emily_dtype_make(EMILY_KIND_FLOAT8_E4M3FN, bits);
    if (dt == EMILY_DTYPE_AUTO || !emily_dtype_known(dt)) {
        char name[32] = "?";
        enif_get_atom(env, el[0], name, sizeof name, ERL_NIF_LATIN1);
        snprintf(err, es, "type {:%s, %d} is not supported by Emily", name, bits);
        return false;
    }
    *out = dt;
    return true;
}

ERL_NIF_TERM nif_dtype_to_term(ErlNifEnv *env, emily_dtype t) {
    ERL_NIF_TERM kind;
    switch (emily_dtype_kind_of(t)) {
    case EMILY_KIND_UNSIGNED: kind = nif_atom.u; break;
    case EMILY_KIND_SIGNED: kind = nif_atom.s; break;
    case EMILY_KIND_BFLOAT: kind = nif_atom.bf; break;
    case EMILY_KIND_FLOAT: kind = nif_atom.f; break;
    case EMILY_KIND_FLOAT8_E4M3FN: kind = nif_atom.f8_e4m3fn; break;
    default: kind = nif_atom.c; break;
    }
    return enif_make_tuple2(env, kind, enif_make_int(env, emily_dtype_bits(t)));
}

bool nif_term_to_shape(ErlNifEnv *env, ERL_NIF_TERM t, int *rank, int64_t **shape, decoder *d) {
    const ERL_NIF_TERM *el;
    int arity;
    if (!enif_get_tuple(env, t, &arity, &el)) {
        snprintf(d->err, sizeof d->err, "expected a shape tuple of non-negative integers");
        return false;
    }
    int64_t *s = nif_arena_alloc(d, sizeof(int64_t) * (size_t)(arity + 1));
    if (!s) return false;
    /* the product of the non-zero dimensions (-1 past 2^63), wherever a 0
     * sits: a 0 after an overflow must not hide it, or {2^62, 4, 0}
     * passes and a product over its prefix overflows (tensor_from_res) */
    int64_t size = 1;
    bool empty = false;
    for (int i = 0; i < arity; i++) {
        ErlNifSInt64 v;
        if (!enif_get_int64(env, el[i], &v) || v < 0) {
            snprintf(d->err, sizeof d->err, "expected a shape tuple of non-negative integers (dimension %d)", i);
            return false;
        }
        s[i] = (int64_t)v;
        if (v == 0) empty = true;
        else if (size >= 0) size = size > INT64_MAX / v ? -1 : size * v;
    }
    if (size < 0) {
        snprintf(d->err, sizeof d->err, "shape has more than 2^63 elements (its non-zero dimensions)");
        return false;
    }
    if (empty) size = 0;
    if (d->elements < INT64_MAX - size) d->elements += size;
    *rank = arity;
    *shape = s;
    return true;
}

ERL_NIF_TERM nif_shape_to_term(ErlNifEnv *env, int rank, const int64_t *shape) {
    ERL_NIF_TERM small[8] = {0};
    ERL_NIF_TERM *el = rank <= 8 ? small : enif_alloc(sizeof(ERL_NIF_TERM) * (size_t)rank);
    if (!el) return enif_make_atom(env, "error");
    for (int i = 0; i < rank; i++) el[i] = enif_make_int64(env, shape[i]);
    ERL_NIF_TERM r = enif_make_tuple_from_array(env, el, (unsigned)rank);
    if (el != small) enif_free(el);
    return r;
}

bool nif_term_to_device(ErlNifEnv *env, ERL_NIF_TERM t, emily_device *out, char *err, size_t es) {
    if (enif_is_identical(t, nif_atom.cpu)) {
        *out = EMILY_CPU;
        return true;
    }
    if (enif_is_identical(t, nif_atom.cuda)) {
        *out = (emily_device){EMILY_DEVICE_CUDA, 0};
        return true;
    }
    const ERL_NIF_TERM *el;
    int arity, idx;
    if (enif_get_tuple(env, t, &arity, &el) && arity == 2 && enif_get_int(env, el[1], &idx) && idx >= 0) {
        if (enif_is_identical(el[0], nif_atom.cuda)) {
            *out = (emily_device){EMILY_DEVICE_CUDA, idx};
            return true;
        }
        if (enif_is_identical(el[0], nif_atom.cpu) && idx == 0) {
            *out = EMILY_CPU;
            return true;
        }
    }
    snprintf(err, es, "expected a device: :cpu, :cuda or {:cuda, index}");
    return false;
}

ERL_NIF_TERM nif_device_to_term(ErlNifEnv *env, emily_device dev) {
    if (dev.type == EMILY_DEVICE_CPU) return nif_atom.cpu;
    return enif_make_tuple2(env, nif_atom.cuda, enif_make_int(env, dev.index));
}

/* ---- values ---- */

static bool get_map(ErlNifEnv *env, ERL_NIF_TERM map, ERL_NIF_TERM key, ERL_NIF_TERM *v) {
    return enif_get_map_value(env, map, key, v);
}

/* A float, integer or number atom as a double (for %Complex{} parts). */
static bool number_part(ErlNifEnv *env, ERL_NIF_TERM t, double *out) {
    ErlNifSInt64 i;
    char name[16];
    if (enif_get_double(env, t, out)) return true;
    if (enif_get_int64(env, t, &i)) {
        *out = (double)i;
        return true;
    }
    if (enif_get_atom(env, t, name, sizeof name, ERL_NIF_LATIN1)) {
        if (strcmp(name, "nan") == 0) {
            *out = __builtin_nan("");
            return true;
        }
        if (strcmp(name, "infinity") == 0) {
            *out = __builtin_inf();
            return true;
        }
        if (strcmp(name, "neg_infinity") == 0) {
            *out = -__builtin_inf();
            return true;
        }
    }
    return false;
}

/* The engine tensor held by a resource, as the struct describes it
 * (dtype/shape from the %Nx.Tensor{} when given; a reshape view when only
 * the shape differs with the same number of elements). */
static bool tensor_from_res(decoder *d, tensor_res *r, const emily_value *spec, emily_value *v) {
    emily_tensor *t = nif_tensor_res_acquire(r);
    if (!t) {
        fail(d, "the tensor was deallocated");
        return false;
    }
    if (!hold(d, t)) return false;
    if (spec) {
        int rank = emily_tensor_rank(t);
        const int64_t *shape = emily_tensor_shape(t);
        bool same_shape = rank == spec->rank;
        for (int i = 0; same_shape && i < rank; i++) same_shape = shape[i] == spec->shape[i];
        if (emily_tensor_dtype(t) != spec->dtype || !same_shape) {
            int64_t n = 1;
            for (int i = 0; i < spec->rank; i++) n *= spec->shape[i];
            emily_tensor *view = NULL;
            if (emily_tensor_dtype(t) == spec->dtype && n == emily_tensor_size(t) &&
                emily_reshape(t, spec->rank, spec->shape, &view) == EMILY_OK) {
                if (!hold(d, view)) return false;
                t = view;
            } else {
                char a[160], b[160];
                fail(d, "the tensor struct says %s but its data is %s",
                     nif_spec_str(spec->dtype, spec->rank, spec->shape, a, sizeof a),
                     nif_spec_str(emily_tensor_dtype(t), rank, shape, b, sizeof b));
                return false;
            }
        }
    }
    if (!d->have_device) {
        d->have_device = true;
        d->device = emily_tensor_device(t);
    }
    d->elements += emily_tensor_size(t);
    v->kind = EMILY_V_TENSOR;
    v->tensor = t;
    return true;
}

static bool tensor_from_resource(decoder *d, ERL_NIF_TERM ref, const emily_value *spec, emily_value *v) {
    tensor_res *r;
    if (!enif_get_resource(d->env, ref, nif_tensor_rt, (void **)&r)) {
        fail(d, "the reference is not an Emily tensor");
        return false;
    }
    return tensor_from_res(d, r, spec, v);
}

/* Host bytes to import on the call's device once it is known (nif_decoder_finish). */
static bool pend_import(decoder *d, emily_value *v, const ErlNifBinary *bin, const emily_value *spec, int64_t *dims,
                        int64_t count, const char *what) {
    if (d->npend == d->pend_cap) {
        size_t cap = d->pend_cap ? d->pend_cap * 2 : 4;
        pending_import *p = realloc(d->pend, cap * sizeof *p);
        if (!p) {
            snprintf(d->err, sizeof d->err, "out of host memory decoding arguments");
            return false;
        }
        d->pend = p;
        d->pend_cap = cap;
    }
    const unsigned char *bytes = stable_bytes(d, bin);
    if (!bytes) return false;
    d->pend[d->npend++] = (pending_import){v, bytes, bin->size, spec->dtype, spec->rank, dims, what};
    d->elements += count;
    v->kind = EMILY_V_TENSOR;
    v->tensor = NULL;
    return true;
}

static bool decode_tensor_struct(decoder *d, ERL_NIF_TERM map, emily_value *v) {
    ERL_NIF_TERM data, type, shape, inner;
    emily_value spec = {0};
    char terr[160];
    if (!get_map(d->env, map, nif_atom.type, &type) || !get_map(d->env, map, nif_atom.shape, &shape) ||
        !get_map(d->env, map, nif_atom.data, &data)) {
        fail(d, "a tensor needs :data, :type and :shape");
        return false;
    }
    if (!nif_term_to_dtype(d->env, type, &spec.dtype, terr, sizeof terr)) {
        fail(d, "%s", terr);
        return false;
    }
    int64_t *dims;
    int64_t before = d->elements;
    if (!nif_term_to_shape(d->env, shape, &spec.rank, &dims, d)) {
        char where[160];
        path_str(d, where, sizeof where);
        nif_prefix_err(d, where);
        return false;
    }
    int64_t count = d->elements - before;
    d->elements = before;
    spec.shape = dims;
    if (enif_is_ref(d->env, data)) return tensor_from_resource(d, data, &spec, v);
    if (!enif_is_map(d->env, data)) {
        fail(d, "unsupported tensor data");
        return false;
    }
    ERL_NIF_TERM st;
    ErlNifBinary bin;
    if (get_map(d->env, data, nif_atom.ref, &inner)) {
        tensor_res *r;
        const ERL_NIF_TERM *el;
        int arity, id;
        if (enif_get_tuple(d->env, inner, &arity, &el) && arity == 2 && enif_is_identical(el[0], nif_atom.graph) &&
            enif_get_int(d->env, el[1], &id)) {
            /* a value of the graph Emily.Compiler is recording */
            if (!d->graph_refs) {
                fail(d, "a tensor of a defn being compiled by Emily.Compiler was used outside that "
                        "compilation (it has no data until the compiled function runs)");
                return false;
            }
            v->kind = EMILY_V_REF;
            v->i = id;
            v->dtype = spec.dtype;
            v->rank = spec.rank;
            v->shape = dims;
            return true;
        }
        if (enif_get_tuple(d->env, inner, &arity, &el) && arity >= 1 && enif_is_identical(el[0], nif_atom.quantized)) {
            /* a quantized matrix: Elixir dequantizes it and retries */
            d->foreign = true;
            v->kind = EMILY_V_NIL;
            return true;
        }
        if (enif_get_resource(d->env, inner, nif_tensor_rt, (void **)&r)) return tensor_from_res(d, r, &spec, v);
        /* not a tensor of this VM: sent from another node, or through
         * binary_to_term after its tensor was freed. A CPU tensor's struct
         * carries its bytes (an alias of the engine's buffer where it was
         * made, copied by the distribution), read here like
         * Nx.BinaryBackend's. */
        if (get_map(d->env, data, nif_atom.bytes, &inner) && enif_inspect_binary(d->env, inner, &bin))
            return pend_import(d, v, &bin, &spec, dims, count, "an Emily tensor from the bytes it carried");
        fail(d, "%s", nif_not_carried_msg);
        return false;
    }
    if (get_map(d->env, data, nif_atom.struct_, &st) && enif_is_identical(st, nif_atom.nx_binary_backend) &&
        get_map(d->env, data, nif_atom.state, &inner) && enif_inspect_binary(d->env, inner, &bin))
        return pend_import(d, v, &bin, &spec, dims, count, "an Nx.BinaryBackend tensor");
    /* another backend's tensor: Elixir moves it to Emily and retries */
    d->foreign = true;
    v->kind = EMILY_V_NIL;
    return true;
}

static bool decode_list(decoder *d, ERL_NIF_TERM term, emily_value *v) {
    unsigned len;
    if (!enif_get_list_length(d->env, term, &len)) {
        fail(d, "an improper list");
        return false;
    }
    /* a keyword list: every item {atom, value} */
    bool kw = len > 0;
    ERL_NIF_TERM head, tail = term;
    while (kw && enif_get_list_cell(d->env, tail, &head, &tail)) {
        const ERL_NIF_TERM *el;
        int arity;
        kw = enif_get_tuple(d->env, head, &arity, &el) && arity == 2 && enif_is_atom(d->env, el[0]);
    }
    v->kind = kw ? EMILY_V_OPTS : EMILY_V_LIST;
    v->n = len;
    v->items = nif_arena_alloc(d, sizeof(emily_value) * (len + 1));
    if (!v->items) return false;
    if (kw) {
        v->keys = nif_arena_alloc(d, sizeof(char *) * (len + 1));
        if (!v->keys) return false;
    }
    tail = term;
    for (unsigned i = 0; i < len; i++) {
        enif_get_list_cell(d->env, tail, &head, &tail);
        memset(&v->items[i], 0, sizeof v->items[i]);
        if (kw) {
            const ERL_NIF_TERM *el;
            int arity;
            enif_get_tuple(d->env, head, &arity, &el);
            unsigned alen;
            if (!enif_get_atom_length(d->env, el[0], &alen, ERL_NIF_LATIN1)) alen = 255;
            char *key = nif_arena_alloc(d, alen + 1);
            if (!key) return false;
            if (!enif_get_atom(d->env, el[0], key, alen + 1, ERL_NIF_LATIN1)) {
                fail(d, "an option key is not a latin-1 atom");
                return false;
            }
            v->keys[i] = key;
            path_push(d, 'k', i, key);
            bool ok = nif_decode_value(d, el[1], &v->items[i]);
            path_pop(d);
            if (!ok) return false;
        } else {
            path_push(d, 'l', i, NULL);
            bool ok = nif_decode_value(d, head, &v->items[i]);
            path_pop(d);
            if (!ok) return false;
        }
    }
    return true;
}

bool nif_decode_value(decoder *d, ERL_NIF_TERM term, emily_value *v) {
    ErlNifEnv *env = d->env;
    memset(v, 0, sizeof *v);
    if (enif_is_atom(env, term)) {
        if (enif_is_identical(term, nif_atom.nil)) {
            v->kind = EMILY_V_NIL;
            return true;
        }
        if (enif_is_identical(term, nif_atom.true_)) {
            v->kind = EMILY_V_BOOL;
            v->b = true;
            return true;
        }
        if (enif_is_identical(term, nif_atom.false_)) {
            v->kind = EMILY_V_BOOL;
            v->b = false;
            return true;
        }
        unsigned len;
        if (!enif_get_atom_length(env, term, &len, ERL_NIF_LATIN1)) {
            fail(d, "an atom that is not latin-1");
            return false;
        }
        char *s = nif_arena_alloc(d, len + 1);
        if (!s) return false;
        enif_get_atom(env, term, s, len + 1, ERL_NIF_LATIN1);
        v->kind = EMILY_V_ATOM;
        v->str = s;
        v->len = len;
        return true;
    }
    switch (enif_term_type(env, term)) {
    case ERL_NIF_TERM_TYPE_INTEGER: {
        ErlNifSInt64 i;
        ErlNifUInt64 u;
        if (enif_get_int64(env, term, &i)) {
            v->kind = EMILY_V_INT;
            v->i = (int64_t)i;
            return true;
        }
        if (enif_get_uint64(env, term, &u)) {
            v->kind = EMILY_V_UINT;
            v->u = (uint64_t)u;
            return true;
        }
        fail(d, "an integer outside the 64-bit range");
        return false;
    }
    case ERL_NIF_TERM_TYPE_FLOAT:
        v->kind = EMILY_V_FLOAT;
        enif_get_double(env, term, &v->f);
        return true;
    case ERL_NIF_TERM_TYPE_BITSTRING: {
        ErlNifBinary bin;
        if (!enif_inspect_binary(env, term, &bin)) {
            fail(d, "a bitstring that is not a binary");
            return false;
        }
        v->kind = EMILY_V_BINARY;
        v->str = (const char *)stable_bytes(d, &bin);
        if (!v->str) return false;
        v->len = bin.size;
        return true;
    }
    case ERL_NIF_TERM_TYPE_REFERENCE: return tensor_from_resource(d, term, NULL, v);
    case ERL_NIF_TERM_TYPE_TUPLE:
    case ERL_NIF_TERM_TYPE_LIST:
    case ERL_NIF_TERM_TYPE_MAP: break;
    default: fail(d, "unsupported term (a pid, port or function)"); return false;
    }
    if (++d->depth > MAX_DEPTH) {
        fail(d, "term nested too deeply");
        return false;
    }
    bool ok = false;
    if (enif_is_list(env, term)) ok = decode_list(d, term, v);
    else if (enif_is_tuple(env, term)) {
        const ERL_NIF_TERM *el;
        int arity;
        enif_get_tuple(env, term, &arity, &el);
        v->kind = EMILY_V_TUPLE;
        v->n = (size_t)arity;
        v->items = nif_arena_alloc(d, sizeof(emily_value) * (size_t)(arity + 1));
        ok = v->items != NULL;
        for (int i = 0; ok && i < arity; i++) {
            path_push(d, 't', (unsigned)i, NULL);
            ok = nif_decode_value(d, el[i], &v->items[i]);
            path_pop(d);
        }
    } else {
        ERL_NIF_TERM st, re, im;
        if (get_map(env, term, nif_atom.struct_, &st) && enif_is_identical(st, nif_atom.complex)) {
            if (get_map(env, term, nif_atom.re, &re) && get_map(env, term, nif_atom.im, &im) &&
                number_part(env, re, &v->re) && number_part(env, im, &v->im)) {
                v->kind = EMILY_V_COMPLEX;
                ok = true;
            } else fail(d, "a malformed %%Complex{}");
        } else if (get_map(env, term, nif_atom.data, &st)) {
            ok = decode_tensor_struct(d, term, v);
        } else {
            fail(d, "unsupported map or struct");
        }
    }
    d->depth--;
    return ok;
}

bool nif_decode_arg(decoder *d, unsigned index, ERL_NIF_TERM term, emily_value *v) {
    d->npath = 0;
    path_push(d, 'a', index, NULL);
    bool ok = nif_decode_value(d, term, v);
    d->npath = 0;
    return ok;
}

bool nif_decode_args(decoder *d, ERL_NIF_TERM list, unsigned n, emily_value *out) {
    ERL_NIF_TERM head, tail = list;
    for (unsigned i = 0; i < n; i++) {
        enif_get_list_cell(d->env, tail, &head, &tail);
        if (!nif_decode_arg(d, i, head, &out[i])) return false;
    }
    return true;
}

bool nif_decode_template(decoder *d, ERL_NIF_TERM term, emily_value *v) {
    ErlNifEnv *env = d->env;
    memset(v, 0, sizeof *v);
    ERL_NIF_TERM type, shape;
    if (enif_is_map(env, term)) {
        char terr[160];
        if (!get_map(env, term, nif_atom.type, &type) || !get_map(env, term, nif_atom.shape, &shape)) {
            snprintf(d->err, sizeof d->err, "output template: expected a tensor with :type and :shape");
            return false;
        }
        if (!nif_term_to_dtype(env, type, &v->dtype, terr, sizeof terr)) {
            snprintf(d->err, sizeof d->err, "output template: %s", terr);
            return false;
        }
        int64_t *dims;
        if (!nif_term_to_shape(env, shape, &v->rank, &dims, d)) {
            nif_prefix_err(d, "output template");
            return false;
        }
        v->shape = dims;
        v->kind = EMILY_V_TEMPLATE;
        return true;
    }
    const ERL_NIF_TERM *el = NULL;
    int arity = 0;
    unsigned len = 0;
    bool is_tuple = enif_get_tuple(env, term, &arity, &el);
    if (!is_tuple && !enif_get_list_length(env, term, &len)) {
        snprintf(d->err, sizeof d->err, "output template: expected a tensor or a tuple of tensors");
        return false;
    }
    size_t n = is_tuple ? (size_t)arity : len;
    if (n == 0 || n > EMILY_DISPATCH_MAX_OUTPUTS) {
        snprintf(d->err, sizeof d->err, "output template: expected 1 to %d outputs, got %zu",
                 EMILY_DISPATCH_MAX_OUTPUTS, n);
        return false;
    }
    v->kind = is_tuple ? EMILY_V_TUPLE : EMILY_V_LIST;
    v->n = n;
    v->items = nif_arena_alloc(d, sizeof(emily_value) * (n + 1));
    if (!v->items) return false;
    ERL_NIF_TERM head, tail = term;
    for (size_t i = 0; i < n; i++) {
        ERL_NIF_TERM item;
        if (is_tuple) item = el[i];
        else {
            enif_get_list_cell(env, tail, &head, &tail);
            item = head;
        }
        if (!enif_is_map(env, item)) {
            snprintf(d->err, sizeof d->err, "output template %zu: expected a tensor", i);
            return false;
        }
        if (!nif_decode_template(d, item, &v->items[i])) return false;
    }
    return true;
}

bool nif_decoder_finish(decoder *d, emily_device device) {
    for (size_t i = 0; i < d->npend; i++) {
        pending_import *p = &d->pend[i];
        emily_tensor *t;
        if (emily_from_binary(device, p->dtype, p->rank, p->shape, p->bytes, p->nbytes, &t)) {
            snprintf(d->err, sizeof d->err, "importing %s: %s", p->what, emily_last_error());
            return false;
        }
        if (!hold(d, t)) return false;
        p->v->tensor = t;
    }
    d->npend = 0;
    return true;
}
