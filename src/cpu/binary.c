/* CPU kernels of the binary ops and select.
 *
 * Contract (src/ops/binary.c relies on it): a and b have one dtype, the
 * compute type; dst has that same dtype, or u8 for comparisons and
 * logical ops. The per-element rules are those of core/scalar_binary.h.
 *
 * Each (op, dtype) pair of core/binary_kernels.h has a run function for
 * one strided run of elements, generated from the op list, with fast
 * paths the compiler vectorizes for contiguous operands and for a
 * broadcast scalar on either side. The driver splits
 * the iteration space (outer positions x chunks of the inner run) over
 * the engine's caller-runs thread pool when it is large enough. */
#include <stdint.h>
#include "core/binary_kernels.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/unary_map.h"

typedef void (*bin_run)(int64_t n, void *d, int64_t sd, const void *a, int64_t sa,
                        const void *b, int64_t sb);

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

/* The kernels' loops: VEC ones are vectorized (-O2 alone would not),
 * SCALAR ones are not. */
#define LOOP_VEC _Pragma("omp simd")
#define LOOP_SCALAR

#define DEF_KERNEL(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP)                           \
    static void NAME(int64_t n, void *dv, int64_t sd, const void *av, int64_t sa,     \
                     const void *bv, int64_t sb) {                                    \
        RUN_BODY(TS, TD, TC, LD, F, ST, LOOP_##LOOP)                                  \
    }
#define DEF_OP(ENUM, name, rule) EMI_BINARY_KERNELS(rule)(DEF_KERNEL, ENUM, name)
EMILY_BINARY_OPS(DEF_OP)

/* ---- the table ---- */
#define TABLE_KERNEL(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP) [EMILY_##OP][EMILY_##DT] = NAME,
#define TABLE_OP(ENUM, name, rule) EMI_BINARY_KERNELS(rule)(TABLE_KERNEL, ENUM, name)
static const bin_run runs[EMILY_BINARY_OP_COUNT][EMILY_DTYPE_COUNT] = {EMILY_BINARY_OPS(TABLE_OP)};

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
    emily_status s = emi_binary_kernel_operands(op, a->dtype, b->dtype);
    if (s) return s;
    bin_run fn = runs[op][a->dtype];
    if (!fn || dst->dtype != emi_binary_kernel_output(op, a->dtype))
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
#define TRUTH_NUMBER(E, s, T) \
    case EMILY_##E: return ((const T *)p)[i] != 0;
#define TRUTH_HALF(E, s, T) \
    case EMILY_##E: return (((const T *)p)[i] & 0x7fffu) != 0; /* any bit but the sign */
    switch (pt) {
        EMI_DTYPES_INTEGER(TRUTH_NUMBER)
        EMI_DTYPES_HALF(TRUTH_HALF)
        EMI_DTYPES_NATIVE_FLOAT(TRUTH_NUMBER)
    default: return false; /* complex: refused by emi_cpu_select */
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
    emily_status s = emi_select_kernel_operands(dst->dtype, pt, on_true->dtype, on_false->dtype);
    if (s || dst->size == 0) return s;
    const emily_tensor *ts[4] = {dst, pred, on_true, on_false};
    sel_job j = {.pt = pt};
    if ((s = emi_iter_tensors(&j.it, 4, ts))) return s;
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
