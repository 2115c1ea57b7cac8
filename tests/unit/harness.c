#include <complex.h>
#include <fnmatch.h>
#include <stdlib.h>
#include "harness.h"
#include "core/scalar_convert.h"

int harness_failures = 0;

/* The command line's selection (harness_args): the --only names, and
 * whether to list rather than run. */
enum { MAX_ONLY = 32 };
static const char *only[MAX_ONLY];
static int n_only;
static bool list_only;
static int matched;                        /* cases selected over every harness_run of the process */
static long part_k, part_n = 1, part_item; /* --part K/N; the work items seen by harness_mine */

static void usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [--only NAME]... [--list] [--part K/N]\n"
            "  --only NAME  run the cases whose name contains NAME (repeatable; a NAME\n"
            "               with * ? or [ is a pattern for the whole name)\n"
            "  --list       print the selected cases' names and run nothing\n"
            "  --part K/N   in the cases that divide their work (harness_mine), run the\n"
            "               items i with i mod N = K (0 <= K < N)\n",
            prog);
}

bool harness_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--list") == 0) {
            list_only = true;
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc && n_only < MAX_ONLY) {
            only[n_only++] = argv[++i];
        } else if (strncmp(a, "--only=", 7) == 0 && n_only < MAX_ONLY) {
            only[n_only++] = a + 7;
        } else if (strcmp(a, "--part") == 0 && i + 1 < argc) {
            char end;
            if (sscanf(argv[++i], "%ld/%ld%c", &part_k, &part_n, &end) != 2 || part_n < 1 || part_k < 0 ||
                part_k >= part_n) {
                usage(argv[0]);
                return false;
            }
        } else {
            usage(argv[0]);
            return false;
        }
    }
    return true;
}

bool harness_mine(void) { return part_item++ % part_n == part_k; }

static bool selected(const char *name) {
    if (n_only == 0) return true;
    for (int i = 0; i < n_only; i++) {
        if (strpbrk(only[i], "*?[") ? fnmatch(only[i], name, 0) == 0 : strstr(name, only[i]) != NULL) return true;
    }
    return false;
}

int harness_count_cases(const harness_case *cases) {
    int n = 0;
    while (cases[n].name) n++;
    return n;
}

int harness_run(const char *suite, const harness_case *cases) {
    int total = 0, skipped = 0;
    for (const harness_case *c = cases; c->name; c++) {
        if (!selected(c->name)) {
            skipped++;
            continue;
        }
        matched++;
        if (list_only) {
            printf("%s\n", c->name);
            continue;
        }
        int before = harness_failures;
        c->fn();
        total++;
        if (harness_failures != before) fprintf(stderr, "%s: %s failed\n", suite, c->name);
        if (emily_live_tensors() != 0 || emily_live_buffers() != 0) {
            fprintf(stderr, "%s: %s leaked %lld tensors and %lld buffers\n", suite, c->name,
                    (long long)emily_live_tensors(), (long long)emily_live_buffers());
            harness_failures++;
            return 1;
        }
    }
    if (list_only) return 0;
    if (skipped)
        printf("%s: %d tests (%d left out by --only), %d failed checks\n", suite, total, skipped, harness_failures);
    else printf("%s: %d tests, %d failed checks\n", suite, total, harness_failures);
    return harness_failures ? 1 : 0;
}

int harness_finish(int rc) {
    if (n_only > 0 && matched == 0) {
        fprintf(stderr, "no test case matches --only %s%s\n", only[0], n_only > 1 ? " (or the others)" : "");
        return 1;
    }
    return rc;
}

int harness_gpu_finish(int rc, const harness_gpu_cases *g) {
    const char *self = getenv("EMILY_TEST_CUDA_ON_CPU");
    if (self && strcmp(self, "1") == 0) {
        printf("%s: EMILY_TEST_CUDA_ON_CPU=1: GPU cases run on the CPU (a self-check of the test)\n", g->suite);
        *g->device = EMILY_CPU;
        if (g->on_cpu_flag) *g->on_cpu_flag = true;
        return harness_finish(harness_run(g->on_cpu_suite, g->on_cpu) || rc);
    }
    int n = emily_device_count(EMILY_DEVICE_CUDA);
    if (n == 0) {
        int skipped = 0;
        for (const harness_case *c = g->gpu; c->name; c++) skipped++;
        printf("%s: SKIPPED %d GPU cases: no CUDA device usable here "
               "(no GPU, no driver, or a build without the CUDA engine)\n",
               g->suite, skipped);
        return rc;
    }
    if (g->print_count) printf("%s: %d device(s)\n", g->suite, n);
    char name[128];
    snprintf(name, sizeof name, "%s (GPU)", g->suite);
    return harness_finish(harness_run(name, g->gpu) || rc);
}

