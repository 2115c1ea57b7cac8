/* The Erlang NIF over libemily: shared declarations.
 *
 * One job a file: emily_nif.c has the function table, the module
 * callbacks and the small functions (devices, streams, settings);
 * tensor_nif.c the tensor resource and tensor data; export_nif.c
 * to_pointer/from_pointer; dispatch_nif.c dispatch/6; graph_nif.c engine
 * graphs; terms.c turns Erlang terms into the dispatcher's emily_value
 * trees (and types, shapes and devices back into terms). Only the public
 * API of include/emily is used. Nothing here aborts: every failure
 * becomes {:error, message}. The NIF is built with -fvisibility=hidden;
 * what its files share is named nif_*. */
#ifndef EMILY_NIF_H
#define EMILY_NIF_H

#include <erl_nif.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "emily/emily.h"

/* A tensor resource. `t` is NULL once Emily.Native.deallocate/1 ran; the
 * spinlock makes taking a reference and deallocating safe from several
 * scheduler threads at once (both hold it for a few instructions). `pin`
 * is a second reference to the same tensor, taken when a binary over its
 * bytes is made with this resource as its owner (an %Emily.Backend{}'s
 * :bytes): deallocate leaves it, so that the binary stays valid; it goes
 * when the resource does, after its term and all such binaries. */
typedef struct tensor_res {
    atomic_flag lock;
    emily_tensor *t;
    emily_tensor *pin;
    uintptr_t export_addr; /* 0, or the address to_pointer registered (under `lock`) */
} tensor_res;

static inline void nif_res_lock(tensor_res *r) {
    while (atomic_flag_test_and_set_explicit(&r->lock, memory_order_acquire)) {}
}
static inline void nif_res_unlock(tensor_res *r) { atomic_flag_clear_explicit(&r->lock, memory_order_release); }

/* A stream resource (Emily.Stream): freed, after its work, on GC. */
typedef struct stream_res {
    emily_stream *s;
    emily_device device;
} stream_res;

extern ErlNifResourceType *nif_tensor_rt;
extern ErlNifResourceType *nif_stream_rt;

typedef struct nif_atoms {
    ERL_NIF_TERM ok, error, nil, true_, false_, foreign_tensor, already_deallocated;
    ERL_NIF_TERM cpu, cuda;
    ERL_NIF_TERM s, u, f, bf, c, f8_e4m3fn;
    ERL_NIF_TERM struct_, data, ref, bytes, state, type, shape, re, im;
    ERL_NIF_TERM nx_tensor, nx_binary_backend, complex, emily_backend;
    ERL_NIF_TERM active, peak, cached, graph, quantized;
} nif_atoms;
extern nif_atoms nif_atom;
/* Makes the atoms of nif_atom (terms.c). */
void nif_atoms_init(ErlNifEnv *env);

/* The message for an Emily tensor whose resource is not of this VM (it
 * came from another node, or through binary_to_term after its tensor was
 * freed) and whose struct carries no bytes (see docs/elixir.md, "Across
 * nodes"). */
extern const char nif_not_carried_msg[];

/* Emily.Native's functions, each X(name, arity, flags): Emily.Native.name
 * of that arity is nif_<name>, run on a normal scheduler (flags 0) or a
 * dirty CPU scheduler (NIF_DIRTY). The function table (emily_nif.c) and
 * the declarations below are expanded from it. */
