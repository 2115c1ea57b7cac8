/* Binary ops for which Nx.BinaryBackend raises on some operand values,
 * answered with the reference's error instead of a value:
 *
 * - left_shift/right_shift: a negative count raises ArgumentError
 *   "cannot left shift by N" (N the first negative count it meets);
 * - float remainder is Erlang's :math.fmod, which raises ArgumentError
 *   when an operand is not a number (the reference's NaN and infinities
 *   are the atoms :nan, :infinity, :neg_infinity) and ArithmeticError
 *   when the divisor is zero (its NaN result);
 * - atan2 of complex operands is Complex.atan2, which raises
 *   ArithmeticError unless every imaginary part is zero;
 * - integer quotient and remainder are Elixir's div and rem, which
 *   raise ArithmeticError on a zero divisor.
 *
 * The reference evaluates the elements in row-major order of the
 * broadcast result and stops at the first that raises, so the message is
 * that element's. The checks here are built from the engine's own ops
 * (a mask, `any` of it, and only when something is found argmax and a
 * one-element slice), so they run on any device and read back one scalar
 * when nothing raises. */
#include <stdlib.h>
#include "ops/binary_raises.h"
#include "ops/common.h"

/* ---- small helpers ------------------------------------------------------- */

/* A rank-0 zero of t's type on t's device. */
static emily_status zero_like(const emily_tensor *t, emily_tensor **out) {
    const unsigned char zeros[16] = {0};
    return emily_from_binary(t->buffer->device, t->dtype, 0, NULL, zeros, emily_dtype_size(t->dtype), out);
}

/* The value of a one-element tensor converted to `dt` (F64: the real part
 * as a double; S64: a 64-bit integer), written to v. */
static emily_status read_as(const emily_tensor *t, emily_dtype dt, void *v) {
    emily_tensor *c = NULL;
    emily_status s = emily_as_type(t, dt, &c);
    if (!s) s = emily_to_binary(c, v, emily_dtype_size(dt));
    emily_tensor_release(c);
    return s;
}

/* The row-major position of mask's first nonzero element, or -1. */
static emily_status first_set(const emily_tensor *mask, int64_t *pos) {
    *pos = -1;
    emily_tensor *any = NULL, *arg = NULL;
    int64_t found = 0;
    emily_status s = emily_reduce(EMILY_REDUCE_ANY, mask, 0, NULL, false, EMILY_DTYPE_AUTO, &any);
    if (!s) s = read_as(any, EMILY_S64, &found);
    /* argmax of a 0/1 mask with ties to the lowest index: the first 1 */
    if (!s && found) s = emily_argreduce(EMILY_ARGMAX, mask, -1, false, false, EMILY_S64, &arg);
    if (!s && found) s = read_as(arg, EMILY_S64, pos);
    emily_tensor_release(any);
    emily_tensor_release(arg);
    return s;
}

/* The element of t (broadcast to rank/shape by right alignment) at
 * row-major position pos of that shape, as a one-element view. */
static emily_status element_at(const emily_tensor *t, int rank, const int64_t *shape, int64_t pos, emily_tensor **out) {
    int64_t *starts = malloc(sizeof(int64_t) * ((size_t)t->rank * 2 + 1));
    if (!starts) return emily_error(EMILY_ERR_MEMORY, "binary: out of host memory");
    int64_t *ones = starts + t->rank;
    for (int i = rank - 1; i >= 0; i--) {
        int64_t coord = shape[i] > 0 ? pos % shape[i] : 0;
        pos = shape[i] > 0 ? pos / shape[i] : 0;
        int ti = i - (rank - t->rank);
        if (ti >= 0) {
            starts[ti] = t->shape[ti] == 1 ? 0 : coord;
            ones[ti] = 1;
        }
    }
    emily_status s = emily_slice(t, starts, ones, NULL, out);
    free(starts);
    return s;
}

/* A u8 mask of t's non-finite elements (NaN or an infinity). */
static emily_status non_finite(const emily_tensor *t, emily_tensor **out) {
    emily_tensor *nan = NULL, *inf = NULL;
    emily_status s = emily_unary(EMILY_IS_NAN, t, &nan);
    if (!s) s = emily_unary(EMILY_IS_INFINITY, t, &inf);
    if (!s) s = emily_binary(EMILY_LOGICAL_OR, nan, inf, EMILY_DTYPE_AUTO, out);
    emily_tensor_release(nan);
    emily_tensor_release(inf);
    return s;
}

/* acc |= mask (acc NULL: becomes mask); takes the reference to mask. */
static emily_status or_into(emily_tensor **acc, emily_tensor *mask) {
    if (!*acc) {
        *acc = mask;
        return EMILY_OK;
    }
    emily_tensor *r = NULL;
    emily_status s = emily_binary(EMILY_LOGICAL_OR, *acc, mask, EMILY_DTYPE_AUTO, &r);
    emily_tensor_release(*acc);
    emily_tensor_release(mask);
    *acc = r;
    return s;
}

/* ---- the checks ------------------------------------------------------------- */

/* Shifts: the first negative count. Every element of the count tensor
 * is used when the result is not empty, and the first negative one met
 * in the broadcast result's order is the first in the count's own order
 * (each count element first appears where the stretched coordinates are
 * 0, and those positions come in the count's order). */
