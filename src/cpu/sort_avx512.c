/* AVX-512 quicksort of unsigned keys (the sort family's fast path on
 * CPUs with AVX-512F; see src/cpu/sort.c, which calls these only when
 * emi_cpu_isa() says so).
 *
 * Keys here are already in Nx's order as unsigned integers, and callers
 * only hand over arrays whose equal keys are interchangeable (keys of a
 * values sort, or key/position records that are all distinct), so an
 * unstable sort gives exactly the stable result.
 *
 * The method: partition around the median of a 16-key sample, moving one
 * vector at a time with compress-stores to both ends of the array (two
 * vectors held back at the start leave room, so nothing unread is ever
 * overwritten); once a part has at most 16 vectors it is sorted in
 * registers by a merging network (sortnet32) whose cost follows the
 * number of registers the part fills. A pivot that is the part's minimum
 * splits off the run of keys equal to it, so repeated keys cannot stall
 * the recursion; past a depth limit a part falls back to heapsort
 * (n log n whatever the data, in place). Inside a parallel region, long
 * arrays spread their parts over OpenMP tasks. */
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,popcnt,bmi2")
#include <immintrin.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Declared again in src/cpu/sort.c, the only caller. */
void emi_cpu_sort_u32_avx512(uint32_t *a, int64_t n, bool tasks);
void emi_cpu_sort_u64_avx512(uint64_t *a, int64_t n, bool tasks);
void emi_cpu_keys_f32_avx512(const uint32_t *s, int64_t n, uint32_t flip, uint32_t *keys);
void emi_cpu_sort_f32_avx512(const uint32_t *src, int64_t n, uint32_t flip, uint32_t *dst,
                               int threads, int64_t runs[4]);
void emi_cpu_records_f32_avx512(const uint32_t *s, int64_t n, int64_t first, uint32_t flip,
                                  uint64_t *recs);
void emi_cpu_unkeys_f32_avx512(const uint32_t *keys, int64_t n, uint32_t flip, uint32_t *d);
void emi_cpu_positions_s32_avx512(const uint64_t *recs, int64_t n, int32_t *d);
int64_t emi_cpu_find_above_f32_avx512(const uint32_t *s, int64_t i, int64_t n, uint32_t lim);

#define AI static inline __attribute__((always_inline))

/* Parts of at most this many keys are sorted by a network (the
 * partitions need at least 128 and 64 keys). */
#ifndef SMALL32_MAX
#define SMALL32_MAX 256
#endif
#ifndef SMALL64_MAX
#define SMALL64_MAX 128
#endif
_Static_assert(SMALL32_MAX >= 128 && SMALL32_MAX <= 256, "partition32 needs 128 keys");
_Static_assert(SMALL64_MAX >= 64 && SMALL64_MAX <= 128, "partition64 needs 64 keys");

/* Parts from this size on become OpenMP tasks. */
#define TASK_MIN ((int64_t)1 << 16)

/* The lanes (of a register of `lanes` keys) whose index has bit j set:
 * those that take the larger key of a pair j apart. A constant once
 * inlined. */
AI unsigned lane_bits(int lanes, int64_t j) {
    unsigned all = lanes == 16 ? 0xffffu : 0xffu;
    unsigned m = j == 1 ? 0xaaaau : j == 2 ? 0xccccu : j == 4 ? 0xf0f0u : 0xff00u;
    return m & all;
}

/* In-place heapsort: the fallback past the depth limit (O(n log n)
 * whatever the data, no extra memory). */
#define DEFINE_HEAPSORT(NAME, T)                                                   \
    static void NAME(T *a, int64_t n) {                                            \
        for (int64_t i = n / 2; i-- > 0;) {                                        \
            T x = a[i];                                                            \
            int64_t j = i;                                                         \
            for (;;) {                                                             \
                int64_t c = 2 * j + 1;                                             \
                if (c >= n) break;                                                 \
                if (c + 1 < n && a[c] < a[c + 1]) c++;                             \
                if (!(x < a[c])) break;                                            \
                a[j] = a[c];                                                       \
                j = c;                                                             \
            }                                                                      \
            a[j] = x;                                                              \
        }                                                                          \
        for (int64_t end = n - 1; end > 0; end--) {                                \
            T x = a[end];                                                          \
            a[end] = a[0];                                                         \
            int64_t j = 0;                                                         \
            for (;;) {                                                             \
                int64_t c = 2 * j + 1;                                             \
                if (c >= end) break;                                               \
                if (c + 1 < end && a[c] < a[c + 1]) c++;                           \
                if (!(x < a[c])) break;                                            \
                a[j] = a[c];                                                       \
                j = c;                                                             \
            }                                                                      \
            a[j] = x;                                                              \
        }                                                                          \
    }
DEFINE_HEAPSORT(heapsort32, uint32_t)
DEFINE_HEAPSORT(heapsort64, uint64_t)

