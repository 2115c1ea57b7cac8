/* Linear algebra: lu, triangular_solve, solve, determinant, cholesky, qr,
 * svd, eigh. */
#include <complex.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"

/* Whether `got` (row-major, as many elements as t) is t's matrix again
 * within tol: a product of an op's outputs that must give its input. */
static bool reconstructs(const double complex *got, const emily_tensor *t, double tol) {
    double complex *want = t_cvals(t);
    bool ok = want && c_max_diff(got, want, emily_tensor_size(t)) < tol;
    free(want);
    return ok;
}

/* ---- lu ---------------------------------------------------------------- */

TEST(lu_matches_nx_doctest) {
    int64_t s[2] = {3, 3};
    int32_t a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    emily_tensor *t = t_from(EMILY_S32, 2, s, a), *p = NULL, *l = NULL, *u = NULL;
    CHECK_OK(emily_lu(t, &p, &l, &u));
    CHECK(emily_tensor_dtype(p) == EMILY_S32 && emily_tensor_dtype(l) == EMILY_F32 &&
          emily_tensor_dtype(u) == EMILY_F32);
    const double pw[9] = {0, 1, 0, 0, 0, 1, 1, 0, 0};
    for (int i = 0; i < 9; i++) CHECK(t_get(p, i) == pw[i]);
    /* l = [[1, 0, 0], [0.14285715, 1, 0], [0.5714286, 0.5, 1]] */
    CHECK(t_get(l, 0) == 1 && t_get(l, 1) == 0 && t_get(l, 3) == (double)(1.0f / 7.0f));
    CHECK(fabs(t_get(l, 7) - 0.5) < 1e-6 && t_get(l, 8) == 1);
    /* u = [[7, 8, 9], [0, 0.8571429, 1.7142857], [0, 0, ~0]] */
    CHECK(t_get(u, 0) == 7 && t_get(u, 3) == 0 && fabs(t_get(u, 4) - 0.8571429) < 1e-6);
    /* p . l . u = a */
    double complex *P = t_cvals(p), *L = t_cvals(l), *U = t_cvals(u), lu[9], plu[9];
    c_matmul(L, U, lu, 3, 3, 3);
    c_matmul(P, lu, plu, 3, 3, 3);
    CHECK(reconstructs(plu, t, 1e-5));
    free(P);
    free(L);
    free(U);
    emily_tensor *r[3] = {p, l, u};
    for (int i = 0; i < 3; i++) emily_tensor_release(r[i]);
    emily_tensor_release(t);
}

TEST(lu_batched_and_types) {
    int64_t s[3] = {2, 2, 2};
    uint16_t h[8] = {0x4000, 0x3c00, 0x3c00, 0x4000, 0x0000, 0x3c00, 0x3c00, 0x0000}; /* f16 */
    emily_tensor *t = t_from(EMILY_F16, 3, s, h), *p = NULL, *l = NULL, *u = NULL;
    CHECK_OK(emily_lu(t, &p, &l, &u));
    CHECK(emily_tensor_dtype(p) == EMILY_F16 && emily_tensor_dtype(u) == EMILY_F16);
    /* second matrix [[0, 1], [1, 0]] pivots: p = [[0, 1], [1, 0]], u = I */
    CHECK(t_get(p, 4) == 0 && t_get(p, 5) == 1 && t_get(u, 4) == 1 && t_get(u, 7) == 1);
    /* first: l[1][0] = 0.5, u[1][1] = 1.5 */
    CHECK(t_get(l, 2) == 0.5 && t_get(u, 3) == 1.5);
    RELEASE(p, l, u, t);
    /* l = tril(a, k: -1) + eye in Nx: 0 / -3 is -0 in the elimination and
     * +0 in l (Nx 0.13.1 gives l[2][0] = 0.0 for this matrix) */
    int64_t s3[2] = {3, 3};
    int32_t z[9] = {1, 4, 5, -3, 0, -1, 0, 1, 9};
    t = t_from(EMILY_S32, 2, s3, z);
    CHECK_OK(emily_lu(t, &p, &l, &u));
    if (l) {
        float lb[9];
        CHECK_OK(emily_to_binary(l, lb, sizeof lb));
        CHECK(lb[6] == 0 && !signbit(lb[6]) && lb[7] == 0.25f && lb[3] == -1.0f / 3.0f);
    }
    RELEASE(p, l, u, t);
    /* complex */
    int64_t s2[2] = {2, 2};
    float complex c[4] = {1, 2 * I, 3, 4};
    t = t_from(EMILY_C64, 2, s2, c);
    CHECK_OK(emily_lu(t, &p, &l, &u));
    CHECK(emily_tensor_dtype(p) == EMILY_C64 && emily_tensor_dtype(l) == EMILY_C64);
    double complex *U = t_cvals(u);
    CHECK(U && U[0] == 3 && U[1] == 4);
    free(U);
    RELEASE(p, l, u, t);
}

TEST(lu_bad_input) {
    int64_t s[2] = {2, 3};
    float a[6] = {0};
    emily_tensor *t = t_from(EMILY_F32, 2, s, a), *p, *l, *u;
    CHECK_ERR(emily_lu(t, &p, &l, &u), EMILY_ERR_SHAPE, "square");
    CHECK_ERR(emily_lu(NULL, &p, &l, &u), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_lu(t, NULL, &l, &u), EMILY_ERR_ARGUMENT, "output");
    int64_t s1[1] = {6};
    emily_tensor *v = t_from(EMILY_F32, 1, s1, a);
    CHECK_ERR(emily_lu(v, &p, &l, &u), EMILY_ERR_SHAPE, "rank 2");
    emily_tensor_release(v);
    emily_tensor_release(t);
    /* singular: zeros on u's diagonal, no error */
    int64_t s2[2] = {2, 2};
    float z[4] = {1, 2, 2, 4};
    t = t_from(EMILY_F32, 2, s2, z);
    CHECK_OK(emily_lu(t, &p, &l, &u));
    CHECK(t_get(u, 3) == 0);
    RELEASE(p, l, u, t);
}

/* Nx's lin_alg_test.exs: lu of [[1+i, 2, 3], [4, 5i, 6], [7, 8, 9-i]].
 * Rows 7 and 1+i swap first; u[1] is row 4 reduced, so u[1][2] is
 * 6 - (4/7)(9 - i) = 0.857+0.571i, and p l u is a. (Nx.LU updates with
 * Nx.outer(l, adjoint(u_row)); outer conjugates its second operand too,
 * so the update is l * u, not l * conj(u).) Every method: lu is Nx
 * 0.8+'s for the first two, Nx 0.7's for REFERENCE_NX07. */
TEST(lu_complex_matches_nx) {
    int64_t s[2] = {3, 3};
    const double complex a[9] = {1 + I, 2, 3, 4, 5 * I, 6, 7, 8, 9 - I};
    const emily_linalg_method ms[3] = {EMILY_LINALG_LAPACK, EMILY_LINALG_REFERENCE, EMILY_LINALG_REFERENCE_NX07};
    for (int c64 = 0; c64 < 2; c64++)
        for (int m = 0; m < 3; m++) {
            emily_tensor *t128 = t_from(EMILY_C128, 2, s, a), *t = NULL, *p = NULL, *l = NULL, *u = NULL;
            CHECK_OK(emily_as_type(t128, c64 ? EMILY_C64 : EMILY_C128, &t));
            CHECK_OK(emily_lu_opts(t, 1e-10, ms[m], &p, &l, &u));
            double complex *P = t_cvals(p), *L = t_cvals(l), *U = t_cvals(u), lu[9], plu[9];
            CHECK(P && L && U);
            if (P && L && U) {
                CHECK(cabs(U[5] - (6 - 4.0 / 7.0 * (9 - I))) < 1e-6 && cimag(U[5]) > 0.57);
                c_matmul(L, U, lu, 3, 3, 3);
                c_matmul(P, lu, plu, 3, 3, 3);
                CHECK(c_max_diff(plu, a, 9) < 1e-5);
            }
            free(P);
            free(L);
            free(U);
            emily_tensor *r[5] = {p, l, u, t, t128};
            for (int i = 0; i < 5; i++) emily_tensor_release(r[i]);
        }
}

/* Nx's lin_alg_test.exs: solve([[1, 0, i], [-i, 0, i], [1, 1, 1]],
 * [3+i, 4, 2-2i]) is [i, 2, -3i] (the lu above; qr for REFERENCE_NX07). */
