/* CPU kernels: qr and eigh (real) computed by Nx's own algorithms, the
 * way Nx.BinaryBackend runs them, so that the factors, which are not
 * unique, are the reference's to the last bit:
 *
 * - qr is Nx.LinAlg.QR.qr_matrix: Householder reflections built as full
 *   m x m matrices H (the identity outside the trailing block) and
 *   applied as r = H . r, q = q . H, with Nx's choice of the reflector
 *   (v = x - |x| e_i, computed without cancellation for x_i > 0), so R's
 *   diagonal is never negative;
 * - eigh is Nx.LinAlg.BlockEigh: the parallel (Brent-Luk) Jacobi method
 *   on the four blocks of the matrix, with Nx's rotation formulas, its
 *   tournament permutations, its stopping rule (off-diagonal norm <=
 *   eps^2 * Frobenius norm, or max_iter sweeps) and its final order
 *   (decreasing |w|, ties in index order) and zeroing (|x| <= eps).
 *
 * As in linalg.c, every Nx-level tensor operation is computed per element
 * in double precision and rounded to the type its tensor has in the
 * reference (`work`: f16, bf16, f32 or f64); dot products and sums add
 * their terms in index order starting from +0, products never fused.
 * Scalar constants follow Nx.Defn.Expr: a float constant next to a
 * tensor in arithmetic takes the tensor's type, but in a comparison it
 * stays f32 (so eps thresholds are f32(eps) for every work type), and an
 * expression of constants only (eps ** 2) is folded in f32.
 *
 * - svd is Nx.LinAlg.SVD: without full matrices the eigh of the Gram
 *   matrix; with them QDWH (qr or cholesky and triangular_solve steps, the
 *   latter two through the engine's own kernels), eigh of the polar
 *   factor and Nx's sign, order and rank rules.
 *
 * Complex qr and eigh follow Nx's complex paths with the arithmetic of
 * Elixir's Complex library (textbook products and quotients, its scaled
 * abs and principal sqrt), rounding both parts to the part type. */
/* GCC 12's SLP vectorizer drops the double -> float -> double round
 * trip of Z() below when it pairs the two parts of a complex value (seen
 * in qr_complex's v = u / |u|: c64 results came out unrounded); the
 * element-wise rounding is the point of this file, so it is built without
 * SLP vectorization. */
#pragma GCC optimize("no-tree-slp-vectorize")
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/scalar_unary.h"
#include "cpu/kernels.h"
#include "cpu/linalg_complex.h"
#include "cpu/linalg_nx07.h"
#include "core/kernels.h"

emily_status emi_cpu_linalg_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                                 bool complete, double eps, emily_dtype work);
emily_status emi_cpu_linalg_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a,
                                   double eps, int64_t max_iter, emily_dtype work);
emily_status emi_cpu_linalg_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                                  const emily_tensor *a, bool full_matrices, int64_t max_iter,
                                  emily_dtype work, bool integer_input);

/* Rounds a double to the real type t, as the reference writes a tensor
 * of type t. */
static inline double R(emily_dtype t, double x) {
    switch (t) {
    case EMILY_F32: return (double)(float)x;
    case EMILY_F16: return (double)emily_f16_to_f32(emily_f64_to_f16(x));
    case EMILY_BF16: return (double)emily_bf16_to_f32(emily_f32_to_bf16((float)x));
    default: return x;
    }
}

/* A float constant in a comparison: an f32 tensor. */
static inline double f32c(double x) { return (double)(float)x; }

/* Nx.Defn's `x ** 2` on a float tensor: Complex.pow -> :math.pow. */
static inline double sq(double x) { return pow(x, 2.0); }

static int64_t batch_count(const emily_tensor *t, int64_t per) {
    return per > 0 ? t->size / per : 0;
}

static void argsort_desc(const double *x, int64_t n, int64_t *order);

/* ---- complex arithmetic as Elixir's Complex library does it ------------ */

static inline zd Z(emily_dtype t, zd x) { return (zd){R(t, x.re), R(t, x.im)}; }

/* ---- QR, complex (Nx.LinAlg.QR.qr_matrix's complex reflector) ---------- */

static void mm(const double *A, const double *B, double *C, int64_t p, int64_t q, int64_t r,
               emily_dtype w);

/* C = A . B (A p x q, B q x r) on complex values, sums in index order
 * from 0, both parts rounded to w. */
static void zmm(const zd *A, const zd *B, zd *C, int64_t p, int64_t q, int64_t r, emily_dtype w) {
    for (int64_t i = 0; i < p; i++)
        for (int64_t j = 0; j < r; j++) {
            zd acc = {0, 0};
            for (int64_t k = 0; k < q; k++) acc = zadd(zmul(A[i * q + k], B[k * r + j]), acc);
            C[i * r + j] = Z(w, acc);
        }
}

/* As qr_real, on complex values (pairs of doubles); w is the part type.
 * The reflector: alpha = exp(i phase(x_i)) |x|, u = x + alpha e_i,
 * v = u / |u|, scale 2 (0 when |u|^2 < f32(eps)); the updates as for real
 * input with conj(v) in vh_r and in Nx.outer's second operand. */
static void qr_complex(const zd *a, int64_t m_in, int64_t n_in, emily_dtype w, double eps,
                       bool complete, bool explicit_h, zd *q_out, zd *r_out, zd *ws) {
    bool wide = m_in < n_in;
    int64_t m = wide ? n_in : m_in, n = n_in;
    int64_t max_i = wide ? n - 1 : (m == n ? n - 2 : n - 1);
    zd *q = ws, *r = q + m * m, *x = r + m * n, *v = x + m, *qv = v + m, *tmp = qv + m;
    zd *h = tmp + (m > n ? m : n), *prod = h + m * m;
    double eps32 = f32c(eps);
    for (int64_t i = 0; i < m * m; i++) q[i] = (zd){0, 0};
    for (int64_t i = 0; i < m; i++) q[i * m + i] = (zd){1, 0};
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) r[i * n + j] = i < m_in ? Z(w, a[i * n + j]) : (zd){0, 0};
    for (int64_t i = 0; i <= max_i; i++) {
        for (int64_t j = 0; j < m; j++) x[j] = j < i ? (zd){0, 0} : r[j * n + i];
        /* norm(x) = sqrt(dot(x, conj(x))) */
        zd nsq = {0, 0};
        for (int64_t j = 0; j < m; j++) nsq = zadd(zmul(x[j], zconj(x[j])), nsq);
        zd norm_x = Z(w, zsqrt(Z(w, nsq)));
        double phase = R(w, atan2(x[i].im, x[i].re));
        double rho = exp(0.0);
        zd e = Z(w, (zd){rho * cos(phase), rho * sin(phase)});
        zd alpha = Z(w, zmul(e, norm_x));
        for (int64_t j = 0; j < m; j++) v[j] = x[j];
        v[i] = Z(w, zadd(x[i], alpha));
        zd usq = {0, 0};
        for (int64_t j = 0; j < m; j++) usq = zadd(zmul(v[j], zconj(v[j])), usq);
        usq = Z(w, usq);
        zd n_u = Z(w, zsqrt(usq));
        bool sel = usq.re < eps32;
        zd d = sel ? (zd){1, 0} : n_u;
        for (int64_t j = 0; j < m; j++) v[j] = Z(w, zdiv(v[j], d));
        zd scale = {sel ? 0 : 2, 0};
        if (explicit_h) {
            /* h = select(selector, eye - scale * outer(v, v), eye) (outer
             * conjugates its second operand), r = dot(h, r), q = dot(q, h) */
            for (int64_t j = 0; j < m; j++)
                for (int64_t k = 0; k < m; k++) {
                    zd eye = {j == k, 0};
                    zd o = Z(w, zmul(v[j], zconj(v[k])));
                    h[j * m + k] = j >= i && k >= i ? Z(w, zsub(eye, Z(w, zmul(scale, o)))) : eye;
                }
            zmm(h, r, prod, m, m, n, w);
            memcpy(r, prod, (size_t)(m * n) * sizeof(zd));
            zmm(q, h, prod, m, m, m, w);
            memcpy(q, prod, (size_t)(m * m) * sizeof(zd));
            continue;
        }
        /* r = r - scale * dot(v[:, None], vh_r[None, :]), vh_r = dot(conj(v), r) */
        for (int64_t k = 0; k < n; k++) tmp[k] = (zd){0, 0};
        for (int64_t j = 0; j < m; j++) {
            zd vj = zconj(v[j]);
            const zd *rj = r + j * n;
            for (int64_t k = 0; k < n; k++) tmp[k] = zadd(zmul(vj, rj[k]), tmp[k]);
        }
        for (int64_t k = 0; k < n; k++) tmp[k] = Z(w, tmp[k]);
        for (int64_t j = 0; j < m; j++) {
            zd *rj = r + j * n;
            for (int64_t k = 0; k < n; k++) {
                zd p = Z(w, zadd(zmul(v[j], tmp[k]), (zd){0, 0}));
                rj[k] = Z(w, zsub(rj[k], Z(w, zmul(scale, p))));
            }
        }
        /* q = q - scale * outer(dot(q, v), v) */
        for (int64_t j = 0; j < m; j++) {
            zd acc = {0, 0};
            for (int64_t l = 0; l < m; l++) acc = zadd(zmul(q[j * m + l], v[l]), acc);
            qv[j] = Z(w, acc);
        }
        for (int64_t j = 0; j < m; j++)
            for (int64_t k = 0; k < m; k++) {
                zd o = Z(w, zmul(qv[j], zconj(v[k]))); /* Nx.outer conjugates its second operand */
                q[j * m + k] = Z(w, zsub(q[j * m + k], Z(w, zmul(scale, o))));
            }
    }
    int64_t qc, rr;
    if (wide) qc = rr = m_in;
    else if (!complete && m > n) qc = rr = n;
    else qc = rr = m;
    for (int64_t i = 0; i < m_in; i++)
        for (int64_t j = 0; j < qc; j++) {
            zd e = q[i * m + j];
            q_out[i * qc + j] = R(w, zabs(e)) <= eps32 ? (zd){0, 0} : e;
        }
    for (int64_t i = 0; i < rr; i++)
        for (int64_t j = 0; j < n; j++) {
            zd e = r[i * n + j];
            r_out[i * n + j] = R(w, zabs(e)) <= eps32 ? (zd){0, 0} : e;
        }
}

