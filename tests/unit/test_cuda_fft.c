/* The FFT family on CUDA, against the CPU engine.
 *
 * HIGHEST (the exact mode): every result must have the CPU's bits (NaNs
 * compared as NaN: the GPU's arithmetic gives its canonical NaN where x86
 * keeps an operand's payload).
 *
 * FAST (cuFFT in the output's precision): every line must satisfy the
 * norm-wise error bound of a radix-2/mixed-radix FFT (Higham, Accuracy and
 * Stability of Numerical Algorithms, 2nd ed., Thm 24.2):
 *     ||fast - exact||_2 <= (C L u + 3 u) ||y||_2 + sqrt(2 count) eps
 * with u the unit roundoff of the output's precision (2^-24 for c64/f32,
 * 2^-53 for c128/f64), L the number of butterfly levels (log2 n for
 * powers of two; for other lengths cuFFT may go through Bluestein's
 * chirp-z, three transforms of length m <= 4n, so 3 (log2(2n) + 1) + 4),
 * C = 8 (Higham's constant is about log2(n) (u + 4 sqrt(2) u), ~6.7 u per
 * level, with exact twiddles), 3u for rounding the input (an f64 source
 * of a c64 transform), the twiddles and the output, ||y|| the exact line's
 * norm times sqrt(2) (rfft keeps half of a spectrum whose other half
 * mirrors it), and sqrt(2 count) eps for components the reference wrote as
 * 0 (|x| <= eps) that the fast result may leave tiny but not 0. For c128
 * the exact result is itself an FFT in double, so C L counts twice. A
 * wrong scale, sign, conjugation or ordering misses this by orders of
 * magnitude (errors of order ||y||).
 *
 * GPU cases run only with a CUDA device (otherwise listed as SKIPPED, not
 * passed). EMILY_TEST_CUDA_ON_CPU=1 runs them with both sides on the CPU:
 * a self-check of this test's own code. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "harness.h"
#include "core/engine.h"
#ifdef EMILY_WITH_CUDA
#include "cuda/fft.h"
#endif

static emily_device GPU = {EMILY_DEVICE_CUDA, 0};
static bool self_check; /* EMILY_TEST_CUDA_ON_CPU=1 */

/* ---- inputs ------------------------------------------------------------------ */

static uint64_t rng_state;
static double rnd(void) { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 4503599627370496.0 - 1.0;
}

/* A CPU tensor of random values (ints in [-1000, 1000]). */
static emily_tensor *rand_tensor(emily_dtype dt, int rank, const int64_t *shape, uint64_t seed) {
    rng_state = seed * 7919 + 17;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    size_t es = emily_dtype_size(dt);
    unsigned char *data = malloc((size_t)(n ? n : 1) * es);
    if (!data) return NULL;
    for (int64_t i = 0; i < n; i++) {
        void *p = data + (size_t)i * es;
        switch (dt) {
        case EMILY_F32: *(float *)p = (float)rnd(); break;
        case EMILY_F64: *(double *)p = rnd(); break;
        case EMILY_C64:
            ((float *)p)[0] = (float)rnd();
            ((float *)p)[1] = (float)rnd();
            break;
        case EMILY_C128:
            ((double *)p)[0] = rnd();
            ((double *)p)[1] = rnd();
            break;
        case EMILY_S32: *(int32_t *)p = (int32_t)lround(1000 * rnd()); break;
        case EMILY_U8:
            *(uint8_t *)p = (uint8_t)(rng_state >> 56);
            rnd();
            break;
        case EMILY_F16: *(uint16_t *)p = emily_f64_to_f16(rnd()); break;
        case EMILY_BF16: *(uint16_t *)p = emily_f32_to_bf16((float)rnd()); break;
        default: *(int64_t *)p = (int64_t)lround(1e6 * rnd()); break;
        }
    }
    emily_tensor *t = t_from(dt, rank, shape, data);
    free(data);
    return t;
}

static emily_tensor *on_gpu(const emily_tensor *t) { return t_on(t, GPU); }

/* ---- the ops ------------------------------------------------------------------- */

typedef enum { OP_FFT, OP_IFFT, OP_RFFT, OP_IRFFT, OP_FFT2, OP_IFFT2 } fft_op;
static const char *const op_names[] = {"fft", "ifft", "rfft", "irfft", "fft2", "ifft2"};

typedef struct fft_call {
    fft_op op;
    int64_t length; /* 0: Nx's default */
    int axis;
    int64_t length2; /* fft2/ifft2: along axis2, transformed first */
    int axis2;
    double eps;
} fft_call;

static emily_status run_call(const fft_call *c, const emily_tensor *t, emily_tensor **out) {
    int64_t lengths[2] = {c->length, c->length2};
    int axes[2] = {c->axis, c->axis2};
    switch (c->op) {
    case OP_FFT: return emily_fft(t, c->length, c->axis, c->eps, out);
    case OP_IFFT: return emily_ifft(t, c->length, c->axis, c->eps, out);
    case OP_RFFT: return emily_rfft(t, c->length, c->axis, c->eps, out);
    case OP_IRFFT: return emily_irfft(t, c->length, c->axis, c->eps, out);
    case OP_FFT2: return emily_fft2(t, lengths, axes, c->eps, out);
    default: return emily_ifft2(t, lengths, axes, c->eps, out);
    }
}

