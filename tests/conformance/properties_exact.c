/* Property checks for lu, cholesky, triangular_solve, solve and
 * determinant (see properties.h and docs/semantics.md, "Checking
 * decompositions"): the ops whose answers are unique, compared bit for
 * bit where the engine runs Nx's own algorithms (the CPU), and checked
 * here where it computes them otherwise (a GPU: cuSOLVER in the input's
 * own precision).
 *
 * In double precision on the outputs rounded to their type, with u the
 * unit roundoff of the output type, n the matrix size, norms Frobenius
 * unless marked, and kappa = ||M||_inf ||M^-1||_inf the condition number
 * of the matrix solved with (computed here in double precision):
 *   structure      exact: lu's p a permutation matrix, l unit lower and
 *                  u upper triangular; cholesky's l lower triangular
 *                  with a real, non-negative diagonal
 *   backward error |P L U - A|, |L L^H - A|, |op(T) X - B| (or
 *                  |X op(T) - B|), |A X - B|
 *                    <= 16 n u (||factor|| ||factor|| + ||A||)
 *                  (+ for cholesky 4.0e-10 n ||L||^2 / min l_jj: Nx's own
 *                  algorithm divides by l_jj + 1.0e-10)
 *                  (LU with partial pivoting, Cholesky and substitution
 *                  are backward stable with errors of order n u times
 *                  those norms; A and B are counted once more for their
 *                  own rounding into the compute type)
 *   forward error  vs the corpus: |X - X_corpus| (solve,
 *                  triangular_solve), |L - L_corpus| (cholesky)
 *                    <= 32 n u kappa max|corpus|  (both sides err by n
 *                  u kappa at most; Nx's cholesky also divides by
 *                  l_jj + 1.0e-10, a relative change of 1.0e-10 / l_jj
 *                  allowed for)
 *   determinant    vs a double-precision LU here and vs the corpus:
 *                  |det - ref| <= 16 n^2 u H + 16 n u |ref|, H the
 *                  product of the column norms (Hadamard's bound on
 *                  the cofactors: a backward error of n u ||a_j|| in
 *                  each column moves det by at most n u n H)
 * Forward comparisons are skipped where kappa u > 1 / (16 n): the
 * problem is too ill-conditioned for either answer to have any digits.
 * Comparisons are elementwise maxima of absolute differences. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "properties.h"
#include "property_math.h"

/* The ops checked here and what each is checked by. */
static const pm_op exact_ops[] = {
    {"lu", "p a permutation matrix, l unit lower and u upper triangular (exact), p l u = a "
           "within 16 n u (|l| |u| + |a|)"},
    {"cholesky", "l lower triangular with a real non-negative diagonal, l l^H = a within 16 n u "
                 "(|l|^2 + |a|); l equals the corpus's within 32 n u cond(a) max|l|"},
    {"triangular_solve", "op(t) x = b (or x op(t) = b) within 16 n u (|t| |x| + |b|); x equals "
                         "the corpus's within 32 n u cond(t) max|x|"},
    {"solve", "a x = b within 16 n u (|a| |x| + |b|); x equals the corpus's within 32 n u "
              "cond(a) max|x|"},
    {"determinant", "det equals a double-precision LU's and the corpus's within 16 n^2 u H + 16 n "
                    "u |det| (H: the product of a's column norms)"},
};
#define N_EXACT_OPS (sizeof exact_ops / sizeof *exact_ops)

bool property_exact_op(const char *op) { return pm_op_find(exact_ops, N_EXACT_OPS, op) != NULL; }

const char *property_exact_description(const char *op) {
    const pm_op *row = pm_op_find(exact_ops, N_EXACT_OPS, op);
    return row ? row->description : "";
}

/* ---- helpers ----------------------------------------------------------- */

