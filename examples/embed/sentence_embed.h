/* Sentence embeddings as sentence-transformers computes them for
 * all-MiniLM-L6-v2 (its modules.json: Transformer, mean Pooling,
 * Normalize): tokenize, run the encoder on batches padded to their
 * longest sentence, average the hidden states over the attention mask,
 * scale to unit length. */
#ifndef EMBED_SENTENCE_EMBED_H
#define EMBED_SENTENCE_EMBED_H

#include "bert_model.h"
#include "tokenizer.h"

typedef struct embed_options {
    int max_length; /* tokens per sentence, [CLS] and [SEP] included */
    int batch_size; /* sentences per batch, padded to its longest */
    /* 0, or the most positions (sentences x padded length) one forward
     * pass takes: a batch above it runs in passes of fewer sentences, each
     * padded to its own longest. On the CPU this keeps each intermediate
     * (the attention scores are heads x tokens x seq floats) small enough
     * to stay in cache and in the allocator's reuse lists; a GPU wants
     * whole batches. The embeddings do not depend on it. */
    int max_batch_tokens;
    /* called after each batch (may be NULL) */
    void (*progress)(void *ctx, int done, int total, int seq);
    void *progress_ctx;
} embed_options;

typedef struct embed_stats {
    double tokenize_s, model_s; /* wall time: tokenizing; batches to host floats */
    int batches;
    long long tokens, padded; /* real tokens; positions run (padding included) */
} embed_stats;

/* out[i * hidden + j]: the unit-length embedding of texts[i];
 * token_counts[i] (may be NULL): its ids, [CLS] and [SEP] included.
 * stats may be NULL. */
emily_status embed_texts(const bert_tokenizer *tok, const bert_model *m, int n, const char *const *texts,
                         const embed_options *opt, float *out, int *token_counts, embed_stats *stats);

/* The same from token ids: ids[i] holds counts[i] ids (at most
 * max_positions), in forward passes of batch_size sentences each padded
 * to its longest; *positions (may be NULL) grows by the positions run. */
emily_status embed_ids(const bert_model *m, int n, const int32_t *const *ids, const int *counts, int32_t pad_id,
                       int batch_size, float *out, long long *positions);

#endif
