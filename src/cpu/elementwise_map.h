/* One-input element-wise drivers for the CPU kernels of the creation,
 * conversion and unary families.
 *
 * A kernel supplies a "run" function that maps n elements of one dtype
 * to n elements of another along one strided line; the driver walks any
 * pair of same-shaped tensors (src a view of any strides, dst any
 * strides) with src/cpu/strided.h and cuts long lines into chunks, so a
 * single contiguous line is still split across threads (the jobs of
 * src/cpu/parallel.h's pool). */
#ifndef EMILY_CPU_ELEMENTWISE_MAP_H
#define EMILY_CPU_ELEMENTWISE_MAP_H

#include "core/tensor_impl.h"

/* Strides are in elements of each side's dtype; ds == ss == 1 is the
 * contiguous fast path every run function should special-case. ctx is
 * the pointer given to emi_cpu_map (most run functions ignore it). */
typedef void (*emily_run_fn)(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, const void *ctx);

/* dst and src must have the same shape (dtypes may differ); src may be
 * dst itself for run functions that ignore their input. Threaded above
 * EMILY_PARALLEL_MIN elements. */
emily_status emi_cpu_map(emily_tensor *dst, const emily_tensor *src, emily_run_fn fn, const void *ctx);

/* n contiguous elements of src's dtype -> n of dst's dtype. */
typedef void (*emily_vec_fn)(void *dst, const void *src, int64_t n);

/* dst and src contiguous with the same number of elements: runs fn over
 * chunks, threaded above EMILY_PARALLEL_MIN elements. */
void emi_cpu_map_contiguous(emily_tensor *dst, const emily_tensor *src, emily_vec_fn fn);

/* Defines a static run function NAME from ST elements to DT elements;
 * EXPR computes one output from the input element `v`. */
#define EMILY_RUN_FN(NAME, ST, DT, EXPR)                                                              \
    static void NAME(char *d_, int64_t ds, const char *s_, int64_t ss, int64_t n, const void *ctx_) { \
        (void)ctx_;                                                                                   \
        DT *d = (DT *)d_;                                                                             \
        const ST *s = (const ST *)s_;                                                                 \
        if (ds == 1 && ss == 1) {                                                                     \
            for (int64_t i = 0; i < n; i++) {                                                         \
                ST v = s[i];                                                                          \
                d[i] = (EXPR);                                                                        \
            }                                                                                         \
        } else {                                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                         \
                ST v = s[i * ss];                                                                     \
                d[i * ds] = (EXPR);                                                                   \
            }                                                                                         \
        }                                                                                             \
    }

/* Elements per chunk handed to one run call. */
#define EMILY_MAP_CHUNK 16384

#endif
