/* The CPU's scaled dot-product attention (emily/ops_fast.h, emily_sdpa).
 *
 * Work is cut into jobs of (batch, query head, block of query rows), run
 * on the engine's pool. A job computes its block's scores against every
 * key the block can see at once (one BLAS product into a scratch of
 * rows x keys in W), turns each row into probabilities in two passes over
 * those stored scores (the max, then exp / sum), exactly the header's
 * expression, and multiplies by v with a second product. Two passes over
 * a stored block rather than an online softmax: the probabilities are
 * then E_ij / Z_i rounded to T as the composed form rounds them, and the
 * only difference from Nx.BinaryBackend's composed result is the order of
 * the two dots' sums. The block's rows are chosen so that its scores stay
 * near 1 MB (cache-sized, and small enough to allocate per job).
 *
 * Causal blocks compute the keys their last row sees and mask the rest
 * row by row; blocks whose rows see no key skip both products. f16/bf16
 * q, k, v are widened to f32 once (exactly) before the jobs; the BLAS
 * products of a job run on one thread (emi_cpu_blas_one_thread). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <cblas.h>
#include "cpu/dtype_scalars.h"
#include "cpu/half_rows.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/unary_simd.h"

/* Scores held per job (elements of W): about 1 MB of f32. */
#define SCORES_PER_JOB 262144
#define MAX_ROWS 64

typedef struct sdpa_job {
    const emily_sdpa_params *p;
    emily_dtype t;         /* q's type T */
    const void *q, *k, *v; /* in W, contiguous */
    char *out;             /* dst, in T */
    const char *mask;      /* the mask's element (0, 0, 0, 0) */
    int64_t ms[4];         /* its strides in elements */
    bool mask_bool;        /* u8 (keep) rather than W (additive) */
    const void *sinks;     /* {Hq} in W, or NULL */
    emily_vec_fn vexp;     /* the SIMD f32 exp, or NULL */
    int64_t rows;          /* query rows per job */
    int64_t blocks;        /* blocks per (batch, head) */
    atomic_bool out_of_memory;
} sdpa_job;

/* One output row (Dv values in W) written as T by Nx's rules. */
static void store_f32(emily_dtype t, const float *o, char *dst, int64_t n) {
    if (!emi_half_row_from_f32(t, o, (uint16_t *)dst, n)) memcpy(dst, o, (size_t)n * sizeof(float));
}

/* exp of n values in place: f32 by the engine's SIMD exp when this CPU
 * has one (the same function as the exp op's, within an ULP of exp in
 * double rounded once), else exp in double rounded once; f64 by libm. */
static void exp_f32(const sdpa_job *j, float *x, int64_t n) {
    if (j->vexp) {
        j->vexp(x, x, n);
        return;
    }
    for (int64_t i = 0; i < n; i++) x[i] = (float)exp((double)x[i]);
}
static void exp_f64(const sdpa_job *j, double *x, int64_t n) {
    (void)j;
    for (int64_t i = 0; i < n; i++) x[i] = exp(x[i]);
}

/* The two W variants share one body (sdpa_body.h): f32 for f16, bf16 and
 * f32, f64 for f64. */
#define W float
#define SFX f32
#define GEMM cblas_sgemm
#define ROUND_P(t, x) emi_half_round_f32(t, x)
#define STORE(t, o, dst, n) store_f32(t, o, dst, n)
#define EXP_ROW(j, x, n) exp_f32(j, x, n)
#include "cpu/sdpa_body.h"

#define W double
#define SFX f64
#define GEMM cblas_dgemm
#define ROUND_P(t, x) (x)
#define STORE(t, o, dst, n) memcpy(dst, o, (size_t)(n) * sizeof(double))
#define EXP_ROW(j, x, n) exp_f64(j, x, n)
#include "cpu/sdpa_body.h"

/* ---- widening f16/bf16 inputs ----------------------------------------------- */

