/* CPU kernels: sort family (sort, argsort, top_k).
 *
 * Every element becomes an unsigned key whose integer order is Nx's
 * order (see src/core/kernels.h): signed integers flip their sign
 * bit; floats map to the usual order-preserving pattern (negative
 * values inverted, positive ones with the sign bit set) after -0.0 is
 * read as +0.0 and every NaN as the largest key. Descending order is
 * the bitwise complement of the key, so one ascending sort serves both
 * directions.
 *
 * Records: sort carries keys only and maps them back to bits; the two
 * things a key loses (the sign of a zero, a NaN's payload) are rewritten
 * from the source row in source order, which is where a stable sort
 * leaves equal keys. argsort carries positions: keys of up to 32 bits
 * and positions below 2^32 share one 64-bit record (key above position:
 * all records differ and their order is the stable order); 64-bit keys
 * use key/position pairs.
 *
 * Sorting: 32/64-bit keys and 64-bit records go to the AVX-512 quicksort
 * of src/cpu/sort_avx512.c where the CPU has it (unstable, which cannot
 * show: equal keys are interchangeable and records are distinct); the
 * rest (8/16-bit keys, pairs, CPUs without AVX-512, EMILY_SIMD=0) to a
 * stable LSD radix sort with 8-bit digits (a digit the same for the
 * whole row costs no pass), insertion sort for short rows. f32 sorts make
 * their keys and first partition in one pass. top_k, when k is small
 * against the row, keeps the k best records in a heap and lets in only
 * elements whose key beats the worst of them (a vector compare for f32;
 * a long row is split into slices selected on threads, then merged),
 * else sorts.
 *
 * Rows (every position of the other axes) are independent: many rows
 * are split over OpenMP threads; one long row spreads its linear passes
 * and its quicksort parts (tasks) or its radix digits (per-thread
 * histograms) over the threads. */
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "core/scalar_convert.h"
#include "core/kernels.h"

/* Rows shorter than this are insertion-sorted. */
#define SORT_SMALL 24
/* Elements (over all rows) from which rows are split over threads. */
#define SORT_PAR_MIN ((int64_t)1 << 15)
/* A single row from which its radix passes run on several threads. */
#define SORT_PAR_ROW_MIN ((int64_t)1 << 17)

typedef struct pair64 {
    uint64_t key, idx;
} pair64;

/* src/cpu/sort_avx512.c: in-place quicksorts (`tasks`: called in a
 * `single` of a parallel region, whose team shares the parts) and f32
 * key mappings for contiguous rows. Used when use_avx512() says so. */
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_SORT_AVX512 1
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
#else
#define HAVE_SORT_AVX512 0
#endif

/* Whether this CPU runs sort_avx512.c (AVX-512 F/DQ/BW/VL, BMI2,
 * POPCNT), unless EMILY_SIMD=0 asks for the portable paths (as for the
 * unary kernels). Checked once. */
static bool use_avx512(void) {
    static atomic_int state = -1;
    int st = atomic_load_explicit(&state, memory_order_relaxed);
    if (st < 0) {
        st = 0;
#if HAVE_SORT_AVX512
        const char *env = getenv("EMILY_SIMD");
        if (!(env && strcmp(env, "0") == 0) && emi_cpu_isa() >= 2) {
            __builtin_cpu_init();
            st = __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("bmi2") &&
                 __builtin_cpu_supports("popcnt");
        }
#endif
        atomic_store_explicit(&state, st, memory_order_relaxed);
    }
    return st != 0;
}

/* ---- keys ---------------------------------------------------------------- */

static inline uint8_t key_s8(uint8_t x) { return (uint8_t)(x ^ 0x80u); }
static inline uint16_t key_s16(uint16_t x) { return (uint16_t)(x ^ 0x8000u); }
static inline uint32_t key_s32(uint32_t x) { return x ^ 0x80000000u; }
static inline uint64_t key_s64(uint64_t x) { return x ^ 0x8000000000000000ull; }
static inline uint8_t key_u8(uint8_t x) { return x; }
static inline uint16_t key_u16(uint16_t x) { return x; }
static inline uint32_t key_u32(uint32_t x) { return x; }
static inline uint64_t key_u64(uint64_t x) { return x; }

/* float bits -> key: NaN largest, -0.0 as +0.0 */
#define FLOAT_KEY(NAME, T, SIGN, INF)                                          \
    static inline T NAME(T b) {                                                \
        if ((T)(b & (T)~(T)(SIGN)) > (T)(INF)) return (T)~(T)0;                \
        if (b == (T)(SIGN)) b = 0;                                             \
        return (b & (T)(SIGN)) ? (T)~b : (T)(b | (T)(SIGN));                   \
    }
FLOAT_KEY(key_f16, uint16_t, 0x8000u, 0x7c00u)
FLOAT_KEY(key_bf16, uint16_t, 0x8000u, 0x7f80u)
FLOAT_KEY(key_f32, uint32_t, 0x80000000u, 0x7f800000u)
FLOAT_KEY(key_f64, uint64_t, 0x8000000000000000ull, 0x7ff0000000000000ull)

/* key -> bits (NaN keys give some NaN, zero keys +0.0: fixed later) */
#define FLOAT_UNKEY(NAME, T, SIGN)                                             \
    static inline T NAME(T k) { return (k & (T)(SIGN)) ? (T)(k ^ (T)(SIGN)) : (T)~k; }
FLOAT_UNKEY(unkey_f16, uint16_t, 0x8000u)
FLOAT_UNKEY(unkey_f32, uint32_t, 0x80000000u)
FLOAT_UNKEY(unkey_f64, uint64_t, 0x8000000000000000ull)
#define unkey_bf16 unkey_f16
#define unkey_s8 key_s8
#define unkey_s16 key_s16
#define unkey_s32 key_s32
#define unkey_s64 key_s64
#define unkey_u8 key_u8
#define unkey_u16 key_u16
#define unkey_u32 key_u32
#define unkey_u64 key_u64

