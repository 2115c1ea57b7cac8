/* Nx's dot of two 8-bit float tensors on a device with an FP8 kernel.
 *
 * The narrow dispatcher (src/nx/narrow.c) would convert both operands to
 * f32 and run an f32 GEMM. Here they stay 8-bit: the call runs emi_cb_dot
 * with the operands as they are and the template widened to f32 (an
 * 8-bit template) or kept (f32, bf16, f16); emi_cb_dot sees two 8-bit
 * float operands and runs emily_dot_fp8 (at FAST precision on the tensor
 * cores; at HIGHEST widened, as before). The result is converted to an
 * 8-bit template's type with Nx's write rules, as narrow.c does. */
#include "core/engine.h"
#include "nx/dot_fp8.h"

static bool is_f8(emily_dtype t) { return t == EMILY_F8_E4M3FN || t == EMILY_F8_E5M2; }

bool emi_dot_fp8_operands(const emily_tensor *a, const emily_tensor *b) {
    return a && b && is_f8(a->dtype) && is_f8(b->dtype) && !(a->dtype == EMILY_F8_E5M2 && b->dtype == EMILY_F8_E5M2);
}

static const emily_tensor *tensor_arg(const emily_value *args, size_t nargs, size_t i) {
    return i < nargs && args[i].kind == EMILY_V_TENSOR ? args[i].tensor : NULL;
}

bool emi_dot_fp8_routes(const emily_callback_entry *entry, emily_device device, const emily_value *out,
                        const emily_value *args, size_t nargs, emily_dispatch_mode mode) {
    if (entry->fn != emi_cb_dot || mode != EMILY_DISPATCH_RUN || out->kind != EMILY_V_TEMPLATE) return false;
    if (!emi_dot_fp8_operands(tensor_arg(args, nargs, 0), tensor_arg(args, nargs, 3))) return false;
    emily_dtype t = out->dtype;
    if (!is_f8(t) && t != EMILY_F32 && t != EMILY_BF16 && t != EMILY_F16) return false;
    const emily_engine *e = emi_engine_for(device.type);
    return e && e->supports(e, EMI_KERNEL_GEMM_FP8, 0, NULL, 0);
}

emily_status emi_dispatch_dot_fp8(const emily_callback_entry *entry, emily_device device, const emily_value *out,
                                  const emily_value *args, size_t nargs, emily_dispatch_result *result) {
    emily_value wide = *out;
    if (is_f8(out->dtype)) wide.dtype = EMILY_F32;
    emily_call c = {.name = entry->info.name,
                    .op = entry->op,
                    .device = device,
                    .out = &wide,
                    .args = args,
                    .nargs = nargs,
                    .mode = EMILY_DISPATCH_RUN,
                    .result = result,
                    .arena = NULL};
    result->n = 0;
    emily_status s = entry->fn(&c);
    if (!s && result->n != 1)
        s = emi_call_fail(&c, EMILY_ERR_INTERNAL, "produced %d outputs, the template has 1", result->n);
    if (!s) {
        const emily_tensor *t = result->tensors[0];
        s = emi_call_check_output(&c, 0, t->dtype, t->rank, t->shape);
    }
    emi_call_arena_free(&c);
    if (!s && wide.dtype != out->dtype) {
        emily_tensor *narrow;
        if (!(s = emily_as_type(result->tensors[0], out->dtype, &narrow))) {
            emily_tensor_release(result->tensors[0]);
            result->tensors[0] = narrow;
        }
    }
    if (s) emily_dispatch_result_release(result);
    return s;
}
