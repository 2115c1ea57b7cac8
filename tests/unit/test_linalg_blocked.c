/* The blocked, reference-exact linear algebra paths (src/cpu/linalg/exact_update.c,
 * src/cpu/linalg/blocked.c, the fused f64 solve in src/cpu/linalg/solve.c):
 * each must give the unblocked loops' (or the composition's) results bit
 * for bit, NaN for NaN, on sizes around every block boundary, batches,
 * singular and non-positive-definite matrices and non-finite values. */
#include <stdlib.h>
#include "cpu/linalg/exact_update.h"
#include "cpu/linalg/blocked.h"
#include "harness.h"

/* Bitwise equality, except that any NaN equals any NaN (the reference has
 * one NaN; Emily keeps whatever the hardware produced). */
static bool same_doubles(const double *x, const double *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (isnan(x[i]) && isnan(y[i])) continue;
        if (memcmp(&x[i], &y[i], sizeof x[i])) {
            fprintf(stderr, "  element %lld: %.17g vs %.17g\n", (long long)i, x[i], y[i]);
            return false;
        }
    }
    return true;
}

/* The tensors' values as doubles (both of the same shape and type). */
static bool same_tensors(const emily_tensor *a, const emily_tensor *b) {
    if (!a || !b) return false;
    emily_tensor *x = NULL, *y = NULL;
    bool ok = !emily_as_type(a, EMILY_F64, &x) && !emily_as_type(b, EMILY_F64, &y) &&
              emily_tensor_size(x) == emily_tensor_size(y);
    if (ok) {
        int64_t n = emily_tensor_size(x);
        double *u = malloc((size_t)(n + 1) * sizeof *u), *v = malloc((size_t)(n + 1) * sizeof *v);
        ok = u && v && !emily_to_binary(x, u, (size_t)n * sizeof *u) && !emily_to_binary(y, v, (size_t)n * sizeof *v) &&
             same_doubles(u, v, n);
        free(u);
        free(v);
    }
    emily_tensor_release(x);
    emily_tensor_release(y);
    return ok;
}

static uint64_t rng_state = 88172645463325252ull;
static double uniform(void) { /* [-1, 1) */
    return (double)(xorshift64(&rng_state) >> 11) / 4503599627370496.0 - 1.0;
}

/* ---- the update kernel --------------------------------------------------- */

