/* FFT family: fft, ifft, fft2, ifft2, rfft, irfft. */
#include <complex.h>
#include <stdlib.h>
#include "harness.h"

/* Naive DFT in long double (sign -1 forward, +1 inverse scaled by 1/n). */
static void naive_dft(const double complex *x, int64_t len, int64_t n, int sign, double complex *y) {
    for (int64_t k = 0; k < n; k++) {
        long double re = 0, im = 0;
        for (int64_t j = 0; j < n && j < len; j++) {
            long double a = sign * 2.0L * 3.14159265358979323846264338327950288L * (long double)((k * j) % n) / n;
            long double c = cosl(a), s = sinl(a);
            re += creal(x[j]) * c - cimag(x[j]) * s;
            im += creal(x[j]) * s + cimag(x[j]) * c;
        }
        if (sign > 0) {
            re /= n;
            im /= n;
        }
        y[k] = (double)re + I * (double)im;
    }
}

TEST(fft_small_known_values) {
    int64_t s4[1] = {4};
    int32_t x[4] = {1, 1, 1, 1};
    emily_tensor *t = t_from(EMILY_S32, 1, s4, x), *y = NULL;
    CHECK_OK(emily_fft(t, 0, -1, 1e-10, &y));
    CHECK(emily_tensor_dtype(y) == EMILY_C64 && t_shape_is(y, 1, s4));
    double complex *v = t_cvals(y);
    CHECK(v && v[0] == 4 && v[1] == 0 && v[2] == 0 && v[3] == 0);
    free(v);
    emily_tensor_release(y);
    /* Nx's doctest: fft([1, 1, 0, 0]) = [2, 1-1i, 0, 1+1i] */
    int32_t x2[4] = {1, 1, 0, 0};
    emily_tensor *t2 = t_from(EMILY_S32, 1, s4, x2);
    CHECK_OK(emily_fft(t2, 0, 0, 1e-10, &y));
    v = t_cvals(y);
    CHECK(v && v[0] == 2 && v[1] == 1 - I && v[2] == 0 && v[3] == 1 + I);
    free(v);
    RELEASE(y, t, t2);
}

TEST(fft_matches_naive_dft_many_lengths) {
    /* odd (direct DFT leaves), mixed, powers of two, Bluestein (>= 1024) */
    int64_t lens[] = {1, 2, 3, 5, 6, 7, 8, 12, 15, 16, 31, 64, 96, 255, 1000, 1024, 1025, 1200};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        int64_t n = lens[li], s[1] = {n};
        double complex *x = malloc((size_t)n * sizeof *x), *want = malloc((size_t)n * sizeof *want);
        for (int64_t i = 0; i < n; i++) x[i] = sin(0.37 * (double)i) + I * cos(1.3 * (double)i * i / (double)n);
        emily_tensor *t = t_from(EMILY_C128, 1, s, x), *y = NULL, *z = NULL;
        CHECK_OK(emily_fft(t, 0, 0, 0.0, &y));
        double complex *got = t_cvals(y);
        naive_dft(x, n, n, -1, want);
        CHECK(got && c_max_diff(got, want, n) < 1e-11 * (double)n);
        free(got);
        /* ifft inverts */
        CHECK_OK(emily_ifft(y, 0, 0, 0.0, &z));
        got = t_cvals(z);
        CHECK(got && c_max_diff(got, x, n) < 1e-13 * (double)n);
        free(got);
        RELEASE(t, y, z);
        free(x);
        free(want);
    }
}

TEST(fft_length_pads_and_truncates) {
    int64_t s6[1] = {6};
    float x[6] = {1, 1, 0, 0, 2, 3};
    emily_tensor *t = t_from(EMILY_F32, 1, s6, x), *y = NULL;
    /* truncation: Nx.fft([1, 1, 0, 0, 2, 3], length: 4) = [2, 1-1i, 0, 1+1i] */
    CHECK_OK(emily_fft(t, 4, 0, 1e-10, &y));
    int64_t s4[1] = {4};
    CHECK(t_shape_is(y, 1, s4));
    double complex *v = t_cvals(y);
    CHECK(v && v[0] == 2 && v[1] == 1 - I && v[2] == 0 && v[3] == 1 + I);
    free(v);
    emily_tensor_release(y);
    /* padding: length 8 equals the DFT of the zero-padded signal */
    CHECK_OK(emily_fft(t, 8, 0, 0.0, &y));
    double complex xc[6], want[8];
    for (int i = 0; i < 6; i++) xc[i] = x[i];
    naive_dft(xc, 6, 8, -1, want);
    v = t_cvals(y);
    CHECK(v && emily_tensor_shape(y)[0] == 8 && c_max_diff(v, want, 8) < 1e-5);
    free(v);
    emily_tensor_release(y);
    emily_tensor_release(t);
}

