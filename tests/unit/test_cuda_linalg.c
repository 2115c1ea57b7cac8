/* Linear algebra on the CUDA engine (src/cuda/linalg*.cu): every op's
 * default method on cuSOLVER/cuBLAS in the input's own precision,
 * compared with the CPU engine on the same input, plus the properties
 * that define each result, batches (the register kernels of n <= 8, cuBLAS
 * batched, one solver call a matrix), complex types, views, empty shapes,
 * NaN inputs and the errors.
 *
 * Tolerances. The GPU computes in the input's type (f32 for f16/bf16 and
 * integers); the CPU runs Nx's algorithms (lu, cholesky, solve,
 * triangular_solve, determinant) or LAPACK in f64 (qr, svd, eigh). The
 * inputs are built well conditioned (diagonally dominant, or B B^H + n I)
 * wherever a forward comparison is made, so both answers are within a few
 * n u of the exact one; the bound used is 32 n u max|reference| (u the
 * unit roundoff of the output type), far below the O(1) errors of a wrong
 * layout, permutation, sign or order. Vectors of svd and eigh are
 * compared within 32 n u ||A|| / gap (gap: the distance from their value
 * to the nearest other), and their sign convention (largest entry real
 * and positive) is checked exactly. Determinants use Hadamard's bound
 * (properties_exact.c): 16 n^2 u prod ||a_j|| + 16 n u |det|.
 *
 * Without a GPU the GPU cases are listed as skipped, never passed.
 * EMILY_TEST_CUDA_ON_CPU=1 runs them with the "GPU" side on the CPU too
 * (a self-check of this file). */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "triangular_cases.h"
#include "harness.h"
#include "../float_parts.h"
#include "core/engine.h"
#include "core/kernels.h"

static emily_device DEV = {EMILY_DEVICE_CUDA, 0};

typedef struct cz {
    double re, im;
} cz;

static cz cmul(cz a, cz b) { return (cz){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
static double cabs_(cz a) { return hypot(a.re, a.im); }

static uint64_t seed = 12345;
static double urand(void) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(seed >> 11) * 0x1p-53 * 2 - 1;
}

static double unit(emily_dtype t) { return fp_unit_roundoff(emily_type_to_real(emily_type_to_floating(t))); }

enum { RANDOM, DOMINANT, HPD, HERMITIAN };

static int64_t prod(int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* A CPU tensor of type dt and the given shape whose trailing m x n
 * matrices are: RANDOM (entries in [-1, 1]), DOMINANT (random plus
 * min(m, n) on the diagonal, 4 min(m, n) for integers), HPD (B B^H + n I), HERMITIAN ((B + B^H)/2).
 * Integer types get small integers. */
static emily_tensor *make(emily_dtype dt, int rank, const int64_t *shape, int kind) {
    int64_t total = prod(rank, shape), m = rank >= 2 ? shape[rank - 2] : 1, n = shape[rank - 1];
    int64_t per = m * n, batch = per ? total / per : 0, k = m < n ? m : n;
    bool cx = emily_dtype_is_complex(dt), integer = emily_dtype_is_integer(dt);
    cz *v = calloc((size_t)(total + 1), sizeof *v), *bm = calloc((size_t)(per + 1), sizeof *bm);
    for (int64_t b = 0; b < batch; b++) {
        cz *x = v + b * per;
        for (int64_t i = 0; i < per; i++) {
            bm[i].re = integer ? (double)(int)(urand() * 4) : urand();
            bm[i].im = cx ? urand() : 0;
        }
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                cz s = bm[i * n + j];
                if (kind == HPD) {
                    s = (cz){i == j ? (double)n : 0, 0};
                    for (int64_t l = 0; l < n; l++) {
                        cz p = cmul(bm[i * n + l], (cz){bm[j * n + l].re, -bm[j * n + l].im});
                        s.re += p.re;
                        s.im += p.im;
                    }
                } else if (kind == HERMITIAN) {
                    s = (cz){(bm[i * n + j].re + bm[j * n + i].re) / 2, (bm[i * n + j].im - bm[j * n + i].im) / 2};
                } else if (kind == DOMINANT && i == j) {
                    s.re += (double)(integer ? 4 * k : k); /* integers reach 3, not 1 */
                }
                x[i * n + j] = s;
            }
    }
    emily_tensor *w = NULL, *t = NULL;
    if (cx) w = t_from(EMILY_C128, rank, shape, v);
    else {
        double *r = malloc((size_t)(total + 1) * sizeof *r);
        for (int64_t i = 0; i < total; i++) r[i] = v[i].re;
        w = t_from(EMILY_F64, rank, shape, r);
        free(r);
    }
    CHECK_OK(emily_as_type(w, dt, &t));
    emily_tensor_release(w);
    free(v);
    free(bm);
    return t;
}

static emily_tensor *on_dev(const emily_tensor *t) { return t_on(t, DEV); }

/* Every element as complex doubles (any device). */
static cz *host(const emily_tensor *t) {
    emily_tensor *c = NULL;
    int64_t n = emily_tensor_size(t);
    cz *out = calloc((size_t)(n + 1), sizeof *out);
    if (!t || emily_as_type(t, EMILY_C128, &c) || emily_to_binary(c, out, (size_t)n * sizeof *out)) {
        CHECK(!"could not read a tensor back");
        memset(out, 0, (size_t)(n + 1) * sizeof *out);
    }
    emily_tensor_release(c);
    return out;
}

static double max_abs(const cz *x, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, cabs_(x[i]));
    return m;
}

