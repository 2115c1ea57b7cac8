/* Emily.Native.to_pointer/1 and from_pointer/4, and the table of the
 * addresses to_pointer handed out.
 *
 * to_pointer hands out the address of a host tensor's bytes; from_pointer
 * accepts only such addresses, so it never reads memory Emily does not
 * know. Each entry holds its own reference to the tensor, so the bytes it
 * names are live for as long as it is in the table, whatever order
 * to_pointer, deallocate and from_pointer run in. A resource has at most
 * one entry (r->export_addr says where; repeated to_pointer calls find it
 * there instead of adding another), removed when the resource is
 * deallocated or destroyed (nif_exports_forget).
 *
 * from_pointer looks entries up by address, so the table is a hash table
 * on it (open addressing, linear probing, at most half full): a program
 * that exports many tensors pays no scan of all of them under the lock.
 * Two resources may export one address (views of one buffer); the owner
 * tells their entries apart.
 *
 * Lock order: exports_lock, then a resource's spinlock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emily_nif.h"

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
    if ((nexports + 1) * 2 > exports_cap && !exports_rehash(exports_cap ? exports_bits + 1 : EXPORTS_MIN_BITS))
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
    if (exports_bits > EXPORTS_MIN_BITS && nexports * 8 < exports_cap) (void)exports_rehash(exports_bits - 1);
    return t;
}

/* The entry under `address` with the most bytes; NULL if none. */
static const export_entry *exports_find(uintptr_t address) {
    if (!exports_cap) return NULL;
    const export_entry *best = NULL;
    size_t mask = exports_cap - 1;
    for (size_t i = export_home(address, exports_bits); exports[i].owner; i = (i + 1) & mask)
        if (exports[i].address == address && (!best || exports[i].nbytes > best->nbytes)) best = &exports[i];
    return best;
}

void nif_exports_forget(const tensor_res *r, uintptr_t address) {
    if (!address) return;
    enif_mutex_lock(exports_lock);
    emily_tensor *t = exports_remove(address, r);
    enif_mutex_unlock(exports_lock);
    emily_tensor_release(t);
}

#ifdef EMILY_NIF_TEST
size_t nif_export_count(const tensor_res *owner) {
    size_t n = 0;
    enif_mutex_lock(exports_lock);
    for (size_t i = 0; i < exports_cap; i++)
        if (exports[i].owner && (!owner || exports[i].owner == owner)) n++;
    enif_mutex_unlock(exports_lock);
    return n;
}
#endif

bool nif_exports_load(void) { return exports_lock || (exports_lock = enif_mutex_create("emily_exports")); }

/* to_pointer(ref): {address, bytes} of a contiguous host tensor, valid
 * while the tensor lives; the address is registered for from_pointer
 * (once per resource, however often it is asked for). */
ERL_NIF_TERM nif_to_pointer(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r;
    emily_tensor *t;
    ERL_NIF_TERM bad;
    if (!nif_tensor_arg(env, argv[0], "to_pointer", &r, &t, &bad)) return bad;
    const void *data;
    if (emily_dtype_bits(emily_tensor_dtype(t)) < 8) {
        emily_tensor_release(t);
        return nif_make_error(env, "to_pointer: sub-byte types (s2, s4, u2, u4) cannot be shared "
                                   "through pointers; use Nx.to_binary/from_binary");
    }
    if (emily_host_data(t, &data)) {
        emily_tensor_release(t);
        return nif_engine_error(env, "to_pointer");
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
    nif_res_lock(r);
    bool live = r->t != NULL, first = live && !r->export_addr;
    if (first) r->export_addr = (uintptr_t)data;
    nif_res_unlock(r);
    if (!live) {
        err = "to_pointer: the tensor was deallocated";
    } else if (first && !exports_add((uintptr_t)data, nbytes, r, t)) {
        nif_res_lock(r);
        if (r->export_addr == (uintptr_t)data) r->export_addr = 0;
        nif_res_unlock(r);
        err = "to_pointer: out of host memory";
    }
    enif_mutex_unlock(exports_lock);
    emily_tensor_release(t);
    if (err) return nif_make_error(env, err);
    return enif_make_tuple2(env, enif_make_uint64(env, (ErlNifUInt64)(uintptr_t)data), enif_make_uint64(env, nbytes));
}

/* from_pointer(device, address, type, shape): a copy of the bytes at an
 * address that to_pointer handed out (and whose tensor still lives). */
ERL_NIF_TERM nif_from_pointer(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    emily_device dev;
    emily_dtype dt;
    ErlNifUInt64 address;
    ERL_NIF_TERM err;
    char msg[256];
    if (!nif_get_device(env, argv[0], &dev, &err)) return err;
    if (!enif_get_uint64(env, argv[1], &address))
        return nif_make_error(env, "from_pointer: the address must be a non-negative integer");
    if (!nif_type_arg(env, argv[2], &dt, &err)) return err;
    /* Nx's pointers hold its binary form, which for s2/s4/u2/u4 is packed
     * and is not what the engine's memory holds (a byte an element) */
    if (emily_dtype_bits(dt) < 8)
        return nif_make_error(env, "from_pointer: sub-byte types (s2, s4, u2, u4) cannot be shared "
                                   "through pointers; use Nx.to_binary/from_binary");
    decoder d;
    nif_decoder_init(&d, env);
    int rank;
    int64_t *shape;
    ERL_NIF_TERM result;
    if (!nif_shape_arg(&d, argv[3], "from_pointer", &rank, &shape, &result)) {
        nif_decoder_free(&d);
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
        result = nif_make_error(env, "from_pointer: the address was not handed out by Emily's "
                                     "to_pointer (or its tensor is gone); Emily reads no other memory");
    } else if (!src) {
        snprintf(msg, sizeof msg, "from_pointer: %zu bytes asked for, the exported tensor has %zu", nbytes, have);
        result = nif_make_error(env, msg);
    } else {
        emily_tensor *t;
        if (emily_from_binary(dev, dt, rank, shape, (const void *)(uintptr_t)address, nbytes, &t))
            result = nif_engine_error(env, "from_pointer");
        else result = nif_make_tensor_term(env, t);
        emily_tensor_release(src);
    }
    nif_decoder_free(&d);
    return result;
}