TEST(solve_complex_matches_nx) {
    int64_t s[2] = {3, 3}, sv[1] = {3};
    const double complex a[9] = {1, 0, I, -I, 0, I, 1, 1, 1};
    const double complex b[3] = {3 + I, 4, 2 - 2 * I}, want[3] = {I, 2, -3 * I};
    const emily_linalg_method ms[3] = {EMILY_LINALG_LAPACK, EMILY_LINALG_REFERENCE, EMILY_LINALG_REFERENCE_NX07};
    for (int c64 = 0; c64 < 2; c64++)
        for (int m = 0; m < 3; m++) {
            emily_tensor *a128 = t_from(EMILY_C128, 2, s, a), *b128 = t_from(EMILY_C128, 1, sv, b);
            emily_tensor *at = NULL, *bt = NULL, *x = NULL;
            CHECK_OK(emily_as_type(a128, c64 ? EMILY_C64 : EMILY_C128, &at));
            CHECK_OK(emily_as_type(b128, c64 ? EMILY_C64 : EMILY_C128, &bt));
            CHECK_OK(emily_solve_opts(at, bt, ms[m], &x));
            double complex *X = t_cvals(x);
            CHECK(X && c_max_diff(X, want, 3) < 1e-6);
            free(X);
            emily_tensor *r[5] = {x, at, bt, a128, b128};
            for (int i = 0; i < 5; i++) emily_tensor_release(r[i]);
        }
}

/* ---- triangular_solve -------------------------------------------------- */

/* Checks op(a) x = b (left) or x op(a) = b for a 3x3 matrix, every option. */
TEST(triangular_solve_every_option) {
    int64_t sa[2] = {3, 3}, sb[2] = {3, 2}, sbr[2] = {2, 3}, sv[1] = {3};
    double complex a[9] = {2, 0.5 + I, -1, 1, 3 - I, 0.25, 4, -2, 5 + 2 * I};
    double complex b[6] = {1, 2, 3 - I, -1, 0.5, 2 * I};
    emily_tensor *at = t_from(EMILY_C128, 2, sa, a);
    emily_tensor *bl = t_from(EMILY_C128, 2, sb, b), *br = t_from(EMILY_C128, 2, sbr, b);
    emily_tensor *bv = t_from(EMILY_C128, 1, sv, b);
    for (int lower = 0; lower < 2; lower++)
        for (int left = 0; left < 2; left++)
            for (int tr = 0; tr < 3; tr++)
                for (int vec = 0; vec < 2; vec++) {
                    /* op(a) as used: the triangle, then transposed or conjugated */
                    double complex m[9], op[9];
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++) m[i * 3 + j] = (lower ? j <= i : j >= i) ? a[i * 3 + j] : 0;
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++)
                            op[i * 3 + j] = tr == 1 ? m[j * 3 + i] : tr == 2 ? conj(m[i * 3 + j]) : m[i * 3 + j];
                    emily_tensor *bt = vec ? bv : left ? bl : br, *x = NULL;
                    CHECK_OK(emily_triangular_solve(at, bt, left, lower, (emily_transform_a)tr, &x));
                    if (!x) continue;
                    double complex *X = t_cvals(x), got[6], *B = t_cvals(bt);
                    int64_t cols = vec ? 1 : 2;
                    /* a vector b is a column (left) or a row (right) */
                    if (left) c_matmul(op, X, got, 3, 3, cols);
                    else c_matmul(X, op, got, vec ? 1 : 2, 3, 3);
                    if (c_max_diff(got, B, vec ? 3 : 6) >= 1e-12)
                        fprintf(stderr, "  lower %d left %d transform %d vector %d\n", lower, left, tr, vec);
                    CHECK(c_max_diff(got, B, vec ? 3 : 6) < 1e-12);
                    free(X);
                    free(B);
                    emily_tensor_release(x);
                }
    RELEASE(at, bl, br, bv);
}

TEST(triangular_solve_types_batches_views) {
    /* Nx's doctest: a = [[3, 0, 0, 0], [2, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]], b = [4, 2, 4, 2]
     * -> [1.3333334, -0.6666666, 2.6666667, -1.3333333] (f32) */
    int64_t sa[2] = {4, 4}, sb[1] = {4};
    int32_t a[16] = {3, 0, 0, 0, 2, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1};
    int32_t b[4] = {4, 2, 4, 2};
    emily_tensor *at = t_from(EMILY_S32, 2, sa, a), *bt = t_from(EMILY_S32, 1, sb, b), *x = NULL;
    CHECK_OK(emily_triangular_solve(at, bt, true, true, EMILY_TRANSFORM_NONE, &x));
    CHECK(emily_tensor_dtype(x) == EMILY_F32);
    CHECK(t_get(x, 0) == (double)(4.0f / 3.0f) && fabs(t_get(x, 3) + 1.3333333) < 1e-6);
    emily_tensor_release(x);
    /* the transposed view of a, solved as upper with :transpose, is the same system */
    int perm[2] = {1, 0};
    emily_tensor *atv = NULL;
    CHECK_OK(emily_transpose(at, perm, &atv));
    CHECK_OK(emily_triangular_solve(atv, bt, true, false, EMILY_TRANSFORM_TRANSPOSE, &x));
    CHECK(t_get(x, 0) == (double)(4.0f / 3.0f) && fabs(t_get(x, 3) + 1.3333333) < 1e-6);
    emily_tensor_release(x);
    emily_tensor_release(atv);
    /* batched: a [2, 2, 2], b [2, 2] (a vector per matrix) */
    int64_t sa3[3] = {2, 2, 2}, sb2[2] = {2, 2};
    double a3[8] = {2, 0, 1, 1, 1, 0, 0, 4};
    double b3[4] = {2, 3, 5, 8};
    emily_tensor *a3t = t_from(EMILY_F64, 3, sa3, a3), *b3t = t_from(EMILY_F64, 2, sb2, b3);
    CHECK_OK(emily_triangular_solve(a3t, b3t, true, true, EMILY_TRANSFORM_NONE, &x));
    CHECK(x && t_shape_is(x, 2, sb2) && emily_tensor_dtype(x) == EMILY_F64);
    CHECK(t_get(x, 0) == 1 && t_get(x, 1) == 2 && t_get(x, 2) == 5 && t_get(x, 3) == 2);
    RELEASE(x, a3t, b3t, at, bt);
}

