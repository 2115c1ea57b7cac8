/* The one list of element types. Every per-dtype dispatch, on either
 * device, expands these lists instead of spelling out `case EMILY_...:`
 * for each type, so adding a type means adding one line here (plus its
 * load/store rules in scalar_convert.h).
 *
 * Each entry is X(ENUM, sfx, T):
 *   ENUM  the enum suffix: EMILY_##ENUM is the emily_dtype value,
 *   sfx   the lower-case suffix kernels are named with (add_f32),
 *   T     the storage type of one element (f16 and bf16 are stored as
 *         their 16-bit patterns; complex types are scalar_convert.h's).
 *
 * The classes follow Nx's: the sub-lists let a family expand only the
 * types it accepts. Valid C11 and CUDA C++ (no includes needed to expand
 * the lists; the storage types need <stdint.h> and scalar_convert.h). */
#ifndef EMILY_CORE_DTYPE_LIST_H
#define EMILY_CORE_DTYPE_LIST_H

/* clang-format off */
#define EMI_DTYPES_UNSIGNED(X) \
    X(U8, u8, uint8_t) X(U16, u16, uint16_t) X(U32, u32, uint32_t) X(U64, u64, uint64_t)
#define EMI_DTYPES_SIGNED(X) \
    X(S8, s8, int8_t) X(S16, s16, int16_t) X(S32, s32, int32_t) X(S64, s64, int64_t)
#define EMI_DTYPES_INTEGER(X) EMI_DTYPES_UNSIGNED(X) EMI_DTYPES_SIGNED(X)

/* 16-bit floats: stored as bits, computed in float. */
#define EMI_DTYPES_HALF(X) X(F16, f16, uint16_t) X(BF16, bf16, uint16_t)
/* Floats the hardware computes in directly. */
#define EMI_DTYPES_NATIVE_FLOAT(X) X(F32, f32, float) X(F64, f64, double)
#define EMI_DTYPES_FLOAT(X) EMI_DTYPES_HALF(X) EMI_DTYPES_NATIVE_FLOAT(X)

#define EMI_DTYPES_REAL(X) EMI_DTYPES_INTEGER(X) EMI_DTYPES_FLOAT(X)
#define EMI_DTYPES_COMPLEX(X) X(C64, c64, emily_c64) X(C128, c128, emily_c128)
#define EMI_DTYPES_INEXACT(X) EMI_DTYPES_FLOAT(X) EMI_DTYPES_COMPLEX(X)

/* Every type, in enum order. */
#define EMI_DTYPES(X) EMI_DTYPES_REAL(X) EMI_DTYPES_COMPLEX(X)

/* The same lists handing extra arguments on to each entry:
 * X(ENUM, sfx, T, ...) with the arguments after X. A table over two
 * dtypes, or an op list crossed with the dtypes, expands these inside
 * an expansion of the lists above (a macro cannot expand itself), so
 * these are a second copy of the rows: tests/unit/test_convert.c checks
 * that both copies list the same types, in enum order, with the sizes
 * and names of emily/dtype.h. */
#define EMI_DTYPES_UNSIGNED_WITH(X, ...)                                     \
    X(U8, u8, uint8_t, __VA_ARGS__) X(U16, u16, uint16_t, __VA_ARGS__)       \
    X(U32, u32, uint32_t, __VA_ARGS__) X(U64, u64, uint64_t, __VA_ARGS__)
#define EMI_DTYPES_SIGNED_WITH(X, ...)                                       \
    X(S8, s8, int8_t, __VA_ARGS__) X(S16, s16, int16_t, __VA_ARGS__)         \
    X(S32, s32, int32_t, __VA_ARGS__) X(S64, s64, int64_t, __VA_ARGS__)
#define EMI_DTYPES_INTEGER_WITH(X, ...) \
    EMI_DTYPES_UNSIGNED_WITH(X, __VA_ARGS__) EMI_DTYPES_SIGNED_WITH(X, __VA_ARGS__)
#define EMI_DTYPES_HALF_WITH(X, ...) X(F16, f16, uint16_t, __VA_ARGS__) X(BF16, bf16, uint16_t, __VA_ARGS__)
#define EMI_DTYPES_NATIVE_FLOAT_WITH(X, ...) X(F32, f32, float, __VA_ARGS__) X(F64, f64, double, __VA_ARGS__)
#define EMI_DTYPES_FLOAT_WITH(X, ...) \
    EMI_DTYPES_HALF_WITH(X, __VA_ARGS__) EMI_DTYPES_NATIVE_FLOAT_WITH(X, __VA_ARGS__)
#define EMI_DTYPES_REAL_WITH(X, ...) EMI_DTYPES_INTEGER_WITH(X, __VA_ARGS__) EMI_DTYPES_FLOAT_WITH(X, __VA_ARGS__)
#define EMI_DTYPES_COMPLEX_WITH(X, ...) \
    X(C64, c64, emily_c64, __VA_ARGS__) X(C128, c128, emily_c128, __VA_ARGS__)
#define EMI_DTYPES_INEXACT_WITH(X, ...) \
    EMI_DTYPES_FLOAT_WITH(X, __VA_ARGS__) EMI_DTYPES_COMPLEX_WITH(X, __VA_ARGS__)
#define EMI_DTYPES_WITH(X, ...) EMI_DTYPES_REAL_WITH(X, __VA_ARGS__) EMI_DTYPES_COMPLEX_WITH(X, __VA_ARGS__)

/* Each complex type with the real type of its parts:
 * X(ENUM, sfx, T, PART_ENUM, part_sfx, PART_T, ...). */
#define EMI_COMPLEX_PARTS_WITH(X, ...)                                       \
    X(C64, c64, emily_c64, F32, f32, float, __VA_ARGS__)                     \
    X(C128, c128, emily_c128, F64, f64, double, __VA_ARGS__)
/* clang-format on */

/* Whether the dtype value t is in a list, by its _WITH form:
 * EMI_DTYPE_IN(EMI_DTYPES_HALF_WITH, t) is nonzero for f16 and bf16. */
#define EMI_DTYPE_IN_(ENUM, sfx, T, t) || (t) == EMILY_##ENUM
#define EMI_DTYPE_IN(LIST_WITH, t) (0 LIST_WITH(EMI_DTYPE_IN_, t))

/* Ready-made expansions for the most common dispatch: inside a
 * `switch (dtype)`, `EMI_DTYPES_REAL(EMI_CASE_RETURN_FN)` with
 * `#define EMI_FN_PREFIX sum_` before it returns sum_f32 for EMILY_F32,
 * and so on. */
// clang-format off
#define EMI_PASTE_(a, b) a##b
#define EMI_PASTE(a, b) EMI_PASTE_(a, b)
#define EMI_CASE_RETURN_FN(ENUM, sfx, T) \
    case EMILY_##ENUM:                   \
        return EMI_PASTE(EMI_FN_PREFIX, sfx);
// clang-format on

#endif
