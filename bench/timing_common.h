/* What the CPU benchmarks' timing libraries (bench/timing.c and
 * bench/timing_families.c, each built alone into its own .so by bench/run
 * and bench/run_families) share: the result codes their Python drivers
 * read, the message a failed call leaves behind, the clock, the median.
 * Everything is static: each library gets its own copy. */
#ifndef EMILY_BENCH_TIMING_COMMON_H
#define EMILY_BENCH_TIMING_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "emily/emily.h"

/* Result codes of the exported functions. */
enum {
    TIMING_OK = 0,
    TIMING_NOT_IMPLEMENTED = 1, /* symbol missing or EMILY_ERR_UNSUPPORTED */
    TIMING_ERROR = 2,           /* any other failure (message in g_err) */
};

static char g_err[1024];

/* Leaves the message in g_err and returns code. */
static inline int fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_err, sizeof g_err, fmt, ap);
    va_end(ap);
    return code;
}

/* The code and message of a failed library call. */
static inline int from_status(emily_status s, const char *what) {
    const char *msg = emily_last_error();
    return fail(s == EMILY_ERR_UNSUPPORTED ? TIMING_NOT_IMPLEMENTED : TIMING_ERROR, "%s: %s: %s", what,
                emily_status_name(s), msg ? msg : "");
}

static inline double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The median of the n samples (n >= 1), which it sorts. */
static inline double median_of(double *samples, int n) {
    qsort(samples, (size_t)n, sizeof(double), cmp_double);
    return (n % 2) ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

#endif