TEST(triangular_solve_errors) {
    int64_t sa[2] = {2, 2}, sb[1] = {3}, sr[2] = {2, 4};
    float a[4] = {1, 0, 1, 0}, b[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    emily_tensor *at = t_from(EMILY_F32, 2, sa, a), *bt = t_from(EMILY_F32, 1, sb, b), *x;
    CHECK_ERR(emily_triangular_solve(at, bt, true, true, EMILY_TRANSFORM_NONE, &x), EMILY_ERR_SHAPE,
              "incompatible dimensions");
    emily_tensor *b2 = t_from(EMILY_F32, 2, sr, b);
    /* a zero on the diagonal, as Nx: can't solve for singular matrix */
    CHECK_ERR(emily_triangular_solve(at, b2, true, true, EMILY_TRANSFORM_NONE, &x), EMILY_ERR_ARGUMENT, "singular");
    CHECK_ERR(emily_triangular_solve(at, b2, false, true, EMILY_TRANSFORM_NONE, &x), EMILY_ERR_SHAPE, "incompatible");
    CHECK_ERR(emily_triangular_solve(at, b2, true, true, (emily_transform_a)7, &x), EMILY_ERR_ARGUMENT, "transform_a");
    CHECK_ERR(emily_triangular_solve(b2, at, true, true, EMILY_TRANSFORM_NONE, &x), EMILY_ERR_SHAPE, "square");
    CHECK_ERR(emily_triangular_solve(at, NULL, true, true, EMILY_TRANSFORM_NONE, &x), EMILY_ERR_ARGUMENT, "b is NULL");
    RELEASE(b2, at, bt);
}

/* ---- solve ------------------------------------------------------------- */

TEST(solve_matches_nx) {
    /* Nx's doctest: a = [[1, 3, 2, 1], [2, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]],
     * b = [-3, 0, 4, -2] -> [1.0, -2.0, 3.0000002, -4.0] */
    int64_t sa[2] = {4, 4}, sb[1] = {4};
    int32_t a[16] = {1, 3, 2, 1, 2, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1};
    int32_t b[4] = {-3, 0, 4, -2};
    emily_tensor *at = t_from(EMILY_S32, 2, sa, a), *bt = t_from(EMILY_S32, 1, sb, b), *x = NULL;
    CHECK_OK(emily_solve(at, bt, &x));
    CHECK(x && emily_tensor_dtype(x) == EMILY_F32 && t_shape_is(x, 1, sb));
    CHECK(t_get(x, 0) == 1 && t_get(x, 1) == -2 && t_get(x, 2) == 3.0000002384185791 && t_get(x, 3) == -4);
    emily_tensor_release(x);
    /* a matrix right-hand side in f64: the result is f64, but as in Nx the
     * LU of the s32 matrix is computed (and rounded) in f32 */
    int64_t sm[2] = {4, 2};
    double bm[8] = {1, 0, 0, 1, 0, 0, 0, 0};
    emily_tensor *bmt = t_from(EMILY_F64, 2, sm, bm);
    CHECK_OK(emily_solve(at, bmt, &x));
    CHECK(x && emily_tensor_dtype(x) == EMILY_F64 && t_shape_is(x, 2, sm));
    double complex *X = t_cvals(x), *A = t_cvals(at), ax[8], B[8];
    c_matmul(A, X, ax, 4, 4, 2);
    for (int i = 0; i < 8; i++) B[i] = bm[i];
    CHECK(X && c_max_diff(ax, B, 8) < 1e-5);
    free(X);
    free(A);
    emily_tensor_release(x);
    emily_tensor_release(bmt);
    /* singular */
    int32_t z[16] = {1, 2, 0, 0, 2, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    emily_tensor *zt = t_from(EMILY_S32, 2, sa, z);
    CHECK_ERR(emily_solve(zt, bt, &x), EMILY_ERR_ARGUMENT, "singular");
    emily_tensor_release(zt);
    /* shapes */
    int64_t s3[1] = {3};
    emily_tensor *b3 = t_from(EMILY_S32, 1, s3, b);
    CHECK_ERR(emily_solve(at, b3, &x), EMILY_ERR_SHAPE, "incompatible");
    RELEASE(b3, at, bt);
}

/* ---- determinant ------------------------------------------------------- */

TEST(determinant_values) {
    int64_t s2[2] = {2, 2}, s3[2] = {3, 3}, s4[2] = {4, 4};
    int32_t a2[4] = {1, 2, 3, 4};
    float a3[9] = {1, 2, 3, 1, -2, 3, 7, 8, 9};
    int32_t a4[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3};
    emily_tensor *t = t_from(EMILY_S32, 2, s2, a2), *d = NULL;
    CHECK_OK(emily_determinant(t, &d));
    CHECK(d && emily_tensor_rank(d) == 0 && emily_tensor_dtype(d) == EMILY_F32 && t_get(d, 0) == -2);
    emily_tensor_release(d);
    emily_tensor_release(t);
    t = t_from(EMILY_F32, 2, s3, a3);
    CHECK_OK(emily_determinant(t, &d));
    CHECK(t_get(d, 0) == 48);
    emily_tensor_release(d);
    emily_tensor_release(t);
    t = t_from(EMILY_S32, 2, s4, a4);
    CHECK_OK(emily_determinant(t, &d));
    CHECK(t_get(d, 0) == 6);
    emily_tensor_release(d);
    emily_tensor_release(t);
    /* Nx computes 2x2 integer determinants in the input type: u8 wraps */
    uint8_t u[4] = {20, 0, 0, 20};
    t = t_from(EMILY_U8, 2, s2, u);
    CHECK_OK(emily_determinant(t, &d));
    CHECK(t_get(d, 0) == 144);
    emily_tensor_release(d);
    emily_tensor_release(t);
    /* complex: Nx's doctest [[1, 0, 0], [0, 2i, 0], [0, 0, 3]] -> 6i */
    double complex c3[9] = {1, 0, 0, 0, 2 * I, 0, 0, 0, 3};
    t = t_from(EMILY_C128, 2, s3, c3);
    CHECK_OK(emily_determinant(t, &d));
    double complex *v = t_cvals(d);
    CHECK(v && emily_tensor_dtype(d) == EMILY_C128 && v[0] == 6 * I);
    free(v);
    emily_tensor_release(d);
    emily_tensor_release(t);
    /* singular 5x5 -> 0; 1x1; batched; 0x0 -> 1 */
    int64_t s5[2] = {5, 5};
    double a5[25] = {0};
    for (int i = 0; i < 5; i++) a5[i * 5 + i] = 2;
    a5[24] = 0;
    t = t_from(EMILY_F64, 2, s5, a5);
    CHECK_OK(emily_determinant(t, &d));
    CHECK(t_get(d, 0) == 0);
    emily_tensor_release(d);
    emily_tensor_release(t);
    int64_t sb[3] = {3, 1, 1};
    double a1[3] = {2, -3, 0.5};
    t = t_from(EMILY_F64, 3, sb, a1);
    CHECK_OK(emily_determinant(t, &d));
    int64_t s3v[1] = {3};
    CHECK(t_shape_is(d, 1, s3v) && t_get(d, 0) == 2 && t_get(d, 1) == -3 && t_get(d, 2) == 0.5);
    emily_tensor_release(d);
    emily_tensor_release(t);
    int64_t s0[2] = {0, 0};
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, s0, &t));
    CHECK_OK(emily_determinant(t, &d));
    CHECK(t_get(d, 0) == 1);
    emily_tensor_release(d);
    emily_tensor_release(t);
    /* errors */
    int64_t s23[2] = {2, 3};
    t = t_from(EMILY_F32, 2, s23, a3);
    CHECK_ERR(emily_determinant(t, &d), EMILY_ERR_SHAPE, "square");
    CHECK_ERR(emily_determinant(NULL, &d), EMILY_ERR_ARGUMENT, "NULL");
    emily_tensor_release(t);
}

/* ---- cholesky ---------------------------------------------------------- */

TEST(cholesky_values) {
    /* Nx's doctest: [[6, 3, 4, 8], [3, 6, 5, 1], [4, 5, 10, 7], [8, 1, 7, 25]] */
    int64_t s[2] = {4, 4};
    float a[16] = {6, 3, 4, 8, 3, 6, 5, 1, 4, 5, 10, 7, 8, 1, 7, 25};
    emily_tensor *t = t_from(EMILY_F32, 2, s, a), *l = NULL;
    CHECK_OK(emily_cholesky(t, &l));
    CHECK(emily_tensor_dtype(l) == EMILY_F32);
    CHECK(t_get(l, 0) == (double)2.4494898f && t_get(l, 1) == 0 && t_get(l, 15) == (double)3.132491f);
    CHECK(t_get(l, 13) == (double)-1.4142134f);
    emily_tensor_release(l);
    emily_tensor_release(t);
    /* complex: [[1, -2i], [2i, 5]] -> [[1, 0], [2i, 1]] */
    int64_t s2[2] = {2, 2};
    float complex c[4] = {1, -2 * I, 2 * I, 5};
    t = t_from(EMILY_C64, 2, s2, c);
    CHECK_OK(emily_cholesky(t, &l));
    double complex *v = t_cvals(l);
    CHECK(v && v[0] == 1 && v[1] == 0 && v[2] == 2 * I && v[3] == 1);
    free(v);
    emily_tensor_release(l);
    emily_tensor_release(t);
    /* not positive definite: NaN like Nx, no error */
    double n[4] = {1, 2, 2, 1};
    t = t_from(EMILY_F64, 2, s2, n);
    CHECK_OK(emily_cholesky(t, &l));
    CHECK(isnan(t_get(l, 3)));
    emily_tensor_release(l);
    CHECK_ERR(emily_cholesky(t, NULL), EMILY_ERR_ARGUMENT, "output");
    emily_tensor_release(t);
    int64_t s23[2] = {2, 3};
    t = t_from(EMILY_F32, 2, s23, a);
    CHECK_ERR(emily_cholesky(t, &l), EMILY_ERR_SHAPE, "square");
    emily_tensor_release(t);
}

/* ---- qr / svd / eigh --------------------------------------------------- */

static void check_qr_with(emily_tensor *t, emily_qr_mode mode, int64_t m, int64_t n, emily_linalg_method method) {
    emily_tensor *q = NULL, *r = NULL;
    CHECK_OK(emily_qr_opts(t, mode, 1e-10, method, &q, &r));
    if (!q || !r) return;
    int64_t k = m < n ? m : n, qc = mode == EMILY_QR_COMPLETE ? m : k, rr = mode == EMILY_QR_COMPLETE ? m : k;
    int64_t qs[2] = {m, qc}, rs[2] = {rr, n};
    CHECK(t_shape_is(q, 2, qs) && t_shape_is(r, 2, rs));
    double complex *Q = t_cvals(q), *R = t_cvals(r);
    double complex *qr = malloc((size_t)(m * n) * sizeof *qr);
    double complex *qhq = malloc((size_t)(qc * qc) * sizeof *qhq), *qh = malloc((size_t)(m * qc) * sizeof *qh);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < qc; j++) qh[j * m + i] = conj(Q[i * qc + j]);
    c_matmul(Q, R, qr, m, rr < qc ? rr : qc, n);
    CHECK(reconstructs(qr, t, 1e-5));
    c_matmul(qh, Q, qhq, qc, m, qc);
    for (int64_t i = 0; i < qc; i++) qhq[i * qc + i] -= 1;
    double complex *zero = calloc((size_t)(qc * qc), sizeof *zero);
    CHECK(c_max_diff(qhq, zero, qc * qc) < 1e-5);
    /* Nx's Householder updates leave rounding noise below R's diagonal,
     * as the reference does; LAPACK's R is exactly triangular. */
    for (int64_t i = 0; i < rr; i++)
        for (int64_t j = 0; j < i && j < n; j++)
            CHECK(method == EMILY_LINALG_LAPACK ? R[i * n + j] == 0 : cabs(R[i * n + j]) < 1e-5);
    /* R's diagonal: Nx's signs for real input (both methods); LAPACK's
     * complex diagonal is real and non-negative */
    bool cx = emily_dtype_is_complex(emily_tensor_dtype(t));
    if (!cx || method == EMILY_LINALG_LAPACK) {
        emily_tensor *q2 = NULL, *r2 = NULL;
        CHECK_OK(emily_qr_opts(t, mode, 1e-10, EMILY_LINALG_REFERENCE, &q2, &r2));
        double complex *R2 = r2 ? t_cvals(r2) : NULL;
        for (int64_t i = 0; R2 && i < k; i++) {
            CHECK(cimag(R[i * n + i]) == 0);
            if (!cx) CHECK((creal(R[i * n + i]) < 0) == (creal(R2[i * n + i]) < 0));
            else CHECK(creal(R[i * n + i]) >= 0);
        }
        free(R2);
        emily_tensor_release(q2);
        emily_tensor_release(r2);
    }
    free(Q);
    free(R);
    free(qr);
    free(qhq);
    free(qh);
    free(zero);
    emily_tensor_release(q);
    emily_tensor_release(r);
}

