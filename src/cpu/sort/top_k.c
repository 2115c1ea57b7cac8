/* top_k by selection (see sort.h): when k is small against the row, the
 * k best records are kept in a heap and only elements whose key beats
 * the worst of them get in (keys.c's filter, a vector compare for f32);
 * a long row is split into slices selected on threads, then merged. */
#include <omp.h>
#include <stdlib.h>
#include "cpu/sort/sort.h"

/* Slice lengths from which top_k's selection splits a single row over
 * threads. */
#define TOPK_PAR_MIN ((int64_t)1 << 16)
#define TOPK_PAR_MIN_SIMD ((int64_t)1 << 23)

/* Moves x down from the root of the max-heap heap[0, k) (by LESS_PAIR:
 * the worst record at the root) to where it belongs. */
static void sift_down(pair64 *heap, int64_t k, int64_t j, pair64 x) {
    for (;;) {
        int64_t c = 2 * j + 1;
        if (c >= k) break;
        if (c + 1 < k && LESS_PAIR(heap[c], heap[c + 1])) c++;
        if (!LESS_PAIR(x, heap[c])) break;
        heap[j] = heap[c];
        j = c;
    }
    heap[j] = x;
}

/* The k best (smallest descending record) of positions [lo, hi) of a
 * row (hi - lo >= k), sorted best first into heap[0, k). The first k
 * records fill a max-heap with the worst at the root; after that only
 * an element whose key is below the root's gets in: positions grow, so
 * an equal key is a later position, which loses the tie. */
static void topk_select(const row_args *a, const char *s, int64_t lo, int64_t hi, pair64 *heap) {
    int64_t k = a->k;
    size_t es = emily_dtype_size(a->dt);
    int kb = key_bits(a->dt);
    uint64_t all = kb == 64 ? UINT64_MAX : ((uint64_t)1 << kb) - 1;
    emi_sort_row_records(a->dt, s + lo * a->ss * (int64_t)es, a->ss, k, lo, true, REC_PAIR, heap);
    for (int64_t j = k / 2; j-- > 0;) sift_down(heap, k, j, heap[j]);
    for (int64_t i = lo + k; i < hi; i++) {
        /* descending key below root <=> ascending key above ~root */
        i = emi_sort_find_above(a->dt, s, a->ss, i, hi, ~heap[0].key & all);
        if (i == hi) break;
        pair64 x;
        emi_sort_row_records(a->dt, s + i * a->ss * (int64_t)es, a->ss, 1, i, true, REC_PAIR, &x);
        sift_down(heap, k, 0, x);
    }
    /* heap sort in place: ascending order */
    for (int64_t end = k - 1; end > 0; end--) {
        pair64 x = heap[end];
        heap[end] = heap[0];
        sift_down(heap, end, 0, x);
    }
}

/* Threads a single row's selection runs on: slices of at least
 * TOPK_PAR_MIN elements (TOPK_PAR_MIN_SIMD where the vector filter
 * runs), each holding k or more. The vector filter reads 1e6 f32 in
 * about 0.05 ms, less than a thread team can cost on a busy machine
 * (where a helper thread waits for a core, a join took milliseconds). */
int emi_sort_topk_threads(const row_args *a, int T) {
    int64_t n = a->n, k = a->k, min = TOPK_PAR_MIN;
#if HAVE_SORT_AVX512
    if (a->dt == EMILY_F32 && a->ss == 1 && emi_sort_use_avx512()) min = TOPK_PAR_MIN_SIMD;
#endif
    int64_t per = k > min ? k : min;
    int64_t t = n / per;
    if (T > 64) T = 64;
    return t < 1 ? 1 : t < T ? (int)t : T;
}

/* top_k of one row by selection (scratch: (T + 1) * k records; the
 * result lands in the first k): T slices select their k best side by
 * side, then the sorted lists are merged. */
pair64 *emi_sort_topk_row(const row_args *a, const char *s, pair64 *scratch, int T) {
    int64_t n = a->n, k = a->k;
    T = emi_sort_topk_threads(a, T);
    if (T == 1) {
        topk_select(a, s, 0, n, scratch);
        return scratch;
    }
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        /* a team smaller than asked leaves slices to the others */
        for (int u = t; u < T; u += nt) topk_select(a, s, n * u / T, n * (u + 1) / T, scratch + (size_t)u * (size_t)k);
    }
    pair64 *out = scratch + (size_t)T * (size_t)k;
    int64_t at[64] = {0};
    for (int64_t i = 0; i < k; i++) {
        int best = -1;
        for (int u = 0; u < T; u++)
            if (at[u] < k && (best < 0 || LESS_PAIR(scratch[(size_t)u * (size_t)k + (size_t)at[u]],
                                                    scratch[(size_t)best * (size_t)k + (size_t)at[best]])))
                best = u;
        out[i] = scratch[(size_t)best * (size_t)k + (size_t)at[best]++];
    }
    return out;
}
