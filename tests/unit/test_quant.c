/* Affine quantization and the fused quantized matmul (emily/ops_quant.h)
 * on the CPU: the packed layout by hand, codes against the header's
 * formula written out here, round-trip error bounds for every width,
 * group size and weight type, zero-range groups, the matmul against
 * x . dequantize(q)^T computed by the engine's own dot at HIGHEST
 * precision (within the header's reordered-sum bound) for both
 * orientations, batched and strided x, f16/bf16/f64 inputs, sizes that
 * cut tiles and use the thread pool, both CPU paths of the transposed
 * product around their threshold and their partial chunks and blocks,
 * an infinite bias next to a chunk's padding, empty operands, the dispatcher's
 * callbacks, and every bad argument. */
#include <stdlib.h>
#include "harness.h"

static const int widths[3] = {2, 4, 8};
static const int64_t group_sizes[3] = {32, 64, 128};
static const emily_dtype floats[4] = {EMILY_F32, EMILY_F16, EMILY_BF16, EMILY_F64};

/* ---- helpers ----------------------------------------------------------------- */

static uint64_t rng = 0x2545f4914f6cdd1dull;

/* Random values in [lo, lo + width), made in f64 and converted to dt. */
static emily_tensor *rnd(emily_dtype dt, int rank, const int64_t *shape, double lo, double width) {
    return t_uniform(&rng, dt, rank, shape, lo, width);
}

static double unit_roundoff(emily_dtype dt) {
    return dt == EMILY_F64 ? 0x1p-53 : dt == EMILY_F32 ? 0x1p-24 : dt == EMILY_F16 ? 0x1p-11 : 0x1p-8;
}

/* The spacing of dt's values around v (bf16: truncation makes it a
 * whole step, not half). */
static double ulp_of(emily_dtype dt, double v) {
    int e;
    double a = fabs(v);
    frexp(a > 1e-300 ? a : 1e-300, &e);
    return ldexp(2.0 * unit_roundoff(dt), e - 1);
}

static emily_tensor *dot_highest(const emily_tensor *a, int ca, const emily_tensor *b, int cb) {
    emily_dot_precision prev;
    emily_tensor *r = NULL;
    CHECK_OK(emily_dot_set_thread_precision(EMILY_DOT_PRECISION_HIGHEST, &prev));
    CHECK_OK(emily_dot(a, 1, &ca, 0, NULL, b, 1, &cb, 0, NULL, EMILY_DTYPE_AUTO, &r));
    CHECK_OK(emily_dot_set_thread_precision(prev, NULL));
    return r;
}

static emily_tensor *absolute(const emily_tensor *t) {
    emily_tensor *r = NULL;
    CHECK_OK(emily_unary(EMILY_ABS, t, &r));
    return r;
}

/* ---- the layout and the codes ------------------------------------------------ */

/* Integers 0..L with 0 and L in each group of 32: scale 1, bias 0, the
 * codes are the values, packed low bits first. */
TEST(packed_layout_by_hand) {
    for (int wi = 0; wi < 3; wi++) {
        int bits = widths[wi], levels = (1 << bits) - 1;
        int64_t k = 256, shape[2] = {1, k};
        float w[256];
        int vals_[256];
        for (int i = 0; i < k; i++) vals_[i] = i % 32 == 0 ? 0 : i % 32 == 1 ? levels : (i * 37) % (levels + 1);
        for (int i = 0; i < k; i++) w[i] = (float)vals_[i];
        emily_tensor *wt = t_from(EMILY_F32, 2, shape, w), *q = NULL, *s = NULL, *b = NULL;
        CHECK_OK(emily_quantize(wt, bits, 32, &q, &s, &b));
        int64_t qs[2] = {1, k * bits / 8}, gs[2] = {1, k / 32};
        CHECK(t_shape_is(q, 2, qs) && emily_tensor_dtype(q) == EMILY_U8);
        CHECK(t_shape_is(s, 2, gs) && emily_tensor_dtype(s) == EMILY_F32);
        CHECK(t_shape_is(b, 2, gs) && emily_tensor_dtype(b) == EMILY_F32);
        uint8_t want[256] = {0};
        for (int i = 0; i < k; i++) want[i * bits / 8] |= (uint8_t)(vals_[i] << ((i * bits) % 8));
        CHECK(t_holds(q, EMILY_U8, want, (size_t)(k * bits / 8)));
        for (int g = 0; g < k / 32; g++) CHECK(t_get(s, g) == 1.0 && t_get(b, g) == 0.0);
        emily_tensor *back = NULL;
        CHECK_OK(emily_dequantize(q, s, b, bits, 32, &back));
        CHECK(t_same_bytes(back, wt));
        RELEASE(wt, q, s, b, back);
    }
}

