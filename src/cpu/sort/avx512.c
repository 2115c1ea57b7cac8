/* AVX-512 quicksort of unsigned keys (the sort family's fast path on
 * CPUs with AVX-512; see sort.h: keys.c, records.c and rows.c call these
 * only when emi_sort_use_avx512() says so).
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
#include "cpu/sort/avx512.h"

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
#define DEFINE_HEAPSORT(NAME, T)                                      \
    /* x into the max-heap a[0, end) from position j down */          \
    static void NAME##_sift(T *a, int64_t end, int64_t j, T x) {      \
        for (;;) {                                                    \
            int64_t c = 2 * j + 1;                                    \
            if (c >= end) break;                                      \
            if (c + 1 < end && a[c] < a[c + 1]) c++;                  \
            if (!(x < a[c])) break;                                   \
            a[j] = a[c];                                              \
            j = c;                                                    \
        }                                                             \
        a[j] = x;                                                     \
    }                                                                 \
    static void NAME(T *a, int64_t n) {                               \
        for (int64_t i = n / 2; i-- > 0;) NAME##_sift(a, n, i, a[i]); \
        for (int64_t end = n - 1; end > 0; end--) {                   \
            T x = a[end];                                             \
            a[end] = a[0];                                            \
            NAME##_sift(a, end, 0, x);                                \
        }                                                             \
    }
DEFINE_HEAPSORT(heapsort32, uint32_t)
DEFINE_HEAPSORT(heapsort64, uint64_t)

/* ======================================================================
 * The per-width primitives: 32-bit keys in 16 lanes, 64-bit keys (keys
 * of f64/s64/u64 values, and argsort records: key above position, all
 * distinct, equal keys come out by position) in 8 lanes.
 * ====================================================================== */

/* Stores the m-lanes of v, packed, at p (cnt = popcount(m) keys). The
 * compress goes to a register and the store is masked: the memory form
 * of the compress is slow on Intel cores. */
AI void cstore32(uint32_t *p, __mmask16 m, __m512i v, int cnt) {
    _mm512_mask_storeu_epi32(p, (__mmask16)_bzhi_u32(0xffffu, (unsigned)cnt), _mm512_maskz_compress_epi32(m, v));
}
AI void cstore64(uint64_t *p, __mmask8 m, __m512i v, int cnt) {
    _mm512_mask_storeu_epi64(p, (__mmask8)_bzhi_u32(0xffu, (unsigned)cnt), _mm512_maskz_compress_epi64(m, v));
}

/* Lane i of a register against lane i ^ m (m < lanes), the larger key
 * to the lane that has m's top bit: one layer of an ascending network. */
AI __m512i lanes32(__m512i v, int m) {
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    int top = m >= 8 ? 8 : m >= 4 ? 4 : m >= 2 ? 2 : 1;
    __mmask16 maxmask = (__mmask16)lane_bits(16, top);
    __m512i w = _mm512_permutexvar_epi32(_mm512_xor_si512(iota, _mm512_set1_epi32(m)), v);
    __m512i lo = _mm512_mask_min_epu32(v, (__mmask16)~maxmask, v, w);
    return _mm512_mask_max_epu32(lo, maxmask, v, w);
}
AI __m512i lanes64(__m512i v, int m) {
    const __m512i iota = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    int top = m >= 4 ? 4 : m >= 2 ? 2 : 1;
    __mmask8 maxmask = (__mmask8)lane_bits(8, top);
    __m512i w = _mm512_permutexvar_epi64(_mm512_xor_si512(iota, _mm512_set1_epi64(m)), v);
    __m512i lo = _mm512_mask_min_epu64(v, (__mmask8)~maxmask, v, w);
    return _mm512_mask_max_epu64(lo, maxmask, v, w);
}

/* The lanes of a register in reverse order. */
AI __m512i rev32(__m512i v) {
    const __m512i r = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm512_permutexvar_epi32(r, v);
}
AI __m512i rev64(__m512i v) { return _mm512_permutexvar_epi64(_mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7), v); }

