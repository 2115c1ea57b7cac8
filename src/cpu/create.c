/* CPU kernels: create (stub until the family lands). */
#include "cpu/kernels.h"

emily_status emily_cpu_fill(emily_tensor *dst, const emily_scalar *value) {
    (void)dst; (void)value;
    return emily_error(EMILY_ERR_UNSUPPORTED, "constant: not implemented on the cpu yet");
}

emily_status emily_cpu_iota(emily_tensor *dst, int axis) {
    (void)dst; (void)axis;
    return emily_error(EMILY_ERR_UNSUPPORTED, "iota: not implemented on the cpu yet");
}

emily_status emily_cpu_eye(emily_tensor *dst) {
    (void)dst;
    return emily_error(EMILY_ERR_UNSUPPORTED, "eye: not implemented on the cpu yet");
}

