/* CPU kernels: linear algebra whose results are unique (lu, cholesky,
 * triangular_solve, determinant), computed the way Nx.BinaryBackend
 * computes them so that results match the reference to the last bit:
 *
 * - the reference evaluates Nx's defn algorithms (Nx.LinAlg.LU,
 *   Nx.LinAlg.Cholesky, determinant's explicit products) one tensor
 *   operation at a time, computing each element in double precision and
 *   writing it in the tensor's type; we do the same operations in the
 *   same order and round to the working type after each (rnd/zrnd);
 * - triangular_solve is Nx.BinaryBackend.Matrix.ts: substitution in
 *   double precision on a matrix that has been conjugated, transposed and
 *   reversed so that it is always a forward substitution;
 * - complex arithmetic uses the textbook formulas of Elixir's Complex
 *   library (no fused multiply-add, no scaling in division).
 *
 * qr, eigh and svd, also by Nx's algorithms, are in linalg_nx.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/linalg_blocked.h"
#include "cpu/linalg_complex.h"
#include "cpu/linalg_lapack.h"
#include "cpu/linalg_det.h"
#include "cpu/linalg_nx07.h"
#include "core/kernels.h"

emily_status emi_cpu_linalg_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                                 bool complete, double eps, emily_dtype work);
emily_status emi_cpu_linalg_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                                  const emily_tensor *a, bool full_matrices, int64_t max_iter,
                                  emily_dtype work, bool integer_input);
emily_status emi_cpu_linalg_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a,
                                   double eps, int64_t max_iter, emily_dtype work);

/* ---- scalar arithmetic as the reference does it ------------------------ */

static inline double rnd(emily_dtype t, double x) { return emily_linalg_rnd(t, x); }
static inline zd zrnd(emily_dtype t, zd x) { return (zd){rnd(t, x.re), rnd(t, x.im)}; }

/* Nx.argmax's comparison (tie_break: :low): the first maximum, except
 * that a NaN always takes over. */
static inline bool argmax_takes(double x, double cur, bool first) {
    return first || isnan(x) || (!isnan(cur) && x > cur);
}

static int64_t batch_count(const emily_tensor *t, int64_t per) {
    return per > 0 ? t->size / per : 0;
}

/* ---- LU (Nx.LinAlg.LU.lu_matrix) --------------------------------------- */

static void lu_real(double *a, int64_t n, emily_dtype w, int64_t *perm) {
    /* blocked for large f64 and f32 matrices (same bits; it allocates all
     * its scratch before touching a, so out of memory falls back to here) */
    if (n >= emi_cpu_linalg_block_min() && emi_cpu_lu_blocked(a, n, perm, w)) return;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t k = 0; k < n; k++) {
        int64_t piv = 0;
        double best = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = i >= k ? fabs(a[i * n + k]) : -INFINITY;
            if (argmax_takes(x, best, i == 0)) { piv = i; best = x; }
        }
        if (piv != k) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[piv * n + j];
                a[piv * n + j] = t;
            }
            int64_t t = perm[k];
            perm[k] = perm[piv];
            perm[piv] = t;
        }
        double d = a[k * n + k];
        if (!(d == 0))
            for (int64_t i = k + 1; i < n; i++) a[i * n + k] = rnd(w, a[i * n + k] / d);
        if (k < n - 1)
            for (int64_t i = k + 1; i < n; i++) {
                double l = a[i * n + k], *ai = a + i * n, *ak = a + k * n;
                /* the rounding specialised per type so the loop vectorizes */
                if (w == EMILY_F64) {
#pragma omp simd
                    for (int64_t j = k + 1; j < n; j++) ai[j] = ai[j] - l * ak[j];
                } else if (w == EMILY_F32) {
#pragma omp simd
                    for (int64_t j = k + 1; j < n; j++)
                        ai[j] = (double)(float)(ai[j] - (double)(float)(l * ak[j]));
                } else
                    for (int64_t j = k + 1; j < n; j++) ai[j] = rnd(w, ai[j] - rnd(w, l * ak[j]));
            }
    }
}

/* Nx's complex LU updates with Nx.outer(l_col, adjoint(u_row)): outer
 * conjugates its second operand for complex types and adjoint conjugates
 * it too, so the two cancel and the update is the plain product l * u_kj
 * (Complex.multiply in that operand order). */