void harness_gpu_verdict(const char *what, emily_status sc, const char *cmsg, emily_status sg, const emily_tensor *c,
                         const emily_tensor *g, harness_same_fn same) {
    if (sc != sg) {
        fprintf(stderr, "  %s: cpu says %s (%s), cuda says %s (%s)\n", what, emily_status_name(sc), sc ? cmsg : "",
                emily_status_name(sg), sg ? emily_last_error() : "");
        harness_failures++;
    } else if (sc && strcmp(cmsg, emily_last_error()) != 0) {
        fprintf(stderr, "  %s: cpu says \"%s\", cuda \"%s\"\n", what, cmsg, emily_last_error());
        harness_failures++;
    } else if (!sc && !same(what, c, g)) {
        harness_failures++;
    }
}

/* The helpers below fail like a CHECK (counted, reported, the case goes
 * on) rather than aborting: under a memory limit (ulimit -v) an
 * allocation fails, and the run must still end with its report. */
static void helper_failed(const char *helper, const char *why) {
    fprintf(stderr, "  FAIL %s: %s\n", helper, why);
    harness_failures++;
}

emily_tensor *t_from(emily_dtype dt, int rank, const int64_t *shape, const void *data) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    emily_tensor *t = NULL;
    if (emily_from_binary(EMILY_CPU, dt, rank, shape, data, (size_t)n * emily_dtype_size(dt), &t)) {
        helper_failed("t_from", emily_last_error());
        return NULL;
    }
    return t;
}

/* Element i's real part (part 0) or imaginary part (part 1, 0 for a real
 * type) as a double. */
static double get_part(const emily_tensor *t, int64_t i, int part) {
    if (!t) return NAN;
    size_t es = emily_dtype_size(emily_tensor_dtype(t));
    size_t nb = emily_tensor_nbytes(t);
    if (i < 0 || (size_t)i >= nb / (es ? es : 1)) {
        helper_failed("t_get", "element index out of range");
        return NAN;
    }
    unsigned char *buf = malloc(nb ? nb : 1);
    if (!buf) {
        helper_failed("t_get", "out of host memory");
        return NAN;
    }
    if (emily_to_binary(t, buf, nb)) {
        helper_failed("t_get", emily_last_error());
        free(buf);
        return NAN;
    }
    unsigned char *p = buf + (size_t)i * es;
    double v;
    if (part == 1) {
        emily_dtype dt = emily_tensor_dtype(t);
        v = dt == EMILY_C64 ? *(float *)(p + 4) : dt == EMILY_C128 ? *(double *)(p + 8) : 0;
        free(buf);
        return v;
    }
    switch (emily_tensor_dtype(t)) {
    case EMILY_U8: v = *(uint8_t *)p; break;
    case EMILY_U16: v = *(uint16_t *)p; break;
    case EMILY_U32: v = *(uint32_t *)p; break;
    case EMILY_U64: v = (double)*(uint64_t *)p; break;
    case EMILY_S8: v = *(int8_t *)p; break;
    case EMILY_S16: v = *(int16_t *)p; break;
    case EMILY_S32: v = *(int32_t *)p; break;
    case EMILY_S64: v = (double)*(int64_t *)p; break;
    case EMILY_F16: v = emily_f16_to_f32(*(uint16_t *)p); break;
    case EMILY_BF16: v = emily_bf16_to_f32(*(uint16_t *)p); break;
    case EMILY_F32:
    case EMILY_C64: v = *(float *)p; break;
    default: v = *(double *)p; break;
    }
    free(buf);
    return v;
}

emily_tensor *t_on(const emily_tensor *t, emily_device dev) {
    emily_tensor *copy = NULL;
    if (emily_to_device(t, dev, &copy)) {
        helper_failed("t_on", emily_last_error());
        return NULL;
    }
    return copy;
}

double t_get(const emily_tensor *t, int64_t i) { return get_part(t, i, 0); }

double t_get_im(const emily_tensor *t, int64_t i) { return get_part(t, i, 1); }

bool t_shape_is(const emily_tensor *t, int rank, const int64_t *shape) {
    if (!t || emily_tensor_rank(t) != rank) return false;
    for (int i = 0; i < rank; i++)
        if (emily_tensor_shape(t)[i] != shape[i]) return false;
    return true;
}

emily_tensor *t_zero_view(emily_dtype dt, int rank, const int64_t *shape) {
    unsigned char zero[16] = {0};
    emily_tensor *one = NULL, *t = NULL;
    if (emily_from_binary(EMILY_CPU, dt, 0, NULL, zero, emily_dtype_size(dt), &one) ||
        emily_broadcast(one, rank, shape, NULL, &t))
        helper_failed("t_zero_view", emily_last_error());
    emily_tensor_release(one);
    return t;
}