/* The first `left` lanes (all when left >= lanes, none when <= 0). */
AI __mmask16 tail32(int64_t left) {
    return left >= 16 ? 0xffff : left <= 0 ? 0 : (__mmask16)_bzhi_u32(0xffffu, (unsigned)left);
}
AI __mmask8 tail64(int64_t left) { return left >= 8 ? 0xff : left <= 0 ? 0 : (__mmask8)((1u << left) - 1); }

#define SPLAT32(x) _mm512_set1_epi32((int)(x))
#define SPLAT64(x) _mm512_set1_epi64((long long)(x))

/* ======================================================================
 * The sort, written once for both widths: B the key bits, L the lanes
 * of a register (LOG2L its log2), MASK the lane mask type.
 * ====================================================================== */

/* Sorts the L*R keys of v[0, R) (R <= 16) ascending, as if padded with
 * all-ones registers to a power of two. Every block is sorted ascending
 * and two sorted blocks merge by comparing each key with its mirror
 * image in the other block (i against 2m-1-i), then at halving
 * distances. In that form the all-ones pads never move, so comparisons
 * with a pad register are left out and the cost follows R rather than
 * the next power of two (an alternating-direction bitonic network would
 * move the pads). */
#define DEFINE_SORTNET(B, L)                                                                            \
    AI void sortnet##B(__m512i *v, const int R) {                                                       \
        const int P = R <= 1 ? 1 : R <= 2 ? 2 : R <= 4 ? 4 : R <= 8 ? 8 : 16;                           \
        /* each register: blocks of 2, 4, ... L lanes */                                                \
        _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                          \
            _Pragma("GCC unroll 4") for (int k = 2; k <= (L); k <<= 1) {                                \
                v[r] = lanes##B(v[r], k - 1);                                                           \
                _Pragma("GCC unroll 4") for (int j = k >> 2; j > 0; j >>= 1) v[r] = lanes##B(v[r], j);  \
            }                                                                                           \
        }                                                                                               \
        /* blocks of kr registers */                                                                    \
        _Pragma("GCC unroll 4") for (int kr = 2; kr <= P; kr <<= 1) {                                   \
            _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                      \
                int q = (r & ~(kr - 1)) + kr - 1 - (r & (kr - 1)); /* r's mirror */                     \
                if ((r & (kr >> 1)) || q >= R) continue;                                                \
                __m512i a = v[r], b = v[q];                                                             \
                v[r] = _mm512_min_epu##B(a, rev##B(b));                                                 \
                v[q] = _mm512_max_epu##B(rev##B(a), b);                                                 \
            }                                                                                           \
            _Pragma("GCC unroll 4") for (int jr = kr >> 2; jr > 0; jr >>= 1) {                          \
                _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                  \
                    if ((r & jr) || r + jr >= R) continue;                                              \
                    __m512i a = v[r], b = v[r + jr];                                                    \
                    v[r] = _mm512_min_epu##B(a, b);                                                     \
                    v[r + jr] = _mm512_max_epu##B(a, b);                                                \
                }                                                                                       \
            }                                                                                           \
            _Pragma("GCC unroll 16") for (int r = 0; r < R; r++) {                                      \
                _Pragma("GCC unroll 4") for (int j = (L) / 2; j > 0; j >>= 1) v[r] = lanes##B(v[r], j); \
            }                                                                                           \
        }                                                                                               \
    }

/* Sorts n keys (L (R - 1) < n <= L R, or fewer where a larger instance
 * stands in) in R registers, the last filled with all-ones. */
#define DEFINE_SMALL(B, L, R)                                                                            \
    static void small##B##_##R(uint##B##_t *a, int64_t n) {                                              \
        __m512i v[R];                                                                                    \
        const __m512i pad = _mm512_set1_epi##B(-1);                                                      \
        for (int r = 0; r < R; r++) v[r] = _mm512_mask_loadu_epi##B(pad, tail##B(n - (L)*r), a + (L)*r); \
        sortnet##B(v, R);                                                                                \
        for (int r = 0; r < R; r++) _mm512_mask_storeu_epi##B(a + (L)*r, tail##B(n - (L)*r), v[r]);      \
    }

