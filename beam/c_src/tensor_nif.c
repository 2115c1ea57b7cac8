/* Emily.Native's tensors: the tensor resource (see emily_nif.h) and the
 * functions that make, read, move and free tensors.
 *
 * Emily.Backend asks for its tensors' data as %Emily.Backend{ref, bytes}
 * (data_term): `bytes` aliases a CPU tensor's contiguous bytes, so
 * that the struct crosses BEAM nodes with them (docs/elixir.md, "Across
 * nodes"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emily_nif.h"

emily_tensor *nif_tensor_res_acquire(tensor_res *r) {
    nif_res_lock(r);
    emily_tensor *t = r->t;
    if (t) emily_tensor_retain(t);
    nif_res_unlock(r);
    return t;
}

bool nif_tensor_arg(ErlNifEnv *env, ERL_NIF_TERM term, const char *name, tensor_res **r, emily_tensor **t,
                    ERL_NIF_TERM *err) {
    char msg[128];
    *t = NULL;
    if (!enif_get_resource(env, term, nif_tensor_rt, (void **)r))
        snprintf(msg, sizeof msg, "%s: expected an Emily tensor reference", name);
    else if (!(*t = nif_tensor_res_acquire(*r))) snprintf(msg, sizeof msg, "%s: the tensor was deallocated", name);
    else return true;
    *err = nif_make_error(env, msg);
    return false;
}

void nif_tensor_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    tensor_res *r = obj;
    /* no to_pointer can be under way: it would hold a term of r */
    nif_exports_forget(r, r->export_addr);
    emily_tensor_release(r->t);
    emily_tensor_release(r->pin);
    r->t = NULL;
    r->pin = NULL;
}

static tensor_res *tensor_res_new(emily_tensor *t) {
    tensor_res *r = enif_alloc_resource(nif_tensor_rt, sizeof *r);
    if (!r) return NULL;
    atomic_flag_clear(&r->lock);
    r->t = t;
    r->pin = NULL;
    r->export_addr = 0;
    return r;
}

