/* layer_norm and rms_norm (emily/ops_fast.h) on the CPU: the header's
 * expression step by step (exact where the data makes every sum exact),
 * the same expression composed of the engine's own ops (Nx's semantics,
 * which the corpus checks), types and mixed types, views, edge values,
 * threads, the dispatcher and graphs, and every bad argument. */
#include <stdlib.h>
#include "harness.h"
#include "core/scalar_convert.h"

/* ---- helpers ----------------------------------------------------------------- */

static emily_tensor *f32s(int rank, const int64_t *shape, const float *v) { return t_from(EMILY_F32, rank, shape, v); }

static double ulp_of(emily_dtype dt, double v) {
    int bits = dt == EMILY_F64 ? 52 : dt == EMILY_F32 ? 23 : dt == EMILY_F16 ? 10 : 7;
    double a = fabs(v);
    int e;
    frexp(a > 1e-30 ? a : 1e-30, &e);
    return ldexp(1.0, e - 1 - bits);
}

static bool both_nan(double a, double b) { return a != a && b != b; }

/* ---- the composed expression, on the engine's own ops ----------------------- */

/* A tiny stack of intermediates released together. */
typedef struct chain {
    emily_tensor *t[64];
    int n;
    bool bad;
} chain;

static emily_tensor *keep(chain *c, emily_status s, emily_tensor *t) {
    if (s) {
        fprintf(stderr, "  composed step failed: %s\n", emily_last_error());
        c->bad = true;
    }
    if (c->n < 64) c->t[c->n++] = t;
    return t;
}
static emily_tensor *bin(chain *c, emily_binary_op op, emily_tensor *a, emily_tensor *b) {
    emily_tensor *r = NULL;
    emily_status s = c->bad ? EMILY_ERR_ARGUMENT : emily_binary(op, a, b, EMILY_DTYPE_AUTO, &r);
    return keep(c, s, r);
}
static emily_tensor *un(chain *c, emily_unary_op op, emily_tensor *a) {
    emily_tensor *r = NULL;
    emily_status s = c->bad ? EMILY_ERR_ARGUMENT : emily_unary(op, a, &r);
    return keep(c, s, r);
}
static emily_tensor *cast(chain *c, emily_tensor *a, emily_dtype dt) {
    emily_tensor *r = NULL;
    emily_status s = c->bad ? EMILY_ERR_ARGUMENT : emily_as_type(a, dt, &r);
    return keep(c, s, r);
}
/* Nx.rsqrt as Nx.BinaryBackend computes it, 1 / sqrt in double rounded
 * once (the engine's f32 rsqrt computes in float, within an ULP of it). */
static emily_tensor *rsqrt(chain *c, emily_tensor *a) {
    return cast(c, un(c, EMILY_RSQRT, cast(c, a, EMILY_F64)), emily_tensor_dtype(a));
}
/* Nx.mean over the last axis, keep_axes: sum, then divide by n */
static emily_tensor *mean_last(chain *c, emily_tensor *a) {
    int rank = emily_tensor_rank(a), ax = rank - 1;
    emily_tensor *s = NULL, *n = NULL;
    emily_status st = c->bad ? EMILY_ERR_ARGUMENT
                             : emily_reduce(EMILY_REDUCE_SUM, a, 1, &ax, true, EMILY_DTYPE_AUTO, &s);
    keep(c, st, s);
    int64_t len = emily_tensor_shape(a)[ax];
    st = emily_from_binary(EMILY_CPU, EMILY_S64, 0, NULL, &len, sizeof len, &n);
    keep(c, st, n);
    return bin(c, EMILY_DIVIDE, s, n);
}
static emily_tensor *scalar(chain *c, emily_dtype dt, double v) {
    emily_tensor *t = NULL;
    emily_status st = emily_constant(EMILY_CPU, dt, 0, NULL, emily_scalar_float(v), &t);
    return keep(c, st, t);
}
static emily_dtype merged(const emily_tensor *x, const emily_tensor *g, const emily_tensor *b) {
    emily_dtype o = emily_type_merge(emily_tensor_dtype(x), emily_tensor_dtype(g));
    return b ? emily_type_merge(o, emily_tensor_dtype(b)) : o;
}

/* Emily.Fast's composed layer_norm (the header's expression), op by op. */
static emily_tensor *composed_layer_norm(emily_tensor *x, emily_tensor *g, emily_tensor *b, double eps) {
    chain c = {.n = 0};
    emily_dtype w = emily_tensor_dtype(x) == EMILY_F64 ? EMILY_F64 : EMILY_F32, o = merged(x, g, b);
    emily_dtype a = o == EMILY_F64 ? EMILY_F64 : EMILY_F32;
    emily_tensor *xw = cast(&c, x, w);
    emily_tensor *mean = mean_last(&c, xw);
    emily_tensor *cen = bin(&c, EMILY_SUBTRACT, xw, mean);
    emily_tensor *var = mean_last(&c, bin(&c, EMILY_MULTIPLY, cen, cen));
    emily_tensor *e = scalar(&c, w, eps);
    emily_tensor *pred = bin(&c, EMILY_GREATER_EQUAL, var, e), *r = NULL;
    emily_tensor *big = rsqrt(&c, bin(&c, EMILY_ADD, var, e)), *small = rsqrt(&c, e);
    emily_status st = c.bad ? EMILY_ERR_ARGUMENT : emily_select(pred, big, small, EMILY_DTYPE_AUTO, &r);
    keep(&c, st, r);
    emily_tensor *scale = bin(&c, EMILY_MULTIPLY, cast(&c, g, a), cast(&c, r, a));
    emily_tensor *y = bin(&c, EMILY_MULTIPLY, scale, cast(&c, cen, a));
    if (b) y = bin(&c, EMILY_ADD, y, cast(&c, b, a));
    emily_tensor *out = NULL;
    if (!c.bad) CHECK_OK(emily_as_type(y, o, &out));
    t_release_all(c.n, c.t);
    return out;
}

