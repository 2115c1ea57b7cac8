/* Runtime choice of the SIMD unary paths (see unary_simd.h). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/unary_simd.h"

enum { ISA_UNKNOWN = 0, ISA_NONE, ISA_AVX2, ISA_AVX512 };
static atomic_int isa;

static int detect(void) {
    const char *env = getenv("EMILY_SIMD");
    if (env && strcmp(env, "0") == 0) return ISA_NONE;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")) return ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ISA_AVX2;
#endif
    return ISA_NONE;
}

emily_vec_f32_fn emily_unary_simd_f32(emily_unary_op op) {
    int k = atomic_load_explicit(&isa, memory_order_relaxed);
    if (k == ISA_UNKNOWN) {
        k = detect();
        atomic_store_explicit(&isa, k, memory_order_relaxed);
    }
    switch (k) {
    case ISA_AVX512: {
        emily_vec_f32_fn f = emily_unary_avx512_f32(op);
        return f ? f : emily_unary_avx2_f32(op);
    }
    case ISA_AVX2: return emily_unary_avx2_f32(op);
    default: return NULL;
    }
}