/* The transform length along an axis of t (Nx's default for 0). */
static int64_t length_of(fft_op op, int64_t length, const emily_tensor *t, int axis) {
    int r = emily_tensor_rank(t);
    int64_t size = emily_tensor_shape(t)[axis < 0 ? axis + r : axis];
    return length ? length : op == OP_IRFFT ? 2 * (size - 1) : size;
}

/* ---- comparisons --------------------------------------------------------------- */

static void *host_bytes(const emily_tensor *t) {
    size_t nb = emily_tensor_nbytes(t);
    void *p = malloc(nb ? nb : 1);
    if (p && emily_to_binary(t, p, nb)) {
        free(p);
        p = NULL;
    }
    return p;
}

/* got has want's dtype and shape (otherwise it says so under `what`). */
static bool same_type_and_shape(const emily_tensor *want, const emily_tensor *got, const char *what) {
    int r = emily_tensor_rank(want);
    if (emily_tensor_dtype(want) != emily_tensor_dtype(got) || !t_shape_is(got, r, emily_tensor_shape(want))) {
        fprintf(stderr, "  %s: type or shape differs\n", what);
        return false;
    }
    return true;
}

/* Same dtype, shape and bits (NaN matches NaN). */
static bool same_bits(const emily_tensor *want, const emily_tensor *got, const char *what) {
    if (!same_type_and_shape(want, got, what)) return false;
    emily_dtype dt = emily_tensor_dtype(want);
    bool wide = dt == EMILY_F64 || dt == EMILY_C128;
    size_t words = emily_tensor_nbytes(want) / (wide ? 8 : 4);
    void *a = host_bytes(want), *b = host_bytes(got);
    bool ok = a && b;
    for (size_t i = 0; ok && i < words; i++) {
        if (wide) {
            double x = ((double *)a)[i], y = ((double *)b)[i];
            ok = memcmp(&x, &y, 8) == 0 || (isnan(x) && isnan(y));
            if (!ok) fprintf(stderr, "  %s: word %zu: %.17g vs %.17g\n", what, i, x, y);
        } else {
            float x = ((float *)a)[i], y = ((float *)b)[i];
            ok = memcmp(&x, &y, 4) == 0 || (isnan(x) && isnan(y));
            if (!ok) fprintf(stderr, "  %s: word %zu: %.9g vs %.9g\n", what, i, (double)x, (double)y);
        }
    }
    free(a);
    free(b);
    return ok;
}

/* Butterfly levels of a length-n transform as cuFFT may run it. */
static double levels(int64_t n) {
    int lg = 0;
    while (((int64_t)1 << lg) < n) lg++;
    if (n == ((int64_t)1 << lg)) return lg > 0 ? lg : 1;
    return 3.0 * (lg + 2) + 4; /* log2(2n) rounded up is lg + 1 */
}

/* All elements as (re, im) doubles; NULL on failure. */
static double *as_c128(const emily_tensor *t) {
    emily_tensor *c = NULL, *h = NULL;
    double *v = NULL;
    if (!emily_to_device(t, EMILY_CPU, &h) && !emily_as_type(h, EMILY_C128, &c)) v = host_bytes(c);
    emily_tensor_release(h);
    emily_tensor_release(c);
    return v;
}

/* The FAST bound of the header, per line along `axis` (or over the whole
 * tensor: axis < 0, with `lv` levels). */
static bool within_bound(const emily_tensor *exact, const emily_tensor *fast, int axis, double lv, double eps,
                         const char *what) {
    if (!same_type_and_shape(exact, fast, what)) return false;
    int r = emily_tensor_rank(exact);
    emily_dtype dt = emily_tensor_dtype(exact);
    bool dbl = dt == EMILY_F64 || dt == EMILY_C128;
    double u = dbl ? ldexp(1.0, -53) : ldexp(1.0, -24);
    double coef = 8.0 * lv * (dbl ? 2 : 1) + 3;
    int64_t size = emily_tensor_size(exact), keep = size, inner = 1;
    if (axis >= 0) {
        keep = emily_tensor_shape(exact)[axis];
        for (int d = axis + 1; d < r; d++) inner *= emily_tensor_shape(exact)[d];
    }
    int64_t lines = keep ? size / keep : 0;
    double *a = as_c128(exact), *b = as_c128(fast);
    bool ok = a && b;
    double worst = 0;
    for (int64_t li = 0; ok && li < lines; li++) {
        int64_t o = li / inner, in = li % inner;
        double err = 0, ref = 0;
        for (int64_t k = 0; k < keep; k++) {
            int64_t at = 2 * ((o * keep + k) * inner + in);
            double dr = a[at] - b[at], di = a[at + 1] - b[at + 1];
            err += dr * dr + di * di;
            ref += a[at] * a[at] + a[at + 1] * a[at + 1];
        }
        double tol = coef * u * sqrt(2 * ref) + sqrt(2.0 * (double)keep) * (eps > 0 ? eps : 0);
        if (!(sqrt(err) <= tol)) {
            fprintf(stderr, "  %s: line %lld: error %.3g above the bound %.3g (norm %.3g)\n", what, (long long)li,
                    sqrt(err), tol, sqrt(ref));
            ok = false;
        }
        if (ref > 0 && sqrt(err / ref) > worst) worst = sqrt(err / ref);
    }
    free(a);
    free(b);
    return ok;
}