static void check_qr(emily_tensor *t, emily_qr_mode mode, int64_t m, int64_t n) {
    check_qr_with(t, mode, m, n, EMILY_LINALG_LAPACK);
    check_qr_with(t, mode, m, n, EMILY_LINALG_REFERENCE);
}

TEST(qr_modes_and_shapes) {
    float a[12] = {1, 2, 3, 4, 5, 6, 7, 8, 10, -1, 0.5, 2};
    int64_t tall[2] = {4, 3}, wide[2] = {3, 4};
    emily_tensor *t = t_from(EMILY_F32, 2, tall, a);
    check_qr(t, EMILY_QR_REDUCED, 4, 3);
    check_qr(t, EMILY_QR_COMPLETE, 4, 3);
    emily_tensor_release(t);
    t = t_from(EMILY_F32, 2, wide, a);
    check_qr(t, EMILY_QR_REDUCED, 3, 4);
    check_qr(t, EMILY_QR_COMPLETE, 3, 4);
    emily_tensor_release(t);
    /* signs: a random-looking square matrix (Nx leaves R's last entry
     * unreflected, so its sign is det's), and Nx's doctest inputs,
     * already triangular, where nothing is reflected: Q = I, R = A */
    float sq[9] = {0.5f, -2, 1, 3, 1, -1, -4, 2, 0.25f};
    int64_t s33[2] = {3, 3};
    t = t_from(EMILY_F32, 2, s33, sq);
    check_qr(t, EMILY_QR_REDUCED, 3, 3);
    emily_tensor_release(t);
    for (int neg = 0; neg < 2; neg++) {
        float tri[9] = {neg ? -3 : 3, 2, 1, 0, 1, 1, 0, 0, neg ? -1 : 1};
        t = t_from(EMILY_F32, 2, s33, tri);
        emily_tensor *q = NULL, *r = NULL;
        CHECK_OK(emily_qr(t, EMILY_QR_REDUCED, 1e-10, &q, &r));
        float qb[9], rb[9], eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        if (q && r) {
            CHECK_OK(emily_to_binary(q, qb, sizeof qb));
            CHECK_OK(emily_to_binary(r, rb, sizeof rb));
            CHECK(memcmp(qb, eye, sizeof eye) == 0 && memcmp(rb, tri, sizeof tri) == 0);
        }
        RELEASE(q, r, t);
    }
    double complex c[4] = {1 + I, 2, -I, 3};
    int64_t s2[2] = {2, 2};
    t = t_from(EMILY_C128, 2, s2, c);
    check_qr(t, EMILY_QR_REDUCED, 2, 2);
    emily_tensor_release(t);
    emily_tensor *q, *r;
    int64_t s1[1] = {3};
    t = t_from(EMILY_F32, 1, s1, a);
    CHECK_ERR(emily_qr(t, EMILY_QR_REDUCED, 1e-10, &q, &r), EMILY_ERR_SHAPE, "rank 2");
    emily_tensor_release(t);
    t = t_from(EMILY_F32, 2, tall, a);
    CHECK_ERR(emily_qr(t, (emily_qr_mode)5, 1e-10, &q, &r), EMILY_ERR_ARGUMENT, "mode");
    CHECK_ERR(emily_qr_opts(t, EMILY_QR_REDUCED, 1e-10, (emily_linalg_method)7, &q, &r), EMILY_ERR_ARGUMENT, "method");
    emily_tensor_release(t);
    /* zero-size: q is an identity block, r is empty */
    int64_t s30[2] = {3, 0};
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F64, 2, s30, &t));
    CHECK_OK(emily_qr(t, EMILY_QR_COMPLETE, 1e-10, &q, &r));
    CHECK(t_get(q, 0) == 1 && t_get(q, 1) == 0 && t_get(q, 4) == 1);
    RELEASE(q, r, t);
}

/* Real qr, eigh and svd are Nx's own algorithms with the reference's rounding:
 * the exact bits Nx prints in its doctests (and the corpus records). */
/* EMILY_LINALG_LAPACK (the default): LAPACK's factors in Nx's conventions,
 * so that Nx's doctest inputs give what Nx prints to within f32 rounding:
 * eigenvalues by decreasing magnitude, each eigenvector's largest entry
 * positive, each vt row's largest entry positive (u's column with it). */
static bool near(float got, float want) { return fabsf(got - want) <= 2e-7f + 2e-7f * fabsf(want); }

TEST(lapack_method_follows_nx_conventions) {
    int32_t e[9] = {0, 1, 2, 1, 0, 2, 2, 2, 3};
    int64_t s33[2] = {3, 3};
    emily_tensor *t = t_from(EMILY_S32, 2, s33, e), *w = NULL, *v = NULL;
    CHECK_OK(emily_eigh(t, &w, &v));
    float wb[4], vb[9];
    if (w && v) {
        CHECK(emily_tensor_dtype(w) == EMILY_F32 && emily_tensor_dtype(v) == EMILY_F32);
        CHECK_OK(emily_to_binary(w, wb, 12));
        CHECK_OK(emily_to_binary(v, vb, sizeof vb));
        CHECK(near(wb[0], 5) && near(wb[1], -1) && near(wb[2], -1));
        /* the eigenvector of 5 is unique: (1, 1, 2)/sqrt(6), as Nx prints */
        CHECK(near(vb[0], 0.40824829f) && near(vb[3], 0.40824829f) && near(vb[6], 0.81649658f));
        /* -1's eigenspace is a plane: any orthonormal basis of it is right;
         * check A v = -v and the sign rule */
        for (int c = 1; c < 3; c++) {
            int big = 0;
            for (int r = 0; r < 3; r++) {
                float av = 0;
                for (int l = 0; l < 3; l++) av += (float)e[r * 3 + l] * vb[l * 3 + c];
                CHECK(fabsf(av + vb[r * 3 + c]) < 1e-6f);
                if (fabsf(vb[r * 3 + c]) > fabsf(vb[big * 3 + c])) big = r;
            }
            CHECK(vb[big * 3 + c] > 0);
        }
    }
    RELEASE(w, v, t);
    /* a batch: Nx's doctest [[[2, 5], [5, 6]], [[1, 0], [0, 4]]] */
    int32_t e2[8] = {2, 5, 5, 6, 1, 0, 0, 4};
    int64_t s222[3] = {2, 2, 2};
    t = t_from(EMILY_S32, 3, s222, e2);
    CHECK_OK(emily_eigh(t, &w, &v));
    float v2[8];
    if (w && v) {
        CHECK_OK(emily_to_binary(w, wb, 16));
        CHECK_OK(emily_to_binary(v, v2, sizeof v2));
        CHECK(near(wb[0], 9.3851648f) && near(wb[1], -1.3851648f) && near(wb[2], 4) && near(wb[3], 1));
        float want[8] = {0.56062883f, 0.8280672f, 0.8280672f, -0.56062883f, 0, 1, 1, 0};
        for (int i = 0; i < 8; i++) CHECK(near(v2[i], want[i]));
    }
    RELEASE(w, v, t);
    /* svd: Nx's doctest input, exact here where Nx's iterations print
     * 0.99999994 and 1.9999999 */
    int32_t d43[12] = {2, 0, 0, 0, 3, 0, 0, 0, -1, 0, 0, 0};
    int64_t s43[2] = {4, 3};
    t = t_from(EMILY_S32, 2, s43, d43);
    emily_tensor *u = NULL, *sv = NULL, *vt = NULL;
    CHECK_OK(emily_svd(t, true, &u, &sv, &vt));
    float ub[16], sb[3], vtb[9];
    if (u && sv && vt) {
        CHECK_OK(emily_to_binary(u, ub, sizeof ub));
        CHECK_OK(emily_to_binary(sv, sb, sizeof sb));
        CHECK_OK(emily_to_binary(vt, vtb, sizeof vtb));
        float wu[16] = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1};
        float wv[9] = {0, 1, 0, 1, 0, 0, 0, 0, 1};
        for (int i = 0; i < 16; i++) CHECK(near(ub[i], wu[i]));
        for (int i = 0; i < 9; i++) CHECK(near(vtb[i], wv[i]));
        CHECK(near(sb[0], 3) && near(sb[1], 2) && near(sb[2], 1));
    }
    RELEASE(u, sv, vt);
    /* without full matrices: u [4, 3], vt [3, 3] */
    CHECK_OK(emily_svd(t, false, &u, &sv, &vt));
    if (u && vt) {
        int64_t us[2] = {4, 3};
        CHECK(t_shape_is(u, 2, us) && t_shape_is(vt, 2, s33));
        CHECK_OK(emily_to_binary(u, ub, 48));
        float wu[12] = {0, 1, 0, 1, 0, 0, 0, 0, -1, 0, 0, 0};
        for (int i = 0; i < 12; i++) CHECK(near(ub[i], wu[i]));
    }
    RELEASE(u, sv, vt);
    CHECK_ERR(emily_svd_opts(t, true, 100, (emily_linalg_method)-1, &u, &sv, &vt), EMILY_ERR_ARGUMENT, "method");
    emily_tensor_release(t);
    /* a NaN: LAPACK is not defined there, the reference's NaNs are Nx's */
    float nn[4] = {1, NAN, NAN, 2};
    int64_t s22[2] = {2, 2};
    t = t_from(EMILY_F32, 2, s22, nn);
    emily_tensor *w2 = NULL, *v2t = NULL;
    CHECK_OK(emily_eigh(t, &w, &v));
    CHECK_OK(emily_eigh_opts(t, 1.0e-4, 1000, EMILY_LINALG_REFERENCE, &w2, &v2t));
    if (w && v && w2 && v2t) {
        float a1[6], a2[6];
        CHECK_OK(emily_to_binary(w, a1, 8));
        CHECK_OK(emily_to_binary(v, a1 + 2, 16));
        CHECK_OK(emily_to_binary(w2, a2, 8));
        CHECK_OK(emily_to_binary(v2t, a2 + 2, 16));
        CHECK(memcmp(a1, a2, sizeof a1) == 0);
    }
    RELEASE(w, v, w2, v2t);
    CHECK_ERR(emily_eigh_opts(t, 1.0e-4, 1000, (emily_linalg_method)3, &w, &v), EMILY_ERR_ARGUMENT, "method");
    emily_tensor_release(t);
}

