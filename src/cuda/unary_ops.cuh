// The unary kernels on CUDA: map1 over the element functions of
// cuda/unary_fns.cuh, and the choice of a kernel by (op, input dtype,
// output dtype), the same choice as src/cpu/unary.c's.
//
// The transcendental ops (rules FLOATING and FLOATING_REAL) are
// instantiated in unary_math.cu, the others in unary.cu: the first are
// the slow ones to compile, so the two files build in parallel.
#ifndef EMILY_CUDA_UNARY_OPS_CUH
#define EMILY_CUDA_UNARY_OPS_CUH

#include "cuda/common.cuh"
#include "cuda/unary_fns.cuh"

namespace emily_cuda {

typedef emily_status (*unary_run)(const emily_cuda_ctx &, emily_tensor *, const emily_tensor *);

// The transcendental ops' kernels (unary_math.cu).
unary_run unary_pick_math(emily_unary_op op, emily_dtype sd, emily_dtype dd);

namespace {

constexpr bool is_math_rule(emi_unary_rule r) {
    return r == EMI_UNARY_RULE_FLOATING || r == EMI_UNARY_RULE_FLOATING_REAL;
}

// The kernel of op from sd to dd, or NULL; only the ops whose rule
// is_math_rule() gives MATH (the others are NULL here), so that each
// file instantiates its own half.
template <bool MATH> unary_run pick_unary(emily_unary_op op, emily_dtype sd, emily_dtype dd) {
// clang-format off
#define EMI_CUDA_PICK_KERNEL_(NAME, ST, DT, SRC, DST, EXPR)                                \
    if (sd == EMILY_##SRC && dd == EMILY_##DST) return map1<unary_kernels::NAME>;
#define EMI_CUDA_PICK_OP_(ENUM, name, rule)                                                \
    case EMILY_##ENUM:                                                                     \
        if constexpr (is_math_rule(EMI_UNARY_RULE_##rule) == MATH) {                       \
            EMI_UNARY_KERNELS(rule)(EMI_CUDA_PICK_KERNEL_, ENUM, name)                     \
        }                                                                                  \
        break;
    // clang-format on
    switch (op) {
        EMILY_UNARY_OPS(EMI_CUDA_PICK_OP_)
    default: break;
    }
#undef EMI_CUDA_PICK_KERNEL_
#undef EMI_CUDA_PICK_OP_
    return NULL;
}

} // namespace
} // namespace emily_cuda

#endif
