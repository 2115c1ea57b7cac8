/* Emily's side of the GPU benchmark (bench/gpu/run.sh): times ops through
 * the C API with CUDA events recorded on the calling thread's current
 * stream around each call (so the time covers what the op enqueues, its
 * output allocation from the caching allocator included), after warm-up,
 * on random data; reports the median of the runs. Each result is checked
 * against a host reference first. One JSON object per line on stdout.
 *
 *   emily_bench [--device cuda:0] [--runs 20] [--quick] [--no-matmul]
 *               [--only NAME,NAME...]
 *
 * Cases: add f32 2^28 (bandwidth), sum of 2^28 f32, row sums of a
 * 65536x4096 f32 matrix, 8192^3 matmul in bf16, f16 and f32 (f32 without
 * TF32), at dot precision FAST (each type in its own precision, like the
 * peers) and HIGHEST (Emily's default: f64 accumulation), 8192^3 FP8
 * dots (f8_e4m3fn operands on the tensor cores: bench_fp8); then the
 * families of issue 19 (bench_families below: sort, argsort, top_k, take,
 * indexed_add, cumsum, fft, max-pool, conv2d, solve, cholesky, qr, svd,
 * batched small solves, fused attention, the fused norms and the copy
 * they are judged by), at dot precision FAST. --quick shrinks every
 * size for a smoke test; --only runs the cases whose names start with
 * one of the given prefixes (e.g. --only sort,conv2d).
 *
 * A case whose op fails (an op without a kernel on the device, say)
 * prints its error, reports {"check": "FAILED"} and counts as a failure;
 * the other cases still run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "emily/emily.h"
#include "cuda/cuda_context.h"

static emily_device dev = {EMILY_DEVICE_CUDA, 0};
static int runs = 20, failures = 0;
static const char *only = NULL; /* --only: comma-separated name prefixes */
static const char *row = NULL;  /* the case being run, for failure reports */

static int fail(const char *what) {
    fprintf(stderr, "emily_bench: %s%s%s: %s\n", row ? row : "", row ? ": " : "", what, emily_last_error());
    failures++;
    return 1;
}

/* True if the case `name` is selected by --only (and then the case being
 * run). */
static bool want(const char *name) {
    bool yes = !only;
    for (const char *p = only; p && *p && !yes;) {
        size_t n = strcspn(p, ",");
        yes = n > 0 && strncmp(name, p, n) == 0;
        p += n + (p[n] == ',');
    }
    if (yes) row = name;
    return yes;
}

/* A case whose op failed: its JSON line says so (quotes in the message
 * become apostrophes). */
static void report_failed(const char *name, const char *error) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", error);
    for (char *c = msg; *c; c++)
        if (*c == '"' || *c == '\\' || (unsigned char)*c < 32) *c = '\'';
    printf("{\"case\": \"%s\", \"ms\": null, \"check\": \"FAILED\", \"note\": \"%s\"}\n", name, msg);
    fflush(stdout);
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static inline float rnd_pm1(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 40) * (2.0 / 16777216.0) - 1.0);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef emily_status (*op_fn)(emily_tensor *const *in, emily_tensor **out, const void *arg);

/* An op_fn that takes no argument, whose body is `return call;` (call
 * reads the inputs in[] and writes the output to out). */
#define NO_ARG_OP(name, call)                                                                \
    static emily_status name(emily_tensor *const *in, emily_tensor **out, const void *arg) { \
        (void)arg;                                                                           \
        return (call);                                                                       \
    }

/* The host's monotonic clock, in milliseconds. */
static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Median milliseconds of `runs` calls (after 3 warm-ups); *last keeps the
 * last output (caller releases). On the CPU (a check of this program
 * without a GPU) the host clock times the calls instead of events. */
static int time_op(op_fn fn, emily_tensor *const *in, const void *arg, double *ms, emily_tensor **last) {
    bool gpu = dev.type == EMILY_DEVICE_CUDA;
    cudaStream_t stream = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (gpu) {
        if (emi_cuda_current_stream(dev.index, &stream)) return fail("current stream");
        if (cudaEventCreate(&e0) || cudaEventCreate(&e1)) {
            fprintf(stderr, "emily_bench: cudaEventCreate failed\n");
            return ++failures;
        }
    }
    double t[256];
    int n = runs < 256 ? runs : 256, rc = 0;
    *last = NULL;
    for (int k = -3; k < n; k++) {
        emily_tensor *out = NULL;
        double h0 = now_ms();
        if (gpu) cudaEventRecord(e0, stream);
        if (fn(in, &out, arg)) {
            if (row) report_failed(row, emily_last_error());
            rc = fail("op");
            break;
        }
        float f = 0;
        if (gpu) {
            cudaEventRecord(e1, stream);
            if (cudaEventSynchronize(e1)) {
                const char *err = cudaGetErrorString(cudaGetLastError());
                fprintf(stderr, "emily_bench: %s: %s\n", row ? row : "op", err);
                if (row) report_failed(row, err);
                emily_tensor_release(out);
                rc = ++failures;
                break;
            }
            cudaEventElapsedTime(&f, e0, e1);
        } else {
            f = (float)(now_ms() - h0);
        }
        /* a slow op (seconds a call) runs fewer times: the budget of the
         * whole run is a few minutes */
        if (k == -3 && f > 1000 && n > 3) n = 3, k = -1;
        if (k >= 0) t[k] = f;
        if (k == n - 1) *last = out;
        else emily_tensor_release(out);
    }
    if (gpu) {
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }
    if (rc) return rc;
    qsort(t, (size_t)n, sizeof(double), cmp_double);
    *ms = t[n / 2];
    return 0;
}

/* Element i (row-major) of t as a double (f32/f16/bf16). */
static double elem(const emily_tensor *t, int64_t i) {
    int64_t start[1] = {i}, len[1] = {1}, st[1] = {1};
    emily_tensor *flat = NULL, *e = NULL;
    int64_t n = emily_tensor_size(t);
    double v = NAN;
    if (!emily_reshape(t, 1, &n, &flat) && !emily_slice(flat, start, len, st, &e)) {
        unsigned char b[8];
        if (!emily_to_binary(e, b, emily_dtype_size(emily_tensor_dtype(e)))) {
            uint16_t h;
            float f;
            memcpy(&h, b, 2);
            memcpy(&f, b, 4);
            switch (emily_tensor_dtype(e)) {
            case EMILY_F16: v = emily_f16_to_f32(h); break;
            case EMILY_BF16: v = emily_bf16_to_f32(h); break;
            default: v = f;
            }
        }
    }
    emily_tensor_release(e);
    emily_tensor_release(flat);
    return v;
}

static void report(const char *name, double ms, const char *unit, double rate, int ok, const char *note) {
    printf("{\"case\": \"%s\", \"ms\": %.4f, \"%s\": %.2f, \"check\": \"%s\", \"note\": \"%s\"}\n", name, ms, unit,
           rate, ok ? "ok" : "WRONG", note);
    fflush(stdout);
    if (!ok) failures++;
}

NO_ARG_OP(op_add, emily_binary(EMILY_ADD, in[0], in[1], EMILY_DTYPE_AUTO, out))
static emily_status op_sum(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const int *axis = arg;
    return emily_reduce(EMILY_REDUCE_SUM, in[0], axis ? 1 : 0, axis, false, EMILY_DTYPE_AUTO, out);
}
NO_ARG_OP(op_matmul, emily_matmul(in[0], in[1], out))

