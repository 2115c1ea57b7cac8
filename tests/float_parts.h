/* Float elements as doubles with their bits, for the tests that compare
 * results within some ULP (the conformance runner's compare.c and
 * accumulation.c, the unit tests test_cuda.c, test_cuda_linalg.c and
 * test_cuda_conv.c). Everything is static inline: one copy per file that
 * uses it. */
#ifndef EMILY_TEST_FLOAT_PARTS_H
#define EMILY_TEST_FLOAT_PARTS_H

#include <stdint.h>
#include <string.h>
#include "emily/emily.h"

/* The float at p of dtype dt (for a complex dtype, one of its parts) as a
 * double, with its bits and their width. */
static inline double fp_part(emily_dtype dt, const unsigned char *p, uint64_t *bits, int *width) {
    switch (dt) {
    case EMILY_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        *bits = h;
        *width = 16;
        return emily_f16_to_f32(h);
    }
    case EMILY_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        *bits = h;
        *width = 16;
        return emily_bf16_to_f32(h);
    }
    case EMILY_F8_E5M2:
        *bits = p[0];
        *width = 8;
        return emily_f8_e5m2_to_f64(p[0]);
    case EMILY_F8_E4M3FN:
        *bits = p[0];
        *width = 8;
        return emily_f8_e4m3fn_to_f64(p[0]);
    case EMILY_F32:
    case EMILY_C64: {
        float f;
        uint32_t u;
        memcpy(&f, p, 4);
        memcpy(&u, p, 4);
        *bits = u;
        *width = 32;
        return f;
    }
    default: {
        double f;
        memcpy(&f, p, 8);
        memcpy(bits, p, 8);
        *width = 64;
        return f;
    }
    }
}

/* Maps float bits to integers whose order is the floats' order, so the
 * difference of two mapped values counts representable steps. */
static inline int64_t fp_ordered(uint64_t bits, int width) {
    uint64_t sign = 1ull << (width - 1);
    int64_t mag = (int64_t)(bits & (sign - 1));
    return (bits & sign) ? -mag : mag;
}

/* The unit roundoff of a real float dtype. */
static inline double fp_unit_roundoff(emily_dtype real) {
    switch (real) {
    case EMILY_F16: return 0x1p-11;
    case EMILY_BF16: return 0x1p-8;
    case EMILY_F8_E5M2: return 0x1p-3;
    case EMILY_F8_E4M3FN: return 0x1p-4;
    case EMILY_F32: return 0x1p-24;
    default: return 0x1p-53;
    }
}

#endif
