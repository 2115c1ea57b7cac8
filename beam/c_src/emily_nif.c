/* Emily.Native: the NIF functions.
 *
 * dispatch/6 is the one hot path: it decodes an Nx.Backend callback's
 * output template and arguments (terms.c) and runs emily_dispatch. Small
 * element-wise and shape work on the CPU (at most `inline_limit` elements
 * in and out, a few microseconds) runs on the calling scheduler; all other
 * work is rescheduled onto a dirty CPU scheduler, so a normal scheduler is
 * never blocked for long. Failures return {:error, message};
 * {:error, :foreign_tensor} asks Elixir to move another backend's tensor
 * to Emily and call again.
 *
 * Emily.Backend asks for its tensors' data as %Emily.Backend{ref, bytes}
 * (data_term): `bytes` aliases a CPU tensor's contiguous bytes, so
 * that the struct crosses BEAM nodes with them (docs/elixir.md, "Across
 * nodes"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emily_nif.h"
#include "test_hooks.h"

ErlNifResourceType *emily_tensor_rt;
ErlNifResourceType *emily_stream_rt;

/* Elements (inputs + outputs) up to which cheap callbacks run inline on
 * the CPU; 0 sends every dispatch to a dirty scheduler. */
static _Atomic long inline_limit = 16384;

/* ---- resources ---- */

static inline void res_lock(tensor_res *r) {
    while (atomic_flag_test_and_set_explicit(&r->lock, memory_order_acquire)) {
    }
}
static inline void res_unlock(tensor_res *r) { atomic_flag_clear_explicit(&r->lock, memory_order_release); }

emily_tensor *tensor_res_acquire(tensor_res *r) {
    res_lock(r);
    emily_tensor *t = r->t;
    if (t) emily_tensor_retain(t);
    res_unlock(r);
    return t;
}

/* ---- exported pointers ----
 * to_pointer hands out the address of a host tensor's bytes; from_pointer
 * accepts only such addresses, so it never reads memory Emily does not
 * know. Each entry holds its own reference to the tensor, so the bytes it
 * names are live for as long as it is in the table, whatever order
 * to_pointer, deallocate and from_pointer run in. A resource has at most
 * one entry (r->export_addr says where; repeated to_pointer calls find it
 * there instead of adding another), removed when the resource is
 * deallocated or destroyed.
 *
 * from_pointer looks entries up by address, so the table is a hash table
 * on it (open addressing, linear probing, at most half full): a program
 * that exports many tensors pays no scan of all of them under the lock.
 * Two resources may export one address (views of one buffer); the owner
 * tells their entries apart.
 *
 * Lock order: exports_lock, then a resource's spinlock. */
typedef struct export_entry {
    uintptr_t address;
    size_t nbytes;
    const tensor_res *owner; /* NULL: a free slot */
    emily_tensor *t;         /* the entry's own reference */
} export_entry;
static ErlNifMutex *exports_lock;
static export_entry *exports; /* 2^exports_bits slots, or NULL */
static size_t nexports, exports_cap;
static unsigned exports_bits;
#define EXPORTS_MIN_BITS 4

/* The first slot to probe for an address. Buffers are aligned, so an
 * address's low bits are mostly zero: a multiplicative hash, whose high
 * bits depend on all of the address's, picks the slot from those. */
static size_t export_home(uintptr_t address, unsigned bits) {
    uint64_t h = (uint64_t)address * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h >> (64 - bits));
}

/* Puts an entry into a table that has a free slot. */
static void exports_place(export_entry *slots, unsigned bits, export_entry e) {
    size_t mask = ((size_t)1 << bits) - 1, i = export_home(e.address, bits);
    while (slots[i].owner) i = (i + 1) & mask;
    slots[i] = e;
}

/* Moves the entries into a table of 2^bits slots; false (the table as it
 * was) when out of memory. */
static bool exports_rehash(unsigned bits) {
    size_t cap = (size_t)1 << bits;
    export_entry *slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < exports_cap; i++)
        if (exports[i].owner) exports_place(slots, bits, exports[i]);
    free(exports);
    exports = slots;
    exports_cap = cap;
    exports_bits = bits;
    return true;
}

/* Adds owner's entry, with a new reference to t; false when out of memory. */
static bool exports_add(uintptr_t address, size_t nbytes, const tensor_res *owner, emily_tensor *t) {
    if ((nexports + 1) * 2 > exports_cap &&
        !exports_rehash(exports_cap ? exports_bits + 1 : EXPORTS_MIN_BITS))
        return false;
    emily_tensor_retain(t);
    exports_place(exports, exports_bits, (export_entry){address, nbytes, owner, t});
    nexports++;
    return true;
}

/* Removes owner's entry under `address` and returns its reference, for
 * the caller to release once the lock is let go (NULL: no such entry). */
