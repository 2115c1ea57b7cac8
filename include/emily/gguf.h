/* GGUF files (llama.cpp's model format): metadata, and tensors loaded
 * into Emily's affine quantized format without dequantizing them
 * (docs/gguf.md has the whole story; emily/ops_quant.h the format).
 *
 * emily_gguf_open maps the file read-only and checks all of it before it
 * returns: the magic "GGUF", version 2 or 3 (little-endian files only),
 * the counts, every string's and array's length, the value types, each
 * tensor's rank (1 to 4), dimensions (non-negative, their product within
 * EMILY_MAX_ELEMENTS, the innermost a multiple of the type's block), ggml
 * type (one of the known ones), data offset (a multiple of
 * general.alignment, 32 by default) and extent (inside the file), with
 * no arithmetic overflow; keys and tensor names must be unique. A file
 * that fails any check gives EMILY_ERR_ARGUMENT and a message
 * "gguf: PATH: what is wrong (and where)"; nothing is left open.
 * String arrays are indexed once at open, so every accessor below is
 * O(1) per element (O(1) per key or name lookup too: hashed). Nested
 * arrays (arrays of arrays) are refused at open.
 *
 * Strings handed out (metadata values, tensor names) point into the
 * mapping: they are not NUL-terminated and live until emily_gguf_close.
 * Loaded tensors are copies and outlive the file.
 *
 * Errors common to the accessors: EMILY_ERR_ARGUMENT for a NULL argument
 * and for a key or tensor name that is not in the file (the message
 * names it); EMILY_ERR_TYPE for a value of another type than the
 * accessor reads (the message names the key, the wanted and the actual
 * type); EMILY_ERR_INDEX for an array index at or past the count. */
#ifndef EMILY_GGUF_H
#define EMILY_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emily_gguf emily_gguf;

/* The metadata value types, numbered as in the file. */
typedef enum emily_gguf_value_type {
    EMILY_GGUF_UINT8 = 0,
    EMILY_GGUF_INT8 = 1,
    EMILY_GGUF_UINT16 = 2,
    EMILY_GGUF_INT16 = 3,
    EMILY_GGUF_UINT32 = 4,
    EMILY_GGUF_INT32 = 5,
    EMILY_GGUF_FLOAT32 = 6,
    EMILY_GGUF_BOOL = 7,
    EMILY_GGUF_STRING = 8,
    EMILY_GGUF_ARRAY = 9,
    EMILY_GGUF_UINT64 = 10,
    EMILY_GGUF_INT64 = 11,
    EMILY_GGUF_FLOAT64 = 12
} emily_gguf_value_type;

/* The ggml tensor types that emily_gguf_load reads (the others known to
 * the reader are listed by emily_gguf_tensor_info_at, and refused by
 * emily_gguf_load). Numbered as in the file. */
enum {
    EMILY_GGML_F32 = 0,
    EMILY_GGML_F16 = 1,
    EMILY_GGML_Q4_0 = 2,
    EMILY_GGML_Q4_1 = 3,
    EMILY_GGML_Q8_0 = 8,
    EMILY_GGML_Q4_K = 12,
    EMILY_GGML_I8 = 24,
    EMILY_GGML_I16 = 25,
    EMILY_GGML_I32 = 26,
    EMILY_GGML_I64 = 27,
    EMILY_GGML_F64 = 28,
    EMILY_GGML_BF16 = 30
};

/* Opens and checks the file (see above); *out is NULL on failure. */
EMILY_API emily_status emily_gguf_open(const char *path, emily_gguf **out);
/* Unmaps the file and frees everything (NULL is ignored). */
EMILY_API void emily_gguf_close(emily_gguf *g);

/* ---- metadata ---------------------------------------------------------------- */

EMILY_API bool emily_gguf_has_key(const emily_gguf *g, const char *key);
/* The number of key-value pairs, and the key of pair i (file order). */
EMILY_API size_t emily_gguf_key_count(const emily_gguf *g);
EMILY_API emily_status emily_gguf_key_at(const emily_gguf *g, size_t i, const char **key, size_t *len,
                                         emily_gguf_value_type *type);
/* Any integer type or bool (false 0, true 1); a u64 above INT64_MAX is
 * EMILY_ERR_TYPE (it does not fit). */
EMILY_API emily_status emily_gguf_get_int(const emily_gguf *g, const char *key, int64_t *out);
/* f32 or f64 (an f32 exactly), or any integer type (converted to the
 * nearest double). */
