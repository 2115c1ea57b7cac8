/* Window family: window_sum/product/max/min against a brute-force
 * reference written here (padding as the op's identity, strides,
 * dilations, cropping), Nx's edge rules (NaN, tied zeros, all-padding
 * windows, integer wrap), strided views as inputs, window_scatter_max/min
 * selection (last of equal values, NaN only when first, padding winners
 * dropped, overlapping windows summed) and bad arguments. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"

/* Reference window reduction of a row-major rank-2 f64 array. */
static double ref_window2(emily_window_op op, const double *x, const int64_t *shape, const int64_t *w,
                          const int64_t *st, const int64_t *lo, const int64_t *dil, int64_t o0, int64_t o1) {
    double acc = op == EMILY_WINDOW_SUM       ? 0
                 : op == EMILY_WINDOW_PRODUCT ? 1
                 : op == EMILY_WINDOW_MAX     ? -INFINITY
                                              : INFINITY;
    for (int64_t a = 0; a < w[0]; a++)
        for (int64_t b = 0; b < w[1]; b++) {
            int64_t i = o0 * st[0] + a * dil[0] - lo[0], j = o1 * st[1] + b * dil[1] - lo[1];
            if (i < 0 || j < 0 || i >= shape[0] || j >= shape[1]) continue;
            double v = x[i * shape[1] + j];
            if (op == EMILY_WINDOW_SUM) acc += v;
            else if (op == EMILY_WINDOW_PRODUCT) acc *= v;
            else if (op == EMILY_WINDOW_MAX) acc = v > acc ? v : acc;
            else acc = v < acc ? v : acc;
        }
    return acc;
}

TEST(reductions_match_reference) {
    int64_t shape[2] = {7, 9};
    double x[63];
    for (int i = 0; i < 63; i++) x[i] = (double)((i * 37) % 11) - 5.0;
    emily_tensor *t = t_from(EMILY_F64, 2, shape, x);
    const int64_t cfg[][8] = {
        /* w0 w1 s0 s1 lo0 hi0 lo1 hi1 */
        {2, 3, 1, 1, 0, 0, 0, 0}, {3, 2, 2, 3, 1, 2, 0, 1},    {1, 1, 1, 1, 0, 0, 0, 0},
        {4, 4, 3, 2, 2, 2, 3, 3}, {2, 2, 1, 1, -1, -2, -3, 0},
    };
    const int64_t dils[][2] = {{1, 1}, {2, 1}, {1, 3}, {1, 1}, {2, 2}};
    for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++)
        for (int op = 0; op < 4; op++) {
            int64_t w[2] = {cfg[c][0], cfg[c][1]}, st[2] = {cfg[c][2], cfg[c][3]};
            int64_t lo[2] = {cfg[c][4], cfg[c][6]}, hi[2] = {cfg[c][5], cfg[c][7]};
            const int64_t *dil = dils[c];
            emily_tensor *r = NULL;
            CHECK_OK(emily_window_reduce((emily_window_op)op, t, 2, w, st, lo, hi, dil, &r));
            if (!r) continue;
            const int64_t *os = emily_tensor_shape(r);
            for (int d = 0; d < 2; d++) {
                int64_t eff = (w[d] - 1) * dil[d] + 1;
                CHECK(os[d] == (lo[d] + shape[d] + hi[d] - eff) / st[d] + 1);
            }
            for (int64_t i = 0; i < os[0]; i++)
                for (int64_t j = 0; j < os[1]; j++) {
                    double want = ref_window2((emily_window_op)op, x, shape, w, st, lo, dil, i, j);
                    double got = t_get(r, i * os[1] + j);
                    if (!(got == want)) {
                        fprintf(stderr, "  cfg %zu op %d at (%lld,%lld): got %g want %g\n", c, op, (long long)i,
                                (long long)j, got, want);
                        CHECK(got == want);
                    }
                }
            emily_tensor_release(r);
        }
    emily_tensor_release(t);
}

