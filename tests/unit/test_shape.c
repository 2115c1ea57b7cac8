/* Shape ops: reshape, squeeze, broadcast, transpose, reverse, slice (views)
 * and pad, concatenate, stack, put_slice (built with the copy kernel). */
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"

static const int64_t S2x3[2] = {2, 3};

static bool shares_buffer(const emily_tensor *a, const emily_tensor *b) {
    const void *pa = NULL, *pb = NULL;
    /* views report the base pointer of their first element: compare
     * through contiguous host data only when both are contiguous */
    if (emily_host_data(a, &pa) || emily_host_data(b, &pb)) return false;
    return pa == pb;
}

TEST(reshape_is_a_view_when_possible) {
    emily_tensor *t = t_iota(EMILY_F32, 2, S2x3), *r = NULL, *back = NULL;
    int64_t s3x2[2] = {3, 2}, s6[1] = {6}, s1x6x1[3] = {1, 6, 1};
    CHECK_OK(emily_reshape(t, 2, s3x2, &r));
    CHECK(t_shape_is(r, 2, s3x2));
    CHECK(shares_buffer(t, r));
    CHECK_OK(emily_reshape(r, 3, s1x6x1, &back));
    double want[6] = {0, 1, 2, 3, 4, 5};
    CHECK(t_equals(back, 6, want));
    emily_tensor_release(back);
    /* a transposed tensor cannot be flattened without a copy */
    emily_tensor *tt = NULL, *flat = NULL;
    CHECK_OK(emily_transpose(t, NULL, &tt));
    CHECK_OK(emily_reshape(tt, 1, s6, &flat));
    double wantt[6] = {0, 3, 1, 4, 2, 5};
    CHECK(t_equals(flat, 6, wantt));
    emily_tensor_release(flat);
    /* but splitting one of its axes stays a view */
    int64_t s3x2x1[4] = {3, 1, 2, 1};
    CHECK_OK(emily_reshape(tt, 4, s3x2x1, &flat));
    CHECK(t_equals(flat, 6, wantt));
    CHECK(!emily_tensor_is_contiguous(flat));
    RELEASE(flat, tt, r, t);
}

TEST(reshape_scalars_and_empty) {
    float x = 7;
    emily_tensor *s = t_from(EMILY_F32, 0, NULL, &x), *r = NULL, *b = NULL;
    int64_t one[2] = {1, 1};
    CHECK_OK(emily_reshape(s, 2, one, &r));
    CHECK(t_get(r, 0) == 7);
    CHECK_OK(emily_reshape(r, 0, NULL, &b));
    CHECK(emily_tensor_rank(b) == 0 && t_get(b, 0) == 7);
    RELEASE(b, r, s);
    int64_t z[2] = {0, 3}, z2[3] = {3, 0, 5};
    emily_tensor *e = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_S8, 2, z, &e));
    CHECK_OK(emily_reshape(e, 3, z2, &r));
    CHECK(t_shape_is(r, 3, z2) && emily_tensor_size(r) == 0);
    emily_tensor_release(r);
    emily_tensor_release(e);
}

TEST(reshape_errors) {
    emily_tensor *t = t_iota(EMILY_F32, 2, S2x3), *r = (emily_tensor *)1;
    int64_t s4[1] = {4}, neg[2] = {-2, -3};
    CHECK_ERR(emily_reshape(t, 1, s4, &r), EMILY_ERR_SHAPE, "{2, 3}");
    CHECK(r == NULL);
    CHECK_ERR(emily_reshape(t, 2, neg, &r), EMILY_ERR_SHAPE, "reshape");
    CHECK_ERR(emily_reshape(NULL, 1, s4, &r), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_reshape(t, 1, s4, NULL), EMILY_ERR_ARGUMENT, "output");
    CHECK_ERR(emily_reshape(t, 2, NULL, &r), EMILY_ERR_SHAPE, "NULL shape");
    emily_tensor_release(t);
}

