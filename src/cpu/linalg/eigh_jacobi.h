/* The body of Nx.LinAlg.BlockEigh (see eigh.c), written once for real
 * and for complex (Hermitian) matrices: eigh.c includes it twice, with
 * the element type and its arithmetic defined as below, and it defines
 * one instance of the Jacobi method, EIGH_NAME(eigh). No include guard:
 * that is the point.
 *
 *   EIGH_S             the element type (double, or zd)
 *   EIGH_NAME(x)       the instance's name for x
 *   EIGH_RND(x)        an element rounded to the work type w (parts, for
 *                      complex: w is then the part type)
 *   EIGH_MUL, EIGH_ADD, EIGH_SUB, EIGH_CONJ    the arithmetic
 *   EIGH_FROM_REAL(x)  a real number as an element (Complex.new(x, 0))
 *   EIGH_RE(x)         an element's real part
 *   EIGH_MAG(x)        |x| as Nx computes it in w (Complex.abs, rounded)
 *   EIGH_ZERO          the element 0
 *
 * Each macro uses the work type `w` of the function it appears in. For
 * real elements every expression is the plain arithmetic of the real
 * algorithm, so the two instances keep their own bits. */

/* The four k x k blocks of the matrix and of the eigenvector matrix,
 * and the rotation of a sweep step. */
typedef struct EIGH_NAME(jacobi) {
    int64_t k;
    emily_dtype w; /* complex: the part type */
    EIGH_S *tl, *tr, *bl, *br, *vtl, *vtr, *vbl, *vbr, *tmp, *s;
    double *c, *rt1, *rt2;
} EIGH_NAME(jacobi);

/* calc_rot on the diagonals of tl, tr and br: c, s, rt1 and rt2 for
 * every i (defined by eigh.c for each instance). */
static void EIGH_NAME(calc_rot)(EIGH_NAME(jacobi) * J);

/* sum(|tl|^2 + |tr|^2 + |bl|^2 + |br|^2), the diagonals of tl and br
 * left out when `off` (put_diagonal(.., 0)). */
static double EIGH_NAME(sq_norm)(const EIGH_NAME(jacobi) * J, bool off) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    double acc = 0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            int64_t at = i * k + j;
            EIGH_S tl = off && i == j ? EIGH_ZERO : J->tl[at], br = off && i == j ? EIGH_ZERO : J->br[at];
            double e = rnd(w, rnd(w, sq(EIGH_MAG(tl))) + rnd(w, sq(EIGH_MAG(J->tr[at]))));
            e = rnd(w, e + rnd(w, sq(EIGH_MAG(J->bl[at]))));
            e = rnd(w, e + rnd(w, sq(EIGH_MAG(br))));
            acc = e + acc;
        }
    return rnd(w, acc);
}

/* {top, bottom} = {top c - bottom conj(s), top s + bottom c}: the row
 * rotation (c, s indexed by row). */
static void EIGH_NAME(rotate_rows)(const EIGH_NAME(jacobi) * J, EIGH_S *top, EIGH_S *bottom) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    for (int64_t i = 0; i < k; i++) {
        EIGH_S c = EIGH_FROM_REAL(J->c[i]), s = J->s[i], sc = EIGH_CONJ(s);
        for (int64_t j = 0; j < k; j++) {
            EIGH_S x = top[i * k + j], y = bottom[i * k + j];
            top[i * k + j] = EIGH_RND(EIGH_SUB(EIGH_RND(EIGH_MUL(x, c)), EIGH_RND(EIGH_MUL(y, sc))));
            bottom[i * k + j] = EIGH_RND(EIGH_ADD(EIGH_RND(EIGH_MUL(x, s)), EIGH_RND(EIGH_MUL(y, c))));
        }
    }
}

/* {left, right} = {left c - right s, left conj(s) + right c}: the column
 * rotation (c, s indexed by column). */
static void EIGH_NAME(rotate_cols)(const EIGH_NAME(jacobi) * J, EIGH_S *left, EIGH_S *right) {
    int64_t k = J->k;
    emily_dtype w = J->w;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            EIGH_S c = EIGH_FROM_REAL(J->c[j]), s = J->s[j], sc = EIGH_CONJ(s);
            EIGH_S x = left[i * k + j], y = right[i * k + j];
            left[i * k + j] = EIGH_RND(EIGH_SUB(EIGH_RND(EIGH_MUL(x, c)), EIGH_RND(EIGH_MUL(y, s))));
            right[i * k + j] = EIGH_RND(EIGH_ADD(EIGH_RND(EIGH_MUL(x, sc)), EIGH_RND(EIGH_MUL(y, c))));
        }
}