/* max |X - Y| over count elements. */
static double max_diff(const zd *x, const zd *y, int64_t count) {
    double worst = 0;
    for (int64_t i = 0; i < count; i++) {
        double d = zabs(zsub(x[i], y[i]));
        if (d > worst || isnan(d)) worst = isnan(d) ? INFINITY : d;
    }
    return worst;
}

/* c (r x k) = a (r x m) . b (m x k), all row-major. */
static void matmul(const zd *a, const zd *b, zd *c, int64_t r, int64_t m, int64_t k) {
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < k; j++) c[i * k + j] = pm_row_col(a, m, b, k, i, j, m);
}

/* kappa_inf of an n x n matrix (INFINITY if singular). */
static double cond_inf(const zd *a, int64_t n) { return pm_norm_inf(a, n) * pm_inverse_norm_inf(a, n); }

/* The forward comparison with the corpus: x (count elements) against
 * xe, the problem's condition number kappa. */
static void forward(pm_check *c, const char *what, int64_t b, const zd *x, const zd *xe, int64_t count, int64_t n,
                    double u, double kappa, double extra) {
    if (!(kappa * u <= 1.0 / (16.0 * (double)n))) return; /* no digits to compare */
    double tol = 32.0 * (double)n * u * kappa * pm_max_abs(xe, count) + extra;
    double d = max_diff(x, xe, count);
    if (d > tol)
        pm_fail(c, "matrix %lld: %s differs from the corpus's by %.3g > %.3g (cond %.3g)", (long long)b, what, d, tol,
                kappa);
}

/* ---- lu ---------------------------------------------------------------- */

static void check_lu(pm_check *c, const emily_tensor *at, const emily_dispatch_result *got) {
    int64_t n = emily_tensor_shape(at)[emily_tensor_rank(at) - 1], nn = n * n;
    double u = pm_unit_roundoff(emily_tensor_dtype(got->tensors[1]));
    zd *a = pm_load(at), *p = pm_load(got->tensors[0]), *l = pm_load(got->tensors[1]);
    zd *up = pm_load(got->tensors[2]), *lu = malloc((size_t)(nn + 1) * sizeof *lu),
       *plu = malloc((size_t)(nn + 1) * sizeof *plu);
    if (!a || !p || !l || !up || !lu || !plu) pm_fail(c, "could not read the tensors");
    for (int64_t b = 0; c->ok && b < pm_batch_count(at); b++) {
        const zd *A = a + b * nn, *P = p + b * nn, *L = l + b * nn, *U = up + b * nn;
        for (int64_t i = 0; i < n; i++) {
            int row = 0, col = 0;
            for (int64_t j = 0; j < n; j++) {
                zd x = P[i * n + j], y = P[j * n + i];
                if (x.im != 0 || (x.re != 0 && x.re != 1))
                    pm_fail(c, "matrix %lld: p[%lld][%lld] = %g is not 0 or 1", (long long)b, (long long)i,
                            (long long)j, x.re);
                row += x.re == 1;
                col += y.re == 1;
                zd lij = L[i * n + j];
                if (j > i && (lij.re != 0 || lij.im != 0))
                    pm_fail(c, "matrix %lld: l[%lld][%lld] above the diagonal is not 0", (long long)b, (long long)i,
                            (long long)j);
                if (j == i && (lij.re != 1 || lij.im != 0))
                    pm_fail(c, "matrix %lld: l[%lld][%lld] on the diagonal is not 1", (long long)b, (long long)i,
                            (long long)j);
                zd uij = U[i * n + j];
                if (j < i && (uij.re != 0 || uij.im != 0))
                    pm_fail(c, "matrix %lld: u[%lld][%lld] below the diagonal is not 0", (long long)b, (long long)i,
                            (long long)j);
            }
            if (row != 1 || col != 1)
                pm_fail(c, "matrix %lld: p is not a permutation (row/column %lld)", (long long)b, (long long)i);
        }
        matmul(L, U, lu, n, n, n);
        matmul(P, lu, plu, n, n, n);
        double tol = 16.0 * (double)n * u * (pm_fro(L, nn) * pm_fro(U, nn) + pm_fro(A, nn));
        double d = max_diff(plu, A, nn);
        if (d > tol) pm_fail(c, "matrix %lld: |p l u - a| = %.3g > %.3g", (long long)b, d, tol);
    }
    free(a), free(p), free(l), free(up), free(lu), free(plu);
}

