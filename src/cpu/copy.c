/* Strided copy: the one kernel every view-based op (pad, concatenate,
 * reverse, slice, put_slice, contiguous) is built on.
 *
 * The iterator merges dims so most copies are runs of memcpy or one
 * strided loop. A transposing copy (the destination's innermost dim is
 * strided in the source while another dim is contiguous there) goes by
 * square tiles, so both sides stay in cache. */
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/strided.h"

typedef struct { uint64_t lo, hi; } u128;

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

/* Tiled transposing copy. Dim `td` of the iterator's outer dims and the
 * inner dim form the tile plane; the other outer dims are walked as
 * "planes". */
#define TILE_LOOP(T, TB)                                                        \
    _Pragma("omp parallel for if (total >= EMILY_PARALLEL_MIN) schedule(static)") \
    for (int64_t u = 0; u < units; u++) {                                       \
        int64_t q = u / (ntj * nti), t = u % (ntj * nti);                       \
        int64_t j0 = (t / nti) * (TB), i0 = (t % nti) * (TB);                  \
        int64_t j1 = j0 + (TB) < nj ? j0 + (TB) : nj;                           \
        int64_t i1 = i0 + (TB) < ni ? i0 + (TB) : ni;                           \
        int64_t off[2];                                                         \
        plane_offsets(&it, td, q, off);                                         \
        T *restrict d = (T *)dbase + off[0];                                    \
        const T *restrict s = (const T *)sbase + off[1];                        \
        for (int64_t j = j0; j < j1; j++)                                       \
            for (int64_t i = i0; i < i1; i++) d[j * dj + i * di] = s[j * sj + i * si]; \
    }

/* Offsets of plane q: position q over the outer dims other than td. */
static void plane_offsets(const emily_iter *it, int td, int64_t q, int64_t *off) {
    off[0] = off[1] = 0;
    for (int d = it->rank - 1; d >= 0; d--) {
        if (d == td) continue;
        int64_t i = q % it->shape[d];
        q /= it->shape[d];
        off[0] += i * it->strides[d * 2];
        off[1] += i * it->strides[d * 2 + 1];
    }
}

static inline int64_t iabs64(int64_t x) { return x < 0 ? -x : x; }

emily_status emily_cpu_copy(emily_tensor *dst, const emily_tensor *src) {
    if (dst->size == 0) return EMILY_OK;
    const emily_tensor *ts[2] = {dst, src};
    emily_iter it;
    emily_status s = emily_iter_tensors(&it, 2, ts);
    if (s) return s;
    char *dbase = emily_tensor_base(dst);
    const char *sbase = emily_tensor_base(src);
    int64_t total = dst->size;
    size_t es = emily_dtype_size(dst->dtype);

    /* a transposing copy: the source's innermost stride is large while an
     * outer dim is (nearly) contiguous in the source */
    int td = -1;
    if (it.inner_n >= 8 && iabs64(it.inner_stride[1]) > 1) {
        int64_t best = iabs64(it.inner_stride[1]);
        for (int d = 0; d < it.rank; d++) {
            int64_t st = iabs64(it.strides[d * 2 + 1]);
            if (st != 0 && st < best && it.shape[d] >= 8) { best = st; td = d; }
        }
    }
    if (td >= 0) {
        int64_t nj = it.shape[td], ni = it.inner_n;
        int64_t dj = it.strides[td * 2], sj = it.strides[td * 2 + 1];
        int64_t di = it.inner_stride[0], si = it.inner_stride[1];
        int64_t tb = es <= 4 ? 64 : 32;
        int64_t ntj = (nj + tb - 1) / tb, nti = (ni + tb - 1) / tb;
        int64_t units = it.outer_n / nj * ntj * nti;
        switch (es) {
        case 1: TILE_LOOP(uint8_t, 64) break;
        case 2: TILE_LOOP(uint16_t, 64) break;
        case 4: TILE_LOOP(uint32_t, 64) break;
        case 8: TILE_LOOP(uint64_t, 32) break;
        case 16: TILE_LOOP(u128, 32) break;
        default: s = emily_error(EMILY_ERR_INTERNAL, "copy: bad element size");
        }
        emily_iter_free(&it);
        return s;
    }

    switch (es) {
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
