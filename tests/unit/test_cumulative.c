/* Cumulative family: every op along every axis of a rank-3 tensor in
 * both directions against a reference written here, integer wrap, NaN
 * and tied zeros in max/min (Nx's scan order), f32 sums accumulated in
 * f64 (contiguous rows, the chunked long-row path, the strided inner
 * path), strided views, rank 0, zero-size tensors and bad arguments. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"

static double ref_op(emily_cumulative_op op, double acc, double x) {
    switch (op) {
    case EMILY_CUMULATIVE_SUM: return acc + x;
    case EMILY_CUMULATIVE_PRODUCT: return acc * x;
    case EMILY_CUMULATIVE_MAX: return x > acc ? x : acc;
    default: return x < acc ? x : acc;
    }
}

TEST(every_axis_both_directions) {
    int64_t shape[3] = {2, 3, 4};
    int32_t x[24];
    for (int i = 0; i < 24; i++) x[i] = (i * 7) % 5 - 2;
    emily_tensor *t = t_from(EMILY_S32, 3, shape, x);
    for (int op = 0; op < 4; op++)
        for (int axis = -3; axis < 3; axis++)
            for (int rev = 0; rev < 2; rev++) {
                emily_tensor *r = NULL;
                CHECK_OK(emily_cumulative((emily_cumulative_op)op, t, axis, rev, &r));
                if (!r) continue;
                int ax = axis < 0 ? axis + 3 : axis;
                int64_t st[3] = {12, 4, 1};
                for (int64_t i = 0; i < 24; i++) {
                    int64_t pos = (i / st[ax]) % shape[ax], base = i - pos * st[ax];
                    double acc = 0;
                    bool first = true;
                    for (int64_t k = rev ? shape[ax] - 1 : 0; rev ? k >= pos : k <= pos; k += rev ? -1 : 1) {
                        double v = x[base + k * st[ax]];
                        acc = first ? v : ref_op((emily_cumulative_op)op, acc, v);
                        first = false;
                    }
                    if (t_get(r, i) != acc) {
                        fprintf(stderr, "  op %d axis %d rev %d at %lld: got %g want %g\n", op, axis, rev, (long long)i,
                                t_get(r, i), acc);
                        CHECK(t_get(r, i) == acc);
                    }
                }
                emily_tensor_release(r);
            }
    emily_tensor_release(t);
}

TEST(integer_wrap) {
    int64_t n = 3;
    uint8_t u[3] = {200, 100, 3};
    emily_tensor *t = t_from(EMILY_U8, 1, &n, u), *r = NULL;
    CHECK_OK(emily_cumulative_sum(t, 0, false, &r));
    if (r) CHECK(t_get(r, 1) == 44 && t_get(r, 2) == 47);
    emily_tensor_release(r);
    CHECK_OK(emily_cumulative_product(t, 0, false, &r));
    if (r) CHECK(t_get(r, 1) == (200 * 100) % 256);
    emily_tensor_release(r);
    emily_tensor_release(t);
    int64_t m[2] = {INT64_MAX, 1};
    int64_t n2 = 2;
    t = t_from(EMILY_S64, 1, &n2, m);
    CHECK_OK(emily_cumulative_sum(t, 0, false, &r));
    if (r) {
        int64_t got[2];
        CHECK_OK(emily_to_binary(r, got, sizeof got));
        CHECK(got[1] == INT64_MIN);
    }
    emily_tensor_release(r);
    emily_tensor_release(t);
}

TEST(float_edges) {
    int64_t n = 4;
    float x[4] = {1.0f, NAN, 5.0f, -INFINITY};
    emily_tensor *t = t_from(EMILY_F32, 1, &n, x), *r = NULL;
    CHECK_OK(emily_cumulative_max(t, 0, false, &r));
    if (r) CHECK(t_get(r, 0) == 1 && isnan(t_get(r, 1)) && isnan(t_get(r, 3)));
    emily_tensor_release(r);
    CHECK_OK(emily_cumulative_min(t, 0, true, &r));
    if (r) CHECK(isnan(t_get(r, 0)) && isnan(t_get(r, 1)) && t_get(r, 2) == -INFINITY);
    emily_tensor_release(r);
    CHECK_OK(emily_cumulative_sum(t, 0, false, &r));
    if (r) CHECK(t_get(r, 0) == 1 && isnan(t_get(r, 3)));
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* tied zeros: Nx's scan computes max(x1, x0) for the pair, keeping x1 */
    int64_t n2 = 2;
    double z[2] = {0.0, -0.0};
    t = t_from(EMILY_F64, 1, &n2, z);
    CHECK_OK(emily_cumulative_max(t, 0, false, &r));
    if (r) CHECK(!signbit(t_get(r, 0)) && signbit(t_get(r, 1)));
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* f16 keeps Nx's per-step rounding */
    uint16_t h[3] = {0x3c00, 0x1400, 0x1400}; /* 1, 2^-10, 2^-10 */
    int64_t n3 = 3;
    t = t_from(EMILY_F16, 1, &n3, h);
    CHECK_OK(emily_cumulative_sum(t, 0, false, &r));
    if (r) CHECK(t_get(r, 0) == 1.0 && t_get(r, 2) == 1.001953125);
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* complex product */
    float c[4] = {1, 1, 1, -1};
    t = t_from(EMILY_C64, 1, &n2, c);
    CHECK_OK(emily_cumulative_product(t, 0, false, &r));
    CHECK(t_get(r, 1) == 2.0 && t_get_im(r, 1) == 0.0);
    emily_tensor_release(r);
    emily_tensor_release(t);
}

