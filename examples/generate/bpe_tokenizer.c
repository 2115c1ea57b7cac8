/* Making the tokenizer from arrays: every token checked and indexed by
 * its text, its bytes worked out once (for the merges' first symbols and
 * for decoding), every merge checked and put in the pair table, the
 * tokens found in text as themselves listed longest first. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bpe_impl.h"
#include "unicode_data.h"

bpe_options bpe_default_options(void) {
    return (bpe_options){.pre = BPE_PRE_SMOLLM, .bos_id = -1, .eos_id = -1, .unk_id = -1};
}

void bpe_tokenizer_free(bpe_tokenizer *t) {
    if (!t) return;
    vocab_free(t->by_text);
    free(t->texts);
    free(t->text_offsets);
    free(t->bytes);
    free(t->byte_offsets);
    free(t->types);
    bpe_merges_free(t->merges);
    free(t->specials);
    free(t);
}

/* Records the message for emily_last_error and in err. */
static emily_status fail(char *err, size_t errlen, emily_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static emily_status fail(char *err, size_t errlen, emily_status code, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return emily_error(code, "%s", msg);
}

#define FAIL(...) fail(err, errlen, __VA_ARGS__)

static bool well_formed(const char *s, size_t n) {
    for (size_t pos = 0; pos < n;) {
        size_t at = pos;
        uint32_t cp = uc_utf8_next(s, n, &pos);
        if (cp == 0xFFFD && !(pos - at == 3 && memcmp(s + at, "\xEF\xBF\xBD", 3) == 0)) return false;
    }
    return true;
}

/* The bytes a token stands for, into out (at most n bytes): its code
 * points mapped back through the byte alphabet or, when one of them is
 * outside it (*spelled false), its own UTF-8 (as transformers reads such
 * tokens). */
static size_t token_bytes(const char *s, size_t n, char *out, bool *spelled) {
    size_t len = 0;
    *spelled = true;
    for (size_t pos = 0; pos < n;) {
        int b = bpe_cp_to_byte(uc_utf8_next(s, n, &pos));
        if (b < 0) {
            memcpy(out, s, n);
            *spelled = false;
            return n;
        }
        out[len++] = (char)b;
    }
    return len;
}

static int by_length_desc(const void *a, const void *b) {
    const bpe_special *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static emily_status add_tokens(bpe_tokenizer *t, const char *const *tokens, const size_t *token_lens,
                               const int32_t *token_types, char *err, size_t errlen) {
    size_t n = t->n_tokens, total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!tokens[i] || token_lens[i] == 0)
            return FAIL(EMILY_ERR_ARGUMENT, "bpe: token %zu is %s", i, tokens[i] ? "empty" : "NULL");
        if (!well_formed(tokens[i], token_lens[i])) return FAIL(EMILY_ERR_ARGUMENT, "bpe: token %zu is not UTF-8", i);
        if (token_types && (token_types[i] < 0 || token_types[i] > BPE_TOKEN_BYTE))
            return FAIL(EMILY_ERR_ARGUMENT, "bpe: token %zu has type %d (0..6 expected)", i, (int)token_types[i]);
        if (token_lens[i] > ((size_t)1 << 20))
            return FAIL(EMILY_ERR_ARGUMENT, "bpe: token %zu is %zu bytes long", i, token_lens[i]);
        total += token_lens[i] + 1;
    }
    t->texts = malloc(total);
    t->bytes = malloc(total);
    t->text_offsets = malloc((n + 1) * sizeof *t->text_offsets);
    t->byte_offsets = malloc((n + 1) * sizeof *t->byte_offsets);
    t->types = malloc(n);
    t->specials = malloc(n * sizeof *t->specials);
    if (!t->texts || !t->bytes || !t->text_offsets || !t->byte_offsets || !t->types || !t->specials)
        return FAIL(EMILY_ERR_MEMORY, "bpe: out of memory for %zu tokens", n);
    emily_status s = vocab_new(n, &t->by_text);
    if (s) return s;
    for (int b = 0; b < 256; b++) t->byte_token[b] = -1;
    size_t text_at = 0, byte_at = 0;
    for (size_t i = 0; i < n; i++) {
        const char *tok = tokens[i];
        size_t len = token_lens[i];
        int32_t seen = vocab_find(t->by_text, NULL, tok, len);
        if (seen >= 0)
            return FAIL(EMILY_ERR_ARGUMENT, "bpe: token %zu \"%.*s\" repeats token %d", i, (int)(len < 64 ? len : 64),
                        tok, (int)seen);
        s = vocab_add(t->by_text, tok, len, (int32_t)i);
        if (s) return s;
        t->text_offsets[i] = text_at;
        memcpy(t->texts + text_at, tok, len);
        t->texts[text_at + len] = '\0';
        text_at += len + 1;
        t->byte_offsets[i] = byte_at;
        bool spelled = true;
        size_t nb = token_bytes(tok, len, t->bytes + byte_at, &spelled);
        if (nb == 1 && t->byte_token[(unsigned char)t->bytes[byte_at]] < 0)
            t->byte_token[(unsigned char)t->bytes[byte_at]] = (int32_t)i;
        byte_at += nb;
        t->types[i] = (uint8_t)(token_types ? token_types[i] : BPE_TOKEN_NORMAL);
        /* Control tokens written outside the byte alphabet are
         * mislabelled, and transformers does not look for them in text. */
        if ((t->types[i] == BPE_TOKEN_CONTROL && spelled) || t->types[i] == BPE_TOKEN_USER_DEFINED) {
            t->specials[t->n_specials++] = (bpe_special){t->texts + t->text_offsets[i], len, (int32_t)i};
            t->special_start[(unsigned char)tok[0]] = true;
        }
    }
    t->text_offsets[n] = text_at;
    t->byte_offsets[n] = byte_at;
    qsort(t->specials, t->n_specials, sizeof *t->specials, by_length_desc);
    return EMILY_OK;
}