/* ---- QR (Nx.LinAlg.QR.qr_matrix) --------------------------------------- */

/* Scratch doubles for one matrix of m_in x n_in. */
static int64_t qr_scratch(int64_t m_in, int64_t n_in) {
    int64_t m = m_in < n_in ? n_in : m_in, n = n_in, big = m > n ? m : n;
    /* q, r, x, v, the reflector h, and products of up to big x big
     * (complex: also q v, and room for both the row buffer and a product) */
    return 2 * m * m + m * n + 3 * m + 2 * big * big + big;
}

/* Scratch doubles for qr_real's compact run of a wide real m x n matrix
 * (see qr_wide_shortcut): no padding, products of up to m x n. */
static int64_t qr_scratch_compact(int64_t m, int64_t n) {
    return 2 * m * m + 3 * m * n + 3 * m + n;
}

/* a: m_in x n_in (values of any type, as doubles). q: m_in x qc and
 * r: rr x n_in in the op layer's shapes (qc = rr = k, or m_in when
 * complete; wide input: m_in x m_in and m_in x n_in). `explicit_h`: each
 * reflection as an explicit m x m matrix multiplied in, as Nx 0.7 and the
 * Nx 0.13.1 tag do (same reflectors, other last bits), instead of the
 * rank-1 updates of the corpus's Nx. */
static void qr_real(const double *a, int64_t m_in, int64_t n_in, emily_dtype w, double eps,
                    bool complete, bool explicit_h, bool compact, double *q_out, double *r_out,
                    double *ws) {
    bool wide = m_in < n_in;
    /* `compact` (wide input only, see qr_one): the m_in rows without
     * Nx's zero rows, reflected m_in times */
    int64_t m = wide && !compact ? n_in : m_in, n = n_in;
    int64_t max_i = wide ? (compact ? m_in - 1 : n - 1) : (m == n ? n - 2 : n - 1);
    double *q = ws, *r = q + m * m, *x = r + m * n, *v = x + m, *h = v + m, *tmp = h + m * m;
    double eps32 = f32c(eps);
    for (int64_t i = 0; i < m * m; i++) q[i] = 0;
    for (int64_t i = 0; i < m; i++) q[i * m + i] = 1;
    /* Nx.as_type(a, type), after the zero rows of the wide extension */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) r[i * n + j] = i < m_in ? R(w, a[i * n + j]) : 0;
    for (int64_t i = 0; i <= max_i; i++) {
        /* x = select(iota < i, 0, r[.., i]) */
        for (int64_t j = 0; j < m; j++) x[j] = j < i ? 0 : r[j * n + i];
        /* householder_reflector(x, i, eps) */
        double nsq = 0;
        for (int64_t j = 0; j < m; j++) nsq = x[j] * x[j] + nsq;
        nsq = R(w, nsq);
        double norm_x = R(w, sqrt(nsq));
        double xi = x[i];
        double ns1 = R(w, nsq - R(w, sq(fabs(xi))));
        double v0 = xi <= 0 ? R(w, xi - norm_x) : R(w, R(w, -ns1) / R(w, xi + norm_x));
        bool sel = ns1 < eps32;
        double d = sel ? 1 : v0;
        for (int64_t j = 0; j < m; j++) v[j] = R(w, (j == i ? (sel ? 1 : v0) : x[j]) / d);
        double nvsq = 0;
        for (int64_t j = 0; j < m; j++) nvsq = v[j] * v[j] + nvsq;
        nvsq = R(w, nvsq);
        double scale = sel ? 0 : R(w, 2 / (sel ? 1 : nvsq));
        if (explicit_h) {
            /* h = select(selector, eye - scale * outer(v, v), eye), then
             * r = dot(h, r) and q = dot(q, h) */
            for (int64_t j = 0; j < m; j++)
                for (int64_t k = 0; k < m; k++) {
                    double eye = j == k;
                    h[j * m + k] = j >= i && k >= i ? R(w, eye - R(w, scale * R(w, v[j] * v[k]))) : eye;
                }
            mm(h, r, tmp, m, m, n, w);
            memcpy(r, tmp, (size_t)(m * n) * sizeof(double));
            mm(q, h, tmp, m, m, m, w);
            memcpy(q, tmp, (size_t)(m * m) * sizeof(double));
            continue;
        }
        /* r = r - scale * dot(v[:, None], vh_r[None, :]), vh_r = dot(v, r):
         * the one-term dot is v_j vh_r_k + 0 (so -0 becomes +0) */
        for (int64_t k = 0; k < n; k++) tmp[k] = 0;
        for (int64_t j = 0; j < m; j++) {
            double vj = v[j];
            const double *rj = r + j * n;
            for (int64_t k = 0; k < n; k++) tmp[k] = vj * rj[k] + tmp[k];
        }
        for (int64_t k = 0; k < n; k++) tmp[k] = R(w, tmp[k]);
        for (int64_t j = 0; j < m; j++) {
            double vj = v[j];
            double *rj = r + j * n;
            for (int64_t k = 0; k < n; k++)
                rj[k] = R(w, rj[k] - R(w, scale * R(w, vj * tmp[k] + 0.0)));
        }
        /* q = q - scale * outer(dot(q, v), v) */
        for (int64_t j = 0; j < m; j++) {
            const double *qj = q + j * m;
            double acc = 0;
            for (int64_t l = 0; l < m; l++) acc = qj[l] * v[l] + acc;
            h[j] = R(w, acc);
        }
        for (int64_t j = 0; j < m; j++) {
            double qv = h[j];
            double *qj = q + j * m;
            for (int64_t k = 0; k < m; k++) qj[k] = R(w, qj[k] - R(w, scale * R(w, qv * v[k])));
        }
    }
    /* approximate_zeros, then output_mode_handling */
    int64_t qr_rows = m_in, qc, rr;
    if (wide) qc = rr = m_in;
    else if (!complete && m > n) qc = rr = n;
    else qc = rr = m;
    for (int64_t i = 0; i < qr_rows; i++)
        for (int64_t j = 0; j < qc; j++) {
            double e = q[i * m + j];
            q_out[i * qc + j] = fabs(e) <= eps32 ? 0 : e;
        }
    for (int64_t i = 0; i < rr; i++)
        for (int64_t j = 0; j < n; j++) {
            double e = r[i * n + j];
            r_out[i * n + j] = fabs(e) <= eps32 ? 0 : e;
        }
}

