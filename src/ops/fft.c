/* FFTs: Nx semantics (Nx.fft/ifft/fft2/ifft2/rfft/irfft) on top of the
 * one-axis kernel of src/core/kernels.h.
 *
 * The kernel reads f32, f64, c64 and c128 lines directly; other inputs
 * (integers, f16, bf16) are converted to f64 first, which is exact for
 * every value the reference would see exactly (it computes in double). */
#include <stdlib.h>
#include "ops/common.h"
#include "core/kernels.h"

typedef enum fft_kind { KIND_FFT, KIND_IFFT, KIND_RFFT, KIND_IRFFT } fft_kind;

static const char *kind_name(fft_kind k) {
    switch (k) {
    case KIND_FFT: return "fft";
    case KIND_IFFT: return "ifft";
    case KIND_RFFT: return "rfft";
    default: return "irfft";
    }
}

static emily_status fft_axis(fft_kind kind, const emily_tensor *t, int64_t length, int axis, double eps,
                             emily_tensor **out) {
    const char *op = kind_name(kind);
    emily_status s;
    if ((s = emi_check_out(op, out))) return s;
    if ((s = emi_check_tensor(op, "tensor", t))) return s;
    if (t->rank == 0)
        return emily_error(EMILY_ERR_SHAPE, "%s: expected a tensor with rank > 0, got tensor with rank 0", op);
    int ax;
    if ((s = emi_norm_axis(op, axis, t->rank, &ax))) return s;
    if (kind == KIND_RFFT && emily_dtype_is_complex(t->dtype))
        return emily_error(EMILY_ERR_TYPE, "%s: expects a real tensor, got type %s", op, emily_dtype_name(t->dtype));
    int64_t size = t->shape[ax];
    if (length < 0)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: length must be a positive integer, got %lld", op,
                           (long long)length);
    int64_t n = length ? length : kind == KIND_IRFFT ? 2 * (size - 1) : size;
    if (n < 1)
        return emily_error(EMILY_ERR_ARGUMENT,
                           "%s: the transform length must be positive, got %lld (axis %d of shape %s)", op,
                           (long long)n, ax, EMILY_SHAPE_STR(t));
    if (n > ((int64_t)1 << 40))
        return emily_error(EMILY_ERR_ARGUMENT, "%s: length %lld is too large", op, (long long)n);
    const emily_engine *e;
    if ((s = emi_check_same_device(op, 1, &t, &e))) return s;
    if (!emi_engine_supports(e, EMI_KERNEL_FFT, 0, t->dtype)) {
        char dev[32];
        emily_device_format(t->buffer->device, dev, sizeof dev);
        return emily_error(EMILY_ERR_UNSUPPORTED, "%s: not available on device %s", op, dev);
    }
    emily_dtype ctype = emily_type_to_complex(t->dtype);
    emily_dtype otype = kind == KIND_IRFFT ? emily_type_to_real(ctype) : ctype;
    emily_fft_mode mode = kind == KIND_FFT || kind == KIND_RFFT ? EMILY_FFT_FORWARD
                          : kind == KIND_IFFT                   ? EMILY_FFT_INVERSE
                                                                : EMILY_FFT_INVERSE_REAL;
    int64_t keep = kind == KIND_RFFT ? n / 2 + 1 : n;
    int64_t stack_shape[16];
    int64_t *shape = t->rank <= 16 ? stack_shape : malloc((size_t)t->rank * sizeof *shape);
    if (!shape) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    for (int i = 0; i < t->rank; i++) shape[i] = i == ax ? keep : t->shape[i];
    emily_tensor *src = NULL, *dst = NULL;
    emily_dtype dt = t->dtype;
    bool direct = dt == EMILY_F32 || dt == EMILY_F64 || dt == EMILY_C64 || dt == EMILY_C128;
    s = emi_convert_to(t, direct ? dt : EMILY_F64, &src);
    if (!s) s = emi_empty_like_device(t, otype, t->rank, shape, &dst);
    if (!s) s = e->fft->fft(dst, src, ax, n, mode, eps, emily_dot_get_precision());
    if (shape != stack_shape) free(shape);
    emily_tensor_release(src);
    return emi_hand_out(s, dst, out);
}

/* emily_fft, emily_ifft, emily_rfft and emily_irfft: fft_axis of their kind. */
#define FFT_ENTRY(name, KIND)                                                                                    \
    emily_status emily_##name(const emily_tensor *t, int64_t length, int axis, double eps, emily_tensor **out) { \
        return fft_axis(KIND, t, length, axis, eps, out);                                                        \
    }
FFT_ENTRY(fft, KIND_FFT)
FFT_ENTRY(ifft, KIND_IFFT)
FFT_ENTRY(rfft, KIND_RFFT)
FFT_ENTRY(irfft, KIND_IRFFT)
#undef FFT_ENTRY

static emily_status fft2(fft_kind kind, const emily_tensor *t, const int64_t lengths[2], const int axes[2], double eps,
                         emily_tensor **out) {
    const char *op = kind == KIND_FFT ? "fft2" : "ifft2";
    emily_status s;
    if ((s = emi_check_out(op, out))) return s;
    if ((s = emi_check_tensor(op, "tensor", t))) return s;
    if (!axes || !lengths) return emily_error(EMILY_ERR_ARGUMENT, "%s: axes and lengths are required", op);
    if (t->rank < 2)
        return emily_error(EMILY_ERR_SHAPE, "%s: expected a tensor with rank > 1, got tensor with rank %d", op,
                           t->rank);
    int ax[2];
    if ((s = emi_norm_axes(op, 2, axes, t->rank, ax, NULL))) return s;
    emily_tensor *mid;
    if ((s = fft_axis(kind, t, lengths[1], ax[1], eps, &mid))) return s;
    s = fft_axis(kind, mid, lengths[0], ax[0], eps, out);
    emily_tensor_release(mid);
    return s;
}

emily_status emily_fft2(const emily_tensor *t, const int64_t lengths[2], const int axes[2], double eps,
                        emily_tensor **out) {
    return fft2(KIND_FFT, t, lengths, axes, eps, out);
}

emily_status emily_ifft2(const emily_tensor *t, const int64_t lengths[2], const int axes[2], double eps,
                         emily_tensor **out) {
    return fft2(KIND_IFFT, t, lengths, axes, eps, out);
}
