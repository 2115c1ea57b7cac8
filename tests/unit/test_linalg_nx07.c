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
    const double l4[16] = {1, 0, 0, 0, -0.5714285714285714, 1, 0, 0, -0.14285714285714285,
                           -0.085106382978723416, 1, 0, -0.071428571428571425, 0.10638297872340426,
                           0.26185101580135445, 1};
    const double u4[16] = {-7, 8, 9, 2, 0, 10.071428571428571, -0.85714285714285765, 2.1428571428571428,
                           0, 0, 4.7127659574468082, 0.71808510638297873, 0, 0, 0, 2.7268623024830698};
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
    const double l[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0.33333333333333331, 0.5, 1, 0,
                          0.66666666666666663, 0.5, 11.000000000000009, 1};
    const double u[16] = {3, 0, 2, 1, 0, 2, 1, 3, 0, 0, -0.16666666666666652, -0.83333333333333326,
                          0, 0, 0, 11.000000000000007};
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
    CHECK_ERR(emily_lu_opts(t, 1e-10, (emily_linalg_method)9, &r[0], &r[1], &r[2]),
              EMILY_ERR_ARGUMENT, "invalid method");
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
    emily_tensor_release(ta);
    emily_tensor_release(tb);
    emily_tensor_release(tc);
}

RUN_TESTS("linalg_nx07", CASE(lu_pivots_up_front), CASE(lu_types_batches_and_singular),
          CASE(lu_nx07_bad_input), CASE(determinant_on_nx07_lu))
