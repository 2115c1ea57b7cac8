/* AVX2+FMA paths of the unary kernels (placeholder until vectorized). */
#include "cpu/unary_simd.h"

emily_vec_f32_fn emily_unary_avx2_f32(emily_unary_op op) {
    (void)op;
    return NULL;
}