/* Nx's rounding of an f32 value to bf16/f16 and back (for references). */
static double rounded(emily_dtype dt, float x) {
    if (dt == EMILY_BF16) return emily_bf16_to_f32(emily_f32_to_bf16(x));
    if (dt == EMILY_F16) return emily_f16_to_f32(emily_f64_to_f16(x));
    return x;
}

/* ---- the families of issue 19 ------------------------------------------
 *
 * Each case times one public-API call (output allocation included) and
 * checks its result on the host before it is reported: exactly where the
 * op is exact (sort, argsort, top_k, take, indexed_add, cumsum, max-pool:
 * the host computes the same bits), within a stated bound elsewhere. The
 * peers (bench/gpu/peers.py) run the same shapes. */

/* Outputs beyond the first of the op being timed (top_k's indices, qr's
 * r, svd's s and vt): each call releases the previous call's. */
static emily_tensor *extra[2];

static void drop_extra(void) {
    for (int i = 0; i < 2; i++) {
        emily_tensor_release(extra[i]);
        extra[i] = NULL;
    }
}

static void release_all(int n, emily_tensor **ts) {
    for (int i = 0; i < n; i++) emily_tensor_release(ts[i]);
}

/* The end of a case of one input: its input, its output (*out back to
 * NULL for the next case) and the op's extra outputs released. */
static void end_case(emily_tensor *in, emily_tensor **out) {
    drop_extra();
    emily_tensor_release(*out);
    *out = NULL;
    emily_tensor_release(in);
}

/* The first prod(shape) elements of a rank-1 tensor, as that shape. */
static emily_tensor *prefix(emily_tensor *flat, int rank, const int64_t *shape) {
    int64_t n = 1, start[1] = {0}, step[1] = {1};
    for (int i = 0; i < rank; i++) n *= shape[i];
    emily_tensor *s = NULL, *v = NULL;
    if (emily_slice(flat, start, &n, step, &s) || emily_reshape(s, rank, shape, &v)) fail("view");
    emily_tensor_release(s);
    return v;
}

static emily_tensor *upload(emily_dtype dt, int rank, const int64_t *shape, const void *data) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    emily_tensor *t = NULL;
    if (emily_from_binary(dev, dt, rank, shape, data, (size_t)n * emily_dtype_size(dt), &t)) fail("upload");
    return t;
}

/* The bytes of a contiguous tensor in fresh host memory (NULL on failure). */
static void *download(const emily_tensor *t) {
    size_t nb = emily_tensor_nbytes(t);
    void *h = malloc(nb ? nb : 1);
    if (!h) {
        fprintf(stderr, "emily_bench: %s: out of host memory\n", row);
        return NULL;
    }
    if (emily_to_binary(t, h, nb)) {
        fail("download");
        free(h);
        return NULL;
    }
    return h;
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t urand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* -- sort and argsort -- */

NO_ARG_OP(op_sort, emily_sort(in[0], 0, EMILY_SORT_ASC, true, out))
NO_ARG_OP(op_argsort, emily_argsort(in[0], 0, EMILY_SORT_ASC, true, EMILY_S32, out))

/* (key << 32 | position) of each element, sorted by key (a stable LSD
 * radix sort on the key's bytes): Nx's stable ascending order, positions
 * of equal keys increasing (the data has no NaN and no -0.0). */
static uint64_t *host_sorted(const float *x, int64_t n) {
    uint64_t *v = malloc(sizeof(uint64_t) * (size_t)n), *tmp = malloc(sizeof(uint64_t) * (size_t)n);
    if (!v || !tmp) {
        free(v);
        free(tmp);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = bits_of(x[i]);
        uint32_t key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
        v[i] = (uint64_t)key << 32 | (uint64_t)i;
    }
    for (int shift = 32; shift < 64; shift += 8) {
        int64_t count[257] = {0};
        for (int64_t i = 0; i < n; i++) count[((v[i] >> shift) & 255) + 1]++;
        for (int b = 0; b < 256; b++) count[b + 1] += count[b];
        for (int64_t i = 0; i < n; i++) tmp[count[(v[i] >> shift) & 255]++] = v[i];
        uint64_t *t = v;
        v = tmp;
        tmp = t;
    }
    free(tmp);
    return v;
}

static uint32_t unkey(uint64_t kv) {
    uint32_t key = (uint32_t)(kv >> 32);
    return (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
}

static void bench_sort(emily_tensor *a, const float *ha, int64_t n) {
    char sname[64], aname[64];
    snprintf(sname, sizeof sname, "sort_f32_%lld", (long long)n);
    snprintf(aname, sizeof aname, "argsort_f32_%lld", (long long)n);
    bool ws = want(sname), wa = want(aname);
    if (!ws && !wa) return;
    emily_tensor *x = prefix(a, 1, &n), *out = NULL;
    uint64_t *ref = host_sorted(ha, n);
    double ms;
    if (!x || !ref) goto done;
    row = sname;
    if (ws && !time_op(op_sort, &x, NULL, &ms, &out)) {
        float *got = download(out);
        int ok = got != NULL;
        for (int64_t i = 0; ok && i < n; i++) ok = bits_of(got[i]) == unkey(ref[i]);
        report(sname, ms, "Gkeys/s", (double)n / (ms * 1e6), ok, "ascending, stable (torch.sort stable=True)");
        free(got);
    }
    emily_tensor_release(out);
    out = NULL;
    row = aname;
    if (wa && !time_op(op_argsort, &x, NULL, &ms, &out)) {
        int32_t *got = download(out);
        int ok = got != NULL;
        for (int64_t i = 0; ok && i < n; i++) ok = (uint32_t)got[i] == (uint32_t)ref[i];
        report(aname, ms, "Gkeys/s", (double)n / (ms * 1e6), ok, "ascending, stable, s32 positions");
        free(got);
    }
done:
    emily_tensor_release(out);
    emily_tensor_release(x);
    free(ref);
}

/* -- top_k -- */

static emily_status op_top_k(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    drop_extra();
    return emily_top_k(in[0], *(const int64_t *)arg, EMILY_S32, out, &extra[0]);
}

static const float *topk_row;
static int by_value_desc(const void *pa, const void *pb) {
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    float x = topk_row[a], y = topk_row[b];
    return x > y ? -1 : x < y ? 1 : (a > b) - (a < b);
}

static void bench_top_k(emily_tensor *a, const float *ha) {
    const int64_t rows = 32, cols = 50000, shape[2] = {rows, cols};
    int64_t k = 50;
    char name[64];
    snprintf(name, sizeof name, "top_k_f32_%lldx%lld_k%lld", (long long)rows, (long long)cols, (long long)k);
    if (!want(name)) return;
    emily_tensor *x = prefix(a, 2, shape), *out = NULL;
    double ms;
    if (x && !time_op(op_top_k, &x, &k, &ms, &out)) {
        float *vals = download(out);
        int32_t *idx = extra[0] ? download(extra[0]) : NULL;
        int32_t *order = malloc(sizeof(int32_t) * (size_t)cols);
        int ok = vals && idx && order;
        for (int64_t r = 0; ok && r < rows; r++) {
            topk_row = ha + r * cols;
            for (int32_t j = 0; j < cols; j++) order[j] = j;
            qsort(order, (size_t)cols, sizeof(int32_t), by_value_desc);
            for (int64_t j = 0; ok && j < k; j++)
                ok = idx[r * k + j] == order[j] && bits_of(vals[r * k + j]) == bits_of(topk_row[order[j]]);
        }
        report(name, ms, "Gelem/s", (double)(rows * cols) / (ms * 1e6), ok,
               "values and s32 indices, descending, ties by position");
        free(vals);
        free(idx);
        free(order);
    }
    drop_extra();
    emily_tensor_release(out);
    emily_tensor_release(x);
}

/* -- take: embedding lookup -- */

NO_ARG_OP(op_take, emily_take(in[0], in[1], 0, out))

static void bench_take(int quick) {
    const int64_t V = quick ? 16384 : 1 << 20, D = 768, Q = quick ? 4096 : 65536;
    char name[64];
    snprintf(name, sizeof name, "take_bf16_%lldx%lld_by_%lld", (long long)V, (long long)D, (long long)Q);
    if (!want(name)) return;
    uint16_t *table = malloc(sizeof(uint16_t) * (size_t)(V * D));
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)Q);
    emily_tensor *in[2] = {NULL, NULL}, *out = NULL;
    double ms;
    if (!table || !idx) goto done;
    /* bf16 values +-[1, 2): a sign and 7 random mantissa bits */
    for (int64_t i = 0; i < V * D; i += 4) {
        uint64_t r = urand();
        for (int j = 0; j < 4 && i + j < V * D; j++) table[i + j] = (uint16_t)(0x3F80u | ((r >> (16 * j)) & 0x807Fu));
    }
    for (int64_t i = 0; i < Q; i++) idx[i] = (int32_t)(urand() % (uint64_t)V);
    in[0] = upload(EMILY_BF16, 2, (int64_t[]){V, D}, table);
    in[1] = upload(EMILY_S32, 1, &Q, idx);
    if (in[0] && in[1] && !time_op(op_take, in, NULL, &ms, &out)) {
        uint16_t *got = download(out);
        int ok = got != NULL;
        for (int64_t q = 0; ok && q < Q; q++)
            ok = memcmp(got + q * D, table + (int64_t)idx[q] * D, sizeof(uint16_t) * (size_t)D) == 0;
        report(name, ms, "GB/s", 2.0 * 2.0 * (double)(Q * D) / (ms * 1e6), ok,
               "rows gathered by s32 indices; bytes read + written");
        free(got);
    }
done:
    emily_tensor_release(out);
    release_all(2, in);
    free(table);
    free(idx);
}

