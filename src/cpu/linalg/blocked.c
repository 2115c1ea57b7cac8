/* Blocked LU and Cholesky that keep the reference's bits (see
 * blocked.h).
 *
 * Why blocking can be exact here: in Nx's algorithms every element is
 * transformed by a fixed sequence of operations, and only the order
 * *across* elements is free.
 *
 * - LU (right-looking, Nx.LinAlg.LU): element (i, j) becomes
 *   ((a_ij - l_i0 u_0j) - l_i1 u_1j) - ..., one rounded product and one
 *   subtraction per step k < min(i, j), in increasing k; the pivot of
 *   column k is chosen on its values after steps 0..k-1. A recursive
 *   column split (Toledo's recursive LU) factors the left half, applies
 *   its row swaps to the right half, solves the unit-lower triangle for
 *   U's rows (the same subtractions in the same order) and subtracts
 *   L21 U12 from the trailing block with emily_xupdate, which continues
 *   each element's chain of subtractions in k order. Row swaps commute
 *   with the delayed updates because each row carries its own multipliers.
 * - Cholesky (Nx.LinAlg.Cholesky): l_ij = (a_ij - s_ij) / (l_jj + eps)
 *   with s_ij = sum over k < j of l_ik l_jk, taken from 0 in increasing
 *   k, rounded once. The partial sums s live in l's lower triangle while
 *   the factorization runs: a recursive column split finishes the left
 *   half, adds the left half's terms to the sums of the right half with
 *   emily_xupdate (continuing each sum in k order), then finishes the
 *   right half. Only after all of that does the reference's final pass
 *   (|x| <= eps becomes 0, the upper triangle 0 * a) run, as in Nx.
 *
 * The narrow leaves (LU_BASE / CHOL_BASE columns) run the reference's
 * column steps on a column-major copy of the panel, so that the pivot
 * search, the division by the pivot and the rank-1 updates stream
 * through contiguous memory. Only the update runs on several threads. */
#include "cpu/linalg/blocked.h"

#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/linalg/exact_update.h"
#include "cpu/linalg/reference.h"

#ifndef LU_BASE
#define LU_BASE 16 /* panel columns factored column by column */
#endif
#ifndef TRSM_BASE
#define TRSM_BASE 16 /* rows of U solved row by row */
#endif
#ifndef CHOL_BASE
#define CHOL_BASE 16 /* Cholesky columns finished column by column */
#endif

/* -1: not read from EMILY_LINALG_BLOCK_MIN yet (the corpus can be run
 * with it set to 1, so that every matrix takes the blocked paths) */
static _Atomic int64_t block_min = -1;
void emi_cpu_linalg_set_block_min(int64_t n) { atomic_store(&block_min, n < 0 ? 0 : n); }
int64_t emi_cpu_linalg_block_min(void) {
    int64_t v = atomic_load(&block_min);
    if (v >= 0) return v;
    const char *env = getenv("EMILY_LINALG_BLOCK_MIN");
    char *end = NULL;
    long long parsed = env ? strtoll(env, &end, 10) : -1;
    v = env && *env && end && !*end && parsed >= 0 ? (int64_t)parsed : EMILY_LINALG_BLOCK_MIN_DEFAULT;
    int64_t expected = -1;
    atomic_compare_exchange_strong(&block_min, &expected, v);
    return atomic_load(&block_min);
}

/* The register-blocked leaves, built again for AVX-512 and picked at run
 * time (GCC's target_clones; not under ASan). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define LEAF __attribute__((target_clones("avx512f", "default")))
#else
#define LEAF
#endif

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

/* About half of w, a multiple of 16 (whole update tiles) where possible. */
static int64_t split(int64_t w) {
    int64_t h = w / 2 / 16 * 16;
    return h > 0 ? h : w / 2;
}

static int team_size(void) { return omp_in_parallel() ? 1 : omp_get_max_threads(); }

/* ---- LU ------------------------------------------------------------------ */

typedef struct lu_ctx {
    double *a; /* n x n, row-major */
    int64_t n;
    int64_t *perm;
    int64_t *piv;  /* piv[k]: the row swapped with row k at step k */
    bool r32;      /* work type f32: every step rounded to f32 */
    double *panel; /* n x LU_BASE, column-major */
    emily_xupdate_ws ws;
} lu_ctx;

