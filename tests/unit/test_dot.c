/* dot: Nx.dot/6 semantics, every dtype, views, precision modes, errors. */
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"
#include "core/tensor_impl.h"

/* ---- helpers ------------------------------------------------------------ */

static emily_tensor *dot(const emily_tensor *a, int nc, const int *ca, int nb, const int *ba, const emily_tensor *b,
                         const int *cb, const int *bb) {
    emily_tensor *out = NULL;
    emily_status s = emily_dot(a, nc, ca, nb, ba, b, nc, cb, nb, bb, EMILY_DTYPE_AUTO, &out);
    if (s) fprintf(stderr, "  dot failed: %s\n", emily_last_error());
    return out;
}

/* A view of t with its axes permuted (perm[i] = source axis). */
static emily_tensor *permuted(const emily_tensor *t, const int *perm) {
    int64_t shape[8], strides[8];
    for (int i = 0; i < t->rank; i++) {
        shape[i] = t->shape[perm[i]];
        strides[i] = t->strides[perm[i]];
    }
    emily_tensor *v = NULL;
    CHECK_OK(emi_tensor_view(t, t->rank, shape, strides, t->offset, &v));
    return v;
}

/* Deterministic pseudo-random doubles with few significant digits (like
 * the corpus), so f64 sums cancel and expose summation order. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double rnd(void) { return (double)((int64_t)(xorshift64(&rng) % 20001) - 10000) / 1000.0; }

/* Reads element i of any real/complex tensor as double (re, im). */
static void get_c(const emily_tensor *t, int64_t i, double *re, double *im) {
    size_t nb = emily_tensor_nbytes(t);
    unsigned char *buf = malloc(nb ? nb : 1);
    *re = *im = NAN;
    if (buf && !emily_to_binary(t, buf, nb)) {
        if (t->dtype == EMILY_C64) {
            float *f = (float *)buf;
            *re = f[2 * i];
            *im = f[2 * i + 1];
        } else if (t->dtype == EMILY_C128) {
            double *d = (double *)buf;
            *re = d[2 * i];
            *im = d[2 * i + 1];
        } else {
            *re = t_get(t, i);
            *im = 0;
        }
    }
    free(buf);
}

static uint64_t bits_at(const emily_tensor *t, int64_t i) {
    size_t nb = emily_tensor_nbytes(t), es = emily_dtype_size(t->dtype);
    unsigned char *buf = malloc(nb ? nb : 1);
    uint64_t v = 0;
    if (buf && !emily_to_binary(t, buf, nb)) memcpy(&v, buf + (size_t)i * es, es < 8 ? es : 8);
    free(buf);
    return v;
}

/* ---- semantics ---------------------------------------------------------- */

/* The tests that compare with the reference's own bits select HIGHEST
 * (the default, FAST, is held to the accumulation bound instead:
 * fast_real_products_within_f32_error). */
static void highest_on(void) { CHECK_OK(emily_dot_set_thread_precision(EMILY_DOT_PRECISION_HIGHEST, NULL)); }
static void highest_off(void) { CHECK_OK(emily_dot_set_thread_precision(EMILY_DOT_PRECISION_PROCESS, NULL)); }

TEST(matmul_f32_values) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
    emily_tensor *ta = t_from(EMILY_F32, 2, (int64_t[]){2, 3}, a);
    emily_tensor *tb = t_from(EMILY_F32, 2, (int64_t[]){3, 2}, b);
    emily_tensor *c = NULL;
    CHECK_OK(emily_matmul(ta, tb, &c));
    CHECK(c && t_shape_is(c, 2, (int64_t[]){2, 2}) && emily_tensor_dtype(c) == EMILY_F32);
    if (c) { CHECK(t_get(c, 0) == 58 && t_get(c, 1) == 64 && t_get(c, 2) == 139 && t_get(c, 3) == 154); }
    emily_tensor_release(c);
    /* the doctest of Nx.dot/4: contract both axes in swapped order -> 50 */
    float x[6] = {0, 1, 2, 3, 4, 5}, y[6] = {0, 1, 2, 3, 4, 5};
    emily_tensor *tx = t_from(EMILY_F32, 2, (int64_t[]){2, 3}, x);
    emily_tensor *ty = t_from(EMILY_F32, 2, (int64_t[]){3, 2}, y);
    c = dot(tx, 2, (int[]){0, 1}, 0, NULL, ty, (int[]){1, 0}, NULL);
    CHECK(c && emily_tensor_rank(c) == 0 && t_get(c, 0) == 50);
    RELEASE(c, ta, tb, tx, ty);
}

TEST(output_shape_batch_free_free) {
    /* a {2,3,4} b {2,4,5}: batch 0, contract a2 b1 -> {2,3,5};
     * batch axes need not lead: a {3,2,4} with batch axis 1 */
    double a[24], b[40];
    for (int i = 0; i < 24; i++) a[i] = i;
    for (int i = 0; i < 40; i++) b[i] = i % 7;
    emily_tensor *ta = t_from(EMILY_F64, 3, (int64_t[]){2, 3, 4}, a);
    emily_tensor *tb = t_from(EMILY_F64, 3, (int64_t[]){2, 4, 5}, b);
    emily_tensor *c = dot(ta, 1, (int[]){2}, 1, (int[]){0}, tb, (int[]){1}, (int[]){0});
    CHECK(c && t_shape_is(c, 3, (int64_t[]){2, 3, 5}));
    if (c) {
        for (int bi = 0; bi < 2; bi++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 5; j++) {
                    double want = 0;
                    for (int k = 0; k < 4; k++) want += a[bi * 12 + i * 4 + k] * b[bi * 20 + k * 5 + j];
                    CHECK(t_get(c, bi * 15 + i * 5 + j) == want);
                }
    }
    /* the same through a transposed left operand with its batch axis in the middle */
    emily_tensor *tv = permuted(ta, (int[]){1, 0, 2}); /* {3, 2, 4} */
    emily_tensor *c2 = dot(tv, 1, (int[]){2}, 1, (int[]){1}, tb, (int[]){1}, (int[]){0});
    CHECK(c2 && t_shape_is(c2, 3, (int64_t[]){2, 3, 5}));
    for (int i = 0; c && c2 && i < 30; i++) CHECK(t_get(c, i) == t_get(c2, i));
    /* no contraction: an outer product {2,3,4} x {2,4,5} -> {2,3,4,2,4,5} */
    emily_tensor *o = dot(ta, 0, NULL, 0, NULL, tb, NULL, NULL);
    CHECK(o && t_shape_is(o, 6, (int64_t[]){2, 3, 4, 2, 4, 5}));
    if (o) CHECK(t_get(o, 24 * 40 - 1) == a[23] * b[39]);
    RELEASE(o, c, c2, tv, ta, tb);
}

/* The references' step: (sr, si) += a[i] * b[j], each product rounded and
 * added in order (Nx's: rr - ii and ir + ri for complex values, which
 * are (re, im) pairs of doubles). */
static void multiply_add(bool cplx, const double *a, int64_t i, const double *b, int64_t j, double *sr, double *si) {
    if (cplx) {
        double ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * j], bi = b[2 * j + 1];
        double rr = ar * br, ii = ai * bi, ir = ai * br, ri = ar * bi;
        double pre = rr - ii, pim = ir + ri;
        *sr = *sr + pre;
        *si = *si + pim;
    } else {
        double p = a[i] * b[j];
        *sr = *sr + p;
    }
}

/* A tensor of type dt (f32, f64 or c128) of n elements from the doubles d
 * (2n for c128); for f32, d is first rounded to float in place, so that
 * it holds exactly the tensor's values. */
static emily_tensor *from_doubles(emily_dtype dt, int rank, const int64_t *shape, double *d, int64_t n) {
    if (dt != EMILY_F32) return t_from(dt, rank, shape, d);
    float *f = malloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) d[i] = f[i] = (float)d[i];
    emily_tensor *t = t_from(dt, rank, shape, f);
    free(f);
    return t;
}

/* Operand t of rank r as the dot sees it: t itself, or (perm given) its
 * permuted view; its contracting axes c (nc of them) and batch axes b (nb)
 * numbered for that view, in c2 and b2. */
static emily_tensor *operand_view(emily_tensor *t, int r, const int *perm, int nc, const int *c, int *c2, int nb,
                                  const int *b, int *b2) {
    memcpy(c2, c, sizeof(int) * (size_t)nc);
    if (nb) memcpy(b2, b, sizeof(int) * (size_t)nb);
    if (!perm) return t;
    emily_tensor *v = permuted(t, perm);
    int inv[8];
    for (int i = 0; i < r; i++) inv[perm[i]] = i;
    for (int i = 0; i < nc; i++) c2[i] = inv[c[i]];
    for (int i = 0; i < nb; i++) b2[i] = inv[b[i]];
    return v;
}

/* A general dot checked against a straightforward reference that sums in
 * Nx's order (contract axes in the order given, row-major), each product
 * rounded: f64 results must be bit-identical. */
static void check_general(emily_dtype dt, int ra, const int64_t *sa, int rb, const int64_t *sb, int nc, const int *ca,
                          const int *cb, int nb, const int *ba, const int *bb, const int *perm_a, const int *perm_b) {
    highest_on();
    int64_t na = 1, nbn = 1;
    for (int i = 0; i < ra; i++) na *= sa[i];
    for (int i = 0; i < rb; i++) nbn *= sb[i];
    bool cplx = dt == EMILY_C128;
    double *da = malloc(sizeof(double) * (size_t)na * 2), *db = malloc(sizeof(double) * (size_t)nbn * 2);
    for (int64_t i = 0; i < na * (cplx ? 2 : 1); i++) da[i] = rnd();
    for (int64_t i = 0; i < nbn * (cplx ? 2 : 1); i++) db[i] = rnd();
    emily_tensor *ta = from_doubles(dt, ra, sa, da, na), *tb = from_doubles(dt, rb, sb, db, nbn);
    /* optionally feed transposed views of physically permuted data */
    int ca2[8], cb2[8], ba2[8], bb2[8];
    emily_tensor *va = operand_view(ta, ra, perm_a, nc, ca, ca2, nb, ba, ba2);
    emily_tensor *vb = operand_view(tb, rb, perm_b, nc, cb, cb2, nb, bb, bb2);
    emily_tensor *c = dot(va, nc, ca2, nb, ba2, vb, cb2, bb2);
    CHECK(c != NULL);
    if (c) {
        /* reference: walks the views' own shapes and strides */
        const emily_tensor *A = va, *B = vb;
        int rva = A->rank, rvb = B->rank;
        int role_a[8] = {0}, role_b[8] = {0};
        for (int i = 0; i < nc; i++) {
            role_a[ca2[i]] = 1;
            role_b[cb2[i]] = 1;
        }
        for (int i = 0; i < nb; i++) {
            role_a[ba2[i]] = 2;
            role_b[bb2[i]] = 2;
        }
        int fa[8], fb[8], nfa = 0, nfb = 0;
        for (int i = 0; i < rva; i++)
            if (!role_a[i]) fa[nfa++] = i;
        for (int i = 0; i < rvb; i++)
            if (!role_b[i]) fb[nfb++] = i;
        int64_t kk = 1;
        for (int i = 0; i < nc; i++) kk *= A->shape[ca2[i]];
        int64_t total = emily_tensor_size(c);
        int bad = 0;
        /* the result read once (get_c reads the whole tensor per element) */
        size_t cbytes = emily_tensor_nbytes(c);
        unsigned char *cbuf = malloc(cbytes ? cbytes : 1);
        CHECK_OK(emily_to_binary(c, cbuf, cbytes));
        for (int64_t o = 0; o < total; o++) {
            /* decompose o over [batch..., free_a..., free_b...] */
            int64_t idx_a[8] = {0}, idx_b[8] = {0}, rem = o;
            const int64_t *cs = emily_tensor_shape(c);
            int64_t oidx[16];
            for (int d = emily_tensor_rank(c) - 1; d >= 0; d--) {
                oidx[d] = rem % cs[d];
                rem /= cs[d];
            }
            int d = 0;
            for (int i = 0; i < nb; i++, d++) {
                idx_a[ba2[i]] = oidx[d];
                idx_b[bb2[i]] = oidx[d];
            }
            for (int i = 0; i < nfa; i++, d++) idx_a[fa[i]] = oidx[d];
            for (int i = 0; i < nfb; i++, d++) idx_b[fb[i]] = oidx[d];
            double accr = 0, acci = 0;
            for (int64_t k = 0; k < kk; k++) {
                int64_t r2 = k;
                for (int i = nc - 1; i >= 0; i--) {
                    int64_t dim = A->shape[ca2[i]];
                    idx_a[ca2[i]] = r2 % dim;
                    idx_b[cb2[i]] = r2 % dim;
                    r2 /= dim;
                }
                int64_t pa = A->offset, pb = B->offset;
                for (int i = 0; i < rva; i++) pa += idx_a[i] * A->strides[i];
                for (int i = 0; i < rvb; i++) pb += idx_b[i] * B->strides[i];
                multiply_add(cplx, da, pa, db, pb, &accr, &acci);
            }
            double gr, gi = 0;
            if (dt == EMILY_F32) gr = ((const float *)cbuf)[o];
            else if (cplx) {
                gr = ((const double *)cbuf)[2 * o];
                gi = ((const double *)cbuf)[2 * o + 1];
            } else gr = ((const double *)cbuf)[o];
            bool ok;
            if (dt == EMILY_F32) ok = (float)accr == (float)gr;
            else ok = gr == accr && (!cplx || gi == acci);
            if (!ok && bad++ < 3)
                fprintf(stderr, "  %s element %lld: got %.17g%+.17gi want %.17g%+.17gi\n", emily_dtype_name(dt),
                        (long long)o, gr, gi, accr, acci);
        }
        CHECK(bad == 0);
        free(cbuf);
    }
    emily_tensor_release(c);
    if (va != ta) emily_tensor_release(va);
    if (vb != tb) emily_tensor_release(vb);
    emily_tensor_release(ta);
    emily_tensor_release(tb);
    free(da);
    free(db);
    highest_off();
}

