/* Reductions: sum, product, reduce_max/min, all, any, argmax/argmin and
 * all_close, with Nx's types, NaN rules and wrapping. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

static emily_tensor *f32s(int rank, const int64_t *shape, const float *d) { return t_from(EMILY_F32, rank, shape, d); }

static uint32_t f32_bits(const emily_tensor *t) {
    uint32_t b = 0;
    if (emily_to_binary(t, &b, 4)) return 0xdeadbeef;
    return b;
}

static const int64_t S2x3[2] = {2, 3};

TEST(sum_axes_and_types) {
    emily_tensor *t = t_iota(EMILY_F32, 2, S2x3), *r = NULL;
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_rank(r) == 0 && t_get(r, 0) == 15);
    emily_tensor_release(r);
    int ax0[1] = {0}, ax1[1] = {-1};
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    double w0[3] = {3, 5, 7};
    CHECK(t_equals(r, 3, w0) && emily_tensor_rank(r) == 1);
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 1, ax1, true, EMILY_DTYPE_AUTO, &r));
    int64_t ws[2] = {2, 1};
    double w1[2] = {3, 12};
    CHECK(t_shape_is(r, 2, ws) && t_equals(r, 2, w1));
    emily_tensor_release(r);
    /* axes = []: Nx converts without reducing */
    int none[1] = {0};
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 0, none, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_shape_is(r, 2, S2x3));
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* integer sums aggregate to u32/s32/s64 and wrap */
    uint8_t u[3] = {200, 200, 200};
    int64_t s3[1] = {3};
    emily_tensor *tu = t_from(EMILY_U8, 1, s3, u);
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, tu, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_U32 && t_get(r, 0) == 600);
    emily_tensor_release(r);
    emily_tensor_release(tu);
    int32_t big[2] = {INT32_MAX, 2};
    int64_t s2[1] = {2};
    emily_tensor *ti = t_from(EMILY_S32, 1, s2, big);
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, ti, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == (double)INT32_MIN + 1);
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_PRODUCT, ti, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == -2); /* 2^32 - 2 wraps to -2 */
    emily_tensor_release(r);
    emily_tensor_release(ti);
    uint64_t uu[2] = {UINT64_MAX, 2};
    emily_tensor *t64 = t_from(EMILY_U64, 1, s2, uu);
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t64, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    int64_t got = 0;
    CHECK(emily_tensor_dtype(r) == EMILY_S64);
    CHECK_OK(emily_to_binary(r, &got, 8));
    CHECK(got == 1);
    emily_tensor_release(r);
    emily_tensor_release(t64);
}

TEST(sum_floats_accumulate_wide) {
    /* 2^20 values of 0.1f: an f32 accumulator drifts, the reference
     * (f64, rounded once) does not */
    int64_t n = 1 << 20, shape[1] = {n};
    float *d = malloc(sizeof(float) * (size_t)n);
    double exact = 0;
    for (int64_t i = 0; i < n; i++) {
        d[i] = 0.1f;
        exact += (double)0.1f;
    }
    emily_tensor *t = f32s(1, shape, d), *r = NULL;
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == (double)(float)exact);
    emily_tensor_release(r);
    emily_tensor_release(t);
    free(d);
    /* f16: 0.1 rounded once from the f64 total */
    uint16_t h[4] = {0x2e66, 0x2e66, 0x2e66, 0x2e66}; /* 0.0999755859375 */
    int64_t s4[1] = {4};
    emily_tensor *th = t_from(EMILY_F16, 1, s4, h);
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, th, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_F16);
    CHECK(t_get(r, 0) == emily_f16_to_f32(emily_f64_to_f16(4 * 0.0999755859375)));
    emily_tensor_release(r);
    emily_tensor_release(th);
    /* f64 with infinities: no NaN from the compensation */
    double inf[3] = {1, INFINITY, 2};
    int64_t s3[1] = {3};
    emily_tensor *ti = t_from(EMILY_F64, 1, s3, inf);
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, ti, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == INFINITY);
    emily_tensor_release(r);
    emily_tensor_release(ti);
}

