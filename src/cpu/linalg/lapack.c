/* CPU kernels: qr, svd and eigh through LAPACKE (EMILY_LINALG_LAPACK,
 * the default method; emily/ops_linalg.h).
 *
 * Inputs arrive wide (f64 or c128, finite: the op layer sends non-finite
 * matrices to Nx's own algorithms, whose NaN propagation is the
 * reference's) and are solved in double precision whatever their type,
 * so f32 results are accurate to the last bit or two rather than to
 * Nx's iteration tolerances. The factors are then put in Nx's
 * conventions where the math leaves a choice, so that results read the
 * way Nx's do:
 * - qr: R's diagonal with the signs Nx's Householder reflections give it
 *   (real input; complex: real and non-negative);
 * - eigh: eigenvalues by decreasing magnitude, and each eigenvector's
 *   largest-magnitude entry (the first of equals) real and positive;
 * - svd: s descending; each row of vt's largest-magnitude entry positive
 *   (u's column flipped with it), the same for u's extra columns.
 * LAPACK is column-major; each routine here reads a row-major matrix as
 * its transpose where that works (svd), or makes one transposed copy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lapacke.h>
#include "cpu/kernels.h"
#include "cpu/linalg/linalg.h"
#include "core/kernels.h"
#include "core/qr_signs.h"

static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* LAPACK takes int dimensions and its workspace sizes are int too. */
static emily_status check_dims(const char *op, int64_t m, int64_t n) {
    if (m > INT32_MAX / 4 || n > INT32_MAX / 4 || (m && n > INT32_MAX / m))
        return emily_error(EMILY_ERR_SHAPE, "%s: a %lldx%lld matrix is too large for LAPACK", op, (long long)m,
                           (long long)n);
    return EMILY_OK;
}

/* Number of matrices: the product of the leading (batch) axes. */
static int64_t lead_batches(const emily_tensor *t, int matrix_rank) {
    int64_t b = 1;
    for (int i = 0; i < t->rank - matrix_rank; i++) b *= t->shape[i];
    return b;
}

static void fill(double *x, int64_t count, double v) {
    for (int64_t i = 0; i < count; i++) x[i] = v;
}

/* Identity rows x cols (parts doubles per element). */
static void eye(double *x, int64_t rows, int64_t cols, int parts) {
    fill(x, rows * cols * parts, 0);
    for (int64_t i = 0; i < imin(rows, cols); i++) x[(i * cols + i) * parts] = 1;
}

/* Scratch memory from the engine's own allocator, whose cache of freed
 * blocks spares a repeated call the page faults of fresh memory (a fifth
 * of a 256 x 256 qr's time when the workspace came from malloc each
 * call). Released with emily_tensor_release(*holder). */
static void *scratch(size_t bytes, emily_tensor **holder) {
    int64_t shape[1] = {(int64_t)((bytes + sizeof(double) - 1) / sizeof(double))};
    if (emily_empty(EMILY_CPU, EMILY_F64, 1, shape, holder)) return NULL;
    return emily_tensor_base(*holder);
}

static emily_status lapack_failed(const char *op, const char *routine, lapack_int info) {
    if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR)
        return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory in LAPACK %s", op, routine);
    return emily_error(EMILY_ERR_INTERNAL, "%s: LAPACK %s failed (info = %d)", op, routine, (int)info);
}

/* dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols (elements of
 * `parts` doubles), in tiles so that both sides stay in cache lines. */
static void transpose(double *dst, int64_t ldd, const double *src, int64_t lds, int64_t rows, int64_t cols, int parts) {
    enum { T = 16 };
    for (int64_t i0 = 0; i0 < rows; i0 += T)
        for (int64_t j0 = 0; j0 < cols; j0 += T) {
            int64_t i1 = imin(rows, i0 + T), j1 = imin(cols, j0 + T);
            for (int64_t j = j0; j < j1; j++)
                for (int64_t i = i0; i < i1; i++)
                    for (int p = 0; p < parts; p++) dst[(j * ldd + i) * parts + p] = src[(i * lds + j) * parts + p];
        }
}

/* The unit factor that turns x into a non-negative real: conj(x)/|x|,
 * or 1 for zero. */
static void unit_towards_real(const double *x, int parts, double *f_re, double *f_im) {
    double mag = parts == 2 ? hypot(x[0], x[1]) : fabs(x[0]);
    if (mag == 0) {
        *f_re = 1;
        *f_im = 0;
        return;
    }
    *f_re = x[0] / mag;
    *f_im = parts == 2 ? -x[1] / mag : 0;
}

