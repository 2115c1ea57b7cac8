/* emily_dot_fp8 and emily_matmul_fp8: dots of two 8-bit float tensors
 * (emily/ops_dot.h).
 *
 * Every product of two 8-bit float values is exact in f32 (at most 4 x 4
 * significant bits, exponents well inside f32's range), so "products
 * exact, summed in f32" describes both ways this runs:
 *  - the device's FP8 kernel (emily_dot_kernels.gemm_fp8: cuBLASLt on
 *    the tensor cores) on the same rank-3 views emily_dot uses, with the
 *    scales folded into one f32 factor, as cuBLASLt applies them;
 *  - widened: both operands converted to f32 (exactly), emily_dot in
 *    f32, then the scale factor. This is what the dispatcher did for an
 *    f8 dot before the kernel existed, and what runs on the CPU, for
 *    e5m2 x e5m2 and for any product the kernel refuses.
 * Outputs the kernel does not write (the 8-bit types) are its f32 result
 * converted with Nx's write rules. */
#include <stdatomic.h>
#include "core/dtype_list.h"
#include "ops/common.h"
#include "ops/dot_plan.h"
#include "ops/dot_fp8.h"

static atomic_llong ran_on_tensor_cores, ran_widened;

void emi_dot_fp8_counts(long long *tensor_cores, long long *widened) {
    if (tensor_cores) *tensor_cores = atomic_load(&ran_on_tensor_cores);
    if (widened) *widened = atomic_load(&ran_widened);
}

static bool is_f8(emily_dtype t) { return t == EMILY_F8_E4M3FN || t == EMILY_F8_E5M2; }

static emily_status check_operand(const char *side, const emily_tensor *t) {
    if (!t) return emily_error(EMILY_ERR_ARGUMENT, "dot_fp8: the %s tensor is NULL", side);
    if (!is_f8(t->dtype))
        return emily_error(EMILY_ERR_TYPE,
                           "dot_fp8: the %s tensor is %s; both operands must be 8-bit floats "
                           "(f8_e4m3fn or f8, E5M2): use emily_dot for other types",
                           side, emily_dtype_name(t->dtype));
    return EMILY_OK;
}

static emily_status check_out_type(const emily_tensor *a, const emily_tensor *b, emily_dtype out_type,
                                   emily_dtype *dt) {
    *dt = out_type == EMILY_DTYPE_AUTO ? emily_type_merge(a->dtype, b->dtype) : out_type;
    /* the kernel's outputs (f32 and the half types) and the 8-bit floats */
    if (*dt == EMILY_F32 || EMI_DTYPE_IN(EMI_DTYPES_HALF_WITH, *dt) || is_f8(*dt)) return EMILY_OK;
    return emily_error(EMILY_ERR_TYPE,
                       "dot_fp8: output type %s is not one of f32, bf16, f16, "
                       "f8_e4m3fn and f8",
                       emily_dtype_known(*dt) ? emily_dtype_name(*dt) : "(unknown)");
}

/* r (f32) times the scale factor, when it is not 1. */
static emily_status scale_by(float alpha, emily_tensor **r) {
    if (alpha == 1.0f) return EMILY_OK;
    return emi_apply_scalar((*r)->buffer->device, EMILY_MULTIPLY, EMILY_F32, emily_scalar_float(alpha), r);
}

static emily_status widened_dot(const emily_tensor *a, int nc, const int *ca, int nb, const int *ba,
                                const emily_tensor *b, const int *cb, const int *bb, float alpha, emily_tensor **r) {
    emily_tensor *a32 = NULL, *b32 = NULL;
    emily_status s = emily_as_type(a, EMILY_F32, &a32);
    if (!s) s = emily_as_type(b, EMILY_F32, &b32);
    if (!s) s = emily_dot(a32, nc, ca, nb, ba, b32, nc, cb, nb, bb, EMILY_F32, r);
    emily_tensor_release(a32);
    emily_tensor_release(b32);
    if (!s && (s = scale_by(alpha, r))) {
        emily_tensor_release(*r);
        *r = NULL;
    }
    return s;
}

/* The FP8 kernel's result, or *r NULL where the device has none or
 * refuses this product. */