TEST(strided_input) {
    int64_t shape[2] = {5, 6};
    float x[30];
    for (int i = 0; i < 30; i++) x[i] = (float)(i % 7) * 0.5f - 1.0f;
    emily_tensor *t = t_from(EMILY_F32, 2, shape, x), *tt = NULL, *c = NULL, *a = NULL, *b = NULL;
    int perm[2] = {1, 0};
    CHECK_OK(emily_transpose(t, perm, &tt));
    CHECK_OK(emily_contiguous(tt, &c));
    int64_t w[2] = {2, 3}, st[2] = {2, 1}, lo[2] = {1, 0}, hi[2] = {0, 2};
    CHECK_OK(emily_window_sum(tt, 2, w, st, lo, hi, NULL, &a));
    CHECK_OK(emily_window_sum(c, 2, w, st, lo, hi, NULL, &b));
    if (a && b) {
        CHECK(emily_tensor_size(a) == emily_tensor_size(b));
        for (int64_t i = 0; i < emily_tensor_size(a); i++) CHECK(t_get(a, i) == t_get(b, i));
    }
    emily_tensor *m = NULL;
    CHECK_OK(emily_window_max(tt, 2, w, NULL, NULL, NULL, NULL, &m));
    RELEASE(m, a, b, c, tt, t);
}

TEST(edge_values) {
    /* NaN propagates; tied zeros: the later element wins */
    int64_t n4 = 4, w2 = 2, st2 = 2;
    float x[4] = {0.0f, -0.0f, -0.0f, 0.0f};
    emily_tensor *t = t_from(EMILY_F32, 1, &n4, x), *r = NULL;
    CHECK_OK(emily_window_max(t, 1, &w2, &st2, NULL, NULL, NULL, &r));
    if (r) {
        CHECK(signbit(t_get(r, 0)) && !signbit(t_get(r, 1)));
        emily_tensor_release(r);
    }
    CHECK_OK(emily_window_min(t, 1, &w2, &st2, NULL, NULL, NULL, &r));
    if (r) {
        CHECK(signbit(t_get(r, 0)) && !signbit(t_get(r, 1)));
        emily_tensor_release(r);
    }
    emily_tensor_release(t);
    float y[4] = {1.0f, NAN, 2.0f, INFINITY};
    t = t_from(EMILY_F32, 1, &n4, y);
    CHECK_OK(emily_window_min(t, 1, &w2, &st2, NULL, NULL, NULL, &r));
    if (r) {
        CHECK(isnan(t_get(r, 0)) && t_get(r, 1) == 2.0);
        emily_tensor_release(r);
    }
    /* a window wholly in the padding: the identity */
    int64_t lo = 3, hi = 0, one = 1;
    CHECK_OK(emily_window_max(t, 1, &one, NULL, &lo, &hi, NULL, &r));
    if (r) {
        CHECK(emily_tensor_size(r) == 7 && t_get(r, 0) == -INFINITY && t_get(r, 3) == 1.0);
        emily_tensor_release(r);
    }
    emily_tensor_release(t);
    int32_t iv[2] = {5, -7};
    int64_t n2 = 2;
    t = t_from(EMILY_S32, 1, &n2, iv);
    CHECK_OK(emily_window_max(t, 1, &one, NULL, &lo, &hi, NULL, &r));
    if (r) {
        CHECK(t_get(r, 0) == (double)INT32_MIN && t_get(r, 4) == -7);
        emily_tensor_release(r);
    }
    CHECK_OK(emily_window_min(t, 1, &one, NULL, &lo, &hi, NULL, &r));
    if (r) {
        CHECK(t_get(r, 0) == (double)INT32_MAX);
        emily_tensor_release(r);
    }
    emily_tensor_release(t);
    uint8_t u[2] = {200, 100};
    t = t_from(EMILY_U8, 1, &n2, u);
    CHECK_OK(emily_window_sum(t, 1, &n2, NULL, NULL, NULL, NULL, &r)); /* wraps */
    if (r) {
        CHECK(t_get(r, 0) == 44);
        emily_tensor_release(r);
    }
    CHECK_OK(emily_window_min(t, 1, &one, NULL, &lo, &hi, NULL, &r));
    if (r) {
        CHECK(t_get(r, 0) == 255);
        emily_tensor_release(r);
    }
    emily_tensor_release(t);
    /* complex product */
    float cz[4] = {1, 2, 3, -1};
    t = t_from(EMILY_C64, 1, &n2, cz);
    CHECK_OK(emily_window_product(t, 1, &n2, NULL, NULL, NULL, NULL, &r));
    CHECK(t_get(r, 0) == 5.0 && t_get_im(r, 0) == 5.0);
    emily_tensor_release(r);
    emily_tensor_release(t);
    /* rank 0 and a zero-size axis with padding */
    double s = 2.5;
    t = t_from(EMILY_F64, 0, NULL, &s);
    CHECK_OK(emily_window_sum(t, 0, NULL, NULL, NULL, NULL, NULL, &r));
    if (r) {
        CHECK(emily_tensor_rank(r) == 0 && t_get(r, 0) == 2.5);
        emily_tensor_release(r);
    }
    emily_tensor_release(t);
    int64_t zero = 0, plo = 1, phi = 1;
    t = t_from(EMILY_F32, 1, &zero, NULL);
    CHECK_OK(emily_window_sum(t, 1, &one, NULL, &plo, &phi, NULL, &r));
    if (r) {
        CHECK(emily_tensor_size(r) == 2 && t_get(r, 0) == 0 && t_get(r, 1) == 0);
        emily_tensor_release(r);
    }
    emily_tensor_release(t);
}