TEST(f64_and_c128_match_the_reference_bit_for_bit) {
    /* plain matmul with partial tiles and K above one contraction block */
    check_general(EMILY_F64, 2, (int64_t[]){13, 300}, 2, (int64_t[]){300, 37}, 1, (int[]){1}, (int[]){0}, 0, NULL, NULL,
                  NULL, NULL);
    check_general(EMILY_C128, 2, (int64_t[]){7, 270}, 2, (int64_t[]){270, 11}, 1, (int[]){1}, (int[]){0}, 0, NULL, NULL,
                  NULL, NULL);
    /* two contract axes in swapped order, batch, transposed views */
    check_general(EMILY_F64, 4, (int64_t[]){3, 5, 4, 6}, 4, (int64_t[]){3, 6, 7, 4}, 2, (int[]){2, 3}, (int[]){3, 1}, 1,
                  (int[]){0}, (int[]){0}, (int[]){3, 1, 0, 2}, (int[]){2, 0, 3, 1});
    check_general(EMILY_C128, 3, (int64_t[]){2, 9, 5}, 3, (int64_t[]){2, 5, 3}, 1, (int[]){2}, (int[]){1}, 1,
                  (int[]){0}, (int[]){0}, (int[]){2, 0, 1}, NULL);
    /* f32 rounds the f64 sum once */
    check_general(EMILY_F32, 3, (int64_t[]){4, 6, 50}, 2, (int64_t[]){50, 9}, 1, (int[]){2}, (int[]){0}, 0, NULL, NULL,
                  (int[]){2, 1, 0}, (int[]){1, 0});
    check_general(EMILY_F32, 3, (int64_t[]){3, 5, 20}, 3, (int64_t[]){3, 20, 4}, 1, (int[]){2}, (int[]){1}, 1,
                  (int[]){0}, (int[]){0}, NULL, NULL);
}

TEST(exact_blocks_items_and_threads) {
    /* dot_exact.c: several work items down (m > 512) and across (n > 512),
     * contraction slices of 256 (K = 256, 257, 300), partial tiles at item
     * edges, operands read through strides (transposed views), f32 rounded
     * from the f64 sum, and batches spread over threads */
    check_general(EMILY_F64, 2, (int64_t[]){200, 130}, 2, (int64_t[]){130, 700}, 1, (int[]){1}, (int[]){0}, 0, NULL,
                  NULL, NULL, NULL);
    check_general(EMILY_F64, 2, (int64_t[]){600, 300}, 2, (int64_t[]){300, 40}, 1, (int[]){1}, (int[]){0}, 0, NULL,
                  NULL, NULL, (int[]){1, 0});
    check_general(EMILY_F32, 2, (int64_t[]){530, 257}, 2, (int64_t[]){257, 90}, 1, (int[]){1}, (int[]){0}, 0, NULL,
                  NULL, (int[]){1, 0}, NULL);
    check_general(EMILY_F64, 2, (int64_t[]){100, 256}, 2, (int64_t[]){256, 100}, 1, (int[]){1}, (int[]){0}, 0, NULL,
                  NULL, NULL, NULL);
    check_general(EMILY_F64, 2, (int64_t[]){65, 1}, 2, (int64_t[]){1, 1000}, 1, (int[]){1}, (int[]){0}, 0, NULL, NULL,
                  NULL, NULL);
    check_general(EMILY_F64, 3, (int64_t[]){8, 70, 300}, 3, (int64_t[]){8, 300, 50}, 1, (int[]){2}, (int[]){1}, 1,
                  (int[]){0}, (int[]){0}, NULL, (int[]){0, 2, 1});
    check_general(EMILY_F32, 3, (int64_t[]){40, 33, 64}, 3, (int64_t[]){40, 64, 17}, 1, (int[]){2}, (int[]){1}, 1,
                  (int[]){0}, (int[]){0}, NULL, NULL);
    /* whole 8-row panels of contiguous f32 rows (pack_a's direct loop) */
    check_general(EMILY_F32, 2, (int64_t[]){64, 300}, 2, (int64_t[]){300, 48}, 1, (int[]){1}, (int[]){0}, 0, NULL, NULL,
                  NULL, NULL);
}

TEST(f64_sums_in_order_without_fusing) {
    highest_on();
    /* (1e16 + 1) - 1e16 is 0 in order; any other order gives 1 */
    double a[3] = {1e16, 1, -1e16}, b[3] = {1, 1, 1};
    emily_tensor *ta = t_from(EMILY_F64, 1, (int64_t[]){3}, a);
    emily_tensor *tb = t_from(EMILY_F64, 1, (int64_t[]){3}, b);
    emily_tensor *c = dot(ta, 1, (int[]){0}, 0, NULL, tb, (int[]){0}, NULL);
    CHECK(c && t_get(c, 0) == 0.0);
    emily_tensor_release(c);
    /* x*x - fl(x*x) is 0 when the product is rounded first, 2^-60 fused */
    double x = 1.0 + 0x1p-30, p = x * x;
    double a2[2] = {x, -1}, b2[2] = {x, p};
    emily_tensor *ta2 = t_from(EMILY_F64, 2, (int64_t[]){1, 2}, a2);
    emily_tensor *tb2 = t_from(EMILY_F64, 2, (int64_t[]){2, 1}, b2);
    c = NULL;
    CHECK_OK(emily_matmul(ta2, tb2, &c));
    CHECK(c && t_get(c, 0) == 0.0);
    RELEASE(c, ta, tb, ta2, tb2);
    highest_off();
}

TEST(complex_values_and_mixed_real) {
    double a[4] = {1, 2, 3, -1}, b[4] = {3, 4, 0.5, 2}; /* (1+2i)(3+4i) + (3-i)(0.5+2i) */
    emily_tensor *ta = t_from(EMILY_C128, 1, (int64_t[]){2}, a);
    emily_tensor *tb = t_from(EMILY_C128, 1, (int64_t[]){2}, b);
    emily_tensor *c = dot(ta, 1, (int[]){0}, 0, NULL, tb, (int[]){0}, NULL);
    double re, im;
    if (c) {
        get_c(c, 0, &re, &im);
        CHECK(re == -5 + 3.5 && im == 10 + 5.5);
    }
    emily_tensor_release(c);
    /* f32 x c64 -> c64 */
    float r[2] = {2, -1}, z[4] = {1, 1, 3, -2};
    emily_tensor *tr = t_from(EMILY_F32, 1, (int64_t[]){2}, r);
    emily_tensor *tz = t_from(EMILY_C64, 1, (int64_t[]){2}, z);
    c = dot(tr, 1, (int[]){0}, 0, NULL, tz, (int[]){0}, NULL);
    CHECK(c && emily_tensor_dtype(c) == EMILY_C64);
    if (c) {
        get_c(c, 0, &re, &im);
        CHECK(re == -1 && im == 4);
    }
    RELEASE(c, ta, tb, tr, tz);
}

TEST(integers_wrap_in_the_output_width) {
    uint8_t a[2] = {200, 100}, b[2] = {2, 3}; /* 700 mod 256 = 188 */
    emily_tensor *ta = t_from(EMILY_U8, 1, (int64_t[]){2}, a);
    emily_tensor *tb = t_from(EMILY_U8, 1, (int64_t[]){2}, b);
    emily_tensor *c = dot(ta, 1, (int[]){0}, 0, NULL, tb, (int[]){0}, NULL);
    CHECK(c && emily_tensor_dtype(c) == EMILY_U8 && t_get(c, 0) == 188);
    emily_tensor_release(c);
    /* u8 x s8 -> s16, no wrap: 200*-128 + 100*127 */
    int8_t s[2] = {-128, 127};
    emily_tensor *ts = t_from(EMILY_S8, 1, (int64_t[]){2}, s);
    c = dot(ta, 1, (int[]){0}, 0, NULL, ts, (int[]){0}, NULL);
    CHECK(c && emily_tensor_dtype(c) == EMILY_S16 && t_get(c, 0) == 200 * -128 + 100 * 127);
    emily_tensor_release(c);
    /* s8 wraps: 127*127 + 127*127 = 32258 -> 32258 mod 256 = 2 */
    int8_t q[2] = {127, 127};
    emily_tensor *tq = t_from(EMILY_S8, 1, (int64_t[]){2}, q);
    c = dot(tq, 1, (int[]){0}, 0, NULL, tq, (int[]){0}, NULL);
    CHECK(c && t_get(c, 0) == 2);
    emily_tensor_release(c);
    /* s64 extremes wrap like two's complement */
    int64_t l[2] = {INT64_MAX, INT64_MIN}, m[2] = {2, -1};
    emily_tensor *tl = t_from(EMILY_S64, 1, (int64_t[]){2}, l);
    emily_tensor *tm = t_from(EMILY_S64, 1, (int64_t[]){2}, m);
    c = dot(tl, 1, (int[]){0}, 0, NULL, tm, (int[]){0}, NULL);
    /* INT64_MAX*2 = -2 (wrapped); INT64_MIN*-1 = INT64_MIN; sum = INT64_MAX - 1 */
    CHECK(c && bits_at(c, 0) == (uint64_t)(INT64_MAX - 1));
    emily_tensor_release(c);
    /* u64 above INT64_MAX */
    uint64_t u[1] = {UINT64_MAX}, v[1] = {3};
    emily_tensor *tu = t_from(EMILY_U64, 1, (int64_t[]){1}, u);
    emily_tensor *tv = t_from(EMILY_U64, 1, (int64_t[]){1}, v);
    c = dot(tu, 1, (int[]){0}, 0, NULL, tv, (int[]){0}, NULL);
    CHECK(c && bits_at(c, 0) == UINT64_MAX - 2);
    emily_tensor_release(c);
    /* a bigger integer matmul against a plain loop */
    int32_t ia[6 * 70], ib[70 * 5];
    for (int i = 0; i < 6 * 70; i++) ia[i] = (int32_t)(rnd() * 100000);
    for (int i = 0; i < 70 * 5; i++) ib[i] = (int32_t)(rnd() * 100000);
    emily_tensor *tia = t_from(EMILY_S32, 2, (int64_t[]){6, 70}, ia);
    emily_tensor *tib = t_from(EMILY_S32, 2, (int64_t[]){70, 5}, ib);
    emily_tensor *vib = permuted(tib, (int[]){1, 0}); /* {5, 70}: contract axis 1 */
    c = dot(tia, 1, (int[]){1}, 0, NULL, vib, (int[]){1}, NULL);
    CHECK(c != NULL);
    for (int i = 0; c && i < 6; i++)
        for (int j = 0; j < 5; j++) {
            uint32_t acc = 0;
            for (int k = 0; k < 70; k++) acc += (uint32_t)ia[i * 70 + k] * (uint32_t)ib[k * 5 + j];
            CHECK(bits_at(c, i * 5 + j) == (uint64_t)acc);
        }
    RELEASE(c, vib, tia, tib, ta, tb, ts, tq, tl, tm, tu, tv);
}

