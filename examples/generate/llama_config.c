/* The model's sizes and settings from the GGUF metadata (the `llama.*`
 * keys llama.cpp's converter writes), with the defaults it assumes when a
 * key is absent, and a clear refusal of what llama_forward does not
 * compute. */
#include <string.h>
#include "llama_model.h"

static emily_status need_int(const emily_gguf *g, const char *key, int lo, int hi, int *out) {
    int64_t v;
    emily_status s = emily_gguf_get_int(g, key, &v);
    if (s) return s;
    if (v < lo || v > hi)
        return emily_error(EMILY_ERR_ARGUMENT, "llama: %s is %lld, expected %d..%d", key, (long long)v, lo, hi);
    *out = (int)v;
    return EMILY_OK;
}

static emily_status opt_int(const emily_gguf *g, const char *key, int lo, int hi, int *out) {
    return emily_gguf_has_key(g, key) ? need_int(g, key, lo, hi, out) : EMILY_OK;
}

static emily_status opt_float(const emily_gguf *g, const char *key, double *out) {
    return emily_gguf_has_key(g, key) ? emily_gguf_get_float(g, key, out) : EMILY_OK;
}

emily_status llama_config_read(const emily_gguf *g, llama_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    const char *arch;
    size_t arch_len;
    emily_status s = emily_gguf_get_string(g, "general.architecture", &arch, &arch_len);
    if (s) return s;
    if (arch_len != 5 || memcmp(arch, "llama", 5) != 0)
        return emily_error(EMILY_ERR_UNSUPPORTED,
                           "llama: the file's architecture is \"%.*s\"; this program runs \"llama\"",
                           (int)(arch_len > 64 ? 64 : arch_len), arch);
    const int big = 1 << 20;
    if ((s = need_int(g, "llama.block_count", 1, 4096, &cfg->layers)) ||
        (s = need_int(g, "llama.embedding_length", 1, big, &cfg->hidden)) ||
        (s = need_int(g, "llama.attention.head_count", 1, 4096, &cfg->heads)) ||
        (s = need_int(g, "llama.feed_forward_length", 1, big, &cfg->ffn)) ||
        (s = need_int(g, "llama.context_length", 1, big, &cfg->context)))
        return s;
    cfg->kv_heads = cfg->heads;
    if ((s = opt_int(g, "llama.attention.head_count_kv", 1, 4096, &cfg->kv_heads))) return s;
    if (cfg->hidden % cfg->heads || cfg->heads % cfg->kv_heads)
        return emily_error(EMILY_ERR_ARGUMENT,
                           "llama: %d heads do not divide the width %d, or %d key/value heads "
                           "do not divide them",
                           cfg->heads, cfg->hidden, cfg->kv_heads);
    cfg->head_dim = cfg->hidden / cfg->heads;
    cfg->rope_dims = cfg->head_dim;
    if ((s = opt_int(g, "llama.rope.dimension_count", 2, cfg->head_dim, &cfg->rope_dims))) return s;
    if (cfg->rope_dims % 2)
        return emily_error(EMILY_ERR_ARGUMENT, "llama: rope rotates %d features, an odd number", cfg->rope_dims);
    cfg->rope_base = 10000.0;
    cfg->norm_eps = 1e-5;
    if ((s = opt_float(g, "llama.rope.freq_base", &cfg->rope_base)) ||
        (s = opt_float(g, "llama.attention.layer_norm_rms_epsilon", &cfg->norm_eps)))
        return s;
    if (!(cfg->rope_base > 1.0) || !(cfg->norm_eps >= 0.0))
        return emily_error(EMILY_ERR_ARGUMENT, "llama: rope base %g or norm epsilon %g out of range", cfg->rope_base,
                           cfg->norm_eps);
    if (emily_gguf_has_key(g, "llama.rope.scaling.type")) {
        const char *t;
        size_t n;
        if ((s = emily_gguf_get_string(g, "llama.rope.scaling.type", &t, &n))) return s;
        if (!(n == 4 && memcmp(t, "none", 4) == 0))
            return emily_error(EMILY_ERR_UNSUPPORTED, "llama: rope scaling \"%.*s\" is not implemented here",
                               (int)(n > 64 ? 64 : n), t);
    }
    if (emily_gguf_has_key(g, "llama.vocab_size")) {
        if ((s = need_int(g, "llama.vocab_size", 1, 1 << 24, &cfg->vocab))) return s;
    } else {
        emily_gguf_value_type elem;
        size_t count;
        if ((s = emily_gguf_get_array(g, "tokenizer.ggml.tokens", &elem, &count))) return s;
        if (count < 1 || count > (1 << 24))
            return emily_error(EMILY_ERR_ARGUMENT, "llama: %zu tokens in the vocabulary", count);
        cfg->vocab = (int)count;
    }
    size_t index;
    cfg->tied_output = emily_gguf_find_tensor(g, "output.weight", &index) != EMILY_OK;
    return EMILY_OK;
}
