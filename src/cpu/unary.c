/* CPU kernels: unary (stub until the family lands). */
#include "cpu/kernels.h"

emily_status emily_cpu_unary(emily_unary_op op, emily_tensor *dst, const emily_tensor *src) {
    (void)op; (void)dst; (void)src;
    return emily_error(EMILY_ERR_UNSUPPORTED, "unary: not implemented on the cpu yet");
}

