/* Zero-size tensors and extreme shapes through every op family: each
 * call must give an error or a correct (usually empty) result, and, in
 * the sanitizer build (make SAN=1, UBSan halting on the first report),
 * do no undefined arithmetic on the way: a zero-size tensor has no
 * buffer, so an offset computed from its NULL data pointer, or a
 * memcpy(NULL, NULL, 0), is undefined even when nothing is read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

/* The zero-size shapes tried (rank, dims), matrices among them. */
typedef struct zshape {
    int rank;
    int64_t dims[4];
} zshape;

static const zshape shapes[] = {
    {1, {0}},       {2, {0, 3}},    {2, {3, 0}},    {2, {0, 0}},       {3, {2, 0, 3}},
    {3, {0, 3, 3}}, {3, {2, 3, 0}}, {3, {2, 0, 0}}, {4, {1, 0, 2, 2}},
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

static const emily_dtype types[] = {EMILY_F32, EMILY_F64, EMILY_C64, EMILY_S32, EMILY_U8};
#define NTYPES (int)(sizeof types / sizeof types[0])

/* status ok or an error, the output (when ok) of size `want` or any size
 * (want < 0); releases it */
static void expect(const char *what, int si, emily_dtype dt, emily_status s, emily_tensor *o, int64_t want) {
    if (s == EMILY_OK && (!o || (want >= 0 && emily_tensor_size(o) != want))) {
        fprintf(stderr, "  FAIL %s on shape #%d (%s): size %lld, wanted %lld\n", what, si, emily_dtype_name(dt),
                o ? (long long)emily_tensor_size(o) : -1LL, (long long)want);
        harness_failures++;
    }
    if (s != EMILY_OK && (!*emily_last_error() || o)) {
        fprintf(stderr, "  FAIL %s on shape #%d (%s): error without a message or with an output\n", what, si,
                emily_dtype_name(dt));
        harness_failures++;
    }
    emily_tensor_release(o);
}

static emily_tensor *zeros(int rank, const int64_t *dims, emily_dtype dt) {
    emily_tensor *t = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, dt, rank, dims, emily_scalar_int(0), &t));
    return t;
}

/* Element-wise, shape, reduction, sort, scan, index, window and fft ops
 * on every zero-size shape and type. */
