/* The dispatcher's registry (src/nx/callback_list.h): every callback is
 * found by name from any thread, unknown names are refused, and each
 * entry's cost and dtype classes say what the callbacks really do. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

static size_t count_callbacks(void) {
    size_t n = 0;
    for (const char *const *names = emily_dispatch_callbacks(); names[n]; n++) {}
    return n;
}

/* The first lookups race to build the hash index, and the first calls
 * read the engine's tables: each thread must see them whole (under
 * ThreadSanitizer too). Keep this the first case, so nothing is built
 * yet. */
static void *find_all(void *arg) {
    (void)arg;
    static const char *const some[] = {"add",      "dot",         "window_scatter_min", "as_type", "logical_xor",
                                       "constant", "determinant", "put_slice",          "erf_inv"};
    for (int round = 0; round < 100; round++)
        for (size_t i = 0; i < sizeof some / sizeof *some; i++) {
            const emily_callback *cb = emily_dispatch_find(some[i]);
            if (!cb || strcmp(cb->name, some[i]) != 0) return (void *)1;
        }
    emily_value out = {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_F32}, arg0 = {.kind = EMILY_V_FLOAT, .f = 2};
    emily_dispatch_result r = {0};
    bool ok = emily_dispatch("constant", EMILY_CPU, &out, &arg0, 1, EMILY_DISPATCH_RUN, &r) == EMILY_OK && r.n == 1 &&
              t_get(r.tensors[0], 0) == 2;
    emily_dispatch_result_release(&r);
    return ok ? NULL : (void *)1;
}

TEST(first_lookups_from_many_threads) {
    pthread_t th[8];
    int started = 0;
    for (int i = 0; i < 8; i++)
        if (pthread_create(&th[i], NULL, find_all, NULL) == 0) started++;
    CHECK(started == 8);
    for (int i = 0; i < started; i++) {
        void *bad = NULL;
        pthread_join(th[i], &bad);
        CHECK(bad == NULL);
    }
}

TEST(every_name_is_found) {
    const char *const *names = emily_dispatch_callbacks();
    size_t n = count_callbacks();
    /* 3 creation, 39 unary + as_type and bitcast, 24 binary + select and
     * clip, 10 shape, 9 reductions, 2 products, 6 windows, 5 indexing, 3
     * sorts, 4 scans, 6 transforms, 8 linear algebra, 2 fused norms, sdpa,
     * softmax, rope, 3 quantization */
    CHECK(n == 131);
    CHECK(n == (size_t)EMILY_UNARY_OP_COUNT + EMILY_BINARY_OP_COUNT + 68);
    for (size_t i = 0; i < n; i++) {
        const emily_callback *cb = emily_dispatch_find(names[i]);
        CHECK(cb && strcmp(cb->name, names[i]) == 0);
        CHECK(emily_dispatch_supports(names[i]));
        for (size_t j = 0; j < i; j++) CHECK(strcmp(names[i], names[j]) != 0);
    }
    /* the element-wise callbacks come from the op lists */
    for (int op = 0; op < EMILY_UNARY_OP_COUNT; op++)
        CHECK(emily_dispatch_find(emily_unary_op_name((emily_unary_op)op)) != NULL);
    for (int op = 0; op < EMILY_BINARY_OP_COUNT; op++)
        CHECK(emily_dispatch_find(emily_binary_op_name((emily_binary_op)op)) != NULL);
    /* the list order is kept (the fuzz seeds index it) */
    CHECK(strcmp(names[0], "constant") == 0 && strcmp(names[3], "exp") == 0);
    CHECK(strcmp(names[n - 9], "determinant") == 0 && strcmp(names[n - 7], "rms_norm") == 0);
    CHECK(strcmp(names[n - 6], "sdpa") == 0 && strcmp(names[n - 5], "softmax") == 0);
    CHECK(strcmp(names[n - 2], "quantized_matmul") == 0 && strcmp(names[n - 1], "rope") == 0);
}

/* A broken index finds names that are not there: ask for each name with
 * a character more and one less (every name was found above). */