/* -- indexed_add: the gradient of an embedding lookup -- */

NO_ARG_OP(op_indexed_add, emily_indexed_add(in[0], in[1], in[2], 1, (const int[]){0}, EMILY_DTYPE_AUTO, out))

/* A zero gradient for GPT-2's vocabulary (50,257 x 768 f32) receives the
 * 64k token rows of a batch (32 sequences of 2,048 tokens), out of place as
 * Nx computes the gradient of take. */
static void bench_indexed_add(int quick, emily_tensor *a, const float *ha) {
    const int64_t V = quick ? 1000 : 50257, D = 768, Q = quick ? 4096 : 65536;
    char name[64];
    snprintf(name, sizeof name, "indexed_add_f32_%lldx%lld_by_%lld", (long long)V, (long long)D, (long long)Q);
    if (!want(name)) return;
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)Q);
    double *acc = calloc((size_t)(V * D), sizeof(double));
    emily_tensor *in[3] = {NULL, NULL, NULL}, *out = NULL;
    double ms;
    if (!idx || !acc) goto done;
    for (int64_t i = 0; i < Q; i++) idx[i] = (int32_t)(urand() % (uint64_t)V);
    if (emily_constant(dev, EMILY_F32, 2, (int64_t[]){V, D}, emily_scalar_float(0.0), &in[0])) fail("zeros");
    in[1] = upload(EMILY_S32, 2, (int64_t[]){Q, 1}, idx);
    in[2] = prefix(a, 2, (int64_t[]){Q, D});
    if (in[0] && in[1] && in[2] && !time_op(op_indexed_add, in, NULL, &ms, &out)) {
        /* the updates are multiples of 2^-23 below 1: their double sums
         * are exact in any order, and the output is each sum rounded */
        for (int64_t j = 0; j < Q; j++)
            for (int64_t q = 0; q < D; q++) acc[(int64_t)idx[j] * D + q] += ha[j * D + q];
        float *got = download(out);
        int ok = got != NULL;
        for (int64_t i = 0; ok && i < V * D; i++) ok = bits_of(got[i]) == bits_of((float)acc[i]);
        report(name, ms, "GB/s", 4.0 * (double)(Q * D + 2 * V * D) / (ms * 1e6), ok,
               "out of place into zeros (GPT-2 vocabulary); bytes of updates + target read/written");
        free(got);
    }
done:
    emily_tensor_release(out);
    release_all(3, in);
    free(idx);
    free(acc);
}

/* -- cumsum -- */

NO_ARG_OP(op_cumsum, emily_cumulative_sum(in[0], 0, false, out))

static void bench_cumsum(emily_tensor *a, const float *ha, int64_t n) {
    char name[64];
    snprintf(name, sizeof name, "cumsum_f32_%lld", (long long)n);
    if (!want(name)) return;
    emily_tensor *out = NULL;
    double ms;
    if (!time_op(op_cumsum, &a, NULL, &ms, &out)) {
        /* f32 sums accumulate in f64 (emily/ops_cumulative.h): with inputs
         * that are multiples of 2^-23 the host's double prefix sums are
         * exact, and each output is one of them rounded */
        float *got = download(out);
        int ok = got != NULL;
        double sum = 0;
        for (int64_t i = 0; ok && i < n; i++) {
            sum += ha[i];
            ok = bits_of(got[i]) == bits_of((float)sum);
        }
        report(name, ms, "GB/s", 8.0 * (double)n / (ms * 1e6), ok, "f64 accumulation; bytes read + written");
        free(got);
    }
    emily_tensor_release(out);
}

/* -- fft -- */

NO_ARG_OP(op_fft, emily_fft(in[0], 0, 0, 1e-10, out))

static void bench_fft(int quick, const float *ha) {
    const int64_t n = quick ? 1 << 16 : 1 << 24;
    char name[64];
    snprintf(name, sizeof name, "fft_c64_%lld", (long long)n);
    if (!want(name)) return;
    emily_tensor *x = upload(EMILY_C64, 1, &n, ha), *out = NULL; /* (re, im) pairs of ha */
    double ms;
    if (x && !time_op(op_fft, &x, NULL, &ms, &out)) {
        /* a few bins by the direct sum in double, twiddles from a table;
         * single-precision FFTs are accurate to about eps * log2(n) of the
         * transform's norm, sqrt(sum |x|^2) per bin (Parseval) */
        float *got = download(out);
        double *tw = malloc(sizeof(double) * (size_t)n), norm = 0;
        int ok = got && tw;
        for (int64_t j = 0; ok && j < n; j++) tw[j] = cos(2.0 * M_PI * (double)j / (double)n);
        for (int64_t j = 0; j < 2 * n; j++) norm += (double)ha[j] * ha[j];
        norm = sqrt(norm);
        const int64_t bins[5] = {0, 1, 12345 % n, n / 2, n - 1};
        for (int b = 0; ok && b < 5; b++) {
            double re = 0, im = 0;
            for (int64_t j = 0, m = 0; j < n; j++, m = (m + bins[b]) % n) { /* m = j * bin mod n */
                double c = tw[m], s = tw[(m + 3 * n / 4) % n];              /* cos, and sin(t) = cos(t - pi/2) */
                double xr = ha[2 * j], xi = ha[2 * j + 1];
                re += xr * c + xi * s; /* x * e^(-i t) */
                im += xi * c - xr * s;
            }
            double tol = 2e-5 * norm;
            ok = fabs(got[2 * bins[b]] - re) <= tol && fabs(got[2 * bins[b] + 1] - im) <= tol;
        }
        report(name, ms, "GFLOP/s", 5.0 * (double)n * log2((double)n) / (ms * 1e6), ok,
               "forward, 5 n log2 n flops; 5 bins checked by the direct sum");
        free(got);
        free(tw);
    }
    emily_tensor_release(out);
    emily_tensor_release(x);
}

