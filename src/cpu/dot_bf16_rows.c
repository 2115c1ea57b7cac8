/* FAST products of one to four rows by a bf16 matrix stored with the
 * contraction innermost: a decode step's activations times a bf16 linear
 * layer's weights [N, K]. The general FAST path converts all of the
 * matrix to f32 before BLAS runs, on every product (a SmolLM2 decode
 * step with bf16 weights: 188 ms a token on 2 cores against 34 for f32
 * weights); here each output column is a dot of the rows with the
 * column's K contiguous bf16 values, widened in registers (a bf16 is the
 * top half of an f32: exact), so the matrix is read once, at half the
 * bytes of f32.
 *
 * Order (FAST leaves it unspecified; this is it): per row and column, 8
 * f32 lanes over k = 16i + l (two vectors, lanes l and 8 + l), fused
 * multiply-adds from +0.0 in increasing i, the two vectors added, the 8
 * lanes summed pairwise (l with l + 4, then + 2, then + 1), then the
 * last K mod 16 products fused in order. */
#include <stdlib.h>
#include <string.h>
#include "core/scalar_convert.h"
#include "cpu/dot_bf16_rows.h"
#include "cpu/parallel.h"

#define MAX_ROWS 4
#define COLS_PER_JOB 64
/* a's rows widened to f32 at most this many elements (decode: 576) */
#define MAX_A_ELEMS ((int64_t)1 << 22)

bool emi_cpu_fast_bf16_rows_applies(const emily_tensor *a, const emily_tensor *bm) {
#if defined(__x86_64__) && defined(__GNUC__)
    int64_t nb = a->shape[0], m = a->shape[1], k = a->shape[2];
    return m >= 1 && m <= MAX_ROWS && k >= 1 && bm->dtype == EMILY_BF16 && bm->strides[1] == 1 &&
           (a->dtype == EMILY_F32 || a->dtype == EMILY_BF16) && nb * m * k <= MAX_A_ELEMS &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    (void)a;
    (void)bm;
    return false;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

typedef struct rows_job {
    const float *a;    /* [B, M, K] widened, contiguous */
    const uint16_t *b; /* bm's element (0, 0, 0) */
    int64_t sb0, sb2;  /* bm's batch and column strides */
    int64_t a_batches; /* 1 when a is broadcast over the batch */
    float *c;
    int64_t m, n, k, blocks;
} rows_job;

/* 8 bf16 values (16 bytes) as 8 f32 */
__attribute__((target("avx2,fma"))) static inline __m256 widen8(const uint16_t *p) {
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx2,fma"))) static float lanes_sum(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    __m128 s4 = _mm_add_ps(lo, hi);                    /* l + (l + 4) */
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4)); /* + 2 */
    __m128 s1 = _mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1));
    return _mm_cvtss_f32(s1);
}

__attribute__((target("avx2,fma"))) static void rows_block(void *ctx, int64_t t) {
    const rows_job *j = ctx;
    int64_t bi = t / j->blocks, blk = t % j->blocks;
    int64_t j0 = blk * COLS_PER_JOB, j1 = j0 + COLS_PER_JOB < j->n ? j0 + COLS_PER_JOB : j->n;
    const float *a = j->a + (j->a_batches > 1 ? bi : 0) * j->m * j->k;
    float *c = j->c + bi * j->m * j->n;
    int64_t m = j->m, k = j->k, k16 = k / 16 * 16;
    for (int64_t col = j0; col < j1; col++) {
        const uint16_t *w = j->b + bi * j->sb0 + col * j->sb2;
        __m256 acc0[MAX_ROWS], acc1[MAX_ROWS];
        for (int64_t r = 0; r < m; r++) acc0[r] = acc1[r] = _mm256_setzero_ps();
        for (int64_t p = 0; p < k16; p += 16) {
            __m256 w0 = widen8(w + p), w1 = widen8(w + p + 8);
            for (int64_t r = 0; r < m; r++) {
                acc0[r] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * k + p), w0, acc0[r]);
                acc1[r] = _mm256_fmadd_ps(_mm256_loadu_ps(a + r * k + p + 8), w1, acc1[r]);
            }
        }
        for (int64_t r = 0; r < m; r++) {
            float s = lanes_sum(_mm256_add_ps(acc0[r], acc1[r]));
            for (int64_t p = k16; p < k; p++) s = __builtin_fmaf(a[r * k + p], emily_sc_bf16_to_f32(w[p]), s);
            c[r * j->n + col] = s;
        }
    }
}

emily_status emi_cpu_fast_bf16_rows(const emily_tensor *a, const emily_tensor *bm, float *c) {
    int64_t nb = bm->shape[0], m = a->shape[1], k = a->shape[2], n = bm->shape[2];
    /* a's rows widened once (a broadcast batch once for all) */
    int64_t a_batches = a->strides[0] == 0 ? 1 : a->shape[0];
    float *aw = malloc(sizeof(float) * (size_t)(a_batches * m * k));
    if (!aw) return emily_error(EMILY_ERR_MEMORY, "dot: out of host memory for the rows");
    const char *abase = emily_tensor_base(a);
    for (int64_t bi = 0; bi < a_batches; bi++)
        for (int64_t r = 0; r < m; r++)
            for (int64_t p = 0; p < k; p++) {
                int64_t off = bi * a->strides[0] + r * a->strides[1] + p * a->strides[2];
                float v;
                if (a->dtype == EMILY_F32) memcpy(&v, abase + off * 4, 4);
                else {
                    uint16_t h;
                    memcpy(&h, abase + off * 2, 2);
                    v = emily_sc_bf16_to_f32(h);
                }
                aw[(bi * m + r) * k + p] = v;
            }
    rows_job j = {aw, (const uint16_t *)emily_tensor_base(bm), bm->strides[0], bm->strides[2], a_batches, c, m, n,
                  k,  (n + COLS_PER_JOB - 1) / COLS_PER_JOB};
    int64_t tasks = nb * j.blocks;
    /* a stream over bm: a quarter of a product's threshold */
    if (nb * m * n * k >= EMI_CPU_MACS_PARALLEL_MIN / 4 && tasks > 1) emi_cpu_parallel(tasks, rows_block, &j);
    else
        for (int64_t t = 0; t < tasks; t++) rows_block(&j, t);
    free(aw);
    return EMILY_OK;
}
#else
emily_status emi_cpu_fast_bf16_rows(const emily_tensor *a, const emily_tensor *bm, float *c) {
    (void)a, (void)bm, (void)c;
    return emily_error(EMILY_ERR_INTERNAL, "dot: the bf16 rows path is not built for this CPU");
}
#endif
