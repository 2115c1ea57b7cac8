/* Nx 0.7.2's Nx.BinaryBackend.Matrix.eigh, for EMILY_LINALG_REFERENCE_NX07
 * (see nx07.h): a Householder reduction to Hessenberg form, then
 * unshifted QR iterations (each QR by Householder reflections) until two
 * successive products of the Q factors agree within :eps.
 *
 * Every step is computed as that module computes it, operation by
 * operation, so that the doubles come out the same:
 * - real inputs take Elixir's float arithmetic; complex ones take the
 *   formulas of Elixir's Complex library (../complex.h), a real
 *   operand being Complex.new(x, 0);
 * - sums run from 0 in index order (`acc + x * y`), and a reflector is
 *   `identity - (scale * v_r) * conj(v_c)`, with Nx's grouping;
 * - each "approximate zero" becomes `0 * x`, which keeps the sign of a
 *   negative float (and the sign rules of a complex product);
 * - Erlang's integers (integer inputs, identity entries, the 0 a sum
 *   starts from) act as the equal doubles. Where one differs, integer 0
 *   against -0.0 here (`0 * x` of a small negative integer), that zero
 *   only meets sums from 0, squares, a `<= 0` test and outer products
 *   subtracted from the identity, so the sign never reaches a result;
 * - a zero column below the diagonal of a complex matrix makes Complex
 *   divide 0 by 0, :nan in Elixir: IEEE NaN here, which propagates the
 *   same way (Complex.abs gives :nan, `:nan < eps` is false, and
 *   is_approximately_same? accepts it). NaN results are written as the
 *   positive quiet NaN, the bits Nx writes for :nan.
 * Ranges keep Elixir 1.14's meaning: `0..(n - 2)` runs 0, -1 for n = 1,
 * and `1..max_iter` runs 2 - max_iter times when max_iter < 1. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/linalg/nx07/nx07.h"

/* ---- Scalars: Elixir numbers (cx false, the imaginary part unused and
 * kept 0) or %Complex{} structs (cx true). */

static zd s_add(bool cx, zd a, zd b) { return cx ? zadd(a, b) : zr(a.re + b.re); }
static zd s_sub(bool cx, zd a, zd b) { return cx ? zsub(a, b) : zr(a.re - b.re); }
static zd s_mul(bool cx, zd a, zd b) { return cx ? zmul(a, b) : zr(a.re * b.re); }
static zd s_conj(bool cx, zd a) { return cx ? zconj(a) : a; }
/* Complex.abs/1 (Kernel.abs/1 on a number). */
static double s_abs(bool cx, zd a) { return cx ? zabs(a) : fabs(a.re); }
/* Complex.abs_squared/1 of a struct. */
static double abs_squared(zd a) { return a.re * a.re + a.im * a.im; }

/* approximate_zeros/2 on one entry: `if abs(x) < tol, do: 0 * x, else: x`;
 * for a struct, 0 * x is the full product with Complex.new(0, 0). */
static zd round_to_zero(bool cx, zd x, double eps) {
    if (!(s_abs(cx, x) < eps)) return x;
    return s_mul(cx, zr(0), x);
}

static void approximate_zeros(bool cx, zd *m, int64_t count, double eps) {
    for (int64_t i = 0; i < count; i++) m[i] = round_to_zero(cx, m[i], eps);
}

/* is_approximately_same?/3: `abs_diff == :nan or abs_diff <= eps`. */
static bool approximately_same(bool cx, const zd *a, const zd *b, int64_t count, double eps) {
    for (int64_t i = 0; i < count; i++) {
        double diff = s_abs(cx, s_sub(cx, a[i], b[i]));
        if (!(isnan(diff) || diff <= eps)) return false;
    }
    return true;
}

/* The Hermitian test of Matrix.eigh: conj(transpose(a)) against a. */
static bool is_hermitian(bool cx, const zd *a, int64_t n, double eps) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double diff = s_abs(cx, s_sub(cx, s_conj(cx, a[j * n + i]), a[i * n + j]));
            if (!(isnan(diff) || diff <= eps)) return false;
        }
    return true;
}

