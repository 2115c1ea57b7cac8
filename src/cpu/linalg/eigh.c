/* CPU kernel: eigh by Nx's own algorithm, the way Nx.BinaryBackend runs
 * it (see reference.h), so that the eigenvectors, which are not unique,
 * are the reference's to the last bit: Nx.LinAlg.BlockEigh, the parallel
 * (Brent-Luk) Jacobi method on the four blocks of the matrix, with Nx's
 * rotation formulas, its tournament permutations, its stopping rule
 * (off-diagonal norm <= eps^2 * Frobenius norm, or max_iter sweeps) and
 * its final order (decreasing |w|, ties in index order) and zeroing
 * (|x| <= eps). Hermitian input follows Nx's complex path with the
 * arithmetic of Elixir's Complex library, rounding both parts to the
 * part type. */
/* GCC 12's SLP vectorizer drops the double -> float -> double round
 * trip of zrnd() when it pairs the two parts of a complex value (seen in
 * qr's complex v = u / |u|: c64 results came out unrounded); the
 * element-wise rounding is the point of this file, so it is built without
 * SLP vectorization (as are qr.c and svd.c). */
#pragma GCC optimize("no-tree-slp-vectorize")
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/reference.h"

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
            double e = rnd(w, rnd(w, sq(fabs(tl))) + rnd(w, sq(fabs(J->tr[at]))));
            e = rnd(w, e + rnd(w, sq(fabs(J->bl[at]))));
            e = rnd(w, e + rnd(w, sq(fabs(br))));
            acc = e + acc;
        }
    return rnd(w, acc);
}