/* |got - want| <= tol everywhere (NaN counts as a failure). */
static bool close_to(const char *what, const cz *got, const cz *want, int64_t n, double tol) {
    for (int64_t i = 0; i < n; i++) {
        double d = cabs_((cz){got[i].re - want[i].re, got[i].im - want[i].im});
        if (!(d <= tol)) {
            fprintf(stderr, "  %s: element %lld: %.9g%+.9gi, want %.9g%+.9gi (|diff| %.3g > %.3g)\n", what,
                    (long long)i, got[i].re, got[i].im, want[i].re, want[i].im, d, tol);
            return false;
        }
    }
    return true;
}

/* Both results have the same type and shape. */
static bool same_spec(const emily_tensor *x, const emily_tensor *y) {
    return x && y && emily_tensor_dtype(x) == emily_tensor_dtype(y) &&
           t_shape_is(x, emily_tensor_rank(y), emily_tensor_shape(y));
}

static bool on_device(const emily_tensor *t) {
    emily_device d = emily_tensor_device(t);
    return d.type == DEV.type && d.index == DEV.index;
}

static const emily_dtype NATIVE[] = {EMILY_F32, EMILY_F64, EMILY_C64, EMILY_C128};
#define NNATIVE 4

/* ---- without a GPU ------------------------------------------------------- */

/* The CUDA table has the native entries and not Nx's algorithms; the
 * CPU's has no native entries (its default stays Nx's bits / LAPACK). */
TEST(cuda_table_has_native_linalg) {
    const emily_engine *c = emi_cpu_engine();
    CHECK(c->linalg && !c->linalg->lu_native && !c->linalg->solve_native && !c->linalg->qr_native);
    const emily_engine *e = emi_cuda_engine();
    if (!e) return; /* a build without the CUDA engine */
    const struct emily_linalg_kernels *k = e->linalg;
    CHECK(k && k->lu_native && k->cholesky_native && k->triangular_solve_native && k->solve_native &&
          k->determinant_native && k->qr_native && k->svd_native && k->eigh_native);
    CHECK(!emi_engine_supports(e, EMI_KERNEL_QR, 0, EMILY_F64));
    CHECK(!emi_engine_supports(e, EMI_KERNEL_LU, 0, EMILY_F64));
}

/* ---- lu ------------------------------------------------------------------ */

/* p a permutation (exact 0/1), l unit lower, u upper, p l u = a within
 * 16 n u (|l| |u| + |a|) (Frobenius norms). */
static void check_lu_props(const char *what, const emily_tensor *a, emily_tensor *p, emily_tensor *l, emily_tensor *u) {
    int rank = emily_tensor_rank(a);
    int64_t n = emily_tensor_shape(a)[rank - 1], nn = n * n, batch = n ? emily_tensor_size(a) / nn : 0;
    cz *A = host(a), *P = host(p), *L = host(l), *U = host(u);
    double eps = unit(emily_tensor_dtype(l));
    bool ok = true;
    for (int64_t b = 0; ok && b < batch; b++) {
        cz *Ab = A + b * nn, *Pb = P + b * nn, *Lb = L + b * nn, *Ub = U + b * nn;
        double fl = 0, fu = 0, fa = 0, worst = 0;
        for (int64_t i = 0; i < n; i++) {
            int ones = 0;
            for (int64_t j = 0; j < n; j++) {
                cz x = Pb[i * n + j];
                ok = ok && x.im == 0 && (x.re == 0 || x.re == 1);
                ones += x.re == 1;
                if (j > i) ok = ok && Lb[i * n + j].re == 0 && Lb[i * n + j].im == 0;
                if (j == i) ok = ok && Lb[i * n + j].re == 1 && Lb[i * n + j].im == 0;
                if (j < i) ok = ok && Ub[i * n + j].re == 0 && Ub[i * n + j].im == 0;
                fl += pow(cabs_(Lb[i * n + j]), 2);
                fu += pow(cabs_(Ub[i * n + j]), 2);
                fa += pow(cabs_(Ab[i * n + j]), 2);
            }
            ok = ok && ones == 1;
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                cz s = {0, 0};
                for (int64_t r = 0; r < n; r++) {
                    if (Pb[i * n + r].re != 1) continue;
                    for (int64_t q = 0; q < n; q++) {
                        cz t = cmul(Lb[r * n + q], Ub[q * n + j]);
                        s.re += t.re;
                        s.im += t.im;
                    }
                }
                worst = fmax(worst, cabs_((cz){s.re - Ab[i * n + j].re, s.im - Ab[i * n + j].im}));
            }
        double tol = 16.0 * (double)n * eps * (sqrt(fl) * sqrt(fu) + sqrt(fa));
        if (!(worst <= tol)) {
            fprintf(stderr, "  %s: matrix %lld: |p l u - a| = %.3g > %.3g\n", what, (long long)b, worst, tol);
            ok = false;
        }
    }
    if (!ok) fprintf(stderr, "  %s: lu structure or reconstruction wrong\n", what);
    CHECK(ok);
    free(A), free(P), free(L), free(U);
}