static void scatter1(bool is_max, emily_dtype dt, const double *tv, int64_t n, const double *sv, int64_t ns,
                     double init, int64_t w, int64_t st, int64_t lo, int64_t hi, const double *want) {
    double tb[16], sb[16];
    for (int64_t i = 0; i < n; i++) tb[i] = tv[i];
    for (int64_t i = 0; i < ns; i++) sb[i] = sv[i];
    emily_tensor *t = t_from(EMILY_F64, 1, &n, tb), *s = t_from(EMILY_F64, 1, &ns, sb);
    emily_tensor *iv = t_from(EMILY_F64, 0, NULL, &init), *tc = NULL, *sc = NULL, *ic = NULL, *r = NULL;
    CHECK_OK(emily_as_type(t, dt, &tc));
    CHECK_OK(emily_as_type(s, dt, &sc));
    CHECK_OK(emily_as_type(iv, dt, &ic));
    if (is_max) CHECK_OK(emily_window_scatter_max(tc, sc, ic, 1, &w, &st, &lo, &hi, &r));
    else CHECK_OK(emily_window_scatter_min(tc, sc, ic, 1, &w, &st, &lo, &hi, &r));
    if (r) {
        CHECK(emily_tensor_dtype(r) == dt);
        for (int64_t i = 0; i < n; i++)
            if (t_get(r, i) != want[i]) {
                fprintf(stderr, "  scatter %s %s at %lld: got %g want %g\n", is_max ? "max" : "min",
                        emily_dtype_name(dt), (long long)i, t_get(r, i), want[i]);
                CHECK(t_get(r, i) == want[i]);
            }
    }
    emily_tensor *all[] = {t, s, iv, tc, sc, ic, r};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) emily_tensor_release(all[i]);
}