/* dot_matrix_real(a, b), or dot_matrix_real(a, adjoint_matrix(b)) when
 * adjoint_b, into out (not aliasing a or b). */
static void dot_matrix(bool cx, const zd *a, const zd *b, bool adjoint_b, int64_t n, zd *out) {
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            zd acc = zr(0);
            for (int64_t k = 0; k < n; k++) {
                zd b_kj = adjoint_b ? s_conj(cx, b[j * n + k]) : b[k * n + j];
                acc = s_add(cx, acc, s_mul(cx, a[i * n + k], b_kj));
            }
            out[i * n + j] = acc;
        }
}

/* ---- Elixir's ranges and slices */

/* The last step of `first..last` counting from 0: the elements are
 * 0, 1, ..., last or, for last < 0, 0, -1, ..., last. */
static int64_t range_step(int64_t last) { return last >= 0 ? 1 : -1; }

/* Enum.slice(list, start, amount) on a list of len elements: the first
 * index taken (a negative start counts from the end) and the count. */
static int64_t enum_slice(int64_t len, int64_t start, int64_t amount, int64_t *first) {
    if (start < 0) start = start + len < 0 ? 0 : start + len;
    *first = start;
    if (start >= len) return 0;
    return amount < len - start ? amount : len - start;
}

/* slice_matrix(m, [row_start, col_start], [row_length, 1]): a piece of
 * one column, into out; returns its length. */
static int64_t slice_column(const zd *m, int64_t n, int64_t row_start, int64_t col_start, int64_t row_length, zd *out) {
    int64_t row0, col, rows = enum_slice(n, row_start, row_length, &row0);
    if (enum_slice(n, col_start, 1, &col) == 0) return 0;
    for (int64_t r = 0; r < rows; r++) out[r] = m[(row0 + r) * n + col];
    return rows;
}

/* ---- Householder reflectors */

/* householder_reflector_pivot/2, the clause for numbers: v (k entries)
 * and the scale. */
static double reflector_pivot_real(const zd *a, int64_t k, double eps, zd *v) {
    double a_0 = a[0].re, norm_a_squared = 0;
    for (int64_t i = 0; i < k; i++) norm_a_squared = a[i].re * a[i].re + norm_a_squared;
    double norm_a_sq_1on = norm_a_squared - a_0 * a_0;
    v[0] = zr(1);
    if (norm_a_sq_1on < eps) {
        for (int64_t i = 1; i < k; i++) v[i] = a[i];
        return 0;
    }
    double norm_a = sqrt(norm_a_squared);
    double v_0 = a_0 <= 0 ? a_0 - norm_a : -norm_a_sq_1on / (a_0 + norm_a);
    double v_0_sq = v_0 * v_0;
    for (int64_t i = 1; i < k; i++) v[i] = zr(a[i].re / v_0);
    return 2 * v_0_sq / (norm_a_sq_1on + v_0_sq);
}

/* householder_reflector_pivot/2, the clause for structs: v = u / |u| with
 * u = a + e^(i phase(a_0)) |a| e_1; the scale is 2. */
static void reflector_pivot_complex(const zd *a, int64_t k, zd *v) {
    double norm_a_sq_1on = 0;
    for (int64_t i = 1; i < k; i++) norm_a_sq_1on = abs_squared(a[i]) + norm_a_sq_1on;
    double norm_a = sqrt(norm_a_sq_1on + abs_squared(a[0]));
    /* Complex.exp(Complex.new(0, phase)): rho = exp(0.0) scales cos, sin */
    double phase_a_0 = atan2(a[0].im, a[0].re), rho = exp(0.0);
    zd alfa = zmul((zd){rho * cos(phase_a_0), rho * sin(phase_a_0)}, zr(norm_a));
    zd u_0 = zadd(a[0], alfa);
    double norm_u = sqrt(norm_a_sq_1on + abs_squared(u_0));
    v[0] = zdiv(u_0, zr(norm_u));
    for (int64_t i = 1; i < k; i++) v[i] = zdiv(a[i], zr(norm_u));
}