TEST(every_family_on_zero_size_inputs) {
    for (int si = 0; si < NSHAPES; si++) {
        const zshape *z = &shapes[si];
        int r = z->rank;
        for (int ti = 0; ti < NTYPES; ti++) {
            emily_dtype dt = types[ti];
            emily_tensor *x = zeros(r, z->dims, dt), *o = NULL, *o2 = NULL;
            if (!x) continue;
            emily_status s;
            s = emily_unary(EMILY_NEGATE, x, &o);
            expect("negate", si, dt, s, o, 0);
            s = emily_binary(EMILY_ADD, x, x, EMILY_DTYPE_AUTO, &o);
            expect("add", si, dt, s, o, 0);
            s = emily_select(x, x, x, EMILY_DTYPE_AUTO, &o);
            expect("select", si, dt, s, o, 0);
            s = emily_as_type(x, EMILY_F64, &o);
            expect("as_type", si, dt, s, o, 0);
            s = emily_contiguous(x, &o);
            expect("contiguous", si, dt, s, o, 0);
            CHECK_OK(emily_to_binary(x, NULL, 0));
            int rev[4] = {0, 1, 2, 3}, perm[4];
            for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
            s = emily_reverse(x, r, rev, &o);
            expect("reverse", si, dt, s, o, 0);
            s = emily_transpose(x, perm, &o2);
            if (!s) s = emily_contiguous(o2, &o);
            emily_tensor_release(o2);
            o2 = NULL;
            expect("transpose", si, dt, s, o, 0);
            int64_t lo[4] = {1, 0, 1, 0}, hi[4] = {0, 1, 0, 1}, in[4] = {0};
            emily_tensor *pv = zeros(0, NULL, dt);
            s = emily_pad(x, pv, lo, hi, in, &o);
            expect("pad", si, dt, s, o, -1);
            int64_t starts[4] = {0}, lens[4];
            for (int i = 0; i < r; i++) lens[i] = z->dims[i];
            s = emily_slice(x, starts, lens, NULL, &o);
            expect("slice", si, dt, s, o, 0);
            s = emily_put_slice(x, starts, x, EMILY_DTYPE_AUTO, &o);
            expect("put_slice", si, dt, s, o, 0);
            const emily_tensor *two[2] = {x, x};
            s = emily_concatenate(2, two, r - 1, EMILY_DTYPE_AUTO, &o);
            expect("concatenate", si, dt, s, o, 0);
            s = emily_stack(2, two, 0, EMILY_DTYPE_AUTO, &o);
            expect("stack", si, dt, s, o, 0);
            /* reductions: over all axes (one value) and over each axis */
            s = emily_reduce(EMILY_REDUCE_SUM, x, 0, NULL, false, EMILY_DTYPE_AUTO, &o);
            expect("sum", si, dt, s, o, 1);
            for (int a = 0; a < r; a++) {
                s = emily_reduce(EMILY_REDUCE_PRODUCT, x, 1, &a, true, EMILY_DTYPE_AUTO, &o);
                expect("product", si, dt, s, o, -1);
                s = emily_reduce(EMILY_REDUCE_MAX, x, 1, &a, false, EMILY_DTYPE_AUTO, &o);
                expect("reduce_max", si, dt, s, o, -1);
                s = emily_argreduce(EMILY_ARGMIN, x, a, false, false, EMILY_DTYPE_AUTO, &o);
                expect("argmin", si, dt, s, o, -1);
                s = emily_sort(x, a, EMILY_SORT_ASC, true, &o);
                expect("sort", si, dt, s, o, 0);
                s = emily_argsort(x, a, EMILY_SORT_DESC, false, EMILY_S64, &o);
                expect("argsort", si, dt, s, o, 0);
                s = emily_cumulative_sum(x, a, a % 2, &o);
                expect("cumulative_sum", si, dt, s, o, 0);
                s = emily_cumulative_max(x, a, false, &o);
                expect("cumulative_max", si, dt, s, o, 0);
                s = emily_fft(x, 4, a, 1e-10, &o);
                expect("fft", si, dt, s, o, -1);
                s = emily_ifft(x, z->dims[a], a, 1e-10, &o);
                expect("ifft", si, dt, s, o, -1);
                s = emily_rfft(x, 3, a, 1e-10, &o);
                expect("rfft", si, dt, s, o, -1);
                s = emily_irfft(x, 2, a, 1e-10, &o);
                expect("irfft", si, dt, s, o, -1);
                /* indices into axis a: none, and one (out of range when
                 * the axis is empty) */
                int64_t ish[2] = {0, 1}, one[2] = {1, 1}, zero_idx = 0;
                emily_tensor *none = NULL, *idx1 = NULL;
                CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_S64, 2, ish, NULL, 0, &none));
                CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_S64, 2, one, &zero_idx, 8, &idx1));
                s = emily_take(x, none, a, &o);
                expect("take none", si, dt, s, o, 0);
                s = emily_take(x, idx1, a, &o);
                expect("take one", si, dt, s, o, -1);
                s = emily_take_along_axis(x, x, a, &o);
                expect("take_along_axis", si, dt, s, o, 0);
                s = emily_gather(x, none, 1, &a, &o);
                expect("gather none", si, dt, s, o, 0);
                s = emily_gather(x, idx1, 1, &a, &o);
                expect("gather one", si, dt, s, o, -1);
                emily_tensor_release(none);
                emily_tensor_release(idx1);
            }
            int64_t k1[1] = {0};
            s = emily_top_k(x, 0, EMILY_S64, &o, &o2);
            expect("top_k", si, dt, s, o, -1);
            emily_tensor_release(o2);
            o2 = NULL;
            (void)k1;
            int64_t win[4] = {1, 1, 1, 1}, pads[4] = {1, 1, 1, 1};
            s = emily_window_sum(x, r, win, NULL, pads, pads, NULL, &o);
            expect("window_sum", si, dt, s, o, -1);
            s = emily_window_max(x, r, win, win, NULL, NULL, win, &o);
            expect("window_max", si, dt, s, o, -1);
            s = emily_window_scatter_max(x, x, pv, r, win, NULL, NULL, NULL, &o);
            expect("window_scatter_max", si, dt, s, o, -1);
            s = emily_all_close(x, x, 1e-5, 1e-8, false, &o);
            expect("all_close", si, dt, s, o, 1);
            /* contractions */
            int ca = r - 1, cb = 0;
            s = emily_dot(x, 1, &ca, 0, NULL, x, 1, &cb, 0, NULL, EMILY_DTYPE_AUTO, &o);
            expect("dot", si, dt, s, o, -1);
            s = emily_conv(x, x, NULL, EMILY_DTYPE_AUTO, &o);
            expect("conv", si, dt, s, o, -1);
            emily_tensor_release(pv);
            emily_tensor_release(x);
        }
    }
}