/* permute_rows_in_col: top' = [top[0], bottom[0], top[1..k-2]],
 * bottom' = [bottom[1..k-1], top[k-1]]. */
static void EIGH_NAME(permute_rows)(const EIGH_NAME(jacobi) * J, EIGH_S *top, EIGH_S *bottom) {
    int64_t k = J->k;
    if (k == 1) return;
    EIGH_S *t = J->tmp;
    size_t row = (size_t)k * sizeof(EIGH_S);
    memcpy(t, top, (size_t)(k * k) * sizeof(EIGH_S));
    memcpy(top + k, bottom, row); /* bottom[0] */
    for (int64_t i = 2; i < k; i++) memcpy(top + i * k, t + (i - 1) * k, row);
    for (int64_t i = 0; i + 1 < k; i++) memcpy(bottom + i * k, bottom + (i + 1) * k, row);
    memcpy(bottom + (k - 1) * k, t + (k - 1) * k, row);
}

/* permute_cols_in_row: left' = [left[:,0], right[:,0], left[:,1..k-2]],
 * right' = [right[:,1..k-1], left[:,k-1]]. */
static void EIGH_NAME(permute_cols)(const EIGH_NAME(jacobi) * J, EIGH_S *left, EIGH_S *right) {
    int64_t k = J->k;
    if (k == 1) return;
    EIGH_S *t = J->tmp;
    for (int64_t i = 0; i < k; i++) {
        EIGH_S *l = left + i * k, *r = right + i * k;
        memcpy(t, l, (size_t)k * sizeof(EIGH_S));
        l[1] = r[0];
        for (int64_t j = 2; j < k; j++) l[j] = t[j - 1];
        for (int64_t j = 0; j + 1 < k; j++) r[j] = r[j + 1];
        r[k - 1] = t[k - 1];
    }
}

/* n steps of rotations and tournament permutations. */
static void EIGH_NAME(sweep)(EIGH_NAME(jacobi) * J, int64_t n) {
    int64_t k = J->k;
    for (int64_t step = 0; step < n; step++) {
        EIGH_NAME(calc_rot)(J);
        EIGH_NAME(rotate_rows)(J, J->tl, J->bl);
        EIGH_NAME(rotate_rows)(J, J->tr, J->br);
        EIGH_NAME(rotate_cols)(J, J->tl, J->tr);
        EIGH_NAME(rotate_cols)(J, J->bl, J->br);
        for (int64_t i = 0; i < k; i++) {
            J->tl[i * k + i] = EIGH_FROM_REAL(J->rt1[i]);
            J->tr[i * k + i] = EIGH_ZERO;
            J->bl[i * k + i] = EIGH_ZERO;
            J->br[i * k + i] = EIGH_FROM_REAL(J->rt2[i]);
        }
        EIGH_NAME(permute_cols)(J, J->tl, J->tr);
        EIGH_NAME(permute_cols)(J, J->bl, J->br);
        EIGH_NAME(permute_rows)(J, J->tl, J->bl);
        EIGH_NAME(permute_rows)(J, J->tr, J->br);
        EIGH_NAME(rotate_rows)(J, J->vtl, J->vbl);
        EIGH_NAME(rotate_rows)(J, J->vtr, J->vbr);
        EIGH_NAME(permute_rows)(J, J->vtl, J->vbl);
        EIGH_NAME(permute_rows)(J, J->vtr, J->vbr);
    }
}

/* a: n x n (the input's values, as elements); w_out: n (complex: the
 * diagonal the reference ends with, whose imaginary parts are what the
 * rotations left), v_out: n x n, the adjoint of the accumulated
 * rotations; ws: emi_linalg_eigh_scratch(n) elements. */
