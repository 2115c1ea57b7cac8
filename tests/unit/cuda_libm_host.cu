// The CUDA engine's f64 math (cuda/unary_f64.cuh and what it builds on)
// compiled as host code, for tests/unit/test_cuda_libm.c (C). These are
// the very functions the f64 kernels run: host+device, no FMA contraction
// on either side, so the host's bits are the device's, except where a
// function hands an argument it does not handle to the platform's own
// function (glibc here, the device's libdevice on the GPU).
#include "cuda/unary_f64.cuh"
#include "emily/ops.h"

extern "C" {

int emi_test_cuda_f64(emily_unary_op op, double x, double *y);
double emi_test_cr_exp(double x);
double emi_test_cr_log(double x);

// The f64 form of op at x into *y; 0 when op has none (the shared rule's).
int emi_test_cuda_f64(emily_unary_op op, double x, double *y) {
    switch (op) {
// clang-format off
#define EMI_TEST_CASE_(ENUM, name)                                                             \
    case EMILY_##ENUM: *y = emily_cr::f64_##name(x); return 1;
        // clang-format on
        EMI_CUDA_F64_OPS(EMI_TEST_CASE_)
#undef EMI_TEST_CASE_
    default: return 0;
    }
}

double emi_test_cr_exp(double x) { return emily_cr::cr_exp(x); }
double emi_test_cr_log(double x) { return emily_cr::cr_log(x); }

} // extern "C"