static emily_tensor *exports_remove(uintptr_t address, const tensor_res *owner) {
    if (!exports_cap) return NULL;
    size_t mask = exports_cap - 1, hole = export_home(address, exports_bits);
    while (exports[hole].owner != owner) {
        if (!exports[hole].owner) return NULL;
        hole = (hole + 1) & mask;
    }
    emily_tensor *t = exports[hole].t;
    /* A lookup stops at the first free slot, so the hole must not cut an
     * entry off from its home slot: each later entry of the run whose
     * probe path (home .. j) passes through the hole moves into it, and
     * its own slot becomes the hole. */
    for (size_t j = (hole + 1) & mask; exports[j].owner; j = (j + 1) & mask) {
        size_t home = export_home(exports[j].address, exports_bits);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            exports[hole] = exports[j];
            hole = j;
        }
    }
    exports[hole] = (export_entry){0};
    nexports--;
    /* a table that has mostly emptied shrinks (if that fails, it only
     * stays large) */
    if (exports_bits > EXPORTS_MIN_BITS && nexports * 8 < exports_cap)
        (void)exports_rehash(exports_bits - 1);
    return t;
}

/* The entry under `address` with the most bytes; NULL if none. */
static const export_entry *exports_find(uintptr_t address) {
    if (!exports_cap) return NULL;
    const export_entry *best = NULL;
    size_t mask = exports_cap - 1;
    for (size_t i = export_home(address, exports_bits); exports[i].owner; i = (i + 1) & mask)
        if (exports[i].address == address && (!best || exports[i].nbytes > best->nbytes))
            best = &exports[i];
    return best;
}

/* Removes r's entry, if it has one (`address`: its export_addr, read by
 * the caller). Waits for a to_pointer that is adding it. */
static void exports_forget(const tensor_res *r, uintptr_t address) {
    if (!address) return;
    enif_mutex_lock(exports_lock);
    emily_tensor *t = exports_remove(address, r);
    enif_mutex_unlock(exports_lock);
    emily_tensor_release(t);
}

#ifdef EMILY_NIF_TEST
size_t emily_nif_export_count(const tensor_res *owner) {
    size_t n = 0;
    enif_mutex_lock(exports_lock);
    for (size_t i = 0; i < exports_cap; i++)
        if (exports[i].owner && (!owner || exports[i].owner == owner)) n++;
    enif_mutex_unlock(exports_lock);
    return n;
}
#endif

static void tensor_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    tensor_res *r = obj;
    /* no to_pointer can be under way: it would hold a term of r */
    exports_forget(r, r->export_addr);
    emily_tensor_release(r->t);
    emily_tensor_release(r->pin);
    r->t = NULL;
    r->pin = NULL;
}

static void stream_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    stream_res *r = obj;
    if (r->s) emily_stream_free(r->s);
    r->s = NULL;
}

static tensor_res *tensor_res_new(emily_tensor *t) {
    tensor_res *r = enif_alloc_resource(emily_tensor_rt, sizeof *r);
    if (!r) return NULL;
    atomic_flag_clear(&r->lock);
    r->t = t;
    r->pin = NULL;
    r->export_addr = 0;
    return r;
}

ERL_NIF_TERM make_tensor_term(ErlNifEnv *env, emily_tensor *t) {
    tensor_res *r = tensor_res_new(t);
    if (!r) {
        emily_tensor_release(t);
        return make_error(env, "out of memory allocating a tensor resource");
    }
    ERL_NIF_TERM term = enif_make_resource(env, r);
    enif_release_resource(r);
    return term;
}

/* The host bytes of t if they are contiguous in CPU memory, where they
 * are final once the NIF returns (the CPU engine computes synchronously);
 * NULL for GPU tensors and non-contiguous views. */
static const void *cpu_bytes(emily_tensor *t) {
    const void *host;
    /* (contiguity first: host_data formats an error message otherwise) */
    if (emily_tensor_device(t).type != EMILY_DEVICE_CPU || !emily_tensor_is_contiguous(t) ||
        emily_host_data(t, &host) != EMILY_OK)
        return NULL;
    return host;
}

/* %Emily.Backend{ref: resource r, bytes: binary | nil} for r's tensor t
 * (borrowed). `bytes` is a binary over t's bytes when they are contiguous
 * in CPU memory (no copy), owned by r with r->pin, so it stays valid after
 * a deallocate and keeps nothing alive but t's buffer; the distribution
 * (or term_to_binary) carries it with the struct. nil for GPU tensors and
 * non-contiguous views. */
static bool data_term(ErlNifEnv *env, tensor_res *r, emily_tensor *t, ERL_NIF_TERM *out) {
    ERL_NIF_TERM bytes = A.nil;
    size_t nbytes = emily_tensor_nbytes(t);
    const void *host = NULL;
    if (nbytes == 0 && emily_tensor_device(t).type == EMILY_DEVICE_CPU) {
        enif_make_new_binary(env, 0, &bytes);
    } else if ((host = cpu_bytes(t))) {
        res_lock(r);
        if (!r->pin) {
            emily_tensor_retain(t);
            r->pin = t;
        }
        res_unlock(r);
        bytes = enif_make_resource_binary(env, r, host, nbytes);
    }
    ERL_NIF_TERM keys[3] = {A.struct_, A.ref, A.bytes};
    ERL_NIF_TERM values[3] = {A.emily_backend, enif_make_resource(env, r), bytes};
    return enif_make_map_from_arrays(env, keys, values, 3, out);
}

