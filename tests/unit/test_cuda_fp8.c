/* FP8 matrix products (emily_dot_fp8, emily_matmul_fp8, and Nx's `dot`
 * of two 8-bit float tensors through the dispatcher): on a CUDA device
 * they run on the tensor cores through cuBLASLt (src/cuda/dot_fp8.cu),
 * elsewhere, for e5m2 x e5m2 and for whatever cuBLASLt refuses they are
 * widened to f32 (src/ops/dot_fp8.c). The GPU cases compare the GPU's
 * result with the CPU engine's widened dot of the same 8-bit inputs
 * computed at HIGHEST precision (f64 sums of the exact products, rounded
 * once to f32: Nx's answer within one rounding) and print which path each
 * case took.
 *
 * Tolerance, the conformance corpus's accumulation rule for a FAST f32
 * dot (tests/conformance/accumulation.c): every product of two 8-bit
 * floats is exact in f32, so the only error is the f32 sum's, at most
 * gamma_K(2^-24) * S for K terms in any order (Higham 3.1), S = sum_k
 * |a_k| |b_k| (computed exactly here: f64 sums of f64 products of |a| and
 * |b| at HIGHEST precision), plus the reference's own f64 sum error
 * gamma_K(2^-53) * S. Both sides then multiply by the scale factor
 * alpha = a_scale * b_scale (f32), one more rounding each: 2 u |alpha| S.
 * The output's own rounding adds one ULP of the output type at the
 * result (bf16 and f16 round to nearest even on the tensor cores, by
 * Nx's rule on the widened path: at most one ULP apart; an 8-bit output
 * converted from two f32 values this close is at most one step of the
 * 8-bit type apart, Nx's e4m3 rounding never carrying into the
 * exponent). Inputs are random 8-bit values of magnitude 1/8 to 7.5 with
 * zeros, so no sum overflows and every case is checked elementwise.
 *
 * The tensor cores' own accumulation. Hopper's FP8 MMA does not add in
 * f32: within one instruction's (and cuBLASLt's promotion interval's)
 * sums it keeps only about 14 significant bits of the running sum
 * (DeepSeek-V3 technical report, 3.3.2, measured on the H800: the same
 * tensor cores), and cuBLASLt, with fast accumulation off, carries those
 * partial sums into f32. NVIDIA does not document the width, so the term
 * is measured: on the H200 (2026-12-05, two runs) sums of 32-512 products
 * of small 8-bit values, exact in f32, came back off by up to about
 * 1.9e-4 S (2^-12.4 S; the first run's first failures showed 2^-14 to
 * 2^-12.9), up to 16 times the f32 bound above, with no growth with K
 * (cuBLASLt's promotions bound it). A case that took the tensor cores
 * adds 2^-11 S to the bound (about 2.6 times the largest error measured:
 * a 12-bit sum's truncation); the widened path keeps the f32 bound alone.
 *
 * Cases without a GPU (always run): the widened path against emily_dot
 * of the f32-converted operands, bit for bit; scales; errors. The GPU
 * cases print SKIPPED where no CUDA device is usable;
 * EMILY_TEST_CUDA_ON_CPU=1 runs them with both sides on the CPU. */
#include <math.h>
#include <stdlib.h>
#include "harness.h"
#include "emily/emily.h"
#include "core/tensor_impl.h"
#include "ops/dot_fp8.h"

static emily_device dev = {EMILY_DEVICE_CUDA, 0};
static bool on_cpu = false;

