/* libFuzzer target: the Nx callback dispatcher (emily_dispatch, CPU).
 *
 * Two flavours of input:
 * - JSON (the input starts with '{' or white space): one corpus line
 *   (tests/corpus/README.md), an object with "op", "out" and "args"
 *   ("result" and "tag", if present, are ignored), decoded by the
 *   conformance runner's own decoder (tests/conformance/json_values.c);
 * - compact binary (anything else), where every byte string is a call:
 *   see decode_binary below. It reaches options and shapes that JSON
 *   mutations seldom form.
 * The call is dispatched in RUN mode, then, when that succeeds, in INFER
 * mode as the runner does; everything is released and no tensor may stay
 * alive. Inputs beyond the harness's
 * limits (fuzz_common.h: elements, integer sizes) are decoded but not
 * dispatched. */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
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

/* Reads every output back (the bytes must all be there), up to a size. */
static void read_back(const emily_dispatch_result *r) {
    if (r->n < 1 || r->n > EMILY_DISPATCH_MAX_OUTPUTS) abort();
    for (int k = 0; k < r->n; k++) {
        const emily_tensor *t = r->tensors[k];
        if (!t) abort();
        /* Nx's binary form: sub-byte types packed */
        size_t nb = emily_dtype_binary_size(emily_tensor_dtype(t), emily_tensor_size(t));
        if (nb > ((size_t)64 << 20)) continue;
        void *buf = malloc(nb ? nb : 1);
        if (!buf) continue;
        if (emily_to_binary(t, buf, nb) != EMILY_OK) abort();
        free(buf);
    }
}

/* RUN, then INFER when RUN succeeded. */
static void run_call(const char *op, const emily_value *out, const emily_value *args, size_t nargs) {
    if (!fuzz_call_ok(out, args, nargs)) return;
    emily_dispatch_result res = {0};
    for (int mode = EMILY_DISPATCH_RUN; mode <= EMILY_DISPATCH_INFER; mode++) {
        emily_status s = emily_dispatch(op, EMILY_CPU, out, args, nargs, (emily_dispatch_mode)mode, &res);
        if (s != EMILY_OK) {
            if (res.n != 0 || !emily_last_error()[0]) abort(); /* a failure returns nothing, says why */
            return;
        }
        read_back(&res);
        emily_dispatch_result_release(&res);
    }
}

/* ---- the compact binary form ----
 * byte: the callback (an index into emily_dispatch_callbacks());
 * byte: bit 7 set: a list of 1 + (byte % 4) templates, else one;
 *   a template: type byte (% 14), rank byte (% 5), a dimension byte
 *   each (below 250: % 7; else the next 8 bytes, any int64);
 * byte: the number of arguments (% 7), then each argument, a tag byte
 *   (% 11) and its content:
 *   0, 1 tensor: type, rank, dimensions as above (% 6), then its bytes
 *   2 small integer (a signed byte)   3 integer (8 bytes)
 *   4 float (8 bytes; NaN and infinities, which no front end sends as
 *     floats, become 0.5)             5 atom (a byte into `atoms`)
 *   6 tuple, 7 list (a count byte, then values)
 *   8 keyword list (a count byte, then key byte into `keys` and value)
 *   9 nil, true or false              10 complex (two floats)
 * Nesting stops at depth 4 (small integers from there). Past the end,
 * every byte reads as 0. */

/* clang-format off */
static const char *const atoms[] = {
    "asc", "desc", "nan", "infinity", "neg_infinity", "none", "reduced", "complete", "conjugate",
    "transpose", "fast", "high", "highest", "low", "lapack", "reference", "reference_nx07",
    "power_of_two", "nil"};
static const char *const keys[] = {
    "axes", "axis", "keep_axes", "keep_axis", "direction", "stable", "tie_break", "eps", "equal_nan",
    "rtol", "atol", "k", "length", "lengths", "linalg", "max_iter", "mode", "padding", "precision",
    "reverse", "strides", "transform_a", "window_dilations", "full_matrices?", "left_side", "lower",
    "input_dilation", "kernel_dilation", "feature_group_size", "batch_group_size",
    "input_permutation", "kernel_permutation", "output_permutation"};
