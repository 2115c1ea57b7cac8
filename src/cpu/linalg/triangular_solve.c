/* CPU kernel: triangular_solve, as Nx.BinaryBackend.Matrix.ts computes
 * it: substitution in double precision on a matrix that has been
 * conjugated, transposed and reversed so that it is always a forward
 * substitution; complex arithmetic as Elixir's Complex library's. */
#include <stdlib.h>
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/reference.h"

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

emily_status emi_cpu_linalg_triangular_solve(emily_tensor *x, const emily_tensor *a,
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
