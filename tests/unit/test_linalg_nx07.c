/* EMILY_LINALG_REFERENCE_NX07: Nx 0.7.2's own lu, determinant, eigh and
 * svd. The expected values are Nx 0.7.2's Nx.BinaryBackend outputs for
 * the same inputs (recorded with that version; printed with 17
 * significant digits, which round-trip doubles exactly). */
#include <stdlib.h>
#include "harness.h"

#define NX07 EMILY_LINALG_REFERENCE_NX07

/* The tensor's values as doubles (real parts), freshly allocated. */
static double *values(const emily_tensor *t) {
    int64_t n = emily_tensor_size(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; v && i < n; i++) v[i] = t_get(t, i);
    return v;
}

/* Every value of t equals want's (doubles, or floats when t is f32). */
static bool same_values(const emily_tensor *t, const double *want, int64_t n) {
    if (!t || emily_tensor_size(t) != n) return false;
    double *v = values(t);
    bool ok = v != NULL;
    for (int64_t i = 0; ok && i < n; i++) {
        double w = emily_tensor_dtype(t) == EMILY_F32 ? (double)(float)want[i] : want[i];
        ok = memcmp(&v[i], &w, sizeof w) == 0;
        if (!ok) fprintf(stderr, "    value %lld: %.17g, expected %.17g\n", (long long)i, v[i], w);
    }
    free(v);
    return ok;
}

static void release3(emily_tensor **r) {
    for (int i = 0; i < 3; i++) {
        emily_tensor_release(r[i]);
        r[i] = NULL;
    }
}

/* ---- lu ---------------------------------------------------------------- */

TEST(lu_pivots_up_front) {
    /* Nx 0.7's doctest input: rows ordered by the magnitudes of the
     * unreduced matrix (7 first, then 5 of {5, 2}: p's rows 7, 4, 1),
     * where Nx 0.8+'s partial pivoting compares the reduced column and
     * orders them 7, 1, 4; then Doolittle in f64 */
    int64_t s3[2] = {3, 3};
    double a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    emily_tensor *t = t_from(EMILY_F64, 2, s3, a), *r[3] = {NULL, NULL, NULL};
    CHECK_OK(emily_lu_opts(t, 1.0e-10, NX07, &r[0], &r[1], &r[2]));
    const double p[9] = {0, 0, 1, 0, 1, 0, 1, 0, 0};
    const double l[9] = {1, 0, 0, 0.5714285714285714, 1, 0, 0.14285714285714285, 1.9999999999999989, 1};
    const double u[9] = {7, 8, 9, 0, 0.42857142857142883, 0.85714285714285765, 0, 0, 0};
    CHECK(same_values(r[0], p, 9) && same_values(r[1], l, 9) && same_values(r[2], u, 9));
    release3(r);
    emily_tensor_release(t);

    double b[16] = {1.0, -2.0, 3.5, 0.25, 4.0, 5.5, -6.0, 1.0, -7.0, 8.0, 9.0, 2.0, 0.5, 0.5, 0.5, 3.0};
    int64_t s4[2] = {4, 4};
    t = t_from(EMILY_F64, 2, s4, b);
    CHECK_OK(emily_lu_opts(t, 1.0e-10, NX07, &r[0], &r[1], &r[2]));
    const double p4[16] = {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1};
    const double l4[16] = {1,
                           0,
                           0,
                           0,
                           -0.5714285714285714,
                           1,
                           0,
                           0,
                           -0.14285714285714285,
                           -0.085106382978723416,
                           1,
                           0,
                           -0.071428571428571425,
                           0.10638297872340426,
                           0.26185101580135445,
                           1};
    const double u4[16] = {-7,
                           8,
                           9,
                           2,
                           0,
                           10.071428571428571,
                           -0.85714285714285765,
                           2.1428571428571428,
                           0,
                           0,
                           4.7127659574468082,
                           0.71808510638297873,
                           0,
                           0,
                           0,
                           2.7268623024830698};
    CHECK(same_values(r[0], p4, 16) && same_values(r[1], l4, 16) && same_values(r[2], u4, 16));
    release3(r);
    emily_tensor_release(t);
}

