/* emily_sdpa (emily/ops_fast.h) on the CPU against the header's
 * expression computed here naively, step by step with its roundings and
 * with every sum in double (as Nx.BinaryBackend's dots and sums are):
 * every option (causal with Sq < Skv, = Skv and > Skv, grouped-query
 * heads, additive and boolean masks at every broadcast rank, sinks), the
 * four types, odd sizes, fully masked rows, edge values, views, threads,
 * the dispatcher, graphs and every bad argument.
 *
 * Tolerance (sdpa_bound): the engine's two dots sum in W in BLAS's order,
 * the reference's in double, and nothing else differs. A score then
 * errs by at most gamma_D * sum_d |q_d k_d| (gamma_n = n * u, u the unit
 * roundoff of W), which moves each E_ij / Z_i by at most twice that times
 * the scale (the logit and the max) plus a few u; the output then errs by
 * sum_j (that * P_ij + a T-ULP of P_ij where its rounding flips) * |v_jd|,
 * plus gamma_Skv * sum_j P_ij |v_jd| for the second dot, plus one T-ULP of
 * the output for its own rounding. The bound is computed per element; on
 * these data most elements are bit-identical (counted, not required). */
#include <math.h>
#include <stdlib.h>
#include "harness.h"
#include "sdpa_spec.h"

/* ---- data -------------------------------------------------------------------- */

static int64_t count_of(int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    return n;
}

/* A tensor of dtype dt from doubles (converted by Nx's rules). */
static emily_tensor *from_doubles(emily_dtype dt, int rank, const int64_t *shape, const double *v) {
    emily_tensor *t = t_from(EMILY_F64, rank, shape, v), *r = NULL;
    if (t && dt != EMILY_F64) CHECK_OK(emily_as_type(t, dt, &r));
    else r = t, t = NULL;
    emily_tensor_release(t);
    return r;
}

/* Every element of t as a double (NULL on failure; the caller frees). */
static double *values(const emily_tensor *t) {
    if (!t) return NULL;
    int64_t n = emily_tensor_size(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    emily_tensor *w = NULL;
    if (!v || emily_as_type(t, EMILY_F64, &w) || emily_to_binary(w, v, (size_t)n * sizeof *v)) {
        fprintf(stderr, "  values: %s\n", emily_last_error());
        harness_failures++;
        free(v);
        v = NULL;
    }
    emily_tensor_release(w);
    return v;
}

/* A u8 tensor of 0/1 with 1 at probability `keep` (in 1/8ths). */
static emily_tensor *bool_mask(uint64_t *st, int rank, const int64_t *shape, int keep) {
    int64_t n = count_of(rank, shape);
    unsigned char *v = malloc((size_t)(n ? n : 1));
    if (!v) {
        harness_failures++;
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) v[i] = (xorshift64(st) >> 20) % 8 < (uint64_t)keep;
    emily_tensor *t = t_from(EMILY_U8, rank, shape, v);
    free(v);
    return t;
}

/* ---- the reference ------------------------------------------------------------ */

/* x rounded to W (f32 unless T is f64); t_round rounds to T. */
static double round_w(emily_dtype t, double x) { return t == EMILY_F64 ? x : (double)(float)x; }
static double unit_roundoff(emily_dtype t) { return t == EMILY_F64 ? 0x1p-53 : 0x1p-24; }
static double ulp_t(emily_dtype t, double v) {
    int bits = t == EMILY_F64 ? 52 : t == EMILY_F32 ? 23 : t == EMILY_F16 ? 10 : 7;
    int e;
    double a = fabs(v);
    /* below the type's normal range an ULP is the subnormal step */
    double tiny = t == EMILY_F16 ? 0x1p-14 : t == EMILY_BF16 || t == EMILY_F32 ? 0x1p-126 : 0x1p-1022;
    frexp(a > tiny ? a : tiny, &e);
    return ldexp(1.0, e - 1 - bits);
}

typedef struct problem {
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    emily_dtype t;
    double scale;
    bool causal;
    const emily_tensor *mask; /* as given to the op (any broadcastable shape) */
    const emily_tensor *sinks;
} problem;

/* The mask's element (b, h, i, j) read with Nx's broadcasting: mv holds
 * the mask's values, of rank mr and shape ms. */
static double mask_at(const double *mv, int mr, const int64_t *ms, int64_t b, int64_t h, int64_t i, int64_t j) {
    int64_t idx[4] = {b, h, i, j}, off = 0;
    for (int d = 0; d < mr; d++) {
        int64_t n = ms[d], k = idx[4 - mr + d];
        off = off * n + (n == 1 ? 0 : k);
    }
    return mv[off];
}

/* The expression (want) and a bound on the engine's distance from it
 * (tol), both {B, Hq, Sq, Dv}. */
static void reference(const problem *p, const double *q, const double *k, const double *v, const double *mv,
                      const double *sv, double *want, double *tol) {
    emily_dtype t = p->t;
    double u = unit_roundoff(t), s = round_w(t, p->scale);
    bool half = t == EMILY_F16 || t == EMILY_BF16;
    int mr = p->mask ? emily_tensor_rank(p->mask) : 0;
    const int64_t *ms = p->mask ? emily_tensor_shape(p->mask) : NULL;
    bool boolean = p->mask && emily_tensor_dtype(p->mask) == EMILY_U8;
    double *l = malloc((size_t)(p->Skv + 1) * sizeof *l), *pr = malloc((size_t)(p->Skv + 1) * sizeof *pr);
    if (!l || !pr) {
        harness_failures++;
        free(l), free(pr);
        return;
    }
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++) {
            int64_t hk = h / (p->Hq / p->Hkv);
            for (int64_t i = 0; i < p->Sq; i++) {
                const double *qi = q + ((b * p->Hq + h) * p->Sq + i) * p->D;
                double m = -INFINITY, worst = 0; /* worst: max_j sum_d |q k| */
                for (int64_t j = 0; j < p->Skv; j++) {
                    const double *kj = k + ((b * p->Hkv + hk) * p->Skv + j) * p->D;
                    double acc = 0, mag = 0;
                    for (int64_t d = 0; d < p->D; d++) acc += qi[d] * kj[d], mag += fabs(qi[d] * kj[d]);
                    worst = mag > worst ? mag : worst;
                    double a = round_w(t, round_w(t, acc) * s);
                    if (p->mask && !boolean) a = round_w(t, a + round_w(t, mask_at(mv, mr, ms, b, h, i, j)));
                    bool keep = !p->causal || j <= i + p->Skv - p->Sq;
                    if (boolean && mask_at(mv, mr, ms, b, h, i, j) == 0) keep = false;
                    l[j] = keep ? a : -INFINITY;
                    if (l[j] > m || l[j] != l[j]) m = m != m ? m : l[j];
                }
                double sink = p->sinks ? round_w(t, sv[h]) : -INFINITY;
                if (p->sinks && (sink > m || sink != sink)) m = m != m ? m : sink;
                double mp = m == -INFINITY ? 0 : m, z = 0;
                for (int64_t j = 0; j < p->Skv; j++) {
                    pr[j] = round_w(t, exp(round_w(t, l[j] - mp)));
                    z += pr[j];
                }
                if (p->sinks) z += round_w(t, exp(round_w(t, sink - mp)));
                z = round_w(t, z);
                for (int64_t j = 0; j < p->Skv; j++) pr[j] = z == 0 ? 0 : t_round(t, round_w(t, pr[j] / z));
                /* the relative error of each probability (see the top) */
                double rel = 4 * (double)p->D * u * fabs(s) * worst + 8 * u;
                double *o = want + ((b * p->Hq + h) * p->Sq + i) * p->Dv;
                double *ot = tol + ((b * p->Hq + h) * p->Sq + i) * p->Dv;
                for (int64_t d = 0; d < p->Dv; d++) {
                    double acc = 0, err = 0, mag = 0;
                    for (int64_t j = 0; j < p->Skv; j++) {
                        double vj = v[((b * p->Hkv + hk) * p->Skv + j) * p->Dv + d];
                        if (pr[j] == 0) continue; /* masked: the kernels may skip it */
                        acc += pr[j] * vj;
                        mag += fabs(pr[j] * vj);
                        err += (rel * pr[j] + (half ? ulp_t(t, pr[j]) : 0)) * fabs(vj);
                    }
                    o[d] = t_round(t, round_w(t, acc));
                    err += (double)p->Skv * u * mag;
                    ot[d] = err + ulp_t(t, fabs(o[d]) + err);
                }
            }
        }
    free(l), free(pr);
}

