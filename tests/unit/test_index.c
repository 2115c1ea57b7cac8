/* Index family: take, take_along_axis, gather, indexed_add, indexed_put
 * against loops written here from Nx's definitions, over dtypes, index
 * types, strided views, repeated indices, rounding and wrapping, and
 * bad arguments (out-of-range indices fail with EMILY_ERR_INDEX). */
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"

static const emily_dtype INDEX_TYPES[] = {EMILY_U8, EMILY_U16, EMILY_U32, EMILY_U64,
                                          EMILY_S8, EMILY_S16, EMILY_S32, EMILY_S64};

/* An index tensor of dtype dt holding vals. */
static emily_tensor *idx_t(emily_dtype dt, int rank, const int64_t *shape, const int64_t *vals) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    emily_tensor *s = t_from(EMILY_S64, rank, shape, vals), *t = NULL;
    if (emily_as_type(s, dt, &t)) t = NULL;
    emily_tensor_release(s);
    (void)n;
    return t;
}

/* ---- take ---------------------------------------------------------------- */

TEST(take_every_axis_and_index_type) {
    int64_t shape[3] = {3, 4, 5};
    emily_tensor *t = t_iota(EMILY_S32, 3, shape);
    int64_t ishape[2] = {2, 3}, iv[6] = {2, 0, 1, 1, 2, 0};
    for (size_t it = 0; it < sizeof INDEX_TYPES / sizeof *INDEX_TYPES; it++) {
        emily_tensor *idx = idx_t(INDEX_TYPES[it], 2, ishape, iv);
        for (int axis = 0; axis < 3; axis++) {
            emily_tensor *o = NULL;
            CHECK_OK(emily_take(t, idx, axis - 3 * (axis == 2), &o));
            if (!o) continue;
            /* out shape: shape[:axis] ++ {2, 3} ++ shape[axis+1:] */
            int64_t want_shape[4];
            int r = 0;
            for (int i = 0; i < axis; i++) want_shape[r++] = shape[i];
            want_shape[r++] = 2;
            want_shape[r++] = 3;
            for (int i = axis + 1; i < 3; i++) want_shape[r++] = shape[i];
            CHECK(t_shape_is(o, 4, want_shape));
            int64_t outer = 1, inner = 1;
            for (int i = 0; i < axis; i++) outer *= shape[i];
            for (int i = axis + 1; i < 3; i++) inner *= shape[i];
            bool ok = true;
            for (int64_t a = 0; a < outer; a++)
                for (int64_t j = 0; j < 6; j++)
                    for (int64_t b = 0; b < inner; b++) {
                        double want = (double)((a * shape[axis] + iv[j]) * inner + b);
                        ok = ok && t_get(o, (a * 6 + j) * inner + b) == want;
                    }
            CHECK(ok);
            emily_tensor_release(o);
        }
        emily_tensor_release(idx);
    }
    emily_tensor_release(t);
}

TEST(take_views_scalars_and_wide_elements) {
    /* a transposed c128 tensor: 16-byte elements through a copy */
    int64_t shape[2] = {3, 2};
    double cd[12] = {0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5};
    emily_tensor *c = t_from(EMILY_C128, 2, shape, cd), *ct = NULL, *o = NULL;
    int perm[2] = {1, 0};
    CHECK_OK(emily_transpose(c, perm, &ct)); /* {2, 3}: [[0, 2, 4], [1, 3, 5]] + i/2 */
    int64_t one = 1, iv1[1] = {2};
    emily_tensor *idx = idx_t(EMILY_S16, 1, &one, iv1);
    CHECK_OK(emily_take(ct, idx, 1, &o));
    double got[4];
    if (o) CHECK_OK(emily_to_binary(o, got, sizeof got));
    CHECK(o && got[0] == 4 && got[1] == 4.5 && got[2] == 5 && got[3] == 5.5);
    emily_tensor_release(o);
    emily_tensor_release(idx);
    /* a rank-0 index removes the axis */
    int64_t zero = 1;
    idx = idx_t(EMILY_U8, 0, NULL, &zero);
    CHECK_OK(emily_take(ct, idx, 0, &o));
    int64_t s3[1] = {3};
    CHECK(o && t_shape_is(o, 1, s3) && t_get(o, 0) == 1 && t_get(o, 2) == 5);
    emily_tensor_release(o);
    emily_tensor_release(idx);
    /* an empty index tensor */
    int64_t e0 = 0;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_S32, 1, &e0, &idx));
    CHECK_OK(emily_take(ct, idx, 1, &o));
    int64_t ws[2] = {2, 0};
    CHECK(o && t_shape_is(o, 2, ws));
    emily_tensor_release(o);
    emily_tensor_release(idx);
    /* a broadcast tensor with a long index list (threaded path) */
    int64_t big = 400000;
    int64_t *bv = malloc(sizeof(int64_t) * (size_t)big);
    for (int64_t i = 0; i < big; i++) bv[i] = (i * 7) % 5;
    idx = idx_t(EMILY_S64, 1, &big, bv);
    float f[5] = {10, 11, 12, 13, 14};
    int64_t five = 5;
    emily_tensor *tf = t_from(EMILY_F32, 1, &five, f);
    CHECK_OK(emily_take(tf, idx, 0, &o));
    bool ok = o != NULL;
    for (int64_t i = 0; ok && i < big; i += 997) ok = t_get(o, i) == 10 + (double)bv[i];
    CHECK(ok);
    emily_tensor_release(o);
    int64_t bshape[2] = {3, 5};
    int baxes[1] = {1};
    emily_tensor *tb = NULL;
    CHECK_OK(emily_broadcast(tf, 2, bshape, baxes, &tb));
    CHECK_OK(emily_take(tb, idx, 1, &o));
    int64_t wshape[2] = {3, big};
    ok = o && t_shape_is(o, 2, wshape);
    for (int64_t i = 0; ok && i < big; i += 1009) ok = t_get(o, 2 * big + i) == 10 + (double)bv[i];
    CHECK(ok);
    RELEASE(o, tb, tf, idx);
    free(bv);
    emily_tensor_release(ct);
    emily_tensor_release(c);
}

