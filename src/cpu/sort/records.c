/* Sorting a row's records (see sort.h): the AVX-512 quicksort of 32- and
 * 64-bit keys and 64-bit records where the CPU has it (avx512.c), else a
 * stable LSD radix sort with 8-bit digits (a digit the same for the whole
 * row costs no pass; insertion sort for short rows), its passes split
 * over threads for one long row. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/sort/avx512.h"
#include "cpu/sort/sort.h"

/* ---- radix sort ------------------------------------------------------------ */

/* Stable LSD radix sort of n records of type R on NP 8-bit digits of
 * GETKEY(r) >> LO; b is scratch of n records. Returns a or b, whichever
 * holds the result. Short arrays go by insertion sort with LESS. */
#define DEFINE_RADIX(NAME, R, GETKEY, LO, NP, LESS)                           \
    static R *NAME(R *a, R *b, int64_t n) {                                   \
        if (n <= SORT_SMALL) {                                                \
            for (int64_t i = 1; i < n; i++) {                                 \
                R x = a[i];                                                   \
                int64_t j = i;                                                \
                while (j > 0 && LESS(x, a[j - 1])) {                          \
                    a[j] = a[j - 1];                                          \
                    j--;                                                      \
                }                                                             \
                a[j] = x;                                                     \
            }                                                                 \
            return a;                                                         \
        }                                                                     \
        int64_t hist[NP][256];                                                \
        memset(hist, 0, sizeof hist);                                         \
        for (int64_t i = 0; i < n; i++) {                                     \
            uint64_t k_ = (uint64_t)GETKEY(a[i]) >> (LO);                     \
            for (int p = 0; p < (NP); p++) hist[p][(k_ >> (8 * p)) & 255]++;  \
        }                                                                     \
        for (int p = 0; p < (NP); p++) {                                      \
            int sh = (LO) + 8 * p;                                            \
            if (hist[p][((uint64_t)GETKEY(a[0]) >> sh) & 255] == n) continue; \
            int64_t sum = 0;                                                  \
            for (int dg = 0; dg < 256; dg++) {                                \
                int64_t c = hist[p][dg];                                      \
                hist[p][dg] = sum;                                            \
                sum += c;                                                     \
            }                                                                 \
            int64_t *h = hist[p];                                             \
            for (int64_t i = 0; i < n; i++) {                                 \
                R x = a[i];                                                   \
                b[h[((uint64_t)GETKEY(x) >> sh) & 255]++] = x;                \
            }                                                                 \
            R *t = a;                                                         \
            a = b;                                                            \
            b = t;                                                            \
        }                                                                     \
        return a;                                                             \
    }

#define ID(x) (x)
#define PKEY(x) ((x).key)
#define LESS_PLAIN(x, y) ((x) < (y))

/* The records sorted: X(name, record, key of a record, the key's low
 * bit, its 8-bit digits, insertion sort's order). k: keys of 8 to 64
 * bits; p: packed key << 32 | position records of 8- to 32-bit keys;
 * pair: key/position pairs. */
/* clang-format off */
#define RADIX_RECORDS(X) RADIX_SERIAL_ONLY(X) RADIX_PARALLEL(X)
/* 8-bit keys: one digit, too few passes to split over threads */
#define RADIX_SERIAL_ONLY(X)                            \
    X(k8, uint8_t, ID, 0, 1, LESS_PLAIN)                \
    X(p8, uint64_t, ID, 32, 1, LESS_PLAIN)
#define RADIX_PARALLEL(X)                               \
    X(k16, uint16_t, ID, 0, 2, LESS_PLAIN)              \
    X(k32, uint32_t, ID, 0, 4, LESS_PLAIN)              \
    X(k64, uint64_t, ID, 0, 8, LESS_PLAIN)              \
    X(p16, uint64_t, ID, 32, 2, LESS_PLAIN)             \
    X(p32, uint64_t, ID, 32, 4, LESS_PLAIN)             \
    X(pair, pair64, PKEY, 0, 8, LESS_PAIR)
/* clang-format on */
#define RADIX_OF(NAME, R, GETKEY, LO, NP, LESS) DEFINE_RADIX(radix_##NAME, R, GETKEY, LO, NP, LESS)
RADIX_RECORDS(RADIX_OF)

/* ---- parallel radix for one long row -------------------------------------- */

/* The same stable LSD sort with every pass split over T threads: each
 * thread counts its slice of the array, the offsets are laid out digit
 * by digit and thread by thread (so equal digits keep their order), and
 * each thread scatters its slice. */
