/* Strided copy: the one kernel every view-based op (pad, concatenate,
 * reverse, slice, put_slice, contiguous) is built on. */
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/strided.h"

#define COPY_LOOP(T)                                                            \
    _Pragma("omp parallel for if (total >= EMILY_PARALLEL_MIN) schedule(static)") \
    for (int64_t pos = 0; pos < it.outer_n; pos++) {                           \
        int64_t off[2];                                                         \
        emily_iter_offsets(&it, pos, off);                                      \
        T *d = (T *)dbase + off[0];                                             \
        const T *s = (const T *)sbase + off[1];                                 \
        int64_t ds = it.inner_stride[0], ss = it.inner_stride[1];               \
        if (ds == 1 && ss == 1) memcpy(d, s, (size_t)it.inner_n * sizeof(T));  \
        else for (int64_t i = 0; i < it.inner_n; i++) d[i * ds] = s[i * ss];    \
    }

typedef struct { uint64_t lo, hi; } u128;

emily_status emily_cpu_copy(emily_tensor *dst, const emily_tensor *src) {
    if (dst->size == 0) return EMILY_OK;
    const emily_tensor *ts[2] = {dst, src};
    emily_iter it;
    emily_status s = emily_iter_tensors(&it, 2, ts);
    if (s) return s;
    char *dbase = emily_tensor_base(dst);
    const char *sbase = emily_tensor_base(src);
    int64_t total = dst->size;
    switch (emily_dtype_size(dst->dtype)) {
    case 1: COPY_LOOP(uint8_t) break;
    case 2: COPY_LOOP(uint16_t) break;
    case 4: COPY_LOOP(uint32_t) break;
    case 8: COPY_LOOP(uint64_t) break;
    case 16: COPY_LOOP(u128) break;
    default: s = emily_error(EMILY_ERR_INTERNAL, "copy: bad element size");
    }
    emily_iter_free(&it);
    return s;
}
