/* The tests' GGUF writer (gguf_writer.h). */
#include "gguf_writer.h"
#include "core/bytes_append.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gw_bytes(gw *w, const void *p, size_t n) {
    if (!w->failed && !emi_bytes_append(&w->b, &w->n, &w->cap, 256, p, n)) w->failed = true;
}

static void le(gw *w, uint64_t v, int bytes) {
    unsigned char b[8];
    for (int i = 0; i < bytes; i++) b[i] = (unsigned char)(v >> (8 * i));
    gw_bytes(w, b, (size_t)bytes);
}

void gw_u8(gw *w, uint8_t v) { le(w, v, 1); }
void gw_u16(gw *w, uint16_t v) { le(w, v, 2); }
void gw_u32(gw *w, uint32_t v) { le(w, v, 4); }
void gw_u64(gw *w, uint64_t v) { le(w, v, 8); }

void gw_f32(gw *w, float v) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    gw_u32(w, b);
}

void gw_f64(gw *w, double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    gw_u64(w, b);
}

void gw_str(gw *w, const char *s) {
    gw_u64(w, strlen(s));
    gw_bytes(w, s, strlen(s));
}

void gw_key(gw *w, const char *key, uint32_t type) {
    gw_str(w, key);
    gw_u32(w, type);
}

void gw_array(gw *w, uint32_t elem, uint64_t count) {
    gw_u32(w, elem);
    gw_u64(w, count);
}

void gw_free(gw *w) {
    free(w->b);
    *w = (gw){0};
}

static void pad(gw *w, uint64_t align) {
    static const unsigned char zeros[64];
    while (!w->failed && w->n % align) {
        size_t k = (size_t)(align - w->n % align);
        gw_bytes(w, zeros, k < sizeof zeros ? k : sizeof zeros);
    }
}

void gw_file(gw *out, uint32_t version, const gw *kvs, uint64_t kv_count, const gw_tensor *ts, size_t n,
             uint64_t align) {
    gw_bytes(out, "GGUF", 4);
    gw_u32(out, version);
    gw_u64(out, n);
    gw_u64(out, kv_count);
    gw_bytes(out, kvs->b, kvs->n);
    if (kvs->failed) out->failed = true;
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        gw_str(out, ts[i].name);
        gw_u32(out, ts[i].rank);
        for (uint32_t d = 0; d < ts[i].rank; d++) gw_u64(out, ts[i].ne[d]);
        gw_u32(out, ts[i].type);
        gw_u64(out, offset);
        offset += (ts[i].nbytes + align - 1) / align * align;
    }
    for (size_t i = 0; i < n; i++) {
        pad(out, align);
        gw_bytes(out, ts[i].data, ts[i].nbytes);
    }
}

bool gw_save(const gw *w, const char *path) {
    if (w->failed) return false;
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(w->b, 1, w->n, f) == w->n;
    return fclose(f) == 0 && ok;
}
