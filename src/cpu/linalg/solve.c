/* CPU kernel: solve for f64 a and b, the fused form of Nx.LinAlg.solve
 * (lu, then p^T . b, then two triangular solves) with the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/reference.h"

/* Nx.LinAlg.solve is lu(a), then p^T . b through the dot, then two
 * triangular solves; the op layer composes exactly that for every type.
 * For f64 a and b (with the exact dot) this kernel gives the same bits
 * without materializing p, l and u or running a dense dot with p:
 *
 * - the dot sums p[k][i] * b[k][c] over k from +0: every term but one is
 *   0 * b[k][c], so the total is b[perm[i]][c] + 0 (a -0 becomes +0),
 *   unless some other b[k][c] is infinite or NaN (0 * inf is NaN);
 * - the triangular solves are triangular_solve.c's substitutions on l (unit
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
            for (int64_t c = 0; c < cn; c++) yi[c0 + c] = (i < n - 1 ? yi[c0 + c] - acc[c] : yi[c0 + c]) / d;
        }
    }
}

emily_status emi_cpu_linalg_solve(emily_tensor *x, const emily_tensor *a, const emily_tensor *b, bool b_vector) {
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
            emi_linalg_lu_real(work, n, EMILY_F64, perm);
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
    if (failed)
        s = emily_error(EMILY_ERR_MEMORY, "solve: out of host memory for a %lldx%lld matrix", (long long)n,
                        (long long)n);
    for (int64_t bt = 0; !s && bt < batches; bt++)
        if (zero_row[bt] >= 0)
            s = emily_error(EMILY_ERR_ARGUMENT,
                            "triangular_solve: can't solve for singular matrix (zero on the "
                            "diagonal at row %lld of matrix %lld)",
                            (long long)zero_row[bt], (long long)bt);
    free(zero_row);
    return s;
}
