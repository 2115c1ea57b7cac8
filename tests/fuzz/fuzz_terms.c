/* libFuzzer target: the NIF's term decoding (beam/c_src/terms.c), linked
 * against tests/fuzz/enif_shim.c instead of a VM.
 *
 * An input is external term format (erlang:term_to_binary/1 bytes).
 * A 3-tuple {callback, out, args} (callback an atom or a binary, args a
 * proper list) goes the way Emily.Native.dispatch/6 takes it: the
 * template and every argument are decoded, Nx.BinaryBackend tensors
 * imported, and the callback dispatched on the CPU in RUN mode, unless
 * the call is beyond the harness's limits (fuzz_common.h: elements,
 * integer sizes; tensors to import are not made past the element limit).
 * Any other term is decoded as an argument and as a template, and read
 * as a type, a shape and a device; those that read back are written out
 * again and must read back the same.
 *
 * A reference of this VM stands for a tensor resource: its first ID word
 * picks one of the tensors made at start-up (pool below; one of them
 * deallocated, one a strided view), or none (enif_shim.h). Nothing may
 * stay alive after an input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emily_nif.h"
#include "enif_shim.h"
#include "fuzz_common.h"

/* What the NIF's other files define for terms.c. */
ErlNifResourceType *nif_tensor_rt;

emily_tensor *nif_tensor_res_acquire(tensor_res *r) {
    emily_tensor *t = r->t;
    if (t) emily_tensor_retain(t);
    return t;
}

#define POOL 9
static tensor_res pool[POOL];
static void *pool_objs[POOL];
static ErlNifEnv *env;

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_terms: %s\n", what);
        abort();
    }
}

static emily_tensor *make(emily_dtype dt, int rank, const int64_t *shape) {
    unsigned char bytes[256];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 37 + 11);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    emily_tensor *t;
    check(emily_from_binary(EMILY_CPU, dt, rank, shape, bytes, (size_t)n * emily_dtype_size(dt), &t) == EMILY_OK,
          "making the resource pool");
    return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_single_thread();
    static ErlNifEnv *atoms_env;
    atoms_env = shim_env_new();
    env = shim_env_new();
    check(atoms_env && env, "out of memory");
    nif_atoms_init(atoms_env);
    /* the tensor resources a reference can name (5: deallocated) */
    static const int64_t s23[] = {2, 3}, s4[] = {4}, s22[] = {2, 2}, s33[] = {3, 3}, s213[] = {2, 1, 3}, s03[] = {0, 3},
                         s6[] = {6};
    pool[0].t = make(EMILY_F32, 2, s23);
    pool[1].t = make(EMILY_S64, 1, s4);
    pool[2].t = make(EMILY_U8, 0, NULL);
    pool[3].t = make(EMILY_C64, 2, s22);
    pool[4].t = make(EMILY_F64, 2, s33);
    pool[5].t = NULL;
    pool[6].t = make(EMILY_BF16, 3, s213);
    pool[7].t = make(EMILY_S32, 2, s03);
    pool[8].t = make(EMILY_F32, 1, s6);
    static const int axes[] = {1, 0};
    emily_tensor *tr; /* a strided view: pool 0 transposed */
    check(emily_transpose(pool[0].t, axes, &tr) == EMILY_OK, "making the resource pool");
    emily_tensor_release(pool[8].t);
    pool[8].t = tr;
    for (int i = 0; i < POOL; i++) pool_objs[i] = &pool[i];
    nif_tensor_rt = shim_resource_type("Emily.Tensor");
    check(nif_tensor_rt != NULL, "out of memory");
    shim_set_resources(nif_tensor_rt, pool_objs, POOL);
    return 0;
}

/* Emily.Native.dispatch/6's reading of the callback name: an atom or a
 * binary of at most 63 bytes without a NUL. */
static bool callback_name(ERL_NIF_TERM term, char name[64]) {
    ErlNifBinary b;
    if (enif_is_atom(env, term)) return enif_get_atom(env, term, name, 64, ERL_NIF_LATIN1) > 1;
    if (!enif_inspect_binary(env, term, &b) || b.size == 0 || b.size > 63 || memchr(b.data, 0, b.size)) return false;
    memcpy(name, b.data, b.size);
    name[b.size] = 0;
    return true;
}

/* A written-out term must read back, unless memory ran out on the way
 * (only under tests/fuzz/alloc_sweep.c). */
static void check_read_back(bool ok, const char *what) { check(ok || fuzz_alloc_failed(), what); }

static void failed(const decoder *d) { check(d->err[0] != 0, "a decoding failure without a message"); }

