/* Reading dot operands into the compute type (src/cpu/dot_load.c), for
 * the dot kernels of dot.c and dot_blocked.c. */
#ifndef EMILY_CPU_DOT_LOAD_H
#define EMILY_CPU_DOT_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include "core/engine.h"

/* The type products are computed in. */
typedef enum ctype { CT_F32, CT_F64, CT_C64, CT_C128, CT_U32, CT_U64 } ctype;

static inline size_t ct_size(ctype ct) {
    static const size_t sizes[] = {4, 8, 8, 16, 4, 8};
    return sizes[ct];
}

/* n elements from src (stride ss in source elements) to dst (stride ds
 * in compute-type scalars; a complex value's imaginary part goes imoff
 * scalars after its real part), read as Nx.BinaryBackend reads them:
 * integers exactly (signed ones sign-extended), f16/bf16 through f32,
 * floats and complex numbers at the compute type's precision. One
 * function per source dtype, indexed by emily_dtype. */
typedef void (*load_fn)(const void *src, int64_t ss, int64_t n, ctype ct, void *dst, int64_t ds, int64_t imoff);
extern const load_fn emi_dot_loaders[EMILY_DTYPE_COUNT];

#endif
