/* Rotary position embedding as GGUF llama weights need it: llama.cpp's
 * converter permutes the query and key matrices' rows so that each head's
 * rotating pairs are adjacent features (2i, 2i + 1) instead of Hugging
 * Face's (i, i + dims / 2), so the rotation here is emily_rope's
 * `traditional` one, and the result equals Hugging Face's rotate_half on
 * the unpermuted weights. */
#ifndef GENERATE_LLAMA_ROPE_H
#define GENERATE_LLAMA_ROPE_H

#include "llama_model.h"
#include "tensor_scope.h"

/* The positions of one forward pass and the rotation's settings. */
typedef struct llama_rope {
    emily_tensor *positions; /* {n} s32: pos ... pos + n - 1 */
    emily_rope_options options;
} llama_rope;

emily_status llama_rope_make(llama_rope *r, const llama_config *c, emily_device device, int64_t pos, int64_t n);
void llama_rope_free(llama_rope *r);

/* x {1, n, heads, head_dim} rotated at the positions (emily_rope). */
emily_tensor *llama_rope_apply(ts_scope *s, const llama_rope *r, const emily_tensor *x);

#endif