TEST(fft_along_axes_and_views) {
    /* [2][3] f64 -> c128; along axis 0 and along a transposed view */
    int64_t s[2] = {2, 3};
    double x[6] = {1, 2, 3, 4, 5, 6};
    emily_tensor *t = t_from(EMILY_F64, 2, s, x), *y = NULL, *tt = NULL, *yt = NULL;
    CHECK_OK(emily_fft(t, 0, 0, 1e-10, &y));
    CHECK(emily_tensor_dtype(y) == EMILY_C128 && t_shape_is(y, 2, s));
    double complex *v = t_cvals(y);
    /* column sums and differences */
    CHECK(v && v[0] == 5 && v[1] == 7 && v[2] == 9 && v[3] == -3 && v[4] == -3 && v[5] == -3);
    free(v);
    int perm[2] = {1, 0};
    CHECK_OK(emily_transpose(t, perm, &tt));
    CHECK_OK(emily_fft(tt, 0, -1, 1e-10, &yt));
    v = t_cvals(yt);
    int64_t st[2] = {3, 2};
    CHECK(v && t_shape_is(yt, 2, st) && v[0] == 5 && v[1] == -3 && v[2] == 7 && v[3] == -3);
    free(v);
    RELEASE(t, y, tt, yt);
}

TEST(fft_input_types) {
    int64_t s[1] = {3};
    uint16_t h[3] = {0x3c00, 0x4000, 0x4200}; /* 1, 2, 3 in f16 */
    uint16_t b[3] = {0x3f80, 0x4000, 0x4040}; /* 1, 2, 3 in bf16 */
    uint8_t u[3] = {1, 2, 3};
    int64_t l[3] = {1, 2, 3};
    const emily_dtype types[4] = {EMILY_F16, EMILY_BF16, EMILY_U8, EMILY_S64};
    const void *data[4] = {h, b, u, l};
    for (int i = 0; i < 4; i++) {
        emily_tensor *t = t_from(types[i], 1, s, data[i]), *y = NULL;
        CHECK_OK(emily_fft(t, 0, 0, 1e-10, &y));
        CHECK(y && emily_tensor_dtype(y) == EMILY_C64);
        double complex *v = y ? t_cvals(y) : NULL;
        CHECK(v && v[0] == 6 && fabs(creal(v[1]) + 1.5) < 1e-6 && fabs(cimag(v[1]) - 0.8660254) < 1e-6);
        free(v);
        emily_tensor_release(t);
        emily_tensor_release(y);
    }
}

TEST(fft_eps_zeroes_small_components) {
    int64_t s[1] = {4};
    double x[4] = {1e-12, 0, 0, 0};
    emily_tensor *t = t_from(EMILY_F64, 1, s, x), *y = NULL;
    CHECK_OK(emily_fft(t, 0, 0, 1e-10, &y));
    double complex *v = t_cvals(y);
    CHECK(v && v[0] == 0 && v[3] == 0);
    free(v);
    emily_tensor_release(y);
    CHECK_OK(emily_fft(t, 0, 0, 0.0, &y));
    v = t_cvals(y);
    CHECK(v && creal(v[0]) == 1e-12);
    free(v);
    emily_tensor_release(y);
    emily_tensor_release(t);
}

TEST(fft_non_finite_values_propagate) {
    int64_t s[1] = {4};
    double x[4] = {NAN, 1, 2, 3};
    emily_tensor *t = t_from(EMILY_F64, 1, s, x), *y = NULL;
    CHECK_OK(emily_fft(t, 0, 0, 1e-10, &y));
    double complex *v = t_cvals(y);
    CHECK(v && isnan(creal(v[0])) && isnan(creal(v[2])));
    free(v);
    emily_tensor_release(y);
    emily_tensor_release(t);
}