/* -- max-pool -- */

/* 3x3 windows, stride 2, padding 1 on each side of the last two axes */
NO_ARG_OP(op_max_pool, emily_window_max(in[0], 4, (const int64_t[]){1, 1, 3, 3}, (const int64_t[]){1, 1, 2, 2},
                                        (const int64_t[]){0, 0, 1, 1}, (const int64_t[]){0, 0, 1, 1}, NULL, out))

/* ResNet's pooling: 3x3 windows, stride 2, padding 1 (-inf), as
 * torch.nn.functional.max_pool2d(x, 3, 2, 1). */
static void bench_max_pool(int quick, emily_tensor *a, const float *ha) {
    const int64_t B = quick ? 4 : 64, C = quick ? 16 : 256, H = 56, W = 56, OH = 28, OW = 28;
    char name[64];
    snprintf(name, sizeof name, "max_pool_3x3_s2_f32_%lldx%lldx%lldx%lld", (long long)B, (long long)C, (long long)H,
             (long long)W);
    if (!want(name)) return;
    emily_tensor *x = prefix(a, 4, (int64_t[]){B, C, H, W}), *out = NULL;
    double ms;
    if (x && !time_op(op_max_pool, &x, NULL, &ms, &out)) {
        float *got = download(out);
        int ok = got != NULL;
        for (int64_t p = 0; ok && p < B * C; p++)
            for (int64_t i = 0; ok && i < OH; i++)
                for (int64_t j = 0; ok && j < OW; j++) {
                    float m = -INFINITY;
                    for (int64_t di = 0; di < 3; di++)
                        for (int64_t dj = 0; dj < 3; dj++) {
                            int64_t y = 2 * i - 1 + di, z = 2 * j - 1 + dj;
                            if (y >= 0 && y < H && z >= 0 && z < W && ha[(p * H + y) * W + z] >= m)
                                m = ha[(p * H + y) * W + z];
                        }
                    ok = bits_of(got[(p * OH + i) * OW + j]) == bits_of(m);
                }
        report(name, ms, "GB/s", 4.0 * (double)(B * C * (H * W + OH * OW)) / (ms * 1e6), ok,
               "window_max 3x3 stride 2 padding 1; bytes read + written");
        free(got);
    }
    emily_tensor_release(out);
    emily_tensor_release(x);
}

/* -- conv2d -- */

static emily_status op_conv(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    return emily_conv(in[0], in[1], arg, EMILY_DTYPE_AUTO, out);
}

/* A ResNet stage-3 convolution: 3x3, 256 -> 256 channels, padding 1,
 * batch 32 of 56x56, bf16 (NCHW, Nx's default layout). */
static void bench_conv2d(int quick, emily_tensor *a, const float *ha, emily_tensor *b, const float *hb) {
    const int64_t N = quick ? 2 : 32, C = quick ? 32 : 256, H = quick ? 28 : 56, W = H, O = C;
    char name[64];
    snprintf(name, sizeof name, "conv2d_3x3_bf16_%lldx%lldx%lldx%lld", (long long)N, (long long)C, (long long)H,
             (long long)W);
    if (!want(name)) return;
    emily_tensor *xf = prefix(a, 4, (int64_t[]){N, C, H, W}), *wf = prefix(b, 4, (int64_t[]){O, C, 3, 3});
    emily_tensor *in[2] = {NULL, NULL}, *out = NULL;
    int64_t pad[2] = {1, 1};
    emily_conv_opts o = {.padding_lo = pad, .padding_hi = pad};
    double ms;
    if (!xf || !wf || emily_as_type(xf, EMILY_BF16, &in[0]) || emily_as_type(wf, EMILY_BF16, &in[1])) {
        fail("conv inputs");
        goto done;
    }
    int64_t before = emi_conv_device_count();
    if (!time_op(op_conv, in, &o, &ms, &out)) {
        bool device_kernel = emi_conv_device_count() > before;
        /* probes against the sum in double of the bf16 products: f32
         * accumulation of K = 2304 products, then bf16 rounding */
        uint16_t *got = download(out);
        int ok = got != NULL;
        const int64_t probes[6][4] = {{0, 0, 0, 0},
                                      {N - 1, O - 1, H - 1, W - 1},
                                      {0, 7, 1, 2},
                                      {N / 2, O / 3, H / 2, 0},
                                      {1 % N, 5, H - 1, W / 2},
                                      {N - 1, 0, 3, W - 1}};
        for (int q = 0; ok && q < 6; q++) {
            int64_t n = probes[q][0], oc = probes[q][1], y = probes[q][2], z = probes[q][3];
            double ref = 0, mag = 0;
            for (int64_t c = 0; c < C; c++)
                for (int64_t dy = 0; dy < 3; dy++)
                    for (int64_t dz = 0; dz < 3; dz++) {
                        int64_t iy = y - 1 + dy, iz = z - 1 + dz;
                        if (iy < 0 || iy >= H || iz < 0 || iz >= W) continue;
                        double t = rounded(EMILY_BF16, ha[((n * C + c) * H + iy) * W + iz]) *
                                   rounded(EMILY_BF16, hb[((oc * C + c) * 3 + dy) * 3 + dz]);
                        ref += t;
                        mag += fabs(t);
                    }
            double v = emily_bf16_to_f32(got[((n * O + oc) * H + y) * W + z]);
            ok = fabs(v - ref) <= (double)(9 * C + 16) * 0x1p-24 * mag + 0x1p-7 * fabs(ref) + 1e-30;
        }
        report(name, ms, "TFLOP/s", 2.0 * (double)(N * O * H * W * C * 9) / (ms * 1e9), ok,
               device_kernel ? "padding 1, NCHW; device conv kernel (cuDNN), f32 accumulation"
                             : "padding 1, NCHW; dots (im2col + gemm), f32 accumulation");
        free(got);
    }
done:
    emily_tensor_release(out);
    release_all(2, in);
    emily_tensor_release(xf);
    emily_tensor_release(wf);
}

/* -- linear algebra -- */

NO_ARG_OP(op_solve, emily_solve(in[0], in[1], out))
NO_ARG_OP(op_cholesky, emily_cholesky(in[0], out))
static emily_status op_qr(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    (void)arg;
    drop_extra();
    return emily_qr(in[0], EMILY_QR_REDUCED, 1e-10, out, &extra[0]);
}
static emily_status op_svd(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    (void)arg;
    drop_extra();
    return emily_svd(in[0], false, out, &extra[0], &extra[1]);
}

/* Normwise backward error of x for a x = b (one n x n system):
 * max|a x - b| / (max_i sum_j |a_ij| max|x| + max|b|). */
