/* The fused layer_norm and rms_norm (emily/ops_fast.h) against the same
 * expressions composed of eager ops, as Emily.Backend runs Axon's
 * layer_norm and Bumblebee's rms_norm without Emily.Fast: every op a call
 * with its own output (Nx.variance takes the mean again, as Axon's code
 * does). f32 inputs in [-4, 4); each time is the median of 15 samples,
 * each sample enough calls to last >= 20 ms; every call makes and frees
 * its output, as a user's would.
 *
 *     make CUDA=0 BUILD=build-c build-c/bench_fast_norm
 *     build-c/bench_fast_norm                      # the pool's threads
 *     OMP_NUM_THREADS=1 build-c/bench_fast_norm    # one thread
 *     build-c/bench_fast_norm 64x768 ...           # other shapes (ROWSxN)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "compare_common.h"

static emily_tensor *x, *g, *b;
static int64_t rows_, n_;

/* The composed pieces (and bin, compare_common.h): each releases its
 * inputs that it made. */
static emily_tensor *mean_last(emily_tensor *a) {
    int ax = emily_tensor_rank(a) - 1;
    emily_tensor *s, *n;
    int64_t len = emily_tensor_shape(a)[ax];
    die(emily_reduce(EMILY_REDUCE_SUM, a, 1, &ax, true, EMILY_DTYPE_AUTO, &s), "sum");
    die(emily_from_binary(EMILY_CPU, EMILY_S64, 0, NULL, &len, sizeof len, &n), "n");
    emily_tensor *m = bin(EMILY_DIVIDE, s, n);
    emily_tensor_release(s);
    emily_tensor_release(n);
    return m;
}
static emily_tensor *scalar(double v) {
    emily_tensor *t;
    die(emily_constant(EMILY_CPU, EMILY_F32, 0, NULL, emily_scalar_float(v), &t), "constant");
    return t;
}
static emily_tensor *rsqrt(emily_tensor *a) {
    emily_tensor *r;
    die(emily_unary(EMILY_RSQRT, a, &r), "rsqrt");
    return r;
}

/* Axon.Layers.layer_norm: mean, Nx.variance, the select, the affine step. */
static emily_tensor *composed_layer_norm(void) {
    emily_tensor *mean = mean_last(x);
    emily_tensor *m2 = mean_last(x), *cen = bin(EMILY_SUBTRACT, x, m2), *two = scalar(2);
    emily_tensor *sq = bin(EMILY_POW, cen, two), *var = mean_last(sq);
    emily_tensor *eps = scalar(1.0e-5), *pred = bin(EMILY_GREATER_EQUAL, var, eps);
    emily_tensor *ve = bin(EMILY_ADD, var, eps), *big = rsqrt(ve), *small = rsqrt(eps), *r;
    die(emily_select(pred, big, small, EMILY_DTYPE_AUTO, &r), "select");
    emily_tensor *scale = bin(EMILY_MULTIPLY, g, r), *c = bin(EMILY_SUBTRACT, x, mean);
    emily_tensor *p = bin(EMILY_MULTIPLY, scale, c), *y = bin(EMILY_ADD, p, b);
    emily_tensor *all[] = {mean, m2, cen, two, sq, var, eps, pred, ve, big, small, r, scale, c, p};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) emily_tensor_release(all[i]);
    return y;
}

/* Bumblebee's rms_norm (upcast: :normalization; f32 needs no casts). */
static emily_tensor *composed_rms_norm(void) {
    emily_tensor *two = scalar(2), *sq = bin(EMILY_POW, x, two), *ms = mean_last(sq), *eps = scalar(1.0e-6);
    emily_tensor *v = bin(EMILY_ADD, ms, eps), *r = rsqrt(v), *z = bin(EMILY_MULTIPLY, x, r);
    emily_tensor *zero = scalar(0.0), *w = bin(EMILY_ADD, zero, g), *y = bin(EMILY_MULTIPLY, z, w);
    emily_tensor *all[] = {two, sq, ms, eps, v, r, z, zero, w};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) emily_tensor_release(all[i]);
    return y;
}

static emily_tensor *fused_layer_norm(void) {
    emily_tensor *y;
    die(emily_layer_norm(x, g, b, 1.0e-5, &y), "layer_norm");
    return y;
}
static emily_tensor *fused_rms_norm(void) {
    emily_tensor *y;
    die(emily_rms_norm(x, g, 1.0e-6, &y), "rms_norm");
    return y;
}

/* Median time of one call, in microseconds: 3 warm-ups, 15 samples. */
static double time_us(emily_tensor *(*fn)(void)) { return median_call_time(fn, 3, 1 << 20, 15, 1e3); }

/* Inputs in [-4, 4). */
static emily_tensor *uniform(int rank, const int64_t *shape, uint64_t seed) {
    return uniform_f32(rank, shape, seed, -4.0, 8.0);
}

static void run_shape(int64_t rows, int64_t n) {
    rows_ = rows, n_ = n;
    int64_t shape[2] = {rows, n};
    x = uniform(2, shape, 1), g = uniform(1, &n, 2), b = uniform(1, &n, 3);
    emily_tensor *f = fused_layer_norm(), *c = composed_layer_norm();
    double dl = max_abs_diff(f, c);
    emily_tensor_release(f);
    emily_tensor_release(c);
    f = fused_rms_norm(), c = composed_rms_norm();
    double dr = max_abs_diff(f, c);
    emily_tensor_release(f);
    emily_tensor_release(c);
    double lf = time_us(fused_layer_norm), lc = time_us(composed_layer_norm);
    double rf = time_us(fused_rms_norm), rc = time_us(composed_rms_norm);
    printf("| {%lld, %lld} f32 | layer_norm | %.1f | %.1f | %.1fx | %.2g |\n", (long long)rows, (long long)n, lf, lc,
           lc / lf, dl);
    printf("| {%lld, %lld} f32 | rms_norm | %.1f | %.1f | %.1fx | %.2g |\n", (long long)rows, (long long)n, rf, rc,
           rc / rf, dr);
    emily_tensor_release(x);
    emily_tensor_release(g);
    emily_tensor_release(b);
}

int main(int argc, char **argv) {
    print_threads();
    printf("| shape | op | fused us | composed us | speedup | max abs diff |\n|---|---|---|---|---|---|\n");
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            long long r, n;
            if (sscanf(argv[i], "%lldx%lld", &r, &n) != 2 || r < 1 || n < 1) {
                fprintf(stderr, "shape %s: expected ROWSxN\n", argv[i]);
                return 2;
            }
            run_shape(r, n);
        }
        return 0;
    }
    run_shape(32 * 128, 384);
    run_shape(32, 576);
    run_shape(128, 576);
    return 0;
}
