/* Property checks for qr, svd and eigh (see properties.h and
 * docs/semantics.md, "Checking decompositions").
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json_values.h"
#include "properties.h"

typedef struct zd {
    double re, im;
} zd;

static zd zmul(zd a, zd b) { return (zd){a.re * b.re - a.im * b.im, a.im * b.re + a.re * b.im}; }
static zd zconj(zd a) { return (zd){a.re, -a.im}; }
static double zabs(zd a) { return hypot(a.re, a.im); }
static zd zsub(zd a, zd b) { return (zd){a.re - b.re, a.im - b.im}; }

bool property_checked_op(const char *op) {
    return strcmp(op, "qr") == 0 || strcmp(op, "svd") == 0 || strcmp(op, "eigh") == 0;
}

const char *property_description(const char *op) {
    if (strcmp(op, "qr") == 0)
        return "Q^H Q = I, R upper triangular (exact zeros), QR = A; given the corpus result "
               "(property_check_expected), R's rows and Q's first min(m,n) columns equal the "
               "corpus's up to one sign (phase) each (tolerances in docs/semantics.md)";
    if (strcmp(op, "svd") == 0)
        return "U^T U = I, V V^T = I, U diag(s) V = A, s >= 0 descending; given the corpus "
               "result, s equals the corpus's within the dtype's tolerance plus the reference's "
               "Jacobi error bound";
    if (strcmp(op, "eigh") == 0)
        return "V^H V = I, A V = V diag(w), w real and ordered by decreasing |w|; given the "
               "corpus result, w equals the corpus's (as sorted sets) within the dtype's "
               "tolerance plus the reference's Jacobi error bound";
    return "";
}

/* ---- loading ----------------------------------------------------------- */

/* All elements of t as complex doubles (malloc'd). */
static zd *load(const emily_tensor *t) {
    emily_tensor *c = NULL;
    if (emily_as_type(t, EMILY_C128, &c)) return NULL;
    size_t n = (size_t)emily_tensor_size(c);
    zd *out = malloc((n ? n : 1) * sizeof *out);
    if (out && emily_to_binary(c, out, n * sizeof *out)) {
        free(out);
        out = NULL;
    }
    emily_tensor_release(c);
    return out;
}

/* The k-th tensor of a corpus result (a JSON list of tensors). */
static zd *load_expected(const json_t *expected, size_t k, int64_t want_size) {
    const json_t *r = json_is_array(expected) ? json_array_get(expected, k) : NULL;
    if (!r) return NULL;
    emily_dtype dt = emily_dtype_from_name(json_string_value(json_object_get(r, "type")));
    const json_t *shp = json_object_get(r, "shape");
    if (dt == EMILY_DTYPE_AUTO || !json_is_array(shp) || json_array_size(shp) > 16) return NULL;
    int64_t shape[16];
    int rank = (int)json_array_size(shp);
    for (int i = 0; i < rank; i++) shape[i] = (int64_t)json_integer_value(json_array_get(shp, i));
    size_t nbytes;
    unsigned char *data = b64_decode(json_string_value(json_object_get(r, "data")), &nbytes);
    if (!data) return NULL;
    emily_tensor *t = NULL;
    zd *out = NULL;
    if (!emily_from_binary(EMILY_CPU, dt, rank, shape, data, nbytes, &t) &&
        emily_tensor_size(t) == want_size)
        out = load(t);
    emily_tensor_release(t);
    free(data);
    return out;
}

/* ---- helpers ----------------------------------------------------------- */

typedef struct check {
    char *msg;
    size_t size;
    bool ok;
} check;

static bool fail(check *c, const char *fmt, ...) {
    if (c->ok) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->msg, c->size, fmt, ap);
        va_end(ap);
    }
    c->ok = false;
    return false;
}

static double unit_roundoff(emily_dtype t) {
    switch (emily_type_to_real(t)) {
    case EMILY_F16: return 0x1p-11;
    case EMILY_BF16: return 0x1p-8;
    case EMILY_F32: return 0x1p-24;
    default: return 0x1p-53;
    }
}