/* Runs c on the CPU tensor and on the same data (the same view `view` of
 * it) on the GPU at `precision`: HIGHEST must give the CPU's bits, FAST
 * the bound. view(t) makes a view of t (NULL: t itself). */
typedef emily_tensor *(*view_fn)(const emily_tensor *t);

static void compare(const fft_call *c, const emily_tensor *cpu_base, view_fn view, emily_dot_precision precision,
                    const char *label) {
    emily_tensor *gpu_base = on_gpu(cpu_base);
    if (!gpu_base) return;
    emily_tensor *ct = view ? view(cpu_base) : NULL, *gt = view ? view(gpu_base) : NULL;
    const emily_tensor *cin = view ? ct : cpu_base, *gin = view ? gt : gpu_base;
    emily_tensor *want = NULL, *got = NULL;
    char what[200];
    snprintf(what, sizeof what, "%s %s %s length %lld axis %d (%s)", label, op_names[c->op],
             emily_dtype_name(emily_tensor_dtype(cpu_base)), (long long)c->length, c->axis,
             precision == EMILY_DOT_PRECISION_HIGHEST ? "highest" : "fast");
    CHECK(cin && gin);
    if (cin && gin) {
        CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_HIGHEST));
        emily_status s1 = run_call(c, cin, &want);
        CHECK_OK(emily_dot_set_precision(precision));
        emily_status s2 = run_call(c, gin, &got);
        CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
        if (s1 || s2) {
            /* errors: the same status either way */
            if (s1 != s2) fprintf(stderr, "  %s: status %d vs %d\n", what, (int)s1, (int)s2);
            CHECK(s1 == s2);
        } else if (precision == EMILY_DOT_PRECISION_HIGHEST) {
            CHECK(same_bits(want, got, what));
        } else {
            bool two = c->op == OP_FFT2 || c->op == OP_IFFT2;
            int r = emily_tensor_rank(cin);
            int ax = c->axis < 0 ? c->axis + r : c->axis;
            double lv = two ? levels(length_of(c->op, c->length, cin, c->axis)) +
                                  levels(length_of(c->op, c->length2, cin, c->axis2)) + 1
                            : levels(length_of(c->op, c->length, cin, c->axis));
            CHECK(within_bound(want, got, two ? -1 : ax, lv, c->eps, what));
        }
    }
    emily_tensor_release(want);
    emily_tensor_release(got);
    emily_tensor_release(ct);
    emily_tensor_release(gt);
    emily_tensor_release(gpu_base);
}

static void compare_both(const fft_call *c, const emily_tensor *cpu_base, view_fn view, const char *label) {
    compare(c, cpu_base, view, EMILY_DOT_PRECISION_HIGHEST, label);
    compare(c, cpu_base, view, EMILY_DOT_PRECISION_FAST, label);
}

/* ---- views --------------------------------------------------------------------- */

static emily_tensor *transposed(const emily_tensor *t) { /* all axes reversed */
    int r = emily_tensor_rank(t), perm[8];
    for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
    emily_tensor *v = NULL;
    return emily_transpose(t, perm, &v) ? NULL : v;
}

static emily_tensor *reversed(const emily_tensor *t) { /* last axis reversed: negative stride */
    int ax = emily_tensor_rank(t) - 1;
    emily_tensor *v = NULL;
    return emily_reverse(t, 1, &ax, &v) ? NULL : v;
}

/* A slice of every axis: from `trim` (where the axis is longer than
 * 2 trim) to the end less `trim`, every `step`-th element. */
static emily_tensor *sliced(const emily_tensor *t, int64_t step, int64_t trim) {
    int r = emily_tensor_rank(t);
    int64_t starts[8], lengths[8], strides[8];
    for (int i = 0; i < r; i++) {
        int64_t d = emily_tensor_shape(t)[i], cut = d > 2 * trim ? trim : 0;
        starts[i] = cut;
        lengths[i] = (d - 2 * cut + step - 1) / step;
        strides[i] = step;
    }
    emily_tensor *v = NULL;
    return emily_slice(t, starts, lengths, strides, &v) ? NULL : v;
}

static emily_tensor *stepped(const emily_tensor *t) { return sliced(t, 2, 0); }     /* strides of 2 */
static emily_tensor *inner_block(const emily_tensor *t) { return sliced(t, 1, 1); } /* lines with gaps */

/* ---- without a GPU ----------------------------------------------------------- */

