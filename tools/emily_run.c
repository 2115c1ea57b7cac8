/* emily_run: loads an engine graph file (emily_graph_save, or
 * Emily.Compiler's :save_graph option), runs it on a device with
 * deterministic inputs and prints the time per run and a digest of each
 * output, so a graph recorded on one machine can be replayed and timed on
 * another (the H200, say).
 *
 *   emily_run [--device cpu|cuda[:N]] [--runs N] [--warmup N] [--no-optimize]
 *             [--inputs DIR] GRAPH
 *
 * Inputs: parameter i is filled with a fixed pseudo-random pattern
 * (floats in [-1, 1), integers in [0, 100)), or read from DIR/param_i.bin
 * (raw little-endian bytes of its type and shape) when --inputs is given.
 * Outputs: type, shape, and the sum and sum of squares of the values (as
 * f64) - enough to compare two machines' runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "emily/emily.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A host tensor of the spec holding the pattern, then moved to dev. */
static emily_status make_input(emily_dtype dt, int rank, const int64_t *shape, emily_device dev, const char *dir,
                               size_t index, emily_tensor **out) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    emily_status s;
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/param_%zu.bin", dir, index);
        FILE *f = fopen(path, "rb");
        if (!f) return emily_error(EMILY_ERR_ARGUMENT, "emily_run: cannot open %s", path);
        size_t nb = (size_t)n * emily_dtype_size(dt);
        void *buf = malloc(nb ? nb : 1);
        size_t got = buf ? fread(buf, 1, nb, f) : 0;
        fclose(f);
        s = got == nb ? emily_from_binary(dev, dt, rank, shape, buf, nb, out)
                      : emily_error(EMILY_ERR_ARGUMENT, "emily_run: %s has %zu bytes, want %zu", path, got, nb);
        free(buf);
        return s;
    }
    double *vals = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!vals) return emily_error(EMILY_ERR_MEMORY, "emily_run: out of memory");
    bool is_int = emily_dtype_is_integer(dt);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = rng();
        vals[i] = is_int ? (double)(r % 100) : (double)(r >> 11) * 0x1p-52 - 1.0;
    }
    emily_tensor *wide = NULL, *cast = NULL;
    s = emily_from_binary(EMILY_CPU, EMILY_F64, rank, shape, vals, sizeof(double) * (size_t)n, &wide);
    free(vals);
    if (!s) s = emily_as_type(wide, dt, &cast);
    emily_tensor_release(wide);
    if (!s) s = emily_to_device(cast, dev, out);
    emily_tensor_release(cast);
    return s;
}

static void print_output(size_t k, const emily_tensor *t) {
    emily_tensor *wide = NULL;
    emily_dtype dt = emily_tensor_dtype(t);
    char shape[256];
    int pos = 0;
    pos += snprintf(shape + pos, sizeof shape - (size_t)pos, "{");
    for (int i = 0; i < emily_tensor_rank(t) && pos < 200; i++)
        pos += snprintf(shape + pos, sizeof shape - (size_t)pos, i ? ", %lld" : "%lld",
                        (long long)emily_tensor_shape(t)[i]);
    snprintf(shape + pos, sizeof shape - (size_t)pos, "}");
    emily_dtype to = emily_dtype_is_complex(dt) ? EMILY_C128 : EMILY_F64;
    if (emily_as_type(t, to, &wide)) {
        printf("output %zu: %s%s (no digest: %s)\n", k, emily_dtype_name(dt), shape, emily_last_error());
        return;
    }
    int64_t n = emily_tensor_size(wide) * (to == EMILY_C128 ? 2 : 1);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    double sum = 0, sq = 0;
    if (v && !emily_to_binary(wide, v, sizeof(double) * (size_t)n))
        for (int64_t i = 0; i < n; i++) {
            sum += v[i];
            sq += v[i] * v[i];
        }
    printf("output %zu: %s%s sum %.9g sum_sq %.9g\n", k, emily_dtype_name(dt), shape, sum, sq);
    free(v);
    emily_tensor_release(wide);
}

