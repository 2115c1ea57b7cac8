/* Binary element-wise ops: names, Nx's output types, and the choice of
 * the type the kernel computes in.
 *
 * Nx.BinaryBackend reads both operands into exact Elixir numbers,
 * applies the op (integers exactly, floats in f64) and writes the result
 * in the output type. Emily gets the same answers by converting both
 * operands to a compute type C in which that holds, running the device's
 * binary kernel (which sees two operands of type C and writes C, or u8
 * for comparisons and logical ops) and converting the result to the
 * output type when it differs from C:
 *  - integer output: C is the output type. Integer arithmetic wraps, so
 *    add/subtract/multiply/pow/bitwise/left_shift give the exact result
 *    modulo 2^bits; the other ops see operands that the output type
 *    holds exactly (it is the merge of the operand types, or Nx's
 *    value-based type of a number operand). The one pair no 64-bit type
 *    holds, u64 with a signed type (merged to s64), has its own exact
 *    path for the ops where wrapping would change the answer.
 *  - float or complex output: C is the output type when both operand
 *    types convert into it exactly (+ - * / rounded once in f32 round
 *    to the same value as Nx's f64 computation rounded to f32/f16/bf16;
 *    kernels compute pow/atan2/remainder in f64), else f64 (c128).
 *  - comparisons and logical ops: the common type when both operands
 *    convert into it exactly, else f64 (c128), so a comparison never
 *    sees a rounded operand. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/dtype_list.h"
#include "core/op_rules.h"
#include "ops/binary.h"
#include "ops/binary_raises.h"
#include "ops/common.h"
#include "core/scalar_convert.h"

#define BINARY_NAME(ENUM, name, rule) [EMILY_##ENUM] = #name,
static const char *const op_names[EMILY_BINARY_OP_COUNT] = {EMILY_BINARY_OPS(BINARY_NAME)};
#undef BINARY_NAME

const char *emily_binary_op_name(emily_binary_op op) {
    return (unsigned)op < EMILY_BINARY_OP_COUNT ? op_names[op] : "?";
}

bool emily_binary_op_from_name(const char *name, emily_binary_op *op) {
    int i = emi_name_index(op_names, EMILY_BINARY_OP_COUNT, name);
    if (i >= 0 && op) *op = (emily_binary_op)i;
    return i >= 0;
}

/* Comparisons and logical ops: u8 whatever the operands. */
static bool is_predicate(emily_binary_op op) { return emi_binary_rule_is_predicate(emi_binary_rule_of(op)); }

emily_status emily_binary_type(emily_binary_op op, emily_dtype a, emily_dtype b, emily_dtype *out) {
    if (out) *out = EMILY_DTYPE_AUTO;
    if ((unsigned)op >= EMILY_BINARY_OP_COUNT) return emily_error(EMILY_ERR_ARGUMENT, "binary: unknown op %d", (int)op);
    const char *name = op_names[op];
    if (!emily_dtype_valid(a) || !emily_dtype_valid(b))
        return emily_error(EMILY_ERR_TYPE, "%s: invalid operand type (%d, %d)", name, (int)a, (int)b);
    emily_dtype m = emily_type_merge(a, b), t;
    bool complex = emily_dtype_is_complex(m);
    emi_binary_rule rule = emi_binary_rule_of(op);
    switch (rule) {
    case EMI_BINARY_RULE_ARITH:
    case EMI_BINARY_RULE_ARITH_SCALAR: t = m; break;
    case EMI_BINARY_RULE_REAL:
    case EMI_BINARY_RULE_REAL_SCALAR:
    case EMI_BINARY_RULE_ORDER:
        if (complex)
            return emily_error(EMILY_ERR_TYPE, "%s: complex operands are not supported, got %s and %s", name,
                               emily_dtype_name(a), emily_dtype_name(b));
        t = rule == EMI_BINARY_RULE_ORDER ? EMILY_U8 : m;
        break;
    case EMI_BINARY_RULE_ATAN2:
    case EMI_BINARY_RULE_FLOATING: t = emily_type_to_floating(m); break;
    case EMI_BINARY_RULE_INTEGER:
    case EMI_BINARY_RULE_INTEGER_SCALAR:
        if (!emily_dtype_is_integer(m))
            return emily_error(EMILY_ERR_TYPE, "%s: expects integer tensors, got %s and %s (merged type %s)", name,
                               emily_dtype_name(a), emily_dtype_name(b), emily_dtype_name(m));
        t = m;
        break;
    case EMI_BINARY_RULE_EQUALITY:
    case EMI_BINARY_RULE_LOGICAL:
    default: t = EMILY_U8; break;
    }
    if (out) *out = t;
    return EMILY_OK;
}

