/* The CPU sort family (sort, argsort, top_k), src/cpu/sort/:
 *   rows.c     the kernels: rows of a tensor, one row's passes, threads;
 *   keys.c     keys in Nx's order for every real dtype, and the loops
 *              that make records, map sorted keys back and filter;
 *   records.c  sorting a row's records (radix, or avx512.c's quicksort);
 *   top_k.c    top_k by selection;
 *   avx512.c   the AVX-512 quicksorts and f32 key loops.
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
 * of avx512.c where the CPU has it (unstable, which cannot show: equal
 * keys are interchangeable and records are distinct); the rest (8/16-bit
 * keys, pairs, CPUs without AVX-512, EMILY_SIMD=0) to a stable LSD radix
 * sort with 8-bit digits (a digit the same for the whole row costs no
 * pass), insertion sort for short rows. f32 sorts make their keys and
 * first partition in one pass. top_k, when k is small against the row,
 * keeps the k best records in a heap and lets in only elements whose key
 * beats the worst of them (a vector compare for f32; a long row is split
 * into slices selected on threads, then merged), else sorts.
 *
 * Rows (every position of the other axes) are independent: many rows
 * are split over OpenMP threads; one long row spreads its linear passes
 * and its quicksort parts (tasks) or its radix digits (per-thread
 * histograms) over the threads. */
#ifndef EMILY_CPU_SORT_SORT_H
#define EMILY_CPU_SORT_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/tensor_impl.h"

/* Rows shorter than this are insertion-sorted. */
#define SORT_SMALL 24
/* Elements (over all rows) from which rows are split over threads. */
#define SORT_PAR_MIN ((int64_t)1 << 15)
/* A single row from which its radix passes run on several threads. */
#define SORT_PAR_ROW_MIN ((int64_t)1 << 17)

/* avx512.c's paths exist (x86-64, GCC or clang); they run where
 * emi_sort_use_avx512() says so. */
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_SORT_AVX512 1
#else
#define HAVE_SORT_AVX512 0
#endif

typedef struct pair64 {
    uint64_t key, idx;
} pair64;
#define LESS_PAIR(x, y) ((x).key < (y).key || ((x).key == (y).key && (x).idx < (y).idx))

/* Key width in bits of a real dtype. */
static inline int key_bits(emily_dtype dt) { return (int)emily_dtype_size(dt) * 8; }

/* What a row's records hold. */
typedef enum rec_mode {
    REC_KEYS,   /* keys only, key_bits wide (u8/u16/u32/u64 arrays) */
    REC_PACKED, /* uint64: key << 32 | position (keys of <= 32 bits) */
    REC_PAIR    /* pair64 */
} rec_mode;

/* One row's job and where it reads and writes. */
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

/* ---- keys.c ---------------------------------------------------------------- */

/* Whether this CPU runs avx512.c's paths (checked once). */
bool emi_sort_use_avx512(void);
/* Records of the n elements of a row (s, stride ss elements); their
 * positions count from `first`. */
void emi_sort_row_records(emily_dtype dt, const char *s, int64_t ss, int64_t n, int64_t first, bool desc, rec_mode mode,
                          void *out);
/* Writes sorted keys back as element bits (d, stride ds elements). */
void emi_sort_row_unkeys(emily_dtype dt, const void *keys, int64_t n, bool desc, char *d, int64_t ds);
/* The first position in [i, hi) of a row (s, stride ss) whose ascending
 * key is above lim, or hi (top_k's filter). */
int64_t emi_sort_find_above(emily_dtype dt, const char *s, int64_t ss, int64_t i, int64_t hi, uint64_t lim);

/* ---- records.c ------------------------------------------------------------- */

/* How a row of dtype dt is sorted: its record mode, and bytes per record. */
rec_mode emi_sort_plan_mode(emily_dtype dt, int64_t n, bool with_positions);
size_t emi_sort_rec_size(emily_dtype dt, rec_mode m);
/* Whether records go to the in-place vector quicksort. */
bool emi_sort_simd_sortable(emily_dtype dt, rec_mode m, int64_t n);
/* Sorts the records in scratch[0, n) (scratch holds 2n records, or n
 * when emi_sort_simd_sortable); T > 1 runs the passes on T threads with
 * hist[T][256] of scratch. Returns the sorted array. */
void *emi_sort_records(emily_dtype dt, rec_mode m, void *scratch, int64_t n, int T, int64_t (*hist)[256]);

/* ---- top_k.c --------------------------------------------------------------- */

/* Whether top_k selects the k best (k small against the row) rather
 * than sorting the whole row. */
static inline bool emi_sort_topk_by_heap(int64_t n, int64_t k) { return n > SORT_SMALL && k * 8 < n; }
/* Threads (at most T) a single row's selection runs on. */
int emi_sort_topk_threads(const row_args *a, int T);
/* top_k of one row (s) by selection: scratch holds
 * (emi_sort_topk_threads(a, T) + 1) * k records; returns the k best,
 * best first. */
pair64 *emi_sort_topk_row(const row_args *a, const char *s, pair64 *scratch, int T);

#endif
