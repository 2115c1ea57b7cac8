/* The pre-tokenizer: where Hugging Face's tokenizers cuts text before
 * the merges, written over code points instead of with a regex engine.
 *
 * SmolLM2 ("smollm") first isolates every digit (the Digits
 * pre-tokenizer with individual_digits: each code point Rust's
 * char::is_numeric accepts is a part of its own), then cuts each part
 * with GPT-2's pattern, the ByteLevel pre-tokenizer's:
 *
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * The alternatives are tried in that order at each position and the
 * first that matches wins (a regex's leftmost alternation, not the
 * longest match). The lookahead sees only the part it is in: at a
 * digit's boundary the text ends. "gpt2" is the pattern alone. */
#include <stdlib.h>
#include "bpe_impl.h"
#include "unicode_data.h"

/* The pattern's classes of a code point. */
enum { CLS_SPACE, CLS_LETTER, CLS_NUMBER, CLS_OTHER };

typedef struct cut {
    const char *text;
    const uint32_t *cp;    /* the text's code points */
    const size_t *offsets; /* byte offset of each, and of the end */
    const uint8_t *cls;
    bpe_piece_fn fn;
    void *ctx;
} cut;

static uint8_t class_of(uint32_t cp) {
    if (uc_is_whitespace(cp)) return CLS_SPACE;
    if (uc_is_letter(cp)) return CLS_LETTER;
    if (uc_is_number(cp)) return CLS_NUMBER;
    return CLS_OTHER;
}

/* Length of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0. */
static size_t contraction(const uint32_t *cp, size_t i, size_t end) {
    if (cp[i] != '\'' || i + 1 >= end) return 0;
    uint32_t a = cp[i + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (i + 2 >= end) return 0;
    uint32_t b = cp[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* End of the run of class `cls` starting at i. */
static size_t run_end(const cut *c, size_t i, size_t end, uint8_t cls) {
    while (i < end && c->cls[i] == cls) i++;
    return i;
}

/* The end of the pattern's match at i (i < end). */
static size_t match_end(const cut *c, size_t i, size_t end) {
    size_t k = contraction(c->cp, i, end);
    if (k) return i + k;
    /* " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional space, then
     * a run of one class; a space alone is whitespace, below. */
    size_t start = c->cp[i] == ' ' && i + 1 < end && c->cls[i + 1] != CLS_SPACE ? i + 1 : i;
    if (c->cls[start] != CLS_SPACE) return run_end(c, start, end, c->cls[start]);
    /* "\s+(?!\S)": the whitespace run, less its last code point when a
     * non-space follows (that one starts the next match, " word");
     * "\s+": the run of one that this leaves. */
    size_t stop = run_end(c, i, end, CLS_SPACE);
    return stop < end && stop - i >= 2 ? stop - 1 : stop;
}

/* Cuts the code points [from, to) by the pattern. */
static emily_status cut_part(const cut *c, size_t from, size_t to) {
    for (size_t i = from; i < to;) {
        size_t k = match_end(c, i, to);
        emily_status s = c->fn(c->ctx, c->text + c->offsets[i], c->offsets[k] - c->offsets[i]);
        if (s) return s;
        i = k;
    }
    return EMILY_OK;
}

emily_status bpe_pretokenize(bpe_pre_type pre, const char *text, size_t n, bpe_piece_fn fn, void *ctx) {
    if (n == 0) return EMILY_OK;
    uint32_t *cp = malloc(n * sizeof *cp);
    size_t *offsets = malloc((n + 1) * sizeof *offsets);
    uint8_t *cls = malloc(n);
    emily_status s = EMILY_OK;
    if (!cp || !offsets || !cls) {
        s = emily_error(EMILY_ERR_MEMORY, "bpe: out of memory splitting %zu bytes", n);
        goto done;
    }
    size_t count = 0;
    for (size_t pos = 0; pos < n; count++) {
        offsets[count] = pos;
        cp[count] = uc_utf8_next(text, n, &pos);
        cls[count] = class_of(cp[count]);
    }
    offsets[count] = n;
    cut c = {.text = text, .cp = cp, .offsets = offsets, .cls = cls, .fn = fn, .ctx = ctx};
    if (pre == BPE_PRE_GPT2) {
        s = cut_part(&c, 0, count);
        goto done;
    }
    /* SmolLM2: each digit a part of its own, the text between cut by the
     * pattern. */
    size_t from = 0;
    for (size_t i = 0; i < count && !s; i++) {
        if (!uc_is_split_digit(cp[i])) continue;
        s = cut_part(&c, from, i);
        if (!s) s = fn(ctx, text + offsets[i], offsets[i + 1] - offsets[i]);
        from = i + 1;
    }
    if (!s) s = cut_part(&c, from, count);
done:
    free(cp);
    free(offsets);
    free(cls);
    return s;
}
