/* GPU faults (issue 20): a failed kernel launch, an out-of-memory on the
 * device and a failed cuBLAS or cuSOLVER call each become an Emily error
 * naming the op, leave no memory behind, and the next op on the same
 * device and stream gives the same bits as before the fault. A sticky
 * fault (a kernel's illegal address, which ends the CUDA context) runs in
 * a child process: every later wait and download must fail with a device
 * error, never hand back a result.
 *
 * The faults are real ones made to happen on purpose (src/cuda/fault.h):
 * a launch with an impossible block size, a cudaMalloc of 2^50 bytes, a
 * write through a wild pointer; a library failure is the status the call
 * reports. GPU cases only: without a CUDA device the binary says SKIPPED.
 * compute-sanitizer is not run over this binary (its faults are wanted). */
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"
#ifdef EMILY_WITH_CUDA
#include "cuda/fault.h"

extern char **environ;

static const emily_device CUDA0 = {EMILY_DEVICE_CUDA, 0};

static emily_tensor *g_iota(emily_dtype dt, int rank, const int64_t *shape) {
    emily_tensor *c = t_iota(dt, rank, shape);
    emily_tensor *g = c ? t_on(c, CUDA0) : NULL;
    emily_tensor_release(c);
    return g;
}

static size_t active_bytes(void) {
    emily_memory_stats st = {0};
    CHECK_OK(emily_synchronize(CUDA0));
    CHECK_OK(emily_memory_stats_get(CUDA0, &st));
    return st.active;
}

/* The fault armed by the case must have happened. */
static void check_fired(void) {
    CHECK(!emi_cuda_fault_pending());
    emi_cuda_fault_arm(EMI_CUDA_FAULT_NONE, 0);
}

static emily_status add_op(const emily_tensor *a, const emily_tensor *b, emily_tensor **out) {
    return emily_binary(EMILY_ADD, a, b, EMILY_DTYPE_AUTO, out);
}

static emily_status dot_op(const emily_tensor *a, const emily_tensor *b, emily_tensor **out) {
    return emily_matmul(a, b, out);
}

static emily_status qr_op(const emily_tensor *a, const emily_tensor *b, emily_tensor **out) {
    (void)b;
    emily_tensor *q = NULL, *r = NULL;
    emily_status s = emily_qr(a, EMILY_QR_REDUCED, 1e-10, &q, &r);
    if (!s) s = emily_binary(EMILY_ADD, q, r, EMILY_DTYPE_AUTO, out);
    RELEASE(q, r);
    return s;
}

typedef emily_status (*binary_op)(const emily_tensor *, const emily_tensor *, emily_tensor **);

/* Runs op once as a reference, then with `kind` armed (skip sites of it
 * pass first): the status `want` with `needle` in its message and no
 * output; then again, which must give the reference's bits; and the
 * device's active memory is what it was before the faulted call. */
static void fault_then_recover(const char *what, binary_op op, const emily_tensor *a, const emily_tensor *b,
                               emi_cuda_fault kind, int skip, emily_status want, const char *needle) {
    emily_tensor *ref = NULL, *bad = NULL, *again = NULL;
    CHECK_OK(op(a, b, &ref));
    if (kind == EMI_CUDA_FAULT_ALLOC) CHECK_OK(emily_memory_release_cache(CUDA0));
    size_t before = active_bytes();
    emi_cuda_fault_arm(kind, skip);
    CHECK_ERR(op(a, b, &bad), want, needle);
    check_fired();
    CHECK(bad == NULL);
    CHECK(active_bytes() == before);
    CHECK_OK(op(a, b, &again));
    if (!t_same_bytes(ref, again)) {
        fprintf(stderr, "  %s: the result after the fault differs from the one before\n", what);
        harness_failures++;
    }
    RELEASE(ref, bad, again);
}

/* The fault on an add over `shape`, then on qr of a 64 x 64 matrix, an op
 * that launches and allocates several times, at its site `qr_skip`. */
static void fault_add_and_qr(int rank, const int64_t *shape, emi_cuda_fault kind, int qr_skip, emily_status want,
                             const char *add_needle, const char *qr_needle) {
    emily_tensor *a = g_iota(EMILY_F32, rank, shape), *b = g_iota(EMILY_F32, rank, shape);
    fault_then_recover("add", add_op, a, b, kind, 0, want, add_needle);
    int64_t sq[2] = {64, 64};
    emily_tensor *m = g_iota(EMILY_F32, 2, sq);
    fault_then_recover("qr", qr_op, m, NULL, kind, qr_skip, want, qr_needle);
    RELEASE(a, b, m);
}

TEST(gpu_failed_launch_names_the_op) {
    int64_t shape[2] = {300, 257};
    fault_add_and_qr(2, shape, EMI_CUDA_FAULT_LAUNCH, 1, EMILY_ERR_DEVICE, "cuda: add: invalid argument",
                     "cuda: qr: invalid argument");
}

