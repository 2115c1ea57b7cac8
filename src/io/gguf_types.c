/* ggml's tensor types (the numbers GGUF files carry, their names and
 * block layouts), and the hashed name tables of the reader. */
#include <stdlib.h>
#include <string.h>
#include "io/gguf_internal.h"

typedef struct type_layout {
    const char *name;
    int64_t block_len;   /* elements per block */
    int64_t block_bytes; /* bytes per block */
} type_layout;

/* Indexed by type number; a NULL name is a number ggml retired or never
 * used. Only the layout is needed for the types Emily does not load: it
 * is what lets the reader check their extents and list them. */
static const type_layout layouts[] = {
    [0] = {"F32", 1, 4},         [1] = {"F16", 1, 2},         [2] = {"Q4_0", 32, 18},      [3] = {"Q4_1", 32, 20},
    [6] = {"Q5_0", 32, 22},      [7] = {"Q5_1", 32, 24},      [8] = {"Q8_0", 32, 34},      [9] = {"Q8_1", 32, 40},
    [10] = {"Q2_K", 256, 84},    [11] = {"Q3_K", 256, 110},   [12] = {"Q4_K", 256, 144},   [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210},   [15] = {"Q8_K", 256, 292},   [16] = {"IQ2_XXS", 256, 66}, [17] = {"IQ2_XS", 256, 74},
    [18] = {"IQ3_XXS", 256, 98}, [19] = {"IQ1_S", 256, 50},   [20] = {"IQ4_NL", 32, 18},   [21] = {"IQ3_S", 256, 110},
    [22] = {"IQ2_S", 256, 82},   [23] = {"IQ4_XS", 256, 136}, [24] = {"I8", 1, 1},         [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},        [27] = {"I64", 1, 8},        [28] = {"F64", 1, 8},        [29] = {"IQ1_M", 256, 56},
    [30] = {"BF16", 1, 2},       [34] = {"TQ1_0", 256, 54},   [35] = {"TQ2_0", 256, 66},   [39] = {"MXFP4", 32, 17},
    [40] = {"NVFP4", 64, 36},    [41] = {"Q1_0", 128, 18},
};

bool gguf_type_layout(int type, int64_t *block_len, int64_t *block_bytes) {
    if (type < 0 || (size_t)type >= sizeof layouts / sizeof *layouts || !layouts[type].name) return false;
    *block_len = layouts[type].block_len;
    *block_bytes = layouts[type].block_bytes;
    return true;
}

const char *emily_gguf_type_name(int ggml_type) {
    if (ggml_type < 0 || (size_t)ggml_type >= sizeof layouts / sizeof *layouts) return NULL;
    return layouts[ggml_type].name;
}

size_t gguf_scalar_size(emily_gguf_value_type t) {
    switch (t) {
    case EMILY_GGUF_UINT8:
    case EMILY_GGUF_INT8:
    case EMILY_GGUF_BOOL: return 1;
    case EMILY_GGUF_UINT16:
    case EMILY_GGUF_INT16: return 2;
    case EMILY_GGUF_UINT32:
    case EMILY_GGUF_INT32:
    case EMILY_GGUF_FLOAT32: return 4;
    case EMILY_GGUF_UINT64:
    case EMILY_GGUF_INT64:
    case EMILY_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

/* FNV-1a, 64-bit. */
uint64_t gguf_hash(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static bool same_name(const char *a, size_t na, const char *b, size_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

bool gguf_names_build(gguf_names *t, size_t count, gguf_name_fn get, const void *ctx, size_t *dup) {
    *dup = SIZE_MAX;
    size_t cap = 16;
    while (cap < 2 * count) cap *= 2; /* count is bounded by the file's size */
    t->slots = calloc(cap, sizeof *t->slots);
    if (!t->slots) return false;
    t->mask = cap - 1;
    for (size_t i = 0; i < count; i++) {
        size_t n;
        const char *name = get(ctx, i, &n);
        size_t at = (size_t)gguf_hash(name, n) & t->mask;
        while (t->slots[at]) {
            size_t m;
            const char *other = get(ctx, t->slots[at] - 1, &m);
            if (same_name(name, n, other, m)) {
                *dup = i;
                return true;
            }
            at = (at + 1) & t->mask;
        }
        t->slots[at] = (uint32_t)(i + 1);
    }
    return true;
}

long long gguf_names_find(const gguf_names *t, const char *name, size_t n, gguf_name_fn get, const void *ctx) {
    if (!t->slots) return -1;
    size_t at = (size_t)gguf_hash(name, n) & t->mask;
    while (t->slots[at]) {
        size_t m;
        const char *other = get(ctx, t->slots[at] - 1, &m);
        if (same_name(name, n, other, m)) return (long long)t->slots[at] - 1;
        at = (at + 1) & t->mask;
    }
    return -1;
}

void gguf_names_free(gguf_names *t) {
    free(t->slots);
    t->slots = NULL;
}