/* Runs emily_sdpa on the problem's tensors and checks it against the
 * reference; returns the elements that differ in their bits (-1 on
 * failure). */
static int64_t check_problem(const char *what, const problem *p, emily_tensor *q, emily_tensor *k, emily_tensor *v) {
    emily_sdpa_options o = {.scale = p->scale, .causal = p->causal, .mask = p->mask, .sinks = p->sinks};
    emily_tensor *out = NULL;
    CHECK_OK(emily_sdpa(q, k, v, &o, &out));
    int64_t oshape[4] = {p->B, p->Hq, p->Sq, p->Dv}, n = count_of(4, oshape), differ = 0;
    if (!out || emily_tensor_dtype(out) != p->t || !t_shape_is(out, 4, oshape)) {
        fprintf(stderr, "  %s: no output of the right type and shape\n", what);
        harness_failures++;
        emily_tensor_release(out);
        return -1;
    }
    double *qv = values(q), *kv = values(k), *vv = values(v), *mv = values(p->mask), *sv = values(p->sinks),
           *got = values(out);
    double *want = malloc((size_t)(n ? n : 1) * sizeof *want), *tol = malloc((size_t)(n ? n : 1) * sizeof *tol);
    if (qv && kv && vv && got && want && tol && (!p->mask || mv) && (!p->sinks || sv)) {
        reference(p, qv, kv, vv, mv, sv, want, tol);
        int shown = 0;
        for (int64_t e = 0; e < n; e++) {
            double a = got[e], b = want[e];
            if (a == b || (a != a && b != b)) continue;
            differ++;
            if (!(fabs(a - b) <= tol[e]) && shown++ < 5) {
                fprintf(stderr, "  %s (%s): element %lld: engine %.9g, reference %.9g (bound %.3g)\n", what,
                        emily_dtype_name(p->t), (long long)e, a, b, tol[e]);
                harness_failures++;
            }
        }
    } else {
        harness_failures++;
    }
    free(qv), free(kv), free(vv), free(mv), free(sv), free(got), free(want), free(tol);
    emily_tensor_release(out);
    return differ;
}

