// Per-dtype dispatch of the CUDA kernels (C++, nvcc only), generated from
// the one dtype list (src/core/dtype_list.h): a runtime dtype becomes a
// template argument here, once, and every kernel family is written as a
// template over it that picks per-class code with `if constexpr`:
//
//     return with_dtype(t, "sum", [&]<emily_dtype D>() -> emily_status {
//         typedef storage_t<D> T;
//         if constexpr (is_integer(D)) return launch<T>(...);
//         else ...;
//     });
//
// Adding a dtype to the list adds its case to every family; a family that
// does not accept it says so in its `if constexpr` chain.
#ifndef EMILY_CUDA_DTYPE_DISPATCH_CUH
#define EMILY_CUDA_DTYPE_DISPATCH_CUH

#include <stdint.h>
#include "cuda/cuda_context.h"
#include "core/dtype_list.h"
#include "core/scalar_convert.h"
#include "core/convert_rules.h"

namespace emily_cuda {

// The storage type of one element (f16 and bf16: their 16-bit patterns).
template <emily_dtype D> struct dtype_storage;
#define EMI_CUDA_STORAGE_(E, sfx, T) \
    template <> struct dtype_storage<EMILY_##E> { typedef T type; };
EMI_DTYPES(EMI_CUDA_STORAGE_)
#undef EMI_CUDA_STORAGE_
template <emily_dtype D> using storage_t = typename dtype_storage<D>::type;

// Class membership, from the list's sub-lists (host and device).
#define EMI_CUDA_IN_(E, sfx, T) || d == EMILY_##E
#define EMI_CUDA_CLASS_(NAME, LIST) \
    __host__ __device__ constexpr bool NAME(emily_dtype d) { return false LIST(EMI_CUDA_IN_); }
EMI_CUDA_CLASS_(is_unsigned, EMI_DTYPES_UNSIGNED)
EMI_CUDA_CLASS_(is_signed, EMI_DTYPES_SIGNED)
EMI_CUDA_CLASS_(is_integer, EMI_DTYPES_INTEGER)
EMI_CUDA_CLASS_(is_half, EMI_DTYPES_HALF)
EMI_CUDA_CLASS_(is_float, EMI_DTYPES_FLOAT)
EMI_CUDA_CLASS_(is_complex, EMI_DTYPES_COMPLEX)
#undef EMI_CUDA_CLASS_
#undef EMI_CUDA_IN_

// Calls f.template operator()<D>() with D the dtype t as a constant, for
// every type of the list; `what` names the op in the error for a value
// that is no dtype.
template <typename F> emily_status with_dtype(emily_dtype t, const char *what, F &&f) {
    switch (t) {
// clang-format off
#define EMI_CUDA_CASE_(E, sfx, T) \
    case EMILY_##E:               \
        return f.template operator()<EMILY_##E>();
        // clang-format on
        EMI_DTYPES(EMI_CUDA_CASE_)
#undef EMI_CUDA_CASE_
    default: return emily_error(EMILY_ERR_TYPE, "%s: invalid dtype %d", what, (int)t);
    }
}

// Each type's two as_type rules (core/convert_rules.h), by dtype: re(v) and
// im(v), an element's parts as doubles; from_f64(re, im), an element from
// them by Nx's rules. as_type pairs them; the families that compute in
// double (cumulative, window) read and write elements with them, as the
// CPU's element_access.h does.
template <emily_dtype D> struct cv_rules;
#define EMI_CUDA_CV_RULES_(E, sfx, T)                                                                                \
    template <> struct cv_rules<EMILY_##E> {                                                                         \
        static __device__ __forceinline__ double re(T v) { return emi_cv_re_##sfx(v); }                              \
        static __device__ __forceinline__ double im(T v) { return emi_cv_im_##sfx(v); }                              \
        static __device__ __forceinline__ T from_f64(double re, double im) { return emi_cv_from_f64_##sfx(re, im); } \
    };
EMI_DTYPES(EMI_CUDA_CV_RULES_)
#undef EMI_CUDA_CV_RULES_

// An element of a dtype known only at run time, as the CPU's
// element_access.h reads it: rt_load_f, the value as a double (complex:
// the real part; integers converted); rt_load_int, an integer's 64-bit
// pattern (signed types sign-extended; 0 for floats).
__device__ __forceinline__ double rt_load_f(int dt, const void *p) {
    switch (dt) {
// clang-format off
#define EMI_CUDA_RT_F_(E, sfx, T) \
    case EMILY_##E: return cv_rules<EMILY_##E>::re(*(const T *)p);
        // clang-format on
        EMI_DTYPES(EMI_CUDA_RT_F_)
#undef EMI_CUDA_RT_F_
    default: return 0.0;
    }
}
__device__ __forceinline__ uint64_t rt_load_int(int dt, const void *p) {
    switch (dt) {
// clang-format off
#define EMI_CUDA_RT_I_(E, sfx, T) \
    case EMILY_##E: return (uint64_t) * (const T *)p;
        // clang-format on
        EMI_DTYPES_INTEGER(EMI_CUDA_RT_I_)
#undef EMI_CUDA_RT_I_
    default: return 0;
    }
}

// Elements moved as raw bits by their size (copies, fills).
struct alignas(16) b128_t {
    uint64_t lo, hi;
};
template <size_t S> struct bits_of;
template <> struct bits_of<1> { typedef uint8_t type; };
template <> struct bits_of<2> { typedef uint16_t type; };
template <> struct bits_of<4> { typedef uint32_t type; };
template <> struct bits_of<8> { typedef uint64_t type; };
template <> struct bits_of<16> { typedef b128_t type; };

// Calls f.template operator()<B>() with B the raw-bits type of an element
// of dtype t: kernels that only move elements need their width alone, so
// types of one size share one instantiation.
template <typename F> emily_status with_element_bits(emily_dtype t, const char *what, F &&f) {
    switch (emily_dtype_size(t)) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    case 16: return f.template operator()<b128_t>();
    default: return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: bad element size", what);
    }
}

} // namespace emily_cuda

#endif