/* f32 input is solved in f64: LAPACK's eigenvalues of a 40x40 symmetric
 * matrix agree with the exact ones to f32's last bits, where Nx's Jacobi
 * (eps 1.0e-4) is off in the fourth digit; the reference method and
 * LAPACK agree to that tolerance. */
TEST(lapack_method_is_accurate_for_f32) {
    enum { N = 40 };
    float a[N * N];
    /* A = Q diag(1..N) Q^T with Q a product of two Householder reflections */
    double x[N], y[N], d[N * N];
    for (int i = 0; i < N; i++) {
        x[i] = sin(i + 1.0);
        y[i] = cos(3.0 * i);
    }
    double nx = 0, ny = 0;
    for (int i = 0; i < N; i++) {
        nx += x[i] * x[i];
        ny += y[i] * y[i];
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            /* (I - 2xx^T/|x|^2)(I - 2yy^T/|y|^2) */
            double hx = (i == j) - 2 * x[i] * x[j] / nx;
            d[i * N + j] = hx;
        }
    double q[N * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0;
            for (int l = 0; l < N; l++) sum += d[i * N + l] * ((l == j) - 2 * y[l] * y[j] / ny);
            q[i * N + j] = sum;
        }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double sum = 0;
            for (int l = 0; l < N; l++) sum += q[i * N + l] * (l + 1) * q[j * N + l];
            a[i * N + j] = (float)sum;
        }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < i; j++) a[i * N + j] = a[j * N + i]; /* exactly symmetric */
    int64_t sh[2] = {N, N};
    emily_tensor *t = t_from(EMILY_F32, 2, sh, a), *w = NULL, *v = NULL, *wr = NULL, *vr = NULL;
    CHECK_OK(emily_eigh(t, &w, &v));
    CHECK_OK(emily_eigh_opts(t, 1.0e-4, 1000, EMILY_LINALG_REFERENCE, &wr, &vr));
    if (w && wr) {
        float wl[N], wn[N];
        CHECK_OK(emily_to_binary(w, wl, sizeof wl));
        CHECK_OK(emily_to_binary(wr, wn, sizeof wn));
        /* exact eigenvalues N, N-1, ..., 1, up to the f32 rounding of a */
        for (int i = 0; i < N; i++) CHECK(fabsf(wl[i] - (float)(N - i)) < 2e-5f);
        for (int i = 0; i < N; i++) CHECK(fabsf(wl[i] - wn[i]) < 1e-2f);
    }
    RELEASE(w, v, wr, vr, t);
}