int main(int argc, char **argv) {
    emily_device dev = EMILY_CPU;
    int runs = 10, warmup = 2;
    const char *path = NULL, *dir = NULL;
    emily_graph_options opts = {0};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            if (emily_device_parse(argv[++i], &dev)) {
                fprintf(stderr, "emily_run: %s\n", emily_last_error());
                return 2;
            }
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--inputs") == 0 && i + 1 < argc) dir = argv[++i];
        else if (strcmp(argv[i], "--no-optimize") == 0) opts.no_optimize = 1;
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fprintf(stderr, "usage: emily_run [--device cpu|cuda[:N]] [--runs N] [--warmup N] [--no-optimize] "
                            "[--inputs DIR] GRAPH\n");
            return 2;
        }
    }
    if (!path || runs < 1 || warmup < 0) {
        fprintf(stderr, "usage: emily_run [--device cpu|cuda[:N]] [--runs N] [--warmup N] [--no-optimize] "
                        "[--inputs DIR] GRAPH\n");
        return 2;
    }
    emily_graph *g = NULL;
    double t0 = now_s();
    if (emily_graph_load(path, &g) || emily_graph_compile(g, dev, &opts)) {
        fprintf(stderr, "emily_run: %s\n", emily_last_error());
        emily_graph_free(g);
        return 1;
    }
    double t_compile = now_s() - t0;
    size_t np = emily_graph_num_params(g), no = emily_graph_num_outputs(g);
    emily_tensor **params = calloc(np + 1, sizeof *params), **outs = calloc(no + 1, sizeof *outs);
    double *times = calloc((size_t)runs, sizeof *times);
    int rc = 0;
    for (size_t i = 0; i < np && !rc; i++) {
        emily_dtype dt;
        int rank;
        const int64_t *shape;
        if (emily_graph_param_spec(g, i, &dt, &rank, &shape) || make_input(dt, rank, shape, dev, dir, i, &params[i])) {
            fprintf(stderr, "emily_run: parameter %zu: %s\n", i, emily_last_error());
            rc = 1;
        }
    }
    for (int r = 0; r < warmup + runs && !rc; r++) {
        double s0 = now_s();
        if (emily_graph_run(g, params, np, outs, no) || emily_synchronize(dev)) {
            fprintf(stderr, "emily_run: %s\n", emily_last_error());
            rc = 1;
            break;
        }
        if (r >= warmup) times[r - warmup] = now_s() - s0;
        if (r + 1 < warmup + runs)
            for (size_t k = 0; k < no; k++) emily_tensor_release(outs[k]);
    }
    if (!rc) {
        emily_graph_stats st;
        emily_graph_get_stats(g, &st);
        qsort(times, (size_t)runs, sizeof *times, cmp_double);
        char dname[32];
        emily_device_format(dev, dname, sizeof dname);
        printf("graph %s on %s: %lld params, %lld calls (%lld folded, %lld dropped, %lld fused into %lld groups), "
               "%lld steps, peak intermediates %.1f MiB, compile %.1f ms\n",
               path, dname, (long long)st.params, (long long)st.calls, (long long)st.folded, (long long)st.dropped,
               (long long)st.fused_calls, (long long)st.fused_groups, (long long)st.steps,
               (double)st.peak_bytes / 1048576.0, t_compile * 1e3);
        printf("time per run: median %.3f ms, min %.3f ms (%d runs after %d warm-up)\n", times[runs / 2] * 1e3,
               times[0] * 1e3, runs, warmup);
        for (size_t k = 0; k < no; k++) print_output(k, outs[k]);
        for (size_t k = 0; k < no; k++) emily_tensor_release(outs[k]);
    }
    for (size_t i = 0; i < np; i++) emily_tensor_release(params[i]);
    free(params);
    free(outs);
    free(times);
    emily_graph_free(g);
    return rc;
}
