/* Element types: Nx's 14 types. Values are stable; the sub-byte and 8-bit
 * float types of Nx 0.13 will be appended after EMILY_C128. */
#ifndef EMILY_DTYPE_H
#define EMILY_DTYPE_H

#include "emily/export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_dtype {
    EMILY_U8 = 0,
    EMILY_U16,
    EMILY_U32,
    EMILY_U64,
    EMILY_S8,
    EMILY_S16,
    EMILY_S32,
    EMILY_S64,
    EMILY_F16,
    EMILY_BF16,
    EMILY_F32,
    EMILY_F64,
    EMILY_C64,
    EMILY_C128,
    EMILY_DTYPE_COUNT,
    /* "infer the output type like Nx does" where an API takes a type */
    EMILY_DTYPE_AUTO = -1
} emily_dtype;

/* Nx's type classes, ordered as Nx.Type orders them for merging. */
typedef enum emily_dtype_kind {
    EMILY_KIND_UNSIGNED = 0,
    EMILY_KIND_SIGNED = 1,
    EMILY_KIND_BFLOAT = 2,
    EMILY_KIND_FLOAT = 3,
    EMILY_KIND_COMPLEX = 4
} emily_dtype_kind;

EMILY_API bool emily_dtype_valid(emily_dtype t);
EMILY_API size_t emily_dtype_size(emily_dtype t);      /* bytes per element */
EMILY_API int emily_dtype_bits(emily_dtype t);         /* Nx's size: 8..128 */
EMILY_API emily_dtype_kind emily_dtype_kind_of(emily_dtype t);
EMILY_API const char *emily_dtype_name(emily_dtype t); /* "f32", "?" if invalid */
/* Parses "f32", "bf16", ... Returns EMILY_DTYPE_AUTO if unknown. */
EMILY_API emily_dtype emily_dtype_from_name(const char *name);
EMILY_API emily_dtype emily_dtype_make(emily_dtype_kind kind, int bits); /* AUTO if none */

EMILY_API bool emily_dtype_is_integer(emily_dtype t); /* u* and s* */
EMILY_API bool emily_dtype_is_float(emily_dtype t);   /* f16 bf16 f32 f64 */
EMILY_API bool emily_dtype_is_complex(emily_dtype t);

/* Nx.Type rules. */
EMILY_API emily_dtype emily_type_merge(emily_dtype a, emily_dtype b);
/* Nx.Type.merge_number for an integer or float scalar. */
EMILY_API emily_dtype emily_type_merge_int(emily_dtype t, int64_t value);
EMILY_API emily_dtype emily_type_merge_uint(emily_dtype t, uint64_t value);
EMILY_API emily_dtype emily_type_merge_float(emily_dtype t);
EMILY_API emily_dtype emily_type_to_floating(emily_dtype t);
EMILY_API emily_dtype emily_type_to_real(emily_dtype t);
EMILY_API emily_dtype emily_type_to_complex(emily_dtype t);
EMILY_API emily_dtype emily_type_to_aggregate(emily_dtype t);

/* Half-precision conversions with Nx's rounding. f16 rounds to nearest
 * even from the double; bf16 is written as Nx does: round the value to
 * f32 (nearest even), then keep the top 16 bits (truncation). */
EMILY_API float emily_f16_to_f32(uint16_t h);
EMILY_API uint16_t emily_f64_to_f16(double x);
EMILY_API float emily_bf16_to_f32(uint16_t h);
EMILY_API uint16_t emily_f32_to_bf16(float x);

#ifdef __cplusplus
}
#endif
#endif