static double fro(const zd *a, int64_t count) {
    double s = 0;
    for (int64_t i = 0; i < count; i++) s += a[i].re * a[i].re + a[i].im * a[i].im;
    return sqrt(s);
}

static const emily_value *opts_arg(const emily_value *args, size_t nargs) {
    return nargs > 1 && args[1].kind == EMILY_V_OPTS ? &args[1] : NULL;
}

static const emily_value *opt(const emily_value *opts, const char *key) {
    if (!opts) return NULL;
    for (size_t i = 0; i < opts->n; i++)
        if (opts->keys[i] && strcmp(opts->keys[i], key) == 0) return &opts->items[i];
    return NULL;
}

static double opt_number(const emily_value *opts, const char *key, double dflt) {
    const emily_value *v = opt(opts, key);
    if (v && v->kind == EMILY_V_FLOAT) return v->f;
    if (v && v->kind == EMILY_V_INT) return (double)v->i;
    return dflt;
}

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
            zd s = {0, 0};
            for (int64_t c = 0; c < cols; c++) {
                zd p = zmul(x[i * cols + c], zconj(x[j * cols + c]));
                s.re += p.re;
                s.im += p.im;
            }
            if (i == j) s.re -= 1;
            if (zabs(s) > worst) worst = zabs(s);
        }
    return worst;
}

