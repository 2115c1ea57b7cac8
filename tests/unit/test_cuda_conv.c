/* Conv on CUDA (src/cuda/conv_cudnn.c on cuDNN, or the op layer's dots
 * where the kernel declines) against the CPU engine.
 *
 * Every GPU result is compared with the CPU's result for the same input
 * bits computed at HIGHEST precision (f64 accumulation, rounded once),
 * element by element, within
 *
 *     (K + 16) * u * mag + ulp * |ref| + tiny
 *
 * K: the contraction length (input channels per group x window size);
 * u: the unit roundoff of the GPU path's accumulation (2^-24 for f32
 *    accumulation: cuDNN and cuBLAS at FAST for f32/f16/bf16; 2^-53 at
 *    HIGHEST and for f64), doubled for complex products;
 * mag: the same conv of |input| and |kernel| (sum of |products|), so the
 *    first term is the classic bound on a sum of K products accumulated
 *    in any order (the cuDNN kernel uses only GEMM-family algorithms,
 *    whose outputs are such sums; the 16 covers the products' own
 *    rounding and the implicit GEMM's split-K partial sums);
 * ulp: one unit in the last place of the output type relative to |ref|
 *    (the two sides round their sums once each, and cuDNN rounds bf16 to
 *    nearest where Nx's rule truncates: at most one ulp apart);
 * tiny: f16's smallest subnormal, for results that round to the
 *    subnormal range.
 *
 * Each case also checks which path ran (emi_conv_device_count): the
 * cases cuDNN takes (f32/f16/bf16 at FAST, NCHW, NHWC, 1-3 spatial axes,
 * groups, strides, dilations, padding of every kind, strided and
 * misaligned views, permuted outputs) and the ones it must leave to the
 * dots (HIGHEST, f64, complex, integer and mixed types, batch groups,
 * empty operands), which must still be right. Bad input fails on the GPU
 * with the CPU's status and message.
 *
 * Without a GPU the GPU cases are listed as skipped, never passed.
 * EMILY_TEST_CUDA_ON_CPU=1 runs them with the CPU in the GPU's place (the
 * path checks left out): a check of this file's references and bounds. */
#include <stdlib.h>
#include "harness.h"
#include "../float_parts.h"
#include "core/engine.h"

static emily_device GPU = {EMILY_DEVICE_CUDA, 0};
static bool self_check; /* EMILY_TEST_CUDA_ON_CPU=1 */

/* ---- data --------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double rnd(void) { /* uniform in [-1, 1), 20 bits */
    return (double)(xorshift64(&rng) >> 44) / 524288.0 - 1.0;
}

