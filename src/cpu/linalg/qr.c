/* CPU kernel: qr by Nx's own algorithm, the way Nx.BinaryBackend runs it
 * (see reference.h), so that the factors, which are not unique, are the
 * reference's to the last bit: Nx.LinAlg.QR.qr_matrix, Householder
 * reflections with Nx's choice of the reflector (v = x - |x| e_i,
 * computed without cancellation for x_i > 0), so R's diagonal is never
 * negative, applied as rank-1 updates (Nx 0.13) or, for the Nx 0.7 and
 * Nx 0.13.1 forms, built as full m x m matrices H (the identity outside
 * the trailing block) and multiplied in as r = H . r, q = q . H. Complex
 * input follows Nx's complex reflector with the arithmetic of Elixir's
 * Complex library, rounding both parts to the part type. eps thresholds
 * are f32(eps) for every work type. */
/* GCC 12's SLP vectorizer drops the double -> float -> double round
 * trip of zrnd() when it pairs the two parts of a complex value (seen in
 * qr's complex v = u / |u|: c64 results came out unrounded); the
 * element-wise rounding is the point of this file, so it is built without
 * SLP vectorization (as are eigh.c and svd.c). */
#pragma GCC optimize("no-tree-slp-vectorize")
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/reference.h"

/* C = A . B (A p x q, B q x r), sums in index order from +0, rounded to w. */
void emi_linalg_mm(const double *A, const double *B, double *C, int64_t p, int64_t q, int64_t r, emily_dtype w) {
    for (int64_t i = 0; i < p; i++) {
        double *c = C + i * r;
        for (int64_t j = 0; j < r; j++) c[j] = 0;
        for (int64_t k = 0; k < q; k++) {
            double aik = A[i * q + k];
            const double *b = B + k * r;
            for (int64_t j = 0; j < r; j++) c[j] = aik * b[j] + c[j];
        }
        for (int64_t j = 0; j < r; j++) c[j] = rnd(w, c[j]);
    }
}

/* output_mode_handling: q's columns and r's rows once the reflections of
 * an m x n matrix (m_in rows before Nx's zero rows) are done. */
static int64_t qr_out_width(bool wide, bool complete, int64_t m_in, int64_t m, int64_t n) {
    if (wide) return m_in;
    return !complete && m > n ? n : m;
}

/* ---- QR, complex (Nx.LinAlg.QR.qr_matrix's complex reflector) ---------- */

/* C = A . B (A p x q, B q x r) on complex values, sums in index order
 * from 0, both parts rounded to w. */
static void zmm(const zd *A, const zd *B, zd *C, int64_t p, int64_t q, int64_t r, emily_dtype w) {
    for (int64_t i = 0; i < p; i++)
        for (int64_t j = 0; j < r; j++) {
            zd acc = {0, 0};
            for (int64_t k = 0; k < q; k++) acc = zadd(zmul(A[i * q + k], B[k * r + j]), acc);
            C[i * r + j] = zrnd(w, acc);
        }
}

/* As qr_real, on complex values (pairs of doubles); w is the part type.
 * The reflector: alpha = exp(i phase(x_i)) |x|, u = x + alpha e_i,
 * v = u / |u|, scale 2 (0 when |u|^2 < f32(eps)); the updates as for real
 * input with conj(v) in vh_r and in Nx.outer's second operand. */