/* The header's formula in f32, written out: the codes the engine stores
 * for random f32 weights are these. */
TEST(codes_follow_the_formula) {
    int64_t n = 5, k = 256, shape[2] = {5, 256};
    for (int wi = 0; wi < 3; wi++)
        for (int gi = 0; gi < 3; gi++) {
            int bits = widths[wi], levels = (1 << bits) - 1;
            int64_t g = group_sizes[gi];
            emily_tensor *w = rnd(EMILY_F32, 2, shape, -1.5, 4.0), *q = NULL, *s = NULL, *b = NULL;
            CHECK_OK(emily_quantize(w, bits, g, &q, &s, &b));
            double *wv = harness_doubles(w), *sv = harness_doubles(s), *bv = harness_doubles(b),
                   *qv = harness_doubles(q);
            int bad = 0;
            for (int64_t r = 0; wv && sv && bv && qv && r < n; r++)
                for (int64_t gi2 = 0; gi2 < k / g; gi2++) {
                    float lo = INFINITY, hi = -INFINITY;
                    for (int64_t i = 0; i < g; i++) {
                        float x = (float)wv[r * k + gi2 * g + i];
                        lo = x < lo ? x : lo;
                        hi = x > hi ? x : hi;
                    }
                    float range = hi - lo, scale = range / (float)levels;
                    if ((float)sv[r * (k / g) + gi2] != scale || (float)bv[r * (k / g) + gi2] != lo) bad++;
                    for (int64_t i = 0; i < g; i++) {
                        int64_t j = gi2 * g + i;
                        float d = (float)wv[r * k + j] - lo, v = d / scale;
                        unsigned code = !(v > 0) ? 0 : v >= (float)levels ? (unsigned)levels : (unsigned)roundf(v);
                        unsigned byte = (unsigned)qv[r * (k * bits / 8) + j * bits / 8];
                        if (((byte >> ((j * bits) % 8)) & (unsigned)levels) != code) bad++;
                    }
                }
            if (bad) fprintf(stderr, "  bits %d group %lld: %d codes or scales differ\n", bits, (long long)g, bad);
            CHECK(bad == 0);
            free(wv), free(sv), free(bv), free(qv);
            RELEASE(w, q, s, b);
        }
}

/* |w - dequantize(quantize(w))| per group within half a step, plus the
 * rounding of scale and bias to w's type and of the result: every width,
 * group size and weight type, an odd number of rows. */
TEST(round_trip_bounds) {
    int64_t n = 7, k = 384, shape[2] = {7, 384};
    for (int ti = 0; ti < 4; ti++)
        for (int wi = 0; wi < 3; wi++)
            for (int gi = 0; gi < 3; gi++) {
                emily_dtype t = floats[ti];
                int bits = widths[wi], levels = (1 << bits) - 1;
                int64_t g = group_sizes[gi];
                emily_tensor *w = rnd(t, 2, shape, -3.0, 5.0), *q = NULL, *s = NULL, *b = NULL, *back = NULL;
                CHECK_OK(emily_quantize(w, bits, g, &q, &s, &b));
                CHECK_OK(emily_dequantize(q, s, b, bits, g, &back));
                CHECK(back && emily_tensor_dtype(back) == t && t_shape_is(back, 2, shape));
                double *wv = harness_doubles(w), *bk = harness_doubles(back), *sv = harness_doubles(s),
                       *bv = harness_doubles(b);
                double worst = 0;
                for (int64_t r = 0; wv && bk && sv && bv && r < n; r++)
                    for (int64_t i = 0; i < k; i++) {
                        int64_t gi2 = r * (k / g) + i / g;
                        double step = sv[gi2], lo = bv[gi2], hi = lo;
                        for (int64_t j = 0; j < g; j++) {
                            double x = wv[r * k + (i / g) * g + j];
                            lo = x < lo ? x : lo;
                            hi = x > hi ? x : hi;
                        }
                        /* half a step; the bias above lo or the top code short
                         * of hi by their roundings; the result's rounding */
                        double bound = 0.5 * step + fabs(bv[gi2] - lo) + fmax(0.0, hi - (bv[gi2] + levels * step)) +
                                       2 * ulp_of(t, fmax(fabs(lo), fabs(hi)));
                        double err = fabs(wv[r * k + i] - bk[r * k + i]);
                        if (err > bound) worst = fmax(worst, err / bound);
                    }
                if (worst > 0)
                    fprintf(stderr, "  %s bits %d group %lld: error %.3g times the bound\n", emily_dtype_name(t), bits,
                            (long long)g, worst);
                CHECK(worst == 0);
                /* and the plain statement: within about half of the range's step */
                free(wv), free(bk), free(sv), free(bv);
                RELEASE(w, q, s, b, back);
            }
}