/* householder_reflector(a, target_k, eps): the target_k x target_k
 * identity, its trailing k x k block replaced by I - scale * v v^H. */
static void householder_reflector(bool cx, const zd *a, int64_t k, int64_t target_k, double eps, zd *v, zd *h) {
    zd scale = zr(0);
    if (k > 0) {
        if (cx) {
            reflector_pivot_complex(a, k, v);
            scale = zr(2);
        } else {
            scale = zr(reflector_pivot_real(a, k, eps, v));
        }
    }
    int64_t prefix = target_k - k;
    for (int64_t r = 0; r < target_k; r++)
        for (int64_t c = 0; c < target_k; c++) {
            zd identity = zr(r == c);
            if (r >= prefix && c >= prefix) {
                zd outer = s_mul(cx, s_mul(cx, scale, v[r - prefix]), s_conj(cx, v[c - prefix]));
                h[r * target_k + c] = s_sub(cx, identity, outer);
            } else {
                h[r * target_k + c] = identity;
            }
        }
}

/* ---- The decompositions */

typedef struct eigh_work {
    int64_t n;
    bool cx;
    double eps;
    zd *h;      /* a reflector, n x n */
    zd *tmp;    /* a product, n x n */
    zd *column; /* a slice, n */
    zd *v;      /* a reflector's vector, n */
} eigh_work;

/* The reflector for column col_start, rows row_start on (slice_matrix
 * then householder_reflector), into w->h. */
static void reflector_for(eigh_work *w, const zd *m, int64_t row_start, int64_t col_start, int64_t row_length) {
    int64_t k = slice_column(m, w->n, row_start, col_start, row_length, w->column);
    householder_reflector(w->cx, w->column, k, w->n, w->eps, w->v, w->h);
}

/* q = h on the first step (Nx's `is_nil(q)`), q . h after. */
static void accumulate_q(eigh_work *w, zd *q, bool first) {
    size_t bytes = (size_t)(w->n * w->n) * sizeof(zd);
    if (first) {
        memcpy(q, w->h, bytes);
    } else {
        dot_matrix(w->cx, q, w->h, false, w->n, w->tmp);
        memcpy(q, w->tmp, bytes);
    }
}

/* hessenberg_decomposition/3: hess (holding the input) becomes H and q
 * the product of the reflectors, both after approximate_zeros. */
static void hessenberg_decomposition(eigh_work *w, zd *hess, zd *q) {
    int64_t n = w->n, last = n - 2, step = range_step(last);
    for (int64_t i = 0;; i += step) {
        reflector_for(w, hess, i + 1, i, n - i - 1);
        accumulate_q(w, q, i == 0);
        dot_matrix(w->cx, w->h, hess, false, n, w->tmp);
        dot_matrix(w->cx, w->tmp, w->h, true, n, hess);
        if (i == last) break;
    }
    approximate_zeros(w->cx, hess, n * n, w->eps);
    approximate_zeros(w->cx, q, n * n, w->eps);
}

/* qr_decomposition/4 for m = n (the list-based one in Matrix): q and r
 * of a, both after approximate_zeros. */
static void qr_decomposition(eigh_work *w, const zd *a, zd *q, zd *r) {
    int64_t n = w->n, last = n - 2, step = range_step(last);
    memcpy(r, a, (size_t)(n * n) * sizeof(zd));
    for (int64_t i = 0;; i += step) {
        reflector_for(w, r, i, i, n - i);
        accumulate_q(w, q, i == 0);
        dot_matrix(w->cx, w->h, r, false, n, w->tmp);
        memcpy(r, w->tmp, (size_t)(n * n) * sizeof(zd));
        if (i == last) break;
    }
    approximate_zeros(w->cx, q, n * n, w->eps);
    approximate_zeros(w->cx, r, n * n, w->eps);
}

/* Elements of `1..max_iter` in Elixir 1.14 (a decreasing range below 1);
 * unsigned so that 2 - INT64_MIN is representable. */
static uint64_t iteration_count(int64_t max_iter) {
    return max_iter >= 1 ? (uint64_t)max_iter : (uint64_t)2 - (uint64_t)max_iter;
}