static uint64_t rnd(void) {
    static uint64_t s = 0x2545f4914f6cdd1dull;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

/* Whether f8_tensor draws from the whole finite range of the type. */
static bool wide_values;

/* A random 8-bit float of magnitude 1/8 .. 7.5 (one in 16 a zero): short
 * sums of such products are exact in f32, long ones are not; with
 * wide_values any finite value, subnormals included, so that f32 sums
 * round at every length. */
static uint8_t random_f8(emily_dtype t) {
    uint64_t r = rnd();
    if (r % 16 == 0) return (uint8_t)((r >> 8) & 1 ? 0x80 : 0x00);
    uint8_t sign = (uint8_t)(((r >> 4) & 1) << 7);
    if (wide_values && t == EMILY_F8_E4M3FN) {
        uint8_t v = (uint8_t)((r >> 12) & 0x7f);
        return (uint8_t)(sign | (v == 0x7f ? 0x7e : v)); /* 0x7f is NaN */
    }
    if (wide_values) {
        uint8_t v = (uint8_t)((r >> 12) & 0x7f);
        return (uint8_t)(sign | (v >= 0x7c ? v - 0x04 : v)); /* exponent 31: inf and NaN */
    }
    unsigned e = (unsigned)((r >> 5) % 6);                                               /* 2^-3 .. 2^2 */
    if (t == EMILY_F8_E4M3FN) return (uint8_t)(sign | ((e + 4) << 3) | ((r >> 12) & 7)); /* bias 7 */
    return (uint8_t)(sign | ((e + 12) << 2) | ((r >> 12) & 3));                          /* bias 15 */
}

static emily_tensor *f8_tensor(emily_dtype t, int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    uint8_t *bytes = malloc((size_t)n + 1);
    if (!bytes) return NULL;
    for (int64_t i = 0; i < n; i++) bytes[i] = random_f8(t);
    emily_tensor *x = NULL;
    CHECK_OK(emily_from_binary(EMILY_CPU, t, rank, shape, bytes, (size_t)n, &x));
    free(bytes);
    return x;
}

/* f8_tensor, released once in the pool of tensors a case frees at its end. */
static emily_tensor *pool[8];
static int npool;
static emily_tensor *f8_tensor_once(emily_dtype t, int rank, const int64_t *shape) {
    emily_tensor *x = f8_tensor(t, rank, shape);
    if (npool < 8) pool[npool++] = x;
    return x;
}
static void pool_release(void) {
    while (npool > 0) emily_tensor_release(pool[--npool]);
}

/* The n elements of t as doubles (malloc'd; NULL, counted, on failure). */
static double *doubles(const emily_tensor *t) {
    emily_tensor *w = NULL;
    int64_t n = emily_tensor_size(t);
    double *v = malloc(sizeof(double) * ((size_t)n + 1));
    emily_status s = v ? emily_as_type(t, EMILY_F64, &w) : EMILY_ERR_MEMORY;
    if (!s) s = emily_to_binary(w, v, sizeof(double) * (size_t)n);
    emily_tensor_release(w);
    if (s) {
        fprintf(stderr, "  FAIL reading a result: %s\n", emily_last_error());
        harness_failures++;
        free(v);
        return NULL;
    }
    return v;
}

/* The spacing of type t's values at |v| (f32, bf16, f16, the 8-bit
 * floats), the smallest normal's spacing below it. */
static double ulp_of(emily_dtype t, double v) {
    int mant = t == EMILY_F32 ? 24 : t == EMILY_BF16 ? 8 : t == EMILY_F16 ? 11 : t == EMILY_F8_E4M3FN ? 4 : 3;
    int min_exp = t == EMILY_F32 || t == EMILY_BF16 ? -126 : t == EMILY_F8_E4M3FN ? -6 : -14;
    int e;
    frexp(fabs(v), &e);
    if (e - 1 < min_exp) e = min_exp + 1;
    return ldexp(1.0, e - mant);
}

/* One product: shapes, layouts and types. */
typedef struct fp8_case {
    const char *label;
    emily_dtype ta, tb, out;
    int64_t batch, m, k, n; /* batch 0: unbatched */
    bool a_km;              /* a stored [K, M], contracted on its first axis */
    bool b_nk;              /* b stored [N, K] (a linear layer's weights), contracted on its last */
    bool b_broadcast;       /* b one matrix broadcast over the batch (a zero batch stride) */
    float a_scale, b_scale;
    int tensor_cores; /* on a GPU: 1 must run there, 0 must be widened, -1 either (printed) */
    bool wide;        /* values from the types' whole finite range */
} fp8_case;

typedef struct operands {
    emily_tensor *a, *b; /* on the CPU */
    int ca, cb, nbatch, batch[1];
} operands;

static bool make_operands(const fp8_case *c, operands *o) {
    int64_t sa[3], sb[3];
    int r = 0;
    o->nbatch = c->batch > 0;
    o->batch[0] = 0;
    if (c->batch > 0) sa[r] = sb[r] = c->batch, r++;
    sa[r] = c->a_km ? c->k : c->m;
    sa[r + 1] = c->a_km ? c->m : c->k;
    sb[r] = c->b_nk ? c->n : c->k;
    sb[r + 1] = c->b_nk ? c->k : c->n;
    o->ca = c->a_km ? r : r + 1;
    o->cb = c->b_nk ? r + 1 : r;
    wide_values = c->wide;
    o->a = f8_tensor(c->ta, r + 2, sa);
    if (c->b_broadcast && c->batch > 0) {
        /* the typed view ops refuse 8-bit types (the dispatcher copies):
         * an internal view, to reach the kernel's packing of a zero batch
         * stride */
        emily_tensor *one = f8_tensor(c->tb, 2, sb + 1);
        o->b = NULL;
        if (one) CHECK_OK(emi_tensor_view(one, 3, sb, (const int64_t[]){0, sb[2], 1}, 0, &o->b));
        emily_tensor_release(one);
    } else {
        o->b = f8_tensor(c->tb, r + 2, sb);
    }
    wide_values = false;
    return o->a && o->b;
}

static emily_status run_fp8(const fp8_case *c, const operands *o, const emily_tensor *a, const emily_tensor *b,
                            emily_dtype out, emily_tensor **r) {
    return emily_dot_fp8(a, 1, &o->ca, o->nbatch, o->batch, c->a_scale, b, 1, &o->cb, o->nbatch, o->batch, c->b_scale,
                         out, r);
}

/* S = sum |a_k| |b_k| per output, exactly (f64, HIGHEST). */
static double *abs_sums(const operands *o) {
    emily_tensor *a64 = NULL, *b64 = NULL, *aa = NULL, *ab = NULL, *s = NULL;
    double *v = NULL;
    emily_dot_precision saved;
    emily_dot_set_thread_precision(EMILY_DOT_PRECISION_HIGHEST, &saved);
    if (!emily_as_type(o->a, EMILY_F64, &a64) && !emily_as_type(o->b, EMILY_F64, &b64) &&
        !emily_unary(EMILY_ABS, a64, &aa) && !emily_unary(EMILY_ABS, b64, &ab) &&
        !emily_dot(aa, 1, &o->ca, o->nbatch, o->batch, ab, 1, &o->cb, o->nbatch, o->batch, EMILY_F64, &s))
        v = doubles(s);
    else CHECK(!"abs_sums");
    emily_dot_set_thread_precision(saved, NULL);
    RELEASE(a64, b64, aa, ab, s);
    return v;
}

static long long paths_tc, paths_wide;
static void paths_mark(void) { emi_dot_fp8_counts(&paths_tc, &paths_wide); }
/* "tensor cores", "widened" or "?" since paths_mark */
static const char *paths_taken(void) {
    long long tc, w;
    emi_dot_fp8_counts(&tc, &w);
    return tc > paths_tc && w == paths_wide ? "tensor cores" : w > paths_wide && tc == paths_tc ? "widened" : "?";
}

/* got within the rule of want (doubles of n elements) for output type t. */
static bool within(const char *what, emily_dtype t, int64_t n, int64_t k, float alpha, bool tensor_cores,
                   const double *got, const double *want, const double *sums, double *worst) {
    const double u = ldexp(1.0, -24), gk = k * u / (1 - k * u), gk64 = k * ldexp(1.0, -53);
    const double tc = tensor_cores ? ldexp(1.0, -11) : 0; /* the MMA's short sums (above) */
    *worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double s = fabs((double)alpha) * sums[i];
        double tol = (gk + gk64 + 2 * u + tc) * s + ulp_of(t, fmax(fabs(got[i]), fabs(want[i])));
        double err = fabs(got[i] - want[i]);
        if (!(err <= tol)) {
            fprintf(stderr, "  FAIL %s: element %lld is %.9g, the CPU's %.9g (|diff| %.3g > %.3g)\n", what,
                    (long long)i, got[i], want[i], err, tol);
            return false;
        }
        if (tol > 0 && err / tol > *worst) *worst = err / tol;
    }
    return true;
}