TEST(gpu_lu_properties) {
    static const struct {
        int rank;
        int64_t shape[3];
    } cases[] = {{2, {3, 3}},       {3, {1000, 4, 4}}, {3, {7, 8, 8}}, {3, {3, 9, 9}},
                 {3, {16, 24, 24}}, {2, {600, 600}},   {2, {1, 1}}};
    for (int d = 0; d < NNATIVE + 2; d++) {
        emily_dtype dt = d < NNATIVE ? NATIVE[d] : d == NNATIVE ? EMILY_S32 : EMILY_F16;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            if (d >= NNATIVE && cases[c].shape[cases[c].rank - 1] > 24) continue; /* Nx's f16 lu is slow */
            /* the CPU's side of the big case only for the real types */
            if (cases[c].shape[cases[c].rank - 1] > 100 && d >= 2) continue;
            emily_tensor *a = make(dt, cases[c].rank, cases[c].shape, RANDOM), *ad = on_dev(a);
            emily_tensor *p = NULL, *l = NULL, *u = NULL, *pc = NULL, *lc = NULL, *uc = NULL;
            CHECK_OK(emily_lu(ad, &p, &l, &u));
            CHECK_OK(emily_lu(a, &pc, &lc, &uc));
            CHECK(same_spec(p, pc) && same_spec(l, lc) && same_spec(u, uc) && on_device(l));
            char what[64];
            snprintf(what, sizeof what, "lu %s case %zu", emily_dtype_name(dt), c);
            check_lu_props(what, a, p, l, u);
            emily_tensor *ts[8] = {a, ad, p, l, u, pc, lc, uc};
            for (int i = 0; i < 8; i++) emily_tensor_release(ts[i]);
        }
    }
}

/* ---- solve --------------------------------------------------------------- */

static void compare_solve(emily_dtype dt, int rank, const int64_t *ashape, int brank, const int64_t *bshape,
                          bool transposed_view) {
    emily_tensor *a = make(dt, rank, ashape, DOMINANT), *b = make(dt, brank, bshape, RANDOM);
    emily_tensor *ad = on_dev(a), *bd = on_dev(b), *av = NULL, *x = NULL, *xc = NULL, *at = NULL;
    int64_t n = ashape[rank - 1];
    if (transposed_view) { /* a^T through a view: the op layer copies it */
        int perm[8];
        for (int i = 0; i < rank; i++) perm[i] = i;
        perm[rank - 2] = rank - 1;
        perm[rank - 1] = rank - 2;
        CHECK_OK(emily_transpose(ad, perm, &av));
        CHECK_OK(emily_transpose(a, perm, &at));
    } else {
        emily_tensor_retain(ad);
        emily_tensor_retain(a);
        av = ad;
        at = a;
    }
    CHECK_OK(emily_solve(av, bd, &x));
    CHECK_OK(emily_solve(at, b, &xc));
    CHECK(same_spec(x, xc) && on_device(x));
    cz *g = host(x), *w = host(xc);
    int64_t count = emily_tensor_size(xc);
    char what[96];
    snprintf(what, sizeof what, "solve %s n %lld%s", emily_dtype_name(dt), (long long)n,
             transposed_view ? " (view)" : "");
    CHECK(close_to(what, g, w, count, 32.0 * (double)n * unit(dt) * max_abs(w, count)));
    free(g), free(w);
    emily_tensor *ts[8] = {a, b, ad, bd, av, at, x, xc};
    for (int i = 0; i < 8; i++) emily_tensor_release(ts[i]);
}

TEST(gpu_solve_matches_cpu) {
    for (int d = 0; d < NNATIVE + 2; d++) {
        emily_dtype dt = d < NNATIVE ? NATIVE[d] : d == NNATIVE ? EMILY_S32 : EMILY_F16;
        compare_solve(dt, 2, (int64_t[]){3, 3}, 1, (int64_t[]){3}, false);
        compare_solve(dt, 2, (int64_t[]){3, 3}, 2, (int64_t[]){3, 2}, true);
        compare_solve(dt, 3, (int64_t[]){65536, 4, 4}, 2, (int64_t[]){65536, 4}, false);
        compare_solve(dt, 3, (int64_t[]){1000, 4, 4}, 3, (int64_t[]){1000, 4, 3}, false);
        compare_solve(dt, 3, (int64_t[]){100, 8, 8}, 3, (int64_t[]){100, 8, 1}, false);
        compare_solve(dt, 3, (int64_t[]){2, 20, 20}, 2, (int64_t[]){2, 20}, false);
        compare_solve(dt, 3, (int64_t[]){16, 24, 24}, 3, (int64_t[]){16, 24, 5}, true);
        if (d < 2) compare_solve(dt, 2, (int64_t[]){600, 600}, 2, (int64_t[]){600, 7}, false);
        if (d < 2) compare_solve(dt, 2, (int64_t[]){600, 600}, 1, (int64_t[]){600}, false);
    }
}

/* 65536 independent 4 x 4 f32 solves (the benchmark's shape): timed, for
 * the record (the comparison is in gpu_solve_matches_cpu). */
TEST(gpu_batched_small_solve_time) {
    int64_t as[3] = {65536, 4, 4}, bs[2] = {65536, 4};
    emily_tensor *a = make(EMILY_F32, 3, as, DOMINANT), *b = make(EMILY_F32, 2, bs, RANDOM);
    emily_tensor *ad = on_dev(a), *bd = on_dev(b), *x = NULL;
    CHECK_OK(emily_solve(ad, bd, &x)); /* warm-up: handles, caches */
    emily_tensor_release(x);
    x = NULL;
    CHECK_OK(emily_synchronize(DEV));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 20; i++) {
        CHECK_OK(emily_solve(ad, bd, &x));
        emily_tensor_release(x);
        x = NULL;
    }
    CHECK_OK(emily_synchronize(DEV));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3) / 20;
    printf("  65536 x 4x4 f32 solve: %.1f us a call (host clock, with the singularity check's wait)\n", us);
    emily_tensor *ts[4] = {a, b, ad, bd};
    for (int i = 0; i < 4; i++) emily_tensor_release(ts[i]);
}

/* ---- determinant --------------------------------------------------------- */

