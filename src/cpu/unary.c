/* CPU kernels: every unary op, with Nx's per-element semantics from
 * core/scalar_unary.h. A run function per (op, input dtype, output
 * dtype) of core/unary_kernels.h is generated from the op list and picked
 * by pick_run; contiguous inputs of the hot ops go to SIMD code
 * (unary_simd.h) when the CPU has it.
 *
 * Floating ops on f16/bf16/f32 compute in double and round once, like
 * the reference; integer inputs arrive widened to f64 with an f32
 * output (see src/ops/unary.c). */
#include "core/unary_kernels.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/elementwise_map.h"
#include "cpu/unary_simd.h"

#define DEF_KERNEL(NAME, ST, DT, SRC, DST, EXPR) EMILY_RUN_FN(NAME, ST, DT, EXPR)
#define DEF_OP(ENUM, name, rule) EMI_UNARY_KERNELS(rule)(DEF_KERNEL, ENUM, name)
EMILY_UNARY_OPS(DEF_OP)

static emily_run_fn pick_run(emily_unary_op op, emily_dtype sd, emily_dtype dd) {
// clang-format off
#define PICK_KERNEL(NAME, ST, DT, SRC, DST, EXPR) \
    if (sd == EMILY_##SRC && dd == EMILY_##DST) return NAME;
#define PICK_OP(ENUM, name, rule) \
    case EMILY_##ENUM: EMI_UNARY_KERNELS(rule)(PICK_KERNEL, ENUM, name) break;
    // clang-format on
    switch (op) {
        EMILY_UNARY_OPS(PICK_OP)
    default: break;
    }
    return NULL;
}

emily_status emi_cpu_unary(emily_unary_op op, emily_tensor *dst, const emily_tensor *src) {
    if (dst->size == 0) return EMILY_OK;
    if (emily_tensor_is_contiguous(src) && emily_tensor_is_contiguous(dst)) {
        emily_vec_fn vf = emi_unary_simd(op, src->dtype, dst->dtype);
        if (vf) {
            emi_cpu_map_contiguous(dst, src, vf);
            return EMILY_OK;
        }
    }
    emily_run_fn fn = pick_run(op, src->dtype, dst->dtype);
    if (!fn)
        return emily_error(EMILY_ERR_TYPE, "%s: no cpu kernel from %s to %s", emily_unary_op_name(op),
                           emily_dtype_name(src->dtype), emily_dtype_name(dst->dtype));
    return emi_cpu_map(dst, src, fn, NULL);
}