/* Emily.Fast's composed rms_norm. */
static emily_tensor *composed_rms_norm(emily_tensor *x, emily_tensor *g, double eps) {
    chain c = {.n = 0};
    emily_dtype xt = emily_tensor_dtype(x), w = xt == EMILY_F64 ? EMILY_F64 : EMILY_F32, o = merged(x, g, NULL);
    emily_dtype a = o == EMILY_F64 ? EMILY_F64 : EMILY_F32;
    emily_tensor *xw = cast(&c, x, w);
    emily_tensor *ms = mean_last(&c, bin(&c, EMILY_MULTIPLY, xw, xw));
    emily_tensor *r = rsqrt(&c, bin(&c, EMILY_ADD, ms, scalar(&c, w, eps)));
    emily_tensor *z = cast(&c, cast(&c, bin(&c, EMILY_MULTIPLY, xw, r), xt), a);
    emily_tensor *y = bin(&c, EMILY_MULTIPLY, z, cast(&c, g, a));
    emily_tensor *out = NULL;
    if (!c.bad) CHECK_OK(emily_as_type(y, o, &out));
    t_release_all(c.n, c.t);
    return out;
}

/* fused against composed: same type and shape; every element within
 * `ulps` of the output type (NaN matches NaN); returns the number of
 * elements that differ in their bits at all. */
static int64_t compare(const char *what, const emily_tensor *f, const emily_tensor *c, double ulps) {
    /* f64: an output near zero (x_j near the mean) carries the mean's
     * absolute error, a few ULP of the row's values times r and gamma */
    double atol = emily_tensor_dtype(c) == EMILY_F64 ? 1e-13 : 0;
    if (!f || !c) {
        CHECK(f && c);
        return -1;
    }
    CHECK(emily_tensor_dtype(f) == emily_tensor_dtype(c));
    CHECK(t_shape_is(f, emily_tensor_rank(c), emily_tensor_shape(c)));
    int64_t n = emily_tensor_size(c), differ = 0, shown = 0;
    emily_dtype dt = emily_tensor_dtype(c);
    for (int64_t i = 0; i < n; i++) {
        double a = t_get(f, i), b = t_get(c, i);
        if (both_nan(a, b) || a == b) continue;
        differ++;
        if (!(fabs(a - b) <= ulps * ulp_of(dt, b) + atol) && shown++ < 5) {
            fprintf(stderr, "  %s: element %lld: fused %.9g, composed %.9g\n", what, (long long)i, a, b);
            harness_failures++;
        }
    }
    return differ;
}

/* ---- the expression on exact data ------------------------------------------- */

/* Integer data: every sum is exact, so the result is the header's
 * expression computed here in float, whatever the order of the sums. */
TEST(layer_norm_matches_the_expression) {
    static const float xv[2][5] = {{1, 2, 3, 4, 10}, {-3, 5, 0, 7, 1}};
    static const float gv[5] = {1, 0.5f, -2, 3, 0.25f}, bv[5] = {0.5f, -1, 0, 2, 8};
    emily_tensor *x = f32s(2, (int64_t[]){2, 5}, &xv[0][0]), *g = f32s(1, (int64_t[]){5}, gv),
                 *b = f32s(1, (int64_t[]){5}, bv), *y = NULL, *y0 = NULL;
    float eps = 1.0e-5f;
    CHECK_OK(emily_layer_norm(x, g, b, 1.0e-5, &y));
    CHECK_OK(emily_layer_norm(x, g, NULL, 1.0e-5, &y0));
    CHECK(y && emily_tensor_dtype(y) == EMILY_F32 && t_shape_is(y, 2, (int64_t[]){2, 5}));
    for (int i = 0; y && y0 && i < 2; i++) {
        double s = 0;
        for (int j = 0; j < 5; j++) s += xv[i][j];
        float m = (float)((double)(float)s / 5.0), sq = 0;
        double s2 = 0;
        for (int j = 0; j < 5; j++) {
            float c = xv[i][j] - m;
            s2 += (double)(c * c);
        }
        sq = (float)((double)(float)s2 / 5.0);
        float r = sq >= eps ? (float)(1.0 / sqrt((double)(sq + eps))) : (float)(1.0 / sqrt((double)eps));
        for (int j = 0; j < 5; j++) {
            float c = xv[i][j] - m, sc = gv[j] * r, p = sc * c;
            CHECK(t_get(y, i * 5 + j) == (double)(p + bv[j]));
            CHECK(t_get(y0, i * 5 + j) == (double)p);
        }
    }
    RELEASE(x, g, b, y, y0);
}

TEST(rms_norm_matches_the_expression) {
    static const float xv[2][4] = {{1, -2, 3, 4}, {0.5f, 0, -6, 2}};
    static const float gv[4] = {1, 0.5f, -2, 3};
    emily_tensor *x = f32s(2, (int64_t[]){2, 4}, &xv[0][0]), *g = f32s(1, (int64_t[]){4}, gv), *y = NULL;
    CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &y));
    for (int i = 0; y && i < 2; i++) {
        double s = 0;
        for (int j = 0; j < 4; j++) s += (double)(xv[i][j] * xv[i][j]);
        float ms = (float)((double)(float)s / 4.0);
        float r = (float)(1.0 / sqrt((double)(ms + 1.0e-6f)));
        for (int j = 0; j < 4; j++) {
            float z = xv[i][j] * r;
            CHECK(t_get(y, i * 4 + j) == (double)(z * gv[j]));
        }
    }
    RELEASE(x, g, y);
}

/* rms_norm rounds the normalized value to x's type before the scale
 * (Bumblebee's upcast: :normalization): with bf16 x and an f32 gamma the
 * output is f32, and equals bf16(x * r) * gamma, not x * r * gamma. */
