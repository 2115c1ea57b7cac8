/* EMI_CPU_HOT: a function built again for AVX-512 and AVX2 and picked at
 * run time (GCC's target_clones), for the plain loops the compiler
 * vectorizes. Off under the sanitizers: ASan's and TSan's
 * instrumentation of the clones' resolvers runs when the dynamic loader
 * resolves them, before the sanitizer's runtime is set up (TSan
 * crashes there in __tsan_func_entry). */
#ifndef EMILY_CPU_HOT_CLONES_H
#define EMILY_CPU_HOT_CLONES_H

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define EMI_CPU_NO_CLONES 1
#endif
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__) && \
    !defined(EMI_CPU_NO_CLONES)
#define EMI_CPU_HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define EMI_CPU_HOT
#endif

#endif