/* Applies the swaps of steps [k0, k1) to columns [j0, j1), in step order. */
static void lu_swap_rows(lu_ctx *c, int64_t k0, int64_t k1, int64_t j0, int64_t j1) {
    int64_t n = c->n, w = j1 - j0;
    if (w <= 0) return;
    for (int64_t k = k0; k < k1; k++) {
        int64_t p = c->piv[k];
        if (p == k) continue;
        double *x = c->a + k * n + j0, *y = c->a + p * n + j0;
        for (int64_t j = 0; j < w; j++) {
            double t = x[j];
            x[j] = y[j];
            y[j] = t;
        }
    }
}

/* Steps c0 .. c1-1 of the reference on columns [c0, c1), rows [c0, n),
 * left-looking: when column k's turn comes it first receives the earlier
 * steps' row swaps, then their updates a_ik - l_ij u_jk for j < k in
 * increasing j, which is the sequence of operations the right-looking
 * reference applies to every element (each row carries its own
 * multipliers through the swaps); then its pivot is chosen and the
 * multipliers divided. Touching each column once, with eight rows'
 * partial results held in registers, moves a third of the memory traffic
 * of the rank-1 updates. Nx.argmax's rule for the pivot: the first
 * maximum of |x|, except that a NaN always takes over. */
/* The reference's LU step on a value of the work type (f64, or f32 held
 * in a double: every product and difference rounded to f32). */
static inline double r32f(bool r32, double x) { return r32 ? (double)(float)x : x; }
#define LU_STEP(r32, x, l, u) r32f(r32, (x)-r32f(r32, (l) * (u)))

static inline __attribute__((always_inline)) void lu_panel_body(double *P, int64_t m, int64_t w, int64_t *lp,
                                                                bool r32) {
    for (int64_t k = 0; k < w; k++) {
        double *col = P + k * m;
        for (int64_t j = 0; j < k; j++) {
            double t = col[j];
            col[j] = col[lp[j]];
            col[lp[j]] = t;
        }
        /* U's entries u_jk (rows above k): a small triangle */
        for (int64_t i = 1; i < k; i++) {
            double x = col[i];
            for (int64_t j = 0; j < i; j++) x = LU_STEP(r32, x, P[j * m + i], col[j]);
            col[i] = x;
        }
        int64_t i = k;
        for (; i + 8 <= m; i += 8) {
            double acc[8];
            for (int r = 0; r < 8; r++) acc[r] = col[i + r];
            for (int64_t j = 0; j < k; j++) {
                const double *lj = P + j * m + i;
                double u = col[j];
                for (int r = 0; r < 8; r++) acc[r] = LU_STEP(r32, acc[r], lj[r], u);
            }
            for (int r = 0; r < 8; r++) col[i + r] = acc[r];
        }
        for (; i < m; i++) {
            double x = col[i];
            for (int64_t j = 0; j < k; j++) x = LU_STEP(r32, x, P[j * m + i], col[j]);
            col[i] = x;
        }
        /* the rule in two vectorizable passes: the largest |x| and whether
         * there is a NaN, then the first position of that maximum (or the
         * last NaN, which is where the rule ends up when there are NaNs) */
        double best = -1;
        int nan = 0;
#pragma omp simd reduction(max : best) reduction(| : nan)
        for (int64_t r = k; r < m; r++) {
            double x = fabs(col[r]);
            nan |= x != x;
            best = x > best ? x : best;
        }
        int64_t piv = k;
        if (nan) {
            for (int64_t r = m - 1; r >= k; r--)
                if (isnan(col[r])) {
                    piv = r;
                    break;
                }
        } else {
            while (piv < m - 1 && !(fabs(col[piv]) == best)) piv++;
        }
        lp[k] = piv;
        if (piv != k)
            for (int64_t j = 0; j <= k; j++) {
                double t = P[j * m + k];
                P[j * m + k] = P[j * m + piv];
                P[j * m + piv] = t;
            }
        double d = col[k];
        if (!(d == 0)) {
#pragma omp simd
            for (int64_t r = k + 1; r < m; r++) col[r] = r32f(r32, col[r] / d);
        }
    }
}

LEAF static void lu_panel_steps_f64(double *P, int64_t m, int64_t w, int64_t *lp) { lu_panel_body(P, m, w, lp, false); }
LEAF static void lu_panel_steps_f32(double *P, int64_t m, int64_t w, int64_t *lp) { lu_panel_body(P, m, w, lp, true); }

