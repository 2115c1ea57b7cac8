/* CPU kernel: a narrow type to or from its hub (core/narrow_rules.h):
 * narrow -> f64, narrow integer -> s64, f64 -> narrow, s64 -> narrow.
 * emily_as_type chains these with the ordinary conversions. */
#include "core/narrow_rules.h"
#include "cpu/elementwise_map.h"
#include "cpu/kernels.h"

#define NARROW_RUN_FNS(E, sfx, T, TO_F64, FROM_F64, FROM_S64)      \
    EMILY_RUN_FN(nr_##sfx##_to_f64, T, double, TO_F64)             \
    EMILY_RUN_FN(nr_##sfx##_to_s64, T, int64_t, (int64_t)(TO_F64)) \
    EMILY_RUN_FN(nr_f64_to_##sfx, double, T, from_f64_##sfx(v))    \
    EMILY_RUN_FN(nr_s64_to_##sfx, int64_t, T, from_s64_##sfx((uint64_t)v))
/* the rules as functions of the names the list's expressions use */
#define NARROW_RULES(E, sfx, T, TO_F64, FROM_F64, FROM_S64)            \
    static inline T from_f64_##sfx(double x) { return (T)(FROM_F64); } \
    static inline T from_s64_##sfx(uint64_t b) { return (T)(FROM_S64); }
EMI_NARROW_TYPES(NARROW_RULES)
EMI_NARROW_TYPES(NARROW_RUN_FNS)

/* The run function of (src, dst), NULL for a pair that is not a narrow
 * type and its hub. */
static emily_run_fn narrow_fn(emily_dtype src, emily_dtype dst) {
#define PICK(E, sfx, T, TO_F64, FROM_F64, FROM_S64)                                                    \
    if (src == EMILY_##E && dst == EMILY_F64) return nr_##sfx##_to_f64;                                \
    if (src == EMILY_##E && dst == EMILY_S64 && emily_dtype_is_integer(src)) return nr_##sfx##_to_s64; \
    if (src == EMILY_F64 && dst == EMILY_##E) return nr_f64_to_##sfx;                                  \
    if (src == EMILY_S64 && dst == EMILY_##E && emily_dtype_is_integer(dst)) return nr_s64_to_##sfx;
    EMI_NARROW_TYPES(PICK)
#undef PICK
    return NULL;
}

emily_status emi_cpu_convert_narrow(emily_tensor *dst, const emily_tensor *src) {
    emily_run_fn fn = narrow_fn(src->dtype, dst->dtype);
    if (!fn)
        return emily_error(EMILY_ERR_INTERNAL, "as_type: no narrow conversion from %s to %s",
                           emily_dtype_name(src->dtype), emily_dtype_name(dst->dtype));
    return emi_cpu_map(dst, src, fn, NULL);
}