TEST(take_errors) {
    int64_t shape[2] = {2, 3};
    emily_tensor *t = t_iota(EMILY_F32, 2, shape), *o = NULL;
    int64_t two = 2, bad[2] = {0, 3}, neg[2] = {-1, 0};
    emily_tensor *ib = idx_t(EMILY_S32, 1, &two, bad), *in = idx_t(EMILY_S8, 1, &two, neg);
    /* Nx 0.13 takes through gather(t, idx, axes: [1]), whose reference
     * transposes the taken axis to the front: axis 0 of {3, 2} */
    CHECK_ERR(emily_take(t, ib, 1, &o), EMILY_ERR_INDEX, "index 3 is out of bounds for axis 0 in shape {3, 2}");
    CHECK(strcmp(emily_last_error(), "index 3 is out of bounds for axis 0 in shape {3, 2}") == 0);
    CHECK_ERR(emily_take(t, in, 0, &o), EMILY_ERR_INDEX, "index -1 is out of bounds for axis 0 in shape {2, 3}");
    uint64_t huge[2] = {1, UINT64_MAX};
    emily_tensor *ih = t_from(EMILY_U64, 1, &two, huge);
    CHECK_ERR(emily_take(t, ih, 0, &o), EMILY_ERR_INDEX, "index 18446744073709551615 is out of bounds");
    float fi[2] = {0, 1};
    emily_tensor *ifl = t_from(EMILY_F32, 1, &two, fi);
    CHECK_ERR(emily_take(t, ifl, 0, &o), EMILY_ERR_TYPE, "indices must be an integer tensor, got f32");
    CHECK_ERR(emily_take(t, ib, 2, &o), EMILY_ERR_AXIS, "axis 2");
    CHECK_ERR(emily_take(NULL, ib, 0, &o), EMILY_ERR_ARGUMENT, "tensor is NULL");
    CHECK_ERR(emily_take(t, NULL, 0, &o), EMILY_ERR_ARGUMENT, "indices is NULL");
    CHECK_ERR(emily_take(t, ib, 0, NULL), EMILY_ERR_ARGUMENT, "output pointer");
    emily_tensor *sc = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_F32, 0, NULL, emily_scalar_float(1), &sc));
    CHECK_ERR(emily_take(sc, in, 0, &o), EMILY_ERR_AXIS, "rank 0");
    CHECK(o == NULL);
    RELEASE(sc, ifl, ih, ib, in, t);
}

/* ---- take_along_axis ----------------------------------------------------- */