static void lu_panel(lu_ctx *c, int64_t c0, int64_t c1) {
    int64_t n = c->n, m = n - c0, w = c1 - c0;
    double *P = c->panel;
    for (int64_t i = 0; i < m; i++) {
        const double *row = c->a + (c0 + i) * n + c0;
        for (int64_t j = 0; j < w; j++) P[j * m + i] = row[j];
    }
    int64_t lp[LU_BASE];
    if (c->r32) lu_panel_steps_f32(P, m, w, lp);
    else lu_panel_steps_f64(P, m, w, lp);
    for (int64_t k = 0; k < w; k++) {
        c->piv[c0 + k] = c0 + lp[k];
        if (lp[k] != k) {
            int64_t t = c->perm[c0 + k];
            c->perm[c0 + k] = c->perm[c0 + lp[k]];
            c->perm[c0 + lp[k]] = t;
        }
    }
    for (int64_t i = 0; i < m; i++) {
        double *row = c->a + (c0 + i) * n + c0;
        for (int64_t j = 0; j < w; j++) row[j] = P[j * m + i];
    }
}

/* lu_trsm's leaf for 16 rows (the usual size: the splits are multiples
 * of 16): eight columns at a time, the 16 x 8 block held in registers
 * while the unit triangle l (row stride ld) is applied, row by row in
 * increasing p as in the loop below. */
static inline __attribute__((always_inline)) void lu_trsm16_body(const double *l, double *b, int64_t ld, int64_t w,
                                                                 bool r32) {
    int64_t j0 = 0;
    for (; j0 + 8 <= w; j0 += 8) {
        double v[16][8];
#pragma GCC unroll 16
        for (int r = 0; r < 16; r++)
            for (int c = 0; c < 8; c++) v[r][c] = b[r * ld + j0 + c];
#pragma GCC unroll 16
        for (int r = 1; r < 16; r++)
#pragma GCC unroll 16
            for (int p = 0; p < r; p++) {
                double x = l[r * ld + p];
                for (int c = 0; c < 8; c++) v[r][c] = LU_STEP(r32, v[r][c], x, v[p][c]);
            }
#pragma GCC unroll 16
        for (int r = 1; r < 16; r++)
            for (int c = 0; c < 8; c++) b[r * ld + j0 + c] = v[r][c];
    }
    for (; j0 < w; j0++)
        for (int r = 1; r < 16; r++) {
            double x = b[r * ld + j0];
            for (int p = 0; p < r; p++) x = LU_STEP(r32, x, l[r * ld + p], b[p * ld + j0]);
            b[r * ld + j0] = x;
        }
}

LEAF static void lu_trsm16_f64(const double *l, double *b, int64_t ld, int64_t w) {
    lu_trsm16_body(l, b, ld, w, false);
}
LEAF static void lu_trsm16_f32(const double *l, double *b, int64_t ld, int64_t w) { lu_trsm16_body(l, b, ld, w, true); }

/* The block of rows [r0, r1), columns [j0, j1) minus l_rp u_pj for p in
 * [p0, r0) (L's columns and U's rows of the steps done), by the exact
 * update, rounded as the factorization's type. */
static void lu_update(lu_ctx *c, int64_t r0, int64_t r1, int64_t j0, int64_t j1, int64_t p0) {
    int64_t n = c->n;
    emily_xupdate u = {.m = r1 - r0,
                       .n = j1 - j0,
                       .k = r0 - p0,
                       .a = c->a + r0 * n + p0,
                       .a_rs = n,
                       .a_cs = 1,
                       .b = c->a + p0 * n + j0,
                       .b_rs = n,
                       .b_cs = 1,
                       .c = c->a + r0 * n + j0,
                       .ldc = n,
                       .subtract = true,
                       .round_f32 = c->r32};
    emi_xupdate_run(&u, &c->ws);
}

/* U's rows [r0, r1) in columns [j0, j1): each element minus l_rp u_pj for
 * p in [r0, r) in increasing p (the steps p < r0 were applied before). */