TEST(integer_operands_of_float_dots_are_exact) {
    highest_on();
    /* 16777217*3 - 50331648 = 3 when the s32 is read exactly (Nx); a
     * first conversion to f32 would give 0 */
    int32_t a[2] = {16777217, 1};
    float b[2] = {3.0f, -50331648.0f};
    emily_tensor *ta = t_from(EMILY_S32, 1, (int64_t[]){2}, a);
    emily_tensor *tb = t_from(EMILY_F32, 1, (int64_t[]){2}, b);
    emily_tensor *c = dot(ta, 1, (int[]){0}, 0, NULL, tb, (int[]){0}, NULL);
    CHECK(c && emily_tensor_dtype(c) == EMILY_F32 && t_get(c, 0) == 3.0);
    RELEASE(c, ta, tb);
    highest_off();
}

TEST(half_types_round_like_nx) {
    /* bf16: 1 + 2^-7 + 2^-8 truncates to 0x3f81 (round-to-nearest-even
     * would give 0x3f82) */
    uint16_t a[3] = {0x3f80, 0x3c00, 0x3b80}, one[3] = {0x3f80, 0x3f80, 0x3f80};
    emily_tensor *ta = t_from(EMILY_BF16, 1, (int64_t[]){3}, a);
    emily_tensor *tb = t_from(EMILY_BF16, 1, (int64_t[]){3}, one);
    emily_tensor *c = dot(ta, 1, (int[]){0}, 0, NULL, tb, (int[]){0}, NULL);
    CHECK(c && emily_tensor_dtype(c) == EMILY_BF16 && bits_at(c, 0) == 0x3f81);
    emily_tensor_release(c);
    /* f16: 1 + 2^-11 ties to even (1.0); 1 + 2^-11 + 2^-12 rounds up */
    uint16_t h[3] = {0x3c00, 0x1000, 0x0c00}, hone[3] = {0x3c00, 0x3c00, 0x3c00};
    emily_tensor *th = t_from(EMILY_F16, 1, (int64_t[]){2}, h);
    emily_tensor *thone = t_from(EMILY_F16, 1, (int64_t[]){2}, hone);
    c = dot(th, 1, (int[]){0}, 0, NULL, thone, (int[]){0}, NULL);
    CHECK(c && emily_tensor_dtype(c) == EMILY_F16 && bits_at(c, 0) == 0x3c00);
    emily_tensor_release(c);
    emily_tensor *th3 = t_from(EMILY_F16, 1, (int64_t[]){3}, h);
    emily_tensor *thone3 = t_from(EMILY_F16, 1, (int64_t[]){3}, hone);
    c = dot(th3, 1, (int[]){0}, 0, NULL, thone3, (int[]){0}, NULL);
    CHECK(c && bits_at(c, 0) == 0x3c01);
    RELEASE(c, ta, tb, th, thone, th3, thone3);
}

TEST(edge_values_propagate) {
    double a[2] = {INFINITY, 1}, b[2] = {1, NAN}, z[2] = {0, 1};
    emily_tensor *ta = t_from(EMILY_F64, 1, (int64_t[]){2}, a);
    emily_tensor *tb = t_from(EMILY_F64, 1, (int64_t[]){2}, b);
    emily_tensor *tz = t_from(EMILY_F64, 1, (int64_t[]){2}, z);
    emily_tensor *c = dot(ta, 1, (int[]){0}, 0, NULL, tb, (int[]){0}, NULL);
    CHECK(c && isnan(t_get(c, 0)));
    emily_tensor_release(c);
    c = dot(ta, 1, (int[]){0}, 0, NULL, tz, (int[]){0}, NULL); /* inf*0 */
    CHECK(c && isnan(t_get(c, 0)));
    emily_tensor_release(c);
    float fa[2] = {INFINITY, -0.0f}, fb[2] = {2, 1};
    emily_tensor *tfa = t_from(EMILY_F32, 1, (int64_t[]){2}, fa);
    emily_tensor *tfb = t_from(EMILY_F32, 1, (int64_t[]){2}, fb);
    c = dot(tfa, 1, (int[]){0}, 0, NULL, tfb, (int[]){0}, NULL);
    CHECK(c && t_get(c, 0) == INFINITY);
    RELEASE(c, ta, tb, tz, tfa, tfb);
}

TEST(zero_size_and_rank0) {
    /* K = 0: zeros of the output type */
    emily_tensor *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, (int64_t[]){3, 0}, &a));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_S64, 2, (int64_t[]){0, 2}, &b));
    c = dot(a, 1, (int[]){1}, 0, NULL, b, (int[]){0}, NULL);
    CHECK(c && t_shape_is(c, 2, (int64_t[]){3, 2}) && emily_tensor_dtype(c) == EMILY_F32);
    for (int i = 0; c && i < 6; i++) CHECK(bits_at(c, i) == 0);
    RELEASE(c, a, b);
    /* M = 0: an empty output */
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F64, 2, (int64_t[]){0, 4}, &a));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F64, 2, (int64_t[]){4, 5}, &b));
    c = dot(a, 1, (int[]){1}, 0, NULL, b, (int[]){0}, NULL);
    CHECK(c && t_shape_is(c, 2, (int64_t[]){0, 5}));
    RELEASE(c, a, b);
    /* rank 0 with rank 0 and with a vector (Nx.dot/2 multiplies) */
    int32_t s = 3, v[3] = {1, -2, 5};
    emily_tensor *ts = t_from(EMILY_S32, 0, NULL, &s);
    emily_tensor *tv = t_from(EMILY_S32, 1, (int64_t[]){3}, v);
    CHECK_OK(emily_matmul(ts, tv, &c));
    CHECK(c && t_shape_is(c, 1, (int64_t[]){3}) && t_get(c, 1) == -6);
    emily_tensor_release(c);
    c = dot(ts, 0, NULL, 0, NULL, ts, NULL, NULL);
    CHECK(c && emily_tensor_rank(c) == 0 && t_get(c, 0) == 9);
    emily_tensor_release(c);
    /* vector . vector and matrix . vector via matmul */
    CHECK_OK(emily_matmul(tv, tv, &c));
    CHECK(c && emily_tensor_rank(c) == 0 && t_get(c, 0) == 30);
    RELEASE(c, ts, tv);
}

TEST(broadcast_and_strided_views) {
    /* a broadcast operand (zero strides) and a strided slice-like view */
    double row[4] = {1, 2, 3, 4};
    emily_tensor *t = t_from(EMILY_F64, 1, (int64_t[]){4}, row);
    emily_tensor *bc = NULL; /* {3, 4} with stride 0 on axis 0 */
    CHECK_OK(emi_tensor_view(t, 2, (int64_t[]){3, 4}, (int64_t[]){0, 1}, 0, &bc));
    double m[8 * 2];
    for (int i = 0; i < 16; i++) m[i] = i;
    emily_tensor *tm = t_from(EMILY_F64, 2, (int64_t[]){8, 2}, m);
    emily_tensor *every_other = NULL; /* rows 0,2,4,6: {4, 2}, strides {4, 1} */
    CHECK_OK(emi_tensor_view(tm, 2, (int64_t[]){4, 2}, (int64_t[]){4, 1}, 0, &every_other));
    emily_tensor *c = dot(bc, 1, (int[]){1}, 0, NULL, every_other, (int[]){0}, NULL);
    CHECK(c && t_shape_is(c, 2, (int64_t[]){3, 2}));
    /* col 0: 1*0 + 2*4 + 3*8 + 4*12 = 80; col 1: 1*1+2*5+3*9+4*13 = 90 */
    for (int i = 0; c && i < 3; i++) CHECK(t_get(c, 2 * i) == 80 && t_get(c, 2 * i + 1) == 90);
    emily_tensor_release(c);
    /* a reversed (negative stride) operand */
    emily_tensor *rev = NULL;
    CHECK_OK(emi_tensor_view(t, 1, (int64_t[]){4}, (int64_t[]){-1}, 3, &rev));
    c = dot(rev, 1, (int[]){0}, 0, NULL, t, (int[]){0}, NULL); /* 4*1+3*2+2*3+1*4 */
    CHECK(c && t_get(c, 0) == 20);
    RELEASE(c, rev, every_other, tm, bc, t);
}

TEST(batched_many_small_and_explicit_type) {
    /* 64 batches of 3x3: batch-parallel BLAS path */
    float a[64 * 9], b[64 * 9];
    for (int i = 0; i < 64 * 9; i++) {
        a[i] = (float)(i % 5);
        b[i] = (float)(i % 3) - 1;
    }
    emily_tensor *ta = t_from(EMILY_F32, 3, (int64_t[]){64, 3, 3}, a);
    emily_tensor *tb = t_from(EMILY_F32, 3, (int64_t[]){64, 3, 3}, b);
    emily_tensor *c = dot(ta, 1, (int[]){2}, 1, (int[]){0}, tb, (int[]){1}, (int[]){0});
    CHECK(c && t_shape_is(c, 3, (int64_t[]){64, 3, 3}));
    for (int bi = 0; c && bi < 64; bi += 7)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double want = 0;
                for (int k = 0; k < 3; k++) want += a[bi * 9 + i * 3 + k] * b[bi * 9 + k * 3 + j];
                CHECK(t_get(c, bi * 9 + i * 3 + j) == want);
            }
    emily_tensor_release(c);
    /* an explicit output type (what Nx's template says) */
    c = NULL;
    CHECK_OK(emily_dot(ta, 1, (int[]){2}, 1, (int[]){0}, tb, 1, (int[]){1}, 1, (int[]){0}, EMILY_F64, &c));
    CHECK(c && emily_tensor_dtype(c) == EMILY_F64);
    RELEASE(c, ta, tb);
}