TEST(qr_eigh_svd_give_the_references_bits) {
    float a[12] = {3, 2, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1};
    int64_t s43[2] = {4, 3};
    emily_tensor *t = t_from(EMILY_F32, 2, s43, a), *q = NULL, *r = NULL;
    CHECK_OK(emily_qr_opts(t, EMILY_QR_REDUCED, 1e-10, EMILY_LINALG_REFERENCE, &q, &r));
    float qb[12], rb[9];
    if (q && r) {
        CHECK_OK(emily_to_binary(q, qb, sizeof qb));
        CHECK_OK(emily_to_binary(r, rb, sizeof rb));
        /* Nx: q[2][2] = 0.7071068, q[3][2] = 0.70710677, r[2][2] = 1.4142135, and R's
         * diagonal is never negative */
        CHECK(qb[8] == 0.7071068f && qb[11] == 0.70710677f && rb[8] == 1.4142135f);
        CHECK(rb[0] == 3 && rb[4] == 1 && qb[0] == 1 && qb[4] == 1);
    }
    RELEASE(q, r, t);
    int32_t e[9] = {0, 1, 2, 1, 0, 2, 2, 2, 3};
    int64_t s33[2] = {3, 3};
    t = t_from(EMILY_S32, 2, s33, e);
    emily_tensor *w = NULL, *v = NULL;
    CHECK_OK(emily_eigh_opts(t, 1.0e-4, 1000, EMILY_LINALG_REFERENCE, &w, &v));
    float wb[3], vb[9];
    if (w && v) {
        CHECK_OK(emily_to_binary(w, wb, sizeof wb));
        CHECK_OK(emily_to_binary(v, vb, sizeof vb));
        /* Nx's doctest prints [5.0, -1.0000001, -1.0] and these vectors */
        float want[9] = {0.40824828f, -0.1825742f, 0.8944272f,  0.40824834f, 0.9128709f,
                         0.0f,        0.81649655f, -0.3651484f, -0.4472136f};
        CHECK(wb[0] == 5.0f && wb[1] == -1.0000001f && wb[2] == -1.0f);
        CHECK(memcmp(vb, want, sizeof want) == 0);
    }
    emily_tensor_release(w);
    emily_tensor_release(v);
    /* max_iter 0: no sweep, the diagonal as it is (Nx's loop condition) */
    CHECK_OK(emily_eigh_opts(t, 1.0e-4, 0, EMILY_LINALG_REFERENCE, &w, &v));
    if (w) {
        CHECK_OK(emily_to_binary(w, wb, sizeof wb));
        CHECK(wb[0] == 3 && wb[1] == 0 && wb[2] == 0);
    }
    emily_tensor_release(w);
    emily_tensor_release(v);
    CHECK_ERR(emily_eigh_opts(t, 1.0e-4, -1, EMILY_LINALG_REFERENCE, &w, &v), EMILY_ERR_ARGUMENT, "max_iter");
    emily_tensor_release(t);
    /* svd without full matrices: Nx's Gram-matrix path (pinv's doctest
     * input; the corpus records s = [5.1925826, 0.192581]) */
    int32_t p[4] = {1, 1, 3, 4};
    int64_t s22[2] = {2, 2};
    t = t_from(EMILY_S32, 2, s22, p);
    emily_tensor *u = NULL, *sv = NULL, *vt = NULL;
    CHECK_OK(emily_svd_opts(t, false, 100, EMILY_LINALG_REFERENCE, &u, &sv, &vt));
    float sb[2], ub[4];
    if (sv) {
        CHECK_OK(emily_to_binary(sv, sb, sizeof sb));
        CHECK(sb[0] == 5.19258261f && sb[1] == 0.192580998f);
    }
    RELEASE(u, sv, vt, t);
    /* rank-deficient: the reference raises (1 / 0 inside a select that
     * discards it); Emily gives s[1] = 0 and a zero column in u */
    int32_t d2[4] = {1, 2, 2, 4};
    t = t_from(EMILY_S32, 2, s22, d2);
    CHECK_OK(emily_svd_opts(t, false, 100, EMILY_LINALG_REFERENCE, &u, &sv, &vt));
    if (sv && u) {
        CHECK_OK(emily_to_binary(sv, sb, sizeof sb));
        CHECK_OK(emily_to_binary(u, ub, sizeof ub));
        CHECK(fabsf(sb[0] - 5.0f) < 1e-5f && sb[1] == 0 && ub[1] == 0 && ub[3] == 0);
    }
    RELEASE(u, sv, vt);
    CHECK_ERR(emily_svd_opts(t, false, -1, EMILY_LINALG_REFERENCE, &u, &sv, &vt), EMILY_ERR_ARGUMENT, "max_iter");
    emily_tensor_release(t);
    /* complex qr: Nx's complex reflector with Complex's arithmetic, each part
     * rounded to f32 (Nx.BinaryBackend: q = -0.99999988, r[1] = -3.9999995 - i;
     * unrounded arithmetic gives -1 and -4 - i) */
    float cz[4] = {-5, -5, 4, 1};
    int64_t s12[2] = {1, 2};
    t = t_from(EMILY_C64, 2, s12, cz);
    emily_tensor *cq = NULL, *cr = NULL;
    CHECK_OK(emily_qr_opts(t, EMILY_QR_REDUCED, 1e-10, EMILY_LINALG_REFERENCE, &cq, &cr));
    float cqb[2], crb[4];
    if (cq && cr) {
        CHECK_OK(emily_to_binary(cq, cqb, sizeof cqb));
        CHECK_OK(emily_to_binary(cr, crb, sizeof crb));
        CHECK(cqb[0] == -0.99999988f && cqb[1] == 0);
        CHECK(crb[0] == 5 && crb[1] == 5 && crb[2] == -3.99999952f && crb[3] == -1);
    }
    RELEASE(cq, cr, t);
    /* svd with full matrices: Nx's QDWH, eigh and sign rule, as its doctest
     * prints them: u[0][1] = 0.99999994, u[2][2] = -1, s = [3, 1.9999999, 1] */
    int32_t d43[12] = {2, 0, 0, 0, 3, 0, 0, 0, -1, 0, 0, 0};
    int64_t s43b[2] = {4, 3};
    t = t_from(EMILY_S32, 2, s43b, d43);
    CHECK_OK(emily_svd_opts(t, true, 100, EMILY_LINALG_REFERENCE, &u, &sv, &vt));
    float u16[16], s3[3], v9[9];
    if (u && sv && vt) {
        CHECK_OK(emily_to_binary(u, u16, sizeof u16));
        CHECK_OK(emily_to_binary(sv, s3, sizeof s3));
        CHECK_OK(emily_to_binary(vt, v9, sizeof v9));
        CHECK(u16[1] == 0.99999994f && u16[4] == 1 && u16[10] == -1 && u16[15] == 1);
        CHECK(s3[0] == 3 && s3[1] == 1.9999999f && s3[2] == 1);
        CHECK(v9[1] == 1 && v9[3] == 1 && v9[8] == 1);
    }
    RELEASE(u, sv, vt, t);
}

TEST(svd_shapes_and_reconstruction) {
    double a[12] = {2, 0, 0, 0, 3, 0, 0, 0, -1, 0, 0, 0};
    int64_t s[2] = {4, 3};
    emily_tensor *t = t_from(EMILY_F64, 2, s, a), *u = NULL, *sv = NULL, *vt = NULL;
    for (int run = 0; run < 4; run++) {
        int full = run & 1;
        emily_linalg_method method = run < 2 ? EMILY_LINALG_LAPACK : EMILY_LINALG_REFERENCE;
        CHECK_OK(emily_svd_opts(t, full, 100, method, &u, &sv, &vt));
        int64_t us[2] = {4, full ? 4 : 3}, ss[1] = {3}, vs[2] = {3, 3};
        CHECK(t_shape_is(u, 2, us) && t_shape_is(sv, 1, ss) && t_shape_is(vt, 2, vs));
        /* Nx's doctest: s = [3, 2, 1] */
        CHECK(fabs(t_get(sv, 0) - 3) < 1e-14 && fabs(t_get(sv, 1) - 2) < 1e-14 && fabs(t_get(sv, 2) - 1) < 1e-14);
        double complex *U = t_cvals(u), *S = t_cvals(sv), *V = t_cvals(vt), us3[12], rec[12];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 3; j++) us3[i * 3 + j] = U[i * us[1] + j] * S[j];
        c_matmul(us3, V, rec, 4, 3, 3);
        CHECK(reconstructs(rec, t, 1e-14));
        free(U);
        free(S);
        free(V);
        RELEASE(u, sv, vt);
    }
    emily_tensor_release(t);
    /* integer input gives f32; complex is rejected as Nx does */
    int32_t ai[4] = {1, 2, 3, 4};
    int64_t s2[2] = {2, 2};
    t = t_from(EMILY_S32, 2, s2, ai);
    CHECK_OK(emily_svd(t, true, &u, &sv, &vt));
    CHECK(emily_tensor_dtype(sv) == EMILY_F32 && fabs(t_get(sv, 0) - 5.4649857) < 1e-5);
    RELEASE(u, sv, vt);
    emily_tensor *tc = NULL;
    CHECK_OK(emily_as_type(t, EMILY_C64, &tc));
    CHECK_ERR(emily_svd(tc, true, &u, &sv, &vt), EMILY_ERR_TYPE, "complex");
    emily_tensor_release(tc);
    emily_tensor_release(t);
    /* non-finite input gives NaN factors, not an error */
    double nanm[4] = {1, NAN, 0, 1};
    t = t_from(EMILY_F64, 2, s2, nanm);
    CHECK_OK(emily_svd(t, true, &u, &sv, &vt));
    CHECK(isnan(t_get(sv, 0)));
    RELEASE(u, sv, vt, t);
}

TEST(eigh_values_and_order) {
    /* Nx's doctest: [[0, 1, 2], [1, 0, 2], [2, 2, 3]] -> 5, -1, -1 */
    int64_t s[2] = {3, 3};
    int32_t a[9] = {0, 1, 2, 1, 0, 2, 2, 2, 3};
    emily_tensor *t = t_from(EMILY_S32, 2, s, a), *w = NULL, *v = NULL;
    CHECK_OK(emily_eigh(t, &w, &v));
    CHECK(emily_tensor_dtype(w) == EMILY_F32 && emily_tensor_dtype(v) == EMILY_F32);
    CHECK(fabs(t_get(w, 0) - 5) < 1e-5 && fabs(t_get(w, 1) + 1) < 1e-5 && fabs(t_get(w, 2) + 1) < 1e-5);
    double complex *W = t_cvals(w), *V = t_cvals(v), *A = t_cvals(t), av[9], vw[9];
    c_matmul(A, V, av, 3, 3, 3);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) vw[i * 3 + j] = V[i * 3 + j] * W[j];
    CHECK(c_max_diff(av, vw, 9) < 1e-5);
    free(W);
    free(V);
    free(A);
    RELEASE(w, v, t);
    /* ordered by magnitude: [[-3, 0], [0, 1]] -> -3, 1 */
    int64_t s2[2] = {2, 2};
    double d[4] = {1, 0, 0, -3};
    t = t_from(EMILY_F64, 2, s2, d);
    CHECK_OK(emily_eigh(t, &w, &v));
    CHECK(t_get(w, 0) == -3 && t_get(w, 1) == 1);
    RELEASE(w, v, t);
    /* Hermitian complex: eigenvalues are real, typed c64 like Nx */
    float complex h[4] = {2, 1 - I, 1 + I, 3};
    t = t_from(EMILY_C64, 2, s2, h);
    CHECK_OK(emily_eigh(t, &w, &v));
    W = t_cvals(w);
    CHECK(W && emily_tensor_dtype(w) == EMILY_C64 && fabs(creal(W[0]) - 4) < 1e-5 && cimag(W[0]) == 0);
    free(W);
    /* LAPACK's eigenvectors in Nx's convention: each column's largest
     * entry exactly real and positive */
    RELEASE(w, v, t);
    int64_t s3h[2] = {3, 3};
    double complex h3[9] = {
        2, 0.3 - 0.7 * I, 1.1 + 0.2 * I, 0.3 + 0.7 * I, -1.7, 0.4 - 0.9 * I, 1.1 - 0.2 * I, 0.4 + 0.9 * I, 0.6};
    t = t_from(EMILY_C128, 2, s3h, h3);
    CHECK_OK(emily_eigh(t, &w, &v));
    double complex *VC = t_cvals(v);
    for (int c = 0; VC && c < 3; c++) {
        int big = 0;
        for (int r = 1; r < 3; r++)
            if (cabs(VC[r * 3 + c]) > cabs(VC[big * 3 + c])) big = r;
        CHECK(cimag(VC[big * 3 + c]) == 0 && creal(VC[big * 3 + c]) > 0);
    }
    CHECK(VC != NULL);
    free(VC);
    RELEASE(w, v, t);
    int64_t s23[2] = {2, 3};
    double d6[6] = {1, 2, 3, 4, 5, 6};
    t = t_from(EMILY_F64, 2, s23, d6);
    CHECK_ERR(emily_eigh(t, &w, &v), EMILY_ERR_SHAPE, "square");
    emily_tensor_release(t);
}

