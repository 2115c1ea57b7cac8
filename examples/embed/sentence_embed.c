#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sentence_embed.h"
#include "tensor_scope.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Mean over the tokens the mask keeps (its sum clamped to 1e-9, as
 * sentence-transformers' Pooling; mask NULL: every token), then
 * x / max(|x|, 1e-12) (as torch.nn.functional.normalize):
 * [batch, seq, hidden] -> [batch, hidden]. */
static emily_tensor *pool_normalize(ts_scope *s, const emily_tensor *hidden, const emily_tensor *mask) {
    const int64_t *hs = emily_tensor_shape(hidden);
    int64_t col[3] = {hs[0], hs[1], 1};
    emily_device d = emily_tensor_device(hidden);
    emily_tensor *summed, *count;
    if (mask) {
        emily_tensor *weighted = ts_binary(s, EMILY_MULTIPLY, hidden, ts_reshape(s, mask, 3, col));
        summed = ts_reduce(s, EMILY_REDUCE_SUM, weighted, 1, false);
        count = ts_binary(s, EMILY_MAX, ts_reduce(s, EMILY_REDUCE_SUM, mask, 1, true), ts_scalar(s, d, 1e-9));
    } else {
        summed = ts_reduce(s, EMILY_REDUCE_SUM, hidden, 1, false);
        count = ts_scalar(s, d, (double)hs[1]);
    }
    emily_tensor *mean = ts_binary(s, EMILY_DIVIDE, summed, count);
    emily_tensor *sq = ts_binary(s, EMILY_MULTIPLY, mean, mean);
    emily_tensor *norm = ts_unary(s, EMILY_SQRT, ts_reduce(s, EMILY_REDUCE_SUM, sq, 1, true));
    return ts_binary(s, EMILY_DIVIDE, mean, ts_binary(s, EMILY_MAX, norm, ts_scalar(s, d, 1e-12)));
}

/* One forward pass: ids padded to the longest, the mask (none when
 * nothing is padded), the encoder, pooling. */
static emily_status run_batch(const bert_model *m, int n, const int32_t *const *ids, const int *counts, int32_t pad_id,
                              float *out, long long *positions) {
    int seq = 1;
    for (int i = 0; i < n; i++) seq = counts[i] > seq ? counts[i] : seq;
    bool padded = false;
    for (int i = 0; i < n; i++) padded = padded || counts[i] < seq;
    size_t cells = (size_t)n * (size_t)seq;
    int32_t *ids_host = malloc(cells * sizeof *ids_host);
    float *mask_host = malloc(cells * sizeof *mask_host);
    if (!ids_host || !mask_host) {
        free(ids_host);
        free(mask_host);
        return emily_error(EMILY_ERR_MEMORY, "embed: out of memory for a batch of %d x %d", n, seq);
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < seq; j++) {
            bool real = j < counts[i];
            ids_host[(size_t)i * seq + j] = real ? ids[i][j] : pad_id;
            mask_host[(size_t)i * seq + j] = real ? 1.0f : 0.0f;
        }
    }
    *positions += (long long)cells;
    ts_scope s = TS_SCOPE;
    int64_t shape[2] = {n, seq};
    emily_tensor *ids_t = NULL, *mask_t = NULL, *hidden = NULL;
    emily_status st = emily_from_binary(m->device, EMILY_S32, 2, shape, ids_host, cells * sizeof *ids_host, &ids_t);
    ts_hold(&s, st, ids_t);
    if (!s.status && padded) {
        st = emily_from_binary(m->device, EMILY_F32, 2, shape, mask_host, cells * sizeof *mask_host, &mask_t);
        ts_hold(&s, st, mask_t);
    }
    if (!s.status) {
        st = bert_forward(m, ids_t, mask_t, &hidden);
        ts_hold(&s, st, hidden);
    }
    emily_tensor *emb = pool_normalize(&s, hidden, mask_t);
    size_t bytes = (size_t)n * (size_t)m->cfg.hidden * sizeof *out;
    if (!s.status) ts_record(&s, emily_to_binary(emb, out, bytes));
    free(ids_host);
    free(mask_host);
    return ts_close(&s, NULL, NULL);
}