/* The term for a callback's result t (ownership moves to the term): its
 * resource, or with `as_data` its %Emily.Backend{}. False (t released)
 * when out of memory. */
bool result_term(ErlNifEnv *env, emily_tensor *t, bool as_data, ERL_NIF_TERM *out) {
    tensor_res *r = tensor_res_new(t);
    if (!r) {
        emily_tensor_release(t);
        return false;
    }
    bool ok = true;
    if (as_data) ok = data_term(env, r, t, out);
    else *out = enif_make_resource(env, r);
    enif_release_resource(r);
    return ok;
}

ERL_NIF_TERM make_binary_str(ErlNifEnv *env, const char *s) {
    ERL_NIF_TERM bin;
    size_t n = strlen(s);
    unsigned char *p = enif_make_new_binary(env, n, &bin);
    if (p) memcpy(p, s, n);
    return bin;
}

ERL_NIF_TERM make_error(ErlNifEnv *env, const char *msg) {
    return enif_make_tuple2(env, A.error, make_binary_str(env, msg));
}

static ERL_NIF_TERM engine_error(ErlNifEnv *env, const char *context) {
    char msg[1024];
    if (context) snprintf(msg, sizeof msg, "%s: %s", context, emily_last_error());
    else snprintf(msg, sizeof msg, "%s", emily_last_error());
    return make_error(env, msg);
}

static bool get_tensor(ErlNifEnv *env, ERL_NIF_TERM term, emily_tensor **t, ERL_NIF_TERM *err) {
    tensor_res *r;
    if (!enif_get_resource(env, term, emily_tensor_rt, (void **)&r)) {
        *err = make_error(env, "expected an Emily tensor reference");
        return false;
    }
    *t = tensor_res_acquire(r);
    if (!*t) {
        *err = make_error(env, "the tensor was deallocated");
        return false;
    }
    return true;
}

static bool get_device(ErlNifEnv *env, ERL_NIF_TERM term, emily_device *dev, ERL_NIF_TERM *err) {
    char msg[128];
    if (!term_to_device(env, term, dev, msg, sizeof msg)) {
        *err = make_error(env, msg);
        return false;
    }
    return true;
}

/* ---- dispatch ---- */

/* Callbacks whose cost is not bounded by their elements (matrix products,
 * sorting, decompositions, windows, transforms): always on a dirty
 * scheduler. */
static const char *const heavy_callbacks[] = {
    "dot", "conv", "sort", "argsort", "top_k", "window_sum", "window_product", "window_max",
    "window_min", "window_scatter_max", "window_scatter_min", "gather", "take",
    "take_along_axis", "indexed_add", "indexed_put", "fft", "ifft", "fft2", "ifft2", "rfft",
    "irfft", "lu", "qr", "svd", "eigh", "cholesky", "solve", "determinant",
    "triangular_solve", "cumulative_sum", "cumulative_product", "cumulative_min",
    "cumulative_max", NULL};

static bool is_heavy(const char *name) {
    for (int i = 0; heavy_callbacks[i]; i++)
        if (heavy_callbacks[i][0] == name[0] && strcmp(heavy_callbacks[i], name) == 0) return true;
    return false;
}

/* The longest callback name the dispatcher knows (set by load), and the
 * size of the buffer dispatch reads a name into. */
static size_t longest_callback;
#define CALLBACK_NAME_SIZE 64

/* The callback's name from `term`, an atom (or a binary), into name; false
 * with *err for a name that cannot be a callback's. The dispatcher takes
 * a C string, which ends at its first NUL: "add\0x" would run add, so a
 * name with a NUL byte is refused here, and so is one longer than any
 * callback's (without copying it, however long). */
static bool callback_name(ErlNifEnv *env, ERL_NIF_TERM term, char name[CALLBACK_NAME_SIZE],
                          ERL_NIF_TERM *err) {
    char msg[160];
    size_t n;
    unsigned len;
    ErlNifBinary b;
    bool atom = enif_is_atom(env, term);
    if (atom) {
        if (!enif_get_atom_length(env, term, &len, ERL_NIF_LATIN1)) {
            *err = make_error(env, "dispatch: unknown callback (its name is not Latin-1)");
            return false;
        }
        n = len;
    } else if (enif_inspect_binary(env, term, &b)) {
        n = b.size;
    } else {
        *err = make_error(env, "dispatch: the callback name must be an atom (or a binary)");
        return false;
    }
    if (n > longest_callback) {
        snprintf(msg, sizeof msg,
                 "dispatch: unknown callback (a name of %zu bytes; the longest callback's has %zu)", n,
                 longest_callback);
        *err = make_error(env, msg);
        return false;
    }
    if (atom) {
        /* (the byte count it returns includes the terminating NUL) */
        if (enif_get_atom(env, term, name, CALLBACK_NAME_SIZE, ERL_NIF_LATIN1) != (int)n + 1) {
            *err = make_error(env, "dispatch: cannot read the callback name");
            return false;
        }
    } else {
        memcpy(name, b.data, n);
    }
    name[n] = 0;
    if (n == 0) {
        *err = make_error(env, "dispatch: the callback name is empty");
        return false;
    }
    if (memchr(name, 0, n)) {
        *err = make_error(env, "dispatch: the callback name contains a NUL byte");
        return false;
    }
    return true;
}