TEST(unknown_names_are_refused) {
    const char *const *names = emily_dispatch_callbacks();
    for (size_t i = 0; names[i]; i++) {
        char buf[96];
        size_t len = strlen(names[i]);
        CHECK(len > 0 && len + 2 < sizeof buf);
        snprintf(buf, sizeof buf, "%s_", names[i]);
        const emily_callback *cb = emily_dispatch_find(buf);
        CHECK(!cb || strcmp(cb->name, buf) == 0);
        memcpy(buf, names[i], len - 1);
        buf[len - 1] = 0;
        cb = emily_dispatch_find(buf);
        CHECK(!cb || strcmp(cb->name, buf) == 0);
    }
    CHECK(emily_dispatch_find("") == NULL);
    CHECK(emily_dispatch_find(NULL) == NULL);
    CHECK(emily_dispatch_find("Add") == NULL);
    CHECK(emily_dispatch_find("zzz") == NULL);
    CHECK(emily_dispatch_find("aaa") == NULL);
    CHECK(!emily_dispatch_supports("no_such_callback"));

    emily_value out = {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_F32};
    emily_dispatch_result r = {0};
    CHECK_ERR(emily_dispatch("no_such_callback", EMILY_CPU, &out, NULL, 0, EMILY_DISPATCH_RUN, &r),
              EMILY_ERR_UNSUPPORTED, "no_such_callback: unknown callback");
    CHECK_ERR(emily_dispatch_callback(NULL, EMILY_CPU, &out, NULL, 0, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "NULL callback");
    CHECK(r.n == 0);
}

TEST(dispatch_by_entry) {
    const emily_callback *cb = emily_dispatch_find("add");
    emily_tensor *a = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_S32, 0, NULL, emily_scalar_int(20), &a));
    emily_value args[2] = {{.kind = EMILY_V_TENSOR, .tensor = a}, {.kind = EMILY_V_TENSOR, .tensor = a}};
    emily_value no_opts = {.kind = EMILY_V_OPTS};
    emily_value out = {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_S32, .rank = 0};
    emily_dispatch_result r = {0};
    CHECK_OK(emily_dispatch_callback(cb, EMILY_CPU, &out, args, 2, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 1 && t_get(r.tensors[0], 0) == 40);
    emily_dispatch_result_release(&r);
    /* a handler serving several callbacks gets each one's op */
    cb = emily_dispatch_find("product");
    args[1] = no_opts;
    CHECK_OK(emily_dispatch_callback(cb, EMILY_CPU, &out, args, 2, EMILY_DISPATCH_INFER, &r));
    CHECK(r.n == 1 && t_get(r.tensors[0], 0) == 20);
    emily_dispatch_result_release(&r);
    emily_tensor_release(a);
}

/* The callbacks the NIF ran on a dirty scheduler whatever their size
 * before the registry had cost classes (beam/c_src's heavy list): the
 * scheduling decisions must not change. */
/* clang-format off */
static const char *const was_heavy[] = {
    "dot", "conv", "sort", "argsort", "top_k", "window_sum", "window_product", "window_max",
    "window_min", "window_scatter_max", "window_scatter_min", "gather", "take",
    "take_along_axis", "indexed_add", "indexed_put", "fft", "ifft", "fft2", "ifft2", "rfft",
    "irfft", "lu", "qr", "svd", "eigh", "cholesky", "solve", "determinant",
    "triangular_solve", "cumulative_sum", "cumulative_product", "cumulative_min",
    "cumulative_max",
    /* added since, dirty from the start: its work grows with Sq * Skv * D */
    "sdpa", "quantize", "dequantize", "quantized_matmul", NULL};
/* clang-format on */

TEST(cost_classes) {
    size_t dirty = 0;
    for (const char *const *names = emily_dispatch_callbacks(); *names; names++) {
        const emily_callback *cb = emily_dispatch_find(*names);
        bool heavy = false;
        for (int i = 0; was_heavy[i]; i++) heavy = heavy || strcmp(was_heavy[i], *names) == 0;
        CHECK(cb->cost == (heavy ? EMILY_COST_DIRTY : EMILY_COST_INLINE));
        if (cb->cost != EMILY_COST_INLINE) dirty++;
    }
    CHECK(dirty == 38);
    CHECK(emily_dispatch_find("add")->cost == EMILY_COST_INLINE);
    CHECK(emily_dispatch_find("reshape")->cost == EMILY_COST_INLINE);
    CHECK(emily_dispatch_find("sum")->cost == EMILY_COST_INLINE);
    CHECK(emily_dispatch_find("dot")->cost == EMILY_COST_DIRTY);
    CHECK(emily_dispatch_find("qr")->cost == EMILY_COST_DIRTY);
}