/* A constant group (and one of zeros, one of -0.0): scale 0, codes 0,
 * bias the value, dequantized exactly. */
TEST(zero_range_groups) {
    int64_t shape[2] = {3, 64};
    float w[3][64];
    for (int i = 0; i < 64; i++) {
        w[0][i] = 1.5f;
        w[1][i] = i < 32 ? 0.0f : -0.0f;
        w[2][i] = i < 32 ? -7.25f : (float)i;
    }
    for (int ti = 0; ti < 4; ti++) {
        emily_tensor *wt = t_as(t_from(EMILY_F32, 2, shape, w), floats[ti]), *q = NULL, *s = NULL, *b = NULL,
                     *back = NULL;
        CHECK_OK(emily_quantize(wt, 4, 32, &q, &s, &b));
        CHECK_OK(emily_dequantize(q, s, b, 4, 32, &back));
        CHECK(t_get(s, 0) == 0 && t_get(s, 1) == 0 && t_get(s, 2) == 0 && t_get(s, 3) == 0 && t_get(s, 4) == 0 &&
              t_get(s, 5) != 0);
        for (int i = 0; i < 16 * 3; i++) CHECK(i >= 40 || t_get(q, i) == 0);
        for (int i = 0; i < 64 * 2 + 32; i++) CHECK(t_get(back, i) == (double)w[i / 64][i % 64]);
        RELEASE(wt, q, s, b, back);
    }
}

/* ---- the fused matmul -------------------------------------------------------- */

/* out against x . dequantize(...)^T computed by the engine's dot at
 * HIGHEST (scales and biases widened to the accumulation type A first, so
 * the reference's weights are the kernel's), within K * u_A * sum |x w|
 * plus the output's rounding. x has shape xshape (its last axis K). */
static void check_matmul(const char *what, const emily_tensor *x, int bits, int64_t g, bool transpose,
                         const emily_tensor *q, const emily_tensor *s, const emily_tensor *b) {
    emily_dtype xt = emily_tensor_dtype(x), st = emily_tensor_dtype(s);
    emily_dtype acc = (xt == EMILY_F64 || st == EMILY_F64) ? EMILY_F64 : EMILY_F32;
    emily_dtype ot = emily_type_merge(xt, st);
    emily_tensor *out = NULL;
    CHECK_OK(emily_quantized_matmul(x, q, s, b, bits, g, transpose, &out));
    emily_tensor *sa = NULL, *ba = NULL, *deq = NULL, *xa = NULL;
    CHECK_OK(emily_as_type(s, acc, &sa));
    CHECK_OK(emily_as_type(b, acc, &ba));
    CHECK_OK(emily_dequantize(q, sa, ba, bits, g, &deq));
    CHECK_OK(emily_as_type(x, acc, &xa));
    int rank = emily_tensor_rank(x), cw = transpose ? 1 : 0;
    emily_tensor *ref = dot_highest(xa, rank - 1, deq, cw);
    emily_tensor *ax = absolute(xa), *aw = absolute(deq);
    emily_tensor *mag = dot_highest(ax, rank - 1, aw, cw);
    int64_t kdim = emily_tensor_shape(x)[rank - 1];
    if (!out || !ref || !mag || emily_tensor_dtype(out) != ot ||
        !t_shape_is(out, emily_tensor_rank(ref), emily_tensor_shape(ref))) {
        fprintf(stderr, "  %s: no result, or a result of the wrong type or shape\n", what);
        harness_failures++;
    } else {
        int64_t n = emily_tensor_size(out);
        double *o = harness_doubles(out), *r = harness_doubles(ref), *m = harness_doubles(mag);
        int bad = 0;
        for (int64_t i = 0; o && r && m && i < n; i++) {
            double bound = (double)kdim * unit_roundoff(acc) * m[i] * 1.01 + ulp_of(ot, r[i]);
            if (!(fabs(o[i] - r[i]) <= bound)) {
                if (bad++ < 3)
                    fprintf(stderr, "  %s: element %lld: %.17g, reference %.17g, bound %.3g\n", what, (long long)i,
                            o[i], r[i], bound);
            }
        }
        CHECK(bad == 0);
        free(o), free(r), free(m);
    }
    RELEASE(out, sa, ba, deq, xa, ref, ax, aw, mag);
}