static void lu_complex(zd *a, int64_t n, emily_dtype w, int64_t *perm) {
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t k = 0; k < n; k++) {
        int64_t piv = 0;
        double best = 0;
        for (int64_t i = 0; i < n; i++) {
            double x = i >= k ? rnd(w, zabs(a[i * n + k])) : -INFINITY;
            if (argmax_takes(x, best, i == 0)) { piv = i; best = x; }
        }
        if (piv != k) {
            for (int64_t j = 0; j < n; j++) {
                zd t = a[k * n + j];
                a[k * n + j] = a[piv * n + j];
                a[piv * n + j] = t;
            }
            int64_t t = perm[k];
            perm[k] = perm[piv];
            perm[piv] = t;
        }
        zd d = a[k * n + k];
        if (!zzero(d))
            for (int64_t i = k + 1; i < n; i++) a[i * n + k] = zrnd(w, zdiv(a[i * n + k], d));
        if (k < n - 1)
            for (int64_t i = k + 1; i < n; i++) {
                zd l = a[i * n + k];
                for (int64_t j = k + 1; j < n; j++)
                    a[i * n + j] =
                        zrnd(w, zsub(a[i * n + j], zrnd(w, zmul(l, a[k * n + j]))));
            }
    }
}

static emily_status cpu_lu(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a,
                           emily_dtype w) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    bool cx = a->dtype == EMILY_C128;
    size_t es = cx ? sizeof(zd) : sizeof(double);
    const char *src = emily_tensor_base(a);
    double *pd = emily_tensor_base(p);
    char *ld = emily_tensor_base(l), *ud = emily_tensor_base(u);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        void *work = malloc((size_t)nn * es + 1);
        int64_t *perm = malloc((size_t)n * sizeof *perm + 1);
        if (!work || !perm) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (!work || !perm) continue;
            memcpy(work, src + (size_t)(b * nn) * es, (size_t)nn * es);
            if (cx) lu_complex(work, n, w, perm);
            else lu_real(work, n, w, perm);
            double *pb = pd + b * nn;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) pb[i * n + j] = perm[j] == i ? 1.0 : 0.0;
            if (cx) {
                zd *lb = (zd *)ld + b * nn, *ub = (zd *)ud + b * nn, *wk = work;
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < n; j++) {
                        zd x = wk[i * n + j], z = {0, 0}, one = {1, 0};
                        /* l = tril(a, k: -1) + eye: the + 0 turns -0 into +0 */
                        lb[i * n + j] = i > j ? zadd(x, z) : i == j ? one : z;
                        ub[i * n + j] = i <= j ? x : z;
                    }
            } else {
                double *lb = (double *)ld + b * nn, *ub = (double *)ud + b * nn, *wk = work;
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < n; j++) {
                        double x = wk[i * n + j];
                        /* l = tril(a, k: -1) + eye: the + 0 turns -0 into +0 */
                        lb[i * n + j] = i > j ? x + 0.0 : i == j ? 1.0 : 0.0;
                        ub[i * n + j] = i <= j ? x : 0.0;
                    }
            }
        }
        free(work);
        free(perm);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "lu: out of host memory for a %lldx%lld matrix",
                                   (long long)n, (long long)n);
    return EMILY_OK;
}

/* ---- Cholesky (Nx.LinAlg.Cholesky.cholesky_matrix) --------------------- */

#define CHOLESKY_EPS EMILY_CHOLESKY_EPS

static void cholesky_real(const double *a, double *l, int64_t n, emily_dtype w) {
    /* blocked for large matrices (same bits; falls back when out of memory) */
    if (n >= emi_cpu_linalg_block_min() && emi_cpu_cholesky_blocked(a, l, n, w)) return;
    for (int64_t i = 0; i < n * n; i++) l[i] = rnd(w, 0.0 * a[i]);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            double sum = 0;
            for (int64_t k = 0; k < j; k++) sum = l[i * n + k] * l[j * n + k] + sum;
            sum = rnd(w, sum);
            double v;
            if (i == j) v = rnd(w, sqrt(rnd(w, a[i * n + i] - sum)));
            else v = rnd(w, rnd(w, a[i * n + j] - sum) / rnd(w, l[j * n + j] + CHOLESKY_EPS));
            l[i * n + j] = v;
        }
    for (int64_t i = 0; i < n * n; i++)
        if (fabs(l[i]) <= CHOLESKY_EPS) l[i] = 0;
}