TEST(lu_types_batches_and_singular) {
    /* an integer matrix: p keeps s64, l and u are f32 written from f64 */
    int64_t s4[2] = {4, 4};
    int64_t a[16] = {0, 2, 1, 3, 1, 1, 1, 1, 3, 0, 2, 1, 2, 1, 0, 4};
    emily_tensor *t = t_from(EMILY_S64, 2, s4, a), *r[3] = {NULL, NULL, NULL};
    CHECK_OK(emily_lu_opts(t, 1.0e-10, NX07, &r[0], &r[1], &r[2]));
    CHECK(r[0] && emily_tensor_dtype(r[0]) == EMILY_S64 && emily_tensor_dtype(r[1]) == EMILY_F32);
    const double p[16] = {0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1};
    const double l[16] = {
        1, 0, 0, 0, 0, 1, 0, 0, 0.33333333333333331, 0.5, 1, 0, 0.66666666666666663, 0.5, 11.000000000000009, 1};
    const double u[16] = {
        3, 0, 2, 1, 0, 2, 1, 3, 0, 0, -0.16666666666666652, -0.83333333333333326, 0, 0, 0, 11.000000000000007};
    CHECK(same_values(r[0], p, 16) && same_values(r[1], l, 16) && same_values(r[2], u, 16));
    release3(r);
    emily_tensor_release(t);

    /* a zero pivot: +infinity below it where a_ij >= the sum (Nx's guard) */
    int64_t b2[3] = {2, 2, 2};
    double z[8] = {0, 1, 0, 2, 4, 3, 2, 1};
    t = t_from(EMILY_F64, 3, b2, z);
    CHECK_OK(emily_lu_opts(t, 1.0e-10, NX07, &r[0], &r[1], &r[2]));
    if (r[1] && r[2]) {
        CHECK(t_get(r[1], 2) == INFINITY && t_get(r[2], 3) == -INFINITY && t_get(r[2], 1) == 1);
        /* the second matrix, batched: [[4, 3], [2, 1]] -> l21 0.5, u22 -0.5 */
        CHECK(t_get(r[1], 6) == 0.5 && t_get(r[2], 7) == -0.5 && t_get(r[0], 4) == 1);
    }
    release3(r);
    emily_tensor_release(t);

    /* the zero matrix: u22 = 0 - 0 * inf, NaN, written as Nx writes :nan
     * (the positive quiet NaN, where x86's 0 * inf is the negative one) */
    int64_t s2[2] = {2, 2};
    double zero[4] = {0, 0, 0, 0};
    t = t_from(EMILY_F64, 2, s2, zero);
    CHECK_OK(emily_lu_opts(t, 1.0e-10, NX07, &r[0], &r[1], &r[2]));
    if (r[1] && r[2]) {
        double ub[4];
        CHECK_OK(emily_to_binary(r[2], ub, sizeof ub));
        uint64_t bits;
        memcpy(&bits, &ub[3], sizeof bits);
        CHECK(t_get(r[1], 2) == INFINITY && bits == 0x7FF8000000000000u);
    }
    release3(r);
    emily_tensor_release(t);

    /* complex: Complex's arithmetic, pivots by Complex.abs */
    double complex_in[18] = {1, 1, 2, 0, 0, -1, 3, 0, 2, 2, 1, 0, 0, 4, 1, 0, 5, 0};
    int64_t s3[2] = {3, 3};
    t = t_from(EMILY_C128, 2, s3, complex_in);
    CHECK_OK(emily_lu_opts(t, 1.0e-10, NX07, &r[0], &r[1], &r[2]));
    double lc[18], uc[18];
    if (r[1] && r[2]) {
        CHECK_OK(emily_to_binary(r[1], lc, sizeof lc));
        CHECK_OK(emily_to_binary(r[2], uc, sizeof uc));
        CHECK(lc[6] == 0 && lc[7] == -0.75 && lc[12] == 0.25 && lc[13] == -0.25);
        CHECK(lc[14] == 0.36216216216216218 && lc[15] == -0.37297297297297299);
        CHECK(uc[0] == 0 && uc[1] == 4 && uc[8] == 2 && uc[9] == 2.75);
        CHECK(uc[16] == -3.0108108108108107 && uc[17] == -0.73513513513513518);
    }
    release3(r);
    emily_tensor_release(t);
}

