/* CPU kernels: reduce (stub until the family lands). */
#include "cpu/kernels.h"

emily_status emily_cpu_reduce(emily_reduce_op op, emily_tensor *dst, const emily_tensor *src, const bool *reduced) {
    (void)op; (void)dst; (void)src; (void)reduced;
    return emily_error(EMILY_ERR_UNSUPPORTED, "reduce: not implemented on the cpu yet");
}

emily_status emily_cpu_argreduce(emily_arg_op op, emily_tensor *dst, const emily_tensor *src, int axis, bool tie_break_high) {
    (void)op; (void)dst; (void)src; (void)axis; (void)tie_break_high;
    return emily_error(EMILY_ERR_UNSUPPORTED, "argreduce: not implemented on the cpu yet");
}

emily_status emily_cpu_all_close(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, double rtol, double atol, bool equal_nan) {
    (void)dst; (void)a; (void)b; (void)rtol; (void)atol; (void)equal_nan;
    return emily_error(EMILY_ERR_UNSUPPORTED, "all_close: not implemented on the cpu yet");
}