static void cholesky_complex(const zd *a, zd *l, int64_t n, emily_dtype w) {
    for (int64_t i = 0; i < n * n; i++) l[i] = zrnd(w, zmul((zd){0, 0}, a[i]));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            zd sum = {0, 0};
            for (int64_t k = 0; k < j; k++) sum = zadd(zmul(l[i * n + k], zconj(l[j * n + k])), sum);
            sum = zrnd(w, sum);
            zd v;
            if (i == j) {
                v = zrnd(w, zsqrt(zrnd(w, zsub(a[i * n + i], sum))));
            } else {
                zd den = zrnd(w, zadd(l[j * n + j], (zd){CHOLESKY_EPS, 0}));
                v = zrnd(w, zdiv(zrnd(w, zsub(a[i * n + j], sum)), den));
            }
            l[i * n + j] = v;
        }
    for (int64_t i = 0; i < n * n; i++)
        if (rnd(w, zabs(l[i])) <= CHOLESKY_EPS) l[i] = (zd){0, 0};
}

static emily_status cpu_cholesky(emily_tensor *l, const emily_tensor *a, emily_dtype w) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    bool cx = a->dtype == EMILY_C128;
    const char *src = emily_tensor_base(a);
    char *dst = emily_tensor_base(l);
    size_t es = cx ? sizeof(zd) : sizeof(double);
#pragma omp parallel for if (batches > 1 && batches * nn * n > 100000) schedule(dynamic)
    for (int64_t b = 0; b < batches; b++) {
        if (cx) cholesky_complex((const zd *)(src + (size_t)(b * nn) * es), (zd *)(dst + (size_t)(b * nn) * es), n, w);
        else cholesky_real((const double *)(src + (size_t)(b * nn) * es), (double *)(dst + (size_t)(b * nn) * es), n, w);
    }
    return EMILY_OK;
}

/* ---- triangular_solve (Nx.BinaryBackend.Matrix.ts) --------------------- */

/* The system is turned into a forward substitution m . x = c with m lower
 * triangular: a is conjugated (:conjugate), transposed when
 * left_side == transform_is_transpose, and reversed (rows and columns)
 * when left_side == (lower == transform_is_transpose); b is transposed
 * for a right-side matrix solve and reversed with a. The solution is
 * transformed back the same way. */
typedef struct ts_plan {
    int64_t n, rows_b, cols_b; /* b's matrix as given (vector: cols_b = 1) */
    bool conj_a, transpose_a, reverse, transpose_b;
} ts_plan;

/* Effective matrix element (i, j) of batch matrix `a` (n x n). */
static inline int64_t ts_a_index(const ts_plan *p, int64_t i, int64_t j) {
    if (p->reverse) { i = p->n - 1 - i; j = p->n - 1 - j; }
    return p->transpose_a ? j * p->n + i : i * p->n + j;
}
/* Position in b (rows_b x cols_b, row-major) of effective element (i, c)
 * of the n x ncols right-hand side. */
static inline int64_t ts_b_index(const ts_plan *p, int64_t i, int64_t c, int64_t ncols) {
    if (p->reverse) { i = p->n - 1 - i; c = ncols - 1 - c; }
    return p->transpose_b ? c * p->cols_b + i : i * p->cols_b + c;
}

/* Forward substitution on all right-hand sides at once; for every
 * column the sum runs over j in increasing order, as the reference's
 * `x * y + acc` fold does. y: n x ncols scratch, acc: ncols scratch. */
static void ts_real(const ts_plan *p, const double *a, const double *b, double *x, double *m,
                    double *y, double *acc) {
    int64_t n = p->n, nc = p->transpose_b ? p->rows_b : p->cols_b;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) m[i * n + j] = a[ts_a_index(p, i, j)];
    for (int64_t i = 0; i < n; i++) {
        for (int64_t c = 0; c < nc; c++) acc[c] = 0;
        for (int64_t j = 0; j < i; j++) {
            double mij = m[i * n + j];
            const double *yj = y + j * nc;
#pragma omp simd
            for (int64_t c = 0; c < nc; c++) acc[c] = mij * yj[c] + acc[c];
        }
        double d = m[i * n + i];
        for (int64_t c = 0; c < nc; c++) {
            double bi = b[ts_b_index(p, i, c, nc)];
            y[i * nc + c] = (i ? bi - acc[c] : bi) / d;
        }
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < nc; c++) x[ts_b_index(p, i, c, nc)] = y[i * nc + c];
}