TEST(take_along_axis_matches_definition) {
    int64_t shape[3] = {2, 3, 4};
    emily_tensor *t = t_iota(EMILY_F64, 3, shape);
    for (int axis = 0; axis < 3; axis++) {
        int64_t ishape[3] = {2, 3, 4};
        ishape[axis] = 5;
        int64_t n = 2 * 3 * 4 / shape[axis] * 5;
        int64_t *iv = malloc(sizeof(int64_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) iv[i] = (i * 5 + 3) % shape[axis];
        emily_tensor *idx = idx_t(EMILY_U16, 3, ishape, iv), *o = NULL;
        CHECK_OK(emily_take_along_axis(t, idx, axis, &o));
        CHECK(o && t_shape_is(o, 3, ishape) && emily_tensor_dtype(o) == EMILY_F64);
        bool ok = o != NULL;
        for (int64_t a = 0; ok && a < ishape[0]; a++)
            for (int64_t b = 0; ok && b < ishape[1]; b++)
                for (int64_t c = 0; ok && c < ishape[2]; c++) {
                    int64_t pos = (a * ishape[1] + b) * ishape[2] + c;
                    int64_t co[3] = {a, b, c};
                    co[axis] = iv[pos];
                    ok = t_get(o, pos) == (double)((co[0] * 3 + co[1]) * 4 + co[2]);
                }
        CHECK(ok);
        emily_tensor_release(o);
        emily_tensor_release(idx);
        free(iv);
    }
    /* argsort + take_along_axis sorts (the doctest) on a reversed view */
    emily_tensor *rv = NULL, *as = NULL, *o = NULL, *s = NULL;
    int axes[1] = {2};
    CHECK_OK(emily_reverse(t, 1, axes, &rv));
    CHECK_OK(emily_argsort(rv, 2, EMILY_SORT_ASC, false, EMILY_DTYPE_AUTO, &as));
    CHECK_OK(emily_take_along_axis(rv, as, 2, &o));
    CHECK_OK(emily_sort(rv, 2, EMILY_SORT_ASC, false, &s));
    bool same = o && s;
    for (int64_t i = 0; same && i < 24; i++) same = t_get(o, i) == t_get(s, i);
    CHECK(same);
    RELEASE(o, s, as, rv);

    /* errors */
    int64_t bad_shape[3] = {2, 2, 4}, bad_rank[2] = {2, 3};
    int64_t zeros[24] = {0};
    emily_tensor *i1 = idx_t(EMILY_S32, 3, bad_shape, zeros), *i2 = idx_t(EMILY_S32, 2, bad_rank, zeros);
    CHECK_ERR(emily_take_along_axis(t, i1, 0, &o), EMILY_ERR_SHAPE, "every axis but 0");
    CHECK_ERR(emily_take_along_axis(t, i2, 0, &o), EMILY_ERR_SHAPE, "rank");
    int64_t big[24];
    for (int i = 0; i < 24; i++) big[i] = i == 17 ? 4 : 0;
    emily_tensor *i3 = idx_t(EMILY_S64, 3, shape, big);
    /* gather on every axis in order: the axis itself, the tensor's shape */
    CHECK_ERR(emily_take_along_axis(t, i3, 2, &o), EMILY_ERR_INDEX, "index 4 is out of bounds for axis 2");
    CHECK(strcmp(emily_last_error(), "index 4 is out of bounds for axis 2 in shape {2, 3, 4}") == 0);
    CHECK_ERR(emily_take_along_axis(t, i3, 0, &o), EMILY_ERR_INDEX, "index 4 is out of bounds for axis 0");
    CHECK(o == NULL);
    /* an empty axis has no valid index: every index is out of bounds
     * (found by fuzz_graph: the kernel addressed the empty source first) */
    int64_t empty_shape[3] = {0, 3, 4}, one_row[3] = {1, 3, 4};
    emily_tensor *e = NULL, *i4 = idx_t(EMILY_S32, 3, one_row, zeros);
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 3, empty_shape, &e));
    CHECK_ERR(emily_take_along_axis(e, i4, 0, &o), EMILY_ERR_INDEX,
              "index 0 is out of bounds for axis 0 in shape {0, 3, 4}");
    CHECK(o == NULL);
    RELEASE(e, i4, i1, i2, i3, t);
}

/* ---- gather -------------------------------------------------------------- */

