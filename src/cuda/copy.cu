// Strided copy on CUDA: the kernel behind contiguous(), slicing, padding,
// concatenation and every other view-based op. Contiguous-to-contiguous
// copies are a plain device memcpy; transposes of the last two axes (one
// batch axis allowed: NCHW <-> NHWC) go through shared-memory tiles so
// that both sides are read and written along rows; everything
// else maps each output element to its source through the layout.
#include "cuda/common.cuh"

using namespace emily_cuda;

template <typename T, typename I> __global__ void copy_strided(Layout<2> L, T *dst, const T *src) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        I off[2];
        layout_offsets<2, I>(L, (I)i, off);
        dst[off[0]] = src[off[1]];
    }
}

// dst[b][r][c] = src[b][r][c] where dst's rows are row-major (stride ds,
// 1) and src's are column-major (stride 1, ss), for `batch` planes db and
// sb apart (a 2-D transpose is one plane; NCHW <-> NHWC is a plane per
// image): tiles of 32x32 through shared memory.
constexpr int TILE = 32;
template <typename T>
__global__ void copy_transpose(int64_t batch, int64_t rows, int64_t cols, T *dst, int64_t db, int64_t ds, const T *src,
                               int64_t sb, int64_t ss) {
    __shared__ T tile[TILE][TILE + 1];
    int64_t r0 = (int64_t)blockIdx.y * TILE, c0 = (int64_t)blockIdx.x * TILE;
    for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
        const T *sp = src + b * sb;
        T *dp = dst + b * db;
        // read: consecutive threads walk r (contiguous in src)
        for (int j = threadIdx.y; j < TILE; j += blockDim.y) {
            int64_t c = c0 + j, r = r0 + threadIdx.x;
            if (r < rows && c < cols) tile[j][threadIdx.x] = sp[r + c * ss];
        }
        __syncthreads();
        // write: consecutive threads walk c (contiguous in dst)
        for (int j = threadIdx.y; j < TILE; j += blockDim.y) {
            int64_t r = r0 + j, c = c0 + threadIdx.x;
            if (r < rows && c < cols) dp[r * ds + c] = tile[threadIdx.x][j];
        }
        __syncthreads(); // the tile of the next plane
    }
}

template <typename T>
static emily_status copy_typed(const emily_cuda_ctx &ctx, emily_tensor *dst, const emily_tensor *src) {
    return for_layout_ds<T, T>(ctx.op, dst, src, [&](const Layout<2> &L, T *dp, const T *sp) -> emily_status {
        if (L.rank == 1 && L.stride[0][0] == 1 && L.stride[1][0] == 1)
            return emi_cuda_error(
                ctx.op, cudaMemcpyAsync(dp, sp, (size_t)L.total * sizeof(T), cudaMemcpyDeviceToDevice, ctx.stream));
        // a transpose of the last two axes, under at most one batch axis
        int a = L.rank - 2; // the rows' axis
        if ((L.rank == 2 || L.rank == 3) && L.stride[0][a + 1] == 1 && L.stride[1][a] == 1 && L.stride[1][a + 1] != 1 &&
            L.shape[a] >= TILE && L.shape[a + 1] >= TILE && (L.shape[a + 1] + TILE - 1) / TILE <= 0x7fffffff &&
            (L.shape[a] + TILE - 1) / TILE <= 65535) {
            int64_t batch = L.rank == 3 ? L.shape[0] : 1;
            dim3 grid((unsigned)((L.shape[a + 1] + TILE - 1) / TILE), (unsigned)((L.shape[a] + TILE - 1) / TILE),
                      (unsigned)(batch < 65535 ? batch : 65535));
            copy_transpose<T><<<grid, dim3(TILE, 8), 0, ctx.stream>>>(
                batch, L.shape[a], L.shape[a + 1], dp, L.rank == 3 ? L.stride[0][0] : 0, L.stride[0][a], sp,
                L.rank == 3 ? L.stride[1][0] : 0, L.stride[1][a + 1]);
            return emi_cuda_launched(&ctx);
        }
        unsigned grid = grid_for(ctx.device, L.total);
        if (layout_fits32(L)) copy_strided<T, int32_t><<<grid, BLOCK, 0, ctx.stream>>>(L, dp, sp);
        else copy_strided<T, int64_t><<<grid, BLOCK, 0, ctx.stream>>>(L, dp, sp);
        return emi_cuda_launched(&ctx);
    });
}

extern "C" emily_status emi_cuda_copy(emily_tensor *dst, const emily_tensor *src) {
    if (dst->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    emily_status s = begin_dst_src("copy", dst, src, &ctx);
    if (s) return s;
    return with_element_bits(dst->dtype, "copy",
                             [&]<typename B>() -> emily_status { return copy_typed<B>(ctx, dst, src); });
}