/* Key width in bits of a real dtype. */
static int key_bits(emily_dtype dt) { return (int)emily_dtype_size(dt) * 8; }

/* What a row's records hold. */
typedef enum rec_mode {
    REC_KEYS,   /* keys only, key_bits wide (u8/u16/u32/u64 arrays) */
    REC_PACKED, /* uint64: key << 32 | position (keys of <= 32 bits) */
    REC_PAIR    /* pair64 */
} rec_mode;

#define KEY_LOOP(RAW, KEYT, KFN)                                                     \
    do {                                                                             \
        const RAW *p_ = (const RAW *)s;                                              \
        KEYT flip_ = desc ? (KEYT) ~(KEYT)0 : (KEYT)0;                               \
        if (mode == REC_KEYS) {                                                      \
            KEYT *o_ = (KEYT *)out;                                                  \
            if (ss == 1)                                                             \
                for (int64_t i = 0; i < n; i++) o_[i] = (KEYT)(KFN((KEYT)p_[i]) ^ flip_); \
            else                                                                     \
                for (int64_t i = 0; i < n; i++) o_[i] = (KEYT)(KFN((KEYT)p_[i * ss]) ^ flip_); \
        } else if (mode == REC_PACKED) {                                             \
            uint64_t *o_ = (uint64_t *)out;                                          \
            for (int64_t i = 0; i < n; i++)                                          \
                o_[i] = ((uint64_t)(KEYT)(KFN((KEYT)p_[i * ss]) ^ flip_) << 32) | (uint64_t)(first + i); \
        } else {                                                                     \
            pair64 *o_ = (pair64 *)out;                                              \
            for (int64_t i = 0; i < n; i++) {                                        \
                o_[i].key = (uint64_t)(KEYT)(KFN((KEYT)p_[i * ss]) ^ flip_);          \
                o_[i].idx = (uint64_t)(first + i);                                   \
            }                                                                        \
        }                                                                            \
    } while (0)

/* Records of the n elements of a row (s, stride ss elements); their
 * positions count from `first`. */
static void row_records(emily_dtype dt, const char *s, int64_t ss, int64_t n, int64_t first,
                        bool desc, rec_mode mode, void *out) {
#if HAVE_SORT_AVX512
    if (dt == EMILY_F32 && ss == 1 && mode != REC_PAIR && use_avx512()) {
        uint32_t flip = desc ? UINT32_MAX : 0;
        if (mode == REC_KEYS) emi_cpu_keys_f32_avx512((const uint32_t *)s, n, flip, out);
        else emi_cpu_records_f32_avx512((const uint32_t *)s, n, first, flip, out);
        return;
    }
#endif
    switch (dt) {
    case EMILY_U8: KEY_LOOP(uint8_t, uint8_t, key_u8); break;
    case EMILY_S8: KEY_LOOP(uint8_t, uint8_t, key_s8); break;
    case EMILY_U16: KEY_LOOP(uint16_t, uint16_t, key_u16); break;
    case EMILY_S16: KEY_LOOP(uint16_t, uint16_t, key_s16); break;
    case EMILY_F16: KEY_LOOP(uint16_t, uint16_t, key_f16); break;
    case EMILY_BF16: KEY_LOOP(uint16_t, uint16_t, key_bf16); break;
    case EMILY_U32: KEY_LOOP(uint32_t, uint32_t, key_u32); break;
    case EMILY_S32: KEY_LOOP(uint32_t, uint32_t, key_s32); break;
    case EMILY_F32: KEY_LOOP(uint32_t, uint32_t, key_f32); break;
    case EMILY_U64: KEY_LOOP(uint64_t, uint64_t, key_u64); break;
    case EMILY_S64: KEY_LOOP(uint64_t, uint64_t, key_s64); break;
    default: KEY_LOOP(uint64_t, uint64_t, key_f64); break;
    }
}

#define UNKEY_LOOP(RAW, KEYT, UFN)                                                   \
    do {                                                                             \
        RAW *p_ = (RAW *)d;                                                          \
        const KEYT *k_ = (const KEYT *)keys;                                         \
        KEYT flip_ = desc ? (KEYT) ~(KEYT)0 : (KEYT)0;                               \
        if (ds == 1)                                                                 \
            for (int64_t i = 0; i < n; i++) p_[i] = (RAW)UFN((KEYT)(k_[i] ^ flip_)); \
        else                                                                         \
            for (int64_t i = 0; i < n; i++) p_[i * ds] = (RAW)UFN((KEYT)(k_[i] ^ flip_)); \
    } while (0)

/* Writes sorted keys back as element bits (d, stride ds elements). */
static void row_unkeys(emily_dtype dt, const void *keys, int64_t n, bool desc, char *d,
                       int64_t ds) {
#if HAVE_SORT_AVX512
    if (dt == EMILY_F32 && ds == 1 && use_avx512()) {
        emi_cpu_unkeys_f32_avx512(keys, n, desc ? UINT32_MAX : 0, (uint32_t *)d);
        return;
    }
#endif
    switch (dt) {
    case EMILY_U8: UNKEY_LOOP(uint8_t, uint8_t, unkey_u8); break;
    case EMILY_S8: UNKEY_LOOP(uint8_t, uint8_t, unkey_s8); break;
    case EMILY_U16: UNKEY_LOOP(uint16_t, uint16_t, unkey_u16); break;
    case EMILY_S16: UNKEY_LOOP(uint16_t, uint16_t, unkey_s16); break;
    case EMILY_F16: UNKEY_LOOP(uint16_t, uint16_t, unkey_f16); break;
    case EMILY_BF16: UNKEY_LOOP(uint16_t, uint16_t, unkey_bf16); break;
    case EMILY_U32: UNKEY_LOOP(uint32_t, uint32_t, unkey_u32); break;
    case EMILY_S32: UNKEY_LOOP(uint32_t, uint32_t, unkey_s32); break;
    case EMILY_F32: UNKEY_LOOP(uint32_t, uint32_t, unkey_f32); break;
    case EMILY_U64: UNKEY_LOOP(uint64_t, uint64_t, unkey_u64); break;
    case EMILY_S64: UNKEY_LOOP(uint64_t, uint64_t, unkey_s64); break;
    default: UNKEY_LOOP(uint64_t, uint64_t, unkey_f64); break;
    }
}