/* A random problem: q, k, v in [-1, 1) (scaled so that logits spread
 * over a few units), optional mask of mask_shape (rank mr; kind 0 none,
 * 1 additive, 2 boolean) and sinks. */
static int64_t run_spec(const char *label, const sdpa_spec *sp, emily_dtype t, uint64_t seed) {
    uint64_t st = seed;
    int64_t qs[4], ks[4], vs[4];
    sdpa_spec_shapes(sp, qs, ks, vs);
    emily_tensor *q = t_uniform(&st, t, 4, qs, -1, 2), *k = t_uniform(&st, t, 4, ks, -1, 2),
                 *v = t_uniform(&st, t, 4, vs, -1, 2), *mask = NULL, *sinks = NULL;
    if (sp->mask_kind == 1) mask = t_uniform(&st, EMILY_F32, sp->mr, sp->mshape, -2, 2);
    if (sp->mask_kind == 2) mask = bool_mask(&st, sp->mr, sp->mshape, 6);
    if (sp->sinks) sinks = t_uniform(&st, EMILY_F32, 1, &sp->Hq, -1, 3);
    problem p = {
        sp->B,      sp->Hq, sp->Hkv, sp->Sq, sp->Skv, sp->D, sp->Dv, t, 2.0 / sqrt((double)(sp->D > 0 ? sp->D : 1)),
        sp->causal, mask,   sinks};
    char what[200];
    sdpa_spec_name(what, sizeof what, label, sp);
    int64_t d = check_problem(what, &p, q, k, v);
    RELEASE(q, k, v, mask, sinks);
    return d;
}

static const emily_dtype types[4] = {EMILY_F32, EMILY_F16, EMILY_BF16, EMILY_F64};

/* Every spec of a table in every type: spec s in types[k] seeded
 * seed0 + 4 s + k. */
static void run_specs(const char *label, const sdpa_spec *specs, size_t n, uint64_t seed0) {
    for (size_t s = 0; s < n; s++)
        for (int k = 0; k < 4; k++) run_spec(label, &specs[s], types[k], seed0 + s * 4 + (uint64_t)k);
}

/* ---- the expression ------------------------------------------------------------- */

/* Tiny exact case: one query, two keys, D = 1: the softmax of {0, log 3}
 * is {1/4, 3/4}. */
TEST(two_keys_by_hand) {
    float qv[1] = {1}, kv[2] = {0, (float)log(3.0)}, vv[2] = {4, 8};
    emily_tensor *q = t_from(EMILY_F32, 4, (int64_t[]){1, 1, 1, 1}, qv),
                 *k = t_from(EMILY_F32, 4, (int64_t[]){1, 1, 2, 1}, kv),
                 *v = t_from(EMILY_F32, 4, (int64_t[]){1, 1, 2, 1}, vv), *o = NULL;
    emily_sdpa_options opt = {.scale = 1.0};
    CHECK_OK(emily_sdpa(q, k, v, &opt, &o));
    CHECK(o && fabs(t_get(o, 0) - 7.0) < 1e-5);
    RELEASE(q, k, v, o);
}

TEST(types_and_sizes) {
    static const sdpa_spec specs[] = {
        {1, 1, 1, 1, 1, 64, 64, false, 0, 0, {0}, false},      {2, 4, 4, 7, 7, 64, 64, false, 0, 0, {0}, false},
        {1, 2, 2, 129, 129, 80, 80, false, 0, 0, {0}, false},  {1, 2, 1, 7, 129, 128, 128, false, 0, 0, {0}, false},
        {2, 3, 3, 1, 33, 16, 24, false, 0, 0, {0}, false},     /* decode, Dv != D */
        {1, 1, 1, 65, 3, 5, 7, false, 0, 0, {0}, false},       /* more queries than keys */
        {1, 1, 1, 200, 1500, 64, 64, false, 0, 0, {0}, false}, /* several query blocks */
    };
    run_specs("plain", specs, sizeof specs / sizeof *specs, 100);
}

/* Bottom-right causal alignment: Sq < Skv (a KV cache), Sq = Skv, Sq >
 * Skv (the first rows see nothing: zeros). */
TEST(causal) {
    static const sdpa_spec specs[] = {
        {1, 2, 2, 7, 7, 64, 64, true, 0, 0, {0}, false},  {2, 2, 1, 7, 20, 64, 64, true, 0, 0, {0}, false},
        {1, 1, 1, 1, 20, 32, 32, true, 0, 0, {0}, false}, {1, 2, 2, 129, 129, 128, 128, true, 0, 0, {0}, false},
        {1, 1, 1, 20, 7, 16, 16, true, 0, 0, {0}, false}, {1, 1, 1, 300, 300, 64, 64, true, 0, 0, {0}, false},
    };
    run_specs("causal", specs, sizeof specs / sizeof *specs, 300);
}

/* Grouped-query heads: Hq = 8 over 2 and over 1 kv heads, each query head
 * must read kv head h / 4 (h / 8): a head computed alone, against its kv
 * head sliced out, gives the same bits. */