/* The CPU ignores the precision: its transform is the reference's at both. */
TEST(cpu_fft_same_at_both_precisions) {
    int64_t shape[2] = {3, 1000};
    emily_tensor *t = rand_tensor(EMILY_C64, 2, shape, 1);
    fft_call calls[] = {{OP_FFT, 0, -1, 0, 0, 1e-10}, {OP_IFFT, 1200, 1, 0, 0, 1e-10}, {OP_IRFFT, 0, -1, 0, 0, 1e-10}};
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        emily_tensor *a = NULL, *b = NULL;
        CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_HIGHEST));
        CHECK_OK(run_call(&calls[i], t, &a));
        CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
        CHECK_OK(run_call(&calls[i], t, &b));
        CHECK(a && b && same_bits(a, b, op_names[calls[i].op]));
        emily_tensor_release(a);
        emily_tensor_release(b);
    }
    emily_tensor_release(t);
}

/* A build with the CUDA engine has the FFT family in its table. */
TEST(cuda_table_has_fft) {
    const emily_engine *e = emi_cuda_engine();
    if (!e) return; /* a build without the CUDA engine */
    CHECK(e->fft && e->fft->fft);
    CHECK(emi_engine_supports(e, EMI_KERNEL_FFT, 0, EMILY_C64));
}

/* ---- on a GPU: both modes against the CPU -------------------------------------- */

static const emily_dtype SOURCES[] = {EMILY_C64, EMILY_C128, EMILY_F32, EMILY_F64};

/* fft and ifft of [3, n] along the last axis: powers of two, odd lengths
 * (direct DFT leaves), mixed, Bluestein lengths (>= 1024, not powers of
 * two), n = 1. */
TEST(gpu_fft_lengths_match_cpu) {
    const int64_t lens[] = {1, 2, 3, 5, 6, 7, 8, 12, 15, 16, 31, 64, 96, 255, 1000, 1023, 1024, 1025, 1200, 4096};
    for (size_t d = 0; d < sizeof SOURCES / sizeof *SOURCES; d++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            int64_t shape[2] = {3, lens[li]};
            emily_tensor *t = rand_tensor(SOURCES[d], 2, shape, 100 + li);
            fft_call f = {OP_FFT, 0, -1, 0, 0, 1e-10}, i = {OP_IFFT, 0, -1, 0, 0, 1e-10};
            compare_both(&f, t, NULL, "lengths");
            compare_both(&i, t, NULL, "lengths");
            emily_tensor_release(t);
        }
}

/* Cut and zero-pad, for every op: lengths below, at and above the axis. */
TEST(gpu_fft_cut_and_pad_match_cpu) {
    int64_t shape[2] = {4, 40};
    const int64_t lens[] = {1, 7, 16, 39, 40, 41, 64, 100, 1100};
    for (size_t d = 0; d < sizeof SOURCES / sizeof *SOURCES; d++) {
        emily_tensor *t = rand_tensor(SOURCES[d], 2, shape, 7 + d);
        bool real = SOURCES[d] == EMILY_F32 || SOURCES[d] == EMILY_F64;
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            fft_call calls[] = {{OP_FFT, lens[li], 1, 0, 0, 1e-10},
                                {OP_IFFT, lens[li], -1, 0, 0, 1e-10},
                                {real ? OP_RFFT : OP_IRFFT, lens[li], 1, 0, 0, 1e-10}};
            for (size_t k = 0; k < 3; k++) compare_both(&calls[k], t, NULL, "cut/pad");
        }
        emily_tensor_release(t);
    }
}

/* rfft and irfft: even and odd lengths, default lengths, half spectra
 * shorter and longer than n / 2 + 1. */
TEST(gpu_real_transforms_match_cpu) {
    const int64_t lens[] = {1, 2, 3, 4, 9, 10, 33, 64, 100, 1025, 2048};
    for (int dbl = 0; dbl < 2; dbl++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            int64_t n = lens[li], rs[2] = {5, n}, cs[2] = {5, n / 2 + 1};
            emily_tensor *x = rand_tensor(dbl ? EMILY_F64 : EMILY_F32, 2, rs, 300 + li);
            emily_tensor *h = rand_tensor(dbl ? EMILY_C128 : EMILY_C64, 2, cs, 400 + li);
            fft_call calls[] = {{OP_RFFT, 0, -1, 0, 0, 1e-10},
                                {OP_IRFFT, n, -1, 0, 0, 1e-10},
                                {OP_IRFFT, 0, -1, 0, 0, 1e-10},
                                {OP_IRFFT, 2 * n + 1, 1, 0, 0, 1e-10},
                                {OP_IRFFT, n > 2 ? n / 2 : 1, 1, 0, 0, 1e-10}};
            compare_both(&calls[0], x, NULL, "real");
            for (size_t k = 1; k < 5; k++) compare_both(&calls[k], h, NULL, "real");
            emily_tensor_release(x);
            emily_tensor_release(h);
        }
}

/* Every axis of a rank-3 tensor, and views: transposed (interleaved
 * lines), reversed (negative strides), stepped, inner blocks. */
