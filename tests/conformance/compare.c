#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "compare.h"
#include "../float_parts.h"

/* clang-format off */
static const char *const exact_ops[] = {
    "abs", "negate", "conjugate", "real", "imag", "ceil", "floor", "round", "sign",
    "as_type", "bitcast", "constant", "iota", "eye",
    "reshape", "squeeze", "broadcast", "transpose", "pad", "reverse", "concatenate", "stack",
    "slice", "put_slice", "select", "clip", "min", "max", "reduce_max", "reduce_min",
    "argmax", "argmin", "take", "take_along_axis", "gather", "indexed_put", "sort", "argsort",
    "top_k", "window_max", "window_min", "cumulative_max", "cumulative_min",
    "window_scatter_max", "window_scatter_min", NULL};
/* clang-format on */

bool compare_is_exact_op(const char *op) {
    for (int i = 0; exact_ops[i]; i++)
        if (strcmp(op, exact_ops[i]) == 0) return true;
    return false;
}

/* A few ULP for f32/f64 (the reference rounds an f64 computation once;
 * we may round twice or use a different libm), one ULP of the output
 * type for f16/bf16. */
int compare_max_ulp(emily_dtype dtype) {
    return (dtype == EMILY_F16 || dtype == EMILY_BF16 || dtype == EMILY_F8_E5M2 || dtype == EMILY_F8_E4M3FN) ? 1 : 4;
}

static bool float_close(emily_dtype dt, const unsigned char *g, const unsigned char *w, bool exact) {
    uint64_t gb, wb;
    int width;
    double gv = fp_part(dt, g, &gb, &width), wv = fp_part(dt, w, &wb, &width);
    if (isnan(gv) || isnan(wv)) return isnan(gv) && isnan(wv);
    if (exact) return gb == wb;
    if (isinf(gv) || isinf(wv)) return gv == wv;
    int64_t d = fp_ordered(gb, width) - fp_ordered(wb, width);
    if (d < 0) d = -d;
    return d <= compare_max_ulp(dt);
}

bool compare_data(const char *op, emily_dtype dtype, const void *got, const void *want, size_t n, char *msg,
                  size_t msgsize) {
    size_t es = emily_dtype_size(dtype);
    const unsigned char *g = got, *w = want;
    if (emily_dtype_bits(dtype) < 8) { /* packed sub-byte integers: bit for bit */
        int b = emily_dtype_bits(dtype);
        for (size_t i = 0; i < n; i++) {
            unsigned shift = 8 - (unsigned)b - (unsigned)(i * (size_t)b % 8), mask = (1u << b) - 1u;
            if (((g[i * b / 8] >> shift) & mask) != ((w[i * b / 8] >> shift) & mask)) {
                snprintf(msg, msgsize, "element %zu differs", i);
                return false;
            }
        }
        return true;
    }
    if (emily_dtype_is_integer(dtype)) {
        for (size_t i = 0; i < n; i++)
            if (memcmp(g + i * es, w + i * es, es) != 0) {
                snprintf(msg, msgsize, "element %zu differs", i);
                return false;
            }
        return true;
    }
    bool exact = compare_is_exact_op(op);
    emily_dtype part = dtype == EMILY_C64 ? EMILY_F32 : dtype == EMILY_C128 ? EMILY_F64 : dtype;
    size_t ps = emily_dtype_size(part);
    size_t parts = emily_dtype_is_complex(dtype) ? 2 : 1;
    for (size_t i = 0; i < n * parts; i++) {
        if (!float_close(part, g + i * ps, w + i * ps, exact)) {
            uint64_t gb, wb;
            int width;
            double gv = fp_part(part, g + i * ps, &gb, &width), wv = fp_part(part, w + i * ps, &wb, &width);
            snprintf(msg, msgsize, "element %zu%s: got %.17g, want %.17g", i / parts,
                     parts == 2 ? (i % 2 ? " (imag)" : " (real)") : "", gv, wv);
            return false;
        }
    }
    return true;
}
