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

/* The rotation of one 2 x 2 block [[tl, tr], [tr, br]] (tr real) as
 * Nx's calc_rot computes it: c, t / q (which s is made of) and the new
 * diagonal rt1, rt2. */
static void rotation(emily_dtype w, double tl, double tr, double br, double *c, double *t_q, double *rt1, double *rt2) {
    double c5 = rnd(w, 1.0e-5);
    bool z = tr == 0;
    double s_tr = z ? 1 : tr;
    double tau = z ? 0 : rnd(w, rnd(w, br - tl) / rnd(w, 2 * s_tr));
    double t = rnd(w, sqrt(rnd(w, 1 + rnd(w, sq(tau)))));
    t = rnd(w, 1 / rnd(w, tau + (tau >= 0 ? t : -t)));
    double mn = fmin(fabs(br), fabs(tl));
    if (isnan(br) || isnan(tl)) mn = NAN;
    if (fabs(tr) <= rnd(w, c5 * mn)) t = 0;
    double q = rnd(w, sqrt(rnd(w, 1.0 + rnd(w, sq(t)))));
    *c = rnd(w, 1.0 / q);
    /* s = t * c with c = 1.0 / q: Nx.Defn.Expr rewrites x * (1 / y) as
     * x / y */
    *t_q = rnd(w, t / q);
    double ttr = rnd(w, t * tr);
    *rt1 = rnd(w, tl - ttr);
    *rt2 = rnd(w, br + ttr);
}

/* ---- real ------------------------------------------------------------------ */

#define EIGH_S double
#define EIGH_NAME(x) x
#define EIGH_RND(x) rnd(w, x)
#define EIGH_MUL(a, b) ((a) * (b))
#define EIGH_ADD(a, b) ((a) + (b))
#define EIGH_SUB(a, b) ((a) - (b))
#define EIGH_CONJ(a) (a)
#define EIGH_FROM_REAL(x) (x)
#define EIGH_RE(x) (x)
#define EIGH_MAG(x) fabs(x)
#define EIGH_ZERO 0.0
#include "cpu/linalg/eigh_jacobi.h"
#undef EIGH_S
#undef EIGH_NAME
#undef EIGH_RND
#undef EIGH_MUL
#undef EIGH_ADD
#undef EIGH_SUB
#undef EIGH_CONJ
#undef EIGH_FROM_REAL
#undef EIGH_RE
#undef EIGH_MAG
#undef EIGH_ZERO

static void calc_rot(jacobi *J) {
    int64_t k = J->k;
    for (int64_t i = 0; i < k; i++)
        rotation(J->w, J->tl[i * k + i], J->tr[i * k + i], J->br[i * k + i], &J->c[i], &J->s[i], &J->rt1[i],
                 &J->rt2[i]);
}

int64_t emi_linalg_eigh_scratch(int64_t n) {
    int64_t k = (n + 1) / 2;
    return 9 * k * k + 4 * k + 2 * k + 2 * k * 2 * k + 2 * k;
}

void emi_linalg_eigh_real(const double *a, int64_t n, emily_dtype w, double eps, int64_t max_iter, double *w_out,
                          double *v_out, double *ws) {
    eigh(a, n, w, eps, max_iter, w_out, v_out, ws);
}

/* ---- complex (Nx.LinAlg.BlockEigh's Hermitian path) ---------------------- */

#define EIGH_S zd
#define EIGH_NAME(x) z##x
#define EIGH_RND(x) zrnd(w, x)
#define EIGH_MUL zmul
#define EIGH_ADD zadd
#define EIGH_SUB zsub
#define EIGH_CONJ zconj
#define EIGH_FROM_REAL zr
#define EIGH_RE(x) (x).re
#define EIGH_MAG(x) rnd(w, zabs(x))
#define EIGH_ZERO ((zd){0, 0})
#include "cpu/linalg/eigh_jacobi.h"

/* calc_rot with complex tr: the rotation of |tr|, s = (t / q) * conj(tr)
 * / |tr|. */
static void zcalc_rot(zjacobi *J) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    for (int64_t i = 0; i < k; i++) {
        zd trz = J->tr[i * k + i];
        double tr = rnd(w, zabs(trz)), t_q;
        zd ph = tr == 0 ? (zd){1, 0} : zrnd(w, zdiv(zconj(trz), zr(tr)));
        rotation(w, J->tl[i * k + i].re, tr, J->br[i * k + i].re, &J->c[i], &t_q, &J->rt1[i], &J->rt2[i]);
        J->s[i] = zrnd(w, zmul(zr(t_q), ph));
    }
}

emily_status emi_cpu_linalg_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter,
                                 emily_dtype work) {
    bool cx = a->dtype == EMILY_C128;
    emily_dtype part = work == EMILY_C64 ? EMILY_F32 : work == EMILY_C128 ? EMILY_F64 : work;
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    if (n == 0 || batches == 0) return EMILY_OK;
    const double *src = emily_tensor_base(a);
    double *wd = emily_tensor_base(w), *vd = emily_tensor_base(v);
    int64_t scratch = emi_linalg_eigh_scratch(n);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        double *ws = malloc((size_t)scratch * (cx ? 2 : 1) * sizeof(double) + 1);
        if (!ws) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (!ws) continue;
            if (cx)
                zeigh((const zd *)src + b * nn, n, part, eps, max_iter, (zd *)wd + b * n, (zd *)vd + b * nn, (zd *)ws);
            else emi_linalg_eigh_real(src + b * nn, n, work, eps, max_iter, wd + b * n, vd + b * nn, ws);
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