static bool all_finite(const double *x, int64_t count) {
    for (int64_t i = 0; i < count; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

static bool all_nan(const double *x, int64_t count) {
    for (int64_t i = 0; i < count; i++)
        if (!isnan(x[i])) return false;
    return true;
}

static void fill_nan(double *x, int64_t count) {
    for (int64_t i = 0; i < count; i++) x[i] = NAN;
}

/* The first column of the real m x n matrix a holding a NaN or an
 * infinity; n when there is none. */
static int64_t first_nonfinite_column(const double *a, int64_t m, int64_t n) {
    int64_t c = n;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < c; j++)
            if (!isfinite(a[i * n + j])) c = j;
    return c;
}

/* One wide real matrix (m < n) of qr_batches, without Nx's padding when
 * the result is known to be the padded run's (true), else false.
 *
 * Nx reflects a wide m x n matrix padded with n - m zero rows, all of its
 * n - 1 columns: O(n^3) in the rank-1 form, O(n^4) with Nx 0.7's explicit
 * products, whatever m is (2 x 1024: 6 s, 8x more per doubling of n). In
 * that run:
 * - while every value stays finite, the zero rows stay zero and only add
 *   zeros, at the end, to each sum (no bit of the first m rows changes),
 *   and the reflections of columns m .. n - 1 see x = 0, take scale 0
 *   and leave every value as it is, up to the sign of zeros, which
 *   :eps zeroing writes as +0 anyway (f32(eps) > 0). So m reflections of
 *   the m x n matrix give the same factors in O(m^2 n).
 * - a NaN or infinity in column c reaches every row of column c, the
 *   zero rows included, at the first reflection (v_j * inf and 0 * NaN
 *   are never finite; columns are updated independently of each other).
 *   The reflection of column c then has it in x, so v (over a non-finite
 *   v0) holds a NaN and scale is NaN: the rank-1 updates make every
 *   entry of r and q NaN. The explicit product h . r keeps the rows above
 *   c, and q . h its columns left of c, until the next reflection, which
 *   sees the NaN rows: so every entry is NaN unless c = n - 1, the last
 *   reflection, which leaves the output's q and r's other columns as the
 *   reflections before it made them (r's column n - 1 is NaN).
 * - with f32(eps) <= 0 (rank-1 form) the reflection of column m sees
 *   x = 0 and divides 0 by 0: every entry NaN as well.
 * A value that overflows on the way, in the m x n run, is left to the
 * padded run, unless the m x n run came out all NaN: every entry of q is
 * reached only by a reflection with a NaN scale or a non-finite v, which
 * the padded run has too (its extra rows add zeros, or NaN), and from
 * which it is all NaN as well. (Checked: 24,000 random wide cases,
 * overflowing ones among them, against the padded run.) */
static bool qr_wide_shortcut(const double *a, int64_t m, int64_t n, emily_dtype work, double eps,
                             bool complete, bool explicit_h, double *qb, int64_t qsz, double *rb,
                             int64_t rsz, double *ws) {
    bool zero_eps = !(f32c(eps) > 0);
    int64_t c = first_nonfinite_column(a, m, n);
    if (explicit_h ? !zero_eps && c <= n - 2 : c < n || zero_eps) {
        fill_nan(qb, qsz);
        fill_nan(rb, rsz);
        return true;
    }
    if (zero_eps) return false;
    qr_real(a, m, n, work, eps, complete, explicit_h, true, qb, rb, ws); /* ws: qr_scratch_compact */
    if (c == n - 1) /* explicit products, the last column not finite */
        for (int64_t i = 0; i < m; i++) rb[i * n + n - 1] = NAN;
    bool finite = all_finite(qb, qsz);
    for (int64_t i = 0; finite && i < m; i++) finite = all_finite(rb + i * n, c < n ? n - 1 : n);
    return finite || (all_nan(qb, qsz) && all_nan(rb, rsz));
}

/* One matrix of qr_batches (counts in doubles: complex entries are two);
 * ws holds qr_scratch doubles, or qr_scratch_compact ones for a wide real
 * matrix (the padded run, when it is needed after all, then takes its
 * own: false when that fails). Complex input always gets Nx's padded
 * run for wide matrices: there the zero imaginary part of a nonzero
 * entry can change sign. */
static bool qr_one(const double *a, int64_t m, int64_t n, emily_dtype work, emily_dtype part,
                   double eps, bool complete, bool explicit_h, bool cx, double *qb, int64_t qsz,
                   double *rb, int64_t rsz, double *ws) {
    if (cx) {
        /* the rank-1 argument above holds for the complex reflector too
         * (scale 2 with v all NaN), so non-finite input is all NaN */
        if (m < n && !explicit_h && !all_finite(a, m * n * 2)) {
            fill_nan(qb, qsz * 2);
            fill_nan(rb, rsz * 2);
            return true;
        }
        qr_complex((const zd *)a, m, n, part, eps, complete, explicit_h, (zd *)qb, (zd *)rb, (zd *)ws);
        return true;
    }
    if (m >= n) {
        qr_real(a, m, n, work, eps, complete, explicit_h, false, qb, rb, ws);
        return true;
    }
    if (qr_wide_shortcut(a, m, n, work, eps, complete, explicit_h, qb, qsz, rb, rsz, ws)) return true;
    double *padded = malloc((size_t)qr_scratch(m, n) * sizeof(double));
    if (!padded) return false;
    qr_real(a, m, n, work, eps, complete, explicit_h, false, qb, rb, padded);
    free(padded);
    return true;
}

static emily_status qr_batches(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                               bool complete, double eps, emily_dtype work, bool explicit_h) {
    bool cx = a->dtype == EMILY_C128;
    emily_dtype part = work == EMILY_C64 ? EMILY_F32 : work == EMILY_C128 ? EMILY_F64 : work;
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1];
    int64_t batches = batch_count(a, m * n);
    int64_t qsz = q->shape[q->rank - 2] * q->shape[q->rank - 1];
    int64_t rsz = r->shape[r->rank - 2] * r->shape[r->rank - 1];
    int64_t parts = cx ? 2 : 1;
    if (m == 0 || n == 0) {
        /* no reflections: q is the identity, r zeros (Nx's shapes) */
        double *qd = emily_tensor_base(q), *rd = emily_tensor_base(r);
        int64_t qc = q->shape[q->rank - 1];
        if (r->size) memset(rd, 0, (size_t)(r->size * parts) * sizeof(double));
        if (q->size) memset(qd, 0, (size_t)(q->size * parts) * sizeof(double));
        for (int64_t b = 0; b < (qsz ? q->size / qsz : 0); b++)
            for (int64_t i = 0; i < m && i < qc; i++) qd[(b * qsz + i * qc + i) * parts] = 1;
        return EMILY_OK;
    }
    const double *src = emily_tensor_base(a);
    double *qd = emily_tensor_base(q), *rd = emily_tensor_base(r);
    /* a wide real matrix is first tried without Nx's padding, which
     * needs far less: 2 x 4096 takes 0.2 MB, the padded run 670 MB */
    int64_t scratch = m < n && !cx ? qr_scratch_compact(m, n) : qr_scratch(m, n);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * m * m * n > 100000) reduction(| : failed)
    {
        double *ws = malloc((size_t)scratch * (size_t)parts * sizeof(double) + 1);
        if (!ws) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (!ws || failed) continue;
            if (!qr_one(src + b * m * n * parts, m, n, work, part, eps, complete, explicit_h, cx,
                        qd + b * qsz * parts, qsz, rd + b * rsz * parts, rsz, ws))
                failed = 1;
        }
        free(ws);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "qr: out of host memory");
    return EMILY_OK;
}

emily_status emi_cpu_linalg_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                                 bool complete, double eps, emily_dtype work) {
    return qr_batches(q, r, a, complete, eps, work, false);
}

emily_status emi_cpu_nx07_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a,
                               bool complete, double eps, emily_dtype work) {
    return qr_batches(q, r, a, complete, eps, work, true);
}

/* ---- eigh (Nx.LinAlg.BlockEigh) ---------------------------------------- */

/* The four k x k blocks of the matrix and of the eigenvector matrix. */
typedef struct jacobi {
    int64_t k;
    emily_dtype w;
    double *tl, *tr, *bl, *br, *vtl, *vtr, *vbl, *vbr;
    double *c, *s, *rt1, *rt2, *tmp;
} jacobi;

/* sum(|tl|^2 + |tr|^2 + |bl|^2 + |br|^2), the diagonals of tl and br
 * left out when `off` (put_diagonal(.., 0)). */
static double sq_norm(const jacobi *J, bool off) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    double acc = 0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            int64_t at = i * k + j;
            double tl = off && i == j ? 0 : J->tl[at], br = off && i == j ? 0 : J->br[at];
            double e = R(w, R(w, sq(fabs(tl))) + R(w, sq(fabs(J->tr[at]))));
            e = R(w, e + R(w, sq(fabs(J->bl[at]))));
            e = R(w, e + R(w, sq(fabs(br))));
            acc = e + acc;
        }
    return R(w, acc);
}

/* calc_rot on the diagonals of tl, tr and br. */
static void calc_rot(jacobi *J) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    double c5 = R(w, 1.0e-5);
    for (int64_t i = 0; i < k; i++) {
        double tl = J->tl[i * k + i], tr = J->tr[i * k + i], br = J->br[i * k + i];
        bool z = tr == 0;
        double s_tr = z ? 1 : tr;
        double tau = z ? 0 : R(w, R(w, br - tl) / R(w, 2 * s_tr));
        double t = R(w, sqrt(R(w, 1 + R(w, sq(tau)))));
        t = R(w, 1 / R(w, tau + (tau >= 0 ? t : -t)));
        double mn = fmin(fabs(br), fabs(tl));
        if (isnan(br) || isnan(tl)) mn = NAN;
        if (fabs(tr) <= R(w, c5 * mn)) t = 0;
        double q = R(w, sqrt(R(w, 1.0 + R(w, sq(t)))));
        J->c[i] = R(w, 1.0 / q);
        /* s = t * c with c = 1.0 / q: Nx.Defn.Expr rewrites x * (1 / y)
         * as x / y */
        J->s[i] = R(w, t / q);
        double ttr = R(w, t * tr);
        J->rt1[i] = R(w, tl - ttr);
        J->rt2[i] = R(w, br + ttr);
    }
}