static void ts_complex(const ts_plan *p, const zd *a, const zd *b, zd *x, zd *m, zd *y, zd *acc) {
    int64_t n = p->n, nc = p->transpose_b ? p->rows_b : p->cols_b;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            zd v = a[ts_a_index(p, i, j)];
            m[i * n + j] = p->conj_a ? zconj(v) : v;
        }
    for (int64_t i = 0; i < n; i++) {
        for (int64_t c = 0; c < nc; c++) acc[c] = (zd){0, 0};
        for (int64_t j = 0; j < i; j++) {
            zd mij = m[i * n + j];
            const zd *yj = y + j * nc;
            for (int64_t c = 0; c < nc; c++) acc[c] = zadd(zmul(mij, yj[c]), acc[c]);
        }
        zd d = m[i * n + i];
        for (int64_t c = 0; c < nc; c++) {
            zd bi = b[ts_b_index(p, i, c, nc)];
            y[i * nc + c] = zdiv(i ? zsub(bi, acc[c]) : bi, d);
        }
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < nc; c++) x[ts_b_index(p, i, c, nc)] = y[i * nc + c];
}

static emily_status cpu_triangular_solve(emily_tensor *x, const emily_tensor *a,
                                         const emily_tensor *b, bool b_vector, bool left_side,
                                         bool lower, emily_transform_a transform) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    bool cx = a->dtype == EMILY_C128;
    bool opt_t = transform == EMILY_TRANSFORM_TRANSPOSE;
    ts_plan p = {.n = n,
                 .rows_b = b_vector ? n : b->shape[b->rank - 2],
                 .cols_b = b_vector ? 1 : b->shape[b->rank - 1],
                 .conj_a = transform == EMILY_TRANSFORM_CONJUGATE,
                 .transpose_a = left_side == opt_t,
                 .reverse = left_side == (lower == opt_t),
                 .transpose_b = !left_side && !b_vector};
    int64_t ncols = p.transpose_b ? p.rows_b : p.cols_b;
    int64_t bsize = p.rows_b * p.cols_b;
    if (batches == 0 || bsize == 0 || ncols == 0) return EMILY_OK;
    /* The reference stops at the first zero pivot it meets. */
    const char *ad = emily_tensor_base(a);
    for (int64_t bt = 0; bt < batches; bt++)
        for (int64_t i = 0; i < n; i++) {
            bool zero = cx ? zzero(((const zd *)ad)[bt * nn + i * n + i])
                           : ((const double *)ad)[bt * nn + i * n + i] == 0;
            if (zero)
                return emily_error(EMILY_ERR_ARGUMENT,
                                   "triangular_solve: can't solve for singular matrix (zero on the "
                                   "diagonal at row %lld of matrix %lld)",
                                   (long long)i, (long long)bt);
        }
    size_t es = cx ? sizeof(zd) : sizeof(double);
    const char *bd = emily_tensor_base(b);
    char *xd = emily_tensor_base(x);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * ncols > 100000) reduction(| : failed)
    {
        void *m = malloc((size_t)nn * es + 1), *y = malloc((size_t)(n * ncols) * es + 1);
        void *acc = malloc((size_t)ncols * es + 1);
        if (!m || !y || !acc) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t bt = 0; bt < batches; bt++) {
            if (!m || !y || !acc) continue;
            if (cx)
                ts_complex(&p, (const zd *)ad + bt * nn, (const zd *)bd + bt * bsize,
                           (zd *)xd + bt * bsize, m, y, acc);
            else
                ts_real(&p, (const double *)ad + bt * nn, (const double *)bd + bt * bsize,
                        (double *)xd + bt * bsize, m, y, acc);
        }
        free(m);
        free(y);
        free(acc);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "triangular_solve: out of host memory");
    return EMILY_OK;
}

/* ---- solve (Nx.LinAlg.solve for f64 a and b) --------------------------- */

/* Nx.LinAlg.solve is lu(a), then p^T . b through the dot, then two
 * triangular solves; the op layer composes exactly that for every type.
 * For f64 a and b (with the exact dot) this kernel gives the same bits
 * without materializing p, l and u or running a dense dot with p:
 *
 * - the dot sums p[k][i] * b[k][c] over k from +0: every term but one is
 *   0 * b[k][c], so the total is b[perm[i]][c] + 0 (a -0 becomes +0),
 *   unless some other b[k][c] is infinite or NaN (0 * inf is NaN);
 * - the triangular solves are ts_real's substitutions on l (unit
 *   diagonal, divided by 1.0 as ts does) and on u reversed (the sum runs
 *   from the last column toward the diagonal). */