TEST(lu_nx07_bad_input) {
    int64_t s3[2] = {3, 3}, s23[2] = {2, 3};
    double a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10};
    emily_tensor *t = t_from(EMILY_F64, 2, s3, a), *w = t_from(EMILY_F64, 2, s23, a);
    emily_tensor *r[3] = {NULL, NULL, NULL};
    CHECK_ERR(emily_lu_opts(t, -1.0, NX07, &r[0], &r[1], &r[2]), EMILY_ERR_ARGUMENT, "eps");
    CHECK_ERR(emily_lu_opts(t, NAN, NX07, &r[0], &r[1], &r[2]), EMILY_ERR_ARGUMENT, "eps");
    CHECK_ERR(emily_lu_opts(t, 1e-10, (emily_linalg_method)9, &r[0], &r[1], &r[2]), EMILY_ERR_ARGUMENT,
              "invalid method");
    CHECK_ERR(emily_lu_opts(w, 1e-10, NX07, &r[0], &r[1], &r[2]), EMILY_ERR_SHAPE, "square");
    CHECK_ERR(emily_lu_opts(NULL, 1e-10, NX07, &r[0], &r[1], &r[2]), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_lu_opts(t, 1e-10, NX07, NULL, &r[1], &r[2]), EMILY_ERR_ARGUMENT, "NULL");
    CHECK(!r[0] && !r[1] && !r[2]);
    emily_tensor_release(t);
    emily_tensor_release(w);
}

/* ---- determinant ------------------------------------------------------- */

TEST(determinant_on_nx07_lu) {
    int64_t s4[2] = {4, 4}, s5[2] = {5, 5};
    double a[16] = {1.0, -2.0, 3.5, 0.25, 4.0, 5.5, -6.0, 1.0, -7.0, 8.0, 9.0, 2.0, 0.5, 0.5, 0.5, 3.0};
    int64_t b[16] = {0, 2, 1, 3, 1, 1, 1, 1, 3, 0, 2, 1, 2, 1, 0, 4};
    float c[25] = {2, 1, 0, 0, 1, 1, 3, 1, 0, 0, 0, 1, 4, 1, 0, 0, 0, 1, 5, 1, 1, 0, 0, 1, 6};
    emily_tensor *ta = t_from(EMILY_F64, 2, s4, a), *tb = t_from(EMILY_S64, 2, s4, b),
                 *tc = t_from(EMILY_F32, 2, s5, c), *d = NULL;
    CHECK_OK(emily_determinant_opts(ta, NX07, &d));
    CHECK(d && t_get(d, 0) == 906.0);
    emily_tensor_release(d);
    CHECK_OK(emily_determinant_opts(tb, NX07, &d));
    CHECK(d && emily_tensor_dtype(d) == EMILY_F32 && t_get(d, 0) == -11.0);
    emily_tensor_release(d);
    CHECK_OK(emily_determinant_opts(tc, NX07, &d));
    CHECK(d && t_get(d, 0) == 441.99996948242188);
    emily_tensor_release(d);
    /* Nx 0.8+'s LU rounds differently here: 442 */
    CHECK_OK(emily_determinant_opts(tc, EMILY_LINALG_REFERENCE, &d));
    CHECK(d && fabs(t_get(d, 0) - 442.0) < 1e-3);
    emily_tensor_release(d);
    CHECK_ERR(emily_determinant_opts(tc, (emily_linalg_method)-1, &d), EMILY_ERR_ARGUMENT, "invalid method");
    /* complex: the sign multiplies as Complex.new(-1, 0), so an odd
     * permutation of a real-valued matrix gives -1 + 0i (Nx's +0), not
     * -1 - 0i; both LU generations */
    double sw[32] = {0};
    sw[2] = sw[8] = sw[20] = sw[30] = 1; /* rows 0 and 1 of the identity swapped */
    emily_tensor *ts = t_from(EMILY_C128, 2, s4, sw);
    for (int m = 0; m < 2; m++) {
        CHECK_OK(emily_determinant_opts(ts, m ? NX07 : EMILY_LINALG_REFERENCE, &d));
        double db[2] = {0, 0};
        if (d) CHECK_OK(emily_to_binary(d, db, sizeof db));
        CHECK(db[0] == -1 && db[1] == 0 && !signbit(db[1]));
        emily_tensor_release(d);
    }
    RELEASE(ts, ta, tb, tc);
}

