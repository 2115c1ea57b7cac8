/* The narrow types (f8, f8_e4m3fn, s2, s4, u2, u4): Nx.Type's rules,
 * Nx's binary form, as_type with Nx's write rules, callbacks computed in
 * the wider type, and the typed ops' refusal. The expected bytes were
 * printed by Nx 0.13.1's Nx.BinaryBackend (tests/corpus/narrow.jsonl.gz
 * has many more, recorded by tests/corpus/record_narrow.exs). */
#include <stdlib.h>
#include "harness.h"

static emily_tensor *from(emily_dtype dt, int64_t n, const void *bytes) {
    emily_tensor *t = NULL;
    CHECK_OK(emily_from_binary(EMILY_CPU, dt, 1, &n, bytes, emily_dtype_binary_size(dt, n), &t));
    return t;
}

/* The binary form of t equals want (n bytes). */
static bool bytes_are(const emily_tensor *t, const void *want, size_t n) {
    unsigned char got[64];
    size_t have = emily_dtype_binary_size(emily_tensor_dtype(t), emily_tensor_size(t));
    if (have != n || n > sizeof got || emily_to_binary(t, got, n)) return false;
    if (memcmp(got, want, n)) {
        fprintf(stderr, "  got:");
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %02x", got[i]);
        fprintf(stderr, "\n");
        return false;
    }
    return true;
}

TEST(names_sizes_and_kinds) {
    static const struct {
        emily_dtype t;
        const char *name;
        int bits;
    } rows[] = {{EMILY_F8_E5M2, "f8", 8}, {EMILY_F8_E4M3FN, "f8_e4m3fn", 8},
                {EMILY_S2, "s2", 2},      {EMILY_S4, "s4", 4},
                {EMILY_U2, "u2", 2},      {EMILY_U4, "u4", 4}};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        CHECK(emily_dtype_known(rows[i].t) && !emily_dtype_valid(rows[i].t) && emily_dtype_is_narrow(rows[i].t));
        CHECK(strcmp(emily_dtype_name(rows[i].t), rows[i].name) == 0);
        CHECK(emily_dtype_from_name(rows[i].name) == rows[i].t);
        CHECK(emily_dtype_bits(rows[i].t) == rows[i].bits && emily_dtype_size(rows[i].t) == 1);
    }
    CHECK(emily_dtype_is_float(EMILY_F8_E4M3FN) && emily_dtype_is_float(EMILY_F8_E5M2));
    CHECK(emily_dtype_is_integer(EMILY_S2) && emily_dtype_is_integer(EMILY_U4));
    CHECK(emily_dtype_make(EMILY_KIND_FLOAT, 8) == EMILY_F8_E5M2);
    CHECK(emily_dtype_make(EMILY_KIND_SIGNED, 4) == EMILY_S4);
    CHECK(emily_dtype_compute_type(EMILY_S4) == EMILY_S8 && emily_dtype_compute_type(EMILY_U2) == EMILY_U8);
    CHECK(emily_dtype_compute_type(EMILY_F8_E4M3FN) == EMILY_F32);
    CHECK(emily_dtype_binary_size(EMILY_S4, 3) == 2 && emily_dtype_binary_size(EMILY_U2, 5) == 2);
    CHECK(emily_dtype_binary_size(EMILY_F8_E5M2, 3) == 3 && emily_dtype_binary_size(EMILY_S2, 0) == 0);
}