TEST(fast_precision_mode) {
    const char *env = getenv("EMILY_DOT_PRECISION");
    /* FAST is the default; "highest" in the environment selects HIGHEST */
    emily_dot_precision default_precision = env && strcmp(env, "highest") == 0 ? EMILY_DOT_PRECISION_HIGHEST
                                                                               : EMILY_DOT_PRECISION_FAST;
    CHECK(emily_dot_get_precision() == default_precision);
    CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
    CHECK(emily_dot_get_precision() == EMILY_DOT_PRECISION_FAST);
    float a[6] = {1, 2, 3, 4, 5, 6};
    uint16_t h[2] = {0x3c00, 0x4000}; /* f16 1, 2 */
    double z[4] = {1, 2, 3, 4};
    emily_tensor *ta = t_from(EMILY_F32, 2, (int64_t[]){2, 3}, a);
    emily_tensor *th = t_from(EMILY_F16, 1, (int64_t[]){2}, h);
    emily_tensor *tz = t_from(EMILY_C128, 1, (int64_t[]){2}, z);
    emily_tensor *c = dot(ta, 1, (int[]){1}, 0, NULL, ta, (int[]){1}, NULL);
    CHECK(c && t_get(c, 0) == 14 && t_get(c, 1) == 32 && t_get(c, 3) == 77);
    emily_tensor_release(c);
    c = dot(th, 1, (int[]){0}, 0, NULL, th, (int[]){0}, NULL);
    CHECK(c && t_get(c, 0) == 5);
    emily_tensor_release(c);
    c = dot(tz, 1, (int[]){0}, 0, NULL, tz, (int[]){0}, NULL); /* (1+2i)^2 + (3+4i)^2 */
    double re, im;
    if (c) {
        get_c(c, 0, &re, &im);
        CHECK(re == -3 - 7 && im == 4 + 24);
    }
    emily_tensor_release(c);
    CHECK_ERR(emily_dot_set_precision((emily_dot_precision)7), EMILY_ERR_ARGUMENT, "precision");
    CHECK_ERR(emily_dot_set_precision(EMILY_DOT_PRECISION_PROCESS), EMILY_ERR_ARGUMENT, "precision");
    /* a thread override wins over the process value until removed */
    emily_dot_precision prev = EMILY_DOT_PRECISION_FAST;
    CHECK_OK(emily_dot_set_thread_precision(EMILY_DOT_PRECISION_HIGHEST, &prev));
    CHECK(prev == EMILY_DOT_PRECISION_PROCESS);
    CHECK(emily_dot_get_precision() == EMILY_DOT_PRECISION_HIGHEST);
    CHECK_ERR(emily_dot_set_thread_precision((emily_dot_precision)5, NULL), EMILY_ERR_ARGUMENT, "precision");
    CHECK_OK(emily_dot_set_thread_precision(EMILY_DOT_PRECISION_PROCESS, &prev));
    CHECK(prev == EMILY_DOT_PRECISION_HIGHEST);
    CHECK(emily_dot_get_precision() == EMILY_DOT_PRECISION_FAST);
    CHECK_OK(emily_dot_set_precision(default_precision));
    RELEASE(ta, th, tz);
}

/* FAST products of real operands (dot_blocked.c's f32 FMA kernel where
 * the BLAS lacks AVX-512 kernels, else sgemm) stay within the f32 error
 * bound of the reference: |fast - exact| <= (K + 2) 2^-23 sum |a||b|
 * (f16/bf16 outputs: plus half an output ULP). */
/* dt: a's type and the result's; dtb: b's (the FAST bf16-rows path takes
 * an f32 or bf16 a by a bf16 b stored {n, k}). */
static void check_fast_ab(emily_dtype dt, emily_dtype dtb, int64_t nbat, int64_t m, int64_t k, int64_t n, bool trans_a,
                          bool trans_b) {
    int64_t sa[3] = {nbat, m, k}, sb[3] = {nbat, k, n};
    int64_t na = nbat * m * k, nbn = nbat * k * n;
    double *da = malloc(sizeof(double) * (size_t)na), *db = malloc(sizeof(double) * (size_t)nbn);
    for (int64_t i = 0; i < na; i++) da[i] = rnd();
    for (int64_t i = 0; i < nbn; i++) db[i] = rnd();
    emily_tensor *a64 = t_from(EMILY_F64, 3, sa, da), *b64 = t_from(EMILY_F64, 3, sb, db);
    emily_tensor *ta = NULL, *tb = NULL, *aa = NULL, *ab = NULL, *va = NULL;
    CHECK_OK(emily_as_type(a64, dt, &ta));
    CHECK_OK(emily_as_type(b64, dtb, &tb));
    CHECK_OK(emily_unary(EMILY_ABS, ta, &aa));
    CHECK_OK(emily_unary(EMILY_ABS, tb, &ab));
    va = ta;
    if (trans_a && ta) { /* a copy laid out [nbat, k, m], read through a transposed view */
        emily_tensor *t1 = permuted(ta, (int[]){0, 2, 1}), *t2 = NULL;
        CHECK_OK(emily_contiguous(t1, &t2));
        va = permuted(t2, (int[]){0, 2, 1});
        emily_tensor_release(t1);
        emily_tensor_release(t2);
    }
    emily_tensor *vb = tb;
    if (trans_b && tb) { /* b laid out [nbat, n, k] (a weight's {out, in}), read transposed */
        emily_tensor *t1 = permuted(tb, (int[]){0, 2, 1}), *t2 = NULL;
        CHECK_OK(emily_contiguous(t1, &t2));
        vb = permuted(t2, (int[]){0, 2, 1});
        emily_tensor_release(t1);
        emily_tensor_release(t2);
    }
    int ca[1] = {2}, cb[1] = {1}, bt[1] = {0};
    emily_tensor *cf = NULL, *ce = NULL, *cabs = NULL;
    emily_dot_precision before = emily_dot_get_precision();
    CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
    cf = dot(va, 1, ca, 1, bt, vb, cb, bt);
    CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_HIGHEST));
    ce = dot(ta, 1, ca, 1, bt, tb, cb, bt);
    cabs = dot(aa, 1, ca, 1, bt, ab, cb, bt);
    CHECK_OK(emily_dot_set_precision(before));
    if (cf && ce && cabs) {
        CHECK(emily_tensor_dtype(cf) == dt);
        int64_t total = nbat * m * n;
        double *vf = malloc(sizeof(double) * (size_t)total), *ve = malloc(sizeof(double) * (size_t)total);
        double *vs = malloc(sizeof(double) * (size_t)total);
        emily_tensor *x = NULL;
        CHECK_OK(emily_as_type(cf, EMILY_F64, &x));
        CHECK_OK(emily_to_binary(x, vf, sizeof(double) * (size_t)total));
        emily_tensor_release(x);
        CHECK_OK(emily_as_type(ce, EMILY_F64, &x));
        CHECK_OK(emily_to_binary(x, ve, sizeof(double) * (size_t)total));
        emily_tensor_release(x);
        CHECK_OK(emily_as_type(cabs, EMILY_F64, &x));
        CHECK_OK(emily_to_binary(x, vs, sizeof(double) * (size_t)total));
        emily_tensor_release(x);
        double ulp = dt == EMILY_F16 ? 0x1p-11 : dt == EMILY_BF16 ? 0x1p-8 : 0.0;
        int bad = 0;
        for (int64_t i = 0; i < total; i++) {
            double bound = (double)(k + 2) * 0x1p-23 * vs[i] + ulp * 2 * fabs(ve[i]);
            if (!(fabs(vf[i] - ve[i]) <= bound) && bad++ < 3)
                fprintf(stderr, "  fast %s [%lld %lld %lld %lld] element %lld: %.9g vs %.9g\n", emily_dtype_name(dt),
                        (long long)nbat, (long long)m, (long long)k, (long long)n, (long long)i, vf[i], ve[i]);
        }
        CHECK(bad == 0);
        free(vf);
        free(ve);
        free(vs);
    }
    RELEASE(cf, ce, cabs);
    if (va != ta) emily_tensor_release(va);
    if (vb != tb) emily_tensor_release(vb);
    RELEASE(ta, tb, aa, ab, a64, b64);
    free(da);
    free(db);
}

static void check_fast(emily_dtype dt, int64_t nbat, int64_t m, int64_t k, int64_t n, bool trans_a, bool trans_b) {
    check_fast_ab(dt, dt, nbat, m, k, n, trans_a, trans_b);
}

TEST(fast_real_products_within_f32_error) {
    check_fast(EMILY_F32, 1, 1, 1, 1, false, false);
    check_fast(EMILY_F32, 1, 7, 5, 33, false, false);     /* partial tiles */
    check_fast(EMILY_F32, 1, 530, 300, 70, true, false);  /* items down, K past a slice, strided a */
    check_fast(EMILY_F32, 1, 60, 257, 600, false, false); /* items across */
    check_fast(EMILY_F32, 64, 32, 32, 32, false, false);  /* batches on threads */
    check_fast(EMILY_F16, 2, 40, 50, 45, false, false);
    check_fast(EMILY_BF16, 2, 40, 50, 45, true, false);
    check_fast(EMILY_F64, 1, 100, 300, 90, true, false); /* FAST f64 */
    /* one row (BLAS's gemv where the blocked kernel does not take it):
     * b {k, n} and b read as the transpose of {n, k}, a row strided */
    check_fast(EMILY_F32, 1, 1, 576, 1536, false, false);
    check_fast(EMILY_F32, 1, 1, 576, 1536, false, true);
    check_fast(EMILY_F32, 3, 1, 70, 300, true, true);
    check_fast(EMILY_F64, 1, 1, 300, 4100, false, true);
    check_fast(EMILY_F64, 2, 1, 300, 90, true, false);
    /* one to four rows by a bf16 matrix stored {n, k} (a bf16 linear
     * layer): read in place, widened in registers (dot_bf16_rows.c), bf16
     * and f32 rows, K with and without a partial 16, batches, a strided */
    for (int64_t m = 1; m <= 4; m++) check_fast(EMILY_BF16, 1, m, 576, 300, false, true);
    check_fast(EMILY_BF16, 3, 2, 37, 65, true, true);
    check_fast_ab(EMILY_F32, EMILY_BF16, 1, 1, 576, 1536, false, true);
    check_fast_ab(EMILY_F32, EMILY_BF16, 2, 4, 70, 9, true, true);
    check_fast_ab(EMILY_F32, EMILY_BF16, 1, 5, 64, 40, false, true); /* 5 rows: BLAS */
}

/* FAST products through BLAS are cut into row or column blocks run on
 * the engine's pool (c64 takes that path on every CPU): tall, wide and
 * batched shapes agree with HIGHEST within the f32 accumulation bound. */