TEST(sum_layouts) {
    /* the same sums through rows, columns and strided/broadcast views */
    int64_t shape[3] = {37, 41, 29};
    emily_tensor *t = t_iota(EMILY_F32, 3, shape), *r = NULL, *tt = NULL;
    int a02[2] = {0, 2}, a1[1] = {1};
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 2, a02, false, EMILY_DTYPE_AUTO, &r));
    /* sum over i, k of (i*41*29 + j*29 + k) */
    bool ok = emily_tensor_size(r) == 41;
    for (int j = 0; ok && j < 41; j++) {
        double want = 0;
        for (int i = 0; i < 37; i++)
            for (int k = 0; k < 29; k++) want += i * 41 * 29 + j * 29 + k;
        ok = t_get(r, j) == (double)(float)want; /* summed exactly, rounded once */
    }
    CHECK(ok);
    emily_tensor_release(r);
    int perm[3] = {2, 1, 0};
    CHECK_OK(emily_transpose(t, perm, &tt));
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, tt, 1, a1, false, EMILY_DTYPE_AUTO, &r));
    /* r[k][i] = sum_j t[i][j][k] */
    ok = emily_tensor_size(r) == 29 * 37;
    for (int k = 0; ok && k < 29; k++)
        for (int i = 0; ok && i < 37; i++) {
            double want = 0;
            for (int j = 0; j < 41; j++) want += i * 41 * 29 + j * 29 + k;
            ok = t_get(r, k * 37 + i) == want;
        }
    CHECK(ok);
    RELEASE(r, tt, t);
    /* a broadcast (zero-stride) input */
    float x[3] = {1, 2, 3};
    int64_t s3[1] = {3}, big[2] = {1000, 3};
    emily_tensor *v = f32s(1, s3, x), *b = NULL;
    CHECK_OK(emily_broadcast(v, 2, big, NULL, &b));
    int ax0[1] = {0};
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, b, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    double w[3] = {1000, 2000, 3000};
    CHECK(t_equals(r, 3, w));
    RELEASE(r, b, v);
    /* big enough for the threaded paths: columns and rows */
    int64_t s2[2] = {600, 700};
    emily_tensor *m = t_iota(EMILY_F32, 2, s2);
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, m, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    ok = true;
    for (int j = 0; ok && j < 700; j++) ok = t_get(r, j) == (double)(float)(600.0 * j + 700.0 * (599.0 * 600 / 2));
    CHECK(ok);
    emily_tensor_release(r);
    int last[1] = {1};
    CHECK_OK(emily_reduce(EMILY_REDUCE_MAX, m, 1, last, false, EMILY_DTYPE_AUTO, &r));
    ok = true;
    for (int i = 0; ok && i < 600; i++) ok = t_get(r, i) == 700.0 * i + 699;
    CHECK(ok);
    emily_tensor_release(r);
    emily_tensor_release(m);
}

