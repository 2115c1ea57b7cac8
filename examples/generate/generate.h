/* Generation on a llama GGUF model: the file, the model on a device and
 * its tokenizer in one handle; a prompt through the chat template; the
 * decoding loop (prefill, then one token per step with the key/value
 * cache), streaming the text as it is made. */
#ifndef GENERATE_GENERATE_H
#define GENERATE_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "emily/emily.h"
#include "sampler.h"

typedef struct generator generator;

/* 0 on success; on failure -1 and a message in err. The weight matrices
 * as the file stores them (block-quantized ones stay quantized). */
int generator_open(const char *gguf_path, emily_device device, generator **out, char *err, size_t errlen);
/* The same with the weights mode by name (llama_model.h, llama_weights):
 * "quantized" (NULL: the same), "f32" or "bf16"; any other name fails
 * before the file is read, with a message that lists the modes. */
int generator_open_weights(const char *gguf_path, emily_device device, const char *weights, generator **out, char *err,
                           size_t errlen);
void generator_close(generator *g);

/* The model inside (for programs that run llama_forward themselves). */
const struct llama_model *generator_model(const generator *g);

/* The prompt's token ids (*ids malloc'ed): with chat true, the model's
 * chat template around one user message (system NULL: the template's
 * default system message), else the text alone. */
int generator_prompt(generator *g, const char *text, const char *system, bool chat, int32_t **ids, int *n, char *err,
                     size_t errlen);

typedef struct generate_options {
    int max_new; /* new tokens at most */
    int context; /* cache positions; 0: prompt + max_new (at most the model's) */
    sampler_options sampling;
    /* called with each complete piece of UTF-8 text as tokens arrive
     * (control tokens such as the end token are not text); may be NULL */
    void (*on_text)(void *ctx, const char *text, size_t len);
    void *ctx;
    bool verbose;    /* loading and timing lines on stderr */
    bool ignore_eos; /* go on after the end token (benchmarks: a fixed count) */
} generate_options;

typedef struct generate_result {
    int32_t *ids; /* the new tokens, the end token included when reached */
    int n;
    bool stopped;      /* the end token was generated */
    double prefill_ms; /* the prompt's forward pass and the first token */
    double decode_ms;  /* every later token */
} generate_result;

/* 0 on success (free res with generate_result_free); -1 and a message in
 * err on failure (res then holds nothing). */
int generator_run(generator *g, const int32_t *prompt, int n_prompt, const generate_options *o, generate_result *res,
                  char *err, size_t errlen);
void generate_result_free(generate_result *r);

#endif