TEST(squeeze_axes) {
    int64_t shape[4] = {1, 2, 1, 3};
    emily_tensor *t = t_iota(EMILY_F32, 4, shape), *r = NULL;
    CHECK_OK(emily_squeeze(t, 0, NULL, &r));
    CHECK(t_shape_is(r, 2, S2x3));
    emily_tensor_release(r);
    int ax[1] = {-2};
    int64_t w[3] = {1, 2, 3};
    CHECK_OK(emily_squeeze(t, 1, ax, &r));
    CHECK(t_shape_is(r, 3, w));
    emily_tensor_release(r);
    int bad[1] = {1}, twice[2] = {0, -4}, far[1] = {4};
    CHECK_ERR(emily_squeeze(t, 1, bad, &r), EMILY_ERR_SHAPE, "size 2");
    CHECK_ERR(emily_squeeze(t, 2, twice, &r), EMILY_ERR_AXIS, "more than once");
    CHECK_ERR(emily_squeeze(t, 1, far, &r), EMILY_ERR_AXIS, "out of range");
    CHECK_ERR(emily_squeeze(t, 1, NULL, &r), EMILY_ERR_ARGUMENT, "NULL");
    emily_tensor_release(t);
}

/* Ranks past the ops' inline scratch (emi_scratch_get: 36 entries, so
 * squeeze and reverse of rank 18 and up, argmax of rank 36 and up, take
 * theirs from the heap): the same results as at small ranks. */
TEST(high_ranks_past_the_inline_scratch) {
    enum { R = 40 };
    int64_t shape[R];
    for (int d = 0; d < R; d++) shape[d] = d == 7 ? 3 : d == 30 ? 2 : 1;
    emily_tensor *t = t_iota(EMILY_F32, R, shape), *r = NULL;
    int64_t squeezed[2] = {3, 2};
    CHECK_OK(emily_squeeze(t, 0, NULL, &r));
    CHECK(t_shape_is(r, 2, squeezed));
    CHECK(t_equals(r, 6, (double[]){0, 1, 2, 3, 4, 5}));
    emily_tensor_release(r);
    int axes[2] = {7, 30};
    CHECK_OK(emily_reverse(t, 2, axes, &r));
    CHECK(t_shape_is(r, R, shape));
    CHECK(t_equals(r, 6, (double[]){5, 4, 3, 2, 1, 0}));
    emily_tensor_release(r);
    CHECK_OK(emily_argreduce(EMILY_ARGMAX, t, 7, true, false, EMILY_DTYPE_AUTO, &r));
    shape[7] = 1;
    CHECK(t_shape_is(r, R, shape));
    CHECK(t_equals(r, 2, (double[]){2, 2}));
    emily_tensor_release(r);
    int bad[1] = {R};
    CHECK_ERR(emily_reverse(t, 1, bad, &r), EMILY_ERR_AXIS, "out of range");
    emily_tensor_release(t);
}