/* The linear algebra ops on empty matrices and empty batches. */
TEST(linalg_on_zero_size_inputs) {
    static const emily_dtype lt[] = {EMILY_F32, EMILY_F64, EMILY_C64};
    for (int si = 0; si < NSHAPES; si++) {
        const zshape *z = &shapes[si];
        if (z->rank < 2) continue;
        for (int ti = 0; ti < 3; ti++) {
            emily_dtype dt = lt[ti];
            emily_tensor *x = zeros(z->rank, z->dims, dt), *o = NULL, *o2 = NULL, *o3 = NULL;
            if (!x) continue;
            for (int m = 0; m < 3; m++) {
                emily_linalg_method method = (emily_linalg_method)m;
                emily_status s = emily_qr_opts(x, EMILY_QR_COMPLETE, 1e-10, method, &o, &o2);
                emily_tensor_release(o2);
                o2 = NULL;
                expect("qr", si, dt, s, o, -1);
                s = emily_eigh_opts(x, 1e-4, 100, method, &o, &o2);
                emily_tensor_release(o2);
                o2 = NULL;
                expect("eigh", si, dt, s, o, -1);
                s = emily_svd_opts(x, true, 100, method, &o, &o2, &o3);
                emily_tensor_release(o2);
                emily_tensor_release(o3);
                o2 = o3 = NULL;
                expect("svd", si, dt, s, o, -1);
                s = emily_lu_opts(x, 1e-10, method, &o, &o2, &o3);
                emily_tensor_release(o2);
                emily_tensor_release(o3);
                o2 = o3 = NULL;
                expect("lu", si, dt, s, o, -1);
                s = emily_determinant_opts(x, method, &o);
                expect("determinant", si, dt, s, o, -1);
                s = emily_solve_opts(x, x, method, &o);
                expect("solve", si, dt, s, o, -1);
            }
            emily_status s = emily_cholesky(x, &o);
            expect("cholesky", si, dt, s, o, -1);
            s = emily_triangular_solve(x, x, true, true, EMILY_TRANSFORM_NONE, &o);
            expect("triangular_solve", si, dt, s, o, -1);
            emily_tensor_release(x);
        }
    }
}

/* Empty views that start inside a real buffer (offset > 0). */
TEST(empty_views_with_an_offset) {
    float d[12];
    for (int i = 0; i < 12; i++) d[i] = (float)i;
    int64_t sh[2] = {3, 4}, starts[2] = {2, 3}, lens[2] = {0, 1};
    emily_tensor *x = t_from(EMILY_F32, 2, sh, d), *v = NULL, *o = NULL;
    CHECK_OK(emily_slice(x, starts, lens, NULL, &v));
    CHECK(emily_tensor_size(v) == 0);
    if (v) {
        CHECK_OK(emily_contiguous(v, &o));
        emily_tensor_release(o);
        o = NULL;
        CHECK_OK(emily_unary(EMILY_EXP, v, &o));
        emily_tensor_release(o);
        o = NULL;
        CHECK_OK(emily_fft(v, 2, 0, 1e-10, &o));
        emily_tensor_release(o);
        o = NULL;
        int a = 1;
        CHECK_OK(emily_reduce(EMILY_REDUCE_SUM, v, 1, &a, false, EMILY_DTYPE_AUTO, &o));
        CHECK(o && emily_tensor_size(o) == 0);
        emily_tensor_release(o);
    }
    emily_tensor_release(v);
    emily_tensor_release(x);
}

/* Shapes whose non-zero dimensions overflow int64 are refused wherever
 * the 0 sits (the 0 first used to be accepted, and its strides
 * overflowed); so are ranks above EMILY_MAX_RANK. */
