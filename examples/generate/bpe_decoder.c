/* Decoding: the tokens' bytes joined, read as UTF-8 with each ill-formed
 * part as U+FFFD (Hugging Face's ByteLevel decoder, which ends in
 * String::from_utf8_lossy). The streaming decoder holds back the start
 * of a character that the next token may finish, so that what it gives
 * joined is what bpe_decode gives for the same ids. */
#include <stdlib.h>
#include <string.h>
#include "bpe_impl.h"
#include "unicode_data.h"

struct bpe_decoder {
    const bpe_tokenizer *t;
    bool skip_control;
    char held[4]; /* an unfinished character (at most 3 bytes) */
    size_t n_held;
    char *out; /* what the last call gave */
    size_t out_cap;
};

static emily_status check_id(const bpe_tokenizer *t, int32_t id) {
    if (id < 0 || (size_t)id >= t->n_tokens)
        return emily_error(EMILY_ERR_INDEX, "bpe: token id %d is outside the vocabulary (%zu tokens)", (int)id,
                           t->n_tokens);
    return EMILY_OK;
}

static bool skipped(const bpe_tokenizer *t, bool skip_control, int32_t id) {
    return skip_control && t->types[id] == BPE_TOKEN_CONTROL;
}

/* bytes[0, n) read lossily into out (room for 3 * n + 1), NUL-terminated;
 * returns the length. */
static size_t lossy(const char *bytes, size_t n, char *out) {
    size_t k = 0;
    for (size_t pos = 0; pos < n;) k += (size_t)uc_utf8_put(uc_utf8_next_lossy(bytes, n, &pos), out + k);
    out[k] = '\0';
    return k;
}

emily_status bpe_decode(const bpe_tokenizer *t, const int32_t *ids, size_t n, bool skip_control, char **text,
                        size_t *len) {
    if (!text || !len) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decode: NULL text or len");
    *text = NULL;
    *len = 0;
    if (!t) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decode: NULL tokenizer");
    if (!ids && n) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decode: NULL ids (%zu)", n);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        emily_status s = check_id(t, ids[i]);
        if (s) return s;
        if (!skipped(t, skip_control, ids[i])) total += t->byte_offsets[ids[i] + 1] - t->byte_offsets[ids[i]];
    }
    char *bytes = malloc(total ? total : 1), *out = malloc(3 * total + 1);
    if (!bytes || !out) {
        free(bytes);
        free(out);
        return emily_error(EMILY_ERR_MEMORY, "bpe_decode: out of memory for %zu bytes", total);
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (skipped(t, skip_control, ids[i])) continue;
        size_t a = t->byte_offsets[ids[i]], b = t->byte_offsets[ids[i] + 1];
        memcpy(bytes + k, t->bytes + a, b - a);
        k += b - a;
    }
    *len = lossy(bytes, k, out);
    free(bytes);
    *text = out;
    return EMILY_OK;
}

emily_status bpe_decoder_create(const bpe_tokenizer *t, bool skip_control, bpe_decoder **out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decoder_create: NULL out");
    *out = NULL;
    if (!t) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decoder_create: NULL tokenizer");
    bpe_decoder *d = calloc(1, sizeof *d);
    if (!d) return emily_error(EMILY_ERR_MEMORY, "bpe_decoder_create: out of memory");
    d->t = t;
    d->skip_control = skip_control;
    *out = d;
    return EMILY_OK;
}

void bpe_decoder_free(bpe_decoder *d) {
    if (!d) return;
    free(d->out);
    free(d);
}

/* Gives the held bytes plus bytes[0, n), all but an unfinished tail
 * unless `flush`. */
static emily_status give(bpe_decoder *d, const char *bytes, size_t n, bool flush, const char **text, size_t *len) {
    size_t total = d->n_held + n;
    char *joined = malloc(total ? total : 1);
    if (!joined) return emily_error(EMILY_ERR_MEMORY, "bpe_decoder: out of memory");
    memcpy(joined, d->held, d->n_held);
    if (n) memcpy(joined + d->n_held, bytes, n);
    size_t tail = flush ? 0 : uc_utf8_incomplete_tail(joined, total);
    size_t need = 3 * (total - tail) + 1;
    if (need > d->out_cap) {
        char *grown = realloc(d->out, need);
        if (!grown) {
            free(joined);
            return emily_error(EMILY_ERR_MEMORY, "bpe_decoder: out of memory");
        }
        d->out = grown;
        d->out_cap = need;
    }
    *len = lossy(joined, total - tail, d->out);
    *text = d->out;
    memcpy(d->held, joined + total - tail, tail);
    d->n_held = tail;
    free(joined);
    return EMILY_OK;
}

emily_status bpe_decoder_push(bpe_decoder *d, int32_t id, const char **text, size_t *len) {
    if (!text || !len) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decoder_push: NULL text or len");
    *text = "";
    *len = 0;
    if (!d) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decoder_push: NULL decoder");
    emily_status s = check_id(d->t, id);
    if (s) return s;
    if (skipped(d->t, d->skip_control, id)) return give(d, NULL, 0, false, text, len);
    const bpe_tokenizer *t = d->t;
    size_t a = t->byte_offsets[id], b = t->byte_offsets[id + 1];
    return give(d, t->bytes + a, b - a, false, text, len);
}

emily_status bpe_decoder_flush(bpe_decoder *d, const char **text, size_t *len) {
    if (!text || !len) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decoder_flush: NULL text or len");
    *text = "";
    *len = 0;
    if (!d) return emily_error(EMILY_ERR_ARGUMENT, "bpe_decoder_flush: NULL decoder");
    return give(d, NULL, 0, true, text, len);
}