/* True when every value of type `from` is a value of type `to`. */
static bool emily_binary_exact_into(emily_dtype from, emily_dtype to) {
    if (from == to) return true;
    int fb = emily_dtype_bits(from), tb = emily_dtype_bits(to);
    emily_dtype_kind fk = emily_dtype_kind_of(from);
    bool fint = emily_dtype_is_integer(from);
    switch (emily_dtype_kind_of(to)) {
    case EMILY_KIND_UNSIGNED: return fk == EMILY_KIND_UNSIGNED && fb <= tb;
    case EMILY_KIND_SIGNED: return (fk == EMILY_KIND_SIGNED && fb <= tb) || (fk == EMILY_KIND_UNSIGNED && fb < tb);
    case EMILY_KIND_BFLOAT:
    case EMILY_KIND_FLOAT:
        /* f16 and bf16 hold the 8-bit integers; f32 those of 16 bits and
         * both 16-bit floats; f64 those of 32 bits and every float */
        if (tb == 16) return from == EMILY_U8 || from == EMILY_S8;
        if (tb == 32) return (emily_dtype_is_float(from) && fb == 16) || (fint && fb <= 16);
        return emily_dtype_is_float(from) || (fint && fb <= 32);
    case EMILY_KIND_COMPLEX:
        return (to == EMILY_C128 && from == EMILY_C64) || emily_binary_exact_into(from, emily_type_to_real(to));
    default: return false;
    }
}

/* A 16-bit float type's nearest value to d, as a double. */
static double half_round_trip(emily_dtype half, double d) {
// clang-format off
#define HALF_ROUND_TRIP(E, s, T) \
    case EMILY_##E: return emily_sc_##s##_to_f64(emily_sc_f64_to_##s(d));
    // clang-format on
    switch (half) {
        EMI_DTYPES_HALF(HALF_ROUND_TRIP)
    default: return d;
    }
#undef HALF_ROUND_TRIP
}

/* Whether a one-element tensor's value is exactly a value of the float
 * or complex type `to` (Nx's number operands arrive as s32/f32 scalars:
 * `x * 2` on f32 can then compute in f32). Read from host memory: the
 * CPU's (it runs synchronously, so the value is there), or a device
 * buffer's mirror of the host bytes it was made from (core/tensor_impl.h);
 * a device scalar that a kernel computed has none, and the answer is a
 * conservative false. */
static bool real_fits(double d, emily_dtype to) {
    if (d != d || d - d != 0) return true; /* NaN and the infinities are in every float type */
    emily_dtype part = emily_type_to_real(to);
    if (part == EMILY_F64) return true;
    if (fabs(d) > FLT_MAX || (double)(float)d != d) return false; /* not even an f32 */
    return part == EMILY_F32 || half_round_trip(part, d) == d;
}

static bool int_fits(bool neg, uint64_t mag, emily_dtype to) {
    (void)neg;
    uint64_t limit = to == EMILY_F16                        ? 2048u
                     : to == EMILY_BF16                     ? 256u
                     : (to == EMILY_F32 || to == EMILY_C64) ? (1u << 24)
                                                            : (1ull << 53);
    return mag <= limit;
}