/* ======================================================================
 * 32-bit keys, 16 lanes
 * ====================================================================== */

/* Stores the m-lanes of v, packed, at p (cnt = popcount(m) keys). The
 * compress goes to a register and the store is masked: the memory form
 * of the compress is slow on Intel cores. */
AI void cstore32(uint32_t *p, __mmask16 m, __m512i v, int cnt) {
    _mm512_mask_storeu_epi32(p, (__mmask16)_bzhi_u32(0xffffu, (unsigned)cnt), _mm512_maskz_compress_epi32(m, v));
}

/* Lane i of a register against lane i ^ m (m < 16), the larger key to
 * the lane that has m's top bit: one layer of an ascending network. */
AI __m512i lanes32(__m512i v, int m) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    int top = m >= 8 ? 8 : m >= 4 ? 4 : m >= 2 ? 2 : 1;
    __mmask16 maxmask = (__mmask16)lane_bits(16, top);
    __m512i w = _mm512_permutexvar_epi32(_mm512_xor_si512(iota, _mm512_set1_epi32(m)), v);
    __m512i lo = _mm512_mask_min_epu32(v, (__mmask16)~maxmask, v, w);
    return _mm512_mask_max_epu32(lo, maxmask, v, w);
}

AI __m512i rev32(__m512i v) {
    const __m512i r = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm512_permutexvar_epi32(r, v);
}

/* Sorts the 16 R keys of v[0, R) (R <= 16) ascending, as if padded with
 * all-ones registers to a power of two. Every block is sorted ascending
 * and two sorted blocks merge by comparing each key with its mirror
 * image in the other block (i against 2m-1-i), then at halving
 * distances. In that form the all-ones pads never move, so comparisons
 * with a pad register are left out and the cost follows R rather than
 * the next power of two (an alternating-direction bitonic network would
 * move the pads). */
AI void sortnet32(__m512i *v, const int R) {
    const int P = R <= 1 ? 1 : R <= 2 ? 2 : R <= 4 ? 4 : R <= 8 ? 8 : 16;
    /* each register: blocks of 2, 4, 8, 16 lanes */
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
#pragma GCC unroll 4
        for (int k = 2; k <= 16; k <<= 1) {
            v[r] = lanes32(v[r], k - 1);
#pragma GCC unroll 4
            for (int j = k >> 2; j > 0; j >>= 1) v[r] = lanes32(v[r], j);
        }
    }
    /* blocks of kr registers */
#pragma GCC unroll 4
    for (int kr = 2; kr <= P; kr <<= 1) {
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            int q = (r & ~(kr - 1)) + kr - 1 - (r & (kr - 1)); /* r's mirror */
            if ((r & (kr >> 1)) || q >= R) continue;
            __m512i a = v[r], b = v[q];
            v[r] = _mm512_min_epu32(a, rev32(b));
            v[q] = _mm512_max_epu32(rev32(a), b);
        }
#pragma GCC unroll 4
        for (int jr = kr >> 2; jr > 0; jr >>= 1) {
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) {
                if ((r & jr) || r + jr >= R) continue;
                __m512i a = v[r], b = v[r + jr];
                v[r] = _mm512_min_epu32(a, b);
                v[r + jr] = _mm512_max_epu32(a, b);
            }
        }
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
#pragma GCC unroll 4
            for (int j = 8; j > 0; j >>= 1) v[r] = lanes32(v[r], j);
        }
    }
}

/* Sorts n keys (16 (R - 1) < n <= 16 R, or fewer where a larger
 * instance stands in) in R registers, the last filled with all-ones. */
#define SMALL32(R)                                                                  \
    static void small32_##R(uint32_t *a, int64_t n) {                               \
        __m512i v[R];                                                               \
        const __m512i pad = _mm512_set1_epi32(-1);                                  \
        for (int r = 0; r < R; r++) {                                               \
            int64_t left = n - 16 * r;                                              \
            __mmask16 m = left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)_bzhi_u32(0xffffu, (unsigned)left); \
            v[r] = _mm512_mask_loadu_epi32(pad, m, a + 16 * r);                     \
        }                                                                           \
        sortnet32(v, R);                                                            \
        for (int r = 0; r < R; r++) {                                               \
            int64_t left = n - 16 * r;                                              \
            __mmask16 m = left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)_bzhi_u32(0xffffu, (unsigned)left); \
            _mm512_mask_storeu_epi32(a + 16 * r, m, v[r]);                          \
        }                                                                           \
    }
/* Every register count up to 4, even ones above: an instance per count
 * measured the same and takes twice the code. */
SMALL32(1)
SMALL32(2)
SMALL32(3)
SMALL32(4)
SMALL32(6)
SMALL32(8)
SMALL32(10)
SMALL32(12)
SMALL32(14)
SMALL32(16)