/* p^T . b for one matrix: bp[i][c] for nc right-hand-side columns. */
static void solve_permute(const double *b, const int64_t *perm, int64_t n, int64_t nc, double *bp) {
    for (int64_t c = 0; c < nc; c++) {
        int64_t bad = 0; /* non-finite entries in column c */
        for (int64_t k = 0; k < n; k++) bad += !isfinite(b[k * nc + c]);
        for (int64_t i = 0; i < n; i++) {
            double v = b[perm[i] * nc + c];
            bp[i * nc + c] = bad - !isfinite(v) > 0 ? NAN : v + 0.0;
        }
    }
}

/* Forward substitution with the unit lower triangle of lu (n x n) on y
 * (n x nc) in place: y_i = (y_i - sum_{j<i} l_ij y_j) / 1, the sum from 0
 * in increasing j. One column: eight rows at a time, so that eight
 * independent sums hide the addition latency; more: vectors across the
 * columns, as ts_real. */
static void solve_lower(const double *lu, int64_t n, double *y, int64_t nc) {
    if (nc == 1) {
        for (int64_t i0 = 0; i0 < n; i0 += 8) {
            int64_t rows = n - i0 < 8 ? n - i0 : 8;
            double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (rows == 8) {
                for (int64_t j = 0; j < i0; j++) {
                    double yj = y[j];
                    for (int r = 0; r < 8; r++) acc[r] = lu[(i0 + r) * n + j] * yj + acc[r];
                }
            } else {
                for (int64_t j = 0; j < i0; j++)
                    for (int r = 0; r < rows; r++) acc[r] = lu[(i0 + r) * n + j] * y[j] + acc[r];
            }
            for (int r = 0; r < rows; r++) {
                int64_t i = i0 + r;
                for (int64_t j = i0; j < i; j++) acc[r] = lu[i * n + j] * y[j] + acc[r];
                y[i] = (i ? y[i] - acc[r] : y[i]) / 1.0;
            }
        }
        return;
    }
    double acc[64];
    for (int64_t i = 0; i < n; i++) {
        double *yi = y + i * nc;
        for (int64_t c0 = 0; c0 < nc; c0 += 64) {
            int64_t cn = nc - c0 < 64 ? nc - c0 : 64;
            for (int64_t c = 0; c < cn; c++) acc[c] = 0;
            for (int64_t j = 0; j < i; j++) {
                double lij = lu[i * n + j];
                const double *yj = y + j * nc + c0;
#pragma omp simd
                for (int64_t c = 0; c < cn; c++) acc[c] = lij * yj[c] + acc[c];
            }
            for (int64_t c = 0; c < cn; c++) yi[c0 + c] = (i ? yi[c0 + c] - acc[c] : yi[c0 + c]) / 1.0;
        }
    }
}

/* Back substitution with the upper triangle of lu on y (n x nc) in place,
 * as ts_real does it on the reversed matrix: x_i = (y_i - sum) / u_ii with
 * the sum over j from n-1 down to i+1, from 0; the last row divides y_i
 * directly. */
static void solve_upper(const double *lu, int64_t n, double *y, int64_t nc) {
    if (nc == 1) {
        for (int64_t i1 = n; i1 > 0; i1 -= 8) { /* rows [i1 - rows, i1) */
            int64_t rows = i1 < 8 ? i1 : 8;
            double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (rows == 8) {
                for (int64_t j = n - 1; j >= i1; j--) {
                    double xj = y[j];
                    for (int r = 0; r < 8; r++) acc[r] = lu[(i1 - 1 - r) * n + j] * xj + acc[r];
                }
            } else {
                for (int64_t j = n - 1; j >= i1; j--)
                    for (int r = 0; r < rows; r++) acc[r] = lu[(i1 - 1 - r) * n + j] * y[j] + acc[r];
            }
            for (int r = 0; r < rows; r++) {
                int64_t i = i1 - 1 - r;
                for (int64_t j = i1 - 1; j > i; j--) acc[r] = lu[i * n + j] * y[j] + acc[r];
                y[i] = (i < n - 1 ? y[i] - acc[r] : y[i]) / lu[i * n + i];
            }
        }
        return;
    }
    double acc[64];
    for (int64_t i = n - 1; i >= 0; i--) {
        double *yi = y + i * nc, d = lu[i * n + i];
        for (int64_t c0 = 0; c0 < nc; c0 += 64) {
            int64_t cn = nc - c0 < 64 ? nc - c0 : 64;
            for (int64_t c = 0; c < cn; c++) acc[c] = 0;
            for (int64_t j = n - 1; j > i; j--) {
                double uij = lu[i * n + j];
                const double *xj = y + j * nc + c0;
#pragma omp simd
                for (int64_t c = 0; c < cn; c++) acc[c] = uij * xj[c] + acc[c];
            }
            for (int64_t c = 0; c < cn; c++)
                yi[c0 + c] = (i < n - 1 ? yi[c0 + c] - acc[c] : yi[c0 + c]) / d;
        }
    }
}