ERL_NIF_TERM nif_make_tensor_term(ErlNifEnv *env, emily_tensor *t) {
    tensor_res *r = tensor_res_new(t);
    if (!r) {
        emily_tensor_release(t);
        return nif_make_error(env, "out of memory allocating a tensor resource");
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
    ERL_NIF_TERM bytes = nif_atom.nil;
    size_t nbytes = emily_tensor_nbytes(t);
    const void *host = NULL;
    if (nbytes == 0 && emily_tensor_device(t).type == EMILY_DEVICE_CPU) {
        enif_make_new_binary(env, 0, &bytes);
    } else if (emily_dtype_bits(emily_tensor_dtype(t)) < 8) {
        /* sub-byte elements: their binary form is packed, a copy */
        if (emily_tensor_device(t).type == EMILY_DEVICE_CPU) {
            size_t n = emily_dtype_binary_size(emily_tensor_dtype(t), emily_tensor_size(t));
            unsigned char *p = enif_make_new_binary(env, n, &bytes);
            if (!p || emily_to_binary(t, p, n)) bytes = nif_atom.nil;
        }
    } else if ((host = cpu_bytes(t))) {
        nif_res_lock(r);
        if (!r->pin) {
            emily_tensor_retain(t);
            r->pin = t;
        }
        nif_res_unlock(r);
        bytes = enif_make_resource_binary(env, r, host, nbytes);
    }
    ERL_NIF_TERM keys[3] = {nif_atom.struct_, nif_atom.ref, nif_atom.bytes};
    ERL_NIF_TERM values[3] = {nif_atom.emily_backend, enif_make_resource(env, r), bytes};
    return enif_make_map_from_arrays(env, keys, values, 3, out);
}

/* The term for a callback's result t (ownership moves to the term): its
 * resource, or with `as_data` its %Emily.Backend{}. False (t released)
 * when out of memory. */
bool nif_result_term(ErlNifEnv *env, emily_tensor *t, bool as_data, ERL_NIF_TERM *out) {
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

static bool get_tensor(ErlNifEnv *env, ERL_NIF_TERM term, emily_tensor **t, ERL_NIF_TERM *err) {
    tensor_res *r;
    if (!enif_get_resource(env, term, nif_tensor_rt, (void **)&r)) {
        *err = nif_make_error(env, "expected an Emily tensor reference");
        return false;
    }
    *t = nif_tensor_res_acquire(r);
    if (!*t) {
        *err = nif_make_error(env, "the tensor was deallocated");
        return false;
    }
    return true;
}

/* ---- creation and reading ---- */

static ERL_NIF_TERM from_binary_run(ErlNifEnv *env, const ERL_NIF_TERM argv[]) {
    emily_device dev;
    emily_dtype dt;
    ErlNifBinary bin;
    ERL_NIF_TERM result;
    if (!nif_get_device(env, argv[0], &dev, &result) || !nif_type_arg(env, argv[1], &dt, &result)) return result;
    if (!enif_inspect_binary(env, argv[3], &bin)) return nif_make_error(env, "from_binary: expected a binary");
    decoder d;
    nif_decoder_init(&d, env);
    int rank;
    int64_t *shape;
    if (nif_shape_arg(&d, argv[2], "from_binary", &rank, &shape, &result)) {
        emily_tensor *t;
        if (emily_from_binary(dev, dt, rank, shape, bin.data, bin.size, &t)) result = nif_engine_error(env, NULL);
        else result = nif_make_tensor_term(env, t);
    }
    nif_decoder_free(&d);
    return result;
}

static ERL_NIF_TERM from_binary_dirty(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return from_binary_run(env, argv);
}

/* from_binary(device, type, shape, binary) */
ERL_NIF_TERM nif_from_binary(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    ErlNifBinary bin;
    if (enif_inspect_binary(env, argv[3], &bin) && (bin.size > 256 * 1024 || !enif_is_identical(argv[0], nif_atom.cpu)))
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
        return nif_engine_error(env, "to_binary");
    }
    tensor_res *holder = tensor_res_new(t);
    if (!holder) {
        emily_tensor_release(t);
        return nif_make_error(env, "to_binary: out of memory");
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
    emily_dtype dt = emily_tensor_dtype(t);
    if (emily_dtype_bits(dt) < 8) {
        /* packed, as Nx's bitstrings (the last byte padded with zero
         * bits; Emily.Backend cuts the bitstring to its length) */
        ERL_NIF_TERM bin;
        size_t n = emily_dtype_binary_size(dt, emily_tensor_size(t));
        unsigned char *p = enif_make_new_binary(env, n, &bin);
        emily_status s = p ? emily_to_binary(t, p, n) : emily_error(EMILY_ERR_MEMORY, "out of memory");
        emily_tensor_release(t);
        if (s) return nif_engine_error(env, "to_binary");
        return enif_make_sub_binary(env, bin, 0, emily_dtype_binary_size(dt, (int64_t)size));
    }
    const void *data;
    emily_tensor *host = t;
    if (emily_host_data(t, &data) != EMILY_OK) {
        /* not contiguous, or not in host memory: one copy */
        emily_status s = emily_tensor_device(t).type == EMILY_DEVICE_CPU ? emily_contiguous(t, &host)
                                                                         : emily_to_device(t, EMILY_CPU, &host);
        emily_tensor_release(t);
        if (s) return nif_engine_error(env, "to_binary");
    }
    return host_binary(env, host, size * es);
}

static ERL_NIF_TERM to_binary_dirty(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return to_binary_run(env, argv);
}

/* to_binary(ref, limit | nil): the first `limit` elements, row-major.
 * Zero-copy when the tensor is contiguous in host memory. */
ERL_NIF_TERM nif_to_binary(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    tensor_res *r;
    if (enif_get_resource(env, argv[0], nif_tensor_rt, (void **)&r)) {
        emily_tensor *t = nif_tensor_res_acquire(r);
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

ERL_NIF_TERM nif_deallocate(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r;
    if (!enif_get_resource(env, argv[0], nif_tensor_rt, (void **)&r))
        return nif_make_error(env, "deallocate: expected an Emily tensor reference");
    nif_res_lock(r);
    emily_tensor *t = r->t;
    uintptr_t exported = r->export_addr;
    r->t = NULL;
    r->export_addr = 0;
    nif_res_unlock(r);
    /* after r->t is cleared: a to_pointer under way has then either seen
     * the tensor gone or recorded export_addr first (see nif_to_pointer),
     * and the entry it adds is removed here once it has */
    nif_exports_forget(r, exported);
    if (!t) return nif_atom.already_deallocated;
    emily_tensor_release(t);
    return nif_atom.ok;
}

/* backend_data(ref): %Emily.Backend{ref: ref, bytes: binary | nil} for a
 * tensor made by another function (from_binary, to_device, ...). */
ERL_NIF_TERM nif_backend_data(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r;
    emily_tensor *t;
    ERL_NIF_TERM out;
    if (!nif_tensor_arg(env, argv[0], "backend_data", &r, &t, &out)) return out;
    bool ok = data_term(env, r, t, &out);
    emily_tensor_release(t);
    return ok ? out : nif_make_error(env, "backend_data: out of memory");
}

/* check_local(term): :ok when the term is a tensor resource of this VM
 * (deallocated or not), else {:error, message} with the message for a
 * tensor that came from another node without its bytes. */
ERL_NIF_TERM nif_check_local(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r;
    if (enif_get_resource(env, argv[0], nif_tensor_rt, (void **)&r)) return nif_atom.ok;
    return nif_make_error(env, nif_not_carried_msg);
}

/* {type, shape, device} of the engine tensor */
ERL_NIF_TERM nif_tensor_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_tensor *t;
    ERL_NIF_TERM err;
    if (!get_tensor(env, argv[0], &t, &err)) return err;
    ERL_NIF_TERM r = enif_make_tuple3(env, nif_dtype_to_term(env, emily_tensor_dtype(t)),
                                      nif_shape_to_term(env, emily_tensor_rank(t), emily_tensor_shape(t)),
                                      nif_device_to_term(env, emily_tensor_device(t)));
    emily_tensor_release(t);
    return r;
}

/* to_device(ref, device): a copy on another device (dirty) */
ERL_NIF_TERM nif_to_device(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_tensor *t, *out;
    emily_device dev;
    ERL_NIF_TERM err;
    if (!nif_get_device(env, argv[1], &dev, &err)) return err;
    if (!get_tensor(env, argv[0], &t, &err)) return err;
    emily_status s = emily_to_device(t, dev, &out);
    emily_tensor_release(t);
    if (s) return nif_engine_error(env, "to_device");
    return nif_make_tensor_term(env, out);
}
