/* The reduction family's shared definitions (src/cpu/reduce/).
 *
 * A reduction (reduce.c) folds runs of the input into accumulators
 * through a reducer: one table of functions per (op, input dtype). The
 * reducers are written once per class of types as macros and expanded
 * over the dtype list (src/core/dtype_list.h), by job:
 *   sum_product.c  sum and product,
 *   max_min.c      reduce_max and reduce_min,
 *   all_any.c      all and any;
 * argreduce.c (argmax/argmin) and all_close.c are the family's other
 * kernels; simd.c holds the hand-written vector folds of contiguous f32
 * and f64 runs that the f32/f64 reducers and argreduce call.
 *
 * Accumulators (Nx accumulates floats in f64 and rounds once):
 * integers wrap in their own width; f16/bf16/f32/f64 sums and products
 * accumulate in double (contiguous f32/f64 runs in vector lanes, see
 * simd.c; f64 sums compensate every addition); complex in a pair of
 * doubles. max/min propagate NaN. */
#ifndef EMILY_CPU_REDUCE_REDUCERS_H
#define EMILY_CPU_REDUCE_REDUCERS_H

#include "core/ordered_fold.h"
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "core/tensor_impl.h"
#include "cpu/dtype_scalars.h"
#include "emily/ops.h"

#define PRAGMA(x) _Pragma(#x)

/* Reductions read each element once with a few vector instructions:
 * below this many elements (1 MiB of f32) a thread team costs more than
 * it saves. */
#define REDUCE_PAR_MIN ((int64_t)1 << 18)

/* Inside a parallel region that splits one long run of n elements: the
 * calling thread t, the team's size T (it may be smaller than asked for:
 * the caller merges the parts of those T threads only) and the thread's
 * even share [lo, hi) of the run, in order, so the parts merge in the
 * run's order. */
typedef struct red_share {
    int t, T;
    int64_t lo, hi;
} red_share;
static inline red_share red_team_share(int64_t n) {
    red_share sh;
    sh.t = omp_get_thread_num();
    sh.T = omp_get_num_threads();
    sh.lo = n * sh.t / sh.T;
    sh.hi = n * (sh.t + 1) / sh.T;
    return sh;
}

/* The chunk of an ordered fold, shared with the CUDA engine. */
#define ORDERED_CHUNK EMI_ORDERED_CHUNK

typedef struct emi_reducer {
    size_t acc_size;
    /* n accumulators <- the fold's starting value */
    void (*init)(void *acc, int64_t n);
    /* acc <- fold(acc, x[0], x[s], ..., x[(n-1)s]) */
    void (*run)(void *acc, const void *x, int64_t n, int64_t s);
    /* acc[j] <- fold(acc[j], x[j*s]) for j < n */
    void (*cols)(void *acc, const void *x, int64_t n, int64_t s);
    /* acc <- fold(acc, part) where part folded later elements */
    void (*merge)(void *acc, const void *part);
    /* dst[j*ds] <- acc[j] in the output dtype, j < n */
    void (*store)(void *dst, int64_t ds, const void *acc, int64_t n);
    /* The fold's result depends on its order (float products, complex sums
     * and products): each output folds in Nx's order, and past
     * ORDERED_CHUNK elements in fixed chunks combined in order, never in
     * parts that depend on the thread count (the CUDA engine cuts the
     * same chunks, so both devices agree bit for bit). */
    bool ordered;
} emi_reducer;

/* Each op's reducers by input dtype (NULL: the op does not take it). */
extern const emi_reducer *const emi_reduce_sum[EMILY_DTYPE_COUNT];
extern const emi_reducer *const emi_reduce_product[EMILY_DTYPE_COUNT];
extern const emi_reducer *const emi_reduce_max[EMILY_DTYPE_COUNT];
extern const emi_reducer *const emi_reduce_min[EMILY_DTYPE_COUNT];
extern const emi_reducer *const emi_reduce_all[EMILY_DTYPE_COUNT];
extern const emi_reducer *const emi_reduce_any[EMILY_DTYPE_COUNT];

/* Nx folds max/min keeping the first of equal values, so a zero result
 * carries the sign of the first zero in row-major order of the reduced
 * axes: after a float max/min, rewrites the zero outputs with that zero
 * (max_min.c). */
emily_status emi_reduce_fix_zero_signs(emily_tensor *dst, const emily_tensor *src, const bool *reduced);

