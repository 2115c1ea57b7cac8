/* Creation: constant, iota, eye (values with Nx's number -> dtype rules,
 * shapes, parallel sizes, errors) and their Nx callbacks. */
#include <stdlib.h>
#include "harness.h"

/* Reads the whole tensor into a malloc'd buffer (caller frees). */
static void *bytes_of(const emily_tensor *t) {
    size_t n = emily_tensor_nbytes(t);
    void *p = malloc(n ? n : 1);
    if (p && emily_to_binary(t, p, n)) {
        free(p);
        return NULL;
    }
    return p;
}

static emily_tensor *constant(emily_dtype dt, int rank, const int64_t *shape, emily_scalar v) {
    emily_tensor *t = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, dt, rank, shape, v, &t));
    return t;
}

static uint64_t bits_of_scalar(emily_dtype dt, emily_scalar v) {
    emily_tensor *t = constant(dt, 0, NULL, v);
    uint64_t b = 0;
    if (t) CHECK_OK(emily_to_binary(t, &b, emily_dtype_size(dt)));
    emily_tensor_release(t);
    return b;
}

TEST(constant_integers_wrap_and_convert) {
    CHECK(bits_of_scalar(EMILY_U8, emily_scalar_int(300)) == 44);
    CHECK(bits_of_scalar(EMILY_U8, emily_scalar_int(-1)) == 255);
    CHECK(bits_of_scalar(EMILY_S8, emily_scalar_int(255)) == 0xff);
    CHECK(bits_of_scalar(EMILY_U64, emily_scalar_int(-1)) == UINT64_MAX);
    emily_scalar big = {.kind = EMILY_SCALAR_UINT, .u = UINT64_MAX};
    CHECK(bits_of_scalar(EMILY_U64, big) == UINT64_MAX);
    CHECK(bits_of_scalar(EMILY_S64, big) == UINT64_MAX); /* low bits: -1 */
    float f;
    uint32_t fb = (uint32_t)bits_of_scalar(EMILY_F32, big);
    memcpy(&f, &fb, 4);
    CHECK(f == 18446744073709551616.0f);
    /* f16 rounds 2049 to even, bf16 truncates 257 */
    CHECK(bits_of_scalar(EMILY_F16, emily_scalar_int(2049)) == emily_f64_to_f16(2048.0));
    CHECK(bits_of_scalar(EMILY_BF16, emily_scalar_int(257)) == 0x4380); /* 256 */
    CHECK(bits_of_scalar(EMILY_F64, emily_scalar_int(-7)) == 0xc01c000000000000ull);
}

TEST(constant_floats_follow_nx) {
    /* into integers: truncation, NaN -> 0, infinities saturate */
    CHECK(bits_of_scalar(EMILY_S32, emily_scalar_float(-2.9)) == (uint32_t)-2);
    CHECK(bits_of_scalar(EMILY_U8, emily_scalar_float(NAN)) == 0);
    CHECK(bits_of_scalar(EMILY_S16, emily_scalar_float(INFINITY)) == 0x7fff);
    CHECK(bits_of_scalar(EMILY_S16, emily_scalar_float(-INFINITY)) == 0x8000);
    CHECK(bits_of_scalar(EMILY_U32, emily_scalar_float(-INFINITY)) == 0);
    /* f32 overflow is infinity, -0.0 keeps its sign */
    CHECK(bits_of_scalar(EMILY_F32, emily_scalar_float(1e39)) == 0x7f800000u);
    CHECK(bits_of_scalar(EMILY_F32, emily_scalar_float(-0.0)) == 0x80000000u);
    CHECK(bits_of_scalar(EMILY_F32, emily_scalar_float(NAN)) == 0x7fc00000u);
    /* bf16: round to f32, keep the top half */
    CHECK(bits_of_scalar(EMILY_BF16, emily_scalar_float(65504.0)) == 0x477f); /* 65280 */
    CHECK(bits_of_scalar(EMILY_BF16, emily_scalar_float(1e39)) == 0x7f80);
    CHECK(bits_of_scalar(EMILY_BF16, emily_scalar_float(NAN)) == 0x7fc0);
    /* f16: below the smallest subnormal is zero, above the max is inf */
    CHECK(bits_of_scalar(EMILY_F16, emily_scalar_float(1e-40)) == 0);
    CHECK(bits_of_scalar(EMILY_F16, emily_scalar_float(1e-6)) == 0x0011);
    CHECK(bits_of_scalar(EMILY_F16, emily_scalar_float(65520.0)) == 0x7c00);
    CHECK(bits_of_scalar(EMILY_F16, emily_scalar_float(-INFINITY)) == 0xfc00);
}