TEST(empty_reductions) {
    int64_t z[2] = {0, 3};
    emily_tensor *t = NULL, *r = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, z, &t));
    int ax0[1] = {0};
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    double w0[3] = {0, 0, 0};
    CHECK(t_equals(r, 3, w0));
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_PRODUCT, t, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    double w1[3] = {1, 1, 1};
    CHECK(t_equals(r, 3, w1));
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_ALL, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 1);
    emily_tensor_release(r);
    CHECK_ERR(emily_reduce(EMILY_REDUCE_MAX, t, 1, ax0, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "empty");
    /* nothing to compute when the output is empty too */
    int ax1[1] = {1};
    CHECK_OK(emily_reduce(EMILY_REDUCE_MAX, t, 1, ax1, false, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_size(r) == 0);
    emily_tensor_release(r);
    CHECK_ERR(emily_argreduce(EMILY_ARGMAX, t, -1, false, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "empty");
    emily_tensor_release(t);
}

TEST(max_min_nan_and_zero_sign) {
    float d[5] = {1, NAN, 3, -INFINITY, 2};
    int64_t s5[1] = {5};
    emily_tensor *t = f32s(1, s5, d), *r = NULL;
    CHECK_OK(emily_reduce(EMILY_REDUCE_MAX, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(isnan(t_get(r, 0)));
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MIN, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(isnan(t_get(r, 0)));
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* the first of equal zeros wins, as Erlang's max/min keep the first */
    float z[4] = {-1, -0.0f, 0.0f, -2};
    int64_t s4[1] = {4};
    t = f32s(1, s4, z);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MAX, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(f32_bits(r) == 0x80000000u);
    emily_tensor_release(r);
    emily_tensor_release(t);
    float z2[4] = {3, 0.0f, -0.0f, 1};
    t = f32s(1, s4, z2);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MIN, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(f32_bits(r) == 0x00000000u);
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* integer extremes; f16 keeps its bits */
    int8_t i8[3] = {-128, 127, 0};
    int64_t s3[1] = {3};
    t = t_from(EMILY_S8, 1, s3, i8);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MIN, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_S8 && t_get(r, 0) == -128);
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MAX, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 127);
    emily_tensor_release(r);
    emily_tensor_release(t);
    uint16_t h[3] = {0x3c00, 0x7c00, 0xfc00}; /* 1, inf, -inf */
    t = t_from(EMILY_F16, 1, s3, h);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MIN, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == -INFINITY);
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* complex tensors are not ordered */
    float c[2] = {1, 2};
    int64_t s1[1] = {1};
    t = t_from(EMILY_C64, 1, s1, c);
    CHECK_ERR(emily_reduce(EMILY_REDUCE_MAX, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_TYPE, "c64");
    CHECK_ERR(emily_argreduce(EMILY_ARGMIN, t, 0, false, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_TYPE, "c64");
    emily_tensor_release(t);
}

TEST(all_any_truth) {
    float d[4] = {NAN, -0.0f, 2, 0};
    int64_t s2x2[2] = {2, 2};
    emily_tensor *t = f32s(2, s2x2, d), *r = NULL;
    int ax1[1] = {1}, ax0[1] = {0};
    CHECK_OK(emily_reduce(EMILY_REDUCE_ANY, t, 1, ax1, false, EMILY_DTYPE_AUTO, &r));
    double w[2] = {1, 1};
    CHECK(t_equals(r, 2, w) && emily_tensor_dtype(r) == EMILY_U8);
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_ALL, t, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    double w2[2] = {1, 0};
    CHECK(t_equals(r, 2, w2));
    emily_tensor_release(r);
    CHECK_ERR(emily_reduce(EMILY_REDUCE_ALL, t, 0, NULL, false, EMILY_F32, &r), EMILY_ERR_TYPE, "u8");
    emily_tensor_release(t);
    /* complex numbers compare unequal to 0 in Nx: always true */
    float c[4] = {0, 0, 0, 0};
    int64_t s2[1] = {2};
    t = t_from(EMILY_C64, 1, s2, c);
    CHECK_OK(emily_reduce(EMILY_REDUCE_ALL, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 1);
    emily_tensor_release(r);
    emily_tensor_release(t);
}

TEST(complex_sum_product) {
    float c[4] = {1, 2, 3, -1}; /* (1+2i), (3-i) */
    int64_t s2[1] = {2};
    emily_tensor *t = t_from(EMILY_C64, 1, s2, c), *r = NULL;
    float out[2];
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK_OK(emily_to_binary(r, out, 8));
    CHECK(out[0] == 4 && out[1] == 1);
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_PRODUCT, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK_OK(emily_to_binary(r, out, 8));
    CHECK(out[0] == 5 && out[1] == 5); /* (1+2i)(3-i) = 5+5i */
    emily_tensor_release(r);
    emily_tensor_release(t);
}

/* Order-dependent folds (complex sums, float and complex products) give
 * the same bits whatever the thread count: each output folds in order,
 * past 2^18 elements in fixed chunks combined in order. Rows (the run is
 * reduced) and columns (a leading axis), one chunk and three, and the
 * chunked result equals folding the chunks by hand. */
static emily_tensor *ordered_input(emily_dtype dt, int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    int parts = dt == EMILY_C128 ? 2 : 1;
    double *v = malloc(sizeof(double) * (size_t)(n * parts));
    if (!v) abort();
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < n * parts; i++) {
        xorshift64(&x);
        /* products near 1 stay finite over 600k factors */
        v[i] = dt == EMILY_C128 ? (double)(x >> 11) * 0x1p-53 * 8 - 4
                                : 1.0 + ((double)(x >> 11) * 0x1p-53 - 0.5) * 1e-3;
    }
    emily_tensor *r = NULL;
    if (dt == EMILY_C128) {
        r = t_from(EMILY_C128, rank, shape, v);
    } else {
        emily_tensor *f = t_from(EMILY_F64, rank, shape, v);
        CHECK_OK(emily_as_type(f, dt, &r));
        emily_tensor_release(f);
    }
    free(v);
    return r;
}

TEST(ordered_folds_ignore_thread_count) {
    static const struct {
        int64_t shape[2];
        int axis;
    } cases[] = {{{2, 200003}, 1}, {{2, 600001}, 1}, {{600001, 3}, 0}, {{200003, 2}, 0}};
    static const struct {
        emily_reduce_op op;
        emily_dtype dt;
    } folds[] = {{EMILY_REDUCE_SUM, EMILY_C128},
                 {EMILY_REDUCE_PRODUCT, EMILY_C128},
                 {EMILY_REDUCE_PRODUCT, EMILY_F32},
                 {EMILY_REDUCE_PRODUCT, EMILY_F64}};
    int saved = omp_get_max_threads();
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (size_t f = 0; f < sizeof folds / sizeof *folds; f++) {
            emily_tensor *x = ordered_input(folds[f].dt, 2, cases[c].shape), *r1 = NULL, *r4 = NULL;
            int axes[1] = {cases[c].axis};
            omp_set_num_threads(1);
            CHECK_OK(emily_reduce(folds[f].op, x, 1, axes, false, EMILY_DTYPE_AUTO, &r1));
            omp_set_num_threads(4);
            CHECK_OK(emily_reduce(folds[f].op, x, 1, axes, false, EMILY_DTYPE_AUTO, &r4));
            CHECK(r1 && r4 && t_same_bytes(r1, r4));
            RELEASE(r1, r4, x);
        }
    omp_set_num_threads(saved);
    /* the chunks by hand: sum of [0, 2^18), then the rest, added in order */
    int64_t n = 600001, chunk = (int64_t)1 << 18;
    emily_tensor *x = ordered_input(EMILY_C128, 1, &n), *whole = NULL, *acc = NULL;
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, x, 0, NULL, false, EMILY_DTYPE_AUTO, &whole));
    for (int64_t lo = 0; lo < n; lo += chunk) {
        int64_t start[1] = {lo}, len[1] = {n - lo < chunk ? n - lo : chunk}, st[1] = {1};
        emily_tensor *v = NULL, *part = NULL, *next = NULL;
        CHECK_OK(emily_slice(x, start, len, st, &v));
        CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, v, 0, NULL, false, EMILY_DTYPE_AUTO, &part));
        if (!acc) acc = part;
        else {
            CHECK_OK(emily_binary(EMILY_ADD, acc, part, EMILY_DTYPE_AUTO, &next));
            emily_tensor_release(acc);
            emily_tensor_release(part);
            acc = next;
        }
        emily_tensor_release(v);
    }
    CHECK(whole && acc && t_same_bytes(whole, acc));
    RELEASE(whole, acc, x);
}

