/* Rotary position embedding as GGUF llama weights need it: llama.cpp's
 * converter permutes the query and key matrices' rows so that each head's
 * rotating pairs are adjacent features (2i, 2i + 1) instead of Hugging
 * Face's (i, i + dims / 2), so the pairs here are adjacent and the
 * result equals Hugging Face's on the unpermuted weights. */
#ifndef GENERATE_LLAMA_ROPE_H
#define GENERATE_LLAMA_ROPE_H

#include "llama_model.h"
#include "tensor_scope.h"

/* cos and sin of each position's angles, {1, n, 1, rope_dims / 2} f32. */
typedef struct llama_rope_table {
    emily_tensor *cos, *sin;
    int rope_dims, head_dim;
} llama_rope_table;

/* The angles of positions pos ... pos + n - 1 as Hugging Face computes
 * them in f32: inv_freq_i = 1 / base^(2i / dims), angle = position *
 * inv_freq_i (f32 products), cos and sin of the f32 angle. */
emily_status llama_rope_table_make(llama_rope_table *t, const llama_config *c, emily_device device,
                                   int64_t pos, int64_t n);
void llama_rope_table_free(llama_rope_table *t);

/* x {1, n, heads, head_dim} rotated: y_2i = x_2i cos - x_2i+1 sin,
 * y_2i+1 = x_2i sin + x_2i+1 cos over the first rope_dims features; the
 * rest pass through. */
emily_tensor *llama_rope_apply(ts_scope *s, const llama_rope_table *t, const emily_tensor *x);

#endif
