/* f16 and bf16 transcendental ops on CUDA (cuda/unary_fns.cuh): the
 * kernels first take the device's f32 function and keep its result when
 * the rounding to 16 bits is certain, running the f64 rule otherwise.
 * Every one of the 65536 inputs of each type, for each op with that fast
 * path, must give the CPU's bits (the f64 rule), NaN for NaN. GPU cases
 * only: without a CUDA device the binary says SKIPPED. */
#include "cuda_compare.h"

static const emily_unary_op fast_ops[] = {EMILY_EXP,  EMILY_LOG, EMILY_SIN,  EMILY_COS,
                                          EMILY_TANH, EMILY_ERF, EMILY_SQRT, EMILY_RSQRT};

static emily_status unary_of(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    return emily_unary(*(const emily_unary_op *)arg, in[0], out);
}

/* Every 16-bit pattern, as a tensor of dt. */
static emily_tensor *every_value(emily_dtype dt) {
    static uint16_t bits[65536];
    for (int i = 0; i < 65536; i++) bits[i] = (uint16_t)i;
    return t_from(dt, 1, (const int64_t[]){65536}, bits);
}

TEST(gpu_half_math_every_input_matches_the_f64_rule) {
    const emily_dtype types[2] = {EMILY_BF16, EMILY_F16};
    for (int t = 0; t < 2; t++) {
        emily_tensor *x = every_value(types[t]);
        for (size_t k = 0; k < sizeof fast_ops / sizeof fast_ops[0]; k++) {
            char what[64];
            snprintf(what, sizeof what, "%s of every %s", emily_unary_op_name(fast_ops[k]), emily_dtype_name(types[t]));
            tc_compare(what, unary_of, &fast_ops[k], 1, &x);
        }
        emily_tensor_release(x);
    }
}

TC_MAIN("cuda_half_math", CASE(gpu_half_math_every_input_matches_the_f64_rule))
