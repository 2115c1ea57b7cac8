/* The sort family's keys (see sort.h): every real dtype's mapping to an
 * unsigned key in Nx's order and back, expanded over the dtype list, and
 * the loops that turn a row into records, sorted keys back into values,
 * and that filter a row for top_k. Contiguous f32 rows take avx512.c's
 * vector loops where the CPU has AVX-512. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/dtype_scalars.h"
#include "cpu/sort/avx512.h"
#include "cpu/sort/sort.h"
#include "cpu/strided.h"

/* Whether this CPU runs avx512.c (AVX-512 F/DQ/BW/VL, BMI2, POPCNT),
 * unless EMILY_SIMD=0 asks for the portable paths (as for the unary
 * kernels). Checked once. */
bool emi_sort_use_avx512(void) {
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

/* key_<sfx> and unkey_<sfx> for every real dtype, on the element's bits
 * (EMI_BITS: the unsigned integer of its width). */
#define SIGN_BIT(sfx) ((EMI_BITS(sfx))((EMI_BITS(sfx))1 << (EMI_WIDTH(sfx) - 1)))

/* unsigned integers are their own keys */
#define UNSIGNED_KEY(ENUM, sfx, T)                                       \
    static inline EMI_BITS(sfx) key_##sfx(EMI_BITS(sfx) x) { return x; } \
    static inline EMI_BITS(sfx) unkey_##sfx(EMI_BITS(sfx) k) { return k; }
/* signed integers flip their sign bit */
#define SIGNED_KEY(ENUM, sfx, T)                                                                          \
    static inline EMI_BITS(sfx) key_##sfx(EMI_BITS(sfx) x) { return (EMI_BITS(sfx))(x ^ SIGN_BIT(sfx)); } \
    static inline EMI_BITS(sfx) unkey_##sfx(EMI_BITS(sfx) k) { return key_##sfx(k); }
/* float bits -> key: NaN largest, -0.0 as +0.0; key -> bits (NaN keys
 * give some NaN, zero keys +0.0: fixed later) */
#define FLOAT_KEY(ENUM, sfx, T)                                         \
    static inline EMI_BITS(sfx) key_##sfx(EMI_BITS(sfx) b) {            \
        typedef EMI_BITS(sfx) U;                                        \
        const U sign = SIGN_BIT(sfx);                                   \
        if ((U)(b & (U)~sign) > (U)EMI_INF_BITS(sfx)) return (U) ~(U)0; \
        if (b == sign) b = 0;                                           \
        return (b & sign) ? (U)~b : (U)(b | sign);                      \
    }                                                                   \
    static inline EMI_BITS(sfx) unkey_##sfx(EMI_BITS(sfx) k) {          \
        typedef EMI_BITS(sfx) U;                                        \
        const U sign = SIGN_BIT(sfx);                                   \
        return (k & sign) ? (U)(k ^ sign) : (U)~k;                      \
    }
EMI_DTYPES_UNSIGNED(UNSIGNED_KEY)
EMI_DTYPES_SIGNED(SIGNED_KEY)
EMI_DTYPES_FLOAT(FLOAT_KEY)

/* One case of row_records per dtype: keys of KEYT (the element's bits)
 * by KFN. */
// clang-format off
#define KEY_LOOP(ENUM, sfx, T) \
    case EMILY_##ENUM: KEY_LOOP_OF(EMI_BITS(sfx), key_##sfx); break;
#define KEY_LOOP_OF(KEYT, KFN)                                                       \
    do {                                                                             \
        const KEYT *p_ = (const KEYT *)s;                                            \
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
// clang-format on

/* Records of the n elements of a row (s, stride ss elements); their
 * positions count from `first`. */
void emi_sort_row_records(emily_dtype dt, const char *s, int64_t ss, int64_t n, int64_t first, bool desc, rec_mode mode,
                          void *out) {
#if HAVE_SORT_AVX512
    if (dt == EMILY_F32 && ss == 1 && mode != REC_PAIR && emi_sort_use_avx512()) {
        uint32_t flip = desc ? UINT32_MAX : 0;
        if (mode == REC_KEYS) emi_cpu_keys_f32_avx512((const uint32_t *)s, n, flip, out);
        else emi_cpu_records_f32_avx512((const uint32_t *)s, n, first, flip, out);
        return;
    }
#endif
    switch (dt) {
        EMI_DTYPES_REAL(KEY_LOOP)
    default: break;
    }
}

/* One case of row_unkeys per dtype. */
// clang-format off
#define UNKEY_LOOP(ENUM, sfx, T) \
    case EMILY_##ENUM: UNKEY_LOOP_OF(EMI_BITS(sfx), unkey_##sfx); break;
#define UNKEY_LOOP_OF(KEYT, UFN)                                                     \
    do {                                                                             \
        KEYT *p_ = (KEYT *)d;                                                        \
        const KEYT *k_ = (const KEYT *)keys;                                         \
        KEYT flip_ = desc ? (KEYT) ~(KEYT)0 : (KEYT)0;                               \
        if (ds == 1)                                                                 \
            for (int64_t i = 0; i < n; i++) p_[i] = UFN((KEYT)(k_[i] ^ flip_));      \
        else                                                                         \
            for (int64_t i = 0; i < n; i++) p_[i * ds] = UFN((KEYT)(k_[i] ^ flip_)); \
    } while (0)
// clang-format on

/* Writes sorted keys back as element bits (d, stride ds elements). */
void emi_sort_row_unkeys(emily_dtype dt, const void *keys, int64_t n, bool desc, char *d, int64_t ds) {
#if HAVE_SORT_AVX512
    if (dt == EMILY_F32 && ds == 1 && emi_sort_use_avx512()) {
        emi_cpu_unkeys_f32_avx512(keys, n, desc ? UINT32_MAX : 0, (uint32_t *)d);
        return;
    }
#endif
    switch (dt) {
        EMI_DTYPES_REAL(UNKEY_LOOP)
    default: break;
    }
}

/* One case of find_above per dtype. */
// clang-format off
#define FIND_LOOP(ENUM, sfx, T) \
    case EMILY_##ENUM: FIND_LOOP_OF(EMI_BITS(sfx), key_##sfx);
#define FIND_LOOP_OF(KEYT, KFN)                                                      \
    do {                                                                             \
        const KEYT *p_ = (const KEYT *)s;                                            \
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
// clang-format on

/* The first position in [i, hi) of a row (s, stride ss) whose ascending
 * key is above lim, or hi. top_k's filter: in descending keys (the
 * complement) that is a key below ~lim, an element better than the
 * worst of the k kept so far. Nearly every element fails it, so this
 * loop (vectorized for contiguous f32) is what a selection costs. */
int64_t emi_sort_find_above(emily_dtype dt, const char *s, int64_t ss, int64_t i, int64_t hi, uint64_t lim) {
#if HAVE_SORT_AVX512
    if (dt == EMILY_F32 && ss == 1 && emi_sort_use_avx512())
        return emi_cpu_find_above_f32_avx512((const uint32_t *)s, i, hi, (uint32_t)lim);
#endif
    switch (dt) {
        EMI_DTYPES_REAL(FIND_LOOP)
    default: return hi;
    }
}
