/* BERT's tokenizer: the normalizer and pre-tokenizer of bert_text.h, then
 * WordPiece (greedy longest match, "##" continuations), [CLS] ... [SEP],
 * truncation. Reads a model folder's tokenizer.json (Hugging Face's
 * tokenizers format) or, failing that, vocab.txt with
 * tokenizer_config.json (BertTokenizer's files). */
#ifndef EMBED_TOKENIZER_H
#define EMBED_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "emily/status.h"

typedef struct bert_tokenizer bert_tokenizer;

emily_status tokenizer_load(const char *model_dir, bert_tokenizer **out);
void tokenizer_free(bert_tokenizer *t);

/* The ids of text[0, n): [CLS], the text's tokens truncated to
 * max_length - 2, [SEP]. *ids is malloc'd (free it); *count ids. Special
 * tokens written in the text ("[MASK]") become their own ids, as in
 * Hugging Face's tokenizers. max_length must be at least 2. */
emily_status tokenizer_encode(const bert_tokenizer *t, const char *text, size_t n, int max_length, int32_t **ids,
                              int *count);

/* The id that pads a batch ([PAD]), and the text of an id (NULL if none). */
int32_t tokenizer_pad_id(const bert_tokenizer *t);
const char *tokenizer_token(const bert_tokenizer *t, int32_t id);
/* One more than the largest id (a model's vocabulary must cover it). */
int32_t tokenizer_id_limit(const bert_tokenizer *t);

#endif
