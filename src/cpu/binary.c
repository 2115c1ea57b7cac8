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
#include "cpu/parallel.h"
#include "core/scalar_binary.h"

typedef void (*bin_run)(int64_t n, void *d, int64_t sd, const void *a, int64_t sa, const void *b, int64_t sb);

/* One run: n elements, element strides sd/sa/sb. TS storage type of a
 * and b, TD of dst, TC compute type. The contiguous runs and a broadcast
 * scalar on either side (loaded once, before the loop) are loops of
 * their own, which the compiler vectorizes. RUN_LOOP is each loop: the
 * declarations of a_ and b_ that the loop loads (the variable part),
 * then d's element D. */
#define RUN_LOOP(F, ST, PRAGMA, D, ...) \
    PRAGMA                              \
    for (int64_t i = 0; i < n; i++) {   \
        __VA_ARGS__;                    \
        D = ST(F(a_, b_));              \
    }
#define RUN_BODY(TS, TD, TC, LD, F, ST, PRAGMA)                                 \
    TD *restrict d = dv;                                                        \
    const TS *restrict x = av;                                                  \
    const TS *restrict y = bv;                                                  \
    if (sd == 1 && sa == 1 && sb == 1) {                                        \
        RUN_LOOP(F, ST, PRAGMA, d[i], TC a_ = LD(x[i]), b_ = LD(y[i]))          \
    } else if (sd == 1 && sa == 1 && sb == 0) {                                 \
        TC b_ = LD(y[0]);                                                       \
        RUN_LOOP(F, ST, PRAGMA, d[i], TC a_ = LD(x[i]))                         \
    } else if (sd == 1 && sa == 0 && sb == 1) {                                 \
        TC a_ = LD(x[0]);                                                       \
        RUN_LOOP(F, ST, PRAGMA, d[i], TC b_ = LD(y[i]))                         \
    } else {                                                                    \
        RUN_LOOP(F, ST, , d[i * sd], TC a_ = LD(x[i * sa]), b_ = LD(y[i * sb])) \
    }

/* The kernels' loops: VEC ones are vectorized (-O2 alone would not),
 * SCALAR ones are not. */
#define LOOP_VEC _Pragma("omp simd")
#define LOOP_SCALAR