static bool value_fits(const emily_engine *e, const emily_tensor *t, emily_dtype to) {
    if (t->size != 1 || emily_dtype_is_integer(to)) return false;
    /* a device's scalar: the host copy of the bytes it was made from */
    const void *p = e->host_addressable ? emily_tensor_base(t) : emi_tensor_mirrored(t);
    if (!p) return false;
// clang-format off
#define UNSIGNED_FITS(E, s, T) \
    case EMILY_##E: return int_fits(false, *(const T *)p, to);
#define SIGNED_FITS(E, s, T)                                                           \
    case EMILY_##E: {                                                                  \
        int64_t v = *(const T *)p;                                                     \
        return int_fits(v < 0, v < 0 ? 0u - (uint64_t)v : (uint64_t)v, to);            \
    }
#define HALF_FITS(E, s, T) \
    case EMILY_##E: return real_fits(emily_sc_##s##_to_f64(*(const T *)p), to);
#define FLOAT_FITS(E, s, T) \
    case EMILY_##E: return real_fits(*(const T *)p, to);
#define COMPLEX_FITS(E, s, T) \
    case EMILY_##E: return emily_dtype_is_complex(to) && real_fits(((const T *)p)->re, to) && real_fits(((const T *)p)->im, to);
    // clang-format on
    switch (t->dtype) {
        EMI_DTYPES_UNSIGNED(UNSIGNED_FITS)
        EMI_DTYPES_SIGNED(SIGNED_FITS)
        EMI_DTYPES_HALF(HALF_FITS)
        EMI_DTYPES_NATIVE_FLOAT(FLOAT_FITS)
        EMI_DTYPES_COMPLEX(COMPLEX_FITS)
    default: return false;
    }
}

bool emi_binary_fits(const emily_engine *e, const emily_tensor *t, emily_dtype to) {
    return emily_binary_exact_into(t->dtype, to) || value_fits(e, t, to);
}

/* The wide type of a float or complex computation. */
static emily_dtype wide_of(emily_dtype t) { return emily_dtype_is_complex(t) ? EMILY_C128 : EMILY_F64; }

/* A view of t's elements as another dtype of the same size. */
static emily_status reinterpret(const emily_tensor *t, emily_dtype dt, emily_tensor **out) {
    return emi_tensor_wrap(t->buffer, dt, t->rank, t->shape, t->strides, t->offset, out);
}

/* A rank-0 tensor on `device` holding `bytes`. */
static emily_status scalar_tensor(emily_device device, emily_dtype dt, const void *bytes, emily_tensor **out) {
    return emily_from_binary(device, dt, 0, NULL, bytes, emily_dtype_size(dt), out);
}

emily_status emi_view_as(const emily_tensor *t, int rank, const int64_t *shape, emily_tensor **out) {
    bool same = t->rank == rank;
    for (int i = 0; same && i < rank; i++) same = t->shape[i] == shape[i];
    if (!same) return emi_broadcast_view(t, rank, shape, out);
    emily_tensor_retain((emily_tensor *)t);
    *out = (emily_tensor *)t;
    return EMILY_OK;
}

/* Both operands already have the compute type; broadcasts them and runs
 * the kernel into a fresh tensor (u8 for predicates). */
static emily_status run_kernel(const emily_engine *e, emily_binary_op op, const emily_tensor *a, const emily_tensor *b,
                               int rank, const int64_t *shape, emily_tensor **out) {
    const char *name = op_names[op];
    emily_status s = emi_need_kernel(name, e, EMI_KERNEL_BINARY, op, a->dtype);
    if (s) return s;
    emily_tensor *av = NULL, *bv = NULL, *dst = NULL;
    s = emi_view_as(a, rank, shape, &av);
    if (!s) s = emi_view_as(b, rank, shape, &bv);
    if (!s) s = emi_empty_like_device(a, is_predicate(op) ? EMILY_U8 : a->dtype, rank, shape, &dst);
    if (!s) s = e->elementwise->binary(op, dst, av, bv);
    emily_tensor_release(av);
    emily_tensor_release(bv);
    return emi_hand_out(s, dst, out);
}

/* u64 against a signed type: the merged type s64 cannot hold u64 values
 * of 2^63 and above, so min/max, quotient/remainder, comparisons and
 * right_shift (of the u64) are rebuilt from u64 kernels, with the sign
 * of the signed operand deciding. The result is s64 (u8 for
 * comparisons). */