TEST(gpu_fft_axes_and_views_match_cpu) {
    int64_t shape[3] = {6, 20, 10};
    view_fn views[] = {NULL, transposed, reversed, stepped, inner_block};
    const char *names[] = {"contiguous", "transposed", "reversed", "stepped", "inner block"};
    for (size_t d = 0; d < sizeof SOURCES / sizeof *SOURCES; d++) {
        emily_tensor *t = rand_tensor(SOURCES[d], 3, shape, 50 + d);
        bool real = SOURCES[d] == EMILY_F32 || SOURCES[d] == EMILY_F64;
        for (int ax = 0; ax < 3; ax++)
            for (size_t v = 0; v < sizeof views / sizeof *views; v++) {
                fft_call f = {OP_FFT, 0, ax, 0, 0, 1e-10}, i = {OP_IFFT, 12, ax, 0, 0, 1e-10};
                fft_call r = {real ? OP_RFFT : OP_IRFFT, 0, ax, 0, 0, 1e-10};
                compare_both(&f, t, views[v], names[v]);
                compare_both(&i, t, views[v], names[v]);
                compare_both(&r, t, views[v], names[v]);
            }
        emily_tensor_release(t);
    }
}

/* fft2 and ifft2 over every pair of axes, with lengths. */
TEST(gpu_fft2_matches_cpu) {
    int64_t shape[3] = {4, 12, 9};
    const emily_dtype types[] = {EMILY_C64, EMILY_F64};
    const int pairs[][2] = {{0, 1}, {1, 2}, {2, 0}, {-1, -2}};
    for (size_t d = 0; d < 2; d++) {
        emily_tensor *t = rand_tensor(types[d], 3, shape, 60 + d);
        for (size_t p = 0; p < 4; p++) {
            fft_call f = {OP_FFT2, 0, pairs[p][0], 0, pairs[p][1], 1e-10};
            fft_call i = {OP_IFFT2, 16, pairs[p][0], 5, pairs[p][1], 1e-10};
            compare_both(&f, t, NULL, "fft2");
            compare_both(&i, t, transposed, "fft2 transposed");
        }
        emily_tensor_release(t);
    }
}

/* Sources the op layer converts to f64 first (integers, f16, bf16): c64
 * results. */
TEST(gpu_fft_converted_inputs_match_cpu) {
    int64_t shape[2] = {3, 48};
    const emily_dtype types[] = {EMILY_S32, EMILY_U8, EMILY_S64, EMILY_F16, EMILY_BF16};
    for (size_t d = 0; d < sizeof types / sizeof *types; d++) {
        emily_tensor *t = rand_tensor(types[d], 2, shape, 70 + d);
        fft_call calls[] = {{OP_FFT, 0, -1, 0, 0, 1e-10},
                            {OP_IFFT, 50, 0, 0, 0, 1e-10},
                            {OP_RFFT, 0, 1, 0, 0, 1e-10},
                            {OP_FFT2, 0, 0, 0, 1, 1e-10}};
        for (size_t k = 0; k < 4; k++) compare_both(&calls[k], t, NULL, "converted");
        emily_tensor_release(t);
    }
}

/* eps: a large eps zeroes most components, a negative one none (signed
 * zeros kept); special values (inf, NaN, signed zeros) go through. */
TEST(gpu_fft_eps_and_special_values_match_cpu) {
    int64_t shape[2] = {2, 8};
    emily_tensor *t = rand_tensor(EMILY_C128, 2, shape, 80);
    const double epss[] = {0.0, -1.0, 0.5, 3.0, 1e300};
    for (size_t e = 0; e < sizeof epss / sizeof *epss; e++) {
        fft_call f = {OP_FFT, 0, -1, 0, 0, epss[e]}, i = {OP_IRFFT, 0, -1, 0, 0, epss[e]};
        compare_both(&f, t, NULL, "eps");
        compare_both(&i, t, NULL, "eps");
    }
    double special[16] = {0.0, -0.0, INFINITY,  1.0, -0.0, -0.0, 2.0, NAN,
                          1.0, 1.0,  -INFINITY, 0.0, 0.5,  -0.5, 0.0, 0.0};
    int64_t s8[1] = {8};
    emily_tensor *z = t_from(EMILY_C128, 1, s8, special);
    fft_call calls[] = {{OP_FFT, 0, 0, 0, 0, 1e-10}, {OP_IFFT, 0, 0, 0, 0, -1.0}, {OP_IRFFT, 0, 0, 0, 0, 1e-10}};
    /* bits: HIGHEST only (FAST's error bound means nothing with inf/NaN) */
    for (size_t k = 0; k < 3; k++) compare(&calls[k], z, NULL, EMILY_DOT_PRECISION_HIGHEST, "special");
    double zeros[16] = {-0.0, -0.0, 0.0, -0.0, -0.0, 0.0, -0.0, -0.0, 0, 0, 0, 0, 0, 0, 0, 0};
    emily_tensor *zz = t_from(EMILY_C128, 1, s8, zeros);
    for (size_t k = 0; k < 3; k++) compare(&calls[k], zz, NULL, EMILY_DOT_PRECISION_HIGHEST, "zeros");
    emily_tensor_release(t);
    emily_tensor_release(z);
    emily_tensor_release(zz);
}

/* Empty axes: an input of length 0 along the axis transforms zeros (the
 * length must be given); other dims of size 0 give empty outputs. */
