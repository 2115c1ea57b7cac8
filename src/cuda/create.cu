// constant (fill) and eye on CUDA. The value is converted on the host with
// Nx's number -> dtype rules (core/scalar_element.h, as the CPU does) and
// its bytes are broadcast by the kernel; all-zero fills of contiguous
// memory are a memset.
#include "cuda/common.cuh"
#include "core/scalar_element.h"

using namespace emily_cuda;

template <typename T> __global__ void fill_kernel(Layout<1> L, T *d, T val) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[1];
        layout_offsets<1, int64_t>(L, i, off);
        d[off[0]] = val;
    }
}

template <typename T>
static emily_status fill_typed(const emily_cuda_ctx &ctx, emily_tensor *dst, const unsigned char *bytes) {
    T val;
    memcpy(&val, bytes, sizeof val);
    const emily_tensor *ts[1] = {dst};
    T *base = (T *)base_of(dst);
    return for_layout<1>(ctx.op, ts, [&](const Layout<1> &L, const int64_t *off) -> emily_status {
        fill_kernel<T><<<grid_for(ctx.device, L.total), BLOCK, 0, ctx.stream>>>(L, base + off[0], val);
        return emi_cuda_launched(&ctx);
    });
}

static emily_status fill_bytes(const emily_cuda_ctx &ctx, emily_tensor *dst, const unsigned char *bytes) {
    size_t es = emily_dtype_size(dst->dtype);
    bool zero = true;
    for (size_t i = 0; i < es; i++) zero = zero && bytes[i] == 0;
    if (zero && emily_tensor_is_contiguous(dst))
        return emi_cuda_error(
            ctx.op, cudaMemsetAsync(base_of(dst) + (size_t)dst->offset * es, 0, (size_t)dst->size * es, ctx.stream));
    return with_element_bits(dst->dtype, ctx.op,
                             [&]<typename B>() -> emily_status { return fill_typed<B>(ctx, dst, bytes); });
}

extern "C" emily_status emi_cuda_fill(emily_tensor *dst, const emily_scalar *value) {
    if (dst->size == 0) return EMILY_OK;
    unsigned char bytes[16] = {0};
    emi_scalar_element(dst->dtype, value, bytes);
    emily_cuda_ctx ctx;
    const emily_tensor *ts[1] = {dst};
    emily_status s = emi_cuda_begin("constant", dev_of(dst), 1, ts, &ctx);
    return s ? s : fill_bytes(ctx, dst, bytes);
}

// Ones on the diagonal of each trailing m x n matrix (the rest is zero).
template <typename T> __global__ void eye_diag(int64_t batches, int64_t m, int64_t n, int64_t diag, T *d, T one) {
    int64_t total = batches * diag;
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < total; k += (int64_t)gridDim.x * blockDim.x) {
        int64_t b = k / diag, i = k - b * diag;
        d[b * m * n + i * n + i] = one;
    }
}

template <typename T>
static emily_status eye_typed(const emily_cuda_ctx &ctx, emily_tensor *dst, const unsigned char *bytes) {
    T one;
    memcpy(&one, bytes, sizeof one);
    int64_t m = dst->shape[dst->rank - 2], n = dst->shape[dst->rank - 1];
    int64_t batches = dst->size / (m * n), diag = m < n ? m : n;
    eye_diag<T><<<grid_for(ctx.device, batches * diag), BLOCK, 0, ctx.stream>>>(batches, m, n, diag,
                                                                                (T *)base_of(dst) + dst->offset, one);
    return emi_cuda_launched(&ctx);
}

extern "C" emily_status emi_cuda_eye(emily_tensor *dst) {
    if (dst->rank < 2) return emily_error(EMILY_ERR_SHAPE, "eye: the output needs rank >= 2, got %d", dst->rank);
    if (!emily_tensor_is_contiguous(dst)) return emily_error(EMILY_ERR_INTERNAL, "eye: the output must be contiguous");
    if (dst->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[1] = {dst};
    emily_status s = emi_cuda_begin("eye", dev_of(dst), 1, ts, &ctx);
    if (s) return s;
    unsigned char zero[16] = {0}, one[16] = {0};
    s = fill_bytes(ctx, dst, zero);
    if (s) return s;
    emily_sc_store_int((int)dst->dtype, 1, 0, one);
    return with_element_bits(dst->dtype, "eye",
                             [&]<typename B>() -> emily_status { return eye_typed<B>(ctx, dst, one); });
}