/* qr's complete Q and svd's full U and V^T can be far larger than the
 * input: an empty {2^20, 0} matrix has a 2^40-element Q. Nx's templates
 * are checked before the work (fuzz_graph's kind of timeout; without the
 * check these ran out of memory). */
TEST(qr_and_svd_check_the_template_before_the_work) {
    int64_t tall_empty[2] = {(int64_t)1 << 20, 0}, two[2] = {2, 2}, r0[2] = {2, 0}, k0[1] = {0};
    emily_tensor *t = NULL;
    CHECK_OK(emily_from_binary(EMILY_CPU, EMILY_F32, 2, tall_empty, "", 0, &t));
    emily_value tmpl[3] = {v_tmpl(EMILY_F32, 2, two), v_tmpl(EMILY_F32, 2, r0), v_tmpl(EMILY_F32, 2, two)};
    emily_value qr_out = {.kind = EMILY_V_TUPLE, .items = tmpl, .n = 2};
    emily_value mode[1] = {v_atom("complete")};
    const char *mode_key[1] = {"mode"};
    emily_value qargs[2] = {v_tensor(t), v_opts(mode_key, mode, 1)};
    CHECK_TEMPLATE_FIRST("qr", &qr_out, qargs, 2, "qr: output 0 is {1048576, 1048576} but Nx expects f32{2, 2}");
    emily_value svd_tmpl[3] = {v_tmpl(EMILY_F32, 2, two), v_tmpl(EMILY_F32, 1, k0), v_tmpl(EMILY_F32, 2, two)};
    emily_value svd_out = {.kind = EMILY_V_TUPLE, .items = svd_tmpl, .n = 3};
    emily_value full[1] = {v_bool(true)};
    const char *full_key[1] = {"full_matrices?"};
    emily_value sargs[2] = {v_tensor(t), v_opts(full_key, full, 1)};
    CHECK_TEMPLATE_FIRST("svd", &svd_out, sargs, 2, "svd: output 0 is {1048576, 1048576} but Nx expects f32{2, 2}");
    emily_tensor_release(t);
}

TEST(linalg_dispatch_callbacks) {
    int64_t s[2] = {2, 2};
    float a[4] = {4, 2, 2, 3};
    emily_tensor *t = t_from(EMILY_F32, 2, s, a);
    int64_t ws[1] = {2};
    emily_value tmpl[2] = {v_tmpl(EMILY_F32, 1, ws), v_tmpl(EMILY_F32, 2, s)};
    emily_value out = {.kind = EMILY_V_TUPLE, .items = tmpl, .n = 2};
    emily_value items[2] = {v_float(1e-4), v_int(1000)};
    const char *keys[2] = {"eps", "max_iter"};
    emily_value args[2] = {v_tensor(t), v_opts(keys, items, 2)};
    emily_dispatch_result r = {0};
    CHECK_OK(emily_dispatch("eigh", EMILY_CPU, &out, args, 2, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 2);
    emily_dispatch_result_release(&r);
    /* qr with an unknown mode fails like Nx */
    emily_value qitems[1] = {v_atom("error_test")};
    const char *qkeys[1] = {"mode"};
    emily_value qargs[2] = {v_tensor(t), v_opts(qkeys, qitems, 1)};
    CHECK_ERR(emily_dispatch("qr", EMILY_CPU, &out, qargs, 2, EMILY_DISPATCH_INFER, &r), EMILY_ERR_ARGUMENT,
              "invalid :mode");
    /* triangular_solve's transform_a is validated */
    emily_value titems[1] = {v_atom("other")};
    const char *tkeys[1] = {"transform_a"};
    emily_value targs[3] = {v_tensor(t), v_tensor(t), v_opts(tkeys, titems, 1)};
    CHECK_ERR(emily_dispatch("triangular_solve", EMILY_CPU, &tmpl[1], targs, 3, EMILY_DISPATCH_RUN, &r),
              EMILY_ERR_ARGUMENT, "transform_a");
    emily_tensor_release(t);
}

/* Every op accepts every dtype Nx allows, with Nx's output types. */
TEST(linalg_every_dtype) {
    int64_t s[2] = {3, 3}, sv[1] = {3};
    double a[9] = {4, 1, 2, 1, 5, 3, 2, 3, 6}; /* symmetric positive definite */
    double bv[3] = {1, 2, 3};
    emily_tensor *ad = t_from(EMILY_F64, 2, s, a), *bd = t_from(EMILY_F64, 1, sv, bv);
    for (int dt = 0; dt < EMILY_DTYPE_COUNT; dt++) {
        emily_tensor *at = NULL, *bt = NULL, *r[3] = {NULL, NULL, NULL};
        CHECK_OK(emily_as_type(ad, (emily_dtype)dt, &at));
        CHECK_OK(emily_as_type(bd, (emily_dtype)dt, &bt));
        if (!at || !bt) continue;
        emily_dtype f = emily_type_to_floating((emily_dtype)dt);
        CHECK_OK(emily_lu(at, &r[0], &r[1], &r[2]));
        CHECK(r[0] && emily_tensor_dtype(r[0]) == (emily_dtype)dt && emily_tensor_dtype(r[2]) == f);
        for (int i = 0; i < 3; i++) {
            emily_tensor_release(r[i]);
            r[i] = NULL;
        }
        CHECK_OK(emily_cholesky(at, &r[0]));
        CHECK(r[0] && emily_tensor_dtype(r[0]) == f && fabs(t_get(r[0], 0) - 2) < 1e-2);
        emily_tensor_release(r[0]);
        CHECK_OK(emily_triangular_solve(at, bt, true, true, EMILY_TRANSFORM_NONE, &r[0]));
        CHECK(r[0] && emily_tensor_dtype(r[0]) == f);
        emily_tensor_release(r[0]);
        CHECK_OK(emily_solve(at, bt, &r[0]));
        CHECK(r[0] && emily_tensor_dtype(r[0]) == f);
        emily_tensor_release(r[0]);
        CHECK_OK(emily_determinant(at, &r[0]));
        /* det = 4(30-9) - (6-6) + 2(3-10) = 70; u8/s8 wrap in the input type */
        bool wraps = dt == EMILY_U8 || dt == EMILY_S8;
        CHECK(r[0] && emily_tensor_dtype(r[0]) == f && (wraps || fabs(t_get(r[0], 0) - 70) < 0.5));
        emily_tensor_release(r[0]);
        CHECK_OK(emily_qr(at, EMILY_QR_REDUCED, 1e-10, &r[0], &r[1]));
        CHECK(r[0] && emily_tensor_dtype(r[0]) == f && emily_tensor_dtype(r[1]) == f);
        emily_tensor_release(r[0]);
        emily_tensor_release(r[1]);
        CHECK_OK(emily_eigh(at, &r[0], &r[1]));
        CHECK(r[0] && emily_tensor_dtype(r[0]) == f && emily_tensor_dtype(r[1]) == f);
        emily_tensor_release(r[0]);
        emily_tensor_release(r[1]);
        if (emily_dtype_is_complex((emily_dtype)dt)) {
            CHECK_ERR(emily_svd(at, true, &r[0], &r[1], &r[2]), EMILY_ERR_TYPE, "complex");
        } else {
            CHECK_OK(emily_svd(at, true, &r[0], &r[1], &r[2]));
            CHECK(r[1] && emily_tensor_dtype(r[1]) == f);
            for (int i = 0; i < 3; i++) emily_tensor_release(r[i]);
        }
        emily_tensor_release(at);
        emily_tensor_release(bt);
    }
    emily_tensor_release(ad);
    emily_tensor_release(bd);
}

/* ---- reliability findings ---------------------------------------------- */

/* Every op on a huge batch of empty matrices ({4, 2^31 - 1, 0, 8} and its
 * square {.., 0, 0}): the outputs are empty too, and come back without a
 * step per matrix (qr and svd used to loop 8.6 billion times, ~20 s
 * each). */
TEST(empty_matrices_in_a_huge_batch_do_no_work) {
    int64_t wide[4] = {4, 2147483647, 0, 8}, square[4] = {4, 2147483647, 0, 0};
    emily_tensor *a = NULL, *sq = NULL, *q = NULL, *r = NULL, *u = NULL, *sv = NULL, *vt = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 4, wide, &a));
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 4, square, &sq));
    if (!a || !sq) return;
    for (int m = 0; m < 3; m++) {
        emily_linalg_method method = (emily_linalg_method)m;
        for (int mode = 0; mode < 2; mode++) {
            CHECK_OK(emily_qr_opts(a, (emily_qr_mode)mode, 1e-10, method, &q, &r));
            CHECK(emily_tensor_size(q) == 0 && emily_tensor_size(r) == 0 && emily_tensor_rank(r) == 4);
            emily_tensor_release(q);
            emily_tensor_release(r);
            q = r = NULL;
        }
        CHECK_OK(emily_svd_opts(a, false, 100, method, &u, &sv, &vt));
        CHECK(emily_tensor_size(u) == 0 && emily_tensor_size(sv) == 0 && emily_tensor_size(vt) == 0);
        RELEASE(u, sv, vt);
        u = sv = vt = NULL;
        CHECK_OK(emily_eigh_opts(sq, 1e-4, 100, method, &sv, &vt));
        CHECK(emily_tensor_size(sv) == 0 && emily_tensor_size(vt) == 0);
        emily_tensor_release(sv);
        emily_tensor_release(vt);
        sv = vt = NULL;
        CHECK_OK(emily_lu_opts(sq, 1e-10, method, &u, &q, &r));
        CHECK(emily_tensor_size(u) == 0);
        RELEASE(u, q, r);
        u = q = r = NULL;
        CHECK_OK(emily_solve_opts(sq, sq, method, &q));
        CHECK(emily_tensor_size(q) == 0);
        emily_tensor_release(q);
        q = NULL;
    }
    CHECK_OK(emily_cholesky(sq, &q));
    emily_tensor_release(q);
    q = NULL;
    CHECK_OK(emily_triangular_solve(sq, sq, true, true, EMILY_TRANSFORM_NONE, &q));
    emily_tensor_release(q);
    /* full matrices need vt {.., 8, 8} per matrix: 4.4 TB, refused */
    CHECK_ERR(emily_svd(a, true, &u, &sv, &vt), EMILY_ERR_MEMORY, "memory");
    emily_tensor_release(a);
    emily_tensor_release(sq);
}

