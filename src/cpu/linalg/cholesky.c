/* CPU kernel: cholesky, as Nx.LinAlg.Cholesky.cholesky_matrix computes
 * it (see reference.h): l_ij = (a_ij - sum_k l_ik conj(l_jk)) / (l_jj +
 * eps), sums from 0 in increasing k, rounded to the work type after each
 * operation; entries with |x| <= eps become 0. Large real matrices go
 * blocked (blocked.c: the same bits). */
#include <math.h>
#include "cpu/linalg/blocked.h"
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/reference.h"

static void cholesky_real(const double *a, double *l, int64_t n, emily_dtype w) {
    /* blocked for large matrices (same bits; falls back when out of memory) */
    if (n >= emi_cpu_linalg_block_min() && emi_cpu_cholesky_blocked(a, l, n, w)) return;
    for (int64_t i = 0; i < n * n; i++) l[i] = rnd(w, 0.0 * a[i]);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            double sum = 0;
            for (int64_t k = 0; k < j; k++) sum = l[i * n + k] * l[j * n + k] + sum;
            sum = rnd(w, sum);
            double v;
            if (i == j) v = rnd(w, sqrt(rnd(w, a[i * n + i] - sum)));
            else v = rnd(w, rnd(w, a[i * n + j] - sum) / rnd(w, l[j * n + j] + EMILY_CHOLESKY_EPS));
            l[i * n + j] = v;
        }
    for (int64_t i = 0; i < n * n; i++)
        if (fabs(l[i]) <= EMILY_CHOLESKY_EPS) l[i] = 0;
}

static void cholesky_complex(const zd *a, zd *l, int64_t n, emily_dtype w) {
    for (int64_t i = 0; i < n * n; i++) l[i] = zrnd(w, zmul((zd){0, 0}, a[i]));
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) {
            zd sum = {0, 0};
            for (int64_t k = 0; k < j; k++) sum = zadd(zmul(l[i * n + k], zconj(l[j * n + k])), sum);
            sum = zrnd(w, sum);
            zd v;
            if (i == j) {
                v = zrnd(w, zsqrt(zrnd(w, zsub(a[i * n + i], sum))));
            } else {
                zd den = zrnd(w, zadd(l[j * n + j], (zd){EMILY_CHOLESKY_EPS, 0}));
                v = zrnd(w, zdiv(zrnd(w, zsub(a[i * n + j], sum)), den));
            }
            l[i * n + j] = v;
        }
    for (int64_t i = 0; i < n * n; i++)
        if (rnd(w, zabs(l[i])) <= EMILY_CHOLESKY_EPS) l[i] = (zd){0, 0};
}

emily_status emi_cpu_linalg_cholesky(emily_tensor *l, const emily_tensor *a, emily_dtype w) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    bool cx = a->dtype == EMILY_C128;
    const char *src = emily_tensor_base(a);
    char *dst = emily_tensor_base(l);
    size_t es = cx ? sizeof(zd) : sizeof(double);
#pragma omp parallel for if (batches > 1 && batches * nn * n > 100000) schedule(dynamic)
    for (int64_t b = 0; b < batches; b++) {
        if (cx) cholesky_complex((const zd *)(src + (size_t)(b * nn) * es), (zd *)(dst + (size_t)(b * nn) * es), n, w);
        else
            cholesky_real((const double *)(src + (size_t)(b * nn) * es), (double *)(dst + (size_t)(b * nn) * es), n, w);
    }
    return EMILY_OK;
}
