/* FFTs: Nx semantics (Nx.fft/ifft/fft2/ifft2/rfft/irfft) on top of the
 * one-axis kernel of src/core/kernels.h.
 *
 * The kernel reads f32, f64, c64 and c128 lines directly; other inputs
 * (integers, f16, bf16) are converted to f64 first, which is exact for
 * every value the reference would see exactly (it computes in double). */
#include <stdlib.h>
#include "ops/common.h"
#include "ops/output_shape.h"
#include "core/kernels.h"

static const char *kind_name(emi_fft_kind k) {
    switch (k) {
    case EMI_FFT: return "fft";
    case EMI_IFFT: return "ifft";
    case EMI_RFFT: return "rfft";
    default: return "irfft";
    }
}

/* One axis's transform of a (dtype, rank, shape) input: its checks, the
 * normalized axis, the transform length n and the output's type and
 * shape (rank entries; the input's but on the axis). */
static emily_status axis_plan(emi_fft_kind kind, emily_dtype dtype, int rank, const int64_t *shape, int64_t length,
                              int axis, int *ax, int64_t *n, emily_dtype *otype, int64_t *oshape) {
    const char *op = kind_name(kind);
    emily_status s;
    if (rank == 0)
        return emily_error(EMILY_ERR_SHAPE, "%s: expected a tensor with rank > 0, got tensor with rank 0", op);
    if ((s = emi_norm_axis(op, axis, rank, ax))) return s;
    if (kind == EMI_RFFT && emily_dtype_is_complex(dtype))
        return emily_error(EMILY_ERR_TYPE, "%s: expects a real tensor, got type %s", op, emily_dtype_name(dtype));
    int64_t size = shape[*ax];
    if (length < 0)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: length must be a positive integer, got %lld", op,
                           (long long)length);
    *n = length ? length : kind == EMI_IRFFT ? 2 * (size - 1) : size;
    if (*n < 1) {
        char b[256];
        return emily_error(EMILY_ERR_ARGUMENT,
                           "%s: the transform length must be positive, got %lld (axis %d of shape %s)", op,
                           (long long)*n, *ax, emi_shape_str(rank, shape, b, sizeof b));
    }
    if (*n > ((int64_t)1 << 40))
        return emily_error(EMILY_ERR_ARGUMENT, "%s: length %lld is too large", op, (long long)*n);
    emily_dtype ctype = emily_type_to_complex(dtype);
    *otype = kind == EMI_IRFFT ? emily_type_to_real(ctype) : ctype;
    for (int i = 0; i < rank; i++) oshape[i] = i == *ax ? (kind == EMI_RFFT ? *n / 2 + 1 : *n) : shape[i];
    return EMILY_OK;
}

emily_status emi_fft_output_shape(emi_fft_kind kind, const emily_tensor *t, int64_t length, int axis,
                                  emily_dtype *dtype, int64_t *shape) {
    int ax;
    int64_t n;
    return axis_plan(kind, t->dtype, t->rank, t->shape, length, axis, &ax, &n, dtype, shape);
}

static emily_status fft_axis(emi_fft_kind kind, const emily_tensor *t, int64_t length, int axis, double eps,
                             emily_tensor **out) {
    const char *op = kind_name(kind);
    emily_status s;
    if ((s = emi_check_out(op, out))) return s;
    if ((s = emi_check_tensor(op, "tensor", t))) return s;
    int64_t stack_shape[16];
    int64_t *shape = t->rank <= 16 ? stack_shape : malloc((size_t)t->rank * sizeof *shape);
    if (!shape) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    int ax;
    int64_t n;
    emily_dtype otype;
    const emily_engine *e;
    emily_tensor *src = NULL, *dst = NULL;
    if ((s = axis_plan(kind, t->dtype, t->rank, t->shape, length, axis, &ax, &n, &otype, shape)) ||
        (s = emi_check_same_device(op, 1, &t, &e)))
        goto done;
    if (!emi_engine_supports(e, EMI_KERNEL_FFT, 0, t->dtype)) {
        char dev[32];
        emily_device_format(t->buffer->device, dev, sizeof dev);
        s = emily_error(EMILY_ERR_UNSUPPORTED, "%s: not available on device %s", op, dev);
        goto done;
    }
    emily_fft_mode mode = kind == EMI_FFT || kind == EMI_RFFT ? EMILY_FFT_FORWARD
                          : kind == EMI_IFFT                  ? EMILY_FFT_INVERSE
                                                              : EMILY_FFT_INVERSE_REAL;
    emily_dtype dt = t->dtype;
    bool direct = dt == EMILY_F32 || dt == EMILY_F64 || dt == EMILY_C64 || dt == EMILY_C128;
    s = emi_convert_to(t, direct ? dt : EMILY_F64, &src);
    if (!s) s = emi_empty_like_device(t, otype, t->rank, shape, &dst);
    if (!s) s = e->fft->fft(dst, src, ax, n, mode, eps, emily_dot_get_precision());
    emily_tensor_release(src);
done:
    if (shape != stack_shape) free(shape);
    return emi_hand_out(s, dst, out);
}