static emily_status add_merges(bpe_tokenizer *t, const char *const *merges, const size_t *merge_lens, size_t n_merges,
                               char *err, size_t errlen) {
    if (n_merges > INT32_MAX) return FAIL(EMILY_ERR_ARGUMENT, "bpe: %zu merges", n_merges);
    emily_status s = bpe_merges_new(n_merges, &t->merges);
    if (s) return s;
    char *joined = NULL;
    size_t joined_cap = 0;
    for (size_t r = 0; r < n_merges && !s; r++) {
        const char *m = merges[r];
        size_t len = merge_lens[r];
        if (!m) {
            s = FAIL(EMILY_ERR_ARGUMENT, "bpe: merge %zu is NULL", r);
            break;
        }
        const char *space = memchr(m, ' ', len);
        int shown = (int)(len < 64 ? len : 64);
        if (!space || space == m || space == m + len - 1 || memchr(space + 1, ' ', len - (size_t)(space - m) - 1)) {
            s = FAIL(EMILY_ERR_ARGUMENT, "bpe: merge %zu \"%.*s\" is not \"left right\"", r, shown, m);
            break;
        }
        size_t llen = (size_t)(space - m), rlen = len - llen - 1;
        int32_t left = vocab_find(t->by_text, NULL, m, llen);
        int32_t right = vocab_find(t->by_text, NULL, space + 1, rlen);
        if (left < 0 || right < 0) {
            s = FAIL(EMILY_ERR_ARGUMENT, "bpe: merge %zu \"%.*s\" names a token not in the vocabulary", r, shown, m);
            break;
        }
        if (llen + rlen > joined_cap) {
            char *grown = realloc(joined, llen + rlen);
            if (!grown) {
                s = FAIL(EMILY_ERR_MEMORY, "bpe: out of memory");
                break;
            }
            joined = grown;
            joined_cap = llen + rlen;
        }
        memcpy(joined, m, llen);
        memcpy(joined + llen, space + 1, rlen);
        int32_t merged = vocab_find(t->by_text, NULL, joined, llen + rlen);
        if (merged < 0) {
            s = FAIL(EMILY_ERR_ARGUMENT, "bpe: merge %zu \"%.*s\" makes a token not in the vocabulary", r, shown, m);
            break;
        }
        bool added = false;
        s = bpe_merges_add(t->merges, left, right, (int32_t)r, merged, &added);
        if (!s && !added) s = FAIL(EMILY_ERR_ARGUMENT, "bpe: merge %zu \"%.*s\" repeats an earlier one", r, shown, m);
    }
    free(joined);
    return s;
}

