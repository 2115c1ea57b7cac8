/* AVX-512 (F + DQ) paths of the unary and conversion kernels (see
 * unary_simd.h): the vector layer of unary_simd_body.h for 512-bit
 * registers, and that body compiled for this instruction set by the
 * pragma below (reached only after the runtime check in unary_simd.c).
 * Comparisons give mask registers, and tails use masked loads and
 * stores. */
#define SIMD_ISA avx512
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx512f,avx512dq,avx2,fma,f16c")
#include <immintrin.h>
#include <sleef.h>
#include <string.h>
#include "cpu/unary_simd.h"

#define SIMD_PREFIX _mm512_
#define NF 16
#define ND 8
typedef __m512 vf;
typedef __m512d vd;
typedef __m256i vh;

#define VF_CMP(a, b, p) _mm512_cmp_ps_mask(a, b, p)
#define VD_CMP(a, b, p) _mm512_cmp_pd_mask(a, b, p)
#define VF_SELECT(m, t, f) _mm512_mask_mov_ps(f, m, t)
#define VD_SELECT(m, t, f) _mm512_mask_mov_pd(f, m, t)
#define VF_ROUND(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VF_SCALE2(e, n) _mm512_scalef_ps(e, n) /* exact: n in [-27, 0] */
#define VF_FROM_BITS(i) _mm512_castsi512_ps(i)
#define VF_BITS(x) _mm512_castps_si512(x)
#define VF_WIDEN_LO(x) _mm512_cvtps_pd(_mm512_castps512_ps256(x))
#define VF_WIDEN_HI(x) _mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1))
#define VF_NARROW_JOIN(lo, hi) _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1)
#define VH_LOAD(p) _mm256_loadu_si256((const __m256i *)(p))
#define VH_STORE(p, h) _mm256_storeu_si256((__m256i *)(p), h)
#define VF_TO_PH(x) _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VF_FROM_PH(h) _mm512_cvtph_ps(h)
/* one vector's top halves, narrowed */
#define BF16_OF_16(p, KEEP) _mm512_cvtepi32_epi16(_mm512_srli_epi32(VF_BITS(KEEP(_mm512_loadu_ps(p))), 16))
#define SLEEF_F(fn, ulp) Sleef_##fn##f16_##ulp##avx512f
#define SLEEF_D(fn, ulp) Sleef_##fn##d8_##ulp##avx512f

/* Tails through masked loads and stores of the first k lanes. */
#define PARTS(VT, T, MASK, SFX)                                    \
    static inline VT VT##_load_part(const T *p, int64_t k) {       \
        return _mm512_maskz_loadu_##SFX((MASK)((1u << k) - 1), p); \
    }                                                              \
    static inline void VT##_store_part(T *p, int64_t k, VT v) { _mm512_mask_storeu_##SFX(p, (MASK)((1u << k) - 1), v); }
PARTS(vf, float, __mmask16, ps)
PARTS(vd, double, __mmask8, pd)

#include "cpu/unary_simd_body.h"

#else /* not x86-64 with GCC: no AVX-512 paths */
#include "cpu/unary_simd.h"
EMI_UNARY_SIMD_NONE(avx512)
#endif
