/* CPU kernel: svd by Nx's own algorithm, the way Nx.BinaryBackend runs it
 * (see reference.h): Nx.LinAlg.SVD, without full matrices the eigh of
 * the Gram matrix; with them QDWH (qr or cholesky and triangular_solve
 * steps, the latter two through the engine's own kernels), eigh of the
 * polar factor and Nx's sign, order and rank rules. Nx 0.7's svd (nx07)
 * takes QDWH for every matrix, with Nx 0.7's qr and eigh. */
/* GCC 12's SLP vectorizer drops the double -> float -> double round
 * trip of zrnd() when it pairs the two parts of a complex value (seen in
 * qr's complex v = u / |u|: c64 results came out unrounded); the
 * element-wise rounding is the point of this file, so it is built without
 * SLP vectorization (as are qr.c and eigh.c). */
#pragma GCC optimize("no-tree-slp-vectorize")
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/scalar_unary.h"
#include "cpu/kernels.h"
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/nx07/nx07.h"
#include "cpu/linalg/reference.h"

/* Nx.LinAlg.SVD's constant @eps (f32 epsilon, as Nx writes it). */
#define NX_SVD_EPS 1.1920929e-07

/* Scratch doubles for one m x n matrix: the transposed copy, u, v, the
 * Gram matrix, its eigenvalues and vectors, eigh's scratch, the order. */
static int64_t svd_scratch(int64_t m, int64_t n) {
    int64_t big = m > n ? m : n, small = m < n ? m : n;
    return 2 * big * small + 3 * small * small + 3 * small + emi_linalg_eigh_scratch(small) + 1;
}

/* svd_non_full on a tall (or square) m x n matrix a (m >= n): u m x n,
 * s n, v n x n, Nx.LinAlg.SVD's Gram-matrix path. `integer`: a holds an
 * integer tensor's values (the Gram matrix is then exact, in a's type). */
static void svd_gram(const double *a, int64_t m, int64_t n, emily_dtype w, int64_t max_iter, bool integer, double *u,
                     double *s, double *v, double *ws) {
    double *gram = ws, *wv = gram + n * n, *vv = wv + n, *ews = vv + n * n;
    int64_t *order = (int64_t *)(ews + emi_linalg_eigh_scratch(n));
    /* gram = dot(a, [-2], a, [-2]) */
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t k = 0; k < m; k++) acc = a[k * n + i] * a[k * n + j] + acc;
            gram[i * n + j] = integer ? acc : rnd(w, acc);
        }
    /* {s_sq, v} = eigh(gram, max_iter: max_iter) (eps 1.0e-4) */
    emi_linalg_eigh_real(gram, n, w, 1.0e-4, max_iter, wv, vv, ews);
    /* s = sqrt(max(s_sq, 0)), sorted in decreasing order with v's columns */
    for (int64_t i = 0; i < n; i++) {
        double x = wv[i];
        wv[i] = rnd(w, sqrt(isnan(x) || x > 0 ? x : 0));
    }
    emi_linalg_argsort_desc(wv, n, order);
    for (int64_t i = 0; i < n; i++) s[i] = wv[order[i]];
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < n; c++) v[r * n + c] = vv[r * n + order[c]];
    /* s_inv = select(s > n * @eps * s[0], 1 / s, 0); n * @eps is folded
     * in f32, the product with s[0] is in the work type */
    double thr = rnd(w, f32c((double)n * f32c(NX_SVD_EPS)) * s[0]);
    /* u = dot(a, v) * s_inv[None, :] */
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t k = 0; k < n; k++) acc = a[i * n + k] * v[k * n + j] + acc;
            double s_inv = s[j] > thr ? rnd(w, 1 / s[j]) : 0;
            u[i * n + j] = rnd(w, rnd(w, acc) * s_inv);
        }
}

/* ---- svd with full matrices: QDWH (Nx.LinAlg.SVD.svd_full) ----------- */