TEST(scatter_selection) {
    const emily_dtype types[] = {EMILY_S32, EMILY_U8, EMILY_F32, EMILY_F64, EMILY_BF16, EMILY_S64};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        emily_dtype dt = types[k];
        /* ties: the last equal element wins, for max and for min */
        scatter1(true, dt, (double[]){1, 1}, 2, (double[]){5}, 1, 0, 2, 1, 0, 0, (double[]){0, 5});
        scatter1(false, dt, (double[]){1, 1}, 2, (double[]){5}, 1, 0, 2, 1, 0, 0, (double[]){0, 5});
        /* overlapping windows add into the same place, from init */
        scatter1(true, dt, (double[]){1, 3, 2}, 3, (double[]){10, 20}, 2, 1, 2, 1, 0, 0, (double[]){1, 31, 1});
        scatter1(false, dt, (double[]){4, 3, 7, 9}, 4, (double[]){2, 6}, 2, 0, 2, 2, 0, 0, (double[]){0, 2, 6, 0});
    }
    /* a padding element that wins is dropped (max), a real one is kept (min) */
    scatter1(true, EMILY_F32, (double[]){-1}, 1, (double[]){5}, 1, 0, 2, 1, 1, 0, (double[]){0});
    scatter1(false, EMILY_F32, (double[]){-1}, 1, (double[]){5}, 1, 0, 2, 1, 1, 0, (double[]){5});
    /* NaN is selected only as the window's first element */
    scatter1(true, EMILY_F32, (double[]){NAN, 3}, 2, (double[]){5}, 1, 0, 2, 1, 0, 0, (double[]){5, 0});
    scatter1(true, EMILY_F32, (double[]){3, NAN}, 2, (double[]){5}, 1, 0, 2, 1, 0, 0, (double[]){5, 0});
    scatter1(false, EMILY_F32, (double[]){3, NAN}, 2, (double[]){5}, 1, 0, 2, 1, 0, 0, (double[]){5, 0});
}

TEST(bad_input) {
    int64_t shape[2] = {3, 4}, w[2] = {2, 2}, bad0[2] = {0, 1}, neg[2] = {1, -1};
    float x[12] = {0};
    emily_tensor *t = t_from(EMILY_F32, 2, shape, x), *r = NULL;
    CHECK_ERR(emily_window_sum(t, 2, w, NULL, NULL, NULL, NULL, NULL), EMILY_ERR_ARGUMENT, "window_sum");
    CHECK_ERR(emily_window_sum(NULL, 2, w, NULL, NULL, NULL, NULL, &r), EMILY_ERR_ARGUMENT, "window_sum");
    CHECK_ERR(emily_window_max(t, 1, w, NULL, NULL, NULL, NULL, &r), EMILY_ERR_SHAPE, "rank");
    CHECK_ERR(emily_window_max(t, 2, NULL, NULL, NULL, NULL, NULL, &r), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_window_max(t, 2, bad0, NULL, NULL, NULL, NULL, &r), EMILY_ERR_ARGUMENT, "window dimensions");
    CHECK_ERR(emily_window_min(t, 2, w, bad0, NULL, NULL, NULL, &r), EMILY_ERR_ARGUMENT, "strides");
    CHECK_ERR(emily_window_min(t, 2, w, NULL, NULL, NULL, neg, &r), EMILY_ERR_ARGUMENT, "dilations");
    int64_t lo[2] = {-3, 0}, hi[2] = {-1, 0};
    CHECK_ERR(emily_window_sum(t, 2, w, NULL, lo, hi, NULL, &r), EMILY_ERR_SHAPE, "negative");
    int64_t big[2] = {4, 1};
    CHECK_ERR(emily_window_sum(t, 2, big, NULL, NULL, NULL, NULL, &r), EMILY_ERR_SHAPE, "larger");
    int64_t dil[2] = {3, 1};
    CHECK_ERR(emily_window_sum(t, 2, w, NULL, NULL, NULL, dil, &r), EMILY_ERR_SHAPE, "larger");
    CHECK_ERR(emily_window_reduce((emily_window_op)9, t, 2, w, NULL, NULL, NULL, NULL, &r), EMILY_ERR_ARGUMENT,
              "unknown");
    emily_tensor *c = NULL;
    CHECK_OK(emily_as_type(t, EMILY_C64, &c));
    CHECK_ERR(emily_window_max(c, 2, w, NULL, NULL, NULL, NULL, &r), EMILY_ERR_TYPE, "complex");
    CHECK_OK(emily_window_sum(c, 2, w, NULL, NULL, NULL, NULL, &r));
    emily_tensor_release(r);
    r = NULL;
    /* scatter */
    int64_t sshape[2] = {2, 3};
    float sv[6] = {0};
    double z = 0;
    emily_tensor *src = t_from(EMILY_F32, 2, sshape, sv), *init = t_from(EMILY_F64, 0, NULL, &z);
    emily_tensor *vec = t_from(EMILY_F32, 1, (int64_t[]){2}, sv);
    CHECK_OK(emily_window_scatter_max(t, src, init, 2, w, NULL, NULL, NULL, &r));
    if (r) CHECK(emily_tensor_dtype(r) == EMILY_F64);
    emily_tensor_release(r);
    r = NULL;
    CHECK_ERR(emily_window_scatter_max(t, vec, init, 2, w, NULL, NULL, NULL, &r), EMILY_ERR_SHAPE, "source");
    CHECK_ERR(emily_window_scatter_min(t, src, vec, 2, w, NULL, NULL, NULL, &r), EMILY_ERR_SHAPE, "init_value");
    CHECK_ERR(emily_window_scatter_min(t, src, NULL, 2, w, NULL, NULL, NULL, &r), EMILY_ERR_ARGUMENT, "init_value");
    CHECK_ERR(emily_window_scatter_min(c, src, init, 2, w, NULL, NULL, NULL, &r), EMILY_ERR_TYPE, "complex");
    CHECK_ERR(emily_window_scatter_min(t, src, init, 2, w, bad0, NULL, NULL, &r), EMILY_ERR_ARGUMENT, "strides");
    CHECK_ERR(emily_window_scatter_max(t, src, init, 2, w, NULL, NULL, NULL, NULL), EMILY_ERR_ARGUMENT,
              "window_scatter_max");
    CHECK(r == NULL);
    RELEASE(vec, src, init, c, t);
}