static emily_status cpu_solve(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                              bool b_vector) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    int64_t nc = b_vector ? 1 : b->shape[b->rank - 1], bsize = n * nc;
    if (batches == 0 || bsize == 0) return EMILY_OK;
    const double *ad = emily_tensor_base(a), *bd = emily_tensor_base(b);
    double *xd = emily_tensor_base(x);
    /* per matrix: the first row with an exact zero on u's diagonal, or -1 */
    int64_t *zero_row = malloc((size_t)batches * sizeof *zero_row);
    if (!zero_row) return emily_error(EMILY_ERR_MEMORY, "solve: out of host memory");
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        double *work = malloc((size_t)nn * sizeof *work + 1);
        int64_t *perm = malloc((size_t)n * sizeof *perm + 1);
        if (!work || !perm) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t bt = 0; bt < batches; bt++) {
            zero_row[bt] = -1;
            if (!work || !perm) continue;
            memcpy(work, ad + bt * nn, (size_t)nn * sizeof *work);
            lu_real(work, n, EMILY_F64, perm);
            for (int64_t i = 0; i < n && zero_row[bt] < 0; i++)
                if (work[i * n + i] == 0) zero_row[bt] = i;
            if (zero_row[bt] >= 0) continue;
            double *xb = xd + bt * bsize;
            solve_permute(bd + bt * bsize, perm, n, nc, xb);
            solve_lower(work, n, xb, nc);
            solve_upper(work, n, xb, nc);
        }
        free(work);
        free(perm);
    }
    emily_status s = EMILY_OK;
    if (failed) s = emily_error(EMILY_ERR_MEMORY, "solve: out of host memory for a %lldx%lld matrix",
                                (long long)n, (long long)n);
    for (int64_t bt = 0; !s && bt < batches; bt++)
        if (zero_row[bt] >= 0)
            s = emily_error(EMILY_ERR_ARGUMENT,
                            "triangular_solve: can't solve for singular matrix (zero on the "
                            "diagonal at row %lld of matrix %lld)",
                            (long long)zero_row[bt], (long long)bt);
    free(zero_row);
    return s;
}

/* ---- determinant (Nx.LinAlg.determinant) ------------------------------- */

/* Element i of a contiguous tensor of any type: as a double (real part),
 * its imaginary part, or its integer bits (two's complement, 64-bit). */
static double read_re(const emily_tensor *t, int64_t i, double *im) {
    const char *p = (const char *)emily_tensor_base(t) + (size_t)i * emily_dtype_size(t->dtype);
    *im = 0;
    switch (t->dtype) {
    case EMILY_U8: return *(const uint8_t *)p;
    case EMILY_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case EMILY_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case EMILY_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    case EMILY_S8: return *(const int8_t *)p;
    case EMILY_S16: { int16_t v; memcpy(&v, p, 2); return v; }
    case EMILY_S32: { int32_t v; memcpy(&v, p, 4); return v; }
    case EMILY_S64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case EMILY_F16: { uint16_t v; memcpy(&v, p, 2); return emily_f16_to_f32(v); }
    case EMILY_BF16: { uint16_t v; memcpy(&v, p, 2); return emily_bf16_to_f32(v); }
    case EMILY_F32: { float v; memcpy(&v, p, 4); return v; }
    case EMILY_F64: { double v; memcpy(&v, p, 8); return v; }
    case EMILY_C64: { float v[2]; memcpy(v, p, 8); *im = v[1]; return v[0]; }
    default: { double v[2]; memcpy(v, p, 16); *im = v[1]; return v[0]; }
    }
}

