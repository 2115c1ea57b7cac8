/* generate.h: the handle, the prompt and the decoding loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bpe_gguf.h"
#include "generate.h"
#include "llama_model.h"

struct generator {
    emily_gguf *file;
    llama_model model;
    bpe_tokenizer *tokenizer;
    int32_t eos;
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int generator_open(const char *path, emily_device device, generator **out, char *err, size_t errlen) {
    return generator_open_weights(path, device, NULL, out, err, errlen);
}

int generator_open_weights(const char *path, emily_device device, const char *weights, generator **out, char *err,
                           size_t errlen) {
    *out = NULL;
    llama_weights mode = LLAMA_WEIGHTS_QUANTIZED;
    if (weights && llama_weights_parse(weights, &mode)) {
        snprintf(err, errlen, "%s", emily_last_error());
        return -1;
    }
    generator *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int64_t eos = -1;
    emily_status s = emily_gguf_open(path, &g->file);
    if (!s) s = llama_model_load(g->file, device, mode, &g->model);
    if (!s) s = emily_gguf_get_int(g->file, "tokenizer.ggml.eos_token_id", &eos);
    if (s) {
        snprintf(err, errlen, "%s", emily_last_error());
        generator_close(g);
        return -1;
    }
    if (bpe_from_gguf(g->file, &g->tokenizer, err, errlen)) {
        generator_close(g);
        return -1;
    }
    g->eos = (int32_t)eos;
    *out = g;
    return 0;
}

void generator_close(generator *g) {
    if (!g) return;
    llama_model_free(&g->model);
    bpe_tokenizer_free(g->tokenizer);
    emily_gguf_close(g->file);
    free(g);
}

const llama_model *generator_model(const generator *g) { return &g->model; }

int generator_prompt(generator *g, const char *text, const char *system, bool chat, int32_t **ids, int *n, char *err,
                     size_t errlen) {
    *ids = NULL;
    *n = 0;
    size_t count = 0;
    emily_status s;
    if (chat) {
        bpe_chat_message user = {"user", text};
        s = bpe_apply_chat(g->tokenizer, &user, 1, system, true, ids, &count);
    } else {
        s = bpe_encode(g->tokenizer, text, strlen(text), ids, &count);
    }
    if (!s && count > (size_t)g->model.cfg.context) {
        free(*ids);
        *ids = NULL;
        snprintf(err, errlen, "the prompt has %zu tokens; the model takes %d", count, g->model.cfg.context);
        return -1;
    }
    if (s) {
        snprintf(err, errlen, "%s", emily_last_error());
        return -1;
    }
    *n = (int)count;
    return 0;
}

/* The logits of the last forward pass, on the host. */
static emily_status read_logits(const emily_tensor *logits, float *host, int vocab) {
    return emily_to_binary(logits, host, sizeof *host * (size_t)vocab);
}

int generator_run(generator *g, const int32_t *prompt, int n_prompt, const generate_options *o, generate_result *res,
                  char *err, size_t errlen) {
    memset(res, 0, sizeof *res);
    const llama_config *c = &g->model.cfg;
    if (n_prompt < 1 || o->max_new < 1) {
        snprintf(err, errlen, "generate: an empty prompt, or no new tokens asked for");
        return -1;
    }
    int64_t capacity = o->context ? o->context : (int64_t)n_prompt + o->max_new;
    if (capacity > c->context) capacity = c->context;
    if (n_prompt >= capacity) {
        snprintf(err, errlen, "generate: a prompt of %d tokens leaves no room in %lld positions", n_prompt,
                 (long long)capacity);
        return -1;
    }
    sampler smp;
    if (sampler_init(&smp, &o->sampling, c->vocab, err, errlen)) return -1;
    llama_cache cache = {0};
    float *logits_host = malloc(sizeof *logits_host * (size_t)c->vocab);
    res->ids = malloc(sizeof *res->ids * (size_t)o->max_new);
    emily_status s = logits_host && res->ids ? llama_cache_new(&g->model, capacity, &cache)
                                             : emily_error(EMILY_ERR_MEMORY, "generate: out of memory");
    bpe_decoder *text = NULL;
    if (!s && o->on_text) s = bpe_decoder_create(g->tokenizer, true, &text);
    double t0 = now_ms();
    int32_t token = 0;
    const int32_t *input = prompt;
    int n_input = n_prompt;
    while (!s && res->n < o->max_new && cache.length + n_input <= capacity) {
        emily_tensor *logits = NULL;
        s = llama_forward(&g->model, &cache, input, n_input, &logits);
        if (!s) s = read_logits(logits, logits_host, c->vocab);
        emily_tensor_release(logits);
        if (s) break;
        token = sampler_next(&smp, logits_host);
        res->ids[res->n++] = token;
        if (text) {
            const char *piece;
            size_t len;
            s = bpe_decoder_push(text, token, &piece, &len);
            if (s) break;
            if (len) o->on_text(o->ctx, piece, len);
        }
        double t = now_ms();
        if (res->n == 1) res->prefill_ms = t - t0;
        else res->decode_ms = t - t0 - res->prefill_ms;
        if (token == g->eos && !o->ignore_eos) {
            res->stopped = true;
            break;
        }
        input = &res->ids[res->n - 1];
        n_input = 1;
    }
    if (!s && text) {
        const char *piece;
        size_t len;
        s = bpe_decoder_flush(text, &piece, &len);
        if (!s && len) o->on_text(o->ctx, piece, len);
    }
    bpe_decoder_free(text);
    if (s) snprintf(err, errlen, "%s", emily_last_error());
    llama_cache_free(&cache);
    if (s) generate_result_free(res);
    sampler_free(&smp);
    free(logits_host);
    return s ? -1 : 0;
}

void generate_result_free(generate_result *r) {
    free(r->ids);
    memset(r, 0, sizeof *r);
}