/* One case on the device against the CPU's widened HIGHEST dot. */
static void check_case(const fp8_case *c) {
    operands o;
    if (!make_operands(c, &o)) {
        CHECK(!"operands");
        RELEASE(o.a, o.b);
        return;
    }
    emily_tensor *want_t = NULL, *got_t = NULL, *ga = t_on(o.a, dev), *gb = t_on(o.b, dev);
    emily_dot_precision saved;
    emily_dot_set_thread_precision(EMILY_DOT_PRECISION_HIGHEST, &saved);
    CHECK_OK(run_fp8(c, &o, o.a, o.b, c->out, &want_t));
    emily_dot_set_thread_precision(saved, NULL);
    paths_mark();
    emily_status s = ga && gb ? run_fp8(c, &o, ga, gb, c->out, &got_t) : EMILY_ERR_MEMORY;
    const char *path = paths_taken();
    char what[256];
    snprintf(what, sizeof what, "%s: %s x %s -> %s, batch %lld, %lld x %lld x %lld%s%s%s, scales %g %g", c->label,
             emily_dtype_name(c->ta), emily_dtype_name(c->tb), emily_dtype_name(c->out), (long long)c->batch,
             (long long)c->m, (long long)c->k, (long long)c->n, c->a_km ? ", a [K,M]" : "", c->b_nk ? ", b [N,K]" : "",
             c->b_broadcast ? ", b broadcast" : "", c->a_scale, c->b_scale);
    if (s) {
        fprintf(stderr, "  FAIL %s: %s\n", what, emily_last_error());
        harness_failures++;
    } else if (want_t && got_t) {
        int64_t n = emily_tensor_size(want_t);
        double *got = doubles(got_t), *want = doubles(want_t), *sums = abs_sums(&o), worst = 0;
        bool ok = got && want && sums && emily_tensor_size(got_t) == n &&
                  emily_tensor_dtype(got_t) == emily_tensor_dtype(want_t) &&
                  within(what, c->out, n, c->k, c->a_scale * c->b_scale, strcmp(path, "tensor cores") == 0, got, want,
                         sums, &worst);
        if (!ok) harness_failures++;
        printf("  %s %s: %s, worst error %.3g of the bound\n", ok ? "ok  " : "FAIL", what, path, worst);
        free(got);
        free(want);
        free(sums);
    }
    /* the path: on a GPU, aligned e4m3 products must reach the tensor
     * cores, e5m2 x e5m2 must not */
    if (!s && !on_cpu && c->tensor_cores >= 0 && (strcmp(path, "tensor cores") == 0) != (c->tensor_cores == 1)) {
        fprintf(stderr, "  FAIL %s: took the %s path\n", what, path);
        harness_failures++;
    }
    RELEASE(want_t, got_t, ga, gb, o.a, o.b);
}