/* Sorts n <= 256 keys. */
static void small_sort32(uint32_t *a, int64_t n) {
    typedef void (*small_fn)(uint32_t *, int64_t);
    static const small_fn by_regs[16] = {small32_1,  small32_2,  small32_3,  small32_4,
                                         small32_6,  small32_6,  small32_8,  small32_8,
                                         small32_10, small32_10, small32_12, small32_12,
                                         small32_14, small32_14, small32_16, small32_16};
    if (n <= 1) return;
    by_regs[(n - 1) >> 4](a, n);
}

/* Median of 16 keys spread over a (n >= 16). */
static uint32_t pivot32(const uint32_t *a, int64_t n) {
    uint32_t s[16];
    int64_t step = n / 16;
    for (int i = 0; i < 16; i++) s[i] = a[i * step + step / 2];
    __m512i v = _mm512_loadu_si512(s);
    sortnet32(&v, 1);
    _mm512_storeu_si512(s, v);
    return s[8];
}

/* Moves the keys below the pivot (at most the pivot when `le`) to the
 * front; returns how many there are. n >= 32 U (U vectors a step).
 *
 * U vectors from each end are held back, so the free room on the two
 * sides (where the next writes go) always adds up to 32 U keys; reading
 * the next U vectors from the side with less room leaves at least 16 U
 * on both, enough for any split of them. The side is picked without a
 * branch (it is data-dependent, so a branch would mispredict half the
 * time). */
AI int64_t partition32(uint32_t *a, int64_t n, uint32_t pivot, const bool le, const int U) {
    const __m512i pv = _mm512_set1_epi32((int)pivot);
    const int64_t W = 16 * (int64_t)U;
    __m512i keep[16];
    for (int i = 0; i < U; i++) {
        keep[i] = _mm512_loadu_si512(a + 16 * i);
        keep[U + i] = _mm512_loadu_si512(a + n - W + 16 * i);
    }
    int64_t l = W, r = n - W, lw = 0, rw = n;
#define PART32_MASK(V) (le ? _mm512_cmple_epu32_mask(V, pv) : _mm512_cmplt_epu32_mask(V, pv))
#define PART32_STEP(V, VALID)                                                      \
    do {                                                                           \
        __mmask16 m_ = PART32_MASK(V) & (VALID);                                   \
        int c_ = __builtin_popcount((unsigned)m_);                                 \
        int t_ = __builtin_popcount((unsigned)(VALID));                            \
        cstore32(a + lw, m_, V, c_);                                               \
        lw += c_;                                                                  \
        rw -= t_ - c_;                                                             \
        cstore32(a + rw, (__mmask16)(~m_ & (VALID)), V, (t_ - c_));                \
    } while (0)
    while (r - l >= W) {
        bool left = l - lw <= rw - r;
        int64_t pos = left ? l : r - W;
        l += left ? W : 0;
        r -= left ? 0 : W;
        __m512i v[8];
        __mmask16 m[8];
        int c[8];
#pragma GCC unroll 8
        for (int i = 0; i < U; i++) {
            v[i] = _mm512_loadu_si512(a + pos + 16 * i);
            m[i] = PART32_MASK(v[i]);
            c[i] = __builtin_popcount(m[i]);
        }
#pragma GCC unroll 8
        for (int i = 0; i < U; i++) {
            cstore32(a + lw, m[i], v[i], c[i]);
            lw += c[i];
            rw -= 16 - c[i];
            cstore32(a + rw, (__mmask16)~m[i], v[i], 16 - c[i]);
        }
    }
    while (r - l >= 16) {
        bool left = l - lw <= rw - r;
        int64_t pos = left ? l : r - 16;
        l += left ? 16 : 0;
        r -= left ? 0 : 16;
        __m512i v = _mm512_loadu_si512(a + pos);
        PART32_STEP(v, 0xffff);
    }
    if (r > l) {
        __mmask16 valid = (__mmask16)((1u << (r - l)) - 1);
        __m512i v = _mm512_maskz_loadu_epi32(valid, a + l);
        PART32_STEP(v, valid);
    }
    for (int i = 0; i < 2 * U; i++) PART32_STEP(keep[i], 0xffff);
#undef PART32_STEP
#undef PART32_MASK
    return lw;
}

/* The partitions, each compiled with its comparison and unrolling fixed
 * (eight vectors a step for long parts, four for short ones). */
static int64_t partition32_lt(uint32_t *a, int64_t n, uint32_t pivot) {
    return n >= 1024 ? partition32(a, n, pivot, false, 8) : partition32(a, n, pivot, false, 4);
}
static int64_t partition32_le(uint32_t *a, int64_t n, uint32_t pivot) {
    return partition32(a, n, pivot, true, 4);
}