/* Weights {rows, cols} of type wt quantized; x of type xt and shape
 * {xrows..., K} against them, both orientations' shapes derived. */
static void matmul_case(emily_dtype xt, emily_dtype wt, int bits, int64_t g, bool transpose, int xrank,
                        const int64_t *xlead, int64_t nout, int64_t kdim) {
    int64_t wshape[2] = {transpose ? nout : kdim, transpose ? kdim : nout};
    int64_t xshape[4];
    for (int d = 0; d < xrank - 1; d++) xshape[d] = xlead[d];
    xshape[xrank - 1] = kdim;
    emily_tensor *w = rnd(wt, 2, wshape, -1.0, 2.5), *x = rnd(xt, xrank, xshape, -2.0, 4.0);
    emily_tensor *q = NULL, *s = NULL, *b = NULL;
    CHECK_OK(emily_quantize(w, bits, g, &q, &s, &b));
    char what[160];
    snprintf(what, sizeof what, "x %s rank %d, w %s {%lld, %lld}, bits %d, group %lld%s", emily_dtype_name(xt), xrank,
             emily_dtype_name(wt), (long long)wshape[0], (long long)wshape[1], bits, (long long)g,
             transpose ? ", transposed" : "");
    check_matmul(what, x, bits, g, transpose, q, s, b);
    RELEASE(w, x, q, s, b);
}

/* Every width and group size, both orientations, odd N (transposed),
 * one row and batched rows. */
TEST(matmul_every_width_and_group) {
    static const int64_t one[1] = {1}, batch[2] = {3, 2};
    for (int wi = 0; wi < 3; wi++)
        for (int gi = 0; gi < 3; gi++) {
            int bits = widths[wi];
            int64_t g = group_sizes[gi];
            matmul_case(EMILY_F32, EMILY_F32, bits, g, true, 2, one, 13, 256);
            matmul_case(EMILY_F32, EMILY_F32, bits, g, true, 3, batch, 29, 384);
            matmul_case(EMILY_F32, EMILY_F32, bits, g, false, 2, one, 256, 40);
            matmul_case(EMILY_F32, EMILY_F32, bits, g, false, 3, batch, 384, 7);
        }
}

/* f16/bf16/f64 inputs and weights (mixed), the output type their merge. */
TEST(matmul_types) {
    static const int64_t lead[1] = {5};
    for (int xi = 0; xi < 4; xi++)
        for (int wi = 0; wi < 4; wi++) {
            matmul_case(floats[xi], floats[wi], 4, 64, true, 2, lead, 11, 192);
            matmul_case(floats[xi], floats[wi], 8, 32, false, 2, lead, 96, 9);
        }
}

/* Sizes that cut the kernel's tiles (K with a partial 512-block, N not a
 * multiple of 8 or 256) and run on the pool; a SmolLM2-size decode row. */
TEST(matmul_tiles_and_threads) {
    static const int64_t m64[1] = {64}, one[1] = {1};
    matmul_case(EMILY_F32, EMILY_F32, 4, 64, true, 2, m64, 301, 640);
    matmul_case(EMILY_F32, EMILY_BF16, 4, 128, true, 2, m64, 300, 1152);
    matmul_case(EMILY_F32, EMILY_F32, 4, 32, false, 2, m64, 544, 130);
    matmul_case(EMILY_F32, EMILY_F32, 4, 64, true, 2, one, 1536, 576);
    matmul_case(EMILY_F64, EMILY_F64, 2, 128, true, 2, m64, 77, 1024);
}

