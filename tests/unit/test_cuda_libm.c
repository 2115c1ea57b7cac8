/* The CUDA engine's f64 transcendental ops against the CPU engine's, on
 * the host: the f64 forms of cuda/unary_f64.cuh (compiled as host code in
 * cuda_libm_host.cu, the same functions the f64 kernels run) against the
 * scalar rules of core/scalar_unary.h, which call the host's libm (glibc)
 * as the reference does through Erlang. Needs no GPU.
 *
 * Every op is tried on special values (zeros of both signs, infinities,
 * NaN, subnormals, the ends of each formula's intervals) and on Nx's
 * doctest inputs, which must give glibc's bits exactly, and on 100000
 * random doubles spread over the exponents of its domain. The functions
 * computed correctly rounded in double-double (exp, log, sin, cos, tan,
 * asin, acos, atan, pow for cbrt) differ from glibc only where glibc's
 * own function is not correctly rounded; sinh and cosh, composed from exp
 * and expm1, also where glibc's composition rounds otherwise: each op's
 * count of such inputs must stay within its bound (libm_cases.h; docs/semantics.md, "f64 math on CUDA", has the
 * counts and the evidence). EMILY_TEST_LIBM_DUMP=1 prints every differing
 * input, which tools/libm_residuals.py checks with mpmath.
 */
#include <gnu/libc-version.h>
#include <stdlib.h>
#include "harness.h"
#include "libm_cases.h"

int emi_test_cuda_f64(emily_unary_op op, double x, double *y);

static uint64_t rng = 0x2545f4914f6cdd1dull;

static bool dump(void) {
    const char *e = getenv("EMILY_TEST_LIBM_DUMP");
    return e && *e && strcmp(e, "0") != 0;
}

/* The count of inputs xs[0..n) where op's f64 form differs from the CPU's. */
static int differences(const libm_op *o, const double *xs, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double y = 0;
        if (!emi_test_cuda_f64(o->op, xs[i], &y)) return -1;
        double want = o->cpu(xs[i]);
        if (!libm_same(y, want)) {
            bad++;
            if (dump()) printf("  %s(%a): cuda %a, glibc %a\n", o->name, xs[i], y, want);
        }
    }
    return bad;
}

TEST(libm_doctest_and_special_values) {
    int n = (int)(LIBM_NSPECIAL);
    for (int k = 0; k < LIBM_NOPS; k++) {
        int bad = differences(&LIBM_OPS[k], LIBM_SPECIAL, n);
        if (bad != 0) fprintf(stderr, "  %s: %d special values differ from glibc\n", LIBM_OPS[k].name, bad);
        CHECK(bad >= 0);
        if (LIBM_OPS[k].special) CHECK(bad == 0);
    }
    for (int i = 0; i < LIBM_NDOCTEST; i++) {
        double y = 0;
        CHECK(emi_test_cuda_f64(LIBM_DOCTEST[i].op, LIBM_DOCTEST[i].x, &y));
        for (int k = 0; k < LIBM_NOPS; k++)
            if (LIBM_OPS[k].op == LIBM_DOCTEST[i].op) CHECK(libm_same(y, LIBM_OPS[k].cpu(LIBM_DOCTEST[i].x)));
    }
}

/* Each op on LIBM_NRANDOM random inputs of its domain. */
TEST(libm_random_inputs) {
    static double xs[LIBM_NRANDOM];
    for (int k = 0; k < LIBM_NOPS; k++) {
        const libm_op *o = &LIBM_OPS[k];
        for (int i = 0; i < LIBM_NRANDOM; i++) xs[i] = libm_draw(&rng, o->emin, o->emax, o->neg);
        int bad = differences(o, xs, LIBM_NRANDOM);
        printf("  %-8s %4d of %d differ from glibc %s (bound %d)\n", o->name, bad, LIBM_NRANDOM, gnu_get_libc_version(),
               o->bound);
        CHECK(bad >= 0 && bad <= o->bound);
    }
}

RUN_TESTS("cuda libm", CASE(libm_doctest_and_special_values), CASE(libm_random_inputs))
