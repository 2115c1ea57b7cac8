/* BERT's text clean-up and word splitting, as Hugging Face's
 * BertNormalizer and BertPreTokenizer do them (the tokenizer.json of
 * all-MiniLM-L6-v2 names both), before WordPiece (tokenizer.c). */
#ifndef EMBED_BERT_TEXT_H
#define EMBED_BERT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "emily/status.h"

/* The normalizer's switches (tokenizer.json's "normalizer"). */
typedef struct bert_text_options {
    bool clean_text;    /* drop controls and U+FFFD, whitespace to ' ' */
    bool chinese_chars; /* a space either side of each CJK ideograph */
    bool strip_accents; /* NFD, then drop non-spacing marks */
    bool lowercase;
} bert_text_options;

/* A growable array of code points. */
typedef struct cp_buf {
    uint32_t *v;
    size_t len, cap;
} cp_buf;

void cp_buf_free(cp_buf *b);

/* Appends the normalized code points of text[0, n) (UTF-8; malformed
 * bytes are dropped as U+FFFD is) to out. EMILY_ERR_MEMORY on failure. */
emily_status bert_normalize(const bert_text_options *opt, const char *text, size_t n, cp_buf *out);

/* The pre-tokenizer: calls fn(ctx, word, len) for each word of the
 * normalized text, in order: runs of characters split at whitespace,
 * with each punctuation character a word of its own. Stops at the first
 * status fn returns that is not EMILY_OK and returns it. */
typedef emily_status (*bert_word_fn)(void *ctx, const uint32_t *word, size_t len);
emily_status bert_split_words(const uint32_t *text, size_t n, bert_word_fn fn, void *ctx);

#endif
