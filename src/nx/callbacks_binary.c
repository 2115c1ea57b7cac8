/* Nx callbacks: the binary element-wise ops, select and clip.
 *
 * Nx fixes the output type before calling the backend, typing a number
 * operand by its value (Nx.Type.merge_number) while the backend receives
 * it as a rank-0 s32/f32/c64 tensor; so the template type is passed on
 * (emi_call_out_type, AUTO in INFER mode) and the typed functions compute
 * in a type that gives Nx's answer for it. */
#include "nx/callback.h"

/* add(out, left, right) and the 23 others of the same form. */
static emily_status cb_binary(emily_call *c) {
    emily_binary_op op;
    if (!emily_binary_op_from_name(c->name, &op))
        return emi_call_fail(c, EMILY_ERR_INTERNAL, "not a binary op");
    emily_tensor *a, *b, *r = NULL;
    emily_status s = emi_call_arity(c, 2, 2);
    if (!s) s = emi_call_tensor(c, 0, &a);
    if (!s) s = emi_call_tensor(c, 1, &b);
    if (!s) s = emily_binary(op, a, b, emi_call_out_type(c), &r);
    if (s) return s;
    return emi_call_return(c, r);
}

/* select(out, pred, on_true, on_false) */
static emily_status cb_select(emily_call *c) {
    emily_tensor *p, *t, *f, *r = NULL;
    emily_status s = emi_call_arity(c, 3, 3);
    if (!s) s = emi_call_tensor(c, 0, &p);
    if (!s) s = emi_call_tensor(c, 1, &t);
    if (!s) s = emi_call_tensor(c, 2, &f);
    if (!s) s = emily_select(p, t, f, emi_call_out_type(c), &r);
    if (s) return s;
    return emi_call_return(c, r);
}

/* clip(out, tensor, min, max) */
static emily_status cb_clip(emily_call *c) {
    emily_tensor *t, *lo, *hi, *r = NULL;
    emily_status s = emi_call_arity(c, 3, 3);
    if (!s) s = emi_call_tensor(c, 0, &t);
    if (!s) s = emi_call_tensor(c, 1, &lo);
    if (!s) s = emi_call_tensor(c, 2, &hi);
    if (!s) s = emily_clip(t, lo, hi, emi_call_out_type(c), &r);
    if (s) return s;
    return emi_call_return(c, r);
}

/* The handlers the registry (src/nx/callback_list.h) names. */
emily_status emi_cb_binary(emily_call *c) { return cb_binary(c); }
emily_status emi_cb_select(emily_call *c) { return cb_select(c); }
emily_status emi_cb_clip(emily_call *c) { return cb_clip(c); }