/* Every register count up to 4, even ones above: an instance per count
 * measured the same and takes twice the code. small_sort sorts n <= 16 L
 * keys with the instance for its register count. */
#define DEFINE_SMALL_SORT(B, L, LOG2L)                                                                    \
    DEFINE_SMALL(B, L, 1)                                                                                 \
    DEFINE_SMALL(B, L, 2)                                                                                 \
    DEFINE_SMALL(B, L, 3)                                                                                 \
    DEFINE_SMALL(B, L, 4)                                                                                 \
    DEFINE_SMALL(B, L, 6)                                                                                 \
    DEFINE_SMALL(B, L, 8)                                                                                 \
    DEFINE_SMALL(B, L, 10)                                                                                \
    DEFINE_SMALL(B, L, 12)                                                                                \
    DEFINE_SMALL(B, L, 14)                                                                                \
    DEFINE_SMALL(B, L, 16)                                                                                \
    static void small_sort##B(uint##B##_t *a, int64_t n) {                                                \
        typedef void (*small_fn)(uint##B##_t *, int64_t);                                                 \
        static const small_fn by_regs[16] = {small##B##_1,  small##B##_2,  small##B##_3,  small##B##_4,   \
                                             small##B##_6,  small##B##_6,  small##B##_8,  small##B##_8,   \
                                             small##B##_10, small##B##_10, small##B##_12, small##B##_12,  \
                                             small##B##_14, small##B##_14, small##B##_16, small##B##_16}; \
        if (n <= 1) return;                                                                               \
        by_regs[(n - 1) >> (LOG2L)](a, n);                                                                \
    }

/* Median of 16 keys spread over a (n >= 16). */
#define DEFINE_PIVOT(B, L)                                                       \
    static uint##B##_t pivot##B(const uint##B##_t *a, int64_t n) {               \
        uint##B##_t s[16];                                                       \
        int64_t step = n / 16;                                                   \
        for (int i = 0; i < 16; i++) s[i] = a[i * step + step / 2];              \
        __m512i v[16 / (L)];                                                     \
        for (int r = 0; r < 16 / (L); r++) v[r] = _mm512_loadu_si512(s + (L)*r); \
        sortnet##B(v, 16 / (L));                                                 \
        for (int r = 0; r < 16 / (L); r++) _mm512_storeu_si512(s + (L)*r, v[r]); \
        return s[8];                                                             \
    }

/* Moves the keys below the pivot (at most the pivot when `le`) to the
 * front; returns how many there are. n >= 2 L U (U vectors a step).
 *
 * U vectors from each end are held back, so the free room on the two
 * sides (where the next writes go) always adds up to 2 L U keys; reading
 * the next U vectors from the side with less room leaves at least L U
 * on both, enough for any split of them. The side is picked without a
 * branch (it is data-dependent, so a branch would mispredict half the
 * time). */