#define NIF_DIRTY ERL_NIF_DIRTY_JOB_CPU_BOUND
/* clang-format off */
#define NIF_FUNCTIONS(X)                                                                  \
    /* dispatch_nif.c */                                                                  \
    X(dispatch, 6, 0) X(set_inline_limit, 1, 0)                                           \
    /* tensor_nif.c */                                                                    \
    X(from_binary, 4, 0) X(to_binary, 2, 0) X(deallocate, 1, 0) X(backend_data, 1, 0)     \
    X(check_local, 1, 0) X(tensor_info, 1, 0) X(to_device, 2, NIF_DIRTY)                 \
    /* export_nif.c */                                                                    \
    X(to_pointer, 1, 0) X(from_pointer, 4, NIF_DIRTY)                                     \
    /* emily_nif.c */                                                                     \
    X(devices, 0, 0) X(device_check, 1, 0) X(version, 0, 0) X(callbacks, 0, 0)            \
    X(live_tensors, 0, 0) X(synchronize, 1, NIF_DIRTY) X(memory_stats, 1, 0)              \
    X(release_cache, 1, NIF_DIRTY) X(dot_precision, 0, 0) X(set_dot_precision, 1, 0)      \
    X(stream_new, 1, NIF_DIRTY) X(stream_synchronize, 1, NIF_DIRTY) X(stream_device, 1, 0) \
    /* graph_nif.c */                                                                     \
    X(graph_new, 0, 0) X(graph_param, 3, 0) X(graph_call, 4, 0) X(graph_const, 2, 0)      \
    X(graph_while, 4, 0) X(graph_cond, 5, 0) X(graph_outputs, 2, 0)                       \
    X(graph_compile, 4, NIF_DIRTY) X(graph_run, 2, NIF_DIRTY) X(graph_save, 2, NIF_DIRTY) \
    X(graph_stats, 1, 0)                                                                  \
    /* gguf_nif.c */                                                                      \
    X(gguf_load, 4, NIF_DIRTY)
/* clang-format on */

#define NIF_DECLARE(name, arity, flags) ERL_NIF_TERM nif_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
NIF_FUNCTIONS(NIF_DECLARE)

/* ---- emily_nif.c: helpers ---- */

/* {:error, "message"} */
ERL_NIF_TERM nif_make_error(ErlNifEnv *env, const char *msg);
ERL_NIF_TERM nif_make_binary_str(ErlNifEnv *env, const char *s);
/* {:error, "<context>: <the engine's last error>"} (no prefix for NULL) */
ERL_NIF_TERM nif_engine_error(ErlNifEnv *env, const char *context);
/* A device term; false with *err ({:error, message}) otherwise. */
bool nif_get_device(ErlNifEnv *env, ERL_NIF_TERM term, emily_device *dev, ERL_NIF_TERM *err);

/* ---- tensor_nif.c ---- */

/* A new reference to the resource's tensor, or NULL if deallocated. */
emily_tensor *nif_tensor_res_acquire(tensor_res *r);
/* The tensor reference argument of the NIF function `name`: its resource
 * and a new reference to its tensor; false with *err ({:error, "<name>:
 * ..."}) for another term or a deallocated tensor. */
bool nif_tensor_arg(ErlNifEnv *env, ERL_NIF_TERM term, const char *name, tensor_res **r, emily_tensor **t,
                    ERL_NIF_TERM *err);
/* Wraps a tensor (ownership moves to the term). */
ERL_NIF_TERM nif_make_tensor_term(ErlNifEnv *env, emily_tensor *t);
/* The term for a result tensor (ownership moves to it): its resource, or
 * with as_data its %Emily.Backend{}. False (t released) when out of memory. */
bool nif_result_term(ErlNifEnv *env, emily_tensor *t, bool as_data, ERL_NIF_TERM *out);
void nif_tensor_dtor(ErlNifEnv *env, void *obj);

/* ---- export_nif.c: to_pointer's table ---- */

/* Makes the table's lock (at load); false when out of memory. */
bool nif_exports_load(void);
/* Removes r's entry, if it has one (`address`: its export_addr, read by
 * the caller). Waits for a to_pointer that is adding it. */
void nif_exports_forget(const tensor_res *r, uintptr_t address);
#ifdef EMILY_NIF_TEST
/* Entries of to_pointer's export table owned by `owner` (all with NULL). */
size_t nif_export_count(const tensor_res *owner);
#endif

/* ---- dispatch_nif.c ---- */

/* Opens the resource type of calls on their way to a dirty scheduler and
 * learns the callbacks' names (at load); false on failure. */
bool nif_dispatch_load(ErlNifEnv *env);

/* ---- graph_nif.c: engine graphs for Emily.Compiler ---- */
extern ErlNifResourceType *nif_graph_rt;
bool nif_graph_load(ErlNifEnv *env);

/* ---- terms.c ---- */

/* Scratch memory for one decode, freed at once. The first block lives
 * inside the decoder, so small calls never touch malloc for it. */
typedef struct arena_block arena_block;
typedef struct arena {
    arena_block *blocks;
    size_t used;
    unsigned char first[2048]; /* aligned by nif_arena_alloc, not by the type */
} arena;

