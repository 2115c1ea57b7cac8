// Binary ops and select on CUDA: the per-element rules of
// core/scalar_binary.h with the same (op, dtype) table and compute types as
// src/cpu/binary.c. Contiguous operands (or a broadcast scalar) take the
// flat kernel with 16-byte loads; any other strides the strided one.
#include "cuda/common.cuh"
#include "core/scalar_binary.h"
#include "cuda/correctly_rounded.cuh"

using namespace emily_cuda;

namespace {

typedef emily_status (*binary_run)(const emily_cuda_ctx &, emily_tensor *, const emily_tensor *,
                                   const emily_tensor *);

// Loads/stores between storage and compute types.
#define ID(x) (x)
#define TO_U8(x) ((uint8_t)(x))
#define F16_LD(x) emily_sc_f16_to_f32(x)
#define F16_ST(x) emily_sc_f64_to_f16((double)(x)) /* exact widening, one rounding */
#define F16_LDD(x) emily_sc_f16_to_f64(x)
#define F16_STD(x) emily_sc_f64_to_f16(x)
#define BF16_LD(x) emily_sc_bf16_to_f32(x)
#define BF16_ST(x) emily_sc_f32_to_bf16(x)
#define BF16_LDD(x) emily_sc_bf16_to_f64(x)
#define BF16_STD(x) emily_sc_f64_to_bf16(x)
#define F32_LDD(x) ((double)(x))
#define F32_STD(x) ((float)(x))

__device__ __forceinline__ emily_sb_complex c64_ld(emily_c64 z) { return emily_sb_cmake(z.re, z.im); }
__device__ __forceinline__ emily_c64 c64_st(emily_sb_complex z) {
    emily_c64 r;
    r.re = (float)z.re;
    r.im = (float)z.im;
    return r;
}
__device__ __forceinline__ emily_sb_complex c128_ld(emily_c128 z) { return emily_sb_cmake(z.re, z.im); }
__device__ __forceinline__ emily_c128 c128_st(emily_sb_complex z) {
    emily_c128 r;
    r.re = z.re;
    r.im = z.im;
    return r;
}

#define OP_ADD(a, b) ((a) + (b))
#define OP_SUB(a, b) ((a) - (b))
#define OP_MUL(a, b) ((a) * (b))
#define OP_DIV(a, b) ((a) / (b))
#define OP_EQ(a, b) ((a) == (b))
#define OP_NE(a, b) ((a) != (b))
#define OP_GT(a, b) ((a) > (b))
#define OP_LT(a, b) ((a) < (b))
#define OP_GE(a, b) ((a) >= (b))
#define OP_LE(a, b) ((a) <= (b))
#define OP_LAND(a, b) (((a) != 0) & ((b) != 0))
#define OP_LOR(a, b) (((a) != 0) | ((b) != 0))
#define OP_LXOR(a, b) (((a) != 0) ^ ((b) != 0))
#define OP_CNE(a, b) (!emily_sb_cequal(a, b))
#define OP_CLAND(a, b) (emily_sb_cnonzero(a) & emily_sb_cnonzero(b))
#define OP_CLOR(a, b) (emily_sb_cnonzero(a) | emily_sb_cnonzero(b))
#define OP_CLXOR(a, b) (emily_sb_cnonzero(a) ^ emily_sb_cnonzero(b))

// NAME: storage TS in, TD out; computed in TC as ST(F(LD(a), LD(b))).
#define RUN(NAME, TS, TD, TC, LD, F, ST)                                               \
    struct NAME {                                                                      \
        typedef TS S;                                                                  \
        typedef TD D;                                                                  \
        static __device__ __forceinline__ TD apply(TS a, TS b) {                       \
            TC x = LD(a), y = LD(b);                                                   \
            return ST(F(x, y));                                                        \
        }                                                                              \
    };

#define DEF_INT(N, T)                                                                   \
    RUN(add_##N, T, T, T, ID, emily_sb_add_##N, ID)                                     \
    RUN(subtract_##N, T, T, T, ID, emily_sb_subtract_##N, ID)                           \
    RUN(multiply_##N, T, T, T, ID, emily_sb_multiply_##N, ID)                           \
    RUN(pow_##N, T, T, T, ID, emily_sb_pow_##N, ID)                                     \
    RUN(remainder_##N, T, T, T, ID, emily_sb_remainder_##N, ID)                         \
    RUN(quotient_##N, T, T, T, ID, emily_sb_quotient_##N, ID)                           \
    RUN(min_##N, T, T, T, ID, emily_sb_min_##N, ID)                                     \
    RUN(max_##N, T, T, T, ID, emily_sb_max_##N, ID)                                     \
    RUN(bitwise_and_##N, T, T, T, ID, emily_sb_bitwise_and_##N, ID)                     \
    RUN(bitwise_or_##N, T, T, T, ID, emily_sb_bitwise_or_##N, ID)                       \
    RUN(bitwise_xor_##N, T, T, T, ID, emily_sb_bitwise_xor_##N, ID)                     \
    RUN(left_shift_##N, T, T, T, ID, emily_sb_left_shift_##N, ID)                       \
    RUN(right_shift_##N, T, T, T, ID, emily_sb_right_shift_##N, ID)                     \
    RUN(equal_##N, T, uint8_t, T, ID, OP_EQ, TO_U8)                                     \
    RUN(not_equal_##N, T, uint8_t, T, ID, OP_NE, TO_U8)                                 \
    RUN(greater_##N, T, uint8_t, T, ID, OP_GT, TO_U8)                                   \
    RUN(less_##N, T, uint8_t, T, ID, OP_LT, TO_U8)                                      \
    RUN(greater_equal_##N, T, uint8_t, T, ID, OP_GE, TO_U8)                             \
    RUN(less_equal_##N, T, uint8_t, T, ID, OP_LE, TO_U8)                                \
    RUN(logical_and_##N, T, uint8_t, T, ID, OP_LAND, TO_U8)                             \
    RUN(logical_or_##N, T, uint8_t, T, ID, OP_LOR, TO_U8)                               \
    RUN(logical_xor_##N, T, uint8_t, T, ID, OP_LXOR, TO_U8)

DEF_INT(u8, uint8_t)
DEF_INT(u16, uint16_t)
DEF_INT(u32, uint32_t)
DEF_INT(u64, uint64_t)
DEF_INT(s8, int8_t)
DEF_INT(s16, int16_t)
DEF_INT(s32, int32_t)
DEF_INT(s64, int64_t)

#define PRED_RUNS(N, T, TC, LD)                                                         \
    RUN(equal_##N, T, uint8_t, TC, LD, OP_EQ, TO_U8)                                    \
    RUN(not_equal_##N, T, uint8_t, TC, LD, OP_NE, TO_U8)                                \
    RUN(greater_##N, T, uint8_t, TC, LD, OP_GT, TO_U8)                                  \
    RUN(less_##N, T, uint8_t, TC, LD, OP_LT, TO_U8)                                     \
    RUN(greater_equal_##N, T, uint8_t, TC, LD, OP_GE, TO_U8)                            \
    RUN(less_equal_##N, T, uint8_t, TC, LD, OP_LE, TO_U8)                               \
    RUN(logical_and_##N, T, uint8_t, TC, LD, OP_LAND, TO_U8)                            \
    RUN(logical_or_##N, T, uint8_t, TC, LD, OP_LOR, TO_U8)                              \
    RUN(logical_xor_##N, T, uint8_t, TC, LD, OP_LXOR, TO_U8)

#define DEF_FLOAT(N, T, TC, LD, ST, LDD, STD, MIN, MAX)                                 \
    RUN(add_##N, T, T, TC, LD, OP_ADD, ST)                                              \
    RUN(subtract_##N, T, T, TC, LD, OP_SUB, ST)                                         \
    RUN(multiply_##N, T, T, TC, LD, OP_MUL, ST)                                         \
    RUN(divide_##N, T, T, TC, LD, OP_DIV, ST)                                           \
    RUN(min_##N, T, T, TC, LD, MIN, ST)                                                 \
    RUN(max_##N, T, T, TC, LD, MAX, ST)                                                 \
    RUN(pow_##N, T, T, double, LDD, emily_sb_pow_f64, STD)                              \
    RUN(atan2_##N, T, T, double, LDD, emily_sb_atan2_f64, STD)                          \
    RUN(remainder_##N, T, T, double, LDD, emily_sb_remainder_f64, STD)                  \
    PRED_RUNS(N, T, TC, LD)

DEF_FLOAT(f32, float, float, ID, ID, F32_LDD, F32_STD, emily_sb_min_f32, emily_sb_max_f32)
DEF_FLOAT(f64, double, double, ID, ID, ID, ID, emily_sb_min_f64, emily_sb_max_f64)
DEF_FLOAT(f16, uint16_t, float, F16_LD, F16_ST, F16_LDD, F16_STD, emily_sb_min_f32, emily_sb_max_f32)
DEF_FLOAT(bf16, uint16_t, float, BF16_LD, BF16_ST, BF16_LDD, BF16_STD, emily_sb_min_f32,
          emily_sb_max_f32)

// Complex pow: emily_sb_cpow's rules and polar formula, with the nearly
// correctly rounded log, atan2, pow, exp, cos and sin of cuda/correctly_rounded.cuh
// (what glibc returns, nearly always): the angle w.re*theta + w.im*log(rho)
// can be large, so a last-bit difference in an ingredient moves the result
// far more than the corpus's 4 ULP (and flips the sign of overflowed parts).
__device__ inline emily_sb_complex cr_cpow(emily_sb_complex z, emily_sb_complex w) {
    int zero = z.re == 0 && z.im == 0;
    if (zero || !emily_sb_finite(z.re) || !emily_sb_finite(z.im) || !emily_sb_finite(w.re) ||
        !emily_sb_finite(w.im) || (w.re == 1 && w.im == 0) || (w.re == -1 && w.im == 0))
        return emily_sb_cpow(z, w);
    double rho = emily_sb_cabs(z), theta = emily_cr::cr_atan2(z.im, z.re);
    if (z.re == 0 || z.im == 0) theta = atan2(z.im, z.re); // exact cases (0, +-pi/2, pi)
    double s = __dmul_rn(emily_cr::cr_pow(rho, w.re), emily_cr::cr_exp(-w.im * theta));
    double r = __dadd_rn(__dmul_rn(w.re, theta), __dmul_rn(w.im, emily_cr::cr_log(rho)));
    double sn, cs;
    if (!emily_cr::cr_sincos(r, sn, cs)) { sn = sin(r); cs = cos(r); }
    return emily_sb_cmake(__dmul_rn(s, cs), __dmul_rn(s, sn));
}

#define DEF_COMPLEX(N, T, LD, ST)                                                       \
    RUN(add_##N, T, T, emily_sb_complex, LD, emily_sb_cadd, ST)                         \
    RUN(subtract_##N, T, T, emily_sb_complex, LD, emily_sb_csubtract, ST)               \
    RUN(multiply_##N, T, T, emily_sb_complex, LD, emily_sb_cmultiply, ST)               \
    RUN(divide_##N, T, T, emily_sb_complex, LD, emily_sb_cdivide, ST)                   \
    RUN(pow_##N, T, T, emily_sb_complex, LD, cr_cpow, ST)                         \
    RUN(equal_##N, T, uint8_t, emily_sb_complex, LD, emily_sb_cequal, TO_U8)            \
    RUN(not_equal_##N, T, uint8_t, emily_sb_complex, LD, OP_CNE, TO_U8)                 \
    RUN(logical_and_##N, T, uint8_t, emily_sb_complex, LD, OP_CLAND, TO_U8)             \
    RUN(logical_or_##N, T, uint8_t, emily_sb_complex, LD, OP_CLOR, TO_U8)               \
    RUN(logical_xor_##N, T, uint8_t, emily_sb_complex, LD, OP_CLXOR, TO_U8)

DEF_COMPLEX(c64, emily_c64, c64_ld, c64_st)
DEF_COMPLEX(c128, emily_c128, c128_ld, c128_st)

#define E(OP, DT, FN) table[OP][DT] = map2<FN>
#define TAB_PRED(DT, N)                                                                 \
    E(EMILY_EQUAL, DT, equal_##N); E(EMILY_NOT_EQUAL, DT, not_equal_##N);               \
    E(EMILY_GREATER, DT, greater_##N); E(EMILY_LESS, DT, less_##N);                     \
    E(EMILY_GREATER_EQUAL, DT, greater_equal_##N); E(EMILY_LESS_EQUAL, DT, less_equal_##N); \
    E(EMILY_LOGICAL_AND, DT, logical_and_##N); E(EMILY_LOGICAL_OR, DT, logical_or_##N);  \
    E(EMILY_LOGICAL_XOR, DT, logical_xor_##N)
#define TAB_INT(DT, N)                                                                  \
    E(EMILY_ADD, DT, add_##N); E(EMILY_SUBTRACT, DT, subtract_##N);                     \
    E(EMILY_MULTIPLY, DT, multiply_##N); E(EMILY_POW, DT, pow_##N);                     \
    E(EMILY_REMAINDER, DT, remainder_##N); E(EMILY_QUOTIENT, DT, quotient_##N);         \
    E(EMILY_MIN, DT, min_##N); E(EMILY_MAX, DT, max_##N);                               \
    E(EMILY_BITWISE_AND, DT, bitwise_and_##N); E(EMILY_BITWISE_OR, DT, bitwise_or_##N); \
    E(EMILY_BITWISE_XOR, DT, bitwise_xor_##N); E(EMILY_LEFT_SHIFT, DT, left_shift_##N); \
    E(EMILY_RIGHT_SHIFT, DT, right_shift_##N); TAB_PRED(DT, N)
#define TAB_FLOAT(DT, N)                                                                \
    E(EMILY_ADD, DT, add_##N); E(EMILY_SUBTRACT, DT, subtract_##N);                     \
    E(EMILY_MULTIPLY, DT, multiply_##N); E(EMILY_DIVIDE, DT, divide_##N);               \
    E(EMILY_POW, DT, pow_##N); E(EMILY_REMAINDER, DT, remainder_##N);                   \
    E(EMILY_ATAN2, DT, atan2_##N); E(EMILY_MIN, DT, min_##N); E(EMILY_MAX, DT, max_##N); \
    TAB_PRED(DT, N)
#define TAB_COMPLEX(DT, N)                                                              \
    E(EMILY_ADD, DT, add_##N); E(EMILY_SUBTRACT, DT, subtract_##N);                     \
    E(EMILY_MULTIPLY, DT, multiply_##N); E(EMILY_DIVIDE, DT, divide_##N);               \
    E(EMILY_POW, DT, pow_##N); E(EMILY_EQUAL, DT, equal_##N);                           \
    E(EMILY_NOT_EQUAL, DT, not_equal_##N); E(EMILY_LOGICAL_AND, DT, logical_and_##N);   \
    E(EMILY_LOGICAL_OR, DT, logical_or_##N); E(EMILY_LOGICAL_XOR, DT, logical_xor_##N)

struct binary_table {
    binary_run table[EMILY_BINARY_OP_COUNT][EMILY_DTYPE_COUNT];
    binary_table() : table{} {
        TAB_INT(EMILY_U8, u8); TAB_INT(EMILY_U16, u16); TAB_INT(EMILY_U32, u32);
        TAB_INT(EMILY_U64, u64); TAB_INT(EMILY_S8, s8); TAB_INT(EMILY_S16, s16);
        TAB_INT(EMILY_S32, s32); TAB_INT(EMILY_S64, s64);
        TAB_FLOAT(EMILY_F16, f16); TAB_FLOAT(EMILY_BF16, bf16);
        TAB_FLOAT(EMILY_F32, f32); TAB_FLOAT(EMILY_F64, f64);
        TAB_COMPLEX(EMILY_C64, c64); TAB_COMPLEX(EMILY_C128, c128);
    }
};
const binary_table runs;

} // namespace

extern "C" emily_status emi_cuda_binary(emily_binary_op op, emily_tensor *dst, const emily_tensor *a,
                                          const emily_tensor *b) {
    if ((unsigned)op >= EMILY_BINARY_OP_COUNT || !emily_dtype_valid(a->dtype) || a->dtype != b->dtype)
        return emily_error(EMILY_ERR_INTERNAL, "binary kernel: bad op or operand types");
    emily_dtype want = op >= EMILY_EQUAL ? EMILY_U8 : a->dtype;
    binary_run fn = runs.table[op][a->dtype];
    if (!fn || dst->dtype != want)
        return emily_error(EMILY_ERR_TYPE, "%s: no cuda kernel for %s operands with a %s output",
                           emily_binary_op_name(op), emily_dtype_name(a->dtype),
                           emily_dtype_name(dst->dtype));
    if (dst->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[3] = {dst, a, b};
    emily_status s = emi_cuda_begin(emily_binary_op_name(op), dev_of(dst), 3, ts, &ctx);
    return s ? s : fn(ctx, dst, a, b);
}

// ---- select ----
// The predicate is read as "nonzero" in its own dtype (integer or real
// float: NaN is true, -0.0 false); the branches are moved bit for bit.

template <typename P> __device__ __forceinline__ bool truthy(P v) { return v != 0; }
struct f16_bits { uint16_t v; };

template <typename P, typename T>
__global__ void select_kernel(Layout<4> L, T *d, const P *p, const T *x, const T *y, bool half) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[4];
        layout_offsets<4, int64_t>(L, i, off);
        P pv = p[off[1]];
        bool t = half ? (((uint64_t)pv & 0x7fffu) != 0) : truthy(pv);
        d[off[0]] = t ? x[off[2]] : y[off[3]];
    }
}

template <typename P, typename T>
static emily_status select_typed(const emily_cuda_ctx &ctx, emily_tensor *dst, const emily_tensor *pred,
                                 const emily_tensor *on_true, const emily_tensor *on_false) {
    const emily_tensor *ts[4] = {dst, pred, on_true, on_false};
    T *d = (T *)base_of(dst);
    const P *p = (const P *)base_of(pred);
    const T *x = (const T *)base_of(on_true), *y = (const T *)base_of(on_false);
    bool half = pred->dtype == EMILY_F16 || pred->dtype == EMILY_BF16;
    return for_layout<4>(ctx.op, ts, [&](const Layout<4> &L, const int64_t *off) -> emily_status {
        select_kernel<P, T><<<grid_for(ctx.device, L.total), BLOCK, 0, ctx.stream>>>(
            L, d + off[0], p + off[1], x + off[2], y + off[3], half);
        return emi_cuda_launched(&ctx);
    });
}

template <typename P>
static emily_status select_pred(const emily_cuda_ctx &ctx, emily_tensor *dst, const emily_tensor *pred,
                                const emily_tensor *on_true, const emily_tensor *on_false) {
    switch (emily_dtype_size(dst->dtype)) {
    case 1: return select_typed<P, uint8_t>(ctx, dst, pred, on_true, on_false);
    case 2: return select_typed<P, uint16_t>(ctx, dst, pred, on_true, on_false);
    case 4: return select_typed<P, uint32_t>(ctx, dst, pred, on_true, on_false);
    case 8: return select_typed<P, uint64_t>(ctx, dst, pred, on_true, on_false);
    default: return select_typed<P, b128_t>(ctx, dst, pred, on_true, on_false);
    }
}

extern "C" emily_status emi_cuda_select(emily_tensor *dst, const emily_tensor *pred,
                                          const emily_tensor *on_true, const emily_tensor *on_false) {
    emily_dtype pt = pred->dtype;
    if (emily_dtype_is_complex(pt) || !emily_dtype_valid(pt) || on_true->dtype != dst->dtype ||
        on_false->dtype != dst->dtype)
        return emily_error(EMILY_ERR_INTERNAL, "select kernel: bad operand types");
    if (dst->size == 0) return EMILY_OK;
    emily_cuda_ctx ctx;
    const emily_tensor *ts[4] = {dst, pred, on_true, on_false};
    emily_status s = emi_cuda_begin("select", dev_of(dst), 4, ts, &ctx);
    if (s) return s;
    switch (pt) {
    case EMILY_U8: case EMILY_S8: return select_pred<uint8_t>(ctx, dst, pred, on_true, on_false);
    case EMILY_U16: case EMILY_S16: case EMILY_F16: case EMILY_BF16:
        return select_pred<uint16_t>(ctx, dst, pred, on_true, on_false);
    case EMILY_U32: case EMILY_S32: return select_pred<uint32_t>(ctx, dst, pred, on_true, on_false);
    case EMILY_F32: return select_pred<float>(ctx, dst, pred, on_true, on_false);
    case EMILY_F64: return select_pred<double>(ctx, dst, pred, on_true, on_false);
    default: return select_pred<uint64_t>(ctx, dst, pred, on_true, on_false);
    }
}