TEST(rms_norm_rounds_to_the_input_type_before_the_scale) {
    static const float xv[3] = {1.1f, -2.3f, 0.7f}, gv[3] = {1.3f, 1.7f, -0.9f};
    emily_tensor *x = t_as(f32s(1, (int64_t[]){3}, xv), EMILY_BF16), *g = f32s(1, (int64_t[]){3}, gv), *y = NULL;
    CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &y));
    CHECK(y && emily_tensor_dtype(y) == EMILY_F32);
    double s = 0;
    float xb[3];
    for (int j = 0; j < 3; j++) {
        xb[j] = (float)t_get(x, j);
        s += (double)(xb[j] * xb[j]);
    }
    float r = (float)(1.0 / sqrt((double)((float)((double)(float)s / 3.0) + 1.0e-6f)));
    bool rounded_differs = false;
    for (int j = 0; y && j < 3; j++) {
        float z = emily_sc_bf16_to_f32(emily_sc_f32_to_bf16(xb[j] * r));
        CHECK(t_get(y, j) == (double)(z * gv[j]));
        rounded_differs = rounded_differs || (z * gv[j]) != (xb[j] * r) * gv[j];
    }
    CHECK(rounded_differs); /* the data shows the difference */
    RELEASE(x, g, y);
}

/* A row sum's term: 0 x, 1 x * x, 2 (x - m)^2, in float (f32 rows) or
 * double (f64 rows). */
static double term_of(double x, double m, int what, bool f32) {
    if (f32) {
        float a = (float)x, c = a - (float)m;
        return what == 0 ? a : what == 1 ? (double)(a * a) : (double)(c * c);
    }
    return what == 0 ? x : what == 1 ? x * x : (x - m) * (x - m);
}

/* The CUDA kernel's order, emulated lane by lane: lane k takes the chunks
 * of 8 elements at 256 i + 8 k, its t-th partial summing element
 * 256 i + 8 k + t in double from 0.0; each lane adds partial t + 4 into t,
 * then t + 2, then t + 1; then every lane adds the lane k xor s for
 * s = 16, 8, 4, 2, 1 at once. The CPU engine must give these bits (the
 * CUDA test then holds the GPU to the CPU's). chunk = 1 is softmax's
 * interleaved order (element j to lane j mod 32), which the data below
 * must tell apart. */
static double warp_order_sum(const double *v, int64_t n, double m, int what, bool f32, int chunk) {
    double lane[32], next[32];
    for (int k = 0; k < 32; k++) {
        double part[8];
        for (int t = 0; t < chunk; t++) {
            part[t] = 0.0;
            for (int64_t j = chunk * k + t; j < n; j += 32 * chunk) part[t] += term_of(v[j], m, what, f32);
        }
        for (int s = chunk / 2; s >= 1; s /= 2)
            for (int t = 0; t < s; t++) part[t] = part[t] + part[t + s];
        lane[k] = part[0];
    }
    for (int s = 16; s >= 1; s /= 2) {
        for (int k = 0; k < 32; k++) next[k] = lane[k] + lane[k ^ s];
        memcpy(lane, next, sizeof lane);
    }
    return lane[0];
}

/* u uniform in [0, 1) from *state (xorshift64) */
static double next_uniform(uint64_t *state) {
    *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* Rows of f32 (in [2, 10)) and of f64 spread over 2^-30 .. 2^20 with both
 * signs, where the double sums depend on their order: the CPU's outputs
 * are the emulated order's, bit for bit, and the f64 data tells that order
 * from the interleaved one. */
TEST(cpu_sums_in_the_warp_order) {
    enum { ROWS = 6, N = 1001 };
    uint64_t st = 2024;
    int64_t shape[2] = {ROWS, N}, n = N;
    bool orders_differ = false;
    for (int f32 = 1; f32 >= 0; f32--) {
        emily_dtype dt = f32 ? EMILY_F32 : EMILY_F64;
        double *xv = malloc(sizeof(double) * ROWS * N), *gv = malloc(sizeof(double) * N);
        float *xf = malloc(sizeof(float) * ROWS * N), *gf = malloc(sizeof(float) * N);
        if (!ALLOCATED(xv, gv, xf, gf)) return;
        for (int64_t j = 0; j < ROWS * N; j++) {
            double u = next_uniform(&st);
            xv[j] = f32 ? (double)(float)(2 + 8 * u) : ldexp(u - 0.5, (int)(next_uniform(&st) * 50) - 30);
            xf[j] = (float)xv[j];
        }
        for (int64_t j = 0; j < N; j++) {
            gv[j] = f32 ? (double)(float)(-2 + 4 * next_uniform(&st)) : -2 + 4 * next_uniform(&st);
            gf[j] = (float)gv[j];
        }
        emily_tensor *x = t_from(dt, 2, shape, f32 ? (void *)xf : (void *)xv),
                     *g = t_from(dt, 1, &n, f32 ? (void *)gf : (void *)gv), *y = NULL, *z = NULL;
        double e1 = f32 ? (double)1.0e-5f : 1.0e-5, e2 = f32 ? (double)1.0e-6f : 1.0e-6;
        CHECK_OK(emily_layer_norm(x, g, NULL, 1.0e-5, &y));
        CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &z));
        for (int i = 0; y && z && i < ROWS; i++) {
            const double *row = xv + i * N;
            /* the header's steps in the row's type (norm_rules.h) */
            double m = warp_order_sum(row, n, 0, 0, f32, 8) / (double)n, var, r, ms, rr;
            if (f32) m = (float)((double)(float)warp_order_sum(row, n, 0, 0, f32, 8) / (double)n);
            var = warp_order_sum(row, n, m, 2, f32, 8);
            ms = warp_order_sum(row, n, 0, 1, f32, 8);
            orders_differ |= var != warp_order_sum(row, n, m, 2, f32, 1) || ms != warp_order_sum(row, n, 0, 1, f32, 1);
            if (f32) {
                var = (float)((double)(float)var / (double)n);
                ms = (float)((double)(float)ms / (double)n);
                r = (float)var >= (float)e1 ? (float)(1.0 / sqrt((double)((float)var + (float)e1)))
                                            : (float)(1.0 / sqrt(e1));
                rr = (float)(1.0 / sqrt((double)((float)ms + (float)e2)));
            } else {
                var /= (double)n;
                ms /= (double)n;
                r = var >= e1 ? 1.0 / sqrt(var + e1) : 1.0 / sqrt(e1);
                rr = 1.0 / sqrt(ms + e2);
            }
            for (int64_t j = 0; j < n; j++) {
                double want_y, want_z;
                if (f32) {
                    float sc = gf[j] * (float)r, c = xf[i * N + j] - (float)m, zz = xf[i * N + j] * (float)rr;
                    want_y = sc * c;
                    want_z = zz * gf[j];
                } else {
                    want_y = (gv[j] * r) * (row[j] - m);
                    want_z = (row[j] * rr) * gv[j];
                }
                CHECK(t_get(y, i * N + j) == want_y);
                CHECK(t_get(z, i * N + j) == want_z);
            }
        }
        free(xv), free(gv), free(xf), free(gf);
        RELEASE(x, g, y, z);
    }
    CHECK(orders_differ); /* the f64 rows tell the orders apart */
}