TEST(gather_axes) {
    int64_t shape[3] = {2, 3, 4};
    emily_tensor *t = t_iota(EMILY_S16, 3, shape), *o = NULL;
    /* full indexing: scalars */
    int64_t ish[2] = {3, 3}, iv[9] = {1, 2, 3, 0, 0, 0, 1, 0, 2};
    emily_tensor *idx = idx_t(EMILY_S32, 2, ish, iv);
    CHECK_OK(emily_gather(t, idx, 0, NULL, &o));
    double w1[3] = {23, 0, 14};
    CHECK(t_equals(o, 3, w1));
    emily_tensor_release(o);
    emily_tensor_release(idx);
    /* axes [0, 2]: slices along axis 1 */
    int64_t ish2[3] = {2, 1, 2}, iv2[4] = {1, 3, 0, 1};
    idx = idx_t(EMILY_U8, 3, ish2, iv2);
    int ax02[2] = {0, -1};
    CHECK_OK(emily_gather(t, idx, 2, ax02, &o));
    int64_t ws[3] = {2, 1, 3};
    double w2[6] = {15, 19, 23, 1, 5, 9};
    CHECK(o && t_shape_is(o, 3, ws) && t_equals(o, 6, w2));
    emily_tensor_release(o);
    emily_tensor_release(idx);
    /* axes [1] on a transposed view */
    emily_tensor *tv = NULL;
    int perm[3] = {2, 0, 1}; /* {4, 2, 3} */
    CHECK_OK(emily_transpose(t, perm, &tv));
    int64_t ish3[2] = {2, 1}, iv3[2] = {1, 0};
    idx = idx_t(EMILY_S64, 2, ish3, iv3);
    int ax1[1] = {1};
    CHECK_OK(emily_gather(tv, idx, 1, ax1, &o));
    int64_t ws3[3] = {2, 4, 3};
    CHECK(o && t_shape_is(o, 3, ws3));
    bool ok = o != NULL;
    for (int64_t r = 0; ok && r < 2; r++)
        for (int64_t a = 0; ok && a < 4; a++)
            for (int64_t c = 0; ok && c < 3; c++)
                ok = t_get(o, (r * 4 + a) * 3 + c) == (double)((iv3[r] * 3 + c) * 4 + a);
    CHECK(ok);
    RELEASE(o, idx, tv);
    /* an index row of length 0 takes the whole tensor */
    int64_t ish4[2] = {2, 0};
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_S32, 2, ish4, &idx));
    CHECK_OK(emily_gather(t, idx, 0, NULL, &o));
    int64_t ws4[4] = {2, 2, 3, 4};
    CHECK(o && t_shape_is(o, 4, ws4) && t_get(o, 24 + 23) == 23);
    emily_tensor_release(o);
    emily_tensor_release(idx);

    /* errors */
    idx = idx_t(EMILY_S32, 2, ish, iv);
    int rev[3] = {2, 0, 1};
    CHECK_ERR(emily_gather(t, idx, 3, rev, &o), EMILY_ERR_AXIS, "increasing");
    int two[2] = {0, 1};
    CHECK_ERR(emily_gather(t, idx, 2, two, &o), EMILY_ERR_SHAPE, "2 axes given");
    int dup[3] = {0, 0, 1};
    CHECK_ERR(emily_gather(t, idx, 3, dup, &o), EMILY_ERR_AXIS, "more than once");
    int64_t bad[9] = {1, 2, 4, 0, 0, 0, 1, 0, 2};
    emily_tensor *ib = idx_t(EMILY_S32, 2, ish, bad);
    CHECK_ERR(emily_gather(t, ib, 0, NULL, &o), EMILY_ERR_INDEX,
              "index 4 is out of bounds for axis 2 in shape {2, 3, 4}");
    int64_t wide_sh[2] = {1, 4}, wide[4] = {0, 0, 0, 0};
    emily_tensor *iw = idx_t(EMILY_S32, 2, wide_sh, wide);
    CHECK_ERR(emily_gather(t, iw, 0, NULL, &o), EMILY_ERR_SHAPE, "larger than the rank");
    emily_tensor *is = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_S32, 0, NULL, emily_scalar_int(0), &is));
    CHECK_ERR(emily_gather(t, is, 0, NULL, &o), EMILY_ERR_SHAPE, "rank 1 or more");
    CHECK(o == NULL);
    RELEASE(is, iw, ib, idx, t);
}

/* ---- indexed_add / indexed_put ------------------------------------------- */