TEST(gpu_determinant_matches_cpu) {
    static const struct {
        int rank;
        int64_t shape[3];
    } cases[] = {{2, {3, 3}},       {3, {1000, 4, 4}}, {3, {10, 1, 1}}, {3, {5, 9, 9}},
                 {3, {20, 12, 12}}, {2, {0, 0}},       {3, {4, 0, 0}},  {2, {40, 40}}};
    for (int d = 0; d < NNATIVE + 1; d++) {
        emily_dtype dt = d < NNATIVE ? NATIVE[d] : EMILY_S32;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            int rank = cases[c].rank;
            int64_t n = cases[c].shape[rank - 1], nn = n * n;
            emily_tensor *a = make(dt, rank, cases[c].shape, RANDOM), *ad = on_dev(a), *det = NULL, *dc = NULL;
            CHECK_OK(emily_determinant(ad, &det));
            CHECK_OK(emily_determinant(a, &dc));
            CHECK(same_spec(det, dc) && on_device(det));
            cz *A = host(a), *g = host(det), *w = host(dc);
            double eps = unit(dt);
            for (int64_t b = 0; b < emily_tensor_size(dc); b++) {
                double h = 1;
                for (int64_t j = 0; j < n; j++) {
                    double s = 0;
                    for (int64_t i = 0; i < n; i++) s += pow(cabs_(A[b * nn + i * n + j]), 2);
                    h *= sqrt(s);
                }
                double tol = 16.0 * (double)(n * n) * eps * h + 16.0 * (double)(n + 1) * eps * cabs_(w[b]);
                char what[64];
                snprintf(what, sizeof what, "determinant %s case %zu matrix %lld", emily_dtype_name(dt), c,
                         (long long)b);
                if (!close_to(what, g + b, w + b, 1, tol)) {
                    CHECK(false);
                    break;
                }
            }
            free(A), free(g), free(w);
            emily_tensor *ts[4] = {a, ad, det, dc};
            for (int i = 0; i < 4; i++) emily_tensor_release(ts[i]);
        }
    }
    /* exactly singular (a zero row): exactly 0, both paths */
    float s3[9] = {1, 2, 3, 0, 0, 0, 4, 5, 7};
    float s12[144];
    for (int i = 0; i < 144; i++) s12[i] = (float)((i * 7) % 11) - 5;
    for (int j = 0; j < 12; j++) s12[5 * 12 + j] = 0;
    for (int k = 0; k < 2; k++) {
        int64_t shape[2] = {k ? 12 : 3, k ? 12 : 3};
        emily_tensor *a = t_from(EMILY_F32, 2, shape, k ? (void *)s12 : (void *)s3), *ad = on_dev(a), *det = NULL;
        CHECK_OK(emily_determinant(ad, &det));
        CHECK(t_get(det, 0) == 0);
        emily_tensor_release(a), emily_tensor_release(ad), emily_tensor_release(det);
    }
}

/* ---- cholesky ------------------------------------------------------------ */

TEST(gpu_cholesky_matches_cpu) {
    static const struct {
        int rank;
        int64_t shape[3];
    } cases[] = {{2, {3, 3}}, {3, {100, 5, 5}}, {3, {2, 40, 40}}, {2, {300, 300}}, {3, {3, 130, 130}}, {2, {1, 1}}};
    for (int d = 0; d < NNATIVE + 1; d++) {
        emily_dtype dt = d < NNATIVE ? NATIVE[d] : EMILY_F16;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            int rank = cases[c].rank;
            int64_t n = cases[c].shape[rank - 1];
            if (dt == EMILY_F16 && n > 8) continue; /* f16 cannot hold B B^H + n I of larger n accurately */
            emily_tensor *a = make(dt, rank, cases[c].shape, HPD), *ad = on_dev(a), *l = NULL, *lc = NULL;
            CHECK_OK(emily_cholesky(ad, &l));
            CHECK_OK(emily_cholesky(a, &lc));
            CHECK(same_spec(l, lc) && on_device(l));
            cz *g = host(l), *w = host(lc);
            int64_t count = emily_tensor_size(lc);
            bool upper_zero = true;
            for (int64_t i = 0; i < count; i++) {
                int64_t r = (i / n) % n, col = i % n;
                if (col > r) upper_zero = upper_zero && g[i].re == 0 && g[i].im == 0;
            }
            CHECK(upper_zero);
            char what[64];
            snprintf(what, sizeof what, "cholesky %s case %zu", emily_dtype_name(dt), c);
            /* Nx's l divides by l_jj + 1.0e-10 (l_jj >= sqrt(n) here) */
            CHECK(close_to(what, g, w, count, 32.0 * (double)n * unit(dt) * max_abs(w, count) + 1.0e-9));
            free(g), free(w);
            emily_tensor *ts[4] = {a, ad, l, lc};
            for (int i = 0; i < 4; i++) emily_tensor_release(ts[i]);
        }
    }
    /* not positive definite at the second pivot: row 0 is the CPU's,
     * rows 1.. are NaN on the GPU (Nx, on the CPU, has NaN from that
     * pivot's column on and keeps l[1][0], l[2][0] finite) */
    double np[9] = {4, 2, 1, 2, -3, 0, 1, 0, 5};
    for (int k = 0; k < 2; k++) {
        int64_t shape[3] = {k ? 2 : 1, 3, 3};
        double data[18];
        for (int i = 0; i < 18; i++) data[i] = np[i % 9];
        emily_tensor *a = t_from(EMILY_F64, 3, shape, data), *ad = on_dev(a), *l = NULL;
        CHECK_OK(emily_cholesky(ad, &l));
        cz *g = host(l);
        for (int64_t b = 0; b < shape[0]; b++) {
            CHECK(g[b * 9 + 0].re == 2 && g[b * 9 + 1].re == 0 && g[b * 9 + 2].re == 0);
            CHECK(isnan(g[b * 9 + 4].re) && isnan(g[b * 9 + 7].re) && isnan(g[b * 9 + 8].re));
            for (int i = 3; DEV.type == EMILY_DEVICE_CUDA && i < 9; i++) CHECK(isnan(g[b * 9 + i].re));
        }
        free(g);
        emily_tensor_release(a), emily_tensor_release(ad), emily_tensor_release(l);
    }
}

