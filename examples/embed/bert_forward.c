/* BERT's forward pass with the engine's public API: embeddings, then per
 * layer self-attention and the feed-forward block, each followed by a
 * residual sum and layer norm (post-norm, as BertLayer). Every sub-block
 * runs in a scope of its own, so its intermediates are freed when it
 * returns and only the blocks' outputs live across the layer. */
#include <float.h>
#include <math.h>
#include "bert_model.h"
#include "tensor_scope.h"

/* Scalars the blocks use, made once per forward pass on the device. */
typedef struct consts {
    emily_tensor *rsqrt2;       /* GELU: 1 / sqrt 2 */
    emily_tensor *one, *lowest; /* the mask's bias for padding: the f32 lowest, like transformers */
} consts;

/* A block's scope hands its result to the caller's. */
static emily_tensor *finish(ts_scope *parent, ts_scope *s, emily_tensor *result) {
    emily_tensor *out = NULL;
    emily_status st = ts_close(s, result, &out);
    return ts_hold(parent, st, out);
}

/* torch.nn.LayerNorm over the last axis: (x - mean) / sqrt(var + eps) *
 * g + b with the biased variance, as one fused kernel (emily_layer_norm:
 * the statistics in f32 from double row sums, ops_fast.h). */
static emily_tensor *layer_norm(ts_scope *parent, const bert_model *m, const emily_tensor *x, const emily_tensor *g,
                                const emily_tensor *b) {
    return ts_layer_norm(parent, x, g, b, m->cfg.layer_norm_eps);
}

/* Multi-head self-attention with the mask's bias [batch, 1, 1, seq] (NULL
 * when nothing is padded), through the output projection: [batch, seq,
 * hidden] in and out. The scores, their softmax and the product with v
 * are one fused call (emily_sdpa, the bias as its additive mask). */
static emily_tensor *attention(ts_scope *parent, const bert_model *m, const bert_layer *y, const emily_tensor *x,
                               const emily_tensor *bias) {
    if (parent->status) return NULL;
    ts_scope s = TS_SCOPE;
    const int64_t *xs = emily_tensor_shape(x);
    int64_t batch = xs[0], seq = xs[1], heads = m->cfg.heads, d = m->cfg.hidden / heads;
    /* one product for query, key and value: [batch, seq, 3, heads, d] */
    int64_t split[5] = {batch, seq, 3, heads, d};
    emily_tensor *qkv = ts_reshape(&s, ts_linear(&s, x, y->qkv_w, y->qkv_b), 5, split);
    emily_tensor *part[3];
    int64_t len[5] = {batch, seq, 1, heads, d}, four[4] = {batch, seq, heads, d};
    int perm[4] = {0, 2, 1, 3}; /* [batch, seq, heads, d] <-> [batch, heads, seq, d] */
    for (int p = 0; p < 3; p++) {
        int64_t start[5] = {0, 0, p, 0, 0};
        part[p] = ts_transpose(&s, ts_reshape(&s, ts_slice(&s, qkv, start, len), 4, four), perm);
    }
    emily_sdpa_options o = {.scale = 1.0 / sqrt((double)d), .mask = bias};
    emily_tensor *ctx = ts_sdpa(&s, part[0], part[1], part[2], &o);
    int64_t merged[3] = {batch, seq, m->cfg.hidden};
    emily_tensor *joined = ts_reshape(&s, ts_transpose(&s, ctx, perm), 3, merged);
    return finish(parent, &s, ts_linear(&s, joined, y->attn_out_w, y->attn_out_b));
}

/* The feed-forward block: GELU (erf form) between two products. GELU(h)
 * = 0.5 h (1 + erf(h / sqrt 2)); the 0.5 is in the second product's
 * weights (bert_weights.c halves them, exactly), which saves a pass over
 * the wide intermediate. (erfc(-h / sqrt 2) would save another, but
 * SLEEF's erfc costs more than that pass.) */
static emily_tensor *feed_forward(ts_scope *parent, const bert_layer *y, const consts *k, const emily_tensor *x) {
    if (parent->status) return NULL;
    ts_scope s = TS_SCOPE;
    emily_tensor *h = ts_linear(&s, x, y->inter_w, y->inter_b);
    emily_tensor *e = ts_unary(&s, EMILY_ERF, ts_binary(&s, EMILY_MULTIPLY, h, k->rsqrt2));
    emily_tensor *cdf2 = ts_binary(&s, EMILY_ADD, e, k->one);
    ts_drop(&s, e);
    emily_tensor *g2 = ts_binary(&s, EMILY_MULTIPLY, h, cdf2);
    ts_drop(&s, h);
    ts_drop(&s, cdf2);
    return finish(parent, &s, ts_linear(&s, g2, y->out_w_half, y->out_b));
}