/* The parts that reducers write alike: NAME##_init sets n accumulators
 * of type A to INIT; NAME##_store writes STORE(accumulator) as T;
 * EMI_REDUCER defines the reducer NAME from NAME##_init, _run, _cols,
 * _merge and _store. */
#define EMI_REDUCER_INIT(NAME, A, INIT)                   \
    static void NAME##_init(void *acc, int64_t n) {       \
        A *restrict a = acc;                              \
        for (int64_t i = 0; i < n; i++) a[i] = (A)(INIT); \
    }
#define EMI_REDUCER_STORE(NAME, T, A, STORE)                                      \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) { \
        T *d = dst;                                                               \
        const A *a = acc;                                                         \
        for (int64_t j = 0; j < n; j++) d[j * ds] = STORE(a[j]);                  \
    }
#define EMI_REDUCER(NAME, A, ORDERED)                                                     \
    static const emi_reducer NAME = {sizeof(A),    NAME##_init,  NAME##_run, NAME##_cols, \
                                     NAME##_merge, NAME##_store, ORDERED};

/* The entry of reducer NAME in a table by dtype. */
#define EMI_REDUCER_ENTRY(ENUM, NAME) [EMILY_##ENUM] = &NAME,

/* An integer reducer NAME over elements of type T: accumulators of type
 * A (T's size), STEP(A, a, x) the fold of x into accumulator a, RED the
 * OpenMP reduction (+, *, max, min) under which a contiguous run
 * vectorizes, INIT the starting value; a result is its accumulator's
 * bytes. sum_product.c (A: the type's bits, wrapping) and max_min.c
 * (A = T) define theirs with it. */
#define EMI_INT_REDUCER(NAME, T, A, STEP, RED, INIT)                                                            \
    EMI_REDUCER_INIT(NAME, A, INIT)                                                                             \
    static void NAME##_run(void *acc, const void *src, int64_t n, int64_t s) {                                  \
        const T *restrict x = src;                                                                              \
        A a = *(A *)acc;                                                                                        \
        if (s == 1) {                                                                                           \
            PRAGMA(omp simd reduction(RED : a))                                                                 \
            for (int64_t i = 0; i < n; i++) a = STEP(A, a, x[i]);                                               \
        } else {                                                                                                \
            for (int64_t i = 0; i < n; i++) a = STEP(A, a, x[i * s]);                                           \
        }                                                                                                       \
        *(A *)acc = a;                                                                                          \
    }                                                                                                           \
    static void NAME##_cols(void *acc, const void *src, int64_t n, int64_t s) {                                 \
        const T *restrict x = src;                                                                              \
        A *restrict a = acc;                                                                                    \
        if (s == 1) PRAGMA(omp simd)                                                                            \
        for (int64_t j = 0; j < n; j++) a[j] = STEP(A, a[j], x[j]);                                             \
        else for (int64_t j = 0; j < n; j++) a[j] = STEP(A, a[j], x[j * s]); }                                  \
    static void NAME##_merge(void *acc, const void *part) { *(A *)acc = STEP(A, *(A *)acc, *(const A *)part); } \
    static void NAME##_store(void *dst, int64_t ds, const void *acc, int64_t n) {                               \
        T *d = dst;                                                                                             \
        const A *a = acc;                                                                                       \
        for (int64_t j = 0; j < n; j++) memcpy(&d[j * ds], &a[j], sizeof(T));                                   \
    }                                                                                                           \
    EMI_REDUCER(NAME, A, false)

/* Folds a contiguous run x[0..n) of T, read as C by LOAD, into *mp with
 * max (BETTER >, RED max) or min; returns nonzero when a NaN was seen
 * (then *mp is unspecified). max_min.c's reducers and argreduce.c's
 * blocks define theirs with it where simd.c has none. */
#define EMI_EXTREME_RUN(NAME, T, C, LOAD, BETTER, RED)         \
    static int NAME(const T *x, int64_t n, C *mp) {            \
        C m = *mp;                                             \
        int nan = 0;                                           \
        PRAGMA(omp simd reduction(RED : m) reduction(| : nan)) \
        for (int64_t i = 0; i < n; i++) {                      \
            C v = LOAD(x[i]);                                  \
            nan |= v != v;                                     \
            m = v BETTER m ? v : m;                            \
        }                                                      \
        *mp = m;                                               \
        return nan;                                            \
    }

/* A value as it is (LOAD of types read without conversion). */
#define EMI_AS_IS(v) (v)

#endif