/* ---- eigh ------------------------------------------------------------- */

static double hx(uint64_t bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* eigh_opts of a (f64 or c128, n x n) matches w and v (Nx 0.7.2's bits,
 * complex v as re/im pairs); w of a complex input is complex with +0
 * imaginary parts. */
static void check_eigh(emily_dtype dt, int64_t n, const double *a, double eps, int64_t max_iter, const uint64_t *w_bits,
                       const uint64_t *v_bits) {
    int64_t shape[2] = {n, n};
    bool cx = dt == EMILY_C128;
    emily_tensor *t = t_from(dt, 2, shape, a), *w = NULL, *v = NULL;
    CHECK_OK(emily_eigh_opts(t, eps, max_iter, NX07, &w, &v));
    if (w && v) {
        double wb[16], vb[128];
        CHECK_OK(emily_to_binary(w, wb, (size_t)(n * (cx ? 2 : 1)) * sizeof(double)));
        CHECK_OK(emily_to_binary(v, vb, (size_t)(n * n * (cx ? 2 : 1)) * sizeof(double)));
        for (int64_t i = 0; i < n; i++) {
            CHECK(memcmp(&wb[cx ? 2 * i : i], &w_bits[i], 8) == 0);
            if (cx) CHECK(wb[2 * i + 1] == 0 && !signbit(wb[2 * i + 1]));
        }
        for (int64_t i = 0; i < n * n * (cx ? 2 : 1); i++) CHECK(memcmp(&vb[i], &v_bits[i], 8) == 0);
    }
    RELEASE(w, v, t);
}

TEST(eigh_hessenberg_qr_iterations) {
    /* unsorted, and only as accurate as Q's convergence within eps:
     * Nx 0.7 returns 2.99992 and 1.00005 for [[2, 1], [1, 2]] */
    const double a[4] = {2, 1, 1, 2};
    const uint64_t w[2] = {0x4007FFEE3E1955E4, 0x3FF0002383CD8BFC};
    const uint64_t v[4] = {0x3FE6B8684DDF90A1, 0x3FE688BB62381D3E, 0x3FE688BB6237F621, 0xBFE6B8684DDFB868};
    check_eigh(EMILY_F64, 2, a, 1.0e-4, 1000, w, v);
    /* one QR iteration */
    const uint64_t w1[2] = {0x4006666666666666, 0x3FF3333333333335};
    const uint64_t v1[4] = {0x3FEC9F25C5BFEDD9, 0x3FDC9F25C5BFEDD9, 0x3FDC9F25C5BFEDD9, 0xBFEC9F25C5BFEDDA};
    check_eigh(EMILY_F64, 2, a, 1.0e-4, 1, w1, v1);
    /* max_iter 0: Elixir's 1..0 counts down, two iterations */
    const uint64_t w0[2] = {0x4007CE0C7CE0C7CD, 0x3FF063E7063E7056};
    const uint64_t v0[4] = {0x3FE8FCE095E0C6D4, 0xBFE3FD8077E70571, 0x3FE3FD8077E70577, 0x3FE8FCE095E0C6C9};
    check_eigh(EMILY_F64, 2, a, 1.0e-4, 0, w0, v0);
    /* the doctest's matrix */
    const double d[9] = {0, 1, 2, 1, 0, 2, 2, 2, 3};
    const uint64_t wd[3] = {0x4013FFFF31D77808, 0xBFEFFFF98EBC011D, 0xBFEFFFFFFFFFFFFF};
    const uint64_t vd[9] = {0x3FDA16094AC9467D, 0x3FED38A138CFF90E, 0,
                            0x3FDA22E0F0D6764D, 0xBFC755046A4AAAD9, 0x3FEC9F25C5BFEDD9,
                            0x3FEA22E0F0D6764C, 0xBFD755046A4AAAD8, 0xBFDC9F25C5BFEDD8};
    check_eigh(EMILY_F64, 3, d, 1.0e-4, 1000, wd, vd);
    /* 1 x 1: -0.0 comes back as +0.0 */
    const double z[1] = {-0.0};
    const uint64_t wz[1] = {0}, vz[1] = {0x3FF0000000000000};
    check_eigh(EMILY_F64, 1, z, 1.0e-4, 1000, wz, vz);
}

TEST(eigh_complex_and_not_hermitian) {
    /* [[1, 2 - i], [2 + i, -3]] */
    const double a[8] = {1, 0, 2, -1, 2, 1, -3, 0};
    const uint64_t w[2] = {0xC00FFFFFFF10000C, 0x3FFFFFFFFF880004};
    const uint64_t v[8] = {0xBFDA214012EB0E5E, 0xBC8CED4AD5C46A47, 0x3FEA20A34E7A7303, 0xBFDA20A34E7A7306,
                           0x3FEA20A34E7A7307, 0x3FDA20A34E7A7308, 0x3FDA214012EB0E54, 0xBC9008C13403D666};
    check_eigh(EMILY_C128, 2, a, 1.0e-4, 1000, w, v);
    /* Nx 0.7's complex reflector divides 0 by 0 on a zero column: a
     * complex diagonal matrix gives NaN (the reference's answer, kept) */
    const double dg[8] = {1, 0, 0, 0, 0, 0, 2, 0};
    const uint64_t nan2[2] = {0x7FF8000000000000, 0x7FF8000000000000};
    const uint64_t nan8[8] = {0x7FF8000000000000, 0x7FF8000000000000, 0x7FF8000000000000, 0x7FF8000000000000,
                              0x7FF8000000000000, 0x7FF8000000000000, 0x7FF8000000000000, 0x7FF8000000000000};
    check_eigh(EMILY_C128, 2, dg, 1.0e-4, 1000, nan2, nan8);
    /* not Hermitian within eps: Nx raises */
    int64_t s2[2] = {2, 2};
    const double r[4] = {1, 2, 3, 4};
    emily_tensor *t = t_from(EMILY_F64, 2, s2, r), *w2 = NULL, *v2 = NULL;
    CHECK_ERR(emily_eigh_opts(t, 1.0e-4, 1000, NX07, &w2, &v2), EMILY_ERR_ARGUMENT, "must be hermitian");
    CHECK(!w2 && !v2);
    emily_tensor_release(t);
    const double c[8] = {1, 0.5, 0, 0, 0, 0, 3, 0};
    t = t_from(EMILY_C128, 2, s2, c);
    CHECK_ERR(emily_eigh_opts(t, 1.0e-4, 1000, NX07, &w2, &v2), EMILY_ERR_ARGUMENT, "must be hermitian");
    emily_tensor_release(t);
    /* f32 in, f32 out (Matrix.eigh in f64, written once) */
    const float f[4] = {2, 1, 1, 2};
    t = t_from(EMILY_F32, 2, s2, f);
    CHECK_OK(emily_eigh_opts(t, 1.0e-4, 1000, NX07, &w2, &v2));
    CHECK(w2 && emily_tensor_dtype(w2) == EMILY_F32 && t_get(w2, 0) == (double)(float)hx(0x4007FFEE3E1955E4));
    RELEASE(w2, v2, t);
}

/* ---- qr, solve, svd ----------------------------------------------------- */

TEST(qr_explicit_reflections) {
    /* Nx 0.7's qr doctest: R[2][2] is a tie that the explicit product
     * rounds to 1.4142137, where the rank-1 updates give 1.4142135 */
    float a[12] = {3, 2, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1};
    int64_t s43[2] = {4, 3};
    emily_tensor *t = t_from(EMILY_F32, 2, s43, a), *q = NULL, *r = NULL;
    CHECK_OK(emily_qr_opts(t, EMILY_QR_REDUCED, 1e-10, NX07, &q, &r));
    CHECK(r && t_get(r, 8) == (double)1.4142137f && t_get(r, 0) == 3);
    CHECK(q && t_get(q, 8) == (double)0.7071068f && t_get(q, 11) == (double)0.70710677f);
    emily_tensor_release(q);
    emily_tensor_release(r);
    CHECK_OK(emily_qr_opts(t, EMILY_QR_REDUCED, 1e-10, EMILY_LINALG_REFERENCE, &q, &r));
    CHECK(r && t_get(r, 8) == (double)1.4142135f);
    RELEASE(q, r, t);
    /* complex, complete mode: q unitary, q r = a */
    double c[12] = {1, 1, 2, 0, 0, -1, 3, 0, 2, 2, 1, 0};
    int64_t s23[2] = {2, 3};
    t = t_from(EMILY_C128, 2, s23, c);
    CHECK_OK(emily_qr_opts(t, EMILY_QR_COMPLETE, 1e-10, NX07, &q, &r));
    if (q && r) {
        double qb[8], rb[12];
        CHECK_OK(emily_to_binary(q, qb, sizeof qb));
        CHECK_OK(emily_to_binary(r, rb, sizeof rb));
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++) {
                double re = 0, im = 0;
                for (int k = 0; k < 2; k++) {
                    double qr_ = qb[2 * (i * 2 + k)], qi = qb[2 * (i * 2 + k) + 1];
                    double rr = rb[2 * (k * 3 + j)], ri = rb[2 * (k * 3 + j) + 1];
                    re += qr_ * rr - qi * ri;
                    im += qr_ * ri + qi * rr;
                }
                CHECK(fabs(re - c[2 * (i * 3 + j)]) < 1e-12 && fabs(im - c[2 * (i * 3 + j) + 1]) < 1e-12);
            }
    }
    RELEASE(q, r, t);
}