/* x *= f for `count` contiguous elements. */
static void scale(double *x, int64_t count, int parts, double f_re, double f_im) {
    for (int64_t i = 0; i < count; i++) {
        double *e = x + i * parts;
        if (parts == 1) e[0] *= f_re;
        else {
            double re = e[0] * f_re - e[1] * f_im, im = e[0] * f_im + e[1] * f_re;
            e[0] = re;
            e[1] = im;
        }
    }
}

/* Index of the largest-magnitude element among `count` elements `stride`
 * apart (the first of equals). */
static int64_t largest_at(const double *x, int64_t count, int64_t stride, int parts) {
    int64_t best = 0;
    double bm = -1;
    for (int64_t i = 0; i < count; i++) {
        const double *e = x + i * stride * parts;
        double m = parts == 2 ? hypot(e[0], e[1]) : fabs(e[0]);
        if (m > bm) {
            bm = m;
            best = i;
        }
    }
    return best;
}

/* Nx's approximate_zeros: |x| <= eps becomes 0. */
static void approximate_zeros(double *x, int64_t count, int parts, double eps) {
    for (int64_t i = 0; i < count; i++) {
        double *e = x + i * parts;
        double m = parts == 2 ? hypot(e[0], e[1]) : fabs(e[0]);
        if (m <= eps)
            for (int p = 0; p < parts; p++) e[p] = 0;
    }
}

/* ---- QR ---------------------------------------------------------------- */

/* Scaling row i of R by f and column i of Q by conj(f) (|f| = 1) leaves
 * QR unchanged. Q is still LAPACK's column-major buffer (leading
 * dimension ld), so both are contiguous runs: flipping the row-major Q's
 * columns instead cost a cache miss per element (a third of qr's time at
 * 1024 x 1024). */
static void rescale_pair(double *qcm, int64_t ld, double *rb, int64_t m, int64_t n, int64_t i, int parts, double f_re,
                         double f_im) {
    scale(rb + (i * n + i) * parts, n - i, parts, f_re, f_im);
    scale(qcm + i * ld * parts, m, parts, f_re, -f_im);
}

/* Complex: R's diagonal made real and non-negative. (Nx's complex
 * reflector leaves a phase there that depends on its own intermediate
 * values; the factors are equal up to these phases.) */
static void unit_diagonal(double *qcm, int64_t ld, double *rb, int64_t m, int64_t n, int64_t k) {
    for (int64_t i = 0; i < k; i++) {
        double f_re, f_im;
        unit_towards_real(rb + (i * n + i) * 2, 2, &f_re, &f_im);
        if (f_re == 1 && f_im == 0) continue;
        rescale_pair(qcm, ld, rb, m, n, i, 2, f_re, f_im);
        rb[(i * n + i) * 2 + 1] = 0;
    }
}

/* Real: the signs Nx's Householder QR gives R's diagonal (core/qr_signs.h). */
static void nx_diagonal_signs(double *qcm, int64_t ld, double *rb, const double *tau, int64_t m, int64_t n, int64_t k) {
    emi_qr_signs st = emi_qr_signs_start();
    for (int64_t i = 0; i < k; i++)
        if (emi_qr_sign_step(&st, i, m, n, tau[i] != 0, rb[i * n + i] < 0) < 0)
            rescale_pair(qcm, ld, rb, m, n, i, 1, -1, 0);
}

/* The larger of ?geqrf's and ?orgqr's optimal workspaces, in elements
 * (a LAPACK error code < 0 if a query fails). */
static lapack_int qr_workspace(bool cx, int64_t m, int64_t n, int64_t qcols, int64_t k, int64_t ld) {
    if (k == 0) return 1;
    lapack_int info, best = 1;
    if (cx) {
        lapack_complex_double q[2];
        info = LAPACKE_zgeqrf_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, NULL, (lapack_int)ld, NULL, q, -1);
        if (info) return info < 0 ? info : -1;
        best = (lapack_int)creal(q[0]);
        info = LAPACKE_zungqr_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)qcols, (lapack_int)k, NULL,
                                   (lapack_int)ld, NULL, q + 1, -1);
        if (info) return info < 0 ? info : -1;
        if ((lapack_int)creal(q[1]) > best) best = (lapack_int)creal(q[1]);
    } else {
        double q[2];
        info = LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, NULL, (lapack_int)ld, NULL, q, -1);
        if (info) return info < 0 ? info : -1;
        best = (lapack_int)q[0];
        info = LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)qcols, (lapack_int)k, NULL,
                                   (lapack_int)ld, NULL, q + 1, -1);
        if (info) return info < 0 ? info : -1;
        if ((lapack_int)q[1] > best) best = (lapack_int)q[1];
    }
    return best > 0 ? best : 1;
}