static ERL_NIF_TERM dispatch_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[], bool dirty);

static ERL_NIF_TERM dispatch_dirty(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    return dispatch_run(env, argc, argv, true);
}

static ERL_NIF_TERM dispatch_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    return dispatch_run(env, argc, argv, false);
}

/* dispatch(callback, out, args, device | nil, stream | nil, mode): mode 0
 * runs, 1 infers; + DISPATCH_AS_DATA returns %Emily.Backend{} data instead
 * of bare resources. */
#define DISPATCH_AS_DATA 2
static ERL_NIF_TERM dispatch_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[], bool dirty) {
    char name[CALLBACK_NAME_SIZE];
    ERL_NIF_TERM name_err;
    if (!callback_name(env, argv[0], name, &name_err)) return name_err;
    int mode;
    if (!enif_get_int(env, argv[5], &mode) || mode < 0 || mode > (EMILY_DISPATCH_INFER | DISPATCH_AS_DATA))
        return make_error(env, "dispatch: mode must be 0 (run) or 1 (infer), plus 2 for "
                               "%Emily.Backend{} results");
    bool as_data = (mode & DISPATCH_AS_DATA) != 0;
    mode &= ~DISPATCH_AS_DATA;
    if (mode != EMILY_DISPATCH_RUN && mode != EMILY_DISPATCH_INFER)
        return make_error(env, "dispatch: mode must be 0 (run) or 1 (infer)");
    unsigned nargs;
    if (!enif_get_list_length(env, argv[2], &nargs))
        return make_error(env, "dispatch: the arguments must be a proper list");

    /* on the stack: a malloc of this size per call costs more than the
     * whole call (glibc consolidates its fast bins for large requests) */
    decoder dec, *d = &dec;
    decoder_init(d, env);
    ERL_NIF_TERM result;
    char msg[1024];
    emily_value out;
    emily_value *args = arena_alloc(d, sizeof(emily_value) * (nargs + 1));
    if (!args) goto decode_error;
    if (!decode_template(d, argv[1], &out)) goto decode_error;
    if (!decode_args(d, argv[2], nargs, args)) goto decode_error;
    if (d->foreign) {
        result = enif_make_tuple2(env, A.error, A.foreign_tensor);
        goto done;
    }
    emily_device device = d->have_device ? d->device : EMILY_CPU;
    if (!enif_is_identical(argv[3], A.nil)) {
        ERL_NIF_TERM err;
        if (!get_device(env, argv[3], &device, &err)) { result = err; goto done; }
    }
    if (!dirty) {
        long limit = atomic_load(&inline_limit);
        if (device.type != EMILY_DEVICE_CPU || d->elements > limit || is_heavy(name)) {
            decoder_free(d);
            return enif_schedule_nif(env, "dispatch", ERL_NIF_DIRTY_JOB_CPU_BOUND, dispatch_dirty,
                                     argc, argv);
        }
    }
    if (!decoder_finish(d, device)) goto decode_error;

    stream_res *st = NULL;
    if (!enif_is_identical(argv[4], A.nil)) {
        if (!enif_get_resource(env, argv[4], emily_stream_rt, (void **)&st)) {
            result = make_error(env, "dispatch: the stream is not an Emily.Stream");
            goto done;
        }
        if (!st->s || !emily_device_equal(st->device, device)) st = NULL;
        else if (emily_stream_set_current(device, st->s)) {
            result = engine_error(env, name);
            goto done;
        }
    }
    emily_dispatch_result res = {0};
    emily_status s = emily_dispatch(name, device, &out, args, nargs, (emily_dispatch_mode)mode, &res);
    if (s) snprintf(msg, sizeof msg, "%s", emily_last_error());
    if (st) emily_stream_set_current(device, NULL);
    if (s) {
        result = make_error(env, msg);
        goto done;
    }
    ERL_NIF_TERM items[EMILY_DISPATCH_MAX_OUTPUTS];
    bool made = true;
    for (int k = 0; k < res.n; k++) {
        /* after a failure, the remaining tensors are only released */
        if (!made) emily_tensor_release(res.tensors[k]);
        else made = result_term(env, res.tensors[k], as_data, &items[k]);
    }
    if (!made) result = make_error(env, "out of memory making the result terms");
    else if (out.kind == EMILY_V_TEMPLATE && res.n == 1) result = items[0];
    else result = enif_make_list_from_array(env, items, (unsigned)res.n);
    goto done;

decode_error:
    snprintf(msg, sizeof msg, "%s: %s", name, d->err[0] ? d->err : "cannot decode the arguments");
    result = make_error(env, msg);
done:
    decoder_free(d);
    return result;
}