/* ---- triangular_solve ---------------------------------------------------- */

TEST(gpu_triangular_solve_matches_cpu) {
    static const tri_case cases[] = {{2, {4, 4}, {4}, 1},
                                     {2, {4, 4}, {4, 3}, 2},
                                     {2, {5, 5}, {2, 5}, 2},
                                     {3, {50, 6, 6}, {50, 6, 3}, 3},
                                     {3, {50, 6, 6}, {50, 6}, 2},
                                     {2, {30, 30}, {30, 9}, 2},
                                     {3, {3, 33, 33}, {3, 7, 33}, 3}};
    for (int d = 0; d < NNATIVE + 1; d++) {
        emily_dtype dt = d < NNATIVE ? NATIVE[d] : EMILY_S32;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int opt = 0; opt < TRI_OPTION_SETS; opt++) {
                tri_setup o;
                if (!tri_options(&cases[c], opt, &o)) continue;
                emily_tensor *a = make(dt, o.rank, cases[c].a, DOMINANT), *b = make(dt, o.brank, cases[c].b, RANDOM);
                emily_tensor *ad = on_dev(a), *bd = on_dev(b), *x = NULL, *xc = NULL;
                CHECK_OK(emily_triangular_solve(ad, bd, o.left, o.lower, o.tr, &x));
                CHECK_OK(emily_triangular_solve(a, b, o.left, o.lower, o.tr, &xc));
                CHECK(same_spec(x, xc) && on_device(x));
                cz *g = host(x), *w = host(xc);
                int64_t count = emily_tensor_size(xc);
                char what[96];
                snprintf(what, sizeof what, "triangular_solve %s case %zu left %d lower %d transform %d",
                         emily_dtype_name(dt), c, o.left, o.lower, (int)o.tr);
                CHECK(close_to(what, g, w, count, 32.0 * (double)o.n * unit(dt) * max_abs(w, count)));
                free(g), free(w);
                emily_tensor *ts[6] = {a, b, ad, bd, x, xc};
                for (int i = 0; i < 6; i++) emily_tensor_release(ts[i]);
            }
    }
}

/* ---- qr ------------------------------------------------------------------ */

TEST(gpu_qr_matches_cpu) {
    static const struct {
        int rank;
        int64_t shape[3];
    } cases[] = {{2, {5, 3}},     {2, {3, 5}}, {2, {4, 4}}, {3, {20, 6, 4}}, {2, {300, 200}},
                 {2, {200, 300}}, {2, {1, 1}}, {2, {3, 0}}, {3, {2, 0, 3}}};
    for (int d = 0; d < NNATIVE + 1; d++) {
        emily_dtype dt = d < NNATIVE ? NATIVE[d] : EMILY_S32;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int mode = 0; mode < 2; mode++) {
                int rank = cases[c].rank;
                int64_t m = cases[c].shape[rank - 2], n = cases[c].shape[rank - 1];
                emily_tensor *a = make(dt, rank, cases[c].shape, DOMINANT), *ad = on_dev(a);
                emily_tensor *q = NULL, *r = NULL, *qc = NULL, *rc = NULL;
                CHECK_OK(emily_qr(ad, (emily_qr_mode)mode, 1.0e-10, &q, &r));
                CHECK_OK(emily_qr(a, (emily_qr_mode)mode, 1.0e-10, &qc, &rc));
                CHECK(same_spec(q, qc) && same_spec(r, rc) && on_device(q));
                double tol = 32.0 * (double)(m > n ? m : n) * unit(dt);
                cz *g = host(q), *w = host(qc);
                char what[96];
                snprintf(what, sizeof what, "qr %s case %zu mode %d: q", emily_dtype_name(dt), c, mode);
                /* Q's first k columns are unique (R's signs fixed); the
                 * extra ones of a complete Q are any orthonormal basis of
                 * the rest: checked by Q^H Q = I only */
                int64_t qc_cols = emily_tensor_shape(qc)[rank - 1], k = m < n ? m : n;
                bool ok = true;
                for (int64_t i = 0; ok && i < emily_tensor_size(qc); i++)
                    if (i % qc_cols < k) ok = close_to(what, g + i, w + i, 1, tol);
                for (int64_t b = 0; ok && b < emily_tensor_size(qc) / (m * qc_cols > 0 ? m * qc_cols : 1); b++)
                    for (int64_t i = 0; i < qc_cols; i++)
                        for (int64_t j = 0; j < qc_cols; j++) {
                            cz acc = {0, 0};
                            for (int64_t r0 = 0; r0 < m; r0++) {
                                cz x = g[b * m * qc_cols + r0 * qc_cols + i], y = g[b * m * qc_cols + r0 * qc_cols + j];
                                cz t = cmul((cz){x.re, -x.im}, y);
                                acc.re += t.re;
                                acc.im += t.im;
                            }
                            if (i == j) acc.re -= 1;
                            if (!(cabs_(acc) <= tol)) {
                                fprintf(stderr, "  %s: |Q^H Q - I| = %.3g at (%lld, %lld)\n", what, cabs_(acc),
                                        (long long)i, (long long)j);
                                ok = false;
                            }
                        }
                CHECK(ok);
                free(g), free(w);
                g = host(r), w = host(rc);
                snprintf(what, sizeof what, "qr %s case %zu mode %d: r", emily_dtype_name(dt), c, mode);
                CHECK(close_to(what, g, w, emily_tensor_size(rc), tol * max_abs(w, emily_tensor_size(rc))));
                free(g), free(w);
                emily_tensor *ts[6] = {a, ad, q, r, qc, rc};
                for (int i = 0; i < 6; i++) emily_tensor_release(ts[i]);
            }
    }
}