emily_status emi_cpu_lapack_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps,
                               emily_dtype work) {
    (void)work;
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = imin(m, n);
    emily_status s = check_dims("qr", m, imax(m, n));
    if (s) return s;
    bool cx = a->dtype == EMILY_C128;
    int parts = cx ? 2 : 1;
    /* q: [m, qcols], r: [rrows, n] (a wide input gives both square). */
    int64_t qcols = q->shape[q->rank - 1], rrows = r->shape[r->rank - 2];
    int64_t ld = imax(m, 1), cols = imax(imax(n, qcols), 1);
    int64_t per = m * n, batches = lead_batches(a, 2);
    const double *src = emily_tensor_base(a);
    double *qd = emily_tensor_base(q), *rd = emily_tensor_base(r);
    /* The _work routines with one workspace for both calls: the
     * high-level LAPACKE ones allocate per call and scan the input for
     * NaN, which the op layer has already ruled out (a tenth of qr's time
     * at 256 x 256). */
    lapack_int lwork = qr_workspace(cx, m, n, qcols, k, ld);
    if (lwork < 0) return lapack_failed("qr", cx ? "zgeqrf" : "dgeqrf", lwork);
    emily_tensor *holder = NULL;
    double *buf = scratch((size_t)(ld * cols + k + 1 + lwork) * (size_t)parts * sizeof(double), &holder);
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "qr: out of host memory");
    double *tau = buf + ld * cols * parts, *wk = tau + (k + 1) * parts;
    (void)complete;
    for (int64_t b = 0; b < batches; b++) {
        /* an empty factor has no memory: no offset from its NULL base */
        double *qb = qd ? qd + b * m * qcols * parts : NULL, *rb = rd ? rd + b * rrows * n * parts : NULL;
        if (k == 0) {
            eye(qb, m, qcols, parts);
            fill(rb, rrows * n * parts, 0);
            continue;
        }
        transpose(buf, ld, src + b * per * parts, n, m, n, parts);
        /* columns n.. of a complete Q: ?orgqr starts them from zero */
        fill(buf + n * ld * parts, (cols - n) * ld * parts, 0);
        lapack_int info = cx ? LAPACKE_zgeqrf_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n,
                                                   (lapack_complex_double *)buf, (lapack_int)ld,
                                                   (lapack_complex_double *)tau, (lapack_complex_double *)wk, lwork)
                             : LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, buf, (lapack_int)ld,
                                                   tau, wk, lwork);
        if (info) {
            emily_tensor_release(holder);
            return lapack_failed("qr", cx ? "zgeqrf" : "dgeqrf", info);
        }
        /* R: the upper triangle of the first min(rrows, k) rows */
        fill(rb, rrows * n * parts, 0);
        for (int64_t i = 0; i < imin(rrows, k); i++)
            for (int64_t j = i; j < n; j++)
                for (int p = 0; p < parts; p++) rb[(i * n + j) * parts + p] = buf[(j * ld + i) * parts + p];
        info = cx ? LAPACKE_zungqr_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)qcols, (lapack_int)k,
                                        (lapack_complex_double *)buf, (lapack_int)ld,
                                        (const lapack_complex_double *)tau, (lapack_complex_double *)wk, lwork)
                  : LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)qcols, (lapack_int)k, buf,
                                        (lapack_int)ld, tau, wk, lwork);
        if (info) {
            emily_tensor_release(holder);
            return lapack_failed("qr", cx ? "zungqr" : "dorgqr", info);
        }
        if (cx) unit_diagonal(buf, ld, rb, m, n, k);
        else nx_diagonal_signs(buf, ld, rb, tau, m, n, k);
        transpose(qb, qcols, buf, ld, qcols, m, parts);
        approximate_zeros(rb, rrows * n, parts, eps);
        approximate_zeros(qb, m * qcols, parts, eps);
    }
    emily_tensor_release(holder);
    return EMILY_OK;
}

/* ---- eigh -------------------------------------------------------------- */