TEST(solve_through_qr) {
    float a[9] = {3, 1, 2, 1, 4, 0.5f, 2, 1, 5}, b[3] = {1, 2, 3};
    int64_t s3[2] = {3, 3}, s1[1] = {3};
    emily_tensor *ta = t_from(EMILY_F32, 2, s3, a), *tb = t_from(EMILY_F32, 1, s1, b), *x = NULL;
    CHECK_OK(emily_solve_opts(ta, tb, NX07, &x));
    /* Nx 0.7.2: [-0.22222217917442322, 0.48148149251937866, 0.5925925374031067] */
    CHECK(x && t_get(x, 0) == -0.22222217917442322 && t_get(x, 1) == 0.48148149251937866 &&
          t_get(x, 2) == 0.5925925374031067);
    emily_tensor_release(x);
    CHECK_ERR(emily_solve_opts(ta, tb, (emily_linalg_method)5, &x), EMILY_ERR_ARGUMENT, "invalid method");
    int64_t s2[1] = {2};
    emily_tensor *bad = t_from(EMILY_F32, 1, s2, b);
    CHECK_ERR(emily_solve_opts(ta, bad, NX07, &x), EMILY_ERR_SHAPE, "solve");
    CHECK(!x);
    RELEASE(bad, ta, tb);
}

