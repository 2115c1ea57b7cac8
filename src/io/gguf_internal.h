/* The parsed form of a GGUF file, shared by the reader's files:
 * gguf_open.c (mapping and checking), gguf_meta.c (metadata accessors),
 * gguf_tensor.c (tensor infos and loading), gguf_blocks.c (the block
 * formats re-expressed as Emily's affine codes), gguf_types.c (the ggml
 * type table). Nothing here is public (emily/gguf.h is). */
#ifndef EMILY_IO_GGUF_INTERNAL_H
#define EMILY_IO_GGUF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "emily/gguf.h"

/* One metadata pair. Every pointer points into the mapping. */
typedef struct gguf_kv {
    const char *key;
    size_t key_len;
    emily_gguf_value_type type;
    emily_gguf_value_type elem; /* arrays: the elements' type */
    const unsigned char *value; /* scalars: the value's bytes; strings: the characters;
                                    arrays: the first element */
    uint64_t len;               /* strings: bytes; arrays: elements */
    uint64_t *strings;          /* string arrays: the file offset of each element's
                                    length prefix (malloc'd; NULL otherwise) */
} gguf_kv;

typedef struct gguf_tensor {
    const char *name;
    size_t name_len;
    int type;
    int rank;
    int64_t shape[4]; /* Nx order */
    uint64_t offset;  /* from the start of the file */
    uint64_t nbytes;
} gguf_tensor;

/* A name -> index table (open addressing; slots hold index + 1, 0 is
 * empty; the capacity is a power of two at least twice the count). */
typedef struct gguf_names {
    uint32_t *slots;
    size_t mask;
} gguf_names;

struct emily_gguf {
    char *path;
    const unsigned char *map;
    size_t size;
    uint32_t version;
    uint64_t alignment;
    uint64_t data_start;
    gguf_kv *kvs;
    size_t kv_count;
    gguf_tensor *tensors;
    size_t tensor_count;
    gguf_names key_index, tensor_index;
};

/* ggml's type table: block length (elements) and block size (bytes);
 * false for a number that is not a known type. */
bool gguf_type_layout(int type, int64_t *block_len, int64_t *block_bytes);

/* Name hashing: a lookup gives the index of `name` (n bytes) or -1. */
uint64_t gguf_hash(const char *s, size_t n);
/* keyed by the i-th name of a list of names given by get(ctx, i, &len). */
typedef const char *(*gguf_name_fn)(const void *ctx, size_t i, size_t *len);
/* Builds the table of count names; the index of a duplicate (SIZE_MAX
 * if none) in *dup; false when out of memory. */
bool gguf_names_build(gguf_names *t, size_t count, gguf_name_fn get, const void *ctx, size_t *dup);
long long gguf_names_find(const gguf_names *t, const char *name, size_t n, gguf_name_fn get, const void *ctx);
void gguf_names_free(gguf_names *t);

/* Little-endian reads from the mapping. */
static inline uint16_t gguf_u16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t gguf_u32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t gguf_u64(const unsigned char *p) {
    return (uint64_t)gguf_u32(p) | ((uint64_t)gguf_u32(p + 4) << 32);
}

/* The bytes of one value of a scalar type (0 for strings and arrays). */
size_t gguf_scalar_size(emily_gguf_value_type t);

/* Re-expresses the block-format tensor t as Emily's triple (emily/gguf.h
 * says how), scales and biases first made in f32. */
emily_status gguf_load_blocks(const emily_gguf *g, const gguf_tensor *t, emily_device device, emily_dtype scale_type,
                              emily_gguf_tensor *out);

#endif