/* Nx.Type.merge and merge_number, quirks included. */
TEST(type_rules) {
    CHECK(emily_type_merge(EMILY_F8_E4M3FN, EMILY_F32) == EMILY_F8_E4M3FN); /* the left one */
    CHECK(emily_type_merge(EMILY_F32, EMILY_F8_E4M3FN) == EMILY_F32);
    CHECK(emily_type_merge(EMILY_F8_E4M3FN, EMILY_F8_E5M2) == EMILY_F8_E4M3FN);
    CHECK(emily_type_merge(EMILY_F8_E5M2, EMILY_F16) == EMILY_F16);
    CHECK(emily_type_merge(EMILY_BF16, EMILY_F8_E4M3FN) == EMILY_F8_E4M3FN);
    CHECK(emily_type_merge(EMILY_F8_E4M3FN, EMILY_C64) == EMILY_C64);
    CHECK(emily_type_merge(EMILY_U2, EMILY_S2) == EMILY_S4);
    CHECK(emily_type_merge(EMILY_U4, EMILY_S4) == EMILY_S8);
    CHECK(emily_type_merge(EMILY_S4, EMILY_S8) == EMILY_S8);
    CHECK(emily_type_merge(EMILY_U2, EMILY_F8_E5M2) == EMILY_F8_E5M2);
    CHECK(emily_type_merge_int(EMILY_S4, 1) == EMILY_S4);
    CHECK(emily_type_merge_int(EMILY_S4, -2) == EMILY_S4);
    CHECK(emily_type_merge_int(EMILY_S4, 2) == EMILY_S8);
    CHECK(emily_type_merge_int(EMILY_U2, 1) == EMILY_U2);
    CHECK(emily_type_merge_int(EMILY_U2, -1) == EMILY_S4);
    CHECK(emily_type_merge_int(EMILY_U8, 0) == EMILY_U8);
    CHECK(emily_type_merge_int(EMILY_F8_E4M3FN, 1) == EMILY_F32);
    CHECK(emily_type_merge_float(EMILY_F8_E4M3FN) == EMILY_F32);
    CHECK(emily_type_merge_float(EMILY_F8_E5M2) == EMILY_F8_E5M2);
    CHECK(emily_type_to_floating(EMILY_S4) == EMILY_F32);
    CHECK(emily_type_to_floating(EMILY_F8_E4M3FN) == EMILY_F8_E4M3FN);
    CHECK(emily_type_to_aggregate(EMILY_S4) == EMILY_S32 && emily_type_to_aggregate(EMILY_U2) == EMILY_U32);
    CHECK(emily_type_to_complex(EMILY_F8_E5M2) == EMILY_C64);
}

TEST(f8_rules) {
    /* Nx 0.13.1: as_type(f32 [1e6, 65519, 65520, -1e6, 1e-8, 3e-5], :f8) */
    static const double in[] = {1e6, 65519.0, 65520.0, -1e6, 1e-8, 3e-5};
    static const uint8_t e5m2[] = {0x7c, 0x7b, 0x7c, 0xfc, 0x00, 0x01};
    for (int i = 0; i < 6; i++) CHECK(emily_f64_to_f8_e5m2((float)in[i]) == e5m2[i]);
    CHECK(emily_f64_to_f8_e5m2(NAN) == 0x7e);
    /* as_type(f32 [1.97, 0.015, 0.0078, 500.0, 1e-10, 0.0], :f8_e4m3fn) */
    static const double in2[] = {1.97, 0.015, 0.0078, 500.0, 1e-10, 0.0};
    static const uint8_t e4m3[] = {0x3f, 0x07, 0x04, 0x7e, 0x00, 0x00};
    for (int i = 0; i < 6; i++) CHECK(emily_f64_to_f8_e4m3fn((float)in2[i]) == e4m3[i]);
    CHECK(emily_f64_to_f8_e4m3fn(NAN) == 0x7f && emily_f64_to_f8_e4m3fn(INFINITY) == 0x7e);
    CHECK(emily_f64_to_f8_e4m3fn(-INFINITY) == 0xfe && emily_f64_to_f8_e4m3fn(-1.0) == 0xb8);
    CHECK(emily_f64_to_f8_e4m3fn(448.0) == 0x7e && emily_f64_to_f8_e4m3fn(1.0) == 0x38);
    CHECK(emily_f64_to_f8_e4m3fn(-0.0) == 0x80);
    /* 100 -> 1.5625 * 64: the fraction 4.5 rounds away from zero to 5 */
    CHECK(emily_f64_to_f8_e4m3fn(100.0) == ((13 << 3) | 5));
    /* every byte reads exactly and writes back to itself (the one NaN of
     * each aside, and e4m3's NaN bytes) */
    for (int v = 0; v < 256; v++) {
        double d = emily_f8_e5m2_to_f64((uint8_t)v);
        if (!isnan(d)) CHECK(emily_f64_to_f8_e5m2(d) == v);
        double e = emily_f8_e4m3fn_to_f64((uint8_t)v);
        if (!isnan(e)) CHECK(emily_f64_to_f8_e4m3fn(e) == v);
        else CHECK((v & 0x7f) == 0x7f);
    }
    CHECK(emily_f8_e5m2_to_f64(0x01) == 0x1p-16); /* a subnormal, as the format defines it */
    CHECK(isinf(emily_f8_e5m2_to_f64(0x7c)) && isnan(emily_f8_e5m2_to_f64(0x7d)));
    CHECK(emily_f8_e4m3fn_to_f64(0x7e) == 448.0 && emily_f8_e4m3fn_to_f64(0x01) == 0x1p-9);
}

