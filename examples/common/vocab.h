/* A WordPiece vocabulary: token text <-> id, looked up by hash. */
#ifndef EMBED_VOCAB_H
#define EMBED_VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include "emily/status.h"

typedef struct vocab vocab;

/* Ids go up to this (a vocabulary file asking for more is refused, not
 * allocated for). */
#define VOCAB_MAX_ID ((1 << 24) - 1)

/* An empty vocabulary with room for `expected` tokens (it grows). */
emily_status vocab_new(size_t expected, vocab **out);
void vocab_free(vocab *v);

/* Adds token text[0, n) with `id` (0 to VOCAB_MAX_ID). A token already present keeps
 * its first id (EMILY_OK); an id already given to another token is an
 * EMILY_ERR_ARGUMENT. */
emily_status vocab_add(vocab *v, const char *text, size_t n, int32_t id);

/* The id of prefix + text[0, n) (prefix may be NULL), or -1. */
int32_t vocab_find(const vocab *v, const char *prefix, const char *text, size_t n);

/* Token text of id (NUL-terminated), or NULL. */
const char *vocab_token(const vocab *v, int32_t id);

/* Number of tokens, and one more than the largest id. */
size_t vocab_count(const vocab *v);
int32_t vocab_id_limit(const vocab *v);

#endif