TEST(broadcast_views) {
    float v[3] = {1, 2, 3};
    int64_t s3[1] = {3}, s3x2[2] = {3, 2};
    emily_tensor *t = t_from(EMILY_F32, 1, s3, v), *r = NULL;
    CHECK_OK(emily_broadcast(t, 2, S2x3, NULL, &r)); /* right-aligned */
    double w1[6] = {1, 2, 3, 1, 2, 3};
    CHECK(t_equals(r, 6, w1));
    CHECK(emily_tensor_strides(r)[0] == 0);
    emily_tensor_release(r);
    int ax0[1] = {0};
    CHECK_OK(emily_broadcast(t, 2, s3x2, ax0, &r));
    double w2[6] = {1, 1, 2, 2, 3, 3};
    CHECK(t_equals(r, 6, w2));
    emily_tensor_release(r);
    int ax1[1] = {1};
    CHECK_ERR(emily_broadcast(t, 2, s3x2, ax1, &r), EMILY_ERR_SHAPE, "{3, 2}");
    int64_t s1[1] = {1};
    CHECK_ERR(emily_broadcast(t, 1, s1, NULL, &r), EMILY_ERR_SHAPE, "cannot broadcast");
    CHECK_ERR(emily_broadcast(t, 0, NULL, NULL, &r), EMILY_ERR_SHAPE, "lower rank");
    int ax5[1] = {5};
    CHECK_ERR(emily_broadcast(t, 2, s3x2, ax5, &r), EMILY_ERR_AXIS, "out of range");
    emily_tensor_release(t);
    /* two input axes must map to increasing output axes */
    emily_tensor *m = t_iota(EMILY_F32, 2, S2x3);
    int64_t big[3] = {3, 2, 4};
    int dec[2] = {1, 0};
    CHECK_ERR(emily_broadcast(m, 3, big, dec, &r), EMILY_ERR_AXIS, "increasing");
    int64_t s2x3x4[3] = {2, 3, 4};
    int inc[2] = {0, 1};
    CHECK_OK(emily_broadcast(m, 3, s2x3x4, inc, &r));
    CHECK(t_get(r, 23) == 5 && t_get(r, 4) == 1);
    emily_tensor_release(r);
    emily_tensor_release(m);
    /* a scalar to any shape */
    float x = 4.5f;
    emily_tensor *sc = t_from(EMILY_F32, 0, NULL, &x);
    CHECK_OK(emily_broadcast(sc, 2, S2x3, NULL, &r));
    CHECK(t_get(r, 5) == 4.5);
    emily_tensor_release(r);
    emily_tensor_release(sc);
}

TEST(transpose_views) {
    int64_t shape[3] = {2, 3, 4};
    emily_tensor *t = t_iota(EMILY_F32, 3, shape), *r = NULL, *c = NULL;
    int perm[3] = {2, 0, 1};
    CHECK_OK(emily_transpose(t, perm, &r));
    int64_t want_shape[3] = {4, 2, 3};
    CHECK(t_shape_is(r, 3, want_shape));
    /* r[i][j][k] = t[j][k][i] = 12 j + 4 k + i */
    CHECK(t_get(r, 0) == 0 && t_get(r, 1) == 4 && t_get(r, 3) == 12 && t_get(r, 6) == 1);
    CHECK_OK(emily_contiguous(r, &c));
    CHECK(t_get(c, 23) == 23);
    emily_tensor_release(c);
    emily_tensor_release(r);
    int bad[3] = {0, 0, 1}, far[3] = {0, 1, 3};
    CHECK_ERR(emily_transpose(t, bad, &r), EMILY_ERR_AXIS, "more than once");
    CHECK_ERR(emily_transpose(t, far, &r), EMILY_ERR_AXIS, "out of range");
    emily_tensor_release(t);
}

/* t (rows x cols) transposed into a contiguous copy equals t's elements
 * read column by column. */
static bool transposes_right(emily_dtype dt, int64_t rows, int64_t cols) {
    int64_t shape[2] = {rows, cols};
    emily_tensor *t = NULL, *f = t_iota(EMILY_F32, 2, shape), *tt = NULL, *c = NULL;
    bool ok = !emily_as_type(f, dt, &t) && !emily_transpose(t, NULL, &tt) && !emily_contiguous(tt, &c);
    size_t es = emily_dtype_size(dt);
    unsigned char *a = malloc(emily_tensor_nbytes(f) * 4), *b = malloc(emily_tensor_nbytes(f) * 4);
    ok = ok && a && b && !emily_to_binary(t, a, emily_tensor_nbytes(t)) &&
         !emily_to_binary(c, b, emily_tensor_nbytes(c));
    for (int64_t i = 0; i < rows && ok; i++)
        for (int64_t j = 0; j < cols && ok; j++)
            ok = memcmp(a + (size_t)(i * cols + j) * es, b + (size_t)(j * rows + i) * es, es) == 0;
    free(a);
    free(b);
    RELEASE(c, tt, t, f);
    return ok;
}