/* ---- svd and eigh: values, vectors, conventions ------------------------- */

/* The distance from vals[i] to the nearest other value. */
static double gap_of(const double *vals, int64_t n, int64_t i) {
    double g = INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (j != i) g = fmin(g, fabs(vals[j] - vals[i]));
    return g;
}

/* Vector k of x (rows x cols, as column k when by_column, else row k)
 * compared with want's within tol, and (convention) its largest-magnitude
 * entry (the first of equals) exactly real and positive. */
static bool check_vector(const char *what, const cz *x, const cz *want, int64_t rows, int64_t cols, int64_t k,
                         bool by_column, bool convention, double tol) {
    int64_t len = by_column ? rows : cols, best = 0;
    double bm = -1, second = -1;
    for (int64_t i = 0; i < len; i++) {
        int64_t at = by_column ? i * cols + k : k * cols + i;
        double mag = cabs_(x[at]);
        if (mag > bm) {
            second = bm;
            bm = mag;
            best = at;
        } else if (mag > second) {
            second = mag;
        }
    }
    /* two entries of (nearly) the largest magnitude: which one the
     * convention picks is decided by rounding, the comparison too */
    if (bm - second <= tol) return true;
    bool ok = !convention || (x[best].im == 0 && x[best].re > 0);
    if (!ok)
        fprintf(stderr, "  %s: vector %lld: largest entry %g%+gi is not real and positive\n", what, (long long)k,
                x[best].re, x[best].im);
    for (int64_t i = 0; ok && i < len; i++) {
        int64_t at = by_column ? i * cols + k : k * cols + i;
        double d = cabs_((cz){x[at].re - want[at].re, x[at].im - want[at].im});
        if (!(d <= tol)) {
            fprintf(stderr, "  %s: vector %lld entry %lld differs by %.3g > %.3g\n", what, (long long)k, (long long)i,
                    d, tol);
            ok = false;
        }
    }
    return ok;
}

TEST(gpu_svd_matches_cpu) {
    static const struct {
        int rank;
        int64_t shape[3];
    } cases[] = {{2, {6, 4}},   {2, {4, 6}},      {3, {100, 5, 3}}, {3, {100, 3, 5}}, {2, {40, 70}},
                 {2, {70, 40}}, {3, {2, 33, 20}}, {2, {1, 1}},      {2, {0, 3}},      {3, {3, 4, 0}}};
    for (int d = 0; d < 3; d++) {
        emily_dtype dt = d == 0 ? EMILY_F32 : d == 1 ? EMILY_F64 : EMILY_S32;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int full = 0; full < 2; full++) {
                int rank = cases[c].rank;
                int64_t m = cases[c].shape[rank - 2], n = cases[c].shape[rank - 1], k = m < n ? m : n;
                int64_t batch = prod(rank - 2, cases[c].shape), dm = m > n ? m : n;
                emily_tensor *a = make(dt, rank, cases[c].shape, RANDOM), *ad = on_dev(a);
                emily_tensor *u = NULL, *s = NULL, *vt = NULL, *uc = NULL, *sc = NULL, *vc = NULL;
                CHECK_OK(emily_svd(ad, full, &u, &s, &vt));
                CHECK_OK(emily_svd(a, full, &uc, &sc, &vc));
                CHECK(same_spec(u, uc) && same_spec(s, sc) && same_spec(vt, vc) && on_device(s));
                int64_t ucols = full ? m : k, vrows = full ? n : k;
                cz *A = host(a), *U = host(u), *S = host(s), *V = host(vt), *UC = host(uc), *SC = host(sc),
                   *VC = host(vc);
                double eps = unit(dt);
                double *sv = malloc((size_t)(k + 1) * sizeof *sv);
                char what[96];
                snprintf(what, sizeof what, "svd %s case %zu full %d", emily_dtype_name(dt), c, full);
                bool ok = true;
                for (int64_t b = 0; ok && b < batch; b++) {
                    double na = 0;
                    for (int64_t i = 0; i < m * n; i++) na += pow(cabs_(A[b * m * n + i]), 2);
                    na = sqrt(na);
                    ok = close_to(what, S + b * k, SC + b * k, k, 32.0 * (double)dm * eps * na);
                    for (int64_t i = 0; i < k; i++) sv[i] = SC[b * k + i].re;
                    /* paired vectors, where the value is apart from the others */
                    for (int64_t i = 0; ok && i < k; i++) {
                        double g = gap_of(sv, k, i);
                        /* a non-square matrix has |m - n| more singular
                         * values of 0 (its null space): a vector of a value
                         * near 0 mixes with those */
                        if (m != n) g = fmin(g, sv[i]);
                        if (!(g > 1e3 * (double)dm * eps * na)) continue;
                        double tol = 32.0 * (double)dm * eps * na / g;
                        cz *v = V + b * vrows * n, *vc = VC + b * vrows * n, *uu = U + b * m * ucols;
                        ok = check_vector(what, v, vc, vrows, n, i, false, true, tol);
                        /* v_i's sign is the convention's (largest entry
                         * positive) unless two entries tie for largest,
                         * where rounding picks (check_vector accepts
                         * either); u_i = A v_i / s_i follows v_i's sign */
                        double dot = 0;
                        for (int64_t j = 0; j < n; j++)
                            dot += v[i * n + j].re * vc[i * n + j].re + v[i * n + j].im * vc[i * n + j].im;
                        if (ok && dot < 0)
                            for (int64_t r = 0; r < m; r++) {
                                uu[r * ucols + i].re = -uu[r * ucols + i].re;
                                uu[r * ucols + i].im = -uu[r * ucols + i].im;
                            }
                        /* (for s_i = 0, u_i is any unit vector orthogonal
                         * to the others: nothing to compare) */
                        bool u_defined = sv[i] > 32.0 * (double)dm * eps * na;
                        ok = ok &&
                             (!u_defined || check_vector(what, uu, UC + b * m * ucols, m, ucols, i, true, false, tol));
                    }
                }
                CHECK(ok);
                free(A), free(U), free(S), free(V), free(UC), free(SC), free(VC), free(sv);
                emily_tensor *ts[8] = {a, ad, u, s, vt, uc, sc, vc};
                for (int i = 0; i < 8; i++) emily_tensor_release(ts[i]);
            }
    }
}

