/* Encoding: the tokens written in the text as themselves are found
 * first (at each position the earliest, longest first, as Hugging Face's
 * added-token matcher does); the text between them is made well-formed
 * UTF-8, split by the pre-tokenizer and each piece merged. */
#include <stdlib.h>
#include <string.h>
#include "bpe_impl.h"
#include "unicode_data.h"

emily_status bpe_ids_push(bpe_ids *ids, int32_t id) {
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? 2 * ids->cap : 64;
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v) return emily_error(EMILY_ERR_MEMORY, "bpe: out of memory for %zu ids", cap);
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return EMILY_OK;
}

typedef struct encoder {
    const bpe_tokenizer *t;
    bpe_word_scratch scratch;
    bpe_ids ids;
} encoder;

static emily_status on_piece(void *ctx, const char *piece, size_t len) {
    encoder *e = ctx;
    return bpe_word(e->t, piece, len, &e->scratch, &e->ids);
}

/* text[0, n) with each ill-formed part replaced by U+FFFD (its maximal
 * subpart: String::from_utf8_lossy's reading) into *copy, or NULL in
 * *copy when it is well-formed already. */
static emily_status lossy_copy(const char *text, size_t n, char **copy, size_t *len) {
    *copy = NULL;
    bool ill_formed = false;
    for (size_t pos = 0; pos < n && !ill_formed;) {
        size_t at = pos;
        ill_formed = uc_utf8_next_lossy(text, n, &pos) == 0xFFFD &&
                     !(pos - at == 3 && memcmp(text + at, "\xEF\xBF\xBD", 3) == 0);
    }
    if (!ill_formed) return EMILY_OK;
    char *out = malloc(3 * n); /* each ill-formed byte at most 3 */
    if (!out) return emily_error(EMILY_ERR_MEMORY, "bpe: out of memory for %zu bytes", n);
    size_t k = 0;
    for (size_t pos = 0; pos < n;) k += (size_t)uc_utf8_put(uc_utf8_next_lossy(text, n, &pos), out + k);
    *copy = out;
    *len = k;
    return EMILY_OK;
}

static emily_status encode_plain(encoder *e, const char *text, size_t n) {
    if (n == 0) return EMILY_OK;
    char *copy = NULL;
    size_t len = n;
    emily_status s = lossy_copy(text, n, &copy, &len);
    if (!s) s = bpe_pretokenize(e->t->opts.pre, copy ? copy : text, len, on_piece, e);
    free(copy);
    return s;
}

/* The special token at text[0, n) (the longest), or NULL. */
static const bpe_special *special_at(const bpe_tokenizer *t, const char *text, size_t n) {
    if (!t->special_start[(unsigned char)text[0]]) return NULL;
    for (size_t i = 0; i < t->n_specials; i++) {
        const bpe_special *sp = &t->specials[i];
        if (sp->len <= n && memcmp(text, sp->text, sp->len) == 0) return sp;
    }
    return NULL;
}

emily_status bpe_encode(const bpe_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n) {
    if (!ids || !n) return emily_error(EMILY_ERR_ARGUMENT, "bpe_encode: NULL ids or n");
    *ids = NULL;
    *n = 0;
    if (!t) return emily_error(EMILY_ERR_ARGUMENT, "bpe_encode: NULL tokenizer");
    if (!text && len) return emily_error(EMILY_ERR_ARGUMENT, "bpe_encode: NULL text of %zu bytes", len);
    encoder e = {.t = t};
    emily_status s = t->opts.add_bos ? bpe_ids_push(&e.ids, t->opts.bos_id) : EMILY_OK;
    size_t from = 0;
    for (size_t pos = 0; pos < len && !s; pos++) {
        const bpe_special *sp = special_at(t, text + pos, len - pos);
        if (!sp) continue;
        s = encode_plain(&e, text + from, pos - from);
        if (!s) s = bpe_ids_push(&e.ids, sp->id);
        pos += sp->len - 1;
        from = pos + 1;
    }
    if (!s && from < len) s = encode_plain(&e, text + from, len - from);
    bpe_word_scratch_free(&e.scratch);
    if (s) {
        free(e.ids.v);
        return s;
    }
    *ids = e.ids.v;
    *n = e.ids.n;
    return EMILY_OK;
}