TEST(dtype_class_members) {
    int any = 0, real = 0, integer = 0, floats = 0;
    for (int t = 0; t < EMILY_DTYPE_ALL_COUNT; t++) {
        any += emily_dtype_class_has(EMILY_DTYPES_ANY, (emily_dtype)t);
        real += emily_dtype_class_has(EMILY_DTYPES_REAL, (emily_dtype)t);
        integer += emily_dtype_class_has(EMILY_DTYPES_INTEGER, (emily_dtype)t);
        floats += emily_dtype_class_has(EMILY_DTYPES_FLOAT, (emily_dtype)t);
        CHECK(emily_dtype_class_has(EMILY_DTYPES_FLOAT, (emily_dtype)t) == emily_dtype_is_float((emily_dtype)t));
        CHECK(emily_dtype_class_has(EMILY_DTYPES_REAL, (emily_dtype)t) == !emily_dtype_is_complex((emily_dtype)t));
        CHECK(emily_dtype_class_has(EMILY_DTYPES_INTEGER, (emily_dtype)t) == emily_dtype_is_integer((emily_dtype)t));
    }
    /* the 20 types: 12 integers (s2, s4, u2, u4 among them), 6 floats (f8,
     * f8_e4m3fn), 2 complex */
    CHECK(any == EMILY_DTYPE_ALL_COUNT && real == EMILY_DTYPE_ALL_COUNT - 2 && integer == 12 && floats == 6);
    CHECK(!emily_dtype_class_has(EMILY_DTYPES_ANY, EMILY_DTYPE_AUTO));
    CHECK(!emily_dtype_class_has((emily_dtype_class)7, EMILY_F32));
}

static emily_tensor *one(emily_dtype dt) {
    emily_tensor *t = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, dt, 1, (const int64_t[]){1}, emily_scalar_int(1), &t));
    return t;
}

/* What the class says is what the typed op accepts: every element-wise
 * op on every type. */
TEST(element_wise_dtype_classes) {
    for (int t = 0; t < EMILY_DTYPE_COUNT; t++) {
        emily_dtype dt = (emily_dtype)t;
        emily_tensor *x = one(dt);
        for (int op = 0; op < EMILY_UNARY_OP_COUNT; op++) {
            const emily_callback *cb = emily_dispatch_find(emily_unary_op_name((emily_unary_op)op));
            emily_tensor *r = NULL;
            emily_status s = emily_unary((emily_unary_op)op, x, &r);
            bool want = emily_dtype_class_has(cb->dtypes, dt);
            if ((s == EMILY_OK) != want || (s && s != EMILY_ERR_TYPE))
                fprintf(stderr, "  %s on %s: %s\n", cb->name, emily_dtype_name(dt), emily_status_name(s));
            CHECK((s == EMILY_OK) == want && (!s || s == EMILY_ERR_TYPE));
            emily_tensor_release(r);
        }
        for (int op = 0; op < EMILY_BINARY_OP_COUNT; op++) {
            const emily_callback *cb = emily_dispatch_find(emily_binary_op_name((emily_binary_op)op));
            emily_tensor *r = NULL;
            emily_status s = emily_binary((emily_binary_op)op, x, x, EMILY_DTYPE_AUTO, &r);
            bool want = emily_dtype_class_has(cb->dtypes, dt);
            if ((s == EMILY_OK) != want || (s && s != EMILY_ERR_TYPE))
                fprintf(stderr, "  %s on %s: %s\n", cb->name, emily_dtype_name(dt), emily_status_name(s));
            CHECK((s == EMILY_OK) == want && (!s || s == EMILY_ERR_TYPE));
            emily_tensor_release(r);
        }
        emily_tensor_release(x);
    }
}

/* A few of the other families: complex inputs where the class is REAL,
 * integers and complex where it is FLOAT. */
