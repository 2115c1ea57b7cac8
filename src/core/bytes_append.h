/* Appending bytes to a growable heap buffer: the graph serializer's
 * writer (src/graph/serialize.c) and the tests' GGUF writer
 * (tests/unit/gguf_writer.c) both build their files this way. */
#ifndef EMILY_CORE_BYTES_APPEND_H
#define EMILY_CORE_BYTES_APPEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Appends the n bytes at p to *buf, of which *len bytes of *cap are used
 * (*len <= *cap), doubling the capacity (from `first`, when there is
 * none yet) as needed. false, with nothing changed, when out of memory. */
static inline bool emi_bytes_append(unsigned char **buf, size_t *len, size_t *cap, size_t first, const void *p,
                                    size_t n) {
    if (*cap - *len < n) {
        size_t grown = *cap ? *cap : first;
        while (grown - *len < n) grown *= 2;
        unsigned char *b = realloc(*buf, grown);
        if (!b) return false;
        *buf = b;
        *cap = grown;
    }
    if (n) memcpy(*buf + *len, p, n);
    *len += n;
    return true;
}

#endif