emily_tensor *t_iota(emily_dtype dt, int rank, const int64_t *shape) {
    emily_tensor *t = NULL;
    if (emily_iota(EMILY_CPU, dt, rank, shape, -1, &t)) {
        helper_failed("t_iota", emily_last_error());
        return NULL;
    }
    return t;
}

double t_round(emily_dtype dt, double v) {
    switch (dt) {
    case EMILY_F16: return emily_sc_f16_to_f64(emily_sc_f64_to_f16(v));
    case EMILY_BF16: return emily_sc_bf16_to_f64(emily_sc_f64_to_bf16(v));
    case EMILY_F32: return (double)(float)v;
    default: return v;
    }
}

emily_tensor *t_as(emily_tensor *t, emily_dtype dt) {
    emily_tensor *r = NULL;
    if (t) CHECK_OK(emily_as_type(t, dt, &r));
    emily_tensor_release(t);
    return r;
}

emily_tensor *t_uniform(uint64_t *state, emily_dtype dt, int rank, const int64_t *shape, double lo, double width) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) {
        harness_failures++;
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) v[i] = lo + width * (double)(xorshift64(state) >> 11) / 9007199254740992.0;
    emily_tensor *t = t_as(t_from(EMILY_F64, rank, shape, v), dt);
    free(v);
    return t;
}

void t_release_all(int n, emily_tensor *const *ts) {
    for (int i = 0; i < n; i++) emily_tensor_release(ts[i]);
}

bool t_all_allocated(const char *file, int line, int n, void *const *bufs) {
    bool all = true;
    for (int i = 0; i < n; i++) all = all && bufs[i];
    if (all) return true;
    for (int i = 0; i < n; i++) free(bufs[i]);
    fprintf(stderr, "  FAIL %s:%d: out of memory for the case's buffers\n", file, line);
    harness_failures++;
    return false;
}

bool t_holds(const emily_tensor *t, emily_dtype dt, const void *want, size_t nbytes) {
    if (!t || emily_tensor_dtype(t) != dt || emily_tensor_nbytes(t) != nbytes) return false;
    unsigned char *got = malloc(nbytes + 1);
    bool same = got && !emily_to_binary(t, got, nbytes) && memcmp(got, want, nbytes) == 0;
    free(got);
    return same;
}

bool t_same_bytes(const emily_tensor *a, const emily_tensor *b) {
    if (!a || !b) return false;
    size_t nb = emily_tensor_nbytes(a);
    if (nb != emily_tensor_nbytes(b)) return false;
    unsigned char *x = malloc(nb + 1), *y = malloc(nb + 1);
    bool same = x && y && !emily_to_binary(a, x, nb) && !emily_to_binary(b, y, nb) && memcmp(x, y, nb) == 0;
    free(x);
    free(y);
    return same;
}

bool t_equals(const emily_tensor *t, int64_t n, const double *want) {
    if (!t || emily_tensor_size(t) != n) return false;
    for (int64_t i = 0; i < n; i++)
        if (t_get(t, i) != want[i]) return false;
    return true;
}

double complex *t_cvals(const emily_tensor *t) {
    if (!t) return NULL;
    emily_tensor *c = NULL;
    if (emily_as_type(t, EMILY_C128, &c)) return NULL;
    size_t n = (size_t)emily_tensor_size(c);
    double complex *v = malloc((n ? n : 1) * sizeof *v);
    if (v && emily_to_binary(c, v, n * sizeof *v)) {
        free(v);
        v = NULL;
    }
    emily_tensor_release(c);
    return v;
}

void c_matmul(const double complex *a, const double complex *b, double complex *c, int64_t m, int64_t k, int64_t n) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double complex s = 0;
            for (int64_t l = 0; l < k; l++) s += a[i * k + l] * b[l * n + j];
            c[i * n + j] = s;
        }
}

double c_max_diff(const double complex *a, const double complex *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        if (cabs(a[i] - b[i]) > m) m = cabs(a[i] - b[i]);
    return m;
}

double *harness_doubles(const emily_tensor *t) {
    int64_t n = t ? emily_tensor_size(t) : 0;
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    emily_tensor *d = NULL;
    if (!t || !v || emily_as_type(t, EMILY_F64, &d) || emily_to_binary(d, v, (size_t)n * sizeof *v)) {
        harness_failures++;
        free(v);
        v = NULL;
    }
    emily_tensor_release(d);
    return v;
}