static emily_status kernel_dot(const emily_engine *e, const emily_tensor *a, int nc, const int *ca, int nb,
                               const int *ba, const emily_tensor *b, const int *cb, const int *bb, float alpha,
                               emily_dtype kt, emily_tensor **r) {
    *r = NULL;
    if (!e->supports(e, EMI_KERNEL_GEMM_FP8, 0, (const emily_dtype[]){kt, a->dtype, b->dtype}, 3)) return EMILY_OK;
    emi_dot_views v;
    emily_status s = emi_dot_views_make("dot_fp8", a, nc, ca, nb, ba, b, cb, bb, kt, &v);
    if (s) return s;
    if (v.res->size > 0) s = e->dot->gemm_fp8(v.d3, v.a3, v.b3, alpha);
    emi_dot_views_release(&v);
    if (s) {
        emily_tensor_release(v.res);
        return s == EMILY_ERR_UNSUPPORTED ? EMILY_OK : s; /* refused: widen */
    }
    *r = v.res;
    return EMILY_OK;
}

emily_status emi_dot_fp8_run(const emily_tensor *a, int ncontract_a, const int *contract_a, int nbatch_a,
                             const int *batch_a, float a_scale, const emily_tensor *b, int ncontract_b,
                             const int *contract_b, int nbatch_b, const int *batch_b, float b_scale,
                             emily_dtype out_type, bool tensor_cores, emily_tensor **out) {
    emily_status s;
    if ((s = emi_check_out("dot_fp8", out))) return s;
    if ((s = check_operand("left", a)) || (s = check_operand("right", b))) return s;
    const emily_engine *e;
    if ((s = emi_dot_check("dot_fp8", a, ncontract_a, contract_a, nbatch_a, batch_a, b, ncontract_b, contract_b,
                           nbatch_b, batch_b, &e)))
        return s;
    /* the axes are checked here, not by whichever path runs it, so that
     * the messages are dot_fp8's on every device */
    if ((s = emi_dot_check_axes("dot_fp8", a, ncontract_a, contract_a, nbatch_a, batch_a, b, contract_b, batch_b)))
        return s;
    emily_dtype dt;
    if ((s = check_out_type(a, b, out_type, &dt))) return s;
    /* one factor, rounded to f32 once, as cuBLASLt forms it */
    float alpha = a_scale * b_scale;
    /* the kernel writes f32, bf16 and f16; the 8-bit outputs come from f32 */
    emily_dtype kt = EMI_DTYPE_IN(EMI_DTYPES_HALF_WITH, dt) ? dt : EMILY_F32;
    emily_tensor *r = NULL;
    if (tensor_cores &&
        (s = kernel_dot(e, a, ncontract_a, contract_a, nbatch_a, batch_a, b, contract_b, batch_b, alpha, kt, &r)))
        return s;
    if (r) {
        atomic_fetch_add(&ran_on_tensor_cores, 1);
    } else {
        if ((s = widened_dot(a, ncontract_a, contract_a, nbatch_a, batch_a, b, contract_b, batch_b, alpha, &r)))
            return s;
        atomic_fetch_add(&ran_widened, 1);
    }
    if (r->dtype == dt) {
        *out = r;
        return EMILY_OK;
    }
    s = emily_as_type(r, dt, out);
    emily_tensor_release(r);
    return s;
}

emily_status emily_dot_fp8(const emily_tensor *a, int ncontract_a, const int *contract_a, int nbatch_a,
                           const int *batch_a, float a_scale, const emily_tensor *b, int ncontract_b,
                           const int *contract_b, int nbatch_b, const int *batch_b, float b_scale, emily_dtype out_type,
                           emily_tensor **out) {
    return emi_dot_fp8_run(a, ncontract_a, contract_a, nbatch_a, batch_a, a_scale, b, ncontract_b, contract_b, nbatch_b,
                           batch_b, b_scale, out_type, true, out);
}

emily_status emily_matmul_fp8(const emily_tensor *a, float a_scale, const emily_tensor *b, float b_scale,
                              emily_dtype out_type, emily_tensor **out) {
    emily_status s;
    if ((s = emi_check_out("matmul_fp8", out))) return s;
    if ((s = check_operand("left", a)) || (s = check_operand("right", b))) return s;
    int r = a->rank;
    if (r < 2 || b->rank != r)
        return emily_error(EMILY_ERR_SHAPE,
                           "matmul_fp8: the operands must be matrices or batches of them of one "
                           "rank, [..., M, K] and [..., K, N]; got shapes %s and %s",
                           EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    int ca = r - 1, cb = r - 2, batch[EMILY_MAX_RANK];
    for (int i = 0; i < r - 2; i++) batch[i] = i;
    return emily_dot_fp8(a, 1, &ca, r - 2, batch, a_scale, b, 1, &cb, r - 2, batch, b_scale, out_type, out);
}