TEST(huge_shapes_are_refused_whatever_the_zero) {
    const int64_t H = INT64_MAX;
    int64_t first[3] = {0, H, H}, last[3] = {H, H, 0}, mid[3] = {H, 0, H};
    emily_tensor *t = NULL;
    CHECK_ERR(emily_empty(EMILY_CPU, EMILY_F32, 3, first, &t), EMILY_ERR_SHAPE, "too many elements");
    CHECK_ERR(emily_empty(EMILY_CPU, EMILY_F32, 3, last, &t), EMILY_ERR_SHAPE, "too many elements");
    CHECK_ERR(emily_empty(EMILY_CPU, EMILY_F32, 3, mid, &t), EMILY_ERR_SHAPE, "too many elements");
    CHECK_ERR(emily_from_binary(EMILY_CPU, EMILY_U8, 3, first, NULL, 0, &t), EMILY_ERR_SHAPE, "too many elements");
    CHECK_ERR(emily_iota(EMILY_CPU, EMILY_S64, 3, first, 0, &t), EMILY_ERR_SHAPE, "too many elements");
    CHECK(t == NULL);
    /* the largest accepted product with a zero: strides fit */
    int64_t ok[3] = {0, (int64_t)1 << 29, (int64_t)1 << 29};
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 3, ok, &t));
    if (t) {
        CHECK(emily_tensor_size(t) == 0);
        CHECK(emily_tensor_strides(t)[0] == (int64_t)1 << 58);
        emily_tensor *o = NULL;
        CHECK_OK(emily_unary(EMILY_ABS, t, &o));
        emily_tensor_release(o);
        o = NULL;
        int a = 2;
        CHECK_OK(emily_cumulative_sum(t, a, false, &o));
        emily_tensor_release(o);
        o = NULL;
        int64_t bsh[4] = {0, 0, (int64_t)1 << 29, (int64_t)1 << 29};
        CHECK_OK(emily_broadcast(t, 4, bsh, NULL, &o));
        emily_tensor_release(o);
        o = NULL;
        int64_t bbad[4] = {1 << 20, 0, (int64_t)1 << 29, (int64_t)1 << 29};
        CHECK_ERR(emily_broadcast(t, 4, bbad, NULL, &o), EMILY_ERR_SHAPE, "too many elements");
        int64_t rbad[4] = {0, (int64_t)1 << 40, (int64_t)1 << 40, 2};
        CHECK_ERR(emily_reshape(t, 4, rbad, &o), EMILY_ERR_SHAPE, "reshape");
        emily_tensor_release(t);
    }
    /* rank limit */
    int64_t *ones = malloc(sizeof(int64_t) * (EMILY_MAX_RANK + 1));
    if (ones) {
        for (int i = 0; i <= EMILY_MAX_RANK; i++) ones[i] = 1;
        float v = 1;
        t = NULL;
        CHECK_ERR(emily_from_binary(EMILY_CPU, EMILY_F32, EMILY_MAX_RANK + 1, ones, &v, 4, &t), EMILY_ERR_SHAPE,
                  "EMILY_MAX_RANK");
        CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_F32, EMILY_MAX_RANK, ones, &v, 4, &t));
        emily_tensor_release(t);
        free(ones);
    }
}

/* conv's output size: huge dilations and padding overflowed int64. */
TEST(conv_size_arithmetic_is_checked) {
    float d[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t sh[3] = {1, 1, 8}, ksh[3] = {1, 1, 2};
    emily_tensor *x = t_from(EMILY_F32, 3, sh, d), *k = t_from(EMILY_F32, 3, ksh, d), *o = NULL;
    emily_conv_opts opts = {0};
    int64_t huge_dil[1] = {INT64_MAX / 2}, max_dil[1] = {INT64_MAX}, big_pad[1] = {INT64_MAX - 4},
            big_pad2[1] = {INT64_MAX};
    opts.kernel_dilation = max_dil;
    CHECK_ERR(emily_conv(x, k, &opts, EMILY_DTYPE_AUTO, &o), EMILY_ERR_ARGUMENT, "overflows");
    opts.kernel_dilation = NULL;
    opts.input_dilation = huge_dil;
    CHECK_ERR(emily_conv(x, k, &opts, EMILY_DTYPE_AUTO, &o), EMILY_ERR_ARGUMENT, "overflows");
    opts.input_dilation = NULL;
    opts.padding_lo = big_pad;
    opts.padding_hi = big_pad2;
    CHECK_ERR(emily_conv(x, k, &opts, EMILY_DTYPE_AUTO, &o), EMILY_ERR_ARGUMENT, "overflows");
    /* a huge stride with one output position, a huge kernel dilation on a
     * window of 1: nothing overflows, the result is Nx's */
    int64_t big_stride[1] = {INT64_MAX};
    opts.padding_lo = opts.padding_hi = NULL;
    opts.strides = big_stride;
    CHECK_OK(emily_conv(x, k, &opts, EMILY_DTYPE_AUTO, &o));
    CHECK(o && emily_tensor_size(o) == 1 && t_get(o, 0) == 1 * 1 + 2 * 2);
    emily_tensor_release(o);
    o = NULL;
    opts.strides = NULL;
    emily_tensor *k1 = t_from(EMILY_F32, 3, (int64_t[]){1, 1, 1}, d);
    opts.kernel_dilation = max_dil;
    CHECK_OK(emily_conv(x, k1, &opts, EMILY_DTYPE_AUTO, &o));
    CHECK(o && emily_tensor_size(o) == 8 && t_get(o, 7) == 8);
    RELEASE(o, k1, k, x);
}

RUN_TESTS("zero_size", CASE(every_family_on_zero_size_inputs), CASE(linalg_on_zero_size_inputs),
          CASE(empty_views_with_an_offset), CASE(huge_shapes_are_refused_whatever_the_zero),
          CASE(conv_size_arithmetic_is_checked))