static void qsort32(uint32_t *a, int64_t n, int depth, bool tasks) {
    while (n > SMALL32_MAX) {
        if (depth-- <= 0) {
            heapsort32(a, n);
            return;
        }
        uint32_t pivot = pivot32(a, n);
        int64_t m = partition32_lt(a, n, pivot);
        if (m == 0) {
            /* the pivot is the minimum: its copies are in place */
            m = partition32_le(a, n, pivot);
            a += m;
            n -= m;
            continue;
        }
        /* the smaller part first (recursion depth stays logarithmic) */
        uint32_t *sa = a;
        int64_t sn = m;
        if (m < n - m) {
            a += m;
            n -= m;
        } else {
            sa = a + m;
            sn = n - m;
            n = m;
        }
        if (tasks && sn >= TASK_MIN) {
#pragma omp task firstprivate(sa, sn, depth)
            qsort32(sa, sn, depth, true);
        } else {
            qsort32(sa, sn, depth, tasks && sn >= TASK_MIN);
        }
    }
    small_sort32(a, n);
}

static int depth_limit(int64_t n) {
    int d = 0;
    while (n > 1) {
        n >>= 1;
        d++;
    }
    return 2 * d + 4;
}

/* tasks: called by one thread of a parallel region (in a `single`),
 * whose team takes the parts of at least TASK_MIN keys as tasks. */
void emi_cpu_sort_u32_avx512(uint32_t *a, int64_t n, bool tasks) {
    qsort32(a, n, depth_limit(n), tasks && n >= 2 * TASK_MIN);
}

/* ======================================================================
 * 64-bit keys, 8 lanes: keys of f64/s64/u64 values, and argsort records
 * (key above position: all distinct, equal keys come out by position).
 * ====================================================================== */

AI void cstore64(uint64_t *p, __mmask8 m, __m512i v, int cnt) {
    _mm512_mask_storeu_epi64(p, (__mmask8)_bzhi_u32(0xffu, (unsigned)cnt), _mm512_maskz_compress_epi64(m, v));
}

/* As lanes32, rev32 and sortnet32 with 8 keys a register. */
AI __m512i lanes64(__m512i v, int m) {
    const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    int top = m >= 4 ? 4 : m >= 2 ? 2 : 1;
    __mmask8 maxmask = (__mmask8)lane_bits(8, top);
    __m512i w = _mm512_permutexvar_epi64(_mm512_xor_si512(iota, _mm512_set1_epi64(m)), v);
    __m512i lo = _mm512_mask_min_epu64(v, (__mmask8)~maxmask, v, w);
    return _mm512_mask_max_epu64(lo, maxmask, v, w);
}

AI __m512i rev64(__m512i v) {
    return _mm512_permutexvar_epi64(_mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7), v);
}

AI void sortnet64(__m512i *v, const int R) {
    const int P = R <= 1 ? 1 : R <= 2 ? 2 : R <= 4 ? 4 : R <= 8 ? 8 : 16;
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
#pragma GCC unroll 4
        for (int k = 2; k <= 8; k <<= 1) {
            v[r] = lanes64(v[r], k - 1);
#pragma GCC unroll 4
            for (int j = k >> 2; j > 0; j >>= 1) v[r] = lanes64(v[r], j);
        }
    }
#pragma GCC unroll 4
    for (int kr = 2; kr <= P; kr <<= 1) {
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            int q = (r & ~(kr - 1)) + kr - 1 - (r & (kr - 1));
            if ((r & (kr >> 1)) || q >= R) continue;
            __m512i a = v[r], b = v[q];
            v[r] = _mm512_min_epu64(a, rev64(b));
            v[q] = _mm512_max_epu64(rev64(a), b);
        }
#pragma GCC unroll 4
        for (int jr = kr >> 2; jr > 0; jr >>= 1) {
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) {
                if ((r & jr) || r + jr >= R) continue;
                __m512i a = v[r], b = v[r + jr];
                v[r] = _mm512_min_epu64(a, b);
                v[r + jr] = _mm512_max_epu64(a, b);
            }
        }
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
#pragma GCC unroll 4
            for (int j = 4; j > 0; j >>= 1) v[r] = lanes64(v[r], j);
        }
    }
}

#define SMALL64(R)                                                                  \
    static void small64_##R(uint64_t *a, int64_t n) {                               \
        __m512i v[R];                                                               \
        const __m512i pad = _mm512_set1_epi64(-1);                                  \
        for (int r = 0; r < R; r++) {                                               \
            int64_t left = n - 8 * r;                                               \
            __mmask8 m = left >= 8 ? 0xff : left <= 0 ? 0 : (__mmask8)((1u << left) - 1); \
            v[r] = _mm512_mask_loadu_epi64(pad, m, a + 8 * r);                      \
        }                                                                           \
        sortnet64(v, R);                                                            \
        for (int r = 0; r < R; r++) {                                               \
            int64_t left = n - 8 * r;                                               \
            __mmask8 m = left >= 8 ? 0xff : left <= 0 ? 0 : (__mmask8)((1u << left) - 1); \
            _mm512_mask_storeu_epi64(a + 8 * r, m, v[r]);                           \
        }                                                                           \
    }
