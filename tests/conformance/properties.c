/* Property checks for qr, svd and eigh (see properties.h and
 * docs/semantics.md, "Checking decompositions"); the other linear
 * algebra ops' are in properties_exact.c.
 *
 * Everything is evaluated in double precision (complex throughout; real
 * data has zero imaginary parts) on the outputs rounded to their type.
 * With eps the unit roundoff of the output type, ||A|| the Frobenius
 * norm of one input matrix and d = max(m, n):
 *   orthonormality  |Q^H Q - I|            <= 16 d eps
 *   reconstruction  |Q R - A|, |U S V - A|,
 *                   |A V - V diag(w)|      <= 16 d eps ||A||  (+ the
 *                   op's :eps zeroing term for qr)
 *   unique values vs the corpus            <= 16 d eps ||A|| + the
 *                   reference algorithm's own accuracy bound (eigh and
 *                   svd: Nx's Jacobi stops once the off-diagonal part E
 *                   has ||E||_F <= eta = eps_j ||A||_F, eps_j = eigh's
 *                   :eps, 1.0e-4 inside svd; the diagonal it returns is
 *                   then within min(eta, 2 eta^2 / gap) of the true
 *                   eigenvalue, gap = the distance to the nearest other
 *                   eigenvalue (Weyl; second-order perturbation when
 *                   gap > 4 eta))
 * Comparisons are elementwise maxima of absolute differences. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "properties.h"
#include "property_math.h"

/* The ops checked here and what each is checked by. */
static const pm_op checked_ops[] = {
    {"qr", "Q^H Q = I, R upper triangular (exact zeros), QR = A; given the corpus result "
           "(property_check_expected), R's rows and Q's first min(m,n) columns equal the "
           "corpus's up to one sign (phase) each (tolerances in docs/semantics.md)"},
    {"svd", "U^T U = I, V V^T = I, U diag(s) V = A, s >= 0 descending; given the corpus "
            "result, s equals the corpus's within the dtype's tolerance plus the reference's "
            "Jacobi error bound"},
    {"eigh", "V^H V = I, A V = V diag(w), w real and ordered by decreasing |w|; given the "
             "corpus result, w equals the corpus's (as sorted sets) within the dtype's "
             "tolerance plus the reference's Jacobi error bound"},
};
#define N_CHECKED_OPS (sizeof checked_ops / sizeof *checked_ops)

bool property_checked_op(const char *op) { return pm_op_find(checked_ops, N_CHECKED_OPS, op) != NULL; }

const char *property_description(const char *op) {
    const pm_op *row = pm_op_find(checked_ops, N_CHECKED_OPS, op);
    return row ? row->description : property_exact_description(op);
}

/* ---- helpers ----------------------------------------------------------- */

/* max |X^H X - I| for X rows x cols (row-major); columns orthonormal. */
static double orth_cols(const zd *x, int64_t rows, int64_t cols) {
    double worst = 0;
    for (int64_t i = 0; i < cols; i++)
        for (int64_t j = 0; j < cols; j++) {
            zd s = {0, 0};
            for (int64_t r = 0; r < rows; r++) {
                zd p = zmul(zconj(x[r * cols + i]), x[r * cols + j]);
                s.re += p.re;
                s.im += p.im;
            }
            if (i == j) s.re -= 1;
            if (zabs(s) > worst) worst = zabs(s);
        }
    return worst;
}

/* max |X X^H - I| for X rows x cols; rows orthonormal. */
static double orth_rows(const zd *x, int64_t rows, int64_t cols) {
    double worst = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < rows; j++) {
            zd s = pm_row_row_conj(x, cols, i, j, cols);
            if (i == j) s.re -= 1;
            if (zabs(s) > worst) worst = zabs(s);
        }
    return worst;
}

/* The reference's error bound for value i of `vals` (n values, any
 * order) after Jacobi stops with an off-diagonal norm <= eta. */
static double jacobi_bound(const double *vals, int64_t n, int64_t i, double eta) {
    double gap = INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (j != i && fabs(vals[j] - vals[i]) < gap) gap = fabs(vals[j] - vals[i]);
    return gap > 4 * eta ? 2 * eta * eta / gap : eta;
}

/* ---- qr ---------------------------------------------------------------- */

