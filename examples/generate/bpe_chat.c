/* SmolLM2's chat template, rendered by hand: the GGUF's
 * tokenizer.chat_template is a Jinja program, and this is the text it
 * makes (a default system turn when the first message is not one). */
#include <stdlib.h>
#include <string.h>
#include "bpe_impl.h"

typedef struct text_buf {
    char *v;
    size_t n, cap;
} text_buf;

static emily_status put(text_buf *b, const char *s) {
    size_t len = strlen(s);
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + len + 1) cap *= 2;
        char *v = realloc(b->v, cap);
        if (!v) return emily_error(EMILY_ERR_MEMORY, "bpe: out of memory rendering the chat");
        b->v = v;
        b->cap = cap;
    }
    memcpy(b->v + b->n, s, len + 1);
    b->n += len;
    return EMILY_OK;
}

static emily_status put_turn(text_buf *b, const char *role, const char *content) {
    emily_status s = put(b, "<|im_start|>");
    if (!s) s = put(b, role);
    if (!s) s = put(b, "\n");
    if (!s) s = put(b, content);
    if (!s) s = put(b, "<|im_end|>\n");
    return s;
}

emily_status bpe_render_chat(const bpe_chat_message *messages, size_t n_messages, const char *default_system,
                             bool add_generation_prompt, char **text, size_t *len) {
    if (!text || !len) return emily_error(EMILY_ERR_ARGUMENT, "bpe_render_chat: NULL text or len");
    *text = NULL;
    *len = 0;
    if (!messages && n_messages)
        return emily_error(EMILY_ERR_ARGUMENT, "bpe_render_chat: NULL messages (%zu)", n_messages);
    for (size_t i = 0; i < n_messages; i++)
        if (!messages[i].role || !messages[i].content)
            return emily_error(EMILY_ERR_ARGUMENT, "bpe_render_chat: message %zu has a NULL %s", i,
                               messages[i].role ? "content" : "role");
    text_buf b = {0};
    emily_status s = put(&b, "");
    if (!s && n_messages > 0 && strcmp(messages[0].role, "system") != 0)
        s = put_turn(&b, "system", default_system ? default_system : BPE_SMOLLM2_SYSTEM_PROMPT);
    for (size_t i = 0; i < n_messages && !s; i++) s = put_turn(&b, messages[i].role, messages[i].content);
    if (!s && add_generation_prompt) s = put(&b, "<|im_start|>assistant\n");
    if (s) {
        free(b.v);
        return s;
    }
    *text = b.v;
    *len = b.n;
    return EMILY_OK;
}

emily_status bpe_apply_chat(const bpe_tokenizer *t, const bpe_chat_message *messages, size_t n_messages,
                            const char *default_system, bool add_generation_prompt, int32_t **ids, size_t *n) {
    if (!ids || !n) return emily_error(EMILY_ERR_ARGUMENT, "bpe_apply_chat: NULL ids or n");
    *ids = NULL;
    *n = 0;
    if (!t) return emily_error(EMILY_ERR_ARGUMENT, "bpe_apply_chat: NULL tokenizer");
    char *text = NULL;
    size_t len = 0;
    emily_status s = bpe_render_chat(messages, n_messages, default_system, add_generation_prompt, &text, &len);
    if (!s) s = bpe_encode(t, text, len, ids, n);
    free(text);
    return s;
}