TEST(other_dtype_classes) {
    emily_tensor *c = one(EMILY_C64), *f = one(EMILY_F32), *c0 = NULL, *r = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_C64, 0, NULL, emily_scalar_int(1), &c0));
    CHECK(emily_dispatch_find("sort")->dtypes == EMILY_DTYPES_REAL);
    CHECK_ERR(emily_sort(c, 0, EMILY_SORT_ASC, true, &r), EMILY_ERR_TYPE, "sort");
    CHECK_OK(emily_sort(f, 0, EMILY_SORT_ASC, true, &r));
    emily_tensor_release(r);
    r = NULL;
    CHECK(emily_dispatch_find("reduce_max")->dtypes == EMILY_DTYPES_REAL);
    CHECK_ERR(emily_reduce(EMILY_REDUCE_MAX, c, 0, NULL, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_TYPE, "reduce_max");
    CHECK(emily_dispatch_find("argmax")->dtypes == EMILY_DTYPES_REAL);
    CHECK_ERR(emily_argreduce(EMILY_ARGMAX, c, -1, false, false, EMILY_S64, &r), EMILY_ERR_TYPE, "argmax");
    CHECK(emily_dispatch_find("bitcast")->dtypes == EMILY_DTYPES_REAL);
    CHECK_ERR(emily_bitcast(c, EMILY_F64, &r), EMILY_ERR_TYPE, "bitcast");
    CHECK(emily_dispatch_find("clip")->dtypes == EMILY_DTYPES_REAL);
    CHECK_ERR(emily_clip(c, c0, c0, EMILY_DTYPE_AUTO, &r), EMILY_ERR_TYPE, "clip");
    /* and ANY where complex works */
    CHECK(emily_dispatch_find("sum")->dtypes == EMILY_DTYPES_ANY);
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, c, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    emily_tensor_release(r);
    CHECK(emily_dispatch_find("as_type")->dtypes == EMILY_DTYPES_ANY);
    CHECK_OK(emily_as_type(c, EMILY_F32, &r));
    emily_tensor_release(r);
    r = NULL;
    /* FLOAT: the fused norms take real floats, not integers or complex */
    emily_tensor *s = one(EMILY_S32);
    CHECK(emily_dispatch_find("layer_norm")->dtypes == EMILY_DTYPES_FLOAT);
    CHECK(emily_dispatch_find("rms_norm")->dtypes == EMILY_DTYPES_FLOAT);
    CHECK_ERR(emily_layer_norm(c, f, NULL, 1e-5, &r), EMILY_ERR_TYPE, "layer_norm");
    CHECK_ERR(emily_rms_norm(s, f, 1e-6, &r), EMILY_ERR_TYPE, "rms_norm");
    CHECK_OK(emily_rms_norm(f, f, 1e-6, &r));
    RELEASE(r, c, c0, f, s);
}

/* A memory error from below the op layer names its stage ("cpu: out of
 * memory allocating ..."); the dispatcher puts the callback's name in
 * front, once. Other errors keep their messages. */
TEST(memory_errors_name_the_callback) {
    int64_t huge[2] = {(int64_t)1 << 20, (int64_t)1 << 20};
    emily_tensor *a = t_zero_view(EMILY_F32, 2, huge);
    emily_value args[2] = {v_tensor(a), v_tensor(a)}, tmpl = v_tmpl(EMILY_F32, 2, huge);
    emily_dispatch_result r = {0};
    CHECK_ERR(emily_dispatch("add", EMILY_CPU, &tmpl, args, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_MEMORY,
              "add: cpu: out of memory");
    CHECK(strncmp(emily_last_error(), "add: cpu:", 9) == 0);
    CHECK(r.n == 0);
    int64_t two[1] = {2};
    emily_value small = v_tmpl(EMILY_F32, 1, two);
    CHECK_ERR(emily_dispatch("add", EMILY_CPU, &small, args, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_INTERNAL,
              "add: output 0 is");
    CHECK(strncmp(emily_last_error(), "add: output", 11) == 0);
    emily_tensor_release(a);
}

RUN_TESTS("dispatch", CASE(first_lookups_from_many_threads), CASE(every_name_is_found), CASE(unknown_names_are_refused),
          CASE(dispatch_by_entry), CASE(cost_classes), CASE(dtype_class_members), CASE(element_wise_dtype_classes),
          CASE(other_dtype_classes), CASE(memory_errors_name_the_callback))