static double backward_error(const float *a, const float *x, const float *b, int64_t n) {
    double r = 0, an = 0, xn = 0, bn = 0;
    for (int64_t i = 0; i < n; i++) {
        double s = 0, row_sum = 0;
        for (int64_t j = 0; j < n; j++) {
            s += (double)a[i * n + j] * x[j];
            row_sum += fabs(a[i * n + j]);
        }
        r = fmax(r, fabs(s - b[i]));
        an = fmax(an, row_sum);
        xn = fmax(xn, fabs(x[i]));
        bn = fmax(bn, fabs(b[i]));
    }
    return r / (an * xn + bn);
}

static void bench_linalg(int quick, emily_tensor *a, const float *ha, emily_tensor *b, const float *hb) {
    const int64_t n = quick ? 256 : 4096, m = quick ? 128 : 2048;
    char name[64];
    double ms;
    emily_tensor *out = NULL;
    int saved_runs = runs;
    if (runs > 5) runs = 5; /* each call is milliseconds of work */

    /* solve: a general random matrix, one right-hand side */
    snprintf(name, sizeof name, "solve_f32_%lld", (long long)n);
    if (want(name)) {
        emily_tensor *in[2] = {prefix(a, 2, (int64_t[]){n, n}), prefix(b, 1, &n)};
        if (in[0] && in[1] && !time_op(op_solve, in, NULL, &ms, &out)) {
            float *x = download(out);
            double err = x ? backward_error(ha, x, hb, n) : 1;
            report(name, ms, "GFLOP/s", (2.0 / 3.0 * n * n * n + 2.0 * n * n) / (ms * 1e6), err <= 1e-4,
                   "LU with partial pivoting, one right-hand side; checked: backward error <= 1e-4");
            free(x);
        }
        emily_tensor_release(out);
        out = NULL;
        release_all(2, in);
    }

    /* cholesky: (r + r^T) / 2 + n I, symmetric positive definite */
    snprintf(name, sizeof name, "cholesky_f32_%lld", (long long)n);
    if (want(name)) {
        float *s = malloc(sizeof(float) * (size_t)(n * n));
        emily_tensor *in = NULL;
        if (s) {
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++)
                    s[i * n + j] = 0.5f * (hb[i * n + j] + hb[j * n + i]) + (i == j ? (float)n : 0.0f);
            in = upload(EMILY_F32, 2, (int64_t[]){n, n}, s);
        }
        if (in && !time_op(op_cholesky, &in, NULL, &ms, &out)) {
            float *l = download(out);
            int ok = l != NULL;
            for (int q = 0; ok && q < 64; q++) {
                int64_t i = (int64_t)(urand() % (uint64_t)n), j = (int64_t)(urand() % (uint64_t)n);
                if (i < j) {
                    int64_t t = i;
                    i = j;
                    j = t;
                }
                double sum = 0, mag = 0;
                for (int64_t k = 0; k <= j; k++) {
                    sum += (double)l[i * n + k] * l[j * n + k];
                    mag += fabs((double)l[i * n + k] * l[j * n + k]);
                }
                ok = fabs(sum - s[i * n + j]) <= 1e-4 * mag + 1e-6 && (i == j || l[j * n + i] == 0.0f);
            }
            report(name, ms, "GFLOP/s", (double)n * n * n / 3.0 / (ms * 1e6), ok,
                   "checked: (l l^T)_ij at 64 entries, upper triangle zero");
            free(l);
        }
        end_case(in, &out);
        free(s);
    }

    /* qr (reduced) of the general matrix */
    snprintf(name, sizeof name, "qr_f32_%lld", (long long)n);
    if (want(name)) {
        emily_tensor *in = prefix(a, 2, (int64_t[]){n, n});
        if (in && !time_op(op_qr, &in, NULL, &ms, &out)) {
            float *q = download(out), *r = extra[0] ? download(extra[0]) : NULL;
            int ok = q && r;
            for (int p = 0; ok && p < 32; p++) {
                int64_t i = (int64_t)(urand() % (uint64_t)n), j = (int64_t)(urand() % (uint64_t)n);
                double qr = 0, mag = 0, qq = 0;
                for (int64_t k = 0; k < n; k++) {
                    qr += (double)q[i * n + k] * r[k * n + j];
                    mag += fabs((double)q[i * n + k] * r[k * n + j]);
                    qq += (double)q[k * n + i] * q[k * n + j];
                }
                ok = fabs(qr - ha[i * n + j]) <= 1e-4 * mag + 1e-6 && fabs(qq - (i == j)) <= 5e-4 &&
                     (i <= j || r[i * n + j] == 0.0f);
            }
            report(name, ms, "GFLOP/s", 4.0 / 3.0 * n * n * n / (ms * 1e6), ok,
                   "reduced; checked: q r = a, q^T q = I at 32 entries, r upper triangular");
            free(q);
            free(r);
        }
        end_case(in, &out);
    }

    /* svd (thin) */
    snprintf(name, sizeof name, "svd_f32_%lld", (long long)m);
    if (want(name)) {
        emily_tensor *in = prefix(b, 2, (int64_t[]){m, m});
        if (in && !time_op(op_svd, &in, NULL, &ms, &out)) {
            float *u = download(out), *s = extra[0] ? download(extra[0]) : NULL;
            float *vt = extra[1] ? download(extra[1]) : NULL;
            int ok = u && s && vt;
            for (int64_t k = 0; ok && k < m; k++) ok = s[k] >= 0 && (k == 0 || s[k] <= s[k - 1]);
            for (int p = 0; ok && p < 32; p++) {
                int64_t i = (int64_t)(urand() % (uint64_t)m), j = (int64_t)(urand() % (uint64_t)m);
                double rec = 0, mag = 0, uu = 0;
                for (int64_t k = 0; k < m; k++) {
                    rec += (double)u[i * m + k] * s[k] * vt[k * m + j];
                    mag += fabs((double)u[i * m + k] * s[k] * vt[k * m + j]);
                    uu += (double)u[k * m + i] * u[k * m + j];
                }
                ok = fabs(rec - hb[i * m + j]) <= 1e-4 * mag + 1e-5 * s[0] && fabs(uu - (i == j)) <= 5e-4;
            }
            report(name, ms, "calls/s", 1000.0 / ms, ok,
                   "thin; checked: s descending, u s vt = a and u^T u = I at 32 entries");
            free(u);
            free(s);
            free(vt);
        }
        end_case(in, &out);
    }
    runs = saved_runs;

    /* many small systems: 4x4 random matrices + 4 I */
    const int64_t B = quick ? 1024 : 65536;
    snprintf(name, sizeof name, "solve_batched_f32_%lldx4x4", (long long)B);
    if (want(name)) {
        float *ma = malloc(sizeof(float) * (size_t)(16 * B));
        emily_tensor *in[2] = {NULL, NULL};
        if (ma) {
            for (int64_t i = 0; i < 16 * B; i++) ma[i] = ha[i] + ((i % 16) % 5 == 0 ? 4.0f : 0.0f);
            in[0] = upload(EMILY_F32, 3, (int64_t[]){B, 4, 4}, ma);
            in[1] = upload(EMILY_F32, 2, (int64_t[]){B, 4}, hb);
        }
        if (in[0] && in[1] && !time_op(op_solve, in, NULL, &ms, &out)) {
            float *x = download(out);
            int ok = x != NULL;
            for (int64_t k = 0; ok && k < B; k++) ok = backward_error(ma + 16 * k, x + 4 * k, hb + 4 * k, 4) <= 1e-5;
            report(name, ms, "Msolves/s", (double)B / (ms * 1e3), ok, "checked: every backward error <= 1e-5");
            free(x);
        }
        emily_tensor_release(out);
        release_all(2, in);
        free(ma);
    }
}