/* ---- radix sort ------------------------------------------------------------ */

/* Stable LSD radix sort of n records of type R on NP 8-bit digits of
 * GETKEY(r) >> LO; b is scratch of n records. Returns a or b, whichever
 * holds the result. Short arrays go by insertion sort with LESS. */
#define DEFINE_RADIX(NAME, R, GETKEY, LO, NP, LESS)                                \
    static R *NAME(R *a, R *b, int64_t n) {                                        \
        if (n <= SORT_SMALL) {                                                     \
            for (int64_t i = 1; i < n; i++) {                                      \
                R x = a[i];                                                        \
                int64_t j = i;                                                     \
                while (j > 0 && LESS(x, a[j - 1])) {                               \
                    a[j] = a[j - 1];                                               \
                    j--;                                                           \
                }                                                                  \
                a[j] = x;                                                          \
            }                                                                      \
            return a;                                                              \
        }                                                                          \
        int64_t hist[NP][256];                                                     \
        memset(hist, 0, sizeof hist);                                              \
        for (int64_t i = 0; i < n; i++) {                                          \
            uint64_t k_ = (uint64_t)GETKEY(a[i]) >> (LO);                          \
            for (int p = 0; p < (NP); p++) hist[p][(k_ >> (8 * p)) & 255]++;       \
        }                                                                          \
        for (int p = 0; p < (NP); p++) {                                           \
            int sh = (LO) + 8 * p;                                                 \
            if (hist[p][((uint64_t)GETKEY(a[0]) >> sh) & 255] == n) continue;      \
            int64_t sum = 0;                                                       \
            for (int dg = 0; dg < 256; dg++) {                                     \
                int64_t c = hist[p][dg];                                           \
                hist[p][dg] = sum;                                                 \
                sum += c;                                                          \
            }                                                                      \
            int64_t *h = hist[p];                                                  \
            for (int64_t i = 0; i < n; i++) {                                      \
                R x = a[i];                                                        \
                b[h[((uint64_t)GETKEY(x) >> sh) & 255]++] = x;                     \
            }                                                                      \
            R *t = a;                                                              \
            a = b;                                                                 \
            b = t;                                                                 \
        }                                                                          \
        return a;                                                                  \
    }

#define ID(x) (x)
#define PKEY(x) ((x).key)
#define LESS_PLAIN(x, y) ((x) < (y))
#define LESS_PAIR(x, y) ((x).key < (y).key || ((x).key == (y).key && (x).idx < (y).idx))

DEFINE_RADIX(radix_k8, uint8_t, ID, 0, 1, LESS_PLAIN)
DEFINE_RADIX(radix_k16, uint16_t, ID, 0, 2, LESS_PLAIN)
DEFINE_RADIX(radix_k32, uint32_t, ID, 0, 4, LESS_PLAIN)
DEFINE_RADIX(radix_k64, uint64_t, ID, 0, 8, LESS_PLAIN)
DEFINE_RADIX(radix_p8, uint64_t, ID, 32, 1, LESS_PLAIN)
DEFINE_RADIX(radix_p16, uint64_t, ID, 32, 2, LESS_PLAIN)
DEFINE_RADIX(radix_p32, uint64_t, ID, 32, 4, LESS_PLAIN)
DEFINE_RADIX(radix_pair, pair64, PKEY, 0, 8, LESS_PAIR)

/* ---- parallel radix for one long row -------------------------------------- */

/* The same stable LSD sort with every pass split over T threads: each
 * thread counts its slice of the array, the offsets are laid out digit
 * by digit and thread by thread (so equal digits keep their order), and
 * each thread scatters its slice. */
#define DEFINE_PAR_RADIX(NAME, R, GETKEY, LO, NP, SERIAL)                          \
    static R *NAME(R *a, R *b, int64_t n, int64_t (*hist)[256], int T) {           \
        if (T < 2) return SERIAL(a, b, n);                                         \
        for (int p = 0; p < (NP); p++) {                                           \
            int sh = (LO) + 8 * p;                                                 \
            bool skip = false;                                                     \
            _Pragma("omp parallel num_threads(T)")                                 \
            {                                                                      \
                int t = omp_get_thread_num();                                      \
                int64_t lo = n * t / T, hi = n * (t + 1) / T;                      \
                int64_t *h = hist[t];                                              \
                memset(h, 0, sizeof(int64_t) * 256);                               \
                for (int64_t i = lo; i < hi; i++) h[((uint64_t)GETKEY(a[i]) >> sh) & 255]++; \
                _Pragma("omp barrier")                                             \
                _Pragma("omp single")                                              \
                {                                                                  \
                    int dg0 = (int)(((uint64_t)GETKEY(a[0]) >> sh) & 255);         \
                    int64_t tot = 0;                                               \
                    for (int u = 0; u < T; u++) tot += hist[u][dg0];               \
                    skip = tot == n;                                               \
                    int64_t sum = 0;                                               \
                    for (int dg = 0; dg < 256; dg++)                               \
                        for (int u = 0; u < T; u++) {                              \
                            int64_t c = hist[u][dg];                               \
                            hist[u][dg] = sum;                                     \
                            sum += c;                                              \
                        }                                                          \
                }                                                                  \
                if (!skip)                                                         \
                    for (int64_t i = lo; i < hi; i++) {                            \
                        R x = a[i];                                                \
                        b[h[((uint64_t)GETKEY(x) >> sh) & 255]++] = x;             \
                    }                                                              \
            }                                                                      \
            if (!skip) {                                                           \
                R *tmp = a;                                                        \
                a = b;                                                             \
                b = tmp;                                                           \
            }                                                                      \
        }                                                                          \
        return a;                                                                  \
    }