TEST(gpu_out_of_memory_names_the_op) {
    int64_t shape[1] = {123457};
    /* qr at its third allocation: a work area after its outputs */
    fault_add_and_qr(1, shape, EMI_CUDA_FAULT_ALLOC, 2, EMILY_ERR_MEMORY, "out of memory", "out of memory");
    /* through the dispatcher, the callback's name leads the message */
    emily_tensor *a = g_iota(EMILY_F32, 1, shape), *b = g_iota(EMILY_F32, 1, shape);
    CHECK_OK(emily_memory_release_cache(CUDA0));
    emi_cuda_fault_arm(EMI_CUDA_FAULT_ALLOC, 0);
    emily_value args[2] = {v_tensor(a), v_tensor(b)}, tmpl = v_tmpl(EMILY_F32, 1, shape);
    emily_dispatch_result r = {0};
    CHECK_ERR(emily_dispatch("add", CUDA0, &tmpl, args, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_MEMORY,
              "add: cuda: alloc: out of memory");
    check_fired();
    CHECK(r.n == 0);
    CHECK_OK(emily_dispatch("add", CUDA0, &tmpl, args, 2, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 1);
    emily_dispatch_result_release(&r);
    RELEASE(a, b);
}

TEST(gpu_failed_library_call_names_the_op) {
    int64_t sq[2] = {96, 80}, sq2[2] = {80, 72};
    emily_tensor *a = g_iota(EMILY_F32, 2, sq), *b = g_iota(EMILY_F32, 2, sq2);
    fault_then_recover("dot", dot_op, a, b, EMI_CUDA_FAULT_LIBRARY, 0, EMILY_ERR_DEVICE, "cuda: dot: cuBLAS failed");
    int64_t sq3[2] = {64, 64};
    emily_tensor *m = g_iota(EMILY_F32, 2, sq3);
    fault_then_recover("qr", qr_op, m, NULL, EMI_CUDA_FAULT_LIBRARY, 0, EMILY_ERR_DEVICE, "cuda: qr: cuSOLVER");
    RELEASE(a, b, m);
}

/* The child's part of gpu_sticky_fault_in_a_child: 0 when every
 * expectation held. */
static int sticky_child(void) {
    int64_t shape[1] = {4096};
    emily_tensor *a = g_iota(EMILY_F32, 1, shape), *b = g_iota(EMILY_F32, 1, shape), *c = NULL, *d = NULL;
    float host[4096];
    int bad = 0;
    if (!a || !b || emily_binary(EMILY_ADD, a, b, EMILY_DTYPE_AUTO, &c) || emily_to_binary(c, host, sizeof host) ||
        host[7] != 14.0f) {
        fprintf(stderr, "  child: the add before the fault failed: %s\n", emily_last_error());
        bad = 1;
    }
    emily_tensor_release(c);
    c = NULL;
    emi_cuda_fault_arm(EMI_CUDA_FAULT_ILLEGAL_ADDRESS, 0);
    emily_status s = emily_binary(EMILY_ADD, a, b, EMILY_DTYPE_AUTO,
                                  &c); /* the fault may surface here or at the wait */
    if (emi_cuda_fault_pending()) {
        fprintf(stderr, "  child: the illegal address was not injected\n");
        bad = 1;
    }
    emily_status w = emily_synchronize(CUDA0);
    if (w != EMILY_ERR_DEVICE || !strstr(emily_last_error(), "illegal memory access")) {
        fprintf(stderr, "  child: add said %s, the wait %s (%s); wanted a device error\n", emily_status_name(s),
                emily_status_name(w), emily_last_error());
        bad = 1;
    }
    /* the context is gone: later work fails, never returns numbers */
    if (!emily_binary(EMILY_ADD, a, b, EMILY_DTYPE_AUTO, &d) && !emily_to_binary(d, host, sizeof host)) {
        fprintf(stderr, "  child: an add after the fault returned a result\n");
        bad = 1;
    }
    if (c && !emily_to_binary(c, host, sizeof host)) {
        fprintf(stderr, "  child: the faulted add's result was downloaded\n");
        bad = 1;
    }
    RELEASE(a, b, c, d);
    return bad;
}

TEST(gpu_sticky_fault_in_a_child) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    if (n <= 0) return;
    self[n] = 0;
    char *argv[] = {self, NULL};
    CHECK(setenv("EMILY_TEST_FAULT_CHILD", "sticky", 1) == 0);
    pid_t pid;
    int rc = posix_spawn(&pid, self, NULL, NULL, argv, environ);
    unsetenv("EMILY_TEST_FAULT_CHILD");
    CHECK(rc == 0);
    if (rc) return;
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "  the child %s %d\n", WIFEXITED(status) ? "exited with" : "died of signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        harness_failures++;
    }
}

int main(int argc, char **argv) {
    const char *child = getenv("EMILY_TEST_FAULT_CHILD");
    if (child && strcmp(child, "sticky") == 0) return sticky_child();
    static const harness_case cases[] = {CASE(gpu_failed_launch_names_the_op),
                                         CASE(gpu_out_of_memory_names_the_op),
                                         CASE(gpu_failed_library_call_names_the_op),
                                         CASE(gpu_sticky_fault_in_a_child),
                                         {NULL, NULL}};
    static const harness_case none[] = {{NULL, NULL}};
    static emily_device device = {EMILY_DEVICE_CUDA, 0};
    if (!harness_args(argc, argv)) return 2;
    if (getenv("EMILY_TEST_CUDA_ON_CPU")) { /* the faults are the CUDA engine's: nothing to self-check */
        printf("cuda_fault: SKIPPED %d GPU cases under EMILY_TEST_CUDA_ON_CPU\n", harness_count_cases(cases));
        return 0;
    }
    static const harness_gpu_cases g = {"cuda_fault", cases, none, "cuda_fault", &device, NULL, false};
    return harness_gpu_finish(0, &g);
}
#else
int main(void) {
    printf("cuda_fault: SKIPPED 4 GPU cases: built without the CUDA engine\n");
    return 0;
}
#endif