/* Fused attention (emily_sdpa, issue 16): bf16 q, k, v {B, H, S, D} with
 * the default scale, causal and not, against
 * torch.nn.functional.scaled_dot_product_attention in peers.py (same
 * shapes; PyTorch picks its cuDNN/flash kernel). TFLOP/s count the two
 * products, 4 B H S^2 D, halved for causal. Checked: two rows of head 0
 * against a host reference in double within bf16's rounding of the
 * probabilities and the output. */
static emily_status op_sdpa(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    return emily_sdpa(in[0], in[1], in[2], arg, out);
}

static void bench_sdpa(int quick, const float *ha, const float *hb) {
    const int64_t B = quick ? 1 : 8, H = quick ? 2 : 16, S = quick ? 256 : 4096, D = 128;
    int64_t shape[4] = {B, H, S, D}, n = B * H * S * D;
    emily_tensor *f[3] = {NULL, NULL, NULL}, *in[3] = {NULL, NULL, NULL};
    const float *src[3] = {ha, hb, ha + n};
    for (int i = 0; i < 3; i++)
        if (emily_from_binary(dev, EMILY_F32, 4, shape, src[i], sizeof(float) * (size_t)n, &f[i]) ||
            emily_as_type(f[i], EMILY_BF16, &in[i])) {
            fail("sdpa inputs");
            goto done;
        }
    for (int causal = 1; causal >= 0; causal--) {
        char name[64];
        snprintf(name, sizeof name, "sdpa_bf16_%lldx%lldx%lldx%lld%s", (long long)B, (long long)H, (long long)S,
                 (long long)D, causal ? "_causal" : "");
        if (!want(name)) continue;
        emily_sdpa_options o = {.scale = 1.0 / sqrt((double)D), .causal = causal};
        double ms;
        emily_tensor *out = NULL;
        if (time_op(op_sdpa, in, &o, &ms, &out)) continue;
        int ok = 1;
        int64_t rows[2] = {0, S - 1};
        double *p = malloc(sizeof(double) * (size_t)S);
        for (int r = 0; p && r < 2; r++) {
            int64_t i = rows[r], nk = causal ? i + 1 : S;
            double m = -INFINITY, z = 0;
            for (int64_t j = 0; j < nk; j++) {
                double dot = 0;
                for (int64_t d = 0; d < D; d++)
                    dot += rounded(EMILY_BF16, src[0][i * D + d]) * rounded(EMILY_BF16, src[1][j * D + d]);
                p[j] = dot * o.scale;
                m = p[j] > m ? p[j] : m;
            }
            for (int64_t j = 0; j < nk; j++) z += (p[j] = exp(p[j] - m));
            for (int64_t d = 0; d < D; d += 17) {
                double ref = 0;
                for (int64_t j = 0; j < nk; j++) ref += p[j] / z * rounded(EMILY_BF16, src[2][j * D + d]);
                ok &= fabs(elem(out, i * D + d) - ref) <= 1.0 / 64;
            }
        }
        if (!p) ok = 0;
        free(p);
        double flops = 4.0 * (double)B * (double)H * (double)S * (double)S * (double)D * (causal ? 0.5 : 1);
        report(name, ms, "TFLOP/s", flops / (ms * 1e9), ok, "flash attention, bf16 mma, f32 softmax");
        emily_tensor_release(out);
    }
done:
    for (int i = 0; i < 3; i++) {
        emily_tensor_release(f[i]);
        emily_tensor_release(in[i]);
    }
}

/* Fused norms (emily_rms_norm, emily_layer_norm with bias; issue 16):
 * bf16 x {R, C} with bf16 gain (and bias), eps 1e-5, against
 * torch.nn.functional.rms_norm / layer_norm in peers.py, and the copy
 * bandwidth both are judged by: a negate of the same x (one read, one
 * write, like a norm; PyTorch's row is x.clone()). GB/s count x read and
 * y written. Checked: rows 0 and R - 1 against a host reference in double
 * within bf16's roundings (Nx's bf16 conversion truncates: under 2^-7
 * relative each; layer norm rounds once, rms norm twice, its normalized
 * value to x's type before the gain: emily/ops_fast.h) plus the f32
 * statistics' error. */
typedef struct norm_arg {
    int layer;
    emily_tensor *gamma, *beta;
} norm_arg;
static emily_status op_norm(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const norm_arg *a = arg;
    return a->layer ? emily_layer_norm(in[0], a->gamma, a->beta, 1e-5, out)
                    : emily_rms_norm(in[0], a->gamma, 1e-5, out);
}
NO_ARG_OP(op_negate, emily_unary(EMILY_NEGATE, in[0], out))

static void bench_norms(int quick, const float *ha, const float *hb) {
    const int64_t R = quick ? 1024 : 16384, C = quick ? 1024 : 4096;
    int64_t shape[2] = {R, C}, vshape[1] = {C};
    emily_tensor *xf = NULL, *x = NULL, *gf = NULL, *g = NULL, *bf = NULL, *b = NULL, *out = NULL;
    if (emily_from_binary(dev, EMILY_F32, 2, shape, ha, sizeof(float) * (size_t)(R * C), &xf) ||
        emily_as_type(xf, EMILY_BF16, &x) ||
        emily_from_binary(dev, EMILY_F32, 1, vshape, hb, sizeof(float) * (size_t)C, &gf) ||
        emily_as_type(gf, EMILY_BF16, &g) ||
        emily_from_binary(dev, EMILY_F32, 1, vshape, hb + C, sizeof(float) * (size_t)C, &bf) ||
        emily_as_type(bf, EMILY_BF16, &b)) {
        fail("norm inputs");
        goto done;
    }
    char name[64];
    double ms, bytes = 2.0 * 2.0 * (double)R * (double)C;
    snprintf(name, sizeof name, "copy_bf16_%lldx%lld", (long long)R, (long long)C);
    if (want(name) && !time_op(op_negate, &x, NULL, &ms, &out)) {
        int ok = elem(out, 0) == -rounded(EMILY_BF16, ha[0]) &&
                 elem(out, R * C - 1) == -rounded(EMILY_BF16, ha[R * C - 1]);
        report(name, ms, "GB/s", bytes / (ms * 1e6), ok, "negate: one read, one write (torch: clone)");
    }
    emily_tensor_release(out);
    out = NULL;
    for (int layer = 0; layer < 2; layer++) {
        snprintf(name, sizeof name, "%s_bf16_%lldx%lld", layer ? "layer_norm" : "rms_norm", (long long)R, (long long)C);
        norm_arg arg = {layer, g, layer ? b : NULL};
        if (!want(name) || time_op(op_norm, &x, &arg, &ms, &out)) continue;
        int ok = 1;
        int64_t rows[2] = {0, R - 1};
        for (int r = 0; r < 2; r++) {
            const float *xr = ha + rows[r] * C;
            double mean = 0, var = 0;
            for (int64_t j = 0; j < C; j++) mean += layer ? rounded(EMILY_BF16, xr[j]) : 0;
            mean /= (double)C;
            for (int64_t j = 0; j < C; j++) {
                double d = rounded(EMILY_BF16, xr[j]) - mean;
                var += d * d;
            }
            double inv = 1.0 / sqrt(var / (double)C + 1e-5);
            for (int64_t j = 0; j < C; j += 61) {
                double ref = (rounded(EMILY_BF16, xr[j]) - mean) * inv * rounded(EMILY_BF16, hb[j]) +
                             (layer ? rounded(EMILY_BF16, hb[C + j]) : 0);
                ok &= fabs(elem(out, rows[r] * C + j) - ref) <= fabs(ref) * (layer ? 1 : 2) / 128 + 1e-3;
            }
        }
        report(name, ms, "GB/s", bytes / (ms * 1e6), ok,
               layer ? "fused layer norm with bias, f32 statistics" : "fused rms norm, f32 statistics");
        emily_tensor_release(out);
        out = NULL;
    }
done:
    emily_tensor_release(xf);
    emily_tensor_release(x);
    emily_tensor_release(gf);
    emily_tensor_release(g);
    emily_tensor_release(bf);
    emily_tensor_release(b);
}

