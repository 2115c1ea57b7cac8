/* The fused sdpa (emily/ops_fast.h) on the CPU against the same
 * attention composed of eager ops, as Emily.Backend runs Bumblebee's
 * attention without Emily.Fast: the scores' dot, the scale, the causal
 * mask as a select, the softmax (reduce_max, subtract, exp, sum, divide)
 * and the dot with v, every op a call with its own output. q, k, v
 * {B, H, S, D} in [-1, 1); each time is the median of 7 samples, each
 * sample enough calls to last >= 20 ms.
 *
 *     make CUDA=0 BUILD=build-c build-c/bench_sdpa
 *     build-c/bench_sdpa                       # the pool's threads
 *     OMP_NUM_THREADS=1 build-c/bench_sdpa     # one thread
 *     build-c/bench_sdpa 1x8x512x64 ...        # other shapes (BxHxSxD)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "compare_common.h"

static emily_tensor *q, *k, *v, *keep;
static int64_t S_, D_;
static bool causal_;

static emily_tensor *reduce_last(emily_reduce_op op, emily_tensor *a) {
    int ax = 3;
    emily_tensor *r;
    die(emily_reduce(op, a, 1, &ax, true, EMILY_DTYPE_AUTO, &r), "reduce");
    return r;
}

/* Bumblebee's attention_weights_impl and attention_output_impl on
 * {B, H, S, D}: dot, scale, select(mask, s, -inf), softmax, dot. */
static emily_tensor *composed(void) {
    int ca[1] = {3}, ba[2] = {0, 1}, cv[1] = {2};
    emily_tensor *s, *scale, *ninf, *m, *e, *z, *o;
    die(emily_dot(q, 1, ca, 2, ba, k, 1, ca, 2, ba, EMILY_DTYPE_AUTO, &s), "dot");
    die(emily_constant(EMILY_CPU, EMILY_F32, 0, NULL, emily_scalar_float(1.0 / sqrt((double)D_)), &scale), "constant");
    emily_tensor *a = bin(EMILY_MULTIPLY, s, scale), *l = a;
    if (causal_) {
        die(emily_constant(EMILY_CPU, EMILY_F32, 0, NULL, emily_scalar_float(-INFINITY), &ninf), "constant");
        die(emily_select(keep, a, ninf, EMILY_DTYPE_AUTO, &l), "select");
        emily_tensor_release(ninf);
    }
    m = reduce_last(EMILY_REDUCE_MAX, l);
    emily_tensor *d = bin(EMILY_SUBTRACT, l, m);
    die(emily_unary(EMILY_EXP, d, &e), "exp");
    z = reduce_last(EMILY_REDUCE_SUM, e);
    emily_tensor *p = bin(EMILY_DIVIDE, e, z);
    die(emily_dot(p, 1, ca, 2, ba, v, 1, cv, 2, ba, EMILY_DTYPE_AUTO, &o), "dot");
    emily_tensor *all[] = {s, scale, a, m, d, e, z, p};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) emily_tensor_release(all[i]);
    if (l != a) emily_tensor_release(l);
    return o;
}

static emily_tensor *fused(void) {
    emily_sdpa_options o = {.scale = 1.0 / sqrt((double)D_), .causal = causal_};
    emily_tensor *r;
    die(emily_sdpa(q, k, v, &o, &r), "sdpa");
    return r;
}

/* Median time of one call, in milliseconds: 1 warm-up, 7 samples. */
static double time_ms(emily_tensor *(*fn)(void)) { return median_call_time(fn, 1, 1 << 16, 7, 1e6); }

/* {B, H, S, D} inputs in [-1, 1). */
static emily_tensor *uniform(const int64_t *shape, uint64_t seed) { return uniform_f32(4, shape, seed, -1.0, 2.0); }

static void run_shape(int64_t B, int64_t H, int64_t S, int64_t D) {
    int64_t shape[4] = {B, H, S, D}, ks[2] = {S, S};
    S_ = S, D_ = D;
    q = uniform(shape, 1), k = uniform(shape, 2), v = uniform(shape, 3);
    /* the causal mask as the composed form builds it: iota(S, 1) >= iota(1, S) */
    emily_tensor *ri, *ci;
    die(emily_iota(EMILY_CPU, EMILY_S64, 2, ks, 0, &ri), "iota");
    die(emily_iota(EMILY_CPU, EMILY_S64, 2, ks, 1, &ci), "iota");
    emily_tensor *k2 = bin(EMILY_GREATER_EQUAL, ri, ci);
    die(emily_broadcast(k2, 4, (int64_t[]){B, H, S, S}, (int[]){2, 3}, &keep), "broadcast");
    emily_tensor_release(k2);
    for (int c = 0; c < 2; c++) {
        causal_ = c;
        emily_tensor *f = fused(), *g = composed();
        double diff = max_abs_diff(f, g);
        emily_tensor_release(f);
        emily_tensor_release(g);
        double tf = time_ms(fused), tc = time_ms(composed);
        printf("| {%lld, %lld, %lld, %lld} f32%s | %.2f | %.2f | %.1fx | %.2g |\n", (long long)B, (long long)H,
               (long long)S, (long long)D, c ? " causal" : "", tf, tc, tc / tf, diff);
    }
    emily_tensor *all[] = {q, k, v, keep, ri, ci};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) emily_tensor_release(all[i]);
}

int main(int argc, char **argv) {
    print_threads();
    printf("| shape | fused ms | composed ms | speedup | max abs diff |\n|---|---|---|---|---|\n");
    if (argc > 1) {
        for (int i = 1; i < argc; i++) {
            long long b, h, s, d;
            if (sscanf(argv[i], "%lldx%lldx%lldx%lld", &b, &h, &s, &d) != 4 || b < 1 || h < 1 || s < 1 || d < 1) {
                fprintf(stderr, "shape %s: expected BxHxSxD\n", argv[i]);
                return 2;
            }
            run_shape(b, h, s, d);
        }
        return 0;
    }
    run_shape(1, 8, 512, 64);
    run_shape(4, 12, 128, 64);
    run_shape(1, 16, 1024, 128);
    return 0;
}
