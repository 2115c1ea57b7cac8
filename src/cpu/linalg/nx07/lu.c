/* Nx 0.7.2's Nx.BinaryBackend.Matrix.lu, for EMILY_LINALG_REFERENCE_NX07
 * (see nx07.h). It differs from Nx 0.8+'s LU (../lu.c) in two
 * ways that change its answers, not just their rounding:
 * - the rows are permuted up front (lu_validate_and_pivot): for each
 *   column j in turn, the row at or below j whose entry in column j has
 *   the largest magnitude, the first of equals, is swapped into row j,
 *   comparing the entries of the unreduced matrix;
 * - the permuted matrix is then factored by Doolittle's method with no
 *   further pivoting, in double precision, each computed entry with
 *   magnitude below :eps written as 0, and a zero pivot giving +-infinity
 *   below it (Nx's `(a_ij - sum) / u_jj` guarded by `u_jj != 0`).
 * Sums run in Nx's order (index ascending, `x * y + acc` from 0). */
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include "cpu/linalg/nx07/nx07.h"

/* The pivot search compares Complex.abs/1 results in Erlang's term order,
 * where the atoms that stand for non-finite values sort above every
 * number, :infinity below :nan. */
static int magnitude_class(zd x, bool cx) {
    if (!cx) return isnan(x.re) ? 2 : isinf(x.re) ? 1 : 0;
    if (isnan(x.re) && isnan(x.im)) return 2;
    return isfinite(x.re) && isfinite(x.im) ? 0 : 1;
}

/* True when x (class cx, magnitude mx) sorts strictly above y. */
static bool magnitude_above(int cx, double mx, int cy, double my) {
    if (cx != cy) return cx > cy;
    return cx == 0 && mx > my;
}

static void swap_rows(void *m, int64_t n, size_t es, int64_t i, int64_t j, char *tmp) {
    char *base = m;
    memcpy(tmp, base + (size_t)(i * n) * es, (size_t)n * es);
    memcpy(base + (size_t)(i * n) * es, base + (size_t)(j * n) * es, (size_t)n * es);
    memcpy(base + (size_t)(j * n) * es, tmp, (size_t)n * es);
}

/* lu_validate_and_pivot on `a` in place (n x n, elements of es bytes whose
 * first double is the real part); perm[j]: the input row now at row j.
 * tmp: n * es bytes. */
static void pivot_rows(void *a, int64_t n, bool cx, int64_t *perm, char *tmp) {
    size_t es = cx ? sizeof(zd) : sizeof(double);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t j = 0; j + 1 < n; j++) {
        int64_t best = j;
        int best_class = 0;
        double best_mag = 0;
        for (int64_t i = j; i < n; i++) {
            zd x = cx ? ((zd *)a)[i * n + j] : zr(((double *)a)[i * n + j]);
            int c = magnitude_class(x, cx);
            double mag = c ? 0 : cx ? zabs(x) : fabs(x.re);
            if (i == j || magnitude_above(c, mag, best_class, best_mag)) {
                best = i;
                best_class = c;
                best_mag = mag;
            }
        }
        if (best != j) {
            swap_rows(a, n, es, j, best, tmp);
            int64_t t = perm[j];
            perm[j] = perm[best];
            perm[best] = t;
        }
    }
}

/* Nx writes :nan as the positive quiet NaN; x86's 0 * inf gives the
 * negative one. */
static double nx_nan(double x) { return isnan(x) ? NAN : x; }

void emi_cpu_nx07_lu_real(double *a, int64_t n, double eps, int64_t *perm, double *l, double *u, char *tmp) {
    pivot_rows(a, n, false, perm, tmp);
    for (int64_t i = 0; i < n * n; i++) l[i] = u[i] = 0;
    for (int64_t j = 0; j < n; j++) {
        l[j * n + j] = 1;
        for (int64_t i = 0; i <= j; i++) {
            double sum = 0;
            for (int64_t k = 0; k < i; k++) sum = u[k * n + j] * l[i * n + k] + sum;
            double value = a[i * n + j] - sum;
            u[i * n + j] = fabs(value) < eps ? 0 : value;
        }
        double u_jj = u[j * n + j];
        for (int64_t i = j + 1; i < n; i++) {
            /* Nx's sum runs over k < i; l[i][k] is still 0 for k >= j */
            double sum = 0;
            for (int64_t k = 0; k < j; k++) sum = u[k * n + j] * l[i * n + k] + sum;
            double a_ij = a[i * n + j], value;
            if (u_jj != 0) value = (a_ij - sum) / u_jj;
            else value = a_ij >= sum ? INFINITY : -INFINITY;
            l[i * n + j] = fabs(value) < eps ? 0 : value;
        }
    }
    for (int64_t i = 0; i < n * n; i++) l[i] = nx_nan(l[i]), u[i] = nx_nan(u[i]);
}

/* `a_ij >= sum` on two %Complex{} structs compares them as maps: the
 * imaginary parts first, then the real parts. */
static bool complex_term_ge(zd a, zd b) {
    if (a.im != b.im) return a.im > b.im;
    return a.re >= b.re;
}

void emi_cpu_nx07_lu_complex(zd *a, int64_t n, double eps, int64_t *perm, zd *l, zd *u, char *tmp) {
    pivot_rows(a, n, true, perm, tmp);
    for (int64_t i = 0; i < n * n; i++) l[i] = u[i] = (zd){0, 0};
    for (int64_t j = 0; j < n; j++) {
        l[j * n + j] = (zd){1, 0};
        for (int64_t i = 0; i <= j; i++) {
            zd sum = {0, 0};
            for (int64_t k = 0; k < i; k++) sum = zadd(zmul(u[k * n + j], l[i * n + k]), sum);
            zd value = zsub(a[i * n + j], sum);
            u[i * n + j] = zabs(value) < eps ? (zd){0, 0} : value;
        }
        zd u_jj = u[j * n + j];
        for (int64_t i = j + 1; i < n; i++) {
            zd sum = {0, 0};
            for (int64_t k = 0; k < j; k++) sum = zadd(zmul(u[k * n + j], l[i * n + k]), sum);
            zd a_ij = a[i * n + j], value;
            if (!zzero(u_jj)) {
                value = zdiv(zsub(a_ij, sum), u_jj);
            } else {
                /* A zeroed entry is Erlang's integer 0 (computed ones are at
                 * least eps in magnitude), and the sum stays that integer
                 * when every product is 0 * 0; a struct sorts above it. */
                bool integer_sum = true;
                for (int64_t k = 0; k < j; k++) integer_sum = integer_sum && zzero(u[k * n + j]) && zzero(l[i * n + k]);
                value = (zd){integer_sum || complex_term_ge(a_ij, sum) ? INFINITY : -INFINITY, 0};
            }
            l[i * n + j] = zabs(value) < eps ? (zd){0, 0} : value;
        }
    }
    /* (Below a zero pivot Nx's Complex arithmetic mixes real atoms such as
     * :infinity into the sums, so the imaginary parts of those NaN and
     * infinite entries can differ from the IEEE ones computed here.) */
    for (int64_t i = 0; i < n * n; i++) {
        l[i] = (zd){nx_nan(l[i].re), nx_nan(l[i].im)};
        u[i] = (zd){nx_nan(u[i].re), nx_nan(u[i].im)};
    }
}