static int64_t size_of(int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* A CPU tensor of random values of type dt (complex: both parts random;
 * integers: -5..5). */
static emily_tensor *random_tensor(emily_dtype dt, int rank, const int64_t *shape) {
    int64_t n = size_of(rank, shape);
    bool cplx = emily_dtype_is_complex(dt), integer = emily_dtype_is_integer(dt);
    double *h = malloc(sizeof(double) * (size_t)(2 * n + 1));
    if (!h) return NULL;
    for (int64_t i = 0; i < (cplx ? 2 * n : n); i++) h[i] = integer ? (double)(int)(rnd() * 5.5) : rnd();
    emily_tensor *w = t_from(cplx ? EMILY_C128 : EMILY_F64, rank, shape, h), *t = NULL;
    free(h);
    if (w && emily_as_type(w, dt, &t)) t = NULL;
    emily_tensor_release(w);
    return t;
}

/* Every element of t as doubles (complex: re, im pairs); *n values. */
static double *to_doubles(const emily_tensor *t, int64_t *n) {
    bool cplx = emily_dtype_is_complex(emily_tensor_dtype(t));
    emily_tensor *c = NULL, *d = NULL;
    double *h = NULL;
    *n = emily_tensor_size(t) * (cplx ? 2 : 1);
    if (!emily_to_device(t, EMILY_CPU, &c) && !emily_as_type(c, cplx ? EMILY_C128 : EMILY_F64, &d)) {
        h = malloc(sizeof(double) * (size_t)(*n + 1));
        if (h && emily_to_binary(d, h, sizeof(double) * (size_t)*n)) {
            free(h);
            h = NULL;
        }
    }
    emily_tensor_release(c);
    emily_tensor_release(d);
    return h;
}

/* ---- cases -------------------------------------------------------------- */

/* One conv: shapes as stored (after the permutations), options (0 in
 * stride/dilation entries: 1; ip[0] < 0: identity permutations). */
typedef struct conv_case {
    const char *name;
    int rank;
    int64_t in[5], k[5];
    int ip[5], kp[5], op[5];
    int64_t stride[3], lo[3], hi[3], idil[3], kdil[3];
    int64_t fg, bg;
    int view; /* 0: as made; 1: a strided slice (every other element of the
                 last axis); 2: starting one element into its buffer */
} conv_case;

/* the cases, one a line */
// clang-format off
#define ID {-1}
static const conv_case CUDNN_CASES[] = {
    {"2d", 4, {2, 8, 9, 11}, {6, 8, 3, 3}, ID, ID, ID, {0}, {1, 1}, {1, 1}, {0}, {0}, 1, 1, 0},
    {"2d_stride_dilation", 4, {2, 4, 13, 12}, {5, 4, 3, 2}, ID, ID, ID, {2, 3}, {2, 0}, {2, 0}, {0},
     {2, 1}, 1, 1, 0},
    {"groups", 4, {2, 8, 7, 7}, {8, 2, 3, 3}, ID, ID, ID, {0}, {1, 1}, {1, 1}, {0}, {0}, 4, 1, 0},
    {"depthwise", 4, {1, 6, 10, 10}, {6, 1, 3, 3}, ID, ID, ID, {0}, {1, 1}, {1, 1}, {0}, {0}, 6, 1, 0},
    {"1d", 3, {3, 5, 17}, {4, 5, 3}, ID, ID, ID, {2}, {1}, {1}, {0}, {0}, 1, 1, 0},
    {"3d", 5, {2, 3, 5, 6, 7}, {4, 3, 2, 3, 3}, ID, ID, ID, {0}, {1, 0, 1}, {1, 0, 1}, {0}, {0}, 1, 1, 0},
    /* Axon's layout: NHWC input and output, HWIO kernel */
    {"nhwc_hwio", 4, {2, 9, 11, 8}, {3, 3, 8, 6}, {0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}, {0}, {1, 1},
     {1, 1}, {0}, {0}, 1, 1, 0},
    {"nhwc_1d", 3, {2, 15, 6}, {3, 6, 4}, {0, 2, 1}, {2, 1, 0}, {0, 2, 1}, {1}, {0}, {0}, {0}, {2}, 1, 1, 0},
    /* padding the kernel does not take itself: the op layer pads first */
    {"asymmetric_padding", 4, {2, 4, 10, 10}, {4, 4, 3, 3}, ID, ID, ID, {2, 2}, {0, 0}, {1, 1}, {0}, {0},
     1, 1, 0},
    {"crop_and_input_dilation", 4, {1, 3, 8, 8}, {2, 3, 3, 3}, ID, ID, ID, {0}, {-1, 2}, {1, -1}, {2, 1},
     {0}, 1, 1, 0},
    /* operands cuDNN cannot read in place: copied to packed ones */
    {"strided_view", 4, {2, 8, 9, 11}, {6, 8, 3, 3}, ID, ID, ID, {0}, {1, 1}, {1, 1}, {0}, {0}, 1, 1, 1},
    {"misaligned_view", 4, {2, 8, 9, 11}, {6, 8, 3, 3}, ID, ID, ID, {0}, {1, 1}, {1, 1}, {0}, {0}, 1, 1, 2},
    {"output_permuted", 4, {2, 8, 9, 11}, {6, 8, 3, 3}, ID, ID, {3, 2, 0, 1}, {0}, {1, 1}, {1, 1}, {0},
     {0}, 1, 1, 0},
    {"1x1", 4, {4, 16, 7, 7}, {32, 16, 1, 1}, ID, ID, ID, {0}, {0}, {0}, {0}, {0}, 1, 1, 0},
    {"long_contraction", 4, {2, 64, 12, 12}, {64, 64, 3, 3}, ID, ID, ID, {0}, {1, 1}, {1, 1}, {0}, {0}, 1,
     1, 0},
};

static const conv_case FALLBACK_BATCH_GROUPS = {
    "batch_groups", 4, {4, 4, 6, 6}, {6, 4, 3, 3}, ID, ID, ID, {0}, {1, 1}, {1, 1}, {0}, {0}, 1, 2, 0};
static const conv_case EMPTY_BATCH = {
    "empty_batch", 4, {0, 3, 5, 5}, {2, 3, 3, 3}, ID, ID, ID, {0}, {0}, {0}, {0}, {0}, 1, 1, 0};
static const conv_case NO_CHANNELS = {
    "no_channels", 4, {2, 0, 5, 5}, {3, 0, 3, 3}, ID, ID, ID, {0}, {0}, {0}, {0}, {0}, 1, 1, 0};
// clang-format on

/* The options of a case (arrays owned by the caller's `store`). */
typedef struct opts_store {
    int64_t stride[3], idil[3], kdil[3];
} opts_store;

static emily_conv_opts opts_of(const conv_case *c, opts_store *st) {
    int d = c->rank - 2;
    for (int i = 0; i < d; i++) {
        st->stride[i] = c->stride[i] ? c->stride[i] : 1;
        st->idil[i] = c->idil[i] ? c->idil[i] : 1;
        st->kdil[i] = c->kdil[i] ? c->kdil[i] : 1;
    }
    emily_conv_opts o = {.strides = st->stride,
                         .padding_lo = c->lo,
                         .padding_hi = c->hi,
                         .input_dilation = st->idil,
                         .kernel_dilation = st->kdil,
                         .feature_group_size = c->fg,
                         .batch_group_size = c->bg,
                         .input_permutation = c->ip[0] < 0 ? NULL : c->ip,
                         .kernel_permutation = c->kp[0] < 0 ? NULL : c->kp,
                         .output_permutation = c->op[0] < 0 ? NULL : c->op};
    return o;
}

/* The case's input on `dev` from the CPU tensor `base` (made with the
 * view's extra room): as it is, or the case's view of it. */
static emily_status input_on(const conv_case *c, const emily_tensor *base, emily_device dev, emily_tensor **out) {
    emily_tensor *b = NULL;
    emily_status s = emily_to_device(base, dev, &b);
    if (s) return s;
    int r = c->rank;
    if (c->view == 1) {
        int64_t start[5] = {0}, len[5], step[5] = {1, 1, 1, 1, 1};
        for (int i = 0; i < r; i++) len[i] = c->in[i];
        step[r - 1] = 2;
        s = emily_slice(b, start, len, step, out);
    } else if (c->view == 2) {
        int64_t start[1] = {1}, len[1] = {size_of(r, c->in)}, step[1] = {1};
        emily_tensor *flat = NULL;
        s = emily_slice(b, start, len, step, &flat);
        if (!s) s = emily_reshape(flat, r, c->in, out);
        emily_tensor_release(flat);
    } else {
        emily_tensor_retain(b);
        *out = b;
    }
    emily_tensor_release(b);
    return s;
}

/* The random CPU tensor the case's input is taken from. */
static emily_tensor *input_base(const conv_case *c, emily_dtype dt) {
    int64_t shape[5];
    memcpy(shape, c->in, sizeof shape);
    if (c->view == 1) shape[c->rank - 1] = 2 * c->in[c->rank - 1];
    if (c->view == 2) {
        int64_t n = size_of(c->rank, c->in) + 1;
        return random_tensor(dt, 1, &n);
    }
    return random_tensor(dt, c->rank, shape);
}

/* emily_conv at a thread precision (the caller's is restored). */
static emily_status conv_at(emily_dot_precision p, const emily_tensor *x, const emily_tensor *w,
                            const emily_conv_opts *o, emily_tensor **out) {
    emily_dot_precision prev;
    emily_status s = emily_dot_set_thread_precision(p, &prev);
    if (s) return s;
    s = emily_conv(x, w, o, EMILY_DTYPE_AUTO, out);
    emily_dot_set_thread_precision(prev, NULL);
    return s;
}

/* One ULP at 1 of t's real type: twice its unit roundoff. */
static double ulp_of(emily_dtype t) { return 2 * fp_unit_roundoff(emily_type_to_real(t)); }

/* Runs case c with input type ti and kernel type tk on the GPU at
 * precision p; compares with the CPU; `cudnn`: whether the device's own
 * kernel must have computed it. */
static void run_case(const conv_case *c, emily_dtype ti, emily_dtype tk, emily_dot_precision p, bool cudnn) {
    char what[160];
    snprintf(what, sizeof what, "%s %s*%s %s", c->name, emily_dtype_name(ti), emily_dtype_name(tk),
             p == EMILY_DOT_PRECISION_FAST ? "fast" : "highest");
    opts_store st;
    emily_conv_opts o = opts_of(c, &st);
    emily_tensor *xb = input_base(c, ti), *w = random_tensor(tk, c->rank, c->k);
    emily_tensor *x = NULL, *gx = NULL, *gw = NULL, *ref = NULL, *got = NULL;
    emily_tensor *ax = NULL, *aw = NULL, *ax64 = NULL, *aw64 = NULL, *mag = NULL;
    double *r = NULL, *g = NULL, *m = NULL;
    CHECK(xb && w);
    if (!xb || !w) goto done;
    CHECK_OK(input_on(c, xb, EMILY_CPU, &x));
    CHECK_OK(input_on(c, xb, GPU, &gx));
    CHECK_OK(emily_to_device(w, GPU, &gw));
    if (!x || !gx || !gw) goto done;
    /* the reference, and the sums of |products| */
    CHECK_OK(conv_at(EMILY_DOT_PRECISION_HIGHEST, x, w, &o, &ref));
    CHECK_OK(emily_unary(EMILY_ABS, x, &ax));
    CHECK_OK(emily_unary(EMILY_ABS, w, &aw));
    if (!ref || !ax || !aw) goto done;
    CHECK_OK(emily_as_type(ax, EMILY_F64, &ax64));
    CHECK_OK(emily_as_type(aw, EMILY_F64, &aw64));
    if (!ax64 || !aw64) goto done;
    CHECK_OK(conv_at(EMILY_DOT_PRECISION_HIGHEST, ax64, aw64, &o, &mag));
    /* the GPU, and which path it took */
    int64_t before = emi_conv_device_count();
    emily_status s = conv_at(p, gx, gw, &o, &got);
    int64_t ran = emi_conv_device_count() - before;
    if (s) fprintf(stderr, "  %s: %s\n", what, emily_last_error());
    CHECK(s == EMILY_OK);
    if (s || !mag) goto done;
    if (!self_check && ran != (cudnn ? 1 : 0)) {
        fprintf(stderr, "  %s: the device kernel ran %lld times, expected %d\n", what, (long long)ran, cudnn);
        CHECK(ran == (cudnn ? 1 : 0));
    }
    CHECK(emily_tensor_dtype(got) == emily_tensor_dtype(ref));
    CHECK(t_shape_is(got, emily_tensor_rank(ref), emily_tensor_shape(ref)));
    CHECK(emily_device_equal(emily_tensor_device(got), GPU));
    int64_t n, nm, ng;
    r = to_doubles(ref, &n);
    g = to_doubles(got, &ng);
    m = to_doubles(mag, &nm);
    CHECK(r && g && m && n == ng);
    if (!r || !g || !m || n != ng) goto done;
    emily_dtype out = emily_tensor_dtype(ref);
    bool cplx = emily_dtype_is_complex(out);
    bool f64_acc = p == EMILY_DOT_PRECISION_HIGHEST || out == EMILY_F64 || out == EMILY_C128;
    /* K: the kernel's elements per output channel (I x window) */
    int64_t ko = c->k[c->kp[0] < 0 ? 0 : c->kp[0]], kk = ko ? size_of(c->rank, c->k) / ko : 0;
    double u = (f64_acc ? 0x1p-53 : 0x1p-24) * (cplx ? 2 : 1);
    double tiny = out == EMILY_F16 ? 0x1p-24 : 1e-300;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double tol = (double)(kk + 16) * u * m[cplx ? i / 2 : i] + ulp_of(out) * fabs(r[i]) + tiny;
        if (!(fabs(g[i] - r[i]) <= tol)) {
            if (bad++ < 3)
                fprintf(stderr, "  %s: element %lld: gpu %.9g, cpu %.9g (tolerance %.3g)\n", what,
                        (long long)(cplx ? i / 2 : i), g[i], r[i], tol);
        }
    }
    CHECK(bad == 0);
done:
    free(r);
    free(g);
    free(m);
    emily_tensor *all[] = {xb, w, x, gx, gw, ref, got, ax, aw, ax64, aw64, mag};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) emily_tensor_release(all[i]);
}