/* ---- against the composed ops ------------------------------------------------ */

static void against_composed(const char *label, emily_dtype xt, emily_dtype gt, emily_dtype bt, int rank,
                             const int64_t *shape, double offset, uint64_t seed) {
    uint64_t st = seed;
    int64_t n = shape[rank - 1];
    emily_tensor *x = t_uniform(&st, xt, rank, shape, offset - 4, 8), *g = t_uniform(&st, gt, 1, &n, -2, 4);
    emily_tensor *b = bt == EMILY_DTYPE_AUTO ? NULL : t_uniform(&st, bt, 1, &n, -1, 2);
    emily_tensor *f = NULL, *c = NULL;
    char what[160];
    /* the composed sums are in another order: for f64 within a few ULP
     * (and the mean's error times r where c_j cancels); for the others,
     * where the double sums round to the same W value (nearly always),
     * the same bits */
    double ulps = xt == EMILY_F64 ? 64 : 1;
    snprintf(what, sizeof what, "layer_norm %s x %s gamma %s beta %s", label, emily_dtype_name(xt),
             emily_dtype_name(gt), b ? emily_dtype_name(bt) : "none");
    CHECK_OK(emily_layer_norm(x, g, b, 1.0e-5, &f));
    c = composed_layer_norm(x, g, b, 1.0e-5);
    int64_t d = compare(what, f, c, ulps);
    if (xt != EMILY_F64) CHECK(d * 1000 <= emily_tensor_size(x));
    RELEASE(f, c);
    f = c = NULL;
    snprintf(what, sizeof what, "rms_norm %s x %s gamma %s", label, emily_dtype_name(xt), emily_dtype_name(gt));
    CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &f));
    c = composed_rms_norm(x, g, 1.0e-6);
    d = compare(what, f, c, ulps);
    if (xt != EMILY_F64) CHECK(d * 1000 <= emily_tensor_size(x));
    RELEASE(x, g, b, f, c);
}

TEST(same_types_against_composed_ops) {
    static const emily_dtype types[4] = {EMILY_F32, EMILY_F64, EMILY_F16, EMILY_BF16};
    static const int64_t s1[1] = {7}, s2[2] = {9, 384}, s3[3] = {2, 3, 33}, s4[2] = {5, 1000};
    for (int k = 0; k < 4; k++) {
        emily_dtype t = types[k];
        against_composed("{7}", t, t, t, 1, s1, 0, 11 + k);
        against_composed("{9, 384}", t, t, t, 2, s2, 0, 23 + k);
        against_composed("{9, 384} no beta", t, t, EMILY_DTYPE_AUTO, 2, s2, 0, 31 + k);
        against_composed("{2, 3, 33} offset", t, t, t, 3, s3, 3, 41 + k);
        against_composed("{5, 1000}", t, t, t, 2, s4, -1, 53 + k);
    }
}

/* The output type is the merge of the inputs' (as the composed form's
 * last operation types it), the statistics run in x's W and the affine
 * part in the output's A. */
TEST(mixed_types_against_composed_ops) {
    static const int64_t s[2] = {6, 70};
    static const struct {
        emily_dtype x, g, b, out;
    } cases[] = {
        {EMILY_BF16, EMILY_F32, EMILY_F32, EMILY_F32}, {EMILY_F16, EMILY_BF16, EMILY_BF16, EMILY_F16},
        {EMILY_F32, EMILY_F64, EMILY_F32, EMILY_F64},  {EMILY_BF16, EMILY_F64, EMILY_BF16, EMILY_F64},
        {EMILY_F64, EMILY_F32, EMILY_F16, EMILY_F64},  {EMILY_F32, EMILY_BF16, EMILY_F16, EMILY_F32},
        {EMILY_F16, EMILY_F16, EMILY_F32, EMILY_F32},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        uint64_t st = 97 + k;
        emily_tensor *x = t_uniform(&st, cases[k].x, 2, s, -2, 8), *g = t_uniform(&st, cases[k].g, 1, &s[1], -2, 4),
                     *b = t_uniform(&st, cases[k].b, 1, &s[1], -1, 2), *f = NULL, *c = NULL;
        CHECK_OK(emily_layer_norm(x, g, b, 1.0e-5, &f));
        CHECK(f && emily_tensor_dtype(f) == cases[k].out);
        c = composed_layer_norm(x, g, b, 1.0e-5);
        compare("layer_norm mixed", f, c, cases[k].x == EMILY_F64 ? 64 : 1);
        RELEASE(f, c);
        f = c = NULL;
        CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &f));
        CHECK(f && emily_tensor_dtype(f) == emily_type_merge(cases[k].x, cases[k].g));
        c = composed_rms_norm(x, g, 1.0e-6);
        compare("rms_norm mixed", f, c, cases[k].x == EMILY_F64 ? 64 : 1);
        RELEASE(x, g, b, f, c);
    }
}