/* C = A^T . B (A q x p, B q x r). */
static void mm_tn(const double *A, const double *B, double *C, int64_t p, int64_t q, int64_t r, emily_dtype w) {
    for (int64_t i = 0; i < p * r; i++) C[i] = 0;
    for (int64_t k = 0; k < q; k++)
        for (int64_t i = 0; i < p; i++) {
            double aki = A[k * p + i];
            const double *b = B + k * r;
            double *c = C + i * r;
            for (int64_t j = 0; j < r; j++) c[j] = aki * b[j] + c[j];
        }
    for (int64_t i = 0; i < p * r; i++) C[i] = rnd(w, C[i]);
}

static void transpose_to(const double *A, double *T, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) T[j * rows + i] = A[i * cols + j];
}

/* The engine's own cholesky and triangular_solve kernels (cholesky.c,
 * triangular_solve.c: the reference's bits) on one matrix, through
 * tensors. */
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
static bool kernel_tsolve(const double *a, const double *b, double *x, int64_t n, int64_t m, bool lower,
                          emily_dtype w) {
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
            for (int64_t i = 0; i < n * m; i++) x[i] = rnd(w, xd[i]);
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
    for (int64_t i = 0; i < count; i++) acc = rnd(w, pow(rnd(w, fabs(t[i]) / c), 2.0)) + acc;
    return rnd(w, rnd(w, pow(rnd(w, acc), 0.5)) * c);
}

static inline double R32(double x) { return (double)(float)x; }

/* Nx.LinAlg.SVD.qdwh on a tall or square m x n x (m >= n; `tin`: its
 * float type; `integer`: x holds an integer tensor's values): u (m x n)
 * and h (n x n), type tin. The loop runs in f64 for f64 and in f32
 * otherwise; its scalars are f32. */
static bool qdwh(const double *x, int64_t m, int64_t n, emily_dtype tin, bool integer, int64_t max_iter, bool nx07,
                 double *u_out, double *h_out) {
    emily_dtype W = tin == EMILY_F64 ? EMILY_F64 : EMILY_F32;
    int64_t mn = m * n, nn = n * n, m2 = m + n;
    double *buf = malloc((size_t)(6 * mn + 2 * m2 * n + 3 * nn + emi_linalg_qr_scratch(m2, n) + 4 * n) *
                         sizeof(double));
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
        if (!integer) cs = rnd(tin, cs);
        if (isnan(cs) || cs > n1 || j == 0) n1 = cs;
    }
    for (int64_t i = 0; i < m; i++) {
        double rs = 0;
        for (int64_t j = 0; j < n; j++) rs = fabs(x[i * n + j]) + rs;
        if (!integer) rs = rnd(tin, rs);
        if (isnan(rs) || rs > ninf || i == 0) ninf = rs;
    }
    double alpha = rnd(tin, rnd(tin, sqrt(n1)) * rnd(tin, sqrt(ninf)));
    for (int64_t i = 0; i < mn; i++) u[i] = rnd(tin, x[i] / alpha); /* then as_type(W): exact */
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
            for (int64_t i = 0; i < mn; i++) y[i] = rnd(W, sc * u[i]);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) y[mn + i * n + j] = i == j;
            emi_linalg_qr_real(y, m2, n, W, 1.0e-10, false, nx07, false, q, rr, qws);
            transpose_to(q + mn, zt, n, n); /* q2 = adjoint(q[m..]) */
            emi_linalg_mm(q, zt, g, m, n, n, W);
            double s3 = R32(R32(a - e) / sc);
            for (int64_t i = 0; i < mn; i++) u[i] = rnd(W, rnd(W, e * u[i]) + rnd(W, s3 * g[i]));
        } else {
            /* qdwh_use_cholesky: x = c u^T u + I, y = cholesky(x),
             * z = (y^T \ (y \ u^T))^T, u = e u + (a - e) z */
            mm_tn(u, u, g, n, m, n, W);
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) g[i * n + j] = rnd(W, rnd(W, c * g[i * n + j]) + (i == j));
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
            for (int64_t i = 0; i < mn; i++) u[i] = rnd(W, rnd(W, e * u[i]) + rnd(W, s * z[i]));
        }
        for (int64_t i = 0; i < mn; i++) d[i] = rnd(W, u[i] - up[i]);
        bool iterating_l = fabs(R32(1.0 - l_)) > tol_l;
        bool iterating_u = frobenius(d, mn, W) > tol_norm;
        unconverged = iterating_l || iterating_u;
        not_max = it < max_iter;
    }
    if (ok) {
        /* u = as_type(u, tin); u = 1.5 u - 0.5 u (u^T u) */
        for (int64_t i = 0; i < mn; i++) u[i] = rnd(tin, u[i]);
        mm_tn(u, u, g, n, m, n, tin);
        emi_linalg_mm(u, g, z, m, n, n, tin);
        for (int64_t i = 0; i < mn; i++) u_out[i] = rnd(tin, rnd(tin, 1.5 * u[i]) - rnd(tin, 0.5 * z[i]));
        /* h = adjoint(u) . x, then (h + adjoint(h)) / 2 */
        mm_tn(u_out, x, g, n, m, n, tin);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) h_out[i * n + j] = rnd(tin, rnd(tin, g[i * n + j] + g[j * n + i]) / 2);
    }
    free(buf);
    return ok;
}

