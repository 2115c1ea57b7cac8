/* Fused normalizations: layer_norm and rms_norm (emily/ops_fast.h).
 *
 * Checks the arguments, types the output as the composed expression's
 * last operation would (Nx.Type.merge of the inputs), and hands the
 * device's kernel (src/core/kernels.h, the fast family) a contiguous x
 * and gamma/beta already in the affine type: gamma and beta are vectors
 * of one row, so converting them here costs nothing next to the rows and
 * spares every kernel a type per operand. */
#include "ops/common.h"
#include "core/kernels.h"

static emily_status check_float(const char *op, const char *arg, const emily_tensor *t) {
    if (emily_dtype_is_float(t->dtype)) return EMILY_OK;
    return emily_error(EMILY_ERR_TYPE, "%s: %s must be a real float tensor (f16, bf16, f32 or f64), got %s", op, arg,
                       emily_dtype_valid(t->dtype) ? emily_dtype_name(t->dtype) : "an invalid type");
}

/* gamma/beta: shape {n}, n the last axis of x. */
static emily_status check_vector(const char *op, const char *arg, const emily_tensor *t, const emily_tensor *x) {
    int64_t n = x->shape[x->rank - 1];
    if (t->rank == 1 && t->shape[0] == n) return EMILY_OK;
    return emily_error(EMILY_ERR_SHAPE, "%s: %s must have shape {%lld} (the last axis of x, %s), got %s", op, arg,
                       (long long)n, EMILY_SHAPE_STR(x), EMILY_SHAPE_STR(t));
}

/* A contiguous copy of t in dtype (t itself, retained, when it is both). */
static emily_status prepared(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    *out = NULL;
    if (!t) return EMILY_OK;
    emily_tensor *converted = NULL;
    emily_status s = emi_convert_to(t, dtype, &converted);
    if (!s) s = emily_contiguous(converted, out);
    emily_tensor_release(converted);
    return s;
}

/* Both ops: ts = {x, gamma, beta}, beta NULL when absent. */
static emily_status norm(const char *op, bool rms, const emily_tensor *const *ts, double eps, emily_tensor **out) {
    static const char *const names[3] = {"x", "gamma", "beta"};
    int nin = ts[2] ? 3 : 2;
    const emily_engine *e;
    emily_status s = emi_check_inputs(op, out, nin, ts, names, &e);
    if (s) return s;
    const emily_tensor *x = ts[0];
    for (int i = 0; i < nin; i++)
        if ((s = check_float(op, names[i], ts[i]))) return s;
    if (x->rank < 1)
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: x must have rank 1 or more (the last axis is normalized), got a scalar", op);
    for (int i = 1; i < nin; i++)
        if ((s = check_vector(op, names[i], ts[i], x))) return s;
    emily_dtype otype = x->dtype;
    for (int i = 1; i < nin; i++) otype = emily_type_merge(otype, ts[i]->dtype);
    emily_dtype atype = otype == EMILY_F64 ? EMILY_F64 : EMILY_F32;
    if ((s = emi_need_kernel(op, e, rms ? EMI_KERNEL_RMS_NORM : EMI_KERNEL_LAYER_NORM, 0, x->dtype))) return s;

    emily_tensor *dst = NULL, *xc = NULL, *g = NULL, *b = NULL;
    if ((s = emi_empty_like_device(x, otype, x->rank, x->shape, &dst))) return s;
    if (x->size > 0) {
        s = emily_contiguous(x, &xc);
        if (!s) s = prepared(ts[1], atype, &g);
        if (!s) s = prepared(ts[2], atype, &b);
        if (!s) s = rms ? e->fast->rms_norm(dst, xc, g, eps) : e->fast->layer_norm(dst, xc, g, b, eps);
    }
    emi_release_all(3, (emily_tensor *[]){xc, g, b});
    return emi_hand_out(s, dst, out);
}

emily_status emily_layer_norm(const emily_tensor *x, const emily_tensor *gamma, const emily_tensor *beta, double eps,
                              emily_tensor **out) {
    return norm("layer_norm", false, (const emily_tensor *[]){x, gamma, beta}, eps, out);
}

emily_status emily_rms_norm(const emily_tensor *x, const emily_tensor *gamma, double eps, emily_tensor **out) {
    return norm("rms_norm", true, (const emily_tensor *[]){x, gamma, NULL}, eps, out);
}