static void lu_trsm(lu_ctx *c, int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
    int64_t n = c->n, w = j1 - j0, h = r1 - r0;
    double *a = c->a;
    if (h == 16) {
        if (c->r32) lu_trsm16_f32(a + r0 * n + r0, a + r0 * n + j0, n, w);
        else lu_trsm16_f64(a + r0 * n + r0, a + r0 * n + j0, n, w);
        return;
    }
    if (h <= TRSM_BASE) {
        for (int64_t r = r0 + 1; r < r1; r++) {
            double *br = a + r * n + j0;
            for (int64_t p = r0; p < r; p++) {
                double l = a[r * n + p];
                const double *bp = a + p * n + j0;
                if (c->r32) {
#pragma omp simd
                    for (int64_t j = 0; j < w; j++) br[j] = LU_STEP(true, br[j], l, bp[j]);
                } else {
#pragma omp simd
                    for (int64_t j = 0; j < w; j++) br[j] = LU_STEP(false, br[j], l, bp[j]);
                }
            }
        }
        return;
    }
    int64_t mid = r0 + split(h);
    lu_trsm(c, r0, mid, j0, j1);
    lu_update(c, mid, r1, j0, j1, r0);
    lu_trsm(c, mid, r1, j0, j1);
}

/* Factors columns [c0, c1) over rows [c0, n); swaps of these steps are
 * applied to every column in [c0, c1) (the caller applies them outside). */
static void lu_rec(lu_ctx *c, int64_t c0, int64_t c1) {
    int64_t w = c1 - c0, n = c->n;
    if (w <= LU_BASE) {
        lu_panel(c, c0, c1);
        return;
    }
    int64_t mid = c0 + split(w);
    lu_rec(c, c0, mid);
    lu_swap_rows(c, c0, mid, mid, c1);
    lu_trsm(c, c0, mid, mid, c1);
    lu_update(c, mid, n, mid, c1, c0);
    lu_rec(c, mid, c1);
    lu_swap_rows(c, mid, c1, c0, mid);
}

bool emi_cpu_lu_blocked(double *a, int64_t n, int64_t *perm, emily_dtype w) {
    if (w != EMILY_F64 && w != EMILY_F32) return false;
    lu_ctx c = {.a = a, .n = n, .perm = perm, .r32 = w == EMILY_F32};
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    if (n == 0) return true;
    c.piv = malloc((size_t)n * sizeof *c.piv);
    c.panel = malloc((size_t)n * LU_BASE * sizeof *c.panel);
    bool ok = c.piv && c.panel && emi_xupdate_ws_init(&c.ws, n, team_size());
    if (ok) lu_rec(&c, 0, n);
    if (c.ws.buf) emi_xupdate_ws_free(&c.ws);
    free(c.piv);
    free(c.panel);
    return ok;
}

/* ---- Cholesky ------------------------------------------------------------- */

typedef struct chol_ctx {
    const double *a; /* n x n, row-major; only the lower triangle is read */
    double *l;       /* n x n: partial sums, then l, in the lower triangle */
    int64_t n;
    emily_dtype w;
    double *p, *q; /* n x CHOL_BASE column-major panels: sums/l, and a */
    emily_xupdate_ws ws;
} chol_ctx;

/* The columns of one panel, left-looking: column j first adds the terms
 * l_ik l_jk of the panel's earlier columns k (in increasing k, continuing
 * the sums over k < c0), eight rows at a time in registers, then is
 * finished: the diagonal, then the division of the rows below. P: the
 * sums (m x w column-major, rows i >= j valid), becoming l; Q: a, the
 * same layout. */
LEAF static void chol_panel_steps(double *P, const double *Q, int64_t m, int64_t w, emily_dtype t) {
    for (int64_t j = 0; j < w; j++) {
        double *col = P + j * m;
        const double *acol = Q + j * m;
        int64_t i = j;
        for (; i + 8 <= m; i += 8) {
            double acc[8];
            for (int r = 0; r < 8; r++) acc[r] = col[i + r];
            for (int64_t k = 0; k < j; k++) {
                const double *lk = P + k * m + i;
                double x = P[k * m + j];
                for (int r = 0; r < 8; r++) acc[r] = lk[r] * x + acc[r];
            }
            for (int r = 0; r < 8; r++) col[i + r] = acc[r];
        }
        for (; i < m; i++) {
            double acc = col[i];
            for (int64_t k = 0; k < j; k++) acc = P[k * m + i] * P[k * m + j] + acc;
            col[i] = acc;
        }
        double v = rnd(t, sqrt(rnd(t, acol[j] - rnd(t, col[j]))));
        col[j] = v;
        double den = rnd(t, v + EMILY_CHOLESKY_EPS);
        if (t == EMILY_F64) {
#pragma omp simd
            for (int64_t r = j + 1; r < m; r++) col[r] = (acol[r] - col[r]) / den;
        } else {
            for (int64_t r = j + 1; r < m; r++) col[r] = rnd(t, rnd(t, acol[r] - rnd(t, col[r])) / den);
        }
    }
}