/* clang-format on */
#define COUNT(a) (sizeof(a) / sizeof *(a))

typedef struct bin {
    const uint8_t *p, *end;
    void **allocs;
    size_t nallocs, cap;
    emily_tensor *tensors[64];
    size_t ntensors;
} bin;

static unsigned byte(bin *b) { return b->p < b->end ? *b->p++ : 0; }
static void bytes(bin *b, void *dst, size_t n) {
    size_t have = (size_t)(b->end - b->p) < n ? (size_t)(b->end - b->p) : n;
    memcpy(dst, b->p, have);
    memset((unsigned char *)dst + have, 0, n - have);
    b->p += have;
}
static int64_t i64(bin *b) {
    int64_t v;
    bytes(b, &v, sizeof v);
    return v;
}
static double f64(bin *b) {
    double f;
    bytes(b, &f, sizeof f);
    return isfinite(f) ? f : 0.5;
}
static void *bin_alloc(bin *b, size_t n) {
    if (b->nallocs == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 32;
        void **a = realloc(b->allocs, cap * sizeof *a);
        if (!a) return NULL;
        b->allocs = a;
        b->cap = cap;
    }
    void *p = calloc(1, n ? n : 1);
    if (p) b->allocs[b->nallocs++] = p;
    return p;
}
static void bin_free(bin *b) {
    for (size_t i = 0; i < b->nallocs; i++) free(b->allocs[i]);
    for (size_t i = 0; i < b->ntensors; i++) emily_tensor_release(b->tensors[i]);
    free(b->allocs);
}

static int64_t *dims(bin *b, int rank, unsigned mod) {
    int64_t *d = bin_alloc(b, sizeof(int64_t) * ((size_t)rank + 1));
    for (int i = 0; d && i < rank; i++) {
        unsigned x = byte(b);
        d[i] = x < 250 ? (int64_t)(x % mod) : i64(b);
    }
    return d;
}

static bool bin_value(bin *b, emily_value *v, int depth);

static bool bin_items(bin *b, emily_value *v, emily_value_kind kind, size_t n, int depth) {
    v->kind = kind;
    v->n = n;
    v->items = bin_alloc(b, sizeof(emily_value) * (n + 1));
    if (!v->items) return false;
    for (size_t i = 0; i < n; i++)
        if (!bin_value(b, &v->items[i], depth + 1)) return false;
    return true;
}

static bool bin_value(bin *b, emily_value *v, int depth) {
    memset(v, 0, sizeof *v);
    unsigned tag = depth >= 4 ? 2 : byte(b) % 11;
    switch (tag) {
    case 0:
    case 1: {
        emily_dtype dt = (emily_dtype)(byte(b) % EMILY_DTYPE_COUNT);
        int rank = (int)(byte(b) % 5);
        int64_t *d = dims(b, rank, 6);
        if (!d) return false;
        int64_t n = fuzz_shape_elements(rank, d);
        v->kind = EMILY_V_NIL;
        if (n > 4096 || b->ntensors == COUNT(b->tensors)) return true;
        size_t nb = (size_t)n * emily_dtype_size(dt);
        void *data = bin_alloc(b, nb);
        if (!data) return false;
        bytes(b, data, nb);
        emily_tensor *t;
        if (emily_from_binary(EMILY_CPU, dt, rank, d, data, nb, &t) != EMILY_OK) return true;
        b->tensors[b->ntensors++] = t;
        v->kind = EMILY_V_TENSOR;
        v->tensor = t;
        return true;
    }
    case 2:
        v->kind = EMILY_V_INT;
        v->i = (int8_t)byte(b);
        return true;
    case 3:
        v->kind = EMILY_V_INT;
        v->i = i64(b);
        return true;
    case 4:
        v->kind = EMILY_V_FLOAT;
        v->f = f64(b);
        return true;
    case 5:
        v->kind = EMILY_V_ATOM;
        v->str = atoms[byte(b) % COUNT(atoms)];
        v->len = strlen(v->str);
        return true;
    case 6: return bin_items(b, v, EMILY_V_TUPLE, byte(b) % 4, depth);
    case 7: return bin_items(b, v, EMILY_V_LIST, byte(b) % 5, depth);
    case 8: {
        size_t n = byte(b) % 4;
        v->keys = bin_alloc(b, sizeof(char *) * (n + 1));
        if (!v->keys) return false;
        v->kind = EMILY_V_OPTS;
        v->n = n;
        v->items = bin_alloc(b, sizeof(emily_value) * (n + 1));
        if (!v->items) return false;
        for (size_t i = 0; i < n; i++) {
            v->keys[i] = keys[byte(b) % COUNT(keys)];
            if (!bin_value(b, &v->items[i], depth + 1)) return false;
        }
        return true;
    }
    case 9: {
        unsigned k = byte(b) % 3;
        v->kind = k == 0 ? EMILY_V_NIL : EMILY_V_BOOL;
        v->b = k == 1;
        return true;
    }
    default:
        v->kind = EMILY_V_COMPLEX;
        v->re = f64(b);
        v->im = f64(b);
        return true;
    }
}