SMALL64(1)
SMALL64(2)
SMALL64(3)
SMALL64(4)
SMALL64(6)
SMALL64(8)
SMALL64(10)
SMALL64(12)
SMALL64(14)
SMALL64(16)

/* Sorts n <= 128 keys. */
static void small_sort64(uint64_t *a, int64_t n) {
    typedef void (*small_fn)(uint64_t *, int64_t);
    static const small_fn by_regs[16] = {small64_1,  small64_2,  small64_3,  small64_4,
                                         small64_6,  small64_6,  small64_8,  small64_8,
                                         small64_10, small64_10, small64_12, small64_12,
                                         small64_14, small64_14, small64_16, small64_16};
    if (n <= 1) return;
    by_regs[(n - 1) >> 3](a, n);
}

static uint64_t pivot64(const uint64_t *a, int64_t n) {
    uint64_t s[16];
    int64_t step = n / 16;
    for (int i = 0; i < 16; i++) s[i] = a[i * step + step / 2];
    __m512i v[2] = {_mm512_loadu_si512(s), _mm512_loadu_si512(s + 8)};
    sortnet64(v, 2);
    _mm512_storeu_si512(s, v[0]);
    _mm512_storeu_si512(s + 8, v[1]);
    return s[8];
}

/* As partition32, with 8-key vectors (n >= 64). */
AI int64_t partition64(uint64_t *a, int64_t n, uint64_t pivot, const bool le) {
    const __m512i pv = _mm512_set1_epi64((long long)pivot);
    __m512i keep[8];
    for (int i = 0; i < 4; i++) {
        keep[i] = _mm512_loadu_si512(a + 8 * i);
        keep[4 + i] = _mm512_loadu_si512(a + n - 32 + 8 * i);
    }
    int64_t l = 32, r = n - 32, lw = 0, rw = n;
#define PART64_MASK(V) (le ? _mm512_cmple_epu64_mask(V, pv) : _mm512_cmplt_epu64_mask(V, pv))
#define PART64_STEP(V, VALID)                                                      \
    do {                                                                           \
        __mmask8 m_ = PART64_MASK(V) & (VALID);                                    \
        int c_ = __builtin_popcount((unsigned)m_);                                 \
        int t_ = __builtin_popcount((unsigned)(VALID));                            \
        cstore64(a + lw, m_, V, c_);                           \
        lw += c_;                                                                  \
        rw -= t_ - c_;                                                             \
        cstore64(a + rw, (__mmask8)(~m_ & (VALID)), V, (t_ - c_));    \
    } while (0)
    while (r - l >= 32) {
        bool left = l - lw <= rw - r;
        int64_t pos = left ? l : r - 32;
        l += left ? 32 : 0;
        r -= left ? 0 : 32;
        __m512i v0 = _mm512_loadu_si512(a + pos), v1 = _mm512_loadu_si512(a + pos + 8);
        __m512i v2 = _mm512_loadu_si512(a + pos + 16), v3 = _mm512_loadu_si512(a + pos + 24);
        __mmask8 m0 = PART64_MASK(v0), m1 = PART64_MASK(v1), m2 = PART64_MASK(v2), m3 = PART64_MASK(v3);
        int c0 = __builtin_popcount(m0), c1 = __builtin_popcount(m1);
        int c2 = __builtin_popcount(m2), c3 = __builtin_popcount(m3);
        cstore64(a + lw, m0, v0, c0);
        cstore64(a + lw + c0, m1, v1, c1);
        cstore64(a + lw + c0 + c1, m2, v2, c2);
        cstore64(a + lw + c0 + c1 + c2, m3, v3, c3);
        lw += c0 + c1 + c2 + c3;
        cstore64(a + rw - (8 - c0), (__mmask8)~m0, v0, (8 - c0));
        cstore64(a + rw - (16 - c0 - c1), (__mmask8)~m1, v1, (8 - c1));
        cstore64(a + rw - (24 - c0 - c1 - c2), (__mmask8)~m2, v2, (8 - c2));
        cstore64(a + rw - (32 - c0 - c1 - c2 - c3), (__mmask8)~m3, v3, (8 - c3));
        rw -= 32 - (c0 + c1 + c2 + c3);
    }
    while (r - l >= 8) {
        bool left = l - lw <= rw - r;
        int64_t pos = left ? l : r - 8;
        l += left ? 8 : 0;
        r -= left ? 0 : 8;
        __m512i v = _mm512_loadu_si512(a + pos);
        PART64_STEP(v, 0xff);
    }
    if (r > l) {
        __mmask8 valid = (__mmask8)((1u << (r - l)) - 1);
        __m512i v = _mm512_maskz_loadu_epi64(valid, a + l);
        PART64_STEP(v, valid);
    }
    for (int i = 0; i < 8; i++) PART64_STEP(keep[i], 0xff);
#undef PART64_STEP
#undef PART64_MASK
    return lw;
}

