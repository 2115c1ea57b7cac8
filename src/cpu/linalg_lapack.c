/* CPU kernels: qr and eigh of complex matrices, whose factors are unique
 * only up to phases, through LAPACKE in double precision (z* routines; the
 * d* paths are not reached, real inputs take Nx's own algorithms in
 * linalg_nx.c). Matrices are copied per batch entry into a scratch buffer
 * that LAPACK overwrites. Non-finite input gives NaN factors (LAPACK's
 * iterations are not defined on NaN/inf). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <lapacke.h>
#include "cpu/kernels.h"
#include "ops/linalg_kernels.h"

emily_status emily_cpu_lapack_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                                 bool complete, double eps);
emily_status emily_cpu_lapack_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a);

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
    if (parts == 1) {
        for (int64_t i = 0; i < count; i++) x[i] = fabs(x[i]) <= eps ? 0 : x[i];
        return;
    }
    for (int64_t i = 0; i < count; i++)
        if (hypot(x[2 * i], x[2 * i + 1]) <= eps) x[2 * i] = x[2 * i + 1] = 0;
}

/* dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols (elements of
 * `parts` doubles), in tiles so that both sides stay in cache lines. */
static void transpose(double *dst, int64_t ldd, const double *src, int64_t lds, int64_t rows,
                      int64_t cols, int parts) {
    enum { T = 16 };
    for (int64_t i0 = 0; i0 < rows; i0 += T)
        for (int64_t j0 = 0; j0 < cols; j0 += T) {
            int64_t i1 = imin(rows, i0 + T), j1 = imin(cols, j0 + T);
            if (parts == 1) {
                for (int64_t j = j0; j < j1; j++)
                    for (int64_t i = i0; i < i1; i++) dst[j * ldd + i] = src[i * lds + j];
            } else {
                for (int64_t j = j0; j < j1; j++)
                    for (int64_t i = i0; i < i1; i++) {
                        dst[2 * (j * ldd + i)] = src[2 * (i * lds + j)];
                        dst[2 * (j * ldd + i) + 1] = src[2 * (i * lds + j) + 1];
                    }
            }
        }
}

/* LAPACK works on column-major matrices; the LAPACKE row-major entry
 * points transpose into a scratch copy and back, twice per routine here.
 * We make the one column-major copy ourselves and call the column-major
 * entry points: the same Fortran routines on the same values, so the
 * same results, with three transposes instead of six plus two copies. */
emily_status emily_cpu_lapack_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                                 bool complete, double eps) {
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = imin(m, n);
    emily_status s = check_dims("qr", m, n);
    if (s) return s;
    bool cx = a->dtype == EMILY_C128;
    int parts = cx ? 2 : 1;
    int64_t qcols = complete ? m : k, rrows = complete ? m : k;
    int64_t ld = imax(m, 1), cols = imax(imax(n, qcols), 1);
    int64_t per = m * n, batches = lead_batches(a, 2);
    const double *src = emily_tensor_base(a);
    double *qd = emily_tensor_base(q), *rd = emily_tensor_base(r);
    double *work = malloc((size_t)(ld * cols + k + 1) * (size_t)parts * sizeof(double));
    if (!work) return emily_error(EMILY_ERR_MEMORY, "qr: out of host memory");
    double *tau = work + ld * cols * parts;
    for (int64_t b = 0; b < batches; b++) {
        double *qb = qd + b * m * qcols * parts, *rb = rd + b * rrows * n * parts;
        if (k == 0) {
            eye(qb, m, qcols, parts);
            fill(rb, rrows * n * parts, 0);
            continue;
        }
        transpose(work, ld, src + b * per * parts, n, m, n, parts);
        /* complete mode (m > n): columns n..m-1 are only filled by ?orgqr,
         * and LAPACKE's NaN check reads them before */
        fill(work + n * ld * parts, (cols - n) * ld * parts, 0);
        lapack_int info =
            cx ? LAPACKE_zgeqrf(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n,
                                (lapack_complex_double *)work, (lapack_int)ld,
                                (lapack_complex_double *)tau)
               : LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)n, work,
                                (lapack_int)ld, tau);
        if (info) { free(work); return lapack_failed("qr", cx ? "zgeqrf" : "dgeqrf", info); }
        /* R: the upper triangle of the first k rows */
        transpose(rb, n, work, ld, n, imin(rrows, k), parts);
        for (int64_t i = 0; i < rrows; i++)
            fill(rb + i * n * parts, (i < k ? i : n) * parts, 0);
        approximate_zeros(rb, rrows * n, parts, eps);
        info = cx ? LAPACKE_zungqr(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)qcols, (lapack_int)k,
                                   (lapack_complex_double *)work, (lapack_int)ld,
                                   (const lapack_complex_double *)tau)
                  : LAPACKE_dorgqr(LAPACK_COL_MAJOR, (lapack_int)m, (lapack_int)qcols, (lapack_int)k,
                                   work, (lapack_int)ld, tau);
        if (info) { free(work); return lapack_failed("qr", cx ? "zungqr" : "dorgqr", info); }
        transpose(qb, qcols, work, ld, qcols, m, parts);
        approximate_zeros(qb, m * qcols, parts, eps);
    }
    free(work);
    return EMILY_OK;
}