static void EIGH_NAME(eigh)(const EIGH_S *a, int64_t n, emily_dtype w, double eps, int64_t max_iter, EIGH_S *w_out,
                            EIGH_S *v_out, EIGH_S *ws) {
    if (n == 1) {
        w_out[0] = EIGH_FROM_REAL(rnd(w, EIGH_RE(a[0]))); /* take_diagonal(real(matrix)) */
        v_out[0] = EIGH_FROM_REAL(1);
        return;
    }
    int64_t k = (n + 1) / 2, kk = k * k;
    EIGH_NAME(jacobi) J = {.k = k, .w = w};
    EIGH_S **blocks[8] = {&J.tl, &J.tr, &J.bl, &J.br, &J.vtl, &J.vtr, &J.vbl, &J.vbr};
    for (int b = 0; b < 8; b++) *blocks[b] = ws + b * kk;
    J.tmp = ws + 8 * kk;
    J.s = J.tmp + kk;
    J.c = (double *)(J.s + k);
    J.rt1 = J.c + k;
    J.rt2 = J.rt1 + k;
    EIGH_S *wv = (EIGH_S *)(J.rt2 + k), *vv = wv + 2 * k; /* 2k and 2k x 2k */
    int64_t *order = (int64_t *)(vv + 4 * kk);
    /* the blocks of as_type(matrix), odd sizes padded with a zero row and column */
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            int64_t ri = k + i, cj = k + j;
            J.tl[i * k + j] = EIGH_RND(a[i * n + j]);
            J.tr[i * k + j] = cj < n ? EIGH_RND(a[i * n + cj]) : EIGH_ZERO;
            J.bl[i * k + j] = ri < n ? EIGH_RND(a[ri * n + j]) : EIGH_ZERO;
            J.br[i * k + j] = ri < n && cj < n ? EIGH_RND(a[ri * n + cj]) : EIGH_ZERO;
            J.vtl[i * k + j] = J.vbr[i * k + j] = EIGH_FROM_REAL(i == j ? 1 : 0);
            J.vtr[i * k + j] = J.vbl[i * k + j] = EIGH_ZERO;
        }
    /* off_norm > eps ** 2 * frob_norm: eps ** 2 folded in f32, the
     * product in the work type */
    double eps2 = f32c(sq(f32c(eps)));
    double frob = EIGH_NAME(sq_norm)(&J, false), off = EIGH_NAME(sq_norm)(&J, true);
    for (int64_t it = 0; off > rnd(w, eps2 * frob) && it < max_iter; it++) {
        EIGH_NAME(sweep)(&J, n);
        frob = EIGH_NAME(sq_norm)(&J, false);
        off = EIGH_NAME(sq_norm)(&J, true);
    }
    /* w = [diag(tl), diag(br)]; v = adjoint([[vtl, vtr], [vbl, vbr]]) */
    int64_t m2 = 2 * k;
    for (int64_t i = 0; i < k; i++) {
        wv[i] = J.tl[i * k + i];
        wv[k + i] = J.br[i * k + i];
    }
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < k; j++) {
            /* vv[r][c] = conj(V[c][r]), V = [[vtl, vtr], [vbl, vbr]] */
            vv[j * m2 + i] = EIGH_CONJ(J.vtl[i * k + j]);
            vv[(k + j) * m2 + i] = EIGH_CONJ(J.vtr[i * k + j]);
            vv[j * m2 + k + i] = EIGH_CONJ(J.vbl[i * k + j]);
            vv[(k + j) * m2 + k + i] = EIGH_CONJ(J.vbr[i * k + j]);
        }
    /* trim the padding, then argsort(|w|, :desc) (a stable merge sort:
     * ties keep their order; NaN first) */
    for (int64_t i = 0; i < n; i++) order[i] = i;
    for (int64_t i = 1; i < n; i++) {
        int64_t x = order[i], j = i;
        double ax = EIGH_MAG(wv[x]);
        while (j > 0) {
            double ay = EIGH_MAG(wv[order[j - 1]]);
            bool before = isnan(ax) ? !isnan(ay) : (!isnan(ay) && ax > ay);
            if (!before) break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    double eps32 = f32c(eps);
    for (int64_t i = 0; i < n; i++) {
        EIGH_S e = wv[order[i]];
        w_out[i] = EIGH_MAG(e) <= eps32 ? EIGH_ZERO : e;
    }
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < n; c++) {
            EIGH_S e = vv[r * m2 + order[c]];
            v_out[r * n + c] = EIGH_MAG(e) <= eps32 ? EIGH_ZERO : e;
        }
}