#define DEFINE_PARTITION(B, L, MASK)                                                                    \
    AI int64_t partition##B(uint##B##_t *a, int64_t n, uint##B##_t pivot, const bool le, const int U) { \
        const __m512i pv = SPLAT##B(pivot);                                                             \
        const MASK all = (MASK)~0u;                                                                     \
        const int64_t W = (L) * (int64_t)U;                                                             \
        __m512i keep[16];                                                                               \
        for (int i = 0; i < U; i++) {                                                                   \
            keep[i] = _mm512_loadu_si512(a + (L)*i);                                                    \
            keep[U + i] = _mm512_loadu_si512(a + n - W + (L)*i);                                        \
        }                                                                                               \
        int64_t l = W, r = n - W, lw = 0, rw = n;                                                       \
        while (r - l >= W) {                                                                            \
            bool left = l - lw <= rw - r;                                                               \
            int64_t pos = left ? l : r - W;                                                             \
            l += left ? W : 0;                                                                          \
            r -= left ? 0 : W;                                                                          \
            __m512i v[8];                                                                               \
            MASK m[8];                                                                                  \
            int c[8];                                                                                   \
            _Pragma("GCC unroll 8") for (int i = 0; i < U; i++) {                                       \
                v[i] = _mm512_loadu_si512(a + pos + (L)*i);                                             \
                m[i] = PART_MASK(B, v[i]);                                                              \
                c[i] = __builtin_popcount(m[i]);                                                        \
            }                                                                                           \
            _Pragma("GCC unroll 8") for (int i = 0; i < U; i++) {                                       \
                cstore##B(a + lw, m[i], v[i], c[i]);                                                    \
                lw += c[i];                                                                             \
                rw -= (L)-c[i];                                                                         \
                cstore##B(a + rw, (MASK)~m[i], v[i], (L)-c[i]);                                         \
            }                                                                                           \
        }                                                                                               \
        while (r - l >= (L)) {                                                                          \
            bool left = l - lw <= rw - r;                                                               \
            int64_t pos = left ? l : r - (L);                                                           \
            l += left ? (L) : 0;                                                                        \
            r -= left ? 0 : (L);                                                                        \
            __m512i v = _mm512_loadu_si512(a + pos);                                                    \
            PART_STEP(B, MASK, v, all);                                                                 \
        }                                                                                               \
        if (r > l) {                                                                                    \
            MASK valid = (MASK)((1u << (r - l)) - 1);                                                   \
            __m512i v = _mm512_maskz_loadu_epi##B(valid, a + l);                                        \
            PART_STEP(B, MASK, v, valid);                                                               \
        }                                                                                               \
        for (int i = 0; i < 2 * U; i++) PART_STEP(B, MASK, keep[i], all);                               \
        return lw;                                                                                      \
    }
#define PART_MASK(B, V) (le ? _mm512_cmple_epu##B##_mask(V, pv) : _mm512_cmplt_epu##B##_mask(V, pv))
#define PART_STEP(B, MASK, V, VALID)                            \
    do {                                                        \
        MASK m_ = PART_MASK(B, V) & (VALID);                    \
        int c_ = __builtin_popcount((unsigned)m_);              \
        int t_ = __builtin_popcount((unsigned)(VALID));         \
        cstore##B(a + lw, m_, V, c_);                           \
        lw += c_;                                               \
        rw -= t_ - c_;                                          \
        cstore##B(a + rw, (MASK)(~m_ & (VALID)), V, (t_ - c_)); \
    } while (0)

/* The quicksort: parts of more than SMALL_MAX keys are partitioned with
 * partition<B>_lt (and _le when the pivot is the part's minimum: its
 * copies are then in place), the smaller part first (recursion depth
 * stays logarithmic), parts of at least TASK_MIN keys as OpenMP tasks
 * where `tasks`; past the depth limit, heapsort. */
#define DEFINE_QSORT(B, SMALL_MAX)                                                             \
    static void qsort##B(uint##B##_t *a, int64_t n, int depth, bool tasks) {                   \
        while (n > (SMALL_MAX)) {                                                              \
            if (depth-- <= 0) {                                                                \
                heapsort##B(a, n);                                                             \
                return;                                                                        \
            }                                                                                  \
            uint##B##_t pivot = pivot##B(a, n);                                                \
            int64_t m = partition##B##_lt(a, n, pivot);                                        \
            if (m == 0) {                                                                      \
                m = partition##B##_le(a, n, pivot);                                            \
                a += m;                                                                        \
                n -= m;                                                                        \
                continue;                                                                      \
            }                                                                                  \
            uint##B##_t *sa = a;                                                               \
            int64_t sn = m;                                                                    \
            if (m < n - m) {                                                                   \
                a += m;                                                                        \
                n -= m;                                                                        \
            } else {                                                                           \
                sa = a + m;                                                                    \
                sn = n - m;                                                                    \
                n = m;                                                                         \
            }                                                                                  \
            if (tasks && sn >= TASK_MIN) {                                                     \
                _Pragma("omp task firstprivate(sa, sn, depth)") qsort##B(sa, sn, depth, true); \
            } else {                                                                           \
                qsort##B(sa, sn, depth, tasks &&sn >= TASK_MIN);                               \
            }                                                                                  \
        }                                                                                      \
        small_sort##B(a, n);                                                                   \
    }                                                                                          \
    /* tasks: called by one thread of a parallel region (in a `single`),            \
     * whose team takes the parts of at least TASK_MIN keys as tasks. */          \
    void emi_cpu_sort_u##B##_avx512(uint##B##_t *a, int64_t n, bool tasks) {                   \
        qsort##B(a, n, depth_limit(n), tasks &&n >= 2 * TASK_MIN);                             \
    }

