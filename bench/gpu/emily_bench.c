/* Emily's side of the GPU benchmark (bench/gpu/run.sh): times ops through
 * the C API with CUDA events recorded on the calling thread's current
 * stream around each call (so the time covers what the op enqueues, its
 * output allocation from the caching allocator included), after warm-up,
 * on random data; reports the median of the runs. Each result is checked
 * against a host reference first. One JSON object per line on stdout.
 *
 *   emily_bench [--device cuda:0] [--runs 20] [--quick] [--no-matmul]
 *
 * Cases: add f32 2^28 (bandwidth), sum of 2^28 f32, row sums of a
 * 65536x4096 f32 matrix, 8192^3 matmul in bf16, f16 and f32 (f32 without
 * TF32), at dot precision FAST (each type in its own precision, like the
 * peers) and HIGHEST (Emily's default: f64 accumulation). --quick shrinks
 * every size for a smoke test. */
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

static int fail(const char *what) {
    fprintf(stderr, "emily_bench: %s: %s\n", what, emily_last_error());
    failures++;
    return 1;
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

/* Median milliseconds of `runs` calls (after 3 warm-ups); *last keeps the
 * last output (caller releases). */
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
    int n = runs < 256 ? runs : 256;
    *last = NULL;
    for (int k = -3; k < n; k++) {
        emily_tensor *out = NULL;
        double h0 = now_ms();
        if (gpu) cudaEventRecord(e0, stream);
        if (fn(in, &out, arg)) return fail("op");
        float f = 0;
        if (gpu) {
            cudaEventRecord(e1, stream);
            if (cudaEventSynchronize(e1)) {
                fprintf(stderr, "emily_bench: %s\n", cudaGetErrorString(cudaGetLastError()));
                return ++failures;
            }
            cudaEventElapsedTime(&f, e0, e1);
        } else {
            f = (float)(now_ms() - h0);
        }
        if (k >= 0) t[k] = f;
        if (k == n - 1) *last = out;
        else emily_tensor_release(out);
    }
    if (gpu) {
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
    }
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
    printf("{\"case\": \"%s\", \"ms\": %.4f, \"%s\": %.2f, \"check\": \"%s\", \"note\": \"%s\"}\n", name, ms,
           unit, rate, ok ? "ok" : "WRONG", note);
    fflush(stdout);
    if (!ok) failures++;
}

static emily_status op_add(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    (void)arg;
    return emily_binary(EMILY_ADD, in[0], in[1], EMILY_DTYPE_AUTO, out);
}
static emily_status op_sum(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const int *axis = arg;
    return emily_reduce(EMILY_REDUCE_SUM, in[0], axis ? 1 : 0, axis, false, EMILY_DTYPE_AUTO, out);
}
static emily_status op_matmul(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    (void)arg;
    return emily_matmul(in[0], in[1], out);
}

/* Nx's rounding of an f32 value to bf16/f16 and back (for references). */
static double rounded(emily_dtype dt, float x) {
    if (dt == EMILY_BF16) return emily_bf16_to_f32(emily_f32_to_bf16(x));
    if (dt == EMILY_F16) return emily_f16_to_f32(emily_f64_to_f16(x));
    return x;
}

