/* select and clip: predicates of every kind, broadcasting, type merge,
 * NaN handling, strided inputs, errors. */
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"
#include "core/tensor_impl.h"

/* Checks r's dtype and raw bytes, then releases r. */
static void expect_bytes(emily_tensor *r, emily_dtype dt, const void *want, size_t nbytes, int line) {
    if (!t_holds(r, dt, want, nbytes)) {
        fprintf(stderr, "  FAIL line %d: unexpected result (%s)\n", line,
                r ? emily_dtype_name(emily_tensor_dtype(r)) : emily_last_error());
        harness_failures++;
    }
    emily_tensor_release(r);
}
#define EXPECT_T(r, dt, ctype, ...) \
    expect_bytes(r, dt, (ctype[]){__VA_ARGS__}, sizeof((ctype[]){__VA_ARGS__}), __LINE__)

/* The result r of an op (what, status s) that takes its three inputs
 * over: a failure is reported and counted, the inputs released. */
static emily_tensor *taking(const char *what, emily_status s, emily_tensor *r, emily_tensor *a, emily_tensor *b,
                            emily_tensor *c) {
    if (s) {
        fprintf(stderr, "  %s: %s\n", what, emily_last_error());
        harness_failures++;
    }
    RELEASE(a, b, c);
    return r;
}

static emily_tensor *sel(emily_tensor *p, emily_tensor *t, emily_tensor *f, emily_dtype out_type) {
    emily_tensor *r = NULL;
    emily_status s = emily_select(p, t, f, out_type, &r);
    return taking("select", s, r, p, t, f);
}

static emily_tensor *clip(emily_tensor *x, emily_tensor *lo, emily_tensor *hi) {
    emily_tensor *r = NULL;
    emily_status s = emily_clip(x, lo, hi, EMILY_DTYPE_AUTO, &r);
    return taking("clip", s, r, x, lo, hi);
}

TEST(select_predicates_of_every_kind) {
    EXPECT_T(sel(VEC(EMILY_U8, uint8_t, 1, 0, 2), VEC(EMILY_S32, int32_t, 1, 2, 3), VEC(EMILY_S32, int32_t, -1, -2, -3),
                 EMILY_DTYPE_AUTO),
             EMILY_S32, int32_t, 1, -2, 3);
    /* float predicates: NaN is true, -0.0 false */
    EXPECT_T(sel(VEC(EMILY_F32, float, NAN, -0.0f, 0.5f), VEC(EMILY_U8, uint8_t, 1, 1, 1),
                 VEC(EMILY_U8, uint8_t, 0, 0, 0), EMILY_DTYPE_AUTO),
             EMILY_U8, uint8_t, 1, 0, 1);
    EXPECT_T(sel(VEC(EMILY_F16, uint16_t, 0x8000, 0x7e00, 0x0001), VEC(EMILY_U8, uint8_t, 1, 1, 1),
                 VEC(EMILY_U8, uint8_t, 0, 0, 0), EMILY_DTYPE_AUTO),
             EMILY_U8, uint8_t, 0, 1, 1);
    EXPECT_T(sel(VEC(EMILY_S64, int64_t, INT64_MIN, 0), VEC(EMILY_U8, uint8_t, 1, 1), VEC(EMILY_U8, uint8_t, 0, 0),
                 EMILY_DTYPE_AUTO),
             EMILY_U8, uint8_t, 1, 0);
    /* complex predicate: a nonzero imaginary part is true */
    EXPECT_T(sel(CVEC(EMILY_C64, float, 0, 1, 0, 0), VEC(EMILY_U8, uint8_t, 1, 1), VEC(EMILY_U8, uint8_t, 0, 0),
                 EMILY_DTYPE_AUTO),
             EMILY_U8, uint8_t, 1, 0);
}