static uint64_t read_bits(const emily_tensor *t, int64_t i) {
    const char *p = (const char *)emily_tensor_base(t) + (size_t)i * emily_dtype_size(t->dtype);
    switch (t->dtype) {
    case EMILY_U8: return *(const uint8_t *)p;
    case EMILY_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case EMILY_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case EMILY_S8: return (uint64_t)(int64_t)*(const int8_t *)p;
    case EMILY_S16: { int16_t v; memcpy(&v, p, 2); return (uint64_t)(int64_t)v; }
    case EMILY_S32: { int32_t v; memcpy(&v, p, 4); return (uint64_t)(int64_t)v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* Wraps 64-bit two's complement bits to the integer type t, as a double
 * (the reference writes the exact integer, then `* 1.0` makes it a float). */
static double wrap_int(emily_dtype t, uint64_t v) {
    switch (t) {
    case EMILY_U8: return (uint8_t)v;
    case EMILY_U16: return (uint16_t)v;
    case EMILY_U32: return (uint32_t)v;
    case EMILY_U64: return (double)v;
    case EMILY_S8: return (int8_t)(uint8_t)v;
    case EMILY_S16: return (int16_t)(uint16_t)v;
    case EMILY_S32: return (int32_t)(uint32_t)v;
    default: return (double)(int64_t)v;
    }
}
static uint64_t wrap_bits(emily_dtype t, uint64_t v) {
    switch (t) {
    case EMILY_U8: return (uint8_t)v;
    case EMILY_U16: return (uint16_t)v;
    case EMILY_U32: return (uint32_t)v;
    case EMILY_S8: return (uint64_t)(int64_t)(int8_t)(uint8_t)v;
    case EMILY_S16: return (uint64_t)(int64_t)(int16_t)(uint16_t)v;
    case EMILY_S32: return (uint64_t)(int64_t)(int32_t)(uint32_t)v;
    default: return v;
    }
}

/* The index triples of determinant_2by2/3by3's diagonal products, each
 * multiplied as product/2 does: acc = x_k * acc from acc = 1. */
static const int det2_pos[1][2] = {{0, 3}}, det2_neg[1][2] = {{1, 2}};
static const int det3_pos[3][3] = {{0, 4, 8}, {1, 5, 6}, {2, 3, 7}};
static const int det3_neg[3][3] = {{2, 4, 6}, {1, 3, 8}, {0, 5, 7}};

static void det_small_int(const emily_tensor *a, int64_t base, int n, double *out) {
    emily_dtype t = a->dtype;
    uint64_t res = 0;
    for (int sgn = 0; sgn < 2; sgn++)
        for (int d = 0; d < (n == 2 ? 1 : 3); d++) {
            uint64_t prod = 1;
            for (int k = 0; k < n; k++) {
                int idx = n == 2 ? (sgn ? det2_neg : det2_pos)[d][k] : (sgn ? det3_neg : det3_pos)[d][k];
                prod = read_bits(a, base + idx) * prod;
            }
            prod = wrap_bits(t, prod);
            if (sgn == 0 && d == 0) res = prod;
            else res = wrap_bits(t, sgn ? res - prod : res + prod);
        }
    *out = wrap_int(t, res);
}

static void det_small_float(const emily_tensor *a, int64_t base, int n, emily_dtype w, bool cx,
                            zd *out) {
    zd res = {0, 0};
    for (int sgn = 0; sgn < 2; sgn++)
        for (int d = 0; d < (n == 2 ? 1 : 3); d++) {
            zd prod = {0, 0};
            for (int k = 0; k < n; k++) {
                int idx = n == 2 ? (sgn ? det2_neg : det2_pos)[d][k] : (sgn ? det3_neg : det3_pos)[d][k];
                zd x;
                x.re = read_re(a, base + idx, &x.im);
                if (k == 0) prod = x;
                else if (cx) prod = zmul(x, prod);
                else prod.re = x.re * prod.re;
            }
            prod = zrnd(w, prod);
            if (sgn == 0 && d == 0) res = prod;
            else res = zrnd(w, sgn ? zsub(res, prod) : zadd(res, prod));
        }
    *out = res;
}

/* The end of Nx.LinAlg.determinant_NbyN from lu's u (n x n, values of
 * type w, real or complex) and permutation (perm[j]: the input row in
 * row j): diag = take_diagonal(l) * take_diagonal(u) with l's unit
 * diagonal (1 + 0i for complex), product(diag) in double from the integer
 * 1 (`x * acc`), rounded once, times the permutation's sign (an integer:
 * Complex.new(sign, 0) for complex), 0 where a diagonal entry is 0. The
 * complex products are Complex.multiply's, so the signs of zero parts
 * come out as Nx's. */
zd emi_cpu_det_from_lu(const void *u, const int64_t *perm, int64_t n, emily_dtype w, bool cx) {
    int64_t inversions = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) inversions += perm[i] > perm[j];
    double sign = inversions % 2 ? -1.0 : 1.0;
    bool zero = false;
    zd prod = {1, 0};
    for (int64_t i = 0; i < n; i++) {
        zd d;
        if (cx) d = zrnd(w, zmul((zd){1, 0}, ((const zd *)u)[i * n + i]));
        else d = (zd){((const double *)u)[i * n + i], 0};
        if (cx ? zzero(d) : d.re == 0) zero = true;
        if (cx) prod = zmul(d, prod);
        else prod.re = d.re * prod.re;
    }
    if (zero) return (zd){0, 0};
    prod = zrnd(w, prod);
    if (!cx) return (zd){sign * prod.re, 0};
    return zrnd(w, zmul((zd){sign, 0}, prod));
}

/* determinant_NbyN on Nx 0.8+'s LU of one matrix of a. */
static int det_lu(const emily_tensor *a, int64_t base, int64_t n, emily_dtype w, bool cx,
                  void *work, int64_t *perm, zd *out) {
    if (cx) {
        zd *m = work;
        for (int64_t i = 0; i < n * n; i++) {
            m[i].re = read_re(a, base + i, &m[i].im);
            m[i] = zrnd(w, m[i]);
        }
        lu_complex(m, n, w, perm);
    } else {
        double *m = work, im;
        for (int64_t i = 0; i < n * n; i++) m[i] = rnd(w, read_re(a, base + i, &im));
        lu_real(m, n, w, perm);
    }
    *out = emi_cpu_det_from_lu(work, perm, n, w, cx);
    return 0;
}

static emily_status cpu_determinant(emily_tensor *det, const emily_tensor *a, emily_dtype w) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = det->size;
    bool cx = emily_dtype_is_complex(w);
    bool integer = emily_dtype_is_integer(a->dtype);
    char *out = emily_tensor_base(det);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        size_t es = cx ? sizeof(zd) : sizeof(double);
        void *work = (n == 2 || n == 3) ? NULL : malloc((size_t)nn * es + 1);
        int64_t *perm = (n == 2 || n == 3) ? NULL : malloc((size_t)n * sizeof *perm + 1);
        if (n != 2 && n != 3 && (!work || !perm)) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            zd r = {0, 0};
            if ((n == 2 || n == 3) && integer) det_small_int(a, b * nn, (int)n, &r.re);
            else if (n == 2 || n == 3) det_small_float(a, b * nn, (int)n, w, cx, &r);
            else if (work && perm) det_lu(a, b * nn, n, w, cx, work, perm, &r);
            if (cx) ((zd *)out)[b] = r;
            else ((double *)out)[b] = r.re;
        }
        free(work);
        free(perm);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "determinant: out of host memory");
    return EMILY_OK;
}

const struct emily_linalg_kernels emi_cpu_linalg_kernels = {
    .lu = cpu_lu,
    .cholesky = cpu_cholesky,
    .triangular_solve = cpu_triangular_solve,
    .solve = cpu_solve,
    .determinant = cpu_determinant,
    .qr = emi_cpu_linalg_qr,
    .svd = emi_cpu_linalg_svd,
    .eigh = emi_cpu_linalg_eigh,
    .qr_lapack = emi_cpu_lapack_qr,
    .svd_lapack = emi_cpu_lapack_svd,
    .eigh_lapack = emi_cpu_lapack_eigh,
    .lu_nx07 = emi_cpu_nx07_lu,
    .qr_nx07 = emi_cpu_nx07_qr,
    .determinant_nx07 = emi_cpu_nx07_determinant,
    .eigh_nx07 = emi_cpu_nx07_eigh,
    .svd_nx07 = emi_cpu_nx07_svd,
};