TEST(packed_binary_form) {
    /* Nx: s4 [1, -2, 3] is <<0x1e, 0x3::4>>; u2 [1, 2, 3, 1] is "m" */
    emily_tensor *s4 = from(EMILY_S4, 3, (const uint8_t[]){0x1e, 0x30});
    CHECK(bytes_are(s4, (const uint8_t[]){0x1e, 0x30}, 2));
    emily_tensor *s8;
    CHECK_OK(emily_as_type(s4, EMILY_S8, &s8));
    CHECK(bytes_are(s8, (const int8_t[]){1, -2, 3}, 3));
    emily_tensor *u2 = from(EMILY_U2, 4, (const uint8_t[]){0x6d});
    emily_tensor *u8;
    CHECK_OK(emily_as_type(u2, EMILY_U8, &u8));
    CHECK(bytes_are(u8, (const uint8_t[]){1, 2, 3, 1}, 4));
    int64_t n = 3;
    emily_tensor *bad;
    CHECK_ERR(emily_from_binary(EMILY_CPU, EMILY_S4, 1, &n, (const uint8_t[]){1, 2, 3}, 3, &bad), EMILY_ERR_ARGUMENT,
              "a s4 tensor of 3 elements needs 2");
    unsigned char buf[3];
    CHECK_ERR(emily_to_binary(s4, buf, 3), EMILY_ERR_ARGUMENT, "tensor has 2");
    emily_tensor_release(s4), emily_tensor_release(s8), emily_tensor_release(u2), emily_tensor_release(u8);
}

TEST(as_type_between_narrow_and_wide) {
    /* e4m3 [100, -3.5] -> s4: 104 wraps to -8, -3.5 truncates to -3 */
    emily_tensor *e = from(EMILY_F8_E4M3FN, 2, (const uint8_t[]){(13 << 3) | 5, 0xc6});
    emily_tensor *s4, *u4, *back;
    CHECK_OK(emily_as_type(e, EMILY_S4, &s4));
    CHECK(bytes_are(s4, (const uint8_t[]){0x8d}, 1));
    /* s4 -> u4 keeps the bits; -> f8 through the value */
    CHECK_OK(emily_as_type(s4, EMILY_U4, &u4));
    CHECK(bytes_are(u4, (const uint8_t[]){0x8d}, 1));
    CHECK_OK(emily_as_type(s4, EMILY_F8_E5M2, &back));
    CHECK(bytes_are(back, (const uint8_t[]){0xc8, 0xc2}, 2)); /* -8.0, -3.0 */
    emily_tensor_release(back);
    /* f32 +-inf and NaN -> s2: the extremes and 0 */
    float fs[] = {INFINITY, -INFINITY, NAN, 5.0f};
    int64_t n = 4;
    emily_tensor *f, *s2;
    CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_F32, 1, &n, fs, sizeof fs, &f));
    CHECK_OK(emily_as_type(f, EMILY_S2, &s2));
    CHECK(bytes_are(s2, (const uint8_t[]){0x61}, 1)); /* 1, -2, 0, 1 */
    /* u64 max -> u4: the low bits */
    uint64_t big = UINT64_MAX;
    emily_tensor *u64, *u4b;
    n = 1;
    CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_U64, 1, &n, &big, 8, &u64));
    CHECK_OK(emily_as_type(u64, EMILY_U4, &u4b));
    CHECK(bytes_are(u4b, (const uint8_t[]){0xf0}, 1));
    /* bitcast: f8 <-> u8 is the byte; s4 <-> u4 the low bits */
    emily_tensor *bits, *bc;
    CHECK_OK(emily_bitcast(e, EMILY_U8, &bits));
    CHECK(bytes_are(bits, (const uint8_t[]){(13 << 3) | 5, 0xc6}, 2));
    CHECK_OK(emily_bitcast(s4, EMILY_U4, &bc));
    CHECK(bytes_are(bc, (const uint8_t[]){0x8d}, 1));
    emily_tensor *no;
    CHECK_ERR(emily_bitcast(s4, EMILY_U8, &no), EMILY_ERR_TYPE, "got s4 and u8");
    emily_tensor_release(e), emily_tensor_release(s4), emily_tensor_release(u4), emily_tensor_release(f);
    emily_tensor_release(s2), emily_tensor_release(u64), emily_tensor_release(u4b), emily_tensor_release(bits);
    emily_tensor_release(bc);
}

