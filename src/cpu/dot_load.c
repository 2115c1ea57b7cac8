/* The dot kernels' operand loaders (see dot_load.h). */
#include "cpu/dot_load.h"
#include "emily/dtype.h"

/* ---- a strided run of any dtype -> the compute type -------------------
 * n elements from src (stride in source elements) to dst (stride in
 * compute-type scalars; for complex types the imaginary part goes
 * `imoff` scalars after the real part). */

typedef struct { float re, im; } cf32;
typedef struct { double re, im; } cf64;

#define RE_NUM(x) ((double)(x))
#define IM_ZERO(x) 0.0
#define RE_F16(x) ((double)emily_f16_to_f32(x))
#define RE_BF16(x) ((double)emily_bf16_to_f32(x))
#define RE_C(x) ((double)(x).re)
#define IM_C(x) ((double)(x).im)
/* integers are read exactly: signed sign-extends, unsigned zero-extends */
#define U64_S(x) ((uint64_t)(int64_t)(x))
#define U64_U(x) ((uint64_t)(x))
#define U64_NONE(x) ((void)(x), (uint64_t)0) /* floats never reach integer dots */

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

DEFINE_LOAD(load_u8, uint8_t, RE_NUM, IM_ZERO, U64_U)
DEFINE_LOAD(load_u16, uint16_t, RE_NUM, IM_ZERO, U64_U)
DEFINE_LOAD(load_u32, uint32_t, RE_NUM, IM_ZERO, U64_U)
DEFINE_LOAD(load_u64, uint64_t, RE_NUM, IM_ZERO, U64_U)
DEFINE_LOAD(load_s8, int8_t, RE_NUM, IM_ZERO, U64_S)
DEFINE_LOAD(load_s16, int16_t, RE_NUM, IM_ZERO, U64_S)
DEFINE_LOAD(load_s32, int32_t, RE_NUM, IM_ZERO, U64_S)
DEFINE_LOAD(load_s64, int64_t, RE_NUM, IM_ZERO, U64_S)
DEFINE_LOAD(load_f16, uint16_t, RE_F16, IM_ZERO, U64_NONE)
DEFINE_LOAD(load_bf16, uint16_t, RE_BF16, IM_ZERO, U64_NONE)
DEFINE_LOAD(load_f32, float, RE_NUM, IM_ZERO, U64_NONE)
DEFINE_LOAD(load_f64, double, RE_NUM, IM_ZERO, U64_NONE)
DEFINE_LOAD(load_c64, cf32, RE_C, IM_C, U64_NONE)
DEFINE_LOAD(load_c128, cf64, RE_C, IM_C, U64_NONE)

const load_fn emi_dot_loaders[EMILY_DTYPE_COUNT] = {
    load_u8, load_u16, load_u32, load_u64, load_s8, load_s16, load_s32, load_s64,
    load_f16, load_bf16, load_f32, load_f64, load_c64, load_c128};