static emily_status check_shift(emily_binary_op op, const emily_tensor *count) {
    if (emily_dtype_kind_of(count->dtype) != EMILY_KIND_SIGNED) return EMILY_OK;
    emily_tensor *zero = NULL, *neg = NULL, *one = NULL;
    int64_t pos = -1, v = 0;
    emily_status s = zero_like(count, &zero);
    if (!s) s = emily_binary(EMILY_LESS, count, zero, EMILY_DTYPE_AUTO, &neg);
    if (!s) s = first_set(neg, &pos);
    if (!s && pos >= 0) s = element_at(count, count->rank, count->shape, pos, &one);
    if (!s && pos >= 0) s = read_as(one, EMILY_S64, &v);
    emily_tensor_release(zero);
    emily_tensor_release(neg);
    emily_tensor_release(one);
    if (s || pos < 0) return s;
    return emily_error(EMILY_ERR_ARGUMENT, "cannot %s shift by %lld", op == EMILY_LEFT_SHIFT ? "left" : "right",
                       (long long)v);
}

/* Float remainder: :math.fmod(a, b) raises for a non-number operand
 * (ArgumentError naming each one, Erlang's text) before it looks at a
 * zero divisor (ArithmeticError). Integer operands are always numbers. */
static emily_status check_remainder(const emily_tensor *a, const emily_tensor *b, int rank, const int64_t *shape) {
    bool fa = !emily_dtype_is_integer(a->dtype), fb = !emily_dtype_is_integer(b->dtype);
    emily_tensor *bad = NULL, *m = NULL, *zero = NULL, *ea = NULL, *eb = NULL;
    int64_t pos = -1;
    double va = 0, vb = 0;
    emily_status s = EMILY_OK;
    if (fa && !(s = non_finite(a, &m))) s = or_into(&bad, m);
    if (!s && fb && !(s = non_finite(b, &m))) s = or_into(&bad, m);
    if (!s) s = zero_like(b, &zero);
    if (!s && !(s = emily_binary(EMILY_EQUAL, b, zero, EMILY_DTYPE_AUTO, &m))) s = or_into(&bad, m);
    /* positions in the broadcast result's order (a may not be in the mask) */
    emily_tensor *full = NULL;
    if (!s) s = emi_broadcast_view(bad, rank, shape, &full);
    if (!s) s = first_set(full, &pos);
    if (!s && pos >= 0) s = element_at(a, rank, shape, pos, &ea);
    if (!s && pos >= 0) s = element_at(b, rank, shape, pos, &eb);
    if (!s && pos >= 0) s = read_as(ea, EMILY_F64, &va);
    if (!s && pos >= 0) s = read_as(eb, EMILY_F64, &vb);
    emily_tensor *all[6] = {bad, zero, ea, eb, full, NULL};
    emi_release_all(6, all);
    if (s || pos < 0) return s;
    bool na = va - va != 0, nb = vb - vb != 0; /* NaN or infinite */
    if (!na && !nb) return emily_error(EMILY_ERR_ARGUMENT, "bad argument in arithmetic expression");
    return emily_error(EMILY_ERR_ARGUMENT, "errors were found at the given arguments:\n\n%s%s",
                       na ? "  * 1st argument: not a number\n" : "", nb ? "  * 2nd argument: not a number\n" : "");
}

/* Complex atan2: any imaginary part that is not zero (NaN included:
 * `:nan != 0` holds in Elixir) raises; which element does not change
 * the message. */
static emily_status check_atan2(const emily_tensor *a, const emily_tensor *b) {
    const emily_tensor *ops[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        const emily_tensor *t = ops[i];
        if (!emily_dtype_is_complex(t->dtype)) continue;
        emily_tensor *im = NULL, *zero = NULL, *nz = NULL;
        int64_t pos = -1;
        emily_status s = emily_unary(EMILY_IMAG, t, &im);
        if (!s) s = zero_like(im, &zero);
        if (!s) s = emily_binary(EMILY_NOT_EQUAL, im, zero, EMILY_DTYPE_AUTO, &nz);
        if (!s) s = first_set(nz, &pos);
        emily_tensor_release(im);
        emily_tensor_release(zero);
        emily_tensor_release(nz);
        if (s) return s;
        if (pos >= 0) return emily_error(EMILY_ERR_ARGUMENT, "Complex.atan2 only accepts real numbers as arguments");
    }
    return EMILY_OK;
}

/* Integer quotient/remainder: any zero divisor that the result reaches
 * (every element of b is used when the result is not empty). */
static emily_status check_integer_divisor(const emily_tensor *b) {
    emily_tensor *zero = NULL, *eq = NULL;
    int64_t pos = -1;
    emily_status s = zero_like(b, &zero);
    if (!s) s = emily_binary(EMILY_EQUAL, b, zero, EMILY_DTYPE_AUTO, &eq);
    if (!s) s = first_set(eq, &pos);
    emily_tensor_release(zero);
    emily_tensor_release(eq);
    if (s || pos < 0) return s;
    return emily_error(EMILY_ERR_ARGUMENT, "bad argument in arithmetic expression");
}

emily_status emi_binary_check_raises(emily_binary_op op, const emily_tensor *a, const emily_tensor *b, emily_dtype o,
                                     int rank, const int64_t *shape) {
    /* an empty result: the reference meets no element (a zero dimension,
     * not a product, which may overflow before the size check) */
    for (int i = 0; i < rank; i++)
        if (shape[i] == 0) return EMILY_OK;
    switch (op) {
    case EMILY_LEFT_SHIFT:
    case EMILY_RIGHT_SHIFT: return check_shift(op, b);
    case EMILY_REMAINDER:
        return emily_dtype_is_integer(o) ? check_integer_divisor(b) : check_remainder(a, b, rank, shape);
    case EMILY_QUOTIENT: return check_integer_divisor(b);
    case EMILY_ATAN2: return emily_dtype_is_complex(o) ? check_atan2(a, b) : EMILY_OK;
    default: return EMILY_OK;
    }
}