static emily_tensor *encoder_layer(ts_scope *parent, const bert_model *m, const bert_layer *y, const consts *k,
                                   const emily_tensor *x, const emily_tensor *bias) {
    if (parent->status) return NULL;
    ts_scope s = TS_SCOPE;
    emily_tensor *a = attention(&s, m, y, x, bias);
    emily_tensor *x1 = layer_norm(&s, m, ts_binary(&s, EMILY_ADD, a, x), y->attn_ln_g, y->attn_ln_b);
    emily_tensor *f = feed_forward(&s, y, k, x1);
    return finish(parent, &s, layer_norm(&s, m, ts_binary(&s, EMILY_ADD, f, x1), y->out_ln_g, y->out_ln_b));
}

/* Word + position + token type (0) embeddings, layer-normed. */
static emily_tensor *embeddings(ts_scope *parent, const bert_model *m, const emily_tensor *ids) {
    if (parent->status) return NULL;
    ts_scope s = TS_SCOPE;
    int64_t seq = emily_tensor_shape(ids)[1], zero[2] = {0, 0};
    int64_t pos_len[2] = {seq, m->cfg.hidden}, type_len[2] = {1, m->cfg.hidden};
    emily_tensor *words = ts_take(&s, m->word_emb, ids, 0);
    emily_tensor *pos = ts_slice(&s, m->pos_emb, zero, pos_len);
    emily_tensor *type = ts_slice(&s, m->type_emb, zero, type_len);
    emily_tensor *sum = ts_binary(&s, EMILY_ADD, ts_binary(&s, EMILY_ADD, words, type), pos);
    return finish(parent, &s, layer_norm(&s, m, sum, m->emb_ln_g, m->emb_ln_b));
}

static void make_consts(ts_scope *s, const bert_model *m, consts *k) {
    emily_device d = m->device;
    k->rsqrt2 = ts_scalar(s, d, M_SQRT1_2);
    k->one = ts_scalar(s, d, 1.0);
    k->lowest = ts_scalar(s, d, -FLT_MAX);
}

emily_status bert_forward(const bert_model *m, const emily_tensor *ids, const emily_tensor *mask,
                          emily_tensor **hidden) {
    *hidden = NULL;
    if (!m || !ids) return emily_error(EMILY_ERR_ARGUMENT, "bert_forward: NULL argument");
    const int64_t *is = emily_tensor_shape(ids), *ms = mask ? emily_tensor_shape(mask) : is;
    if (emily_tensor_rank(ids) != 2 || (mask && emily_tensor_rank(mask) != 2) || is[0] != ms[0] || is[1] != ms[1] ||
        is[0] < 1 || is[1] < 1)
        return emily_error(EMILY_ERR_SHAPE, "bert_forward: ids and mask must both be [batch, seq], not empty");
    if (is[1] > m->cfg.max_positions)
        return emily_error(EMILY_ERR_SHAPE, "bert_forward: %lld tokens, the model has %d positions", (long long)is[1],
                           m->cfg.max_positions);
    if (mask && emily_tensor_dtype(mask) != EMILY_F32)
        return emily_error(EMILY_ERR_TYPE, "bert_forward: the mask must be f32");
    ts_scope s = TS_SCOPE;
    consts k;
    make_consts(&s, m, &k);
    /* bias[b, 0, 0, j] = 0 for a token, the lowest f32 for padding: (1 - mask) * lowest */
    emily_tensor *bias = NULL;
    if (mask) {
        int64_t bias_shape[4] = {is[0], 1, 1, is[1]};
        emily_tensor *pad = ts_binary(&s, EMILY_SUBTRACT, k.one, mask);
        bias = ts_reshape(&s, ts_binary(&s, EMILY_MULTIPLY, pad, k.lowest), 4, bias_shape);
    }
    emily_tensor *x = embeddings(&s, m, ids);
    for (int i = 0; i < m->cfg.layers && !s.status; i++) {
        emily_tensor *next = encoder_layer(&s, m, &m->layer[i], &k, x, bias);
        ts_drop(&s, x);
        x = next;
    }
    return ts_close(&s, x, hidden);
}
