// as_type on CUDA: every pair of the 14 dtypes with Nx's rules, the very
// expressions of src/cpu/convert.c over core/scalar_convert.h.
#include "cuda/common.cuh"

using namespace emily_cuda;

namespace {

__device__ __forceinline__ emily_c64 mk_c64(double re, double im) {
    emily_c64 z;
    z.re = (float)re;
    z.im = (float)im;
    return z;
}
__device__ __forceinline__ emily_c128 mk_c128(double re, double im) {
    emily_c128 z;
    z.re = re;
    z.im = im;
    return z;
}

// From an integer source: integers wrap, the rest goes through the
// double value of the integer.
#define FROM_INT(SN, ST)                                                               \
    EMILY_CUDA_FN1(cv_##SN##_u8, ST, uint8_t, (uint8_t)v)                              \
    EMILY_CUDA_FN1(cv_##SN##_u16, ST, uint16_t, (uint16_t)v)                           \
    EMILY_CUDA_FN1(cv_##SN##_u32, ST, uint32_t, (uint32_t)v)                           \
    EMILY_CUDA_FN1(cv_##SN##_u64, ST, uint64_t, (uint64_t)v)                           \
    EMILY_CUDA_FN1(cv_##SN##_s8, ST, int8_t, (int8_t)v)                                \
    EMILY_CUDA_FN1(cv_##SN##_s16, ST, int16_t, (int16_t)v)                             \
    EMILY_CUDA_FN1(cv_##SN##_s32, ST, int32_t, (int32_t)v)                             \
    EMILY_CUDA_FN1(cv_##SN##_s64, ST, int64_t, (int64_t)v)                             \
    EMILY_CUDA_FN1(cv_##SN##_f16, ST, uint16_t, emily_sc_f64_to_f16((double)v))        \
    EMILY_CUDA_FN1(cv_##SN##_bf16, ST, uint16_t, emily_sc_f64_to_bf16((double)v))      \
    EMILY_CUDA_FN1(cv_##SN##_f32, ST, float, (float)(double)v)                         \
    EMILY_CUDA_FN1(cv_##SN##_f64, ST, double, (double)v)                               \
    EMILY_CUDA_FN1(cv_##SN##_c64, ST, emily_c64, mk_c64((double)v, 0.0))               \
    EMILY_CUDA_FN1(cv_##SN##_c128, ST, emily_c128, mk_c128((double)v, 0.0))

// From a float or complex source: RE and IM are double expressions of v.
#define FROM_FLOAT(SN, ST, RE, IM)                                                     \
    EMILY_CUDA_FN1(cv_##SN##_u8, ST, uint8_t, emily_sc_f64_to_u8(RE))                  \
    EMILY_CUDA_FN1(cv_##SN##_u16, ST, uint16_t, emily_sc_f64_to_u16(RE))               \
    EMILY_CUDA_FN1(cv_##SN##_u32, ST, uint32_t, emily_sc_f64_to_u32(RE))               \
    EMILY_CUDA_FN1(cv_##SN##_u64, ST, uint64_t, emily_sc_f64_to_u64(RE))               \
    EMILY_CUDA_FN1(cv_##SN##_s8, ST, int8_t, emily_sc_f64_to_s8(RE))                   \
    EMILY_CUDA_FN1(cv_##SN##_s16, ST, int16_t, emily_sc_f64_to_s16(RE))                \
    EMILY_CUDA_FN1(cv_##SN##_s32, ST, int32_t, emily_sc_f64_to_s32(RE))                \
    EMILY_CUDA_FN1(cv_##SN##_s64, ST, int64_t, emily_sc_f64_to_s64(RE))                \
    EMILY_CUDA_FN1(cv_##SN##_f16, ST, uint16_t, emily_sc_f64_to_f16(RE))               \
    EMILY_CUDA_FN1(cv_##SN##_bf16, ST, uint16_t, emily_sc_f64_to_bf16(RE))             \
    EMILY_CUDA_FN1(cv_##SN##_f32, ST, float, (float)(RE))                              \
    EMILY_CUDA_FN1(cv_##SN##_f64, ST, double, (RE))                                    \
    EMILY_CUDA_FN1(cv_##SN##_c64, ST, emily_c64, mk_c64((RE), (IM)))                   \
    EMILY_CUDA_FN1(cv_##SN##_c128, ST, emily_c128, mk_c128((RE), (IM)))

FROM_INT(u8, uint8_t)
FROM_INT(u16, uint16_t)
FROM_INT(u32, uint32_t)
FROM_INT(u64, uint64_t)
FROM_INT(s8, int8_t)
FROM_INT(s16, int16_t)
FROM_INT(s32, int32_t)
FROM_INT(s64, int64_t)
FROM_FLOAT(f16, uint16_t, emily_sc_f16_to_f64(v), 0.0)
FROM_FLOAT(bf16, uint16_t, emily_sc_bf16_to_f64(v), 0.0)
FROM_FLOAT(f32, float, (double)v, 0.0)
FROM_FLOAT(f64, double, v, 0.0)
FROM_FLOAT(c64, emily_c64, (double)v.re, (double)v.im)
FROM_FLOAT(c128, emily_c128, v.re, v.im)

typedef emily_status (*run_fn)(const emily_cuda_ctx &, emily_tensor *, const emily_tensor *);

#define ROW(SN)                                                                        \
    {map1<cv_##SN##_u8>, map1<cv_##SN##_u16>, map1<cv_##SN##_u32>, map1<cv_##SN##_u64>, \
     map1<cv_##SN##_s8>, map1<cv_##SN##_s16>, map1<cv_##SN##_s32>, map1<cv_##SN##_s64>, \
     map1<cv_##SN##_f16>, map1<cv_##SN##_bf16>, map1<cv_##SN##_f32>, map1<cv_##SN##_f64>, \
     map1<cv_##SN##_c64>, map1<cv_##SN##_c128>}

const run_fn convert_table[EMILY_DTYPE_COUNT][EMILY_DTYPE_COUNT] = {
    ROW(u8),  ROW(u16), ROW(u32), ROW(u64), ROW(s8),  ROW(s16), ROW(s32),
    ROW(s64), ROW(f16), ROW(bf16), ROW(f32), ROW(f64), ROW(c64), ROW(c128),
};

} // namespace

extern "C" emily_status emi_cuda_convert(emily_tensor *dst, const emily_tensor *src) {
    if (!emily_dtype_valid(dst->dtype) || !emily_dtype_valid(src->dtype))
        return emily_error(EMILY_ERR_TYPE, "as_type: invalid dtype (%d to %d)", (int)src->dtype,
                           (int)dst->dtype);
    if (dst->size == 0) return EMILY_OK;
    if (dst->dtype == src->dtype) return emi_cuda_copy(dst, src);
    emily_cuda_ctx ctx;
    const emily_tensor *ts[2] = {dst, src};
    emily_status s = emi_cuda_begin("as_type", dev_of(dst), 2, ts, &ctx);
    if (s) return s;
    return convert_table[src->dtype][dst->dtype](ctx, dst, src);
}

// iota: the k-th counter value (k itself, or its index along the axis:
// (k / inner) % dim) as an s64, written with the s64 -> dtype rules (the
// expressions of src/cpu/create.c's iota).
template <typename F>
__global__ void iota_kernel(int64_t total, int64_t inner, int64_t dim, bool flat,
                            typename F::D *d) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < total;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t v = flat ? k : (k / inner) % dim;
        d[k] = F::apply(v);
    }
}

template <typename F>
static emily_status iota_run(const emily_cuda_ctx &ctx, emily_tensor *dst, int64_t inner,
                             int64_t dim, bool flat) {
    typename F::D *d = (typename F::D *)base_of(dst) + dst->offset;
    iota_kernel<F><<<grid_for(ctx.device, dst->size), BLOCK, 0, ctx.stream>>>(dst->size, inner, dim,
                                                                            flat, d);
    return emi_cuda_launched(&ctx);
}

extern "C" emily_status emi_cuda_iota(emily_tensor *dst, int axis) {
    if (dst->size == 0) return EMILY_OK;
    if (!emily_tensor_is_contiguous(dst))
        return emily_error(EMILY_ERR_INTERNAL, "iota: the output must be contiguous");
    if (axis >= dst->rank)
        return emily_error(EMILY_ERR_AXIS, "iota: axis %d out of range for rank %d", axis, dst->rank);
    int64_t inner = 1, dim = 1;
    if (axis >= 0) {
        dim = dst->shape[axis];
        for (int i = axis + 1; i < dst->rank; i++) inner *= dst->shape[i];
    }
    emily_cuda_ctx ctx;
    const emily_tensor *ts[1] = {dst};
    emily_status s = emi_cuda_begin("iota", dev_of(dst), 1, ts, &ctx);
    if (s) return s;
    bool flat = axis < 0;
    switch (dst->dtype) {
    case EMILY_U8: return iota_run<cv_s64_u8>(ctx, dst, inner, dim, flat);
    case EMILY_U16: return iota_run<cv_s64_u16>(ctx, dst, inner, dim, flat);
    case EMILY_U32: return iota_run<cv_s64_u32>(ctx, dst, inner, dim, flat);
    case EMILY_U64: return iota_run<cv_s64_u64>(ctx, dst, inner, dim, flat);
    case EMILY_S8: return iota_run<cv_s64_s8>(ctx, dst, inner, dim, flat);
    case EMILY_S16: return iota_run<cv_s64_s16>(ctx, dst, inner, dim, flat);
    case EMILY_S32: return iota_run<cv_s64_s32>(ctx, dst, inner, dim, flat);
    case EMILY_S64: return iota_run<cv_s64_s64>(ctx, dst, inner, dim, flat);
    case EMILY_F16: return iota_run<cv_s64_f16>(ctx, dst, inner, dim, flat);
    case EMILY_BF16: return iota_run<cv_s64_bf16>(ctx, dst, inner, dim, flat);
    case EMILY_F32: return iota_run<cv_s64_f32>(ctx, dst, inner, dim, flat);
    case EMILY_F64: return iota_run<cv_s64_f64>(ctx, dst, inner, dim, flat);
    case EMILY_C64: return iota_run<cv_s64_c64>(ctx, dst, inner, dim, flat);
    case EMILY_C128: return iota_run<cv_s64_c128>(ctx, dst, inner, dim, flat);
    default: return emily_error(EMILY_ERR_TYPE, "iota: invalid dtype %d", (int)dst->dtype);
    }
}