/* f64 against a sum in index order (Nx.BinaryBackend's): within the
 * bound of a reordered sum. A row far from zero makes the mean's sum
 * cancel nothing but lose low bits. */
TEST(f64_within_the_reordered_sum_bound) {
    uint64_t st = 5;
    int64_t shape[2] = {4, 4096}, n = 4096;
    emily_tensor *x = t_uniform(&st, EMILY_F64, 2, shape, 1000, 3), *g = t_uniform(&st, EMILY_F64, 1, &n, 0.5, 1),
                 *y = NULL;
    CHECK_OK(emily_layer_norm(x, g, NULL, 1.0e-5, &y));
    for (int i = 0; y && i < 4; i++) {
        double s = 0, sa = 0, s2 = 0;
        for (int64_t j = 0; j < n; j++) s += t_get(x, i * n + j), sa += fabs(t_get(x, i * n + j));
        double m = s / (double)n;
        for (int64_t j = 0; j < n; j++) s2 += (t_get(x, i * n + j) - m) * (t_get(x, i * n + j) - m);
        double r = 1.0 / sqrt(s2 / (double)n + 1.0e-5);
        double mean_err = (double)n * 0x1p-52 * sa / (double)n; /* the bound on the mean */
        for (int64_t j = 0; j < n; j++) {
            double want = t_get(g, j) * r * (t_get(x, i * n + j) - m);
            double tol = fabs(t_get(g, j)) * r * 4 * mean_err + 1e-12 * fabs(want) + 1e-15;
            if (!(fabs(t_get(y, i * n + j) - want) <= tol)) {
                fprintf(stderr, "  row %d col %lld: %.17g, want %.17g\n", i, (long long)j, t_get(y, i * n + j), want);
                harness_failures++;
                break;
            }
        }
    }
    RELEASE(x, g, y);
}

/* ---- views, threads ----------------------------------------------------------- */

/* A transposed x, a reversed gamma and a broadcast beta give what their
 * contiguous copies give. */
TEST(views_as_inputs) {
    uint64_t st = 77;
    int64_t shape[2] = {40, 12}, n = 40;
    emily_tensor *xt = t_uniform(&st, EMILY_F32, 2, shape, -3, 6), *x = NULL, *xc = NULL;
    CHECK_OK(emily_transpose(xt, (int[]){1, 0}, &x)); /* {12, 40}, not contiguous */
    CHECK_OK(emily_contiguous(x, &xc));
    emily_tensor *g0 = t_uniform(&st, EMILY_F32, 1, &n, -1, 2), *g = NULL, *gc = NULL, *b1 = NULL, *b = NULL,
                 *bc = NULL;
    CHECK_OK(emily_reverse(g0, 1, (int[]){0}, &g));
    CHECK_OK(emily_contiguous(g, &gc));
    b1 = f32s(1, (int64_t[]){1}, (float[]){0.25f});
    CHECK_OK(emily_broadcast(b1, 1, &n, (int[]){0}, &b));
    CHECK_OK(emily_contiguous(b, &bc));
    emily_tensor *y = NULL, *yc = NULL, *z = NULL, *zc = NULL;
    CHECK_OK(emily_layer_norm(x, g, b, 1.0e-5, &y));
    CHECK_OK(emily_layer_norm(xc, gc, bc, 1.0e-5, &yc));
    CHECK(t_same_bytes(y, yc));
    CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &z));
    CHECK_OK(emily_rms_norm(xc, gc, 1.0e-6, &zc));
    CHECK(t_same_bytes(z, zc));
    RELEASE(xt, x, xc, g0, g, gc, b1, b, bc, y, yc, z, zc);
}

/* Rows are independent of the way the pool cuts them: a large batch
 * (threaded) gives each row the bits the row gives alone. */
TEST(rows_do_not_depend_on_the_batch) {
    uint64_t st = 123;
    static const emily_dtype types[4] = {EMILY_F32, EMILY_BF16, EMILY_F64, EMILY_F16};
    for (int k = 0; k < 4; k++) {
        int64_t shape[2] = {1024, 384}, n = 384;
        emily_tensor *x = t_uniform(&st, types[k], 2, shape, -4, 8), *g = t_uniform(&st, types[k], 1, &n, -2, 4),
                     *b = t_uniform(&st, types[k], 1, &n, -1, 2), *y = NULL, *z = NULL;
        CHECK_OK(emily_layer_norm(x, g, b, 1.0e-5, &y));
        CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &z));
        static const int64_t picks[3] = {0, 517, 1023};
        for (int p = 0; p < 3; p++) {
            emily_tensor *row = NULL, *yr = NULL, *zr = NULL, *ys = NULL, *zs = NULL;
            CHECK_OK(emily_slice(x, (int64_t[]){picks[p], 0}, (int64_t[]){1, n}, (int64_t[]){1, 1}, &row));
            CHECK_OK(emily_layer_norm(row, g, b, 1.0e-5, &yr));
            CHECK_OK(emily_rms_norm(row, g, 1.0e-6, &zr));
            CHECK_OK(emily_slice(y, (int64_t[]){picks[p], 0}, (int64_t[]){1, n}, (int64_t[]){1, 1}, &ys));
            CHECK_OK(emily_slice(z, (int64_t[]){picks[p], 0}, (int64_t[]){1, n}, (int64_t[]){1, 1}, &zs));
            emily_tensor *ysc = NULL, *zsc = NULL;
            CHECK_OK(emily_contiguous(ys, &ysc));
            CHECK_OK(emily_contiguous(zs, &zsc));
            CHECK(t_same_bytes(yr, ysc) && t_same_bytes(zr, zsc));
            RELEASE(row, yr, zr, ys, zs, ysc, zsc);
        }
        RELEASE(x, g, b, y, z);
    }
}