TEST(select_types_and_broadcasting) {
    /* branches merge: s32 and f32 give f32 */
    EXPECT_T(sel(VEC(EMILY_U8, uint8_t, 1, 0), VEC(EMILY_S32, int32_t, 7, 7), SCALAR(EMILY_F32, float, 0.5f),
                 EMILY_DTYPE_AUTO),
             EMILY_F32, float, 7.0f, 0.5f);
    /* the template's type wins (a number branch typed by value) */
    EXPECT_T(
        sel(VEC(EMILY_U8, uint8_t, 1, 0), VEC(EMILY_U8, uint8_t, 200, 201), SCALAR(EMILY_S32, int32_t, 3), EMILY_U8),
        EMILY_U8, uint8_t, 200, 3);
    /* a scalar predicate picks a whole (broadcast) branch */
    emily_tensor *r = sel(SCALAR(EMILY_U8, uint8_t, 0), VEC(EMILY_F64, double, 1, 2, 3),
                          t_from(EMILY_F64, 2, (int64_t[]){2, 1}, (double[]){8, 9}), EMILY_DTYPE_AUTO);
    CHECK(r && t_shape_is(r, 2, (int64_t[]){2, 3}));
    EXPECT_T(r, EMILY_F64, double, 8, 8, 8, 9, 9, 9);
    /* a full predicate with broadcast branches */
    r = sel(t_from(EMILY_U8, 2, (int64_t[]){2, 2}, (uint8_t[]){1, 0, 0, 1}), CVEC(EMILY_C128, double, 1, 2, 3, 4),
            t_from(EMILY_C128, 0, NULL, (double[]){0, 0}), EMILY_DTYPE_AUTO);
    EXPECT_T(r, EMILY_C128, double, 1, 2, 0, 0, 0, 0, 3, 4);
}

TEST(select_of_128_bit_elements_and_views) {
    emily_tensor *p = VEC(EMILY_U8, uint8_t, 1, 0, 1);
    emily_tensor *t = CVEC(EMILY_C128, double, 1, -1, 2, -2, 3, -3);
    emily_tensor *f = t_from(EMILY_C128, 0, NULL, (double[]){0, 0});
    emily_tensor *r = NULL;
    CHECK_OK(emily_select(p, t, f, EMILY_DTYPE_AUTO, &r));
    EXPECT_T(r, EMILY_C128, double, 1, -1, 0, 0, 3, -3);
    /* reversed predicate and branch views */
    emily_tensor *prev = NULL, *trev = NULL;
    CHECK_OK(emi_tensor_view(p, 1, (int64_t[]){3}, (int64_t[]){-1}, 2, &prev));
    CHECK_OK(emi_tensor_view(t, 1, (int64_t[]){3}, (int64_t[]){-1}, 2, &trev));
    r = NULL;
    CHECK_OK(emily_select(prev, trev, f, EMILY_DTYPE_AUTO, &r));
    EXPECT_T(r, EMILY_C128, double, 3, -3, 0, 0, 1, -1);
    RELEASE(prev, trev, p, t, f);
}

TEST(select_large_threaded) {
    const int64_t n = 100003;
    uint8_t *pd = malloc((size_t)n);
    int32_t *x = malloc(sizeof(int32_t) * (size_t)n), *got = malloc(sizeof(int32_t) * (size_t)n);
    if (!ALLOCATED(pd, x, got)) return;
    for (int64_t i = 0; i < n; i++) {
        pd[i] = (uint8_t)(i % 3 == 0);
        x[i] = (int32_t)i;
    }
    emily_tensor *p = t_from(EMILY_U8, 1, &n, pd), *t = t_from(EMILY_S32, 1, &n, x);
    emily_tensor *f = SCALAR(EMILY_S32, int32_t, -1), *r = NULL;
    CHECK_OK(emily_select(p, t, f, EMILY_DTYPE_AUTO, &r));
    CHECK_OK(emily_to_binary(r, got, sizeof(int32_t) * (size_t)n));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) bad += got[i] != (i % 3 == 0 ? (int32_t)i : -1);
    CHECK(bad == 0);
    RELEASE(r, p, t, f);
    free(pd);
    free(x);
    free(got);
}

TEST(select_zero_size) {
    emily_tensor *p = NULL, *r = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_U8, 2, (int64_t[]){3, 0}, &p));
    emily_tensor *t = SCALAR(EMILY_F32, float, 1), *f = SCALAR(EMILY_F32, float, 2);
    CHECK_OK(emily_select(p, t, f, EMILY_DTYPE_AUTO, &r));
    CHECK(r && t_shape_is(r, 2, (int64_t[]){3, 0}));
    RELEASE(r, p, t, f);
}

