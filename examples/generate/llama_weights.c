/* The weights from the GGUF file onto the device, each checked against
 * the config. Matrices in a block format (Q8_0, Q4_0, Q4_1, Q4_K) come
 * as Emily's quantized triple with f32 scales (exact for every format the
 * reader knows: emily/gguf.h), and stay quantized, or are dequantized on
 * the device to the mode's dense type (llama_weights); dense matrices
 * are made that type too (f32 unless BF16), the norms' gains f32, the
 * type the forward pass computes in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "llama_model.h"

static emily_status tensor_shape(const emily_gguf *g, const char *name, int *rank, int64_t *shape) {
    size_t i;
    emily_gguf_tensor_info info;
    emily_status s = emily_gguf_find_tensor(g, name, &i);
    if (!s) s = emily_gguf_tensor_info_at(g, i, &info);
    if (s) return s;
    *rank = info.rank;
    memcpy(shape, info.shape, sizeof info.shape);
    return EMILY_OK;
}

static const char *const mode_names[] = {"quantized", "f32", "bf16"};

emily_status llama_weights_parse(const char *name, llama_weights *out) {
    for (int i = 0; name && i < (int)(sizeof mode_names / sizeof *mode_names); i++)
        if (!strcmp(name, mode_names[i])) {
            *out = (llama_weights)i;
            return EMILY_OK;
        }
    return emily_error(EMILY_ERR_ARGUMENT, "llama: unknown weights mode \"%s\" (quantized, f32 or bf16)",
                       name ? name : "(NULL)");
}

const char *llama_weights_name(llama_weights w) {
    return w >= LLAMA_WEIGHTS_QUANTIZED && w <= LLAMA_WEIGHTS_BF16 ? mode_names[w] : NULL;
}

/* t made `type` (released and replaced) when it is another float type. */
static emily_status to_type(emily_tensor **t, emily_dtype type) {
    if (emily_tensor_dtype(*t) == type) return EMILY_OK;
    emily_tensor *c = NULL;
    emily_status s = emily_as_type(*t, type, &c);
    if (s) return s;
    emily_tensor_release(*t);
    *t = c;
    return EMILY_OK;
}

/* A quantized matrix made dense: dequantized (f32, as its scales; ggml's
 * values exactly), the codes released. */
static emily_status dequantize(emily_gguf_tensor *t) {
    emily_tensor *w = NULL;
    emily_status s = emily_dequantize(t->q, t->scales, t->biases, t->bits, t->group_size, &w);
    if (s) return s;
    emily_gguf_tensor_release(t);
    t->dense = w;
    return EMILY_OK;
}

static emily_status load_matrix(const emily_gguf *g, emily_device d, llama_weights mode, const char *name, int64_t rows,
                                int64_t cols, llama_matrix *m) {
    int rank;
    int64_t shape[4];
    emily_status s = tensor_shape(g, name, &rank, shape);
    if (s) return s;
    if (rank != 2 || shape[0] != rows || shape[1] != cols)
        return emily_error(EMILY_ERR_SHAPE, "llama: %s is not {%lld, %lld} (the config's sizes)", name, (long long)rows,
                           (long long)cols);
    s = emily_gguf_load(g, name, d, EMILY_F32, &m->t);
    if (!s && m->t.q && mode != LLAMA_WEIGHTS_QUANTIZED) s = dequantize(&m->t);
    if (!s && m->t.dense) s = to_type(&m->t.dense, mode == LLAMA_WEIGHTS_BF16 ? EMILY_BF16 : EMILY_F32);
    m->rows = rows;
    m->cols = cols;
    return s;
}

