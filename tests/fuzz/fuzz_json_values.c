/* libFuzzer target: the corpus runner's JSON decoding alone
 * (tests/conformance/json_values.c), on arbitrary bytes.
 *
 * Any JSON value is decoded both as arguments and as templates, and so
 * is each member of an object (a corpus case's "out" and "args"). The
 * decoded tree must be well formed (what the dispatcher relies on: items
 * and keys where n says, strings where atoms and binaries are), a failure
 * must say why, every decoded tensor must survive jv_encode_tensor and a
 * second decode bit for bit, and base64 must round-trip the input. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_common.h"
#include "json_values.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_single_thread();
    return 0;
}

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_json_values: %s\n", what);
        abort();
    }
}

static unsigned char *tensor_bytes(const emily_tensor *t, size_t *nb) {
    /* Nx's binary form: sub-byte types packed */
    *nb = emily_dtype_binary_size(emily_tensor_dtype(t), emily_tensor_size(t));
    unsigned char *b = malloc(*nb ? *nb : 1);
    check(b != NULL, "out of memory reading a tensor");
    check(emily_to_binary(t, b, *nb) == EMILY_OK, "to_binary of a decoded tensor failed");
    return b;
}

/* jv_encode_tensor, then jv_decode of {"tensor": that}: the same tensor. */
static void round_trip(const emily_tensor *t) {
    json_t *enc = jv_encode_tensor(t);
    if (!enc) return; /* out of memory */
    json_t *arg = json_pack("{s:o}", "tensor", enc);
    check(arg != NULL, "json_pack");
    jv_tree tree = {0};
    char msg[256] = "";
    check(jv_decode(&tree, arg, EMILY_CPU, false, msg, sizeof msg) == 0, "an encoded tensor does not decode");
    const emily_value *v = tree.root;
    check(v->kind == EMILY_V_TENSOR && v->tensor, "an encoded tensor decodes to something else");
    const emily_tensor *u = v->tensor;
    check(emily_tensor_dtype(u) == emily_tensor_dtype(t) && emily_tensor_rank(u) == emily_tensor_rank(t),
          "round trip changed the type or rank");
    for (int i = 0; i < emily_tensor_rank(t); i++)
        check(emily_tensor_shape(u)[i] == emily_tensor_shape(t)[i], "round trip changed the shape");
    size_t na, nb;
    unsigned char *a = tensor_bytes(t, &na), *b = tensor_bytes(u, &nb);
    check(na == nb && memcmp(a, b, na) == 0, "round trip changed the bytes");
    free(a);
    free(b);
    jv_free(&tree);
    json_decref(arg);
}

static void walk(const emily_value *v, int depth) {
    check(depth < 4096, "tree deeper than the JSON");
    switch (v->kind) {
    case EMILY_V_ATOM: check(v->str != NULL, "an atom without a name"); break;
    case EMILY_V_BINARY: check(v->str != NULL || v->len == 0, "a binary without bytes"); break;
    case EMILY_V_TENSOR:
        check(v->tensor != NULL, "a tensor value without a tensor");
        round_trip(v->tensor);
        break;
    case EMILY_V_TEMPLATE:
        check(v->rank >= 0 && (v->rank == 0 || v->shape != NULL), "a template without its shape");
        break;
    case EMILY_V_OPTS:
        check(v->keys != NULL, "options without keys");
        for (size_t i = 0; i < v->n; i++) check(v->keys[i] != NULL, "an option without a key");
        /* fall through */
    case EMILY_V_TUPLE:
    case EMILY_V_LIST:
        check(v->items != NULL, "a list without items");
        for (size_t i = 0; i < v->n; i++) walk(&v->items[i], depth + 1);
        break;
    default: break;
    }
}

/* As arguments and as templates. */
static void decode_both(const json_t *j) {
    for (int as_template = 0; as_template < 2; as_template++) {
        jv_tree tree = {0};
        char msg[512] = "";
        if (jv_decode(&tree, j, EMILY_CPU, as_template, msg, sizeof msg) == 0) walk(tree.root, 0);
        else check(msg[0] != 0, "a decoding failure without a message");
        jv_free(&tree);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t tensors = emily_live_tensors(), buffers = emily_live_buffers();

    char *enc = b64_encode(data, size);
    if (enc) {
        size_t n;
        unsigned char *dec = b64_decode(enc, &n);
        if (dec) check(n == size && memcmp(dec, data, size) == 0, "base64 does not round-trip");
        free(dec);
        free(enc);
    }

    json_error_t jerr;
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
    if (j) {
        decode_both(j);
        /* a corpus case: its "out" and "args" (any member) too */
        const char *key;
        json_t *member;
        if (json_is_object(j)) json_object_foreach(j, key, member) decode_both(member);
        json_decref(j);
    }
    fuzz_check_live(tensors, buffers, "fuzz_json_values");
    return 0;
}
