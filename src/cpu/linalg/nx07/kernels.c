/* The CPU engine's EMILY_LINALG_REFERENCE_NX07 kernels over tensors:
 * Nx 0.7's Matrix.lu and Matrix.eigh (lu.c, eigh.c in this folder)
 * batched over the leading axes, and determinant built on that lu as
 * Nx.LinAlg.determinant builds it. Inputs are wide
 * (f64 or c128) holding the input tensor's own values, as Nx 0.7's
 * BinaryBackend reads them; outputs are wide and the op layer rounds
 * them to the output type, as Matrix's matrix_to_binary writes them. */
#include <stdlib.h>
#include <string.h>
#include "cpu/linalg/determinant.h"
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/nx07/nx07.h"
#include "cpu/linalg/reference.h"

static int64_t batches_of(const emily_tensor *t, int64_t per) { return per > 0 ? t->size / per : 0; }

/* One lu per matrix into scratch: a copy of the matrix (pivoted in
 * place), perm and a row. */
typedef struct lu_scratch {
    void *a;
    int64_t *perm;
    char *row;
} lu_scratch;

static bool lu_scratch_init(lu_scratch *s, int64_t n, size_t es) {
    s->a = malloc((size_t)(n * n) * es + 1);
    s->perm = malloc((size_t)n * sizeof *s->perm + 1);
    s->row = malloc((size_t)n * es + 1);
    return s->a && s->perm && s->row;
}

static void lu_scratch_free(lu_scratch *s) {
    free(s->a);
    free(s->perm);
    free(s->row);
}

static void lu_one(const void *src, int64_t n, double eps, bool cx, lu_scratch *s, void *l, void *u) {
    size_t es = cx ? sizeof(zd) : sizeof(double);
    memcpy(s->a, src, (size_t)(n * n) * es);
    if (cx) emi_cpu_nx07_lu_complex(s->a, n, eps, s->perm, l, u, s->row);
    else emi_cpu_nx07_lu_real(s->a, n, eps, s->perm, l, u, s->row);
}

emily_status emi_cpu_nx07_lu(emily_tensor *p, emily_tensor *l, emily_tensor *u, const emily_tensor *a, double eps) {
    int64_t n = a->shape[a->rank - 1], nn = n * n, batches = batches_of(a, nn);
    bool cx = a->dtype == EMILY_C128;
    size_t es = cx ? sizeof(zd) : sizeof(double);
    const char *src = emily_tensor_base(a);
    char *ld = emily_tensor_base(l), *ud = emily_tensor_base(u);
    double *pd = emily_tensor_base(p);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        lu_scratch s;
        if (!lu_scratch_init(&s, n, es)) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (failed) continue;
            lu_one(src + (size_t)(b * nn) * es, n, eps, cx, &s, ld + (size_t)(b * nn) * es, ud + (size_t)(b * nn) * es);
            /* Nx returns transpose(p): A = P L U */
            double *pb = pd + b * nn;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) pb[i * n + j] = s.perm[j] == i ? 1.0 : 0.0;
        }
        lu_scratch_free(&s);
    }
    if (failed)
        return emily_error(EMILY_ERR_MEMORY, "lu: out of host memory for a %lldx%lld matrix", (long long)n,
                           (long long)n);
    return EMILY_OK;
}

/* Nx.LinAlg.determinant_NbyN on Nx 0.7's lu (its default eps 1.0e-10),
 * u's diagonal as lu writes it (type w). */
static zd det_one(const void *src, int64_t n, emily_dtype w, bool cx, lu_scratch *s, void *l, void *u) {
    lu_one(src, n, 1.0e-10, cx, s, l, u);
    for (int64_t i = 0; i < n; i++) {
        if (cx) {
            zd *d = (zd *)u + i * n + i;
            *d = zrnd(w, *d);
        } else {
            double *d = (double *)u + i * n + i;
            *d = rnd(w, *d);
        }
    }
    return emi_cpu_det_from_lu(u, s->perm, n, w, cx);
}

emily_status emi_cpu_nx07_determinant(emily_tensor *det, const emily_tensor *a, emily_dtype w) {
    int64_t n = a->shape[a->rank - 1], nn = n * n, batches = det->size;
    bool cx = a->dtype == EMILY_C128;
    size_t es = cx ? sizeof(zd) : sizeof(double);
    const char *src = emily_tensor_base(a);
    char *out = emily_tensor_base(det);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : failed)
    {
        lu_scratch s;
        void *l = malloc((size_t)nn * es + 1), *u = malloc((size_t)nn * es + 1);
        if (!lu_scratch_init(&s, n, es) || !l || !u) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (failed) continue;
            zd r = det_one(src + (size_t)(b * nn) * es, n, w, cx, &s, l, u);
            if (cx) ((zd *)out)[b] = r;
            else ((double *)out)[b] = r.re;
        }
        lu_scratch_free(&s);
        free(l);
        free(u);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "determinant: out of host memory");
    return EMILY_OK;
}

emily_status emi_cpu_nx07_eigh(emily_tensor *w, emily_tensor *v, const emily_tensor *a, double eps, int64_t max_iter) {
    int64_t n = a->shape[a->rank - 1], nn = n * n, batches = batches_of(a, nn);
    bool cx = a->dtype == EMILY_C128;
    const char *src = emily_tensor_base(a);
    char *wd = emily_tensor_base(w), *vd = emily_tensor_base(v);
    int result = NX07_OK;
#pragma omp parallel if (batches > 1 && batches * nn * n > 100000) reduction(| : result)
    {
        double *wr = malloc((size_t)n * sizeof(double) + 1);
        if (!wr) result |= NX07_NO_MEMORY;
#pragma omp for schedule(dynamic)
        for (int64_t b = 0; b < batches; b++) {
            if (result) continue;
            if (cx) {
                result |= emi_cpu_nx07_eigh_complex((const zd *)src + b * nn, n, eps, max_iter, wr, (zd *)vd + b * nn);
                /* the eigenvalues are real numbers written in a complex type */
                for (int64_t i = 0; i < n; i++) ((zd *)wd)[b * n + i] = zr(wr[i]);
            } else {
                result |= emi_cpu_nx07_eigh_real((const double *)src + b * nn, n, eps, max_iter, (double *)wd + b * n,
                                                 (double *)vd + b * nn);
            }
        }
        free(wr);
    }
    if (result & NX07_NO_MEMORY) return emily_error(EMILY_ERR_MEMORY, "eigh: out of host memory");
    if (result & NX07_NOT_HERMITIAN)
        return emily_error(EMILY_ERR_ARGUMENT,
                           "eigh: matrix must be hermitian, a matrix is hermitian iff X = adjoint(X)");
    return EMILY_OK;
}