TEST(grouped_query_heads) {
    static const sdpa_spec specs[] = {
        {2, 8, 2, 9, 17, 64, 64, false, 0, 0, {0}, false},
        {1, 8, 1, 9, 17, 64, 64, true, 0, 0, {0}, false},
    };
    run_specs("gqa", specs, sizeof specs / sizeof *specs, 500);
    uint64_t st = 9;
    emily_tensor *q = t_uniform(&st, EMILY_F32, 4, (int64_t[]){1, 8, 5, 16}, -1, 2),
                 *k = t_uniform(&st, EMILY_F32, 4, (int64_t[]){1, 2, 6, 16}, -1, 2),
                 *v = t_uniform(&st, EMILY_F32, 4, (int64_t[]){1, 2, 6, 16}, -1, 2), *o = NULL;
    emily_sdpa_options opt = {.scale = 0.25};
    CHECK_OK(emily_sdpa(q, k, v, &opt, &o));
    for (int64_t h = 0; o && h < 8; h++) {
        emily_tensor *qh = NULL, *kh = NULL, *vh = NULL, *oh = NULL, *want = NULL, *wc = NULL;
        CHECK_OK(emily_slice(q, (int64_t[]){0, h, 0, 0}, (int64_t[]){1, 1, 5, 16}, NULL, &qh));
        CHECK_OK(emily_slice(k, (int64_t[]){0, h / 4, 0, 0}, (int64_t[]){1, 1, 6, 16}, NULL, &kh));
        CHECK_OK(emily_slice(v, (int64_t[]){0, h / 4, 0, 0}, (int64_t[]){1, 1, 6, 16}, NULL, &vh));
        CHECK_OK(emily_sdpa(qh, kh, vh, &opt, &oh));
        CHECK_OK(emily_slice(o, (int64_t[]){0, h, 0, 0}, (int64_t[]){1, 1, 5, 16}, NULL, &want));
        CHECK_OK(emily_contiguous(want, &wc));
        CHECK(t_same_bytes(oh, wc));
        RELEASE(qh, kh, vh, oh, want, wc);
    }
    RELEASE(q, k, v, o);
}

/* Masks of every broadcast rank, additive and boolean (a quarter of the
 * keys masked, so some short rows are fully masked), with and without
 * causal. */
TEST(masks) {
    static const sdpa_spec specs[] = {
        {2, 2, 2, 5, 9, 32, 32, false, 1, 4, {2, 2, 5, 9}, false},
        {2, 2, 2, 5, 9, 32, 32, false, 1, 2, {5, 9}, false},
        {2, 4, 2, 5, 9, 32, 32, true, 1, 4, {2, 1, 1, 9}, false},
        {2, 2, 2, 5, 9, 32, 32, false, 1, 1, {9}, false},
        {2, 2, 2, 5, 9, 32, 32, false, 1, 0, {0}, false},
        {2, 2, 2, 5, 3, 32, 32, false, 2, 4, {2, 2, 5, 3}, false},
        {2, 4, 1, 6, 9, 32, 32, false, 2, 4, {2, 1, 1, 9}, false},
        {2, 2, 2, 9, 9, 64, 64, true, 2, 3, {2, 9, 9}, false},
        {1, 2, 2, 70, 130, 64, 64, true, 2, 4, {1, 1, 70, 130}, false},
    };
    run_specs("mask", specs, sizeof specs / sizeof *specs, 700);
}

TEST(sinks) {
    static const sdpa_spec specs[] = {
        {2, 4, 2, 5, 9, 32, 32, false, 0, 0, {0}, true},
        {1, 4, 4, 9, 9, 64, 64, true, 0, 0, {0}, true},
        {2, 2, 2, 5, 3, 32, 32, false, 2, 4, {2, 2, 5, 3}, true},
        {1, 2, 2, 12, 5, 16, 16, true, 1, 2, {12, 5}, true},
    };
    run_specs("sinks", specs, sizeof specs / sizeof *specs, 900);
}

/* Fully masked rows give 0, whatever v holds (an infinity included); a
 * sink does not change that. */
TEST(fully_masked_rows_are_zero) {
    /* row 0 fully masked; row 1 keeps key 0, whose v holds an infinity */
    float kv[6] = {1, 2, 3, 4, 5, 6}, vv[6] = {INFINITY, 1, 2, 2, 3, 4}, qv[4] = {1, 1, 2, 2};
    emily_tensor *q = t_from(EMILY_F32, 4, (int64_t[]){1, 1, 2, 2}, qv),
                 *k = t_from(EMILY_F32, 4, (int64_t[]){1, 1, 3, 2}, kv),
                 *v = t_from(EMILY_F32, 4, (int64_t[]){1, 1, 3, 2}, vv),
                 *m = t_from(EMILY_U8, 2, (int64_t[]){2, 3}, (unsigned char[]){0, 0, 0, 1, 0, 0}),
                 *sink = t_from(EMILY_F32, 1, (int64_t[]){1}, (float[]){0.5f}), *o = NULL, *os = NULL;
    emily_sdpa_options opt = {.scale = 1.0, .mask = m};
    CHECK_OK(emily_sdpa(q, k, v, &opt, &o));
    CHECK(o && t_equals(o, 4, (double[]){0, 0, INFINITY, 1}));
    opt.sinks = sink;
    CHECK_OK(emily_sdpa(q, k, v, &opt, &os));
    /* row 1: the sink shares the weight: p = e^a / (e^a + e^0.5) */
    double a = 2 * 1 + 2 * 2, p = exp(a - a) / (exp(0.0) + exp(0.5 - a));
    CHECK(os && t_get(os, 0) == 0 && t_get(os, 1) == 0);
    CHECK(os && isinf(t_get(os, 2)) && fabs(t_get(os, 3) - p) < 1e-6);
    RELEASE(q, k, v, m, sink, o, os);
}