/* ---- cholesky ---------------------------------------------------------- */

static void check_cholesky(pm_check *c, const emily_tensor *at, const emily_dispatch_result *got,
                           const json_t *expected) {
    int64_t n = emily_tensor_shape(at)[emily_tensor_rank(at) - 1], nn = n * n;
    const emily_tensor *lt = got->tensors[0];
    double u = pm_unit_roundoff(emily_tensor_dtype(lt));
    zd *a = pm_load(at), *l = pm_load(lt), *le = expected ? pm_load_expected(expected, 0, emily_tensor_size(lt)) : NULL;
    zd *h = malloc((size_t)(nn + 1) * sizeof *h), *llh = malloc((size_t)(nn + 1) * sizeof *llh);
    if (!a || !l || !h || !llh) pm_fail(c, "could not read the tensors");
    else if (expected && !le) pm_fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < pm_batch_count(at); b++) {
        const zd *A = a + b * nn, *L = l + b * nn;
        /* the Hermitian matrix a's lower triangle stands for */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) h[i * n + j] = i >= j ? A[i * n + j] : zconj(A[j * n + i]);
        for (int64_t i = 0; i < n; i++) {
            if (L[i * n + i].im != 0 || !(L[i * n + i].re >= 0))
                pm_fail(c, "matrix %lld: l[%lld][%lld] = %g%+gi is not a non-negative real", (long long)b, (long long)i,
                        (long long)i, L[i * n + i].re, L[i * n + i].im);
            for (int64_t j = i + 1; j < n; j++)
                if (L[i * n + j].re != 0 || L[i * n + j].im != 0)
                    pm_fail(c, "matrix %lld: l[%lld][%lld] above the diagonal is not 0", (long long)b, (long long)i,
                            (long long)j);
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) llh[i * n + j] = pm_row_row_conj(L, n, i, j, n);
        /* Nx's own l (the CPU's) divides by l_jj + 1.0e-10: allowed for */
        double lmin = INFINITY;
        for (int64_t i = 0; i < n; i++) lmin = fmin(lmin, L[i * n + i].re);
        double fl = pm_fro(L, nn), quirk = lmin > 0 ? 4.0e-10 * (double)n * fl * fl / lmin : 0;
        double tol = 16.0 * (double)n * u * (fl * fl + pm_fro(h, nn)) + quirk;
        double d = max_diff(llh, h, nn);
        if (d > tol) pm_fail(c, "matrix %lld: |l l^H - a| = %.3g > %.3g", (long long)b, d, tol);
        if (!c->ok || !le) continue;
        const zd *LE = le + b * nn;
        double dmin = INFINITY;
        for (int64_t i = 0; i < n; i++) dmin = fmin(dmin, LE[i * n + i].re);
        double fquirk = dmin > 0 ? 4.0e-10 * (double)n * pm_max_abs(LE, nn) / dmin : 0;
        forward(c, "l", b, L, LE, nn, n, u, cond_inf(h, n), fquirk);
    }
    free(a), free(l), free(le), free(h), free(llh);
}

/* ---- triangular_solve and solve ---------------------------------------- */

/* The residual check and the forward comparison of a linear system
 * m . x = bb (left) or x . m = bb (right), x rows x cols. */