/* select and clip take three tensors, an output type and an output
 * pointer: each tensor NULL in turn must be an argument error naming it
 * (names[i] is its name in the messages), as must a NULL output pointer.
 * a, b, c: valid arguments for the other places. */
typedef emily_status three_tensor_op(const emily_tensor *, const emily_tensor *, const emily_tensor *, emily_dtype,
                                     emily_tensor **);
static void check_missing_args(three_tensor_op *op, const emily_tensor *a, const emily_tensor *b, const emily_tensor *c,
                               const char *const names[3]) {
    for (int i = 0; i < 3; i++) {
        const emily_tensor *x[3] = {a, b, c};
        x[i] = NULL;
        char needle[64];
        snprintf(needle, sizeof needle, "%s is NULL", names[i]);
        emily_tensor *r = NULL;
        CHECK_ERR(op(x[0], x[1], x[2], EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, needle);
        CHECK(r == NULL);
    }
    CHECK_ERR(op(a, b, c, EMILY_DTYPE_AUTO, NULL), EMILY_ERR_ARGUMENT, "output pointer");
}

TEST(select_errors) {
    emily_tensor *p = VEC(EMILY_U8, uint8_t, 1, 0, 1), *t = VEC(EMILY_F32, float, 1, 2, 3);
    emily_tensor *wide = t_from(EMILY_F32, 2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6});
    emily_tensor *two = VEC(EMILY_F32, float, 1, 2), *r = NULL;
    check_missing_args(emily_select, p, t, t, (const char *[]){"pred", "on_true", "on_false"});
    CHECK_ERR(emily_select(p, wide, t, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "on_true of shape {2, 3}");
    CHECK_ERR(emily_select(p, t, two, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "on_false");
    CHECK_ERR(emily_select(p, t, t, (emily_dtype)55, &r), EMILY_ERR_TYPE, "output type");
    CHECK(r == NULL);
    RELEASE(p, t, wide, two);
}

TEST(clip_like_nx) {
    EXPECT_T(
        clip(VEC(EMILY_F32, float, -5, 0.5f, 9, NAN, -0.0f), SCALAR(EMILY_F32, float, 0), SCALAR(EMILY_F32, float, 4)),
        EMILY_F32, float, 0, 0.5f, 4, 0, 0.0f);
    /* a NaN bound: x > NaN is false (min chosen), then NaN < max is false */
    EXPECT_T(clip(VEC(EMILY_F64, double, 1, 2), SCALAR(EMILY_F64, double, NAN), SCALAR(EMILY_F64, double, 5)),
             EMILY_F64, double, 5, 5);
    EXPECT_T(
        clip(VEC(EMILY_S32, int32_t, -100, 5, 100), SCALAR(EMILY_S32, int32_t, -10), SCALAR(EMILY_S32, int32_t, 10)),
        EMILY_S32, int32_t, -10, 5, 10);
    /* mixed types merge: s32 tensor with f32 bounds is f32 */
    EXPECT_T(clip(VEC(EMILY_S32, int32_t, 16777217, 1), SCALAR(EMILY_F32, float, 0), SCALAR(EMILY_F32, float, 1e9f)),
             EMILY_F32, float, 16777216.0f, 1.0f);
    EXPECT_T(clip(VEC(EMILY_U8, uint8_t, 0, 128, 255), SCALAR(EMILY_U8, uint8_t, 10), SCALAR(EMILY_U8, uint8_t, 200)),
             EMILY_U8, uint8_t, 10, 128, 200);
    EXPECT_T(clip(VEC(EMILY_BF16, uint16_t, 0x4000, 0xc000), SCALAR(EMILY_BF16, uint16_t, 0xbf80),
                  SCALAR(EMILY_BF16, uint16_t, 0x3f80)),
             EMILY_BF16, uint16_t, 0x3f80, 0xbf80);
}

TEST(clip_errors) {
    emily_tensor *t = VEC(EMILY_F32, float, 1, 2), *s = SCALAR(EMILY_F32, float, 0);
    emily_tensor *c = CVEC(EMILY_C64, float, 1, 2), *cs = t_from(EMILY_C64, 0, NULL, (float[]){0, 0}), *r = NULL;
    check_missing_args(emily_clip, t, s, s, (const char *[]){"tensor", "min", "max"});
    CHECK_ERR(emily_clip(t, t, s, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "min must be a scalar");
    CHECK_ERR(emily_clip(t, s, t, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "max must be a scalar");
    CHECK_ERR(emily_clip(c, cs, cs, EMILY_DTYPE_AUTO, &r), EMILY_ERR_TYPE, "complex");
    CHECK_ERR(emily_clip(t, s, s, EMILY_C64, &r), EMILY_ERR_TYPE, "output type");
    CHECK(r == NULL);
    RELEASE(t, s, c, cs);
}

/* Every predicate type with every pair of branch types, and clip over
 * every triple, with raw edge bit patterns: the output type is Nx's merge
 * and nothing trips the sanitizers or leaks. */
TEST(all_dtype_combinations) {
    static const uint8_t pat[8] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0xfe, 0x3c, 0x55};
    unsigned char bytes[10 * 16]; /* room for 4 + 4 + 1 + 1 elements of 16 bytes */
    for (int i = 0; i < 10 * 16; i++) bytes[i] = pat[(i * 3 + i / 16) % 8];
    int bad = 0;
    for (int tp = 0; tp < EMILY_DTYPE_COUNT; tp++)
        for (int tt = 0; tt < EMILY_DTYPE_COUNT; tt++)
            for (int tf = 0; tf < EMILY_DTYPE_COUNT; tf++) {
                emily_tensor *p = t_from((emily_dtype)tp, 1, (int64_t[]){4}, bytes);
                emily_tensor *t = t_from((emily_dtype)tt, 1, (int64_t[]){4}, bytes + 64 + 8);
                emily_tensor *f = t_from((emily_dtype)tf, 0, NULL, bytes + 128);
                emily_tensor *r = NULL;
                emily_dtype m = emily_type_merge((emily_dtype)tt, (emily_dtype)tf);
                if (emily_select(p, t, f, EMILY_DTYPE_AUTO, &r) || emily_tensor_dtype(r) != m) bad++;
                emily_tensor_release(r);
                r = NULL;
                emily_tensor *lo = t_from((emily_dtype)tt, 0, NULL, bytes + 144);
                emily_dtype cm = emily_type_merge((emily_dtype)tp, emily_type_merge((emily_dtype)tt, (emily_dtype)tf));
                emily_status s = emily_clip(p, lo, f, EMILY_DTYPE_AUTO, &r);
                if (emily_dtype_is_complex(cm) ? s != EMILY_ERR_TYPE : (s || emily_tensor_dtype(r) != cm)) bad++;
                RELEASE(r, lo, p, t, f);
            }
    CHECK(bad == 0);
}

/* select's shape is checked against Nx's template before the work: a
 * scalar predicate lets two small branches broadcast to a huge result
 * (here {2^20, 1} and {1, 2^20}: 2^40 elements). */
TEST(select_checks_the_template_before_the_work) {
    int64_t column[2] = {(int64_t)1 << 20, 1}, row[2] = {1, (int64_t)1 << 20}, two[1] = {2};
    emily_tensor *p = SCALAR(EMILY_U8, uint8_t, 1), *t = t_zero_view(EMILY_F32, 2, column),
                 *f = t_zero_view(EMILY_F32, 2, row);
    emily_value args[3] = {v_tensor(p), v_tensor(t), v_tensor(f)}, tmpl = v_tmpl(EMILY_F32, 1, two);
    CHECK_TEMPLATE_FIRST("select", &tmpl, args, 3, "select: output 0 is f32{1048576, 1048576} but Nx expects f32{2}");
    RELEASE(p, t, f);
}

RUN_TESTS("select", CASE(select_predicates_of_every_kind), CASE(select_types_and_broadcasting),
          CASE(select_of_128_bit_elements_and_views), CASE(select_large_threaded), CASE(select_zero_size),
          CASE(select_errors), CASE(clip_like_nx), CASE(clip_errors), CASE(all_dtype_combinations),
          CASE(select_checks_the_template_before_the_work))