/* One callback through the dispatcher on one or two tensors. */
static emily_tensor *call(const char *cb, emily_dtype out_dt, int64_t n, emily_tensor *a, emily_tensor *b) {
    emily_value out = {.kind = EMILY_V_TEMPLATE, .dtype = out_dt, .rank = n < 0 ? 0 : 1, .shape = &n};
    emily_value args[2] = {{.kind = EMILY_V_TENSOR, .tensor = a}, {.kind = EMILY_V_TENSOR, .tensor = b}};
    emily_dispatch_result r = {0};
    emily_status s = emily_dispatch(cb, EMILY_CPU, &out, args, b ? 2 : 1, EMILY_DISPATCH_RUN, &r);
    if (s) {
        fprintf(stderr, "  %s: %s\n", cb, emily_last_error());
        harness_failures++;
        return NULL;
    }
    return r.tensors[0];
}

TEST(callbacks_compute_wide_and_write_narrow) {
    emily_tensor *seven = from(EMILY_S4, 1, (const uint8_t[]){0x70}), *one = from(EMILY_S4, 1, (const uint8_t[]){0x10});
    emily_tensor *r = call("add", EMILY_S4, 1, seven, one); /* 8 wraps to -8 */
    CHECK(r && bytes_are(r, (const uint8_t[]){0x80}, 1));
    emily_tensor_release(r);
    /* count_leading_zeros and population_count over the type's own bits:
     * s4 [1, -1, 0] -> clz [3, 0, 4], popcount [1, 4, 0] */
    emily_tensor *v = from(EMILY_S4, 3, (const uint8_t[]){0x1f, 0x00});
    r = call("count_leading_zeros", EMILY_S4, 3, v, NULL);
    CHECK(r && bytes_are(r, (const uint8_t[]){0x30, 0x40}, 2));
    emily_tensor_release(r);
    r = call("population_count", EMILY_S4, 3, v, NULL);
    CHECK(r && bytes_are(r, (const uint8_t[]){0x14, 0x00}, 2));
    emily_tensor_release(r);
    /* sum of s4 [1, -1, 7] is an s32 7 */
    emily_tensor *w = from(EMILY_S4, 3, (const uint8_t[]){0x1f, 0x70});
    emily_value sum_out = {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_S32, .rank = 0};
    emily_value opt_items[2] = {{.kind = EMILY_V_NIL}, {.kind = EMILY_V_BOOL, .b = false}};
    const char *opt_keys[2] = {"axes", "keep_axes"};
    emily_value sum_args[2] = {{.kind = EMILY_V_TENSOR, .tensor = w},
                               {.kind = EMILY_V_OPTS, .items = opt_items, .keys = opt_keys, .n = 2}};
    emily_dispatch_result sr = {0};
    CHECK_OK(emily_dispatch("sum", EMILY_CPU, &sum_out, sum_args, 2, EMILY_DISPATCH_RUN, &sr));
    CHECK(sr.n == 1 && bytes_are(sr.tensors[0], (const int32_t[]){7}, 4));
    emily_dispatch_result_release(&sr);
    /* exp of f8 [1, 2] is [2.5, 7.0]; of f8_e4m3fn [1, 2] [2.75, 7.5] */
    emily_tensor *f8 = from(EMILY_F8_E5M2, 2, (const uint8_t[]){0x3c, 0x40});
    r = call("exp", EMILY_F8_E5M2, 2, f8, NULL);
    CHECK(r && bytes_are(r, (const uint8_t[]){0x41, 0x47}, 2));
    emily_tensor_release(r);
    emily_tensor *e4 = from(EMILY_F8_E4M3FN, 2, (const uint8_t[]){0x38, 0x40});
    r = call("exp", EMILY_F8_E4M3FN, 2, e4, NULL);
    CHECK(r && bytes_are(r, (const uint8_t[]){0x43, 0x4f}, 2));
    emily_tensor_release(r);
    /* f8_e4m3fn + f32 is f8_e4m3fn in Nx: 7 + 1 = 8 (0x50) */
    float onef = 1.0f;
    int64_t n1 = 1;
    emily_tensor *f32, *seven_e4 = from(EMILY_F8_E4M3FN, 1, (const uint8_t[]){0x4e});
    CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_F32, 1, &n1, &onef, 4, &f32));
    r = call("add", EMILY_F8_E4M3FN, 1, seven_e4, f32);
    CHECK(r && bytes_are(r, (const uint8_t[]){0x50}, 1));
    emily_tensor_release(r);
    /* iota of s4 over 10 wraps: 0..7, -8, -7 */
    emily_value out = {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_S4, .rank = 1, .shape = (const int64_t[]){10}};
    emily_value axis = {.kind = EMILY_V_NIL};
    emily_dispatch_result res = {0};
    CHECK_OK(emily_dispatch("iota", EMILY_CPU, &out, &axis, 1, EMILY_DISPATCH_RUN, &res));
    CHECK(res.n == 1 && bytes_are(res.tensors[0], (const uint8_t[]){0x01, 0x23, 0x45, 0x67, 0x89}, 5));
    emily_dispatch_result_release(&res);
    emily_tensor_release(seven), emily_tensor_release(one), emily_tensor_release(v), emily_tensor_release(w);
    emily_tensor_release(f8), emily_tensor_release(e4), emily_tensor_release(f32), emily_tensor_release(seven_e4);
}

TEST(typed_ops_refuse_narrow_types) {
    emily_tensor *s4 = from(EMILY_S4, 1, (const uint8_t[]){0x10}), *r;
    CHECK_ERR(emily_unary(EMILY_NEGATE, s4, &r), EMILY_ERR_TYPE, "negate: tensor is s4, a type the typed ops");
    CHECK_ERR(emily_binary(EMILY_ADD, s4, s4, EMILY_S4, &r), EMILY_ERR_TYPE,
              "emily_dispatch (which computes it in s8)");
    CHECK_ERR(emily_as_type(NULL, EMILY_S4, &r), EMILY_ERR_ARGUMENT, "as_type: tensor is NULL");
    CHECK_ERR(emily_as_type(s4, (emily_dtype)EMILY_DTYPE_ALL_COUNT, &r), EMILY_ERR_TYPE, "invalid target type");
    emily_tensor_release(s4);
}

RUN_TESTS("narrow", CASE(names_sizes_and_kinds), CASE(type_rules), CASE(f8_rules), CASE(packed_binary_form),
          CASE(as_type_between_narrow_and_wide), CASE(callbacks_compute_wide_and_write_narrow),
          CASE(typed_ops_refuse_narrow_types))
