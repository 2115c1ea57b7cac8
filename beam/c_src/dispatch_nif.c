/* Emily.Native.dispatch/6, the one hot path: an Nx.Backend callback's
 * output template and arguments decoded (terms.c) and run through the
 * dispatcher (emily/dispatch.h).
 *
 * Where a call runs: the callback's cost class (the dispatcher's
 * registry) is read before anything is decoded. Callbacks whose cost is
 * not bounded by their elements (EMILY_COST_DIRTY and _DEVICE: products,
 * sorts, windows, decompositions, ...) go to a dirty CPU scheduler at
 * once and are decoded there. Cheap ones (EMILY_COST_INLINE) are decoded
 * on the calling scheduler; they run there when the call is on the CPU
 * with at most `inline_limit` elements in and out (a few microseconds),
 * and otherwise move, decoded, to a dirty scheduler. Either way each
 * call is decoded once, so a normal scheduler is never blocked for long
 * and no work is done twice.
 *
 * Failures return {:error, message}; {:error, :foreign_tensor} asks
 * Elixir to move another backend's tensor to Emily and call again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "emily_nif.h"

/* Elements (inputs + outputs) up to which cheap callbacks run inline on
 * the CPU; 0 sends every dispatch to a dirty scheduler. */
static _Atomic long inline_limit = 16384;

/* The longest callback name the dispatcher knows (set by load), and the
 * size of the buffer a name is read into. */
static size_t longest_callback;
#define CALLBACK_NAME_SIZE 64

/* dispatch(callback, out, args, device | nil, stream | nil, mode): mode 0
 * runs, 1 infers; + DISPATCH_AS_DATA returns %Emily.Backend{} data instead
 * of bare resources. */
#define DISPATCH_AS_DATA 2

/* One call, from its reading to its result. Once decoded, `d` holds the
 * decoded values (out and args live in its arena) and the references to
 * their tensors; the call owns it. */
typedef struct dispatch_call {
    char name[CALLBACK_NAME_SIZE];
    const emily_callback *cb; /* NULL: unknown (emily_dispatch says so) */
    emily_dispatch_mode mode;
    bool as_data;
    unsigned nargs;
    decoder *d; /* NULL until decoded */
    emily_value *out, *args;
    emily_device device;
} dispatch_call;

/* ---- decoders ----
 * A decoder is large (its first arena block is inline, so that small
 * calls never call malloc) and a call may move to a dirty scheduler
 * with it: decoders live on the heap, and each scheduler thread keeps
 * the last one it finished with for its next call. */
static _Thread_local decoder *spare_decoder;

static decoder *decoder_take(ErlNifEnv *env) {
    decoder *d = spare_decoder;
    spare_decoder = NULL;
    if (!d && !(d = enif_alloc(sizeof *d))) return NULL;
    nif_decoder_init(d, env);
    return d;
}

static void decoder_give(decoder *d) {
    if (!d) return;
    nif_decoder_free(d);
    if (!spare_decoder) spare_decoder = d;
    else enif_free(d);
}

/* ---- calls on their way to a dirty scheduler ----
 * The call travels as a resource term after dispatch's own arguments
 * (which stay alive with it: decoded values point into their binaries).
 * The dirty job takes the decoder out; the destructor frees one that
 * was never taken (the process died first). */
static ErlNifResourceType *call_rt;

static void call_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    dispatch_call *c = obj;
    if (c->d) {
        nif_decoder_free(c->d);
        enif_free(c->d);
        c->d = NULL;
    }
}

/* ---- reading a call ---- */

/* The callback's name from `term`, an atom (or a binary), into name; false
 * with *err for a name that cannot be a callback's. The dispatcher takes
 * a C string, which ends at its first NUL: "add\0x" would run add, so a
 * name with a NUL byte is refused here, and so is one longer than any
 * callback's (without copying it, however long). */
