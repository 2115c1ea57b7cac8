// The cumulative family's kernel table on CUDA: each (op, dtype) takes the
// path whose order of operations is the CPU engine's for it
// (src/cpu/cumulative.c, cpu_scan), so the two devices agree bit for bit:
//
//   f32/f64 sums                          sequential (double from -0.0, the CPU's chunks)
//   float max/min, f16/bf16/c64 scans,    Nx's tree order (cumulative_tree.cu)
//   c128 products
//   f32/f64 products, c128 sums           sequential from the first element
//   integers                              any order (exact, wrapping): the tree,
//                                         or a thread per line when there are
//                                         many lines `inner` apart
#include "cuda/cumulative.cuh"

using namespace emily_cuda;

namespace {

// Lines `inner` apart from which integer scans go a thread per line: enough
// threads to fill the device, each reading neighbouring addresses.
constexpr int64_t INT_THREAD_LINES = 16384;

emily_status cuda_scan(emily_cumulative_op op, emily_tensor *dst, const emily_tensor *src, int64_t outer, int64_t n,
                       int64_t inner, bool reverse) {
    static const char *names[] = {"cumulative_sum", "cumulative_product", "cumulative_max", "cumulative_min"};
    if ((unsigned)op > (unsigned)EMILY_CUMULATIVE_MIN)
        return emily_error(EMILY_ERR_ARGUMENT, "cuda: cumulative: unknown op %d", (int)op);
    const char *name = names[op];
    emily_dtype dt = src->dtype;
    if (!emily_dtype_valid(dt) || dst->dtype != dt)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: source and output types differ", name);
    bool minmax = op == EMILY_CUMULATIVE_MAX || op == EMILY_CUMULATIVE_MIN;
    if (minmax && emily_dtype_is_complex(dt))
        return emily_error(EMILY_ERR_TYPE, "cuda: %s: complex tensors (%s) are not supported", name,
                           emily_dtype_name(dt));
    if (outer < 0 || n < 1 || inner < 0 || outer * n * inner != src->size || dst->size != src->size ||
        !emily_tensor_is_contiguous(src) || !emily_tensor_is_contiguous(dst))
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: expects contiguous [%lld, %lld, %lld] tensors", name,
                           (long long)outer, (long long)n, (long long)inner);
    if (src->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    emily_status s = begin_dst_src(name, dst, src, &ctx);
    if (s) return s;
    size_t es = emily_dtype_size(dt);
    const char *sp = base_of(src) + (size_t)src->offset * es;
    char *dp = base_of(dst) + (size_t)dst->offset * es;
    ScanLines L = {n, inner, outer * inner, reverse};
    bool native = dt == EMILY_F32 || dt == EMILY_F64;
    bool tree;
    if (emily_dtype_is_integer(dt)) tree = inner == 1 || L.count < INT_THREAD_LINES;
    else if (emily_dtype_is_float(dt) && minmax) tree = true;
    // f16, bf16, c64 round each step of Nx's tree; c128 products follow it
    // for the signs of zero parts (cpu_scan's follows_tree_order)
    else tree = (!native && dt != EMILY_C128) || (dt == EMILY_C128 && op == EMILY_CUMULATIVE_PRODUCT);
    return tree ? scan_tree(ctx, op, dt, sp, dp, L) : scan_sequential(ctx, op, dt, sp, dp, L);
}

} // namespace

extern "C" const struct emily_cumulative_kernels emi_cuda_cumulative_kernels = {cuda_scan};