/* The window callbacks check their shape against Nx's template before
 * the work: a padding of 2^40 gives window_sum 2^40 + 2 positions, and a
 * window of 2^40 elements (all but one of them padding) makes
 * window_scatter_max plan 2^40 offsets for its one position, whose
 * result is the input's {1}. */
TEST(windows_check_the_template_before_the_work) {
    const int64_t big = (int64_t)1 << 40;
    int64_t one[1] = {1}, two[1] = {2};
    emily_tensor *t = t_zero_view(EMILY_F32, 1, two), *x = t_zero_view(EMILY_F32, 1, one),
                 *init = SCALAR(EMILY_F32, float, 0);
    const char *keys[2] = {"padding", "strides"};
    emily_value pad_items[2] = {v_int(0), v_int(big)}, pad = v_list(pad_items, 2);
    emily_value window = v_int(1), opts_items[2] = {v_list(&pad, 1), v_list(&window, 1)};
    emily_value args[3] = {v_tensor(t), v_list(&window, 1), v_opts(keys, opts_items, 2)};
    emily_value tmpl = v_tmpl(EMILY_F32, 1, two);
    CHECK_TEMPLATE_FIRST("window_sum", &tmpl, args, 3,
                         "window_sum: output 0 is f32{1099511627778} but Nx expects f32{2}");
    emily_value spad_items[2] = {v_int(0), v_int(big - 1)}, spad = v_list(spad_items, 2), swin = v_int(big);
    emily_value sopts_items[2] = {v_list(&spad, 1), v_list(&swin, 1)};
    emily_value sargs[5] = {v_tensor(x), v_tensor(x), v_tensor(init), v_list(&swin, 1), v_opts(keys, sopts_items, 2)};
    CHECK_TEMPLATE_FIRST("window_scatter_max", &tmpl, sargs, 5,
                         "window_scatter_max: output 0 is f32{1} but Nx expects f32{2}");
    RELEASE(t, x, init);
}

RUN_TESTS("window", CASE(reductions_match_reference), CASE(strided_input), CASE(edge_values), CASE(scatter_selection),
          CASE(bad_input), CASE(windows_check_the_template_before_the_work))