/* {top, bottom} = {top * c_v - bottom * s_v, top * s_v + bottom * c_v}:
 * the row rotation (c, s indexed by row). */
static void rotate_rows(const jacobi *J, double *top, double *bottom) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    for (int64_t i = 0; i < k; i++) {
        double c = J->c[i], s = J->s[i];
        for (int64_t j = 0; j < k; j++) {
            double x = top[i * k + j], y = bottom[i * k + j];
            top[i * k + j] = R(w, R(w, x * c) - R(w, y * s));
            bottom[i * k + j] = R(w, R(w, x * s) + R(w, y * c));
        }
    }
}

/* {left, right} = {left * c_h - right * s_h, left * s_h + right * c_h}:
 * the column rotation (c, s indexed by column). */
static void rotate_cols(const jacobi *J, double *left, double *right) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            double c = J->c[j], s = J->s[j];
            double x = left[i * k + j], y = right[i * k + j];
            left[i * k + j] = R(w, R(w, x * c) - R(w, y * s));
            right[i * k + j] = R(w, R(w, x * s) + R(w, y * c));
        }
}

/* permute_rows_in_col: top' = [top[0], bottom[0], top[1..k-2]],
 * bottom' = [bottom[1..k-1], top[k-1]]. */
static void permute_rows(const jacobi *J, double *top, double *bottom) {
    int64_t k = J->k;
    if (k == 1) return;
    double *t = J->tmp;
    size_t row = (size_t)k * sizeof(double);
    memcpy(t, top, (size_t)(k * k) * sizeof(double));
    memcpy(top + k, bottom, row); /* bottom[0] */
    for (int64_t i = 2; i < k; i++) memcpy(top + i * k, t + (i - 1) * k, row);
    for (int64_t i = 0; i + 1 < k; i++) memcpy(bottom + i * k, bottom + (i + 1) * k, row);
    memcpy(bottom + (k - 1) * k, t + (k - 1) * k, row);
}

/* permute_cols_in_row: left' = [left[:,0], right[:,0], left[:,1..k-2]],
 * right' = [right[:,1..k-1], left[:,k-1]]. */
static void permute_cols(const jacobi *J, double *left, double *right) {
    int64_t k = J->k;
    if (k == 1) return;
    double *t = J->tmp;
    for (int64_t i = 0; i < k; i++) {
        double *l = left + i * k, *r = right + i * k;
        memcpy(t, l, (size_t)k * sizeof(double));
        l[1] = r[0];
        for (int64_t j = 2; j < k; j++) l[j] = t[j - 1];
        for (int64_t j = 0; j + 1 < k; j++) r[j] = r[j + 1];
        r[k - 1] = t[k - 1];
    }
}

static void sweep(jacobi *J, int64_t n) {
    int64_t k = J->k;
    for (int64_t step = 0; step < n; step++) {
        calc_rot(J);
        rotate_rows(J, J->tl, J->bl);
        rotate_rows(J, J->tr, J->br);
        rotate_cols(J, J->tl, J->tr);
        rotate_cols(J, J->bl, J->br);
        for (int64_t i = 0; i < k; i++) {
            J->tl[i * k + i] = J->rt1[i];
            J->tr[i * k + i] = 0;
            J->bl[i * k + i] = 0;
            J->br[i * k + i] = J->rt2[i];
        }
        permute_cols(J, J->tl, J->tr);
        permute_cols(J, J->bl, J->br);
        permute_rows(J, J->tl, J->bl);
        permute_rows(J, J->tr, J->br);
        rotate_rows(J, J->vtl, J->vbl);
        rotate_rows(J, J->vtr, J->vbr);
        permute_rows(J, J->vtl, J->vbl);
        permute_rows(J, J->vtr, J->vbr);
    }
}

static int64_t eigh_scratch(int64_t n) {
    int64_t k = (n + 1) / 2;
    return 9 * k * k + 4 * k + 2 * k + 2 * k * 2 * k + 2 * k;
}

/* a: n x n (any type's values, as doubles); w_out: n, v_out: n x n. */
static void eigh_real(const double *a, int64_t n, emily_dtype w, double eps, int64_t max_iter,
                      double *w_out, double *v_out, double *ws) {
    if (n == 1) {
        w_out[0] = R(w, a[0]);
        v_out[0] = 1;
        return;
    }
    int64_t k = (n + 1) / 2, kk = k * k;
    jacobi J = {.k = k, .w = w};
    double **blocks[8] = {&J.tl, &J.tr, &J.bl, &J.br, &J.vtl, &J.vtr, &J.vbl, &J.vbr};
    for (int b = 0; b < 8; b++) *blocks[b] = ws + b * kk;
    J.tmp = ws + 8 * kk;
    J.c = J.tmp + kk;
    J.s = J.c + k;
    J.rt1 = J.s + k;
    J.rt2 = J.rt1 + k;
    double *wv = J.rt2 + k, *vv = wv + 2 * k; /* 2k and 2k x 2k */
    int64_t *order = (int64_t *)(vv + 4 * kk);
    /* the blocks of as_type(matrix), odd sizes padded with a zero row and column */
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            int64_t ri = k + i, cj = k + j;
            J.tl[i * k + j] = R(w, a[i * n + j]);
            J.tr[i * k + j] = cj < n ? R(w, a[i * n + cj]) : 0;
            J.bl[i * k + j] = ri < n ? R(w, a[ri * n + j]) : 0;
            J.br[i * k + j] = ri < n && cj < n ? R(w, a[ri * n + cj]) : 0;
            J.vtl[i * k + j] = J.vbr[i * k + j] = i == j ? 1 : 0;
            J.vtr[i * k + j] = J.vbl[i * k + j] = 0;
        }
    /* off_norm > eps ** 2 * frob_norm: eps ** 2 folded in f32, the
     * product in the work type */
    double eps2 = f32c(sq(f32c(eps)));
    double frob = sq_norm(&J, false), off = sq_norm(&J, true);
    for (int64_t it = 0; off > R(w, eps2 * frob) && it < max_iter; it++) {
        sweep(&J, n);
        frob = sq_norm(&J, false);
        off = sq_norm(&J, true);
    }
    /* w = [diag(tl), diag(br)]; v = adjoint([[vtl, vtr], [vbl, vbr]]) */
    int64_t m2 = 2 * k;
    for (int64_t i = 0; i < k; i++) {
        wv[i] = J.tl[i * k + i];
        wv[k + i] = J.br[i * k + i];
    }
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            /* vv[r][c] = V[c][r], V = [[vtl, vtr], [vbl, vbr]] */
            vv[j * m2 + i] = J.vtl[i * k + j];
            vv[(k + j) * m2 + i] = J.vtr[i * k + j];
            vv[j * m2 + k + i] = J.vbl[i * k + j];
            vv[(k + j) * m2 + k + i] = J.vbr[i * k + j];
        }
    /* trim the padding, then argsort(|w|, :desc) (a stable merge sort:
     * ties keep their order; NaN first) */
    for (int64_t i = 0; i < n; i++) order[i] = i;
    for (int64_t i = 1; i < n; i++) {
        int64_t x = order[i], j = i;
        double ax = fabs(wv[x]);
        while (j > 0) {
            double ay = fabs(wv[order[j - 1]]);
            bool before = isnan(ax) ? !isnan(ay) : (!isnan(ay) && ax > ay);
            if (!before) break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    double eps32 = f32c(eps);
    for (int64_t i = 0; i < n; i++) {
        double e = wv[order[i]];
        w_out[i] = fabs(e) <= eps32 ? 0 : e;
    }
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < n; c++) {
            double e = vv[r * m2 + order[c]];
            v_out[r * n + c] = fabs(e) <= eps32 ? 0 : e;
        }
}

/* ---- eigh, complex (Nx.LinAlg.BlockEigh's Hermitian path) -------------- */

typedef struct zjacobi {
    int64_t k;
    emily_dtype w; /* the part type */
    zd *tl, *tr, *bl, *br, *vtl, *vtr, *vbl, *vbr, *tmp, *s;
    double *c, *rt1, *rt2;
} zjacobi;