int main(int argc, char **argv) {
    int quick = 0, no_matmul = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            if (emily_device_parse(argv[++i], &dev)) return fail("--device");
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--no-matmul") == 0) no_matmul = 1;
        else {
            fprintf(stderr, "usage: emily_bench [--device cuda:0] [--runs 20] [--quick] [--no-matmul]\n");
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
    if (!time_op(op_add, ab, NULL, &ms, &out)) {
        int64_t probe[3] = {0, 12345 % N, N - 1};
        int ok = 1;
        for (int k = 0; k < 3; k++) ok &= elem(out, probe[k]) == (double)(ha[probe[k]] + hb[probe[k]]);
        snprintf(name, sizeof name, "add_f32_%lld", (long long)N);
        report(name, ms, "GB/s", 3.0 * 4.0 * (double)N / (ms * 1e6), ok, "bytes read + written");
    }
    emily_tensor_release(out);

    /* sum of everything */
    if (!time_op(op_sum, ab, NULL, &ms, &out)) {
        double ref = 0;
        for (int64_t i = 0; i < N; i++) ref += ha[i];
        double got = elem(out, 0);
        int ok = fabs(got - ref) <= 1e-6 * fabs(ref) + 1e-3;
        snprintf(name, sizeof name, "sum_f32_%lld", (long long)N);
        report(name, ms, "GB/s", 4.0 * (double)N / (ms * 1e6), ok, "bytes read");
    }
    emily_tensor_release(out);

    /* row sums */
    int64_t mshape[2] = {ROWS, COLS};
    emily_tensor *mat = NULL;
    if (emily_reshape(a, 2, mshape, &mat)) return fail("reshape");
    int axis = 1;
    emily_tensor *mi[1] = {mat};
    if (!time_op(op_sum, mi, &axis, &ms, &out)) {
        int ok = 1;
        int64_t rows_to_check[2] = {0, ROWS - 1};
        for (int k = 0; k < 2; k++) {
            double ref = 0;
            for (int64_t j = 0; j < COLS; j++) ref += ha[rows_to_check[k] * COLS + j];
            double got = elem(out, rows_to_check[k]);
            ok &= fabs(got - ref) <= 1e-5 * fabs(ref) + 1e-4;
        }
        snprintf(name, sizeof name, "rowsum_f32_%lldx%lld", (long long)ROWS, (long long)COLS);
        report(name, ms, "GB/s", 4.0 * (double)N / (ms * 1e6), ok, "bytes read");
    }
    emily_tensor_release(out);
    emily_tensor_release(mat);

    /* matmul M x M x M */
    int64_t start[1] = {0}, len[1] = {M * M}, st[1] = {1}, sq[2] = {M, M};
    emily_tensor *fa = NULL, *fb = NULL, *ma = NULL, *mb = NULL;
    if (emily_slice(a, start, len, st, &fa) || emily_slice(b, start, len, st, &fb) ||
        emily_reshape(fa, 2, sq, &ma) || emily_reshape(fb, 2, sq, &mb))
        return fail("matmul inputs");
    const emily_dtype types[3] = {EMILY_BF16, EMILY_F16, EMILY_F32};
    /* FAST: each type in its own precision (f32 accumulation, no TF32), as
     * PyTorch and JAX compute; HIGHEST (Emily's default): accumulation in
     * f64, Nx.BinaryBackend's answers. */
    for (int prec = 0; prec < (no_matmul ? 0 : 2); prec++) {
        emily_dot_precision P = prec == 0 ? EMILY_DOT_PRECISION_FAST : EMILY_DOT_PRECISION_HIGHEST;
        if (emily_dot_set_precision(P)) return fail("dot precision");
        int saved_runs = runs;
        if (P == EMILY_DOT_PRECISION_HIGHEST && runs > 5) runs = 5;
        for (int k = 0; k < 3; k++) {
            emily_tensor *x = NULL, *y = NULL;
            if (emily_as_type(ma, types[k], &x) || emily_as_type(mb, types[k], &y)) {
                fail("as_type");
                emily_tensor_release(x);
                emily_tensor_release(y);
                continue;
            }
            emily_tensor *xy[2] = {x, y};
            if (!time_op(op_matmul, xy, NULL, &ms, &out)) {
                int ok = 1;
                int64_t probes[3][2] = {{0, 0}, {M - 1, M - 1}, {123 % M, 4567 % M}};
                for (int p = 0; p < 3; p++) {
                    int64_t r = probes[p][0], c = probes[p][1];
                    double ref = 0, mag = 0;
                    for (int64_t q = 0; q < M; q++) {
                        double t = rounded(types[k], ha[r * M + q]) * rounded(types[k], hb[q * M + c]);
                        ref += t;
                        mag += fabs(t);
                    }
                    double eps = types[k] == EMILY_BF16 ? 1.0 / 128 : types[k] == EMILY_F16 ? 1.0 / 1024 : 1e-6;
                    double got = elem(out, r * M + c);
                    ok &= fabs(got - ref) <= eps * mag + eps;
                }
                snprintf(name, sizeof name, "matmul_%s_%lld%s", emily_dtype_name(types[k]), (long long)M,
                         P == EMILY_DOT_PRECISION_FAST ? "" : "_highest");
                report(name, ms, "TFLOP/s", 2.0 * (double)M * (double)M * (double)M / (ms * 1e9), ok,
                       P == EMILY_DOT_PRECISION_HIGHEST ? "precision highest: f64 accumulation"
                       : types[k] == EMILY_F32 ? "f32 multiply/accumulate, no TF32" : "f32 accumulation");
            }
            emily_tensor_release(out);
            emily_tensor_release(x);
            emily_tensor_release(y);
        }
        runs = saved_runs;
    }
    emily_tensor_release(ma);
    emily_tensor_release(mb);
    emily_tensor_release(fa);
    emily_tensor_release(fb);
    emily_tensor_release(a);
    emily_tensor_release(b);
    free(ha);
    free(hb);
    return failures ? 1 : 0;
}
