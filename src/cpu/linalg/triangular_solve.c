/* CPU kernel: triangular_solve, as Nx.BinaryBackend.Matrix.ts computes
 * it: substitution in double precision on a matrix that has been
 * conjugated, transposed and reversed so that it is always a forward
 * substitution; complex arithmetic as Elixir's Complex library's
 * (core/triangular_solve_rules.h, shared with the CUDA engine). */
#include <stdlib.h>
#include "core/triangular_solve_rules.h"
#include "cpu/linalg/linalg.h"
#include "cpu/linalg/reference.h"

/* Forward substitution on all right-hand sides at once (the loop over
 * columns innermost, where it vectorizes); each column's operations, in
 * their order, are those of core/triangular_solve_rules.h, which the CUDA
 * engine's exact kernel runs one column per thread. y: n x ncols scratch,
 * acc: ncols scratch. */
#define TS_M_REAL(p, v) ((void)(p), (v))
#define TS_ZERO_REAL 0.0
#define TS_ZERO_COMPLEX emily_cd_make(0, 0)
#define TS_SOLVE(name, T, ZERO, M_OF, STEP, VALUE)                                                                 \
    static void name(const emi_ts_plan *p, const T *a, const T *b, T *x, T *m, T *y, T *acc) {                     \
        int64_t n = p->n, nc = p->ncols;                                                                           \
        for (int64_t i = 0; i < n; i++)                                                                            \
            for (int64_t j = 0; j <= i; j++) m[i * n + j] = M_OF(p, a[emi_ts_a_index(p, i, j)]);                   \
        for (int64_t i = 0; i < n; i++) {                                                                          \
            for (int64_t c = 0; c < nc; c++) acc[c] = ZERO;                                                        \
            for (int64_t j = 0; j < i; j++) {                                                                      \
                T mij = m[i * n + j];                                                                              \
                const T *yj = y + j * nc;                                                                          \
                _Pragma("omp simd") for (int64_t c = 0; c < nc; c++) acc[c] = STEP(mij, yj[c], acc[c]);            \
            }                                                                                                      \
            T d = m[i * n + i];                                                                                    \
            for (int64_t c = 0; c < nc; c++) y[i * nc + c] = VALUE(b[emi_ts_b_index(p, i, c)], acc[c], d, i == 0); \
        }                                                                                                          \
        for (int64_t i = 0; i < n; i++)                                                                            \
            for (int64_t c = 0; c < nc; c++) x[emi_ts_b_index(p, i, c)] = y[i * nc + c];                           \
    }
TS_SOLVE(ts_real, double, TS_ZERO_REAL, TS_M_REAL, emi_ts_step, emi_ts_value)
TS_SOLVE(ts_complex, emily_cd, TS_ZERO_COMPLEX, emi_ts_m_cd, emi_ts_step_cd, emi_ts_value_cd)

emily_status emi_cpu_linalg_triangular_solve(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                                             bool b_vector, bool left_side, bool lower, emily_transform_a transform) {
    int64_t n = a->shape[a->rank - 1], nn = n * n;
    int64_t batches = batch_count(a, nn);
    bool cx = a->dtype == EMILY_C128;
    emi_ts_plan p = emi_ts_plan_make(n, b_vector, b_vector ? n : b->shape[b->rank - 2],
                                     b_vector ? 1 : b->shape[b->rank - 1], left_side, lower, transform);
    int64_t ncols = p.ncols;
    int64_t bsize = p.rows_b * p.cols_b;
    if (batches == 0 || bsize == 0 || ncols == 0) return EMILY_OK;
    /* The reference stops at the first zero pivot it meets. */
    const char *ad = emily_tensor_base(a);
    for (int64_t bt = 0; bt < batches; bt++)
        for (int64_t i = 0; i < n; i++) {
            bool zero = cx ? zzero(((const zd *)ad)[bt * nn + i * n + i])
                           : ((const double *)ad)[bt * nn + i * n + i] == 0;
            if (zero)
                return emily_error(EMILY_ERR_ARGUMENT,
                                   "triangular_solve: can't solve for singular matrix (zero on the "
                                   "diagonal at row %lld of matrix %lld)",
                                   (long long)i, (long long)bt);
        }
    size_t es = cx ? sizeof(emily_cd) : sizeof(double);
    const char *bd = emily_tensor_base(b);
    char *xd = emily_tensor_base(x);
    int failed = 0;
#pragma omp parallel if (batches > 1 && batches * nn * ncols > 100000) reduction(| : failed)
    {
        void *m = malloc((size_t)nn * es + 1), *y = malloc((size_t)(n * ncols) * es + 1);
        void *acc = malloc((size_t)ncols * es + 1);
        if (!m || !y || !acc) failed = 1;
#pragma omp for schedule(dynamic)
        for (int64_t bt = 0; bt < batches; bt++) {
            if (!m || !y || !acc) continue;
            if (cx)
                ts_complex(&p, (const emily_cd *)ad + bt * nn, (const emily_cd *)bd + bt * bsize,
                           (emily_cd *)xd + bt * bsize, m, y, acc);
            else
                ts_real(&p, (const double *)ad + bt * nn, (const double *)bd + bt * bsize, (double *)xd + bt * bsize, m,
                        y, acc);
        }
        free(m);
        free(y);
        free(acc);
    }
    if (failed) return emily_error(EMILY_ERR_MEMORY, "triangular_solve: out of host memory");
    return EMILY_OK;
}