/* sum(|tl|^2 + |tr|^2 + |bl|^2 + |br|^2), Complex.abs per element. */
static double zsq_norm(const zjacobi *J, bool off) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    double acc = 0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            int64_t at = i * k + j;
            zd z0 = {0, 0};
            zd tl = off && i == j ? z0 : J->tl[at], br = off && i == j ? z0 : J->br[at];
            double e = R(w, R(w, sq(R(w, zabs(tl)))) + R(w, sq(R(w, zabs(J->tr[at])))));
            e = R(w, e + R(w, sq(R(w, zabs(J->bl[at])))));
            e = R(w, e + R(w, sq(R(w, zabs(br)))));
            acc = e + acc;
        }
    return R(w, acc);
}

/* calc_rot with complex tr: the rotation of |tr|, s = (t / q) * conj(tr) / |tr|. */
static void zcalc_rot(zjacobi *J) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    double c5 = R(w, 1.0e-5);
    for (int64_t i = 0; i < k; i++) {
        double tl = J->tl[i * k + i].re, br = J->br[i * k + i].re;
        zd trz = J->tr[i * k + i];
        double tr = R(w, zabs(trz));
        zd ph = tr == 0 ? (zd){1, 0} : Z(w, zdiv(zconj(trz), zr(tr)));
        bool z = tr == 0;
        double s_tr = z ? 1 : tr;
        double tau = z ? 0 : R(w, R(w, br - tl) / R(w, 2 * s_tr));
        double t = R(w, sqrt(R(w, 1 + R(w, sq(tau)))));
        t = R(w, 1 / R(w, tau + (tau >= 0 ? t : -t)));
        double mn = fmin(fabs(br), fabs(tl));
        if (isnan(br) || isnan(tl)) mn = NAN;
        if (fabs(tr) <= R(w, c5 * mn)) t = 0;
        double q = R(w, sqrt(R(w, 1.0 + R(w, sq(t)))));
        J->c[i] = R(w, 1.0 / q);
        J->s[i] = Z(w, zmul(zr(R(w, t / q)), ph));
        double ttr = R(w, t * tr);
        J->rt1[i] = R(w, tl - ttr);
        J->rt2[i] = R(w, br + ttr);
    }
}

/* {top, bottom} = {top c - bottom conj(s), top s + bottom c}, by row. */
static void zrotate_rows(const zjacobi *J, zd *top, zd *bottom) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    for (int64_t i = 0; i < k; i++) {
        zd c = zr(J->c[i]), s = J->s[i], sc = zconj(s);
        for (int64_t j = 0; j < k; j++) {
            zd x = top[i * k + j], y = bottom[i * k + j];
            top[i * k + j] = Z(w, zsub(Z(w, zmul(x, c)), Z(w, zmul(y, sc))));
            bottom[i * k + j] = Z(w, zadd(Z(w, zmul(x, s)), Z(w, zmul(y, c))));
        }
    }
}

/* {left, right} = {left c - right s, left conj(s) + right c}, by column. */
static void zrotate_cols(const zjacobi *J, zd *left, zd *right) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            zd c = zr(J->c[j]), s = J->s[j], sc = zconj(s);
            zd x = left[i * k + j], y = right[i * k + j];
            left[i * k + j] = Z(w, zsub(Z(w, zmul(x, c)), Z(w, zmul(y, s))));
            right[i * k + j] = Z(w, zadd(Z(w, zmul(x, sc)), Z(w, zmul(y, c))));
        }
}

static void zpermute_rows(const zjacobi *J, zd *top, zd *bottom) {
    int64_t k = J->k;
    if (k == 1) return;
    zd *t = J->tmp;
    size_t row = (size_t)k * sizeof(zd);
    memcpy(t, top, (size_t)(k * k) * sizeof(zd));
    memcpy(top + k, bottom, row);
    for (int64_t i = 2; i < k; i++) memcpy(top + i * k, t + (i - 1) * k, row);
    for (int64_t i = 0; i + 1 < k; i++) memcpy(bottom + i * k, bottom + (i + 1) * k, row);
    memcpy(bottom + (k - 1) * k, t + (k - 1) * k, row);
}

static void zpermute_cols(const zjacobi *J, zd *left, zd *right) {
    int64_t k = J->k;
    if (k == 1) return;
    zd *t = J->tmp;
    for (int64_t i = 0; i < k; i++) {
        zd *l = left + i * k, *r = right + i * k;
        memcpy(t, l, (size_t)k * sizeof(zd));
        l[1] = r[0];
        for (int64_t j = 2; j < k; j++) l[j] = t[j - 1];
        for (int64_t j = 0; j + 1 < k; j++) r[j] = r[j + 1];
        r[k - 1] = t[k - 1];
    }
}

static void zsweep(zjacobi *J, int64_t n) {
    int64_t k = J->k;
    for (int64_t step = 0; step < n; step++) {
        zcalc_rot(J);
        zrotate_rows(J, J->tl, J->bl);
        zrotate_rows(J, J->tr, J->br);
        zrotate_cols(J, J->tl, J->tr);
        zrotate_cols(J, J->bl, J->br);
        for (int64_t i = 0; i < k; i++) {
            J->tl[i * k + i] = zr(J->rt1[i]);
            J->tr[i * k + i] = (zd){0, 0};
            J->bl[i * k + i] = (zd){0, 0};
            J->br[i * k + i] = zr(J->rt2[i]);
        }
        zpermute_cols(J, J->tl, J->tr);
        zpermute_cols(J, J->bl, J->br);
        zpermute_rows(J, J->tl, J->bl);
        zpermute_rows(J, J->tr, J->br);
        zrotate_rows(J, J->vtl, J->vbl);
        zrotate_rows(J, J->vtr, J->vbr);
        zpermute_rows(J, J->vtl, J->vbl);
        zpermute_rows(J, J->vtr, J->vbr);
    }
}

/* As eigh_real on a Hermitian matrix (w the part type): w_out n complex
 * (the diagonal the reference ends with; its imaginary parts are what
 * the rotations left), v_out n x n, the adjoint of the accumulated
 * rotations. ws: eigh_scratch(n) pairs of doubles. */
static void eigh_complex(const zd *a, int64_t n, emily_dtype w, double eps, int64_t max_iter,
                         zd *w_out, zd *v_out, zd *ws) {
    if (n == 1) {
        w_out[0] = (zd){R(w, a[0].re), 0}; /* take_diagonal(real(matrix)) */
        v_out[0] = (zd){1, 0};
        return;
    }
    int64_t k = (n + 1) / 2, kk = k * k;
    zjacobi J = {.k = k, .w = w};
    zd **blocks[8] = {&J.tl, &J.tr, &J.bl, &J.br, &J.vtl, &J.vtr, &J.vbl, &J.vbr};
    for (int b = 0; b < 8; b++) *blocks[b] = ws + b * kk;
    J.tmp = ws + 8 * kk;
    J.s = J.tmp + kk;
    J.c = (double *)(J.s + k);
    J.rt1 = J.c + k;
    J.rt2 = J.rt1 + k;
    zd *wv = (zd *)(J.rt2 + k), *vv = wv + 2 * k;
    int64_t *order = (int64_t *)(vv + 4 * kk);
    zd z0 = {0, 0};
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            int64_t ri = k + i, cj = k + j;
            J.tl[i * k + j] = Z(w, a[i * n + j]);
            J.tr[i * k + j] = cj < n ? Z(w, a[i * n + cj]) : z0;
            J.bl[i * k + j] = ri < n ? Z(w, a[ri * n + j]) : z0;
            J.br[i * k + j] = ri < n && cj < n ? Z(w, a[ri * n + cj]) : z0;
            J.vtl[i * k + j] = J.vbr[i * k + j] = i == j ? (zd){1, 0} : z0;
            J.vtr[i * k + j] = J.vbl[i * k + j] = z0;
        }
    double eps2 = f32c(sq(f32c(eps)));
    double frob = zsq_norm(&J, false), off = zsq_norm(&J, true);
    for (int64_t it = 0; off > R(w, eps2 * frob) && it < max_iter; it++) {
        zsweep(&J, n);
        frob = zsq_norm(&J, false);
        off = zsq_norm(&J, true);
    }
    int64_t m2 = 2 * k;
    for (int64_t i = 0; i < k; i++) {
        wv[i] = J.tl[i * k + i];
        wv[k + i] = J.br[i * k + i];
    }
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            vv[j * m2 + i] = zconj(J.vtl[i * k + j]);
            vv[(k + j) * m2 + i] = zconj(J.vtr[i * k + j]);
            vv[j * m2 + k + i] = zconj(J.vbl[i * k + j]);
            vv[(k + j) * m2 + k + i] = zconj(J.vbr[i * k + j]);
        }
    double *mag = (double *)(order + 2 * k);
    for (int64_t i = 0; i < n; i++) mag[i] = R(w, zabs(wv[i]));
    argsort_desc(mag, n, order);
    double eps32 = f32c(eps);
    for (int64_t i = 0; i < n; i++) {
        zd e = wv[order[i]];
        w_out[i] = R(w, zabs(e)) <= eps32 ? z0 : e;
    }
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < n; c++) {
            zd e = vv[r * m2 + order[c]];
            v_out[r * n + c] = R(w, zabs(e)) <= eps32 ? z0 : e;
        }
}

