/* Host-side cost of many tiny ops on a GPU: a chain of N (default 10,000)
 * dependent adds of 1-element f32 tensors through the C API
 * (x = x + 1, releasing each intermediate as a user would).
 *
 * "host" is the time the calling thread spends issuing the chain (ops are
 * asynchronous: each validates, allocates from the caching allocator and
 * enqueues a kernel); "total" includes waiting for the device to finish.
 * Prints one JSON object; exits non-zero on a wrong result or an error.
 *
 *   chain [--device cuda:0] [--n 10000] [--reps 5] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "emily/emily.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "chain: %s: %s\n", what, emily_last_error());
    return 1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs n adds; stores host and total seconds. */
static int run_chain(emily_device dev, int n, float *result, double *host, double *total) {
    int64_t shape[1] = {1};
    emily_tensor *x = NULL, *one = NULL;
    if (emily_constant(dev, EMILY_F32, 1, shape, emily_scalar_float(0.0), &x)) return fail("constant");
    if (emily_constant(dev, EMILY_F32, 1, shape, emily_scalar_float(1.0), &one)) return fail("constant");
    if (emily_synchronize(dev)) return fail("synchronize");
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        emily_tensor *y = NULL;
        if (emily_binary(EMILY_ADD, x, one, EMILY_DTYPE_AUTO, &y)) return fail("add");
        emily_tensor_release(x);
        x = y;
    }
    double t1 = now_s();
    if (emily_synchronize(dev)) return fail("synchronize");
    double t2 = now_s();
    if (emily_to_binary(x, result, sizeof *result)) return fail("to_binary");
    emily_tensor_release(x);
    emily_tensor_release(one);
    *host = t1 - t0;
    *total = t2 - t0;
    return 0;
}

int main(int argc, char **argv) {
    emily_device dev = {EMILY_DEVICE_CUDA, 0};
    int n = 10000, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            if (emily_device_parse(argv[++i], &dev)) return fail("--device");
        } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: chain [--device cuda:0] [--n 10000] [--reps 5]\n");
            return 2;
        }
    }
    if (n < 1 || reps < 1 || reps > 100) return fprintf(stderr, "chain: bad --n or --reps\n"), 2;
    if (emily_device_check(dev)) return fail("device");
    float r;
    double host, total, hs[100], ts[100];
    if (run_chain(dev, 1000, &r, &host, &total)) return 1; /* warm-up: module load, cache */
    for (int k = 0; k < reps; k++) {
        if (run_chain(dev, n, &r, &hs[k], &ts[k])) return 1;
        if (r != (float)n) {
            fprintf(stderr, "chain: wrong result %g, want %d\n", (double)r, n);
            return 1;
        }
    }
    qsort(hs, (size_t)reps, sizeof(double), cmp_double);
    qsort(ts, (size_t)reps, sizeof(double), cmp_double);
    char d[32];
    emily_device_format(dev, d, sizeof d);
    printf("{\"case\": \"chain_add_1elem\", \"device\": \"%s\", \"n\": %d, \"reps\": %d, "
           "\"host_us_per_op\": %.3f, \"total_us_per_op\": %.3f}\n",
           d, n, reps, 1e6 * hs[reps / 2] / n, 1e6 * ts[reps / 2] / n);
    return 0;
}