static ERL_NIF_TERM set_inline_limit(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    long v;
    if (!enif_get_long(env, argv[0], &v) || v < 0) return enif_make_badarg(env);
    long old = atomic_exchange(&inline_limit, v);
    return enif_make_long(env, old);
}

/* ---- creation and reading ---- */

static ERL_NIF_TERM from_binary_run(ErlNifEnv *env, const ERL_NIF_TERM argv[]) {
    emily_device dev;
    emily_dtype dt;
    ErlNifBinary bin;
    ERL_NIF_TERM err;
    char msg[256];
    if (!get_device(env, argv[0], &dev, &err)) return err;
    if (!term_to_dtype(env, argv[1], &dt, msg, sizeof msg)) return make_error(env, msg);
    if (!enif_inspect_binary(env, argv[3], &bin)) return make_error(env, "from_binary: expected a binary");
    decoder d;
    decoder_init(&d, env);
    int rank;
    int64_t *shape;
    ERL_NIF_TERM result;
    if (!term_to_shape(env, argv[2], &rank, &shape, &d)) {
        prefix_err(&d, "from_binary");
        result = make_error(env, d.err);
    } else {
        emily_tensor *t;
        if (emily_from_binary(dev, dt, rank, shape, bin.data, bin.size, &t)) result = engine_error(env, NULL);
        else result = make_tensor_term(env, t);
    }
    decoder_free(&d);
    return result;
}

static ERL_NIF_TERM from_binary_dirty(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return from_binary_run(env, argv);
}

/* from_binary(device, type, shape, binary) */
static ERL_NIF_TERM from_binary_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    ErlNifBinary bin;
    if (enif_inspect_binary(env, argv[3], &bin) &&
        (bin.size > 256 * 1024 || !enif_is_identical(argv[0], A.cpu)))
        return enif_schedule_nif(env, "from_binary", ERL_NIF_DIRTY_JOB_CPU_BOUND, from_binary_dirty, argc, argv);
    return from_binary_run(env, argv);
}

/* A binary over the bytes of a host tensor: the binary holds its own
 * resource (with its own reference to the tensor), so it stays valid
 * after the tensor is deallocated or collected. */
static ERL_NIF_TERM host_binary(ErlNifEnv *env, emily_tensor *t, size_t nbytes) {
    const void *data;
    if (emily_host_data(t, &data)) {
        emily_tensor_release(t);
        return engine_error(env, "to_binary");
    }
    tensor_res *holder = tensor_res_new(t);
    if (!holder) {
        emily_tensor_release(t);
        return make_error(env, "to_binary: out of memory");
    }
    ERL_NIF_TERM bin = enif_make_resource_binary(env, holder, data, nbytes);
    enif_release_resource(holder);
    return bin;
}

static ERL_NIF_TERM to_binary_run(ErlNifEnv *env, const ERL_NIF_TERM argv[]) {
    emily_tensor *t;
    ERL_NIF_TERM err;
    if (!get_tensor(env, argv[0], &t, &err)) return err;
    size_t es = emily_dtype_size(emily_tensor_dtype(t));
    size_t size = (size_t)emily_tensor_size(t);
    ErlNifSInt64 limit;
    if (enif_get_int64(env, argv[1], &limit) && limit >= 0 && (size_t)limit < size) size = (size_t)limit;
    const void *data;
    emily_tensor *host = t;
    if (emily_host_data(t, &data) != EMILY_OK) {
        /* not contiguous, or not in host memory: one copy */
        emily_status s = emily_tensor_device(t).type == EMILY_DEVICE_CPU
                             ? emily_contiguous(t, &host)
                             : emily_to_device(t, EMILY_CPU, &host);
        emily_tensor_release(t);
        if (s) return engine_error(env, "to_binary");
    }
    return host_binary(env, host, size * es);
}

static ERL_NIF_TERM to_binary_dirty(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return to_binary_run(env, argv);
}

/* to_binary(ref, limit | nil): the first `limit` elements, row-major.
 * Zero-copy when the tensor is contiguous in host memory. */
static ERL_NIF_TERM to_binary_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    tensor_res *r;
    if (enif_get_resource(env, argv[0], emily_tensor_rt, (void **)&r)) {
        emily_tensor *t = tensor_res_acquire(r);
        if (t) {
            bool cheap = emily_tensor_device(t).type == EMILY_DEVICE_CPU &&
                         (emily_tensor_is_contiguous(t) || emily_tensor_nbytes(t) <= 256 * 1024);
            emily_tensor_release(t);
            if (!cheap)
                return enif_schedule_nif(env, "to_binary", ERL_NIF_DIRTY_JOB_CPU_BOUND, to_binary_dirty, argc, argv);
        }
    }
    return to_binary_run(env, argv);
}

