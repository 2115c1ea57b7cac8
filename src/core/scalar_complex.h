/* The complex value the scalar rules of both devices compute with: a
 * pair of doubles, which c64 and c128 elements widen to exactly. The
 * unary rules (core/scalar_unary.h) and the binary ones
 * (core/scalar_binary.h, which also call it emily_sb_complex) share it;
 * emily_cd_make is made as convert_rules.h's complex elements are
 * (scalar_convert.h's EMILY_SC_COMPLEX_MAKER).
 * Valid C11 and CUDA C++ (core/host_device.h). */
#ifndef EMILY_SCALAR_COMPLEX_H
#define EMILY_SCALAR_COMPLEX_H

#include "core/host_device.h"
#include "core/scalar_convert.h"

typedef struct emily_cd {
    double re, im;
} emily_cd;

EMILY_SC_COMPLEX_MAKER(emily_cd_make, emily_cd, double)

#endif