static void qr_complex(const zd *a, int64_t m_in, int64_t n_in, emily_dtype w, double eps, bool complete,
                       bool explicit_h, zd *q_out, zd *r_out, zd *ws) {
    bool wide = m_in < n_in;
    int64_t m = wide ? n_in : m_in, n = n_in;
    int64_t max_i = wide ? n - 1 : (m == n ? n - 2 : n - 1);
    zd *q = ws, *r = q + m * m, *x = r + m * n, *v = x + m, *qv = v + m, *tmp = qv + m;
    zd *h = tmp + (m > n ? m : n), *prod = h + m * m;
    double eps32 = f32c(eps);
    for (int64_t i = 0; i < m * m; i++) q[i] = (zd){0, 0};
    for (int64_t i = 0; i < m; i++) q[i * m + i] = (zd){1, 0};
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) r[i * n + j] = i < m_in ? zrnd(w, a[i * n + j]) : (zd){0, 0};
    for (int64_t i = 0; i <= max_i; i++) {
        for (int64_t j = 0; j < m; j++) x[j] = j < i ? (zd){0, 0} : r[j * n + i];
        /* norm(x) = sqrt(dot(x, conj(x))) */
        zd nsq = {0, 0};
        for (int64_t j = 0; j < m; j++) nsq = zadd(zmul(x[j], zconj(x[j])), nsq);
        zd norm_x = zrnd(w, zsqrt(zrnd(w, nsq)));
        double phase = rnd(w, atan2(x[i].im, x[i].re));
        double rho = exp(0.0);
        zd e = zrnd(w, (zd){rho * cos(phase), rho * sin(phase)});
        zd alpha = zrnd(w, zmul(e, norm_x));
        for (int64_t j = 0; j < m; j++) v[j] = x[j];
        v[i] = zrnd(w, zadd(x[i], alpha));
        zd usq = {0, 0};
        for (int64_t j = 0; j < m; j++) usq = zadd(zmul(v[j], zconj(v[j])), usq);
        usq = zrnd(w, usq);
        zd n_u = zrnd(w, zsqrt(usq));
        bool sel = usq.re < eps32;
        zd d = sel ? (zd){1, 0} : n_u;
        for (int64_t j = 0; j < m; j++) v[j] = zrnd(w, zdiv(v[j], d));
        zd scale = {sel ? 0 : 2, 0};
        if (explicit_h) {
            /* h = select(selector, eye - scale * outer(v, v), eye) (outer
             * conjugates its second operand), r = dot(h, r), q = dot(q, h) */
            for (int64_t j = 0; j < m; j++)
                for (int64_t k = 0; k < m; k++) {
                    zd eye = {j == k, 0};
                    zd o = zrnd(w, zmul(v[j], zconj(v[k])));
                    h[j * m + k] = j >= i && k >= i ? zrnd(w, zsub(eye, zrnd(w, zmul(scale, o)))) : eye;
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
        for (int64_t k = 0; k < n; k++) tmp[k] = zrnd(w, tmp[k]);
        for (int64_t j = 0; j < m; j++) {
            zd *rj = r + j * n;
            for (int64_t k = 0; k < n; k++) {
                zd p = zrnd(w, zadd(zmul(v[j], tmp[k]), (zd){0, 0}));
                rj[k] = zrnd(w, zsub(rj[k], zrnd(w, zmul(scale, p))));
            }
        }
        /* q = q - scale * outer(dot(q, v), v) */
        for (int64_t j = 0; j < m; j++) {
            zd acc = {0, 0};
            for (int64_t l = 0; l < m; l++) acc = zadd(zmul(q[j * m + l], v[l]), acc);
            qv[j] = zrnd(w, acc);
        }
        for (int64_t j = 0; j < m; j++)
            for (int64_t k = 0; k < m; k++) {
                zd o = zrnd(w, zmul(qv[j], zconj(v[k]))); /* Nx.outer conjugates its second operand */
                q[j * m + k] = zrnd(w, zsub(q[j * m + k], zrnd(w, zmul(scale, o))));
            }
    }
    int64_t qc = qr_out_width(wide, complete, m_in, m, n), rr = qc;
    for (int64_t i = 0; i < m_in; i++)
        for (int64_t j = 0; j < qc; j++) {
            zd e = q[i * m + j];
            q_out[i * qc + j] = rnd(w, zabs(e)) <= eps32 ? (zd){0, 0} : e;
        }
    for (int64_t i = 0; i < rr; i++)
        for (int64_t j = 0; j < n; j++) {
            zd e = r[i * n + j];
            r_out[i * n + j] = rnd(w, zabs(e)) <= eps32 ? (zd){0, 0} : e;
        }
}

/* ---- QR (Nx.LinAlg.QR.qr_matrix) --------------------------------------- */

/* Scratch doubles for one matrix of m_in x n_in. */
int64_t emi_linalg_qr_scratch(int64_t m_in, int64_t n_in) {
    int64_t m = m_in < n_in ? n_in : m_in, n = n_in, big = m > n ? m : n;
    /* q, r, x, v, the reflector h, and products of up to big x big
     * (complex: also q v, and room for both the row buffer and a product) */
    return 2 * m * m + m * n + 3 * m + 2 * big * big + big;
}

/* Scratch doubles for qr_real's compact run of a wide real m x n matrix
 * (see qr_wide_shortcut): no padding, products of up to m x n. */
static int64_t qr_scratch_compact(int64_t m, int64_t n) { return 2 * m * m + 3 * m * n + 3 * m + n; }

/* a: m_in x n_in (values of any type, as doubles). q: m_in x qc and
 * r: rr x n_in in the op layer's shapes (qc = rr = k, or m_in when
 * complete; wide input: m_in x m_in and m_in x n_in). `explicit_h`: each
 * reflection as an explicit m x m matrix multiplied in, as Nx 0.7 and the
 * Nx 0.13.1 tag do (same reflectors, other last bits), instead of the
 * rank-1 updates of the corpus's Nx. */
void emi_linalg_qr_real(const double *a, int64_t m_in, int64_t n_in, emily_dtype w, double eps, bool complete,
                        bool explicit_h, bool compact, double *q_out, double *r_out, double *ws) {
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
        for (int64_t j = 0; j < n; j++) r[i * n + j] = i < m_in ? rnd(w, a[i * n + j]) : 0;
    for (int64_t i = 0; i <= max_i; i++) {
        /* x = select(iota < i, 0, r[.., i]) */
        for (int64_t j = 0; j < m; j++) x[j] = j < i ? 0 : r[j * n + i];
        /* householder_reflector(x, i, eps) */
        double nsq = 0;
        for (int64_t j = 0; j < m; j++) nsq = x[j] * x[j] + nsq;
        nsq = rnd(w, nsq);
        double norm_x = rnd(w, sqrt(nsq));
        double xi = x[i];
        double ns1 = rnd(w, nsq - rnd(w, sq(fabs(xi))));
        double v0 = xi <= 0 ? rnd(w, xi - norm_x) : rnd(w, rnd(w, -ns1) / rnd(w, xi + norm_x));
        bool sel = ns1 < eps32;
        double d = sel ? 1 : v0;
        for (int64_t j = 0; j < m; j++) v[j] = rnd(w, (j == i ? (sel ? 1 : v0) : x[j]) / d);
        double nvsq = 0;
        for (int64_t j = 0; j < m; j++) nvsq = v[j] * v[j] + nvsq;
        nvsq = rnd(w, nvsq);
        double scale = sel ? 0 : rnd(w, 2 / (sel ? 1 : nvsq));
        if (explicit_h) {
            /* h = select(selector, eye - scale * outer(v, v), eye), then
             * r = dot(h, r) and q = dot(q, h) */
            for (int64_t j = 0; j < m; j++)
                for (int64_t k = 0; k < m; k++) {
                    double eye = j == k;
                    h[j * m + k] = j >= i && k >= i ? rnd(w, eye - rnd(w, scale * rnd(w, v[j] * v[k]))) : eye;
                }
            emi_linalg_mm(h, r, tmp, m, m, n, w);
            memcpy(r, tmp, (size_t)(m * n) * sizeof(double));
            emi_linalg_mm(q, h, tmp, m, m, m, w);
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
        for (int64_t k = 0; k < n; k++) tmp[k] = rnd(w, tmp[k]);
        for (int64_t j = 0; j < m; j++) {
            double vj = v[j];
            double *rj = r + j * n;
            for (int64_t k = 0; k < n; k++) rj[k] = rnd(w, rj[k] - rnd(w, scale * rnd(w, vj * tmp[k] + 0.0)));
        }
        /* q = q - scale * outer(dot(q, v), v) */
        for (int64_t j = 0; j < m; j++) {
            const double *qj = q + j * m;
            double acc = 0;
            for (int64_t l = 0; l < m; l++) acc = qj[l] * v[l] + acc;
            h[j] = rnd(w, acc);
        }
        for (int64_t j = 0; j < m; j++) {
            double qv = h[j];
            double *qj = q + j * m;
            for (int64_t k = 0; k < m; k++) qj[k] = rnd(w, qj[k] - rnd(w, scale * rnd(w, qv * v[k])));
        }
    }
    /* approximate_zeros, then output_mode_handling */
    int64_t qc = qr_out_width(wide, complete, m_in, m, n), rr = qc;
    for (int64_t i = 0; i < m_in; i++)
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
static bool qr_wide_shortcut(const double *a, int64_t m, int64_t n, emily_dtype work, double eps, bool complete,
                             bool explicit_h, double *qb, int64_t qsz, double *rb, int64_t rsz, double *ws) {
    bool zero_eps = !(f32c(eps) > 0);
    int64_t c = first_nonfinite_column(a, m, n);
    if (explicit_h ? !zero_eps && c <= n - 2 : c < n || zero_eps) {
        fill_nan(qb, qsz);
        fill_nan(rb, rsz);
        return true;
    }
    if (zero_eps) return false;
    emi_linalg_qr_real(a, m, n, work, eps, complete, explicit_h, true, qb, rb, ws); /* ws: qr_scratch_compact */
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
static bool qr_one(const double *a, int64_t m, int64_t n, emily_dtype work, emily_dtype part, double eps, bool complete,
                   bool explicit_h, bool cx, double *qb, int64_t qsz, double *rb, int64_t rsz, double *ws) {
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
        emi_linalg_qr_real(a, m, n, work, eps, complete, explicit_h, false, qb, rb, ws);
        return true;
    }
    if (qr_wide_shortcut(a, m, n, work, eps, complete, explicit_h, qb, qsz, rb, rsz, ws)) return true;
    double *padded = malloc((size_t)emi_linalg_qr_scratch(m, n) * sizeof(double));
    if (!padded) return false;
    emi_linalg_qr_real(a, m, n, work, eps, complete, explicit_h, false, qb, rb, padded);
    free(padded);
    return true;
}

static emily_status qr_batches(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps,
                               emily_dtype work, bool explicit_h) {
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
    int64_t scratch = m < n && !cx ? qr_scratch_compact(m, n) : emi_linalg_qr_scratch(m, n);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * m * m * n > 100000) reduction(| : failed)
    {
        double *ws = malloc((size_t)scratch * (size_t)parts * sizeof(double) + 1);
        if (!ws) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (!ws || failed) continue;
            if (!qr_one(src + b * m * n * parts, m, n, work, part, eps, complete, explicit_h, cx, qd + b * qsz * parts,
                        qsz, rd + b * rsz * parts, rsz, ws))
                failed = 1;
        }
        free(ws);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "qr: out of host memory");
    return EMILY_OK;
}

emily_status emi_cpu_linalg_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps,
                               emily_dtype work) {
    return qr_batches(q, r, a, complete, eps, work, false);
}

emily_status emi_cpu_nx07_qr(emily_tensor *q, emily_tensor *r, const emily_tensor *a, bool complete, double eps,
                             emily_dtype work) {
    return qr_batches(q, r, a, complete, eps, work, true);
}
