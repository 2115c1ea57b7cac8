/* The fused quantized matmul (emily/ops_quant.h) against the f32 dot of
 * the same product (x . W^T, W {N, K} dense), f32 x and weights, 4 and 8
 * bits. Default shapes, groups of 64: SmolLM2-135M's for one decoded
 * token (x {1, 576} by W {1536, 576}, the MLP's up projection; {49152,
 * 576}, the tied embedding head; {576, 1536}, the down projection) and
 * for a 37-token prompt, and MiniLM's FFN over 1024 tokens (1024 x 384
 * by 1536 x 384). The f32 dot is emily_dot (OpenBLAS, FAST: sgemm, also
 * for one row); for one row of x, cblas_sgemv on the same arrays is
 * timed too. ratio = fused / f32 dot. Each time is the median of 15
 * samples, each sample enough calls to last >= 20 ms; every emily call
 * makes and frees its output.
 *
 *     make CUDA=0 BUILD=build-c build-c/bench_quant
 *     build-c/bench_quant                      # the pool's threads
 *     OMP_NUM_THREADS=1 build-c/bench_quant    # one thread
 *     build-c/bench_quant 1x576x1536:32 ...    # other shapes (MxKxN[:group])
 */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "compare_common.h"

static emily_tensor *x, *w, *q, *s, *b;
static int bits_;
static long long group_;
/* x, W and y as plain arrays for cblas_sgemv (one row of x) */
static float *xv, *wv, *yv;
static long long kk_, nn_;

/* The timed calls; the timer releases the output they return. */
static emily_tensor *run_dot(void) {
    emily_tensor *r;
    int ca = 1, cb = 1;
    die(emily_dot(x, 1, &ca, 0, NULL, w, 1, &cb, 0, NULL, EMILY_DTYPE_AUTO, &r), "dot");
    return r;
}

static emily_tensor *run_sgemv(void) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)nn_, (int)kk_, 1.0f, wv, (int)kk_, xv, 1, 0.0f, yv, 1);
    return NULL;
}

static emily_tensor *run_quant(void) {
    emily_tensor *r;
    die(emily_quantized_matmul(x, q, s, b, bits_, group_, true, &r), "quantized_matmul");
    return r;
}

/* Median time of one call, in microseconds: 1 warm-up, 15 samples. */
static double time_us(emily_tensor *(*fn)(void)) { return median_call_time(fn, 1, 1 << 20, 15, 1e3); }

static emily_tensor *random_f32(int64_t rows, int64_t cols) {
    int64_t shape[2] = {rows, cols}, n = rows * cols;
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) die(EMILY_ERR_MEMORY, "malloc");
    uint64_t st = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < n; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        v[i] = (float)((double)(st >> 11) / 9007199254740992.0 - 0.5);
    }
    emily_tensor *t;
    die(emily_from_binary(EMILY_CPU, EMILY_F32, 2, shape, v, (size_t)n * sizeof *v, &t), "tensor");
    free(v);
    return t;
}

int main(int argc, char **argv) {
    static const char *defaults[] = {"1x576x1536",  "1x576x49152",  "1x1536x576",
                                     "37x576x1536", "37x576x49152", "1024x384x1536"};
    int ndefaults = (int)(sizeof defaults / sizeof *defaults);
    int nshapes = argc > 1 ? argc - 1 : ndefaults;
    printf("%-18s %5s %12s %12s %12s %8s\n", "MxKxN:group", "bits", "f32 dot us", "sgemv us", "fused us", "ratio");
    for (int i = 0; i < nshapes; i++) {
        const char *spec = argc > 1 ? argv[i + 1] : defaults[i];
        long long m, k, n;
        group_ = 64;
        int fields = sscanf(spec, "%lldx%lldx%lld:%lld", &m, &k, &n, &group_);
        if (fields < 3) {
            fprintf(stderr, "shape %s: expected MxKxN or MxKxN:group\n", spec);
            return 2;
        }
        x = random_f32(m, k);
        w = random_f32(n, k);
        double dense = time_us(run_dot), gemv = 0;
        if (m == 1) {
            /* OpenBLAS's matrix-vector product itself (emily_dot runs
             * sgemm, which packs W): one thread, as the engine runs BLAS */
            kk_ = k, nn_ = n;
            xv = malloc(sizeof *xv * (size_t)k), wv = malloc(sizeof *wv * (size_t)(n * k));
            yv = malloc(sizeof *yv * (size_t)n);
            if (!xv || !wv || !yv) die(EMILY_ERR_MEMORY, "malloc");
            die(emily_to_binary(x, xv, sizeof *xv * (size_t)k), "x");
            die(emily_to_binary(w, wv, sizeof *wv * (size_t)(n * k)), "w");
            gemv = time_us(run_sgemv);
            free(xv), free(wv), free(yv);
        }
        for (int bi = 0; bi < 2; bi++) {
            bits_ = bi == 0 ? 4 : 8;
            die(emily_quantize(w, bits_, group_, &q, &s, &b), "quantize");
            double fused = time_us(run_quant);
            char label[64];
            snprintf(label, sizeof label, "%lldx%lldx%lld:%lld", m, k, n, group_);
            char gv[32] = "-";
            if (m == 1) snprintf(gv, sizeof gv, "%.1f", gemv);
            printf("%-18s %5d %12.1f %12s %12.1f %8.2f\n", label, bits_, dense, gv, fused, fused / dense);
            emily_tensor_release(q), emily_tensor_release(s), emily_tensor_release(b);
        }
        emily_tensor_release(x), emily_tensor_release(w);
    }
    return 0;
}
