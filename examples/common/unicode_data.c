/* Lookups in the generated Unicode tables, plus the few rules that are
 * arithmetic or short lists rather than tables. */
#include "unicode_data.h"

/* Index of the entry whose code point (first member) is cp, or -1:
 * binary search over a table sorted by it. `stride` is the entry size. */
static int find_entry(const void *table, int count, size_t stride, uint32_t cp) {
    int lo = 0, hi = count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uint32_t key = *(const uint32_t *)(const void *)((const char *)table + (size_t)mid * stride);
        if (key == cp) return mid;
        if (key < cp) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

unsigned uc_class(uint32_t cp) {
    int lo = 0, hi = uc_class_range_count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const uc_class_range *r = &uc_class_ranges[mid];
        if (cp < r->first) hi = mid - 1;
        else if (cp > r->last) lo = mid + 1;
        else return r->cls;
    }
    return 0;
}

bool uc_is_whitespace(uint32_t cp) {
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
    }
}

bool uc_is_letter(uint32_t cp) { return (uc_class(cp) & UC_LETTER) != 0; }
bool uc_is_number(uint32_t cp) { return (uc_class(cp) & UC_NUMBER) != 0; }
bool uc_is_split_digit(uint32_t cp) { return (uc_class(cp) & UC_DIGIT_SPLIT) != 0; }

bool uc_is_cjk(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

bool uc_is_punctuation(uint32_t cp) {
    if (cp < 0x80)
        return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
               (cp >= 0x7B && cp <= 0x7E);
    return (uc_class(cp) & UC_PUNCT) != 0;
}

/* Hangul syllables decompose by arithmetic (Unicode 3.12): a leading
 * consonant, a vowel and, for some, a trailing consonant. */
enum {
    HANGUL_S = 0xAC00,
    HANGUL_L = 0x1100,
    HANGUL_V = 0x1161,
    HANGUL_T = 0x11A7,
    HANGUL_VCOUNT = 21,
    HANGUL_TCOUNT = 28,
    HANGUL_COUNT = 11172
};

int uc_strip_accents(uint32_t cp, uint32_t out[UC_MAX_STRIPPED]) {
    if (cp < 0xC0) { /* nothing below U+00C0 decomposes or is a mark */
        out[0] = cp;
        return 1;
    }
    if (cp >= HANGUL_S && cp < HANGUL_S + HANGUL_COUNT) {
        uint32_t s = cp - HANGUL_S, t = s % HANGUL_TCOUNT;
        out[0] = HANGUL_L + s / (HANGUL_VCOUNT * HANGUL_TCOUNT);
        out[1] = HANGUL_V + (s % (HANGUL_VCOUNT * HANGUL_TCOUNT)) / HANGUL_TCOUNT;
        if (t == 0) return 2;
        out[2] = HANGUL_T + t;
        return 3;
    }
    if (uc_class(cp) & UC_NONSPACING_MARK) return 0;
    int i = find_entry(uc_strip_entries, uc_strip_count, sizeof uc_strip_entries[0], cp);
    if (i < 0) {
        out[0] = cp;
        return 1;
    }
    const uc_strip_entry *e = &uc_strip_entries[i];
    for (int k = 0; k < e->len; k++) out[k] = uc_strip_pool[e->offset + k];
    return e->len;
}

int uc_lowercase(uint32_t cp, uint32_t out[2]) {
    if (cp < 0x80) {
        out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
        return 1;
    }
    int i = find_entry(uc_lower_entries, uc_lower_count, sizeof uc_lower_entries[0], cp);
    if (i < 0) {
        out[0] = cp;
        return 1;
    }
    out[0] = uc_lower_entries[i].lower0;
    out[1] = uc_lower_entries[i].lower1;
    return out[1] ? 2 : 1;
}

uint32_t uc_utf8_next(const char *text, size_t n, size_t *pos) {
    const unsigned char *s = (const unsigned char *)text + *pos;
    size_t left = n - *pos;
    unsigned char b = s[0];
    int len;
    uint32_t cp, min;
    if (b < 0x80) {
        *pos += 1;
        return b;
    } else if (b >= 0xC2 && b <= 0xDF) {
        len = 2, cp = b & 0x1F, min = 0x80;
    } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3, cp = b & 0x0F, min = 0x800;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4, cp = b & 0x07, min = 0x10000;
    } else {
        *pos += 1;
        return 0xFFFD;
    }
    if ((size_t)len > left) {
        *pos += 1;
        return 0xFFFD;
    }
    for (int k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) {
            *pos += 1;
            return 0xFFFD;
        }
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *pos += 1;
        return 0xFFFD;
    }
    *pos += (size_t)len;
    return cp;
}

int uc_utf8_put(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The well-formed start of a UTF-8 sequence at s[0, avail): how many of
 * its bytes are there (0 when s[0] starts none; else 1 to *need), and
 * in *need how many it takes. The second byte's range depends on the
 * first (Unicode's table 3-7: no overlong forms, surrogates or code
 * points past U+10FFFF). */
static size_t utf8_prefix(const unsigned char *s, size_t avail, size_t *need) {
    unsigned char b = s[0], lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) *need = 2;
    else if (b >= 0xE0 && b <= 0xEF) *need = 3;
    else if (b >= 0xF0 && b <= 0xF4) *need = 4;
    else return 0;
    if (b == 0xE0) lo = 0xA0;
    else if (b == 0xED) hi = 0x9F;
    else if (b == 0xF0) lo = 0x90;
    else if (b == 0xF4) hi = 0x8F;
    size_t k = 1;
    for (; k < *need && k < avail; k++) {
        if (s[k] < lo || s[k] > hi) break;
        lo = 0x80, hi = 0xBF;
    }
    return k;
}

uint32_t uc_utf8_next_lossy(const char *text, size_t n, size_t *pos) {
    const unsigned char *s = (const unsigned char *)text + *pos;
    if (s[0] < 0x80) {
        *pos += 1;
        return s[0];
    }
    size_t need = 0, have = utf8_prefix(s, n - *pos, &need);
    if (have == need) return uc_utf8_next(text, n, pos); /* well-formed */
    *pos += have ? have : 1;
    return 0xFFFD;
}

size_t uc_utf8_incomplete_tail(const char *text, size_t n) {
    const unsigned char *s = (const unsigned char *)text;
    /* Back over continuation bytes to the last byte that is not one. */
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        if ((s[n - k] & 0xC0) == 0x80) continue;
        size_t need = 0, have = utf8_prefix(s + n - k, k, &need);
        return have == k && need > k ? k : 0;
    }
    return 0;
}