/* Skv = 0: every row fully masked, zeros; B = 0 or Sq = 0: empty. */
TEST(empty_shapes) {
    emily_tensor *q = NULL, *k = NULL, *v = NULL, *o = NULL, *q0 = NULL, *o0 = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_BF16, 4, (int64_t[]){1, 2, 3, 8}, emily_scalar_float(1), &q));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_BF16, 4, (int64_t[]){1, 1, 0, 8}, &k));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_BF16, 4, (int64_t[]){1, 1, 0, 4}, &v));
    CHECK_OK(emily_sdpa(q, k, v, NULL, &o));
    CHECK(o && t_shape_is(o, 4, (int64_t[]){1, 2, 3, 4}) && emily_tensor_dtype(o) == EMILY_BF16);
    for (int i = 0; o && i < 24; i++) CHECK(t_get(o, i) == 0);
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_BF16, 4, (int64_t[]){0, 2, 3, 8}, &q0));
    emily_tensor *k0 = NULL, *v0 = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_BF16, 4, (int64_t[]){0, 1, 5, 8}, &k0));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_BF16, 4, (int64_t[]){0, 1, 5, 4}, &v0));
    CHECK_OK(emily_sdpa(q0, k0, v0, NULL, &o0));
    CHECK(o0 && t_shape_is(o0, 4, (int64_t[]){0, 2, 3, 4}));
    RELEASE(q, k, v, o, q0, o0, k0, v0);
}

/* A NaN in q makes its row NaN and nothing else; a NaN sink makes its
 * head NaN; a -inf additive mask masks. */
TEST(edge_values) {
    uint64_t st = 33;
    int64_t qs[4] = {1, 2, 3, 8}, ks[4] = {1, 2, 4, 8};
    emily_tensor *q = t_uniform(&st, EMILY_F32, 4, qs, -1, 2), *k = t_uniform(&st, EMILY_F32, 4, ks, -1, 2),
                 *v = t_uniform(&st, EMILY_F32, 4, ks, -1, 2), *qn = NULL, *o = NULL;
    double *qv = values(q);
    if (qv) {
        qv[8 + 3] = NAN; /* head 0, row 1 */
        qn = from_doubles(EMILY_F32, 4, qs, qv);
    }
    emily_sdpa_options opt = {.scale = 0.5};
    CHECK_OK(emily_sdpa(qn, k, v, &opt, &o));
    for (int e = 0; o && e < 48; e++) CHECK(isnan(t_get(o, e)) == (e >= 8 && e < 16));
    emily_tensor *sink = t_from(EMILY_F32, 1, (int64_t[]){2}, (float[]){NAN, 0}), *os = NULL;
    opt.sinks = sink;
    CHECK_OK(emily_sdpa(q, k, v, &opt, &os));
    for (int e = 0; os && e < 48; e++) CHECK(isnan(t_get(os, e)) == (e < 24));
    /* -inf on keys 1..3 of every row: the output is v's key 0 */
    emily_tensor *m = t_from(EMILY_F32, 1, (int64_t[]){4}, (float[]){0, -INFINITY, -INFINITY, -INFINITY}), *om = NULL;
    emily_sdpa_options mo = {.scale = 0.5, .mask = m};
    CHECK_OK(emily_sdpa(q, k, v, &mo, &om));
    double *vv = values(v), *omv = values(om);
    for (int64_t h = 0; vv && omv && h < 2; h++)
        for (int64_t i = 0; i < 3; i++)
            for (int64_t d = 0; d < 8; d++) CHECK(omv[(h * 3 + i) * 8 + d] == vv[h * 32 + d]);
    free(qv), free(vv), free(omv);
    RELEASE(q, k, v, qn, o, sink, os, m, om);
}

/* Non-contiguous inputs give what their contiguous copies give. */
TEST(views_as_inputs) {
    uint64_t st = 41;
    emily_tensor *qt = t_uniform(&st, EMILY_BF16, 4, (int64_t[]){1, 6, 3, 16}, -1, 2), *q = NULL, *qc = NULL;
    CHECK_OK(emily_transpose(qt, (int[]){0, 2, 1, 3}, &q)); /* {1, 3, 6, 16} */
    CHECK_OK(emily_contiguous(q, &qc));
    emily_tensor *k = t_uniform(&st, EMILY_BF16, 4, (int64_t[]){1, 3, 5, 16}, -1, 2),
                 *v0 = t_uniform(&st, EMILY_BF16, 4, (int64_t[]){1, 1, 5, 16}, -1, 2), *v = NULL, *vc = NULL;
    CHECK_OK(emily_broadcast(v0, 4, (int64_t[]){1, 3, 5, 16}, (int[]){0, 1, 2, 3}, &v));
    CHECK_OK(emily_contiguous(v, &vc));
    emily_tensor *o = NULL, *oc = NULL;
    emily_sdpa_options opt = {.scale = 0.25, .causal = true};
    CHECK_OK(emily_sdpa(q, k, v, &opt, &o));
    CHECK_OK(emily_sdpa(qc, k, vc, &opt, &oc));
    CHECK(t_same_bytes(o, oc));
    RELEASE(qt, q, qc, k, v0, v, vc, o, oc);
}

