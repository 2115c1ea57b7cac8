/* CPU kernel: lu, as Nx.LinAlg.LU.lu_matrix computes it (see
 * reference.h): partial pivoting by Nx.argmax's rule, the multipliers
 * and updates rounded to the work type after each operation. Large real
 * matrices go blocked (blocked.c: the same bits). lu_real and lu_complex
 * also serve solve.c and determinant.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/linalg/blocked.h"
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/reference.h"

/* Nx.argmax's comparison (tie_break: :low): the first maximum, except
 * that a NaN always takes over. */
static inline bool argmax_takes(double x, double cur, bool first) {
    return first || isnan(x) || (!isnan(cur) && x > cur);
}

/* The pivot row of column k: Nx.argmax of the column's magnitudes MAG
 * (in the work type w), the rows above k counting as -infinity. */
#define DEFINE_PIVOT(NAME, T, MAG)                                         \
    static int64_t NAME(const T *a, int64_t n, int64_t k, emily_dtype w) { \
        (void)w;                                                           \
        int64_t piv = 0;                                                   \
        double best = 0;                                                   \
        for (int64_t i = 0; i < n; i++) {                                  \
            double x = i >= k ? MAG(a[i * n + k]) : -INFINITY;             \
            if (argmax_takes(x, best, i == 0)) {                           \
                piv = i;                                                   \
                best = x;                                                  \
            }                                                              \
        }                                                                  \
        return piv;                                                        \
    }
#define MAG_REAL(x) fabs(x)
#define MAG_COMPLEX(x) rnd(w, zabs(x))
DEFINE_PIVOT(pivot_real, double, MAG_REAL)
DEFINE_PIVOT(pivot_complex, zd, MAG_COMPLEX)

/* Swaps rows k and piv of the n x n matrix a (elements of es bytes) and
 * their entries of perm. */
static void swap_rows(void *a, int64_t n, size_t es, int64_t *perm, int64_t k, int64_t piv) {
    if (piv == k) return;
    unsigned char *x = (unsigned char *)a + (size_t)(k * n) * es;
    unsigned char *y = (unsigned char *)a + (size_t)(piv * n) * es;
    for (size_t b = 0; b < (size_t)n * es; b++) {
        unsigned char t = x[b];
        x[b] = y[b];
        y[b] = t;
    }
    int64_t t = perm[k];
    perm[k] = perm[piv];
    perm[piv] = t;
}

void emi_linalg_lu_real(double *a, int64_t n, emily_dtype w, int64_t *perm) {
    /* blocked for large f64 and f32 matrices (same bits; it allocates all
     * its scratch before touching a, so out of memory falls back to here) */
    if (n >= emi_cpu_linalg_block_min() && emi_cpu_lu_blocked(a, n, perm, w)) return;
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t k = 0; k < n; k++) {
        swap_rows(a, n, sizeof *a, perm, k, pivot_real(a, n, k, w));
        double d = a[k * n + k];
        if (!(d == 0))
            for (int64_t i = k + 1; i < n; i++) a[i * n + k] = rnd(w, a[i * n + k] / d);
        if (k < n - 1)
            for (int64_t i = k + 1; i < n; i++) {
                double l = a[i * n + k], *ai = a + i * n, *ak = a + k * n;
                /* the rounding specialised per type so the loop vectorizes */
                if (w == EMILY_F64) {
#pragma omp simd
                    for (int64_t j = k + 1; j < n; j++) ai[j] = ai[j] - l * ak[j];
                } else if (w == EMILY_F32) {
#pragma omp simd
                    for (int64_t j = k + 1; j < n; j++) ai[j] = (double)(float)(ai[j] - (double)(float)(l * ak[j]));
                } else
                    for (int64_t j = k + 1; j < n; j++) ai[j] = rnd(w, ai[j] - rnd(w, l * ak[j]));
            }
    }
}

/* Nx's complex LU updates with Nx.outer(l_col, adjoint(u_row)): outer
 * conjugates its second operand for complex types and adjoint conjugates
 * it too, so the two cancel and the update is the plain product l * u_kj
 * (Complex.multiply in that operand order). */
void emi_linalg_lu_complex(zd *a, int64_t n, emily_dtype w, int64_t *perm) {
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t k = 0; k < n; k++) {
        swap_rows(a, n, sizeof *a, perm, k, pivot_complex(a, n, k, w));
        zd d = a[k * n + k];
        if (!zzero(d))
            for (int64_t i = k + 1; i < n; i++) a[i * n + k] = zrnd(w, zdiv(a[i * n + k], d));
        if (k < n - 1)
            for (int64_t i = k + 1; i < n; i++) {
                zd l = a[i * n + k];
                for (int64_t j = k + 1; j < n; j++)
                    a[i * n + j] = zrnd(w, zsub(a[i * n + j], zrnd(w, zmul(l, a[k * n + j]))));
            }
    }
}

emily_status emi_cpu_linalg_lu(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a,
                               emily_dtype w) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    bool cx = a->dtype == EMILY_C128;
    size_t es = cx ? sizeof(zd) : sizeof(double);
    const char *src = emily_tensor_base(a);
    double *pd = emily_tensor_base(p);
    char *ld = emily_tensor_base(l), *ud = emily_tensor_base(u);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        void *work = malloc((size_t)nn * es + 1);
        int64_t *perm = malloc((size_t)n * sizeof *perm + 1);
        if (!work || !perm) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (!work || !perm) continue;
            memcpy(work, src + (size_t)(b * nn) * es, (size_t)nn * es);
            if (cx) emi_linalg_lu_complex(work, n, w, perm);
            else emi_linalg_lu_real(work, n, w, perm);
            double *pb = pd + b * nn;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) pb[i * n + j] = perm[j] == i ? 1.0 : 0.0;
            if (cx) {
                zd *lb = (zd *)ld + b * nn, *ub = (zd *)ud + b * nn, *wk = work;
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < n; j++) {
                        zd x = wk[i * n + j], z = {0, 0}, one = {1, 0};
                        /* l = tril(a, k: -1) + eye: the + 0 turns -0 into +0 */
                        lb[i * n + j] = i > j ? zadd(x, z) : i == j ? one : z;
                        ub[i * n + j] = i <= j ? x : z;
                    }
            } else {
                double *lb = (double *)ld + b * nn, *ub = (double *)ud + b * nn, *wk = work;
                for (int64_t i = 0; i < n; i++)
                    for (int64_t j = 0; j < n; j++) {
                        double x = wk[i * n + j];
                        /* l = tril(a, k: -1) + eye: the + 0 turns -0 into +0 */
                        lb[i * n + j] = i > j ? x + 0.0 : i == j ? 1.0 : 0.0;
                        ub[i * n + j] = i <= j ? x : 0.0;
                    }
            }
        }
        free(work);
        free(perm);
    }
    if (failed)
        return emily_error(EMILY_ERR_MEMORY, "lu: out of host memory for a %lldx%lld matrix", (long long)n,
                           (long long)n);
    return EMILY_OK;
}