/* ---- edge values ---------------------------------------------------------------- */

/* Rows of one element are constant rows: layer_norm gives beta (c = 0),
 * rms_norm x * rsqrt(x^2 + eps) * gamma. */
TEST(rows_of_length_one) {
    emily_tensor *x = f32s(2, (int64_t[]){3, 1}, (float[]){2, -5, 0}), *g = f32s(1, (int64_t[]){1}, (float[]){3}),
                 *b = f32s(1, (int64_t[]){1}, (float[]){0.5f}), *y = NULL, *z = NULL;
    CHECK_OK(emily_layer_norm(x, g, b, 1.0e-5, &y));
    CHECK(y && t_equals(y, 3, (double[]){0.5, 0.5, 0.5}));
    CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &z));
    for (int i = 0; z && i < 3; i++) {
        float v = (float)t_get(x, i), r = (float)(1.0 / sqrt((double)(v * v + 1.0e-6f)));
        CHECK(t_get(z, i) == (double)((v * r) * 3.0f));
    }
    RELEASE(x, g, b, y, z);
}

/* A constant row: var = 0 < eps, so r = rsqrt(eps) and y = beta; with
 * eps = 0, var >= eps and r = rsqrt(0) = inf, so y = inf * 0 = NaN, as
 * the composed expression gives. rms_norm of a zero row with eps = 0 is
 * NaN too (0 * inf). */
TEST(constant_rows_and_eps_zero) {
    emily_tensor *x = f32s(2, (int64_t[]){2, 3}, (float[]){7, 7, 7, 0, 0, 0}),
                 *g = f32s(1, (int64_t[]){3}, (float[]){1, 2, 3}), *b = f32s(1, (int64_t[]){3}, (float[]){-1, 0, 1}),
                 *y = NULL, *y0 = NULL, *z0 = NULL, *c = NULL;
    CHECK_OK(emily_layer_norm(x, g, b, 1.0e-5, &y));
    CHECK(y && t_equals(y, 6, (double[]){-1, 0, 1, -1, 0, 1}));
    CHECK_OK(emily_layer_norm(x, g, b, 0.0, &y0));
    for (int i = 0; y0 && i < 6; i++) CHECK(isnan(t_get(y0, i)));
    c = composed_layer_norm(x, g, b, 0.0);
    for (int i = 0; c && i < 6; i++) CHECK(isnan(t_get(c, i)));
    CHECK_OK(emily_rms_norm(x, g, 0.0, &z0));
    for (int i = 0; z0 && i < 3; i++) CHECK(t_get(z0, i) == t_get(g, i));
    for (int i = 3; z0 && i < 6; i++) CHECK(isnan(t_get(z0, i)));
    RELEASE(x, g, b, y, y0, z0, c);
}

/* NaN and infinities stay in their rows and follow the expression. */
TEST(nan_and_infinity) {
    float xv[3][4] = {{1, NAN, 2, 3}, {1, INFINITY, 2, 3}, {1, 2, 3, 4}};
    emily_tensor *x = f32s(2, (int64_t[]){3, 4}, &xv[0][0]), *g = f32s(1, (int64_t[]){4}, (float[]){1, 1, 1, 1});
    emily_tensor *y = NULL, *z = NULL, *cy = NULL, *cz = NULL;
    CHECK_OK(emily_layer_norm(x, g, NULL, 1.0e-5, &y));
    CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &z));
    cy = composed_layer_norm(x, g, NULL, 1.0e-5);
    cz = composed_rms_norm(x, g, 1.0e-6);
    compare("layer_norm nan/inf", y, cy, 0);
    compare("rms_norm nan/inf", z, cz, 0);
    for (int j = 0; y && j < 4; j++) CHECK(isnan(t_get(y, j)) && isnan(t_get(z, j)));
    /* the infinite row: mean inf, every c is -inf or NaN, var NaN fails
     * var >= eps, r = rsqrt(eps): y is -inf where x is finite */
    CHECK(y && isinf(t_get(y, 4)) && t_get(y, 4) < 0 && isnan(t_get(y, 5)));
    /* rms: ms = inf, r = 0: finite x give 0, inf gives NaN */
    CHECK(z && t_get(z, 4) == 0 && isnan(t_get(z, 5)));
    for (int j = 8; y && j < 12; j++) CHECK(isfinite(t_get(y, j)) && isfinite(t_get(z, j)));
    RELEASE(x, g, y, z, cy, cz);
}

/* No rows, or rows of no elements: an empty result of x's shape and the
 * merged type. */
TEST(empty_inputs) {
    emily_tensor *x = NULL, *g = NULL, *y = NULL, *x2 = NULL, *g0 = NULL, *z = NULL, *gh = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_BF16, 2, (int64_t[]){0, 4}, &x));
    g = f32s(1, (int64_t[]){4}, (float[]){1, 2, 3, 4});
    CHECK_OK(emily_layer_norm(x, g, g, 1.0e-5, &y));
    CHECK(y && emily_tensor_dtype(y) == EMILY_F32 && t_shape_is(y, 2, (int64_t[]){0, 4}));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F16, 3, (int64_t[]){2, 3, 0}, &x2));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F16, 1, (int64_t[]){0}, &g0));
    CHECK_OK(emily_rms_norm(x2, g0, 1.0e-6, &z));
    CHECK(z && emily_tensor_dtype(z) == EMILY_F16 && t_shape_is(z, 3, (int64_t[]){2, 3, 0}));
    RELEASE(y, z);
    y = z = NULL;
    CHECK_OK(emily_layer_norm(x2, g0, NULL, 1.0e-5, &y));
    CHECK(y && t_shape_is(y, 3, (int64_t[]){2, 3, 0}));
    gh = f32s(1, (int64_t[]){3}, (float[]){1, 2, 3});
    CHECK_ERR(emily_rms_norm(x2, gh, 1.0e-6, &z), EMILY_ERR_SHAPE, "gamma must have shape {0}");
    RELEASE(x, g, y, x2, g0, z, gh);
}

