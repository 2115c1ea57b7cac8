/* BertNormalizer and BertPreTokenizer, character by character.
 *
 * Hugging Face applies the normalizer's steps one after the other over
 * the whole text (clean-up, CJK spacing, NFD with the non-spacing marks
 * dropped, lowercase); each maps one character to characters that the
 * later steps map on their own, so applying all four to each character in
 * turn gives the same text. (NFD also reorders runs of combining marks;
 * the reordered marks are non-spacing ones, which are dropped.) */
#include <stdlib.h>
#include "bert_text.h"
#include "unicode_data.h"

void cp_buf_free(cp_buf *b) {
    free(b->v);
    b->v = NULL;
    b->len = b->cap = 0;
}

static emily_status push(cp_buf *b, uint32_t cp) {
    if (b->len == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        if (cap > SIZE_MAX / sizeof *b->v) return emily_error(EMILY_ERR_MEMORY, "tokenizer: text too long");
        uint32_t *v = realloc(b->v, cap * sizeof *v);
        if (!v) return emily_error(EMILY_ERR_MEMORY, "tokenizer: out of memory (%zu characters)", cap);
        b->v = v;
        b->cap = cap;
    }
    b->v[b->len++] = cp;
    return EMILY_OK;
}

/* The accent and case steps for one character. */
static emily_status push_folded(const bert_text_options *opt, uint32_t cp, cp_buf *out) {
    uint32_t parts[UC_MAX_STRIPPED];
    int n = 1;
    parts[0] = cp;
    if (opt->strip_accents) n = uc_strip_accents(cp, parts);
    for (int i = 0; i < n; i++) {
        uint32_t low[2];
        int m = 1;
        low[0] = parts[i];
        if (opt->lowercase) m = uc_lowercase(parts[i], low);
        for (int j = 0; j < m; j++) {
            emily_status s = push(out, low[j]);
            if (s) return s;
        }
    }
    return EMILY_OK;
}

emily_status bert_normalize(const bert_text_options *opt, const char *text, size_t n, cp_buf *out) {
    size_t pos = 0;
    while (pos < n) {
        uint32_t cp = uc_utf8_next(text, n, &pos);
        emily_status s = EMILY_OK;
        if (opt->clean_text) {
            bool keep_space = cp == '\t' || cp == '\n' || cp == '\r';
            if (cp == 0 || cp == 0xFFFD || (!keep_space && (uc_class(cp) & UC_OTHER))) continue;
            if (uc_is_whitespace(cp)) cp = ' ';
        }
        if (opt->chinese_chars && uc_is_cjk(cp)) {
            s = push(out, ' ');
            if (!s) s = push_folded(opt, cp, out);
            if (!s) s = push(out, ' ');
        } else {
            s = push_folded(opt, cp, out);
        }
        if (s) return s;
    }
    return EMILY_OK;
}

emily_status bert_split_words(const uint32_t *text, size_t n, bert_word_fn fn, void *ctx) {
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        bool end = i == n || uc_is_whitespace(text[i]);
        bool punct = !end && uc_is_punctuation(text[i]);
        if (end || punct) {
            emily_status s = EMILY_OK;
            if (i > start) s = fn(ctx, text + start, i - start);
            if (!s && punct) s = fn(ctx, text + i, 1);
            if (s) return s;
            start = i + 1;
        }
    }
    return EMILY_OK;
}