TEST(fast_blas_blocks_cover_the_product) {
    static const int64_t shapes[4][4] = {{1, 700, 64, 90}, {1, 3, 64, 2000}, {3, 257, 40, 129}, {1, 1, 300, 4100}};
    for (int si = 0; si < 4; si++) {
        int64_t nb = shapes[si][0], m = shapes[si][1], k = shapes[si][2], n = shapes[si][3];
        int64_t na = nb * m * k * 2, nbn = nb * k * n * 2;
        float *da = malloc(sizeof(float) * (size_t)na), *db = malloc(sizeof(float) * (size_t)nbn);
        for (int64_t i = 0; i < na; i++) da[i] = (float)rnd();
        for (int64_t i = 0; i < nbn; i++) db[i] = (float)rnd();
        emily_tensor *ta = t_from(EMILY_C64, 3, (int64_t[]){nb, m, k}, da);
        emily_tensor *tb = t_from(EMILY_C64, 3, (int64_t[]){nb, k, n}, db);
        int ca[1] = {2}, cb[1] = {1}, bt[1] = {0};
        emily_dot_precision before = emily_dot_get_precision();
        CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
        emily_tensor *f = dot(ta, 1, ca, 1, bt, tb, cb, bt);
        CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_HIGHEST));
        emily_tensor *h = dot(ta, 1, ca, 1, bt, tb, cb, bt);
        CHECK_OK(emily_dot_set_precision(before));
        int64_t total = nb * m * n * 2;
        float *vf = malloc(sizeof(float) * (size_t)total), *vh = malloc(sizeof(float) * (size_t)total);
        if (f && h && !emily_to_binary(f, vf, sizeof(float) * (size_t)total) &&
            !emily_to_binary(h, vh, sizeof(float) * (size_t)total)) {
            int bad = 0;
            /* each part of a and b is rnd()'s, |x| <= 10: a part of a
             * complex sum of k products is a real sum of 2k products of at
             * most 100, and f32 accumulation errs by at most (2k + 2) 2^-24
             * of the sum of their magnitudes, at most 200 k. (The bound used
             * to take the parts as at most sqrt(2): too tight for this data,
             * it failed once other tests drew different numbers.) */
            double bound = (double)(2 * k + 2) * 0x1p-24 * 200.0 * (double)k;
            for (int64_t i = 0; i < total; i++)
                if (!(fabs((double)vf[i] - (double)vh[i]) <= bound) && bad++ < 3)
                    fprintf(stderr, "  fast c64 block [%lld %lld %lld %lld] element %lld: %.9g vs %.9g\n",
                            (long long)nb, (long long)m, (long long)k, (long long)n, (long long)i, vf[i], vh[i]);
            CHECK(bad == 0);
        } else {
            CHECK(false);
        }
        free(vf);
        free(vh);
        free(da);
        free(db);
        RELEASE(f, h, ta, tb);
    }
}

/* FAST f32 products of 1 to 4 rows take a matrix-vector path where the
 * CPU has AVX-512: every output is FAST's in-order definition, f32 fused
 * multiply-adds in contraction order from +0.0, bit for bit, for column
 * counts with and without a partial vector (where the path does not
 * apply, the result is only checked against the accumulation bound). */
TEST(fast_few_rows_are_fused_sums_in_order) {
    static const int64_t cases[5][2] = {{576, 1536}, {7, 100}, {300, 16}, {64, 1000}, {1, 33}};
    bool avx512 = false;
#if defined(__x86_64__) && defined(__GNUC__)
    avx512 = __builtin_cpu_supports("avx512f");
#endif
    for (int ci = 0; ci < 5; ci++) {
        int64_t k = cases[ci][0], n = cases[ci][1];
        float *da = malloc(sizeof(float) * (size_t)(4 * k)), *db = malloc(sizeof(float) * (size_t)(k * n));
        float *got = malloc(sizeof(float) * (size_t)(4 * n));
        for (int64_t i = 0; i < 4 * k; i++) da[i] = (float)rnd();
        for (int64_t i = 0; i < k * n; i++) db[i] = (float)rnd();
        emily_tensor *tb = t_from(EMILY_F32, 2, (int64_t[]){k, n}, db);
        emily_dot_precision before = emily_dot_get_precision();
        CHECK_OK(emily_dot_set_precision(EMILY_DOT_PRECISION_FAST));
        for (int64_t m = 1; m <= 4; m++) {
            emily_tensor *ta = t_from(EMILY_F32, 2, (int64_t[]){m, k}, da);
            emily_tensor *c = dot(ta, 1, (int[]){1}, 0, NULL, tb, (int[]){0}, NULL);
            int bad = 0;
            if (c) {
                CHECK_OK(emily_to_binary(c, got, sizeof(float) * (size_t)(m * n)));
                for (int64_t r = 0; r < m; r++)
                    for (int64_t jj = 0; jj < n; jj++) {
                        float acc = 0.0f;
                        double mag = 0;
                        for (int64_t p = 0; p < k; p++) {
                            acc = fmaf(da[r * k + p], db[p * n + jj], acc);
                            mag += fabs((double)da[r * k + p] * db[p * n + jj]);
                        }
                        bool ok = avx512 && n >= 16
                                      ? memcmp(&acc, &got[r * n + jj], sizeof acc) == 0
                                      : fabs((double)acc - got[r * n + jj]) <= 2.0 * (k + 2) * 0x1p-24 * mag;
                        if (!ok && bad++ < 2)
                            fprintf(stderr, "  few-row FAST k=%lld n=%lld m=%lld [%lld,%lld]: %.9g, in order %.9g\n",
                                    (long long)k, (long long)n, (long long)m, (long long)r, (long long)jj,
                                    got[r * n + jj], acc);
                    }
            }
            CHECK(c && bad == 0);
            emily_tensor_release(c);
            emily_tensor_release(ta);
        }
        CHECK_OK(emily_dot_set_precision(before));
        free(got);
        free(da);
        free(db);
        emily_tensor_release(tb);
    }
}

TEST(huge_broadcast_fails_cleanly) {
    /* a contraction of 2^44 broadcast elements: no memory for its copy */
    double one = 1;
    emily_tensor *t = t_from(EMILY_F64, 0, NULL, &one), *a = NULL, *b = NULL, *c = NULL;
    int64_t k = (int64_t)1 << 44;
    CHECK_OK(emi_tensor_view(t, 2, (int64_t[]){2, k}, (int64_t[]){0, 0}, 0, &a));
    CHECK_OK(emi_tensor_view(t, 1, (int64_t[]){k}, (int64_t[]){0}, 0, &b));
    emily_status s = emily_dot(a, 1, (int[]){1}, 0, NULL, b, 1, (int[]){0}, 0, NULL, EMILY_DTYPE_AUTO, &c);
    CHECK(s != EMILY_OK && c == NULL);
    RELEASE(a, b, t);
}

/* ---- errors ------------------------------------------------------------- */