TEST(constant_complex) {
    emily_tensor *t = constant(EMILY_C64, 0, NULL, emily_scalar_complex(1.0, -2.0));
    float c[2] = {0};
    CHECK_OK(emily_to_binary(t, c, 8));
    CHECK(c[0] == 1.0f && c[1] == -2.0f);
    emily_tensor_release(t);
    t = constant(EMILY_C128, 0, NULL, emily_scalar_float(-0.0));
    double z[2] = {1, 1};
    CHECK_OK(emily_to_binary(t, z, 16));
    CHECK(z[0] == 0.0 && signbit(z[0]) && z[1] == 0.0 && !signbit(z[1]));
    emily_tensor_release(t);
    /* a complex into a real type takes the real part, as as_type does */
    CHECK(bits_of_scalar(EMILY_S8, emily_scalar_complex(-3.7, 9.0)) == 0xfd);
}

TEST(constant_shapes) {
    int64_t shape[3] = {3, 4, 5};
    emily_tensor *t = constant(EMILY_S16, 3, shape, emily_scalar_int(-5));
    CHECK(t_shape_is(t, 3, shape));
    int16_t *v = bytes_of(t);
    bool all = v != NULL;
    for (int i = 0; v && i < 60; i++) all = all && v[i] == -5;
    CHECK(all);
    free(v);
    emily_tensor_release(t);
    int64_t zero[2] = {4, 0};
    t = constant(EMILY_C128, 2, zero, emily_scalar_int(1));
    CHECK(emily_tensor_size(t) == 0 && t_shape_is(t, 2, zero));
    emily_tensor_release(t);
    /* sizes that take the parallel paths (zero and non-zero patterns) */
    int64_t big[1] = {300001};
    t = constant(EMILY_F32, 1, big, emily_scalar_float(1.5));
    float *f = bytes_of(t);
    all = f != NULL;
    for (int64_t i = 0; f && i < big[0]; i++) all = all && f[i] == 1.5f;
    CHECK(all);
    free(f);
    emily_tensor_release(t);
    t = constant(EMILY_C128, 1, big, emily_scalar_int(0));
    double *d = bytes_of(t);
    all = d != NULL;
    for (int64_t i = 0; d && i < 2 * big[0]; i++) all = all && d[i] == 0.0 && !signbit(d[i]);
    CHECK(all);
    free(d);
    emily_tensor_release(t);
}

TEST(constant_bad_input) {
    emily_tensor *t = NULL;
    int64_t neg[2] = {2, -1};
    CHECK_ERR(emily_constant(EMILY_CPU, EMILY_F32, 0, NULL, emily_scalar_int(0), NULL), EMILY_ERR_ARGUMENT,
              "constant: output pointer is NULL");
    CHECK_ERR(emily_constant(EMILY_CPU, (emily_dtype)77, 0, NULL, emily_scalar_int(0), &t), EMILY_ERR_TYPE,
              "constant: invalid type 77");
    CHECK_ERR(emily_constant(EMILY_CPU, EMILY_DTYPE_AUTO, 0, NULL, emily_scalar_int(0), &t), EMILY_ERR_TYPE,
              "invalid type");
    CHECK_ERR(emily_constant(EMILY_CPU, EMILY_F32, 2, neg, emily_scalar_int(0), &t), EMILY_ERR_SHAPE,
              "negative dimension in shape {2, -1}");
    CHECK_ERR(emily_constant(EMILY_CPU, EMILY_F32, 2, NULL, emily_scalar_int(0), &t), EMILY_ERR_ARGUMENT,
              "shape is NULL");
    CHECK_ERR(emily_constant(EMILY_CPU, EMILY_F32, -1, NULL, emily_scalar_int(0), &t), EMILY_ERR_SHAPE,
              "negative rank");
    emily_scalar bad = {.kind = (emily_scalar_kind)9};
    CHECK_ERR(emily_constant(EMILY_CPU, EMILY_F32, 0, NULL, bad, &t), EMILY_ERR_ARGUMENT, "invalid scalar kind");
    emily_device far = {EMILY_DEVICE_CUDA, 99};
    CHECK(emily_constant(far, EMILY_F32, 0, NULL, emily_scalar_int(0), &t) == EMILY_ERR_DEVICE);
    int64_t huge[2] = {INT64_MAX / 2, 8};
    CHECK(emily_constant(EMILY_CPU, EMILY_F32, 2, huge, emily_scalar_int(0), &t) == EMILY_ERR_SHAPE);
    CHECK(t == NULL);
}