static void check_s(const emily_tensor *t, bool full, const double *want, int64_t k) {
    emily_tensor *u = NULL, *sv = NULL, *vt = NULL;
    CHECK_OK(emily_svd_opts(t, full, 100, NX07, &u, &sv, &vt));
    CHECK(same_values(sv, want, k));
    RELEASE(u, sv, vt);
}

TEST(svd_qdwh_on_nx07_eigh) {
    /* the svd doctest (Nx 0.7 prints these digits) */
    int64_t s43[2] = {4, 3};
    int64_t a[12] = {2, 0, 0, 0, 3, 0, 0, 0, -1, 0, 0, 0};
    emily_tensor *t = t_from(EMILY_S64, 2, s43, a), *u = NULL, *sv = NULL, *vt = NULL;
    CHECK_OK(emily_svd_opts(t, false, 100, NX07, &u, &sv, &vt));
    const double uw[12] = {0, 0.99999994039535522, 0, 1, 0, 0, 0, 0, -1, 0, 0, 0};
    const double sw[3] = {3, 1.9999998807907104, 1}, vw[9] = {0, 1, 0, 1, 0, 0, 0, 0, 1};
    CHECK(same_values(u, uw, 12) && same_values(sv, sw, 3) && same_values(vt, vw, 9));
    emily_tensor *r[3] = {u, sv, vt};
    release3(r);
    emily_tensor_release(t);
    /* 5 x 3: reduced by qr first (5 > 1.15 * 3), in both modes */
    const double m53[15] = {-0.84008577713723787, 0.26675737331107996,    0.55545357931193529,  0.96995105848348739,
                            0.74299483471019956,  -1.7117258144975889e-2, -0.10774770397401134, 0.52624916342691241,
                            0.66692433295895093,  -0.21525232470813815,   0.34482902384205749,  -0.23440152695153094,
                            0.66272845149730664,  1.7563073562549825e-3,  0.90868399932740873};
    const double s53[3] = {1.5247507515358487, 1.3102085837950497, 0.86909586697960850};
    int64_t s53s[2] = {5, 3};
    t = t_from(EMILY_F64, 2, s53s, m53);
    check_s(t, false, s53, 3);
    check_s(t, true, s53, 3);
    emily_tensor_release(t);
    /* 8 x 7: not reduced (8 <= 1.15 * 7), QDWH on the rectangle */
    const double m87[56] = {
        0.59679864992185028,    0.11215371531015261,    -0.67265691326251487, -0.96180041650724490,
        0.93430125788255003,    -0.69181767683775597,   0.67848676260720575,  -0.40877999765335193,
        0.50521428605909025,    0.54726713735788080,    -0.77359096868581778, -6.6902744994225216e-2,
        0.87386255059395035,    0.53919830376549482,    0.91560836105040044,  -0.69689181325494731,
        -0.34407336876670946,   0.22847684563932136,    -0.57663319517359479, 0.69669270251443116,
        0.19613311521900689,    0.21123868846903804,    0.98238581020150173,  -0.54642316276501512,
        5.5784595776057877e-2,  0.60204038922422454,    -0.36075894764502880, 0.22594513817958006,
        0.94342543697475723,    -0.68847187066236204,   0.76259979550052259,  0.27866624410806828,
        -1.6316637107132159e-3, -0.56470487987971252,   -0.12504845318177882, 0.10478171175150885,
        0.80105680584363625,    8.3166255000041378e-2,  -0.60115633946835167, -0.30159823575027955,
        -0.90066931503257974,   -0.68592521283895591,   0.73396324109536604,  0.70438140816909822,
        0.24369322242570357,    -6.5794338599797886e-2, -0.94502480235883413, 0.87252363243506892,
        0.10049400473107006,    -2.3026978049297764e-2, -0.59115143404971926, -0.17013135624004327,
        0.45030247366640586,    -0.77556949629740624,   0.52733861287979833,  -0.32380340989724177};
    const double s87[7] = {2.6667680034185381, 2.0455703554722509,  1.7238800249306361,   1.6150674704014487,
                           1.2544698310759974, 0.87772435297238327, 5.5184542189832195e-2};
    int64_t s87s[2] = {8, 7};
    t = t_from(EMILY_F64, 2, s87s, m87);
    check_s(t, false, s87, 7);
    emily_tensor_release(t);
}

