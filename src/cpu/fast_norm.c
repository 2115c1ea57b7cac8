/* The CPU's fused normalizations (emily/ops_fast.h): layer_norm and
 * rms_norm, one row at a time in passes over the row while it sits in L1
 * (layer_norm: its sum, its centred squares, the output; rms_norm: its
 * squares, the output), rows in jobs on the engine's pool.
 *
 * The expression is the header's, step by step in the statistics type W
 * and the affine type A; the row sums are norm_rules.h's 256 double (f64:
 * f64) partial sums of 8-element chunks combined as a warp's lanes would,
 * the order the CUDA engine's kernel uses, so both devices give the same
 * bits.
 * f16/bf16 rows are first widened into a float scratch row (exactly), and
 * f16/bf16 outputs are computed into one and rounded once by Nx's rules;
 * f32 and f64 rows are read and written in place. The hot loops are
 * plain loops the compiler vectorizes, built again for AVX2 and AVX-512
 * (picked at run time) where the compiler can. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "core/norm_rules.h"
#include "cpu/dtype_scalars.h"
#include "cpu/half_rows.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/strided.h"

#include "cpu/hot_clones.h"
#define HOT EMI_CPU_HOT

#define LANES EMI_NORM_LANES
#define PARTIALS EMI_NORM_PARTIALS
#define BLOCK 32 /* partials summed at once */
#define PRAGMA(x) _Pragma(#x)

/* ---- row sums in the shared order (norm_rules.h) ------------------------- */

/* The three sums a row needs, over f32 (summed in double) and f64 rows:
 * SUM x_j, SUM W(x_j * x_j), SUM W(c_j * c_j) with c_j = W(x_j - m). Each
 * element j goes to partial j mod PARTIALS; the partials are taken 32 at a
 * time (four lanes' worth, in registers), each over the row's spans of
 * PARTIALS elements, then combined lane by lane in norm_rules.h's order.
 * The row's last span may end inside a block: its missing elements add
 * +0.0, which leaves a partial as it is (a partial starts at +0.0, so it is
 * never -0.0); written so, with constant indices, l stays in registers (a
 * loop up to n - j takes 2x the time: GCC then keeps l in memory). TERM(v) is the term of element v; M names the mean (only
 * the centred squares read it; 0 for the others). */
#define ROW_SUM(NAME, T, TERM, M)                                            \
    HOT static double NAME(const T *restrict x, int64_t n, T M) {            \
        double lanes[LANES];                                                 \
        (void)M;                                                             \
        for (int kb = 0; kb < PARTIALS; kb += BLOCK) {                       \
            double l[BLOCK] = {0};                                           \
            int64_t j = kb;                                                  \
            for (; n - j >= BLOCK; j += PARTIALS) PRAGMA(GCC unroll 32)      \
            for (int k = 0; k < BLOCK; k++) {                                \
                T v = TERM(x[j + k]);                                        \
                l[k] += (double)v;                                           \
            }                                                                \
            if (j < n) PRAGMA(GCC unroll 32)                                 \
            for (int k = 0; k < BLOCK; k++) {                                \
                T xv = j + k < n ? x[j + k] : 0, v = TERM(xv);               \
                l[k] += j + k < n ? (double)v : 0.0;                         \
            }                                                                \
            PRAGMA(GCC unroll 4)                                             \
            for (int q = 0; q < BLOCK / EMI_NORM_CHUNK; q++) {               \
                const double *c = l + q * EMI_NORM_CHUNK;                    \
                double c0 = c[0] + c[4], c1 = c[1] + c[5], c2 = c[2] + c[6]; \
                double c3 = c[3] + c[7];                                     \
                lanes[kb / EMI_NORM_CHUNK + q] = (c0 + c2) + (c1 + c3);      \
            }                                                                \
        }                                                                    \
        return emi_norm_combine(lanes);                                      \
    }