TEST(iota_flat_and_axes) {
    int64_t shape[2] = {2, 3};
    emily_tensor *t = NULL;
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_F32, 2, shape, -1, &t));
    float *f = bytes_of(t);
    for (int i = 0; f && i < 6; i++) CHECK(f[i] == (float)i);
    free(f);
    emily_tensor_release(t);
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_S64, 2, shape, 0, &t));
    int64_t *a = bytes_of(t);
    int64_t want0[6] = {0, 0, 0, 1, 1, 1};
    CHECK(a && memcmp(a, want0, sizeof want0) == 0);
    free(a);
    emily_tensor_release(t);
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_C64, 2, shape, 1, &t));
    float *c = bytes_of(t);
    float want1[12] = {0, 0, 1, 0, 2, 0, 0, 0, 1, 0, 2, 0};
    CHECK(c && memcmp(c, want1, sizeof want1) == 0);
    free(c);
    emily_tensor_release(t);
    /* rank 0 is a single 0; zero-size shapes are empty */
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_U16, 0, NULL, -1, &t));
    CHECK(emily_tensor_size(t) == 1 && t_get(t, 0) == 0);
    emily_tensor_release(t);
    int64_t empty[2] = {0, 5};
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_F64, 2, empty, 1, &t));
    CHECK(emily_tensor_size(t) == 0);
    emily_tensor_release(t);
}

TEST(iota_values_convert_like_nx) {
    int64_t n[1] = {70000};
    emily_tensor *t = NULL;
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_U8, 1, n, 0, &t)); /* wraps at 256 */
    CHECK(t_get(t, 256) == 0 && t_get(t, 300) == 44 && t_get(t, 69999) == 69999 % 256);
    emily_tensor_release(t);
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_BF16, 1, n, 0, &t)); /* truncates */
    CHECK(t_get(t, 257) == 256 && t_get(t, 255) == 255);
    emily_tensor_release(t);
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_F16, 1, n, 0, &t)); /* rounds to even, then inf */
    CHECK(t_get(t, 2049) == 2048 && t_get(t, 2051) == 2052 && isinf(t_get(t, 69999)));
    emily_tensor_release(t);
    int64_t s3[3] = {50, 40, 30};
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_S32, 3, s3, 1, &t));
    CHECK(t_get(t, 0) == 0 && t_get(t, 30) == 1 && t_get(t, 1199) == 39 && t_get(t, 1200) == 0 &&
          t_get(t, 59999) == 39);
    emily_tensor_release(t);
}

TEST(iota_bad_input) {
    int64_t shape[2] = {2, 3};
    emily_tensor *t = NULL;
    CHECK_ERR(emily_iota(EMILY_CPU, EMILY_F32, 2, shape, 2, &t), EMILY_ERR_AXIS,
              "iota: axis 2 out of range for a shape of rank 2");
    CHECK_ERR(emily_iota(EMILY_CPU, EMILY_F32, 2, shape, 0, NULL), EMILY_ERR_ARGUMENT, "iota");
    CHECK_ERR(emily_iota(EMILY_CPU, (emily_dtype)20, 2, shape, 0, &t), EMILY_ERR_TYPE, "iota");
    CHECK(t == NULL);
}

TEST(eye_diagonals) {
    int64_t sq[2] = {3, 3};
    emily_tensor *t = NULL;
    CHECK_OK(emily_eye(EMILY_CPU, EMILY_F32, 2, sq, &t));
    for (int i = 0; i < 9; i++) CHECK(t_get(t, i) == (i % 4 == 0 ? 1.0 : 0.0));
    emily_tensor_release(t);
    int64_t rect[3] = {2, 2, 3}; /* batch of two 2x3 */
    CHECK_OK(emily_eye(EMILY_CPU, EMILY_S8, 3, rect, &t));
    int8_t want[12] = {1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0};
    CHECK(t_holds(t, EMILY_S8, want, sizeof want));
    emily_tensor_release(t);
    int64_t tall[2] = {3, 2};
    CHECK_OK(emily_eye(EMILY_CPU, EMILY_C128, 2, tall, &t));
    double wantz[12] = {1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0};
    CHECK(t_holds(t, EMILY_C128, wantz, sizeof wantz));
    emily_tensor_release(t);
    int64_t bf[2] = {2, 2};
    CHECK_OK(emily_eye(EMILY_CPU, EMILY_BF16, 2, bf, &t));
    uint16_t wanth[4] = {0x3f80, 0, 0, 0x3f80};
    CHECK(t_holds(t, EMILY_BF16, wanth, sizeof wanth));
    emily_tensor_release(t);
    int64_t empty[3] = {2, 0, 3};
    CHECK_OK(emily_eye(EMILY_CPU, EMILY_F64, 3, empty, &t));
    CHECK(emily_tensor_size(t) == 0);
    emily_tensor_release(t);
}