static void check_update(int64_t m, int64_t n, int64_t k, bool transpose_a, bool transpose_b, int op, bool lower,
                         int64_t diag_off, int threads, bool specials) {
    bool subtract = op > 0, round_f32 = op == 2; /* op 2: the f32 LU step */
    int64_t lda = transpose_a ? m + 3 : k + 2, ldb = transpose_b ? k + 1 : n + 5, ldc = n + 4;
    double *a = malloc((size_t)((transpose_a ? k : m) * lda + 1) * sizeof *a);
    double *b = malloc((size_t)((transpose_b ? n : k) * ldb + 1) * sizeof *b);
    double *c1 = malloc((size_t)(m * ldc + 1) * sizeof *c1), *c2 = malloc((size_t)(m * ldc + 1) * sizeof *c2);
    for (int64_t i = 0; i < (transpose_a ? k : m) * lda; i++) a[i] = uniform();
    for (int64_t i = 0; i < (transpose_b ? n : k) * ldb; i++) b[i] = uniform() * 1e3;
    for (int64_t i = 0; i < m * ldc; i++) c1[i] = c2[i] = uniform() * 1e-3;
    if (round_f32) { /* the f32 mode's operands are f32 values */
        for (int64_t i = 0; i < (transpose_a ? k : m) * lda; i++) a[i] = (float)a[i];
        for (int64_t i = 0; i < (transpose_b ? n : k) * ldb; i++) b[i] = (float)b[i];
        for (int64_t i = 0; i < m * ldc; i++) c1[i] = c2[i] = (float)c1[i];
    }
    if (specials && m > 2 && k > 2) {
        a[lda + 1] = INFINITY;
        a[2 * lda] = NAN;
        a[0] = -0.0;
        b[ldb + 2] = -INFINITY;
        c1[ldc] = c2[ldc] = NAN;
    }
    emily_xupdate u = {.m = m,
                       .n = n,
                       .k = k,
                       .a = a,
                       .a_rs = transpose_a ? 1 : lda,
                       .a_cs = transpose_a ? lda : 1,
                       .b = b,
                       .b_rs = transpose_b ? 1 : ldb,
                       .b_cs = transpose_b ? ldb : 1,
                       .c = c1,
                       .ldc = ldc,
                       .subtract = subtract,
                       .round_f32 = round_f32,
                       .lower = lower,
                       .diag_off = diag_off};
    emily_xupdate_ws ws;
    CHECK(emi_xupdate_ws_init(&ws, n, threads));
    if (ws.buf) {
        /* in two calls, the second continuing the first's sums */
        int64_t k1 = k / 3;
        emily_xupdate u1 = u;
        u1.k = k1;
        emi_xupdate_run(&u1, &ws);
        emily_xupdate u2 = u;
        u2.k = k - k1;
        u2.a = a + k1 * u.a_cs;
        u2.b = b + k1 * u.b_rs;
        emi_xupdate_run(&u2, &ws);
        emi_xupdate_ws_free(&ws);
    }
    u.c = c2;
    emi_xupdate_reference(&u);
    bool ok = true;
    for (int64_t i = 0; i < m && ok; i++) {
        /* elements the kernel may skip or overwrite (above the diagonal) are not compared */
        for (int64_t j = 0; j < n && ok; j++)
            if (!lower || i + diag_off >= j) ok = same_doubles(&c1[i * ldc + j], &c2[i * ldc + j], 1);
        /* the row's padding beyond n is never written */
        for (int64_t j = n; j < ldc && ok; j++) ok = c1[i * ldc + j] == c2[i * ldc + j];
    }
    if (!ok)
        fprintf(stderr, "  update %lldx%lldx%lld ta=%d tb=%d sub=%d lower=%d off=%lld threads=%d\n", (long long)m,
                (long long)n, (long long)k, transpose_a, transpose_b, subtract, lower, (long long)diag_off, threads);
    CHECK(ok);
    free(a);
    free(b);
    free(c1);
    free(c2);
}

TEST(xupdate_matches_reference) {
    emi_xupdate_set_parallel_min(0); /* threads = 2 below: the threaded path */
    /* around the tile (8 x 16), row-block (128), column-chunk (256) and
     * contraction-slice (256) sizes, and large enough to run threaded */
    const int64_t dims[][3] = {{1, 1, 1},    {7, 15, 3},     {8, 16, 8},     {9, 17, 1},     {33, 5, 40},
                               {129, 31, 7}, {130, 257, 19}, {20, 300, 513}, {257, 70, 300}, {300, 300, 64}};
    for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
        for (int variant = 0; variant < 12; variant++) {
            bool ta = variant & 1, tb = variant & 2;
            for (int threads = 1; threads <= 2; threads++)
                check_update(dims[d][0], dims[d][1], dims[d][2], ta, tb, variant >> 2, false, 0, threads,
                             variant == 5 || variant == 9);
        }
    /* lower: tiles entirely above the diagonal are skipped */
    check_update(200, 200, 30, false, true, 0, true, 0, 2, false);
    check_update(150, 90, 20, false, true, 0, true, 37, 1, true);
    check_update(50, 300, 300, true, false, 1, true, -20, 2, false);
    /* nothing to do */
    check_update(0, 5, 5, false, false, 1, false, 0, 1, false);
    check_update(5, 5, 0, false, false, 2, false, 0, 1, false);
    emi_xupdate_set_parallel_min(-1);
}

