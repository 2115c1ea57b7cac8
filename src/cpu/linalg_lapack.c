/* CPU kernels: the decompositions whose factors are unique only up to
 * signs (qr, svd, eigh), through LAPACKE in double precision (d* routines
 * for f64, z* for c128). Matrices are copied per batch entry into a
 * scratch buffer that LAPACK overwrites. Non-finite input gives NaN
 * factors (LAPACK's iterations are not defined on NaN/inf). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lapacke.h>
#include "cpu/kernels.h"
#include "ops/linalg_kernels.h"

emily_status emily_cpu_linalg_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                                 bool complete, double eps);
emily_status emily_cpu_linalg_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                                  const emily_tensor *a, bool full_matrices);
emily_status emily_cpu_linalg_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a);

static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* Element counts and sizes are checked here once: LAPACK takes int. */
static emily_status check_dims(const char *op, int64_t m, int64_t n) {
    if (m > INT32_MAX / 4 || n > INT32_MAX / 4 || (m && n > INT64_MAX / 16 / m))
        return emily_error(EMILY_ERR_SHAPE, "%s: a %lldx%lld matrix is too large for LAPACK", op,
                           (long long)m, (long long)n);
    return EMILY_OK;
}

/* Number of matrices: the product of the leading (batch) axes. */
static int64_t lead_batches(const emily_tensor *t, int matrix_rank) {
    int64_t b = 1;
    for (int i = 0; i < t->rank - matrix_rank; i++) b *= t->shape[i];
    return b;
}

static bool all_finite(const double *x, int64_t count) {
    for (int64_t i = 0; i < count; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

static void fill(double *x, int64_t count, double v) {
    for (int64_t i = 0; i < count; i++) x[i] = v;
}

/* Identity rows x cols in a wide buffer (parts doubles per element). */
static void eye(double *x, int64_t rows, int64_t cols, int parts) {
    fill(x, rows * cols * parts, 0);
    for (int64_t i = 0; i < imin(rows, cols); i++) x[(i * cols + i) * parts] = 1;
}

static emily_status lapack_failed(const char *op, const char *routine, lapack_int info) {
    if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR)
        return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory in LAPACK %s", op, routine);
    return emily_error(EMILY_ERR_INTERNAL, "%s: LAPACK %s failed (info = %d)", op, routine,
                       (int)info);
}

/* ---- QR ---------------------------------------------------------------- */

/* Nx's approximate_zeros: |x| <= eps becomes 0. */
static void approximate_zeros(double *x, int64_t count, int parts, double eps) {
    for (int64_t i = 0; i < count; i++) {
        double *e = x + i * parts;
        double mag = parts == 2 ? hypot(e[0], e[1]) : fabs(e[0]);
        if (mag <= eps)
            for (int p = 0; p < parts; p++) e[p] = 0;
    }
}

emily_status emily_cpu_linalg_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                                 bool complete, double eps) {
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = imin(m, n);
    emily_status s = check_dims("qr", m, n);
    if (s) return s;
    bool cx = a->dtype == EMILY_C128;
    int parts = cx ? 2 : 1;
    int64_t qcols = complete ? m : k, rrows = complete ? m : k;
    int64_t lda = imax(imax(n, qcols), 1);
    int64_t per = m * n, batches = lead_batches(a, 2);
    const double *src = emily_tensor_base(a);
    double *qd = emily_tensor_base(q), *rd = emily_tensor_base(r);
    /* zeroed: in complete mode (m > n) columns n..lda-1 are only filled by
     * ?orgqr, and LAPACKE's NaN check reads them before */
    double *work = calloc((size_t)(m * lda + k + 1) * (size_t)parts, sizeof(double));
    if (!work) return emily_error(EMILY_ERR_MEMORY, "qr: out of host memory");
    double *tau = work + m * lda * parts;
    for (int64_t b = 0; b < batches; b++) {
        double *qb = qd + b * m * qcols * parts, *rb = rd + b * rrows * n * parts;
        if (k == 0) {
            eye(qb, m, qcols, parts);
            fill(rb, rrows * n * parts, 0);
            continue;
        }
        for (int64_t i = 0; i < m; i++)
            memcpy(work + i * lda * parts, src + (b * per + i * n) * parts,
                   (size_t)(n * parts) * sizeof(double));
        lapack_int info =
            cx ? LAPACKE_zgeqrf(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)n,
                                (lapack_complex_double *)work, (lapack_int)lda,
                                (lapack_complex_double *)tau)
               : LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)n, work,
                                (lapack_int)lda, tau);
        if (info) { free(work); return lapack_failed("qr", cx ? "zgeqrf" : "dgeqrf", info); }
        for (int64_t i = 0; i < rrows; i++)
            for (int64_t j = 0; j < n; j++)
                for (int p = 0; p < parts; p++)
                    rb[(i * n + j) * parts + p] = (i < k && j >= i) ? work[(i * lda + j) * parts + p] : 0;
        info = cx ? LAPACKE_zungqr(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)qcols, (lapack_int)k,
                                   (lapack_complex_double *)work, (lapack_int)lda,
                                   (const lapack_complex_double *)tau)
                  : LAPACKE_dorgqr(LAPACK_ROW_MAJOR, (lapack_int)m, (lapack_int)qcols, (lapack_int)k,
                                   work, (lapack_int)lda, tau);
        if (info) { free(work); return lapack_failed("qr", cx ? "zungqr" : "dorgqr", info); }
        for (int64_t i = 0; i < m; i++)
            memcpy(qb + i * qcols * parts, work + i * lda * parts,
                   (size_t)(qcols * parts) * sizeof(double));
        approximate_zeros(qb, m * qcols, parts, eps);
        approximate_zeros(rb, rrows * n, parts, eps);
    }
    free(work);
    return EMILY_OK;
}