static emily_status check_id(int32_t id, size_t n, const char *name, char *err, size_t errlen) {
    if (id < -1 || (id >= 0 && (size_t)id >= n))
        return FAIL(EMILY_ERR_ARGUMENT, "bpe: %s id %d is outside the vocabulary (%zu tokens; -1: none)", name, (int)id,
                    n);
    return EMILY_OK;
}

emily_status bpe_tokenizer_create(const char *const *tokens, const size_t *token_lens, const int32_t *token_types,
                                  size_t n_tokens, const char *const *merges, const size_t *merge_lens, size_t n_merges,
                                  const bpe_options *opts, bpe_tokenizer **out, char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    if (!out) return FAIL(EMILY_ERR_ARGUMENT, "bpe: NULL out");
    *out = NULL;
    if (!tokens || !token_lens) return FAIL(EMILY_ERR_ARGUMENT, "bpe: NULL tokens or token_lens");
    if (n_merges && (!merges || !merge_lens)) return FAIL(EMILY_ERR_ARGUMENT, "bpe: NULL merges or merge_lens");
    if (n_tokens == 0) return FAIL(EMILY_ERR_ARGUMENT, "bpe: no tokens");
    if (n_tokens > VOCAB_MAX_ID)
        return FAIL(EMILY_ERR_ARGUMENT, "bpe: %zu tokens (at most %d)", n_tokens, VOCAB_MAX_ID);
    bpe_options o = opts ? *opts : bpe_default_options();
    if (o.pre != BPE_PRE_SMOLLM && o.pre != BPE_PRE_GPT2)
        return FAIL(EMILY_ERR_ARGUMENT, "bpe: unknown pre-tokenizer %d", (int)o.pre);
    emily_status s = check_id(o.bos_id, n_tokens, "bos", err, errlen);
    if (!s) s = check_id(o.eos_id, n_tokens, "eos", err, errlen);
    if (!s) s = check_id(o.unk_id, n_tokens, "unk", err, errlen);
    if (!s && o.add_bos && o.bos_id < 0) s = FAIL(EMILY_ERR_ARGUMENT, "bpe: add_bos without a bos id");
    if (s) return s;
    bpe_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return FAIL(EMILY_ERR_MEMORY, "bpe: out of memory");
    t->n_tokens = n_tokens;
    t->opts = o;
    s = add_tokens(t, tokens, token_lens, token_types, err, errlen);
    if (!s) s = add_merges(t, merges, merge_lens, n_merges, err, errlen);
    if (s) {
        /* vocab's own messages reach err too */
        if (err && errlen && !err[0]) snprintf(err, errlen, "%s", emily_last_error());
        bpe_tokenizer_free(t);
        return s;
    }
    *out = t;
    return EMILY_OK;
}

size_t bpe_vocab_size(const bpe_tokenizer *t) { return t ? t->n_tokens : 0; }

const char *bpe_token_text(const bpe_tokenizer *t, int32_t id, size_t *len) {
    if (!t || id < 0 || (size_t)id >= t->n_tokens) return NULL;
    if (len) *len = t->text_offsets[id + 1] - t->text_offsets[id] - 1;
    return t->texts + t->text_offsets[id];
}

int bpe_token_type(const bpe_tokenizer *t, int32_t id) {
    return t && id >= 0 && (size_t)id < t->n_tokens ? t->types[id] : -1;
}

bpe_options bpe_tokenizer_options(const bpe_tokenizer *t) { return t ? t->opts : bpe_default_options(); }
