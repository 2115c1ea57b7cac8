/* CPU kernel: determinant, as Nx.LinAlg.determinant computes it:
 * explicit products for 2 x 2 and 3 x 3 matrices (integers wrapping in
 * their type), the product of LU's diagonal otherwise (see reference.h
 * for the rounding). */
#include <stdlib.h>
#include <string.h>
#include "cpu/element_access.h"
#include "cpu/linalg/determinant.h"
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/reference.h"

/* Element i of a contiguous tensor of any type: as a double (real part),
 * its imaginary part, or its integer bits (two's complement, 64-bit). */
static double read_re(const emily_tensor *t, int64_t i, double *im) {
    const char *p = (const char *)emily_tensor_base(t) + (size_t)i * emily_dtype_size(t->dtype);
    *im = we_load_im(t->dtype, p);
    return we_load_f(t->dtype, p);
}

static uint64_t read_bits(const emily_tensor *t, int64_t i) {
    const char *p = (const char *)emily_tensor_base(t) + (size_t)i * emily_dtype_size(t->dtype);
    return we_load_int(t->dtype, p);
}

/* 64-bit two's complement bits wrapped to the integer type t: written as
 * a t and read back as bits (wrap_bits) or as a double (wrap_int: the
 * reference writes the exact integer, then `* 1.0` makes it a float). */
static uint64_t wrap_bits(emily_dtype t, uint64_t v) {
    char e[16]; /* room for any dtype */
    we_store_int(t, v, e);
    return we_load_int(t, e);
}
static double wrap_int(emily_dtype t, uint64_t v) {
    char e[16]; /* room for any dtype */
    we_store_int(t, v, e);
    return we_load_f(t, e);
}

/* The index triples of determinant_2by2/3by3's diagonal products, each
 * multiplied as product/2 does: acc = x_k * acc from acc = 1. */
static const int det2_pos[1][2] = {{0, 3}}, det2_neg[1][2] = {{1, 2}};
static const int det3_pos[3][3] = {{0, 4, 8}, {1, 5, 6}, {2, 3, 7}};
static const int det3_neg[3][3] = {{2, 4, 6}, {1, 3, 8}, {0, 5, 7}};

static void det_small_int(const emily_tensor *a, int64_t base, int n, double *out) {
    emily_dtype t = a->dtype;
    uint64_t res = 0;
    for (int sgn = 0; sgn < 2; sgn++)
        for (int d = 0; d < (n == 2 ? 1 : 3); d++) {
            uint64_t prod = 1;
            for (int k = 0; k < n; k++) {
                int idx = n == 2 ? (sgn ? det2_neg : det2_pos)[d][k] : (sgn ? det3_neg : det3_pos)[d][k];
                prod = read_bits(a, base + idx) * prod;
            }
            prod = wrap_bits(t, prod);
            if (sgn == 0 && d == 0) res = prod;
            else res = wrap_bits(t, sgn ? res - prod : res + prod);
        }
    *out = wrap_int(t, res);
}

static void det_small_float(const emily_tensor *a, int64_t base, int n, emily_dtype w, bool cx, zd *out) {
    zd res = {0, 0};
    for (int sgn = 0; sgn < 2; sgn++)
        for (int d = 0; d < (n == 2 ? 1 : 3); d++) {
            zd prod = {0, 0};
            for (int k = 0; k < n; k++) {
                int idx = n == 2 ? (sgn ? det2_neg : det2_pos)[d][k] : (sgn ? det3_neg : det3_pos)[d][k];
                zd x;
                x.re = read_re(a, base + idx, &x.im);
                if (k == 0) prod = x;
                else if (cx) prod = zmul(x, prod);
                else prod.re = x.re * prod.re;
            }
            prod = zrnd(w, prod);
            if (sgn == 0 && d == 0) res = prod;
            else res = zrnd(w, sgn ? zsub(res, prod) : zadd(res, prod));
        }
    *out = res;
}

/* The end of Nx.LinAlg.determinant_NbyN from lu's u (n x n, values of
 * type w, real or complex) and permutation (perm[j]: the input row in
 * row j): diag = take_diagonal(l) * take_diagonal(u) with l's unit
 * diagonal (1 + 0i for complex), product(diag) in double from the integer
 * 1 (`x * acc`), rounded once, times the permutation's sign (an integer:
 * Complex.new(sign, 0) for complex), 0 where a diagonal entry is 0. The
 * complex products are Complex.multiply's, so the signs of zero parts
 * come out as Nx's. */
zd emi_cpu_det_from_lu(const void *u, const int64_t *perm, int64_t n, emily_dtype w, bool cx) {
    int64_t inversions = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i + 1; j < n; j++) inversions += perm[i] > perm[j];
    double sign = inversions % 2 ? -1.0 : 1.0;
    bool zero = false;
    zd prod = {1, 0};
    for (int64_t i = 0; i < n; i++) {
        zd d;
        if (cx) d = zrnd(w, zmul((zd){1, 0}, ((const zd *)u)[i * n + i]));
        else d = (zd){((const double *)u)[i * n + i], 0};
        if (cx ? zzero(d) : d.re == 0) zero = true;
        if (cx) prod = zmul(d, prod);
        else prod.re = d.re * prod.re;
    }
    if (zero) return (zd){0, 0};
    prod = zrnd(w, prod);
    if (!cx) return (zd){sign * prod.re, 0};
    return zrnd(w, zmul((zd){sign, 0}, prod));
}

/* determinant_NbyN on Nx 0.8+'s LU of one matrix of a. */
static int det_lu(const emily_tensor *a, int64_t base, int64_t n, emily_dtype w, bool cx, void *work, int64_t *perm,
                  zd *out) {
    if (cx) {
        zd *m = work;
        for (int64_t i = 0; i < n * n; i++) {
            m[i].re = read_re(a, base + i, &m[i].im);
            m[i] = zrnd(w, m[i]);
        }
        emi_linalg_lu_complex(m, n, w, perm);
    } else {
        double *m = work, im;
        for (int64_t i = 0; i < n * n; i++) m[i] = rnd(w, read_re(a, base + i, &im));
        emi_linalg_lu_real(m, n, w, perm);
    }
    *out = emi_cpu_det_from_lu(work, perm, n, w, cx);
    return 0;
}

emily_status emi_cpu_linalg_determinant(emily_tensor *det, const emily_tensor *a, emily_dtype w) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = det->size;
    bool cx = emily_dtype_is_complex(w);
    bool integer = emily_dtype_is_integer(a->dtype);
    char *out = emily_tensor_base(det);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        size_t es = cx ? sizeof(zd) : sizeof(double);
        void *work = (n == 2 || n == 3) ? NULL : malloc((size_t)nn * es + 1);
        int64_t *perm = (n == 2 || n == 3) ? NULL : malloc((size_t)n * sizeof *perm + 1);
        if (n != 2 && n != 3 && (!work || !perm)) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            zd r = {0, 0};
            if ((n == 2 || n == 3) && integer) det_small_int(a, b * nn, (int)n, &r.re);
            else if (n == 2 || n == 3) det_small_float(a, b * nn, (int)n, w, cx, &r);
            else if (work && perm) det_lu(a, b * nn, n, w, cx, work, perm, &r);
            if (cx) ((zd *)out)[b] = r;
            else ((double *)out)[b] = r.re;
        }
        free(work);
        free(perm);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "determinant: out of host memory");
    return EMILY_OK;
}