TEST(gpu_eigh_matches_cpu) {
    static const struct {
        int rank;
        int64_t shape[3];
    } cases[] = {{2, {5, 5}}, {3, {50, 6, 6}}, {3, {2, 40, 40}}, {2, {100, 100}}, {2, {1, 1}}, {3, {3, 32, 32}}};
    for (int d = 0; d < NNATIVE; d++) {
        emily_dtype dt = NATIVE[d];
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            int rank = cases[c].rank;
            int64_t n = cases[c].shape[rank - 1], nn = n * n, batch = prod(rank - 2, cases[c].shape);
            emily_tensor *a = make(dt, rank, cases[c].shape, HERMITIAN), *ad = on_dev(a);
            emily_tensor *w = NULL, *v = NULL, *wc = NULL, *vc = NULL;
            CHECK_OK(emily_eigh(ad, &w, &v));
            CHECK_OK(emily_eigh(a, &wc, &vc));
            CHECK(same_spec(w, wc) && same_spec(v, vc) && on_device(v));
            cz *A = host(a), *W = host(w), *V = host(v), *WC = host(wc), *VC = host(vc);
            double eps = unit(dt), *vals = malloc((size_t)(n + 1) * sizeof *vals);
            char what[96];
            snprintf(what, sizeof what, "eigh %s case %zu", emily_dtype_name(dt), c);
            bool ok = true;
            for (int64_t b = 0; ok && b < batch; b++) {
                double na = 0;
                for (int64_t i = 0; i < nn; i++) na += pow(cabs_(A[b * nn + i]), 2);
                na = sqrt(na);
                /* the order is by |w|: compared as magnitudes, then each value
                 * and vector whose magnitude is apart from its neighbours'
                 * (a w and a -w within rounding may come in either order) */
                double tol = 32.0 * (double)n * eps * na;
                for (int64_t i = 0; ok && i < n; i++) {
                    double gm = cabs_(W[b * n + i]), cm = cabs_(WC[b * n + i]);
                    if (!(fabs(gm - cm) <= tol)) {
                        fprintf(stderr, "  %s: |w[%lld]| = %.9g, want %.9g\n", what, (long long)i, gm, cm);
                        ok = false;
                    }
                }
                for (int64_t i = 0; i < n; i++) vals[i] = WC[b * n + i].re;
                for (int64_t i = 0; ok && i < n; i++) {
                    double left = i ? fabs(vals[i - 1]) - fabs(vals[i]) : INFINITY;
                    double right = i + 1 < n ? fabs(vals[i]) - fabs(vals[i + 1]) : INFINITY;
                    if (!(fmin(left, right) > 2 * tol)) continue;
                    ok = close_to(what, W + b * n + i, WC + b * n + i, 1, tol);
                    double g = gap_of(vals, n, i);
                    if (ok && g > 1e3 * (double)n * eps * na)
                        ok = check_vector(what, V + b * nn, VC + b * nn, n, n, i, true, true, tol / g);
                }
            }
            CHECK(ok);
            free(A), free(W), free(V), free(WC), free(VC), free(vals);
            emily_tensor *ts[6] = {a, ad, w, v, wc, vc};
            for (int i = 0; i < 6; i++) emily_tensor_release(ts[i]);
        }
    }
}

/* NaN or infinity in a matrix: its svd and eigh results are NaN, the
 * other matrices of the batch are untouched, and nothing fails. */
TEST(gpu_nonfinite_svd_eigh) {
    int64_t shape[3] = {3, 4, 4};
    emily_tensor *a = make(EMILY_F32, 3, shape, HERMITIAN);
    float data[48];
    CHECK_OK(emily_to_binary(a, data, sizeof data));
    data[16 + 5] = NAN;
    data[32 + 2] = INFINITY;
    data[32 + 8] = INFINITY;
    emily_tensor *bad = t_from(EMILY_F32, 3, shape, data), *bd = on_dev(bad);
    emily_tensor *u = NULL, *s = NULL, *vt = NULL, *w = NULL, *v = NULL;
    CHECK_OK(emily_svd(bd, true, &u, &s, &vt));
    CHECK_OK(emily_eigh(bd, &w, &v));
    cz *S = host(s), *W = host(w), *U = host(u);
    for (int i = 0; i < 4; i++) {
        CHECK(isfinite(S[i].re) && isfinite(W[i].re) && isfinite(U[i].re));
        /* (the CPU runs Nx's algorithm on such matrices instead) */
        if (DEV.type == EMILY_DEVICE_CUDA)
            CHECK(isnan(S[4 + i].re) && isnan(S[8 + i].re) && isnan(W[4 + i].re) && isnan(W[8 + i].re));
    }
    free(S), free(W), free(U);
    emily_tensor *ts[8] = {a, bad, bd, u, s, vt, w, v};
    for (int i = 0; i < 8; i++) emily_tensor_release(ts[i]);
}

