/* The merges on one piece: its bytes start as one symbol each (the
 * byte's token); the adjacent pair whose merge has the lowest rank is
 * joined, the leftmost of equals first, until no pair merges. Symbols
 * are a linked list and the candidate pairs a min-heap, so a piece of n
 * bytes costs O(n log n), not the O(n^2) of rescanning. A popped pair
 * that no longer holds (one side was merged since) is skipped, as in
 * Hugging Face's Word::merge_all. */
#include <stdlib.h>
#include "bpe_impl.h"

typedef struct bpe_candidate {
    int32_t rank, merged;
    size_t pos; /* the left symbol (its first byte's index) */
} bpe_candidate;

static bool before(const bpe_candidate *a, const bpe_candidate *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static emily_status oom(void) { return emily_error(EMILY_ERR_MEMORY, "bpe: out of memory"); }

static emily_status heap_push(bpe_word_scratch *s, size_t *count, bpe_candidate c) {
    if (*count == s->heap_cap) {
        size_t cap = s->heap_cap ? 2 * s->heap_cap : 64;
        bpe_candidate *heap = realloc(s->heap, cap * sizeof *heap);
        if (!heap) return oom();
        s->heap = heap;
        s->heap_cap = cap;
    }
    size_t i = (*count)++;
    while (i > 0 && before(&c, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = c;
    return EMILY_OK;
}

static bpe_candidate heap_pop(bpe_word_scratch *s, size_t *count) {
    bpe_candidate top = s->heap[0], last = s->heap[--*count];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= *count) break;
        if (child + 1 < *count && before(&s->heap[child + 1], &s->heap[child])) child++;
        if (!before(&s->heap[child], &last)) break;
        s->heap[i] = s->heap[child];
        i = child;
    }
    if (*count) s->heap[i] = last;
    return top;
}

/* Pushes the pair that starts at symbol `left`, if it merges. */
static emily_status consider(const bpe_tokenizer *t, bpe_word_scratch *s, size_t *count, int32_t left) {
    int32_t right = left >= 0 ? s->next[left] : -1;
    if (right < 0) return EMILY_OK;
    int32_t merged = -1, rank = bpe_merges_find(t->merges, s->sym[left], s->sym[right], &merged);
    if (rank < 0) return EMILY_OK;
    return heap_push(s, count, (bpe_candidate){rank, merged, (size_t)left});
}

void bpe_word_scratch_free(bpe_word_scratch *s) {
    free(s->sym);
    free(s->prev);
    free(s->next);
    free(s->heap);
    *s = (bpe_word_scratch){0};
}

emily_status bpe_word(const bpe_tokenizer *t, const char *piece, size_t len, bpe_word_scratch *s, bpe_ids *out) {
    if (len > INT32_MAX) return emily_error(EMILY_ERR_ARGUMENT, "bpe: a piece of %zu bytes", len);
    if (len > s->cap) {
        int32_t *sym = realloc(s->sym, len * sizeof *sym);
        if (sym) s->sym = sym;
        int32_t *prev = sym ? realloc(s->prev, len * sizeof *prev) : NULL;
        if (prev) s->prev = prev;
        int32_t *next = prev ? realloc(s->next, len * sizeof *next) : NULL;
        if (!next) return oom();
        s->next = next;
        s->cap = len;
    }
    /* One symbol per byte that has a token (or becomes unk_id); a byte
     * with neither is left out, and its neighbours meet. */
    int32_t n = 0;
    for (size_t i = 0; i < len; i++) {
        int32_t id = t->byte_token[(unsigned char)piece[i]];
        if (id < 0) id = t->opts.unk_id;
        if (id < 0) continue;
        s->sym[n] = id;
        s->prev[n] = n - 1;
        s->next[n] = n + 1;
        n++;
    }
    if (n == 0) return EMILY_OK;
    s->next[n - 1] = -1;
    size_t count = 0;
    emily_status st = EMILY_OK;
    for (int32_t i = 0; i + 1 < n && !st; i++) st = consider(t, s, &count, i);
    while (!st && count) {
        bpe_candidate c = heap_pop(s, &count);
        int32_t left = (int32_t)c.pos, right = s->next[left];
        /* Stale: the left symbol was merged into its own left neighbour
         * (sym -1), or either side changed since the pair was pushed. */
        if (s->sym[left] < 0 || right < 0) continue;
        int32_t merged = -1;
        if (bpe_merges_find(t->merges, s->sym[left], s->sym[right], &merged) != c.rank || merged != c.merged) continue;
        s->sym[left] = merged;
        s->sym[right] = -1;
        s->next[left] = s->next[right];
        if (s->next[right] >= 0) s->prev[s->next[right]] = left;
        st = consider(t, s, &count, s->prev[left]);
        if (!st) st = consider(t, s, &count, left);
    }
    for (int32_t i = 0; i >= 0 && !st; i = s->next[i]) st = bpe_ids_push(out, s->sym[i]);
    return st;
}