emily_status emi_cpu_linalg_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a,
                                   double eps, int64_t max_iter, emily_dtype work) {
    bool cx = a->dtype == EMILY_C128;
    emily_dtype part = work == EMILY_C64 ? EMILY_F32 : work == EMILY_C128 ? EMILY_F64 : work;
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    if (n == 0 || batches == 0) return EMILY_OK;
    const double *src = emily_tensor_base(a);
    double *wd = emily_tensor_base(w), *vd = emily_tensor_base(v);
    int64_t scratch = eigh_scratch(n) + n; /* + the order (int64) */
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        double *ws = malloc((size_t)scratch * (cx ? 2 : 1) * sizeof(double) + 1);
        if (!ws) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (!ws) continue;
            if (cx)
                eigh_complex((const zd *)src + b * nn, n, part, eps, max_iter, (zd *)wd + b * n,
                             (zd *)vd + b * nn, (zd *)ws);
            else
                eigh_real(src + b * nn, n, work, eps, max_iter, wd + b * n, vd + b * nn, ws);
        }
        free(ws);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "eigh: out of host memory");
    return EMILY_OK;
}

/* ---- svd (Nx.LinAlg.SVD) ----------------------------------------------- */

/* Nx.LinAlg.SVD's constant @eps (f32 epsilon, as Nx writes it). */
#define NX_SVD_EPS 1.1920929e-07

/* A stable argsort in decreasing order (Nx.argsort(direction: :desc) on
 * Nx.BinaryBackend: a merge sort whose comparator keeps ties in order;
 * NaN first). */
static void argsort_desc(const double *x, int64_t n, int64_t *order) {
    for (int64_t i = 0; i < n; i++) order[i] = i;
    for (int64_t i = 1; i < n; i++) {
        int64_t o = order[i], j = i;
        double v = x[o];
        while (j > 0) {
            double y = x[order[j - 1]];
            bool before = isnan(v) ? !isnan(y) : (!isnan(y) && v > y);
            if (!before) break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = o;
    }
}

/* Scratch doubles for one m x n matrix: the transposed copy, u, v, the
 * Gram matrix, its eigenvalues and vectors, eigh's scratch, the order. */
static int64_t svd_scratch(int64_t m, int64_t n) {
    int64_t big = m > n ? m : n, small = m < n ? m : n;
    return 2 * big * small + 3 * small * small + 3 * small + eigh_scratch(small) + 1;
}

/* svd_non_full on a tall (or square) m x n matrix a (m >= n): u m x n,
 * s n, v n x n, Nx.LinAlg.SVD's Gram-matrix path. `integer`: a holds an
 * integer tensor's values (the Gram matrix is then exact, in a's type). */
static void svd_gram(const double *a, int64_t m, int64_t n, emily_dtype w, int64_t max_iter,
                     bool integer, double *u, double *s, double *v, double *ws) {
    double *gram = ws, *wv = gram + n * n, *vv = wv + n, *ews = vv + n * n;
    int64_t *order = (int64_t *)(ews + eigh_scratch(n));
    /* gram = dot(a, [-2], a, [-2]) */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t k = 0; k < m; k++) acc = a[k * n + i] * a[k * n + j] + acc;
            gram[i * n + j] = integer ? acc : R(w, acc);
        }
    /* {s_sq, v} = eigh(gram, max_iter: max_iter) (eps 1.0e-4) */
    eigh_real(gram, n, w, 1.0e-4, max_iter, wv, vv, ews);
    /* s = sqrt(max(s_sq, 0)), sorted in decreasing order with v's columns */
    for (int64_t i = 0; i < n; i++) {
        double x = wv[i];
        wv[i] = R(w, sqrt(isnan(x) || x > 0 ? x : 0));
    }
    argsort_desc(wv, n, order);
    for (int64_t i = 0; i < n; i++) s[i] = wv[order[i]];
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < n; c++) v[r * n + c] = vv[r * n + order[c]];
    /* s_inv = select(s > n * @eps * s[0], 1 / s, 0); n * @eps is folded
     * in f32, the product with s[0] is in the work type */
    double thr = R(w, f32c((double)n * f32c(NX_SVD_EPS)) * s[0]);
    /* u = dot(a, v) * s_inv[None, :] */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t k = 0; k < n; k++) acc = a[i * n + k] * v[k * n + j] + acc;
            double s_inv = s[j] > thr ? R(w, 1 / s[j]) : 0;
            u[i * n + j] = R(w, R(w, acc) * s_inv);
        }
}

/* ---- svd with full matrices: QDWH (Nx.LinAlg.SVD.svd_full) ----------- */

/* C = A . B (A p x q, B q x r), sums in index order from +0, rounded to w. */
static void mm(const double *A, const double *B, double *C, int64_t p, int64_t q, int64_t r,
               emily_dtype w) {
    for (int64_t i = 0; i < p; i++) {
        double *c = C + i * r;
        for (int64_t j = 0; j < r; j++) c[j] = 0;
        for (int64_t k = 0; k < q; k++) {
            double aik = A[i * q + k];
            const double *b = B + k * r;
            for (int64_t j = 0; j < r; j++) c[j] = aik * b[j] + c[j];
        }
        for (int64_t j = 0; j < r; j++) c[j] = R(w, c[j]);
    }
}

/* C = A^T . B (A q x p, B q x r). */
static void mm_tn(const double *A, const double *B, double *C, int64_t p, int64_t q, int64_t r,
                  emily_dtype w) {
    for (int64_t i = 0; i < p * r; i++) C[i] = 0;
    for (int64_t k = 0; k < q; k++)
        for (int64_t i = 0; i < p; i++) {
            double aki = A[k * p + i];
            const double *b = B + k * r;
            double *c = C + i * r;
            for (int64_t j = 0; j < r; j++) c[j] = aki * b[j] + c[j];
        }
    for (int64_t i = 0; i < p * r; i++) C[i] = R(w, C[i]);
}

static void transpose_to(const double *A, double *T, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) T[j * rows + i] = A[i * cols + j];
}

/* The engine's own cholesky and triangular_solve kernels (linalg.c, the
 * reference's bits) on one matrix, through tensors. */
static bool kernel_cholesky(const double *a, double *l, int64_t n, emily_dtype w) {
    int64_t sh[2] = {n, n};
    emily_tensor *at = NULL, *lt = NULL;
    bool ok = !emily_empty(EMILY_CPU, EMILY_F64, 2, sh, &at) && !emily_empty(EMILY_CPU, EMILY_F64, 2, sh, &lt);
    if (ok) {
        memcpy(emily_tensor_base(at), a, (size_t)(n * n) * sizeof(double));
        ok = !emi_cpu_linalg_kernels.cholesky(lt, at, w);
        if (ok) memcpy(l, emily_tensor_base(lt), (size_t)(n * n) * sizeof(double));
    }
    emily_tensor_release(at);
    emily_tensor_release(lt);
    return ok;
}

/* x = triangular_solve(a, b, left_side: true, lower: lower), a n x n,
 * b n x m, rounded to w. */
static bool kernel_tsolve(const double *a, const double *b, double *x, int64_t n, int64_t m,
                          bool lower, emily_dtype w) {
    int64_t sa[2] = {n, n}, sb[2] = {n, m};
    emily_tensor *at = NULL, *bt = NULL, *xt = NULL;
    bool ok = !emily_empty(EMILY_CPU, EMILY_F64, 2, sa, &at) && !emily_empty(EMILY_CPU, EMILY_F64, 2, sb, &bt) &&
              !emily_empty(EMILY_CPU, EMILY_F64, 2, sb, &xt);
    if (ok) {
        memcpy(emily_tensor_base(at), a, (size_t)(n * n) * sizeof(double));
        memcpy(emily_tensor_base(bt), b, (size_t)(n * m) * sizeof(double));
        ok = !emi_cpu_linalg_kernels.triangular_solve(xt, at, bt, false, true, lower, EMILY_TRANSFORM_NONE);
        if (ok) {
            const double *xd = emily_tensor_base(xt);
            for (int64_t i = 0; i < n * m; i++) x[i] = R(w, xd[i]);
        }
    }
    emily_tensor_release(at);
    emily_tensor_release(bt);
    emily_tensor_release(xt);
    return ok;
}

/* Nx.LinAlg.norm(t) of a matrix (ord 2 / Frobenius): with c = max|t|
 * (1 where that is 0), pow(sum(pow(|t| / c, 2)), 0.5) * c, in w. */
static double frobenius(const double *t, int64_t count, emily_dtype w) {
    double c = 0;
    for (int64_t i = 0; i < count; i++) {
        double x = fabs(t[i]);
        if (isnan(x) || x > c) c = x;
    }
    if (!(c > 0)) c = isnan(c) ? c : 1;
    double acc = 0;
    for (int64_t i = 0; i < count; i++) acc = R(w, pow(R(w, fabs(t[i]) / c), 2.0)) + acc;
    return R(w, R(w, pow(R(w, acc), 0.5)) * c);
}