emily_status emi_cpu_lapack_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter,
                                 emily_dtype work) {
    (void)eps, (void)max_iter, (void)work; /* Jacobi's knobs; LAPACK converges fully */
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    emily_status st = check_dims("eigh", n, n);
    if (st) return st;
    bool cx = a->dtype == EMILY_C128;
    int parts = cx ? 2 : 1;
    int64_t batches = n ? lead_batches(a, 2) : 0;
    const double *src = emily_tensor_base(a);
    double *wd = emily_tensor_base(w), *vd = emily_tensor_base(v);
    /* ?syevd/?heevd's workspaces, then one block: order (n), the
     * eigenvalues (n), the column-major matrix (n x n), the workspaces */
    lapack_int lwork = 1, lrwork = 1, liwork = 1;
    if (n > 0) {
        lapack_int info;
        if (cx) {
            lapack_complex_double wq;
            double rq;
            info = LAPACKE_zheevd_work(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n, NULL, (lapack_int)n, NULL, &wq, -1,
                                       &rq, -1, &liwork, -1);
            lwork = (lapack_int)creal(wq);
            lrwork = (lapack_int)rq;
        } else {
            double wq;
            info = LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n, NULL, (lapack_int)n, NULL, &wq, -1,
                                       &liwork, -1);
            lwork = (lapack_int)wq;
        }
        if (info) return lapack_failed("eigh", cx ? "zheevd" : "dsyevd", info);
    }
    emily_tensor *holder = NULL;
    size_t doubles = (size_t)(n + nn * parts + lwork * parts + (cx ? lrwork : 0)) + 1;
    int64_t *order = scratch((size_t)(n + liwork) * sizeof(int64_t) + doubles * sizeof(double), &holder);
    if (!order) return emily_error(EMILY_ERR_MEMORY, "eigh: out of host memory");
    double *vals = (double *)(order + n), *cm = vals + n, *wk = cm + nn * parts, *rwk = wk + lwork * parts;
    lapack_int *iwk = (lapack_int *)(rwk + (cx ? lrwork : 0) + 1);
    for (int64_t b = 0; b < batches; b++) {
        const double *ab = src + b * nn * parts;
        double *vb = vd + b * nn * parts, *wb = wd + b * n * parts;
        /* Read column-major, the row-major matrix is its transpose, which
         * for a Hermitian matrix is its conjugate: the same eigenvalues,
         * conjugate eigenvectors (conjugated back below). No transpose. */
        memcpy(cm, ab, (size_t)(nn * parts) * sizeof(double));
        lapack_int info = cx ? LAPACKE_zheevd_work(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n,
                                                   (lapack_complex_double *)cm, (lapack_int)n, vals,
                                                   (lapack_complex_double *)wk, lwork, rwk, lrwork, iwk, liwork)
                             : LAPACKE_dsyevd_work(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n, cm, (lapack_int)n, vals,
                                                   wk, lwork, iwk, liwork);
        if (info > 0) { /* divide and conquer did not converge: plain QR iterations */
            memcpy(cm, ab, (size_t)(nn * parts) * sizeof(double));
            info = cx ? LAPACKE_zheev(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n, (lapack_complex_double *)cm,
                                      (lapack_int)n, vals)
                      : LAPACKE_dsyev(LAPACK_COL_MAJOR, 'V', 'U', (lapack_int)n, cm, (lapack_int)n, vals);
        }
        if (info) {
            emily_tensor_release(holder);
            return lapack_failed("eigh", cx ? "zheevd" : "dsyevd", info);
        }
        /* LAPACK's ascending order -> Nx's decreasing magnitude; equal
         * magnitudes keep LAPACK's order (insertion sort is stable) */
        for (int64_t i = 0; i < n; i++) order[i] = i;
        for (int64_t i = 1; i < n; i++) {
            int64_t x = order[i], j = i;
            while (j > 0 && fabs(vals[order[j - 1]]) < fabs(vals[x])) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = x;
        }
        for (int64_t i = 0; i < n; i++) {
            wb[i * parts] = vals[order[i]];
            if (parts == 2) wb[i * 2 + 1] = 0;
        }
        /* each eigenvector (a column of cm, contiguous) with its largest
         * entry turned real and positive; then eigenvector order[c] ->
         * column c of vb, in tiles (a column at a time wrote a cache line
         * per element) */
        for (int64_t c = 0; c < n; c++) {
            double *col = cm + c * n * parts;
            for (int64_t r = 0; parts == 2 && r < n; r++) col[r * 2 + 1] = -col[r * 2 + 1];
            double f_re, f_im, *largest = col + largest_at(col, n, 1, parts) * parts;
            unit_towards_real(largest, parts, &f_re, &f_im);
            scale(col, n, parts, f_re, f_im);
            if (parts == 2) largest[1] = 0; /* exactly real, not f's rounding of it */
        }
        enum { T = 16 };
        for (int64_t r0 = 0; r0 < n; r0 += T)
            for (int64_t c0 = 0; c0 < n; c0 += T)
                for (int64_t c = c0; c < imin(n, c0 + T); c++) {
                    const double *col = cm + order[c] * n * parts;
                    for (int64_t r = r0; r < imin(n, r0 + T); r++)
                        for (int p = 0; p < parts; p++) vb[(r * n + c) * parts + p] = col[r * parts + p];
                }
    }
    emily_tensor_release(holder);
    return EMILY_OK;
}