/* The transposed product's two CPU paths (src/cpu/quant_matmul.c):
 * registers for M below 8 rows of x (1, 2, 3 and 4 rows at a time), BLAS
 * blocks from 8; each width, group size and accumulation type, with K
 * not a multiple of the decoder's chunk (4 * lanes bytes: 64 elements
 * at 4 bits in f32, 128 at 2 bits, 32 at 8 bits; half that in f64),
 * groups smaller than a chunk (1, 2 or 4 groups a chunk), N not a
 * multiple of the 4-row tiles or of the BLAS blocks, and N too narrow
 * for one block a thread (x's rows cut too). */
TEST(matmul_paths) {
    static const int64_t rows[7] = {1, 2, 3, 5, 7, 8, 9};
    static const int64_t ks[3] = {0, 1, 3}; /* extra groups past whole chunks of 128 */
    for (int wi = 0; wi < 3; wi++)
        for (int gi = 0; gi < 3; gi++)
            for (int ti = 0; ti < 2; ti++) {
                int bits = widths[wi];
                int64_t g = group_sizes[gi];
                emily_dtype t = ti == 0 ? EMILY_F32 : EMILY_F64;
                for (int mi = 0; mi < 7; mi++) {
                    /* K: 4 whole groups of 128 or 2 groups, then g * ks more */
                    int64_t kdim = (mi % 2 ? 256 : 512) + g * ks[mi % 3];
                    int64_t lead[1] = {rows[mi]}, nout = mi % 2 ? 13 : 30;
                    matmul_case(t, t, bits, g, true, 2, lead, nout, kdim);
                }
            }
    /* many blocks: N = 300 rows of W cut into blocks by M and the threads */
    static const int64_t m37[1] = {37}, m8[1] = {8};
    matmul_case(EMILY_F32, EMILY_F32, 4, 32, true, 2, m37, 300, 96);
    matmul_case(EMILY_F32, EMILY_F32, 2, 32, true, 2, m8, 301, 160);
    matmul_case(EMILY_F64, EMILY_F64, 8, 64, true, 2, m37, 299, 192);
    matmul_case(EMILY_F32, EMILY_BF16, 4, 32, true, 2, m37, 130, 576);
    /* narrow N, many rows of x: x's rows cut into blocks as well */
    static const int64_t m300[1] = {300}, m200[1] = {200};
    matmul_case(EMILY_F32, EMILY_F32, 4, 32, true, 2, m300, 20, 96);
    matmul_case(EMILY_F64, EMILY_F64, 2, 64, true, 2, m200, 5, 192);
    /* K = one group, less than a chunk: only the partial chunk */
    static const int64_t m1[1] = {1};
    matmul_case(EMILY_F32, EMILY_F32, 2, 32, true, 2, m1, 7, 32);
    matmul_case(EMILY_F32, EMILY_F32, 2, 32, true, 2, m8, 7, 32);
    matmul_case(EMILY_F64, EMILY_F64, 4, 32, true, 2, m1, 3, 32);
}

/* A bias of +inf in the group that ends in a partial chunk (K = 96 at 4
 * bits: the last 32 elements; the chunk's other lanes are padding):
 * that row's outputs are +inf (x > 0), not NaN (the padding's weights
 * are exact zeros, not the group's bias), on both paths. */
TEST(matmul_infinite_bias_in_partial_chunk) {
    int64_t ws[2] = {5, 96}, gshape[2] = {5, 3};
    emily_tensor *w = rnd(EMILY_F32, 2, ws, -1.0, 2.0), *q = NULL, *s = NULL, *b = NULL;
    CHECK_OK(emily_quantize(w, 4, 32, &q, &s, &b));
    double *bv = harness_doubles(b);
    if (bv) {
        bv[2] = INFINITY; /* row 0, group 2 (elements 64..95) */
        emily_tensor *binf = t_as(t_from(EMILY_F64, 2, gshape, bv), EMILY_F32);
        for (int mi = 0; mi < 2; mi++) {
            int64_t xs[2] = {mi == 0 ? 1 : 9, 96};
            emily_tensor *x = rnd(EMILY_F32, 2, xs, 0.5, 1.0), *out = NULL;
            CHECK_OK(emily_quantized_matmul(x, q, s, binf, 4, 32, true, &out));
            double *o = harness_doubles(out);
            for (int64_t m = 0; o && m < xs[0]; m++) {
                CHECK(isinf(o[m * 5]) && o[m * 5] > 0);
                for (int n = 1; n < 5; n++) CHECK(isfinite(o[m * 5 + n]));
            }
            free(o);
            RELEASE(x, out);
        }
        RELEASE(binf);
    }
    free(bv);
    RELEASE(w, q, s, b);
}