/* ---- SVD (real) -------------------------------------------------------- */

emily_status emily_cpu_linalg_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                                  const emily_tensor *a, bool full_matrices) {
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = imin(m, n);
    emily_status st = check_dims("svd", m, n);
    if (st) return st;
    int64_t ucols = full_matrices ? m : k, vrows = full_matrices ? n : k;
    int64_t per = m * n, batches = lead_batches(a, 2);
    const double *src = emily_tensor_base(a);
    double *ud = emily_tensor_base(u), *sd = emily_tensor_base(s), *vd = emily_tensor_base(vt);
    double *work = malloc((size_t)(per + 1) * sizeof(double));
    if (!work) return emily_error(EMILY_ERR_MEMORY, "svd: out of host memory");
    for (int64_t b = 0; b < batches; b++) {
        double *ub = ud + b * m * ucols, *sb = sd + b * k, *vb = vd + b * vrows * n;
        if (k == 0) {
            eye(ub, m, ucols, 1);
            eye(vb, vrows, n, 1);
            continue;
        }
        memcpy(work, src + b * per, (size_t)per * sizeof(double));
        if (!all_finite(work, per)) {
            fill(ub, m * ucols, NAN);
            fill(sb, k, NAN);
            fill(vb, vrows * n, NAN);
            continue;
        }
        lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, full_matrices ? 'A' : 'S', (lapack_int)m,
                                         (lapack_int)n, work, (lapack_int)n, sb, ub,
                                         (lapack_int)imax(ucols, 1), vb, (lapack_int)n);
        if (info > 0) {
            /* divide and conquer did not converge: fall back to QR iteration */
            double *superb = malloc((size_t)k * sizeof(double));
            if (!superb) { free(work); return emily_error(EMILY_ERR_MEMORY, "svd: out of host memory"); }
            memcpy(work, src + b * per, (size_t)per * sizeof(double));
            char job = full_matrices ? 'A' : 'S';
            info = LAPACKE_dgesvd(LAPACK_ROW_MAJOR, job, job, (lapack_int)m, (lapack_int)n, work,
                                  (lapack_int)n, sb, ub, (lapack_int)imax(ucols, 1), vb,
                                  (lapack_int)n, superb);
            free(superb);
            if (info) { free(work); return lapack_failed("svd", "dgesvd", info); }
        } else if (info) {
            free(work);
            return lapack_failed("svd", "dgesdd", info);
        }
    }
    free(work);
    return EMILY_OK;
}

/* ---- eigh -------------------------------------------------------------- */

emily_status emily_cpu_linalg_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    emily_status st = check_dims("eigh", n, n);
    if (st) return st;
    bool cx = a->dtype == EMILY_C128;
    int parts = cx ? 2 : 1;
    int64_t batches = n ? lead_batches(a, 2) : 0;
    const double *src = emily_tensor_base(a);
    double *wd = emily_tensor_base(w), *vd = emily_tensor_base(v);
    int64_t *order = malloc((size_t)n * (sizeof(int64_t) + 2 * sizeof(double)) + 1);
    if (!order) return emily_error(EMILY_ERR_MEMORY, "eigh: out of host memory");
    double *tmp = (double *)(order + n);
    for (int64_t b = 0; b < batches; b++) {
        double *vb = vd + b * nn * parts, *wb = wd + b * n;
        memcpy(vb, src + b * nn * parts, (size_t)(nn * parts) * sizeof(double));
        if (!all_finite(vb, nn * parts)) {
            fill(vb, nn * parts, NAN);
            fill(wb, n, NAN);
            continue;
        }
        lapack_int info = cx ? LAPACKE_zheevd(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)n,
                                              (lapack_complex_double *)vb, (lapack_int)n, wb)
                             : LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)n, vb,
                                              (lapack_int)n, wb);
        if (info > 0) {
            memcpy(vb, src + b * nn * parts, (size_t)(nn * parts) * sizeof(double));
            info = cx ? LAPACKE_zheev(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)n,
                                      (lapack_complex_double *)vb, (lapack_int)n, wb)
                      : LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'L', (lapack_int)n, vb, (lapack_int)n, wb);
        }
        if (info) { free(order); return lapack_failed("eigh", cx ? "zheevd" : "dsyevd", info); }
        /* LAPACK's ascending order -> Nx's: decreasing |w| (stable). */
        for (int64_t i = 0; i < n; i++) order[i] = i;
        for (int64_t i = 1; i < n; i++) {
            int64_t x = order[i], j = i;
            while (j > 0 && fabs(wb[order[j - 1]]) < fabs(wb[x])) { order[j] = order[j - 1]; j--; }
            order[j] = x;
        }
        memcpy(tmp, wb, (size_t)n * sizeof(double));
        for (int64_t i = 0; i < n; i++) wb[i] = tmp[order[i]];
        for (int64_t row = 0; row < n; row++) {
            double *vr = vb + row * n * parts;
            memcpy(tmp, vr, (size_t)(n * parts) * sizeof(double));
            for (int64_t i = 0; i < n; i++)
                for (int p = 0; p < parts; p++) vr[i * parts + p] = tmp[order[i] * parts + p];
        }
    }
    free(order);
    return EMILY_OK;
}