/* ---- errors -------------------------------------------------------------- */

/* The same error (code and message) on both devices. */
static void same_error(const char *what, emily_status gs, const char *gmsg, emily_status cs, const char *cmsg) {
    if (gs != cs || strcmp(gmsg, cmsg) != 0) {
        fprintf(stderr, "  %s: %s \"%s\" on the GPU, %s \"%s\" on the CPU\n", what, emily_status_name(gs), gmsg,
                emily_status_name(cs), cmsg);
        CHECK(false);
    }
}

TEST(gpu_linalg_errors) {
    /* a zero on the diagonal of matrix 2 (row 1): the CPU's message */
    int64_t as[3] = {3, 5, 5}, bs[2] = {3, 5};
    emily_tensor *a = make(EMILY_F32, 3, as, DOMINANT), *b = make(EMILY_F32, 2, bs, RANDOM);
    float data[75];
    CHECK_OK(emily_to_binary(a, data, sizeof data));
    data[50 + 6] = 0;
    emily_tensor *z = t_from(EMILY_F32, 3, as, data), *zd = on_dev(z), *bd = on_dev(b), *x = NULL;
    char gmsg[512];
    emily_status gs = emily_triangular_solve(zd, bd, true, true, EMILY_TRANSFORM_NONE, &x);
    snprintf(gmsg, sizeof gmsg, "%s", emily_last_error());
    emily_status cs = emily_triangular_solve(z, b, true, true, EMILY_TRANSFORM_NONE, &x);
    CHECK(gs == EMILY_ERR_ARGUMENT && x == NULL);
    same_error("triangular_solve singular", gs, gmsg, cs, emily_last_error());
    /* solve of a singular matrix (a zero row: an exact zero pivot however
     * it is factored): the register and library paths */
    for (int k = 0; k < 2; k++) {
        int64_t n = k ? 12 : 3, sa[2] = {n, n}, sb[1] = {n};
        double *m = calloc((size_t)(n * n), sizeof *m), *v = calloc((size_t)n, sizeof *v);
        for (int64_t i = 0; i < n; i++) {
            v[i] = 1;
            for (int64_t j = 0; j < n; j++)
                m[i * n + j] = i == 1 ? 0 : (double)((i * 3 + j * 5) % 7) + (i == j ? 9 : 0);
        }
        emily_tensor *sm = t_from(EMILY_F64, 2, sa, m), *sv = t_from(EMILY_F64, 1, sb, v);
        emily_tensor *smd = on_dev(sm), *svd = on_dev(sv);
        CHECK_ERR(emily_solve(smd, svd, &x), EMILY_ERR_ARGUMENT, "can't solve for singular matrix");
        CHECK_ERR(emily_solve(sm, svd, &x), EMILY_ERR_DEVICE, "different devices");
        free(m), free(v);
        emily_tensor *ts[4] = {sm, sv, smd, svd};
        for (int i = 0; i < 4; i++) emily_tensor_release(ts[i]);
    }
    /* Nx's own algorithms run on the CPU only */
    emily_tensor *ad = on_dev(a), *p = NULL, *l = NULL, *u = NULL, *q = NULL, *r = NULL;
    for (int mth = 1; mth <= 2; mth++) {
        emily_linalg_method method = (emily_linalg_method)mth;
        CHECK_ERR(emily_lu_opts(ad, 1e-10, method, &p, &l, &u), EMILY_ERR_UNSUPPORTED, "runs on the CPU only");
        CHECK_ERR(emily_solve_opts(ad, bd, method, &x), EMILY_ERR_UNSUPPORTED, "runs on the CPU only");
        CHECK_ERR(emily_determinant_opts(ad, method, &x), EMILY_ERR_UNSUPPORTED, "runs on the CPU only");
        CHECK_ERR(emily_qr_opts(ad, EMILY_QR_REDUCED, 1e-10, method, &q, &r), EMILY_ERR_UNSUPPORTED,
                  "runs on the CPU only");
        CHECK_ERR(emily_svd_opts(ad, true, 100, method, &p, &l, &u), EMILY_ERR_UNSUPPORTED, "runs on the CPU only");
        CHECK_ERR(emily_eigh_opts(ad, 1e-4, 1000, method, &q, &r), EMILY_ERR_UNSUPPORTED, "runs on the CPU only");
    }
    CHECK(!p && !l && !u && !q && !r && !x);
    emily_tensor *ts[6] = {a, b, z, zd, bd, ad};
    for (int i = 0; i < 6; i++) emily_tensor_release(ts[i]);
}

#define GPU_CASES                                                                                                  \
    CASE(gpu_lu_properties), CASE(gpu_solve_matches_cpu), CASE(gpu_batched_small_solve_time),                      \
        CASE(gpu_determinant_matches_cpu), CASE(gpu_cholesky_matches_cpu), CASE(gpu_triangular_solve_matches_cpu), \
        CASE(gpu_qr_matches_cpu), CASE(gpu_svd_matches_cpu), CASE(gpu_eigh_matches_cpu), CASE(gpu_nonfinite_svd_eigh)

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case always[] = {CASE(cuda_table_has_native_linalg), {NULL, NULL}};
    static const harness_case gpu[] = {GPU_CASES, CASE(gpu_linalg_errors), {NULL, NULL}};
    static const harness_case self[] = {GPU_CASES, {NULL, NULL}};
    int rc = harness_run("cuda_linalg (without a GPU too)", always);
    static const harness_gpu_cases g = {"cuda_linalg", gpu, self, "cuda_linalg cases on cpu", &DEV, NULL, true};
    return harness_gpu_finish(rc, &g);
}