/* A strided (transposed) x; an x with no rows; K = 0 (zeros). */
TEST(matmul_views_and_empty) {
    int64_t xs[2] = {64, 6}, ws[2] = {10, 64};
    emily_tensor *xt = rnd(EMILY_F32, 2, xs, -1, 2), *x = NULL, *w = rnd(EMILY_F32, 2, ws, -1, 2);
    emily_tensor *q = NULL, *s = NULL, *b = NULL;
    CHECK_OK(emily_transpose(xt, (int[]){1, 0}, &x));
    CHECK_OK(emily_quantize(w, 4, 32, &q, &s, &b));
    check_matmul("transposed x", x, 4, 32, true, q, s, b);
    int64_t none[2] = {0, 64}, want0[2] = {0, 10};
    emily_tensor *x0 = rnd(EMILY_F32, 2, none, 0, 1), *o0 = NULL;
    CHECK_OK(emily_quantized_matmul(x0, q, s, b, 4, 32, true, &o0));
    CHECK(t_shape_is(o0, 2, want0));
    RELEASE(xt, x, w, q, s, b, x0, o0);

    int64_t wz[2] = {3, 0}, xz[2] = {2, 0}, wantz[2] = {2, 3};
    emily_tensor *w2 = rnd(EMILY_F32, 2, wz, 0, 1), *x2 = rnd(EMILY_F32, 2, xz, 0, 1), *oz = NULL;
    CHECK_OK(emily_quantize(w2, 4, 64, &q, &s, &b));
    CHECK_OK(emily_quantized_matmul(x2, q, s, b, 4, 64, true, &oz));
    CHECK(t_shape_is(oz, 2, wantz) && t_equals(oz, 6, (double[]){0, 0, 0, 0, 0, 0}));
    RELEASE(w2, x2, oz, q, s, b);
}

/* ---- the dispatcher ---------------------------------------------------------- */

/* quantize (three outputs), dequantize and quantized_matmul by name, with
 * Nx's templates and options, give the typed API's bits. */