/* f32 sums are accumulated in f64: compare with an f64 reference. */
static void check_f32_sum(int64_t rows, int64_t n, int axis, bool rev) {
    int64_t shape[2] = {rows, n};
    int64_t size = rows * n;
    float *x = malloc(sizeof(float) * (size_t)size);
    float *got = malloc(sizeof(float) * (size_t)size);
    if (!ALLOCATED(x, got)) return;
    uint32_t s = 12345;
    for (int64_t i = 0; i < size; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) % 1000) / 997.0f - 0.4f;
    }
    emily_tensor *t = t_from(EMILY_F32, 2, shape, x), *r = NULL;
    CHECK_OK(emily_cumulative_sum(t, axis, rev, &r));
    if (r) {
        CHECK_OK(emily_to_binary(r, got, sizeof(float) * (size_t)size));
        int64_t len = axis == 1 ? n : rows, cnt = axis == 1 ? rows : n;
        int64_t step = axis == 1 ? 1 : n, lane = axis == 1 ? n : 1;
        int bad = 0;
        for (int64_t c = 0; c < cnt && bad < 3; c++) {
            double acc = 0;
            for (int64_t k = 0; k < len; k++) {
                int64_t kk = rev ? len - 1 - k : k;
                int64_t i = c * lane + kk * step;
                acc += x[i];
                double tol = 4 * fabs((double)nextafterf((float)acc, INFINITY) - (float)acc) + 1e-6 * k * 1e-3;
                if (fabs(got[i] - acc) > tol) {
                    fprintf(stderr, "  f32 sum rows %lld n %lld axis %d rev %d at %lld: got %.9g want %.9g\n",
                            (long long)rows, (long long)n, axis, rev, (long long)i, got[i], acc);
                    bad++;
                    CHECK(0);
                    break;
                }
            }
        }
    }
    emily_tensor_release(r);
    emily_tensor_release(t);
    free(x);
    free(got);
}

TEST(f32_sum_paths) {
    check_f32_sum(3, 1000, 1, false);
    check_f32_sum(3, 1000, 1, true);
    check_f32_sum(1, 200000, 1, false); /* chunked long row */
    check_f32_sum(1, 200000, 1, true);
    check_f32_sum(300, 700, 0, false); /* inner blocks */
    check_f32_sum(300, 700, 0, true);
}

TEST(strided_rank0_empty) {
    int64_t shape[2] = {3, 4};
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = i - 5.5;
    emily_tensor *t = t_from(EMILY_F64, 2, shape, x), *tt = NULL, *c = NULL, *a = NULL, *b = NULL;
    int perm[2] = {1, 0};
    CHECK_OK(emily_transpose(t, perm, &tt));
    CHECK_OK(emily_contiguous(tt, &c));
    CHECK_OK(emily_cumulative_product(tt, 1, true, &a));
    CHECK_OK(emily_cumulative_product(c, 1, true, &b));
    if (a && b)
        for (int i = 0; i < 12; i++) CHECK(t_get(a, i) == t_get(b, i));
    RELEASE(a, b, c, tt, t);
    double s = 3.0;
    emily_tensor *r = NULL;
    t = t_from(EMILY_F64, 0, NULL, &s);
    CHECK_OK(emily_cumulative_sum(t, -1, false, &r));
    if (r) CHECK(emily_tensor_rank(r) == 0 && t_get(r, 0) == 3.0);
    emily_tensor_release(r);
    CHECK_ERR(emily_cumulative_sum(t, 1, false, &r), EMILY_ERR_AXIS, "axis");
    emily_tensor_release(t);
    int64_t zs[2] = {0, 5};
    t = t_from(EMILY_F32, 2, zs, NULL);
    r = NULL;
    CHECK_OK(emily_cumulative_max(t, 1, false, &r));
    if (r) CHECK(emily_tensor_size(r) == 0 && emily_tensor_shape(r)[1] == 5);
    emily_tensor_release(r);
    emily_tensor_release(t);
}

TEST(bad_input) {
    int64_t n = 3;
    float x[3] = {0};
    emily_tensor *t = t_from(EMILY_F32, 1, &n, x), *r = NULL, *c = NULL;
    CHECK_ERR(emily_cumulative_sum(NULL, 0, false, &r), EMILY_ERR_ARGUMENT, "cumulative_sum");
    CHECK_ERR(emily_cumulative_sum(t, 0, false, NULL), EMILY_ERR_ARGUMENT, "cumulative_sum");
    CHECK_ERR(emily_cumulative_min(t, 1, false, &r), EMILY_ERR_AXIS, "cumulative_min");
    CHECK_ERR(emily_cumulative_min(t, -2, false, &r), EMILY_ERR_AXIS, "cumulative_min");
    CHECK_ERR(emily_cumulative((emily_cumulative_op)7, t, 0, false, &r), EMILY_ERR_ARGUMENT, "unknown");
    CHECK_OK(emily_as_type(t, EMILY_C128, &c));
    CHECK_ERR(emily_cumulative_max(c, 0, false, &r), EMILY_ERR_TYPE, "complex");
    CHECK_OK(emily_cumulative_sum(c, 0, false, &r));
    RELEASE(r, c, t);
}

RUN_TESTS("cumulative", CASE(every_axis_both_directions), CASE(integer_wrap), CASE(float_edges), CASE(f32_sum_paths),
          CASE(strided_rank0_empty), CASE(bad_input))
