/* The one-input element-wise drivers (see elementwise_map.h). */
#include "cpu/elementwise_map.h"
#include "cpu/parallel.h"
#include "cpu/strided.h"

/* ---- strided driver ---------------------------------------------------------- */

typedef struct {
    emily_iter it;
    int64_t chunks; /* per inner line */
    char *dbase;
    const char *sbase;
    int64_t dsize, ssize;
    emily_run_fn fn;
    const void *ctx;
} map_job;

static void map_block(void *p, int64_t b) {
    const map_job *j = p;
    int64_t pos = b / j->chunks, c = b % j->chunks;
    int64_t off[2];
    emi_iter_offsets(&j->it, pos, off);
    int64_t i0 = c * EMILY_MAP_CHUNK;
    int64_t n = j->it.inner_n - i0 < EMILY_MAP_CHUNK ? j->it.inner_n - i0 : EMILY_MAP_CHUNK;
    int64_t ds = j->it.inner_stride[0], ss = j->it.inner_stride[1];
    j->fn(j->dbase + (off[0] + i0 * ds) * j->dsize, ds, j->sbase + (off[1] + i0 * ss) * j->ssize, ss, n, j->ctx);
}

emily_status emi_cpu_map(emily_tensor *dst, const emily_tensor *src, emily_run_fn fn, const void *ctx) {
    if (dst->size == 0) return EMILY_OK;
    const emily_tensor *ts[2] = {dst, src};
    map_job j = {.fn = fn, .ctx = ctx};
    emily_status s = emi_iter_tensors(&j.it, 2, ts);
    if (s) return s;
    j.dbase = emily_tensor_base(dst);
    j.sbase = emily_tensor_base(src);
    j.dsize = (int64_t)emily_dtype_size(dst->dtype);
    j.ssize = (int64_t)emily_dtype_size(src->dtype);
    j.chunks = (j.it.inner_n + EMILY_MAP_CHUNK - 1) / EMILY_MAP_CHUNK;
    int64_t blocks = j.it.outer_n * j.chunks;
    if (dst->size < EMILY_PARALLEL_MIN) {
        for (int64_t b = 0; b < blocks; b++) map_block(&j, b);
    } else {
        emi_cpu_parallel(blocks, map_block, &j);
    }
    emi_iter_free(&j.it);
    return EMILY_OK;
}

/* ---- contiguous driver ------------------------------------------------------- */

typedef struct {
    char *d;
    const char *s;
    int64_t dsize, ssize, total;
    emily_vec_fn fn;
} vec_job;

static void vec_chunk(void *p, int64_t c) {
    const vec_job *j = p;
    int64_t i0 = c * EMILY_MAP_CHUNK;
    int64_t n = j->total - i0 < EMILY_MAP_CHUNK ? j->total - i0 : EMILY_MAP_CHUNK;
    j->fn(j->d + i0 * j->dsize, j->s + i0 * j->ssize, n);
}

void emi_cpu_map_contiguous(emily_tensor *dst, const emily_tensor *src, emily_vec_fn fn) {
    int64_t total = dst->size;
    if (total <= 0) return;
    if (total < EMILY_PARALLEL_MIN) {
        fn(emily_tensor_base(dst), emily_tensor_base(src), total);
        return;
    }
    vec_job j = {emily_tensor_base(dst),
                 emily_tensor_base(src),
                 (int64_t)emily_dtype_size(dst->dtype),
                 (int64_t)emily_dtype_size(src->dtype),
                 total,
                 fn};
    emi_cpu_parallel((total + EMILY_MAP_CHUNK - 1) / EMILY_MAP_CHUNK, vec_chunk, &j);
}
