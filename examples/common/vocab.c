/* Open addressing over a power-of-two table of slots; each slot points
 * at a token (text and id) kept in an array in insertion order, and a
 * second array maps ids back to tokens for printing. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "vocab.h"

typedef struct vocab_token_entry {
    char *text; /* NUL-terminated */
    size_t len;
    int32_t id;
    uint64_t hash;
} vocab_token_entry;

struct vocab {
    vocab_token_entry *tokens;
    size_t count, cap;
    int32_t *slots; /* index into tokens, -1 when empty */
    size_t nslots;  /* a power of two, at least twice count */
    int32_t *by_id; /* token index of each id, -1 when none */
    int32_t id_limit, by_id_cap;
};

/* FNV-1a over prefix then text, so "##" + piece needs no copy. */
static uint64_t hash_bytes(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static uint64_t hash_token(const char *prefix, const char *text, size_t n) {
    uint64_t h = 14695981039346656037ULL;
    if (prefix) h = hash_bytes(h, prefix, strlen(prefix));
    return hash_bytes(h, text, n);
}

static emily_status oom(void) { return emily_error(EMILY_ERR_MEMORY, "vocab: out of memory"); }

emily_status vocab_new(size_t expected, vocab **out) {
    *out = NULL;
    vocab *v = calloc(1, sizeof *v);
    if (!v) return oom();
    v->nslots = 64;
    while (v->nslots < 2 * expected && v->nslots < ((size_t)1 << 30)) v->nslots *= 2;
    v->slots = malloc(v->nslots * sizeof *v->slots);
    if (!v->slots) {
        free(v);
        return oom();
    }
    memset(v->slots, 0xFF, v->nslots * sizeof *v->slots);
    *out = v;
    return EMILY_OK;
}

void vocab_free(vocab *v) {
    if (!v) return;
    for (size_t i = 0; i < v->count; i++) free(v->tokens[i].text);
    free(v->tokens);
    free(v->slots);
    free(v->by_id);
    free(v);
}

static bool same_token(const vocab_token_entry *t, const char *prefix, const char *text, size_t n) {
    size_t p = prefix ? strlen(prefix) : 0;
    return t->len == p + n && memcmp(t->text, prefix ? prefix : "", p) == 0 && memcmp(t->text + p, text, n) == 0;
}

/* The slot holding prefix + text, or the empty slot where it would go. */
static size_t probe(const vocab *v, uint64_t h, const char *prefix, const char *text, size_t n) {
    size_t mask = v->nslots - 1, i = (size_t)h & mask;
    while (v->slots[i] >= 0) {
        const vocab_token_entry *t = &v->tokens[v->slots[i]];
        if (t->hash == h && same_token(t, prefix, text, n)) break;
        i = (i + 1) & mask;
    }
    return i;
}

static emily_status grow_slots(vocab *v) {
    size_t nslots = v->nslots * 2;
    int32_t *slots = malloc(nslots * sizeof *slots);
    if (!slots) return oom();
    memset(slots, 0xFF, nslots * sizeof *slots);
    for (size_t k = 0; k < v->count; k++) {
        size_t i = (size_t)v->tokens[k].hash & (nslots - 1);
        while (slots[i] >= 0) i = (i + 1) & (nslots - 1);
        slots[i] = (int32_t)k;
    }
    free(v->slots);
    v->slots = slots;
    v->nslots = nslots;
    return EMILY_OK;
}

static emily_status map_id(vocab *v, int32_t id, int32_t token) {
    if (id >= v->by_id_cap) {
        int32_t cap = v->by_id_cap ? v->by_id_cap : 1024;
        while (cap <= id) cap *= 2;
        int32_t *by_id = realloc(v->by_id, (size_t)cap * sizeof *by_id);
        if (!by_id) return oom();
        for (int32_t i = v->by_id_cap; i < cap; i++) by_id[i] = -1;
        v->by_id = by_id;
        v->by_id_cap = cap;
    }
    if (v->by_id[id] >= 0)
        return emily_error(EMILY_ERR_ARGUMENT, "vocab: id %d is given to both \"%s\" and another token", (int)id,
                           v->tokens[v->by_id[id]].text);
    v->by_id[id] = token;
    if (id >= v->id_limit) v->id_limit = id + 1;
    return EMILY_OK;
}

emily_status vocab_add(vocab *v, const char *text, size_t n, int32_t id) {
    if (id < 0 || id > VOCAB_MAX_ID)
        return emily_error(EMILY_ERR_ARGUMENT, "vocab: token id %d is outside [0, %d]", (int)id, VOCAB_MAX_ID);
    if (v->count >= (size_t)INT32_MAX - 1) return emily_error(EMILY_ERR_ARGUMENT, "vocab: too many tokens");
    uint64_t h = hash_token(NULL, text, n);
    size_t slot = probe(v, h, NULL, text, n);
    if (v->slots[slot] >= 0) return EMILY_OK; /* a repeated token keeps its first id */
    if (v->count == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        vocab_token_entry *tokens = realloc(v->tokens, cap * sizeof *tokens);
        if (!tokens) return oom();
        v->tokens = tokens;
        v->cap = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy) return oom();
    memcpy(copy, text, n);
    copy[n] = '\0';
    int32_t index = (int32_t)v->count;
    emily_status s = map_id(v, id, index);
    if (s) {
        free(copy);
        return s;
    }
    v->tokens[index] = (vocab_token_entry){copy, n, id, h};
    v->count++;
    v->slots[slot] = index;
    return v->count * 2 > v->nslots ? grow_slots(v) : EMILY_OK;
}

int32_t vocab_find(const vocab *v, const char *prefix, const char *text, size_t n) {
    size_t slot = probe(v, hash_token(prefix, text, n), prefix, text, n);
    return v->slots[slot] >= 0 ? v->tokens[v->slots[slot]].id : -1;
}

const char *vocab_token(const vocab *v, int32_t id) {
    if (id < 0 || id >= v->by_id_cap || v->by_id[id] < 0) return NULL;
    return v->tokens[v->by_id[id]].text;
}

size_t vocab_count(const vocab *v) { return v->count; }
int32_t vocab_id_limit(const vocab *v) { return v->id_limit; }