/* ---- svd --------------------------------------------------------------- */

/* A row-major m x n matrix is its transpose, n x m, column-major; LAPACK
 * factors that as A^T = U' S V'^T, so A = V' S U'^T: U' read back
 * row-major is vt and V'^T read back row-major is u, with no copies. */
emily_status emi_cpu_lapack_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                                bool full_matrices, int64_t max_iter, emily_dtype work, bool integer_input) {
    (void)max_iter, (void)work, (void)integer_input;
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = imin(m, n);
    emily_status st = check_dims("svd", imax(m, n), imax(m, n));
    if (st) return st;
    int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
    int64_t batches = lead_batches(a, 2);
    const double *src = emily_tensor_base(a);
    double *ud = emily_tensor_base(u), *sd = emily_tensor_base(s), *vd = emily_tensor_base(vt);
    char job = full_matrices ? 'A' : 'S';
    /* ?gesdd's workspace (queried), then one block: the matrix, superb,
     * u's column signs, the workspaces */
    lapack_int lwork = 1;
    if (k > 0) {
        double wq;
        lapack_int info = LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, job, (lapack_int)n, (lapack_int)m, NULL, (lapack_int)n,
                                              NULL, NULL, (lapack_int)n, NULL, (lapack_int)ucols, &wq, -1, NULL);
        if (info) return lapack_failed("svd", "dgesdd", info);
        lwork = (lapack_int)wq;
    }
    emily_tensor *holder = NULL;
    double *buf = scratch(
        (size_t)(m * n + k + ucols + lwork + 1) * sizeof(double) + (size_t)(8 * k + 1) * sizeof(lapack_int), &holder);
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "svd: out of host memory");
    double *superb = buf + m * n, *usign = superb + k, *wk = usign + ucols;
    lapack_int *iwk = (lapack_int *)(wk + lwork + 1);
    for (int64_t b = 0; b < batches; b++) {
        /* an empty factor has no memory: no offset from its NULL base */
        double *ub = ud ? ud + b * m * ucols : NULL, *sb = sd ? sd + b * k : NULL, *vb = vd ? vd + b * vrows * n : NULL;
        if (k == 0) {
            eye(ub, m, ucols, 1);
            eye(vb, vrows, n, 1);
            continue;
        }
        memcpy(buf, src + b * m * n, (size_t)(m * n) * sizeof(double));
        lapack_int info = LAPACKE_dgesdd_work(LAPACK_COL_MAJOR, job, (lapack_int)n, (lapack_int)m, buf, (lapack_int)n,
                                              sb, vb, (lapack_int)n, ub, (lapack_int)ucols, wk, lwork, iwk);
        if (info > 0) { /* divide and conquer did not converge: the QR-iteration driver */
            memcpy(buf, src + b * m * n, (size_t)(m * n) * sizeof(double));
            info = LAPACKE_dgesvd(LAPACK_COL_MAJOR, job, job, (lapack_int)n, (lapack_int)m, buf, (lapack_int)n, sb, vb,
                                  (lapack_int)n, ub, (lapack_int)ucols, superb);
        }
        if (info) {
            emily_tensor_release(holder);
            return lapack_failed("svd", "dgesdd", info);
        }
        /* signs: row i of vt with its largest entry positive, column i of
         * u flipped with it; u's extra columns and vt's extra rows alone.
         * u's column signs are collected first and applied in one pass
         * over its rows (flipping a column at a time missed the cache on
         * every element). */
        for (int64_t i = 0; i < imax(ucols, vrows); i++) {
            bool paired = i < k, flip = false;
            if (i < vrows) {
                flip = vb[i * n + largest_at(vb + i * n, n, 1, 1)] < 0;
                if (flip) scale(vb + i * n, n, 1, -1, 0);
            }
            if (i < ucols && !paired) flip = ub[largest_at(ub + i, m, ucols, 1) * ucols + i] < 0;
            if (i < ucols) usign[i] = flip ? -1 : 1;
        }
        for (int64_t r = 0; r < m; r++)
            for (int64_t c = 0; c < ucols; c++) ub[r * ucols + c] *= usign[c];
    }
    emily_tensor_release(holder);
    return EMILY_OK;
}
