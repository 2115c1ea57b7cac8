/* Test-only NIF functions, compiled in only when the NIF is built for
 * `mix test` (EMILY_NIF_TEST): the conformance runner's property checks
 * for decompositions (tests/conformance/properties.c, linked in), so the
 * Elixir corpus suite checks qr/svd/eigh exactly as the C runner does;
 * and a count of to_pointer's export-table entries. */
#ifdef EMILY_NIF_TEST
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include "emily_nif.h"
#include "test_hooks.h"
#include "properties.h" /* tests/conformance, on the include path of test builds */

static bool get_op(ErlNifEnv *env, ERL_NIF_TERM t, char *buf, size_t size) {
    return enif_get_atom(env, t, buf, (unsigned)size, ERL_NIF_LATIN1) > 0;
}

/* property_checked_op(op, off_cpu) :: boolean: as the C runner decides
 * (runner.c, by_properties): the decompositions everywhere, and lu,
 * cholesky, triangular_solve, solve and determinant off the CPU (cuSOLVER
 * in the input's own precision, not the reference's algorithm). */
ERL_NIF_TERM nif_test_property_checked_op(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    char op[64];
    if (!get_op(env, argv[0], op, sizeof op)) return enif_make_badarg(env);
    bool off_cpu = enif_is_identical(argv[1], nif_atom.true_);
    return property_checked_op(op) || (off_cpu && property_exact_op(op)) ? nif_atom.true_ : nif_atom.false_;
}

/* property_check(op, args, result_refs, case_json_line) :: :ok | {:error, msg} */
ERL_NIF_TERM nif_test_property_check(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    char op[64];
    unsigned nargs, nres;
    ErlNifBinary line;
    if (!get_op(env, argv[0], op, sizeof op) || !enif_get_list_length(env, argv[1], &nargs) ||
        !enif_get_list_length(env, argv[2], &nres) || nres > EMILY_DISPATCH_MAX_OUTPUTS ||
        !enif_inspect_binary(env, argv[3], &line))
        return enif_make_badarg(env);

    decoder dec, *d = &dec;
    nif_decoder_init(d, env);
    emily_dispatch_result got = {0};
    json_t *json = NULL;
    ERL_NIF_TERM result;
    char msg[1024];
    emily_value *args = nif_arena_alloc(d, sizeof(emily_value) * (nargs + 1));
    ERL_NIF_TERM head, tail = argv[1];
    for (unsigned i = 0; args && i < nargs; i++) {
        enif_get_list_cell(env, tail, &head, &tail);
        if (!nif_decode_arg(d, i, head, &args[i])) {
            result = nif_make_error(env, d->err);
            goto done;
        }
    }
    if (!args || !nif_decoder_finish(d, EMILY_CPU)) {
        result = nif_make_error(env, d->err);
        goto done;
    }
    tail = argv[2];
    for (unsigned k = 0; k < nres; k++) {
        tensor_res *r;
        enif_get_list_cell(env, tail, &head, &tail);
        if (!enif_get_resource(env, head, nif_tensor_rt, (void **)&r) ||
            !(got.tensors[got.n] = nif_tensor_res_acquire(r))) {
            result = nif_make_error(env, "property_check: a result is not a live tensor");
            goto done;
        }
        got.n++;
    }
    json_error_t jerr;
    json = json_loadb((const char *)line.data, line.size, 0, &jerr);
    if (!json) {
        result = nif_make_error(env, "property_check: the case is not JSON");
        goto done;
    }
    if (property_check_expected(op, args, nargs, &got, json_object_get(json, "result"), msg, sizeof msg))
        result = nif_atom.ok;
    else result = nif_make_error(env, msg);
done:
    json_decref(json);
    emily_dispatch_result_release(&got);
    nif_decoder_free(d);
    return result;
}

/* property_description(op) :: binary */
ERL_NIF_TERM nif_test_property_description(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    char op[64];
    if (!get_op(env, argv[0], op, sizeof op)) return enif_make_badarg(env);
    return nif_make_binary_str(env, property_description(op));
}

/* export_count(ref | nil) :: integer: to_pointer's export-table entries
 * that the tensor's resource owns (nil: all of them), so a test can see
 * that repeated exports reuse one entry and that freeing removes it. */
ERL_NIF_TERM nif_test_export_count(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    tensor_res *r = NULL;
    if (!enif_is_identical(argv[0], nif_atom.nil) && !enif_get_resource(env, argv[0], nif_tensor_rt, (void **)&r))
        return enif_make_badarg(env);
    return enif_make_uint64(env, (ErlNifUInt64)nif_export_count(r));
}
#else
/* ISO C forbids an empty translation unit */
typedef int emily_test_hooks_unused;
#endif
