/* CPU kernels: convert (stub until the family lands). */
#include "cpu/kernels.h"

emily_status emily_cpu_convert(emily_tensor *dst, const emily_tensor *src) {
    (void)dst; (void)src;
    return emily_error(EMILY_ERR_UNSUPPORTED, "as_type: not implemented on the cpu yet");
}