DEFINE_PAR_RADIX(par_radix_k16, uint16_t, ID, 0, 2, radix_k16)
DEFINE_PAR_RADIX(par_radix_k32, uint32_t, ID, 0, 4, radix_k32)
DEFINE_PAR_RADIX(par_radix_k64, uint64_t, ID, 0, 8, radix_k64)
DEFINE_PAR_RADIX(par_radix_p16, uint64_t, ID, 32, 2, radix_p16)
DEFINE_PAR_RADIX(par_radix_p32, uint64_t, ID, 32, 4, radix_p32)
DEFINE_PAR_RADIX(par_radix_pair, pair64, PKEY, 0, 8, radix_pair)

/* ---- one row --------------------------------------------------------------- */

/* How a row of dtype dt is sorted: record mode and bytes per record. */
static rec_mode plan_mode(emily_dtype dt, int64_t n, bool with_positions) {
    if (!with_positions) return REC_KEYS;
    if (key_bits(dt) <= 32 && n <= (int64_t)UINT32_MAX) return REC_PACKED;
    return REC_PAIR;
}

static size_t rec_size(emily_dtype dt, rec_mode m) {
    return m == REC_KEYS ? emily_dtype_size(dt) : m == REC_PACKED ? 8 : sizeof(pair64);
}

/* Whether records go to the in-place vector quicksort: 32/64-bit keys
 * (equal keys are interchangeable) and 64-bit records of 32-bit keys
 * (all distinct); 8/16-bit keys take few radix passes already. */