/* q, k and v of dt and shape qs (rank 4), uniform in [-1, 2) from seed
 * (drawn in that order), and their sdpa with opt (which must succeed). */
static emily_tensor *sdpa_of_uniform(uint64_t seed, emily_dtype dt, const int64_t *qs, const emily_sdpa_options *opt,
                                     emily_tensor **q, emily_tensor **k, emily_tensor **v) {
    uint64_t st = seed;
    emily_tensor *o = NULL;
    *q = t_uniform(&st, dt, 4, qs, -1, 2);
    *k = t_uniform(&st, dt, 4, qs, -1, 2);
    *v = t_uniform(&st, dt, 4, qs, -1, 2);
    CHECK_OK(emily_sdpa(*q, *k, *v, opt, &o));
    return o;
}

/* Heads do not depend on the batch around them (the pool's cut): one
 * head of a large threaded call has the bits of that head alone. */
TEST(heads_do_not_depend_on_the_batch) {
    int64_t qs[4] = {4, 8, 100, 64};
    emily_sdpa_options opt = {.scale = 0.125, .causal = true};
    emily_tensor *q, *k, *v, *o = sdpa_of_uniform(55, EMILY_F32, qs, &opt, &q, &k, &v);
    int64_t picks[3][2] = {{0, 0}, {2, 5}, {3, 7}};
    for (int p = 0; o && p < 3; p++) {
        int64_t st4[4] = {picks[p][0], picks[p][1], 0, 0}, len[4] = {1, 1, 100, 64};
        emily_tensor *qh = NULL, *kh = NULL, *vh = NULL, *oh = NULL, *w = NULL, *wc = NULL;
        CHECK_OK(emily_slice(q, st4, len, NULL, &qh));
        CHECK_OK(emily_slice(k, st4, len, NULL, &kh));
        CHECK_OK(emily_slice(v, st4, len, NULL, &vh));
        CHECK_OK(emily_sdpa(qh, kh, vh, &opt, &oh));
        CHECK_OK(emily_slice(o, st4, len, NULL, &w));
        CHECK_OK(emily_contiguous(w, &wc));
        CHECK(t_same_bytes(oh, wc));
        RELEASE(qh, kh, vh, oh, w, wc);
    }
    RELEASE(q, k, v, o);
}

/* ---- bad arguments -------------------------------------------------------------- */