TEST(transpose_copy_large) {
    /* the tiled copy paths (vector blocks for 4- and 8-byte elements,
     * element by element otherwise), with ragged edges, then threaded */
    emily_dtype types[5] = {EMILY_U8, EMILY_S16, EMILY_F32, EMILY_F64, EMILY_C128};
    for (int k = 0; k < 5; k++) CHECK(transposes_right(types[k], 300, 170));
    CHECK(transposes_right(EMILY_F32, 613, 517));
    CHECK(transposes_right(EMILY_F64, 517, 613));
    CHECK(transposes_right(EMILY_S16, 613, 517));
}

TEST(reverse_views) {
    emily_tensor *t = t_iota(EMILY_F32, 2, S2x3), *r = NULL, *c = NULL;
    int ax[1] = {1};
    CHECK_OK(emily_reverse(t, 1, ax, &r));
    double w[6] = {2, 1, 0, 5, 4, 3};
    CHECK(t_equals(r, 6, w));
    CHECK(emily_tensor_strides(r)[1] == -1);
    int both[2] = {0, 1};
    CHECK_OK(emily_reverse(r, 2, both, &c));
    double w2[6] = {3, 4, 5, 0, 1, 2};
    CHECK(t_equals(c, 6, w2));
    emily_tensor_release(c);
    CHECK_OK(emily_reverse(t, 0, NULL, &c));
    CHECK(t_get(c, 1) == 1);
    emily_tensor_release(c);
    int bad[1] = {2};
    CHECK_ERR(emily_reverse(t, 1, bad, &c), EMILY_ERR_AXIS, "out of range");
    emily_tensor_release(r);
    emily_tensor_release(t);
}

TEST(slice_clamps_and_strides) {
    int64_t shape[2] = {6, 7};
    emily_tensor *t = t_iota(EMILY_F32, 2, shape), *r = NULL;
    int64_t st[2] = {5, 3}, len[2] = {6, 7}, str[2] = {5, 3};
    /* starts clamp to dim - length = 0; ceil(6/5) x ceil(7/3) */
    CHECK_OK(emily_slice(t, st, len, str, &r));
    int64_t ws[2] = {2, 3};
    CHECK(t_shape_is(r, 2, ws));
    double w[6] = {0, 3, 6, 35, 38, 41};
    CHECK(t_equals(r, 6, w));
    emily_tensor_release(r);
    int64_t neg[2] = {-4, 100}, l2[2] = {2, 2};
    CHECK_OK(emily_slice(t, neg, l2, NULL, &r));
    double w2[4] = {5, 6, 12, 13};
    CHECK(t_equals(r, 4, w2));
    emily_tensor_release(r);
    /* a slice of a reversed view */
    emily_tensor *rv = NULL;
    int ax[1] = {0};
    CHECK_OK(emily_reverse(t, 1, ax, &rv));
    int64_t s0[2] = {1, 1};
    CHECK_OK(emily_slice(rv, s0, l2, NULL, &r));
    double w3[4] = {29, 30, 22, 23};
    CHECK(t_equals(r, 4, w3));
    emily_tensor_release(r);
    emily_tensor_release(rv);
    /* a stride past the length (Nx allows any) picks the first element;
     * the view's stride must not overflow (found by fuzz_graph) */
    int64_t huge[2] = {INT64_MAX / 2, 7306080452797005830LL}, l3[2] = {3, 7}, s3[2] = {1, 2};
    CHECK_OK(emily_slice(t, s3, l3, huge, &r));
    int64_t ws3[2] = {1, 1};
    CHECK(t_shape_is(r, 2, ws3));
    double w4[1] = {7}; /* row 1; column 0 (start 2 clamps to 7 - 7) */
    CHECK(t_equals(r, 1, w4));
    emily_tensor_release(r);
    int64_t big[2] = {7, 1}, zero[2] = {0, 0}, one[2] = {1, 1};
    CHECK_ERR(emily_slice(t, zero, big, NULL, &r), EMILY_ERR_SHAPE, "length 7 at axis 0");
    int64_t bads[2] = {1, 0};
    CHECK_ERR(emily_slice(t, zero, one, bads, &r), EMILY_ERR_ARGUMENT, "stride at axis 1");
    CHECK_ERR(emily_slice(t, NULL, one, NULL, &r), EMILY_ERR_ARGUMENT, "NULL");
    emily_tensor_release(t);
}

