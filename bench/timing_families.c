/* Timing library for the op-family CPU benchmark (bench/families.py drives
 * it via ctypes; bench/run_families builds it).
 *
 * Same method as bench/timing.c: the timing loop is in C so ctypes overhead
 * stays out of the measurement, and every call creates and releases its
 * outputs, as a user would. Uses libemily's public API only.
 *
 * Usage from Python: fam_input(i, ...) loads input i (up to 3), fam_run(op,
 * params) runs the op once and keeps its outputs (up to 3) for
 * fam_out_info / fam_out_copy (checking), fam_time(op, params, ...) times
 * it, fam_clear() releases everything. Op functions are referenced weakly
 * so a missing op is reported instead of the library failing to load. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "emily/emily.h"
#include "timing_common.h"

#pragma weak emily_dot
#pragma weak emily_dot_set_precision
#pragma weak emily_conv
#pragma weak emily_sort
#pragma weak emily_argsort
#pragma weak emily_top_k
#pragma weak emily_cumulative_sum
#pragma weak emily_fft
#pragma weak emily_solve
#pragma weak emily_cholesky
#pragma weak emily_qr
#pragma weak emily_svd
#pragma weak emily_eigh

#define MAX_IO 3

static emily_tensor *g_in[MAX_IO];
static emily_tensor *g_out[MAX_IO];

const char *fam_error(void) { return g_err; }
const char *fam_emily_version(void) { return emily_version(); }
long long fam_live(void) { return (long long)emily_live_tensors(); }

int fam_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static void release_outs(emily_tensor **outs) {
    for (int i = 0; i < MAX_IO; i++) {
        emily_tensor_release(outs[i]);
        outs[i] = NULL;
    }
}

void fam_clear(void) {
    release_outs(g_out);
    for (int i = 0; i < MAX_IO; i++) {
        emily_tensor_release(g_in[i]);
        g_in[i] = NULL;
    }
}

/* 0 = HIGHEST, 1 = FAST. */
int fam_set_precision(int p) {
    if (!emily_dot_set_precision) return fail(TIMING_NOT_IMPLEMENTED, "no emily_dot_set_precision");
    emily_status s = emily_dot_set_precision(p ? EMILY_DOT_PRECISION_FAST : EMILY_DOT_PRECISION_HIGHEST);
    return s == EMILY_OK ? TIMING_OK : from_status(s, "dot_set_precision");
}

int fam_input(int i, int dtype, int rank, const int64_t *shape, const void *data, size_t nbytes) {
    if (i < 0 || i >= MAX_IO) return fail(TIMING_ERROR, "fam_input: bad slot %d", i);
    if (!emily_dtype_valid((emily_dtype)dtype)) return fail(TIMING_ERROR, "bad dtype %d", dtype);
    emily_tensor_release(g_in[i]);
    g_in[i] = NULL;
    emily_status s = emily_from_binary(EMILY_CPU, (emily_dtype)dtype, rank, shape, data, nbytes, &g_in[i]);
    return s == EMILY_OK ? TIMING_OK : from_status(s, "from_binary");
}