static inline double R32(double x) { return (double)(float)x; }

/* Nx.LinAlg.SVD.qdwh on a tall or square m x n x (m >= n; `tin`: its
 * float type; `integer`: x holds an integer tensor's values): u (m x n)
 * and h (n x n), type tin. The loop runs in f64 for f64 and in f32
 * otherwise; its scalars are f32. */
static bool qdwh(const double *x, int64_t m, int64_t n, emily_dtype tin, bool integer,
                 int64_t max_iter, bool nx07, double *u_out, double *h_out) {
    emily_dtype W = tin == EMILY_F64 ? EMILY_F64 : EMILY_F32;
    int64_t mn = m * n, nn = n * n, m2 = m + n;
    double *buf = malloc((size_t)(6 * mn + 2 * m2 * n + 3 * nn + qr_scratch(m2, n) + 4 * n) * sizeof(double));
    if (!buf) return false;
    double *u = buf, *up = u + mn, *y = up + mn, *q = y + m2 * n, *rr = q + m2 * n, *g = rr + nn;
    double *l = g + mn, *lt = l + nn, *z = lt + nn, *zt = z + mn, *d = zt + mn, *qws = d + mn;
    bool ok = true;
    /* alpha = sqrt(norm(x, ord: 1)) * sqrt(norm(x, ord: :inf)): the
     * largest column and row sums of |x| (exact for integer x) */
    double n1 = 0, ninf = 0;
    for (int64_t j = 0; j < n; j++) {
        double cs = 0;
        for (int64_t i = 0; i < m; i++) cs = fabs(x[i * n + j]) + cs;
        if (!integer) cs = R(tin, cs);
        if (isnan(cs) || cs > n1 || j == 0) n1 = cs;
    }
    for (int64_t i = 0; i < m; i++) {
        double rs = 0;
        for (int64_t j = 0; j < n; j++) rs = fabs(x[i * n + j]) + rs;
        if (!integer) rs = R(tin, rs);
        if (isnan(rs) || rs > ninf || i == 0) ninf = rs;
    }
    double alpha = R(tin, R(tin, sqrt(n1)) * R(tin, sqrt(ninf)));
    for (int64_t i = 0; i < mn; i++) u[i] = R(tin, x[i] / alpha); /* then as_type(W): exact */
    double eps32 = R32(NX_SVD_EPS);
    double l_ = eps32;
    double tol_l = R32(5 * eps32), tol_norm = R32(emily_sc_cbrt(tol_l));
    bool unconverged = true, not_max = true;
    for (int64_t it = 1; ok && unconverged && not_max; it++) {
        memcpy(up, u, (size_t)mn * sizeof(double));
        double l2 = R32(pow(l_, 2.0));
        if (l2 < eps32) l2 = eps32;
        double dd = R32(emily_sc_cbrt(R32(R32(4.0 * R32(R32(1.0 / l2) - 1.0)) / l2)));
        double sqd = R32(sqrt(R32(1.0 + dd)));
        double t2 = R32(8.0 - R32(4.0 * dd));
        double t6 = R32(R32(8.0 * R32(2.0 - l2)) / R32(l2 * sqd));
        double a = R32(sqd + R32(R32(sqrt(R32(t2 + t6))) / 2));
        double b = R32(R32(pow(R32(a - 1.0), 2.0)) / 4.0);
        double c = R32(R32(a + b) - 1.0);
        l_ = R32(R32(l_ * R32(a + R32(b * l2))) / R32(1.0 + R32(c * l2)));
        double e = R32(b / c);
        if (c > 100) {
            /* qdwh_use_qr: y = [sqrt(c) u; I], q = qr(y), u = e u + (a - e) / sqrt(c) q1 q2^T */
            double sc = R32(sqrt(c));
            for (int64_t i = 0; i < mn; i++) y[i] = R(W, sc * u[i]);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) y[mn + i * n + j] = i == j;
            qr_real(y, m2, n, W, 1.0e-10, false, nx07, false, q, rr, qws);
            transpose_to(q + mn, zt, n, n); /* q2 = adjoint(q[m..]) */
            mm(q, zt, g, m, n, n, W);
            double s3 = R32(R32(a - e) / sc);
            for (int64_t i = 0; i < mn; i++) u[i] = R(W, R(W, e * u[i]) + R(W, s3 * g[i]));
        } else {
            /* qdwh_use_cholesky: x = c u^T u + I, y = cholesky(x),
             * z = (y^T \ (y \ u^T))^T, u = e u + (a - e) z */
            mm_tn(u, u, g, n, m, n, W);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) g[i * n + j] = R(W, R(W, c * g[i * n + j]) + (i == j));
            ok = kernel_cholesky(g, l, n, W);
            if (!ok) break;
            transpose_to(u, zt, m, n);
            ok = kernel_tsolve(l, zt, z, n, m, true, W);
            if (!ok) break;
            transpose_to(l, lt, n, n);
            ok = kernel_tsolve(lt, z, zt, n, m, false, W);
            if (!ok) break;
            transpose_to(zt, z, n, m);
            double s = R32(a - e);
            for (int64_t i = 0; i < mn; i++) u[i] = R(W, R(W, e * u[i]) + R(W, s * z[i]));
        }
        for (int64_t i = 0; i < mn; i++) d[i] = R(W, u[i] - up[i]);
        bool iterating_l = fabs(R32(1.0 - l_)) > tol_l;
        bool iterating_u = frobenius(d, mn, W) > tol_norm;
        unconverged = iterating_l || iterating_u;
        not_max = it < max_iter;
    }
    if (ok) {
        /* u = as_type(u, tin); u = 1.5 u - 0.5 u (u^T u) */
        for (int64_t i = 0; i < mn; i++) u[i] = R(tin, u[i]);
        mm_tn(u, u, g, n, m, n, tin);
        mm(u, g, z, m, n, n, tin);
        for (int64_t i = 0; i < mn; i++) u_out[i] = R(tin, R(tin, 1.5 * u[i]) - R(tin, 0.5 * z[i]));
        /* h = adjoint(u) . x, then (h + adjoint(h)) / 2 */
        mm_tn(u_out, x, g, n, m, n, tin);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) h_out[i * n + j] = R(tin, R(tin, g[i * n + j] + g[j * n + i]) / 2);
    }
    free(buf);
    return ok;
}

/* eigh of the polar factor h (n x n, type tin) as svd_tall_and_square
 * calls it (eps 1.0e-4): Nx.LinAlg.BlockEigh, or Nx 0.7's
 * Nx.BinaryBackend.Matrix.eigh with its outputs written in type tin.
 * ws: eigh_scratch(n). False when out of memory. */
static bool polar_eigh(const double *h, int64_t n, emily_dtype tin, int64_t max_iter, bool nx07,
                       double *w, double *v, double *ws) {
    if (!nx07) {
        eigh_real(h, n, tin, 1.0e-4, max_iter, w, v, ws);
        return true;
    }
    /* h is symmetric by construction, so Matrix.eigh's Hermitian check passes */
    if (emi_cpu_nx07_eigh_real(h, n, 1.0e-4, max_iter, w, v) != NX07_OK) return false;
    for (int64_t i = 0; i < n; i++) w[i] = R(tin, w[i]);
    for (int64_t i = 0; i < n * n; i++) v[i] = R(tin, v[i]);
    return true;
}

/* Nx.LinAlg.SVD.svd_tall_and_square on a tall or square m x n matrix a
 * (m >= n): u m x n, s n, v n x n (not transposed), type tin. */