TEST(bad_arguments) {
    uint64_t st = 1;
    int64_t qs[4] = {2, 4, 3, 8}, ks[4] = {2, 2, 5, 8};
    emily_tensor *q = t_uniform(&st, EMILY_F32, 4, qs, -1, 2), *k = t_uniform(&st, EMILY_F32, 4, ks, -1, 2),
                 *v = t_uniform(&st, EMILY_F32, 4, ks, -1, 2), *y = NULL;
    emily_tensor *q3 = t_uniform(&st, EMILY_F32, 3, qs, -1, 2),
                 *kb = t_uniform(&st, EMILY_F32, 4, (int64_t[]){1, 2, 5, 8}, -1, 2),
                 *kd = t_uniform(&st, EMILY_F32, 4, (int64_t[]){2, 2, 5, 4}, -1, 2),
                 *vs = t_uniform(&st, EMILY_F32, 4, (int64_t[]){2, 2, 6, 8}, -1, 2),
                 *vh = t_uniform(&st, EMILY_F32, 4, (int64_t[]){2, 1, 5, 8}, -1, 2),
                 *k3 = t_uniform(&st, EMILY_F32, 4, (int64_t[]){2, 3, 5, 8}, -1, 2),
                 *kbf = t_uniform(&st, EMILY_BF16, 4, ks, -1, 2), *qi = NULL, *qc = NULL;
    CHECK_OK(emily_as_type(q, EMILY_S32, &qi));
    CHECK_OK(emily_as_type(q, EMILY_C64, &qc));
    emily_tensor *mbad = t_uniform(&st, EMILY_F32, 2, (int64_t[]){3, 4}, 0, 1),
                 *m5 = t_uniform(&st, EMILY_F32, 5, (int64_t[]){1, 2, 4, 3, 5}, 0, 1), *mi = NULL,
                 *s3 = t_uniform(&st, EMILY_F32, 1, (int64_t[]){3}, 0, 1), *si = NULL;
    CHECK_OK(emily_as_type(mbad, EMILY_S32, &mi));
    CHECK_OK(emily_as_type(s3, EMILY_S64, &si));
    emily_sdpa_options o = {.scale = 1};
    CHECK_ERR(emily_sdpa(NULL, k, v, &o, &y), EMILY_ERR_ARGUMENT, "sdpa: q is NULL");
    CHECK_ERR(emily_sdpa(q, NULL, v, &o, &y), EMILY_ERR_ARGUMENT, "sdpa: k is NULL");
    CHECK_ERR(emily_sdpa(q, k, NULL, &o, &y), EMILY_ERR_ARGUMENT, "sdpa: v is NULL");
    CHECK_ERR(emily_sdpa(q, k, v, &o, NULL), EMILY_ERR_ARGUMENT, "sdpa: output pointer is NULL");
    CHECK_ERR(emily_sdpa(q3, k, v, &o, &y), EMILY_ERR_SHAPE, "sdpa: q must have rank 4 (B, Hq, Sq, D), got {2, 4, 3}");
    CHECK_ERR(emily_sdpa(q, kb, v, &o, &y), EMILY_ERR_SHAPE, "sdpa: k's batch size B (axis 0, 1) must equal q's (2)");
    CHECK_ERR(emily_sdpa(q, kd, v, &o, &y), EMILY_ERR_SHAPE, "sdpa: k's head size D (axis 3, 4)");
    CHECK_ERR(emily_sdpa(q, k, vs, &o, &y), EMILY_ERR_SHAPE, "sdpa: v's key count Skv (axis 2, 6)");
    CHECK_ERR(emily_sdpa(q, k, vh, &o, &y), EMILY_ERR_SHAPE, "sdpa: v's kv head count Hkv");
    CHECK_ERR(emily_sdpa(q, k3, k3, &o, &y), EMILY_ERR_SHAPE,
              "sdpa: q's head count Hq (4) must be a multiple of k's Hkv (3)");
    CHECK_ERR(emily_sdpa(qi, k, v, &o, &y), EMILY_ERR_TYPE,
              "sdpa: q must be a real float tensor (f16, bf16, f32 or f64), got s32");
    CHECK_ERR(emily_sdpa(qc, k, v, &o, &y), EMILY_ERR_TYPE, "got c64");
    CHECK_ERR(emily_sdpa(q, kbf, v, &o, &y), EMILY_ERR_TYPE, "sdpa: k must have q's type f32, got bf16");
    CHECK_ERR(emily_sdpa(q, k, kbf, &o, &y), EMILY_ERR_TYPE, "sdpa: v must have q's type f32, got bf16");
    o.mask = mbad;
    CHECK_ERR(emily_sdpa(q, k, v, &o, &y), EMILY_ERR_SHAPE,
              "sdpa: mask of shape {3, 4} does not broadcast to {B, Hq, Sq, Skv} = {2, 4, 3, 5}");
    o.mask = m5;
    CHECK_ERR(emily_sdpa(q, k, v, &o, &y), EMILY_ERR_SHAPE, "sdpa: mask of shape {1, 2, 4, 3, 5}");
    o.mask = mi;
    CHECK_ERR(emily_sdpa(q, k, v, &o, &y), EMILY_ERR_TYPE,
              "sdpa: mask must be u8 (a boolean mask) or a real float type (an additive mask), got s32");
    o.mask = NULL, o.sinks = s3;
    CHECK_ERR(emily_sdpa(q, k, v, &o, &y), EMILY_ERR_SHAPE, "sdpa: sinks must have shape {4} (Hq), got {3}");
    o.sinks = si;
    CHECK_ERR(emily_sdpa(q, k, v, &o, &y), EMILY_ERR_TYPE, "sdpa: sinks must be a real float tensor, got s64");
    CHECK(y == NULL);
    RELEASE(q, k, v, q3, kb, kd, vs, vh, k3, kbf, qi, qc, mbad, m5, mi, s3, si);
}

/* ---- dispatcher and graphs ------------------------------------------------------ */