/* ---- empty and batched shapes ------------------------------------------ */

TEST(nx07_empty_and_batched_shapes) {
    int64_t s00[2] = {0, 0}, s033[3] = {0, 3, 3}, s20[2] = {2, 0}, s233[3] = {2, 3, 3};
    emily_tensor *e = t_from(EMILY_F64, 2, s00, NULL), *b0 = t_from(EMILY_F64, 3, s033, NULL);
    emily_tensor *w0 = t_from(EMILY_F64, 2, s20, NULL);
    emily_tensor *r[3] = {NULL, NULL, NULL};
    CHECK_OK(emily_lu_opts(e, 1e-10, NX07, &r[0], &r[1], &r[2]));
    release3(r);
    CHECK_OK(emily_lu_opts(b0, 1e-10, NX07, &r[0], &r[1], &r[2]));
    CHECK(r[0] && emily_tensor_size(r[0]) == 0);
    release3(r);
    CHECK_OK(emily_eigh_opts(e, 1e-4, 1000, NX07, &r[0], &r[1]));
    release3(r);
    CHECK_OK(emily_eigh_opts(b0, 1e-4, 1000, NX07, &r[0], &r[1]));
    release3(r);
    CHECK_OK(emily_qr_opts(w0, EMILY_QR_COMPLETE, 1e-10, NX07, &r[0], &r[1]));
    release3(r);
    CHECK_OK(emily_svd_opts(w0, false, 100, NX07, &r[0], &r[1], &r[2]));
    release3(r);
    CHECK_OK(emily_determinant_opts(b0, NX07, &r[0]));
    CHECK(r[0] && emily_tensor_size(r[0]) == 0);
    release3(r);
    /* a batch of two: each matrix on its own (the second is the first
     * scaled by 2, so lu's l is the same and u doubles) */
    double a[18] = {1, 2, 3, 4, 5, 6, 7, 8, 10, 2, 4, 6, 8, 10, 12, 14, 16, 20};
    emily_tensor *t = t_from(EMILY_F64, 3, s233, a);
    CHECK_OK(emily_lu_opts(t, 1e-10, NX07, &r[0], &r[1], &r[2]));
    if (r[1] && r[2])
        for (int i = 0; i < 9; i++) {
            CHECK(t_get(r[1], i) == t_get(r[1], 9 + i));
            CHECK(2 * t_get(r[2], i) == t_get(r[2], 9 + i));
        }
    release3(r);
    CHECK_OK(emily_determinant_opts(t, NX07, &r[0]));
    CHECK(r[0] && fabs(t_get(r[0], 1) - 8 * t_get(r[0], 0)) < 1e-9);
    release3(r);
    RELEASE(t, e, b0, w0);
}