TEST(pad_edges_interior_negative) {
    emily_tensor *t = t_iota(EMILY_F32, 2, S2x3), *r = NULL;
    float pv = -1;
    emily_tensor *v = t_from(EMILY_F32, 0, NULL, &pv);
    int64_t lo[2] = {1, 0}, hi[2] = {0, 2}, in[2] = {0, 1};
    CHECK_OK(emily_pad(t, v, lo, hi, in, &r));
    int64_t ws[2] = {3, 7};
    CHECK(t_shape_is(r, 2, ws));
    double w[21] = {-1, -1, -1, -1, -1, -1, -1, 0, -1, 1, -1, 2, -1, -1, 3, -1, 4, -1, 5, -1, -1};
    CHECK(t_equals(r, 21, w));
    emily_tensor_release(r);
    /* negative padding cuts, also into interior padding */
    int64_t lo2[2] = {0, -2}, hi2[2] = {-1, -1}, in2[2] = {0, 1};
    CHECK_OK(emily_pad(t, v, lo2, hi2, in2, &r));
    int64_t ws2[2] = {1, 2};
    CHECK(t_shape_is(r, 2, ws2));
    double w2[2] = {1, -1};
    CHECK(t_equals(r, 2, w2));
    emily_tensor_release(r);
    /* only cutting: no fill needed */
    int64_t lo3[2] = {-1, -1}, hi3[2] = {0, -1};
    CHECK_OK(emily_pad(t, v, lo3, hi3, NULL, &r));
    double w3[1] = {4};
    CHECK(t_equals(r, 1, w3));
    emily_tensor_release(r);
    /* a rank 0 tensor pads to itself */
    emily_tensor *sc = NULL;
    CHECK_OK(emily_pad(v, v, NULL, NULL, NULL, &sc));
    CHECK(emily_tensor_rank(sc) == 0 && t_get(sc, 0) == -1);
    RELEASE(sc, v, t);
}

