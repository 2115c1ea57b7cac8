/* CPU kernels: binary, select (stub until the family lands). */
#include "cpu/kernels.h"

emily_status emily_cpu_binary(emily_binary_op op, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b) {
    (void)op; (void)dst; (void)a; (void)b;
    return emily_error(EMILY_ERR_UNSUPPORTED, "binary: not implemented on the cpu yet");
}

emily_status emily_cpu_select(emily_tensor *dst, const emily_tensor *pred, const emily_tensor *on_true, const emily_tensor *on_false) {
    (void)dst; (void)pred; (void)on_true; (void)on_false;
    return emily_error(EMILY_ERR_UNSUPPORTED, "select: not implemented on the cpu yet");
}