/* The partitions, each compiled with its comparison and unrolling fixed
 * (eight vectors a step for long parts, four for short ones). */
static int64_t partition64_lt(uint64_t *a, int64_t n, uint64_t pivot) { return partition64(a, n, pivot, false); }
static int64_t partition64_le(uint64_t *a, int64_t n, uint64_t pivot) { return partition64(a, n, pivot, true); }

static void qsort64(uint64_t *a, int64_t n, int depth, bool tasks) {
    while (n > SMALL64_MAX) {
        if (depth-- <= 0) {
            heapsort64(a, n);
            return;
        }
        uint64_t pivot = pivot64(a, n);
        int64_t m = partition64_lt(a, n, pivot);
        if (m == 0) {
            m = partition64_le(a, n, pivot);
            a += m;
            n -= m;
            continue;
        }
        uint64_t *sa = a;
        int64_t sn = m;
        if (m < n - m) {
            a += m;
            n -= m;
        } else {
            sa = a + m;
            sn = n - m;
            n = m;
        }
        if (tasks && sn >= TASK_MIN) {
#pragma omp task firstprivate(sa, sn, depth)
            qsort64(sa, sn, depth, true);
        } else {
            qsort64(sa, sn, depth, tasks && sn >= TASK_MIN);
        }
    }
    small_sort64(a, n);
}

/* tasks: called by one thread of a parallel region (in a `single`),
 * whose team takes the parts of at least TASK_MIN keys as tasks. */
void emi_cpu_sort_u64_avx512(uint64_t *a, int64_t n, bool tasks) {
    qsort64(a, n, depth_limit(n), tasks && n >= 2 * TASK_MIN);
}

/* ======================================================================
 * f32 keys in and out (contiguous rows), the same mapping as sort.c's
 * key_f32/unkey_f32: NaN -> all ones, -0.0 -> +0.0, then the
 * order-preserving flip; `flip` (0 or all ones) makes descending keys.
 * ====================================================================== */

AI __m512i keys16_f32(__m512i b, __m512i flip) {
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, absmask), inf);
    __mmask16 negzero = _mm512_cmpeq_epi32_mask(b, sign);
    b = _mm512_mask_mov_epi32(b, negzero, _mm512_setzero_si512());
    __m512i k = _mm512_xor_si512(b, _mm512_or_si512(_mm512_srai_epi32(b, 31), sign));
    k = _mm512_mask_mov_epi32(k, nan, _mm512_set1_epi32(-1));
    return _mm512_xor_si512(k, flip);
}

void emi_cpu_keys_f32_avx512(const uint32_t *s, int64_t n, uint32_t flip, uint32_t *keys) {
    const __m512i fv = _mm512_set1_epi32((int)flip);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_si512(keys + i, keys16_f32(_mm512_loadu_si512(s + i), fv));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_epi32(keys + i, m, keys16_f32(_mm512_maskz_loadu_epi32(m, s + i), fv));
    }
}

/* The key (with flip applied) of f32 bits x, as keys16_f32 makes it. */
static uint32_t key_of_f32(uint32_t x, uint32_t flip) {
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu ^ flip;
    if (x == 0x80000000u) x = 0;
    return (x & 0x80000000u ? ~x : x | 0x80000000u) ^ flip;
}

/* First position of a sorted row not below key v: keys themselves
 * (values false) or element bits in key order (values true). */