TEST(indexed_repeats_types_and_blocks) {
    /* the doctest: repeated positions add up; put keeps the last */
    int64_t shape[3] = {1, 2, 3};
    emily_tensor *t = t_iota(EMILY_S32, 3, shape), *o = NULL;
    int64_t ish[2] = {5, 3}, iv[15] = {0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 2, 0, 1, 2};
    int64_t ush = 5, uv[5] = {1, 3, 1, -2, 5};
    emily_tensor *idx = idx_t(EMILY_S32, 2, ish, iv), *upd = idx_t(EMILY_S32, 1, &ush, uv);
    CHECK_OK(emily_indexed_add(t, idx, upd, 0, NULL, EMILY_DTYPE_AUTO, &o));
    double wa[6] = {2, 1, 0, 3, 7, 10};
    CHECK(t_equals(o, 6, wa) && emily_tensor_dtype(o) == EMILY_S32);
    emily_tensor_release(o);
    CHECK_OK(emily_indexed_put(t, idx, upd, 0, NULL, EMILY_DTYPE_AUTO, &o));
    double wp[6] = {1, 1, -2, 3, 3, 5};
    CHECK(t_equals(o, 6, wp));
    emily_tensor_release(o);
    /* type merge: s32 target, f32 updates -> f32; u8 updates -> s32 */
    float fu[5] = {0.5f, 0.25f, 0.5f, 1, 1};
    emily_tensor *uf = t_from(EMILY_F32, 1, &ush, fu);
    CHECK_OK(emily_indexed_add(t, idx, uf, 0, NULL, EMILY_DTYPE_AUTO, &o));
    double wf[6] = {1, 1, 3, 3, 4.25, 6};
    CHECK(t_equals(o, 6, wf) && emily_tensor_dtype(o) == EMILY_F32);
    emily_tensor_release(o);
    CHECK_ERR(emily_indexed_add(t, idx, uf, 0, NULL, EMILY_S64, &o), EMILY_ERR_TYPE, "cannot hold");
    RELEASE(uf, upd, idx, t);

    /* f16: the updates of a position are summed first (in f64), then
     * added to the target and rounded once: 2048 + (1 + 1) = 2050,
     * where adding one at a time would round back to 2048 */
    int64_t one = 1, two = 2;
    uint16_t h2048 = 0x6800, h1 = 0x3c00;
    uint16_t hu[2] = {h1, h1};
    emily_tensor *th = t_from(EMILY_F16, 1, &one, &h2048), *uh = t_from(EMILY_F16, 1, &two, hu);
    int64_t i2sh[2] = {2, 1}, i2[2] = {0, 0};
    idx = idx_t(EMILY_U32, 2, i2sh, i2);
    CHECK_OK(emily_indexed_add(th, idx, uh, 0, NULL, EMILY_DTYPE_AUTO, &o));
    CHECK(o && t_get(o, 0) == 2050);
    emily_tensor_release(o);
    /* integers wrap */
    uint8_t u200 = 200, u100[2] = {100, 100};
    emily_tensor *t8 = t_from(EMILY_U8, 1, &one, &u200), *u8 = t_from(EMILY_U8, 1, &two, u100);
    CHECK_OK(emily_indexed_add(t8, idx, u8, 0, NULL, EMILY_DTYPE_AUTO, &o));
    CHECK(o && emily_tensor_dtype(o) == EMILY_U8 && t_get(o, 0) == 144);
    emily_tensor_release(o);
    /* NaN and infinities */
    float finf[2] = {INFINITY, -INFINITY}, f0 = 1;
    emily_tensor *tf = t_from(EMILY_F32, 1, &one, &f0), *ui = t_from(EMILY_F32, 1, &two, finf);
    CHECK_OK(emily_indexed_add(tf, idx, ui, 0, NULL, EMILY_DTYPE_AUTO, &o));
    CHECK(o && isnan(t_get(o, 0)));
    emily_tensor_release(o);
    CHECK_OK(emily_indexed_put(tf, idx, ui, 0, NULL, EMILY_DTYPE_AUTO, &o));
    CHECK(o && t_get(o, 0) == -INFINITY);
    emily_tensor_release(o);
    /* complex sums */
    float cz[2] = {1, 2}, cu[4] = {0.5f, -1, 0.25f, 3};
    emily_tensor *tc = t_from(EMILY_C64, 1, &one, cz), *uc = t_from(EMILY_C64, 1, &two, cu);
    CHECK_OK(emily_indexed_add(tc, idx, uc, 0, NULL, EMILY_DTYPE_AUTO, &o));
    float cr[2] = {0, 0};
    if (o) CHECK_OK(emily_to_binary(o, cr, 8));
    CHECK(cr[0] == 1.75f && cr[1] == 4.0f);
    emily_tensor_release(o);
    /* real target, complex updates -> c64 */
    CHECK_OK(emily_indexed_add(tf, idx, uc, 0, NULL, EMILY_DTYPE_AUTO, &o));
    if (o) CHECK_OK(emily_to_binary(o, cr, 8));
    CHECK(o && emily_tensor_dtype(o) == EMILY_C64 && cr[0] == 1.75f && cr[1] == 2.0f);
    RELEASE(o, tc, uc, tf, ui, t8, u8, th, uh, idx);

    /* a large target and few updates: accumulators found by hashing */
    int64_t bigt = 100000;
    t = t_iota(EMILY_F32, 1, &bigt);
    int64_t hsh[2] = {4, 1}, hv[4] = {5, 99999, 5, 77777};
    idx = idx_t(EMILY_S64, 2, hsh, hv);
    int64_t four = 4;
    double hv_u[4] = {1.5, 2, 0.25, -77777};
    emily_tensor *hu_t = t_from(EMILY_F64, 1, &four, hv_u);
    CHECK_OK(emily_indexed_add(t, idx, hu_t, 0, NULL, EMILY_DTYPE_AUTO, &o));
    CHECK(o && emily_tensor_dtype(o) == EMILY_F64 && t_get(o, 5) == 6.75 && t_get(o, 99999) == 100001 &&
          t_get(o, 77777) == 0 && t_get(o, 6) == 6 && t_get(o, 0) == 0);
    RELEASE(o, hu_t, idx, t);

    /* blocks: axes [0, 2] of {4, 5, 3}, updates {n, 5} fill axis 1; a
     * smaller update {n, 2} covers the first two rows of that axis */
    int64_t tsh[3] = {4, 5, 3};
    t = t_iota(EMILY_F64, 3, tsh);
    emily_tensor *tt = NULL;
    int perm[3] = {0, 1, 2};
    CHECK_OK(emily_transpose(t, perm, &tt));
    int64_t bish[2] = {2, 2}, biv[4] = {3, 1, 0, 2};
    idx = idx_t(EMILY_S8, 2, bish, biv);
    int axes[2] = {0, 2};
    int64_t bush[2] = {2, 2};
    double buv[4] = {-1, -2, -3, -4};
    emily_tensor *bu = t_from(EMILY_F64, 2, bush, buv);
    CHECK_OK(emily_indexed_put(tt, idx, bu, 2, axes, EMILY_DTYPE_AUTO, &o));
    bool ok = o != NULL;
    for (int64_t a = 0; ok && a < 4; a++)
        for (int64_t b = 0; ok && b < 5; b++)
            for (int64_t c = 0; ok && c < 3; c++) {
                double want = (double)((a * 5 + b) * 3 + c);
                if (a == 3 && c == 1 && b < 2) want = buv[b];
                if (a == 0 && c == 2 && b < 2) want = buv[2 + b];
                ok = t_get(o, (a * 5 + b) * 3 + c) == want;
            }
    CHECK(ok);
    emily_tensor_release(o);
    int64_t bigsh[2] = {2, 6};
    double z12[12] = {0};
    emily_tensor *btoo = t_from(EMILY_F64, 2, bigsh, z12);
    CHECK_ERR(emily_indexed_add(t, idx, btoo, 2, axes, EMILY_DTYPE_AUTO, &o), EMILY_ERR_SHAPE,
              "axis 1 of updates {2, 6} is larger than axis 1 of the target {4, 5, 3}");
    RELEASE(btoo, bu, idx, tt, t);
}

