/* Byte-level BPE (GPT-2's scheme, as SmolLM2 uses it): text -> token ids
 * and ids -> text, the same ids as Hugging Face's tokenizers gives.
 *
 * Encoding: the control and user-defined tokens written in the text
 * ("<|im_start|>") become their own ids (leftmost, longest first); the
 * text between them is split into pieces by the pre-tokenizer
 * (bpe_pretokenize.c: SmolLM2 splits off each digit, then GPT-2's
 * pattern: contractions, letters, numbers, other symbols, whitespace),
 * each piece is taken as bytes and merged by the merges' ranks.
 * Text that is not UTF-8 is read as Rust's String::from_utf8_lossy and
 * Python's bytes.decode("utf-8", "replace") read it: each ill-formed
 * part becomes U+FFFD, whose ids are given (so decoding gives the
 * replaced text back, not the original bytes).
 *
 * Decoding: each token's bytes (its text mapped back through GPT-2's
 * bytes-to-unicode alphabet) are concatenated and read as UTF-8, an
 * ill-formed part becoming U+FFFD, as Hugging Face's ByteLevel decoder
 * does. Control tokens are printed as their text ("<|im_end|>") unless
 * skipped. The streaming decoder gives complete UTF-8 only: the start of
 * a character split across tokens waits for the next one.
 *
 * Every function returns EMILY_OK or an emily_status error whose message
 * (emily_last_error) names the argument; outputs are untouched or
 * cleared on failure and nothing leaks. A tokenizer is read-only once
 * made: several threads may encode and decode with it at once. */
#ifndef GENERATE_BPE_TOKENIZER_H
#define GENERATE_BPE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "emily/status.h"

typedef struct bpe_tokenizer bpe_tokenizer;

/* GGUF's token types (tokenizer.ggml.token_type). Control and
 * user-defined tokens are found in the text as themselves; the others
 * only come out of merges. */
enum {
    BPE_TOKEN_UNDEFINED = 0,
    BPE_TOKEN_NORMAL = 1,
    BPE_TOKEN_UNKNOWN = 2,
    BPE_TOKEN_CONTROL = 3,
    BPE_TOKEN_USER_DEFINED = 4,
    BPE_TOKEN_UNUSED = 5,
    BPE_TOKEN_BYTE = 6
};

/* How text is split before the merges (GGUF's tokenizer.ggml.pre). */
typedef enum bpe_pre_type {
    BPE_PRE_SMOLLM = 0, /* each digit alone, then GPT-2's pattern ("smollm") */
    BPE_PRE_GPT2 = 1    /* GPT-2's pattern alone ("gpt2") */
} bpe_pre_type;

typedef struct bpe_options {
    bpe_pre_type pre;
    int32_t bos_id, eos_id; /* -1: none */
    /* The id a byte with no token of its own becomes; -1 drops the byte,
     * as Hugging Face's BPE does without an unk_token (SmolLM2 has a
     * token for every byte, so this never happens with it). */
    int32_t unk_id;
    bool add_bos; /* bpe_encode puts bos_id first (SmolLM2: false) */
} bpe_options;

/* SmolLM2's pre-tokenizer, no bos/eos/unk, add_bos false. */
bpe_options bpe_default_options(void);

/* Makes a tokenizer from arrays: tokens[i] (token_lens[i] bytes, UTF-8,
 * not NUL-terminated) is id i, written in GPT-2's byte alphabet ("Ġ" for
 * a space; a token with characters outside that alphabet stands for its
 * own UTF-8 bytes); token_types[i] its BPE_TOKEN_* (NULL: all normal);
 * merges[r] ("left right", merge_lens[r] bytes) the merge of rank r.
 * opts may be NULL (bpe_default_options). Errors (EMILY_ERR_ARGUMENT,
 * also written into err[0, errlen) when err is not NULL): NULL arrays, no
 * tokens, a token that is empty, not UTF-8 or given twice, a type
 * outside 0..6, a merge without exactly one space, naming a token that
 * does not exist or whose joined text is not a token, a merge given
 * twice, bos/eos/unk outside the vocabulary. */
emily_status bpe_tokenizer_create(const char *const *tokens, const size_t *token_lens, const int32_t *token_types,
                                  size_t n_tokens, const char *const *merges, const size_t *merge_lens, size_t n_merges,
                                  const bpe_options *opts, bpe_tokenizer **out, char *err, size_t errlen);
void bpe_tokenizer_free(bpe_tokenizer *t);

/* The ids of text[0, len) (text may be NULL when len is 0): *ids is
 * malloc'd (free it; NULL when *n is 0). */
emily_status bpe_encode(const bpe_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n);

/* The text of ids[0, n) as one malloc'd, NUL-terminated string (*len
 * bytes before the NUL). skip_control leaves control tokens out (Hugging
 * Face's skip_special_tokens). An id outside the vocabulary is an
 * EMILY_ERR_INDEX. */
emily_status bpe_decode(const bpe_tokenizer *t, const int32_t *ids, size_t n, bool skip_control, char **text,
                        size_t *len);

/* Streaming decoding, one id at a time. Each call gives the complete
 * UTF-8 text that the ids so far add (*text, *len; possibly empty,
 * NUL-terminated, valid until the next call on d); bpe_decoder_flush
 * gives what is held back (an unfinished character becomes U+FFFD).
 * The pieces joined are bpe_decode's text of the same ids. d keeps a
 * pointer to t: t must outlive it. */
typedef struct bpe_decoder bpe_decoder;
emily_status bpe_decoder_create(const bpe_tokenizer *t, bool skip_control, bpe_decoder **out);
emily_status bpe_decoder_push(bpe_decoder *d, int32_t id, const char **text, size_t *len);
emily_status bpe_decoder_flush(bpe_decoder *d, const char **text, size_t *len);
void bpe_decoder_free(bpe_decoder *d);

/* SmolLM2's chat template (the GGUF's tokenizer.chat_template):
 *   <|im_start|>ROLE\nCONTENT<|im_end|>\n   for each message, after
 *   <|im_start|>system\nDEFAULT<|im_end|>\n  when the first is not "system",
 *   <|im_start|>assistant\n                  when add_generation_prompt.
 * default_system NULL is the template's own (BPE_SMOLLM2_SYSTEM_PROMPT).
 * bpe_render_chat gives the text (malloc'd, NUL-terminated);
 * bpe_apply_chat its ids, encoded as bpe_encode does, so that control
 * tokens written in a message are control tokens, as with Hugging Face's
 * apply_chat_template(tokenize=True). */
#define BPE_SMOLLM2_SYSTEM_PROMPT "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
typedef struct bpe_chat_message {
    const char *role, *content; /* NUL-terminated */
} bpe_chat_message;
emily_status bpe_render_chat(const bpe_chat_message *messages, size_t n_messages, const char *default_system,
                             bool add_generation_prompt, char **text, size_t *len);
emily_status bpe_apply_chat(const bpe_tokenizer *t, const bpe_chat_message *messages, size_t n_messages,
                            const char *default_system, bool add_generation_prompt, int32_t **ids, size_t *n);

/* The vocabulary: its size, a token's text as given (NULL outside it),
 * type (-1 outside it), and the options it was made with. */
size_t bpe_vocab_size(const bpe_tokenizer *t);
const char *bpe_token_text(const bpe_tokenizer *t, int32_t id, size_t *len);
int bpe_token_type(const bpe_tokenizer *t, int32_t id);
bpe_options bpe_tokenizer_options(const bpe_tokenizer *t);

#endif