static emily_status mixed_u64(emily_binary_op op, const emily_tensor *a, const emily_tensor *b, int rank,
                              const int64_t *shape, emily_tensor **out) {
    bool u_first = a->dtype == EMILY_U64;
    const emily_tensor *u = u_first ? a : b, *sgn = u_first ? b : a;
    emily_device dev = a->buffer->device;
    emily_tensor *s64 = NULL, *su = NULL, *neg = NULL, *negb = NULL, *zero_s = NULL, *zero_u = NULL, *r = NULL,
                 *rs = NULL, *t1 = NULL, *t2 = NULL, *t3 = NULL, *c = NULL, *flip = NULL;
    emily_status s = emi_convert_to(sgn, EMILY_S64, &s64);
    if (!s) s = reinterpret(s64, EMILY_U64, &su);
    int64_t z = 0;
    if (!s) s = scalar_tensor(dev, EMILY_S64, &z, &zero_s);
    if (!s) s = scalar_tensor(dev, EMILY_U64, &z, &zero_u);
    if (!s) s = emily_binary(EMILY_LESS, s64, zero_s, EMILY_DTYPE_AUTO, &neg);
    if (!s) s = emi_broadcast_view(neg, rank, shape, &negb);
    if (s) goto done;
    switch (op) {
    case EMILY_EQUAL:
    case EMILY_NOT_EQUAL:
    case EMILY_GREATER:
    case EMILY_LESS:
    case EMILY_GREATER_EQUAL:
    case EMILY_LESS_EQUAL: {
        /* a negative signed operand is below every u64 */
        bool u_greater = op == EMILY_NOT_EQUAL || op == EMILY_GREATER || op == EMILY_GREATER_EQUAL;
        bool u_less = op == EMILY_NOT_EQUAL || op == EMILY_LESS || op == EMILY_LESS_EQUAL;
        uint8_t when_neg = (uint8_t)(u_first ? u_greater : u_less);
        s = emily_binary(op, u_first ? u : su, u_first ? su : u, EMILY_DTYPE_AUTO, &r);
        if (!s) s = scalar_tensor(dev, EMILY_U8, &when_neg, &c);
        if (!s) s = emily_select(negb, c, r, EMILY_DTYPE_AUTO, out);
        break;
    }
    case EMILY_MIN:
    case EMILY_MAX:
        /* negative: min is the signed one, max the u64 one (wrapped) */
        s = emily_binary(op, u_first ? u : su, u_first ? su : u, EMILY_DTYPE_AUTO, &r);
        if (!s) s = reinterpret(r, EMILY_S64, &rs);
        if (!s && op == EMILY_MAX) s = reinterpret(u, EMILY_S64, &t1);
        if (!s) s = emily_select(negb, op == EMILY_MIN ? s64 : t1, rs, EMILY_DTYPE_AUTO, out);
        break;
    case EMILY_QUOTIENT:
    case EMILY_REMAINDER:
        /* on magnitudes in u64, then the sign: the quotient's flips with
         * a negative signed operand (unless the divisor is 0: -1 stays),
         * the remainder's with a negative dividend */
        s = emily_binary(EMILY_SUBTRACT, zero_u, su, EMILY_DTYPE_AUTO, &t1);
        if (!s) s = emily_select(neg, t1, su, EMILY_DTYPE_AUTO, &t2); /* |signed| */
        if (!s) s = emily_binary(op, u_first ? u : t2, u_first ? t2 : u, EMILY_DTYPE_AUTO, &r);
        if (s) break;
        if (op == EMILY_REMAINDER && u_first) {
            s = reinterpret(r, EMILY_S64, out);
            break;
        }
        if (op == EMILY_QUOTIENT && !u_first) {
            emily_tensor *nz = NULL;
            s = emily_binary(EMILY_NOT_EQUAL, u, zero_u, EMILY_DTYPE_AUTO, &nz);
            if (!s) s = emily_binary(EMILY_LOGICAL_AND, neg, nz, EMILY_DTYPE_AUTO, &flip);
            emily_tensor_release(nz);
        } else {
            flip = negb;
            emily_tensor_retain(flip);
        }
        if (!s) s = emily_binary(EMILY_SUBTRACT, zero_u, r, EMILY_DTYPE_AUTO, &t3);
        if (!s) s = emily_select(flip, t3, r, EMILY_DTYPE_AUTO, &rs);
        if (!s) s = reinterpret(rs, EMILY_S64, out);
        break;
    case EMILY_RIGHT_SHIFT: /* only reached with the u64 first: a logical shift */
        s = emily_binary(op, u, su, EMILY_DTYPE_AUTO, &r);
        if (!s) s = reinterpret(r, EMILY_S64, out);
        break;
    default: s = emily_error(EMILY_ERR_INTERNAL, "%s: no mixed u64 path", op_names[op]);
    }
done:
    emily_tensor_release(s64);
    emily_tensor_release(su);
    emily_tensor_release(neg);
    emily_tensor_release(negb);
    emily_tensor_release(zero_s);
    emily_tensor_release(zero_u);
    emily_tensor_release(r);
    emily_tensor_release(rs);
    emily_tensor_release(t1);
    emily_tensor_release(t2);
    emily_tensor_release(t3);
    emily_tensor_release(c);
    emily_tensor_release(flip);
    return s;
}