static void check_qr(pm_check *c, const emily_tensor *at, const emily_value *opts, const emily_dispatch_result *got,
                     const json_t *expected) {
    const int64_t *as = emily_tensor_shape(at);
    int rank = emily_tensor_rank(at);
    int64_t m = as[rank - 2], n = as[rank - 1], k = m < n ? m : n;
    const emily_tensor *qt = got->tensors[0], *rt = got->tensors[1];
    int64_t qc = emily_tensor_shape(qt)[rank - 1], rr = emily_tensor_shape(rt)[rank - 2];
    double u = pm_unit_roundoff(emily_tensor_dtype(qt)), eps = pm_opt_number(opts, "eps", 1.0e-10);
    double d = (double)(m > n ? m : n);
    zd *a = pm_load(at), *q = pm_load(qt), *r = pm_load(rt);
    zd *qe = expected ? pm_load_expected(expected, 0, emily_tensor_size(qt)) : NULL;
    zd *re = expected ? pm_load_expected(expected, 1, emily_tensor_size(rt)) : NULL;
    if (!a || !q || !r) pm_fail(c, "could not read the tensors");
    else if (expected && (!qe || !re)) pm_fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < pm_batch_count(at); b++) {
        const zd *A = a + b * m * n, *Q = q + b * m * qc, *R = r + b * rr * n;
        double scale = pm_fro(A, m * n);
        for (int64_t i = 0; i < rr; i++)
            for (int64_t j = 0; j < n && j < i; j++)
                if (R[i * n + j].re != 0 || R[i * n + j].im != 0)
                    pm_fail(c, "matrix %lld: R[%lld][%lld] = %g below the diagonal", (long long)b, (long long)i,
                            (long long)j, zabs(R[i * n + j]));
        double orth = orth_cols(Q, m, qc);
        if (orth > 16 * d * u) pm_fail(c, "matrix %lld: |Q^H Q - I| = %.3g > %.3g", (long long)b, orth, 16 * d * u);
        bool zeroed = false;
        for (int64_t i = 0; i < m * qc; i++) zeroed |= Q[i].re == 0 && Q[i].im == 0;
        for (int64_t i = 0; i < rr; i++)
            for (int64_t j = i; j < n; j++) zeroed |= R[i * n + j].re == 0 && R[i * n + j].im == 0;
        double tol = 16 * d * u * scale +
                     (zeroed ? eps * sqrt((double)k) * (pm_fro(Q, m * qc) + pm_fro(R, rr * n)) : 0);
        double worst = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                zd s = pm_row_col(Q, qc, R, n, i, j, qc < rr ? qc : rr);
                double e = zabs(zsub(s, A[i * n + j]));
                if (e > worst) worst = e;
            }
        if (worst > tol) pm_fail(c, "matrix %lld: |QR - A| = %.3g > %.3g", (long long)b, worst, tol);
        if (!c->ok || !qe) continue;
        /* R's rows and Q's first k columns are unique up to a unit factor
         * per index where A has full column rank; the reference itself is
         * accurate to about d u cond(R) ||A||. */
        const zd *QE = qe + b * m * qc, *RE = re + b * rr * n;
        double dmax = 0, dmin = INFINITY;
        for (int64_t i = 0; i < k; i++) {
            double x = zabs(RE[i * n + i]);
            dmax = x > dmax ? x : dmax;
            dmin = x < dmin ? x : dmin;
        }
        double floor = 16 * d * u * scale;
        double cond = dmin > floor ? dmax / dmin : 0;
        double tol_r = 16 * (double)(m + n) * u * cond * scale + eps;
        double tol_q = 16 * (double)(m + n) * u * cond + eps;
        for (int64_t i = 0; cond > 0 && i < k; i++) {
            zd g = R[i * n + i], e = RE[i * n + i];
            zd ph = zmul(g, zconj(e));
            double mag = zabs(ph);
            if (mag == 0) continue;
            ph.re /= mag;
            ph.im /= mag;
            for (int64_t j = i; j < n; j++) {
                double diff = zabs(zsub(R[i * n + j], zmul(ph, RE[i * n + j])));
                if (diff > tol_r)
                    pm_fail(c,
                            "matrix %lld: R[%lld][%lld] differs from the corpus's by %.3g (up to "
                            "sign) > %.3g",
                            (long long)b, (long long)i, (long long)j, diff, tol_r);
            }
            for (int64_t l = 0; l < m; l++) {
                double diff = zabs(zsub(Q[l * qc + i], zmul(zconj(ph), QE[l * qc + i])));
                if (diff > tol_q)
                    pm_fail(c,
                            "matrix %lld: Q[%lld][%lld] differs from the corpus's by %.3g (up to "
                            "sign) > %.3g",
                            (long long)b, (long long)l, (long long)i, diff, tol_q);
            }
        }
    }
    free(a);
    free(q);
    free(r);
    free(qe);
    free(re);
}

/* ---- svd --------------------------------------------------------------- */

/* Nx's SVD gets its singular values from its Jacobi eigh (eps 1.0e-4),
 * zeroing |value| <= 1.0e-4; without full matrices it takes square roots
 * of the Gram matrix's eigenvalues, so values up to 1.0e-2 become 0. */
#define NX_SVD_JACOBI_EPS 1.0e-4

