/* CPU kernels of the binary ops and select.
 *
 * Contract (src/ops/binary.c relies on it): a and b have one dtype, the
 * compute type; dst has that same dtype, or u8 for comparisons and
 * logical ops. The per-element rules are those of core/scalar_binary.h.
 *
 * Each (op, dtype) pair has a run function for one strided run of
 * elements, with fast paths the compiler vectorizes for contiguous
 * operands and for a broadcast scalar on either side. The driver splits
 * the iteration space (outer positions x chunks of the inner run) over
 * the engine's caller-runs thread pool when it is large enough. */
#include <stdint.h>
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/parallel.h"
#include "core/scalar_binary.h"

typedef void (*bin_run)(int64_t n, void *d, int64_t sd, const void *a, int64_t sa,
                        const void *b, int64_t sb);

/* Loads/stores between storage and compute types. */
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

typedef struct { float re, im; } c64_t;
static inline emily_sb_complex c64_ld(c64_t z) { return emily_sb_cmake(z.re, z.im); }
static inline c64_t c64_st(emily_sb_complex z) {
    c64_t r = {(float)z.re, (float)z.im};
    return r;
}

/* Element functions written as macros so simple ones vectorize. */
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

/* One run: n elements, element strides sd/sa/sb. TS storage type of a
 * and b, TD of dst, TC compute type. */
#define RUN_BODY(TS, TD, TC, LD, F, ST, PRAGMA)                                       \
    TD *restrict d = dv;                                                              \
    const TS *restrict x = av;                                                        \
    const TS *restrict y = bv;                                                        \
    if (sd == 1 && sa == 1 && sb == 1) {                                              \
        PRAGMA for (int64_t i = 0; i < n; i++) {                                      \
            TC a_ = LD(x[i]), b_ = LD(y[i]);                                          \
            d[i] = ST(F(a_, b_));                                                     \
        }                                                                             \
    } else if (sd == 1 && sa == 1 && sb == 0) {                                       \
        TC b_ = LD(y[0]);                                                             \
        PRAGMA for (int64_t i = 0; i < n; i++) {                                      \
            TC a_ = LD(x[i]);                                                         \
            d[i] = ST(F(a_, b_));                                                     \
        }                                                                             \
    } else if (sd == 1 && sa == 0 && sb == 1) {                                       \
        TC a_ = LD(x[0]);                                                             \
        PRAGMA for (int64_t i = 0; i < n; i++) {                                      \
            TC b_ = LD(y[i]);                                                         \
            d[i] = ST(F(a_, b_));                                                     \
        }                                                                             \
    } else {                                                                          \
        for (int64_t i = 0; i < n; i++) {                                             \
            TC a_ = LD(x[i * sa]), b_ = LD(y[i * sb]);                                \
            d[i * sd] = ST(F(a_, b_));                                                \
        }                                                                             \
    }

#define SIMD _Pragma("omp simd")
#define NOSIMD

#define RUN(NAME, TS, TD, TC, LD, F, ST, PRAGMA)                                      \
    static void NAME(int64_t n, void *dv, int64_t sd, const void *av, int64_t sa,     \
                     const void *bv, int64_t sb) {                                    \
        RUN_BODY(TS, TD, TC, LD, F, ST, PRAGMA)                                       \
    }

