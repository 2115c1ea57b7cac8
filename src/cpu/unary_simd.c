/* Runtime choice of the SIMD paths (see unary_simd.h). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/unary_simd.h"

enum { ISA_UNKNOWN = 0, ISA_NONE, ISA_AVX2, ISA_AVX512 };
static atomic_int isa;

static int detect(void) {
    const char *env = getenv("EMILY_SIMD");
    if (env && strcmp(env, "0") == 0) return ISA_NONE;
    bool cap_avx2 = false, cap_avx512 = false;
#if defined(__x86_64__) && defined(__GNUC__)
    /* libgcc's checks include the OS's support for the wider registers */
    __builtin_cpu_init();
    cap_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("f16c");
    cap_avx512 = cap_avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#endif
    /* EMILY_SIMD=avx2 caps the choice (to test that path on a bigger CPU) */
    if (env && strcmp(env, "avx2") == 0) return cap_avx2 ? ISA_AVX2 : ISA_NONE;
    return cap_avx512 ? ISA_AVX512 : cap_avx2 ? ISA_AVX2 : ISA_NONE;
}

static int current_isa(void) {
    int k = atomic_load_explicit(&isa, memory_order_relaxed);
    if (k == ISA_UNKNOWN) {
        k = detect();
        atomic_store_explicit(&isa, k, memory_order_relaxed);
    }
    return k;
}

emily_vec_fn emily_unary_simd(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    switch (current_isa()) {
    case ISA_AVX512: {
        emily_vec_fn f = emily_unary_avx512(op, src, dst);
        return f ? f : emily_unary_avx2(op, src, dst);
    }
    case ISA_AVX2: return emily_unary_avx2(op, src, dst);
    default: return NULL;
    }
}

emily_vec_fn emily_convert_simd(emily_dtype src, emily_dtype dst) {
    switch (current_isa()) {
    case ISA_AVX512: {
        emily_vec_fn f = emily_convert_avx512(src, dst);
        return f ? f : emily_convert_avx2(src, dst);
    }
    case ISA_AVX2: return emily_convert_avx2(src, dst);
    default: return NULL;
    }
}
