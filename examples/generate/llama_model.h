/* A Llama-architecture decoder (SmolLM2, Llama 2/3 and their kin) from a
 * GGUF file, on the engine's public C API: the sizes and settings from
 * the file's `llama.*` metadata, the weights as the file stores them
 * (quantized matrices stay quantized: every product is the engine's fused
 * quantized matmul) or dequantized once at load (llama_weights), a
 * key/value cache that grows one step at a time, and the forward pass
 * that turns token ids into the next token's logits. */
#ifndef GENERATE_LLAMA_MODEL_H
#define GENERATE_LLAMA_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/emily.h"
#include "emily/gguf.h"

typedef struct llama_config {
    int layers, hidden, heads, kv_heads, head_dim, ffn, vocab, context;
    int rope_dims;    /* leading features of each head that rotate */
    double rope_base; /* llama.rope.freq_base */
    double norm_eps;  /* llama.attention.layer_norm_rms_epsilon */
    bool tied_output; /* no output.weight: the embeddings' transpose */
} llama_config;

/* How the weight matrices are held and multiplied (the norms' gains are
 * f32 in every mode; activations, norms, rope, attention and residuals
 * are f32 in every mode):
 *   QUANTIZED: block-quantized matrices stay Emily's affine codes, every
 *              product is emily_quantized_matmul (the smallest: Q4_1 is
 *              ~5 bits a weight);
 *   F32:       each dequantized once at load (emily_dequantize, exact:
 *              ggml's values) to f32, products are f32 emily_dot at the
 *              thread's dot precision (8x QUANTIZED's memory for Q4_1);
 *   BF16:      dequantized to f32, then rounded to bf16 (emily_as_type:
 *              Nx's rule, the top 16 bits of the f32 value); in each
 *              product x is rounded the same way and the bf16 products
 *              are summed in f32 and returned as f32 (emily_dot with an
 *              f32 output: tensor cores on CUDA). Half of F32's memory.
 * Dense matrices of the file (F32, F16) are made f32, or bf16 in BF16. */
typedef enum llama_weights {
    LLAMA_WEIGHTS_QUANTIZED = 0,
    LLAMA_WEIGHTS_F32,
    LLAMA_WEIGHTS_BF16,
} llama_weights;

/* "quantized", "f32" or "bf16" (as written); anything else (NULL too) is
 * EMILY_ERR_ARGUMENT with a message that names it and the modes. */
emily_status llama_weights_parse(const char *name, llama_weights *out);
/* The mode's name above, or NULL for a value that is not a mode. */
const char *llama_weights_name(llama_weights w);

/* A matrix {out, in} applied as x . w^T: dense (f32, or bf16 in BF16
 * mode), or Emily's affine codes (q, scales, biases, bits, group) as
 * emily_gguf_load makes them. */
typedef struct llama_matrix {
    emily_gguf_tensor t;
    int64_t rows, cols;
} llama_matrix;

typedef struct llama_layer {
    emily_tensor *attn_norm, *ffn_norm; /* {hidden} */
    llama_matrix q, k, v, o, gate, up, down;
} llama_layer;

typedef struct llama_model {
    llama_config cfg;
    emily_device device;
    llama_weights weights;
    llama_matrix embed;  /* {vocab, hidden} */
    llama_matrix output; /* {vocab, hidden}; the embeddings when tied (not owned) */
    emily_tensor *out_norm;
    llama_layer *layer;
} llama_model;

/* The keys and values of every layer for one sequence: {1, kv_heads,
 * capacity, head_dim} f32 each, filled up to `length` positions. */
typedef struct llama_cache {
    emily_tensor **k, **v;
    int layers;
    int64_t capacity, length;
} llama_cache;

/* Reads the config from the file's metadata; refuses what this code does
 * not compute (another architecture, rope scaling, missing sizes). */
emily_status llama_config_read(const emily_gguf *g, llama_config *cfg);

/* Loads every weight onto `device`, the matrices as `weights` says
 * (quantized ones with f32 scales, or dequantized on the device); a value
 * that is not a mode is EMILY_ERR_ARGUMENT. */
emily_status llama_model_load(const emily_gguf *g, emily_device device, llama_weights weights, llama_model *m);
void llama_model_free(llama_model *m);

emily_status llama_cache_new(const llama_model *m, int64_t capacity, llama_cache *c);
void llama_cache_free(llama_cache *c);

/* Runs n tokens at positions cache->length ... + n - 1, appends their keys
 * and values to the cache, and returns the logits of the last one:
 * {vocab} f32 on the model's device. */
emily_status llama_forward(const llama_model *m, llama_cache *cache, const int32_t *tokens, int n,
                           emily_tensor **logits);

#endif