/* emily_fft, emily_ifft, emily_rfft and emily_irfft: fft_axis of their kind. */
#define FFT_ENTRY(name, KIND)                                                                                    \
    emily_status emily_##name(const emily_tensor *t, int64_t length, int axis, double eps, emily_tensor **out) { \
        return fft_axis(KIND, t, length, axis, eps, out);                                                        \
    }
FFT_ENTRY(fft, EMI_FFT)
FFT_ENTRY(ifft, EMI_IFFT)
FFT_ENTRY(rfft, EMI_RFFT)
FFT_ENTRY(irfft, EMI_IRFFT)
#undef FFT_ENTRY

/* fft2's own checks (a rank of 2 or more, two distinct axes), its axes
 * normalized into ax. */
static emily_status fft2_axes(emi_fft_kind kind, const emily_tensor *t, const int64_t lengths[2], const int axes[2],
                              int ax[2]) {
    const char *op = kind == EMI_FFT ? "fft2" : "ifft2";
    if (!axes || !lengths) return emily_error(EMILY_ERR_ARGUMENT, "%s: axes and lengths are required", op);
    if (t->rank < 2)
        return emily_error(EMILY_ERR_SHAPE, "%s: expected a tensor with rank > 1, got tensor with rank %d", op,
                           t->rank);
    return emi_norm_axes(op, 2, axes, t->rank, ax, NULL);
}

emily_status emi_fft2_output_shape(emi_fft_kind kind, const emily_tensor *t, const int64_t lengths[2],
                                   const int axes[2], emily_dtype *dtype, int64_t *shape) {
    int ax[2], done;
    int64_t n;
    emily_status s = fft2_axes(kind, t, lengths, axes, ax);
    /* the second axis first, then the first on that result, as fft2 runs */
    if (!s) s = axis_plan(kind, t->dtype, t->rank, t->shape, lengths[1], ax[1], &done, &n, dtype, shape);
    if (!s) s = axis_plan(kind, *dtype, t->rank, shape, lengths[0], ax[0], &done, &n, dtype, shape);
    return s;
}

static emily_status fft2(emi_fft_kind kind, const emily_tensor *t, const int64_t lengths[2], const int axes[2],
                         double eps, emily_tensor **out) {
    const char *op = kind == EMI_FFT ? "fft2" : "ifft2";
    emily_status s;
    if ((s = emi_check_out(op, out))) return s;
    if ((s = emi_check_tensor(op, "tensor", t))) return s;
    int ax[2];
    if ((s = fft2_axes(kind, t, lengths, axes, ax))) return s;
    emily_tensor *mid;
    if ((s = fft_axis(kind, t, lengths[1], ax[1], eps, &mid))) return s;
    s = fft_axis(kind, mid, lengths[0], ax[0], eps, out);
    emily_tensor_release(mid);
    return s;
}

emily_status emily_fft2(const emily_tensor *t, const int64_t lengths[2], const int axes[2], double eps,
                        emily_tensor **out) {
    return fft2(EMI_FFT, t, lengths, axes, eps, out);
}

emily_status emily_ifft2(const emily_tensor *t, const int64_t lengths[2], const int axes[2], double eps,
                         emily_tensor **out) {
    return fft2(EMI_IFFT, t, lengths, axes, eps, out);
}