static int64_t lower_bound32(const uint32_t *k, int64_t n, uint32_t v, bool values, uint32_t flip) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((values ? key_of_f32(k[mid], flip) : k[mid]) < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Where the zeros and the NaNs of a sorted f32 row lie (their bits are
 * restored by the caller): runs = {z0, z1, q0, q1}. The row holds keys,
 * or (values) the bits mapped back from them: a zero key maps back to
 * +0.0 and the NaN key to a NaN, which map to the same keys again. */
static void zero_nan_runs32(const uint32_t *k, int64_t n, uint32_t flip, bool values, int64_t runs[4]) {
    uint32_t z = 0x80000000u ^ flip, q = 0xffffffffu ^ flip;
    runs[0] = lower_bound32(k, n, z, values, flip);
    runs[1] = lower_bound32(k, n, z + 1, values, flip); /* z is never all ones */
    runs[2] = lower_bound32(k, n, q, values, flip);
    runs[3] = q == 0xffffffffu ? n : lower_bound32(k, n, q + 1, values, flip);
}

/* The first pass of an f32 sort: the keys of src[lo, hi) go to dst,
 * those below the pivot pv upwards from *lw, the others from *gw,
 * upwards (`up`) or downwards (ending at *gw). Four vectors a step: one
 * at a time, the loads' latency showed. */
AI void split_keys_f32(const uint32_t *src, int64_t lo, int64_t hi, __m512i fv, __m512i pv,
                       uint32_t *dst, int64_t *lwp, int64_t *gwp, const bool up) {
    int64_t lw = *lwp, gw = *gwp, i = lo;
#define SPLIT_ONE(V, M, VALID)                                                      \
    do {                                                                           \
        int c_ = __builtin_popcount((unsigned)(M));                                \
        int g_ = __builtin_popcount((unsigned)(VALID)) - c_;                       \
        cstore32(dst + lw, (M), (V), c_);                                          \
        lw += c_;                                                                  \
        if (!up) gw -= g_;                                                         \
        cstore32(dst + gw, (__mmask16)(~(M) & (VALID)), (V), g_);                  \
        if (up) gw += g_;                                                          \
    } while (0)
    for (; i + 64 <= hi; i += 64) {
        __m512i v[4];
        __mmask16 m[4];
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            v[u] = keys16_f32(_mm512_loadu_si512(src + i + 16 * u), fv);
            m[u] = _mm512_cmplt_epu32_mask(v[u], pv);
        }
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) SPLIT_ONE(v[u], m[u], 0xffff);
    }
    for (; i < hi; i += 16) {
        int64_t left = hi - i;
        __mmask16 valid = left >= 16 ? 0xffff : (__mmask16)_bzhi_u32(0xffffu, (unsigned)left);
        __m512i v = keys16_f32(_mm512_maskz_loadu_epi32(valid, src + i), fv);
        __mmask16 m = _mm512_cmplt_epu32_mask(v, pv) & valid;
        SPLIT_ONE(v, m, valid);
    }
#undef SPLIT_ONE
    *lwp = lw;
    *gwp = gw;
}

/* Sorts a contiguous f32 row (n >= 256) into dst, as element bits except
 * for the runs of zeros and NaNs, which it reports (runs) for the caller
 * to restore. The keys are partitioned around the median of 16 sampled
 * keys while they are made (src -> dst: the mapping and the first
 * partition share one pass), both parts are quicksorted, and the keys
 * are mapped back in place. With threads > 1 everything happens in one
 * parallel region: the linear passes are split over the threads (a
 * counting pass first gives each thread its places) and the parts become
 * tasks. */
void emi_cpu_sort_f32_avx512(const uint32_t *src, int64_t n, uint32_t flip, uint32_t *dst,
                               int threads, int64_t runs[4]) {
    const __m512i fv = _mm512_set1_epi32((int)flip);
    uint32_t smp[16];
    int64_t step = n / 16;
    for (int i = 0; i < 16; i++) smp[i] = src[i * step + step / 2];
    __m512i sv = keys16_f32(_mm512_loadu_si512(smp), fv);
    sortnet32(&sv, 1);
    _mm512_storeu_si512(smp, sv);
    const __m512i pv = _mm512_set1_epi32((int)smp[8]);
    int depth = depth_limit(n);
    if (threads <= 1) {
        int64_t lw = 0, rw = n;
        split_keys_f32(src, 0, n, fv, pv, dst, &lw, &rw, false);
        qsort32(dst, lw, depth, false);
        qsort32(dst + lw, n - lw, depth, false);
        zero_nan_runs32(dst, n, flip, false, runs);
        emi_cpu_unkeys_f32_avx512(dst, n, flip, dst);
        return;
    }
    if (threads > 64) threads = 64;
    int64_t counts[64];
#pragma omp parallel num_threads(threads)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        /* slices of whole vectors; the last one takes the tail */
        int64_t nv = (n + 15) / 16;
        int64_t lo = 16 * (nv * t / nt), hi = t == nt - 1 ? n : 16 * (nv * (t + 1) / nt);
        int64_t c = 0, i = lo;
        for (; i + 64 <= hi; i += 64) {
            uint64_t m = 0;
            for (int u = 0; u < 4; u++)
                m |= (uint64_t)_mm512_cmplt_epu32_mask(keys16_f32(_mm512_loadu_si512(src + i + 16 * u), fv), pv) << (16 * u);
            c += __builtin_popcountll(m);
        }
        for (; i < hi; i += 16) {
            int64_t left = hi - i;
            __mmask16 valid = left >= 16 ? 0xffff : (__mmask16)_bzhi_u32(0xffffu, (unsigned)left);
            __m512i v = keys16_f32(_mm512_maskz_loadu_epi32(valid, src + i), fv);
            c += __builtin_popcount(_mm512_cmplt_epu32_mask(v, pv) & valid);
        }
        counts[t] = c;
#pragma omp barrier
        int64_t total = 0, before = 0;
        for (int u = 0; u < nt; u++) {
            total += counts[u];
            if (u < t) before += counts[u];
        }
        int64_t lw = before, gw = total + (lo - before);
        split_keys_f32(src, lo, hi, fv, pv, dst, &lw, &gw, true);
#pragma omp barrier
#pragma omp single
        {
            uint32_t *right = dst + total;
            int64_t rn = n - total;
#pragma omp task firstprivate(right, rn, depth)
            qsort32(right, rn, depth, rn >= 2 * TASK_MIN);
            qsort32(dst, total, depth, total >= 2 * TASK_MIN);
        }
        /* the barrier closing `single` waits for every task */
        emi_cpu_unkeys_f32_avx512(dst + lo, hi - lo, flip, dst + lo);
    }
    /* searched in the mapped-back row: no barrier between searching the
     * keys and mapping other threads' slices back */
    zero_nan_runs32(dst, n, flip, true, runs);
}