/* The f32 mode is computed in f32 arithmetic: products that fall into
 * f32's subnormals or overflow it must still round as f32(f64 product). */
TEST(xupdate_f32_extremes) {
    enum { M = 19, N = 33, K = 21 };
    static double a[M * K], b[K * N], c1[M * N], c2[M * N];
    const double scales[][3] = {{1e-20, 1e-20, 1e-39}, {1e19, 1e20, 1e38}, {1e-30, 1e25, 1e-6}};
    for (int sc = 0; sc < 3; sc++) {
        for (int i = 0; i < M * K; i++) a[i] = (float)(uniform() * scales[sc][0]);
        for (int i = 0; i < K * N; i++) b[i] = (float)(uniform() * scales[sc][1]);
        for (int i = 0; i < M * N; i++) c1[i] = c2[i] = (float)(uniform() * scales[sc][2]);
        emily_xupdate u = {.m = M,
                           .n = N,
                           .k = K,
                           .a = a,
                           .a_rs = K,
                           .a_cs = 1,
                           .b = b,
                           .b_rs = N,
                           .b_cs = 1,
                           .c = c1,
                           .ldc = N,
                           .subtract = true,
                           .round_f32 = true};
        emily_xupdate_ws ws;
        CHECK(emi_xupdate_ws_init(&ws, N, 1));
        if (ws.buf) {
            emi_xupdate_run(&u, &ws);
            emi_xupdate_ws_free(&ws);
        }
        u.c = c2;
        emi_xupdate_reference(&u);
        CHECK(same_doubles(c1, c2, M * N));
    }
}

/* ---- LU, determinant ----------------------------------------------------- */

/* kind 0: uniform; 1: small integers (pivot ties, exact cancellations,
 * singular blocks); 2: rank deficient (repeated rows, a zero column);
 * 3: uniform with inf and NaN entries. */
static double *make_matrix(int64_t batch, int64_t n, int kind) {
    double *a = malloc((size_t)(batch * n * n + 1) * sizeof *a);
    for (int64_t i = 0; i < batch * n * n; i++) a[i] = kind == 1 ? (double)((int)(uniform() * 3)) : uniform();
    for (int64_t b = 0; b < batch && kind == 2 && n > 3; b++) {
        double *m = a + b * n * n;
        memcpy(m + 2 * n, m + n, (size_t)n * sizeof *m);
        for (int64_t i = 0; i < n; i++) m[i * n + n / 2] = 0;
    }
    if (kind == 3 && n > 4) {
        a[n + 3] = INFINITY;
        a[(n - 1) * n + 1] = NAN;
        a[2 * n + 2] = -INFINITY;
    }
    return a;
}

/* LU and determinant with the blocked paths off, on from order 1, and on
 * from order 16 with threaded updates. */
/* (The last way also runs every update on threads, where there are any.) */
static void lu_three_ways(const emily_tensor *a, emily_tensor *r[3][3], emily_tensor *det[3]) {
    const int64_t mins[3] = {INT64_MAX, 1, 16};
    for (int v = 0; v < 3; v++) {
        emi_cpu_linalg_set_block_min(mins[v]);
        emi_xupdate_set_parallel_min(v == 2 ? 0 : -1);
        CHECK_OK(emily_lu(a, &r[v][0], &r[v][1], &r[v][2]));
        CHECK_OK(emily_determinant(a, &det[v]));
    }
    emi_cpu_linalg_set_block_min(EMILY_LINALG_BLOCK_MIN_DEFAULT);
    emi_xupdate_set_parallel_min(-1);
}