typedef struct widen_job {
    emily_dtype t;
    const uint16_t *src;
    float *dst;
} widen_job;

static void widen_range(void *ctx, int64_t lo, int64_t hi) {
    const widen_job *w = ctx;
    emi_half_row_to_f32(w->t, w->src + lo, w->dst + lo, hi - lo);
}

/* t's elements as f32 (exact), in a new buffer (NULL: out of memory; an
 * empty tensor gives a 1-element buffer). */
static float *widened(const emily_tensor *t) {
    float *dst = malloc((size_t)(t->size > 0 ? t->size : 1) * sizeof(float));
    if (!dst) return NULL;
    widen_job w = {t->dtype, (const uint16_t *)emily_tensor_base(t), dst};
    emi_cpu_parallel_ranges(t->size, 65536, t->size >= 65536, widen_range, &w);
    return dst;
}

/* ---- the op ------------------------------------------------------------------- */

static void run_job(void *ctx, int64_t job) {
    sdpa_job *j = ctx;
    if (j->t == EMILY_F64) block_f64(j, job);
    else block_f32(j, job);
}

emily_status emi_cpu_sdpa(emily_tensor *dst, const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                          const emily_sdpa_params *p) {
    sdpa_job j = {.p = p, .t = q->dtype, .out = emily_tensor_base(dst), .sinks = NULL};
    atomic_init(&j.out_of_memory, false);
    if (p->mask) {
        j.mask = (const char *)emily_tensor_base(p->mask);
        memcpy(j.ms, p->mask->strides, sizeof j.ms);
        j.mask_bool = p->mask->dtype == EMILY_U8;
    }
    if (p->sinks) j.sinks = emily_tensor_base(p->sinks);
    if (q->dtype != EMILY_F64) j.vexp = emi_unary_simd(EMILY_EXP, EMILY_F32, EMILY_F32);
    int64_t skv = p->Skv > 0 ? p->Skv : 1;
    j.rows = SCORES_PER_JOB / skv;
    if (j.rows > MAX_ROWS) j.rows = MAX_ROWS;
    if (j.rows < 1) j.rows = 1;
    if (j.rows > p->Sq) j.rows = p->Sq;
    j.blocks = (p->Sq + j.rows - 1) / j.rows;

    float *wide[3] = {NULL, NULL, NULL};
    if (EMI_DTYPE_IN(EMI_DTYPES_HALF_WITH, q->dtype)) {
        const emily_tensor *in[3] = {q, k, v};
        for (int i = 0; i < 3; i++)
            if (!(wide[i] = widened(in[i]))) {
                for (int m = 0; m < i; m++) free(wide[m]);
                return emily_error(EMILY_ERR_MEMORY, "sdpa: out of host memory");
            }
        j.q = wide[0], j.k = wide[1], j.v = wide[2];
    } else {
        j.q = emily_tensor_base(q), j.k = emily_tensor_base(k), j.v = emily_tensor_base(v);
    }
    emi_cpu_blas_one_thread();
    int64_t jobs = p->B * p->Hq * j.blocks;
    /* both products' multiply-adds, every head: below the products'
     * threshold on this thread (a decode step's attention, SmolLM2's 9
     * heads by one query row and 40 keys, takes ~14 us alone and 25-140
     * us when its 9 jobs wake the pool, measured on 2 cores under load) */
    int64_t work = p->B * p->Hq * p->Sq * p->Skv * (p->D + p->Dv);
    if (jobs > 1 && work >= EMI_CPU_MACS_PARALLEL_MIN) emi_cpu_parallel(jobs, run_job, &j);
    else
        for (int64_t i = 0; i < jobs; i++) run_job(&j, i);
    for (int i = 0; i < 3; i++) free(wide[i]);
    if (atomic_load(&j.out_of_memory)) return emily_error(EMILY_ERR_MEMORY, "sdpa: out of host memory");
    return EMILY_OK;
}