static ERL_NIF_TERM deallocate_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r;
    if (!enif_get_resource(env, argv[0], emily_tensor_rt, (void **)&r))
        return make_error(env, "deallocate: expected an Emily tensor reference");
    res_lock(r);
    emily_tensor *t = r->t;
    uintptr_t exported = r->export_addr;
    r->t = NULL;
    r->export_addr = 0;
    res_unlock(r);
    /* after r->t is cleared: a to_pointer under way has then either seen
     * the tensor gone or recorded export_addr first (see to_pointer_nif),
     * and the entry it adds is removed here once it has */
    exports_forget(r, exported);
    if (!t) return A.already_deallocated;
    emily_tensor_release(t);
    return A.ok;
}

/* backend_data(ref): %Emily.Backend{ref: ref, bytes: binary | nil} for a
 * tensor made by another function (from_binary, to_device, ...). */
static ERL_NIF_TERM backend_data_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r;
    if (!enif_get_resource(env, argv[0], emily_tensor_rt, (void **)&r))
        return make_error(env, "backend_data: expected an Emily tensor reference");
    emily_tensor *t = tensor_res_acquire(r);
    if (!t) return make_error(env, "backend_data: the tensor was deallocated");
    ERL_NIF_TERM out;
    bool ok = data_term(env, r, t, &out);
    emily_tensor_release(t);
    return ok ? out : make_error(env, "backend_data: out of memory");
}

/* check_local(term): :ok when the term is a tensor resource of this VM
 * (deallocated or not), else {:error, message} with the message for a
 * tensor that came from another node without its bytes. */
static ERL_NIF_TERM check_local_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r;
    if (enif_get_resource(env, argv[0], emily_tensor_rt, (void **)&r)) return A.ok;
    return make_error(env, emily_not_carried_msg);
}

/* {type, shape, device} of the engine tensor */
static ERL_NIF_TERM tensor_info_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_tensor *t;
    ERL_NIF_TERM err;
    if (!get_tensor(env, argv[0], &t, &err)) return err;
    ERL_NIF_TERM r = enif_make_tuple3(env, dtype_to_term(env, emily_tensor_dtype(t)),
                                      shape_to_term(env, emily_tensor_rank(t), emily_tensor_shape(t)),
                                      device_to_term(env, emily_tensor_device(t)));
    emily_tensor_release(t);
    return r;
}

/* to_device(ref, device): a copy on another device (dirty) */
static ERL_NIF_TERM to_device_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_tensor *t, *out;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!get_device(env, argv[1], &dev, &err)) return err;
    if (!get_tensor(env, argv[0], &t, &err)) return err;
    emily_status s = emily_to_device(t, dev, &out);
    emily_tensor_release(t);
    if (s) return engine_error(env, "to_device");
    return make_tensor_term(env, out);
}

/* to_pointer(ref): {address, bytes} of a contiguous host tensor, valid
 * while the tensor lives; the address is registered for from_pointer
 * (once per resource, however often it is asked for). */
static ERL_NIF_TERM to_pointer_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r;
    if (!enif_get_resource(env, argv[0], emily_tensor_rt, (void **)&r))
        return make_error(env, "to_pointer: expected an Emily tensor reference");
    emily_tensor *t = tensor_res_acquire(r);
    if (!t) return make_error(env, "to_pointer: the tensor was deallocated");
    const void *data;
    if (emily_host_data(t, &data)) {
        emily_tensor_release(t);
        return engine_error(env, "to_pointer");
    }
    size_t nbytes = emily_tensor_nbytes(t);
    const char *err = NULL;
    enif_mutex_lock(exports_lock);
    /* Whether r is still live is decided under r's lock, inside the
     * table's: if a deallocate has cleared r->t since the acquire above,
     * nothing is handed out; if it comes later, it reads export_addr and
     * removes the entry added here once this lets the table's lock go.
     * Otherwise an entry added after a deallocate's clean-up would stay
     * until r is collected: its reference keeps the bytes valid, but
     * from_pointer would read a tensor that was deallocated. (The fuzz
     * campaign's use-after-free was such an entry, without a reference.) */
    res_lock(r);
    bool live = r->t != NULL, first = live && !r->export_addr;
    if (first) r->export_addr = (uintptr_t)data;
    res_unlock(r);
    if (!live) {
        err = "to_pointer: the tensor was deallocated";
    } else if (first && !exports_add((uintptr_t)data, nbytes, r, t)) {
        res_lock(r);
        if (r->export_addr == (uintptr_t)data) r->export_addr = 0;
        res_unlock(r);
        err = "to_pointer: out of host memory";
    }
    enif_mutex_unlock(exports_lock);
    emily_tensor_release(t);
    if (err) return make_error(env, err);
    return enif_make_tuple2(env, enif_make_uint64(env, (ErlNifUInt64)(uintptr_t)data),
                            enif_make_uint64(env, nbytes));
}

/* from_pointer(device, address, type, shape): a copy of the bytes at an
 * address that to_pointer handed out (and whose tensor still lives). */