TEST(pad_types_and_views) {
    int32_t d[4] = {1, 2, 3, 4};
    int64_t s2x2[2] = {2, 2};
    emily_tensor *t = t_from(EMILY_S32, 2, s2x2, d), *tt = NULL, *r = NULL;
    float half = 0.5f;
    emily_tensor *v = t_from(EMILY_F32, 0, NULL, &half);
    CHECK_OK(emily_transpose(t, NULL, &tt));
    int64_t lo[2] = {0, 1}, hi[2] = {0, 0};
    CHECK_OK(emily_pad(tt, v, lo, hi, NULL, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_F32);
    double w[6] = {0.5, 1, 3, 0.5, 2, 4};
    CHECK(t_equals(r, 6, w));
    emily_tensor_release(r);
    int64_t badin[2] = {0, -1};
    CHECK_ERR(emily_pad(t, v, lo, hi, badin, &r), EMILY_ERR_ARGUMENT, "interior");
    int64_t cut[2] = {-3, 0};
    CHECK_ERR(emily_pad(t, v, cut, hi, NULL, &r), EMILY_ERR_SHAPE, "negative size");
    CHECK_ERR(emily_pad(t, t, lo, hi, NULL, &r), EMILY_ERR_SHAPE, "scalar");
    int64_t huge[2] = {INT64_MAX, 0}, hugein[2] = {INT64_MAX / 2, 0};
    CHECK_ERR(emily_pad(t, v, huge, huge, NULL, &r), EMILY_ERR_SHAPE, "too large");
    CHECK_ERR(emily_pad(t, v, lo, hi, hugein, &r), EMILY_ERR_SHAPE, "");
    CHECK_ERR(emily_pad(t, NULL, lo, hi, NULL, &r), EMILY_ERR_ARGUMENT, "pad value");
    CHECK_ERR(emily_pad(t, v, NULL, hi, NULL, &r), EMILY_ERR_ARGUMENT, "NULL");
    RELEASE(v, tt, t);
}

TEST(concatenate_and_stack) {
    emily_tensor *a = t_iota(EMILY_F32, 2, S2x3), *r = NULL;
    uint8_t bd[2] = {7, 8};
    int64_t s2x1[2] = {2, 1};
    emily_tensor *b = t_from(EMILY_U8, 2, s2x1, bd);
    const emily_tensor *ab[2] = {a, b};
    CHECK_OK(emily_concatenate(2, ab, -1, EMILY_DTYPE_AUTO, &r));
    int64_t ws[2] = {2, 4};
    CHECK(t_shape_is(r, 2, ws) && emily_tensor_dtype(r) == EMILY_F32);
    double w[8] = {0, 1, 2, 7, 3, 4, 5, 8};
    CHECK(t_equals(r, 8, w));
    emily_tensor_release(r);
    CHECK_OK(emily_concatenate(2, ab, 1, EMILY_F64, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_F64);
    emily_tensor_release(r);
    CHECK_ERR(emily_concatenate(2, ab, 0, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "tensor 1 has shape {2, 1}");
    CHECK_ERR(emily_concatenate(0, ab, 0, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, "non-empty");
    CHECK_ERR(emily_concatenate(2, ab, 2, EMILY_DTYPE_AUTO, &r), EMILY_ERR_AXIS, "out of range");
    const emily_tensor *an[2] = {a, NULL};
    CHECK_ERR(emily_concatenate(2, an, 0, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, "tensor 1");
    /* stack: a new axis */
    const emily_tensor *aa[2] = {a, a};
    CHECK_OK(emily_stack(2, aa, 2, EMILY_DTYPE_AUTO, &r));
    int64_t ws3[3] = {2, 3, 2};
    CHECK(t_shape_is(r, 3, ws3));
    double w3[12] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5};
    CHECK(t_equals(r, 12, w3));
    emily_tensor_release(r);
    CHECK_ERR(emily_stack(2, ab, 0, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "expected {2, 3}");
    float x = 1, y = 2;
    emily_tensor *sx = t_from(EMILY_F32, 0, NULL, &x), *sy = t_from(EMILY_F32, 0, NULL, &y);
    const emily_tensor *ss[2] = {sx, sy};
    CHECK_OK(emily_stack(2, ss, 0, EMILY_DTYPE_AUTO, &r));
    double w4[2] = {1, 2};
    CHECK(t_equals(r, 2, w4));
    emily_tensor_release(r);
    CHECK_ERR(emily_concatenate(2, ss, 0, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "scalars");
    RELEASE(sx, sy, a, b);
}

TEST(put_slice_clamps) {
    emily_tensor *t = t_iota(EMILY_F32, 2, S2x3), *r = NULL;
    int32_t ud[2] = {-1, -2};
    int64_t s1x2[2] = {1, 2};
    emily_tensor *u = t_from(EMILY_S32, 2, s1x2, ud);
    int64_t st[2] = {5, 5};
    CHECK_OK(emily_put_slice(t, st, u, EMILY_DTYPE_AUTO, &r));
    CHECK(emily_tensor_dtype(r) == EMILY_F32);
    double w[6] = {0, 1, 2, 3, -1, -2};
    CHECK(t_equals(r, 6, w));
    emily_tensor_release(r);
    int64_t s2x4[2] = {2, 4};
    emily_tensor *big = t_iota(EMILY_F32, 2, s2x4);
    CHECK_ERR(emily_put_slice(t, st, big, EMILY_DTYPE_AUTO, &r), EMILY_ERR_SHAPE, "does not fit");
    CHECK_ERR(emily_put_slice(t, NULL, u, EMILY_DTYPE_AUTO, &r), EMILY_ERR_ARGUMENT, "NULL");
    RELEASE(big, u, t);
}

TEST(write_slice_in_place) {
    /* a cache of 2 x 4 rows written a row at a time, seen through a view */
    int64_t s2x4[2] = {2, 4}, s1x4[2] = {1, 4}, s2x2[2] = {2, 2}, s4x2[2] = {4, 2};
    emily_tensor *cache = NULL, *view = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_F32, 2, s2x4, emily_scalar_float(0), &cache));
    int64_t v0[2] = {1, 0}, vl[2] = {1, 4};
    CHECK_OK(emily_slice(cache, v0, vl, NULL, &view)); /* row 1, before the writes */
    float r0[4] = {1, 2, 3, 4}, r1[4] = {5, 6, 7, 8};
    emily_tensor *u0 = t_from(EMILY_F32, 2, s1x4, r0), *u1 = t_from(EMILY_F32, 2, s1x4, r1);
    int64_t at0[2] = {0, 0}, at1[2] = {1, 0};
    CHECK_OK(emily_write_slice(cache, at0, u0));
    CHECK_OK(emily_write_slice(cache, at1, u1));
    double want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    CHECK(t_equals(cache, 8, want));
    CHECK(t_equals(view, 4, want + 4));
    /* into a strided view: the transposed cache's block of columns 1..2 */
    emily_tensor *tr = NULL, *blk = t_iota(EMILY_F32, 2, s2x2);
    CHECK_OK(emily_transpose(cache, NULL, &tr)); /* {4, 2}, strides {1, 4} */
    CHECK(emily_tensor_shape(tr)[0] == s4x2[0]);
    int64_t at[2] = {1, 0};
    CHECK_OK(emily_write_slice(tr, at, blk)); /* tr[1..2][0..1] = {{0, 1}, {2, 3}} */
    double want2[8] = {1, 0, 2, 4, 5, 1, 3, 8};
    CHECK(t_equals(cache, 8, want2));
    /* an empty update writes nothing; a fitting one at the far edge works */
    int64_t s0x4[2] = {0, 4}, at_end[2] = {2, 0};
    emily_tensor *empty = t_iota(EMILY_F32, 2, s0x4);
    CHECK_OK(emily_write_slice(cache, at_end, empty));
    CHECK(t_equals(cache, 8, want2));
    /* errors: not clamped, type, rank, NULLs, broadcast target */
    CHECK_ERR(emily_write_slice(cache, at_end, u0), EMILY_ERR_SHAPE, "does not fit");
    int64_t neg[2] = {-1, 0};
    CHECK_ERR(emily_write_slice(cache, neg, u0), EMILY_ERR_SHAPE, "does not fit");
    int32_t ints[4] = {1, 2, 3, 4};
    emily_tensor *ui = t_from(EMILY_S32, 2, s1x4, ints), *flat = NULL;
    CHECK_ERR(emily_write_slice(cache, at0, ui), EMILY_ERR_TYPE, "convert it first");
    CHECK_OK(emily_reshape(u0, 1, (int64_t[]){4}, &flat));
    CHECK_ERR(emily_write_slice(cache, at0, flat), EMILY_ERR_SHAPE, "ranks differ");
    CHECK_ERR(emily_write_slice(NULL, at0, u0), EMILY_ERR_ARGUMENT, "target is NULL");
    CHECK_ERR(emily_write_slice(cache, at0, NULL), EMILY_ERR_ARGUMENT, "update is NULL");
    CHECK_ERR(emily_write_slice(cache, NULL, u0), EMILY_ERR_ARGUMENT, "NULL");
    emily_tensor *one = NULL, *wide = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_F32, 2, s1x4, emily_scalar_float(0), &one));
    CHECK_OK(emily_broadcast(one, 2, s2x4, NULL, &wide));
    CHECK_ERR(emily_write_slice(wide, at0, blk), EMILY_ERR_SHAPE, "broadcast");
    RELEASE(wide, one, flat, ui, empty, tr, blk, u1, u0, view, cache);
}

TEST(copies_keep_bits) {
    /* NaN payloads, -0.0 and integer extremes survive every copying op */
    uint32_t bits[4] = {0x7fc00001u, 0x80000000u, 0xff800000u, 0x7f7fffffu};
    int64_t s4[1] = {4}, s2x2[2] = {2, 2};
    emily_tensor *t = t_from(EMILY_F32, 1, s4, bits), *r = NULL, *m = NULL, *tt = NULL, *c = NULL;
    CHECK_OK(emily_reshape(t, 2, s2x2, &m));
    CHECK_OK(emily_transpose(m, NULL, &tt));
    CHECK_OK(emily_contiguous(tt, &c));
    uint32_t got[4];
    CHECK_OK(emily_to_binary(c, got, sizeof got));
    CHECK(got[0] == bits[0] && got[1] == bits[2] && got[2] == bits[1] && got[3] == bits[3]);
    const emily_tensor *two[2] = {t, t};
    CHECK_OK(emily_concatenate(2, two, 0, EMILY_DTYPE_AUTO, &r));
    uint32_t got8[8];
    CHECK_OK(emily_to_binary(r, got8, sizeof got8));
    CHECK(memcmp(got8, bits, 16) == 0 && memcmp(got8 + 4, bits, 16) == 0);
    emily_tensor_release(r);
    int64_t i64[2] = {INT64_MIN, INT64_MAX};
    int64_t s2[1] = {2};
    emily_tensor *ti = t_from(EMILY_S64, 1, s2, i64), *rv = NULL;
    int ax[1] = {0};
    CHECK_OK(emily_reverse(ti, 1, ax, &rv));
    int64_t back[2];
    CHECK_OK(emily_to_binary(rv, back, sizeof back));
    CHECK(back[0] == INT64_MAX && back[1] == INT64_MIN);
    RELEASE(rv, ti, c, tt, m, t);
}

/* pad's shape is checked against Nx's template before the work: a
 * padding of 2^40 on a {2} tensor asks for 2^40 + 2 elements. */
TEST(pad_checks_the_template_before_the_work) {
    int64_t two[1] = {2};
    emily_tensor *t = t_zero_view(EMILY_F32, 1, two), *v = SCALAR(EMILY_F32, float, 0);
    emily_value cfg_items[3] = {v_int(0), v_int((int64_t)1 << 40), v_int(0)}, cfg = v_list(cfg_items, 3);
    emily_value args[3] = {v_tensor(t), v_tensor(v), v_list(&cfg, 1)}, tmpl = v_tmpl(EMILY_F32, 1, two);
    CHECK_TEMPLATE_FIRST("pad", &tmpl, args, 3, "pad: output 0 is f32{1099511627778} but Nx expects f32{2}");
    RELEASE(t, v);
}

RUN_TESTS("shape", CASE(reshape_is_a_view_when_possible), CASE(reshape_scalars_and_empty), CASE(reshape_errors),
          CASE(squeeze_axes), CASE(high_ranks_past_the_inline_scratch), CASE(broadcast_views), CASE(transpose_views),
          CASE(transpose_copy_large), CASE(reverse_views), CASE(slice_clamps_and_strides),
          CASE(pad_edges_interior_negative), CASE(pad_types_and_views), CASE(concatenate_and_stack),
          CASE(put_slice_clamps), CASE(write_slice_in_place), CASE(copies_keep_bits),
          CASE(pad_checks_the_template_before_the_work))