/* Whether count n x n matrices of zd fit in a size_t. */
static bool matrices_fit(int64_t n, size_t count) { return (size_t)n <= SIZE_MAX / sizeof(zd) / count / (size_t)n; }

/* Nx writes :nan as the positive quiet NaN. */
static double nx_nan(double x) { return isnan(x) ? NAN : x; }

/* Matrix.eigh/5 on a (n x n, overwritten): w the eigenvalues, v the
 * eigenvectors (column-wise), both after approximate_zeros. */
static int eigh(bool cx, zd *a, int64_t n, double eps, int64_t max_iter, double *w, zd *v) {
    if (!is_hermitian(cx, a, n, eps)) return NX07_NOT_HERMITIAN;
    /* six matrices and two vectors, within eight matrices */
    if (!matrices_fit(n, 8)) return NX07_NO_MEMORY;
    size_t nn = (size_t)n * (size_t)n;
    zd *block = malloc((6 * nn + 2 * (size_t)n) * sizeof(zd));
    if (!block) return NX07_NO_MEMORY;
    eigh_work work = {
        .n = n, .cx = cx, .eps = eps, .h = block, .tmp = block + nn, .column = block + 6 * nn, .v = block + 6 * nn + n};
    zd *q_old = block + 2 * nn, *q_now = block + 3 * nn, *r_now = block + 4 * nn;
    zd *next = block + 5 * nn, *a_old = a;

    hessenberg_decomposition(&work, a_old, q_old);
    for (uint64_t it = iteration_count(max_iter); it > 0; it--) {
        qr_decomposition(&work, a_old, q_now, r_now);
        dot_matrix(cx, r_now, q_now, false, n, a_old);
        dot_matrix(cx, q_old, q_now, false, n, next);
        bool converged = approximately_same(cx, q_old, next, (int64_t)nn, eps);
        zd *swap = q_old;
        q_old = next;
        next = swap;
        if (converged) break;
    }

    /* Complex.real/1 of the diagonal: plain floats, zeroed as numbers */
    for (int64_t i = 0; i < n; i++) {
        zd eigenvalue = round_to_zero(false, zr(a_old[i * n + i].re), eps);
        w[i] = nx_nan(eigenvalue.re);
    }
    approximate_zeros(cx, q_old, (int64_t)nn, eps);
    for (size_t i = 0; i < nn; i++) v[i] = (zd){nx_nan(q_old[i].re), nx_nan(q_old[i].im)};
    free(block);
    return NX07_OK;
}

/* eigh on a copy of a (real values: as Complex.new(x, 0)); v is n x n
 * doubles (real) or zd (complex), the real path's taken from the
 * complex vectors' real parts. */
static int eigh_of_copy(bool cx, const void *a, int64_t n, double eps, int64_t max_iter, double *w, void *v) {
    if (n < 1) return NX07_OK; /* no matrix (Nx's shapes never give one) */
    size_t count = cx ? 1 : 2; /* real: the matrix and the vectors */
    if (!matrices_fit(n, count)) return NX07_NO_MEMORY;
    size_t nn = (size_t)n * (size_t)n;
    zd *m = malloc(count * nn * sizeof(zd));
    if (!m) return NX07_NO_MEMORY;
    zd *vectors = cx ? v : m + nn;
    for (size_t i = 0; i < nn; i++) m[i] = cx ? ((const zd *)a)[i] : zr(((const double *)a)[i]);
    int status = eigh(cx, m, n, eps, max_iter, w, vectors);
    if (!cx && status == NX07_OK)
        for (size_t i = 0; i < nn; i++) ((double *)v)[i] = vectors[i].re;
    free(m);
    return status;
}

int emi_cpu_nx07_eigh_real(const double *a, int64_t n, double eps, int64_t max_iter, double *w, double *v) {
    return eigh_of_copy(false, a, n, eps, max_iter, w, v);
}

int emi_cpu_nx07_eigh_complex(const zd *a, int64_t n, double eps, int64_t max_iter, double *w, zd *v) {
    return eigh_of_copy(true, a, n, eps, max_iter, w, v);
}