/* calc_rot on the diagonals of tl, tr and br. */
static void calc_rot(jacobi *J) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    double c5 = rnd(w, 1.0e-5);
    for (int64_t i = 0; i < k; i++) {
        double tl = J->tl[i * k + i], tr = J->tr[i * k + i], br = J->br[i * k + i];
        bool z = tr == 0;
        double s_tr = z ? 1 : tr;
        double tau = z ? 0 : rnd(w, rnd(w, br - tl) / rnd(w, 2 * s_tr));
        double t = rnd(w, sqrt(rnd(w, 1 + rnd(w, sq(tau)))));
        t = rnd(w, 1 / rnd(w, tau + (tau >= 0 ? t : -t)));
        double mn = fmin(fabs(br), fabs(tl));
        if (isnan(br) || isnan(tl)) mn = NAN;
        if (fabs(tr) <= rnd(w, c5 * mn)) t = 0;
        double q = rnd(w, sqrt(rnd(w, 1.0 + rnd(w, sq(t)))));
        J->c[i] = rnd(w, 1.0 / q);
        /* s = t * c with c = 1.0 / q: Nx.Defn.Expr rewrites x * (1 / y)
         * as x / y */
        J->s[i] = rnd(w, t / q);
        double ttr = rnd(w, t * tr);
        J->rt1[i] = rnd(w, tl - ttr);
        J->rt2[i] = rnd(w, br + ttr);
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
            top[i * k + j] = rnd(w, rnd(w, x * c) - rnd(w, y * s));
            bottom[i * k + j] = rnd(w, rnd(w, x * s) + rnd(w, y * c));
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
            left[i * k + j] = rnd(w, rnd(w, x * c) - rnd(w, y * s));
            right[i * k + j] = rnd(w, rnd(w, x * s) + rnd(w, y * c));
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

int64_t emi_linalg_eigh_scratch(int64_t n) {
    int64_t k = (n + 1) / 2;
    return 9 * k * k + 4 * k + 2 * k + 2 * k * 2 * k + 2 * k;
}

/* a: n x n (any type's values, as doubles); w_out: n, v_out: n x n. */
void emi_linalg_eigh_real(const double *a, int64_t n, emily_dtype w, double eps, int64_t max_iter,
                          double *w_out, double *v_out, double *ws) {
    if (n == 1) {
        w_out[0] = rnd(w, a[0]);
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
            J.tl[i * k + j] = rnd(w, a[i * n + j]);
            J.tr[i * k + j] = cj < n ? rnd(w, a[i * n + cj]) : 0;
            J.bl[i * k + j] = ri < n ? rnd(w, a[ri * n + j]) : 0;
            J.br[i * k + j] = ri < n && cj < n ? rnd(w, a[ri * n + cj]) : 0;
            J.vtl[i * k + j] = J.vbr[i * k + j] = i == j ? 1 : 0;
            J.vtr[i * k + j] = J.vbl[i * k + j] = 0;
        }
    /* off_norm > eps ** 2 * frob_norm: eps ** 2 folded in f32, the
     * product in the work type */
    double eps2 = f32c(sq(f32c(eps)));
    double frob = sq_norm(&J, false), off = sq_norm(&J, true);
    for (int64_t it = 0; off > rnd(w, eps2 * frob) && it < max_iter; it++) {
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
            double e = rnd(w, rnd(w, sq(rnd(w, zabs(tl)))) + rnd(w, sq(rnd(w, zabs(J->tr[at])))));
            e = rnd(w, e + rnd(w, sq(rnd(w, zabs(J->bl[at])))));
            e = rnd(w, e + rnd(w, sq(rnd(w, zabs(br)))));
            acc = e + acc;
        }
    return rnd(w, acc);
}

/* calc_rot with complex tr: the rotation of |tr|, s = (t / q) * conj(tr) / |tr|. */
static void zcalc_rot(zjacobi *J) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    double c5 = rnd(w, 1.0e-5);
    for (int64_t i = 0; i < k; i++) {
        double tl = J->tl[i * k + i].re, br = J->br[i * k + i].re;
        zd trz = J->tr[i * k + i];
        double tr = rnd(w, zabs(trz));
        zd ph = tr == 0 ? (zd){1, 0} : zrnd(w, zdiv(zconj(trz), zr(tr)));
        bool z = tr == 0;
        double s_tr = z ? 1 : tr;
        double tau = z ? 0 : rnd(w, rnd(w, br - tl) / rnd(w, 2 * s_tr));
        double t = rnd(w, sqrt(rnd(w, 1 + rnd(w, sq(tau)))));
        t = rnd(w, 1 / rnd(w, tau + (tau >= 0 ? t : -t)));
        double mn = fmin(fabs(br), fabs(tl));
        if (isnan(br) || isnan(tl)) mn = NAN;
        if (fabs(tr) <= rnd(w, c5 * mn)) t = 0;
        double q = rnd(w, sqrt(rnd(w, 1.0 + rnd(w, sq(t)))));
        J->c[i] = rnd(w, 1.0 / q);
        J->s[i] = zrnd(w, zmul(zr(rnd(w, t / q)), ph));
        double ttr = rnd(w, t * tr);
        J->rt1[i] = rnd(w, tl - ttr);
        J->rt2[i] = rnd(w, br + ttr);
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
            top[i * k + j] = zrnd(w, zsub(zrnd(w, zmul(x, c)), zrnd(w, zmul(y, sc))));
            bottom[i * k + j] = zrnd(w, zadd(zrnd(w, zmul(x, s)), zrnd(w, zmul(y, c))));
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
            left[i * k + j] = zrnd(w, zsub(zrnd(w, zmul(x, c)), zrnd(w, zmul(y, s))));
            right[i * k + j] = zrnd(w, zadd(zrnd(w, zmul(x, sc)), zrnd(w, zmul(y, c))));
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
 * rotations. ws: emi_linalg_eigh_scratch(n) pairs of doubles. */
static void eigh_complex(const zd *a, int64_t n, emily_dtype w, double eps, int64_t max_iter,
                         zd *w_out, zd *v_out, zd *ws) {
    if (n == 1) {
        w_out[0] = (zd){rnd(w, a[0].re), 0}; /* take_diagonal(real(matrix)) */
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
            J.tl[i * k + j] = zrnd(w, a[i * n + j]);
            J.tr[i * k + j] = cj < n ? zrnd(w, a[i * n + cj]) : z0;
            J.bl[i * k + j] = ri < n ? zrnd(w, a[ri * n + j]) : z0;
            J.br[i * k + j] = ri < n && cj < n ? zrnd(w, a[ri * n + cj]) : z0;
            J.vtl[i * k + j] = J.vbr[i * k + j] = i == j ? (zd){1, 0} : z0;
            J.vtr[i * k + j] = J.vbl[i * k + j] = z0;
        }
    double eps2 = f32c(sq(f32c(eps)));
    double frob = zsq_norm(&J, false), off = zsq_norm(&J, true);
    for (int64_t it = 0; off > rnd(w, eps2 * frob) && it < max_iter; it++) {
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
    for (int64_t i = 0; i < n; i++) mag[i] = rnd(w, zabs(wv[i]));
    emi_linalg_argsort_desc(mag, n, order);
    double eps32 = f32c(eps);
    for (int64_t i = 0; i < n; i++) {
        zd e = wv[order[i]];
        w_out[i] = rnd(w, zabs(e)) <= eps32 ? z0 : e;
    }
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < n; c++) {
            zd e = vv[r * m2 + order[c]];
            v_out[r * n + c] = rnd(w, zabs(e)) <= eps32 ? z0 : e;
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
    int64_t scratch = emi_linalg_eigh_scratch(n) + n; /* + the order (int64) */
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
                emi_linalg_eigh_real(src + b * nn, n, work, eps, max_iter, wd + b * n, vd + b * nn, ws);
        }
        free(ws);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "eigh: out of host memory");
    return EMILY_OK;
}

/* A stable argsort in decreasing order (Nx.argsort(direction: :desc) on
 * Nx.BinaryBackend: a merge sort whose comparator keeps ties in order;
 * NaN first). */
void emi_linalg_argsort_desc(const double *x, int64_t n, int64_t *order) {
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