static bool needs_mixed_u64(emily_binary_op op, emily_dtype a, emily_dtype b, emily_dtype c) {
    if (c != EMILY_S64) return false;
    bool ua = a == EMILY_U64, ub = b == EMILY_U64;
    bool sa = emily_dtype_kind_of(a) == EMILY_KIND_SIGNED && emily_dtype_valid(a);
    bool sb = emily_dtype_kind_of(b) == EMILY_KIND_SIGNED && emily_dtype_valid(b);
    if (!((ua && sb) || (ub && sa))) return false;
    switch (op) {
    case EMILY_MIN:
    case EMILY_MAX:
    case EMILY_QUOTIENT:
    case EMILY_REMAINDER:
    case EMILY_EQUAL:
    case EMILY_NOT_EQUAL:
    case EMILY_GREATER:
    case EMILY_LESS:
    case EMILY_GREATER_EQUAL:
    case EMILY_LESS_EQUAL: return true;
    case EMILY_RIGHT_SHIFT: return ua;
    default: return false;
    }
}

static bool same_class(emily_dtype x, emily_dtype y) {
    return emily_dtype_is_integer(x) == emily_dtype_is_integer(y) &&
           emily_dtype_is_complex(x) == emily_dtype_is_complex(y);
}

/* Complex atan2 is Complex.atan2: the reference raises unless every
 * imaginary part is zero (binary_raises.c checks that first), and then
 * answers the real atan2 of the real parts as a complex number with a
 * zero imaginary part. So: the real op on the real parts, in the real
 * type of o, converted to o (imaginary part +0.0). */
static emily_status atan2_complex(const emily_tensor *a, const emily_tensor *b, emily_dtype o, emily_tensor **out) {
    emily_tensor *ra = NULL, *rb = NULL, *r = NULL;
    emily_status s = EMILY_OK;
    if (emily_dtype_is_complex(a->dtype)) s = emily_unary(EMILY_REAL, a, &ra);
    if (!s && emily_dtype_is_complex(b->dtype)) s = emily_unary(EMILY_REAL, b, &rb);
    if (!s) s = emily_binary(EMILY_ATAN2, ra ? ra : a, rb ? rb : b, o == EMILY_C64 ? EMILY_F32 : EMILY_F64, &r);
    if (!s) s = emily_as_type(r, o, out);
    emily_tensor_release(ra);
    emily_tensor_release(rb);
    emily_tensor_release(r);
    return s;
}

static bool fits(const emily_engine *e, emily_dtype t_dtype, const emily_tensor *t, emily_dtype to) {
    return t ? emi_binary_fits(e, t, to) : emily_binary_exact_into(t_dtype, to);
}

