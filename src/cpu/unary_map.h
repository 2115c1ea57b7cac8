/* One-input element-wise drivers for the CPU kernels of the creation,
 * conversion and unary families, and the parallel loop they share.
 *
 * A kernel supplies a "run" function that maps n elements of one dtype
 * to n elements of another along one strided line; the driver walks any
 * pair of same-shaped tensors (src a view of any strides, dst any
 * strides) with src/cpu/strided.h and cuts long lines into chunks, so a
 * single contiguous line is still split across threads.
 *
 * Threads: emi_cpu_parallel is a "caller runs" loop. The calling
 * thread claims chunks itself and helper threads claim the rest only if
 * they are running; the caller waits only for chunks a helper has
 * actually claimed. On a busy machine (other processes holding the other
 * cores) a descheduled helper therefore never stalls an op, where an
 * OpenMP fork-join would wait a scheduler time slice for it (observed:
 * 15 ms for 24 us of work). Helpers are OMP_NUM_THREADS - 1 threads
 * (default: one per CPU), started on first use, spinning briefly between
 * jobs and then sleeping. */
#ifndef EMILY_CPU_UNARY_MAP_H
#define EMILY_CPU_UNARY_MAP_H

#include "core/tensor_impl.h"

/* Runs fn(ctx, c) for every c in [0, nchunks), on several threads when
 * nchunks > 1 and helpers are available (each chunk exactly once; fn
 * must not call emi_cpu_parallel itself - nested calls run serially). */
typedef void (*emily_chunk_fn)(void *ctx, int64_t chunk);
void emi_cpu_parallel(int64_t nchunks, emily_chunk_fn fn, void *ctx);

/* Runs fn(ctx, lo, hi) over [0, n) cut into consecutive ranges of
 * per_job items (at least 1), the ranges as jobs of emi_cpu_parallel;
 * the whole of [0, n) in one call on this thread when !parallel. */
typedef void (*emily_range_fn)(void *ctx, int64_t lo, int64_t hi);
void emi_cpu_parallel_ranges(int64_t n, int64_t per_job, bool parallel, emily_range_fn fn, void *ctx);

/* Strides are in elements of each side's dtype; ds == ss == 1 is the
 * contiguous fast path every run function should special-case. ctx is
 * the pointer given to emi_cpu_map (most run functions ignore it). */
typedef void (*emily_run_fn)(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n,
                             const void *ctx);

/* dst and src must have the same shape (dtypes may differ); src may be
 * dst itself for run functions that ignore their input. Threaded above
 * EMILY_PARALLEL_MIN elements. */
emily_status emi_cpu_map(emily_tensor *dst, const emily_tensor *src, emily_run_fn fn,
                           const void *ctx);

/* n contiguous elements of src's dtype -> n of dst's dtype. */
typedef void (*emily_vec_fn)(void *dst, const void *src, int64_t n);

/* dst and src contiguous with the same number of elements: runs fn over
 * chunks, threaded above EMILY_PARALLEL_MIN elements. */
void emi_cpu_map_contiguous(emily_tensor *dst, const emily_tensor *src, emily_vec_fn fn);

/* Defines a static run function NAME from ST elements to DT elements;
 * EXPR computes one output from the input element `v`. */
#define EMILY_RUN_FN(NAME, ST, DT, EXPR)                                               \
    static void NAME(char *d_, int64_t ds, const char *s_, int64_t ss, int64_t n,      \
                     const void *ctx_) {                                               \
        (void)ctx_;                                                                    \
        DT *d = (DT *)d_;                                                              \
        const ST *s = (const ST *)s_;                                                  \
        if (ds == 1 && ss == 1) {                                                      \
            for (int64_t i = 0; i < n; i++) {                                          \
                ST v = s[i];                                                           \
                d[i] = (EXPR);                                                         \
            }                                                                          \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++) {                                          \
                ST v = s[i * ss];                                                      \
                d[i * ds] = (EXPR);                                                    \
            }                                                                          \
        }                                                                              \
    }

/* Elements per chunk handed to one run call. */
#define EMILY_MAP_CHUNK 16384

#endif