static void check_system(pm_check *c, int64_t b, const zd *M, const zd *X, const zd *B, const zd *XE, int64_t n,
                         int64_t rows, int64_t cols, bool left, double u, zd *work) {
    int64_t count = rows * cols;
    if (left) matmul(M, X, work, n, n, cols);
    else matmul(X, M, work, rows, n, n);
    double tol = 16.0 * (double)n * u * (pm_fro(M, n * n) * pm_fro(X, count) + pm_fro(B, count));
    double d = max_diff(work, B, count);
    if (d > tol) pm_fail(c, "matrix %lld: residual %.3g > %.3g", (long long)b, d, tol);
    if (!c->ok || !XE) return;
    /* x op(M) = b is op(M)^T x^T = b^T: the larger of both norms' kappa */
    double kappa = cond_inf(M, n);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) work[j * n + i] = M[i * n + j];
    kappa = fmax(kappa, cond_inf(work, n));
    forward(c, "x", b, X, XE, count, n, u, kappa, 0);
}

static void check_solve(pm_check *c, const char *op, const emily_value *args, size_t nargs,
                        const emily_dispatch_result *got, const json_t *expected) {
    if (nargs < 2 || args[1].kind != EMILY_V_TENSOR) {
        pm_fail(c, "no right-hand side");
        return;
    }
    bool tri = strcmp(op, "triangular_solve") == 0;
    const emily_value *opts = pm_opts(args, nargs);
    bool left = !tri || pm_opt_bool(opts, "left_side", true), lower = pm_opt_bool(opts, "lower", true);
    const emily_value *tv = pm_opt(opts, "transform_a");
    bool transpose = tri && tv && tv->kind == EMILY_V_ATOM && strcmp(tv->str, "transpose") == 0;
    bool conjugate = tri && tv && tv->kind == EMILY_V_ATOM && strcmp(tv->str, "conjugate") == 0;
    const emily_tensor *at = args[0].tensor, *bt = args[1].tensor, *xt = got->tensors[0];
    int ar = emily_tensor_rank(at), br = emily_tensor_rank(bt);
    int64_t n = emily_tensor_shape(at)[ar - 1], nn = n * n;
    bool vec = br == ar - 1;
    int64_t rows = vec ? (left ? n : 1) : emily_tensor_shape(bt)[br - 2];
    int64_t cols = vec ? (left ? 1 : n) : emily_tensor_shape(bt)[br - 1], count = rows * cols;
    double u = pm_unit_roundoff(emily_tensor_dtype(xt));
    zd *a = pm_load(at), *bb = pm_load(bt), *x = pm_load(xt);
    zd *xe = expected ? pm_load_expected(expected, 0, emily_tensor_size(xt)) : NULL;
    int64_t wn = (nn > count ? nn : count) + 1;
    zd *m = malloc((size_t)(nn + 1) * sizeof *m), *work = malloc((size_t)wn * sizeof *work);
    if (!a || !bb || !x || !m || !work) pm_fail(c, "could not read the tensors");
    else if (expected && !xe) pm_fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < pm_batch_count(at); b++) {
        const zd *A = a + b * nn;
        /* the matrix solved with: op(triangle of a), or a */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                int64_t si = transpose ? j : i, sj = transpose ? i : j;
                bool kept = !tri || (lower ? sj <= si : sj >= si);
                zd v = kept ? A[si * n + sj] : (zd){0, 0};
                m[i * n + j] = conjugate ? zconj(v) : v;
            }
        check_system(c, b, m, x + b * count, bb + b * count, xe ? xe + b * count : NULL, n, rows, cols, left, u, work);
    }
    free(a), free(bb), free(x), free(xe), free(m), free(work);
}

/* ---- determinant ------------------------------------------------------- */

/* det of an n x n matrix by LU with partial pivoting in double (m is
 * overwritten). */