TEST(dispatcher_callbacks) {
    int64_t ws[2] = {6, 128}, qs[2] = {6, 64}, gs[2] = {6, 2}, xs[2] = {3, 128}, os[2] = {3, 6};
    emily_tensor *w = rnd(EMILY_F32, 2, ws, -1, 2), *x = rnd(EMILY_F32, 2, xs, -1, 2);
    emily_tensor *q = NULL, *s = NULL, *b = NULL, *deq = NULL, *mm = NULL;
    CHECK_OK(emily_quantize(w, 4, 64, &q, &s, &b));
    CHECK_OK(emily_dequantize(q, s, b, 4, 64, &deq));
    CHECK_OK(emily_quantized_matmul(x, q, s, b, 4, 64, true, &mm));
    const char *keys[3] = {"bits", "group_size", "transpose"};
    emily_value opts_items[3] = {v_int(4), v_int(64), v_bool(true)};
    emily_value opts = v_opts(keys, opts_items, 3), two = v_opts(keys, opts_items, 2);

    emily_value touts[3] = {v_tmpl(EMILY_U8, 2, qs), v_tmpl(EMILY_F32, 2, gs), v_tmpl(EMILY_F32, 2, gs)};
    emily_value qout = v_list(touts, 3);
    emily_value qargs[2] = {v_tensor(w), two};
    emily_dispatch_result r = {0};
    CHECK_OK(emily_dispatch("quantize", EMILY_CPU, &qout, qargs, 2, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 3 && t_same_bytes(r.tensors[0], q) && t_same_bytes(r.tensors[1], s) && t_same_bytes(r.tensors[2], b));
    emily_dispatch_result_release(&r);

    emily_value dout = v_tmpl(EMILY_F32, 2, ws);
    emily_value dargs[4] = {v_tensor(q), v_tensor(s), v_tensor(b), two};
    CHECK_DISPATCH_SAME("dequantize", EMILY_DISPATCH_RUN, &dout, dargs, 4, deq);

    emily_value mout = v_tmpl(EMILY_F32, 2, os);
    emily_value margs[5] = {v_tensor(x), v_tensor(q), v_tensor(s), v_tensor(b), opts};
    CHECK_DISPATCH_SAME("quantized_matmul", EMILY_DISPATCH_RUN, &mout, margs, 5, mm);
    opts_items[0] = v_int(3);
    CHECK_ERR(emily_dispatch("quantized_matmul", EMILY_CPU, &mout, margs, 5, EMILY_DISPATCH_RUN, &r),
              EMILY_ERR_ARGUMENT, "bits must be 2, 4 or 8, got 3");
    RELEASE(w, x, q, s, b, deq, mm);
}

/* ---- errors ----------------------------------------------------------------- */

TEST(bad_arguments) {
    int64_t ws[2] = {4, 64}, w1[1] = {64}, wodd[2] = {4, 48}, xs[2] = {2, 64}, xk[2] = {2, 32};
    emily_tensor *w = rnd(EMILY_F32, 2, ws, -1, 2), *q = NULL, *s = NULL, *b = NULL, *o = NULL;
    CHECK_OK(emily_quantize(w, 4, 32, &q, &s, &b));
    emily_tensor *keep[3] = {q, s, b};
    CHECK_ERR(emily_quantize(w, 3, 32, &q, &s, &b), EMILY_ERR_ARGUMENT, "quantize: bits must be 2, 4 or 8, got 3");
    CHECK(q == NULL && s == NULL && b == NULL); /* the outputs are cleared */
    RELEASE(keep[0], keep[1], keep[2]);
    CHECK_OK(emily_quantize(w, 4, 32, &q, &s, &b));
    emily_tensor *q2 = NULL, *s2 = NULL, *b2 = NULL;
    CHECK_ERR(emily_quantize(w, 4, 16, &q2, &s2, &b2), EMILY_ERR_ARGUMENT, "group_size must be 32, 64 or 128, got 16");
    CHECK_ERR(emily_quantize(NULL, 4, 32, &q2, &s2, &b2), EMILY_ERR_ARGUMENT, "quantize");
    CHECK_ERR(emily_quantize(w, 4, 32, NULL, &s2, &b2), EMILY_ERR_ARGUMENT, "quantize");
    emily_tensor *wi = t_as(rnd(EMILY_F32, 2, ws, -1, 2), EMILY_S32), *wr1 = rnd(EMILY_F32, 1, w1, 0, 1),
                 *wo = rnd(EMILY_F32, 2, wodd, 0, 1);
    CHECK_ERR(emily_quantize(wi, 4, 32, &q2, &s2, &b2), EMILY_ERR_TYPE, "quantize: w must be a real float tensor");
    CHECK_ERR(emily_quantize(wr1, 4, 32, &q2, &s2, &b2), EMILY_ERR_SHAPE, "quantize: w must be a matrix");
    CHECK_ERR(emily_quantize(wo, 4, 32, &q2, &s2, &b2), EMILY_ERR_SHAPE, "must be a multiple of the group size 32");

    CHECK_ERR(emily_dequantize(q, s, b, 8, 32, &o), EMILY_ERR_SHAPE, "dequantize: scales must have shape {4, 1}");
    CHECK_ERR(emily_dequantize(q, s, b, 4, 64, &o), EMILY_ERR_SHAPE, "dequantize: scales must have shape {4, 1}");
    CHECK_ERR(emily_dequantize(s, s, b, 4, 32, &o), EMILY_ERR_TYPE, "dequantize: q must be a u8 tensor");
    emily_tensor *b16 = t_as(rnd(EMILY_F32, 2, (int64_t[]){4, 2}, 0, 1), EMILY_F16);
    CHECK_ERR(emily_dequantize(q, s, b16, 4, 32, &o), EMILY_ERR_TYPE, "biases must have the scales' type f32, got f16");
    emily_tensor *si = t_as(rnd(EMILY_F32, 2, (int64_t[]){4, 2}, 0, 1), EMILY_S32);
    CHECK_ERR(emily_dequantize(q, si, si, 4, 32, &o), EMILY_ERR_TYPE, "dequantize: scales must be a real float");
    CHECK_ERR(emily_dequantize(q, s, NULL, 4, 32, &o), EMILY_ERR_ARGUMENT, "biases");

    emily_tensor *x = rnd(EMILY_F32, 2, xs, 0, 1), *xbad = rnd(EMILY_F32, 2, xk, 0, 1);
    emily_tensor *xint = t_as(rnd(EMILY_F32, 2, xs, 0, 4), EMILY_S32), *x0 = SCALAR(EMILY_F32, float, 1);
    CHECK_OK(emily_quantized_matmul(x, q, s, b, 4, 32, true, &o));
    emily_tensor_release(o);
    CHECK_ERR(emily_quantized_matmul(xbad, q, s, b, 4, 32, true, &o), EMILY_ERR_SHAPE,
              "quantized_matmul: x's last axis ({2, 32}) must match the weights' last axis (K = 64");
    CHECK_ERR(emily_quantized_matmul(x, q, s, b, 4, 32, false, &o), EMILY_ERR_SHAPE,
              "quantized_matmul: x's last axis ({2, 64}) must match the weights' first axis (K = 4");
    CHECK_ERR(emily_quantized_matmul(xint, q, s, b, 4, 32, true, &o), EMILY_ERR_TYPE,
              "quantized_matmul: x must be a real float tensor (f16, bf16, f32 or f64), got s32");
    CHECK_ERR(emily_quantized_matmul(x0, q, s, b, 4, 32, true, &o), EMILY_ERR_SHAPE, "got a scalar");
    CHECK_ERR(emily_quantized_matmul(x, q, s, b, 5, 32, true, &o), EMILY_ERR_ARGUMENT, "bits must be");
    CHECK_ERR(emily_quantized_matmul(x, s, s, b, 4, 32, true, &o), EMILY_ERR_TYPE, "q must be a u8");
    CHECK_ERR(emily_quantized_matmul(x, q, s, b, 4, 32, true, NULL), EMILY_ERR_ARGUMENT, "quantized_matmul");
    CHECK_ERR(emily_quantized_matmul(NULL, q, s, b, 4, 32, true, &o), EMILY_ERR_ARGUMENT, "x");
    CHECK(o == NULL);
    RELEASE(w, q, s, b, wi, wr1, wo, b16, si, x, xbad, xint, x0);
}

/* quantized_matmul's shape is checked against Nx's template before the
 * work: with K = 0 the operands are all empty, yet 2^20 rows of x and
 * 2^20 rows of weights ask for a {2^20, 2^20} result. */
TEST(quantized_matmul_checks_the_template_before_the_work) {
    int64_t rows0[2] = {(int64_t)1 << 20, 0}, two[1] = {2};
    emily_tensor *x = t_zero_view(EMILY_F32, 2, rows0), *q = t_zero_view(EMILY_U8, 2, rows0),
                 *s = t_zero_view(EMILY_F32, 2, rows0), *b = t_zero_view(EMILY_F32, 2, rows0);
    const char *keys[2] = {"bits", "group_size"};
    emily_value opts_items[2] = {v_int(4), v_int(32)};
    emily_value args[5] = {v_tensor(x), v_tensor(q), v_tensor(s), v_tensor(b), v_opts(keys, opts_items, 2)};
    emily_value tmpl = v_tmpl(EMILY_F32, 1, two);
    CHECK_TEMPLATE_FIRST("quantized_matmul", &tmpl, args, 5,
                         "quantized_matmul: output 0 is f32{1048576, 1048576} but Nx expects f32{2}");
    RELEASE(x, q, s, b);
}

RUN_TESTS("quant", CASE(packed_layout_by_hand), CASE(codes_follow_the_formula), CASE(round_trip_bounds),
          CASE(zero_range_groups), CASE(matmul_every_width_and_group), CASE(matmul_types),
          CASE(matmul_tiles_and_threads), CASE(matmul_paths), CASE(matmul_infinite_bias_in_partial_chunk),
          CASE(matmul_views_and_empty), CASE(dispatcher_callbacks), CASE(bad_arguments),
          CASE(quantized_matmul_checks_the_template_before_the_work))