static void check_svd(pm_check *c, const emily_tensor *at, const emily_value *opts, const emily_dispatch_result *got,
                      const json_t *expected) {
    const int64_t *as = emily_tensor_shape(at);
    int rank = emily_tensor_rank(at);
    int64_t m = as[rank - 2], n = as[rank - 1], k = m < n ? m : n;
    const emily_tensor *ut = got->tensors[0], *st = got->tensors[1], *vt = got->tensors[2];
    int64_t uc = emily_tensor_shape(ut)[rank - 1], vr = emily_tensor_shape(vt)[rank - 2];
    const emily_value *fm = pm_opt(opts, "full_matrices?");
    bool full = !fm || fm->kind != EMILY_V_BOOL || fm->b;
    double u = pm_unit_roundoff(emily_tensor_dtype(ut)), d = (double)(m > n ? m : n);
    zd *a = pm_load(at), *U = pm_load(ut), *S = pm_load(st), *V = pm_load(vt);
    zd *se = expected ? pm_load_expected(expected, 1, emily_tensor_size(st)) : NULL;
    double *lam = malloc((size_t)(k + 1) * sizeof(double));
    if (!a || !U || !S || !V || !lam) pm_fail(c, "could not read the tensors");
    else if (expected && !se) pm_fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < pm_batch_count(at); b++) {
        const zd *A = a + b * m * n, *Ub = U + b * m * uc, *Sb = S + b * k, *Vb = V + b * vr * n;
        double scale = pm_fro(A, m * n);
        for (int64_t i = 0; i < k; i++) {
            if (Sb[i].im != 0 || !(Sb[i].re >= 0))
                pm_fail(c, "matrix %lld: s[%lld] = %g is not a nonnegative real", (long long)b, (long long)i, Sb[i].re);
            if (i && Sb[i].re > Sb[i - 1].re)
                pm_fail(c, "matrix %lld: s is not in descending order at %lld", (long long)b, (long long)i);
        }
        double ou = orth_cols(Ub, m, uc), ov = orth_rows(Vb, vr, n);
        if (ou > 16 * d * u) pm_fail(c, "matrix %lld: |U^T U - I| = %.3g > %.3g", (long long)b, ou, 16 * d * u);
        if (ov > 16 * d * u) pm_fail(c, "matrix %lld: |V V^T - I| = %.3g > %.3g", (long long)b, ov, 16 * d * u);
        double worst = 0, tol = 16 * d * u * scale;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                zd s = {0, 0};
                for (int64_t l = 0; l < k; l++) {
                    zd p = zmul(Ub[i * uc + l], Vb[l * n + j]);
                    s.re += p.re * Sb[l].re;
                    s.im += p.im * Sb[l].re;
                }
                double e = zabs(zsub(s, A[i * n + j]));
                if (e > worst) worst = e;
            }
        if (worst > tol) pm_fail(c, "matrix %lld: |U S V - A| = %.3g > %.3g", (long long)b, worst, tol);
        if (!c->ok || !se) continue;
        const zd *SE = se + b * k;
        /* full: Jacobi on H (||H|| = ||A||) gives s; otherwise Jacobi on
         * A^T A (||.|| <= ||A||^2) gives s^2 */
        for (int64_t i = 0; i < k; i++) lam[i] = full ? Sb[i].re : Sb[i].re * Sb[i].re;
        double eta = NX_SVD_JACOBI_EPS * (full ? scale : scale * scale);
        double zero_at = full ? NX_SVD_JACOBI_EPS : sqrt(NX_SVD_JACOBI_EPS);
        for (int64_t i = 0; i < k; i++) {
            double jb = jacobi_bound(lam, k, i, eta);
            if (!full) jb = Sb[i].re > 0 ? fmin(sqrt(jb), jb / Sb[i].re) : sqrt(jb);
            double tol_s = 16 * d * u * scale + jb;
            double diff = fabs(Sb[i].re - SE[i].re);
            if (SE[i].re == 0 && Sb[i].re <= zero_at + tol_s) continue;
            if (diff > tol_s)
                pm_fail(c, "matrix %lld: s[%lld] = %.17g, the corpus has %.17g (|diff| %.3g > %.3g)", (long long)b,
                        (long long)i, Sb[i].re, SE[i].re, diff, tol_s);
        }
    }
    free(a);
    free(U);
    free(S);
    free(V);
    free(se);
    free(lam);
}

