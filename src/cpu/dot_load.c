/* The dot kernels' operand loaders (see dot_load.h). */
#include "cpu/dot_load.h"
#include "cpu/dtype_scalars.h"
#include "emily/dtype.h"

/* ---- a strided run of any dtype -> the compute type -------------------
 * n elements from src (stride in source elements) to dst (stride in
 * compute-type scalars; for complex types the imaginary part goes
 * `imoff` scalars after the real part). */

/* The value of one element x: its real part RE(x) and imaginary part
 * IM(x) as doubles, or its integer bits U64(x) (a signed value's
 * conversion to uint64_t is its sign extension). */
#define RE_OF(sfx) emi_to_f64_##sfx
#define IM_OF(sfx) emi_im_of_##sfx
#define U64_INT(x) ((uint64_t)(x))
#define U64_NONE(x) ((void)(x), (uint64_t)0) /* floats never reach integer dots */

// clang-format off
#define DEFINE_LOAD(NAME, ST, RE, IM, U64)                                             \
    static void NAME(const void *src, int64_t ss, int64_t n, ctype ct, void *dst,      \
                     int64_t ds, int64_t imoff) {                                       \
        const ST *s = (const ST *)src;                                                  \
        switch (ct) {                                                                   \
        case CT_F32: { float *d = dst; for (int64_t i = 0; i < n; i++) d[i * ds] = (float)RE(s[i * ss]); break; } \
        case CT_F64: { double *d = dst; for (int64_t i = 0; i < n; i++) d[i * ds] = RE(s[i * ss]); break; } \
        case CT_C64: {                                                                  \
            float *d = dst;                                                             \
            for (int64_t i = 0; i < n; i++) {                                           \
                d[i * ds] = (float)RE(s[i * ss]);                                       \
                d[i * ds + imoff] = (float)IM(s[i * ss]);                               \
            }                                                                           \
            break;                                                                      \
        }                                                                               \
        case CT_C128: {                                                                 \
            double *d = dst;                                                            \
            for (int64_t i = 0; i < n; i++) {                                           \
                d[i * ds] = RE(s[i * ss]);                                              \
                d[i * ds + imoff] = IM(s[i * ss]);                                      \
            }                                                                           \
            break;                                                                      \
        }                                                                               \
        case CT_U32: { uint32_t *d = dst; for (int64_t i = 0; i < n; i++) d[i * ds] = (uint32_t)U64(s[i * ss]); break; } \
        case CT_U64: { uint64_t *d = dst; for (int64_t i = 0; i < n; i++) d[i * ds] = U64(s[i * ss]); break; } \
        }                                                                               \
    }
// clang-format on

/* load_<sfx> for every dtype */
#define LOAD_INTEGER(ENUM, sfx, T) DEFINE_LOAD(load_##sfx, T, RE_OF(sfx), IM_OF(sfx), U64_INT)
#define LOAD_INEXACT(ENUM, sfx, T) DEFINE_LOAD(load_##sfx, T, RE_OF(sfx), IM_OF(sfx), U64_NONE)
EMI_DTYPES_INTEGER(LOAD_INTEGER)
EMI_DTYPES_INEXACT(LOAD_INEXACT)

#define LOADER_ENTRY(ENUM, sfx, T) [EMILY_##ENUM] = load_##sfx,
const load_fn emi_dot_loaders[EMILY_DTYPE_COUNT] = {EMI_DTYPES(LOADER_ENTRY)};