TEST(bad_arguments_fail_cleanly) {
    float a[6] = {0}, b[8] = {0};
    emily_tensor *ta = t_from(EMILY_F32, 2, (int64_t[]){2, 3}, a);
    emily_tensor *tb = t_from(EMILY_F32, 2, (int64_t[]){4, 2}, b);
    emily_tensor *tc = t_from(EMILY_C64, 2, (int64_t[]){2, 2}, b);
    emily_tensor *out = NULL;
    int c1[1] = {1}, c0[1] = {0};
    CHECK_ERR(emily_dot(ta, 1, c1, 0, NULL, tb, 1, c0, 0, NULL, EMILY_DTYPE_AUTO, NULL), EMILY_ERR_ARGUMENT, "output");
    CHECK_ERR(emily_dot(NULL, 1, c1, 0, NULL, tb, 1, c0, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_ARGUMENT,
              "left tensor");
    CHECK_ERR(emily_dot(ta, 1, c1, 0, NULL, NULL, 1, c0, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_ARGUMENT,
              "right tensor");
    CHECK_ERR(emily_dot(ta, 1, NULL, 0, NULL, tb, 1, c0, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_ARGUMENT,
              "NULL axis list");
    CHECK_ERR(emily_dot(ta, -1, c1, 0, NULL, tb, 1, c0, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_ARGUMENT,
              "negative");
    /* 3 vs 4 */
    CHECK_ERR(emily_dot(ta, 1, c1, 0, NULL, tb, 1, c0, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_SHAPE,
              "size 3) does not match axis 0 of the right tensor (size 4)");
    CHECK_ERR(emily_dot(ta, 1, c1, 0, NULL, tb, 0, NULL, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_AXIS,
              "1 contract axes for the left tensor but 0");
    CHECK_ERR(emily_dot(ta, 1, (int[]){2}, 0, NULL, tb, 1, c0, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_AXIS,
              "contract axis 2 of the left tensor is out of range");
    CHECK_ERR(emily_dot(ta, 1, (int[]){-3}, 0, NULL, tb, 1, c0, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_AXIS,
              "out of range");
    CHECK_ERR(emily_dot(ta, 2, (int[]){1, -1}, 0, NULL, tb, 2, (int[]){0, 1}, 0, NULL, EMILY_DTYPE_AUTO, &out),
              EMILY_ERR_AXIS, "more than once");
    CHECK_ERR(emily_dot(ta, 1, c0, 1, c0, tb, 1, c1, 1, c0, EMILY_DTYPE_AUTO, &out), EMILY_ERR_AXIS, "more than once");
    CHECK_ERR(emily_dot(ta, 0, NULL, 1, c0, tb, 0, NULL, 0, NULL, EMILY_DTYPE_AUTO, &out), EMILY_ERR_AXIS,
              "both or neither must be batched");
    CHECK_ERR(emily_dot(ta, 0, NULL, 1, c0, tb, 0, NULL, 1, c0, EMILY_DTYPE_AUTO, &out), EMILY_ERR_SHAPE,
              "batch axis 0 of the left tensor (size 2) does not match");
    CHECK_ERR(
        emily_dot(ta, 2, (int[]){0, 1}, 1, (int[]){0}, tb, 2, (int[]){0, 1}, 1, (int[]){0}, EMILY_DTYPE_AUTO, &out),
        EMILY_ERR_AXIS, "2 contract and 1 batch axes given for shapes {2, 3} and {4, 2}");
    CHECK_ERR(emily_dot(ta, 0, NULL, 0, NULL, tb, 0, NULL, 0, NULL, EMILY_S32, &out), EMILY_ERR_TYPE,
              "cannot compute a s32 dot of f32 and f32");
    CHECK_ERR(emily_dot(ta, 0, NULL, 0, NULL, tc, 0, NULL, 0, NULL, EMILY_F64, &out), EMILY_ERR_TYPE,
              "f64 dot of f32 and c64");
    CHECK_ERR(emily_dot(ta, 0, NULL, 0, NULL, tb, 0, NULL, 0, NULL, (emily_dtype)99, &out), EMILY_ERR_TYPE,
              "invalid output type");
    CHECK_ERR(emily_matmul(ta, NULL, &out), EMILY_ERR_ARGUMENT, "right tensor");
    CHECK_ERR(emily_matmul(ta, tb, &out), EMILY_ERR_SHAPE, "does not match");
    CHECK(out == NULL);
    RELEASE(ta, tb, tc);
}

/* ---- CUDA: the same answers as the CPU ------------------------------------ */

static emily_tensor *rand_tensor(emily_dtype dt, int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    size_t es = emily_dtype_size(dt);
    unsigned char *buf = malloc((size_t)n * es + 1);
    for (int64_t i = 0; i < n; i++) {
        double v = rnd();
        /* the element as its C type, then its es bytes */
        union {
            uint8_t u8;
            int8_t s8;
            int16_t s16;
            uint32_t u32;
            int32_t s32;
            int64_t s64;
            uint64_t u64;
            uint16_t bits16; /* f16, bf16 */
            float f32;
            double f64;
            float c64[2];
            double c128[2];
        } x;
        switch (dt) {
        case EMILY_U8: x.u8 = (uint8_t)(int)(v * 25); break;
        case EMILY_S8: x.s8 = (int8_t)(v * 12); break;
        case EMILY_S16: x.s16 = (int16_t)(v * 3000); break;
        case EMILY_U32: x.u32 = (uint32_t)(int64_t)(v * 400000); break;
        case EMILY_S32: x.s32 = (int32_t)(v * 200000); break;
        case EMILY_S64: x.s64 = (int64_t)(v * 1e15); break;
        case EMILY_U64: x.u64 = (uint64_t)(int64_t)(v * 1e15); break;
        case EMILY_F16: x.bits16 = emily_f64_to_f16(v); break;
        case EMILY_BF16: x.bits16 = emily_f32_to_bf16((float)v); break;
        case EMILY_F32: x.f32 = (float)v; break;
        case EMILY_C64:
            x.c64[0] = (float)v;
            x.c64[1] = (float)rnd();
            break;
        case EMILY_C128:
            x.c128[0] = v;
            x.c128[1] = rnd();
            break;
        default: x.f64 = v; break;
        }
        memcpy(buf + (size_t)i * es, &x, es);
    }
    emily_tensor *t = t_from(dt, rank, shape, buf);
    free(buf);
    return t;
}

/* Largest difference in ULP of the part type between two results
 * (0 = identical bits; integers: 0 or a huge number). */
static int64_t ulp_diff(const emily_tensor *x, const emily_tensor *y) {
    size_t nb = emily_tensor_nbytes(x);
    unsigned char *bx = malloc(nb + 1), *by = malloc(nb + 1);
    int64_t worst = 0;
    if (emily_to_binary(x, bx, nb) || emily_to_binary(y, by, nb)) worst = INT64_MAX;
    emily_dtype dt = x->dtype;
    size_t ps = dt == EMILY_C64 ? 4 : dt == EMILY_C128 ? 8 : emily_dtype_size(dt);
    for (size_t off = 0; worst != INT64_MAX && off < nb; off += ps) {
        uint64_t a = 0, b = 0;
        memcpy(&a, bx + off, ps);
        memcpy(&b, by + off, ps);
        if (a == b) continue;
        if (emily_dtype_is_integer(dt)) {
            worst = INT64_MAX;
            break;
        }
        int w = (int)ps * 8;
        uint64_t sign = 1ull << (w - 1);
        int64_t oa = (a & sign) ? -(int64_t)(a & (sign - 1)) : (int64_t)(a & (sign - 1));
        int64_t ob = (b & sign) ? -(int64_t)(b & (sign - 1)) : (int64_t)(b & (sign - 1));
        int64_t d = oa > ob ? oa - ob : ob - oa;
        if (d > worst) worst = d;
    }
    free(bx);
    free(by);
    return worst;
}

TEST(cuda_matches_cpu) {
    if (emily_device_count(EMILY_DEVICE_CUDA) == 0) return; /* no GPU here */
    emily_device gpu = {EMILY_DEVICE_CUDA, 0};
    static const emily_dtype types[] = {EMILY_U8,  EMILY_S8,   EMILY_S16, EMILY_U32, EMILY_S32, EMILY_S64, EMILY_U64,
                                        EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64, EMILY_C64, EMILY_C128};
    /* (shapes, axes): a matmul with partial tiles, a batched transposed
     * contraction over two axes, a matrix-vector product */
    emily_dot_precision before = emily_dot_get_precision();
    for (int prec = 0; prec < 2; prec++) {
        CHECK_OK(emily_dot_set_precision((emily_dot_precision)prec));
        for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
            emily_dtype dt = types[ti];
            for (int cfg = 0; cfg < 3; cfg++) {
                emily_tensor *a, *b;
                int nc = 1, nb = 0, ca[2] = {1}, cb[2] = {0}, ba[1] = {0}, bb[1] = {0};
                if (cfg == 0) {
                    a = rand_tensor(dt, 2, (int64_t[]){70, 150});
                    b = rand_tensor(dt, 2, (int64_t[]){150, 65});
                } else if (cfg == 1) {
                    a = rand_tensor(dt, 4, (int64_t[]){3, 5, 6, 9});
                    b = rand_tensor(dt, 4, (int64_t[]){3, 9, 7, 5});
                    nc = 2;
                    ca[0] = 3;
                    ca[1] = 1;
                    cb[0] = 1;
                    cb[1] = 3;
                    nb = 1;
                } else {
                    a = rand_tensor(dt, 2, (int64_t[]){33, 17});
                    b = rand_tensor(dt, 1, (int64_t[]){33});
                    ca[0] = 0;
                }
                emily_tensor *ga = NULL, *gb = NULL, *cc = NULL, *gc = NULL, *back = NULL;
                CHECK_OK(emily_to_device(a, gpu, &ga));
                CHECK_OK(emily_to_device(b, gpu, &gb));
                CHECK_OK(emily_dot(a, nc, ca, nb, ba, b, nc, cb, nb, bb, EMILY_DTYPE_AUTO, &cc));
                emily_status s = emily_dot(ga, nc, ca, nb, ba, gb, nc, cb, nb, bb, EMILY_DTYPE_AUTO, &gc);
                if (s) fprintf(stderr, "  cuda dot %s cfg %d: %s\n", emily_dtype_name(dt), cfg, emily_last_error());
                CHECK(s == EMILY_OK);
                if (gc) CHECK_OK(emily_to_device(gc, EMILY_CPU, &back));
                if (cc && back && prec == 1 && !emily_dtype_is_integer(dt)) {
                    /* FAST: orders differ; compare against the result's scale */
                    int64_t n = emily_tensor_size(cc) * (emily_dtype_is_complex(dt) ? 2 : 1);
                    double scale = 0, worst = 0;
                    for (int64_t i = 0; i < emily_tensor_size(cc); i++) {
                        double xr, xi, yr, yi;
                        get_c(cc, i, &xr, &xi);
                        get_c(back, i, &yr, &yi);
                        scale = fmax(scale, fmax(fabs(xr), fabs(xi)));
                        worst = fmax(worst, fmax(fabs(xr - yr), fabs(xi - yi)));
                    }
                    double tol = (dt == EMILY_F16 || dt == EMILY_BF16) ? 2e-2 : 1e-5;
                    if (!(worst <= tol * scale))
                        fprintf(stderr, "  cuda vs cpu %s cfg %d fast: diff %g scale %g (%lld values)\n",
                                emily_dtype_name(dt), cfg, worst, scale, (long long)n);
                    CHECK(worst <= tol * scale);
                } else if (cc && back) {
                    int64_t d = ulp_diff(cc, back);
                    /* exact paths agree bit for bit; f64-accumulated ones
                     * may differ by the last bit; FAST by summation order */
                    bool exact = emily_dtype_is_integer(dt) || (prec == 0 && (dt == EMILY_F64 || dt == EMILY_C128));
                    int64_t allowed = exact ? 0 : 1;
                    if (d > allowed)
                        fprintf(stderr, "  cuda vs cpu %s cfg %d precision %d: %lld ulp\n", emily_dtype_name(dt), cfg,
                                prec, (long long)d);
                    CHECK(d <= allowed);
                }
                RELEASE(a, b, ga, gb, cc, gc, back);
            }
        }
    }
    CHECK_OK(emily_dot_set_precision(before));
    CHECK_OK(emily_synchronize(gpu));
}

/* ---- conv ----------------------------------------------------------------- */

typedef struct conv_case {
    int r;
    int64_t in[5], k[5]; /* standard-order shapes {N, C, ...}, {O, I, ...} */
    int64_t stride[3], lo[3], hi[3], idil[3], kdil[3];
    int64_t fg, bg;
    int layout; /* its row of conv_layouts */
} conv_case;

enum { STANDARD, CHANNELS_LAST };
/* The permutations of a layout ({ip, kp, op}): physical axis ip[j] holds
 * standard axis j of the input, likewise kp[j] of the kernel, op[j] of the
 * output. CHANNELS_LAST: NHWC input and output, HWIO kernel. */
static const int conv_layouts[2][3][5] = {{{0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}, {0, 1, 2, 3, 4}},
                                          {{0, 3, 1, 2}, {3, 2, 0, 1}, {0, 3, 1, 2}}};

/* Checks emily_conv against a direct evaluation of Nx's definition (sum
 * over channels of sums over the window, products of the padded, dilated
 * input with the kernel). f64/c128 must match bit for bit, f32 to the
 * rounding of the same f64 sum. */
static void check_conv(emily_dtype dt, const conv_case *cc) {
    highest_on();
    int r = cc->r, d = r - 2;
    const int *ip = conv_layouts[cc->layout][0], *kp = conv_layouts[cc->layout][1], *op = conv_layouts[cc->layout][2];
    bool cplx = dt == EMILY_C128;
    int w = cplx ? 2 : 1;
    /* physical shapes: physical axis ip[j] holds standard axis j */
    int64_t pin[5], pk[5], nin = 1, nk = 1;
    for (int j = 0; j < r; j++) {
        pin[ip[j]] = cc->in[j];
        pk[kp[j]] = cc->k[j];
    }
    for (int j = 0; j < r; j++) {
        nin *= pin[j];
        nk *= pk[j];
    }
    double *din = malloc(sizeof(double) * (size_t)(nin * w + 1));
    double *dk = malloc(sizeof(double) * (size_t)(nk * w + 1));
    for (int64_t i = 0; i < nin * w; i++) din[i] = rnd();
    for (int64_t i = 0; i < nk * w; i++) dk[i] = rnd();
    emily_tensor *ti = from_doubles(dt, r, pin, din, nin), *tk = from_doubles(dt, r, pk, dk, nk);
    emily_conv_opts o = {cc->stride, cc->lo, cc->hi, cc->idil, cc->kdil, cc->fg, cc->bg, ip, kp, op};
    emily_tensor *out = NULL;
    emily_status s = emily_conv(ti, tk, &o, EMILY_DTYPE_AUTO, &out);
    if (s) fprintf(stderr, "  conv failed: %s\n", emily_last_error());
    CHECK(s == EMILY_OK);
    if (out) {
        int64_t N = cc->in[0], O = cc->k[0], I = cc->k[1];
        int64_t G = cc->fg > 1 ? cc->fg : cc->bg;
        int64_t os[3], stdshape[5], pstr_in[5], pstr_k[5], pstr_o[5];
        for (int i = 0; i < d; i++) {
            int64_t sdim = cc->in[2 + i];
            int64_t padded = sdim + (sdim - 1) * (cc->idil[i] - 1) + cc->lo[i] + cc->hi[i];
            int64_t f = (cc->k[2 + i] - 1) * cc->kdil[i] + 1;
            os[i] = (padded - f) / cc->stride[i] + 1;
        }
        stdshape[0] = N / cc->bg;
        stdshape[1] = O;
        for (int i = 0; i < d; i++) stdshape[2 + i] = os[i];
        int64_t fshape[5];
        for (int j = 0; j < r; j++) fshape[op[j]] = stdshape[j];
        CHECK(t_shape_is(out, r, fshape));
        /* row-major strides of the physical layouts, per standard axis */
        int64_t a = 1, b = 1, c = 1;
        for (int j = r - 1; j >= 0; j--) {
            for (int q = 0; q < r; q++) {
                if (ip[q] == j) pstr_in[q] = a;
                if (kp[q] == j) pstr_k[q] = b;
                if (op[q] == j) pstr_o[q] = c;
            }
            a *= pin[j];
            b *= pk[j];
            c *= fshape[j];
        }
        int64_t total = emily_tensor_size(out);
        int bad = 0;
        int64_t idx[5];
        for (int64_t lin = 0; lin < total; lin++) {
            int64_t rem = lin;
            for (int j = r - 1; j >= 0; j--) {
                idx[j] = rem % stdshape[j];
                rem /= stdshape[j];
            }
            int64_t n = idx[0], oc = idx[1];
            int64_t g = G > 1 ? oc / (O / G) : 0;
            int64_t nb = cc->bg > 1 ? n + g * (N / cc->bg) : n;
            int64_t cbase = cc->fg > 1 ? g * I : 0;
            double accr = 0, acci = 0;
            for (int64_t ch = 0; ch < I; ch++) {
                double sr = 0, si = 0;
                int64_t wn = 1;
                for (int i = 0; i < d; i++) wn *= cc->k[2 + i];
                for (int64_t wi = 0; wi < wn; wi++) {
                    int64_t wpos[3], wr = wi;
                    for (int i = d - 1; i >= 0; i--) {
                        wpos[i] = wr % cc->k[2 + i];
                        wr /= cc->k[2 + i];
                    }
                    int64_t ioff = nb * pstr_in[0] + (cbase + ch) * pstr_in[1];
                    int64_t koff = oc * pstr_k[0] + ch * pstr_k[1];
                    bool zero = false;
                    for (int i = 0; i < d; i++) {
                        int64_t q = idx[2 + i] * cc->stride[i] + wpos[i] * cc->kdil[i] - cc->lo[i];
                        if (q < 0 || q % cc->idil[i] || q / cc->idil[i] >= cc->in[2 + i]) {
                            zero = true;
                            break;
                        }
                        ioff += (q / cc->idil[i]) * pstr_in[2 + i];
                        koff += wpos[i] * pstr_k[2 + i];
                    }
                    if (zero) continue; /* a zero of the padding: adds nothing */
                    multiply_add(cplx, din, ioff, dk, koff, &sr, &si);
                }
                accr = accr + sr;
                acci = acci + si;
            }
            int64_t ooff = 0;
            for (int j = 0; j < r; j++) ooff += idx[j] * pstr_o[j];
            double gr, gi;
            get_c(out, ooff, &gr, &gi);
            bool ok = dt == EMILY_F32 ? (float)accr == (float)gr : (gr == accr && (!cplx || gi == acci));
            if (!ok && bad++ < 3)
                fprintf(stderr, "  conv %s output %lld: got %.17g%+.17gi want %.17g%+.17gi\n", emily_dtype_name(dt),
                        (long long)ooff, gr, gi, accr, acci);
        }
        CHECK(bad == 0);
    }
    RELEASE(out, ti, tk);
    free(din);
    free(dk);
    highest_off();
}

static const conv_case conv_cases[] = {
    /* 1-D, stride 2 */
    {3, {2, 3, 11}, {4, 3, 3}, {2}, {0}, {0}, {1}, {1}, 1, 1, STANDARD},
    /* 2-D with padding, input and kernel dilation */
    {4, {2, 4, 7, 6}, {6, 4, 3, 2}, {1, 1}, {1, 0}, {2, 1}, {2, 1}, {1, 2}, 1, 1, STANDARD},
    /* negative padding crops; strides */
    {4, {1, 3, 9, 8}, {2, 3, 2, 3}, {2, 3}, {-1, 2}, {1, -2}, {1, 1}, {1, 1}, 1, 1, STANDARD},
    /* feature groups */
    {4, {2, 6, 5, 5}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2, 1, STANDARD},
    /* batch groups */
    {4, {4, 3, 5, 4}, {6, 3, 2, 2}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 1, 2, STANDARD},
    /* channels-last input and output (NHWC), HWIO kernel */
    {4, {2, 5, 6, 7}, {4, 5, 3, 2}, {1, 2}, {1, 1}, {1, 0}, {1, 1}, {1, 1}, 1, 1, CHANNELS_LAST},
    /* 3-D */
    {5, {1, 2, 4, 5, 3}, {3, 2, 2, 2, 2}, {1, 2, 1}, {0, 1, 1}, {1, 0, 1}, {1, 1, 2}, {2, 1, 1}, 1, 1, STANDARD},
};

TEST(conv_matches_nx_definition) {
    for (size_t i = 0; i < sizeof conv_cases / sizeof *conv_cases; i++) {
        check_conv(EMILY_F64, &conv_cases[i]);
        check_conv(EMILY_F32, &conv_cases[i]);
        check_conv(EMILY_C128, &conv_cases[i]);
    }
}

TEST(conv_values_and_types) {
    /* [1, 2, 3, 4] conv [1, 1] (valid) = [3, 5, 7]; s32 inputs give f32 */
    int32_t x[4] = {1, 2, 3, 4}, kk[2] = {1, 1};
    emily_tensor *tx = t_from(EMILY_S32, 3, (int64_t[]){1, 1, 4}, x);
    emily_tensor *tkk = t_from(EMILY_S32, 3, (int64_t[]){1, 1, 2}, kk);
    emily_tensor *c = NULL;
    CHECK_OK(emily_conv(tx, tkk, NULL, EMILY_DTYPE_AUTO, &c));
    CHECK(c && emily_tensor_dtype(c) == EMILY_F32 && t_shape_is(c, 3, (int64_t[]){1, 1, 3}));
    if (c) CHECK(t_get(c, 0) == 3 && t_get(c, 1) == 5 && t_get(c, 2) == 7);
    emily_tensor_release(c);
    /* explicit type and f16 rounding: 1 + 2^-11 + 2^-12 -> 0x3c01 */
    uint16_t h[3] = {0x3c00, 0x1000, 0x0c00}, hk[3] = {0x3c00, 0x3c00, 0x3c00};
    emily_tensor *th = t_from(EMILY_F16, 3, (int64_t[]){1, 1, 3}, h);
    emily_tensor *thk = t_from(EMILY_F16, 3, (int64_t[]){1, 1, 3}, hk);
    CHECK_OK(emily_conv(th, thk, NULL, EMILY_DTYPE_AUTO, &c));
    CHECK(c && emily_tensor_dtype(c) == EMILY_F16 && bits_at(c, 0) == 0x3c01);
    emily_tensor_release(c);
    /* zero batch: an empty result */
    emily_tensor *e = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 3, (int64_t[]){0, 1, 4}, &e));
    emily_tensor *fk = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 3, (int64_t[]){2, 1, 2}, &fk));
    CHECK_OK(emily_conv(e, fk, NULL, EMILY_DTYPE_AUTO, &c));
    CHECK(c && t_shape_is(c, 3, (int64_t[]){0, 2, 3}));
    emily_tensor_release(c);
    /* zero channels: zeros */
    emily_tensor *z = NULL, *zk = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F64, 3, (int64_t[]){1, 0, 4}, &z));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F64, 3, (int64_t[]){2, 0, 2}, &zk));
    CHECK_OK(emily_conv(z, zk, NULL, EMILY_DTYPE_AUTO, &c));
    CHECK(c && t_shape_is(c, 3, (int64_t[]){1, 2, 3}));
    for (int i = 0; c && i < 6; i++) CHECK(t_get(c, i) == 0);
    RELEASE(c, z, zk, e, fk, tx, tkk, th, thk);
}