static ERL_NIF_TERM from_pointer_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    emily_dtype dt;
    ErlNifUInt64 address;
    ERL_NIF_TERM err;
    char msg[256];
    if (!get_device(env, argv[0], &dev, &err)) return err;
    if (!enif_get_uint64(env, argv[1], &address))
        return make_error(env, "from_pointer: the address must be a non-negative integer");
    if (!term_to_dtype(env, argv[2], &dt, msg, sizeof msg)) return make_error(env, msg);
    decoder d;
    decoder_init(&d, env);
    int rank;
    int64_t *shape;
    ERL_NIF_TERM result;
    if (!term_to_shape(env, argv[3], &rank, &shape, &d)) {
        prefix_err(&d, "from_pointer");
        result = make_error(env, d.err);
        decoder_free(&d);
        return result;
    }
    size_t nbytes = (size_t)d.elements * emily_dtype_size(dt);
    /* a reference to the entry's tensor keeps the bytes alive through the
     * copy, which runs without the table's lock (a large copy, or one to
     * a GPU, would hold up every to_pointer and every free of an exported
     * tensor) */
    enif_mutex_lock(exports_lock);
    const export_entry *found = exports_find((uintptr_t)address);
    size_t have = found ? found->nbytes : 0;
    emily_tensor *src = found && nbytes <= have ? found->t : NULL;
    if (src) emily_tensor_retain(src);
    enif_mutex_unlock(exports_lock);
    if (!found) {
        result = make_error(env, "from_pointer: the address was not handed out by Emily's "
                                 "to_pointer (or its tensor is gone); Emily reads no other memory");
    } else if (!src) {
        snprintf(msg, sizeof msg, "from_pointer: %zu bytes asked for, the exported tensor has %zu",
                 nbytes, have);
        result = make_error(env, msg);
    } else {
        emily_tensor *t;
        if (emily_from_binary(dev, dt, rank, shape, (const void *)(uintptr_t)address, nbytes, &t))
            result = engine_error(env, "from_pointer");
        else
            result = make_tensor_term(env, t);
        emily_tensor_release(src);
    }
    decoder_free(&d);
    return result;
}

/* ---- devices, streams, introspection ---- */

static ERL_NIF_TERM devices_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    ERL_NIF_TERM list = enif_make_list(env, 0);
    int n = emily_device_count(EMILY_DEVICE_CUDA);
    for (int i = n - 1; i >= 0; i--)
        list = enif_make_list_cell(env, device_to_term(env, (emily_device){EMILY_DEVICE_CUDA, i}), list);
    return enif_make_list_cell(env, A.cpu, list);
}

static ERL_NIF_TERM device_check_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!get_device(env, argv[0], &dev, &err)) return err;
    if (emily_device_check(dev)) return engine_error(env, NULL);
    return A.ok;
}

static ERL_NIF_TERM version_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    return make_binary_str(env, emily_version());
}

static ERL_NIF_TERM callbacks_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    const char *const *names = emily_dispatch_callbacks();
    ERL_NIF_TERM list = enif_make_list(env, 0);
    size_t n = 0;
    while (names[n]) n++;
    while (n-- > 0) list = enif_make_list_cell(env, enif_make_atom(env, names[n]), list);
    return list;
}

static ERL_NIF_TERM live_tensors_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    (void)argv;
    return enif_make_tuple2(env, enif_make_int64(env, emily_live_tensors()),
                            enif_make_int64(env, emily_live_buffers()));
}

static ERL_NIF_TERM synchronize_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!get_device(env, argv[0], &dev, &err)) return err;
    if (emily_synchronize(dev)) return engine_error(env, "synchronize");
    return A.ok;
}

static ERL_NIF_TERM memory_stats_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!get_device(env, argv[0], &dev, &err)) return err;
    emily_memory_stats st;
    if (emily_memory_stats_get(dev, &st)) return engine_error(env, "memory_stats");
    ERL_NIF_TERM keys[3] = {A.active, A.peak, A.cached};
    ERL_NIF_TERM vals[3] = {enif_make_uint64(env, st.active), enif_make_uint64(env, st.peak),
                            enif_make_uint64(env, st.cached)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, vals, 3, &map);
    return map;
}

static ERL_NIF_TERM release_cache_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!get_device(env, argv[0], &dev, &err)) return err;
    if (emily_memory_release_cache(dev)) return engine_error(env, "release_cache");
    return A.ok;
}

/* The engine's process-wide dot precision (emily_dot_set_precision):
 * :highest (Nx.BinaryBackend's answers) or :fast (BLAS in each type's own
 * precision). */
static ERL_NIF_TERM dot_precision_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc, (void)argv;
    return enif_make_atom(env, emily_dot_get_precision() == EMILY_DOT_PRECISION_FAST ? "fast" : "highest");
}

static ERL_NIF_TERM set_dot_precision_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    char name[16];
    if (enif_get_atom(env, argv[0], name, sizeof name, ERL_NIF_LATIN1) > 0) {
        if (strcmp(name, "highest") == 0) emily_dot_set_precision(EMILY_DOT_PRECISION_HIGHEST);
        else if (strcmp(name, "fast") == 0) emily_dot_set_precision(EMILY_DOT_PRECISION_FAST);
        else goto bad;
        return A.ok;
    }