TEST(lu_blocked_matches_unblocked) {
    /* around the panel width (16), the recursion's splits and the default
     * threshold (64); batched; every kind of matrix */
    const int64_t sizes[] = {1, 2, 15, 16, 17, 31, 33, 64, 65, 100, 129, 190};
    /* f64 and f32 work types are blocked (s32 input: f32 work); f16 is not */
    const emily_dtype types[] = {EMILY_F64, EMILY_F32, EMILY_S32, EMILY_F16};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int kind = 0; kind < 4; kind++)
            for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
                if (types[ti] == EMILY_S32 && kind != 1) continue;
                if (types[ti] == EMILY_F16 && sizes[s] > 65) continue;
                int64_t n = sizes[s], batch = n <= 33 ? 3 : 1;
                double *data = make_matrix(batch, n, kind);
                int64_t shape[3] = {batch, n, n};
                emily_tensor *f = t_from(EMILY_F64, 3, shape, data), *a = NULL, *r[3][3] = {{NULL}}, *det[3] = {NULL};
                CHECK_OK(emily_as_type(f, types[ti], &a));
                emily_tensor_release(f);
                lu_three_ways(a, r, det);
                for (int v = 1; v < 3; v++) {
                    bool ok = same_tensors(r[0][0], r[v][0]) && same_tensors(r[0][1], r[v][1]) &&
                              same_tensors(r[0][2], r[v][2]) && same_tensors(det[0], det[v]);
                    if (!ok)
                        fprintf(stderr, "  lu n=%lld kind=%d type=%s variant=%d\n", (long long)n, kind,
                                emily_dtype_name(types[ti]), v);
                    CHECK(ok);
                }
                for (int v = 0; v < 3; v++) {
                    t_release_all(3, r[v]);
                    emily_tensor_release(det[v]);
                }
                emily_tensor_release(a);
                free(data);
            }
    /* a singular matrix: zeros on u's diagonal, same as unblocked */
    int64_t n = 80, shape[2] = {80, 80};
    double *z = calloc((size_t)(n * n), sizeof *z);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) z[i * n + j] = (double)((i % 7) * (j % 5)); /* rank 1 */
    emily_tensor *a = t_from(EMILY_F64, 2, shape, z), *r[3][3] = {{NULL}}, *det[3] = {NULL};
    lu_three_ways(a, r, det);
    CHECK(same_tensors(r[0][2], r[1][2]) && same_tensors(r[0][0], r[1][0]) && same_tensors(det[0], det[1]));
    CHECK(det[1] && t_get(det[1], 0) == 0);
    for (int v = 0; v < 3; v++) {
        t_release_all(3, r[v]);
        emily_tensor_release(det[v]);
    }
    emily_tensor_release(a);
    free(z);
}

/* ---- Cholesky ------------------------------------------------------------- */

TEST(cholesky_blocked_matches_unblocked) {
    const int64_t sizes[] = {1, 3, 16, 17, 32, 47, 64, 65, 130, 201};
    const emily_dtype types[] = {EMILY_F64, EMILY_F32, EMILY_F16};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int kind = 0; kind < 4; kind++)
            for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
                int64_t n = sizes[s], batch = n <= 17 ? 2 : 1;
                /* kind 0: positive definite (m m^T + n I); 1: not positive
                 * definite (NaN from the first negative pivot on); 2:
                 * positive definite, non-symmetric upper triangle with inf
                 * and NaN (never read except for 0 * a); 3: NaN and inf in
                 * the lower triangle */
                double *m = make_matrix(batch, n, 0);
                double *a = malloc((size_t)(batch * n * n) * sizeof *a);
                for (int64_t b = 0; b < batch; b++)
                    for (int64_t i = 0; i < n; i++)
                        for (int64_t j = 0; j < n; j++) {
                            double acc = 0;
                            for (int64_t k = 0; k < n; k++) acc += m[b * n * n + i * n + k] * m[b * n * n + j * n + k];
                            a[b * n * n + i * n + j] = acc + (i == j ? (kind == 1 ? -0.5 : n) : 0);
                        }
                if (kind == 2 && n > 2) {
                    a[1] = INFINITY;
                    a[2] = NAN;
                    a[n - 1] = 7;
                }
                if (kind == 3 && n > 3) {
                    a[2 * n + 1] = NAN;
                    a[3 * n] = INFINITY;
                }
                int64_t shape[3] = {batch, n, n};
                emily_tensor *f = t_from(EMILY_F64, 3, shape, a), *at = NULL, *l[3] = {NULL};
                CHECK_OK(emily_as_type(f, types[ti], &at));
                const int64_t mins[3] = {INT64_MAX, 1, 16};
                for (int v = 0; v < 3; v++) {
                    emi_cpu_linalg_set_block_min(mins[v]);
                    emi_xupdate_set_parallel_min(v == 2 ? 0 : -1);
                    CHECK_OK(emily_cholesky(at, &l[v]));
                }
                emi_cpu_linalg_set_block_min(EMILY_LINALG_BLOCK_MIN_DEFAULT);
                emi_xupdate_set_parallel_min(-1);
                for (int v = 1; v < 3; v++) {
                    bool ok = same_tensors(l[0], l[v]);
                    if (!ok)
                        fprintf(stderr, "  cholesky n=%lld kind=%d type=%s variant=%d\n", (long long)n, kind,
                                emily_dtype_name(types[ti]), v);
                    CHECK(ok);
                }
                if (kind == 0 && types[ti] == EMILY_F64) CHECK(l[1] && t_get(l[1], 0) > 0);
                t_release_all(3, l);
                emily_tensor_release(at);
                emily_tensor_release(f);
                free(m);
                free(a);
            }
}