#define DEF_KERNEL(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP)                                                   \
    static void NAME(int64_t n, void *dv, int64_t sd, const void *av, int64_t sa, const void *bv, int64_t sb) { \
        RUN_BODY(TS, TD, TC, LD, F, ST, LOOP_##LOOP)                                                            \
    }
#define DEF_OP(ENUM, name, rule) EMI_BINARY_KERNELS(rule)(DEF_KERNEL, ENUM, name)
EMILY_BINARY_OPS(DEF_OP)

/* ---- the table ---- */
#define TABLE_KERNEL(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP) [EMILY_##OP][EMILY_##DT] = NAME,
#define TABLE_OP(ENUM, name, rule) EMI_BINARY_KERNELS(rule)(TABLE_KERNEL, ENUM, name)
static const bin_run runs[EMILY_BINARY_OP_COUNT][EMILY_DTYPE_COUNT] = {EMILY_BINARY_OPS(TABLE_OP)};

/* ---- the driver ----
 * Binary ops and select run the same way over their operands (dst
 * first): tasks are (outer position, chunk of the inner run); a job of
 * the caller-runs pool (emi_cpu_parallel) takes `per_job` consecutive
 * tasks, about CHUNK elements, so short inner runs (a bias add's rows)
 * are not one pool claim each. Threads come from the engine's pool, not
 * an OpenMP team: a fork-join waits for every team thread, which on a
 * loaded machine meant a scheduler time slice per op (an add went from
 * 64 us to 4 ms). */
#define CHUNK 16384
#define MAX_OPERANDS 4

typedef struct task_grid {
    emily_iter it;
    char *base[MAX_OPERANDS];
    int64_t esize[MAX_OPERANDS];
    int64_t inner, chunk, nch, tasks;
} task_grid;

/* The size of an element of a valid dtype (inline: small ops are mostly
 * this set-up). */
static inline int64_t element_size(emily_dtype t) {
// clang-format off
#define ELEMENT_SIZE(E, s, T) \
    case EMILY_##E: return (int64_t)sizeof(T);
    // clang-format on
    switch (t) {
        EMI_DTYPES(ELEMENT_SIZE)
    default: return 0;
    }
#undef ELEMENT_SIZE
}

/* (inline, so that the loops over a constant n unroll) */
static inline emily_status grid_init(task_grid *g, int n, const emily_tensor *const *ts) {
    emily_status s = emi_iter_tensors(&g->it, n, ts);
    if (s) return s;
    for (int k = 0; k < n; k++) {
        char *data = ts[k]->buffer->data; /* as emily_tensor_base(ts[k]) */
        g->esize[k] = element_size(ts[k]->dtype);
        g->base[k] = data ? data + ts[k]->offset * g->esize[k] : NULL;
    }
    g->inner = g->it.inner_n;
    g->chunk = g->inner > CHUNK ? CHUNK : g->inner;
    g->nch = g->chunk > 0 ? (g->inner + g->chunk - 1) / g->chunk : 0;
    g->tasks = g->it.outer_n * g->nch;
    return EMILY_OK;
}

/* Task t's element count, and each operand's first element and stride
 * (in elements) along the run. */
static inline int64_t grid_task(const task_grid *g, int n, int64_t t, char **at, int64_t *stride) {
    int64_t pos = t / g->nch, start = (t % g->nch) * g->chunk;
    int64_t off[MAX_OPERANDS];
    emi_iter_offsets(&g->it, pos, off);
    for (int k = 0; k < n; k++) {
        stride[k] = g->it.inner_stride[k];
        at[k] = g->base[k] + (off[k] + start * stride[k]) * g->esize[k];
    }
    return g->inner - start < g->chunk ? g->inner - start : g->chunk;
}

/* Runs tasks(ctx, lo, hi) over the grid's tasks (threaded from
 * EMILY_PARALLEL_MIN output elements on), then frees the grid. */
static void grid_run(task_grid *g, int64_t size, emily_range_fn tasks, void *ctx) {
    /* tasks a pool job takes: about CHUNK elements' worth */
    int64_t per_job = g->chunk > 0 && g->chunk < CHUNK ? CHUNK / g->chunk : 1;
    emi_cpu_parallel_ranges(g->tasks, per_job, size >= EMILY_PARALLEL_MIN, tasks, ctx);
    emi_iter_free(&g->it);
}

typedef struct bin_job {
    task_grid g;
    bin_run fn;
} bin_job;

static void bin_tasks(void *ctx, int64_t lo, int64_t hi) {
    const bin_job *j = ctx;
    char *at[3];
    int64_t st[3];
    for (int64_t t = lo; t < hi; t++) {
        int64_t n = grid_task(&j->g, 3, t, at, st);
        j->fn(n, at[0], st[0], at[1], st[1], at[2], st[2]);
    }
}

static emily_status drive(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, bin_run fn) {
    const emily_tensor *ts[3] = {dst, a, b};
    bin_job j = {.fn = fn};
    emily_status s = grid_init(&j.g, 3, ts);
    if (!s) grid_run(&j.g, dst->size, bin_tasks, &j);
    return s;
}

emily_status emi_cpu_binary(emily_binary_op op, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b) {
    emily_status s = emi_binary_kernel_operands(op, a->dtype, b->dtype);
    if (s) return s;
    bin_run fn = runs[op][a->dtype];
    if (!fn || dst->dtype != emi_binary_kernel_output(op, a->dtype))
        return emily_error(EMILY_ERR_TYPE, "%s: no cpu kernel for %s operands with a %s output",
                           emily_binary_op_name(op), emily_dtype_name(a->dtype), emily_dtype_name(dst->dtype));
    if (dst->size == 0) return EMILY_OK;
    return drive(dst, a, b, fn);
}

/* ---- select ----
 * The predicate is read as "nonzero" in its own dtype (integer or real
 * float: NaN is true, -0.0 false); the branches are moved bit for bit. */

static inline bool pred_at(emily_dtype pt, const char *p, int64_t i) {
// clang-format off
#define TRUTH_NUMBER(E, s, T) \
    case EMILY_##E: return ((const T *)p)[i] != 0;
#define TRUTH_HALF(E, s, T) \
    case EMILY_##E: return (((const T *)p)[i] & 0x7fffu) != 0; /* any bit but the sign */
    // clang-format on
    switch (pt) {
        EMI_DTYPES_INTEGER(TRUTH_NUMBER)
        EMI_DTYPES_HALF(TRUTH_HALF)
        EMI_DTYPES_NATIVE_FLOAT(TRUTH_NUMBER)
    default: return false; /* complex: refused by emi_cpu_select */
    }
}

typedef struct {
    uint64_t lo, hi;
} sel_u128;

#define SELECT_RUN(T)                                                                                    \
    {                                                                                                    \
        T *d = (T *)dp;                                                                                  \
        const T *x = (const T *)xp, *y = (const T *)yp;                                                  \
        if (pt == EMILY_U8 && sd == 1 && sp == 1 && sx == 1 && sy == 1) {                                \
            const uint8_t *pp = (const uint8_t *)pr;                                                     \
            for (int64_t i = 0; i < n; i++) d[i] = pp[i] ? x[i] : y[i];                                  \
        } else if (pt == EMILY_U8 && sd == 1 && sp == 1) {                                               \
            const uint8_t *pp = (const uint8_t *)pr;                                                     \
            for (int64_t i = 0; i < n; i++) d[i] = pp[i] ? x[i * sx] : y[i * sy];                        \
        } else {                                                                                         \
            for (int64_t i = 0; i < n; i++) d[i * sd] = pred_at(pt, pr, i * sp) ? x[i * sx] : y[i * sy]; \
        }                                                                                                \
    }

typedef struct sel_job {
    task_grid g;
    emily_dtype pt;
} sel_job;

static void sel_tasks(void *ctx, int64_t lo, int64_t hi) {
    const sel_job *j = ctx;
    emily_dtype pt = j->pt;
    char *at[4];
    int64_t st[4];
    for (int64_t t = lo; t < hi; t++) {
        int64_t n = grid_task(&j->g, 4, t, at, st);
        char *dp = at[0];
        const char *pr = at[1], *xp = at[2], *yp = at[3];
        int64_t sd = st[0], sp = st[1], sx = st[2], sy = st[3];
        switch (j->g.esize[0]) {
        case 1: SELECT_RUN(uint8_t) break;
        case 2: SELECT_RUN(uint16_t) break;
        case 4: SELECT_RUN(uint32_t) break;
        case 8: SELECT_RUN(uint64_t) break;
        default: SELECT_RUN(sel_u128) break;
        }
    }
}

emily_status emi_cpu_select(emily_tensor *dst, const emily_tensor *pred, const emily_tensor *on_true,
                            const emily_tensor *on_false) {
    emily_dtype pt = pred->dtype;
    emily_status s = emi_select_kernel_operands(dst->dtype, pt, on_true->dtype, on_false->dtype);
    if (s || dst->size == 0) return s;
    const emily_tensor *ts[4] = {dst, pred, on_true, on_false};
    sel_job j = {.pt = pt};
    if ((s = grid_init(&j.g, 4, ts))) return s;
    grid_run(&j.g, dst->size, sel_tasks, &j);
    return EMILY_OK;
}