static int64_t batch_count(const emily_tensor *a) {
    int64_t b = 1;
    for (int i = 0; i < emily_tensor_rank(a) - 2; i++) b *= emily_tensor_shape(a)[i];
    return b;
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

static void check_qr(check *c, const emily_tensor *at, const emily_value *opts,
                     const emily_dispatch_result *got, const json_t *expected) {
    const int64_t *as = emily_tensor_shape(at);
    int rank = emily_tensor_rank(at);
    int64_t m = as[rank - 2], n = as[rank - 1], k = m < n ? m : n;
    const emily_tensor *qt = got->tensors[0], *rt = got->tensors[1];
    int64_t qc = emily_tensor_shape(qt)[rank - 1], rr = emily_tensor_shape(rt)[rank - 2];
    double u = unit_roundoff(emily_tensor_dtype(qt)), eps = opt_number(opts, "eps", 1.0e-10);
    double d = (double)(m > n ? m : n);
    zd *a = load(at), *q = load(qt), *r = load(rt);
    zd *qe = expected ? load_expected(expected, 0, emily_tensor_size(qt)) : NULL;
    zd *re = expected ? load_expected(expected, 1, emily_tensor_size(rt)) : NULL;
    if (!a || !q || !r) fail(c, "could not read the tensors");
    else if (expected && (!qe || !re)) fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < batch_count(at); b++) {
        const zd *A = a + b * m * n, *Q = q + b * m * qc, *R = r + b * rr * n;
        double scale = fro(A, m * n);
        for (int64_t i = 0; i < rr; i++)
            for (int64_t j = 0; j < n && j < i; j++)
                if (R[i * n + j].re != 0 || R[i * n + j].im != 0)
                    fail(c, "matrix %lld: R[%lld][%lld] = %g below the diagonal", (long long)b,
                         (long long)i, (long long)j, zabs(R[i * n + j]));
        double orth = orth_cols(Q, m, qc);
        if (orth > 16 * d * u)
            fail(c, "matrix %lld: |Q^H Q - I| = %.3g > %.3g", (long long)b, orth, 16 * d * u);
        bool zeroed = false;
        for (int64_t i = 0; i < m * qc; i++) zeroed |= Q[i].re == 0 && Q[i].im == 0;
        for (int64_t i = 0; i < rr; i++)
            for (int64_t j = i; j < n; j++) zeroed |= R[i * n + j].re == 0 && R[i * n + j].im == 0;
        double tol = 16 * d * u * scale +
                     (zeroed ? eps * sqrt((double)k) * (fro(Q, m * qc) + fro(R, rr * n)) : 0);
        double worst = 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                zd s = {0, 0};
                for (int64_t l = 0; l < qc && l < rr; l++) {
                    zd p = zmul(Q[i * qc + l], R[l * n + j]);
                    s.re += p.re;
                    s.im += p.im;
                }
                double e = zabs(zsub(s, A[i * n + j]));
                if (e > worst) worst = e;
            }
        if (worst > tol)
            fail(c, "matrix %lld: |QR - A| = %.3g > %.3g", (long long)b, worst, tol);
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
                    fail(c, "matrix %lld: R[%lld][%lld] differs from the corpus's by %.3g (up to "
                         "sign) > %.3g", (long long)b, (long long)i, (long long)j, diff, tol_r);
            }
            for (int64_t l = 0; l < m; l++) {
                double diff = zabs(zsub(Q[l * qc + i], zmul(zconj(ph), QE[l * qc + i])));
                if (diff > tol_q)
                    fail(c, "matrix %lld: Q[%lld][%lld] differs from the corpus's by %.3g (up to "
                         "sign) > %.3g", (long long)b, (long long)l, (long long)i, diff, tol_q);
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

static void check_svd(check *c, const emily_tensor *at, const emily_value *opts,
                      const emily_dispatch_result *got, const json_t *expected) {
    const int64_t *as = emily_tensor_shape(at);
    int rank = emily_tensor_rank(at);
    int64_t m = as[rank - 2], n = as[rank - 1], k = m < n ? m : n;
    const emily_tensor *ut = got->tensors[0], *st = got->tensors[1], *vt = got->tensors[2];
    int64_t uc = emily_tensor_shape(ut)[rank - 1], vr = emily_tensor_shape(vt)[rank - 2];
    const emily_value *fm = opt(opts, "full_matrices?");
    bool full = !fm || fm->kind != EMILY_V_BOOL || fm->b;
    double u = unit_roundoff(emily_tensor_dtype(ut)), d = (double)(m > n ? m : n);
    zd *a = load(at), *U = load(ut), *S = load(st), *V = load(vt);
    zd *se = expected ? load_expected(expected, 1, emily_tensor_size(st)) : NULL;
    double *lam = malloc((size_t)(k + 1) * sizeof(double));
    if (!a || !U || !S || !V || !lam) fail(c, "could not read the tensors");
    else if (expected && !se) fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < batch_count(at); b++) {
        const zd *A = a + b * m * n, *Ub = U + b * m * uc, *Sb = S + b * k, *Vb = V + b * vr * n;
        double scale = fro(A, m * n);
        for (int64_t i = 0; i < k; i++) {
            if (Sb[i].im != 0 || !(Sb[i].re >= 0))
                fail(c, "matrix %lld: s[%lld] = %g is not a nonnegative real", (long long)b,
                     (long long)i, Sb[i].re);
            if (i && Sb[i].re > Sb[i - 1].re)
                fail(c, "matrix %lld: s is not in descending order at %lld", (long long)b, (long long)i);
        }
        double ou = orth_cols(Ub, m, uc), ov = orth_rows(Vb, vr, n);
        if (ou > 16 * d * u) fail(c, "matrix %lld: |U^T U - I| = %.3g > %.3g", (long long)b, ou, 16 * d * u);
        if (ov > 16 * d * u) fail(c, "matrix %lld: |V V^T - I| = %.3g > %.3g", (long long)b, ov, 16 * d * u);
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
        if (worst > tol) fail(c, "matrix %lld: |U S V - A| = %.3g > %.3g", (long long)b, worst, tol);
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
                fail(c, "matrix %lld: s[%lld] = %.17g, the corpus has %.17g (|diff| %.3g > %.3g)",
                     (long long)b, (long long)i, Sb[i].re, SE[i].re, diff, tol_s);
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

static void check_eigh(check *c, const emily_tensor *at, const emily_value *opts,
                       const emily_dispatch_result *got, const json_t *expected) {
    const int64_t *as = emily_tensor_shape(at);
    int rank = emily_tensor_rank(at);
    int64_t n = as[rank - 1];
    const emily_tensor *wt = got->tensors[0], *vt = got->tensors[1];
    double u = unit_roundoff(emily_tensor_dtype(vt)), d = (double)n;
    double jeps = opt_number(opts, "eps", 1.0e-4);
    zd *a = load(at), *W = load(wt), *V = load(vt);
    zd *we = expected ? load_expected(expected, 0, emily_tensor_size(wt)) : NULL;
    double *s1 = malloc((size_t)(n + 1) * sizeof(double)), *s2 = malloc((size_t)(n + 1) * sizeof(double));
    if (!a || !W || !V || !s1 || !s2) fail(c, "could not read the tensors");
    else if (expected && !we) fail(c, "could not read the corpus result");
    for (int64_t b = 0; c->ok && b < batch_count(at); b++) {
        const zd *A = a + b * n * n, *Wb = W + b * n, *Vb = V + b * n * n;
        double scale = fro(A, n * n);
        for (int64_t i = 0; i < n; i++) {
            if (Wb[i].im != 0 || isnan(Wb[i].re))
                fail(c, "matrix %lld: eigenvalue %lld is not real", (long long)b, (long long)i);
            if (i && fabs(Wb[i].re) > fabs(Wb[i - 1].re))
                fail(c, "matrix %lld: eigenvalues are not ordered by decreasing magnitude at %lld",
                     (long long)b, (long long)i);
        }
        double ov = orth_cols(Vb, n, n);
        if (ov > 16 * d * u) fail(c, "matrix %lld: |V^H V - I| = %.3g > %.3g", (long long)b, ov, 16 * d * u);
        double worst = 0, tol = 16 * d * u * scale;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                zd s = {0, 0};
                for (int64_t l = 0; l < n; l++) {
                    zd p = zmul(A[i * n + l], Vb[l * n + j]);
                    s.re += p.re;
                    s.im += p.im;
                }
                zd vw = {Vb[i * n + j].re * Wb[j].re, Vb[i * n + j].im * Wb[j].re};
                double e = zabs(zsub(s, vw));
                if (e > worst) worst = e;
            }
        if (worst > tol) fail(c, "matrix %lld: |A V - V diag(w)| = %.3g > %.3g", (long long)b, worst, tol);
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
                fail(c, "matrix %lld: eigenvalue %.17g, the corpus has %.17g (|diff| %.3g > %.3g)",
                     (long long)b, s1[i], s2[i], diff, tol_w);
        }
    }
    free(a);
    free(W);
    free(V);
    free(we);
    free(s1);
    free(s2);
}