EMILY_API emily_status emily_gguf_get_float(const emily_gguf *g, const char *key, double *out);
EMILY_API emily_status emily_gguf_get_string(const emily_gguf *g, const char *key, const char **s, size_t *len);
/* An array's element type and element count. */
EMILY_API emily_status emily_gguf_get_array(const emily_gguf *g, const char *key, emily_gguf_value_type *elem,
                                            size_t *count);
/* Element i of an array of strings, of integers or bools (the rules of
 * get_int), of floats or integers (the rules of get_float). */
EMILY_API emily_status emily_gguf_get_array_string(const emily_gguf *g, const char *key, size_t i, const char **s,
                                                   size_t *len);
EMILY_API emily_status emily_gguf_get_array_int(const emily_gguf *g, const char *key, size_t i, int64_t *out);
EMILY_API emily_status emily_gguf_get_array_float(const emily_gguf *g, const char *key, size_t i, double *out);

/* ---- tensors ----------------------------------------------------------------- */

typedef struct emily_gguf_tensor_info {
    const char *name; /* into the mapping, not NUL-terminated */
    size_t name_len;
    int ggml_type;    /* EMILY_GGML_* or another ggml type number */
    int rank;         /* 1 to 4 */
    int64_t shape[4]; /* Nx order: the file's dimensions reversed */
    uint64_t offset;  /* of the tensor's first byte, from the start of the file */
    uint64_t nbytes;  /* of its data in the file */
} emily_gguf_tensor_info;

EMILY_API size_t emily_gguf_tensor_count(const emily_gguf *g);
EMILY_API emily_status emily_gguf_tensor_info_at(const emily_gguf *g, size_t i, emily_gguf_tensor_info *out);
EMILY_API emily_status emily_gguf_find_tensor(const emily_gguf *g, const char *name, size_t *index);
/* The ggml name of a type number ("Q4_K"), or NULL for one not known. */
EMILY_API const char *emily_gguf_type_name(int ggml_type);

/* A loaded tensor. Plain types (F32, F16, BF16, F64, I8, I16, I32, I64)
 * fill `dense` (f32, f16, bf16, f64, s8, s16, s32, s64 of the info's
 * shape; the bytes as they are in the file). Block types fill q, scales,
 * biases, bits and group_size: the affine triple of emily/ops_quant.h
 * with group_size 32 along the innermost axis K, so that
 * emily_dequantize(q, scales, biases, bits, 32) gives ggml's values and
 * emily_quantized_matmul(x, q, scales, biases, bits, 32, true) computes
 * x . W^T. For a tensor of shape {..., K}, N is the product of the other
 * dimensions (1 for a vector): q is u8 {N, K * bits / 8}, scales and
 * biases are {N, K / 32} of scale_type. The unused fields are NULL / 0.
 *
 *   Q8_0 (bits 8): code = q + 128, scale = d, bias = -128 d
 *   Q4_0 (bits 4): code = q,       scale = d, bias = -8 d
 *   Q4_1 (bits 4): code = q,       scale = d, bias = m
 *   Q4_K (bits 4): group j of a 256-element block: scale = d * sc_j,
 *                  bias = -(dmin * m_j)
 * Exactness: with scale_type f32 every scale and bias is exact, and the
 * dequantized values equal ggml's (f32) bit for bit. f16 holds d, m,
 * -8 d and -128 d exactly unless they overflow (|d| > 65504 / 128 for
 * Q8_0's bias, |d| > 65504 / 8 for Q4_0's), but not Q4_K's d * sc_j in
 * general; bf16 (8 significant bits against f16's 11) holds them only
 * where they happen to fit. Where not exact they are rounded from f32 by
 * Nx's rules (emily_as_type).
 *
 * Errors: as above; EMILY_ERR_TYPE for scale_type not f32, f16 or bf16
 * and for a tensor of a ggml type not listed here (the message names the
 * tensor and the type, "Q6_K"); EMILY_ERR_MEMORY; EMILY_ERR_DEVICE for a
 * device that is not usable. On failure *out is all NULL. */
typedef struct emily_gguf_tensor {
    emily_tensor *dense;
    emily_tensor *q, *scales, *biases;
    int bits;
    int64_t group_size;
} emily_gguf_tensor;

EMILY_API emily_status emily_gguf_load(const emily_gguf *g, const char *name, emily_device device,
                                       emily_dtype scale_type, emily_gguf_tensor *out);
/* Releases the tensors held and zeroes *t (NULL is ignored). */
EMILY_API void emily_gguf_tensor_release(emily_gguf_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
