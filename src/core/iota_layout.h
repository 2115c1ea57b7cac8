/* The iota kernel's contract, shared by both engines (src/cpu/create.c,
 * src/cuda/convert.cu): the checks on its output, and the layout it
 * fills. C and CUDA C++ alike. */
#ifndef EMILY_CORE_IOTA_LAYOUT_H
#define EMILY_CORE_IOTA_LAYOUT_H

#include "core/tensor_impl.h"

/* Fails unless dst is contiguous and axis < its rank; then dim is the
 * length of the axis counted along and inner the number of elements after
 * it (both 1 for axis < 0: one count over all elements). */
static inline emily_status emi_iota_layout(const emily_tensor *dst, int axis, int64_t *dim, int64_t *inner) {
    if (!emily_tensor_is_contiguous(dst)) return emily_error(EMILY_ERR_INTERNAL, "iota: the output must be contiguous");
    if (axis >= dst->rank)
        return emily_error(EMILY_ERR_AXIS, "iota: axis %d out of range for rank %d", axis, dst->rank);
    *dim = 1;
    *inner = 1;
    if (axis >= 0) {
        *dim = dst->shape[axis];
        for (int i = axis + 1; i < dst->rank; i++) *inner *= dst->shape[i];
    }
    return EMILY_OK;
}

#endif