static bool bin_template(bin *b, emily_value *v) {
    v->kind = EMILY_V_TEMPLATE;
    v->dtype = (emily_dtype)(byte(b) % EMILY_DTYPE_COUNT);
    v->rank = (int)(byte(b) % 5);
    v->shape = dims(b, v->rank, 7);
    return v->shape != NULL;
}

static void decode_binary(const uint8_t *data, size_t size) {
    static const char *const *names;
    static size_t nnames;
    if (!names) {
        names = emily_dispatch_callbacks();
        while (names[nnames]) nnames++;
    }
    bin b = {.p = data, .end = data + size};
    const char *op = names[byte(&b) % nnames];
    emily_value out = {0};
    unsigned o = byte(&b);
    bool ok = true;
    if (o & 0x80) {
        size_t n = 1 + o % 4;
        out.kind = EMILY_V_LIST;
        out.n = n;
        out.items = bin_alloc(&b, sizeof(emily_value) * (n + 1));
        ok = out.items != NULL;
        for (size_t i = 0; ok && i < n; i++) ok = bin_template(&b, &out.items[i]);
    } else {
        ok = bin_template(&b, &out);
    }
    size_t nargs = byte(&b) % 7;
    emily_value *args = ok ? bin_alloc(&b, sizeof(emily_value) * (nargs + 1)) : NULL;
    for (size_t i = 0; args && i < nargs; i++)
        if (!bin_value(&b, &args[i], 0)) args = NULL;
    if (args) run_call(op, &out, args, nargs);
    bin_free(&b);
}

static void decode_json(const uint8_t *data, size_t size) {
    json_error_t jerr;
    json_t *line = json_loadb((const char *)data, size, 0, &jerr);
    if (!line) return;
    const char *op = json_string_value(json_object_get(line, "op"));
    const json_t *out_j = json_object_get(line, "out");
    const json_t *args_j = json_object_get(line, "args");
    if (op && out_j && json_is_array(args_j)) {
        jv_tree out = {0}, args = {0};
        char msg[512] = "";
        if (jv_decode(&out, out_j, EMILY_CPU, true, msg, sizeof msg) == 0 &&
            jv_decode(&args, args_j, EMILY_CPU, false, msg, sizeof msg) == 0)
            run_call(op, out.root, args.root->items, args.root->n);
        jv_free(&out);
        jv_free(&args);
    }
    json_decref(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t tensors = emily_live_tensors(), buffers = emily_live_buffers();
    if (size > 0 && data[0] != '{' && !isspace(data[0])) decode_binary(data, size);
    else decode_json(data, size);
    fuzz_check_live(tensors, buffers, "fuzz_dispatch");
    return 0;
}