TEST(gpu_fft_empty_match_cpu) {
    int64_t e1[2] = {3, 0}, e2[2] = {0, 16};
    emily_tensor *a = rand_tensor(EMILY_C64, 2, e1, 1), *b = rand_tensor(EMILY_F32, 2, e2, 2);
    fft_call calls[] = {{OP_FFT, 8, 1, 0, 0, 1e-10}, {OP_IFFT, 5, -1, 0, 0, -1.0}, {OP_IRFFT, 6, 1, 0, 0, 1e-10}};
    for (size_t k = 0; k < 3; k++) compare_both(&calls[k], a, NULL, "empty axis");
    fft_call r = {OP_RFFT, 0, 1, 0, 0, 1e-10}, f = {OP_FFT, 0, 1, 0, 0, 1e-10};
    compare_both(&r, b, NULL, "empty");
    compare_both(&f, b, NULL, "empty");
    /* the default length of an empty axis is an error on both */
    fft_call bad = {OP_FFT, 0, 1, 0, 0, 1e-10};
    compare_both(&bad, a, NULL, "empty default");
    emily_tensor_release(a);
    emily_tensor_release(b);
}

/* Many short lines, few long ones (Bluestein and powers of two). */
TEST(gpu_fft_large_match_cpu) {
    int64_t many[2] = {4096, 8}, long1[1] = {1 << 16}, blue[2] = {2, 3001};
    emily_tensor *a = rand_tensor(EMILY_C64, 2, many, 90);
    emily_tensor *b = rand_tensor(EMILY_C128, 1, long1, 91);
    emily_tensor *c = rand_tensor(EMILY_F32, 2, blue, 92);
    fft_call f = {OP_FFT, 0, -1, 0, 0, 1e-10}, f0 = {OP_FFT, 0, 0, 0, 0, 1e-10}, i = {OP_IFFT, 0, -1, 0, 0, 1e-10};
    fft_call r = {OP_RFFT, 0, -1, 0, 0, 1e-10};
    compare_both(&f, a, NULL, "many lines");
    compare_both(&f0, a, NULL, "many lines");
    compare_both(&i, b, NULL, "long");
    compare_both(&r, c, NULL, "bluestein");
    compare_both(&f, c, NULL, "bluestein");
    emily_tensor_release(a);
    emily_tensor_release(b);
    emily_tensor_release(c);
}

/* The fast path with and without cuFFT's store callback (a separate
 * pass then scales and zeroes), on the layouts it takes directly. */
TEST(gpu_fft_fast_without_callbacks) {
#ifdef EMILY_WITH_CUDA
    if (self_check) return;
    int64_t shape[2] = {8, 256};
    emily_tensor *t = rand_tensor(EMILY_C64, 2, shape, 95), *x = rand_tensor(EMILY_F64, 2, shape, 96);
    fft_call calls[] = {{OP_FFT, 0, -1, 0, 0, 1e-10}, {OP_IFFT, 0, 0, 0, 0, 1e-10}, {OP_IRFFT, 0, -1, 0, 0, 1e-3}};
    bool before = emi_cuda_fft_callbacks();
    for (int on = 1; on >= 0; on--) {
        emi_cuda_fft_set_callbacks(on);
        for (size_t k = 0; k < 3; k++)
            compare(&calls[k], t, NULL, EMILY_DOT_PRECISION_FAST, on ? "callbacks" : "plain");
        fft_call r = {OP_RFFT, 0, -1, 0, 0, 1e-10};
        compare(&r, x, NULL, EMILY_DOT_PRECISION_FAST, on ? "callbacks" : "plain");
        compare(&r, x, transposed, EMILY_DOT_PRECISION_FAST, on ? "callbacks" : "plain");
    }
    emi_cuda_fft_set_callbacks(before);
    emi_cuda_fft_plan_counts plans;
    emi_cuda_fft_plan_counts_get(&plans);
    printf("  cuFFT plans so far: %lld with the store callback, %lld refused it (then without), %lld plain\n",
           (long long)plans.with_callback, (long long)plans.callback_refused, (long long)plans.plain);
    emily_tensor_release(t);
    emily_tensor_release(x);
#endif
}

/* ---- on a GPU: errors, memory, threads, speed ----------------------------------- */

/* Bad input fails the same way on both devices (the op layer's checks),
 * and the CUDA kernel refuses what it cannot do with a clear error. */