bad:
    return make_error(env, "dot precision: expected :highest or :fast");
}

static ERL_NIF_TERM stream_new_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!get_device(env, argv[0], &dev, &err)) return err;
    emily_stream *s;
    if (emily_stream_new(dev, &s)) return engine_error(env, "stream_new");
    stream_res *r = enif_alloc_resource(emily_stream_rt, sizeof *r);
    if (!r) {
        emily_stream_free(s);
        return make_error(env, "stream_new: out of memory");
    }
    r->s = s;
    r->device = dev;
    ERL_NIF_TERM term = enif_make_resource(env, r);
    enif_release_resource(r);
    return term;
}

static ERL_NIF_TERM stream_synchronize_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    stream_res *r;
    if (!enif_get_resource(env, argv[0], emily_stream_rt, (void **)&r) || !r->s)
        return make_error(env, "stream_synchronize: expected an Emily stream");
    if (emily_stream_synchronize(r->s)) return engine_error(env, "stream_synchronize");
    return A.ok;
}

static ERL_NIF_TERM stream_device_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    stream_res *r;
    if (!enif_get_resource(env, argv[0], emily_stream_rt, (void **)&r))
        return make_error(env, "stream_device: expected an Emily stream");
    return device_to_term(env, r->device);
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
    emily_tensor_rt = enif_open_resource_type(env, NULL, "emily_tensor_v3", tensor_dtor, flags, NULL);
    emily_stream_rt = enif_open_resource_type(env, NULL, "emily_stream", stream_dtor, flags, NULL);
    if (!emily_tensor_rt || !emily_stream_rt || !graph_nif_load(env)) return 1;
    if (!exports_lock && !(exports_lock = enif_mutex_create("emily_exports"))) return 1;
    nif_atoms_init(env);
    /* (builds the dispatcher's table once, here) */
    const char *const *names = emily_dispatch_callbacks();
    longest_callback = 0;
    for (size_t i = 0; names[i]; i++) {
        size_t n = strlen(names[i]);
        if (n > longest_callback) longest_callback = n;
    }
    /* a callback whose name does not fit dispatch's buffer could never be
     * called: refuse to load rather than hide it */
    if (longest_callback >= CALLBACK_NAME_SIZE) return 1;
    return 0;
}

static int upgrade(ErlNifEnv *env, void **priv, void **old_priv, ERL_NIF_TERM info) {
    (void)old_priv;
    return load(env, priv, info);
}

#define DIRTY ERL_NIF_DIRTY_JOB_CPU_BOUND
static ErlNifFunc nif_funcs[] = {
    {"dispatch", 6, dispatch_nif, 0},
    {"set_inline_limit", 1, set_inline_limit, 0},
    {"from_binary", 4, from_binary_nif, 0},
    {"to_binary", 2, to_binary_nif, 0},
    {"deallocate", 1, deallocate_nif, 0},
    {"backend_data", 1, backend_data_nif, 0},
    {"check_local", 1, check_local_nif, 0},
    {"tensor_info", 1, tensor_info_nif, 0},
    {"to_device", 2, to_device_nif, DIRTY},
    {"to_pointer", 1, to_pointer_nif, 0},
    {"from_pointer", 4, from_pointer_nif, ERL_NIF_DIRTY_JOB_CPU_BOUND},
    {"devices", 0, devices_nif, 0},
    {"device_check", 1, device_check_nif, 0},
    {"version", 0, version_nif, 0},
    {"callbacks", 0, callbacks_nif, 0},
    {"live_tensors", 0, live_tensors_nif, 0},
    {"synchronize", 1, synchronize_nif, DIRTY},
    {"memory_stats", 1, memory_stats_nif, 0},
    {"release_cache", 1, release_cache_nif, DIRTY},
    {"dot_precision", 0, dot_precision_nif, 0},
    {"set_dot_precision", 1, set_dot_precision_nif, 0},
    {"stream_new", 1, stream_new_nif, DIRTY},
    {"stream_synchronize", 1, stream_synchronize_nif, DIRTY},
    {"stream_device", 1, stream_device_nif, 0},
    {"graph_new", 0, graph_new_nif, 0},
    {"graph_param", 3, graph_param_nif, 0},
    {"graph_call", 4, graph_call_nif, 0},
    {"graph_const", 2, graph_const_nif, 0},
    {"graph_while", 4, graph_while_nif, 0},
    {"graph_cond", 5, graph_cond_nif, 0},
    {"graph_outputs", 2, graph_outputs_nif, 0},
    {"graph_compile", 3, graph_compile_nif, DIRTY},
    {"graph_run", 2, graph_run_nif, DIRTY},
    {"graph_save", 2, graph_save_nif, DIRTY},
    {"graph_stats", 1, graph_stats_nif, 0},
    EMILY_TEST_NIFS
};

ERL_NIF_INIT(Elixir.Emily.Native, nif_funcs, load, NULL, upgrade, NULL)