/* eigh of the polar factor h (n x n, type tin) as svd_tall_and_square
 * calls it (eps 1.0e-4): Nx.LinAlg.BlockEigh, or Nx 0.7's
 * Nx.BinaryBackend.Matrix.eigh with its outputs written in type tin.
 * ws: emi_linalg_eigh_scratch(n). False when out of memory. */
static bool polar_eigh(const double *h, int64_t n, emily_dtype tin, int64_t max_iter, bool nx07, double *w, double *v,
                       double *ws) {
    if (!nx07) {
        emi_linalg_eigh_real(h, n, tin, 1.0e-4, max_iter, w, v, ws);
        return true;
    }
    /* h is symmetric by construction, so Matrix.eigh's Hermitian check passes */
    if (emi_cpu_nx07_eigh_real(h, n, 1.0e-4, max_iter, w, v) != NX07_OK) return false;
    for (int64_t i = 0; i < n; i++) w[i] = rnd(tin, w[i]);
    for (int64_t i = 0; i < n * n; i++) v[i] = rnd(tin, v[i]);
    return true;
}

/* Nx.LinAlg.SVD.svd_tall_and_square on a tall or square m x n matrix a
 * (m >= n): u m x n, s n, v n x n (not transposed), type tin. */
static bool svd_tall_and_square(const double *a, int64_t m, int64_t n, emily_dtype tin, bool integer, int64_t max_iter,
                                bool nx07, double *u_out, double *s, double *v) {
    int64_t nn = n * n, mn = m * n;
    double *buf = malloc((size_t)(mn + 4 * nn + 2 * n + emi_linalg_qr_scratch(m, n) + emi_linalg_eigh_scratch(n) + 2) *
                         sizeof(double));
    if (!buf) return false;
    double *uu = buf, *h = uu + mn, *wv = h + nn, *vv = wv + n, *vo = vv + nn, *sg = vo + nn, *ws = sg + n;
    int64_t *order = (int64_t *)(ws + emi_linalg_qr_scratch(m, n) + emi_linalg_eigh_scratch(n));
    bool ok = qdwh(a, m, n, tin, integer, max_iter, nx07, uu, h);
    if (ok) {
        /* h = (h + h^T) / 2, {s, v} = eigh(h), signs, sorted, u = u . v */
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) vo[i * n + j] = rnd(tin, rnd(tin, h[i * n + j] + h[j * n + i]) / 2);
        ok = polar_eigh(vo, n, tin, max_iter, nx07, wv, vv, ws);
    }
    if (ok) {
        for (int64_t j = 0; j < n; j++) sg[j] = wv[j] < 0 ? -1 : 1;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) vv[i * n + j] = rnd(tin, sg[j] * vv[i * n + j]);
        for (int64_t j = 0; j < n; j++) wv[j] = rnd(tin, sg[j] * wv[j]);
        emi_linalg_argsort_desc(wv, n, order);
        for (int64_t j = 0; j < n; j++) s[j] = wv[order[j]];
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) v[i * n + j] = vv[i * n + order[j]];
        emi_linalg_mm(uu, v, u_out, m, n, n, tin);
        /* select(s[0] < n * @eps * s_out[0], correct_rank_deficiency(u), u),
         * s[0] being the first value before the sort */
        double thr = rnd(tin, R32((double)n * R32(NX_SVD_EPS)) * s[0]);
        if (wv[0] < thr) {
            /* correct_rank_deficiency: q . diag(sign(diag(r))) of qr(u) */
            double *qq = buf; /* m x n, uu is no longer needed */
            emi_linalg_qr_real(u_out, m, n, tin, 1.0e-10, false, nx07, false, qq, h, ws);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double d = h[j * n + j];
                    double sgn = d < 0 ? -1 : d == 0 ? 0 : 1;
                    u_out[i * n + j] = rnd(tin, qq[i * n + j] * sgn);
                }
        }
    }
    free(buf);
    return ok;
}

