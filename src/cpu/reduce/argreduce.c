/* CPU kernel: argmax / argmin.
 *
 * Nx's fold: a NaN always takes the index (so the last NaN wins); a
 * non-NaN value takes it when strictly better, or equal with
 * tie_break: :high. Values compare as numbers (-0.0 == 0.0).
 *
 * One scan per real dtype, expanded over the dtype list: a contiguous
 * run goes in blocks whose extreme is found first (vectorized: simd.c
 * for f32/f64) and whose index is looked for only when the block
 * improves on the best so far; an axis that is not the innermost in
 * memory goes by column blocks, branch-free. Long runs split over the
 * OpenMP threads and merge in order. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/reduce/reducers.h"
#include "cpu/reduce/simd.h"
#include "cpu/strided.h"

typedef struct argst {
    int64_t idx, nan_idx; /* -1: none yet */
    union {
        int64_t i;
        uint64_t u;
        double f;
    } best;
} argst;

typedef enum { K_SIGNED, K_UNSIGNED, K_FLOAT } argkind;

typedef struct argops {
    argkind kind;
    /* folds x[0..n) (stride s) whose first index is `base` into st */
    void (*scan)(argst *st, const void *x, int64_t n, int64_t s, int64_t base, bool is_min, bool high);
    /* for each of n columns (stride js), the index along the axis
     * (n_axis values, stride as) that the fold picks */
    void (*cols)(const void *x, int64_t n, int64_t js, int64_t n_axis, int64_t as, bool is_min, bool high,
                 int64_t *out);
} argops;

#define ARG_BLOCK 2048 /* elements whose extreme is found before its index */
#define ARG_COLS 256   /* columns scanned together along an outer axis */

/* One pass over the rows of a column block, branch-free so that it
 * vectorizes (IDX is as wide as C where possible). */
#define ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, CMP)         \
    for (int64_t i = 1; i < n_axis; i++) {                 \
        const T *restrict row = x + i * as;                \
        PRAGMA(omp simd)                                   \
        for (int64_t j = 0; j < n; j++) {                  \
            C v = LOAD(row[j * js]), b = best[j];          \
            int isn = ISNAN(v);                            \
            int take = (isn ^ 1) & (ISNAN(b) | (v CMP b)); \
            nanidx[j] = isn ? (IDX)i : nanidx[j];          \
            best[j] = take ? v : b;                        \
            at[j] = take ? (IDX)i : at[j];                 \
        }                                                  \
    }

