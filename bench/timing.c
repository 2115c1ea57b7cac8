/* Timing loop for the CPU benchmark (bench/run.py drives it via ctypes).
 *
 * The loop lives in C so the ctypes call overhead stays out of the
 * measurement. Each call of the op creates its output and releases it,
 * as a user would. Uses libemily's public API only.
 *
 * The op functions are referenced weakly: while another helper has not
 * yet written an op, the symbol is absent and the case reports "not
 * implemented" instead of the whole library failing to load. */
#define _GNU_SOURCE
#include <errno.h>
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

#pragma weak emily_binary
#pragma weak emily_unary
#pragma weak emily_reduce
#pragma weak emily_argreduce
#pragma weak emily_as_type
#pragma weak emily_transpose
#pragma weak emily_contiguous

const char *bench_error(void) { return g_err; }

int bench_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

const char *bench_emily_version(void) { return emily_version(); }

/* clang-format off */
typedef enum {
    OP_ADD, OP_MULTIPLY, OP_EXP, OP_TANH, OP_SUM_ALL, OP_SUM_LAST,
    OP_MAX_ALL, OP_ARGMAX, OP_AS_BF16, OP_AS_F16, OP_TRANSPOSE, OP_UNKNOWN
} op_kind;

static const struct { const char *name; op_kind kind; int inputs; } OPS[] = {
    {"add", OP_ADD, 2},           {"multiply", OP_MULTIPLY, 2},
    {"exp", OP_EXP, 1},           {"tanh", OP_TANH, 1},
    {"sum_all", OP_SUM_ALL, 1},   {"sum_last", OP_SUM_LAST, 1},
    {"reduce_max", OP_MAX_ALL, 1}, {"argmax", OP_ARGMAX, 1},
    {"as_type_bf16", OP_AS_BF16, 1}, {"as_type_f16", OP_AS_F16, 1},
    {"transpose", OP_TRANSPOSE, 1},
};
/* clang-format on */

static op_kind lookup(const char *name, int *inputs) {
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++) {
        if (strcmp(OPS[i].name, name) == 0) {
            *inputs = OPS[i].inputs;
            return OPS[i].kind;
        }
    }
    return OP_UNKNOWN;
}

/* Is the public function this op needs present in the loaded library? */
static const char *missing_symbol(op_kind k) {
    switch (k) {
    case OP_ADD:
    case OP_MULTIPLY: return emily_binary ? NULL : "emily_binary";
    case OP_EXP:
    case OP_TANH: return emily_unary ? NULL : "emily_unary";
    case OP_SUM_ALL:
    case OP_SUM_LAST:
    case OP_MAX_ALL: return emily_reduce ? NULL : "emily_reduce";
    case OP_ARGMAX: return emily_argreduce ? NULL : "emily_argreduce";
    case OP_AS_BF16:
    case OP_AS_F16: return emily_as_type ? NULL : "emily_as_type";
    case OP_TRANSPOSE:
        if (!emily_transpose) return "emily_transpose";
        return emily_contiguous ? NULL : "emily_contiguous";
    default: return "?";
    }
}

/* One call of the op, as a user writes it. */
static emily_status run_once(op_kind k, const emily_tensor *a, const emily_tensor *b, emily_tensor **out) {
    *out = NULL;
    switch (k) {
    case OP_ADD: return emily_binary(EMILY_ADD, a, b, EMILY_DTYPE_AUTO, out);
    case OP_MULTIPLY: return emily_binary(EMILY_MULTIPLY, a, b, EMILY_DTYPE_AUTO, out);
    case OP_EXP: return emily_unary(EMILY_EXP, a, out);
    case OP_TANH: return emily_unary(EMILY_TANH, a, out);
    case OP_SUM_ALL: return emily_reduce(EMILY_REDUCE_SUM, a, 0, NULL, false, EMILY_DTYPE_AUTO, out);
    case OP_SUM_LAST: {
        int axis = emily_tensor_rank(a) - 1;
        return emily_reduce(EMILY_REDUCE_SUM, a, 1, &axis, false, EMILY_DTYPE_AUTO, out);
    }
    case OP_MAX_ALL: return emily_reduce(EMILY_REDUCE_MAX, a, 0, NULL, false, EMILY_DTYPE_AUTO, out);
    case OP_ARGMAX: return emily_argreduce(EMILY_ARGMAX, a, -1, false, false, EMILY_DTYPE_AUTO, out);
    case OP_AS_BF16: return emily_as_type(a, EMILY_BF16, out);
    case OP_AS_F16: return emily_as_type(a, EMILY_F16, out);
    case OP_TRANSPOSE: {
        int rank = emily_tensor_rank(a);
        int perm[8];
        if (rank < 1 || rank > 8) return emily_error(EMILY_ERR_ARGUMENT, "bench: bad rank");
        for (int i = 0; i < rank; i++) perm[i] = rank - 1 - i;
        emily_tensor *view = NULL;
        emily_status s = emily_transpose(a, perm, &view);
        if (s != EMILY_OK) return s;
        s = emily_contiguous(view, out);
        emily_tensor_release(view);
        return s;
    }
    default: return emily_error(EMILY_ERR_ARGUMENT, "bench: unknown op");
    }
}

