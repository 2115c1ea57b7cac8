#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/strided.h"

emily_status emi_iter_init(emily_iter *it, int nops, int rank, const int64_t *shape, const int64_t *const *strides) {
    memset(it, 0, sizeof *it);
    it->nops = nops;
    if (nops > EMILY_ITER_MAX_OPS) return emily_error(EMILY_ERR_INTERNAL, "iter: too many operands");
    int64_t *dims = malloc(sizeof(int64_t) * (size_t)(rank + 1) * (size_t)(nops + 1));
    if (!dims) return emily_error(EMILY_ERR_MEMORY, "iter: out of host memory");
    int64_t *dstr = dims + (rank + 1); /* (rank+1) * nops */
    int n = 0;                         /* kept dims, outermost first */
    for (int d = 0; d < rank; d++) {
        if (shape[d] == 1) continue;
        if (n > 0) {
            /* merge with the previous kept dim if contiguous for all operands */
            bool merge = true;
            for (int k = 0; k < nops; k++)
                if (dstr[(n - 1) * nops + k] != strides[k][d] * shape[d]) {
                    merge = false;
                    break;
                }
            if (merge) {
                dims[n - 1] *= shape[d];
                for (int k = 0; k < nops; k++) dstr[(n - 1) * nops + k] = strides[k][d];
                continue;
            }
        }
        dims[n] = shape[d];
        for (int k = 0; k < nops; k++) dstr[n * nops + k] = strides[k][d];
        n++;
    }
    if (n == 0) {
        it->inner_n = 1;
        for (int k = 0; k < nops; k++) it->inner_stride[k] = 0;
        it->rank = 0;
    } else {
        it->inner_n = dims[n - 1];
        for (int k = 0; k < nops; k++) it->inner_stride[k] = dstr[(n - 1) * nops + k];
        it->rank = n - 1;
    }
    it->outer_n = 1;
    for (int d = 0; d < it->rank; d++) it->outer_n *= dims[d];
    for (int d = 0; d < rank; d++)
        if (shape[d] == 0) {
            it->outer_n = 0;
            it->inner_n = 0;
        }
    /* repack: shape then strides, contiguous in the same allocation */
    it->shape = dims;
    int64_t *packed = dims + it->rank;
    memmove(packed, dstr, sizeof(int64_t) * (size_t)it->rank * (size_t)nops);
    it->strides = packed;
    return EMILY_OK;
}

void emi_iter_free(emily_iter *it) {
    free(it->shape);
    it->shape = it->strides = NULL;
}

void emi_iter_offsets(const emily_iter *it, int64_t pos, int64_t *offsets) {
    for (int k = 0; k < it->nops; k++) offsets[k] = 0;
    for (int d = it->rank - 1; d >= 0; d--) {
        int64_t i = pos % it->shape[d];
        pos /= it->shape[d];
        for (int k = 0; k < it->nops; k++) offsets[k] += i * it->strides[d * it->nops + k];
    }
}

emily_status emi_iter_tensors(emily_iter *it, int nops, const emily_tensor *const *ts) {
    const int64_t *strides[EMILY_ITER_MAX_OPS];
    for (int k = 0; k < nops && k < EMILY_ITER_MAX_OPS; k++) strides[k] = ts[k]->strides;
    return emi_iter_init(it, nops, ts[0]->rank, ts[0]->shape, strides);
}

int emi_cpu_isa(void) {
    static atomic_int level = -1;
    int l = atomic_load_explicit(&level, memory_order_relaxed);
    if (l < 0) {
        l = 0;
#if defined(__x86_64__) && defined(__GNUC__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) l = 2;
        else if (__builtin_cpu_supports("avx2")) l = 1;
#endif
        atomic_store_explicit(&level, l, memory_order_relaxed);
    }
    return l;
}