/* The index argmax/argmin (op; ties to the last with high) picks over
 * all of t. */
static double arg_all(emily_arg_op op, const emily_tensor *t, bool high) {
    emily_tensor *r = NULL;
    CHECK_OK(emily_argreduce(op, t, -1, false, high, EMILY_DTYPE_AUTO, &r));
    double v = r ? t_get(r, 0) : NAN;
    emily_tensor_release(r);
    return v;
}

TEST(argmax_rules) {
    float d[6] = {1, 3, 3, -1, 3, 0};
    int64_t s6[1] = {6};
    emily_tensor *t = f32s(1, s6, d), *r = NULL;
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, t, -1, false, false, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_S32 && t_get(r, 0) == 1);
    emily_tensor_release(r);
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, t, 0, true, true, EMILY_S64, &r));
    int64_t one[1] = {1};
    CHECK(t_shape_is(r, 1, one) && t_get(r, 0) == 4 && emily_tensor_dtype(r) == EMILY_S64);
    emily_tensor_release(r);
    CHECK_OK(emily_argreduce(EMILY_ARGMIN, t, 0, false, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 3);
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* the last NaN wins whatever the tie break; -0.0 ties 0.0 */
    float n[5] = {NAN, 5, NAN, 7, 1};
    int64_t s5[1] = {5};
    t = f32s(1, s5, n);
    CHECK(arg_all(EMILY_ARGMIN, t, false) == 2);
    emily_tensor_release(t);
    float z[3] = {0.0f, -0.0f, -1};
    int64_t s3[1] = {3};
    t = f32s(1, s3, z);
    CHECK(arg_all(EMILY_ARGMAX, t, true) == 1);
    emily_tensor_release(t);
    /* along axes, both loop orders */
    int64_t s2x3[2] = {2, 3};
    float m[6] = {4, 1, 9, 4, 7, NAN};
    t = f32s(2, s2x3, m);
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, t, 0, false, true, EMILY_U8, &r));
    double w0[3] = {1, 1, 1};
    CHECK(t_equals(r, 3, w0));
    emily_tensor_release(r);
    CHECK_OK(emily_argreduce(EMILY_ARGMIN, t, 1, false, false, EMILY_DTYPE_AUTO, &r));
    double w1[2] = {1, 2};
    CHECK(t_equals(r, 2, w1));
    emily_tensor_release(r);
    /* a transposed view flattened in row-major order */
    emily_tensor *tt = NULL;
    CHECK_OK(emily_transpose(t, NULL, &tt));
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, tt, -1, false, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 5); /* tt = [[4,4],[1,7],[9,NaN]]: NaN at flat index 5 */
    emily_tensor_release(r);
    emily_tensor_release(tt);
    CHECK_ERR(emily_argreduce(EMILY_ARGMAX, t, 2, false, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_AXIS, "axis 2");
    CHECK_ERR(emily_argreduce(EMILY_ARGMAX, t, 0, false, false, EMILY_F32, &r), EMILY_ERR_TYPE, "integer");
    CHECK_ERR(emily_argreduce(EMILY_ARGMAX, NULL, 0, false, false, EMILY_F32, &r), EMILY_ERR_ARGUMENT, "NULL");
    emily_tensor_release(t);
}

