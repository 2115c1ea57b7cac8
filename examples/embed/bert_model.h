/* A BERT encoder (Hugging Face's BertModel layout) on one Emily device:
 * its configuration, its weights, and the forward pass to the last
 * hidden states. */
#ifndef EMBED_BERT_MODEL_H
#define EMBED_BERT_MODEL_H

#include "emily/emily.h"

typedef struct bert_config {
    int vocab_size, hidden, layers, heads, intermediate, max_positions, type_vocab;
    double layer_norm_eps;
} bert_config;

/* One encoder layer. Linear weights are PyTorch's [out, in]; query, key
 * and value are concatenated into one [3 * hidden, hidden] product; the
 * feed-forward output weights are halved (the GELU's 0.5, exact in
 * binary, moved there: bert_forward.c). */
typedef struct bert_layer {
    emily_tensor *qkv_w, *qkv_b;
    emily_tensor *attn_out_w, *attn_out_b, *attn_ln_g, *attn_ln_b;
    emily_tensor *inter_w, *inter_b, *out_w_half, *out_b, *out_ln_g, *out_ln_b;
} bert_layer;

typedef struct bert_model {
    bert_config cfg;
    emily_device device;
    emily_tensor *word_emb, *pos_emb, *type_emb, *emb_ln_g, *emb_ln_b;
    bert_layer *layer; /* cfg.layers of them */
} bert_model;

/* Reads `dir`/config.json (model_type bert, hidden_act gelu, absolute
 * positions; the sizes checked against each other). */
emily_status bert_config_load(const char *dir, bert_config *out);

/* The config, then `dir`/model.safetensors onto `device` as f32 (the
 * file may hold f32, f16 or bf16; names with or without a "bert."
 * prefix). */
emily_status bert_load(const char *dir, emily_device device, bert_model **out);
void bert_free(bert_model *m);

/* The last hidden states [batch, seq, hidden] (f32) for token ids
 * [batch, seq] (s32) and attention mask [batch, seq] (f32: 1 a token, 0
 * padding; NULL when nothing is padded), both on the model's device;
 * token type 0 throughout. */
emily_status bert_forward(const bert_model *m, const emily_tensor *ids, const emily_tensor *mask,
                          emily_tensor **hidden);

#endif
