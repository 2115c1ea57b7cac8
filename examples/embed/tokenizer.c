/* Encoding: added tokens split out of the raw text, the rest normalized,
 * split into words and each word cut into WordPiece tokens. */
#include <stdlib.h>
#include <string.h>
#include "tokenizer_impl.h"
#include "unicode_data.h"

/* What one encode call builds: the ids, and scratch for one word. */
typedef struct encoder {
    const bert_tokenizer *t;
    int32_t *ids;
    int count, cap, limit; /* limit: ids of the text kept (max_length - 2) */
    char *bytes;           /* the word in UTF-8 */
    size_t *starts;        /* byte offset of each of its characters, and the end */
    size_t word_cap;
} encoder;

static emily_status oom(void) { return emily_error(EMILY_ERR_MEMORY, "tokenizer: out of memory"); }

static emily_status push_id(encoder *e, int32_t id) {
    if (e->count == e->cap) {
        int cap = e->cap ? e->cap * 2 : 64;
        int32_t *ids = realloc(e->ids, (size_t)cap * sizeof *ids);
        if (!ids) return oom();
        e->ids = ids;
        e->cap = cap;
    }
    e->ids[e->count++] = id;
    return EMILY_OK;
}

static bool full(const encoder *e) { return e->count >= e->limit + 1; /* +1: [CLS] */ }

/* WordPiece on one word: the longest vocabulary entry that starts the
 * rest of the word ("##"-prefixed after the first), repeatedly; a word
 * with a part no entry starts is one unknown token. */
static emily_status word_pieces(void *ctx, const uint32_t *word, size_t n) {
    encoder *e = ctx;
    const bert_tokenizer *t = e->t;
    if (full(e)) return EMILY_OK; /* truncated away: the result is the same */
    if (n > t->max_chars_per_word) return push_id(e, t->unk_id);
    if (n + 1 > e->word_cap) {
        size_t cap = n + 1 > 2 * e->word_cap ? n + 1 : 2 * e->word_cap;
        char *bytes = realloc(e->bytes, cap * 4);
        if (!bytes) return oom();
        e->bytes = bytes;
        size_t *starts = realloc(e->starts, cap * sizeof *starts);
        if (!starts) return oom();
        e->starts = starts;
        e->word_cap = cap;
    }
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        e->starts[i] = len;
        len += (size_t)uc_utf8_put(word[i], e->bytes + len);
    }
    e->starts[n] = len;
    int first = e->count;
    for (size_t start = 0; start < n;) {
        int32_t id = -1;
        size_t end = n;
        for (; end > start; end--) {
            id = vocab_find(t->vocab, start ? t->prefix : NULL, e->bytes + e->starts[start],
                            e->starts[end] - e->starts[start]);
            if (id >= 0) break;
        }
        if (id < 0) {
            e->count = first;
            return push_id(e, t->unk_id);
        }
        emily_status s = push_id(e, id);
        if (s) return s;
        start = end;
    }
    return EMILY_OK;
}

static emily_status encode_plain(encoder *e, const char *text, size_t n) {
    if (n == 0 || full(e)) return EMILY_OK;
    cp_buf norm = {0};
    emily_status s = bert_normalize(&e->t->text, text, n, &norm);
    if (!s) s = bert_split_words(norm.v, norm.len, word_pieces, e);
    cp_buf_free(&norm);
    return s;
}

/* The added token that occurs first in text[0, n) (the longest of those
 * starting there), or NULL. */
static const tokenizer_added *next_added(const bert_tokenizer *t, const char *text, size_t n, size_t *at) {
    const tokenizer_added *best = NULL;
    for (int i = 0; i < t->nadded; i++) {
        const tokenizer_added *a = &t->added[i];
        size_t limit = best ? *at + 1 : n; /* only a start at or before the best one matters */
        for (size_t p = 0; p + a->len <= n && p < limit; p++) {
            if (memcmp(text + p, a->text, a->len) == 0) {
                if (!best || p < *at || a->len > best->len) {
                    best = a;
                    *at = p;
                }
                break;
            }
        }
    }
    return best;
}

emily_status tokenizer_encode(const bert_tokenizer *t, const char *text, size_t n, int max_length, int32_t **ids,
                              int *count) {
    *ids = NULL;
    *count = 0;
    if (max_length < 2)
        return emily_error(EMILY_ERR_ARGUMENT, "tokenizer: max_length %d leaves no room for [CLS] and [SEP]",
                           max_length);
    if (!text && n) return emily_error(EMILY_ERR_ARGUMENT, "tokenizer: NULL text");
    encoder e = {.t = t, .limit = max_length - 2};
    emily_status s = push_id(&e, t->cls_id);
    size_t pos = 0;
    while (!s && pos < n && !full(&e)) {
        size_t at = 0;
        const tokenizer_added *a = next_added(t, text + pos, n - pos, &at);
        s = encode_plain(&e, text + pos, a ? at : n - pos);
        if (!s && a && !full(&e)) s = push_id(&e, a->id);
        pos += a ? at + a->len : n - pos;
    }
    if (e.count > e.limit + 1) e.count = e.limit + 1;
    if (!s) s = push_id(&e, t->sep_id);
    free(e.bytes);
    free(e.starts);
    if (s) {
        free(e.ids);
        return s;
    }
    *ids = e.ids;
    *count = e.count;
    return EMILY_OK;
}

int32_t tokenizer_pad_id(const bert_tokenizer *t) { return t->pad_id; }
const char *tokenizer_token(const bert_tokenizer *t, int32_t id) { return vocab_token(t->vocab, id); }
int32_t tokenizer_id_limit(const bert_tokenizer *t) { return vocab_id_limit(t->vocab); }