static void dispatch(const char *name, ERL_NIF_TERM out_term, ERL_NIF_TERM args_term, unsigned nargs) {
    decoder dec, *d = &dec;
    nif_decoder_init(d, env);
    emily_value out;
    emily_value *args = nif_arena_alloc(d, sizeof(emily_value) * (nargs + 1));
    if (!args) goto done;
    if (!nif_decode_template(d, out_term, &out)) {
        failed(d);
        goto done;
    }
    ERL_NIF_TERM head, tail = args_term;
    for (unsigned i = 0; i < nargs; i++) {
        check(enif_get_list_cell(env, tail, &head, &tail), "a list shorter than its length");
        if (!nif_decode_arg(d, i, head, &args[i])) {
            failed(d);
            goto done;
        }
    }
    if (d->foreign || d->elements > FUZZ_MAX_ELEMENTS) goto done;
    emily_device device = d->have_device ? d->device : EMILY_CPU;
    if (!nif_decoder_finish(d, device)) {
        failed(d);
        goto done;
    }
    if (!fuzz_call_ok(&out, args, nargs)) goto done;
    emily_dispatch_result res = {0};
    if (emily_dispatch(name, device, &out, args, nargs, EMILY_DISPATCH_RUN, &res) == EMILY_OK) {
        /* the result's type and shape as terms, and back */
        for (int k = 0; k < res.n; k++) {
            const emily_tensor *t = res.tensors[k];
            emily_dtype dt;
            int rank;
            int64_t *shape;
            char err[160];
            check_read_back(
                nif_term_to_dtype(env, nif_dtype_to_term(env, emily_tensor_dtype(t)), &dt, err, sizeof err) &&
                    dt == emily_tensor_dtype(t),
                "a result's type does not read back");
            check_read_back(nif_term_to_shape(env, nif_shape_to_term(env, emily_tensor_rank(t), emily_tensor_shape(t)),
                                              &rank, &shape, d) &&
                                rank == emily_tensor_rank(t) &&
                                (rank == 0 || memcmp(shape, emily_tensor_shape(t), sizeof *shape * (size_t)rank) == 0),
                            "a result's shape does not read back");
        }
    } else {
        check(res.n == 0 && emily_last_error()[0], "a failed dispatch returned tensors or no message");
    }
    emily_dispatch_result_release(&res);
done:
    nif_decoder_free(d);
}

/* Any other term: as an argument, a template, a type, a shape, a device. */
static void pieces(ERL_NIF_TERM term) {
    decoder dec, *d = &dec;
    char err[200];
    emily_value v;
    nif_decoder_init(d, env);
    if (nif_decode_arg(d, 0, term, &v)) {
        if (d->elements <= FUZZ_MAX_ELEMENTS && !nif_decoder_finish(d, EMILY_CPU)) failed(d);
    } else {
        failed(d);
    }
    nif_decoder_free(d);

    nif_decoder_init(d, env);
    if (!nif_decode_template(d, term, &v)) failed(d);
    nif_decoder_free(d);

    emily_dtype dt, dt2;
    if (nif_term_to_dtype(env, term, &dt, err, sizeof err)) {
        ERL_NIF_TERM back = nif_dtype_to_term(env, dt);
        check_read_back(nif_term_to_dtype(env, back, &dt2, err, sizeof err) && dt2 == dt, "a type does not read back");
    }
    emily_device dev, dev2;
    if (nif_term_to_device(env, term, &dev, err, sizeof err)) {
        check_read_back(nif_term_to_device(env, nif_device_to_term(env, dev), &dev2, err, sizeof err) &&
                            emily_device_equal(dev, dev2),
                        "a device does not read back");
    }
    nif_decoder_init(d, env);
    int rank;
    int64_t *shape;
    if (nif_term_to_shape(env, term, &rank, &shape, d))
        check_read_back(enif_is_identical(nif_shape_to_term(env, rank, shape), term), "a shape does not read back");
    nif_decoder_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t tensors = emily_live_tensors(), buffers = emily_live_buffers();
    ERL_NIF_TERM term;
    if (shim_binary_to_term(env, data, size, &term) == 0) {
        const ERL_NIF_TERM *el;
        int arity;
        char name[64];
        unsigned nargs;
        if (enif_get_tuple(env, term, &arity, &el) && arity == 3 && callback_name(el[0], name) &&
            enif_get_list_length(env, el[2], &nargs))
            dispatch(name, el[1], el[2], nargs);
        else pieces(term);
    }
    shim_env_reset(env);
    fuzz_check_live(tensors, buffers, "fuzz_terms");
    return 0;
}