TEST(fft_batches_match_single_lines) {
    /* 64 lines of 512 run in parallel; each equals its own transform */
    int64_t s[2] = {64, 512}, s1[1] = {512};
    float complex *x = malloc(64 * 512 * sizeof *x);
    for (int i = 0; i < 64 * 512; i++) x[i] = (float)((i * 7919) % 101) / 50.0f - 1.0f + I * (float)(i % 13);
    emily_tensor *t = t_from(EMILY_C64, 2, s, x), *y = NULL;
    CHECK_OK(emily_fft(t, 0, 1, 1e-10, &y));
    double complex *all = t_cvals(y);
    for (int r = 0; r < 64; r += 21) {
        emily_tensor *line = t_from(EMILY_C64, 1, s1, x + r * 512), *yl = NULL;
        CHECK_OK(emily_fft(line, 0, 0, 1e-10, &yl));
        double complex *one = t_cvals(yl);
        CHECK(one && all && memcmp(one, all + r * 512, 512 * sizeof *one) == 0);
        free(one);
        emily_tensor_release(line);
        emily_tensor_release(yl);
    }
    free(all);
    free(x);
    emily_tensor_release(t);
    emily_tensor_release(y);
}

TEST(fft2_is_two_passes) {
    /* Nx's doctest: fft2([[1, 0, 1, 0], [1, 1, 1, 1]]) */
    int64_t s[2] = {2, 4};
    int32_t x[8] = {1, 0, 1, 0, 1, 1, 1, 1};
    emily_tensor *t = t_from(EMILY_S32, 2, s, x), *y = NULL, *z = NULL;
    int64_t lengths[2] = {0, 0};
    int axes[2] = {-2, -1};
    CHECK_OK(emily_fft2(t, lengths, axes, 1e-10, &y));
    double complex *v = t_cvals(y);
    double complex want[8] = {6, 0, 2, 0, -2, 0, 2, 0};
    CHECK(v && c_max_diff(v, want, 8) == 0);
    free(v);
    CHECK_OK(emily_ifft2(y, lengths, axes, 1e-10, &z));
    v = t_cvals(z);
    double complex back[8];
    for (int i = 0; i < 8; i++) back[i] = x[i];
    CHECK(v && c_max_diff(v, back, 8) < 1e-6);
    free(v);
    emily_tensor_release(y);
    emily_tensor_release(z);
    /* lengths pad/truncate per axis */
    int64_t l2[2] = {4, 2};
    CHECK_OK(emily_fft2(t, l2, axes, 1e-10, &y));
    int64_t s42[2] = {4, 2};
    CHECK(t_shape_is(y, 2, s42));
    emily_tensor_release(y);
    int same[2] = {1, -1};
    CHECK_ERR(emily_fft2(t, lengths, same, 1e-10, &y), EMILY_ERR_AXIS, "more than once");
    int64_t s1[1] = {8};
    emily_tensor *v1 = t_from(EMILY_S32, 1, s1, x);
    CHECK_ERR(emily_fft2(v1, lengths, axes, 1e-10, &y), EMILY_ERR_SHAPE, "rank > 1");
    emily_tensor_release(v1);
    emily_tensor_release(t);
}

