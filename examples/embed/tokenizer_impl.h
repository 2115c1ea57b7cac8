/* The tokenizer's insides, shared by its loader (tokenizer_load.c) and
 * its encoder (tokenizer.c). */
#ifndef EMBED_TOKENIZER_IMPL_H
#define EMBED_TOKENIZER_IMPL_H

#include "bert_text.h"
#include "tokenizer.h"
#include "vocab.h"

/* Added tokens ([CLS], [MASK], ...) are matched in the raw text. */
#define TOKENIZER_MAX_ADDED 64

typedef struct tokenizer_added {
    char *text;
    size_t len;
    int32_t id;
} tokenizer_added;

struct bert_tokenizer {
    vocab *vocab;
    bert_text_options text;
    char prefix[16];           /* WordPiece's continuing_subword_prefix */
    size_t max_chars_per_word; /* longer words are the unknown token */
    int32_t cls_id, sep_id, unk_id, pad_id;
    tokenizer_added added[TOKENIZER_MAX_ADDED];
    int nadded;
};

#endif