TEST(eye_bad_input) {
    int64_t one[1] = {3};
    emily_tensor *t = NULL;
    CHECK_ERR(emily_eye(EMILY_CPU, EMILY_F32, 1, one, &t), EMILY_ERR_SHAPE,
              "eye: expects a shape with at least 2 dimensions, got {3}");
    CHECK_ERR(emily_eye(EMILY_CPU, EMILY_F32, 0, NULL, &t), EMILY_ERR_SHAPE, "got {}");
    CHECK_ERR(emily_eye(EMILY_CPU, EMILY_F32, 2, NULL, &t), EMILY_ERR_ARGUMENT, "shape is NULL");
    CHECK(t == NULL);
}

/* The Nx callbacks decode their arguments and take type and shape from
 * the template. */
static emily_value tmpl(emily_dtype dt, int rank, const int64_t *shape) {
    emily_value v = {.kind = EMILY_V_TEMPLATE, .dtype = dt, .rank = rank, .shape = shape};
    return v;
}

TEST(callbacks) {
    int64_t shape[2] = {2, 2};
    emily_value out = tmpl(EMILY_F64, 2, shape);
    emily_value opts = {.kind = EMILY_V_LIST, .n = 0};
    emily_value args[2] = {{.kind = EMILY_V_ATOM, .str = "neg_infinity"}, opts};
    emily_dispatch_result r = {0};
    for (int mode = 0; mode < 2; mode++) {
        CHECK_OK(emily_dispatch("constant", EMILY_CPU, &out, args, 2, (emily_dispatch_mode)mode, &r));
        CHECK(r.n == 1 && t_shape_is(r.tensors[0], 2, shape) && t_get(r.tensors[0], 3) == -INFINITY);
        emily_dispatch_result_release(&r);
    }
    emily_value bad[2] = {{.kind = EMILY_V_ATOM, .str = "foo"}, opts};
    CHECK_ERR(emily_dispatch("constant", EMILY_CPU, &out, bad, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "constant: the constant: unknown number atom :foo");
    emily_value iargs[2] = {{.kind = EMILY_V_INT, .i = 1}, opts};
    CHECK_OK(emily_dispatch("iota", EMILY_CPU, &out, iargs, 2, EMILY_DISPATCH_INFER, &r));
    CHECK(r.n == 1 && t_get(r.tensors[0], 1) == 1 && t_get(r.tensors[0], 2) == 0);
    emily_dispatch_result_release(&r);
    iargs[0].i = 5;
    CHECK_ERR(emily_dispatch("iota", EMILY_CPU, &out, iargs, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_AXIS,
              "iota: axis 5 out of range");
    iargs[0].kind = EMILY_V_NIL;
    CHECK_OK(emily_dispatch("iota", EMILY_CPU, &out, iargs, 2, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 1 && t_get(r.tensors[0], 3) == 3);
    emily_dispatch_result_release(&r);
    CHECK_OK(emily_dispatch("eye", EMILY_CPU, &out, &opts, 1, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 1 && t_get(r.tensors[0], 0) == 1 && t_get(r.tensors[0], 1) == 0);
    emily_dispatch_result_release(&r);
    CHECK_ERR(emily_dispatch("eye", EMILY_CPU, &out, args, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "eye: expected 0 to 1 arguments, got 2");
    CHECK_ERR(emily_dispatch("constant", EMILY_CPU, &out, NULL, 0, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "constant: expected 1 to 2 arguments, got 0");
}

RUN_TESTS("creation", CASE(constant_integers_wrap_and_convert), CASE(constant_floats_follow_nx), CASE(constant_complex),
          CASE(constant_shapes), CASE(constant_bad_input), CASE(iota_flat_and_axes), CASE(iota_values_convert_like_nx),
          CASE(iota_bad_input), CASE(eye_diagonals), CASE(eye_bad_input), CASE(callbacks))