TEST(rfft_and_irfft) {
    /* Nx's doctests: rfft([1, 1, 0, 0]) = [2, 1-1i, 0]; irfft back */
    int64_t s[1] = {4};
    float x[4] = {1, 1, 0, 0};
    emily_tensor *t = t_from(EMILY_F32, 1, s, x), *y = NULL, *z = NULL;
    CHECK_OK(emily_rfft(t, 0, -1, 1e-10, &y));
    int64_t s3[1] = {3};
    CHECK(t_shape_is(y, 1, s3) && emily_tensor_dtype(y) == EMILY_C64);
    double complex *v = t_cvals(y);
    CHECK(v && v[0] == 2 && v[1] == 1 - I && v[2] == 0);
    free(v);
    CHECK_OK(emily_irfft(y, 0, -1, 1e-10, &z));
    CHECK(t_shape_is(z, 1, s) && emily_tensor_dtype(z) == EMILY_F32);
    for (int i = 0; i < 4; i++) CHECK(t_get(z, i) == x[i]);
    emily_tensor_release(z);
    /* odd length recovers an odd signal */
    float x5[5] = {1, 2, 3, 4, 5};
    int64_t s5[1] = {5};
    emily_tensor *t5 = t_from(EMILY_F32, 1, s5, x5), *y5 = NULL;
    CHECK_OK(emily_rfft(t5, 0, 0, 1e-10, &y5));
    CHECK_OK(emily_irfft(y5, 5, 0, 1e-10, &z));
    CHECK(t_shape_is(z, 1, s5));
    for (int i = 0; i < 5; i++) CHECK(fabs(t_get(z, i) - x5[i]) < 1e-5);
    RELEASE(z, t5, y5);
    /* complex input to rfft is an error, as in Nx */
    CHECK_ERR(emily_rfft(y, 0, 0, 1e-10, &z), EMILY_ERR_TYPE, "real tensor");
    /* irfft of a 1-point spectrum with the default length 0 is invalid */
    int64_t s1[1] = {1};
    emily_tensor *one = t_from(EMILY_F32, 1, s1, x);
    CHECK_ERR(emily_irfft(one, 0, 0, 1e-10, &z), EMILY_ERR_ARGUMENT, "must be positive");
    RELEASE(one, y, t);
}

TEST(fft_zero_size_and_bad_input) {
    int64_t s[2] = {0, 4};
    emily_tensor *t = NULL, *y = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, s, &t));
    CHECK_OK(emily_fft(t, 0, 1, 1e-10, &y));
    CHECK(t_shape_is(y, 2, s));
    emily_tensor_release(y);
    /* an empty axis padded to a length gives zeros */
    int64_t s40[2] = {4, 0};
    emily_tensor *e = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F64, 2, s40, &e));
    CHECK_OK(emily_fft(e, 3, 1, 1e-10, &y));
    double complex *v = t_cvals(y);
    int64_t s43[2] = {4, 3};
    CHECK(v && t_shape_is(y, 2, s43) && v[0] == 0 && v[11] == 0);
    free(v);
    emily_tensor_release(y);
    emily_tensor_release(e);
    CHECK_ERR(emily_fft(t, 0, 2, 1e-10, &y), EMILY_ERR_AXIS, "axis 2");
    CHECK_ERR(emily_fft(t, -3, 1, 1e-10, &y), EMILY_ERR_ARGUMENT, "length");
    CHECK_ERR(emily_fft(NULL, 0, 0, 1e-10, &y), EMILY_ERR_ARGUMENT, "tensor is NULL");
    CHECK_ERR(emily_fft(t, 0, 0, 1e-10, NULL), EMILY_ERR_ARGUMENT, "output");
    emily_tensor *sc = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 0, NULL, &sc));
    CHECK_ERR(emily_fft(sc, 0, 0, 1e-10, &y), EMILY_ERR_SHAPE, "rank > 0");
    CHECK_ERR(emily_fft(t, 0, 1, 1e-10, NULL), EMILY_ERR_ARGUMENT, "output");
    emily_tensor_release(sc);
    emily_tensor_release(t);
}