#define ARG_TYPE(NAME, T, C, FIELD, LOAD, ISNAN, EXTMAX, EXTMIN, IDX, FIND)                                           \
    static inline bool NAME##_wins(C v, C best, bool is_min, bool high) {                                             \
        return is_min ? (v < best || (high && v == best)) : (v > best || (high && v == best));                        \
    }                                                                                                                 \
    static void NAME##_scan(argst *st, const void *src, int64_t n, int64_t s, int64_t base, bool is_min, bool high) { \
        const T *restrict x = src;                                                                                    \
        C best = (C)st->best.FIELD;                                                                                   \
        int64_t i = 0;                                                                                                \
        if (s == 1) {                                                                                                 \
            /* blocks: find each block's extreme vectorized, and look for its \
             * index only when the block improves on the best so far */                                       \
            for (; i < n; i += ARG_BLOCK) {                                                                           \
                const T *xb = x + i;                                                                                  \
                int len = n - i < ARG_BLOCK ? (int)(n - i) : ARG_BLOCK;                                               \
                C m = LOAD(xb[0]);                                                                                    \
                int nan = is_min ? EXTMIN(xb, len, &m) : EXTMAX(xb, len, &m);                                         \
                if (nan) {                                                                                            \
                    for (int k = len - 1; k >= 0; k--)                                                                \
                        if (ISNAN(LOAD(xb[k]))) {                                                                     \
                            st->nan_idx = base + i + k;                                                               \
                            break;                                                                                    \
                        }                                                                                             \
                    continue;                                                                                         \
                }                                                                                                     \
                if (st->idx < 0 || NAME##_wins(m, best, is_min, high)) {                                              \
                    int64_t k = FIND(xb, len, m, high);                                                               \
                    best = m;                                                                                         \
                    st->idx = base + i + (k < 0 ? 0 : k);                                                             \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
        for (; i < n; i++) {                                                                                          \
            C v = LOAD(x[i * s]);                                                                                     \
            if (ISNAN(v)) st->nan_idx = base + i;                                                                     \
            else if (st->idx < 0 || NAME##_wins(v, best, is_min, high)) {                                             \
                best = v;                                                                                             \
                st->idx = base + i;                                                                                   \
            }                                                                                                         \
        }                                                                                                             \
        st->best.FIELD = best;                                                                                        \
    }                                                                                                                 \
    static void NAME##_cols(const void *src, int64_t n, int64_t js, int64_t n_axis, int64_t as, bool is_min,          \
                            bool high, int64_t *out) {                                                                \
        const T *restrict x = src;                                                                                    \
        C best[ARG_COLS];                                                                                             \
        IDX at[ARG_COLS], nanidx[ARG_COLS];                                                                           \
        for (int64_t j = 0; j < n; j++) {                                                                             \
            best[j] = LOAD(x[j * js]);                                                                                \
            at[j] = 0;                                                                                                \
            nanidx[j] = ISNAN(best[j]) ? 0 : -1;                                                                      \
        }                                                                                                             \
        if (is_min) {                                                                                                 \
            if (high) {                                                                                               \
                ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, <=)                                                             \
            } else {                                                                                                  \
                ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, <)                                                              \
            }                                                                                                         \
        } else {                                                                                                      \
            if (high) {                                                                                               \
                ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, >=)                                                             \
            } else {                                                                                                  \
                ARG_COLS_LOOP(T, C, IDX, LOAD, ISNAN, >)                                                              \
            }                                                                                                         \
        }                                                                                                             \
        for (int64_t j = 0; j < n; j++) out[j] = nanidx[j] >= 0 ? nanidx[j] : at[j];                                  \
    }                                                                                                                 \
    static const argops NAME = {FIELD##_KIND, NAME##_scan, NAME##_cols};

#define i_KIND K_SIGNED
#define u_KIND K_UNSIGNED
#define f_KIND K_FLOAT
#define NO_NAN(v) ((void)(v), 0)
#define IS_NAN(v) ((v) != (v))

/* the index of the first (last) element equal to v in a block */
#define FIND_GENERIC(NAME, T, C, LOAD)                          \
    static int64_t NAME(const T *x, int64_t n, C v, int last) { \
        if (last) {                                             \
            for (int64_t k = n - 1; k >= 0; k--)                \
                if (LOAD(x[k]) == v) return k;                  \
        } else {                                                \
            for (int64_t k = 0; k < n; k++)                     \
                if (LOAD(x[k]) == v) return k;                  \
        }                                                       \
        return -1;                                              \
    }

/* IDX: the index type of column scans, as wide as the compared values
 * where possible (int32_t: axes up to INT32_MAX) so that they vectorize
 * together; by the type's width. */
typedef int32_t arg_idx_8, arg_idx_16, arg_idx_32;
typedef int64_t arg_idx_64;
#define ARG_IDX(sfx) EMI_PASTE(arg_idx_, EMI_WIDTH(sfx))

/* A class's block extremes and finds (where simd.c has none), then its
 * argops: C the type values compare in, FIELD the argst.best member. */
#define ARG_GENERIC(sfx, T, C, FIELD, LOAD, ISNAN)     \
    EMI_EXTREME_RUN(ext_max_##sfx, T, C, LOAD, >, max) \
    EMI_EXTREME_RUN(ext_min_##sfx, T, C, LOAD, <, min) \
    FIND_GENERIC(find_##sfx, T, C, LOAD)               \
    ARG_TYPE(arg_##sfx, T, C, FIELD, LOAD, ISNAN, ext_max_##sfx, ext_min_##sfx, ARG_IDX(sfx), find_##sfx)
#define ARG_UNSIGNED(ENUM, sfx, T) ARG_GENERIC(sfx, T, T, u, EMI_AS_IS, NO_NAN)
#define ARG_SIGNED(ENUM, sfx, T) ARG_GENERIC(sfx, T, T, i, EMI_AS_IS, NO_NAN)
#define ARG_HALF(ENUM, sfx, T) ARG_GENERIC(sfx, T, float, f, emily_sc_##sfx##_to_f32, IS_NAN)
EMI_DTYPES_UNSIGNED(ARG_UNSIGNED)
EMI_DTYPES_SIGNED(ARG_SIGNED)
EMI_DTYPES_HALF(ARG_HALF)

/* f32 and f64: simd.c's vector extremes and finds */
#define ARG_NATIVE(ENUM, sfx, T)                                                                          \
    ARG_TYPE(arg_##sfx, T, T, f, EMI_AS_IS, IS_NAN, emi_simd_max_##sfx, emi_simd_min_##sfx, ARG_IDX(sfx), \
             emi_simd_find_##sfx)
EMI_DTYPES_NATIVE_FLOAT(ARG_NATIVE)

#define ARG_ENTRY(ENUM, sfx, T) [EMILY_##ENUM] = &arg_##sfx,
static const argops *const arg_table[EMILY_DTYPE_COUNT] = {EMI_DTYPES_REAL(ARG_ENTRY)};

/* a <- the fold of a's elements then b's */
static void arg_merge(argkind kind, argst *a, const argst *b, bool is_min, bool high) {
    if (b->nan_idx >= 0) a->nan_idx = b->nan_idx;
    if (b->idx < 0) return;
    bool wins;
    if (a->idx < 0) wins = true;
    else if (kind == K_SIGNED)
        wins = is_min ? (b->best.i < a->best.i || (high && b->best.i == a->best.i))
                      : (b->best.i > a->best.i || (high && b->best.i == a->best.i));
    else if (kind == K_UNSIGNED)
        wins = is_min ? (b->best.u < a->best.u || (high && b->best.u == a->best.u))
                      : (b->best.u > a->best.u || (high && b->best.u == a->best.u));
    else
        wins = is_min ? (b->best.f < a->best.f || (high && b->best.f == a->best.f))
                      : (b->best.f > a->best.f || (high && b->best.f == a->best.f));
    if (wins) {
        a->best = b->best;
        a->idx = b->idx;
    }
}

static inline int64_t arg_result(const argst *st) { return st->nan_idx >= 0 ? st->nan_idx : st->idx; }

static void store_index(emily_dtype dt, char *p, int64_t v) {
    switch (emily_dtype_size(dt)) {
    case 1: {
        uint8_t x = (uint8_t)v;
        memcpy(p, &x, 1);
        break;
    }
    case 2: {
        uint16_t x = (uint16_t)v;
        memcpy(p, &x, 2);
        break;
    }
    case 4: {
        uint32_t x = (uint32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    default: memcpy(p, &v, 8); break;
    }
}

static const argst ARG_START = {.idx = -1, .nan_idx = -1, .best = {.i = 0}};

/* One run of n elements (stride s), split over threads when long. */
static int64_t arg_run(const argops *A, const char *x, size_t es, int64_t n, int64_t s, bool is_min, bool high,
                       bool allow_par) {
    int nth = omp_get_max_threads();
    argst st = ARG_START;
    if (allow_par && n >= REDUCE_PAR_MIN && nth > 1) {
        argst *parts = malloc(sizeof(argst) * (size_t)nth);
        if (parts) {
            int used = nth;
#pragma omp parallel num_threads(nth)
            {
                red_share sh = red_team_share(n);
#pragma omp single
                used = sh.T;
                parts[sh.t] = ARG_START;
                A->scan(&parts[sh.t], x + sh.lo * s * (int64_t)es, sh.hi - sh.lo, s, sh.lo, is_min, high);
            }
            for (int t = 0; t < used; t++) arg_merge(A->kind, &st, &parts[t], is_min, high);
            free(parts);
            return arg_result(&st);
        }
    }
    A->scan(&st, x, n, s, 0, is_min, high);
    return arg_result(&st);
}

emily_status emi_cpu_argreduce(emily_arg_op op, emily_tensor *dst, const emily_tensor *src, int axis,
                               bool tie_break_high) {
    const argops *A = emily_dtype_valid(src->dtype) ? arg_table[src->dtype] : NULL;
    if (!A) return emily_error(EMILY_ERR_TYPE, "argreduce: %s is not supported", emily_dtype_name(src->dtype));
    if (dst->size == 0) return EMILY_OK;
    bool is_min = op == EMILY_ARGMIN, high = tie_break_high;
    size_t es = emily_dtype_size(src->dtype), des = emily_dtype_size(dst->dtype);
    const char *sbase = emily_tensor_base(src);
    char *dbase = emily_tensor_base(dst);
    if (src->size == 0) return emily_error(EMILY_ERR_SHAPE, "argreduce: cannot reduce an empty axis");

    if (axis < 0) {
        /* the flattened tensor, in row-major order */
        const emily_tensor *ts[1] = {src};
        emily_iter it;
        emily_status s = emi_iter_tensors(&it, 1, ts);
        if (s) return s;
        int64_t res;
        if (it.outer_n == 1) {
            res = arg_run(A, sbase, es, it.inner_n, it.inner_stride[0], is_min, high, true);
        } else {
            argst st = ARG_START;
            for (int64_t pos = 0; pos < it.outer_n; pos++) {
                int64_t off;
                emi_iter_offsets(&it, pos, &off);
                argst part = ARG_START;
                A->scan(&part, sbase + off * (int64_t)es, it.inner_n, it.inner_stride[0], pos * it.inner_n, is_min,
                        high);
                arg_merge(A->kind, &st, &part, is_min, high);
            }
            res = arg_result(&st);
        }
        emi_iter_free(&it);
        store_index(dst->dtype, dbase, res);
        return EMILY_OK;
    }

    /* along one axis: iterate over the outputs (src's shape with the
     * axis at size 1) */
    int r = src->rank;
    int64_t *buf = malloc(sizeof(int64_t) * (2 * (size_t)r + 1));
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "argreduce: out of host memory");
    int64_t *oshape = buf, *sstr = buf + r;
    for (int i = 0; i < r; i++) {
        oshape[i] = i == axis ? 1 : src->shape[i];
        sstr[i] = i == axis ? 0 : src->strides[i];
    }
    const int64_t *strides[2] = {sstr, dst->strides};
    emily_iter it;
    emily_status s = emi_iter_init(&it, 2, r, oshape, strides);
    free(buf);
    if (s) return s;
    int64_t na = src->shape[axis], as = src->strides[axis];
    int64_t in = it.inner_n, is = it.inner_stride[0], ids = it.inner_stride[1];
    int64_t key_axis = as < 0 ? -as : as, key_in = is < 0 ? -is : is;
    bool columns = in > 1 && key_in < key_axis && na <= INT32_MAX;
    bool par = src->size >= REDUCE_PAR_MIN && omp_get_max_threads() > 1;
    if (columns) {
        int64_t nblk = (in + ARG_COLS - 1) / ARG_COLS, tasks = it.outer_n * nblk;
        EMILY_PAR_FOR(par, task, tasks, {
            int64_t pos = task / nblk, j0 = (task % nblk) * ARG_COLS;
            int64_t len = in - j0 < ARG_COLS ? in - j0 : ARG_COLS;
            int64_t off[2], idx[ARG_COLS];
            emi_iter_offsets(&it, pos, off);
            A->cols(sbase + (off[0] + j0 * is) * (int64_t)es, len, is, na, as, is_min, high, idx);
            for (int64_t j = 0; j < len; j++)
                store_index(dst->dtype, dbase + (off[1] + (j0 + j) * ids) * (int64_t)des, idx[j]);
        });
    } else {
        int64_t outs = it.outer_n * in;
        bool few = outs < 2 * (int64_t)omp_get_max_threads();
        EMILY_PAR_FOR(par && !few, o, outs, {
            int64_t pos = o / in, j = o % in, off[2];
            emi_iter_offsets(&it, pos, off);
            int64_t res = arg_run(A, sbase + (off[0] + j * is) * (int64_t)es, es, na, as, is_min, high, par && few);
            store_index(dst->dtype, dbase + (off[1] + j * ids) * (int64_t)des, res);
        });
    }
    emi_iter_free(&it);
    return EMILY_OK;
}