static bool all_nan_values(const emily_tensor *t) {
    for (int64_t i = 0; i < emily_tensor_size(t); i++)
        if (!isnan(t_get(t, i))) return false;
    return emily_tensor_size(t) > 0;
}

/* A wide matrix with one NaN or infinity went to Nx's algorithm, which
 * pads it to n x n and reflects n - 1 columns: O(n^3) (6 s at 2 x 1024,
 * minutes at 2 x 4096). Its answer is all NaN (Nx's propagation), now
 * written without iterating; with Nx 0.7's explicit products only a
 * non-finite value in the last column keeps q finite. */
TEST(wide_qr_with_nan_is_nan_without_iterating) {
    enum { N = 4096 };
    float *d = malloc(sizeof(float) * 2 * N);
    if (!d) return;
    for (int i = 0; i < 2 * N; i++) d[i] = (float)((i * 7919) % 13) - 6;
    for (int at = 0; at < 3; at++) {
        float bad = at == 1 ? INFINITY : NAN;
        int pos = at == 2 ? N - 1 : N + 3; /* the last column, or column 3 */
        float keep = d[pos];
        d[pos] = bad;
        emily_tensor *a = t_from(EMILY_F32, 2, (int64_t[]){2, N}, d), *q = NULL, *r = NULL;
        for (int m = 0; m < 3; m++) {
            CHECK_OK(emily_qr_opts(a, EMILY_QR_REDUCED, 1e-10, (emily_linalg_method)m, &q, &r));
            bool nx07 = m == EMILY_LINALG_REFERENCE_NX07;
            CHECK(q && r && t_shape_is(q, 2, (int64_t[]){2, 2}) && t_shape_is(r, 2, (int64_t[]){2, N}));
            if (q && r && (!nx07 || at < 2)) {
                CHECK(all_nan_values(q) && all_nan_values(r));
            } else if (q && r) {
                /* explicit products, NaN in the last column: q and r's other
                 * columns finite, r's last column NaN */
                CHECK(!isnan(t_get(q, 0)) && !isnan(t_get(q, 3)) && !isnan(t_get(r, 0)));
                CHECK(isnan(t_get(r, N - 1)) && isnan(t_get(r, 2 * N - 1)) && !isnan(t_get(r, N - 2)));
            }
            emily_tensor_release(q);
            emily_tensor_release(r);
            q = r = NULL;
        }
        emily_tensor_release(a);
        d[pos] = keep;
    }
    free(d);
}

/* The reference's wide qr now reflects the m x n matrix m times instead of
 * Nx's padded n x n one n - 1 times; the bits must be the padded run's.
 * The square qr of the zero-padded matrix is that run (it stops one
 * reflection earlier, at a column that is zero below the diagonal). */
TEST(wide_qr_reference_matches_the_padded_square) {
    static const emily_dtype dts[3] = {EMILY_F32, EMILY_F64, EMILY_BF16};
    unsigned seed = 7;
    for (int trial = 0; trial < 24; trial++) {
        int m = 1 + trial % 3, n = m + 1 + trial % 5;
        emily_dtype dt = dts[trial % 3];
        emily_linalg_method method = trial % 2 ? EMILY_LINALG_REFERENCE : EMILY_LINALG_REFERENCE_NX07;
        double w[64] = {0}, p[64] = {0};
        for (int i = 0; i < m * n; i++) {
            seed = seed * 1103515245u + 12345u;
            w[i] = (double)((seed >> 8) % 2001) / 250.0 - 4;
            if (trial % 4 == 0 && i % 3 == 0) w[i] = 0;
        }
        memcpy(p, w, sizeof(double) * (size_t)(m * n)); /* rows m.. stay zero */
        emily_tensor *aw = t_from(EMILY_F64, 2, (int64_t[]){m, n}, w);
        emily_tensor *ap = t_from(EMILY_F64, 2, (int64_t[]){n, n}, p);
        emily_tensor *a = NULL, *pa = NULL, *q = NULL, *r = NULL, *pq = NULL, *pr = NULL;
        CHECK_OK(emily_as_type(aw, dt, &a));
        CHECK_OK(emily_as_type(ap, dt, &pa));
        CHECK_OK(emily_qr_opts(a, EMILY_QR_REDUCED, 1e-10, method, &q, &r));
        CHECK_OK(emily_qr_opts(pa, EMILY_QR_REDUCED, 1e-10, method, &pq, &pr));
        bool same = q && r && pq && pr;
        for (int i = 0; same && i < m; i++) {
            for (int j = 0; j < m; j++) same = same && t_get(q, i * m + j) == t_get(pq, i * n + j);
            for (int j = 0; j < n; j++) same = same && t_get(r, i * n + j) == t_get(pr, i * n + j);
        }
        if (!same) fprintf(stderr, "  wide qr %dx%d %s method %d differs\n", m, n, emily_dtype_name(dt), (int)method);
        CHECK(same);
        emily_tensor *all[8] = {aw, ap, a, pa, q, r, pq, pr};
        for (int i = 0; i < 8; i++) emily_tensor_release(all[i]);
    }
}

RUN_TESTS("linalg", CASE(linalg_every_dtype), CASE(lu_matches_nx_doctest), CASE(lu_batched_and_types),
          CASE(lu_bad_input), CASE(lu_complex_matches_nx), CASE(solve_complex_matches_nx),
          CASE(triangular_solve_every_option), CASE(triangular_solve_types_batches_views),
          CASE(triangular_solve_errors), CASE(solve_matches_nx), CASE(determinant_values), CASE(cholesky_values),
          CASE(qr_modes_and_shapes), CASE(qr_eigh_svd_give_the_references_bits),
          CASE(lapack_method_follows_nx_conventions), CASE(lapack_method_is_accurate_for_f32),
          CASE(svd_shapes_and_reconstruction), CASE(eigh_values_and_order), CASE(linalg_dispatch_callbacks),
          CASE(qr_and_svd_check_the_template_before_the_work), CASE(empty_matrices_in_a_huge_batch_do_no_work),
          CASE(wide_qr_with_nan_is_nan_without_iterating), CASE(wide_qr_reference_matches_the_padded_square))