static int depth_limit(int64_t n) {
    int d = 0;
    while (n > 1) {
        n >>= 1;
        d++;
    }
    return 2 * d + 4;
}

DEFINE_SORTNET(32, 16)
DEFINE_SMALL_SORT(32, 16, 4)
DEFINE_PIVOT(32, 16)
DEFINE_PARTITION(32, 16, __mmask16)
DEFINE_SORTNET(64, 8)
DEFINE_SMALL_SORT(64, 8, 3)
DEFINE_PIVOT(64, 8)
DEFINE_PARTITION(64, 8, __mmask8)

/* The partitions, each compiled with its comparison and unrolling fixed:
 * 32-bit keys eight vectors a step for long parts, four for short ones;
 * 64-bit keys four. */
static int64_t partition32_lt(uint32_t *a, int64_t n, uint32_t pivot) {
    return n >= 1024 ? partition32(a, n, pivot, false, 8) : partition32(a, n, pivot, false, 4);
}
static int64_t partition32_le(uint32_t *a, int64_t n, uint32_t pivot) { return partition32(a, n, pivot, true, 4); }
static int64_t partition64_lt(uint64_t *a, int64_t n, uint64_t pivot) { return partition64(a, n, pivot, false, 4); }
static int64_t partition64_le(uint64_t *a, int64_t n, uint64_t pivot) { return partition64(a, n, pivot, true, 4); }

DEFINE_QSORT(32, SMALL32_MAX)
DEFINE_QSORT(64, SMALL64_MAX)

/* ======================================================================
 * f32 keys in and out (contiguous rows), the same mapping as keys.c's
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
AI void split_keys_f32(const uint32_t *src, int64_t lo, int64_t hi, __m512i fv, __m512i pv, uint32_t *dst, int64_t *lwp,
                       int64_t *gwp, const bool up) {
    int64_t lw = *lwp, gw = *gwp, i = lo;
#define SPLIT_ONE(V, M, VALID)                                    \
    do {                                                          \
        int c_ = __builtin_popcount((unsigned)(M));               \
        int g_ = __builtin_popcount((unsigned)(VALID)) - c_;      \
        cstore32(dst + lw, (M), (V), c_);                         \
        lw += c_;                                                 \
        if (!up) gw -= g_;                                        \
        cstore32(dst + gw, (__mmask16)(~(M) & (VALID)), (V), g_); \
        if (up) gw += g_;                                         \
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
void emi_cpu_sort_f32_avx512(const uint32_t *src, int64_t n, uint32_t flip, uint32_t *dst, int threads,
                             int64_t runs[4]) {
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
                m |= (uint64_t)_mm512_cmplt_epu32_mask(keys16_f32(_mm512_loadu_si512(src + i + 16 * u), fv), pv)
                     << (16 * u);
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
void emi_cpu_records_f32_avx512(const uint32_t *s, int64_t n, int64_t first, uint32_t flip, uint64_t *recs) {
    const __m512i fv = _mm512_set1_epi32((int)flip);
    __m512i pos = _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(first));
    const __m512i step = _mm512_set1_epi64(8);
    for (int64_t i = 0; i < n; i += 16) {
        int64_t left = n - i;
        __mmask16 m = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
        __m512i k = keys16_f32(_mm512_maskz_loadu_epi32(m, s + i), fv);
        __m512i lo = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(k)), 32), pos);
        pos = _mm512_add_epi64(pos, step);
        __m512i hi = _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(k, 1)), 32),
                                     pos);
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

/* top_k's filter (keys.c's emi_sort_find_above): the first position in [i, n)
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
