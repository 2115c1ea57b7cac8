/* The CPU engine's parallel loop, shared by every kernel family that
 * splits work into jobs (element-wise maps, binary ops, copies, row
 * reductions, dot packing and BLAS blocks, graph fusion).
 *
 * emi_cpu_parallel is a "caller runs" loop. The calling thread claims
 * chunks itself and helper threads claim the rest only if they are
 * running; the caller waits only for chunks a helper has actually
 * claimed. On a busy machine (other processes holding the other cores) a
 * descheduled helper therefore never stalls an op, where an OpenMP
 * fork-join would wait a scheduler time slice for it (observed: 15 ms
 * for 24 us of work). A claim takes a share of the chunks left, shrinking
 * as the job ends (guided scheduling): each thread runs long runs of
 * consecutive chunks and a job costs a few dozen claims, not one
 * contended claim a chunk. Helpers are OMP_NUM_THREADS - 1 threads (default:
 * one per CPU), started on first use, spinning briefly between jobs and
 * then sleeping. */
#ifndef EMILY_CPU_PARALLEL_H
#define EMILY_CPU_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

/* Multiply-adds below which a product (dot, attention) runs on the
 * calling thread: the pool's wake-up and join cost more than they save
 * under about a millisecond of work (a stream over one matrix, which
 * does a quarter of a product's work per byte, uses a quarter of it). */
#define EMI_CPU_MACS_PARALLEL_MIN ((int64_t)1 << 20)

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

#endif