/* ---- without a GPU ------------------------------------------------------ */

/* The CUDA engine (when built) has the conv kernel; the CPU has none (its
 * convs are dots) and never counts as the device kernel. */
TEST(conv_family_in_the_tables) {
    const emily_engine *cuda = emi_cuda_engine();
    if (cuda) CHECK(cuda->conv && cuda->conv->conv);
    CHECK(emi_cpu_engine()->conv == NULL);
    int64_t before = emi_conv_device_count();
    emily_tensor *x = random_tensor(EMILY_F32, 4, (int64_t[]){1, 2, 5, 5});
    emily_tensor *w = random_tensor(EMILY_F32, 4, (int64_t[]){3, 2, 3, 3}), *y = NULL;
    CHECK_OK(emily_conv(x, w, NULL, EMILY_DTYPE_AUTO, &y));
    CHECK(t_shape_is(y, 4, (int64_t[]){1, 3, 3, 3}));
    CHECK(emi_conv_device_count() == before);
    emily_tensor_release(x);
    emily_tensor_release(w);
    emily_tensor_release(y);
}

#ifdef EMILY_WITH_CUDA
/* The kernel declines what it does not compute before it touches a
 * device (so these run with CPU tensors, which it never reads). */
TEST(cudnn_kernel_declines_early) {
    const struct emily_conv_kernels *k = emi_cuda_engine()->conv;
    int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
    emily_conv_params p = {2, 1, one, zero, one};
    struct {
        emily_dtype ti, tk, to;
        int64_t n;
        emily_dot_precision prec;
        int spatial;
    } cases[] = {
        {EMILY_F32, EMILY_F32, EMILY_F32, 1, EMILY_DOT_PRECISION_HIGHEST, 2}, /* exact mode */
        {EMILY_F64, EMILY_F64, EMILY_F64, 1, EMILY_DOT_PRECISION_FAST, 2},    /* f64 */
        {EMILY_C64, EMILY_C64, EMILY_C64, 1, EMILY_DOT_PRECISION_FAST, 2},    /* complex */
        {EMILY_F32, EMILY_BF16, EMILY_F32, 1, EMILY_DOT_PRECISION_FAST, 2},   /* mixed */
        {EMILY_S32, EMILY_S32, EMILY_S32, 1, EMILY_DOT_PRECISION_FAST, 2},    /* integers */
        {EMILY_F32, EMILY_F32, EMILY_F32, 0, EMILY_DOT_PRECISION_FAST, 2},    /* empty */
        {EMILY_BF16, EMILY_BF16, EMILY_BF16, 1, EMILY_DOT_PRECISION_FAST, 3}, /* rank mismatch */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        emily_tensor *x = NULL, *w = NULL, *y = NULL;
        CHECK_OK(emily_empty(EMILY_CPU, cases[i].ti, 4, (int64_t[]){cases[i].n, 2, 5, 5}, &x));
        CHECK_OK(emily_empty(EMILY_CPU, cases[i].tk, 4, (int64_t[]){3, 2, 3, 3}, &w));
        CHECK_OK(emily_empty(EMILY_CPU, cases[i].to, 4, (int64_t[]){cases[i].n, 3, 3, 3}, &y));
        p.spatial = cases[i].spatial;
        if (x && w && y) CHECK(k->conv(y, x, w, &p, cases[i].prec) == EMILY_ERR_UNSUPPORTED);
        emily_tensor_release(x);
        emily_tensor_release(w);
        emily_tensor_release(y);
    }
}
#endif