/* Finishes columns [c0, c1), rows [c0, n): l's lower triangle holds the
 * sums over k < c0. */
static void chol_panel(chol_ctx *c, int64_t c0, int64_t c1) {
    int64_t n = c->n, m = n - c0, w = c1 - c0;
    double *P = c->p, *Q = c->q;
    for (int64_t i = 0; i < m; i++) {
        const double *lr = c->l + (c0 + i) * n + c0, *ar = c->a + (c0 + i) * n + c0;
        int64_t jn = imin(w, i + 1);
        for (int64_t j = 0; j < jn; j++) {
            P[j * m + i] = lr[j];
            Q[j * m + i] = ar[j];
        }
    }
    chol_panel_steps(P, Q, m, w, c->w);
    for (int64_t i = 0; i < m; i++) {
        double *lr = c->l + (c0 + i) * n + c0;
        int64_t jn = imin(w, i + 1);
        for (int64_t j = 0; j < jn; j++) lr[j] = P[j * m + i];
    }
}

static void chol_rec(chol_ctx *c, int64_t c0, int64_t c1) {
    int64_t w = c1 - c0, n = c->n;
    if (w <= CHOL_BASE) {
        chol_panel(c, c0, c1);
        return;
    }
    int64_t mid = c0 + split(w);
    chol_rec(c, c0, mid);
    /* s_ij += l_ik l_jk for k in [c0, mid), i >= j in [mid, c1) x [mid, n) */
    emily_xupdate u = {.m = n - mid,
                       .n = c1 - mid,
                       .k = mid - c0,
                       .a = c->l + mid * n + c0,
                       .a_rs = n,
                       .a_cs = 1,
                       .b = c->l + mid * n + c0,
                       .b_rs = 1,
                       .b_cs = n,
                       .c = c->l + mid * n + mid,
                       .ldc = n,
                       .subtract = false,
                       .lower = true,
                       .diag_off = 0};
    emi_xupdate_run(&u, &c->ws);
    chol_rec(c, mid, c1);
}

bool emi_cpu_cholesky_blocked(const double *a, double *l, int64_t n, emily_dtype w) {
    if (n == 0) return true;
    chol_ctx c = {.a = a, .l = l, .n = n, .w = w};
    c.p = malloc((size_t)n * 2 * CHOL_BASE * sizeof *c.p);
    bool ok = c.p && emi_xupdate_ws_init(&c.ws, n, team_size());
    if (ok) {
        c.q = c.p + n * CHOL_BASE;
        /* every sum starts at 0; the upper triangle is initialized because
         * the update computes whole tiles across the diagonal */
        memset(l, 0, (size_t)(n * n) * sizeof *l);
        chol_rec(&c, 0, n);
        /* the reference's last steps: the upper triangle is 0 * a (NaN
         * where a is not finite), then every |x| <= eps becomes 0 */
        for (int64_t i = 0; i < n; i++) {
            double *lr = l + i * n;
            const double *ar = a + i * n;
#pragma omp simd
            for (int64_t j = 0; j <= i; j++) lr[j] = fabs(lr[j]) <= EMILY_CHOLESKY_EPS ? 0 : lr[j];
            if (w == EMILY_F64) {
#pragma omp simd
                for (int64_t j = i + 1; j < n; j++) {
                    double x = 0.0 * ar[j];
                    lr[j] = fabs(x) <= EMILY_CHOLESKY_EPS ? 0 : x;
                }
            } else {
                for (int64_t j = i + 1; j < n; j++) {
                    double x = rnd(w, 0.0 * ar[j]);
                    lr[j] = fabs(x) <= EMILY_CHOLESKY_EPS ? 0 : x;
                }
            }
        }
    }
    if (c.ws.buf) emi_xupdate_ws_free(&c.ws);
    free(c.p);
    return ok;
}
