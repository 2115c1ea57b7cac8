// triangular_solve under linalg: :reference on CUDA: Nx.BinaryBackend's
// substitution as the CPU kernel computes it (core/triangular_solve_rules.h:
// the same plan, the same operations in the same order, in double or in
// the Complex library's pairs of doubles, no fused multiply-add), so the
// results are the CPU's bits. The op layer hands over wide (f64/c128)
// contiguous copies and rounds x to Nx's type afterwards, as on the CPU.
//
// The substitution is sequential down a column and the columns are
// independent: one thread per (matrix, right-hand-side column), which
// keeps its column of y in x itself (y's element (i, c) is x's element at
// emi_ts_b_index(i, c), where the CPU copies it at the end), reading a's
// elements where the plan maps them (the same for every thread of a
// matrix, so a warp reads each once). An exact zero on a diagonal fails
// with the CPU's message (linalg.cuh's zero-pivot helpers).
#include "cuda/linalg.cuh"
#include "core/triangular_solve_rules.h"

using namespace emily_cuda;
using namespace emily_cuda::la;

namespace {

// The substitution's arithmetic per type (core/triangular_solve_rules.h):
// the element of the matrix as the plan reads it, one accumulation step,
// the solved value.
__device__ inline double ts_zero(double) { return 0.0; }
__device__ inline emily_cd ts_zero(emily_cd) { return emily_cd_make(0, 0); }
__device__ inline double ts_m(const emi_ts_plan *, double aij) { return aij; }
__device__ inline emily_cd ts_m(const emi_ts_plan *p, emily_cd aij) { return emi_ts_m_cd(p, aij); }
__device__ inline double ts_step(double mij, double yj, double acc) { return emi_ts_step(mij, yj, acc); }
__device__ inline emily_cd ts_step(emily_cd mij, emily_cd yj, emily_cd acc) { return emi_ts_step_cd(mij, yj, acc); }
__device__ inline double ts_value(double ci, double acc, double mii, bool first) {
    return emi_ts_value(ci, acc, mii, first);
}
__device__ inline emily_cd ts_value(emily_cd ci, emily_cd acc, emily_cd mii, bool first) {
    return emi_ts_value_cd(ci, acc, mii, first);
}

// A thread per (matrix, column of b): the CPU kernel's substitution, in
// its order, for double or complex double.
template <typename T> __global__ void ts_exact(const emi_ts_plan p, const T *a, const T *b, T *x, int64_t batch) {
    const int64_t n = p.n, nn = n * n, bsize = p.rows_b * p.cols_b, total = batch * p.ncols;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < total; t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t bt = t / p.ncols, c = t % p.ncols;
        const T *am = a + bt * nn, *bm = b + bt * bsize;
        T *xm = x + bt * bsize;
        for (int64_t i = 0; i < n; i++) {
            T acc = ts_zero(T());
            for (int64_t j = 0; j < i; j++)
                acc = ts_step(ts_m(&p, am[emi_ts_a_index(&p, i, j)]), xm[emi_ts_b_index(&p, j, c)], acc);
            const int64_t at = emi_ts_b_index(&p, i, c);
            xm[at] = ts_value(bm[at], acc, ts_m(&p, am[emi_ts_a_index(&p, i, i)]), i == 0);
        }
    }
}

} // namespace

emily_status emi_cuda_triangular_solve_exact(emily_tensor *x, const emily_tensor *a, const emily_tensor *b,
                                             bool b_vector, bool left_side, bool lower, emily_transform_a transform) {
    emily_cuda_ctx ctx;
    const emily_tensor *ts[3] = {x, a, b};
    emily_status s = emi_cuda_begin("triangular_solve", dev_of(a), 3, ts, &ctx);
    if (s) return s;
    const bool cx = a->dtype == EMILY_C128;
    if (!cx && a->dtype != EMILY_F64)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: triangular_solve: reference kernel given %s, not f64/c128",
                           emily_dtype_name(a->dtype));
    const int64_t n = a->shape[a->rank - 1], batch = batch_of(a, 2);
    const emi_ts_plan p = emi_ts_plan_make(n, b_vector, b_vector ? n : b->shape[b->rank - 2],
                                           b_vector ? 1 : b->shape[b->rank - 1], left_side, lower, transform);
    if (batch == 0 || n == 0 || p.ncols == 0) return EMILY_OK;
    Pool pool(ctx);
    unsigned long long *bad;
    const int64_t threads = batch * p.ncols;
    if (cx) {
        const emily_cd *ad = data_of<emily_cd>(a);
        if ((s = queue_zero_diagonal(ctx, pool, (const cuDoubleComplex *)ad, batch, n, &bad))) return s;
        ts_exact<emily_cd><<<grid_for(ctx.device, threads), BLOCK, 0, ctx.stream>>>(p, ad, data_of<emily_cd>(b),
                                                                                    data_of<emily_cd>(x), batch);
    } else {
        const double *ad = data_of<double>(a);
        if ((s = queue_zero_diagonal(ctx, pool, ad, batch, n, &bad))) return s;
        ts_exact<double><<<grid_for(ctx.device, threads), BLOCK, 0, ctx.stream>>>(p, ad, data_of<double>(b),
                                                                                  data_of<double>(x), batch);
    }
    if ((s = emi_cuda_launched(&ctx))) return s;
    return zero_pivot_error(ctx, bad, n);
}