static bool simd_sortable(emily_dtype dt, rec_mode m, int64_t n) {
#if HAVE_SORT_AVX512
    int kb = key_bits(dt);
    return n > SORT_SMALL && use_avx512() &&
           ((m == REC_KEYS && kb >= 32) || (m == REC_PACKED && kb == 32));
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
static void *sort_records(emily_dtype dt, rec_mode m, void *scratch, int64_t n, int T,
                          int64_t (*hist)[256]) {
    size_t rs = rec_size(dt, m);
    void *b = (char *)scratch + (size_t)n * rs;
    int kb = key_bits(dt);
#if HAVE_SORT_AVX512
    if (simd_sortable(dt, m, n)) {
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

/* First position in sorted keys (width kb) not below v, from lo. */
static int64_t lower_bound(const void *keys, int kb, int64_t n, uint64_t v) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        uint64_t k;
        switch (kb) {
        case 8: k = ((const uint8_t *)keys)[mid]; break;
        case 16: k = ((const uint16_t *)keys)[mid]; break;
        case 32: k = ((const uint32_t *)keys)[mid]; break;
        default: k = ((const uint64_t *)keys)[mid]; break;
        }
        if (k < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Where a float row's zeros and NaNs lie once sorted: their keys lost
 * the sign of the zero and the NaN's payload. */
typedef struct zero_nan_runs {
    int64_t z0, z1, q0, q1;
} zero_nan_runs;

static bool find_zero_nan_runs(emily_dtype dt, const void *keys, int64_t n, bool desc,
                               zero_nan_runs *r) {
    int kb = key_bits(dt);
    uint64_t all = kb == 64 ? UINT64_MAX : ((uint64_t)1 << kb) - 1;
    uint64_t sign = (uint64_t)1 << (kb - 1);
    uint64_t zkey = sign, nkey = all; /* ascending keys of 0.0 and NaN */
    if (desc) {
        zkey = ~zkey & all;
        nkey = 0;
    }
    r->z0 = lower_bound(keys, kb, n, zkey);
    r->z1 = zkey == all ? n : lower_bound(keys, kb, n, zkey + 1);
    r->q0 = lower_bound(keys, kb, n, nkey);
    r->q1 = nkey == all ? n : lower_bound(keys, kb, n, nkey + 1);
    return r->z0 < r->z1 || r->q0 < r->q1;
}

/* Gives the zeros and NaNs of a written-back row their exact bits, in
 * source order: the order a stable sort leaves equal keys in. */
static void fix_zeros_and_nans(emily_dtype dt, const zero_nan_runs *runs, int64_t n, const char *s,
                               int64_t ss, char *d, int64_t ds) {
    int kb = key_bits(dt);
    uint64_t all = kb == 64 ? UINT64_MAX : ((uint64_t)1 << kb) - 1;
    uint64_t sign = (uint64_t)1 << (kb - 1);
    int64_t z0 = runs->z0, z1 = runs->z1, q0 = runs->q0, q1 = runs->q1;
    size_t es = (size_t)kb / 8;
    uint64_t inf = dt == EMILY_F16 ? 0x7c00u : dt == EMILY_BF16 ? 0x7f80u
                 : dt == EMILY_F32 ? 0x7f800000u : 0x7ff0000000000000ull;
    for (int64_t i = 0; i < n && (z0 < z1 || q0 < q1); i++) {
        uint64_t b = 0;
        memcpy(&b, s + (int64_t)(i * ss) * (int64_t)es, es); /* little-endian low bytes */
        uint64_t mag = b & ~sign & all;
        if (mag == 0 && z0 < z1) memcpy(d + (size_t)(z0++ * ds) * es, &b, es);
        else if (mag > inf && q0 < q1) memcpy(d + (size_t)(q0++ * ds) * es, &b, es);
    }
}

/* Writes position p (< 2^63) as element i of an index row of dtype dt. */
static inline void put_index(char *d, emily_dtype dt, int64_t i, uint64_t p) {
    switch (dt) {
    case EMILY_S32: ((int32_t *)d)[i] = (int32_t)(uint32_t)p; break;
    case EMILY_S64: ((int64_t *)d)[i] = (int64_t)p; break;
    case EMILY_U32: ((uint32_t *)d)[i] = (uint32_t)p; break;
    case EMILY_U64: ((uint64_t *)d)[i] = p; break;
    default: emily_sc_store_int((int)dt, p, 1, d + (size_t)i * emily_dtype_size(dt)); break;
    }
}

static void row_positions(emily_dtype idt, rec_mode m, const void *recs, int64_t n, char *d,
                          int64_t ds) {
    if (m == REC_PACKED) {
        const uint64_t *r = recs;
#if HAVE_SORT_AVX512
        if (idt == EMILY_S32 && ds == 1 && use_avx512()) {
            emi_cpu_positions_s32_avx512(r, n, (int32_t *)d);
            return;
        }
#endif
        if (idt == EMILY_S32 && ds == 1) {
            int32_t *o = (int32_t *)d;
            for (int64_t i = 0; i < n; i++) o[i] = (int32_t)(uint32_t)r[i];
        } else {
            for (int64_t i = 0; i < n; i++) put_index(d, idt, i * ds, r[i] & 0xffffffffu);
        }
    } else {
        const pair64 *r = recs;
        for (int64_t i = 0; i < n; i++) put_index(d, idt, i * ds, r[i].idx);
    }
}

/* ---- rows of a tensor ------------------------------------------------------ */

/* The positions of every row: all axes but `axis`, with the strides of
 * the source and of the (contiguous) destination. */
typedef struct row_walk {
    int nd;
    int64_t *shape, *sstride, *dstride;
    int64_t rows;
} row_walk;

static emily_status walk_init(row_walk *w, const emily_tensor *src, const emily_tensor *dst,
                              int axis, const char *op) {
    int r = src->rank;
    w->shape = malloc(sizeof(int64_t) * 3 * ((size_t)r + 1));
    if (!w->shape) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    w->sstride = w->shape + r + 1;
    w->dstride = w->sstride + r + 1;
    w->nd = 0;
    w->rows = 1;
    for (int i = 0; i < r; i++) {
        if (i == axis) continue;
        w->shape[w->nd] = src->shape[i];
        w->sstride[w->nd] = src->strides[i];
        w->dstride[w->nd] = dst->strides[i];
        w->rows *= src->shape[i];
        w->nd++;
    }
    return EMILY_OK;
}

static inline void walk_offsets(const row_walk *w, int64_t row, int64_t *so, int64_t *dso) {
    int64_t s = 0, d = 0;
    for (int i = w->nd - 1; i >= 0; i--) {
        int64_t c = row % w->shape[i];
        row /= w->shape[i];
        s += c * w->sstride[i];
        d += c * w->dstride[i];
    }
    *so = s;
    *dso = d;
}

typedef enum row_job { JOB_SORT, JOB_ARGSORT, JOB_TOPK } row_job;

typedef struct row_args {
    row_job job;
    emily_dtype dt, idt; /* source dtype, index output dtype */
    bool desc;
    int64_t n, k;
    const char *sbase;
    int64_t ss;          /* source stride along the axis */
    char *dbase, *ibase; /* values / indices outputs */
    int64_t ds;          /* output stride along the axis */
} row_args;

/* Whether top_k selects the k best (k small against the row) rather
 * than sorting the whole row. */
static bool topk_by_heap(int64_t n, int64_t k) { return n > SORT_SMALL && k * 8 < n; }

/* Slice lengths from which top_k's selection splits a single row over
 * threads. */
#define TOPK_PAR_MIN ((int64_t)1 << 16)
#define TOPK_PAR_MIN_SIMD ((int64_t)1 << 23)

#define FIND_LOOP(RAW, KEYT, KFN)                                                    \
    do {                                                                             \
        const RAW *p_ = (const RAW *)s;                                              \
        KEYT lim_ = (KEYT)lim;                                                       \
        if (ss == 1) {                                                               \
            for (; i < hi; i++)                                                      \
                if (KFN((KEYT)p_[i]) > lim_) return i;                               \
        } else {                                                                     \
            for (; i < hi; i++)                                                      \
                if (KFN((KEYT)p_[i * ss]) > lim_) return i;                          \
        }                                                                            \
        return hi;                                                                   \
    } while (0)

/* The first position in [i, hi) of a row (s, stride ss) whose ascending
 * key is above lim, or hi. top_k's filter: in descending keys (the
 * complement) that is a key below ~lim, an element better than the
 * worst of the k kept so far. Nearly every element fails it, so this
 * loop (vectorized for contiguous f32) is what a selection costs. */
static int64_t find_above(emily_dtype dt, const char *s, int64_t ss, int64_t i, int64_t hi,
                          uint64_t lim) {
#if HAVE_SORT_AVX512
    if (dt == EMILY_F32 && ss == 1 && use_avx512())
        return emi_cpu_find_above_f32_avx512((const uint32_t *)s, i, hi, (uint32_t)lim);
#endif
    switch (dt) {
    case EMILY_U8: FIND_LOOP(uint8_t, uint8_t, key_u8);
    case EMILY_S8: FIND_LOOP(uint8_t, uint8_t, key_s8);
    case EMILY_U16: FIND_LOOP(uint16_t, uint16_t, key_u16);
    case EMILY_S16: FIND_LOOP(uint16_t, uint16_t, key_s16);
    case EMILY_F16: FIND_LOOP(uint16_t, uint16_t, key_f16);
    case EMILY_BF16: FIND_LOOP(uint16_t, uint16_t, key_bf16);
    case EMILY_U32: FIND_LOOP(uint32_t, uint32_t, key_u32);
    case EMILY_S32: FIND_LOOP(uint32_t, uint32_t, key_s32);
    case EMILY_F32: FIND_LOOP(uint32_t, uint32_t, key_f32);
    case EMILY_U64: FIND_LOOP(uint64_t, uint64_t, key_u64);
    case EMILY_S64: FIND_LOOP(uint64_t, uint64_t, key_s64);
    default: FIND_LOOP(uint64_t, uint64_t, key_f64);
    }
}

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
    row_records(a->dt, s + lo * a->ss * (int64_t)es, a->ss, k, lo, true, REC_PAIR, heap);
    for (int64_t j = k / 2; j-- > 0;) sift_down(heap, k, j, heap[j]);
    for (int64_t i = lo + k; i < hi; i++) {
        /* descending key below root <=> ascending key above ~root */
        i = find_above(a->dt, s, a->ss, i, hi, ~heap[0].key & all);
        if (i == hi) break;
        pair64 x;
        row_records(a->dt, s + i * a->ss * (int64_t)es, a->ss, 1, i, true, REC_PAIR, &x);
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
static int topk_threads(const row_args *a, int T) {
    int64_t n = a->n, k = a->k, min = TOPK_PAR_MIN;
#if HAVE_SORT_AVX512
    if (a->dt == EMILY_F32 && a->ss == 1 && use_avx512()) min = TOPK_PAR_MIN_SIMD;
#endif
    int64_t per = k > min ? k : min;
    int64_t t = n / per;
    if (T > 64) T = 64;
    return t < 1 ? 1 : t < T ? (int)t : T;
}

/* top_k of one row by selection (scratch: (T + 1) * k records; the
 * result lands in the first k): T slices select their k best side by
 * side, then the sorted lists are merged. */
static pair64 *topk_row(const row_args *a, const char *s, pair64 *scratch, int T) {
    int64_t n = a->n, k = a->k;
    T = topk_threads(a, T);
    if (T == 1) {
        topk_select(a, s, 0, n, scratch);
        return scratch;
    }
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        /* a team smaller than asked leaves slices to the others */
        for (int u = t; u < T; u += nt)
            topk_select(a, s, n * u / T, n * (u + 1) / T, scratch + (size_t)u * (size_t)k);
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

/* A values sort whose keys can live in the output row itself: it is
 * contiguous and the vector quicksort needs no second buffer. */
static bool sort_in_place(const row_args *a) {
    return a->job == JOB_SORT && a->ds == 1 && simd_sortable(a->dt, REC_KEYS, a->n);
}

/* Scratch bytes one row needs. */
static size_t row_scratch(const row_args *a, int T) {
    size_t n = (size_t)a->n;
    if (a->job == JOB_TOPK && topk_by_heap(a->n, a->k))
        return (size_t)(topk_threads(a, T) + 1) * (size_t)a->k * sizeof(pair64);
    if (sort_in_place(a)) return 0;
    rec_mode m = plan_mode(a->dt, a->n, a->job != JOB_SORT);
    return (simd_sortable(a->dt, m, a->n) ? 1 : 2) * n * rec_size(a->dt, m);
}

/* The linear passes of a row, on positions [lo, hi): records in, keys
 * back to values, positions out. */
static void records_range(const row_args *a, const char *s, rec_mode m, void *out, int64_t lo,
                          int64_t hi) {
    size_t es = emily_dtype_size(a->dt), rs = rec_size(a->dt, m);
    row_records(a->dt, s + lo * a->ss * (int64_t)es, a->ss, hi - lo, lo, a->desc, m,
                (char *)out + (size_t)lo * rs);
}

static void unkeys_range(const row_args *a, const void *keys, char *d, int64_t lo, int64_t hi) {
    size_t es = emily_dtype_size(a->dt);
    row_unkeys(a->dt, (const char *)keys + (size_t)lo * es, hi - lo, a->desc,
               d + (size_t)(lo * a->ds) * es, a->ds);
}

static void positions_range(const row_args *a, rec_mode m, const void *recs, char *di, int64_t lo,
                            int64_t hi) {
    size_t is = emily_dtype_size(a->idt), rs = rec_size(a->dt, m);
    row_positions(a->idt, m, (const char *)recs + (size_t)lo * rs, hi - lo,
                  di + (size_t)(lo * a->ds) * is, a->ds);
}

/* sort/argsort of one long row by the vector quicksort on T threads, in
 * one parallel region: records in by slices, the sort as tasks, values
 * or positions out by slices. `out` is d (sort) or di (argsort). */
static void long_row_simd(const row_args *a, const char *s, void *recs, char *out, int T) {
    bool argsort = a->job == JOB_ARGSORT;
    rec_mode m = argsort ? plan_mode(a->dt, a->n, true) : REC_KEYS;
    int64_t n = a->n;
    zero_nan_runs runs;
    bool fix = false;
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        records_range(a, s, m, recs, n * t / nt, n * (t + 1) / nt);
#pragma omp barrier
#pragma omp single
        sort_records(a->dt, m, recs, n, 2, NULL);
        /* the barrier closing `single` waits for every task */
        if (!argsort) {
#pragma omp single
            fix = emily_dtype_is_float(a->dt) && find_zero_nan_runs(a->dt, recs, n, a->desc, &runs);
            unkeys_range(a, recs, out, n * t / nt, n * (t + 1) / nt);
        } else {
            positions_range(a, m, recs, out, n * t / nt, n * (t + 1) / nt);
        }
    }
    if (fix) fix_zeros_and_nans(a->dt, &runs, n, s, a->ss, out, a->ds);
}

/* Sorts one row: source at soff, outputs at doff (elements). */
static void run_row(const row_args *a, int64_t soff, int64_t doff, void *scratch, int T,
                    int64_t (*hist)[256]) {
    size_t es = emily_dtype_size(a->dt);
    const char *s = a->sbase + soff * (int64_t)es; /* signed: soff < 0 for reversed views */
    int64_t n = a->n;
    if (a->job == JOB_SORT) {
        char *d = a->dbase + (size_t)doff * es;
        void *keys = sort_in_place(a) ? (void *)d : scratch;
#if HAVE_SORT_AVX512
        if (a->dt == EMILY_F32 && a->ss == 1 && keys == (void *)d && n >= 256) {
            /* keys made and first partitioned in one pass, sorted and
             * mapped back in place */
            int64_t r[4];
            emi_cpu_sort_f32_avx512((const uint32_t *)s, n, a->desc ? UINT32_MAX : 0, (uint32_t *)d, T, r);
            zero_nan_runs runs = {r[0], r[1], r[2], r[3]};
            if (r[0] < r[1] || r[2] < r[3]) fix_zeros_and_nans(a->dt, &runs, n, s, a->ss, d, a->ds);
            return;
        }
#endif
        if (T > 1 && simd_sortable(a->dt, REC_KEYS, n)) {
            long_row_simd(a, s, keys, d, T);
            return;
        }
        records_range(a, s, REC_KEYS, keys, 0, n);
        keys = sort_records(a->dt, REC_KEYS, keys, n, T, hist);
        zero_nan_runs runs;
        bool fix = emily_dtype_is_float(a->dt) && find_zero_nan_runs(a->dt, keys, n, a->desc, &runs);
        unkeys_range(a, keys, d, 0, n);
        if (fix) fix_zeros_and_nans(a->dt, &runs, n, s, a->ss, d, a->ds);
        return;
    }
    char *di = a->ibase + (size_t)doff * emily_dtype_size(a->idt);
    if (a->job == JOB_ARGSORT) {
        rec_mode m = plan_mode(a->dt, n, true);
        if (T > 1 && simd_sortable(a->dt, m, n)) {
            long_row_simd(a, s, scratch, di, T);
            return;
        }
        records_range(a, s, m, scratch, 0, n);
        void *recs = sort_records(a->dt, m, scratch, n, T, hist);
        positions_range(a, m, recs, di, 0, n);
        return;
    }
    /* top_k: the k first of the descending order, by a heap or by
     * sorting descending records like argsort */
    char *dv = a->dbase + (size_t)doff * es;
    if (topk_by_heap(n, a->k)) {
        pair64 *best = topk_row(a, s, scratch, T);
        for (int64_t i = 0; i < a->k; i++) {
            memcpy(dv + (size_t)(i * a->ds) * es, s + (int64_t)best[i].idx * a->ss * (int64_t)es, es);
            put_index(di, a->idt, i * a->ds, best[i].idx);
        }
        return;
    }
    rec_mode m = plan_mode(a->dt, n, true);
    records_range(a, s, m, scratch, 0, n);
    void *recs = sort_records(a->dt, m, scratch, n, T, hist);
    for (int64_t i = 0; i < a->k; i++) {
        uint64_t p = m == REC_PACKED ? (((const uint64_t *)recs)[i] & 0xffffffffu) : ((const pair64 *)recs)[i].idx;
        memcpy(dv + (size_t)(i * a->ds) * es, s + (int64_t)p * a->ss * (int64_t)es, es);
        put_index(di, a->idt, i * a->ds, p);
    }
}

/* Rows whose elements are strided (the axis is not the innermost one in
 * memory) but lie next to other rows (the innermost of the other axes is
 * contiguous) go TILE_ROWS at a time through contiguous tiles: one pass
 * reads the tile's rows together, so every cache line read serves each
 * of them, the rows are sorted as contiguous rows, and one pass writes
 * them back the same way. */
#define TILE_ROWS 16
#define TILE_MAX_BYTES ((int64_t)8 << 20)

typedef struct row_plan {
    row_walk w;
    bool tiled;
    int64_t L, gpl, B; /* innermost other axis, tiles per line of it, rows per tile */
    int64_t units;     /* rows, or tiles */
    row_args inner;    /* the job on a tile's contiguous rows */
    size_t need;       /* scratch of one row */
    size_t ein, eout;  /* element sizes in and out */
} row_plan;

/* Tile rows b < cnt of n elements; memory row b starts at b and steps
 * by st. in: tile[b][j] = mem[b + j * st]; else the reverse. */
#define TILE_MOVE(T)                                                                     \
    do {                                                                                 \
        T *t_ = (T *)tile;                                                               \
        T *m_ = (T *)mem;                                                                \
        if (in) {                                                                        \
            for (int64_t j = 0; j < n; j++)                                              \
                for (int64_t b = 0; b < cnt; b++) t_[b * n + j] = m_[b + j * st];        \
        } else {                                                                         \
            for (int64_t j = 0; j < n; j++)                                              \
                for (int64_t b = 0; b < cnt; b++) m_[b + j * st] = t_[b * n + j];        \
        }                                                                                \
    } while (0)

static void tile_move(bool in, void *tile, void *mem, int64_t n, int64_t cnt, int64_t st, size_t es) {
    switch (es) {
    case 1: TILE_MOVE(uint8_t); break;
    case 2: TILE_MOVE(uint16_t); break;
    case 4: TILE_MOVE(uint32_t); break;
    default: TILE_MOVE(uint64_t); break;
    }
}

/* Offsets inside one scratch block keep every part aligned for any
 * element or record type. */
static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

static void run_unit(const row_args *a, const row_plan *p, int64_t u, char *scratch, int T,
                     int64_t (*hist)[256]) {
    int64_t so, dso;
    if (!p->tiled) {
        walk_offsets(&p->w, u, &so, &dso);
        run_row(a, so, dso, scratch, T, hist);
        return;
    }
    int64_t o = u / p->gpl, g = u % p->gpl, n = a->n;
    int64_t r0 = o * p->L + g * p->B, cnt = p->L - g * p->B < p->B ? p->L - g * p->B : p->B;
    walk_offsets(&p->w, r0, &so, &dso);
    char *tin = scratch + align64(p->need), *tout = tin + align64((size_t)(p->B * n) * p->ein);
    tile_move(true, tin, (char *)a->sbase + so * (int64_t)p->ein, n, cnt, a->ss, p->ein);
    row_args t = p->inner;
    t.sbase = tin;
    t.dbase = t.ibase = tout;
    for (int64_t b = 0; b < cnt; b++) run_row(&t, b * n, b * n, scratch, 1, hist);
    char *out = a->job == JOB_SORT ? a->dbase : a->ibase;
    tile_move(false, tout, out + (size_t)dso * p->eout, n, cnt, a->ds, p->eout);
}

/* Runs the job over every row of src along `axis`; dst gives the
 * output strides (values or indices, same rank as src). */
static emily_status run_rows(const char *op, row_args *a, const emily_tensor *src,
                             const emily_tensor *dst, int axis) {
    row_plan p;
    memset(&p, 0, sizeof p);
    emily_status s = walk_init(&p.w, src, dst, axis, op);
    if (s) return s;
    a->n = src->shape[axis];
    a->ss = src->strides[axis];
    a->ds = dst->strides[axis];
    a->sbase = emily_tensor_base(src);
    p.ein = emily_dtype_size(a->dt);
    p.eout = emily_dtype_size(a->job == JOB_SORT ? a->dt : a->idt);
    int nd = p.w.nd;
    if (a->job != JOB_TOPK && a->ss != 1 && nd > 0 && p.w.shape[nd - 1] > 1 &&
        p.w.sstride[nd - 1] == 1 && p.w.dstride[nd - 1] == 1) {
        int64_t per_row = a->n * (int64_t)(p.ein + p.eout);
        p.B = TILE_MAX_BYTES / (per_row > 0 ? per_row : 1);
        if (p.B > TILE_ROWS) p.B = TILE_ROWS;
        if (p.B > p.w.shape[nd - 1]) p.B = p.w.shape[nd - 1];
        p.tiled = p.B >= 2;
    }
    size_t tile_bytes = 0;
    if (p.tiled) {
        p.L = p.w.shape[nd - 1];
        p.gpl = (p.L + p.B - 1) / p.B;
        p.units = p.w.rows / p.L * p.gpl;
        p.inner = *a;
        p.inner.ss = p.inner.ds = 1;
        p.need = row_scratch(&p.inner, 1);
        tile_bytes = align64(p.need) - p.need + align64((size_t)(p.B * a->n) * p.ein) +
                     (size_t)(p.B * a->n) * p.eout;
    }
    if (!p.tiled) p.units = p.w.rows;
    int64_t total = p.w.rows * a->n;
    int nth = omp_get_max_threads();
    bool serial = p.units == 1 || total < SORT_PAR_MIN || nth < 2;
    /* serial units; a long single row may still split its passes */
    int T = (serial && p.w.rows == 1 && a->n >= SORT_PAR_ROW_MIN && nth > 1) ? nth : 1;
    if (!p.tiled) p.need = row_scratch(a, T);
    size_t need = p.need + tile_bytes;
    if (serial) {
        void *scratch = malloc(need ? need : 1);
        int64_t (*hist)[256] = malloc(sizeof(int64_t) * 256 * (size_t)T);
        if (!scratch || !hist) {
            free(scratch);
            free(hist);
            free(p.w.shape);
            return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory for rows of %lld elements",
                               op, (long long)a->n);
        }
        for (int64_t u = 0; u < p.units; u++) run_unit(a, &p, u, scratch, T, hist);
        free(scratch);
        free(hist);
        free(p.w.shape);
        return EMILY_OK;
    }
    /* units split over threads, one scratch per chunk of units */
    int64_t chunks = (int64_t)nth * 4 < p.units ? (int64_t)nth * 4 : p.units;
    atomic_int failed = 0;
    EMILY_PAR_FOR(true, c, chunks, {
        int64_t lo = p.units * c / chunks, hi = p.units * (c + 1) / chunks;
        void *scratch = malloc(need ? need : 1);
        int64_t(*hist)[256] = malloc(sizeof(int64_t) * 256);
        if (!scratch || !hist) {
            atomic_store(&failed, 1);
        } else {
            for (int64_t u = lo; u < hi; u++) run_unit(a, &p, u, scratch, 1, hist);
        }
        free(scratch);
        free(hist);
    });
    free(p.w.shape);
    if (atomic_load(&failed))
        return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory for rows of %lld elements", op,
                           (long long)a->n);
    return EMILY_OK;
}

/* ---- kernels --------------------------------------------------------------- */

static emily_status cpu_sort(emily_tensor *dst, const emily_tensor *src, int axis, bool descending) {
    if (src->size == 0) return EMILY_OK;
    row_args a = {.job = JOB_SORT, .dt = src->dtype, .idt = src->dtype, .desc = descending};
    a.dbase = emily_tensor_base(dst);
    return run_rows("sort", &a, src, dst, axis);
}

static emily_status cpu_argsort(emily_tensor *dst, const emily_tensor *src, int axis,
                                bool descending) {
    if (src->size == 0) return EMILY_OK;
    row_args a = {.job = JOB_ARGSORT, .dt = src->dtype, .idt = dst->dtype, .desc = descending};
    a.ibase = emily_tensor_base(dst);
    return run_rows("argsort", &a, src, dst, axis);
}

static emily_status cpu_top_k(emily_tensor *values, emily_tensor *indices, const emily_tensor *src,
                              int64_t k) {
    if (values->size == 0) return EMILY_OK;
    row_args a = {.job = JOB_TOPK, .dt = src->dtype, .idt = indices->dtype, .desc = true, .k = k};
    a.dbase = emily_tensor_base(values);
    a.ibase = emily_tensor_base(indices);
    return run_rows("top_k", &a, src, values, src->rank - 1);
}

const struct emily_sort_kernels emi_cpu_sort_kernels = {
    .sort = cpu_sort,
    .argsort = cpu_argsort,
    .top_k = cpu_top_k,
};
