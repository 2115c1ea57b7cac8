/* Runtime choice of the SIMD paths (see unary_simd.h). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/unary_simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

enum { ISA_UNKNOWN = 0, ISA_NONE, ISA_AVX2, ISA_AVX512 };
static atomic_int isa;

bool emi_cpu_has_avx2_set(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    /* the compiler runtime's checks include the OS's support for the
     * wider registers; F16C is read from CPUID leaf 1 (ECX) directly, as
     * clang's __builtin_cpu_supports has no "f16c" */
    __builtin_cpu_init();
    unsigned a, b, c, d;
    bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
#else
    return false;
#endif
}

bool emi_cpu_has_avx512_set(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return emi_cpu_has_avx2_set() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
    return false;
#endif
}

static int detect(void) {
    const char *env = getenv("EMILY_SIMD");
    if (env && strcmp(env, "0") == 0) return ISA_NONE;
    bool cap_avx2 = emi_cpu_has_avx2_set(), cap_avx512 = emi_cpu_has_avx512_set();
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

emily_vec_fn emi_unary_simd(emily_unary_op op, emily_dtype src, emily_dtype dst) {
    switch (current_isa()) {
    case ISA_AVX512: {
        emily_vec_fn f = emi_unary_avx512(op, src, dst);
        return f ? f : emi_unary_avx2(op, src, dst);
    }
    case ISA_AVX2: return emi_unary_avx2(op, src, dst);
    default: return NULL;
    }
}

emily_vec_fn emi_convert_simd(emily_dtype src, emily_dtype dst) {
    switch (current_isa()) {
    case ISA_AVX512: {
        emily_vec_fn f = emi_convert_avx512(src, dst);
        return f ? f : emi_convert_avx2(src, dst);
    }
    case ISA_AVX2: return emi_convert_avx2(src, dst);
    default: return NULL;
    }
}