/* ---- solve ---------------------------------------------------------------- */

/* Nx.LinAlg.solve's composition through the public ops (what the op layer
 * does for every type): lu, p^T . b by the dot, two triangular solves. */
static emily_status composed_solve(const emily_tensor *a, const emily_tensor *b, bool vector, emily_tensor **x) {
    int r = emily_tensor_rank(a), batch = r - 2;
    emily_tensor *p = NULL, *l = NULL, *u = NULL, *bm = NULL, *bp = NULL, *y = NULL, *xm = NULL;
    emily_status s = emily_lu(a, &p, &l, &u);
    int64_t shape[8];
    memcpy(shape, emily_tensor_shape(b), (size_t)emily_tensor_rank(b) * sizeof *shape);
    if (!s && vector) {
        shape[emily_tensor_rank(b)] = 1;
        s = emily_reshape(b, emily_tensor_rank(b) + 1, shape, &bm);
    } else if (!s) {
        s = emily_reshape(b, emily_tensor_rank(b), shape, &bm);
    }
    int contract[1] = {r - 2}, batches[6];
    for (int i = 0; i < batch; i++) batches[i] = i;
    if (!s) s = emily_dot(p, 1, contract, batch, batches, bm, 1, contract, batch, batches, EMILY_F64, &bp);
    if (!s) s = emily_triangular_solve(l, bp, true, true, EMILY_TRANSFORM_NONE, &y);
    if (!s) s = emily_triangular_solve(u, y, true, false, EMILY_TRANSFORM_NONE, &xm);
    if (!s) s = emily_reshape(xm, emily_tensor_rank(b), emily_tensor_shape(b), x);
    emily_tensor *all[7] = {p, l, u, bm, bp, y, xm};
    t_release_all(7, all);
    return s;
}