TEST(gpu_fft_bad_input) {
    int64_t shape[2] = {2, 4}, s0[1] = {0};
    emily_tensor *c = rand_tensor(EMILY_C64, 2, shape, 3), *out = NULL;
    emily_tensor *g = on_gpu(c);
    CHECK_ERR(emily_fft(g, -1, 0, 1e-10, &out), EMILY_ERR_ARGUMENT, "length");
    CHECK_ERR(emily_fft(g, 0, 2, 1e-10, &out), EMILY_ERR_AXIS, "out of range");
    CHECK_ERR(emily_rfft(g, 0, 0, 1e-10, &out), EMILY_ERR_TYPE, "real");
    int64_t lengths[2] = {0, 0};
    int same[2] = {1, 1};
    CHECK_ERR(emily_fft2(g, lengths, same, 1e-10, &out), EMILY_ERR_AXIS, "more than once");
    CHECK(out == NULL);
    double one = 1.0;
    emily_tensor *scalar = t_from(EMILY_F64, 0, s0, &one), *gs = on_gpu(scalar);
    CHECK_ERR(emily_fft(gs, 0, 0, 1e-10, &out), EMILY_ERR_SHAPE, "rank");
    CHECK_ERR(emily_fft(NULL, 0, 0, 1e-10, &out), EMILY_ERR_ARGUMENT, "NULL");
    if (!self_check) {
        /* the kernel itself */
        const emily_engine *e = emi_cuda_engine();
        emily_tensor *dst = NULL, *bad = NULL, *cpu_dst = NULL, *wide = NULL;
        int64_t wshape[2] = {2, 5};
        CHECK_OK(emily_empty(GPU, EMILY_C64, 2, shape, &dst));
        CHECK_OK(emily_empty(GPU, EMILY_C64, 2, wshape, &wide));
        CHECK_OK(emily_empty(GPU, EMILY_S32, 2, shape, &bad));
        CHECK_OK(emily_empty(EMILY_CPU, EMILY_C64, 2, shape, &cpu_dst));
        emily_dot_precision ps[2] = {EMILY_DOT_PRECISION_HIGHEST, EMILY_DOT_PRECISION_FAST};
        for (int p = 0; p < 2 && e; p++) {
            CHECK_ERR(e->fft->fft(dst, g, 1, 0, EMILY_FFT_FORWARD, 0, ps[p]), EMILY_ERR_ARGUMENT, "length");
            CHECK_ERR(e->fft->fft(dst, g, 2, 4, EMILY_FFT_FORWARD, 0, ps[p]), EMILY_ERR_AXIS, "axis 2");
            CHECK_ERR(e->fft->fft(dst, bad, 1, 4, EMILY_FFT_FORWARD, 0, ps[p]), EMILY_ERR_TYPE, "s32");
            CHECK_ERR(e->fft->fft(bad, g, 1, 4, EMILY_FFT_FORWARD, 0, ps[p]), EMILY_ERR_TYPE, "s32");
            CHECK_ERR(e->fft->fft(dst, g, 1, 4, EMILY_FFT_INVERSE_REAL, 0, ps[p]), EMILY_ERR_TYPE, "c64");
            CHECK_ERR(e->fft->fft(dst, g, 1, 3, EMILY_FFT_FORWARD, 0, ps[p]), EMILY_ERR_SHAPE, "{2, 4}");
            CHECK_ERR(e->fft->fft(wide, g, 0, 4, EMILY_FFT_FORWARD, 0, ps[p]), EMILY_ERR_SHAPE, "axis 0");
            CHECK_ERR(e->fft->fft(cpu_dst, g, 1, 4, EMILY_FFT_FORWARD, 0, ps[p]), EMILY_ERR_DEVICE, "one CUDA device");
            CHECK_ERR(e->fft->fft(dst, g, 1, 4, (emily_fft_mode)9, 0, ps[p]), EMILY_ERR_ARGUMENT, "mode");
        }
        emily_tensor_release(dst);
        emily_tensor_release(bad);
        emily_tensor_release(cpu_dst);
        emily_tensor_release(wide);
    }
    emily_tensor_release(c);
    emily_tensor_release(g);
    emily_tensor_release(scalar);
    emily_tensor_release(gs);
}

/* Scratch (packed lines, work areas, tables, offsets) goes back to the
 * allocator: active bytes return to where they were. */
TEST(gpu_fft_releases_scratch) {
    if (self_check) return;
    int64_t shape[3] = {5, 300, 7};
    emily_tensor *t = rand_tensor(EMILY_C64, 3, shape, 4), *g = on_gpu(t);
    emily_memory_stats before, after;
    CHECK_OK(emily_synchronize(GPU));
    CHECK_OK(emily_memory_stats_get(GPU, &before));
    emily_dot_precision ps[2] = {EMILY_DOT_PRECISION_HIGHEST, EMILY_DOT_PRECISION_FAST};
    for (int p = 0; p < 2; p++) {
        CHECK_OK(emily_dot_set_precision(ps[p]));
        for (int ax = 0; ax < 3; ax++) {
            emily_tensor *y = NULL, *z = NULL;
            CHECK_OK(emily_fft(g, 1200, ax, 1e-10, &y));
            CHECK_OK(emily_irfft(g, 0, ax, 1e-10, &z));
            emily_tensor_release(y);
            emily_tensor_release(z);
        }
    }
    CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
    CHECK_OK(emily_synchronize(GPU));
    CHECK_OK(emily_memory_stats_get(GPU, &after));
    CHECK(after.active == before.active);
    emily_tensor_release(t);
    emily_tensor_release(g);
}

/* Threads on their own streams share cached plans (each call brings its
 * own work area): results stay right. */
typedef struct thread_job {
    const emily_tensor *cpu, *want;
    int failures;
} thread_job;