TEST(argmax_large) {
    /* threaded and blocked paths: 1e6 elements, the max twice, then NaNs */
    int64_t n = 1000000, shape[1] = {n};
    float *d = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) d[i] = (float)((i * 7919) % 1000);
    d[123457] = 5000;
    d[876543] = 5000;
    emily_tensor *t = f32s(1, shape, d), *r = NULL;
    CHECK(arg_all(EMILY_ARGMAX, t, false) == 123457);
    CHECK(arg_all(EMILY_ARGMAX, t, true) == 876543);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MAX, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 5000);
    emily_tensor_release(r);
    emily_tensor_release(t);
    d[5] = NAN;
    d[999990] = NAN;
    t = f32s(1, shape, d);
    CHECK(arg_all(EMILY_ARGMIN, t, false) == 999990);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MIN, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r));
    CHECK(isnan(t_get(r, 0)));
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* columns: argmax over axis 0 of a 1000 x 1000 matrix */
    int64_t sq[2] = {1000, 1000};
    for (int64_t i = 0; i < n; i++) d[i] = (float)(((i / 1000) * 31 + (i % 1000)) % 1000);
    t = f32s(2, sq, d);
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, t, 0, false, false, EMILY_DTYPE_AUTO, &r));
    bool ok = true;
    for (int64_t j = 0; ok && j < 1000; j++) {
        int64_t best = 0;
        for (int64_t i = 1; i < 1000; i++)
            if (d[i * 1000 + j] > d[best * 1000 + j]) best = i;
        ok = t_get(r, j) == (double)best;
    }
    CHECK(ok);
    emily_tensor_release(r);
    emily_tensor_release(t);
    free(d);
}

TEST(all_close_rules) {
    float a[4] = {1, NAN, INFINITY, 1000}, b[4] = {1.000001f, NAN, INFINITY, 1000.001f};
    int64_t s4[1] = {4};
    emily_tensor *ta = f32s(1, s4, a), *tb = f32s(1, s4, b), *r = NULL;
    CHECK_OK(emily_all_close(ta, tb, 1e-5, 1e-8, false, &r));
    CHECK(t_get(r, 0) == 0); /* NaN != NaN */
    emily_tensor_release(r);
    CHECK_OK(emily_all_close(ta, tb, 1e-5, 1e-8, true, &r));
    CHECK(t_get(r, 0) == 1 && emily_tensor_rank(r) == 0);
    emily_tensor_release(r);
    emily_tensor_release(tb);
    float c[4] = {1, NAN, -INFINITY, 1000};
    tb = f32s(1, s4, c);
    CHECK_OK(emily_all_close(ta, tb, 1e-5, 1e-8, true, &r));
    CHECK(t_get(r, 0) == 0); /* inf vs -inf */
    emily_tensor_release(r);
    emily_tensor_release(tb);
    /* integers: the difference wraps in the type, |b| is taken in f64 */
    int8_t x[2] = {-128, 5}, y[2] = {-128, 5};
    int64_t s2[1] = {2};
    emily_tensor *tx = t_from(EMILY_S8, 1, s2, x), *ty = t_from(EMILY_S8, 1, s2, y);
    CHECK_OK(emily_all_close(tx, ty, 1e-5, 1e-8, false, &r));
    CHECK(t_get(r, 0) == 1);
    emily_tensor_release(r);
    /* broadcasting and mixed types */
    float one = 5;
    emily_tensor *s = f32s(0, NULL, &one);
    CHECK_OK(emily_all_close(s, ty, 0, 0, false, &r));
    CHECK(t_get(r, 0) == 0);
    emily_tensor_release(r);
    int64_t s3[1] = {3};
    emily_tensor *t3 = t_iota(EMILY_F32, 1, s3);
    CHECK_ERR(emily_all_close(ta, t3, 1e-5, 1e-8, false, &r), EMILY_ERR_SHAPE, "cannot broadcast");
    CHECK_ERR(emily_all_close(ta, NULL, 1e-5, 1e-8, false, &r), EMILY_ERR_ARGUMENT, "b is NULL");
    RELEASE(t3, s, tx, ty, ta);
}