/* ---- on a GPU ----------------------------------------------------------- */

TEST(gpu_cudnn_matches_cpu) {
    const emily_dtype types[3] = {EMILY_F32, EMILY_F16, EMILY_BF16};
    for (size_t c = 0; c < sizeof CUDNN_CASES / sizeof *CUDNN_CASES; c++)
        for (int t = 0; t < 3; t++) run_case(&CUDNN_CASES[c], types[t], types[t], EMILY_DOT_PRECISION_FAST, true);
}

/* What cuDNN does not take goes to the dots, and is right there too. */
TEST(gpu_declined_cases_match_cpu) {
    const emily_dtype halfs[3] = {EMILY_F32, EMILY_F16, EMILY_BF16};
    const conv_case *basic = &CUDNN_CASES[0], *nhwc = &CUDNN_CASES[6];
    for (int t = 0; t < 3; t++) { /* the exact mode keeps the exact path */
        run_case(basic, halfs[t], halfs[t], EMILY_DOT_PRECISION_HIGHEST, false);
        run_case(nhwc, halfs[t], halfs[t], EMILY_DOT_PRECISION_HIGHEST, false);
    }
    run_case(basic, EMILY_F64, EMILY_F64, EMILY_DOT_PRECISION_FAST, false);
    run_case(basic, EMILY_F64, EMILY_F64, EMILY_DOT_PRECISION_HIGHEST, false);
    run_case(basic, EMILY_C64, EMILY_C64, EMILY_DOT_PRECISION_FAST, false);
    run_case(basic, EMILY_F32, EMILY_BF16, EMILY_DOT_PRECISION_FAST, false);
    run_case(basic, EMILY_S32, EMILY_S32, EMILY_DOT_PRECISION_FAST, false);
    run_case(basic, EMILY_BF16, EMILY_F16, EMILY_DOT_PRECISION_FAST, false);
    for (int t = 0; t < 3; t++) {
        run_case(&FALLBACK_BATCH_GROUPS, halfs[t], halfs[t], EMILY_DOT_PRECISION_FAST, false);
        run_case(&EMPTY_BATCH, halfs[t], halfs[t], EMILY_DOT_PRECISION_FAST, false);
        run_case(&NO_CHANNELS, halfs[t], halfs[t], EMILY_DOT_PRECISION_FAST, false);
    }
}