/* ---- through the dispatcher (the NIF's path) ---------------------------- */

TEST(dispatch_takes_reference_nx07) {
    int64_t s3[2] = {3, 3};
    double a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    emily_tensor *t = t_from(EMILY_F64, 2, s3, a);
    emily_value tmpl[3] = {{.kind = EMILY_V_TEMPLATE, .dtype = EMILY_F64, .rank = 2, .shape = s3},
                           {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_F64, .rank = 2, .shape = s3},
                           {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_F64, .rank = 2, .shape = s3}};
    emily_value out = {.kind = EMILY_V_TUPLE, .items = tmpl, .n = 3};
    emily_value items[2] = {{.kind = EMILY_V_FLOAT, .f = 1e-10}, {.kind = EMILY_V_ATOM, .str = "reference_nx07"}};
    const char *keys[2] = {"eps", "linalg"};
    emily_value args[2] = {{.kind = EMILY_V_TENSOR, .tensor = t},
                           {.kind = EMILY_V_OPTS, .items = items, .keys = keys, .n = 2}};
    emily_dispatch_result r = {0};
    CHECK_OK(emily_dispatch("lu", EMILY_CPU, &out, args, 2, EMILY_DISPATCH_RUN, &r));
    /* Nx 0.7's p for this matrix: rows 7, 4, 1 */
    CHECK(r.n == 3 && t_get(r.tensors[0], 2) == 1 && t_get(r.tensors[0], 4) == 1 && t_get(r.tensors[0], 6) == 1);
    emily_dispatch_result_release(&r);
    items[1].str = "nx07";
    CHECK_ERR(emily_dispatch("lu", EMILY_CPU, &out, args, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "Expected one of [:lapack, :reference, :reference_nx07]");
    /* determinant and solve take the option too */
    emily_value det_tmpl = {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_F64, .rank = 0, .shape = s3};
    emily_value ditems[1] = {{.kind = EMILY_V_ATOM, .str = "reference_nx07"}};
    const char *dkeys[1] = {"linalg"};
    emily_value dargs[2] = {{.kind = EMILY_V_TENSOR, .tensor = t},
                            {.kind = EMILY_V_OPTS, .items = ditems, .keys = dkeys, .n = 1}};
    CHECK_OK(emily_dispatch("determinant", EMILY_CPU, &det_tmpl, dargs, 2, EMILY_DISPATCH_RUN, &r));
    emily_dispatch_result_release(&r);
    emily_value sargs[3] = {{.kind = EMILY_V_TENSOR, .tensor = t},
                            {.kind = EMILY_V_TENSOR, .tensor = t},
                            {.kind = EMILY_V_OPTS, .items = ditems, .keys = dkeys, .n = 1}};
    ditems[0].str = "fast";
    CHECK_ERR(emily_dispatch("solve", EMILY_CPU, &tmpl[0], sargs, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "invalid :linalg");
    emily_tensor_release(t);
}

RUN_TESTS("linalg_nx07", CASE(lu_pivots_up_front), CASE(lu_types_batches_and_singular), CASE(lu_nx07_bad_input),
          CASE(determinant_on_nx07_lu), CASE(eigh_hessenberg_qr_iterations), CASE(eigh_complex_and_not_hermitian),
          CASE(qr_explicit_reflections), CASE(solve_through_qr), CASE(svd_qdwh_on_nx07_eigh),
          CASE(dispatch_takes_reference_nx07), CASE(nx07_empty_and_batched_shapes))