/* ---- bad arguments -------------------------------------------------------------- */

TEST(bad_arguments) {
    emily_tensor *x = f32s(2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}),
                 *g = f32s(1, (int64_t[]){3}, (float[]){1, 1, 1});
    emily_tensor *g4 = f32s(1, (int64_t[]){4}, (float[]){1, 1, 1, 1}),
                 *g2d = f32s(2, (int64_t[]){1, 3}, (float[]){1, 1, 1});
    emily_tensor *s0 = f32s(0, NULL, (float[]){1}), *y = NULL;
    emily_tensor *xi = t_as(f32s(2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}), EMILY_S32);
    emily_tensor *gi = t_as(f32s(1, (int64_t[]){3}, (float[]){1, 1, 1}), EMILY_U8);
    emily_tensor *xc = t_as(f32s(2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6}), EMILY_C64);
    CHECK_ERR(emily_layer_norm(NULL, g, NULL, 1e-5, &y), EMILY_ERR_ARGUMENT, "layer_norm: x is NULL");
    CHECK_ERR(emily_layer_norm(x, NULL, NULL, 1e-5, &y), EMILY_ERR_ARGUMENT, "layer_norm: gamma is NULL");
    CHECK_ERR(emily_layer_norm(x, g, g, 1e-5, NULL), EMILY_ERR_ARGUMENT, "layer_norm: output pointer is NULL");
    CHECK_ERR(emily_rms_norm(NULL, g, 1e-6, &y), EMILY_ERR_ARGUMENT, "rms_norm: x is NULL");
    CHECK_ERR(emily_rms_norm(x, NULL, 1e-6, &y), EMILY_ERR_ARGUMENT, "rms_norm: gamma is NULL");
    CHECK_ERR(emily_rms_norm(x, g, 1e-6, NULL), EMILY_ERR_ARGUMENT, "rms_norm: output pointer is NULL");
    CHECK_ERR(emily_layer_norm(s0, s0, NULL, 1e-5, &y), EMILY_ERR_SHAPE, "layer_norm: x must have rank 1 or more");
    CHECK_ERR(emily_rms_norm(s0, g, 1e-6, &y), EMILY_ERR_SHAPE, "rms_norm: x must have rank 1 or more");
    CHECK_ERR(emily_layer_norm(x, g4, NULL, 1e-5, &y), EMILY_ERR_SHAPE,
              "layer_norm: gamma must have shape {3} (the last axis of x, {2, 3}), got {4}");
    CHECK_ERR(emily_layer_norm(x, g, g2d, 1e-5, &y), EMILY_ERR_SHAPE,
              "layer_norm: beta must have shape {3} (the last axis of x, {2, 3}), got {1, 3}");
    CHECK_ERR(emily_rms_norm(x, g2d, 1e-6, &y), EMILY_ERR_SHAPE, "rms_norm: gamma must have shape {3}");
    CHECK_ERR(emily_rms_norm(x, s0, 1e-6, &y), EMILY_ERR_SHAPE, "got {}");
    CHECK_ERR(emily_layer_norm(xi, g, NULL, 1e-5, &y), EMILY_ERR_TYPE,
              "layer_norm: x must be a real float tensor (f16, bf16, f32 or f64), got s32");
    CHECK_ERR(emily_layer_norm(x, gi, NULL, 1e-5, &y), EMILY_ERR_TYPE, "layer_norm: gamma must be a real float tensor");
    CHECK_ERR(emily_layer_norm(x, g, gi, 1e-5, &y), EMILY_ERR_TYPE, "layer_norm: beta must be a real float tensor");
    CHECK_ERR(emily_rms_norm(xc, g, 1e-6, &y), EMILY_ERR_TYPE, "rms_norm: x must be a real float tensor");
    CHECK_ERR(emily_rms_norm(x, gi, 1e-6, &y), EMILY_ERR_TYPE, "got u8");
    CHECK(y == NULL);
    RELEASE(x, g, g4, g2d, s0, xi, gi, xc);
}

/* ---- dispatcher and graphs ------------------------------------------------------ */

