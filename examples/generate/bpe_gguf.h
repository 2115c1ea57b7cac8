/* SmolLM2's tokenizer from its GGUF file (libemily's reader,
 * emily/gguf.h): the glue between the file's metadata and
 * bpe_tokenizer_create. */
#ifndef GENERATE_BPE_GGUF_H
#define GENERATE_BPE_GGUF_H

#include "bpe_tokenizer.h"
#include "emily/gguf.h"

/* Reads tokenizer.ggml.{model, pre, tokens, token_type, merges,
 * bos_token_id, eos_token_id, add_bos_token}. The model must be "gpt2"
 * and the pre-tokenizer "smollm" or "gpt2" ("default" and a missing key
 * read as "gpt2"), else EMILY_ERR_UNSUPPORTED; missing or mistyped keys
 * are the reader's errors; the arrays are checked by
 * bpe_tokenizer_create. The message is in err (when not NULL) and
 * emily_last_error. g may be closed once this returns. */
emily_status bpe_from_gguf(const emily_gguf *g, bpe_tokenizer **out, char *err, size_t errlen);

#endif
