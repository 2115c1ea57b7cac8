/* AVX2 + FMA + F16C paths of the unary and conversion kernels (see
 * unary_simd.h): the vector layer of unary_simd_body.h for 256-bit
 * registers, and that body compiled for this instruction set by the
 * pragma below (reached only after the runtime check in unary_simd.c). */
#define SIMD_ISA avx2
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx2,fma,f16c")
#include <immintrin.h>
#include <sleef.h>
#include <string.h>
#include "cpu/unary_simd.h"

#define SIMD_PREFIX _mm256_
#define NF 8
#define ND 4
typedef __m256 vf;
typedef __m256d vd;
typedef __m128i vh;

/* Comparisons give all-ones lanes; blendv picks by their sign bits. */
#define VF_CMP(a, b, p) _mm256_cmp_ps(a, b, p)
#define VD_CMP(a, b, p) _mm256_cmp_pd(a, b, p)
#define VF_SELECT(m, t, f) _mm256_blendv_ps(f, t, m)
#define VD_SELECT(m, t, f) _mm256_blendv_pd(f, t, m)
#define VF_ROUND(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* 2^n added to the exponent bits: exact for n in [-27, 0] and a normal
 * e (NaN lanes give a garbage n; their result is NaN regardless) */
#define VF_SCALE2(e, n) \
    _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(e), _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23)))
#define VF_FROM_BITS(i) _mm256_castsi256_ps(i)
#define VF_BITS(x) _mm256_castps_si256(x)
#define VF_WIDEN_LO(x) _mm256_cvtps_pd(_mm256_castps256_ps128(x))
#define VF_WIDEN_HI(x) _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))
#define VF_NARROW_JOIN(lo, hi) _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo))
#define VH_LOAD(p) _mm_loadu_si128((const __m128i *)(p))
#define VH_STORE(p, h) _mm_storeu_si128((__m128i *)(p), h)
#define VF_TO_PH(x) _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VF_FROM_PH(h) _mm256_cvtph_ps(h)
/* two vectors' top halves; packus interleaves 128-bit lanes
 * (a0 b0 a1 b1), the permute puts them back in order */
#define BF16_OF_16(p, KEEP)                                                                                       \
    _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_srli_epi32(VF_BITS(KEEP(_mm256_loadu_ps(p))), 16),        \
                                                 _mm256_srli_epi32(VF_BITS(KEEP(_mm256_loadu_ps((p) + 8))), 16)), \
                             0xd8)
#define SLEEF_F(fn, ulp) Sleef_##fn##f8_##ulp##avx2
#define SLEEF_D(fn, ulp) Sleef_##fn##d4_##ulp##avx2

/* Tails through a zero-padded copy (AVX2 has no masked moves of floats
 * and doubles that are cheaper). */
#define PARTS(VT, T, NV, SFX)                                   \
    static inline VT VT##_load_part(const T *p, int64_t k) {    \
        T buf[NV] = {0};                                        \
        memcpy(buf, p, (size_t)k * sizeof *p);                  \
        return _mm256_loadu_##SFX(buf);                         \
    }                                                           \
    static inline void VT##_store_part(T *p, int64_t k, VT v) { \
        T buf[NV];                                              \
        _mm256_storeu_##SFX(buf, v);                            \
        memcpy(p, buf, (size_t)k * sizeof *p);                  \
    }
PARTS(vf, float, NF, ps)
PARTS(vd, double, ND, pd)

#include "cpu/unary_simd_body.h"

#else /* not x86-64 with GCC: no AVX2 paths */
#include "cpu/unary_simd.h"
EMI_UNARY_SIMD_NONE(avx2)
#endif
