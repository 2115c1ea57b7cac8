/* config.json of a BERT model: the sizes the forward pass needs, and a
 * refusal of the variants it does not implement. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include "bert_model.h"

static emily_status config_error(const char *path, const char *key, const char *what) {
    return emily_error(EMILY_ERR_ARGUMENT, "bert: %s: %s %s", path, key, what);
}

/* An integer in [1, limit]. */
static emily_status get_int(const json_t *root, const char *path, const char *key, int limit, int *out) {
    const json_t *v = json_object_get(root, key);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > limit)
        return config_error(path, key, "is missing or not a positive integer in range");
    *out = (int)json_integer_value(v);
    return EMILY_OK;
}

/* A string key that must be absent or equal to `want`. */
static emily_status check_string(const json_t *root, const char *path, const char *key, const char *want) {
    const char *v = json_string_value(json_object_get(root, key));
    if (v && strcmp(v, want) != 0) {
        char what[96];
        snprintf(what, sizeof what, "is \"%.40s\"; only \"%s\" is implemented", v, want);
        return config_error(path, key, what);
    }
    return EMILY_OK;
}

emily_status bert_config_load(const char *dir, bert_config *out) {
    memset(out, 0, sizeof *out);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/config.json", dir) >= (int)sizeof path)
        return emily_error(EMILY_ERR_ARGUMENT, "bert: model path too long");
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) return emily_error(EMILY_ERR_ARGUMENT, "bert: %s: %s (is this a model folder?)", path, err.text);
    emily_status s = EMILY_OK;
    if (!json_is_object(root)) s = config_error(path, "the file", "is not a JSON object");
    if (!s) s = check_string(root, path, "model_type", "bert");
    if (!s) s = check_string(root, path, "hidden_act", "gelu");
    if (!s) s = check_string(root, path, "position_embedding_type", "absolute");
    if (!s) s = get_int(root, path, "vocab_size", 1 << 24, &out->vocab_size);
    if (!s) s = get_int(root, path, "hidden_size", 1 << 16, &out->hidden);
    if (!s) s = get_int(root, path, "num_hidden_layers", 1024, &out->layers);
    if (!s) s = get_int(root, path, "num_attention_heads", 1 << 16, &out->heads);
    if (!s) s = get_int(root, path, "intermediate_size", 1 << 20, &out->intermediate);
    if (!s) s = get_int(root, path, "max_position_embeddings", 1 << 20, &out->max_positions);
    out->type_vocab = 2;
    if (!s && json_object_get(root, "type_vocab_size"))
        s = get_int(root, path, "type_vocab_size", 1 << 16, &out->type_vocab);
    const json_t *eps = json_object_get(root, "layer_norm_eps");
    out->layer_norm_eps = json_is_number(eps) ? json_number_value(eps) : 1e-12;
    if (!s && out->hidden % out->heads != 0)
        s = config_error(path, "hidden_size", "is not a multiple of num_attention_heads");
    if (!s && !(out->layer_norm_eps > 0)) s = config_error(path, "layer_norm_eps", "is not positive");
    json_decref(root);
    return s;
}
