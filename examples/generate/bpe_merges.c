/* The merge table: open addressing over a power-of-two array, keyed by
 * the pair of token ids, holding the merge's rank and merged token. */
#include <stdlib.h>
#include "bpe_impl.h"

typedef struct merge_slot {
    int32_t left, right; /* left -1: empty */
    int32_t rank, merged;
} merge_slot;

struct bpe_merge_table {
    merge_slot *slots;
    size_t mask, count;
};

static size_t pair_hash(int32_t left, int32_t right) {
    uint64_t h = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    h ^= h >> 33; /* a 64-bit mix (murmur's finalizer) */
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    return (size_t)h;
}

static emily_status oom(void) { return emily_error(EMILY_ERR_MEMORY, "bpe: out of memory"); }

emily_status bpe_merges_new(size_t expected, bpe_merge_table **out) {
    *out = NULL;
    size_t n = 64;
    while (n < 2 * expected) {
        if (n > ((size_t)1 << 40)) return oom();
        n *= 2;
    }
    bpe_merge_table *m = calloc(1, sizeof *m);
    merge_slot *slots = m ? malloc(n * sizeof *slots) : NULL;
    if (!slots) {
        free(m);
        return oom();
    }
    for (size_t i = 0; i < n; i++) slots[i].left = -1;
    m->slots = slots;
    m->mask = n - 1;
    *out = m;
    return EMILY_OK;
}

void bpe_merges_free(bpe_merge_table *m) {
    if (!m) return;
    free(m->slots);
    free(m);
}

static size_t probe(const bpe_merge_table *m, int32_t left, int32_t right) {
    size_t i = pair_hash(left, right) & m->mask;
    while (m->slots[i].left >= 0 && (m->slots[i].left != left || m->slots[i].right != right)) i = (i + 1) & m->mask;
    return i;
}

static emily_status grow(bpe_merge_table *m) {
    size_t n = (m->mask + 1) * 2;
    merge_slot *slots = malloc(n * sizeof *slots);
    if (!slots) return oom();
    for (size_t i = 0; i < n; i++) slots[i].left = -1;
    merge_slot *old = m->slots;
    size_t old_n = m->mask + 1;
    m->slots = slots;
    m->mask = n - 1;
    for (size_t i = 0; i < old_n; i++)
        if (old[i].left >= 0) m->slots[probe(m, old[i].left, old[i].right)] = old[i];
    free(old);
    return EMILY_OK;
}

emily_status bpe_merges_add(bpe_merge_table *m, int32_t left, int32_t right, int32_t rank, int32_t merged,
                            bool *added) {
    *added = false;
    if (left < 0 || right < 0) return emily_error(EMILY_ERR_ARGUMENT, "bpe: negative merge id");
    size_t i = probe(m, left, right);
    if (m->slots[i].left >= 0) return EMILY_OK;
    m->slots[i] = (merge_slot){left, right, rank, merged};
    m->count++;
    *added = true;
    return 2 * m->count > m->mask + 1 ? grow(m) : EMILY_OK;
}

int32_t bpe_merges_find(const bpe_merge_table *m, int32_t left, int32_t right, int32_t *merged) {
    const merge_slot *s = &m->slots[probe(m, left, right)];
    if (s->left < 0) return -1;
    *merged = s->merged;
    return s->rank;
}
