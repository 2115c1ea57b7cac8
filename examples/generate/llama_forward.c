/* The decoder's forward pass on the engine's public API, Hugging Face's
 * LlamaForCausalLM step by step: token embeddings; per layer, rms norm,
 * attention with rotary positions over the cached keys and values, a
 * residual sum, rms norm, the SiLU-gated feed-forward block, a residual
 * sum; the final rms norm and the output matrix, for the last position
 * only (the one whose logits pick the next token). Each sub-block runs in
 * a scope of its own, so its intermediates are freed when it returns. */
#include <math.h>
#include <stdlib.h>
#include "llama_model.h"
#include "llama_rope.h"
#include "tensor_scope.h"

/* A block's scope hands its result to the caller's. */
static emily_tensor *finish(ts_scope *parent, ts_scope *s, emily_tensor *result) {
    emily_tensor *out = NULL;
    emily_status st = ts_close(s, result, &out);
    return ts_hold(parent, st, out);
}

/* x . W^T for x {..., cols} (f32), f32 out: the one place that picks the
 * product for the model's weights mode (llama_weights). Quantized: the
 * fused quantized product; f32: a dot; bf16: x rounded to bf16 (as the
 * weights were), the bf16 products summed in f32 and returned in f32
 * (no rounding of the result to bf16: the forward stays f32). */
static emily_tensor *apply(ts_scope *s, const emily_tensor *x, const llama_matrix *w) {
    const emily_gguf_tensor *t = &w->t;
    int last = emily_tensor_rank(x) - 1;
    if (t->q) return ts_quantized_linear(s, x, t->q, t->scales, t->biases, t->bits, t->group_size);
    emily_dtype wt = emily_tensor_dtype(t->dense);
    if (wt == EMILY_F32) return ts_dot(s, x, last, 0, NULL, t->dense, 1, NULL);
    emily_tensor *xw = ts_as_type(s, x, wt);
    emily_tensor *y = ts_dot_as(s, xw, last, 0, NULL, t->dense, 1, NULL, EMILY_F32);
    ts_drop(s, xw);
    return y;
}

/* Rows `ids` {n} of the embedding matrix, {n, hidden} f32: a quantized
 * matrix gives the rows' codes, scales and biases, dequantized (n rows,
 * not the whole vocabulary); a bf16 one its rows widened (exactly). */
static emily_tensor *embed_rows(ts_scope *parent, const llama_matrix *e, const emily_tensor *ids) {
    if (parent->status) return NULL;
    ts_scope s = TS_SCOPE;
    const emily_gguf_tensor *t = &e->t;
    emily_tensor *rows;
    if (t->q)
        rows = ts_dequantize(&s, ts_take(&s, t->q, ids, 0), ts_take(&s, t->scales, ids, 0),
                             ts_take(&s, t->biases, ids, 0), t->bits, t->group_size);
    else rows = ts_as_type(&s, ts_take(&s, t->dense, ids, 0), EMILY_F32);
    return finish(parent, &s, rows);
}

/* Self-attention of x {1, n, hidden} at positions pos ... pos + n - 1,
 * through the output matrix; appends the n keys and values to the
 * layer's cache first, then attends over everything cached. */
static emily_tensor *attention(ts_scope *parent, const llama_model *m, const llama_layer *y, emily_tensor *k_cache,
                               emily_tensor *v_cache, const llama_rope *rope, const emily_tensor *x, int64_t pos) {
    if (parent->status) return NULL;
    ts_scope s = TS_SCOPE;
    const llama_config *c = &m->cfg;
    int64_t n = emily_tensor_shape(x)[1], d = c->head_dim;
    int64_t qs[4] = {1, n, c->heads, d}, ks[4] = {1, n, c->kv_heads, d};
    int perm[4] = {0, 2, 1, 3}; /* {1, n, heads, d} <-> {1, heads, n, d} */
    emily_tensor *q = llama_rope_apply(&s, rope, ts_reshape(&s, apply(&s, x, &y->q), 4, qs));
    emily_tensor *k = llama_rope_apply(&s, rope, ts_reshape(&s, apply(&s, x, &y->k), 4, ks));
    emily_tensor *v = ts_reshape(&s, apply(&s, x, &y->v), 4, ks);
    int64_t at[4] = {0, 0, pos, 0};
    if (!s.status) ts_record(&s, emily_write_slice(k_cache, at, ts_transpose(&s, k, perm)));
    if (!s.status) ts_record(&s, emily_write_slice(v_cache, at, ts_transpose(&s, v, perm)));
    int64_t zero[4] = {0, 0, 0, 0}, len[4] = {1, c->kv_heads, pos + n, d};
    emily_tensor *kk = ts_slice(&s, k_cache, zero, len), *vv = ts_slice(&s, v_cache, zero, len);
    /* causal, aligned bottom-right: query i (position pos + i) sees keys
     * 0 ... pos + i; query heads share key heads in groups (emily_sdpa) */
    emily_sdpa_options o = {.scale = 1.0 / sqrt((double)d), .causal = true};
    emily_tensor *ctx = ts_sdpa(&s, ts_transpose(&s, q, perm), kk, vv, &o);
    int64_t merged[3] = {1, n, c->hidden};
    emily_tensor *joined = ts_reshape(&s, ts_transpose(&s, ctx, perm), 3, merged);
    return finish(parent, &s, apply(&s, joined, &y->o));
}

