/* What the stand-alone programs that time a fused op against its composed
 * form share (bench/fast_norm.c, bench/sdpa.c, bench/quant.c): exit on a
 * failed call, the threads line, the binary op of the composed forms, the
 * median time of one call, seeded uniform f32 inputs and the largest
 * difference of two f32 results. Everything is static: each program gets
 * its own copy. */
#ifndef EMILY_BENCH_COMPARE_COMMON_H
#define EMILY_BENCH_COMPARE_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "timing_common.h"

/* The most samples median_call_time takes. */
#define COMPARE_MAX_SAMPLES 64

/* A failed call ends the program with its status and message. */
static inline void die(emily_status s, const char *what) {
    if (s) {
        fprintf(stderr, "%s: %s: %s\n", what, emily_status_name(s), emily_last_error());
        exit(1);
    }
}

/* The first line of each program's output: the threads the engine's
 * pool runs (OMP_NUM_THREADS). */
static inline void print_threads(void) {
    const char *threads = getenv("OMP_NUM_THREADS");
    printf("threads: %s\n\n", threads ? threads : "the pool's default (one per CPU)");
}

/* a op b, a new tensor (the inputs stay). */
static inline emily_tensor *bin(emily_binary_op op, emily_tensor *a, emily_tensor *b) {
    emily_tensor *r;
    die(emily_binary(op, a, b, EMILY_DTYPE_AUTO, &r), "binary");
    return r;
}

/* The median time of one call of fn (whose result, which may be NULL, it
 * releases: a user's call makes and frees its output), in units of
 * unit_ns nanoseconds: `warmups` calls, then the calls per sample doubled
 * until a sample lasts >= 20 ms or has max_reps calls, then `nsamples`
 * samples (at most COMPARE_MAX_SAMPLES). */
static inline double median_call_time(emily_tensor *(*fn)(void), int warmups, int max_reps, int nsamples,
                                      double unit_ns) {
    for (int i = 0; i < warmups; i++) emily_tensor_release(fn());
    int reps = 1;
    for (;;) {
        double t0 = now_ns();
        for (int i = 0; i < reps; i++) emily_tensor_release(fn());
        if (now_ns() - t0 >= 20e6 || reps >= max_reps) break;
        reps *= 2;
    }
    double samples[COMPARE_MAX_SAMPLES];
    if (nsamples > COMPARE_MAX_SAMPLES) nsamples = COMPARE_MAX_SAMPLES;
    for (int k = 0; k < nsamples; k++) {
        double t0 = now_ns();
        for (int i = 0; i < reps; i++) emily_tensor_release(fn());
        samples[k] = (now_ns() - t0) / reps / unit_ns;
    }
    return median_of(samples, nsamples);
}

/* An f32 CPU tensor of the shape with values in [lo, lo + width) from a
 * 64-bit LCG started at seed (the same values on every run). */
static inline emily_tensor *uniform_f32(int rank, const int64_t *shape, uint64_t seed, double lo, double width) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) exit(1);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = (float)((double)(seed >> 11) / 9007199254740992.0 * width + lo);
    }
    emily_tensor *t;
    die(emily_from_binary(EMILY_CPU, EMILY_F32, rank, shape, v, (size_t)n * sizeof *v, &t), "input");
    free(v);
    return t;
}

/* The largest |a - b| over two f32 tensors of the same size (a NaN
 * difference is passed over). */
static inline double max_abs_diff(emily_tensor *a, emily_tensor *b) {
    int64_t n = emily_tensor_size(a);
    float *pa = malloc((size_t)n * 4), *pb = malloc((size_t)n * 4);
    if (!pa || !pb) exit(1);
    die(emily_to_binary(a, pa, (size_t)n * 4), "read");
    die(emily_to_binary(b, pb, (size_t)n * 4), "read");
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)pa[i] - (double)pb[i];
        if (d < 0) d = -d;
        if (d > m) m = d;
    }
    free(pa);
    free(pb);
    return m;
}

#endif
