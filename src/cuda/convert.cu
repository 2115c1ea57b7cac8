// as_type on CUDA: every pair of the dtype list with Nx's rules, each
// pair one map1 instantiation of the two per-type rules of
// core/convert_rules.h (over core/scalar_convert.h, as the CPU's).
#include "cuda/common.cuh"
#include "core/iota_layout.h"
#include "core/narrow_rules.h"

using namespace emily_cuda;

namespace {

// An element function (common.cuh's map1) converting dtype SD to DD.
template <emily_dtype SD, emily_dtype DD> struct Cv {
    typedef storage_t<SD> S;
    typedef storage_t<DD> D;
    static __device__ __forceinline__ D apply(S v) {
        if constexpr (is_integer(SD) && is_integer(DD)) return (D)v; // wraps
        else return cv_rules<DD>::from_f64(cv_rules<SD>::re(v), cv_rules<SD>::im(v));
    }
};

} // namespace

extern "C" emily_status emi_cuda_convert(emily_tensor *dst, const emily_tensor *src) {
    if (!emily_dtype_valid(dst->dtype) || !emily_dtype_valid(src->dtype))
        return emily_error(EMILY_ERR_TYPE, "as_type: invalid dtype (%d to %d)", (int)src->dtype, (int)dst->dtype);
    if (dst->size == 0) return EMILY_OK;
    if (dst->dtype == src->dtype) return emi_cuda_copy(dst, src);
    emily_cuda_ctx ctx;
    emily_status s = begin_dst_src("as_type", dst, src, &ctx);
    if (s) return s;
    return with_dtype(src->dtype, "as_type", [&]<emily_dtype SD>() -> emily_status {
        return with_dtype(dst->dtype, "as_type",
                          [&]<emily_dtype DD>() -> emily_status { return map1<Cv<SD, DD>>(ctx, dst, src); });
    });
}

// A narrow type to or from its hub (core/narrow_rules.h): element
// functions of the list's rules, picked like the CPU's.
#define NARROW_FUNCTORS(E, sfx, T, TO_F64, FROM_F64, FROM_S64)                       \
    struct Nr_##sfx##_to_f64 {                                                       \
        typedef T S;                                                                 \
        typedef double D;                                                            \
        static __device__ __forceinline__ D apply(S v) { return TO_F64; }            \
    };                                                                               \
    struct Nr_##sfx##_to_s64 {                                                       \
        typedef T S;                                                                 \
        typedef int64_t D;                                                           \
        static __device__ __forceinline__ D apply(S v) { return (int64_t)(TO_F64); } \
    };                                                                               \
    struct Nr_f64_to_##sfx {                                                         \
        typedef double S;                                                            \
        typedef T D;                                                                 \
        static __device__ __forceinline__ D apply(S x) { return (T)(FROM_F64); }     \
    };                                                                               \
    struct Nr_s64_to_##sfx {                                                         \
        typedef int64_t S;                                                           \
        typedef T D;                                                                 \
        static __device__ __forceinline__ D apply(S v) {                             \
            uint64_t b = (uint64_t)v;                                                \
            return (T)(FROM_S64);                                                    \
        }                                                                            \
    };
EMI_NARROW_TYPES(NARROW_FUNCTORS)
#undef NARROW_FUNCTORS

extern "C" emily_status emi_cuda_convert_narrow(emily_tensor *dst, const emily_tensor *src) {
    if (dst->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    emily_status s = begin_dst_src("as_type", dst, src, &ctx);
    if (s) return s;
    emily_dtype sd = src->dtype, dd = dst->dtype;
#define PICK(E, sfx, T, TO_F64, FROM_F64, FROM_S64)                                        \
    if (sd == EMILY_##E && dd == EMILY_F64) return map1<Nr_##sfx##_to_f64>(ctx, dst, src); \
    if (sd == EMILY_##E && dd == EMILY_S64 && emily_dtype_is_integer(sd))                  \
        return map1<Nr_##sfx##_to_s64>(ctx, dst, src);                                     \
    if (sd == EMILY_F64 && dd == EMILY_##E) return map1<Nr_f64_to_##sfx>(ctx, dst, src);   \
    if (sd == EMILY_S64 && dd == EMILY_##E && emily_dtype_is_integer(dd)) return map1<Nr_s64_to_##sfx>(ctx, dst, src);
    EMI_NARROW_TYPES(PICK)
#undef PICK
    return emily_error(EMILY_ERR_INTERNAL, "as_type: no narrow conversion from %s to %s", emily_dtype_name(sd),
                       emily_dtype_name(dd));
}

// iota: the k-th counter value (k itself, or its index along the axis:
// (k / inner) % dim) as an s64, written with the s64 -> dtype rules (the
// expressions of src/cpu/create.c's iota).
template <typename F>
__global__ void iota_kernel(int64_t total, int64_t inner, int64_t dim, bool flat, typename F::D *d) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < total; k += (int64_t)gridDim.x * blockDim.x) {
        int64_t v = flat ? k : (k / inner) % dim;
        d[k] = F::apply(v);
    }
}

template <typename F>
static emily_status iota_run(const emily_cuda_ctx &ctx, emily_tensor *dst, int64_t inner, int64_t dim, bool flat) {
    typename F::D *d = (typename F::D *)base_of(dst) + dst->offset;
    iota_kernel<F><<<grid_for(ctx.device, dst->size), BLOCK, 0, ctx.stream>>>(dst->size, inner, dim, flat, d);
    return emi_cuda_launched(&ctx);
}

extern "C" emily_status emi_cuda_iota(emily_tensor *dst, int axis) {
    if (dst->size == 0) return EMILY_OK;
    int64_t inner, dim;
    emily_status s = emi_iota_layout(dst, axis, &dim, &inner);
    if (s) return s;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[1] = {dst};
    if ((s = emi_cuda_begin("iota", dev_of(dst), 1, ts, &ctx))) return s;
    bool flat = axis < 0;
    return with_dtype(dst->dtype, "iota", [&]<emily_dtype DD>() -> emily_status {
        return iota_run<Cv<EMILY_S64, DD>>(ctx, dst, inner, dim, flat);
    });
}