#define NEED(fn)                                                                      \
    do {                                                                              \
        if (!(fn)) return emily_error(EMILY_ERR_UNSUPPORTED, "libemily has no " #fn); \
    } while (0)

/* One call of the op, as a user writes it. p: op parameters. */
static emily_status run_once(const char *op, const int64_t *p, int np, emily_tensor **o) {
    emily_tensor *const *in = g_in;
    (void)np;
    if (strcmp(op, "matmul") == 0) {
        /* a [..., m, k] . b [..., k, n], p[0] = number of leading batch dims */
        NEED(emily_dot);
        int ra = emily_tensor_rank(in[0]), rb = emily_tensor_rank(in[1]);
        int nb = (int)p[0];
        int ca = ra - 1, cb = rb - 2;
        int batch[8];
        if (nb < 0 || nb > 8) return emily_error(EMILY_ERR_ARGUMENT, "bench: bad batch");
        for (int i = 0; i < nb; i++) batch[i] = i;
        return emily_dot(in[0], 1, &ca, nb, batch, in[1], 1, &cb, nb, batch, EMILY_DTYPE_AUTO, &o[0]);
    }
    if (strcmp(op, "conv") == 0) {
        NEED(emily_conv);
        int64_t pad[2] = {p[0], p[0]};
        emily_conv_opts opts = {0};
        opts.padding_lo = pad;
        opts.padding_hi = pad;
        return emily_conv(in[0], in[1], &opts, EMILY_DTYPE_AUTO, &o[0]);
    }
    if (strcmp(op, "sort") == 0) {
        NEED(emily_sort);
        return emily_sort(in[0], -1, EMILY_SORT_ASC, false, &o[0]);
    }
    if (strcmp(op, "argsort") == 0) {
        NEED(emily_argsort);
        return emily_argsort(in[0], -1, EMILY_SORT_ASC, false, EMILY_S64, &o[0]);
    }
    if (strcmp(op, "top_k") == 0) {
        NEED(emily_top_k);
        return emily_top_k(in[0], p[0], EMILY_S64, &o[0], &o[1]);
    }
    if (strcmp(op, "cumsum") == 0) {
        NEED(emily_cumulative_sum);
        return emily_cumulative_sum(in[0], -1, false, &o[0]);
    }
    if (strcmp(op, "fft") == 0) {
        NEED(emily_fft);
        return emily_fft(in[0], 0, -1, 0.0, &o[0]);
    }
    if (strcmp(op, "solve") == 0) {
        NEED(emily_solve);
        return emily_solve(in[0], in[1], &o[0]);
    }
    if (strcmp(op, "cholesky") == 0) {
        NEED(emily_cholesky);
        return emily_cholesky(in[0], &o[0]);
    }
    if (strcmp(op, "qr") == 0) {
        NEED(emily_qr);
        return emily_qr(in[0], EMILY_QR_REDUCED, 0.0, &o[0], &o[1]);
    }
    if (strcmp(op, "svd") == 0) {
        NEED(emily_svd);
        return emily_svd(in[0], false, &o[0], &o[1], &o[2]);
    }
    if (strcmp(op, "eigh") == 0) {
        NEED(emily_eigh);
        return emily_eigh(in[0], &o[0], &o[1]);
    }
    return emily_error(EMILY_ERR_ARGUMENT, "bench: unknown op '%s'", op);
}

int fam_run(const char *op, const int64_t *params, int nparams) {
    g_err[0] = '\0';
    if (!op || !g_in[0]) return fail(TIMING_ERROR, "fam_run: no op or no input");
    release_outs(g_out);
    emily_status s = run_once(op, params, nparams, g_out);
    if (s != EMILY_OK) {
        release_outs(g_out);
        return from_status(s, op);
    }
    return TIMING_OK;
}

/* Output i's dtype, rank and shape (room for 8 dims); -1 if absent. */
int fam_out_info(int i, int *dtype, int *rank, int64_t *shape) {
    if (i < 0 || i >= MAX_IO || !g_out[i]) return -1;
    *dtype = (int)emily_tensor_dtype(g_out[i]);
    *rank = emily_tensor_rank(g_out[i]);
    if (*rank > 8) return fail(TIMING_ERROR, "rank %d > 8", *rank);
    for (int d = 0; d < *rank; d++) shape[d] = emily_tensor_shape(g_out[i])[d];
    return TIMING_OK;
}

int fam_out_copy(int i, void *dst, size_t nbytes) {
    if (i < 0 || i >= MAX_IO || !g_out[i]) return fail(TIMING_ERROR, "no output %d", i);
    emily_status s = emily_to_binary(g_out[i], dst, nbytes);
    return s == EMILY_OK ? TIMING_OK : from_status(s, "to_binary");
}

/* One timed call: op run, its outputs released; TIMING_OK or the code
 * (and message) of its failure. */
static int call_released(const char *op, const int64_t *params, int nparams, emily_tensor **o) {
    emily_status s = run_once(op, params, nparams, o);
    release_outs(o);
    return s == EMILY_OK ? TIMING_OK : from_status(s, op);
}

/* warmup calls, then `reps` measurements of `inner` calls each; the median
 * time per call goes to *median_ns, every measurement to samples_out (room
 * for reps, may be NULL). Stops early (after at least 3 measurements) once
 * the measurements have taken max_seconds; *reps_done tells how many. */
int fam_time(const char *op, const int64_t *params, int nparams, int warmup, int inner, int reps, double max_seconds,
             double *median_ns, double *samples_out, int *reps_done) {
    g_err[0] = '\0';
    if (!op || !median_ns || !reps_done || !g_in[0]) return fail(TIMING_ERROR, "fam_time: NULL");
    if (inner < 1 || reps < 1 || warmup < 0) return fail(TIMING_ERROR, "fam_time: bad counts");
    double *samples = malloc(sizeof(double) * (size_t)reps);
    if (!samples) return fail(TIMING_ERROR, "fam_time: out of memory");
    emily_tensor *o[MAX_IO] = {NULL, NULL, NULL};
    int rc = TIMING_OK, done = 0;
    for (int w = 0; w < warmup; w++)
        if ((rc = call_released(op, params, nparams, o)) != TIMING_OK) goto out;
    double start = now_ns();
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        for (int i = 0; i < inner; i++)
            if ((rc = call_released(op, params, nparams, o)) != TIMING_OK) goto out;
        emily_status s = emily_synchronize(EMILY_CPU);
        if (s != EMILY_OK) {
            rc = from_status(s, "synchronize");
            goto out;
        }
        double t1 = now_ns();
        samples[done++] = (t1 - t0) / inner;
        if (done >= 3 && (t1 - start) * 1e-9 > max_seconds) break;
    }
    if (samples_out) memcpy(samples_out, samples, sizeof(double) * (size_t)done);
    *median_ns = median_of(samples, done);
    *reps_done = done;
out:
    release_outs(o);
    free(samples);
    return rc;
}
