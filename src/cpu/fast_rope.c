/* The CPU's rotary position embedding (emily/ops_fast.h, emily_rope).
 *
 * Tokens (b, s) in jobs on the engine's pool. A token's cos and sin (one
 * pair per frequency, f32, from cos and sin in double) are computed once
 * and applied to its H heads; when the batch shares one row of positions
 * ({S}) and B > 1 they are computed once per position beforehand, as a
 * table S x dims/2, instead of once per batch entry. Every scalar step is
 * core/rope_rules.h's, which the CUDA kernel shares. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "core/dtype_list.h"
#include "core/rope_rules.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/strided.h"

typedef struct rope_job {
    const emily_rope_params *p;
    emily_dtype t;
    const char *x;
    char *y;
    const int64_t *pos;
    const float *inv;
    const float *table; /* NULL, or {S, dims/2, 2} (cos, sin) for shared positions */
    atomic_bool out_of_memory;
} rope_job;

/* cos and sin of position pos for every frequency: cs[2i], cs[2i + 1]. */
static void token_cos_sin(const emily_rope_params *p, const float *inv, int64_t pos, float *cs) {
    double pf = emi_rope_position(pos, p->linear, p->linear_factor);
    for (int64_t i = 0; i < p->dims / 2; i++) {
        double a = (double)emi_rope_angle(pf, inv[i]);
        cs[2 * i] = (float)cos(a);
        cs[2 * i + 1] = (float)sin(a);
    }
}

/* One head's row of D elements of storage type T: pairs rotated, the
 * rest copied. */
#define ROPE_ROW_(E, sfx, T)                                                                        \
    static void row_##sfx(const emily_rope_params *p, const float *cs, const T *x, T *y) {          \
        int64_t h = p->dims / 2;                                                                    \
        for (int64_t i = 0; i < h; i++) {                                                           \
            int64_t iu = p->traditional ? 2 * i : i, iv = p->traditional ? 2 * i + 1 : i + h;       \
            T u = x[iu], v = x[iv];                                                                 \
            emi_rope_pair_##sfx(&u, &v, cs[2 * i], cs[2 * i + 1]);                                  \
            y[iu] = u;                                                                              \
            y[iv] = v;                                                                              \
        }                                                                                           \
        if (p->D > p->dims) memcpy(y + p->dims, x + p->dims, (size_t)(p->D - p->dims) * sizeof(T)); \
    }
EMI_DTYPES_FLOAT(ROPE_ROW_)
#undef ROPE_ROW_

static void head_rows(const rope_job *j, const float *cs, int64_t token) {
    const emily_rope_params *p = j->p;
    size_t es = emily_dtype_size(j->t);
    for (int64_t hd = 0; hd < p->H; hd++) {
        size_t off = (size_t)((token * p->H + hd) * p->D) * es;
        const void *x = j->x + off;
        void *y = j->y + off;
        /* x is a real float: emily_rope checks it */
        switch (j->t) {
#define ROPE_CASE_(E, sfx, T) \
    case EMILY_##E: row_##sfx(p, cs, x, y); break;
            EMI_DTYPES_FLOAT(ROPE_CASE_)
#undef ROPE_CASE_
        default: break;
        }
    }
}

static void tokens(void *ctx, int64_t lo, int64_t hi) {
    rope_job *j = ctx;
    const emily_rope_params *p = j->p;
    int64_t h = p->dims / 2;
    float *own = NULL;
    if (!j->table) {
        own = malloc((size_t)(h > 0 ? 2 * h : 1) * sizeof *own);
        if (!own) {
            atomic_store(&j->out_of_memory, true);
            return;
        }
    }
    for (int64_t t = lo; t < hi; t++) {
        int64_t s = t % p->S;
        const float *cs;
        if (j->table) {
            cs = j->table + s * 2 * h;
        } else {
            token_cos_sin(p, j->inv, j->pos[p->batched_positions ? t : s], own);
            cs = own;
        }
        head_rows(j, cs, t);
    }
    free(own);
}

static void table_rows(void *ctx, int64_t lo, int64_t hi) {
    rope_job *j = ctx;
    float *table = (float *)j->table;
    for (int64_t s = lo; s < hi; s++) token_cos_sin(j->p, j->inv, j->pos[s], table + s * j->p->dims);
}

/* Tokens per job: about 16K elements of x. */
#define ELEMENTS_PER_JOB 16384

emily_status emi_cpu_rope(emily_tensor *dst, const emily_tensor *x, const emily_tensor *positions,
                          const emily_tensor *inv_freq, const emily_rope_params *p) {
    if (x->size == 0) return EMILY_OK;
    rope_job j = {.p = p,
                  .t = x->dtype,
                  .x = emily_tensor_base(x),
                  .y = emily_tensor_base(dst),
                  .pos = emily_tensor_base(positions),
                  .inv = emily_tensor_base(inv_freq),
                  .table = NULL};
    atomic_init(&j.out_of_memory, false);
    bool parallel = x->size >= EMILY_PARALLEL_MIN;
    float *table = NULL;
    if (!p->batched_positions && p->B > 1 && p->dims > 0) {
        table = malloc((size_t)(p->S * p->dims) * sizeof *table);
        if (!table) return emily_error(EMILY_ERR_MEMORY, "rope: out of host memory");
        j.table = table;
        emi_cpu_parallel_ranges(p->S, 64, parallel, table_rows, &j);
    }
    int64_t row = p->H * p->D, per = row > 0 ? ELEMENTS_PER_JOB / row : 1;
    emi_cpu_parallel_ranges(p->B * p->S, per > 0 ? per : 1, parallel, tokens, &j);
    free(table);
    if (atomic_load(&j.out_of_memory)) return emily_error(EMILY_ERR_MEMORY, "rope: out of host memory");
    return EMILY_OK;
}