/* down(silu(gate(x)) * up(x)), silu(g) = g * sigmoid(g). */
static emily_tensor *feed_forward(ts_scope *parent, const llama_layer *y, const emily_tensor *x) {
    if (parent->status) return NULL;
    ts_scope s = TS_SCOPE;
    emily_tensor *g = apply(&s, x, &y->gate);
    emily_tensor *act = ts_binary(&s, EMILY_MULTIPLY, g, ts_unary(&s, EMILY_SIGMOID, g));
    ts_drop(&s, g);
    emily_tensor *u = apply(&s, x, &y->up);
    emily_tensor *h = ts_binary(&s, EMILY_MULTIPLY, act, u);
    ts_drop(&s, act);
    ts_drop(&s, u);
    return finish(parent, &s, apply(&s, h, &y->down));
}

static emily_tensor *decoder_layer(ts_scope *parent, const llama_model *m, int i, llama_cache *cache,
                                   const llama_rope *rope, const emily_tensor *x) {
    if (parent->status) return NULL;
    ts_scope s = TS_SCOPE;
    const llama_layer *y = &m->layer[i];
    double eps = m->cfg.norm_eps;
    emily_tensor *a = attention(&s, m, y, cache->k[i], cache->v[i], rope, ts_rms_norm(&s, x, y->attn_norm, eps),
                                cache->length);
    emily_tensor *h = ts_binary(&s, EMILY_ADD, x, a);
    ts_drop(&s, a);
    emily_tensor *f = feed_forward(&s, y, ts_rms_norm(&s, h, y->ffn_norm, eps));
    return finish(parent, &s, ts_binary(&s, EMILY_ADD, h, f));
}

emily_status llama_forward(const llama_model *m, llama_cache *cache, const int32_t *tokens, int n,
                           emily_tensor **logits) {
    if (logits) *logits = NULL;
    if (!m || !cache || !tokens || !logits) return emily_error(EMILY_ERR_ARGUMENT, "llama_forward: NULL argument");
    const llama_config *c = &m->cfg;
    if (n < 1 || cache->length + n > cache->capacity)
        return emily_error(EMILY_ERR_SHAPE,
                           "llama_forward: %d tokens after %lld cached do not fit the cache's %lld "
                           "positions",
                           n, (long long)cache->length, (long long)cache->capacity);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab)
            return emily_error(EMILY_ERR_ARGUMENT, "llama_forward: token %d is not in 0..%d", tokens[i], c->vocab - 1);
    ts_scope s = TS_SCOPE;
    int64_t shape1[1] = {n};
    emily_tensor *ids = NULL;
    emily_status made = emily_from_binary(m->device, EMILY_S32, 1, shape1, tokens, sizeof *tokens * (size_t)n, &ids);
    ts_hold(&s, made, ids);
    llama_rope rope;
    ts_record(&s, llama_rope_make(&rope, c, m->device, cache->length, n));
    int64_t xs[3] = {1, n, c->hidden};
    emily_tensor *x = ts_reshape(&s, embed_rows(&s, &m->embed, ids), 3, xs);
    for (int i = 0; i < c->layers && !s.status; i++) {
        emily_tensor *next = decoder_layer(&s, m, i, cache, &rope, x);
        ts_drop(&s, x);
        x = next;
    }
    llama_rope_free(&rope);
    int64_t last[3] = {0, n - 1, 0}, one[3] = {1, 1, c->hidden}, flat[1] = {c->vocab};
    emily_tensor *h = ts_rms_norm(&s, ts_slice(&s, x, last, one), m->out_norm, c->norm_eps);
    const llama_matrix *out = c->tied_output ? &m->embed : &m->output;
    emily_tensor *result = ts_reshape(&s, apply(&s, h, out), 1, flat);
    emily_status st = ts_close(&s, result, logits);
    if (!st) cache->length += n;
    return st;
}
