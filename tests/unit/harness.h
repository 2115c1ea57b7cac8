/* A minimal unit-test harness: each test file defines its cases with
 * TEST(name) and lists them in a TESTS table; main runs them, checks that
 * no tensor or buffer leaked, and exits non-zero on any failure. */
#ifndef EMILY_TEST_HARNESS_H
#define EMILY_TEST_HARNESS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "emily/emily.h"

extern int harness_failures;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            harness_failures++;                                               \
        }                                                                     \
    } while (0)

/* The call must succeed. */
#define CHECK_OK(call)                                                                                         \
    do {                                                                                                       \
        emily_status st_ = (call);                                                                             \
        if (st_ != EMILY_OK) {                                                                                 \
            fprintf(stderr, "  FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, emily_status_name(st_), \
                    emily_last_error());                                                                       \
            harness_failures++;                                                                                \
        }                                                                                                      \
    } while (0)

/* The call must fail with `code` and a message containing `needle`. */
#define CHECK_ERR(call, code, needle)                                                                            \
    do {                                                                                                         \
        emily_status st_ = (call);                                                                               \
        if (st_ != (code) || !strstr(emily_last_error(), (needle))) {                                            \
            fprintf(stderr, "  FAIL %s:%d: %s -> %s \"%s\", wanted %s with \"%s\"\n", __FILE__, __LINE__, #call, \
                    emily_status_name(st_), st_ ? emily_last_error() : "", emily_status_name(code), (needle));   \
            harness_failures++;                                                                                  \
        }                                                                                                        \
    } while (0)

typedef struct harness_case {
    const char *name;
    void (*fn)(void);
} harness_case;

/* Command line of every test binary (RUN_TESTS reads it):
 *   --only NAME   run only the cases whose name contains NAME (a plain,
 *                 case-sensitive substring: `--only exp` runs exp_* and
 *                 *_expm1_* alike); repeat it to run the cases matching any
 *                 of the names. A NAME with a *, ? or [ is a shell pattern
 *                 (fnmatch) that must match the whole case name instead.
 *   --list        print the names of the cases (those --only selects, if
 *                 given), one a line, and run nothing.
 * A binary whose --only matches no case at all fails (harness_finish), so
 * that a misspelt name does not pass silently (test_cuda without a GPU
 * excepted: the name may be one of its skipped GPU cases). Returns false
 * (after a usage message) on an argument it does not know. */
bool harness_args(int argc, char **argv);
/* Whether this process runs the next work item of a case that divides its
 * work: with --part K/N, items i (counted over the process in the order
 * they are asked for) with i mod N = K; without it, every item. Lets a
 * slow tool such as compute-sanitizer take one case in N processes. */
bool harness_mine(void);

/* Runs the cases that the command line selects (all by default); returns
 * the exit code for this suite. */
int harness_run(const char *suite, const harness_case *cases);
/* The number of cases in a {NULL, NULL}-terminated table (for SKIPPED lines). */
int harness_count_cases(const harness_case *cases);

/* Every element of t as a double (malloc'd; NULL for a NULL t or on
 * failure, counted). One conversion and one copy: t_get per element
 * copies the whole tensor each time. */
double *harness_doubles(const emily_tensor *t);

/* The process's exit code: rc, or 1 if --only was given and no case of
 * any suite run matched it. */
int harness_finish(int rc);

/* The GPU half of the main() of a test binary with GPU cases
 * (test_cuda*.c, test_signed_zero.c), after its cases without a GPU
 * returned rc. EMILY_TEST_CUDA_ON_CPU=1 points *device at the CPU, sets
 * *on_cpu_flag (where not NULL) and runs on_cpu there: a self-check of the
 * test code, not of the CUDA engine. With no CUDA device usable it prints
 * one SKIPPED line and returns rc, not harness_finish(rc): --only may name
 * a GPU case skipped here. Otherwise it runs gpu as "<suite> (GPU)". */
typedef struct harness_gpu_cases {
    const char *suite;          /* the prefix of the lines it prints */
    const harness_case *gpu;    /* the GPU cases */
    const harness_case *on_cpu; /* those run under EMILY_TEST_CUDA_ON_CPU=1 */
    const char *on_cpu_suite;   /* that run's name */
    emily_device *device;       /* the device the GPU cases use */
    bool *on_cpu_flag;          /* set under EMILY_TEST_CUDA_ON_CPU=1, or NULL */
    bool print_count;           /* print the number of devices before the GPU run */
} harness_gpu_cases;
int harness_gpu_finish(int rc, const harness_gpu_cases *g);

/* A GPU case's verdict on one call run on the CPU (status sc, message
 * cmsg) and then on the GPU (status sg, its message still
 * emily_last_error()): the same status, the same message when it is an
 * error and, on success, results c and g that `same` accepts (`same`
 * says what differs). Otherwise it says why and counts a failure. */
typedef bool (*harness_same_fn)(const char *what, const emily_tensor *c, const emily_tensor *g);
void harness_gpu_verdict(const char *what, emily_status sc, const char *cmsg, emily_status sg, const emily_tensor *c,
                         const emily_tensor *g, harness_same_fn same);

#define RUN_TESTS(suite, ...)                                             \
    int main(int argc, char **argv) {                                     \
        static const harness_case cases_[] = {__VA_ARGS__, {NULL, NULL}}; \
        if (!harness_args(argc, argv)) return 2;                          \
        return harness_finish(harness_run(suite, cases_));                \
    }
#define CASE(fn) \
    { #fn, fn }

/* Helpers: tensors from C arrays on the CPU, contents back as doubles.
 * They never abort: a failure (out of memory under a limit, too) counts
 * as a failed check, and t_from returns NULL, t_get NaN. */
emily_tensor *t_from(emily_dtype dt, int rank, const int64_t *shape, const void *data);
/* A copy of t on dev (NULL, counted as a failure, when that fails). */
emily_tensor *t_on(const emily_tensor *t, emily_device dev);
/* Reads element i (row-major) of t converted to double (real part). */
double t_get(const emily_tensor *t, int64_t i);
/* Its imaginary part (0 for a real type). */
double t_get_im(const emily_tensor *t, int64_t i);
bool t_shape_is(const emily_tensor *t, int rank, const int64_t *shape);
/* A zero of type dt broadcast to shape: a view of one element, so an
 * operand of any size (2^40 elements) that holds no memory (NULL,
 * counted as a failure, when that fails). */
emily_tensor *t_zero_view(emily_dtype dt, int rank, const int64_t *shape);
/* 0, 1, 2, ... in row-major order, of type dt (emily_iota on the CPU;
 * NULL, counted as a failure, when it fails). */
emily_tensor *t_iota(emily_dtype dt, int rank, const int64_t *shape);
/* v rounded to the float type dt by Nx's rules (bf16: through f32, then
 * truncated); v itself for f64 and any other type. */
double t_round(emily_dtype dt, double v);
/* t converted to dt (emily_as_type; a failure is a failed check), t
 * released; NULL for a NULL t. */
emily_tensor *t_as(emily_tensor *t, emily_dtype dt);
/* A CPU tensor of dtype dt whose elements are lo + width * u, u uniform
 * in [0, 1) in steps of 2^-53 drawn from *state (xorshift64), made in f64
 * and converted to dt by Nx's rules (NULL, counted, on failure). */
emily_tensor *t_uniform(uint64_t *state, emily_dtype dt, int rank, const int64_t *shape, double lo, double width);
/* Releases the n tensors of ts (NULL ones too); RELEASE(a, b, ...) the
 * tensors listed. */
void t_release_all(int n, emily_tensor *const *ts);
#define RELEASE(...)                                                                       \
    t_release_all((int)(sizeof((emily_tensor *[]){__VA_ARGS__}) / sizeof(emily_tensor *)), \
                  (emily_tensor *[]){__VA_ARGS__})
/* A test's host buffers, all or none: true when none of the n is NULL;
 * otherwise frees them all, counts a failure at file:line and returns
 * false. `if (!ALLOCATED(x, y, got)) return;` at the top of a case. */
bool t_all_allocated(const char *file, int line, int n, void *const *bufs);
#define ALLOCATED(...)                                                                           \
    t_all_allocated(__FILE__, __LINE__, (int)(sizeof((void *[]){__VA_ARGS__}) / sizeof(void *)), \
                    (void *[]){__VA_ARGS__})
/* t (NULL: false) is of type dt and holds exactly the nbytes bytes want. */
bool t_holds(const emily_tensor *t, emily_dtype dt, const void *want, size_t nbytes);
/* a and b (NULL: false) hold the same bytes (the same number of them). */
bool t_same_bytes(const emily_tensor *a, const emily_tensor *b);
/* t (not NULL) holds n elements, each equal to want's as a double. */
bool t_equals(const emily_tensor *t, int64_t n, const double *want);

/* A rank-1 tensor from a C array literal: VEC(EMILY_S32, int32_t, 1, 2);
 * CVEC takes (re, im) pairs; SCALAR a rank-0 tensor of one value. */
#define VEC(dt, ctype, ...) \
    t_from(dt, 1, (int64_t[]){sizeof((ctype[]){__VA_ARGS__}) / sizeof(ctype)}, (ctype[]){__VA_ARGS__})
#define CVEC(dt, ctype, ...) \
    t_from(dt, 1, (int64_t[]){sizeof((ctype[]){__VA_ARGS__}) / sizeof(ctype) / 2}, (ctype[]){__VA_ARGS__})
#define SCALAR(dt, ctype, v) t_from(dt, 0, NULL, (ctype[]){v})

/* Complex helpers (double _Complex, so that this header needs no
 * <complex.h> and its I). t_cvals: every element of t as a c128 value,
 * malloc'd (NULL on failure, or for a NULL t). c_matmul: C = A (m x k)
 * . B (k x n), row-major. c_max_diff: max |a[i] - b[i]|. */
double _Complex *t_cvals(const emily_tensor *t);
void c_matmul(const double _Complex *a, const double _Complex *b, double _Complex *c, int64_t m, int64_t k, int64_t n);
double c_max_diff(const double _Complex *a, const double _Complex *b, int64_t n);

/* One step of Marsaglia's xorshift64 (shifts 13, 7, 17): the
 * deterministic pseudo-random bits the tests draw from, each file from
 * its own state. */
static inline uint64_t xorshift64(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Arguments for emily_dispatch and engine graphs. */
static inline emily_value v_int(int64_t i) { return (emily_value){.kind = EMILY_V_INT, .i = i}; }
static inline emily_value v_float(double f) { return (emily_value){.kind = EMILY_V_FLOAT, .f = f}; }
static inline emily_value v_bool(bool b) { return (emily_value){.kind = EMILY_V_BOOL, .b = b}; }
static inline emily_value v_atom(const char *name) { return (emily_value){.kind = EMILY_V_ATOM, .str = name}; }
static inline emily_value v_tensor(emily_tensor *t) { return (emily_value){.kind = EMILY_V_TENSOR, .tensor = t}; }
static inline emily_value v_list(emily_value *items, size_t n) {
    return (emily_value){.kind = EMILY_V_LIST, .items = items, .n = n};
}
/* A keyword list: keys[i] => items[i]. */
static inline emily_value v_opts(const char **keys, emily_value *items, size_t n) {
    return (emily_value){.kind = EMILY_V_OPTS, .keys = keys, .items = items, .n = n};
}
static inline emily_value v_tmpl(emily_dtype dt, int rank, const int64_t *shape) {
    return (emily_value){.kind = EMILY_V_TEMPLATE, .dtype = dt, .rank = rank, .shape = shape};
}
/* Runs dispatcher callback name on the CPU, which must succeed; the
 * number of results it gave (released). */
static inline size_t dispatch_ok(const char *name, const emily_value *out, const emily_value *args, size_t n) {
    emily_dispatch_result r = {0};
    CHECK_OK(emily_dispatch(name, EMILY_CPU, out, args, n, EMILY_DISPATCH_RUN, &r));
    size_t got = r.n;
    emily_dispatch_result_release(&r);
    return got;
}

/* Runs dispatcher callback name on the CPU in mode (EMILY_DISPATCH_RUN or
 * _INFER) with the nargs arguments args and the output template *out: it must
 * succeed with one result that holds the same bytes as want. */
#define CHECK_DISPATCH_SAME(name, mode, out, args, nargs, want)                 \
    do {                                                                        \
        emily_dispatch_result r_ = {0};                                         \
        CHECK_OK(emily_dispatch(name, EMILY_CPU, out, args, nargs, mode, &r_)); \
        CHECK(r_.n == 1 && t_same_bytes(r_.tensors[0], want));                  \
        emily_dispatch_result_release(&r_);                                     \
    } while (0)

/* Dispatcher callback name on the CPU in RUN mode must fail with Nx's
 * template error (EMILY_ERR_INTERNAL, "output 0 is ... but Nx expects
 * ...": `message`) and leave no result. The tests of the callbacks that
 * check the template before the work call it with operands or options
 * whose result would be huge (2^40 elements): unchecked, the call fails
 * allocating it ("out of memory", "too many elements") or runs for hours. */
#define CHECK_TEMPLATE_FIRST(name, out, args, nargs, message)                                                     \
    do {                                                                                                          \
        emily_dispatch_result r_ = {0};                                                                           \
        CHECK_ERR(emily_dispatch(name, EMILY_CPU, out, args, nargs, EMILY_DISPATCH_RUN, &r_), EMILY_ERR_INTERNAL, \
                  message);                                                                                       \
        CHECK(r_.n == 0);                                                                                         \
        emily_dispatch_result_release(&r_);                                                                       \
    } while (0)

/* A reference to graph value id (emily/graph.h). */
static inline emily_value v_ref(int32_t id) { return (emily_value){.kind = EMILY_V_REF, .i = id}; }

/* Adds the call name(args...) with the output template out to graph g;
 * its value's id (-1, a failed check, when the graph refuses it). */
static inline int32_t graph_call(emily_graph *g, const char *name, const emily_value *out, size_t n,
                                 const emily_value *args) {
    int32_t id = -1;
    CHECK_OK(emily_graph_add_call(g, name, out, args, n, &id));
    return id;
}
#define GRAPH_CALL(g, name, out, ...) \
    graph_call(g, name, out, sizeof((emily_value[]){__VA_ARGS__}) / sizeof(emily_value), (emily_value[]){__VA_ARGS__})

#endif