TEST(dispatch_callbacks) {
    emily_tensor *x = f32s(2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 9}),
                 *g = f32s(1, (int64_t[]){3}, (float[]){1, 2, 3});
    emily_tensor *b = t_as(f32s(1, (int64_t[]){3}, (float[]){0, 1, 0}), EMILY_BF16);
    emily_tensor *want = NULL, *want0 = NULL, *wantr = NULL;
    CHECK_OK(emily_layer_norm(x, g, b, 0.125, &want));
    CHECK_OK(emily_layer_norm(x, g, NULL, 1.0e-5, &want0));
    CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &wantr));
    int64_t shape[2] = {2, 3};
    emily_value out = v_tmpl(EMILY_F32, 2, shape), bad_out = v_tmpl(EMILY_BF16, 2, shape);
    const char *keys[1] = {"epsilon"};
    emily_value eps_v[1] = {v_float(0.125)}, eps_opts = v_opts(keys, eps_v, 1), no_opts = v_opts(NULL, NULL, 0);
    emily_value args[4] = {v_tensor(x), v_tensor(g), v_tensor(b), eps_opts};
    emily_dispatch_result r = {0};
    CHECK_DISPATCH_SAME("layer_norm", EMILY_DISPATCH_RUN, &out, args, 4, want);
    CHECK_DISPATCH_SAME("layer_norm", EMILY_DISPATCH_INFER, &out, args, 4, want);
    /* no beta, options without epsilon: Axon's 1.0e-5 */
    args[2] = no_opts;
    CHECK_DISPATCH_SAME("layer_norm", EMILY_DISPATCH_RUN, &out, args, 3, want0);
    CHECK_DISPATCH_SAME("layer_norm", EMILY_DISPATCH_RUN, &out, args, 2, want0);
    /* rms_norm: Bumblebee's 1.0e-6 by default */
    CHECK_DISPATCH_SAME("rms_norm", EMILY_DISPATCH_RUN, &out, args, 3, wantr);
    /* errors: the template, the arguments, the types */
    args[2] = v_tensor(b);
    CHECK_ERR(emily_dispatch("layer_norm", EMILY_CPU, &bad_out, args, 4, EMILY_DISPATCH_RUN, &r), EMILY_ERR_INTERNAL,
              "but Nx expects bf16");
    CHECK_ERR(emily_dispatch("rms_norm", EMILY_CPU, &out, args, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "rms_norm: argument 3 must be a keyword list");
    CHECK_ERR(emily_dispatch("layer_norm", EMILY_CPU, &out, args, 1, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "layer_norm: expected 2 to 4 arguments, got 1");
    emily_value odd[4] = {v_tensor(x), v_int(3), eps_opts, eps_opts};
    CHECK_ERR(emily_dispatch("layer_norm", EMILY_CPU, &out, odd, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "layer_norm: argument 2 must be a tensor, got integer");
    odd[1] = v_tensor(g);
    CHECK_ERR(emily_dispatch("layer_norm", EMILY_CPU, &out, odd, 4, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "layer_norm: argument 3 must be a tensor");
    const char *bad_keys[1] = {"epsilon"};
    emily_value bad_eps[1] = {v_atom("small")}, bad_opts = v_opts(bad_keys, bad_eps, 1);
    emily_value args3[3] = {v_tensor(x), v_tensor(g), bad_opts};
    CHECK_ERR(emily_dispatch("rms_norm", EMILY_CPU, &out, args3, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "rms_norm: option :epsilon must be a number, got atom");
    CHECK(r.n == 0);
    CHECK(emily_dispatch_find("layer_norm")->dtypes == EMILY_DTYPES_FLOAT);
    CHECK(emily_dispatch_find("rms_norm")->cost == EMILY_COST_INLINE);
    RELEASE(x, g, b, want, want0, wantr);
}

/* A graph call gives the eager call's bits. */
TEST(runs_in_a_graph) {
    uint64_t st = 9;
    int64_t shape[2] = {33, 96}, n = 96;
    emily_tensor *x = t_uniform(&st, EMILY_BF16, 2, shape, -4, 8), *g = t_uniform(&st, EMILY_F32, 1, &n, -1, 2),
                 *want = NULL, *wantr = NULL;
    CHECK_OK(emily_layer_norm(x, g, g, 1.0e-5, &want));
    CHECK_OK(emily_rms_norm(x, g, 1.0e-6, &wantr));
    emily_graph *gr = NULL;
    int32_t px, pg, ln, rms;
    CHECK_OK(emily_graph_create(&gr));
    CHECK_OK(emily_graph_add_param(gr, EMILY_BF16, 2, shape, &px));
    CHECK_OK(emily_graph_add_param(gr, EMILY_F32, 1, &n, &pg));
    emily_value out = v_tmpl(EMILY_F32, 2, shape);
    const char *keys[1] = {"epsilon"};
    emily_value e1[1] = {v_float(1.0e-5)}, e2[1] = {v_float(1.0e-6)};
    emily_value a1[4] = {{.kind = EMILY_V_REF, .i = px},
                         {.kind = EMILY_V_REF, .i = pg},
                         {.kind = EMILY_V_REF, .i = pg},
                         v_opts(keys, e1, 1)};
    emily_value a2[3] = {{.kind = EMILY_V_REF, .i = px}, {.kind = EMILY_V_REF, .i = pg}, v_opts(keys, e2, 1)};
    CHECK_OK(emily_graph_add_call(gr, "layer_norm", &out, a1, 4, &ln));
    CHECK_OK(emily_graph_add_call(gr, "rms_norm", &out, a2, 3, &rms));
    CHECK_OK(emily_graph_set_outputs(gr, 2, (int32_t[]){ln, rms}));
    CHECK_OK(emily_graph_compile(gr, EMILY_CPU, NULL));
    emily_tensor *res[2] = {NULL, NULL};
    CHECK_OK(emily_graph_run(gr, (emily_tensor *[]){x, g}, 2, res, 2));
    CHECK(t_same_bytes(res[0], want) && t_same_bytes(res[1], wantr));
    emily_graph_free(gr);
    RELEASE(x, g, want, wantr, res[0], res[1]);
}

RUN_TESTS("fast_norm", CASE(layer_norm_matches_the_expression), CASE(rms_norm_matches_the_expression),
          CASE(rms_norm_rounds_to_the_input_type_before_the_scale), CASE(cpu_sums_in_the_warp_order),
          CASE(same_types_against_composed_ops), CASE(mixed_types_against_composed_ops),
          CASE(f64_within_the_reordered_sum_bound), CASE(views_as_inputs), CASE(rows_do_not_depend_on_the_batch),
          CASE(rows_of_length_one), CASE(constant_rows_and_eps_zero), CASE(nan_and_infinity), CASE(empty_inputs),
          CASE(bad_arguments), CASE(dispatch_callbacks), CASE(runs_in_a_graph))