/* One conv of each kind in a row on one stream, results read at the end:
 * the temporaries of one (packed copies, workspace) never disturb the
 * next. */
TEST(gpu_cudnn_back_to_back) {
    emily_tensor *x = random_tensor(EMILY_BF16, 4, (int64_t[]){4, 16, 14, 14});
    emily_tensor *w = random_tensor(EMILY_BF16, 4, (int64_t[]){16, 16, 3, 3});
    emily_tensor *gx = NULL, *gw = NULL, *outs[8] = {NULL};
    int64_t pad[2] = {1, 1};
    emily_conv_opts o = {.padding_lo = pad, .padding_hi = pad};
    CHECK_OK(emily_to_device(x, GPU, &gx));
    CHECK_OK(emily_to_device(w, GPU, &gw));
    if (gx && gw) {
        int64_t before = emi_conv_device_count();
        for (int i = 0; i < 8; i++) CHECK_OK(conv_at(EMILY_DOT_PRECISION_FAST, gx, gw, &o, &outs[i]));
        if (!self_check) CHECK(emi_conv_device_count() - before == 8);
        /* the same input on the same path: the same bits every time */
        int64_t n0 = 0, n;
        double *first = outs[0] ? to_doubles(outs[0], &n0) : NULL;
        CHECK(first != NULL);
        for (int i = 1; i < 8 && first; i++) {
            double *v = outs[i] ? to_doubles(outs[i], &n) : NULL;
            CHECK(v && n == n0 && memcmp(v, first, sizeof(double) * (size_t)n) == 0);
            free(v);
        }
        free(first);
    }
    for (int i = 0; i < 8; i++) emily_tensor_release(outs[i]);
    emily_tensor *all[] = {x, w, gx, gw};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) emily_tensor_release(all[i]);
}