/* Every family case, in the order of the report. a and b: the run's two
 * f32 vectors of n elements (on the device) and their host copies. */
static void bench_families(int quick, emily_tensor *a, const float *ha, emily_tensor *b, const float *hb, int64_t n) {
    bench_sort(a, ha, quick ? (int64_t)1 << 20 : (int64_t)1 << 26);
    bench_top_k(a, ha);
    bench_take(quick);
    bench_indexed_add(quick, a, ha);
    bench_cumsum(a, ha, n);
    bench_fft(quick, ha);
    bench_max_pool(quick, a, ha);
    bench_conv2d(quick, a, ha, b, hb);
    bench_linalg(quick, a, ha, b, hb);
    if (n >= 3 * (int64_t)(quick ? 1 * 2 * 256 * 128 : 8 * 16 * 4096 * 128)) bench_sdpa(quick, ha, hb);
    bench_norms(quick, ha, hb);
    row = NULL;
}

/* FP8 dots (emily_dot_fp8, issue 17): arg is the output type and the
 * contract axis of in[1] (1: in[1] is [N, K], a linear layer's weights,
 * which the tensor cores read in place; 0: [K, N], packed k-major by the
 * engine on every call). */
typedef struct fp8_arg {
    emily_dtype out;
    int cb;
} fp8_arg;
static emily_status op_dot_fp8(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const fp8_arg *f = arg;
    int ca = 1;
    return emily_dot_fp8(in[0], 1, &ca, 0, NULL, 1.0f, in[1], 1, &f->cb, 0, NULL, 1.0f, f->out, out);
}

/* A probe of an M x M product of the host copies ha and hb: the term of
 * cell (r, c) at q, and the tolerance of the cell given the sum in double
 * of its terms (ref) and of their magnitudes (mag). */
typedef struct dot_probe {
    int64_t M;
    const float *ha, *hb;
    double (*term)(const struct dot_probe *d, int64_t r, int64_t c, int64_t q);
    double (*tol)(const struct dot_probe *d, double ref, double mag);
    emily_dtype type; /* matmul: the inputs' type; fp8: the output's */
    int cb;           /* fp8: 1 for b [N, K], 0 for b [K, N] */
} dot_probe;

/* 1 when out is within tolerance of the sums in double at three cells
 * (the two corners and one inside), else 0. */
static int dot_probes_ok(const dot_probe *d, const emily_tensor *out) {
    int64_t M = d->M;
    int ok = 1;
    int64_t probes[3][2] = {{0, 0}, {M - 1, M - 1}, {123 % M, 4567 % M}};
    for (int p = 0; p < 3; p++) {
        int64_t r = probes[p][0], c = probes[p][1];
        double ref = 0, mag = 0;
        for (int64_t q = 0; q < M; q++) {
            double t = d->term(d, r, c, q);
            ref += t;
            mag += fabs(t);
        }
        ok &= fabs(elem(out, r * M + c) - ref) <= d->tol(d, ref, mag);
    }
    return ok;
}

/* matmul: the inputs rounded to their type, the product in double. */
static double matmul_term(const dot_probe *d, int64_t r, int64_t c, int64_t q) {
    return rounded(d->type, d->ha[r * d->M + q]) * rounded(d->type, d->hb[q * d->M + c]);
}

static double matmul_tol(const dot_probe *d, double ref, double mag) {
    (void)ref;
    double eps = d->type == EMILY_BF16 ? 1.0 / 128 : d->type == EMILY_F16 ? 1.0 / 1024 : 1e-6;
    return eps * mag + eps;
}

/* fp8: the inputs rounded to e4m3, the product in double. */
static double fp8_term(const dot_probe *d, int64_t r, int64_t c, int64_t q) {
    int64_t M = d->M;
    /* b[c][q] for [N, K], b[q][c] for [K, N] */
    float bv = d->cb == 1 ? d->hb[c * M + q] : d->hb[q * M + c];
    return emily_f8_e4m3fn_to_f64(emily_f64_to_f8_e4m3fn(d->ha[r * M + q])) *
           emily_f8_e4m3fn_to_f64(emily_f64_to_f8_e4m3fn(bv));
}

/* f32 accumulation of M terms, and one bf16 rounding for a bf16 output */
static double fp8_tol(const dot_probe *d, double ref, double mag) {
    return (double)d->M * ldexp(1.0, -24) * mag + (d->type == EMILY_BF16 ? fabs(ref) / 128 : 0) + 1e-6;
}

/* "dot fp8 e4m3 MxMxM": f8_e4m3fn operands (a [M, M] and b, Nx's rounding
 * of the f32 inputs), unit scales, f32 and bf16 outputs, against
 * torch._scaled_mm with float8_e4m3fn inputs in peers.py (b given
 * column-major there, as _scaled_mm wants: our [N, K] b). Emily's bf16
 * dot of the same size is the matmul_bf16 row. Probes against the sum in
 * double of the e4m3 products: f32 accumulation of M terms (and one bf16
 * rounding for the bf16 output). */
/* a and b converted to t, in xy; false (both NULL, the failure reported
 * as `what`) when either conversion fails. */
static bool pair_as_type(emily_tensor *a, emily_tensor *b, emily_dtype t, const char *what, emily_tensor *xy[2]) {
    xy[0] = xy[1] = NULL;
    if (!emily_as_type(a, t, &xy[0]) && !emily_as_type(b, t, &xy[1])) return true;
    fail(what);
    release_all(2, xy);
    xy[0] = xy[1] = NULL;
    return false;
}

static void bench_fp8(int64_t M, emily_tensor *ma, emily_tensor *mb, const float *ha, const float *hb) {
    emily_tensor *xy[2], *out = NULL;
    if (!pair_as_type(ma, mb, EMILY_F8_E4M3FN, "fp8 inputs", xy)) return;
    const fp8_arg args[3] = {{EMILY_F32, 1}, {EMILY_BF16, 1}, {EMILY_BF16, 0}};
    const char *suffix[3] = {"f32", "bf16", "bf16_b_kn"};
    for (int v = 0; v < 3; v++) {
        char name[64];
        double ms;
        snprintf(name, sizeof name, "dot_fp8_e4m3_%lld_%s", (long long)M, suffix[v]);
        if (!want(name) || time_op(op_dot_fp8, xy, &args[v], &ms, &out)) continue;
        dot_probe d = {M, ha, hb, fp8_term, fp8_tol, args[v].out, args[v].cb};
        int ok = dot_probes_ok(&d, out);
        report(name, ms, "TFLOP/s", 2.0 * (double)M * (double)M * (double)M / (ms * 1e9), ok,
               v == 2 ? "f8_e4m3fn inputs, b [K, N] packed k-major per call, bf16 output"
                      : "f8_e4m3fn inputs, unit scales, f32 accumulation");
        emily_tensor_release(out);
        out = NULL;
    }
    release_all(2, xy);
}