static void check_solve(int64_t batch, int64_t n, int64_t cols, int kind, int special) {
    double *ad = make_matrix(batch, n, kind);
    int64_t nb = batch * n * (cols ? cols : 1);
    double *bd = malloc((size_t)(nb + 1) * sizeof *bd);
    for (int64_t i = 0; i < nb; i++) bd[i] = uniform();
    /* right-hand sides with -0, an infinity (its column becomes NaN but for
     * the row it lands on), a NaN */
    for (int64_t i = 0; special == 1 && i < nb; i += 3) bd[i] = -0.0;
    if (special == 2 && nb > 0) bd[nb / 2] = INFINITY;
    if (special == 3 && nb > 1) {
        bd[1] = NAN;
        bd[nb - 1] = -INFINITY;
    }
    int64_t ashape[3] = {batch, n, n}, bshape[3] = {batch, n, cols};
    emily_tensor *a = t_from(EMILY_F64, 3, ashape, ad), *b = t_from(EMILY_F64, cols ? 3 : 2, bshape, bd);
    for (int blocked = 0; blocked < 2; blocked++) {
        emi_cpu_linalg_set_block_min(blocked ? 1 : INT64_MAX);
        emily_tensor *x1 = NULL, *x2 = NULL;
        emily_status s1 = emily_solve(a, b, &x1);
        char e1[512];
        snprintf(e1, sizeof e1, "%s", s1 ? emily_last_error() : "");
        emily_status s2 = composed_solve(a, b, cols == 0, &x2);
        bool ok = s1 == s2 && (s1 ? strcmp(e1, emily_last_error()) == 0 : same_tensors(x1, x2));
        if (!ok)
            fprintf(stderr, "  solve batch=%lld n=%lld cols=%lld kind=%d special=%d blocked=%d: %s\n", (long long)batch,
                    (long long)n, (long long)cols, kind, special, blocked, e1);
        CHECK(ok);
        emily_tensor_release(x1);
        emily_tensor_release(x2);
    }
    emi_cpu_linalg_set_block_min(EMILY_LINALG_BLOCK_MIN_DEFAULT);
    emily_tensor_release(a);
    emily_tensor_release(b);
    free(ad);
    free(bd);
}

TEST(solve_f64_matches_composition) {
    const int64_t sizes[] = {1, 2, 7, 8, 9, 17, 64, 70, 130};
    const int64_t cols[] = {0, 1, 3, 65}; /* 0: b is a vector */
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++)
            for (int kind = 0; kind < 4; kind++)
                for (int special = 0; special < 4; special++)
                    check_solve(sizes[s] <= 9 ? 3 : 1, sizes[s], cols[c], kind, special);
    /* singular: the second matrix of the batch, as triangular_solve reports it */
    int64_t n = 70, shape[3] = {2, 70, 70}, bshape[2] = {2, 70};
    double *ad = make_matrix(2, n, 0), *bd = calloc(2 * 70, sizeof *bd);
    for (int64_t j = 0; j < n; j++) ad[n * n + 5 * n + j] = ad[n * n + 9 * n + j];
    emily_tensor *a = t_from(EMILY_F64, 3, shape, ad), *b = t_from(EMILY_F64, 2, bshape, bd), *x = NULL;
    CHECK_ERR(emily_solve(a, b, &x), EMILY_ERR_ARGUMENT, "singular matrix (zero on the diagonal at row");
    CHECK(strstr(emily_last_error(), "of matrix 1)") != NULL);
    /* nothing to solve: no columns, or 0 x 0 matrices */
    int64_t s0[3] = {2, 70, 0}, z2[3] = {2, 0, 0}, z1[2] = {2, 0};
    emily_tensor *b0 = t_from(EMILY_F64, 3, s0, bd), *a0 = t_from(EMILY_F64, 3, z2, bd),
                 *v0 = t_from(EMILY_F64, 2, z1, bd);
    CHECK_OK(emily_solve(a, b0, &x));
    CHECK(x && t_shape_is(x, 3, s0));
    emily_tensor_release(x);
    x = NULL;
    CHECK_OK(emily_solve(a0, v0, &x));
    CHECK(x && t_shape_is(x, 2, z1));
    emily_tensor_release(x);
    emily_tensor *all[5] = {a, b, b0, a0, v0};
    t_release_all(5, all);
    free(ad);
    free(bd);
}

RUN_TESTS("linalg_blocked", CASE(xupdate_matches_reference), CASE(xupdate_f32_extremes),
          CASE(lu_blocked_matches_unblocked), CASE(cholesky_blocked_matches_unblocked),
          CASE(solve_f64_matches_composition))