TEST(conv_sums_channels_separately) {
    highest_on();
    /* Nx: (1 + 0) + (1e16 + -1e16) = 1; one running sum would give 0 */
    double x[4] = {1, 0, 1e16, -1e16}, k[4] = {1, 1, 1, 1};
    emily_tensor *tx = t_from(EMILY_F64, 3, (int64_t[]){1, 2, 2}, x);
    emily_tensor *tk = t_from(EMILY_F64, 3, (int64_t[]){1, 2, 2}, k);
    emily_tensor *c = NULL;
    CHECK_OK(emily_conv(tx, tk, NULL, EMILY_DTYPE_AUTO, &c));
    CHECK(c && t_get(c, 0) == 1.0);
    emily_tensor_release(c);
    double zx[8] = {1, 0, 0, 0, 1e16, 0, -1e16, 0}, zk[8] = {1, 0, 1, 0, 1, 0, 1, 0};
    emily_tensor *tzx = t_from(EMILY_C128, 3, (int64_t[]){1, 2, 2}, zx);
    emily_tensor *tzk = t_from(EMILY_C128, 3, (int64_t[]){1, 2, 2}, zk);
    c = NULL;
    CHECK_OK(emily_conv(tzx, tzk, NULL, EMILY_DTYPE_AUTO, &c));
    double re = 0, im = 0;
    if (c) get_c(c, 0, &re, &im);
    CHECK(c && re == 1.0 && im == 0.0);
    RELEASE(c, tx, tk, tzx, tzk);
    highest_off();
}

TEST(conv_bad_arguments) {
    float buf[64] = {0};
    emily_tensor *t = t_from(EMILY_F32, 3, (int64_t[]){2, 4, 5}, buf);
    emily_tensor *k = t_from(EMILY_F32, 3, (int64_t[]){6, 2, 3}, buf);
    emily_tensor *k2 = t_from(EMILY_F32, 2, (int64_t[]){4, 5}, buf);
    emily_tensor *kbig = t_from(EMILY_F32, 3, (int64_t[]){1, 4, 6}, buf);
    emily_tensor *c = NULL;
    CHECK_ERR(emily_conv(t, k, NULL, EMILY_DTYPE_AUTO, NULL), EMILY_ERR_ARGUMENT, "output");
    CHECK_ERR(emily_conv(NULL, k, NULL, EMILY_DTYPE_AUTO, &c), EMILY_ERR_ARGUMENT, "input");
    CHECK_ERR(emily_conv(t, NULL, NULL, EMILY_DTYPE_AUTO, &c), EMILY_ERR_ARGUMENT, "kernel");
    CHECK_ERR(emily_conv(t, k2, NULL, EMILY_DTYPE_AUTO, &c), EMILY_ERR_SHAPE, "rank 3 or more");
    /* 4 input channels vs 2 kernel channels without groups */
    CHECK_ERR(emily_conv(t, k, NULL, EMILY_DTYPE_AUTO, &c), EMILY_ERR_SHAPE, "feature_group_size 1");
    emily_conv_opts o = {0};
    o.feature_group_size = 2;
    CHECK_OK(emily_conv(t, k, &o, EMILY_DTYPE_AUTO, &c));
    emily_tensor_release(c);
    c = NULL;
    o.batch_group_size = 2;
    CHECK_ERR(emily_conv(t, k, &o, EMILY_DTYPE_AUTO, &c), EMILY_ERR_ARGUMENT, "either batch groups");
    o.feature_group_size = 4;
    o.batch_group_size = 0;
    CHECK_ERR(emily_conv(t, k, &o, EMILY_DTYPE_AUTO, &c), EMILY_ERR_SHAPE, "not divisible");
    o.feature_group_size = 1;
    o.batch_group_size = 3;
    CHECK_ERR(emily_conv(t, kbig, &o, EMILY_DTYPE_AUTO, &c), EMILY_ERR_SHAPE, "does not divide");
    emily_conv_opts o2 = {0};
    int64_t zero_stride[1] = {0};
    o2.strides = zero_stride;
    CHECK_ERR(emily_conv(t, kbig, &o2, EMILY_DTYPE_AUTO, &c), EMILY_ERR_ARGUMENT, "strides must be positive");
    o2.strides = NULL;
    int64_t zero_dil[1] = {0};
    o2.kernel_dilation = zero_dil;
    CHECK_ERR(emily_conv(t, kbig, &o2, EMILY_DTYPE_AUTO, &c), EMILY_ERR_ARGUMENT, "dilations must be positive");
    o2.kernel_dilation = NULL;
    /* window 6 on 5 inputs */
    CHECK_ERR(emily_conv(t, kbig, &o2, EMILY_DTYPE_AUTO, &c), EMILY_ERR_SHAPE, "would be empty");
    int bad_perm[3] = {0, 0, 2};
    o2.input_permutation = bad_perm;
    CHECK_ERR(emily_conv(t, k, &o2, EMILY_DTYPE_AUTO, &c), EMILY_ERR_AXIS, "input_permutation [0, 0, 2]");
    o2.input_permutation = NULL;
    o2.feature_group_size = 2;
    CHECK_ERR(emily_conv(t, k, &o2, EMILY_S32, &c), EMILY_ERR_TYPE, "cannot compute a s32 convolution");
    CHECK(c == NULL);
    RELEASE(t, k, k2, kbig);
}

/* At HIGHEST (Nx's answers: f64 accumulation in the reference's order)
 * both devices give the same bits; FAST convs (cuDNN, BLAS orders) are
 * compared within their error bound by test_cuda_conv. */