emily_status embed_ids(const bert_model *m, int n, const int32_t *const *ids, const int *counts, int32_t pad_id,
                       int batch_size, float *out, long long *positions) {
    long long local = 0;
    if (!positions) positions = &local;
    if (!m || n < 0 || (n && (!ids || !counts || !out))) return emily_error(EMILY_ERR_ARGUMENT, "embed: bad arguments");
    if (batch_size < 1) return emily_error(EMILY_ERR_ARGUMENT, "embed: batch size %d", batch_size);
    for (int i = 0; i < n; i++) {
        if (counts[i] < 1 || counts[i] > m->cfg.max_positions)
            return emily_error(EMILY_ERR_ARGUMENT, "embed: sentence %d has %d ids (1 to %d allowed)", i, counts[i],
                               m->cfg.max_positions);
        for (int j = 0; j < counts[i]; j++)
            if (ids[i][j] < 0 || ids[i][j] >= m->cfg.vocab_size)
                return emily_error(EMILY_ERR_INDEX, "embed: id %d of sentence %d is outside the vocabulary (%d)",
                                   (int)ids[i][j], i, m->cfg.vocab_size);
    }
    for (int b = 0; b < n; b += batch_size) {
        int k = n - b < batch_size ? n - b : batch_size;
        emily_status s = run_batch(m, k, ids + b, counts + b, pad_id, out + (size_t)b * m->cfg.hidden, positions);
        if (s) return s;
    }
    return EMILY_OK;
}

emily_status embed_texts(const bert_tokenizer *tok, const bert_model *m, int n, const char *const *texts,
                         const embed_options *opt, float *out, int *token_counts, embed_stats *stats) {
    embed_stats local = {0};
    if (!tok || !m || n < 0 || (n && (!texts || !out)) || !opt)
        return emily_error(EMILY_ERR_ARGUMENT, "embed: bad arguments");
    if (opt->max_length < 2 || opt->max_length > m->cfg.max_positions)
        return emily_error(EMILY_ERR_ARGUMENT, "embed: max length %d outside [2, %d] (the model's positions)",
                           opt->max_length, m->cfg.max_positions);
    if (opt->batch_size < 1) return emily_error(EMILY_ERR_ARGUMENT, "embed: batch size %d", opt->batch_size);
    int32_t **ids = calloc((size_t)(n ? n : 1), sizeof *ids);
    int *counts = calloc((size_t)(n ? n : 1), sizeof *counts);
    emily_status s = ids && counts ? EMILY_OK : emily_error(EMILY_ERR_MEMORY, "embed: out of memory");
    double t0 = now_s();
    for (int i = 0; i < n && !s; i++) {
        if (!texts[i]) s = emily_error(EMILY_ERR_ARGUMENT, "embed: text %d is NULL", i);
        else s = tokenizer_encode(tok, texts[i], strlen(texts[i]), opt->max_length, &ids[i], &counts[i]);
        if (!s) local.tokens += counts[i];
    }
    double t1 = now_s();
    local.tokenize_s = t1 - t0;
    int32_t pad = tokenizer_pad_id(tok);
    for (int b = 0; b < n && !s; b += opt->batch_size) {
        int k = n - b < opt->batch_size ? n - b : opt->batch_size, seq = 0;
        for (int i = b; i < b + k; i++) seq = counts[i] > seq ? counts[i] : seq;
        /* passes of at most max_batch_tokens positions (at least one sentence) */
        int per_pass = k;
        if (opt->max_batch_tokens > 0 && (long long)k * seq > opt->max_batch_tokens)
            per_pass = opt->max_batch_tokens / seq > 1 ? opt->max_batch_tokens / seq : 1;
        s = embed_ids(m, k, (const int32_t *const *)ids + b, counts + b, pad, per_pass, out + (size_t)b * m->cfg.hidden,
                      &local.padded);
        local.batches++;
        if (!s && opt->progress) opt->progress(opt->progress_ctx, b + k, n, seq);
    }
    local.model_s = now_s() - t1;
    if (!s && token_counts) memcpy(token_counts, counts, (size_t)n * sizeof *counts);
    for (int i = 0; ids && i < n; i++) free(ids[i]);
    free(ids);
    free(counts);
    if (stats) *stats = local;
    return s;
}