static void *thread_work(void *arg) {
    thread_job *j = arg;
    emily_stream *s = NULL;
    if (emily_stream_new(GPU, &s) || emily_stream_set_current(GPU, s)) {
        j->failures++;
        return NULL;
    }
    emily_tensor *g = NULL;
    if (emily_to_device(j->cpu, GPU, &g)) j->failures++;
    for (int i = 0; g && i < 20; i++) {
        emily_tensor *y = NULL;
        if (emily_fft(g, 0, -1, 1e-10, &y) || !within_bound(j->want, y, 1, levels(4096), 1e-10, "thread"))
            j->failures++;
        emily_tensor_release(y);
    }
    emily_tensor_release(g);
    emily_stream_set_current(GPU, NULL);
    emily_stream_free(s);
    return NULL;
}

TEST(gpu_fft_threads_share_plans) {
    int64_t shape[2] = {16, 4096};
    emily_tensor *t = rand_tensor(EMILY_C64, 2, shape, 5), *want = NULL;
    CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
    CHECK_OK(emily_fft(t, 0, -1, 1e-10, &want)); /* the CPU's, exact */
    pthread_t th[4];
    thread_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (thread_job){.cpu = t, .want = want, .failures = 0};
        CHECK(pthread_create(&th[i], NULL, thread_work, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].failures == 0);
    }
    emily_tensor_release(t);
    emily_tensor_release(want);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* fft of a c64 vector of 2^24 points at FAST (the benchmark's case):
 * Parseval's identity and the zero-frequency sum hold, and the time per
 * call is printed (to set against torch.fft.fft on the same GPU). */
TEST(gpu_fft_c64_2p24) {
    if (self_check) return;
    int64_t n = (int64_t)1 << 24, shape[1] = {n};
    emily_tensor *t = rand_tensor(EMILY_C64, 1, shape, 6), *g = on_gpu(t), *y = NULL;
    float *x = host_bytes(t);
    CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
    for (int i = 0; i < 3; i++) { /* warm-up: plans, allocator */
        emily_tensor_release(y);
        y = NULL;
        CHECK_OK(emily_fft(g, 0, 0, 1e-10, &y));
    }
    CHECK_OK(emily_synchronize(GPU));
    const int runs = 20;
    double t0 = now_s();
    for (int i = 0; i < runs; i++) {
        emily_tensor_release(y);
        y = NULL;
        CHECK_OK(emily_fft(g, 0, 0, 1e-10, &y));
    }
    CHECK_OK(emily_synchronize(GPU));
    double ms = (now_s() - t0) * 1e3 / runs;
    printf("  fft c64 2^24 (FAST): %.3f ms per call, output allocation included\n", ms);
    float *v = y ? host_bytes(y) : NULL;
    CHECK(x && v);
    if (x && v) {
        long double ex = 0, ey = 0, sr = 0, si = 0;
        for (int64_t i = 0; i < n; i++) {
            ex += (long double)x[2 * i] * x[2 * i] + (long double)x[2 * i + 1] * x[2 * i + 1];
            ey += (long double)v[2 * i] * v[2 * i] + (long double)v[2 * i + 1] * v[2 * i + 1];
            sr += x[2 * i];
            si += x[2 * i + 1];
        }
        double u = ldexp(1.0, -24), tol = (8.0 * 24 + 3) * u;
        /* ||y||^2 = n ||x||^2; y_0 = sum x (within the bound on ||y||) */
        CHECK(fabs((double)(ey / ((long double)n * ex)) - 1.0) <= 2 * tol);
        double d0 = hypot(v[0] - (double)sr, v[1] - (double)si);
        CHECK(d0 <= tol * sqrt((double)ey));
    }
    free(x);
    free(v);
    emily_tensor_release(y);
    emily_tensor_release(g);
    emily_tensor_release(t);
}

#define GPU_CASES                                                                                                     \
    CASE(gpu_fft_lengths_match_cpu), CASE(gpu_fft_cut_and_pad_match_cpu), CASE(gpu_real_transforms_match_cpu),        \
        CASE(gpu_fft_axes_and_views_match_cpu), CASE(gpu_fft2_matches_cpu), CASE(gpu_fft_converted_inputs_match_cpu), \
        CASE(gpu_fft_eps_and_special_values_match_cpu), CASE(gpu_fft_empty_match_cpu), CASE(gpu_fft_large_match_cpu), \
        CASE(gpu_fft_fast_without_callbacks), CASE(gpu_fft_bad_input), CASE(gpu_fft_releases_scratch),                \
        CASE(gpu_fft_threads_share_plans), CASE(gpu_fft_c64_2p24)

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case always[] = {
        CASE(cpu_fft_same_at_both_precisions), CASE(cuda_table_has_fft), {NULL, NULL}};
    static const harness_case gpu[] = {GPU_CASES, {NULL, NULL}};
    int rc = harness_run("cuda fft (without a GPU too)", always);
    static const harness_gpu_cases g = {"cuda fft", gpu, gpu, "cuda fft cases on cpu", &GPU, &self_check, false};
    return harness_gpu_finish(rc, &g);
}
