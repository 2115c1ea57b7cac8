/* A small GGUF writer for the tests and the fuzz target's seeds (its own
 * code, from the format's description in docs/gguf.md): bytes appended
 * to a growable buffer, little-endian, and a whole file assembled from
 * encoded metadata and a list of tensors. A failed allocation marks the
 * buffer failed (checked by the caller) instead of aborting. */
#ifndef EMILY_TESTS_GGUF_WRITER_H
#define EMILY_TESTS_GGUF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gw {
    unsigned char *b;
    size_t n, cap;
    bool failed;
} gw;

void gw_bytes(gw *w, const void *p, size_t n);
void gw_u8(gw *w, uint8_t v);
void gw_u16(gw *w, uint16_t v);
void gw_u32(gw *w, uint32_t v);
void gw_u64(gw *w, uint64_t v);
void gw_f32(gw *w, float v);
void gw_f64(gw *w, double v);
void gw_str(gw *w, const char *s); /* u64 length + bytes */
/* A metadata key and its value type; the value follows (gw_u32, ...). */
void gw_key(gw *w, const char *key, uint32_t type);
/* An array's header after gw_key(w, key, 9): element type and count. */
void gw_array(gw *w, uint32_t elem, uint64_t count);
void gw_free(gw *w);

typedef struct gw_tensor {
    const char *name;
    uint32_t rank;
    uint64_t ne[4]; /* the file's order: ne[0] innermost */
    uint32_t type;
    const void *data;
    size_t nbytes;
} gw_tensor;

/* A whole file into out: magic, version, counts, the kv_count pairs
 * already encoded in kvs, the tensor infos (offsets: each tensor at the
 * next multiple of align after the previous one), padding to align, the
 * data. No padding after the last tensor (so that cutting any byte off
 * the end makes the file invalid). */
void gw_file(gw *out, uint32_t version, const gw *kvs, uint64_t kv_count, const gw_tensor *ts, size_t n,
             uint64_t align);
/* Writes the buffer to path; false on any failure. */
bool gw_save(const gw *w, const char *path);

#endif