#define VALUE(v) (v)
#define SQUARE(v) ((v) * (v))
#define CENTRED_SQUARE(v) (((v)-m) * ((v)-m))
#define ROW_SUMS(sfx, T)                          \
    ROW_SUM(sum_##sfx, T, VALUE, unused)          \
    ROW_SUM(sum_squares_##sfx, T, SQUARE, unused) \
    ROW_SUM(sum_centred_squares_##sfx, T, CENTRED_SQUARE, m)
ROW_SUMS(f32, float)
ROW_SUMS(f64, double)
#undef ROW_SUMS
#undef CENTRED_SQUARE
#undef SQUARE
#undef VALUE
#undef ROW_SUM

/* ---- the affine passes --------------------------------------------------- */

/* layer_norm's output y_j = A(A(A(g_j * r) * c_j) + b_j), c_j = W(x_j - m),
 * for (W, A) = (f32, f32), (f32, f64), (f64, f64); b NULL: no bias. */
#define LN_OUT(NAME, W, A)                                                                                   \
    HOT static void NAME(const W *restrict x, int64_t n, W m, W r, const A *restrict g, const A *restrict b, \
                         A *restrict y) {                                                                    \
        if (b) {                                                                                             \
            PRAGMA(omp simd)                                                                                 \
            for (int64_t j = 0; j < n; j++) {                                                                \
                W c = x[j] - m;                                                                              \
                A s = g[j] * (A)r;                                                                           \
                A p = s * (A)c;                                                                              \
                y[j] = p + b[j];                                                                             \
            }                                                                                                \
        } else {                                                                                             \
            PRAGMA(omp simd)                                                                                 \
            for (int64_t j = 0; j < n; j++) {                                                                \
                W c = x[j] - m;                                                                              \
                A s = g[j] * (A)r;                                                                           \
                y[j] = s * (A)c;                                                                             \
            }                                                                                                \
        }                                                                                                    \
    }
LN_OUT(ln_out_ff, float, float)
LN_OUT(ln_out_fd, float, double)
LN_OUT(ln_out_dd, double, double)
#undef LN_OUT

/* rms_norm's output y_j = A(z_j * g_j), z_j = X(W(x_j * r)): X, x's own
 * type, rounds only for f16/bf16 (ROUND: emi_round_<sfx> of the double, or
 * nothing). */
#define RMS_OUT(NAME, W, A, ROUND)                                                                  \
    HOT static void NAME(const W *restrict x, int64_t n, W r, const A *restrict g, A *restrict y) { \
        PRAGMA(omp simd)                                                                            \
        for (int64_t j = 0; j < n; j++) {                                                           \
            W z = x[j] * r;                                                                         \
            z = (W)ROUND(z);                                                                        \
            y[j] = (A)z * g[j];                                                                     \
        }                                                                                           \
    }
#define AS_IS(v) (v)
RMS_OUT(rms_out_ff, float, float, AS_IS)
RMS_OUT(rms_out_fd, float, double, AS_IS)
RMS_OUT(rms_out_dd, double, double, AS_IS)
#define RMS_OUT_HALF_(E, sfx, T)                             \
    RMS_OUT(rms_out_ff_##sfx, float, float, emi_round_##sfx) \
    RMS_OUT(rms_out_fd_##sfx, float, double, emi_round_##sfx)
EMI_DTYPES_HALF(RMS_OUT_HALF_)
#undef RMS_OUT_HALF_
#undef AS_IS
#undef RMS_OUT

/* ---- rows ------------------------------------------------------------------ */

typedef struct norm_job {
    bool rms;
    emily_dtype xt, ot; /* x's type; the output's (A is f64 iff ot is f64) */
    int64_t n;
    const char *x;
    char *y;
    const void *g, *b;
    double eps;
    atomic_bool out_of_memory;
} norm_job;

/* Row x (xt) as W values: the row itself for f32/f64, else widened into
 * wide. */
static const void *wide_row(const norm_job *j, const char *x, float *wide) {
    return emi_half_row_to_f32(j->xt, (const uint16_t *)x, wide, j->n) ? (const void *)wide : x;
}

/* The f32 affine row ya written as the output type (f16/bf16/f32). */
static void store_row(emily_dtype ot, const float *ya, char *y, int64_t n) {
    if (!emi_half_row_from_f32(ot, ya, (uint16_t *)y, n) && (const char *)ya != y)
        memcpy(y, ya, (size_t)n * sizeof(float));
}

/* One row of x (W = f32: x is f16, bf16 or f32) into y. */
static void row_f32(const norm_job *j, const float *x, float *ya, char *y) {
    int64_t n = j->n;
    float e = (float)j->eps;
    bool wide_out = j->ot == EMILY_F64;
    if (j->rms) {
        float ms = emi_norm_mean_f32(sum_squares_f32(x, n, 0), n), r = emi_rms_norm_r_f32(ms, e);
        /* z rounds to x's type when that is a half type */
        switch (j->xt) {
#define RMS_ROW_HALF_(E, sfx, T)                                    \
    case EMILY_##E:                                                 \
        if (wide_out) rms_out_fd_##sfx(x, n, r, j->g, (double *)y); \
        else rms_out_ff_##sfx(x, n, r, j->g, ya);                   \
        break;
            EMI_DTYPES_HALF(RMS_ROW_HALF_)
#undef RMS_ROW_HALF_
        default:
            if (wide_out) rms_out_fd(x, n, r, j->g, (double *)y);
            else rms_out_ff(x, n, r, j->g, ya);
            break;
        }
        if (wide_out) return;
    } else {
        float m = emi_norm_mean_f32(sum_f32(x, n, 0), n);
        float var = emi_norm_mean_f32(sum_centred_squares_f32(x, n, m), n), r = emi_layer_norm_r_f32(var, e);
        if (wide_out) {
            ln_out_fd(x, n, m, r, j->g, j->b, (double *)y);
            return;
        }
        ln_out_ff(x, n, m, r, j->g, j->b, ya);
    }
    store_row(j->ot, ya, y, n);
}

/* One f64 row (W = A = f64). */
static void row_f64(const norm_job *j, const double *x, double *y) {
    int64_t n = j->n;
    if (j->rms) {
        double ms = emi_norm_mean_f64(sum_squares_f64(x, n, 0), n);
        rms_out_dd(x, n, emi_rms_norm_r_f64(ms, j->eps), j->g, y);
    } else {
        double m = emi_norm_mean_f64(sum_f64(x, n, 0), n);
        double var = emi_norm_mean_f64(sum_centred_squares_f64(x, n, m), n);
        ln_out_dd(x, n, m, emi_layer_norm_r_f64(var, j->eps), j->g, j->b, y);
    }
}

static void rows(void *ctx, int64_t r0, int64_t r1) {
    norm_job *j = ctx;
    size_t xs = emily_dtype_size(j->xt), os = emily_dtype_size(j->ot);
    int64_t n = j->n;
    /* scratch: the widened row (f16/bf16 x) and the f32 affine row (f16/bf16 output) */
    bool half_in = xs == 2, half_out = os == 2;
    float *scratch = NULL;
    if (half_in || half_out) {
        scratch = malloc((size_t)n * sizeof(float) * 2);
        if (!scratch) {
            atomic_store(&j->out_of_memory, true);
            return;
        }
    }
    for (int64_t i = r0; i < r1; i++) {
        const char *x = j->x + (size_t)(i * n) * xs;
        char *y = j->y + (size_t)(i * n) * os;
        if (j->xt == EMILY_F64) {
            row_f64(j, (const double *)x, (double *)y);
        } else {
            const float *xw = wide_row(j, x, scratch);
            row_f32(j, xw, half_out ? scratch + n : (float *)y, y);
        }
    }
    free(scratch);
}

/* Rows per job: about 16K elements, so a job's scratch and its rows stay
 * in cache and short rows do not pay the pool per row. */
#define ELEMENTS_PER_JOB 16384

static emily_status run(const char *op, bool rms, emily_tensor *dst, const emily_tensor *x, const emily_tensor *gamma,
                        const emily_tensor *beta, double eps) {
    int64_t n = x->shape[x->rank - 1];
    if (x->size == 0) return EMILY_OK;
    norm_job j = {.rms = rms,
                  .xt = x->dtype,
                  .ot = dst->dtype,
                  .n = n,
                  .x = emily_tensor_base(x),
                  .y = emily_tensor_base(dst),
                  .g = emily_tensor_base(gamma),
                  .b = beta ? emily_tensor_base(beta) : NULL,
                  .eps = eps};
    atomic_init(&j.out_of_memory, false);
    int64_t nrows = x->size / n, per = ELEMENTS_PER_JOB / n;
    emi_cpu_parallel_ranges(nrows, per > 0 ? per : 1, x->size >= EMILY_PARALLEL_MIN, rows, &j);
    if (atomic_load(&j.out_of_memory)) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    return EMILY_OK;
}

static emily_status cpu_layer_norm(emily_tensor *dst, const emily_tensor *x, const emily_tensor *gamma,
                                   const emily_tensor *beta, double eps) {
    return run("layer_norm", false, dst, x, gamma, beta, eps);
}

static emily_status cpu_rms_norm(emily_tensor *dst, const emily_tensor *x, const emily_tensor *gamma, double eps) {
    return run("rms_norm", true, dst, x, gamma, NULL, eps);
}

const struct emily_fast_kernels emi_cpu_fast_kernels = {.layer_norm = cpu_layer_norm,
                                                        .rms_norm = cpu_rms_norm,
                                                        .sdpa = emi_cpu_sdpa,
                                                        .softmax = emi_cpu_softmax,
                                                        .rope = emi_cpu_rope};