static bool callback_name(ErlNifEnv *env, ERL_NIF_TERM term, char name[CALLBACK_NAME_SIZE], ERL_NIF_TERM *err) {
    char msg[160];
    size_t n;
    unsigned len;
    ErlNifBinary b;
    bool atom = enif_is_atom(env, term);
    if (atom) {
        if (!enif_get_atom_length(env, term, &len, ERL_NIF_LATIN1)) {
            *err = nif_make_error(env, "dispatch: unknown callback (its name is not Latin-1)");
            return false;
        }
        n = len;
    } else if (enif_inspect_binary(env, term, &b)) {
        n = b.size;
    } else {
        *err = nif_make_error(env, "dispatch: the callback name must be an atom (or a binary)");
        return false;
    }
    if (n > longest_callback) {
        snprintf(msg, sizeof msg, "dispatch: unknown callback (a name of %zu bytes; the longest callback's has %zu)", n,
                 longest_callback);
        *err = nif_make_error(env, msg);
        return false;
    }
    if (atom) {
        /* (the byte count it returns includes the terminating NUL) */
        if (enif_get_atom(env, term, name, CALLBACK_NAME_SIZE, ERL_NIF_LATIN1) != (int)n + 1) {
            *err = nif_make_error(env, "dispatch: cannot read the callback name");
            return false;
        }
    } else {
        memcpy(name, b.data, n);
    }
    name[n] = 0;
    if (n == 0) {
        *err = nif_make_error(env, "dispatch: the callback name is empty");
        return false;
    }
    if (memchr(name, 0, n)) {
        *err = nif_make_error(env, "dispatch: the callback name contains a NUL byte");
        return false;
    }
    return true;
}

/* The callback, the mode and the argument count: all that is read before
 * the call is decoded. */
static bool call_read(ErlNifEnv *env, const ERL_NIF_TERM argv[], dispatch_call *c, ERL_NIF_TERM *err) {
    if (!callback_name(env, argv[0], c->name, err)) return false;
    int mode;
    if (!enif_get_int(env, argv[5], &mode) || mode < 0 || mode > (EMILY_DISPATCH_INFER | DISPATCH_AS_DATA)) {
        *err = nif_make_error(env, "dispatch: mode must be 0 (run) or 1 (infer), plus 2 for "
                                   "%Emily.Backend{} results");
        return false;
    }
    c->as_data = (mode & DISPATCH_AS_DATA) != 0;
    mode &= ~DISPATCH_AS_DATA;
    if (mode != EMILY_DISPATCH_RUN && mode != EMILY_DISPATCH_INFER) {
        *err = nif_make_error(env, "dispatch: mode must be 0 (run) or 1 (infer)");
        return false;
    }
    c->mode = (emily_dispatch_mode)mode;
    if (!enif_get_list_length(env, argv[2], &c->nargs)) {
        *err = nif_make_error(env, "dispatch: the arguments must be a proper list");
        return false;
    }
    c->cb = emily_dispatch_find(c->name);
    c->d = NULL;
    c->out = c->args = NULL;
    c->device = EMILY_CPU;
    return true;
}

static ERL_NIF_TERM decode_error(ErlNifEnv *env, const dispatch_call *c) {
    return nif_decode_error(env, c->d, c->name, "arguments");
}

/* Decodes the template and the arguments and settles the device (the
 * first Emily tensor's, unless the call names one). False with *reply
 * when the call ends here: a failure, or a tensor of another backend. */
static bool call_decode(ErlNifEnv *env, const ERL_NIF_TERM argv[], dispatch_call *c, ERL_NIF_TERM *reply) {
    decoder *d = c->d = decoder_take(env);
    if (!d) {
        *reply = nif_make_error(env, "dispatch: out of host memory decoding arguments");
        return false;
    }
    c->args = nif_arena_alloc(d, sizeof(emily_value) * (c->nargs + 1));
    c->out = c->args ? nif_arena_alloc(d, sizeof(emily_value)) : NULL;
    if (!c->out || !nif_decode_template(d, argv[1], c->out) || !nif_decode_args(d, argv[2], c->nargs, c->args)) {
        *reply = decode_error(env, c);
        return false;
    }
    if (d->foreign) {
        *reply = enif_make_tuple2(env, nif_atom.error, nif_atom.foreign_tensor);
        return false;
    }
    c->device = d->have_device ? d->device : EMILY_CPU;
    if (!enif_is_identical(argv[3], nif_atom.nil) && !nif_get_device(env, argv[3], &c->device, reply)) return false;
    return true;
}

/* ---- running a call ---- */

/* Imports the arguments given as data onto the device, runs the callback
 * (on the stream argv[4] names, if any) and makes the result terms. */