TEST(dispatch_callback) {
    uint64_t st = 77;
    int64_t qs[4] = {1, 4, 3, 16}, ks[4] = {1, 2, 5, 16}, os[4] = {1, 4, 3, 16};
    emily_tensor *q = t_uniform(&st, EMILY_F16, 4, qs, -1, 2), *k = t_uniform(&st, EMILY_F16, 4, ks, -1, 2),
                 *v = t_uniform(&st, EMILY_F16, 4, ks, -1, 2), *m = bool_mask(&st, 2, (int64_t[]){3, 5}, 6),
                 *sk = t_uniform(&st, EMILY_F32, 1, (int64_t[]){4}, 0, 1);
    emily_tensor *want = NULL, *want_default = NULL, *want_sinks = NULL;
    emily_sdpa_options full = {.scale = 0.3, .causal = true, .mask = m, .sinks = sk}, dflt = {.scale = 0.25},
                       only_sinks = {.scale = 0.3, .sinks = sk};
    CHECK_OK(emily_sdpa(q, k, v, &full, &want));
    CHECK_OK(emily_sdpa(q, k, v, &dflt, &want_default));
    CHECK_OK(emily_sdpa(q, k, v, &only_sinks, &want_sinks));
    emily_value out = v_tmpl(EMILY_F16, 4, os), bad_out = v_tmpl(EMILY_F32, 4, os);
    const char *keys[4] = {"scale", "causal", "mask", "sinks"};
    emily_value vals[4] = {v_float(0.3), v_bool(true), v_bool(true), v_bool(true)};
    emily_value args[6] = {v_tensor(q), v_tensor(k), v_tensor(v), v_tensor(m), v_tensor(sk), v_opts(keys, vals, 4)};
    emily_dispatch_result r = {0};
    CHECK_DISPATCH_SAME("sdpa", EMILY_DISPATCH_RUN, &out, args, 6, want);
    /* no options: scale 1/sqrt(16) */
    CHECK_DISPATCH_SAME("sdpa", EMILY_DISPATCH_RUN, &out, args, 3, want_default);
    /* sinks without a mask: the fourth tensor is the sinks */
    const char *skeys[2] = {"scale", "sinks"};
    emily_value svals[2] = {v_float(0.3), v_bool(true)};
    emily_value sargs[5] = {v_tensor(q), v_tensor(k), v_tensor(v), v_tensor(sk), v_opts(skeys, svals, 2)};
    CHECK_DISPATCH_SAME("sdpa", EMILY_DISPATCH_RUN, &out, sargs, 5, want_sinks);
    CHECK_ERR(emily_dispatch("sdpa", EMILY_CPU, &bad_out, args, 6, EMILY_DISPATCH_RUN, &r), EMILY_ERR_INTERNAL,
              "but Nx expects f32");
    CHECK_ERR(emily_dispatch("sdpa", EMILY_CPU, &out, sargs, 4, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "sdpa: expected 3 tensors (q, k, v) before the options, got 4");
    vals[3] = v_bool(false);
    CHECK_ERR(emily_dispatch("sdpa", EMILY_CPU, &out, args, 6, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "sdpa: expected 4 tensors (q, k, v, mask) before the options, got 5");
    vals[3] = v_bool(true), vals[0] = v_atom("big");
    CHECK_ERR(emily_dispatch("sdpa", EMILY_CPU, &out, args, 6, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "sdpa: option :scale must be a number");
    CHECK(r.n == 0);
    CHECK(emily_dispatch_find("sdpa")->cost == EMILY_COST_DIRTY);
    RELEASE(q, k, v, m, sk, want, want_default, want_sinks);
}

TEST(runs_in_a_graph) {
    int64_t qs[4] = {2, 2, 9, 32};
    emily_sdpa_options opt = {.scale = 0.2, .causal = true};
    emily_tensor *q, *k, *v, *want = sdpa_of_uniform(91, EMILY_BF16, qs, &opt, &q, &k, &v);
    emily_graph *gr = NULL;
    int32_t pq, pk, pv, call;
    CHECK_OK(emily_graph_create(&gr));
    CHECK_OK(emily_graph_add_param(gr, EMILY_BF16, 4, qs, &pq));
    CHECK_OK(emily_graph_add_param(gr, EMILY_BF16, 4, qs, &pk));
    CHECK_OK(emily_graph_add_param(gr, EMILY_BF16, 4, qs, &pv));
    emily_value out = v_tmpl(EMILY_BF16, 4, qs);
    const char *keys[2] = {"scale", "causal"};
    emily_value vals[2] = {v_float(0.2), v_bool(true)};
    emily_value a[4] = {{.kind = EMILY_V_REF, .i = pq},
                        {.kind = EMILY_V_REF, .i = pk},
                        {.kind = EMILY_V_REF, .i = pv},
                        v_opts(keys, vals, 2)};
    CHECK_OK(emily_graph_add_call(gr, "sdpa", &out, a, 4, &call));
    CHECK_OK(emily_graph_set_outputs(gr, 1, &call));
    CHECK_OK(emily_graph_compile(gr, EMILY_CPU, NULL));
    emily_tensor *res[1] = {NULL};
    CHECK_OK(emily_graph_run(gr, (emily_tensor *[]){q, k, v}, 3, res, 1));
    CHECK(t_same_bytes(res[0], want));
    emily_graph_free(gr);
    RELEASE(q, k, v, want, res[0]);
}

/* sdpa's shape is checked against Nx's template before the work: a q of
 * 2^20 queries and a v of 2^20 values a head give {1, 1, 2^20, 2^20}. */
TEST(sdpa_checks_the_template_before_the_work) {
    int64_t qs[4] = {1, 1, (int64_t)1 << 20, 1}, ks[4] = {1, 1, 1, 1}, vs[4] = {1, 1, 1, (int64_t)1 << 20},
            two[1] = {2};
    emily_tensor *q = t_zero_view(EMILY_F32, 4, qs), *k = t_zero_view(EMILY_F32, 4, ks),
                 *v = t_zero_view(EMILY_F32, 4, vs);
    emily_value args[3] = {v_tensor(q), v_tensor(k), v_tensor(v)}, tmpl = v_tmpl(EMILY_F32, 1, two);
    CHECK_TEMPLATE_FIRST("sdpa", &tmpl, args, 3, "sdpa: output 0 is f32{1, 1, 1048576, 1048576} but Nx expects f32{2}");
    RELEASE(q, k, v);
}

RUN_TESTS("sdpa", CASE(two_keys_by_hand), CASE(types_and_sizes), CASE(causal), CASE(grouped_query_heads), CASE(masks),
          CASE(sinks), CASE(fully_masked_rows_are_zero), CASE(empty_shapes), CASE(edge_values), CASE(views_as_inputs),
          CASE(heads_do_not_depend_on_the_batch), CASE(bad_arguments), CASE(dispatch_callback), CASE(runs_in_a_graph),
          CASE(sdpa_checks_the_template_before_the_work))