/* ---- integers ---- */
#define DEF_INT(N, T)                                                                   \
    RUN(add_##N, T, T, T, ID, emily_sb_add_##N, ID, SIMD)                               \
    RUN(subtract_##N, T, T, T, ID, emily_sb_subtract_##N, ID, SIMD)                     \
    RUN(multiply_##N, T, T, T, ID, emily_sb_multiply_##N, ID, SIMD)                     \
    RUN(pow_##N, T, T, T, ID, emily_sb_pow_##N, ID, NOSIMD)                             \
    RUN(remainder_##N, T, T, T, ID, emily_sb_remainder_##N, ID, NOSIMD)                 \
    RUN(quotient_##N, T, T, T, ID, emily_sb_quotient_##N, ID, NOSIMD)                   \
    RUN(min_##N, T, T, T, ID, emily_sb_min_##N, ID, SIMD)                               \
    RUN(max_##N, T, T, T, ID, emily_sb_max_##N, ID, SIMD)                               \
    RUN(bitwise_and_##N, T, T, T, ID, emily_sb_bitwise_and_##N, ID, SIMD)               \
    RUN(bitwise_or_##N, T, T, T, ID, emily_sb_bitwise_or_##N, ID, SIMD)                 \
    RUN(bitwise_xor_##N, T, T, T, ID, emily_sb_bitwise_xor_##N, ID, SIMD)               \
    RUN(left_shift_##N, T, T, T, ID, emily_sb_left_shift_##N, ID, NOSIMD)               \
    RUN(right_shift_##N, T, T, T, ID, emily_sb_right_shift_##N, ID, NOSIMD)             \
    RUN(equal_##N, T, uint8_t, T, ID, OP_EQ, TO_U8, SIMD)                               \
    RUN(not_equal_##N, T, uint8_t, T, ID, OP_NE, TO_U8, SIMD)                           \
    RUN(greater_##N, T, uint8_t, T, ID, OP_GT, TO_U8, SIMD)                             \
    RUN(less_##N, T, uint8_t, T, ID, OP_LT, TO_U8, SIMD)                                \
    RUN(greater_equal_##N, T, uint8_t, T, ID, OP_GE, TO_U8, SIMD)                       \
    RUN(less_equal_##N, T, uint8_t, T, ID, OP_LE, TO_U8, SIMD)                          \
    RUN(logical_and_##N, T, uint8_t, T, ID, OP_LAND, TO_U8, SIMD)                       \
    RUN(logical_or_##N, T, uint8_t, T, ID, OP_LOR, TO_U8, SIMD)                         \
    RUN(logical_xor_##N, T, uint8_t, T, ID, OP_LXOR, TO_U8, SIMD)

DEF_INT(u8, uint8_t)
DEF_INT(u16, uint16_t)
DEF_INT(u32, uint32_t)
DEF_INT(u64, uint64_t)
DEF_INT(s8, int8_t)
DEF_INT(s16, int16_t)
DEF_INT(s32, int32_t)
DEF_INT(s64, int64_t)

/* ---- real floats ----
 * N: suffix; T: storage; TC: compute type of the simple ops; LD/ST its
 * conversions; LDD/STD the conversions through double for pow, atan2
 * and remainder (computed in f64 like Nx, rounded once). */
#define PRED_RUNS(N, T, TC, LD, V)                                                      \
    RUN(equal_##N, T, uint8_t, TC, LD, OP_EQ, TO_U8, V)                                 \
    RUN(not_equal_##N, T, uint8_t, TC, LD, OP_NE, TO_U8, V)                             \
    RUN(greater_##N, T, uint8_t, TC, LD, OP_GT, TO_U8, V)                               \
    RUN(less_##N, T, uint8_t, TC, LD, OP_LT, TO_U8, V)                                  \
    RUN(greater_equal_##N, T, uint8_t, TC, LD, OP_GE, TO_U8, V)                         \
    RUN(less_equal_##N, T, uint8_t, TC, LD, OP_LE, TO_U8, V)                            \
    RUN(logical_and_##N, T, uint8_t, TC, LD, OP_LAND, TO_U8, V)                         \
    RUN(logical_or_##N, T, uint8_t, TC, LD, OP_LOR, TO_U8, V)                           \
    RUN(logical_xor_##N, T, uint8_t, TC, LD, OP_LXOR, TO_U8, V)

#define DEF_FLOAT(N, T, TC, LD, ST, LDD, STD, MIN, MAX, V)                              \
    RUN(add_##N, T, T, TC, LD, OP_ADD, ST, V)                                           \
    RUN(subtract_##N, T, T, TC, LD, OP_SUB, ST, V)                                      \
    RUN(multiply_##N, T, T, TC, LD, OP_MUL, ST, V)                                      \
    RUN(divide_##N, T, T, TC, LD, OP_DIV, ST, V)                                        \
    RUN(min_##N, T, T, TC, LD, MIN, ST, V)                                              \
    RUN(max_##N, T, T, TC, LD, MAX, ST, V)                                              \
    RUN(pow_##N, T, T, double, LDD, emily_sb_pow_f64, STD, NOSIMD)                      \
    RUN(atan2_##N, T, T, double, LDD, emily_sb_atan2_f64, STD, NOSIMD)                  \
    RUN(remainder_##N, T, T, double, LDD, emily_sb_remainder_f64, STD, NOSIMD)          \
    PRED_RUNS(N, T, TC, LD, V)

DEF_FLOAT(f32, float, float, ID, ID, F32_LDD, F32_STD, emily_sb_min_f32, emily_sb_max_f32, SIMD)
DEF_FLOAT(f64, double, double, ID, ID, ID, ID, emily_sb_min_f64, emily_sb_max_f64, SIMD)
DEF_FLOAT(f16, uint16_t, float, F16_LD, F16_ST, F16_LDD, F16_STD, emily_sb_min_f32,
          emily_sb_max_f32, NOSIMD)
DEF_FLOAT(bf16, uint16_t, float, BF16_LD, BF16_ST, BF16_LDD, BF16_STD, emily_sb_min_f32,
          emily_sb_max_f32, NOSIMD)

/* ---- complex ---- */
#define DEF_COMPLEX(N, T, LD, ST)                                                       \
    RUN(add_##N, T, T, emily_sb_complex, LD, emily_sb_cadd, ST, NOSIMD)                 \
    RUN(subtract_##N, T, T, emily_sb_complex, LD, emily_sb_csubtract, ST, NOSIMD)       \
    RUN(multiply_##N, T, T, emily_sb_complex, LD, emily_sb_cmultiply, ST, NOSIMD)       \
    RUN(divide_##N, T, T, emily_sb_complex, LD, emily_sb_cdivide, ST, NOSIMD)           \
    RUN(pow_##N, T, T, emily_sb_complex, LD, emily_sb_cpow, ST, NOSIMD)                 \
    RUN(equal_##N, T, uint8_t, emily_sb_complex, LD, emily_sb_cequal, TO_U8, NOSIMD)    \
    RUN(not_equal_##N, T, uint8_t, emily_sb_complex, LD, OP_CNE, TO_U8, NOSIMD)         \
    RUN(logical_and_##N, T, uint8_t, emily_sb_complex, LD, OP_CLAND, TO_U8, NOSIMD)     \
    RUN(logical_or_##N, T, uint8_t, emily_sb_complex, LD, OP_CLOR, TO_U8, NOSIMD)       \
    RUN(logical_xor_##N, T, uint8_t, emily_sb_complex, LD, OP_CLXOR, TO_U8, NOSIMD)

DEF_COMPLEX(c64, c64_t, c64_ld, c64_st)
DEF_COMPLEX(c128, emily_sb_complex, ID, ID)

/* ---- the table ---- */
#define E(OP, DT, FN) [OP][DT] = FN
#define TAB_PRED(DT, N)                                                                 \
    E(EMILY_EQUAL, DT, equal_##N), E(EMILY_NOT_EQUAL, DT, not_equal_##N),               \
    E(EMILY_GREATER, DT, greater_##N), E(EMILY_LESS, DT, less_##N),                     \
    E(EMILY_GREATER_EQUAL, DT, greater_equal_##N), E(EMILY_LESS_EQUAL, DT, less_equal_##N), \
    E(EMILY_LOGICAL_AND, DT, logical_and_##N), E(EMILY_LOGICAL_OR, DT, logical_or_##N),  \
    E(EMILY_LOGICAL_XOR, DT, logical_xor_##N)
#define TAB_INT(DT, N)                                                                  \
    E(EMILY_ADD, DT, add_##N), E(EMILY_SUBTRACT, DT, subtract_##N),                     \
    E(EMILY_MULTIPLY, DT, multiply_##N), E(EMILY_POW, DT, pow_##N),                     \
    E(EMILY_REMAINDER, DT, remainder_##N), E(EMILY_QUOTIENT, DT, quotient_##N),         \
    E(EMILY_MIN, DT, min_##N), E(EMILY_MAX, DT, max_##N),                               \
    E(EMILY_BITWISE_AND, DT, bitwise_and_##N), E(EMILY_BITWISE_OR, DT, bitwise_or_##N), \
    E(EMILY_BITWISE_XOR, DT, bitwise_xor_##N), E(EMILY_LEFT_SHIFT, DT, left_shift_##N), \
    E(EMILY_RIGHT_SHIFT, DT, right_shift_##N), TAB_PRED(DT, N)
#define TAB_FLOAT(DT, N)                                                                \
    E(EMILY_ADD, DT, add_##N), E(EMILY_SUBTRACT, DT, subtract_##N),                     \
    E(EMILY_MULTIPLY, DT, multiply_##N), E(EMILY_DIVIDE, DT, divide_##N),               \
    E(EMILY_POW, DT, pow_##N), E(EMILY_REMAINDER, DT, remainder_##N),                   \
    E(EMILY_ATAN2, DT, atan2_##N), E(EMILY_MIN, DT, min_##N), E(EMILY_MAX, DT, max_##N), \
    TAB_PRED(DT, N)
#define TAB_COMPLEX(DT, N)                                                              \
    E(EMILY_ADD, DT, add_##N), E(EMILY_SUBTRACT, DT, subtract_##N),                     \
    E(EMILY_MULTIPLY, DT, multiply_##N), E(EMILY_DIVIDE, DT, divide_##N),               \
    E(EMILY_POW, DT, pow_##N), E(EMILY_EQUAL, DT, equal_##N),                           \
    E(EMILY_NOT_EQUAL, DT, not_equal_##N), E(EMILY_LOGICAL_AND, DT, logical_and_##N),   \
    E(EMILY_LOGICAL_OR, DT, logical_or_##N), E(EMILY_LOGICAL_XOR, DT, logical_xor_##N)

static const bin_run runs[EMILY_BINARY_OP_COUNT][EMILY_DTYPE_COUNT] = {
    TAB_INT(EMILY_U8, u8),     TAB_INT(EMILY_U16, u16),   TAB_INT(EMILY_U32, u32),
    TAB_INT(EMILY_U64, u64),   TAB_INT(EMILY_S8, s8),     TAB_INT(EMILY_S16, s16),
    TAB_INT(EMILY_S32, s32),   TAB_INT(EMILY_S64, s64),   TAB_FLOAT(EMILY_F16, f16),
    TAB_FLOAT(EMILY_BF16, bf16), TAB_FLOAT(EMILY_F32, f32), TAB_FLOAT(EMILY_F64, f64),
    TAB_COMPLEX(EMILY_C64, c64), TAB_COMPLEX(EMILY_C128, c128),
};

static bool is_pred_op(emily_binary_op op) { return op >= EMILY_EQUAL; }

/* Runs `fn` over the 3-operand iteration of (dst, a, b) in chunks. */
#define CHUNK 16384

/* One job of the driver: tasks are (outer position, chunk of the inner
 * run); a job of the caller-runs pool (emi_cpu_parallel) takes
 * `per_job` consecutive tasks, about CHUNK elements, so short inner runs
 * (a bias add's rows) are not one pool claim each. Threads come from the
 * engine's pool, not an OpenMP team: a fork-join waits for every team
 * thread, which on a loaded machine meant a scheduler time slice per op
 * (an add went from 64 us to 4 ms). */
typedef struct bin_job {
    emily_iter it;
    char *dbase;
    const char *abase, *bbase;
    int64_t des, es, inner, chunk, nch, tasks;
    int64_t sd, sa, sb;
    bin_run fn;
} bin_job;

/* Tasks a pool job takes: about CHUNK elements' worth. */
static int64_t tasks_per_job(int64_t chunk) { return chunk > 0 && chunk < CHUNK ? CHUNK / chunk : 1; }

static void bin_task(const bin_job *j, int64_t t) {
    int64_t pos = t / j->nch, start = (t % j->nch) * j->chunk;
    int64_t n = j->inner - start < j->chunk ? j->inner - start : j->chunk;
    int64_t off[3];
    emi_iter_offsets(&j->it, pos, off);
    j->fn(n, j->dbase + (off[0] + start * j->sd) * j->des, j->sd, j->abase + (off[1] + start * j->sa) * j->es,
          j->sa, j->bbase + (off[2] + start * j->sb) * j->es, j->sb);
}

static void bin_tasks(void *ctx, int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; t++) bin_task(ctx, t);
}

static emily_status drive(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b,
                          bin_run fn) {
    const emily_tensor *ts[3] = {dst, a, b};
    bin_job j = {.fn = fn};
    emily_status s = emi_iter_tensors(&j.it, 3, ts);
    if (s) return s;
    j.dbase = emily_tensor_base(dst);
    j.abase = emily_tensor_base(a);
    j.bbase = emily_tensor_base(b);
    j.des = (int64_t)emily_dtype_size(dst->dtype);
    j.es = (int64_t)emily_dtype_size(a->dtype);
    j.inner = j.it.inner_n;
    j.chunk = j.inner > CHUNK ? CHUNK : j.inner;
    j.nch = j.chunk > 0 ? (j.inner + j.chunk - 1) / j.chunk : 0;
    j.tasks = j.it.outer_n * j.nch;
    j.sd = j.it.inner_stride[0];
    j.sa = j.it.inner_stride[1];
    j.sb = j.it.inner_stride[2];
    /* no threads for small work */
    emi_cpu_parallel_ranges(j.tasks, tasks_per_job(j.chunk), dst->size >= EMILY_PARALLEL_MIN, bin_tasks, &j);
    emi_iter_free(&j.it);
    return EMILY_OK;
}

emily_status emi_cpu_binary(emily_binary_op op, emily_tensor *dst, const emily_tensor *a,
                              const emily_tensor *b) {
    if ((unsigned)op >= EMILY_BINARY_OP_COUNT || !emily_dtype_valid(a->dtype) ||
        a->dtype != b->dtype)
        return emily_error(EMILY_ERR_INTERNAL, "binary kernel: bad op or operand types");
    emily_dtype want = is_pred_op(op) ? EMILY_U8 : a->dtype;
    bin_run fn = runs[op][a->dtype];
    if (!fn || dst->dtype != want)
        return emily_error(EMILY_ERR_TYPE, "%s: no cpu kernel for %s operands with a %s output",
                           emily_binary_op_name(op), emily_dtype_name(a->dtype),
                           emily_dtype_name(dst->dtype));
    if (dst->size == 0) return EMILY_OK;
    return drive(dst, a, b, fn);
}

/* ---- select ----
 * The predicate is read as "nonzero" in its own dtype (integer or real
 * float: NaN is true, -0.0 false); the branches are moved bit for bit. */

static inline bool pred_at(emily_dtype pt, const char *p, int64_t i) {
    switch (pt) {
    case EMILY_U8: case EMILY_S8: return ((const uint8_t *)p)[i] != 0;
    case EMILY_U16: case EMILY_S16: return ((const uint16_t *)p)[i] != 0;
    case EMILY_F16: case EMILY_BF16: return (((const uint16_t *)p)[i] & 0x7fffu) != 0;
    case EMILY_U32: case EMILY_S32: return ((const uint32_t *)p)[i] != 0;
    case EMILY_F32: return ((const float *)p)[i] != 0;
    case EMILY_F64: return ((const double *)p)[i] != 0;
    default: return ((const uint64_t *)p)[i] != 0;
    }
}

typedef struct { uint64_t lo, hi; } sel_u128;

#define SELECT_RUN(T)                                                                   \
    {                                                                                   \
        T *d = (T *)dp;                                                                 \
        const T *x = (const T *)xp, *y = (const T *)yp;                                 \
        if (pt == EMILY_U8 && sd == 1 && sp == 1 && sx == 1 && sy == 1) {              \
            const uint8_t *pp = (const uint8_t *)pr;                                    \
            for (int64_t i = 0; i < n; i++) d[i] = pp[i] ? x[i] : y[i];                 \
        } else if (pt == EMILY_U8 && sd == 1 && sp == 1) {                              \
            const uint8_t *pp = (const uint8_t *)pr;                                    \
            for (int64_t i = 0; i < n; i++) d[i] = pp[i] ? x[i * sx] : y[i * sy];       \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++)                                             \
                d[i * sd] = pred_at(pt, pr, i * sp) ? x[i * sx] : y[i * sy];            \
        }                                                                               \
    }

typedef struct sel_job {
    emily_iter it;
    emily_dtype pt;
    char *dbase;
    const char *pbase, *tbase, *fbase;
    int64_t es, ps, inner, chunk, nch, tasks;
    int64_t sd, sp, sx, sy;
} sel_job;

static void sel_task(const sel_job *j, int64_t t) {
    int64_t pos = t / j->nch, start = (t % j->nch) * j->chunk;
    int64_t n = j->inner - start < j->chunk ? j->inner - start : j->chunk;
    int64_t off[4];
    emi_iter_offsets(&j->it, pos, off);
    emily_dtype pt = j->pt;
    int64_t sd = j->sd, sp = j->sp, sx = j->sx, sy = j->sy;
    char *dp = j->dbase + (off[0] + start * sd) * j->es;
    const char *pr = j->pbase + (off[1] + start * sp) * j->ps;
    const char *xp = j->tbase + (off[2] + start * sx) * j->es;
    const char *yp = j->fbase + (off[3] + start * sy) * j->es;
    switch (j->es) {
    case 1: SELECT_RUN(uint8_t) break;
    case 2: SELECT_RUN(uint16_t) break;
    case 4: SELECT_RUN(uint32_t) break;
    case 8: SELECT_RUN(uint64_t) break;
    default: SELECT_RUN(sel_u128) break;
    }
}

static void sel_tasks(void *ctx, int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; t++) sel_task(ctx, t);
}

emily_status emi_cpu_select(emily_tensor *dst, const emily_tensor *pred,
                              const emily_tensor *on_true, const emily_tensor *on_false) {
    emily_dtype pt = pred->dtype;
    if (emily_dtype_is_complex(pt) || !emily_dtype_valid(pt) || on_true->dtype != dst->dtype ||
        on_false->dtype != dst->dtype)
        return emily_error(EMILY_ERR_INTERNAL, "select kernel: bad operand types");
    if (dst->size == 0) return EMILY_OK;
    const emily_tensor *ts[4] = {dst, pred, on_true, on_false};
    sel_job j = {.pt = pt};
    emily_status s = emi_iter_tensors(&j.it, 4, ts);
    if (s) return s;
    j.dbase = emily_tensor_base(dst);
    j.pbase = emily_tensor_base(pred);
    j.tbase = emily_tensor_base(on_true);
    j.fbase = emily_tensor_base(on_false);
    j.es = (int64_t)emily_dtype_size(dst->dtype);
    j.ps = (int64_t)emily_dtype_size(pt);
    j.inner = j.it.inner_n;
    j.chunk = j.inner > CHUNK ? CHUNK : j.inner;
    j.nch = j.chunk > 0 ? (j.inner + j.chunk - 1) / j.chunk : 0;
    j.tasks = j.it.outer_n * j.nch;
    j.sd = j.it.inner_stride[0];
    j.sp = j.it.inner_stride[1];
    j.sx = j.it.inner_stride[2];
    j.sy = j.it.inner_stride[3];
    emi_cpu_parallel_ranges(j.tasks, tasks_per_job(j.chunk), dst->size >= EMILY_PARALLEL_MIN, sel_tasks, &j);
    emi_iter_free(&j.it);
    return EMILY_OK;
}