/* ---- eigh -------------------------------------------------------------- */

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static void check_eigh(pm_check *c, const emily_tensor *at, const emily_value *opts, const emily_dispatch_result *got,
                       const json_t *expected) {
    const int64_t *as = emily_tensor_shape(at);
    int rank = emily_tensor_rank(at);
    int64_t n = as[rank - 1];
    const emily_tensor *wt = got->tensors[0], *vt = got->tensors[1];
    double u = pm_unit_roundoff(emily_tensor_dtype(vt)), d = (double)n;
    double jeps = pm_opt_number(opts, "eps", 1.0e-4);
    zd *a = pm_load(at), *W = pm_load(wt), *V = pm_load(vt);
    zd *we = expected ? pm_load_expected(expected, 0, emily_tensor_size(wt)) : NULL;
    double *s1 = malloc((size_t)(n + 1) * sizeof(double)), *s2 = malloc((size_t)(n + 1) * sizeof(double));
    if (!a || !W || !V || !s1 || !s2) pm_fail(c, "could not read the tensors");
    else if (expected && !we) pm_fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < pm_batch_count(at); b++) {
        const zd *A = a + b * n * n, *Wb = W + b * n, *Vb = V + b * n * n;
        double scale = pm_fro(A, n * n);
        for (int64_t i = 0; i < n; i++) {
            if (Wb[i].im != 0 || isnan(Wb[i].re))
                pm_fail(c, "matrix %lld: eigenvalue %lld is not real", (long long)b, (long long)i);
            if (i && fabs(Wb[i].re) > fabs(Wb[i - 1].re))
                pm_fail(c, "matrix %lld: eigenvalues are not ordered by decreasing magnitude at %lld", (long long)b,
                        (long long)i);
        }
        double ov = orth_cols(Vb, n, n);
        if (ov > 16 * d * u) pm_fail(c, "matrix %lld: |V^H V - I| = %.3g > %.3g", (long long)b, ov, 16 * d * u);
        double worst = 0, tol = 16 * d * u * scale;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                zd s = pm_row_col(A, n, Vb, n, i, j, n);
                zd vw = {Vb[i * n + j].re * Wb[j].re, Vb[i * n + j].im * Wb[j].re};
                double e = zabs(zsub(s, vw));
                if (e > worst) worst = e;
            }
        if (worst > tol) pm_fail(c, "matrix %lld: |A V - V diag(w)| = %.3g > %.3g", (long long)b, worst, tol);
        if (!c->ok || !we) continue;
        /* as sorted sets: the order of equal-magnitude values of opposite
         * sign is not determined */
        for (int64_t i = 0; i < n; i++) {
            s1[i] = Wb[i].re;
            s2[i] = we[b * n + i].re;
        }
        qsort(s1, (size_t)n, sizeof(double), cmp_double);
        qsort(s2, (size_t)n, sizeof(double), cmp_double);
        for (int64_t i = 0; i < n; i++) {
            double tol_w = 16 * d * u * scale + jacobi_bound(s1, n, i, jeps * scale);
            double diff = fabs(s1[i] - s2[i]);
            if (s2[i] == 0 && fabs(s1[i]) <= jeps + tol_w) continue; /* zeroed by the reference */
            if (diff > tol_w)
                pm_fail(c, "matrix %lld: eigenvalue %.17g, the corpus has %.17g (|diff| %.3g > %.3g)", (long long)b,
                        s1[i], s2[i], diff, tol_w);
        }
    }
    free(a);
    free(W);
    free(V);
    free(we);
    free(s1);
    free(s2);
}

bool property_check_expected(const char *op, const emily_value *args, size_t nargs, const emily_dispatch_result *got,
                             const json_t *expected, char *msg, size_t msgsize) {
    if (property_exact_op(op)) return property_exact_check(op, args, nargs, got, expected, msg, msgsize);
    pm_check c = {.msg = msg, .size = msgsize, .ok = true};
    if (msgsize) msg[0] = 0;
    if (!args || nargs < 1 || args[0].kind != EMILY_V_TENSOR || !got) {
        pm_fail(&c, "no input tensor");
        return false;
    }
    const emily_tensor *a = args[0].tensor;
    const emily_value *opts = pm_opts(args, nargs);
    int want = strcmp(op, "eigh") == 0 || strcmp(op, "qr") == 0 ? 2 : 3;
    if (!property_checked_op(op)) return pm_fail(&c, "no property check for %s", op);
    if (got->n != want) return pm_fail(&c, "%d outputs, want %d", got->n, want);
    if (emily_tensor_rank(a) < 2) return pm_fail(&c, "input of rank %d", emily_tensor_rank(a));
    if (strcmp(op, "qr") == 0) check_qr(&c, a, opts, got, expected);
    else if (strcmp(op, "svd") == 0) check_svd(&c, a, opts, got, expected);
    else check_eigh(&c, a, opts, got, expected);
    return c.ok;
}

bool property_check(const char *op, const emily_value *args, size_t nargs, const emily_dispatch_result *got, char *msg,
                    size_t msgsize) {
    return property_check_expected(op, args, nargs, got, NULL, msg, msgsize);
}