static emily_status load_vector(const emily_gguf *g, emily_device d, const char *name, int64_t n, emily_tensor **out) {
    int rank;
    int64_t shape[4];
    emily_status s = tensor_shape(g, name, &rank, shape);
    if (s) return s;
    if (rank != 1 || shape[0] != n) return emily_error(EMILY_ERR_SHAPE, "llama: %s is not {%lld}", name, (long long)n);
    emily_gguf_tensor t;
    s = emily_gguf_load(g, name, d, EMILY_F32, &t);
    if (s) return s;
    if (!t.dense) {
        emily_gguf_tensor_release(&t);
        return emily_error(EMILY_ERR_UNSUPPORTED, "llama: %s is quantized; a norm's gain must be dense", name);
    }
    *out = t.dense;
    return to_type(out, EMILY_F32);
}

emily_status llama_model_load(const emily_gguf *g, emily_device device, llama_weights weights, llama_model *m) {
    memset(m, 0, sizeof *m);
    if (!llama_weights_name(weights))
        return emily_error(EMILY_ERR_ARGUMENT, "llama: %d is not a weights mode (llama_weights)", (int)weights);
    m->device = device;
    m->weights = weights;
    emily_status s = llama_config_read(g, &m->cfg);
    if (s) return s;
    const llama_config *c = &m->cfg;
    m->layer = calloc((size_t)c->layers, sizeof *m->layer);
    if (!m->layer) return emily_error(EMILY_ERR_MEMORY, "llama: out of host memory");
    int64_t kv = (int64_t)c->kv_heads * c->head_dim;
    s = load_matrix(g, device, weights, "token_embd.weight", c->vocab, c->hidden, &m->embed);
    if (!s) s = load_vector(g, device, "output_norm.weight", c->hidden, &m->out_norm);
    if (!s && !c->tied_output) s = load_matrix(g, device, weights, "output.weight", c->vocab, c->hidden, &m->output);
    for (int i = 0; i < c->layers && !s; i++) {
        llama_layer *y = &m->layer[i];
        char name[64];
#define NAME(part) (snprintf(name, sizeof name, "blk.%d." part ".weight", i), name)
        s = load_vector(g, device, NAME("attn_norm"), c->hidden, &y->attn_norm);
        if (!s) s = load_vector(g, device, NAME("ffn_norm"), c->hidden, &y->ffn_norm);
        if (!s) s = load_matrix(g, device, weights, NAME("attn_q"), c->hidden, c->hidden, &y->q);
        if (!s) s = load_matrix(g, device, weights, NAME("attn_k"), kv, c->hidden, &y->k);
        if (!s) s = load_matrix(g, device, weights, NAME("attn_v"), kv, c->hidden, &y->v);
        if (!s) s = load_matrix(g, device, weights, NAME("attn_output"), c->hidden, c->hidden, &y->o);
        if (!s) s = load_matrix(g, device, weights, NAME("ffn_gate"), c->ffn, c->hidden, &y->gate);
        if (!s) s = load_matrix(g, device, weights, NAME("ffn_up"), c->ffn, c->hidden, &y->up);
        if (!s) s = load_matrix(g, device, weights, NAME("ffn_down"), c->hidden, c->ffn, &y->down);
#undef NAME
    }
    if (s) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", emily_last_error());
        llama_model_free(m);
        return emily_error(s, "%s", msg);
    }
    return EMILY_OK;
}

void llama_model_free(llama_model *m) {
    if (!m) return;
    emily_gguf_tensor_release(&m->embed.t);
    emily_gguf_tensor_release(&m->output.t);
    emily_tensor_release(m->out_norm);
    for (int i = 0; m->layer && i < m->cfg.layers; i++) {
        llama_layer *y = &m->layer[i];
        emily_tensor_release(y->attn_norm);
        emily_tensor_release(y->ffn_norm);
        llama_matrix *ms[7] = {&y->q, &y->k, &y->v, &y->o, &y->gate, &y->up, &y->down};
        for (int j = 0; j < 7; j++) emily_gguf_tensor_release(&ms[j]->t);
    }
    free(m->layer);
    memset(m, 0, sizeof *m);
}
