/* The AVX-512 paths of the sort family (avx512.c), called only where the
 * CPU has AVX-512 F/DQ/BW/VL, BMI2 and POPCNT (emi_sort_use_avx512). */
#ifndef EMILY_CPU_SORT_AVX512_H
#define EMILY_CPU_SORT_AVX512_H

#include <stdbool.h>
#include <stdint.h>

/* In-place quicksorts of unsigned keys (`tasks`: called in a `single`
 * of a parallel region, whose team shares the parts). */
void emi_cpu_sort_u32_avx512(uint32_t *a, int64_t n, bool tasks);
void emi_cpu_sort_u64_avx512(uint64_t *a, int64_t n, bool tasks);

/* f32 key mappings for contiguous rows (flip: 0 ascending, all ones
 * descending): keys of n elements; a whole values sort into dst, with
 * the runs of zeros and NaNs whose bits the caller restores; key <<
 * 32 | position records; keys back to element bits; s32 positions out of
 * records; top_k's filter (the first position whose key is above lim). */
void emi_cpu_keys_f32_avx512(const uint32_t *s, int64_t n, uint32_t flip, uint32_t *keys);
void emi_cpu_sort_f32_avx512(const uint32_t *src, int64_t n, uint32_t flip, uint32_t *dst, int threads,
                             int64_t runs[4]);
void emi_cpu_records_f32_avx512(const uint32_t *s, int64_t n, int64_t first, uint32_t flip, uint64_t *recs);
void emi_cpu_unkeys_f32_avx512(const uint32_t *keys, int64_t n, uint32_t flip, uint32_t *d);
void emi_cpu_positions_s32_avx512(const uint64_t *recs, int64_t n, int32_t *d);
int64_t emi_cpu_find_above_f32_avx512(const uint32_t *s, int64_t i, int64_t n, uint32_t lim);

#endif
