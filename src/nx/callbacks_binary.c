/* Nx callbacks: the binary element-wise ops, select and clip.
 *
 * Nx fixes the output type before calling the backend, typing a number
 * operand by its value (Nx.Type.merge_number) while the backend receives
 * it as a rank-0 s32/f32/c64 tensor; so the template type is passed on
 * (emi_call_out_type, AUTO in INFER mode) and the typed functions compute
 * in a type that gives Nx's answer for it. */
#include "nx/callback.h"
#include "ops/output_shape.h"
#include "ops/common.h"

/* add(out, left, right) and the 23 others of the same form. */
emily_status emi_cb_binary(emily_call *c) {
    emily_binary_op op;
    if (!emily_binary_op_from_name(c->name, &op)) return emi_call_fail(c, EMILY_ERR_INTERNAL, "not a binary op");
    emily_tensor *ab[2], *r = NULL;
    emily_status s = emi_call_tensors(c, 2, 2, 2, ab);
    if (s) return s;
    /* a broadcast that disagrees with Nx's output shape fails before the
     * work (two small operands can broadcast to a huge result) */
    int rank;
    int64_t shape[EMILY_MAX_RANK];
    if ((s = emi_broadcast_shapes(c->name, emily_tensor_rank(ab[0]), emily_tensor_shape(ab[0]),
                                  emily_tensor_rank(ab[1]), emily_tensor_shape(ab[1]), &rank, shape)) ||
        (s = emi_call_check_output(c, 0, emi_call_out_type(c), rank, shape)))
        return s;
    s = emily_binary(op, ab[0], ab[1], emi_call_out_type(c), &r);
    return s ? s : emi_call_return(c, r);
}

/* select(out, pred, on_true, on_false) */
emily_status emi_cb_select(emily_call *c) {
    emily_tensor *in[3], *r = NULL;
    emily_status s = emi_call_tensors(c, 3, 3, 3, in);
    if (s) return s;
    /* checked against Nx's shape before the work: with a scalar
     * predicate two small branches can broadcast to a huge result */
    int rank;
    int64_t shape[EMILY_MAX_RANK];
    if ((s = emi_select_output_shape(in[0], in[1], in[2], &rank, shape)) ||
        (s = emi_call_check_output(c, 0, emi_call_out_type(c), rank, shape)))
        return s;
    s = emily_select(in[0], in[1], in[2], emi_call_out_type(c), &r);
    return s ? s : emi_call_return(c, r);
}

/* clip(out, tensor, min, max) */
emily_status emi_cb_clip(emily_call *c) {
    emily_tensor *in[3], *r = NULL;
    emily_status s = emi_call_tensors(c, 3, 3, 3, in);
    if (!s) s = emily_clip(in[0], in[1], in[2], emi_call_out_type(c), &r);
    return s ? s : emi_call_return(c, r);
}
