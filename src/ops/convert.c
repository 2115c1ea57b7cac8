/* as_type and bitcast (stub until the family lands). */
#include "ops/common.h"

emily_status emily_as_type(const emily_tensor *t, emily_dtype dtype, emily_tensor **out) {
    (void)t; (void)dtype; (void)out;
    return emily_error(EMILY_ERR_UNSUPPORTED, "as_type: not implemented yet");
}