static ERL_NIF_TERM call_run(ErlNifEnv *env, const ERL_NIF_TERM argv[], dispatch_call *c) {
    if (!nif_decoder_finish(c->d, c->device)) return decode_error(env, c);
    stream_res *st = NULL;
    if (!enif_is_identical(argv[4], nif_atom.nil)) {
        if (!enif_get_resource(env, argv[4], nif_stream_rt, (void **)&st))
            return nif_make_error(env, "dispatch: the stream is not an Emily.Stream");
        if (!st->s || !emily_device_equal(st->device, c->device)) st = NULL;
        else if (emily_stream_set_current(c->device, st->s)) return nif_engine_error(env, c->name);
    }
    char msg[1024];
    emily_dispatch_result res = {0};
    emily_status s = c->cb ? emily_dispatch_callback(c->cb, c->device, c->out, c->args, c->nargs, c->mode, &res)
                           : emily_dispatch(c->name, c->device, c->out, c->args, c->nargs, c->mode, &res);
    if (s) snprintf(msg, sizeof msg, "%s", emily_last_error());
    if (st) emily_stream_set_current(c->device, NULL);
    if (s) return nif_make_error(env, msg);
    ERL_NIF_TERM items[EMILY_DISPATCH_MAX_OUTPUTS];
    bool made = true;
    for (int k = 0; k < res.n; k++) {
        /* after a failure, the remaining tensors are only released */
        if (!made) emily_tensor_release(res.tensors[k]);
        else made = nif_result_term(env, res.tensors[k], c->as_data, &items[k]);
    }
    if (!made) return nif_make_error(env, "out of memory making the result terms");
    if (c->out->kind == EMILY_V_TEMPLATE && res.n == 1) return items[0];
    return enif_make_list_from_array(env, items, (unsigned)res.n);
}

/* The dirty half: argv is dispatch's plus the call. */
static ERL_NIF_TERM dispatch_dirty(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    dispatch_call *held;
    if (argc != 7 || !enif_get_resource(env, argv[6], call_rt, (void **)&held))
        return nif_make_error(env, "dispatch: lost the call on its way to a dirty scheduler");
    dispatch_call c = *held;
    held->d = NULL; /* taken */
    ERL_NIF_TERM result;
    if (c.d) c.d->env = env;
    if (c.d || call_decode(env, argv, &c, &result)) result = call_run(env, argv, &c);
    decoder_give(c.d);
    return result;
}

/* Hands the call (decoded or not) to a dirty scheduler. */
static ERL_NIF_TERM to_dirty(ErlNifEnv *env, const ERL_NIF_TERM argv[], dispatch_call *c) {
    dispatch_call *held = enif_alloc_resource(call_rt, sizeof *held);
    if (!held) {
        decoder_give(c->d);
        return nif_make_error(env, "dispatch: out of memory");
    }
    *held = *c; /* the resource owns the decoder now */
    ERL_NIF_TERM args[7];
    memcpy(args, argv, 6 * sizeof *args);
    args[6] = enif_make_resource(env, held);
    enif_release_resource(held);
    return enif_schedule_nif(env, "dispatch", ERL_NIF_DIRTY_JOB_CPU_BOUND, dispatch_dirty, 7, args);
}

ERL_NIF_TERM nif_dispatch(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    dispatch_call c;
    ERL_NIF_TERM result;
    if (!call_read(env, argv, &c, &result)) return result;
    /* (an unknown name is decoded here, as a cheap call, and fails in the
     * dispatcher after the arguments, as it always has) */
    if (c.cb && c.cb->cost != EMILY_COST_INLINE) return to_dirty(env, argv, &c);
    if (!call_decode(env, argv, &c, &result)) {
        decoder_give(c.d);
        return result;
    }
    if (c.device.type != EMILY_DEVICE_CPU || c.d->elements > atomic_load(&inline_limit)) return to_dirty(env, argv, &c);
    result = call_run(env, argv, &c);
    decoder_give(c.d);
    return result;
}

ERL_NIF_TERM nif_set_inline_limit(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    long v;
    if (!enif_get_long(env, argv[0], &v) || v < 0) return enif_make_badarg(env);
    long old = atomic_exchange(&inline_limit, v);
    return enif_make_long(env, old);
}

bool nif_dispatch_load(ErlNifEnv *env) {
    ErlNifResourceFlags flags = ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER;
    call_rt = enif_open_resource_type(env, NULL, "emily_dispatch_call", call_dtor, flags, NULL);
    if (!call_rt) return false;
    /* (builds the dispatcher's index once, here) */
    const char *const *names = emily_dispatch_callbacks();
    longest_callback = 0;
    for (size_t i = 0; names[i]; i++) {
        size_t n = strlen(names[i]);
        if (n > longest_callback) longest_callback = n;
    }
    /* a callback whose name does not fit dispatch's buffer could never be
     * called: refuse to load rather than hide it */
    return longest_callback < CALLBACK_NAME_SIZE;
}
