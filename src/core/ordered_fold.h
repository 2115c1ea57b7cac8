/* The chunk of an ordered fold, one number for both devices.
 *
 * A fold whose result depends on its order (float products, complex sums
 * and products) runs each output in Nx's order; past EMI_ORDERED_CHUNK
 * elements it cuts the run at multiples of it, folds each chunk in order
 * and combines the chunks in order. The CPU (src/cpu/reduce/) and CUDA
 * (src/cuda/reduce.cuh) cut the same chunks, so the two agree bit for
 * bit at every length and thread count. Valid C11 and CUDA C++. */
#ifndef EMILY_CORE_ORDERED_FOLD_H
#define EMILY_CORE_ORDERED_FOLD_H

#include <stdint.h>

#define EMI_ORDERED_CHUNK ((int64_t)1 << 18)

/* The chunk of a long f32/f64 running sum (cumulative_sum along a row of
 * at least twice this many elements): each chunk's total (four
 * interleaved double accumulators), the totals' exclusive prefix in the
 * scan's direction, then each chunk's running sum from its prefix. The
 * CPU (src/cpu/cumulative.c) and CUDA (src/cuda/cumulative_seq.cu) cut
 * the same chunks. */
#define EMI_CUMSUM_CHUNK ((int64_t)1 << 15)

#endif