static zd det_double(zd *m, int64_t n) {
    zd det = {1, 0};
    for (int64_t k = 0; k < n; k++) {
        int64_t p = k;
        for (int64_t i = k + 1; i < n; i++)
            if (zabs(m[i * n + k]) > zabs(m[p * n + k])) p = i;
        if (p != k) {
            for (int64_t j = 0; j < n; j++) {
                zd t = m[k * n + j];
                m[k * n + j] = m[p * n + j];
                m[p * n + j] = t;
            }
            det = (zd){-det.re, -det.im};
        }
        zd piv = m[k * n + k];
        det = zmul(det, piv);
        if (piv.re == 0 && piv.im == 0) return (zd){0, 0};
        double d = piv.re * piv.re + piv.im * piv.im;
        zd inv = {piv.re / d, -piv.im / d};
        for (int64_t i = k + 1; i < n; i++) {
            zd f = zmul(m[i * n + k], inv);
            for (int64_t j = k; j < n; j++) m[i * n + j] = zsub(m[i * n + j], zmul(f, m[k * n + j]));
        }
    }
    return det;
}

static void check_determinant(pm_check *c, const emily_tensor *at, const emily_dispatch_result *got,
                              const json_t *expected) {
    int64_t n = emily_tensor_shape(at)[emily_tensor_rank(at) - 1], nn = n * n;
    const emily_tensor *dt = got->tensors[0];
    double u = pm_unit_roundoff(emily_tensor_dtype(dt));
    zd *a = pm_load(at), *det = pm_load(dt),
       *de = expected ? pm_load_expected(expected, 0, emily_tensor_size(dt)) : NULL;
    zd *m = malloc((size_t)(nn + 1) * sizeof *m);
    if (!a || !det || !m) pm_fail(c, "could not read the tensors");
    else if (expected && !de) pm_fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < pm_batch_count(at); b++) {
        const zd *A = a + b * nn;
        double hadamard = 1;
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t i = 0; i < n; i++) s += A[i * n + j].re * A[i * n + j].re + A[i * n + j].im * A[i * n + j].im;
            hadamard *= sqrt(s);
        }
        memcpy(m, A, (size_t)nn * sizeof *m);
        zd ref = det_double(m, n);
        double dn = (double)n;
        for (int k = 0; k < (de ? 2 : 1); k++) {
            zd want = k ? de[b] : ref;
            double tol = 16.0 * dn * dn * u * hadamard + 16.0 * (dn + 1) * u * zabs(want);
            double d = zabs(zsub(det[b], want));
            if (!(d <= tol))
                pm_fail(c, "matrix %lld: det %.9g%+.9gi, %s %.9g%+.9gi (|diff| %.3g > %.3g)", (long long)b, det[b].re,
                        det[b].im, k ? "the corpus has" : "double-precision LU gives", want.re, want.im, d, tol);
        }
    }
    free(a), free(det), free(de), free(m);
}

bool property_exact_check(const char *op, const emily_value *args, size_t nargs, const emily_dispatch_result *got,
                          const json_t *expected, char *msg, size_t msgsize) {
    pm_check c = {.msg = msg, .size = msgsize, .ok = true};
    if (msgsize) msg[0] = 0;
    if (!args || nargs < 1 || args[0].kind != EMILY_V_TENSOR || !got) return pm_fail(&c, "no input tensor");
    const emily_tensor *a = args[0].tensor;
    int want = strcmp(op, "lu") == 0 ? 3 : 1;
    if (!property_exact_op(op)) return pm_fail(&c, "no property check for %s", op);
    if (got->n != want) return pm_fail(&c, "%d outputs, want %d", got->n, want);
    if (emily_tensor_rank(a) < 2) return pm_fail(&c, "input of rank %d", emily_tensor_rank(a));
    if (strcmp(op, "lu") == 0) check_lu(&c, a, got);
    else if (strcmp(op, "cholesky") == 0) check_cholesky(&c, a, got, expected);
    else if (strcmp(op, "determinant") == 0) check_determinant(&c, a, got, expected);
    else check_solve(&c, op, args, nargs, got, expected);
    return c.ok;
}
