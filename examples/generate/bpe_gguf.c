/* The tokenizer from a GGUF file's metadata (llama.cpp's keys):
 * tokenizer.ggml.model "gpt2", tokenizer.ggml.pre ("smollm", "gpt2"),
 * tokens, token_type, merges, bos/eos ids and add_bos_token. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bpe_gguf.h"

static bool is(const char *s, size_t len, const char *want) { return len == strlen(want) && memcmp(s, want, len) == 0; }

/* The strings of array `key` (pointers into the mapping). */
static emily_status string_array(const emily_gguf *g, const char *key, const char ***strs, size_t **lens,
                                 size_t *count) {
    emily_gguf_value_type elem;
    emily_status s = emily_gguf_get_array(g, key, &elem, count);
    if (s) return s;
    if (elem != EMILY_GGUF_STRING)
        return emily_error(EMILY_ERR_TYPE, "bpe_from_gguf: %s is not an array of strings", key);
    *strs = malloc((*count ? *count : 1) * sizeof **strs);
    *lens = malloc((*count ? *count : 1) * sizeof **lens);
    if (!*strs || !*lens) return emily_error(EMILY_ERR_MEMORY, "bpe_from_gguf: out of memory");
    for (size_t i = 0; i < *count && !s; i++) s = emily_gguf_get_array_string(g, key, i, &(*strs)[i], &(*lens)[i]);
    return s;
}

/* An optional id: -1 when the key is absent. */
static emily_status optional_id(const emily_gguf *g, const char *key, int32_t *id) {
    *id = -1;
    if (!emily_gguf_has_key(g, key)) return EMILY_OK;
    int64_t v = 0;
    emily_status s = emily_gguf_get_int(g, key, &v);
    if (s) return s;
    if (v < 0 || v > INT32_MAX) return emily_error(EMILY_ERR_ARGUMENT, "bpe_from_gguf: %s is %lld", key, (long long)v);
    *id = (int32_t)v;
    return EMILY_OK;
}

static emily_status read_options(const emily_gguf *g, bpe_options *o) {
    const char *s = NULL;
    size_t len = 0;
    emily_status st = emily_gguf_get_string(g, "tokenizer.ggml.model", &s, &len);
    if (st) return st;
    if (!is(s, len, "gpt2"))
        return emily_error(EMILY_ERR_UNSUPPORTED,
                           "bpe_from_gguf: tokenizer.ggml.model is \"%.*s\", not byte-level BPE (\"gpt2\")",
                           (int)(len < 64 ? len : 64), s);
    *o = bpe_default_options();
    if (emily_gguf_has_key(g, "tokenizer.ggml.pre")) {
        st = emily_gguf_get_string(g, "tokenizer.ggml.pre", &s, &len);
        if (st) return st;
        if (is(s, len, "smollm")) o->pre = BPE_PRE_SMOLLM;
        else if (is(s, len, "gpt2") || is(s, len, "default")) o->pre = BPE_PRE_GPT2;
        else
            return emily_error(EMILY_ERR_UNSUPPORTED,
                               "bpe_from_gguf: pre-tokenizer \"%.*s\" is not written (smollm, gpt2)",
                               (int)(len < 64 ? len : 64), s);
    } else {
        o->pre = BPE_PRE_GPT2;
    }
    st = optional_id(g, "tokenizer.ggml.bos_token_id", &o->bos_id);
    if (!st) st = optional_id(g, "tokenizer.ggml.eos_token_id", &o->eos_id);
    if (st) return st;
    /* tokenizer.ggml.unknown_token_id is not used: Hugging Face's BPE for
     * these files has no unk_token (a byte without a token is dropped). */
    if (emily_gguf_has_key(g, "tokenizer.ggml.add_bos_token")) {
        int64_t add = 0;
        st = emily_gguf_get_int(g, "tokenizer.ggml.add_bos_token", &add);
        if (st) return st;
        o->add_bos = add != 0;
    }
    return EMILY_OK;
}

emily_status bpe_from_gguf(const emily_gguf *g, bpe_tokenizer **out, char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "bpe_from_gguf: NULL out");
    *out = NULL;
    if (!g) return emily_error(EMILY_ERR_ARGUMENT, "bpe_from_gguf: NULL file");
    bpe_options o;
    const char **tokens = NULL, **merges = NULL;
    size_t *token_lens = NULL, *merge_lens = NULL, n_tokens = 0, n_merges = 0, n_types = 0;
    int32_t *types = NULL;
    emily_status s = read_options(g, &o);
    if (!s) s = string_array(g, "tokenizer.ggml.tokens", &tokens, &token_lens, &n_tokens);
    if (!s) s = string_array(g, "tokenizer.ggml.merges", &merges, &merge_lens, &n_merges);
    if (!s && emily_gguf_has_key(g, "tokenizer.ggml.token_type")) {
        emily_gguf_value_type elem;
        s = emily_gguf_get_array(g, "tokenizer.ggml.token_type", &elem, &n_types);
        if (!s && n_types != n_tokens)
            s = emily_error(EMILY_ERR_ARGUMENT, "bpe_from_gguf: %zu token types for %zu tokens", n_types, n_tokens);
        if (!s && !(types = malloc((n_types ? n_types : 1) * sizeof *types)))
            s = emily_error(EMILY_ERR_MEMORY, "bpe_from_gguf: out of memory");
        for (size_t i = 0; i < n_types && !s; i++) {
            int64_t v = 0;
            s = emily_gguf_get_array_int(g, "tokenizer.ggml.token_type", i, &v);
            types[i] = v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
        }
    }
    if (!s)
        s = bpe_tokenizer_create((const char *const *)tokens, token_lens, types, n_tokens, (const char *const *)merges,
                                 merge_lens, n_merges, &o, out, err, errlen);
    if (s && err && errlen && !err[0]) snprintf(err, errlen, "%s", emily_last_error());
    free(tokens);
    free(token_lens);
    free(merges);
    free(merge_lens);
    free(types);
    return s;
}
