/* The one-input element-wise driver (see unary_map.h). */
#include "cpu/strided.h"
#include "cpu/unary_map.h"

emily_status emily_cpu_map(emily_tensor *dst, const emily_tensor *src, emily_run_fn fn) {
    if (dst->size == 0) return EMILY_OK;
    const emily_tensor *ts[2] = {dst, src};
    emily_iter it;
    emily_status s = emily_iter_tensors(&it, 2, ts);
    if (s) return s;
    char *dbase = emily_tensor_base(dst);
    const char *sbase = emily_tensor_base(src);
    const int64_t dsize = (int64_t)emily_dtype_size(dst->dtype);
    const int64_t ssize = (int64_t)emily_dtype_size(src->dtype);
    const int64_t ds = it.inner_stride[0], ss = it.inner_stride[1];
    const int64_t chunks = (it.inner_n + EMILY_MAP_CHUNK - 1) / EMILY_MAP_CHUNK;
    const int64_t blocks = it.outer_n * chunks;
    const int64_t total = dst->size;
    #pragma omp parallel for if (total >= EMILY_PARALLEL_MIN) schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t pos = b / chunks, c = b % chunks;
        int64_t off[2];
        emily_iter_offsets(&it, pos, off);
        int64_t i0 = c * EMILY_MAP_CHUNK;
        int64_t n = it.inner_n - i0 < EMILY_MAP_CHUNK ? it.inner_n - i0 : EMILY_MAP_CHUNK;
        fn(dbase + (off[0] + i0 * ds) * dsize, ds, sbase + (off[1] + i0 * ss) * ssize, ss, n);
    }
    emily_iter_free(&it);
    return EMILY_OK;
}