TEST(indexed_errors) {
    int64_t shape[2] = {2, 3};
    emily_tensor *t = t_iota(EMILY_F32, 2, shape), *o = NULL;
    int64_t ish[2] = {2, 2}, iv[4] = {0, 1, 1, 3};
    int64_t two = 2;
    float uv[2] = {1, 2};
    emily_tensor *idx = idx_t(EMILY_S32, 2, ish, iv), *u = t_from(EMILY_F32, 1, &two, uv);
    CHECK_ERR(emily_indexed_add(t, idx, u, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_INDEX,
              "index 3 is out of bounds for axis 1 in shape {2, 3}");
    CHECK(strcmp(emily_last_error(), "index 3 is out of bounds for axis 1 in shape {2, 3}") == 0);
    CHECK_ERR(emily_indexed_put(t, idx, u, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_INDEX, "index 3");
    int64_t r3[3] = {1, 1, 2}, z2[2] = {0, 0};
    emily_tensor *i3 = idx_t(EMILY_S32, 3, r3, z2);
    CHECK_ERR(emily_indexed_add(t, i3, u, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_SHAPE, "rank 2 tensor");
    int64_t ish1[2] = {1, 2};
    emily_tensor *i1 = idx_t(EMILY_S32, 2, ish1, z2);
    CHECK_ERR(emily_indexed_add(t, i1, u, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_SHAPE, "leading axis");
    int64_t ish3[2] = {2, 1};
    emily_tensor *i31 = idx_t(EMILY_S32, 2, ish3, z2);
    CHECK_ERR(emily_indexed_add(t, i31, u, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_SHAPE, "rank of the target");
    float fi[4] = {0, 0, 0, 0};
    emily_tensor *ifl = t_from(EMILY_F32, 2, ish, fi);
    CHECK_ERR(emily_indexed_put(t, ifl, u, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_TYPE, "integer");
    int bad_axes[2] = {1, 0};
    CHECK_ERR(emily_indexed_put(t, idx, u, 2, bad_axes, EMILY_DTYPE_AUTO, &o), EMILY_ERR_AXIS, "increasing");
    CHECK_ERR(emily_indexed_put(t, idx, u, 0, NULL, (emily_dtype)77, &o), EMILY_ERR_TYPE, "invalid output type");
    CHECK_ERR(emily_indexed_put(NULL, idx, u, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_ARGUMENT, "target is NULL");
    CHECK_ERR(emily_indexed_put(t, NULL, u, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_ARGUMENT, "indices is NULL");
    CHECK_ERR(emily_indexed_put(t, idx, NULL, 0, NULL, EMILY_DTYPE_AUTO, &o), EMILY_ERR_ARGUMENT, "updates is NULL");
    CHECK_ERR(emily_indexed_put(t, idx, u, 0, NULL, EMILY_DTYPE_AUTO, NULL), EMILY_ERR_ARGUMENT, "output pointer");
    CHECK(o == NULL);
    /* no update rows: the target converted */
    int64_t e0[2] = {0, 2};
    emily_tensor *ie = NULL, *ue = NULL;
    int64_t e1 = 0;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_S32, 2, e0, &ie));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F64, 1, &e1, &ue));
    CHECK_OK(emily_indexed_add(t, ie, ue, 0, NULL, EMILY_DTYPE_AUTO, &o));
    CHECK(o && emily_tensor_dtype(o) == EMILY_F64 && t_get(o, 5) == 5);
    RELEASE(o, ie, ue, ifl, i31, i1, i3, idx, u, t);
}

/* The exact text Nx's suite expects (nx_test.exs "raises when out of
 * bounds" for gather, indexed_add, indexed_put on [[1, 2], [3, 4]]): no
 * op name, the first bad index in row-major order; with a gather on
 * axes that are not the leading ones the reference names the index's
 * position and the tensor transposed to put those axes first. */
TEST(out_of_bounds_messages_are_nx_text) {
    int64_t s22[2] = {2, 2}, i12[2] = {1, 2}, one = 1;
    emily_tensor *t = t_iota(EMILY_S32, 2, s22), *o = NULL;
    int64_t first[2] = {3, -10}, second[2] = {0, -1};
    emily_tensor *i1 = idx_t(EMILY_S32, 2, i12, first), *i2 = idx_t(EMILY_S64, 2, i12, second);
    int32_t uv[1] = {1};
    emily_tensor *u = t_from(EMILY_S32, 1, &one, uv);
    const char *m1 = "index 3 is out of bounds for axis 0 in shape {2, 2}";
    const char *m2 = "index -1 is out of bounds for axis 1 in shape {2, 2}";
    for (int op = 0; op < 3; op++)
        for (int k = 0; k < 2; k++) {
            emily_tensor *ix = k ? i2 : i1;
            emily_status s = op == 0   ? emily_gather(t, ix, 0, NULL, &o)
                             : op == 1 ? emily_indexed_add(t, ix, u, 0, NULL, EMILY_DTYPE_AUTO, &o)
                                       : emily_indexed_put(t, ix, u, 0, NULL, EMILY_DTYPE_AUTO, &o);
            CHECK(s == EMILY_ERR_INDEX && strcmp(emily_last_error(), k ? m2 : m1) == 0 && !o);
        }
    RELEASE(i1, i2, u, t);
    /* gather on axes [1, 2] of a {2, 3, 4} tensor: the reference gathers
     * from the {3, 4, 2} transpose; index 5 is the row's position 1 */
    int64_t s234[3] = {2, 3, 4};
    t = t_iota(EMILY_F32, 3, s234);
    int64_t rows[4] = {0, 1, 2, 5};
    int64_t i22[2] = {2, 2};
    emily_tensor *ig = idx_t(EMILY_U8, 2, i22, rows);
    int axes[2] = {1, 2};
    CHECK_ERR(emily_gather(t, ig, 2, axes, &o), EMILY_ERR_INDEX, "index");
    CHECK(strcmp(emily_last_error(), "index 5 is out of bounds for axis 1 in shape {3, 4, 2}") == 0);
    /* indexed_put on axis [2] alone: {4, 2, 3} */
    int64_t row1[1] = {4}, i11[2] = {1, 1}, us[3] = {1, 2, 3};
    emily_tensor *ip = idx_t(EMILY_S16, 2, i11, row1), *up = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 3, us, &up));
    int ax2[1] = {2};
    CHECK_ERR(emily_indexed_put(t, ip, up, 1, ax2, EMILY_DTYPE_AUTO, &o), EMILY_ERR_INDEX, "index");
    CHECK(strcmp(emily_last_error(), "index 4 is out of bounds for axis 0 in shape {4, 2, 3}") == 0);
    RELEASE(ig, ip, up, t);
}

/* The Nx callbacks: take with Nx 0.13's opts and Nx 0.7's bare axis. */
TEST(callbacks) {
    int64_t shape[2] = {2, 3};
    emily_tensor *t = t_iota(EMILY_S32, 2, shape);
    int64_t two = 2, iv[2] = {2, 0};
    emily_tensor *idx = idx_t(EMILY_S32, 1, &two, iv);
    const char *keys[1] = {"axis"};
    emily_value opt = v_int(1);
    emily_value args[3] = {v_tensor(t), v_tensor(idx), v_opts(keys, &opt, 1)};
    int64_t oshape[2] = {2, 2};
    emily_value tmpl = v_tmpl(EMILY_S32, 2, oshape);
    emily_dispatch_result r = {0};
    double want[4] = {2, 0, 5, 3};
    CHECK_OK(emily_dispatch("take", EMILY_CPU, &tmpl, args, 3, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 1 && t_equals(r.tensors[0], 4, want));
    emily_dispatch_result_release(&r);
    args[2] = v_int(-1); /* Nx 0.7's bare axis */
    CHECK_OK(emily_dispatch("take", EMILY_CPU, &tmpl, args, 3, EMILY_DISPATCH_INFER, &r));
    CHECK(r.n == 1 && t_equals(r.tensors[0], 4, want));
    emily_dispatch_result_release(&r);
    iv[0] = 7;
    emily_tensor *bad = idx_t(EMILY_S32, 1, &two, iv);
    args[1].tensor = bad;
    CHECK_ERR(emily_dispatch("take", EMILY_CPU, &tmpl, args, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_INDEX,
              "index 7 is out of bounds for axis 0 in shape {3, 2}");
    RELEASE(bad, idx, t);
}

/* gather searched the indexed axes for every axis of the tensor:
 * quadratic in the rank, and from_binary accepted rank 1,000,000 (hours).
 * Ranks now stop at EMILY_MAX_RANK, and gather is linear in the rank:
 * here every one of 1024 axes is indexed, by 2000 rows. */
TEST(gather_over_every_axis_of_the_largest_rank) {
    enum { R = EMILY_MAX_RANK, ROWS = 2000 };
    int64_t *ones = malloc(sizeof(int64_t) * 1000000);
    int64_t *idx = calloc((size_t)ROWS * R, sizeof(int64_t));
    int *axes = malloc(sizeof(int) * R);
    if (!ones || !idx || !axes) {
        free(ones);
        free(idx);
        free(axes);
        return;
    }
    for (int i = 0; i < 1000000; i++) ones[i] = 1;
    for (int i = 0; i < R; i++) axes[i] = i;
    float v = 2.5f;
    emily_tensor *t = NULL, *it = NULL, *o = NULL;
    CHECK_ERR(emily_from_binary(EMILY_CPU, EMILY_F32, 1000000, ones, &v, sizeof v, &t), EMILY_ERR_SHAPE,
              "rank 1000000");
    CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_F32, R, ones, &v, sizeof v, &t));
    int64_t ish[2] = {ROWS, R};
    CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_S64, 2, ish, idx, sizeof(int64_t) * ROWS * R, &it));
    CHECK_OK(emily_gather(t, it, R, axes, &o));
    CHECK(o && t_shape_is(o, 1, (int64_t[]){ROWS}) && t_get(o, ROWS - 1) == 2.5);
    emily_tensor_release(o);
    o = NULL;
    CHECK_OK(emily_gather(t, it, 0, NULL, &o));
    CHECK(o && t_shape_is(o, 1, (int64_t[]){ROWS}));
    emily_tensor_release(o);
    /* an index out of range names its axis in the message */
    idx[(ROWS - 1) * R + R - 1] = 1;
    emily_tensor_release(it);
    it = NULL;
    CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_S64, 2, ish, idx, sizeof(int64_t) * ROWS * R, &it));
    o = NULL;
    CHECK_ERR(emily_gather(t, it, R, axes, &o), EMILY_ERR_INDEX, "for axis 1023");
    emily_tensor_release(it);
    emily_tensor_release(t);
    free(ones);
    free(idx);
    free(axes);
}

