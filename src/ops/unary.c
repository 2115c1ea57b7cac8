/* Unary element-wise ops: names, Nx's output types, and the op layer
 * that picks a compute type and calls the device kernel.
 *
 * Each op's rule (emily/op_list.h, core/op_rules.h) says how Nx types its
 * output (nx/lib/nx.ex) and which inputs Nx answers without a backend
 * kernel (an unsigned abs, an integer ceil, real or imag of a real
 * tensor, is_nan of integers, ...).
 *
 * Kernels see one compute dtype in and the output dtype out: integer
 * inputs of the floating ops are widened to f64 (the reference computes
 * on the integer's double value) and written as f32; real inputs of
 * conjugate arrive as f32/f64; everything else keeps its input type. */
#include <string.h>
#include "core/op_rules.h"
#include "ops/common.h"

#define UNARY_NAME(ENUM, name, rule) [EMILY_##ENUM] = #name,
static const char *const unary_names[EMILY_UNARY_OP_COUNT] = {EMILY_UNARY_OPS(UNARY_NAME)};
#undef UNARY_NAME

const char *emily_unary_op_name(emily_unary_op op) {
    if ((int)op < 0 || op >= EMILY_UNARY_OP_COUNT) return "?";
    return unary_names[op];
}

bool emily_unary_op_from_name(const char *name, emily_unary_op *op) {
    int i = emi_name_index(unary_names, EMILY_UNARY_OP_COUNT, name);
    if (i >= 0 && op) *op = (emily_unary_op)i;
    return i >= 0;
}

static emily_status no_complex(const char *name, emily_dtype t) {
    return emily_error(EMILY_ERR_TYPE, "%s: complex type %s is not supported", name, emily_dtype_name(t));
}

emily_status emily_unary_type(emily_unary_op op, emily_dtype t, emily_dtype *out) {
    if (out) *out = EMILY_DTYPE_AUTO;
    if ((int)op < 0 || op >= EMILY_UNARY_OP_COUNT)
        return emily_error(EMILY_ERR_ARGUMENT, "unary: unknown op %d", (int)op);
    const char *name = unary_names[op];
    if (!emily_dtype_valid(t)) return emily_error(EMILY_ERR_TYPE, "%s: invalid input type %d", name, (int)t);
    bool cplx = emily_dtype_is_complex(t);
    emily_dtype r;
    switch (emi_unary_rule_of(op)) {
    case EMI_UNARY_RULE_FLOATING: r = emily_type_to_floating(t); break;
    case EMI_UNARY_RULE_FLOATING_REAL:
        if (cplx) return no_complex(name, t);
        r = emily_type_to_floating(t);
        break;
    case EMI_UNARY_RULE_ABS: r = cplx ? emily_type_to_real(t) : t; break;
    case EMI_UNARY_RULE_INTEGER:
        if (!emily_dtype_is_integer(t))
            return emily_error(EMILY_ERR_TYPE, "%s: expects an integer type, got %s", name, emily_dtype_name(t));
        r = t;
        break;
    case EMI_UNARY_RULE_ROUNDING:
        if (cplx) return no_complex(name, t);
        r = t;
        break;
    case EMI_UNARY_RULE_CONJUGATE: r = emily_type_to_complex(t); break;
    case EMI_UNARY_RULE_REAL:
    case EMI_UNARY_RULE_PHASE: r = emily_type_to_real(t); break;
    case EMI_UNARY_RULE_IMAG: r = cplx ? emily_type_to_real(t) : emily_type_to_floating(t); break;
    case EMI_UNARY_RULE_PREDICATE:
    case EMI_UNARY_RULE_LOGICAL: r = EMILY_U8; break;
    case EMI_UNARY_RULE_SAME:
    default: r = t; break;
    }
    if (out) *out = r;
    return EMILY_OK;
}

/* A new tensor of t's shape and device filled with zero. */
static emily_status zeros_like(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    return emily_constant(t->buffer->device, dtype, t->rank, t->shape, emily_scalar_int(0), out);
}

emily_status emily_unary(emily_unary_op op, const emily_tensor *t, emily_tensor **out) {
    emily_status s = emi_check_out("unary", out);
    if (s) return s;
    if ((int)op < 0 || op >= EMILY_UNARY_OP_COUNT)
        return emily_error(EMILY_ERR_ARGUMENT, "unary: unknown op %d", (int)op);
    const char *name = unary_names[op];
    if ((s = emi_check_tensor(name, "tensor", t))) return s;
    emily_dtype out_type;
    if ((s = emily_unary_type(op, t->dtype, &out_type))) return s;
    const emily_engine *e;
    if ((s = emi_check_same_device(name, 1, &t, &e))) return s;

    bool integer = emily_dtype_is_integer(t->dtype);
    bool cplx = emily_dtype_is_complex(t->dtype);
    emi_unary_rule rule = emi_unary_rule_of(op);
    /* Cases Nx answers without a backend kernel. */
    if ((rule == EMI_UNARY_RULE_ABS && emily_dtype_kind_of(t->dtype) == EMILY_KIND_UNSIGNED) ||
        (rule == EMI_UNARY_RULE_ROUNDING && integer) || (rule == EMI_UNARY_RULE_REAL && !cplx && !integer)) {
        emily_tensor_retain((emily_tensor *)t);
        *out = (emily_tensor *)t;
        return EMILY_OK;
    }
    if (rule == EMI_UNARY_RULE_REAL && integer) return emily_as_type(t, out_type, out);
    if ((rule == EMI_UNARY_RULE_IMAG && !cplx) || (rule == EMI_UNARY_RULE_PREDICATE && integer))
        return zeros_like(t, out_type, out);

    emily_dtype compute = t->dtype;
    bool on_double = rule == EMI_UNARY_RULE_FLOATING || rule == EMI_UNARY_RULE_FLOATING_REAL ||
                     rule == EMI_UNARY_RULE_PHASE;
    if (on_double && integer) compute = EMILY_F64;
    if (rule == EMI_UNARY_RULE_CONJUGATE && !cplx) compute = emily_type_to_real(out_type);

    if (!emi_engine_supports(e, EMI_KERNEL_UNARY, op, compute)) {
        char dev[32];
        emily_device_format(t->buffer->device, dev, sizeof dev);
        return emily_error(EMILY_ERR_UNSUPPORTED, "%s: not available on device %s", name, dev);
    }
    emily_tensor *src = NULL, *r = NULL;
    if ((s = emi_convert_to(t, compute, &src))) return s;
    if ((s = emi_empty_like_device(t, out_type, t->rank, t->shape, &r))) goto fail;
    if ((s = e->elementwise->unary(op, r, src))) goto fail;
    emily_tensor_release(src);
    *out = r;
    return EMILY_OK;
fail:
    emily_tensor_release(src);
    emily_tensor_release(r);
    return s;
}