TEST(cuda_conv_matches_cpu) {
    if (emily_device_count(EMILY_DEVICE_CUDA) == 0) return; /* no GPU here */
    emily_device gpu = {EMILY_DEVICE_CUDA, 0};
    highest_on();
    static const emily_dtype types[] = {EMILY_S32, EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64, EMILY_C64, EMILY_C128};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t ci = 0; ci < sizeof conv_cases / sizeof *conv_cases; ci++) {
            const conv_case *cc = &conv_cases[ci];
            const int *ip = conv_layouts[cc->layout][0], *kp = conv_layouts[cc->layout][1],
                      *op = conv_layouts[cc->layout][2];
            int64_t pin[5], pk[5];
            for (int j = 0; j < cc->r; j++) {
                pin[ip[j]] = cc->in[j];
                pk[kp[j]] = cc->k[j];
            }
            emily_tensor *a = rand_tensor(types[ti], cc->r, pin), *k = rand_tensor(types[ti], cc->r, pk);
            emily_tensor *ga = NULL, *gk = NULL, *c = NULL, *gc = NULL, *back = NULL;
            emily_conv_opts o = {cc->stride, cc->lo, cc->hi, cc->idil, cc->kdil, cc->fg, cc->bg, ip, kp, op};
            CHECK_OK(emily_to_device(a, gpu, &ga));
            CHECK_OK(emily_to_device(k, gpu, &gk));
            CHECK_OK(emily_conv(a, k, &o, EMILY_DTYPE_AUTO, &c));
            emily_status s = emily_conv(ga, gk, &o, EMILY_DTYPE_AUTO, &gc);
            if (s)
                fprintf(stderr, "  cuda conv %s case %zu: %s\n", emily_dtype_name(types[ti]), ci, emily_last_error());
            CHECK(s == EMILY_OK);
            if (gc) CHECK_OK(emily_to_device(gc, EMILY_CPU, &back));
            if (c && back) {
                CHECK(t_shape_is(back, cc->r, emily_tensor_shape(c)));
                int64_t d = ulp_diff(c, back);
                bool exact = types[ti] == EMILY_F64 || types[ti] == EMILY_C128;
                if (d > (exact ? 0 : 1))
                    fprintf(stderr, "  cuda vs cpu conv %s case %zu: %lld ulp\n", emily_dtype_name(types[ti]), ci,
                            (long long)d);
                CHECK(d <= (exact ? 0 : 1));
            }
            RELEASE(a, k, ga, gk, c, gc, back);
        }
    highest_off();
}

/* ---- the Nx callback ---------------------------------------------------- */

TEST(dispatch_dot_callback) {
    int32_t a[6] = {1, 2, 3, 4, 5, 6};
    float b[6] = {1, 0, 0, 1, 1, 1};
    emily_tensor *ta = t_from(EMILY_S32, 2, (int64_t[]){2, 3}, a);
    emily_tensor *tb = t_from(EMILY_F32, 2, (int64_t[]){3, 2}, b);
    emily_value one = v_int(1), zero = v_int(0);
    emily_value args[6] = {v_tensor(ta), v_list(&one, 1),  v_list(NULL, 0),
                           v_tensor(tb), v_list(&zero, 1), v_list(NULL, 0)};
    int64_t oshape[2] = {2, 2};
    emily_value tmpl = {0};
    tmpl.kind = EMILY_V_TEMPLATE;
    tmpl.dtype = EMILY_F32;
    tmpl.rank = 2;
    tmpl.shape = oshape;
    emily_dispatch_result r = {0};
    for (int mode = 0; mode < 2; mode++) {
        CHECK_OK(emily_dispatch("dot", EMILY_CPU, &tmpl, args, 6, (emily_dispatch_mode)mode, &r));
        CHECK(r.n == 1 && t_shape_is(r.tensors[0], 2, oshape) && emily_tensor_dtype(r.tensors[0]) == EMILY_F32);
        if (r.n == 1) CHECK(t_get(r.tensors[0], 0) == 4 && t_get(r.tensors[0], 3) == 11);
        emily_dispatch_result_release(&r);
    }
    /* a wrong arity and a non-tensor argument fail with the callback's name */
    CHECK_ERR(emily_dispatch("dot", EMILY_CPU, &tmpl, args, 5, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT, "dot");
    emily_value bad[6] = {args[0], args[1], args[2], v_int(3), args[4], args[5]};
    CHECK(emily_dispatch("dot", EMILY_CPU, &tmpl, bad, 6, EMILY_DISPATCH_RUN, &r) != EMILY_OK);
    CHECK(r.n == 0);
    emily_tensor_release(ta);
    emily_tensor_release(tb);

    /* precision: per call. 16777217*3 - 50331648 is 3 when the s32 is read
     * exactly (HIGHEST) and 0 when it is first an f32 (FAST), whatever the
     * process setting, which the call leaves as it was. */
    int32_t ia[2] = {16777217, 1};
    float fb[2] = {3.0f, -50331648.0f};
    emily_tensor *pa = t_from(EMILY_S32, 1, (int64_t[]){2}, ia), *pb = t_from(EMILY_F32, 1, (int64_t[]){2}, fb);
    emily_value scalar_tmpl = {0};
    scalar_tmpl.kind = EMILY_V_TEMPLATE;
    scalar_tmpl.dtype = EMILY_F32;
    const char *keys[1] = {"precision"};
    emily_dot_precision before = emily_dot_get_precision();
    static const char *const names[3] = {"highest", "fast", "medium"};
    for (int process = 0; process < 2; process++) {
        CHECK_OK(emily_dot_set_precision((emily_dot_precision)process));
        for (int p = 0; p < 3; p++) {
            emily_value atom = {0}, opts = {0};
            atom.kind = EMILY_V_ATOM;
            atom.str = names[p];
            atom.len = strlen(names[p]);
            opts.kind = EMILY_V_OPTS;
            opts.items = &atom;
            opts.keys = keys;
            opts.n = 1;
            emily_value pargs[7] = {
                v_tensor(pa), v_list(&zero, 1), v_list(NULL, 0), v_tensor(pb), v_list(&zero, 1), v_list(NULL, 0), opts};
            emily_status st = emily_dispatch("dot", EMILY_CPU, &scalar_tmpl, pargs, 7, EMILY_DISPATCH_RUN, &r);
            if (p == 2) CHECK_ERR(st, EMILY_ERR_ARGUMENT, "option :precision must be :highest or :fast");
            else CHECK(st == EMILY_OK && r.n == 1 && t_get(r.tensors[0], 0) == (p == 0 ? 3.0 : 0.0));
            emily_dispatch_result_release(&r);
            CHECK(emily_dot_get_precision() == (emily_dot_precision)process);
        }
    }
    CHECK_OK(emily_dot_set_precision(before));
    emily_tensor_release(pa);
    emily_tensor_release(pb);
}

/* Nx passes feature_group_size / batch_group_size as given, and refuses
 * 0 (its rem(channels, 0) raises) and negative sizes: the conv callback
 * ran 0 as 1. Each fails now with EMILY_ERR_ARGUMENT naming the option;
 * the C API's negative sizes name theirs too. */
TEST(conv_group_sizes_of_zero_are_refused) {
    float d[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    emily_tensor *x = t_from(EMILY_F32, 3, (int64_t[]){1, 2, 4}, d);
    emily_tensor *k = t_from(EMILY_F32, 3, (int64_t[]){2, 2, 2}, d);
    int64_t oshape[3] = {1, 2, 3};
    emily_value tmpl = {0};
    tmpl.kind = EMILY_V_TEMPLATE;
    tmpl.dtype = EMILY_F32;
    tmpl.rank = 3;
    tmpl.shape = oshape;
    static const char *keys[1];
    emily_value val, opts = {0};
    opts.kind = EMILY_V_OPTS;
    opts.items = &val;
    opts.keys = keys;
    opts.n = 1;
    emily_value args[3] = {v_tensor(x), v_tensor(k), opts};
    static const char *const names[2] = {"feature_group_size", "batch_group_size"};
    emily_dispatch_result r = {0};
    for (int which = 0; which < 2; which++) {
        keys[0] = names[which];
        for (int64_t bad = -1; bad <= 0; bad++) {
            val = v_int(bad);
            args[2] = opts;
            for (int mode = 0; mode < 2; mode++) {
                CHECK_ERR(emily_dispatch("conv", EMILY_CPU, &tmpl, args, 3, (emily_dispatch_mode)mode, &r),
                          EMILY_ERR_ARGUMENT, names[which]);
                CHECK(r.n == 0);
                emily_dispatch_result_release(&r);
            }
        }
        val = v_int(1); /* 1 is no groups */
        args[2] = opts;
        CHECK_OK(emily_dispatch("conv", EMILY_CPU, &tmpl, args, 3, EMILY_DISPATCH_RUN, &r));
        emily_dispatch_result_release(&r);
    }
    emily_conv_opts o = {0};
    emily_tensor *c = NULL;
    o.feature_group_size = -2;
    CHECK_ERR(emily_conv(x, k, &o, EMILY_DTYPE_AUTO, &c), EMILY_ERR_ARGUMENT, "feature_group_size");
    o.feature_group_size = 0;
    o.batch_group_size = -1;
    CHECK_ERR(emily_conv(x, k, &o, EMILY_DTYPE_AUTO, &c), EMILY_ERR_ARGUMENT, "batch_group_size");
    emily_tensor_release(x);
    emily_tensor_release(k);
}

/* dot's shape is checked against Nx's template before the work: an
 * outer product of a {2^20, 1} and a {1, 2^20} has 2^40 elements. */
TEST(dot_checks_the_template_before_the_work) {
    int64_t column[2] = {(int64_t)1 << 20, 1}, row[2] = {1, (int64_t)1 << 20}, two[1] = {2};
    emily_tensor *a = t_zero_view(EMILY_F32, 2, column), *b = t_zero_view(EMILY_F32, 2, row);
    emily_value ca = v_int(1), cb = v_int(0), none = v_list(NULL, 0);
    emily_value args[6] = {v_tensor(a), v_list(&ca, 1), none, v_tensor(b), v_list(&cb, 1), none};
    emily_value tmpl = v_tmpl(EMILY_F32, 1, two);
    CHECK_TEMPLATE_FIRST("dot", &tmpl, args, 6, "dot: output 0 is f32{1048576, 1048576} but Nx expects f32{2}");
    RELEASE(a, b);
}

RUN_TESTS("dot", CASE(matmul_f32_values), CASE(output_shape_batch_free_free),
          CASE(f64_and_c128_match_the_reference_bit_for_bit), CASE(exact_blocks_items_and_threads),
          CASE(f64_sums_in_order_without_fusing), CASE(complex_values_and_mixed_real),
          CASE(integers_wrap_in_the_output_width), CASE(integer_operands_of_float_dots_are_exact),
          CASE(half_types_round_like_nx), CASE(edge_values_propagate), CASE(zero_size_and_rank0),
          CASE(broadcast_and_strided_views), CASE(batched_many_small_and_explicit_type), CASE(fast_precision_mode),
          CASE(fast_real_products_within_f32_error), CASE(bad_arguments_fail_cleanly),
          CASE(huge_broadcast_fails_cleanly), CASE(fast_blas_blocks_cover_the_product),
          CASE(fast_few_rows_are_fused_sums_in_order), CASE(dispatch_dot_callback), CASE(conv_matches_nx_definition),
          CASE(conv_values_and_types), CASE(conv_sums_channels_separately), CASE(conv_bad_arguments),
          CASE(conv_group_sizes_of_zero_are_refused), CASE(cuda_matches_cpu), CASE(cuda_conv_matches_cpu),
          CASE(dot_checks_the_template_before_the_work))
