/* The tokenizer's insides, shared by its files: the byte alphabet
 * (byte_unicode.c), the merge table (bpe_merges.c), the pre-tokenizer
 * (bpe_pretokenize.c), the merging of one piece (bpe_word.c), and the
 * tokenizer itself (bpe_tokenizer.c, bpe_encode.c, bpe_decoder.c). */
#ifndef GENERATE_BPE_IMPL_H
#define GENERATE_BPE_IMPL_H

#include "bpe_tokenizer.h"
#include "vocab.h"

/* ---- GPT-2's bytes-to-unicode alphabet ------------------------------------ */

/* The code point that stands for byte b in token texts ("Ġ" for ' '). */
uint32_t bpe_byte_to_cp(uint8_t b);
/* The byte that code point cp stands for, or -1 outside the alphabet. */
int bpe_cp_to_byte(uint32_t cp);

/* ---- merges: (left id, right id) -> rank and merged id -------------------- */

typedef struct bpe_merge_table bpe_merge_table;
emily_status bpe_merges_new(size_t expected, bpe_merge_table **out);
void bpe_merges_free(bpe_merge_table *m);
/* Adds a pair; false (nothing added) if the pair is there already. */
emily_status bpe_merges_add(bpe_merge_table *m, int32_t left, int32_t right, int32_t rank, int32_t merged, bool *added);
/* The rank of left+right (-1 when they do not merge) and its token. */
int32_t bpe_merges_find(const bpe_merge_table *m, int32_t left, int32_t right, int32_t *merged);

/* ---- pre-tokenizer --------------------------------------------------------- */

/* Called with each piece, in order: text[0, len), len > 0. */
typedef emily_status (*bpe_piece_fn)(void *ctx, const char *piece, size_t len);
/* Splits well-formed UTF-8 text[0, n) into pieces. */
emily_status bpe_pretokenize(bpe_pre_type pre, const char *text, size_t n, bpe_piece_fn fn, void *ctx);

/* ---- ids being built ------------------------------------------------------- */

typedef struct bpe_ids {
    int32_t *v;
    size_t n, cap;
} bpe_ids;
emily_status bpe_ids_push(bpe_ids *ids, int32_t id);

/* ---- merging one piece ----------------------------------------------------- */

/* Scratch for bpe_word, reused from piece to piece (zero to start). */
typedef struct bpe_word_scratch {
    int32_t *sym, *prev, *next; /* the symbols' tokens, as a linked list */
    struct bpe_candidate *heap;
    size_t cap, heap_cap;
} bpe_word_scratch;
void bpe_word_scratch_free(bpe_word_scratch *s);
/* Appends the tokens of piece[0, len) to out. */
emily_status bpe_word(const bpe_tokenizer *t, const char *piece, size_t len, bpe_word_scratch *s, bpe_ids *out);

/* ---- the tokenizer --------------------------------------------------------- */

/* A token found in the text as itself (control, user-defined). */
typedef struct bpe_special {
    const char *text; /* its bytes (in the tokenizer's pool) */
    size_t len;
    int32_t id;
} bpe_special;

struct bpe_tokenizer {
    size_t n_tokens;
    vocab *by_text;       /* token text as given -> id */
    char *texts;          /* each token's text as given, NUL-terminated, */
    size_t *text_offsets; /* from text_offsets[i] (n_tokens + 1 offsets) */
    char *bytes;          /* each token's bytes (what it decodes to), */
    size_t *byte_offsets; /* from byte_offsets[i] to byte_offsets[i + 1] */
    uint8_t *types;
    int32_t byte_token[256]; /* the token of each lone byte, or -1 */
    bpe_merge_table *merges;
    bpe_special *specials; /* longest first */
    size_t n_specials;
    bool special_start[256]; /* some special token starts with this byte */
    bpe_options opts;
};

#endif