TEST(fft_dispatch_callbacks) {
    /* The Nx callback route, with Nx 0.13's opts. */
    int64_t s[1] = {4};
    int32_t x[4] = {1, 1, 0, 0};
    emily_tensor *t = t_from(EMILY_S32, 1, s, x);
    int64_t os[1] = {4};
    emily_value out = v_tmpl(EMILY_C64, 1, os);
    emily_value items[3] = {v_float(1e-10), v_int(4), v_int(0)};
    const char *keys[3] = {"eps", "length", "axis"};
    emily_value args[2] = {v_tensor(t), v_opts(keys, items, 3)};
    emily_dispatch_result r = {0};
    CHECK_OK(emily_dispatch("fft", EMILY_CPU, &out, args, 2, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 1);
    emily_dispatch_result_release(&r);
    items[1] = v_atom("power_of_two");
    CHECK_OK(emily_dispatch("ifft", EMILY_CPU, &out, args, 2, EMILY_DISPATCH_INFER, &r));
    emily_dispatch_result_release(&r);
    items[1] = v_int(-2);
    CHECK_ERR(emily_dispatch("fft", EMILY_CPU, &out, args, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT, "positive");
    emily_tensor_release(t);
}

/* Every dtype: c64 out (c128 for f64/c128), irfft real. */
TEST(fft_every_dtype) {
    int64_t s[1] = {6};
    double x[6] = {1, 2, 3, 4, 5, 6};
    emily_tensor *xd = t_from(EMILY_F64, 1, s, x);
    for (int dt = 0; dt < EMILY_DTYPE_COUNT; dt++) {
        emily_tensor *t = NULL, *y = NULL, *z = NULL;
        CHECK_OK(emily_as_type(xd, (emily_dtype)dt, &t));
        if (!t) continue;
        emily_dtype c = emily_type_to_complex((emily_dtype)dt);
        CHECK_OK(emily_fft(t, 0, 0, 1e-10, &y));
        CHECK(y && emily_tensor_dtype(y) == c && t_get(y, 0) == 21);
        emily_tensor_release(y);
        CHECK_OK(emily_ifft(t, 8, 0, 1e-10, &y));
        CHECK(y && emily_tensor_dtype(y) == c && t_get(y, 0) == 21.0 / 8);
        CHECK_OK(emily_irfft(y, 0, 0, 1e-10, &z));
        CHECK(z && emily_tensor_dtype(z) == emily_type_to_real(c));
        emily_tensor_release(y);
        emily_tensor_release(z);
        if (emily_dtype_is_complex((emily_dtype)dt)) {
            CHECK_ERR(emily_rfft(t, 0, 0, 1e-10, &y), EMILY_ERR_TYPE, "real");
        } else {
            CHECK_OK(emily_rfft(t, 0, 0, 1e-10, &y));
            int64_t s4[1] = {4};
            CHECK(y && emily_tensor_dtype(y) == c && t_shape_is(y, 1, s4));
            emily_tensor_release(y);
        }
        emily_tensor_release(t);
    }
    emily_tensor_release(xd);
}

/* The FFTs' shapes are checked against Nx's template before the work:
 * a :length of 2^40 on a {2} tensor (the largest length the op takes)
 * asks for a 2^40-element result. */
TEST(ffts_check_the_template_before_the_work) {
    int64_t two[1] = {2}, two2[2] = {2, 2};
    emily_tensor *t = t_zero_view(EMILY_F32, 1, two), *t2 = t_zero_view(EMILY_F32, 2, two2);
    const char *keys[1] = {"length"}, *keys2[1] = {"lengths"};
    emily_value len = v_int((int64_t)1 << 40), lens_items[2] = {v_int(2), v_int((int64_t)1 << 40)};
    emily_value args[2] = {v_tensor(t), v_opts(keys, &len, 1)}, tmpl = v_tmpl(EMILY_C64, 1, two);
    CHECK_TEMPLATE_FIRST("fft", &tmpl, args, 2, "fft: output 0 is c64{1099511627776} but Nx expects c64{2}");
    CHECK_TEMPLATE_FIRST("rfft", &tmpl, args, 2, "rfft: output 0 is c64{549755813889} but Nx expects c64{2}");
    emily_value rtmpl = v_tmpl(EMILY_F32, 1, two);
    CHECK_TEMPLATE_FIRST("irfft", &rtmpl, args, 2, "irfft: output 0 is f32{1099511627776} but Nx expects f32{2}");
    emily_value lens = v_list(lens_items, 2), args2[2] = {v_tensor(t2), v_opts(keys2, &lens, 1)};
    emily_value tmpl2 = v_tmpl(EMILY_C64, 2, two2);
    CHECK_TEMPLATE_FIRST("ifft2", &tmpl2, args2, 2,
                         "ifft2: output 0 is c64{2, 1099511627776} but Nx expects c64{2, 2}");
    RELEASE(t, t2);
}

RUN_TESTS("fft", CASE(fft_every_dtype), CASE(fft_small_known_values), CASE(fft_matches_naive_dft_many_lengths),
          CASE(fft_length_pads_and_truncates), CASE(fft_along_axes_and_views), CASE(fft_input_types),
          CASE(fft_eps_zeroes_small_components), CASE(fft_non_finite_values_propagate),
          CASE(fft_batches_match_single_lines), CASE(fft2_is_two_passes), CASE(rfft_and_irfft),
          CASE(fft_zero_size_and_bad_input), CASE(fft_dispatch_callbacks),
          CASE(ffts_check_the_template_before_the_work))