/* take's and gather's shapes are checked against Nx's template before
 * the work: each index picks a whole slice, so small operands give a
 * huge result (take: 2^20 indices into rows of 2^20; gather: 2^40
 * empty index tuples each picking the whole {2} tensor). */
TEST(index_ops_check_the_template_before_the_work) {
    const int64_t m = (int64_t)1 << 20;
    int64_t rows[2] = {1, m}, n[1] = {m}, tuples[2] = {(int64_t)1 << 40, 0}, two[1] = {2};
    emily_tensor *t = t_zero_view(EMILY_F32, 2, rows), *idx = t_zero_view(EMILY_S32, 1, n);
    emily_tensor *small = t_zero_view(EMILY_F32, 1, two), *none = t_zero_view(EMILY_S32, 2, tuples);
    emily_value tmpl = v_tmpl(EMILY_F32, 1, two);
    emily_value args[3] = {v_tensor(t), v_tensor(idx), v_int(0)};
    CHECK_TEMPLATE_FIRST("take", &tmpl, args, 3, "take: output 0 is f32{1048576, 1048576} but Nx expects f32{2}");
    emily_value gargs[2] = {v_tensor(small), v_tensor(none)};
    CHECK_TEMPLATE_FIRST("gather", &tmpl, gargs, 2, "gather: output 0 is f32{1099511627776, 2} but Nx expects f32{2}");
    RELEASE(t, idx, small, none);
}

RUN_TESTS("index", CASE(take_every_axis_and_index_type), CASE(take_views_scalars_and_wide_elements), CASE(take_errors),
          CASE(take_along_axis_matches_definition), CASE(gather_axes), CASE(indexed_repeats_types_and_blocks),
          CASE(indexed_errors), CASE(out_of_bounds_messages_are_nx_text), CASE(callbacks),
          CASE(gather_over_every_axis_of_the_largest_rank), CASE(index_ops_check_the_template_before_the_work))
