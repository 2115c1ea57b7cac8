/* The key/value cache: one {1, kv_heads, capacity, head_dim} f32 tensor
 * per layer for keys and one for values, allocated once and written in
 * place (emily_write_slice) as positions are added, so a decoding step
 * costs its own rows, not a copy of everything cached. */
#include <stdlib.h>
#include <string.h>
#include "llama_model.h"

emily_status llama_cache_new(const llama_model *m, int64_t capacity, llama_cache *c) {
    memset(c, 0, sizeof *c);
    if (!m) return emily_error(EMILY_ERR_ARGUMENT, "llama_cache_new: NULL model");
    if (capacity < 1 || capacity > m->cfg.context)
        return emily_error(EMILY_ERR_ARGUMENT, "llama_cache_new: %lld positions; the model takes 1..%d",
                           (long long)capacity, m->cfg.context);
    int layers = m->cfg.layers;
    c->k = calloc((size_t)layers, sizeof *c->k);
    c->v = calloc((size_t)layers, sizeof *c->v);
    c->layers = layers;
    c->capacity = capacity;
    if (!c->k || !c->v) {
        llama_cache_free(c);
        return emily_error(EMILY_ERR_MEMORY, "llama_cache_new: out of host memory");
    }
    int64_t shape[4] = {1, m->cfg.kv_heads, capacity, m->cfg.head_dim};
    emily_status s = EMILY_OK;
    for (int i = 0; i < layers && !s; i++) {
        s = emily_constant(m->device, EMILY_F32, 4, shape, emily_scalar_float(0), &c->k[i]);
        if (!s) s = emily_constant(m->device, EMILY_F32, 4, shape, emily_scalar_float(0), &c->v[i]);
    }
    if (s) llama_cache_free(c);
    return s;
}

void llama_cache_free(llama_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->layers; i++) {
        if (c->k) emily_tensor_release(c->k[i]);
        if (c->v) emily_tensor_release(c->v[i]);
    }
    free(c->k);
    free(c->v);
    memset(c, 0, sizeof *c);
}
