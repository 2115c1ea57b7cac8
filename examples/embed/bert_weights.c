/* model.safetensors onto a device: each tensor checked against the
 * config's sizes, converted to f32, query/key/value joined. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bert_model.h"
#include "hand_out.h"
#include "safetensors.h"

typedef struct loader {
    const st_file *file;
    const char *prefix; /* "" or "bert." */
    emily_device device;
} loader;

static void format_shape(int rank, const int64_t *shape, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "{");
    for (int i = 0; i < rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (n < size) snprintf(buf + n, size - n, "}");
}

/* prefix + name, of shape {d0} (d1 < 0) or {d0, d1}. */
static emily_status load(const loader *l, const char *name, int64_t d0, int64_t d1, emily_tensor **out) {
    char full[256];
    snprintf(full, sizeof full, "%s%s", l->prefix, name);
    st_tensor info;
    emily_status s = st_get(l->file, full, &info);
    if (s) return s;
    int rank = d1 < 0 ? 1 : 2;
    int64_t want[2] = {d0, d1};
    if (info.rank != rank || info.shape[0] != d0 || (rank == 2 && info.shape[1] != d1)) {
        char have_s[128], want_s[64];
        format_shape(info.rank, info.shape, have_s, sizeof have_s);
        format_shape(rank, want, want_s, sizeof want_s);
        return emily_error(EMILY_ERR_SHAPE, "bert: tensor %s has shape %s; config.json asks for %s", full, have_s,
                           want_s);
    }
    return st_load_f32(l->file, full, l->device, out);
}

/* encoder.layer.<i>.<name> */
static emily_status load_layer(const loader *l, int i, const char *name, int64_t d0, int64_t d1, emily_tensor **out) {
    char full[160];
    snprintf(full, sizeof full, "encoder.layer.%d.%s", i, name);
    return load(l, full, d0, d1, out);
}

/* A weight times 0.5 (exact: a power of two; the weights are far from
 * f32's subnormals). */
static emily_status load_halved(const loader *l, int i, const char *name, int64_t d0, int64_t d1, emily_tensor **out) {
    emily_tensor *w = NULL, *half = NULL;
    emily_status s = load_layer(l, i, name, d0, d1, &w);
    if (!s) s = emily_constant(l->device, EMILY_F32, 0, NULL, emily_scalar_float(0.5), &half);
    if (!s) s = emily_binary(EMILY_MULTIPLY, w, half, EMILY_DTYPE_AUTO, out);
    emily_tensor_release(w);
    emily_tensor_release(half);
    return s;
}

/* query, key and value weights (or biases) joined along axis 0. */
static emily_status load_qkv(const loader *l, int i, const char *what, int64_t h, int64_t d1, emily_tensor **out) {
    static const char *const parts[3] = {"query", "key", "value"};
    emily_tensor *t[3] = {NULL, NULL, NULL};
    emily_status s = EMILY_OK;
    for (int k = 0; k < 3 && !s; k++) {
        char name[96];
        snprintf(name, sizeof name, "attention.self.%s.%s", parts[k], what);
        s = load_layer(l, i, name, h, d1, &t[k]);
    }
    if (!s) s = emily_concatenate(3, (const emily_tensor *const *)t, 0, EMILY_DTYPE_AUTO, out);
    for (int k = 0; k < 3; k++) emily_tensor_release(t[k]);
    return s;
}

static emily_status load_layers(const loader *l, const bert_config *c, bert_layer *layers) {
    int64_t h = c->hidden, f = c->intermediate;
    emily_status s = EMILY_OK;
    for (int i = 0; i < c->layers && !s; i++) {
        bert_layer *y = &layers[i];
        s = load_qkv(l, i, "weight", h, h, &y->qkv_w);
        if (!s) s = load_qkv(l, i, "bias", h, -1, &y->qkv_b);
        if (!s) s = load_layer(l, i, "attention.output.dense.weight", h, h, &y->attn_out_w);
        if (!s) s = load_layer(l, i, "attention.output.dense.bias", h, -1, &y->attn_out_b);
        if (!s) s = load_layer(l, i, "attention.output.LayerNorm.weight", h, -1, &y->attn_ln_g);
        if (!s) s = load_layer(l, i, "attention.output.LayerNorm.bias", h, -1, &y->attn_ln_b);
        if (!s) s = load_layer(l, i, "intermediate.dense.weight", f, h, &y->inter_w);
        if (!s) s = load_layer(l, i, "intermediate.dense.bias", f, -1, &y->inter_b);
        if (!s) s = load_halved(l, i, "output.dense.weight", h, f, &y->out_w_half);
        if (!s) s = load_layer(l, i, "output.dense.bias", h, -1, &y->out_b);
        if (!s) s = load_layer(l, i, "output.LayerNorm.weight", h, -1, &y->out_ln_g);
        if (!s) s = load_layer(l, i, "output.LayerNorm.bias", h, -1, &y->out_ln_b);
    }
    return s;
}

emily_status bert_load(const char *dir, emily_device device, bert_model **out) {
    *out = NULL;
    bert_model *m = calloc(1, sizeof *m);
    if (!m) return emily_error(EMILY_ERR_MEMORY, "bert: out of memory");
    m->device = device;
    emily_status s = bert_config_load(dir, &m->cfg);
    if (!s) s = emily_device_check(device);
    if (!s && !(m->layer = calloc((size_t)m->cfg.layers, sizeof *m->layer)))
        s = emily_error(EMILY_ERR_MEMORY, "bert: out of memory");
    char path[4096];
    st_file *file = NULL;
    if (!s && snprintf(path, sizeof path, "%s/model.safetensors", dir) >= (int)sizeof path)
        s = emily_error(EMILY_ERR_ARGUMENT, "bert: model path too long");
    if (!s) s = st_open(path, &file);
    if (!s) {
        const bert_config *c = &m->cfg;
        loader l = {file, st_has(file, "bert.embeddings.word_embeddings.weight") ? "bert." : "", device};
        s = load(&l, "embeddings.word_embeddings.weight", c->vocab_size, c->hidden, &m->word_emb);
        if (!s) s = load(&l, "embeddings.position_embeddings.weight", c->max_positions, c->hidden, &m->pos_emb);
        if (!s) s = load(&l, "embeddings.token_type_embeddings.weight", c->type_vocab, c->hidden, &m->type_emb);
        if (!s) s = load(&l, "embeddings.LayerNorm.weight", c->hidden, -1, &m->emb_ln_g);
        if (!s) s = load(&l, "embeddings.LayerNorm.bias", c->hidden, -1, &m->emb_ln_b);
        if (!s) s = load_layers(&l, c, m->layer);
    }
    st_close(file);
    return EMBED_HAND_OUT(s, m, bert_free, out);
}

void bert_free(bert_model *m) {
    if (!m) return;
    emily_tensor *top[] = {m->word_emb, m->pos_emb, m->type_emb, m->emb_ln_g, m->emb_ln_b};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++) emily_tensor_release(top[i]);
    for (int i = 0; m->layer && i < m->cfg.layers; i++) {
        bert_layer *y = &m->layer[i];
        emily_tensor *all[] = {y->qkv_w,   y->qkv_b,   y->attn_out_w, y->attn_out_b, y->attn_ln_g, y->attn_ln_b,
                               y->inter_w, y->inter_b, y->out_w_half, y->out_b,      y->out_ln_g,  y->out_ln_b};
        for (size_t k = 0; k < sizeof all / sizeof *all; k++) emily_tensor_release(all[k]);
    }
    free(m->layer);
    free(m);
}
