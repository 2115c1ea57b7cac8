/* The all and any reducers (see reducers.h): u8 results of "x != 0",
 * one body expanded over the dtype list with each class's test. */
#include <string.h>
#include "cpu/reduce/reducers.h"

#define TRUTH_FOLD(NAME, T, NONZERO, IS_ALL)                                                      \
    static void NAME##_init(void *acc, int64_t n) { memset(acc, IS_ALL ? 1 : 0, (size_t)n); }     \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {                    \
        const T *restrict x = src;                                                                \
        uint8_t a = *(uint8_t *)acc;                                                              \
        if (IS_ALL) {                                                                             \
            for (int64_t i = 0; i < n && a; i++) a = (uint8_t)(a & (NONZERO(x, i * s) ? 1 : 0));  \
        } else {                                                                                  \
            for (int64_t i = 0; i < n && !a; i++) a = (uint8_t)(a | (NONZERO(x, i * s) ? 1 : 0)); \
        }                                                                                         \
        *(uint8_t *)acc = a;                                                                      \
    }                                                                                             \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {                   \
        const T *restrict x = src;                                                                \
        uint8_t *restrict a = acc;                                                                \
        for (int64_t j = 0; j < n; j++) {                                                         \
            uint8_t v = NONZERO(x, j * s) ? 1 : 0;                                                \
            a[j] = (uint8_t)(IS_ALL ? (a[j] & v) : (a[j] | v));                                   \
        }                                                                                         \
    }                                                                                             \
    static void NAME##_merge(void *acc, const void *part) {                                       \
        uint8_t *a = acc, p = *(const uint8_t *)part;                                             \
        *a = (uint8_t)(IS_ALL ? (*a & p) : (*a | p));                                             \
    }                                                                                             \
    EMI_REDUCER_STORE(NAME, uint8_t, uint8_t, EMI_AS_IS)                                          \
    EMI_REDUCER(NAME, uint8_t, false)

#define NZ_PLAIN(x, i) ((x)[i] != 0)
/* f16 and bf16: any bit but the sign's */
#define NZ_HALF(x, i) (((x)[i] & 0x7fff) != 0)
/* Nx compares a complex number with the integer 0 as Erlang terms: a
 * %Complex{} struct never equals 0, so every complex element is "true". */
#define NZ_COMPLEX(x, i) ((void)(x), (void)(i), 1)

#define TRUTH(sfx, T, NZ)           \
    TRUTH_FOLD(all_##sfx, T, NZ, 1) \
    TRUTH_FOLD(any_##sfx, T, NZ, 0)
#define TRUTH_PLAIN(ENUM, sfx, T) TRUTH(sfx, T, NZ_PLAIN)
#define TRUTH_HALF(ENUM, sfx, T) TRUTH(sfx, T, NZ_HALF)
#define TRUTH_COMPLEX(ENUM, sfx, T) TRUTH(sfx, T, NZ_COMPLEX)
EMI_DTYPES_INTEGER(TRUTH_PLAIN)
EMI_DTYPES_HALF(TRUTH_HALF)
EMI_DTYPES_NATIVE_FLOAT(TRUTH_PLAIN)
EMI_DTYPES_COMPLEX(TRUTH_COMPLEX)

#define ALL_ENTRY(ENUM, sfx, T) EMI_REDUCER_ENTRY(ENUM, all_##sfx)
#define ANY_ENTRY(ENUM, sfx, T) EMI_REDUCER_ENTRY(ENUM, any_##sfx)
const emi_reducer *const emi_reduce_all[EMILY_DTYPE_COUNT] = {EMI_DTYPES(ALL_ENTRY)};
const emi_reducer *const emi_reduce_any[EMILY_DTYPE_COUNT] = {EMI_DTYPES(ANY_ENTRY)};
