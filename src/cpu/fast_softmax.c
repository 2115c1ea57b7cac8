/* The CPU's fused softmax over the last axis (emily/ops_fast.h): one row
 * at a time while it sits in L1 (its max, x - max into the output row,
 * exp in place, the row's sum, the scaling), rows in jobs on the engine's
 * pool.
 *
 * Every step is the composed calls' own element rule, so the result has
 * their bits: the exp is the very function emily_unary runs on a
 * contiguous tensor of x's type (its SIMD path where the CPU has one,
 * else the scalar rule of core/unary_kernels.h), the arithmetic is
 * emily_binary's (f16/bf16 in f32, stored by Nx's rules: core/binary_kernels.h's
 * emi_bk_ld/st), and the max folds as reduce_max does (NaN wins). Only the
 * sum's order differs: norm_rules.h's 32 interleaved double partial sums
 * (the order the CUDA kernel's warp uses), rounded once to x's type. */
#include <stdatomic.h>
#include <math.h>
#include "core/binary_kernels.h"
#include "core/dtype_list.h"
#include "core/norm_rules.h"
#include "core/softmax_types.h"
#include "core/unary_kernels.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/strided.h"
#include "cpu/unary_simd.h"

#define LANES EMI_NORM_LANES
#define PRAGMA(x) _Pragma(#x)

/* The row loops built again for AVX2 and AVX-512 (picked at run time),
 * as fast_norm.c's are: plain loops the compiler vectorizes. */
#include "cpu/hot_clones.h"
#define HOT EMI_CPU_HOT

typedef struct softmax_job {
    emily_dtype t;
    int64_t n;
    const char *x;
    char *y;
    emily_vec_fn exp_simd; /* NULL: the scalar rule */
} softmax_job;

/* exp of n contiguous elements of the job's type, in place: what
 * emi_cpu_unary computes for a contiguous tensor (src/cpu/unary.c). */
static void exp_row(const softmax_job *j, char *y, int64_t n) {
    if (j->exp_simd) {
        j->exp_simd(y, y, n);
        return;
    }
    switch (j->t) {
#define EXP_HALF_(E, sfx, T)                                \
    case EMILY_##E:                                         \
        for (int64_t k = 0; k < n; k++) {                   \
            T v = ((T *)y)[k];                              \
            ((T *)y)[k] = EMI_UNARY_HALF(EXP, exp, sfx, v); \
        }                                                   \
        break;
        EMI_DTYPES_HALF(EXP_HALF_)
#undef EXP_HALF_
    case EMILY_F32:
        for (int64_t k = 0; k < n; k++) ((float *)y)[k] = (float)EMI_UNARY_REAL(EXP, exp, (double)((float *)y)[k]);
        break;
    default:
        for (int64_t k = 0; k < n; k++) ((double *)y)[k] = EMI_UNARY_REAL_F64(EXP, exp, ((double *)y)[k]);
        break;
    }
}

/* One row of storage type T (per type of core/softmax_types.h) whose
 * arithmetic runs in C (f32 for f16/bf16, else T): LD widens an element
 * to C, ST rounds a C value back (the binary kernels' emi_bk_ld_/
 * emi_bk_st_), WIDE reads a stored element exactly as a double for the
 * sum, SUM_ST rounds the double sum to T as emily_sum stores it. */
#define SOFTMAX_ROW(E, sfx, T, C, SUM_ST)                                                  \
    HOT static C row_max_##sfx(const T *restrict x, int64_t n) {                           \
        C m = (C)-INFINITY;                                                                \
        int nan = 0;                                                                       \
        PRAGMA(omp simd reduction(max : m) reduction(| : nan))                             \
        for (int64_t k = 0; k < n; k++) {                                                  \
            C v = emi_bk_ld_##sfx(x[k]);                                                   \
            nan |= v != v;                                                                 \
            m = v > m ? v : m;                                                             \
        }                                                                                  \
        return nan ? (C)NAN : m;                                                           \
    }                                                                                      \
    HOT static void row_shift_##sfx(const T *restrict x, T *restrict y, int64_t n, C m) {  \
        PRAGMA(omp simd)                                                                   \
        for (int64_t k = 0; k < n; k++) y[k] = emi_bk_st_##sfx(emi_bk_ld_##sfx(x[k]) - m); \
    }                                                                                      \
    HOT static double row_sum_##sfx(const T *restrict y, int64_t n) {                      \
        double l[LANES] = {0};                                                             \
        int64_t k0 = 0;                                                                    \
        for (; k0 + LANES <= n; k0 += LANES) PRAGMA(GCC unroll 32)                         \
        for (int q = 0; q < LANES; q++) l[q] += (double)emi_bk_ld_##sfx(y[k0 + q]);        \
        for (int q = 0; k0 + q < n; q++) l[q] += (double)emi_bk_ld_##sfx(y[k0 + q]);       \
        return emi_norm_combine(l);                                                        \
    }                                                                                      \
    HOT static void row_scale_##sfx(T *restrict y, int64_t n, C r) {                       \
        PRAGMA(omp simd)                                                                   \
        for (int64_t k = 0; k < n; k++) y[k] = emi_bk_st_##sfx(r * emi_bk_ld_##sfx(y[k])); \
    }                                                                                      \
    static void row_##sfx(const softmax_job *j, const T *restrict x, T *restrict y) {      \
        int64_t n = j->n;                                                                  \
        row_shift_##sfx(x, y, n, row_max_##sfx(x, n));                                     \
        exp_row(j, (char *)y, n);                                                          \
        C s = emi_bk_ld_##sfx(SUM_ST(row_sum_##sfx(y, n)));                                \
        row_scale_##sfx(y, n, emi_bk_ld_##sfx(emi_bk_st_##sfx((C)1 / s)));                 \
    }
EMI_SOFTMAX_TYPES(SOFTMAX_ROW)
#undef SOFTMAX_ROW

static void rows(void *ctx, int64_t r0, int64_t r1) {
    const softmax_job *j = ctx;
    size_t es = emily_dtype_size(j->t);
    for (int64_t i = r0; i < r1; i++) {
        const char *x = j->x + (size_t)(i * j->n) * es;
        char *y = j->y + (size_t)(i * j->n) * es;
        /* j->t is one of the list's: emi_cpu_softmax checks it */
        switch (j->t) {
#define ROW_CASE_(E, sfx, T, C, SUM_ST) \
    case EMILY_##E: row_##sfx(j, (const T *)x, (T *)y); break;
            EMI_SOFTMAX_TYPES(ROW_CASE_)
#undef ROW_CASE_
        default: break;
        }
    }
}

/* Rows per job: about 16K elements, as the normalizations take them. */
#define ELEMENTS_PER_JOB 16384

emily_status emi_cpu_softmax(emily_tensor *dst, const emily_tensor *x) {
    if (x->size == 0) return EMILY_OK;
    if (!emily_dtype_is_float(x->dtype) || dst->dtype != x->dtype)
        return emily_error(EMILY_ERR_INTERNAL, "cpu: softmax: expects a real float x and an output of its type");
    int64_t n = x->shape[x->rank - 1];
    softmax_job j = {.t = x->dtype,
                     .n = n,
                     .x = emily_tensor_base(x),
                     .y = emily_tensor_base(dst),
                     .exp_simd = emi_unary_simd(EMILY_EXP, x->dtype, x->dtype)};
    int64_t nrows = x->size / n, per = ELEMENTS_PER_JOB / n;
    emi_cpu_parallel_ranges(nrows, per > 0 ? per : 1, x->size >= EMILY_PARALLEL_MIN, rows, &j);
    return EMILY_OK;
}