/* Bad input fails on the GPU as on the CPU: same status, same message. */
TEST(gpu_conv_errors_match_cpu) {
    int perm_bad[4] = {0, 0, 1, 2};
    int64_t stride0[2] = {0, 1}, big_pad[2] = {-4, -4};
    struct {
        const char *what;
        int xr, wr;
        int64_t xs[4], ws[4];
        emily_conv_opts o;
        emily_dtype out;
    } cases[] = {
        // clang-format off
        {"rank", 4, 3, {1, 2, 5, 5}, {3, 2, 3}, {0}, EMILY_DTYPE_AUTO},
        {"channels", 4, 4, {1, 8, 5, 5}, {3, 3, 3, 3}, {0}, EMILY_DTYPE_AUTO},
        {"groups", 4, 4, {1, 6, 5, 5}, {4, 2, 3, 3}, {.feature_group_size = 3}, EMILY_DTYPE_AUTO},
        {"permutation", 4, 4, {1, 2, 5, 5}, {3, 2, 3, 3}, {.input_permutation = perm_bad}, EMILY_DTYPE_AUTO},
        {"stride", 4, 4, {1, 2, 5, 5}, {3, 2, 3, 3}, {.strides = stride0}, EMILY_DTYPE_AUTO},
        {"window", 4, 4, {1, 2, 5, 5}, {3, 2, 3, 3}, {.padding_lo = big_pad}, EMILY_DTYPE_AUTO},
        {"out type", 4, 4, {1, 2, 5, 5}, {3, 2, 3, 3}, {0}, EMILY_S32},
        {"both groups", 4, 4, {2, 2, 5, 5}, {2, 1, 3, 3}, {.feature_group_size = 2, .batch_group_size = 2},
         EMILY_DTYPE_AUTO},
        // clang-format on
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        emily_tensor *x = random_tensor(EMILY_F32, cases[i].xr, cases[i].xs);
        emily_tensor *w = random_tensor(EMILY_F32, cases[i].wr, cases[i].ws);
        emily_tensor *gx = NULL, *gw = NULL, *y = NULL;
        CHECK_OK(emily_to_device(x, GPU, &gx));
        CHECK_OK(emily_to_device(w, GPU, &gw));
        emily_status sc = emily_conv(x, w, &cases[i].o, cases[i].out, &y);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", emily_last_error());
        CHECK(sc != EMILY_OK && y == NULL);
        emily_status sg = emily_conv(gx, gw, &cases[i].o, cases[i].out, &y);
        if (sg != sc || strcmp(msg, emily_last_error()) != 0)
            fprintf(stderr, "  %s: cpu %s \"%s\", gpu %s \"%s\"\n", cases[i].what, emily_status_name(sc), msg,
                    emily_status_name(sg), emily_last_error());
        CHECK(sg == sc && strcmp(msg, emily_last_error()) == 0 && y == NULL);
        emily_tensor *all[] = {x, w, gx, gw};
        for (size_t j = 0; j < 4; j++) emily_tensor_release(all[j]);
    }
    /* operands on two devices */
    emily_tensor *x = random_tensor(EMILY_F32, 4, (int64_t[]){1, 2, 5, 5});
    emily_tensor *w = random_tensor(EMILY_F32, 4, (int64_t[]){3, 2, 3, 3}), *gx = NULL, *y = NULL;
    CHECK_OK(emily_to_device(x, GPU, &gx));
    if (!self_check) CHECK(emily_conv(gx, w, NULL, EMILY_DTYPE_AUTO, &y) == EMILY_ERR_DEVICE && y == NULL);
    CHECK(emily_conv(gx, w, NULL, EMILY_DTYPE_AUTO, NULL) != EMILY_OK);
    emily_tensor_release(x);
    emily_tensor_release(w);
    emily_tensor_release(gx);
}

#define GPU_CASES                                                                                  \
    CASE(gpu_cudnn_matches_cpu), CASE(gpu_declined_cases_match_cpu), CASE(gpu_cudnn_back_to_back), \
        CASE(gpu_conv_errors_match_cpu)

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case always[] = {CASE(conv_family_in_the_tables),
#ifdef EMILY_WITH_CUDA
                                          CASE(cudnn_kernel_declines_early),
#endif
                                          {NULL, NULL}};
    static const harness_case gpu[] = {GPU_CASES, {NULL, NULL}};
    int rc = harness_run("cuda conv (without a GPU too)", always);
    static const harness_gpu_cases g = {"cuda conv", gpu, gpu, "cuda conv cases on cpu", &GPU, &self_check, false};
    return harness_gpu_finish(rc, &g);
}