bool emi_binary_compute_type(const emily_engine *e, emily_binary_op op, emily_dtype at, const emily_tensor *a,
                             emily_dtype bt, const emily_tensor *b, emily_dtype o, emily_dtype *c) {
    if (is_predicate(op)) {
        emily_dtype m = emily_type_merge(at, bt);
        *c = (emily_dtype_is_integer(m) || (fits(e, at, a, m) && fits(e, bt, b, m))) ? m : wide_of(m);
    } else if (emily_dtype_is_integer(o)) {
        *c = o;
    } else {
        *c = fits(e, at, a, o) && fits(e, bt, b, o) ? o : wide_of(o);
    }
    return !(op == EMILY_ATAN2 && emily_dtype_is_complex(o)) && !needs_mixed_u64(op, at, bt, *c);
}

/* emily_binary after validation: output type o, broadcast shape. */
static emily_status binary_with(const emily_engine *e, emily_binary_op op, const emily_tensor *a, const emily_tensor *b,
                                emily_dtype o, int rank, const int64_t *shape, emily_tensor **out) {
    bool pred = is_predicate(op);
    emily_status s;
    if (op == EMILY_ATAN2 && emily_dtype_is_complex(o)) return atan2_complex(a, b, o, out);

    emily_dtype c;
    emi_binary_compute_type(e, op, a->dtype, a, b->dtype, b, o, &c);
    if (needs_mixed_u64(op, a->dtype, b->dtype, c)) {
        emily_tensor *r = NULL;
        s = mixed_u64(op, a, b, rank, shape, &r);
        if (!s && !pred && o != EMILY_S64) {
            s = emily_as_type(r, o, out);
            emily_tensor_release(r);
            return s;
        }
        if (!s) *out = r;
        return s;
    }

    emily_tensor *ac = NULL, *bc = NULL, *r = NULL;
    s = emi_convert_to(a, c, &ac);
    if (!s) s = emi_convert_to(b, c, &bc);
    if (!s) s = run_kernel(e, op, ac, bc, rank, shape, &r);
    emily_tensor_release(ac);
    emily_tensor_release(bc);
    if (s) return s;
    if (!pred && c != o) {
        s = emily_as_type(r, o, out);
        emily_tensor_release(r);
        return s;
    }
    *out = r;
    return EMILY_OK;
}

emily_status emily_binary(emily_binary_op op, const emily_tensor *a, const emily_tensor *b, emily_dtype out_type,
                          emily_tensor **out) {
    if ((unsigned)op >= EMILY_BINARY_OP_COUNT) return emily_error(EMILY_ERR_ARGUMENT, "binary: unknown op %d", (int)op);
    const char *name = op_names[op];
    const emily_tensor *pair[2] = {a, b};
    emily_status s = emi_check_args(name, out, 2, pair, (const char *const[]){"left operand", "right operand"});
    if (s) return s;
    emily_dtype t;
    s = emily_binary_type(op, a->dtype, b->dtype, &t);
    if (s) return s;
    bool pred = is_predicate(op);
    emily_dtype o = t;
    if (out_type != EMILY_DTYPE_AUTO) {
        if (!emily_dtype_valid(out_type))
            return emily_error(EMILY_ERR_TYPE, "%s: invalid output type %d", name, (int)out_type);
        if (pred ? out_type != EMILY_U8 : !same_class(out_type, t))
            return emily_error(EMILY_ERR_TYPE, "%s: output type %s does not fit %s and %s operands (Nx gives %s)", name,
                               emily_dtype_name(out_type), emily_dtype_name(a->dtype), emily_dtype_name(b->dtype),
                               emily_dtype_name(t));
        o = out_type;
    }
    const emily_engine *e;
    s = emi_check_same_device(name, 2, pair, &e);
    if (s) return s;
    int rank, max_rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t small[8];
    int64_t *shape = max_rank <= 8 ? small : malloc((size_t)max_rank * sizeof *shape);
    if (!shape) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", name);
    s = emi_broadcast_shapes(name, a->rank, a->shape, b->rank, b->shape, &rank, shape);
    /* the reference's errors for some operand values (negative shift
     * counts, fmod's non-numbers and zero divisors, complex atan2) */
    if (!s) s = emi_binary_check_raises(op, a, b, o, rank, shape);
    if (!s) s = binary_with(e, op, a, b, o, rank, shape, out);
    if (shape != small) free(shape);
    return s;
}
