/* Element access by dtype for the CPU window and cumulative kernels:
 * every element is read as a 64-bit integer pattern (sign-extended for
 * signed types), a double (real floats) or two doubles (complex), and
 * written back with Nx's conversion rules (src/core/scalar_convert.h). */
#ifndef EMILY_CPU_ELEMENT_ACCESS_H
#define EMILY_CPU_ELEMENT_ACCESS_H

#include <stdint.h>
#include <string.h>
#include "core/scalar_convert.h"
#include "emily/dtype.h"

/* 0 integer, 1 real float, 2 complex */
static inline int we_class(emily_dtype t) {
    return emily_dtype_is_complex(t) ? 2 : emily_dtype_is_float(t) ? 1 : 0;
}

static inline uint64_t we_load_int(emily_dtype t, const char *p) {
    switch (t) {
    case EMILY_U8: return *(const uint8_t *)p;
    case EMILY_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case EMILY_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case EMILY_U64: { uint64_t v; memcpy(&v, p, 8); return v; }
    case EMILY_S8: return (uint64_t)(int64_t)*(const int8_t *)p;
    case EMILY_S16: { int16_t v; memcpy(&v, p, 2); return (uint64_t)(int64_t)v; }
    case EMILY_S32: { int32_t v; memcpy(&v, p, 4); return (uint64_t)(int64_t)v; }
    case EMILY_S64: { int64_t v; memcpy(&v, p, 8); return (uint64_t)v; }
    default: return 0;
    }
}

static inline double we_load_f(emily_dtype t, const char *p) {
    switch (t) {
    case EMILY_F16: { uint16_t h; memcpy(&h, p, 2); return emily_sc_f16_to_f64(h); }
    case EMILY_BF16: { uint16_t h; memcpy(&h, p, 2); return emily_sc_bf16_to_f64(h); }
    case EMILY_F32: { float f; memcpy(&f, p, 4); return f; }
    case EMILY_F64: { double f; memcpy(&f, p, 8); return f; }
    case EMILY_C64: { float f; memcpy(&f, p, 4); return f; }
    case EMILY_C128: { double f; memcpy(&f, p, 8); return f; }
    default: {
        uint64_t b = we_load_int(t, p);
        return (t == EMILY_U8 || t == EMILY_U16 || t == EMILY_U32 || t == EMILY_U64)
                   ? (double)b : (double)(int64_t)b;
    }
    }
}

static inline double we_load_im(emily_dtype t, const char *p) {
    if (t == EMILY_C64) { float f; memcpy(&f, p + 4, 4); return f; }
    if (t == EMILY_C128) { double f; memcpy(&f, p + 8, 8); return f; }
    return 0.0;
}

static inline bool we_unsigned(emily_dtype t) {
    return t == EMILY_U8 || t == EMILY_U16 || t == EMILY_U32 || t == EMILY_U64;
}

static inline void we_store_int(emily_dtype t, uint64_t bits, char *p) {
    emily_sc_store_int((int)t, bits, we_unsigned(t), p);
}
static inline void we_store_f(emily_dtype t, double re, double im, char *p) {
    emily_sc_store_complex((int)t, re, im, p);
}

#endif