/* Times `op` on inputs of `dtype` and `shape` (both inputs share them).
 * warmup calls, then `reps` measurements of `inner` calls each; *median_ns
 * is the median over the measurements of the time per call, and
 * samples_out (may be NULL; room for `reps`) gets every measurement's time
 * per call, in the order taken. The last
 * result's bytes go to `result` (result_bytes must equal its size); its
 * dtype and shape to out_dtype/out_rank/out_shape (room for 8 dims). */
int bench_time(const char *op, int dtype, int rank, const int64_t *shape, const void *in0, const void *in1, int warmup,
               int inner, int reps, double *median_ns, double *samples_out, void *result, size_t result_bytes,
               int *out_dtype, int *out_rank, int64_t *out_shape) {
    g_err[0] = '\0';
    if (!op || !shape || !in0 || !median_ns || !out_dtype || !out_rank || !out_shape)
        return fail(TIMING_ERROR, "bench_time: NULL argument");
    if (inner < 1 || reps < 1 || warmup < 0) return fail(TIMING_ERROR, "bench_time: bad iteration counts");
    if (rank < 0 || rank > 8) return fail(TIMING_ERROR, "bench_time: bad rank %d", rank);
    int ninputs = 0;
    op_kind k = lookup(op, &ninputs);
    if (k == OP_UNKNOWN) return fail(TIMING_ERROR, "bench_time: unknown op '%s'", op);
    if (ninputs == 2 && !in1) return fail(TIMING_ERROR, "bench_time: %s needs 2 inputs", op);
    const char *miss = missing_symbol(k);
    if (miss) return fail(TIMING_NOT_IMPLEMENTED, "%s: not implemented (libemily has no %s)", op, miss);
    if (!emily_dtype_valid((emily_dtype)dtype)) return fail(TIMING_ERROR, "bench_time: bad dtype %d", dtype);

    int64_t live_before = emily_live_tensors();
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)shape[i];
    size_t nbytes = n * emily_dtype_size((emily_dtype)dtype);

    emily_tensor *a = NULL, *b = NULL, *out = NULL;
    double *samples = NULL;
    int rc = TIMING_OK;
    emily_status s = emily_from_binary(EMILY_CPU, (emily_dtype)dtype, rank, shape, in0, nbytes, &a);
    if (s != EMILY_OK) {
        rc = from_status(s, "from_binary");
        goto done;
    }
    if (ninputs == 2) {
        s = emily_from_binary(EMILY_CPU, (emily_dtype)dtype, rank, shape, in1, nbytes, &b);
        if (s != EMILY_OK) {
            rc = from_status(s, "from_binary");
            goto done;
        }
    }
    samples = malloc(sizeof(double) * (size_t)reps);
    if (!samples) {
        rc = fail(TIMING_ERROR, "bench_time: out of memory");
        goto done;
    }

    /* One call more than the warmup: the first also checks the op works
     * at all. */
    for (int w = 0; w <= warmup; w++) {
        s = run_once(k, a, b, &out);
        if (s != EMILY_OK) {
            rc = from_status(s, op);
            goto done;
        }
        emily_tensor_release(out);
        out = NULL;
    }

    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        for (int i = 0; i < inner; i++) {
            s = run_once(k, a, b, &out);
            if (s != EMILY_OK) {
                rc = from_status(s, op);
                goto done;
            }
            bool last = (r == reps - 1 && i == inner - 1);
            if (!last) {
                emily_tensor_release(out);
                out = NULL;
            }
        }
        /* CPU ops are synchronous today; should that change, the time
         * still covers the work. */
        s = emily_synchronize(EMILY_CPU);
        if (s != EMILY_OK) {
            rc = from_status(s, "synchronize");
            goto done;
        }
        samples[r] = (now_ns() - t0) / inner;
    }
    if (samples_out) memcpy(samples_out, samples, sizeof(double) * (size_t)reps);
    *median_ns = median_of(samples, reps);

    /* The last result: its type, shape and bytes. */
    *out_dtype = (int)emily_tensor_dtype(out);
    *out_rank = emily_tensor_rank(out);
    if (*out_rank > 8) {
        rc = fail(TIMING_ERROR, "%s: result rank %d > 8", op, *out_rank);
        goto done;
    }
    for (int i = 0; i < *out_rank; i++) out_shape[i] = emily_tensor_shape(out)[i];
    if (emily_tensor_nbytes(out) != result_bytes) {
        rc = fail(TIMING_ERROR, "%s: result has %zu bytes (%s), expected %zu", op, emily_tensor_nbytes(out),
                  emily_dtype_name(emily_tensor_dtype(out)), result_bytes);
        goto done;
    }
    if (result_bytes > 0) {
        if (!result) {
            rc = fail(TIMING_ERROR, "bench_time: NULL result buffer");
            goto done;
        }
        s = emily_to_binary(out, result, result_bytes);
        if (s != EMILY_OK) {
            rc = from_status(s, "to_binary");
            goto done;
        }
    }

done:
    emily_tensor_release(out);
    emily_tensor_release(a);
    emily_tensor_release(b);
    free(samples);
    if (rc == TIMING_OK && emily_live_tensors() != live_before)
        rc = fail(TIMING_ERROR, "%s: leaked %lld tensor handle(s)", op,
                  (long long)(emily_live_tensors() - live_before));
    return rc;
}