int main(int argc, char **argv) {
    int quick = 0, no_matmul = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            if (emily_device_parse(argv[++i], &dev)) return fail("--device");
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--no-matmul") == 0) no_matmul = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "usage: emily_bench [--device cuda:0] [--runs 20] [--quick] [--no-matmul] "
                            "[--only NAME,...]\n");
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    if (emily_device_check(dev)) return fail("device");
    const int64_t N = quick ? (1 << 22) : (1 << 28), ROWS = quick ? 1024 : 65536, COLS = N / ROWS;
    const int64_t M = quick ? 1024 : 8192;

    /* inputs: a, b uniform in [-1, 1) */
    float *ha = malloc(sizeof(float) * (size_t)N), *hb = malloc(sizeof(float) * (size_t)N);
    if (!ha || !hb) return fprintf(stderr, "emily_bench: out of host memory\n"), 1;
    for (int64_t i = 0; i < N; i++) ha[i] = rnd_pm1();
    for (int64_t i = 0; i < N; i++) hb[i] = rnd_pm1();
    int64_t shape[1] = {N};
    emily_tensor *a = NULL, *b = NULL;
    if (emily_from_binary(dev, EMILY_F32, 1, shape, ha, sizeof(float) * (size_t)N, &a) ||
        emily_from_binary(dev, EMILY_F32, 1, shape, hb, sizeof(float) * (size_t)N, &b))
        return fail("upload");
    char name[64];
    double ms;
    emily_tensor *out = NULL;

    /* add */
    emily_tensor *ab[2] = {a, b};
    snprintf(name, sizeof name, "add_f32_%lld", (long long)N);
    if (want(name) && !time_op(op_add, ab, NULL, &ms, &out)) {
        int64_t probe[3] = {0, 12345 % N, N - 1};
        int ok = 1;
        for (int k = 0; k < 3; k++) ok &= elem(out, probe[k]) == (double)(ha[probe[k]] + hb[probe[k]]);
        report(name, ms, "GB/s", 3.0 * 4.0 * (double)N / (ms * 1e6), ok, "bytes read + written");
    }
    emily_tensor_release(out);

    /* sum of everything */
    snprintf(name, sizeof name, "sum_f32_%lld", (long long)N);
    if (want(name) && !time_op(op_sum, ab, NULL, &ms, &out)) {
        double ref = 0;
        for (int64_t i = 0; i < N; i++) ref += ha[i];
        double got = elem(out, 0);
        int ok = fabs(got - ref) <= 1e-6 * fabs(ref) + 1e-3;
        report(name, ms, "GB/s", 4.0 * (double)N / (ms * 1e6), ok, "bytes read");
    }
    emily_tensor_release(out);

    /* row sums */
    int64_t mshape[2] = {ROWS, COLS};
    emily_tensor *mat = NULL;
    if (emily_reshape(a, 2, mshape, &mat)) return fail("reshape");
    int axis = 1;
    emily_tensor *mi[1] = {mat};
    snprintf(name, sizeof name, "rowsum_f32_%lldx%lld", (long long)ROWS, (long long)COLS);
    if (want(name) && !time_op(op_sum, mi, &axis, &ms, &out)) {
        int ok = 1;
        int64_t rows_to_check[2] = {0, ROWS - 1};
        for (int k = 0; k < 2; k++) {
            double ref = 0;
            for (int64_t j = 0; j < COLS; j++) ref += ha[rows_to_check[k] * COLS + j];
            double got = elem(out, rows_to_check[k]);
            ok &= fabs(got - ref) <= 1e-5 * fabs(ref) + 1e-4;
        }
        report(name, ms, "GB/s", 4.0 * (double)N / (ms * 1e6), ok, "bytes read");
    }
    emily_tensor_release(out);
    emily_tensor_release(mat);

    /* matmul M x M x M */
    int64_t start[1] = {0}, len[1] = {M * M}, st[1] = {1}, sq[2] = {M, M};
    emily_tensor *fa = NULL, *fb = NULL, *ma = NULL, *mb = NULL;
    if (emily_slice(a, start, len, st, &fa) || emily_slice(b, start, len, st, &fb) || emily_reshape(fa, 2, sq, &ma) ||
        emily_reshape(fb, 2, sq, &mb))
        return fail("matmul inputs");
    const emily_dtype types[3] = {EMILY_BF16, EMILY_F16, EMILY_F32};
    /* FAST: each type in its own precision (f32 accumulation, no TF32), as
     * PyTorch and JAX compute; HIGHEST (Emily's default): accumulation in
     * f64, Nx.BinaryBackend's answers. */
    for (int prec = 0; prec < (no_matmul || !want("matmul") ? 0 : 2); prec++) {
        emily_dot_precision P = prec == 0 ? EMILY_DOT_PRECISION_FAST : EMILY_DOT_PRECISION_HIGHEST;
        if (emily_dot_set_precision(P)) return fail("dot precision");
        int saved_runs = runs;
        if (P == EMILY_DOT_PRECISION_HIGHEST && runs > 5) runs = 5;
        for (int k = 0; k < 3; k++) {
            emily_tensor *xy[2];
            if (!pair_as_type(ma, mb, types[k], "as_type", xy)) continue;
            snprintf(name, sizeof name, "matmul_%s_%lld%s", emily_dtype_name(types[k]), (long long)M,
                     P == EMILY_DOT_PRECISION_FAST ? "" : "_highest");
            row = name;
            if (!time_op(op_matmul, xy, NULL, &ms, &out)) {
                dot_probe d = {M, ha, hb, matmul_term, matmul_tol, types[k], 0};
                int ok = dot_probes_ok(&d, out);
                report(name, ms, "TFLOP/s", 2.0 * (double)M * (double)M * (double)M / (ms * 1e9), ok,
                       P == EMILY_DOT_PRECISION_HIGHEST ? "precision highest: f64 accumulation"
                       : types[k] == EMILY_F32          ? "f32 multiply/accumulate, no TF32"
                                                        : "f32 accumulation");
            }
            emily_tensor_release(out);
            release_all(2, xy);
        }
        runs = saved_runs;
    }
    if (!no_matmul) {
        if (emily_dot_set_precision(EMILY_DOT_PRECISION_FAST)) return fail("dot precision");
        bench_fp8(M, ma, mb, ha, hb);
        row = NULL;
    }
    emily_tensor_release(ma);
    emily_tensor_release(mb);
    emily_tensor_release(fa);
    emily_tensor_release(fb);

    /* the families of issue 19, each type in its own precision */
    if (emily_dot_set_precision(EMILY_DOT_PRECISION_FAST)) return fail("dot precision");
    bench_families(quick, a, ha, b, hb, N);
    emily_tensor_release(a);
    emily_tensor_release(b);
    free(ha);
    free(hb);
    return failures ? 1 : 0;
}