typedef struct pending_import pending_import;

typedef struct path_item {
    char kind; /* 'a' argument, 'l' list item, 't' tuple item, 'k' option */
    unsigned index;
    const char *key;
} path_item;

typedef struct decoder {
    ErlNifEnv *env;
    arena ar;
    /* tensors referenced by the decoded values (released at the end) */
    emily_tensor **held;
    size_t nheld, held_cap;
    /* Nx.BinaryBackend tensors, imported once the device is known */
    pending_import *pend;
    size_t npend, pend_cap;
    bool have_device; /* device of the first Emily tensor seen */
    emily_device device;
    bool foreign;    /* a tensor of another backend (not decodable here) */
    bool graph_refs; /* %Emily.Backend{ref: {:graph, id}} data decodes as EMILY_V_REF */
    int depth;
    path_item path[16]; /* where decoding is, for messages */
    int npath;
    int64_t elements; /* elements of all tensors and templates seen */
    char err[640];
} decoder;

void nif_decoder_init(decoder *d, ErlNifEnv *env);
void nif_decoder_free(decoder *d);
void *nif_arena_alloc(decoder *d, size_t n);
/* Rewrites d->err as "<prefix>: <d->err>". */
void nif_prefix_err(decoder *d, const char *prefix);
/* {:error, "<name>: <d's message>"}, or "<name>: cannot decode the <what>"
 * when d (which may be NULL) has none. (emily_nif.c, like nif_type_arg
 * and nif_shape_arg below: terms.c itself makes no error terms, so that
 * the fuzzers link it alone.) */
ERL_NIF_TERM nif_decode_error(ErlNifEnv *env, const decoder *d, const char *name, const char *what);

/* Argument terms: numbers, atoms, binaries, tuples, lists, keyword lists,
 * %Complex{}, %Nx.Tensor{} (Emily or Nx.BinaryBackend data) and bare
 * tensor resources. */
bool nif_decode_value(decoder *d, ERL_NIF_TERM term, emily_value *v);
/* nif_decode_value for the index-th callback argument (messages say which). */
bool nif_decode_arg(decoder *d, unsigned index, ERL_NIF_TERM term, emily_value *v);
/* nif_decode_arg for each of the first n items of a proper list. */
bool nif_decode_args(decoder *d, ERL_NIF_TERM list, unsigned n, emily_value *out);
/* Output templates: a map with :type and :shape (an %Nx.Tensor{}), or a
 * tuple/list of them. */
bool nif_decode_template(decoder *d, ERL_NIF_TERM term, emily_value *v);
/* Imports the pending Nx.BinaryBackend tensors onto `device`. */
bool nif_decoder_finish(decoder *d, emily_device device);

/* {:f, 32} <-> EMILY_F32 and so on; shapes as tuples; devices as :cpu,
 * :cuda or {:cuda, n}. Failures write a message into err. */
bool nif_term_to_dtype(ErlNifEnv *env, ERL_NIF_TERM t, emily_dtype *out, char *err, size_t es);
bool nif_term_to_shape(ErlNifEnv *env, ERL_NIF_TERM t, int *rank, int64_t **shape, decoder *d);
bool nif_term_to_device(ErlNifEnv *env, ERL_NIF_TERM t, emily_device *out, char *err, size_t es);
/* The type and the shape arguments of a NIF function (`name`, the shape
 * message's prefix; the shape lives in d's arena): false with *err
 * ({:error, message}) otherwise (emily_nif.c). */
bool nif_type_arg(ErlNifEnv *env, ERL_NIF_TERM t, emily_dtype *out, ERL_NIF_TERM *err);
bool nif_shape_arg(decoder *d, ERL_NIF_TERM t, const char *name, int *rank, int64_t **shape, ERL_NIF_TERM *err);
ERL_NIF_TERM nif_dtype_to_term(ErlNifEnv *env, emily_dtype t);
ERL_NIF_TERM nif_shape_to_term(ErlNifEnv *env, int rank, const int64_t *shape);
ERL_NIF_TERM nif_device_to_term(ErlNifEnv *env, emily_device dev);
/* "f32[2][3]" */
const char *nif_spec_str(emily_dtype t, int rank, const int64_t *shape, char *buf, size_t size);

#endif