#define DEFINE_PAR_RADIX(NAME, R, GETKEY, LO, NP, SERIAL)                                    \
    static R *NAME(R *a, R *b, int64_t n, int64_t(*hist)[256], int T) {                      \
        if (T < 2) return SERIAL(a, b, n);                                                   \
        for (int p = 0; p < (NP); p++) {                                                     \
            int sh = (LO) + 8 * p;                                                           \
            bool skip = false;                                                               \
            _Pragma("omp parallel num_threads(T)") {                                         \
                int t = omp_get_thread_num();                                                \
                int64_t lo = n * t / T, hi = n * (t + 1) / T;                                \
                int64_t *h = hist[t];                                                        \
                memset(h, 0, sizeof(int64_t) * 256);                                         \
                for (int64_t i = lo; i < hi; i++) h[((uint64_t)GETKEY(a[i]) >> sh) & 255]++; \
                _Pragma("omp barrier") _Pragma("omp single") {                               \
                    int dg0 = (int)(((uint64_t)GETKEY(a[0]) >> sh) & 255);                   \
                    int64_t tot = 0;                                                         \
                    for (int u = 0; u < T; u++) tot += hist[u][dg0];                         \
                    skip = tot == n;                                                         \
                    int64_t sum = 0;                                                         \
                    for (int dg = 0; dg < 256; dg++)                                         \
                        for (int u = 0; u < T; u++) {                                        \
                            int64_t c = hist[u][dg];                                         \
                            hist[u][dg] = sum;                                               \
                            sum += c;                                                        \
                        }                                                                    \
                }                                                                            \
                if (!skip)                                                                   \
                    for (int64_t i = lo; i < hi; i++) {                                      \
                        R x = a[i];                                                          \
                        b[h[((uint64_t)GETKEY(x) >> sh) & 255]++] = x;                       \
                    }                                                                        \
            }                                                                                \
            if (!skip) {                                                                     \
                R *tmp = a;                                                                  \
                a = b;                                                                       \
                b = tmp;                                                                     \
            }                                                                                \
        }                                                                                    \
        return a;                                                                            \
    }

#define PAR_RADIX_OF(NAME, R, GETKEY, LO, NP, LESS) DEFINE_PAR_RADIX(par_radix_##NAME, R, GETKEY, LO, NP, radix_##NAME)
RADIX_PARALLEL(PAR_RADIX_OF)

/* ---- the records of a row -------------------------------------------------- */

/* How a row of dtype dt is sorted: record mode and bytes per record. */
rec_mode emi_sort_plan_mode(emily_dtype dt, int64_t n, bool with_positions) {
    if (!with_positions) return REC_KEYS;
    if (key_bits(dt) <= 32 && n <= (int64_t)UINT32_MAX) return REC_PACKED;
    return REC_PAIR;
}

size_t emi_sort_rec_size(emily_dtype dt, rec_mode m) {
    return m == REC_KEYS ? emily_dtype_size(dt) : m == REC_PACKED ? 8 : sizeof(pair64);
}

/* Whether records go to the in-place vector quicksort: 32/64-bit keys
 * (equal keys are interchangeable) and 64-bit records of 32-bit keys
 * (all distinct); 8/16-bit keys take few radix passes already. */
bool emi_sort_simd_sortable(emily_dtype dt, rec_mode m, int64_t n) {
#if HAVE_SORT_AVX512
    int kb = key_bits(dt);
    return n > SORT_SMALL && emi_sort_use_avx512() && ((m == REC_KEYS && kb >= 32) || (m == REC_PACKED && kb == 32));
#else
    (void)dt;
    (void)m;
    (void)n;
    return false;
#endif
}

/* Sorts the records in scratch[0, n) (scratch holds 2n records, or n
 * when simd_sortable);
 * T > 1 runs the passes on T threads. Returns the sorted array. */
void *emi_sort_records(emily_dtype dt, rec_mode m, void *scratch, int64_t n, int T, int64_t (*hist)[256]) {
    size_t rs = emi_sort_rec_size(dt, m);
    void *b = (char *)scratch + (size_t)n * rs;
    int kb = key_bits(dt);
#if HAVE_SORT_AVX512
    if (emi_sort_simd_sortable(dt, m, n)) {
        if (m == REC_KEYS && kb == 32) emi_cpu_sort_u32_avx512(scratch, n, T > 1);
        else emi_cpu_sort_u64_avx512(scratch, n, T > 1);
        return scratch;
    }
#endif
    if (m == REC_PAIR) return par_radix_pair(scratch, b, n, hist, T);
    if (m == REC_PACKED) {
        if (kb == 8) return radix_p8(scratch, b, n);
        if (kb == 16) return par_radix_p16(scratch, b, n, hist, T);
        return par_radix_p32(scratch, b, n, hist, T);
    }
    switch (kb) {
    case 8: return radix_k8(scratch, b, n);
    case 16: return par_radix_k16(scratch, b, n, hist, T);
    case 32: return par_radix_k32(scratch, b, n, hist, T);
    default: return par_radix_k64(scratch, b, n, hist, T);
    }
}
