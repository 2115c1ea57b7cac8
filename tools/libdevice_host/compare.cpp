// The f64 transcendental ops of the CUDA engine as the GPU computes them,
// on the host, against glibc (the CPU engine and the reference), on
// test_cuda_libm's inputs (tests/unit/libm_cases.h):
//   device  Nx's formula over the device's own functions (libdevice):
//           the f64 kernels before cuda/unary_f64.cuh
//   emily   cuda/unary_f64.cuh, with the device's functions wherever it
//           falls back to them or seeds a refinement with them, as on
//           the GPU (test_cuda_libm's host build has glibc there instead)
// The device's functions are libdevice compiled for the host (run.sh).
#include <cstdio>
#include <cstdlib>

extern "C" {
#define EMI_NV_(f) double __nv_##f(double);
EMI_NV_(exp) EMI_NV_(log) EMI_NV_(sin) EMI_NV_(cos) EMI_NV_(tan) EMI_NV_(asin) EMI_NV_(acos)
EMI_NV_(atan) EMI_NV_(sinh) EMI_NV_(cosh) EMI_NV_(tanh) EMI_NV_(asinh) EMI_NV_(acosh) EMI_NV_(atanh)
EMI_NV_(erf) EMI_NV_(erfc)
#undef EMI_NV_
double __nv_pow(double, double);
double __nv_atan2(double, double);
}

// Declared before the headers: their unqualified calls of these (the
// fallbacks and the refinements' starting points) find the device's.
namespace emily_cr {
#define EMI_NV_WRAP_(f) inline double f(double x) { return __nv_##f(x); }
EMI_NV_WRAP_(exp) EMI_NV_WRAP_(log) EMI_NV_WRAP_(sin) EMI_NV_WRAP_(cos) EMI_NV_WRAP_(tan)
EMI_NV_WRAP_(asin) EMI_NV_WRAP_(acos) EMI_NV_WRAP_(atan)
#undef EMI_NV_WRAP_
inline double atan2(double y, double x) { return __nv_atan2(y, x); }
inline double pow(double x, double y) { return __nv_pow(x, y); }
} // namespace emily_cr

#include "cuda/unary_f64.cuh"
#include "libm_cases.h"

// Nx's formulas (core/scalar_unary.h) over the device's functions.
static double device_f64(emily_unary_op op, double x) {
    switch (op) {
    case EMILY_EXPM1: return EMI_NX_EXPM1(__nv_exp, x);
    case EMILY_LOG1P: return EMI_NX_LOG1P(__nv_log, x);
    case EMILY_SIGMOID: return EMI_NX_SIGMOID(__nv_exp, x);
    case EMILY_TANH: return isinf(x) ? NAN : __nv_tanh(x);
    case EMILY_CBRT: return x >= 0 ? __nv_pow(x, 1.0 / 3.0) : -__nv_pow(-x, 1.0 / 3.0);
#define EMI_NV_CASE_(ENUM, f)                                                                      \
    case EMILY_##ENUM: return __nv_##f(x);
        EMI_NV_CASE_(EXP, exp) EMI_NV_CASE_(LOG, log) EMI_NV_CASE_(SIN, sin) EMI_NV_CASE_(COS, cos)
        EMI_NV_CASE_(TAN, tan) EMI_NV_CASE_(ASIN, asin) EMI_NV_CASE_(ACOS, acos) EMI_NV_CASE_(ATAN, atan)
        EMI_NV_CASE_(SINH, sinh) EMI_NV_CASE_(COSH, cosh) EMI_NV_CASE_(ASINH, asinh)
        EMI_NV_CASE_(ACOSH, acosh) EMI_NV_CASE_(ATANH, atanh) EMI_NV_CASE_(ERF, erf) EMI_NV_CASE_(ERFC, erfc)
#undef EMI_NV_CASE_
    default: abort();
    }
}

static double emily_f64(emily_unary_op op, double x) {
    switch (op) {
#define EMI_CASE_(ENUM, name)                                                                      \
    case EMILY_##ENUM: return emily_cr::f64_##name(x);
        EMI_CUDA_F64_OPS(EMI_CASE_)
#undef EMI_CASE_
    default: abort();
    }
}

int main() {
    // the same draws as test_cuda_libm's random case (its log1p/expm1
    // case draws 4 * LIBM_NRANDOM numbers first)
    uint64_t rng = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < 2 * LIBM_NRANDOM; i++) {
        libm_draw(&rng, -60, 60, true);
        libm_draw(&rng, -60, 10, true);
    }
    static double xs[LIBM_NRANDOM];
    printf("%-8s %22s %22s %14s\n", "op", "device != glibc", "emily != glibc", "special values");
    for (int k = 0; k < LIBM_NOPS; k++) {
        const libm_op *o = &LIBM_OPS[k];
        for (int i = 0; i < LIBM_NRANDOM; i++) xs[i] = libm_draw(&rng, o->emin, o->emax, o->neg);
        int before = 0, after = 0, sb = 0, sa = 0;
        for (int i = 0; i < LIBM_NRANDOM; i++) {
            double want = o->cpu(xs[i]);
            before += !libm_same(device_f64(o->op, xs[i]), want);
            after += !libm_same(emily_f64(o->op, xs[i]), want);
        }
        for (int i = 0; i < LIBM_NSPECIAL; i++) {
            double want = o->cpu(LIBM_SPECIAL[i]);
            sb += !libm_same(device_f64(o->op, LIBM_SPECIAL[i]), want);
            sa += !libm_same(emily_f64(o->op, LIBM_SPECIAL[i]), want);
        }
        printf("%-8s %7d of %d %7d of %d %6d -> %d of %d\n", o->name, before, LIBM_NRANDOM, after,
               LIBM_NRANDOM, sb, sa, (int)LIBM_NSPECIAL);
    }
    return 0;
}
