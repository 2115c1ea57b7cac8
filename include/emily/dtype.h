/* Element types: Nx's 20 types. Values are stable.
 *
 * The first EMILY_DTYPE_COUNT (14) are the types the engine computes in:
 * every op and kernel takes them. The six Nx added in 0.9-0.11 (the 8-bit
 * floats f8 = E5M2 and f8_e4m3fn, the sub-byte integers s2, s4, u2, u4)
 * follow them: they are stored one element per byte (a sub-byte integer
 * sign- or zero-extended, an f8 as its 8 bits), read and written as Nx's
 * binaries (sub-byte elements packed, see emily_from_binary), converted
 * to and from every type by emily_as_type with Nx's rules, and computed
 * in a wider type by emily_dispatch (docs/semantics.md, "Narrow types"):
 * the typed ops of emily/ops.h refuse them with EMILY_ERR_TYPE. */
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
    EMILY_DTYPE_COUNT,                 /* the computed types above; the narrow ones follow */
    EMILY_F8_E5M2 = EMILY_DTYPE_COUNT, /* Nx's {:f, 8} */
    EMILY_F8_E4M3FN,                   /* Nx's {:f8_e4m3fn, 8} */
    EMILY_S2,
    EMILY_S4,
    EMILY_U2,
    EMILY_U4,
    EMILY_DTYPE_ALL_COUNT, /* every type */
    /* "infer the output type like Nx does" where an API takes a type */
    EMILY_DTYPE_AUTO = -1
} emily_dtype;

/* Nx's type classes, ordered as Nx.Type orders them for merging. */
typedef enum emily_dtype_kind {
    EMILY_KIND_UNSIGNED = 0,
    EMILY_KIND_SIGNED = 1,
    EMILY_KIND_BFLOAT = 2,
    EMILY_KIND_FLOAT = 3,
    EMILY_KIND_COMPLEX = 4,
    /* f8_e4m3fn: a float ranked with f in Nx.Type.merge, but a type of
     * its own (merging it with another float keeps the left operand's) */
    EMILY_KIND_FLOAT8_E4M3FN = 5
} emily_dtype_kind;

/* One of the 14 computed types (every op takes it). */
EMILY_API bool emily_dtype_valid(emily_dtype t);
/* Any of the 20 types (a tensor may hold it). */
EMILY_API bool emily_dtype_known(emily_dtype t);
/* f8, f8_e4m3fn, s2, s4, u2, u4: stored, converted, computed wider. */
EMILY_API bool emily_dtype_is_narrow(emily_dtype t);
/* The computed type an op on a narrow type runs in (s2/s4 -> s8, u2/u4
 * -> u8, f8/f8_e4m3fn -> f32); t itself for the others. */
EMILY_API emily_dtype emily_dtype_compute_type(emily_dtype t);
EMILY_API size_t emily_dtype_size(emily_dtype t); /* bytes per element in memory */
EMILY_API int emily_dtype_bits(emily_dtype t);    /* Nx's size: 2..128 */
/* Bytes of n elements in Nx's binary form (sub-byte elements packed,
 * the last byte padded with zero bits); 0 for an unknown type. */
EMILY_API size_t emily_dtype_binary_size(emily_dtype t, int64_t n);
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
/* The 8-bit floats with Nx's write rules (docs/semantics.md, "Narrow
 * types"): f8 (E5M2) is the top byte of x rounded to f16; f8_e4m3fn
 * rounds as Nx.Floating.dump_f8_e4m3fn does (half away from zero, no
 * carry into the exponent, saturating at +-448, NaN 0x7f). Reading is
 * exact. */
EMILY_API double emily_f8_e5m2_to_f64(uint8_t v);
EMILY_API uint8_t emily_f64_to_f8_e5m2(double x);
EMILY_API double emily_f8_e4m3fn_to_f64(uint8_t v);
EMILY_API uint8_t emily_f64_to_f8_e4m3fn(double x);

#ifdef __cplusplus
}
#endif
#endif