static const emily_dtype E4 = EMILY_F8_E4M3FN, E5 = EMILY_F8_E5M2;

/* Shapes cuBLASLt takes as they are, shapes that need packing (a
 * row-major [K, N] b, transposed a, broadcast batches), shapes with K and
 * N off its 16-byte alignment (K padded, the result copied out of a
 * padded matrix) and degenerate ones (M, N or K of 1). */
TEST(gpu_fp8_shapes) {
    static const fp8_case cases[] = {
        {"aligned, b packed", E4, E4, EMILY_F32, 0, 64, 64, 64, false, false, false, 1, 1, 1, false},
        {"linear layer (TN, in place)", E4, E4, EMILY_F32, 0, 128, 256, 96, false, true, false, 1, 1, 1, false},
        {"a transposed", E4, E4, EMILY_F32, 0, 48, 80, 32, true, true, false, 1, 1, 1, false},
        {"long contraction", E4, E4, EMILY_F32, 0, 256, 4096, 128, false, true, false, 1, 1, 1, false},
        {"K 17, N 5 (padding)", E4, E4, EMILY_F32, 0, 33, 17, 5, false, false, false, 1, 1, -1, false},
        {"M 1", E4, E4, EMILY_F32, 0, 1, 64, 128, false, true, false, 1, 1, -1, false},
        {"N 1", E4, E4, EMILY_F32, 0, 64, 48, 1, false, false, false, 1, 1, -1, false},
        {"K 1", E4, E4, EMILY_F32, 0, 8, 1, 8, false, false, false, 1, 1, -1, false},
        {"odd everything", E4, E4, EMILY_F32, 0, 7, 3, 9, true, false, false, 1, 1, -1, false},
        {"whole range", E4, E4, EMILY_F32, 0, 64, 2048, 64, false, true, false, 1, 1, 1, true},
        {"whole range, e5m2", E5, E4, EMILY_F32, 0, 64, 2048, 64, false, true, false, 1, 1, 1, true},
        {"whole range, bf16", E4, E5, EMILY_BF16, 2, 32, 512, 48, false, false, false, 1, 1, 1, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(&cases[i]);
}

/* The type pairs (e5m2 x e5m2 has no cuBLASLt kernel: widened) and the
 * output types (f32, bf16, f16 from the tensor cores; 8-bit from f32). */
TEST(gpu_fp8_types) {
    static const fp8_case cases[] = {
        {"e4m3 x e5m2", E4, E5, EMILY_F32, 0, 64, 128, 64, false, true, false, 1, 1, 1, false},
        {"e5m2 x e4m3", E5, E4, EMILY_F32, 0, 64, 128, 64, false, true, false, 1, 1, 1, false},
        {"e5m2 x e5m2 (widened)", E5, E5, EMILY_F32, 0, 64, 128, 64, false, true, false, 1, 1, 0, false},
        {"bf16 out", E4, E4, EMILY_BF16, 0, 64, 128, 64, false, true, false, 1, 1, 1, false},
        {"f16 out", E4, E4, EMILY_F16, 0, 64, 128, 64, false, true, false, 1, 1, 1, false},
        {"e4m3 out", E4, E4, EMILY_F8_E4M3FN, 0, 32, 32, 32, false, true, false, 0.0625f, 0.125f, 1, false},
        {"e5m2 out", E4, E5, EMILY_F8_E5M2, 0, 32, 32, 32, false, false, false, 0.0625f, 1, 1, false},
        {"bf16 out, N 3", E4, E4, EMILY_BF16, 0, 16, 32, 3, false, false, false, 1, 1, -1, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(&cases[i]);
}

/* Scales, as a quantized model uses them (1/448 per operand), and
 * batches: strided, packed, broadcast. */
TEST(gpu_fp8_scales_and_batches) {
    static const fp8_case cases[] = {
        {"scales", E4, E4, EMILY_F32, 0, 64, 64, 64, false, true, false, 0.5f, 3.0f, 1, false},
        {"quantized scales", E4, E4, EMILY_BF16, 0, 64, 96, 32, false, true, false, 1.0f / 448, 2.5f / 448, 1, false},
        {"batched, in place", E4, E4, EMILY_F32, 4, 32, 64, 48, false, true, false, 1, 1, 1, false},
        {"batched, b packed", E4, E5, EMILY_F32, 3, 40, 32, 24, false, false, false, 1, 1, 1, false},
        {"batched, b broadcast", E4, E4, EMILY_F32, 5, 16, 32, 16, false, true, true, 2, 0.5f, 1, false},
        {"batched, odd", E5, E4, EMILY_F32, 2, 9, 7, 5, true, false, false, 1, 1, -1, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(&cases[i]);
}

/* Nx's dot through the dispatcher: two f8_e4m3fn tensors with Nx's
 * template (f8_e4m3fn) take the FP8 path at FAST precision and the
 * widened one under `precision: :highest`; e5m2 x e5m2 is widened. */
static emily_status nx_dot(emily_device d, emily_tensor *a, emily_tensor *b, emily_dtype out_t, int64_t m, int64_t n,
                           bool highest, emily_tensor **r) {
    int64_t shape[2] = {m, n};
    emily_value out = {.kind = EMILY_V_TEMPLATE, .dtype = out_t, .rank = 2, .shape = shape};
    emily_value axis1 = {.kind = EMILY_V_INT, .i = 1}; /* both contracted on axis 1 */
    emily_value prec = {.kind = EMILY_V_ATOM, .str = "highest"};
    const char *keys[1] = {"precision"};
    emily_value args[7] = {{.kind = EMILY_V_TENSOR, .tensor = a},
                           {.kind = EMILY_V_LIST, .items = &axis1, .n = 1},
                           {.kind = EMILY_V_LIST, .n = 0},
                           {.kind = EMILY_V_TENSOR, .tensor = b},
                           {.kind = EMILY_V_LIST, .items = &axis1, .n = 1},
                           {.kind = EMILY_V_LIST, .n = 0},
                           {.kind = EMILY_V_OPTS, .items = &prec, .keys = keys, .n = 1}};
    emily_dispatch_result res = {0};
    emily_status s = emily_dispatch("dot", d, &out, args, highest ? 7 : 6, EMILY_DISPATCH_RUN, &res);
    *r = s ? NULL : res.tensors[0];
    return s;
}

TEST(gpu_fp8_nx_dot) {
    /* a [M, K] . b [N, K] on K (both axis 1) */
    static const struct {
        emily_dtype t, tb;
        bool highest;
        int tensor_cores;
    } runs[] = {{E4, E4, false, 1}, {E4, E4, true, 0}, {E4, E5, false, 1}, {E5, E5, false, 0}};
    const int64_t m = 48, k = 64, n = 32;
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        emily_dtype ta = runs[i].t, tb = runs[i].tb;
        fp8_case c = {"nx dot", ta, tb, ta, 0, m, k, n, false, true, false, 1, 1, runs[i].tensor_cores, false};
        operands o;
        if (!make_operands(&c, &o)) {
            RELEASE(o.a, o.b);
            CHECK(!"operands");
            continue;
        }
        emily_tensor *ga = t_on(o.a, dev), *gb = t_on(o.b, dev), *want_t = NULL, *got_t = NULL;
        emily_dot_precision saved;
        emily_dot_set_thread_precision(EMILY_DOT_PRECISION_HIGHEST, &saved);
        CHECK_OK(nx_dot(EMILY_CPU, o.a, o.b, ta, m, n, false, &want_t));
        emily_dot_set_thread_precision(saved, NULL);
        paths_mark();
        CHECK_OK(nx_dot(dev, ga, gb, ta, m, n, runs[i].highest, &got_t));
        const char *path = paths_taken();
        char what[160];
        snprintf(what, sizeof what, "Nx dot %s x %s -> %s%s", emily_dtype_name(ta), emily_dtype_name(tb),
                 emily_dtype_name(ta), runs[i].highest ? ", precision: :highest" : "");
        if (want_t && got_t) {
            double *got = doubles(got_t), *want = doubles(want_t), *sums = abs_sums(&o), worst = 0;
            bool ok = got && want && sums && emily_tensor_dtype(got_t) == ta &&
                      within(what, ta, m * n, k, 1.0f, strcmp(path, "tensor cores") == 0, got, want, sums, &worst);
            if (!ok) harness_failures++;
            printf("  %s %s: %s, worst error %.3g of the bound\n", ok ? "ok  " : "FAIL", what,
                   on_cpu                   ? "widened (cpu)"
                   : strcmp(path, "?") == 0 ? "widened"
                                            : path,
                   worst);
            free(got);
            free(want);
            free(sums);
        }
        /* the dispatcher's widened path does not count itself: no change */
        long long tc, w;
        emi_dot_fp8_counts(&tc, &w);
        bool took_tc = tc > paths_tc;
        if (!on_cpu && took_tc != (c.tensor_cores == 1)) {
            fprintf(stderr, "  FAIL %s: tensor cores %s\n", what, took_tc ? "used" : "not used");
            harness_failures++;
        }
        RELEASE(ga, gb, want_t, got_t, o.a, o.b);
    }
}

/* The op layer's errors, the same on the GPU as on the CPU. */
static void expect_errors(emily_device d) {
    static const int64_t s2[2] = {4, 16}, s3[2] = {8, 4}, s4[2] = {16, 4};
    emily_tensor *ca = f8_tensor(E4, 2, s2), *cb = f8_tensor(E4, 2, s3), *cc = f8_tensor(E4, 2, s4);
    emily_tensor *a = t_on(ca, d), *b = t_on(cb, d), *okb = t_on(cc, d), *f = NULL, *r = NULL;
    CHECK_OK(emily_as_type(a, EMILY_F32, &f));
    int one = 1, zero = 0;
    /* [4, 16] . [8, 4]: 16 against 8 */
    CHECK_ERR(emily_dot_fp8(a, 1, &one, 0, NULL, 1, b, 1, &zero, 0, NULL, 1, EMILY_F32, &r), EMILY_ERR_SHAPE,
              "dot_fp8: contract axis 1 of the left tensor (size 16) does not match axis 0");
    CHECK_ERR(emily_matmul_fp8(a, 1, b, 1, EMILY_F32, &r), EMILY_ERR_SHAPE, "dot_fp8: contract axis");
    CHECK_ERR(emily_dot_fp8(f, 1, &one, 0, NULL, 1, okb, 1, &zero, 0, NULL, 1, EMILY_F32, &r), EMILY_ERR_TYPE,
              "dot_fp8: the left tensor is f32; both operands must be 8-bit floats");
    CHECK_ERR(emily_dot_fp8(a, 1, &one, 0, NULL, 1, f, 1, &zero, 0, NULL, 1, EMILY_F32, &r), EMILY_ERR_TYPE,
              "dot_fp8: the right tensor is f32");
    CHECK_ERR(emily_dot_fp8(a, 1, &one, 0, NULL, 1, okb, 1, &zero, 0, NULL, 1, EMILY_F64, &r), EMILY_ERR_TYPE,
              "dot_fp8: output type f64 is not one of f32, bf16, f16, f8_e4m3fn and f8");
    CHECK_ERR(emily_dot_fp8(a, 1, &one, 0, NULL, 1, okb, 1, &one, 0, NULL, 1, EMILY_F32, &r), EMILY_ERR_SHAPE,
              "dot_fp8: contract axis 1 of the left tensor (size 16) does not match axis 1");
    CHECK_ERR(emily_dot_fp8(a, 1, &one, 0, NULL, 1, okb, 0, NULL, 0, NULL, 1, EMILY_F32, &r), EMILY_ERR_AXIS,
              "dot_fp8: 1 contract axes for the left tensor but 0");
    CHECK_ERR(emily_dot_fp8(a, 1, (const int[]){2}, 0, NULL, 1, okb, 1, &zero, 0, NULL, 1, EMILY_F32, &r),
              EMILY_ERR_AXIS, "dot_fp8: contract axis 2 of the left tensor is out of range");
    CHECK_ERR(emily_dot_fp8(NULL, 1, &one, 0, NULL, 1, okb, 1, &zero, 0, NULL, 1, EMILY_F32, &r), EMILY_ERR_ARGUMENT,
              "dot_fp8: the left tensor is NULL");
    emily_tensor *v = t_on(f8_tensor_once(E4, 1, (const int64_t[]){64}), d),
                 *b3 = t_on(f8_tensor_once(E4, 3, (const int64_t[]){1, 16, 4}), d);
    CHECK_ERR(emily_matmul_fp8(a, 1, b3, 1, EMILY_F32, &r), EMILY_ERR_SHAPE,
              "matmul_fp8: the operands must be matrices or batches of them of one rank");
    CHECK_ERR(emily_matmul_fp8(v, 1, okb, 1, EMILY_F32, &r), EMILY_ERR_SHAPE,
              "matmul_fp8: the operands must be matrices");
    CHECK(r == NULL);
    RELEASE(ca, cb, cc, a, b, okb, f, v, b3);
    pool_release();
}

TEST(gpu_fp8_errors) {
    if (dev.type == EMILY_DEVICE_CUDA) {
        /* operands on two devices */
        static const int64_t s[2] = {4, 16};
        emily_tensor *c = f8_tensor(E4, 2, s), *g = t_on(c, dev), *r = NULL;
        int one = 1;
        CHECK_ERR(emily_dot_fp8(c, 1, &one, 0, NULL, 1, g, 1, &one, 0, NULL, 1, EMILY_F32, &r), EMILY_ERR_DEVICE,
                  "dot_fp8");
        RELEASE(c, g);
    }
    expect_errors(dev);
}

/* ---- without a GPU ------------------------------------------------------ */

/* The widened path is emily_dot of the f32 operands, bit for bit, then
 * the scale factor; 8-bit outputs are that f32 converted. */
TEST(cpu_widened_is_the_f32_dot) {
    static const int64_t sa[2] = {5, 24}, sb[2] = {24, 7};
    emily_tensor *a = f8_tensor(E4, 2, sa), *b = f8_tensor(E5, 2, sb), *a32 = NULL, *b32 = NULL, *ref = NULL;
    emily_tensor *r = NULL, *scaled = NULL, *alpha = NULL, *ref_scaled = NULL, *r8 = NULL, *ref8 = NULL;
    CHECK_OK(emily_as_type(a, EMILY_F32, &a32));
    CHECK_OK(emily_as_type(b, EMILY_F32, &b32));
    CHECK_OK(emily_matmul(a32, b32, &ref));
    long long tc0, w0, tc1, w1;
    emi_dot_fp8_counts(&tc0, &w0);
    CHECK_OK(emily_matmul_fp8(a, 1, b, 1, EMILY_F32, &r));
    CHECK(t_same_bytes(r, ref));
    CHECK_OK(emily_matmul_fp8(a, 0.25f, b, 3, EMILY_F32, &scaled));
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_F32, 0, NULL, emily_scalar_float(0.75), &alpha));
    CHECK_OK(emily_binary(EMILY_MULTIPLY, ref, alpha, EMILY_F32, &ref_scaled));
    CHECK(t_same_bytes(scaled, ref_scaled));
    CHECK_OK(emily_matmul_fp8(a, 1, b, 1, EMILY_DTYPE_AUTO, &r8)); /* Nx: e4m3 . e5m2 is e4m3 */
    CHECK(r8 && emily_tensor_dtype(r8) == E4);
    CHECK_OK(emily_as_type(ref, E4, &ref8));
    CHECK(t_same_bytes(r8, ref8));
    emi_dot_fp8_counts(&tc1, &w1);
    CHECK(tc1 == tc0 && w1 == w0 + 3); /* the CPU has no FP8 kernel */
    printf("  the CPU's FP8 dots are widened: %lld of them here\n", w1 - w0);
    RELEASE(a, b, a32, b32, ref, r, scaled, alpha, ref_scaled, r8, ref8);
}

/* Nx's dot on the CPU is still the narrow dispatcher's widened dot. */
TEST(cpu_nx_dot_unchanged) {
    static const int64_t sa[2] = {6, 32}, sb[2] = {4, 32};
    emily_tensor *a = f8_tensor(E4, 2, sa), *b = f8_tensor(E4, 2, sb), *r = NULL, *ref = NULL, *a32 = NULL, *b32 = NULL,
                 *ref8 = NULL;
    long long tc0, w0, tc1, w1;
    emi_dot_fp8_counts(&tc0, &w0);
    CHECK_OK(nx_dot(EMILY_CPU, a, b, E4, 6, 4, false, &r));
    emi_dot_fp8_counts(&tc1, &w1);
    CHECK(tc1 == tc0 && w1 == w0); /* never reached emily_dot_fp8 */
    CHECK_OK(emily_as_type(a, EMILY_F32, &a32));
    CHECK_OK(emily_as_type(b, EMILY_F32, &b32));
    int one = 1;
    CHECK_OK(emily_dot(a32, 1, &one, 0, NULL, b32, 1, &one, 0, NULL, EMILY_F32, &ref));
    CHECK_OK(emily_as_type(ref, E4, &ref8));
    CHECK(t_same_bytes(r, ref8));
    RELEASE(a, b, r, ref, a32, b32, ref8);
}

TEST(cpu_errors) {
    emily_device saved = dev;
    dev = EMILY_CPU;
    expect_errors(EMILY_CPU);
    dev = saved;
}

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case always[] = {
        CASE(cpu_widened_is_the_f32_dot), CASE(cpu_nx_dot_unchanged), CASE(cpu_errors), {NULL, NULL}};
    static const harness_case gpu[] = {CASE(gpu_fp8_shapes), CASE(gpu_fp8_types),  CASE(gpu_fp8_scales_and_batches),
                                       CASE(gpu_fp8_nx_dot), CASE(gpu_fp8_errors), {NULL, NULL}};
    int rc = harness_run("cuda_fp8 (without a GPU too)", always);
    static const harness_gpu_cases g = {"cuda_fp8", gpu, gpu, "cuda_fp8 (cpu against cpu)", &dev, &on_cpu, true};
    return harness_gpu_finish(rc, &g);
}