static bool svd_tall_and_square(const double *a, int64_t m, int64_t n, emily_dtype tin, bool integer,
                                int64_t max_iter, bool nx07, double *u_out, double *s, double *v) {
    int64_t nn = n * n, mn = m * n;
    double *buf = malloc((size_t)(mn + 4 * nn + 2 * n + qr_scratch(m, n) + eigh_scratch(n) + 2) * sizeof(double));
    if (!buf) return false;
    double *uu = buf, *h = uu + mn, *wv = h + nn, *vv = wv + n, *vo = vv + nn, *sg = vo + nn, *ws = sg + n;
    int64_t *order = (int64_t *)(ws + qr_scratch(m, n) + eigh_scratch(n));
    bool ok = qdwh(a, m, n, tin, integer, max_iter, nx07, uu, h);
    if (ok) {
        /* h = (h + h^T) / 2, {s, v} = eigh(h), signs, sorted, u = u . v */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) vo[i * n + j] = R(tin, R(tin, h[i * n + j] + h[j * n + i]) / 2);
        ok = polar_eigh(vo, n, tin, max_iter, nx07, wv, vv, ws);
    }
    if (ok) {
        for (int64_t j = 0; j < n; j++) sg[j] = wv[j] < 0 ? -1 : 1;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) vv[i * n + j] = R(tin, sg[j] * vv[i * n + j]);
        for (int64_t j = 0; j < n; j++) wv[j] = R(tin, sg[j] * wv[j]);
        argsort_desc(wv, n, order);
        for (int64_t j = 0; j < n; j++) s[j] = wv[order[j]];
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) v[i * n + j] = vv[i * n + order[j]];
        mm(uu, v, u_out, m, n, n, tin);
        /* select(s[0] < n * @eps * s_out[0], correct_rank_deficiency(u), u),
         * s[0] being the first value before the sort */
        double thr = R(tin, R32((double)n * R32(NX_SVD_EPS)) * s[0]);
        if (wv[0] < thr) {
            /* correct_rank_deficiency: q . diag(sign(diag(r))) of qr(u) */
            double *qq = buf; /* m x n, uu is no longer needed */
            qr_real(u_out, m, n, tin, 1.0e-10, false, nx07, false, qq, h, ws);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double d = h[j * n + j];
                    double sgn = d < 0 ? -1 : d == 0 ? 0 : 1;
                    u_out[i * n + j] = R(tin, qq[i * n + j] * sgn);
                }
        }
    }
    free(buf);
    return ok;
}

/* svd_full on a tall or square m x n matrix a (m >= n): u m x m, s n,
 * v n x n (not transposed). */
static bool svd_full(const double *a, int64_t m, int64_t n, emily_dtype tin, bool integer,
                     int64_t max_iter, bool nx07, double *u_out, double *s, double *v) {
    int64_t nn = n * n;
    double *buf = malloc((size_t)(m * m + m * n + 2 * nn + qr_scratch(m, n) + 1) * sizeof(double));
    if (!buf) return false;
    double *qf = buf, *rf = qf + m * m, *sq = rf + m * n, *uo = sq + nn, *ws = uo + nn;
    const double *sqa = a;
    bool reduce = m > n;
    bool sq_integer = integer;
    if (reduce) {
        /* {q_full, a_full} = qr(a, mode: :complete); a = a_full[0..n-1] */
        qr_real(a, m, n, tin, 1.0e-10, true, nx07, false, qf, rf, ws);
        memcpy(sq, rf, (size_t)nn * sizeof(double));
        sqa = sq;
        sq_integer = false;
    }
    bool ok = svd_tall_and_square(sqa, n, n, tin, sq_integer, max_iter, nx07, uo, s, v);
    if (ok && reduce) {
        /* u = [q . u, u_null]: q = q_full[:, 0..n-1], u_null = q_full[:, n..] */
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t k = 0; k < n; k++) acc = qf[i * m + k] * uo[k * n + j] + acc;
                u_out[i * m + j] = R(tin, acc);
            }
            for (int64_t j = n; j < m; j++) u_out[i * m + j] = qf[i * m + j];
        }
    } else if (ok) {
        memcpy(u_out, uo, (size_t)nn * sizeof(double));
    }
    free(buf);
    return ok;
}

/* Nx 0.7's svd_non_full on a tall or square m x n matrix a (m >= n): a
 * matrix much taller than wide (m > 1.15 n) is first reduced to its
 * square R factor; u m x n, s n, v n x n (not transposed). */
static bool svd_non_full_nx07(const double *a, int64_t m, int64_t n, emily_dtype tin, bool integer,
                              int64_t max_iter, double *u_out, double *s, double *v) {
    if (!((double)m > 1.15 * (double)n))
        return svd_tall_and_square(a, m, n, tin, integer, max_iter, true, u_out, s, v);
    int64_t nn = n * n;
    double *buf = malloc((size_t)(m * n + 2 * nn + qr_scratch(m, n) + 1) * sizeof(double));
    if (!buf) return false;
    double *q = buf, *r = q + m * n, *uo = r + nn, *ws = uo + nn;
    /* {q, a} = qr(a, mode: :reduced), then u = q . u */
    qr_real(a, m, n, tin, 1.0e-10, false, true, false, q, r, ws);
    bool ok = svd_tall_and_square(r, n, n, tin, false, max_iter, true, uo, s, v);
    if (ok) mm(q, uo, u_out, m, n, n, tin);
    free(buf);
    return ok;
}

/* One real matrix: a m x n (values of any type), outputs in the op
 * layer's shapes (u m x uc, s k, vt vr x n). False when out of memory. */
static bool svd_real(const double *a, int64_t m, int64_t n, emily_dtype w, int64_t max_iter,
                     bool integer, bool full, bool nx07, double *u_out, double *s_out,
                     double *vt_out, double *ws) {
    int64_t k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
    bool all_zero = true;
    for (int64_t i = 0; i < m * n; i++) all_zero &= a[i] == 0;
    if (all_zero) {
        /* svd_all_zeros: u = eye(m, uc), s = 0, vt = eye(vr, n) */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < uc; j++) u_out[i * uc + j] = i == j;
        for (int64_t i = 0; i < k; i++) s_out[i] = 0;
        for (int64_t i = 0; i < vr; i++)
            for (int64_t j = 0; j < n; j++) vt_out[i * n + j] = i == j;
        return true;
    }
    bool flipped = m < n;
    int64_t mm = flipped ? n : m, nn = flipped ? m : n; /* a' = adjoint(a) when wide */
    double *at = ws, *u = at + mm * nn, *v = u + mm * mm, *gws = v + nn * nn;
    for (int64_t i = 0; i < mm; i++)
        for (int64_t j = 0; j < nn; j++) at[i * nn + j] = flipped ? a[j * n + i] : a[i * n + j];
    int64_t ucols = full ? mm : nn; /* u: mm x ucols */
    if (full) {
        if (!svd_full(at, mm, nn, w, integer, max_iter, nx07, u, s_out, v)) return false;
    } else if (nx07) {
        if (!svd_non_full_nx07(at, mm, nn, w, integer, max_iter, u, s_out, v)) return false;
    } else {
        svd_gram(at, mm, nn, w, max_iter, integer, u, s_out, v, gws);
    }
    if (!flipped) {
        /* {u, s, adjoint(v)} */
        memcpy(u_out, u, (size_t)(m * ucols) * sizeof(double));
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) vt_out[i * n + j] = v[j * n + i];
    } else {
        /* {v, s, adjoint(u)}: u_out m x m, vt_out ucols x n */
        memcpy(u_out, v, (size_t)(m * m) * sizeof(double));
        for (int64_t i = 0; i < ucols; i++)
            for (int64_t j = 0; j < n; j++) vt_out[i * n + j] = u[j * ucols + i];
    }
    return true;
}

static emily_status svd_batches(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                                const emily_tensor *a, bool full_matrices, int64_t max_iter,
                                emily_dtype work, bool integer_input, bool nx07) {
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], k = m < n ? m : n;
    int64_t batches = batch_count(a, m * n);
    int64_t uc = full_matrices ? m : k, vr = full_matrices ? n : k;
    if (batches == 0) return EMILY_OK;
    double *ud = emily_tensor_base(u), *sd = emily_tensor_base(s), *vd = emily_tensor_base(vt);
    if (k == 0) {
        /* svd_all_zeros on an empty matrix: identity factors */
        int64_t usz = m * uc, vsz = vr * n;
        for (int64_t b = 0; usz > 0 && b < u->size / usz; b++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < uc; j++) ud[b * m * uc + i * uc + j] = i == j;
        for (int64_t b = 0; vsz > 0 && b < vt->size / vsz; b++)
            for (int64_t i = 0; i < vr; i++)
                for (int64_t j = 0; j < n; j++) vd[b * vr * n + i * n + j] = i == j;
        return EMILY_OK;
    }
    const double *src = emily_tensor_base(a);
    int64_t big = m > n ? m : n;
    int64_t scratch = svd_scratch(m, n) + big * big;
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * m * n * k > 100000) reduction(| : failed)
    {
        double *ws = malloc((size_t)scratch * sizeof(double) + 1);
        if (!ws) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++)
            if (ws && !svd_real(src + b * m * n, m, n, work, max_iter, integer_input, full_matrices, nx07,
                                ud + b * m * uc, sd + b * k, vd + b * vr * n, ws))
                failed = 1;
        free(ws);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "svd: out of host memory");
    return EMILY_OK;
}

emily_status emi_cpu_linalg_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                                  const emily_tensor *a, bool full_matrices, int64_t max_iter,
                                  emily_dtype work, bool integer_input) {
    return svd_batches(u, s, vt, a, full_matrices, max_iter, work, integer_input, false);
}

emily_status emi_cpu_nx07_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt,
                                const emily_tensor *a, bool full_matrices, int64_t max_iter,
                                emily_dtype work, bool integer_input) {
    return svd_batches(u, s, vt, a, full_matrices, max_iter, work, integer_input, true);
}
