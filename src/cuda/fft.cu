// The FFT family on CUDA (contract: the fft entry of src/core/kernels.h):
// the entry point checks what the kernel is handed and picks the
// implementation by precision:
//
//   HIGHEST: fft_exact.cu, the reference's algorithm as device code in
//            double, with the CPU engine's own twiddle tables: the CPU's
//            bits (what the conformance corpus selects);
//   FAST:    fft_cufft.cu, cuFFT in the output's precision (c64 in single),
//            plans cached, all lines in one batched call.
//
// Both read the lines through views of src and dst without the axis
// (common.cuh's for_lines): any axis, any strides.
#include "cuda/fft.cuh"
extern "C" {
#include "ops/common.h"
}

using namespace emily_cuda;

namespace {

// (d0, s0: the launch's first offsets)
__global__ void line_offsets_kernel(Layout<2> L, int64_t d0, int64_t s0, int64_t r0, int64_t *doff, int64_t *soff) {
    for (int64_t i = flat_first(); i < L.total; i += flat_step()) {
        int64_t off[2];
        layout_offsets<2, int64_t>(L, i, off);
        doff[r0 + i] = d0 + off[0];
        soff[r0 + i] = s0 + off[1];
    }
}

} // namespace

emily_status FftJob::line_offsets(int64_t *doff, int64_t *soff) const {
    const emily_tensor *ts[2] = {views[0], views[1]};
    return emily_cuda::for_lines<2>(ctx.op, ts, [&](const Layout<2> &L, const int64_t *off, int64_t r0) {
        line_offsets_kernel<<<grid_for(ctx.device, L.total), BLOCK, 0, ctx.stream>>>(L, off[0], off[1], r0, doff, soff);
        return emi_cuda_launched(&ctx);
    });
}

namespace {

bool fft_source_type(emily_dtype t) { return t == EMILY_F32 || t == EMILY_F64 || t == EMILY_C64 || t == EMILY_C128; }

// dst's type for the mode: complex (c64/c128), real (f32/f64) for
// INVERSE_REAL.
bool fft_dest_type(emily_dtype t, emily_fft_mode mode) {
    if (mode == EMILY_FFT_INVERSE_REAL) return t == EMILY_F32 || t == EMILY_F64;
    return t == EMILY_C64 || t == EMILY_C128;
}

emily_status check(const emily_tensor *dst, const emily_tensor *src, int axis, int64_t n, emily_fft_mode mode) {
    if (!dst || !src) return emily_error(EMILY_ERR_ARGUMENT, "cuda: fft: NULL tensor");
    if (mode != EMILY_FFT_FORWARD && mode != EMILY_FFT_INVERSE && mode != EMILY_FFT_INVERSE_REAL)
        return emily_error(EMILY_ERR_ARGUMENT, "cuda: fft: unknown mode %d", (int)mode);
    if (n < 1) return emily_error(EMILY_ERR_ARGUMENT, "cuda: fft: length must be positive, got %lld", (long long)n);
    if (src->rank < 1 || axis < 0 || axis >= src->rank)
        return emily_error(EMILY_ERR_AXIS, "cuda: fft: axis %d out of range for rank %d", axis, src->rank);
    if (!fft_source_type(src->dtype))
        return emily_error(EMILY_ERR_TYPE, "cuda: fft: the kernel reads f32, f64, c64 or c128, got %s",
                           emily_dtype_valid(src->dtype) ? emily_dtype_name(src->dtype) : "an invalid type");
    if (!fft_dest_type(dst->dtype, mode))
        return emily_error(EMILY_ERR_TYPE, "cuda: fft: cannot write a %s transform into %s",
                           mode == EMILY_FFT_INVERSE_REAL ? "real" : "complex",
                           emily_dtype_valid(dst->dtype) ? emily_dtype_name(dst->dtype) : "an invalid type");
    bool shape_ok = dst->rank == src->rank && dst->shape[axis] <= n;
    for (int d = 0; shape_ok && d < src->rank; d++) shape_ok = d == axis || dst->shape[d] == src->shape[d];
    if (!shape_ok) {
        char ds[256], ss[256];
        return emily_error(EMILY_ERR_SHAPE,
                           "cuda: fft: output shape %s does not fit input shape %s along axis %d for length %lld",
                           emi_shape_str(dst->rank, dst->shape, ds, sizeof ds),
                           emi_shape_str(src->rank, src->shape, ss, sizeof ss), axis, (long long)n);
    }
    if (dst->buffer->device.type != EMILY_DEVICE_CUDA || src->buffer->device.type != EMILY_DEVICE_CUDA ||
        dst->buffer->device.index != src->buffer->device.index)
        return emily_error(EMILY_ERR_DEVICE, "cuda: fft: input and output must be on one CUDA device");
    return EMILY_OK;
}

emily_status cuda_fft(emily_tensor *dst, const emily_tensor *src, int axis, int64_t n, emily_fft_mode mode, double eps,
                      emily_dot_precision precision) {
    emily_status s = check(dst, src, axis, n, mode);
    if (s || dst->size == 0) return s;
    FftJob job;
    job.dst = dst;
    job.src = src;
    job.axis = axis;
    job.n = n;
    job.mode = mode;
    job.eps = eps;
    job.keep = dst->shape[axis];
    job.len_in = src->shape[axis];
    int64_t cut = mode == EMILY_FFT_INVERSE_REAL ? n / 2 + 1 : n;
    job.take = job.len_in < cut ? job.len_in : cut;
    job.lines = dst->size / job.keep;
    job.s_ax = src->strides[axis];
    job.d_ax = dst->strides[axis];
    if ((s = begin_dst_src("fft", dst, src, &job.ctx))) return s;
    // an empty source (its axis is 0) is never read: its lines are dst's
    const emily_tensor *lv[2] = {dst, src->size ? src : dst};
    if ((s = views_without_axis(job.ctx.op, 1, lv, axis, &job.views[0]))) return s;
    if ((s = views_without_axis(job.ctx.op, 1, lv + 1, axis, &job.views[1]))) return s;
    return precision == EMILY_DOT_PRECISION_HIGHEST ? fft_exact(job) : fft_cufft(job);
}

} // namespace

extern "C" const struct emily_fft_kernels emi_cuda_fft_kernels = {cuda_fft};