/* svd_full on a tall or square m x n matrix a (m >= n): u m x m, s n,
 * v n x n (not transposed). */
static bool svd_full(const double *a, int64_t m, int64_t n, emily_dtype tin, bool integer, int64_t max_iter, bool nx07,
                     double *u_out, double *s, double *v) {
    int64_t nn = n * n;
    double *buf = malloc((size_t)(m * m + m * n + 2 * nn + emi_linalg_qr_scratch(m, n) + 1) * sizeof(double));
    if (!buf) return false;
    double *qf = buf, *rf = qf + m * m, *sq = rf + m * n, *uo = sq + nn, *ws = uo + nn;
    const double *sqa = a;
    bool reduce = m > n;
    bool sq_integer = integer;
    if (reduce) {
        /* {q_full, a_full} = qr(a, mode: :complete); a = a_full[0..n-1] */
        emi_linalg_qr_real(a, m, n, tin, 1.0e-10, true, nx07, false, qf, rf, ws);
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
                u_out[i * m + j] = rnd(tin, acc);
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
static bool svd_non_full_nx07(const double *a, int64_t m, int64_t n, emily_dtype tin, bool integer, int64_t max_iter,
                              double *u_out, double *s, double *v) {
    if (!((double)m > 1.15 * (double)n)) return svd_tall_and_square(a, m, n, tin, integer, max_iter, true, u_out, s, v);
    int64_t nn = n * n;
    double *buf = malloc((size_t)(m * n + 2 * nn + emi_linalg_qr_scratch(m, n) + 1) * sizeof(double));
    if (!buf) return false;
    double *q = buf, *r = q + m * n, *uo = r + nn, *ws = uo + nn;
    /* {q, a} = qr(a, mode: :reduced), then u = q . u */
    emi_linalg_qr_real(a, m, n, tin, 1.0e-10, false, true, false, q, r, ws);
    bool ok = svd_tall_and_square(r, n, n, tin, false, max_iter, true, uo, s, v);
    if (ok) emi_linalg_mm(q, uo, u_out, m, n, n, tin);
    free(buf);
    return ok;
}

/* One real matrix: a m x n (values of any type), outputs in the op
 * layer's shapes (u m x uc, s k, vt vr x n). False when out of memory. */
static bool svd_real(const double *a, int64_t m, int64_t n, emily_dtype w, int64_t max_iter, bool integer, bool full,
                     bool nx07, double *u_out, double *s_out, double *vt_out, double *ws) {
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

static emily_status svd_batches(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                                bool full_matrices, int64_t max_iter, emily_dtype work, bool integer_input, bool nx07) {
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

emily_status emi_cpu_linalg_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                                bool full_matrices, int64_t max_iter, emily_dtype work, bool integer_input) {
    return svd_batches(u, s, vt, a, full_matrices, max_iter, work, integer_input, false);
}

emily_status emi_cpu_nx07_svd(emily_tensor *u, emily_tensor *s, emily_tensor *vt, const emily_tensor *a,
                              bool full_matrices, int64_t max_iter, emily_dtype work, bool integer_input) {
    return svd_batches(u, s, vt, a, full_matrices, max_iter, work, integer_input, true);
}