/* ---- eigh -------------------------------------------------------------- */

emily_status emily_cpu_lapack_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    emily_status st = check_dims("eigh", n, n);
    if (st) return st;
    bool cx = a->dtype == EMILY_C128;
    int parts = cx ? 2 : 1;
    int64_t batches = n ? lead_batches(a, 2) : 0;
    const double *src = emily_tensor_base(a);
    double *wd = emily_tensor_base(w), *vd = emily_tensor_base(v);
    /* order (n), a copy of w (n), the column-major matrix (n x n) */
    int64_t *order = malloc((size_t)n * sizeof(int64_t) + (size_t)(n + nn * parts) * sizeof(double) + 1);
    if (!order) return emily_error(EMILY_ERR_MEMORY, "eigh: out of host memory");
    double *tmp = (double *)(order + n), *cm = tmp + n;
    for (int64_t b = 0; b < batches; b++) {
        const double *ab = src + b * nn * parts;
        double *vb = vd + b * nn * parts, *wb = wd + b * n;
        if (!all_finite(ab, nn * parts)) {
            fill(vb, nn * parts, NAN);
            fill(wb, n, NAN);
            continue;
        }
        /* column-major, as LAPACKE's row-major entry point would copy it
         * (plain transpose; only the lower triangle is read) */
        transpose(cm, n, ab, n, n, n, parts);
        lapack_int info = cx ? LAPACKE_zheevd(LAPACK_COL_MAJOR, 'V', 'L', (lapack_int)n,
                                              (lapack_complex_double *)cm, (lapack_int)n, wb)
                             : LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', (lapack_int)n, cm,
                                              (lapack_int)n, wb);
        if (info > 0) {
            transpose(cm, n, ab, n, n, n, parts);
            info = cx ? LAPACKE_zheev(LAPACK_COL_MAJOR, 'V', 'L', (lapack_int)n,
                                      (lapack_complex_double *)cm, (lapack_int)n, wb)
                      : LAPACKE_dsyev(LAPACK_COL_MAJOR, 'V', 'L', (lapack_int)n, cm, (lapack_int)n, wb);
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
        /* eigenvector order[c] (column-major column order[c]) becomes column
         * c of the row-major result, in tiles */
        enum { T = 16 };
        for (int64_t c0 = 0; c0 < n; c0 += T)
            for (int64_t r0 = 0; r0 < n; r0 += T) {
                int64_t c1 = imin(n, c0 + T), r1 = imin(n, r0 + T);
                for (int64_t c = c0; c < c1; c++) {
                    const double *col = cm + order[c] * n * parts;
                    for (int64_t r = r0; r < r1; r++)
                        for (int p = 0; p < parts; p++) vb[(r * n + c) * parts + p] = col[r * parts + p];
                }
            }
    }
    free(order);
    return EMILY_OK;
}