/* key << 32 | position, positions from `first` (first + n <= 2^32) */
void emi_cpu_records_f32_avx512(const uint32_t *s, int64_t n, int64_t first, uint32_t flip,
                                  uint64_t *recs) {
    const __m512i fv = _mm512_set1_epi32((int)flip);
    __m512i pos = _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(first));
    const __m512i step = _mm512_set1_epi64(8);
    for (int64_t i = 0; i < n; i += 16) {
        int64_t left = n - i;
        __mmask16 m = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
        __m512i k = keys16_f32(_mm512_maskz_loadu_epi32(m, s + i), fv);
        __m512i lo = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(k)), 32), pos);
        pos = _mm512_add_epi64(pos, step);
        __m512i hi = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(k, 1)), 32), pos);
        pos = _mm512_add_epi64(pos, step);
        _mm512_mask_storeu_epi64(recs + i, (__mmask8)(m & 0xff), lo);
        _mm512_mask_storeu_epi64(recs + i + 8, (__mmask8)(m >> 8), hi);
    }
}

void emi_cpu_unkeys_f32_avx512(const uint32_t *keys, int64_t n, uint32_t flip, uint32_t *d) {
    const __m512i fv = _mm512_set1_epi32((int)flip), sign = _mm512_set1_epi32((int)0x80000000u);
    const __m512i one = _mm512_set1_epi32(1);
    for (int64_t i = 0; i < n; i += 16) {
        int64_t left = n - i;
        __mmask16 m = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
        __m512i k = _mm512_xor_si512(_mm512_maskz_loadu_epi32(m, keys + i), fv);
        /* sign set: clear it; clear: invert all bits */
        __m512i x = _mm512_or_si512(_mm512_sub_epi32(_mm512_srli_epi32(k, 31), one), sign);
        _mm512_mask_storeu_epi32(d + i, m, _mm512_xor_si512(k, x));
    }
}

void emi_cpu_positions_s32_avx512(const uint64_t *recs, int64_t n, int32_t *d) {
    for (int64_t i = 0; i < n; i += 8) {
        int64_t left = n - i;
        __mmask8 m = left >= 8 ? 0xff : (__mmask8)((1u << left) - 1);
        __m512i r = _mm512_maskz_loadu_epi64(m, recs + i);
        _mm256_mask_storeu_epi32(d + i, m, _mm512_cvtepi64_epi32(r));
    }
}

/* top_k's filter (sort.c's find_above): the first position in [i, n)
 * whose ascending key is above lim, or n. Four vectors a step, one test
 * of their joined masks: a hit is rare once the selection has filled. */
int64_t emi_cpu_find_above_f32_avx512(const uint32_t *s, int64_t i, int64_t n, uint32_t lim) {
    const __m512i zero = _mm512_setzero_si512(), lv = _mm512_set1_epi32((int)lim);
    for (; i + 64 <= n; i += 64) {
        __mmask16 m0 = _mm512_cmpgt_epu32_mask(keys16_f32(_mm512_loadu_si512(s + i), zero), lv);
        __mmask16 m1 = _mm512_cmpgt_epu32_mask(keys16_f32(_mm512_loadu_si512(s + i + 16), zero), lv);
        __mmask16 m2 = _mm512_cmpgt_epu32_mask(keys16_f32(_mm512_loadu_si512(s + i + 32), zero), lv);
        __mmask16 m3 = _mm512_cmpgt_epu32_mask(keys16_f32(_mm512_loadu_si512(s + i + 48), zero), lv);
        uint64_t all = (uint64_t)m0 | (uint64_t)m1 << 16 | (uint64_t)m2 << 32 | (uint64_t)m3 << 48;
        if (all) return i + __builtin_ctzll(all);
    }
    for (; i < n; i += 16) {
        int64_t left = n - i;
        __mmask16 valid = left >= 16 ? 0xffff : (__mmask16)_bzhi_u32(0xffffu, (unsigned)left);
        __mmask16 m = _mm512_mask_cmpgt_epu32_mask(valid, keys16_f32(_mm512_maskz_loadu_epi32(valid, s + i), zero), lv);
        if (m) return i + __builtin_ctz(m);
    }
    return n;
}

#else
typedef int emily_sort_avx512_unused;
#endif