/* The dispatcher reads all_close's :equal_nan as Nx does (truthiness):
 * nil is false, as Nx's own test helpers pass it; a number is an error. */
TEST(all_close_equal_nan_option) {
    float a[2] = {1, NAN};
    int64_t s2[1] = {2};
    emily_tensor *ta = f32s(1, s2, a);
    const char *keys[1] = {"equal_nan"};
    emily_value opt = {0};
    emily_value args[3] = {v_tensor(ta), v_tensor(ta), v_opts(keys, &opt, 1)};
    emily_value tmpl = v_tmpl(EMILY_U8, 0, NULL);
    emily_dispatch_result r = {0};
    const struct {
        emily_value_kind kind;
        bool b;
        double want;
    } cases[] = {{EMILY_V_NIL, false, 0}, {EMILY_V_BOOL, false, 0}, {EMILY_V_BOOL, true, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        opt.kind = cases[i].kind;
        opt.b = cases[i].b;
        CHECK_OK(emily_dispatch("all_close", EMILY_CPU, &tmpl, args, 3, EMILY_DISPATCH_RUN, &r));
        CHECK(r.n == 1 && t_get(r.tensors[0], 0) == cases[i].want);
        emily_dispatch_result_release(&r);
    }
    opt.kind = EMILY_V_INT;
    opt.i = 1;
    CHECK_ERR(emily_dispatch("all_close", EMILY_CPU, &tmpl, args, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "option :equal_nan must be true or false");
    emily_tensor_release(ta);
}

/* The kept shape is checked against Nx's template before the work
 * (fuzz_graph: `any` of an empty {0, ...} tensor filled a 50 MB result
 * the template did not want). With a kept dim of 2^40 the unchecked path
 * fails allocating 1 TiB ("out of memory"); checked, it is the template's
 * error and nothing is allocated. */
TEST(aggregate_checks_the_template_before_the_work) {
    int64_t empty_huge[2] = {0, (int64_t)1 << 40}, two[1] = {2};
    emily_tensor *t = NULL;
    CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_F32, 2, empty_huge, "", 0, &t));
    emily_value axis0 = v_int(0), opt_items[2] = {v_list(&axis0, 1), v_bool(false)};
    const char *keys[2] = {"axes", "keep_axes"};
    emily_value args[2] = {v_tensor(t), v_opts(keys, opt_items, 2)}, tmpl = v_tmpl(EMILY_U8, 1, two);
    emily_dispatch_result r = {0};
    CHECK_ERR(emily_dispatch("any", EMILY_CPU, &tmpl, args, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_INTERNAL,
              "any: output 0 is {1099511627776} but Nx expects u8{2}");
    CHECK(r.n == 0);
    emily_tensor_release(t);
}

TEST(reduce_errors) {
    emily_tensor *t = t_iota(EMILY_F32, 2, S2x3), *r = NULL;
    int far[1] = {2}, twice[2] = {0, -2};
    CHECK_ERR(emily_reduce(EMILY_REDUCE_SUM, t, 1, far, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_AXIS, "out of range");
    CHECK_ERR(emily_reduce(EMILY_REDUCE_SUM, t, 2, twice, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_AXIS,
              "more than once");
    CHECK_ERR(emily_reduce(EMILY_REDUCE_SUM, NULL, 0, NULL, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_reduce(EMILY_REDUCE_SUM, t, 0, NULL, false, EMILY_DTYPE_AUTO, NULL), EMILY_ERR_ARGUMENT, "output");
    CHECK_ERR(emily_reduce((emily_reduce_op)42, t, 0, NULL, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT,
              "unknown");
    CHECK_ERR(emily_reduce(EMILY_REDUCE_SUM, t, 1, NULL, false, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_reduce(EMILY_REDUCE_SUM, t, 0, NULL, false, (emily_dtype)77, &r), EMILY_ERR_TYPE, "invalid");
    emily_tensor_release(t);
}

TEST(reversed_and_broadcast_views) {
    int64_t shape[2] = {50, 60};
    emily_tensor *t = t_iota(EMILY_F32, 2, shape), *rv = NULL, *r = NULL;
    int both[2] = {0, 1}, ax0[1] = {0}, ax1[1] = {1};
    CHECK_OK(emily_reverse(t, 2, both, &rv)); /* strides -60, -1 */
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, rv, 1, ax1, false, EMILY_DTYPE_AUTO, &r));
    /* row i of rv is row 49 - i of t */
    CHECK(t_get(r, 0) == 49 * 60 * 60 + 59 * 30 && t_get(r, 49) == 59 * 30);
    emily_tensor_release(r);
    CHECK_OK(emily_reduce(EMILY_REDUCE_MAX, rv, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 49 * 60 + 59 && t_get(r, 59) == 49 * 60);
    emily_tensor_release(r);
    CHECK_OK(emily_argreduce(EMILY_ARGMIN, rv, 1, false, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 59 && t_get(r, 49) == 59);
    emily_tensor_release(r);
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, rv, -1, false, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 0);
    emily_tensor_release(r);
    emily_tensor_release(rv);
    /* equal values along a zero-stride axis: first or last index */
    float x = 2;
    emily_tensor *sc = f32s(0, NULL, &x), *b = NULL;
    int64_t s300[1] = {300};
    CHECK_OK(emily_broadcast(sc, 1, s300, NULL, &b));
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, b, 0, false, true, EMILY_U8, &r));
    CHECK(t_get(r, 0) == 299 - 256); /* the index wraps in u8 */
    emily_tensor_release(r);
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, b, 0, false, false, EMILY_DTYPE_AUTO, &r));
    CHECK(t_get(r, 0) == 0);
    RELEASE(r, b, sc, t);
}

TEST(wide_types_in_columns) {
    /* f64 and c128 column sums, f16 max columns, over a threaded size */
    int64_t shape[2] = {700, 400};
    emily_tensor *f = t_iota(EMILY_F32, 2, shape), *t = NULL, *r = NULL;
    int ax0[1] = {0};
    CHECK_OK(emily_as_type(f, EMILY_F64, &t));
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    bool ok = true;
    for (int j = 0; ok && j < 400; j++) ok = t_get(r, j) == 700.0 * j + 400.0 * (699.0 * 700 / 2);
    CHECK(ok);
    emily_tensor_release(r);
    emily_tensor_release(t);
    CHECK_OK(emily_as_type(f, EMILY_C128, &t));
    CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, t, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_C128 && t_get(r, 3) == 700.0 * 3 + 400.0 * (699.0 * 700 / 2));
    emily_tensor_release(r);
    emily_tensor_release(t);
    CHECK_OK(emily_as_type(f, EMILY_F16, &t));
    CHECK_OK(emily_reduce(EMILY_REDUCE_MAX, t, 1, ax0, false, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_F16 && t_get(r, 0) == emily_f16_to_f32(emily_f64_to_f16(699.0 * 400)));
    RELEASE(r, t, f);
}

RUN_TESTS("reduce", CASE(sum_axes_and_types), CASE(sum_floats_accumulate_wide), CASE(sum_layouts),
          CASE(empty_reductions), CASE(max_min_nan_and_zero_sign), CASE(all_any_truth), CASE(complex_sum_product),
          CASE(argmax_rules), CASE(argmax_large), CASE(all_close_rules), CASE(all_close_equal_nan_option),
          CASE(aggregate_checks_the_template_before_the_work), CASE(reduce_errors), CASE(reversed_and_broadcast_views),
          CASE(wide_types_in_columns), CASE(ordered_folds_ignore_thread_count))