bool property_check_expected(const char *op, const emily_value *args, size_t nargs,
                             const emily_dispatch_result *got, const json_t *expected, char *msg,
                             size_t msgsize) {
    check c = {.msg = msg, .size = msgsize, .ok = true};
    if (msgsize) msg[0] = 0;
    if (!args || nargs < 1 || args[0].kind != EMILY_V_TENSOR || !got) {
        fail(&c, "no input tensor");
        return false;
    }
    const emily_tensor *a = args[0].tensor;
    const emily_value *opts = opts_arg(args, nargs);
    int want = strcmp(op, "eigh") == 0 || strcmp(op, "qr") == 0 ? 2 : 3;
    if (!property_checked_op(op)) return fail(&c, "no property check for %s", op);
    if (got->n != want) return fail(&c, "%d outputs, want %d", got->n, want);
    if (emily_tensor_rank(a) < 2) return fail(&c, "input of rank %d", emily_tensor_rank(a));
    if (strcmp(op, "qr") == 0) check_qr(&c, a, opts, got, expected);
    else if (strcmp(op, "svd") == 0) check_svd(&c, a, opts, got, expected);
    else check_eigh(&c, a, opts, got, expected);
    return c.ok;
}

bool property_check(const char *op, const emily_value *args, size_t nargs,
                    const emily_dispatch_result *got, char *msg, size_t msgsize) {
    return property_check_expected(op, args, nargs, got, NULL, msg, msgsize);
}
