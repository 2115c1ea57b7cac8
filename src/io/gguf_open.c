/* emily_gguf_open: map the file and check every byte of its header
 * before anything is handed out, so that the accessors and the loader
 * can trust what they read. The layout (all little-endian):
 *
 *   "GGUF" | u32 version | u64 tensor_count | u64 kv_count
 *   kv_count x  (string key | u32 value_type | value)
 *   tensor_count x (string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset)
 *   padding to general.alignment | tensor data (offsets relative to its start)
 *
 * where a string is u64 length + bytes and an array value is u32 element
 * type + u64 count + elements. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/error_prefix.h"
#include "io/gguf_internal.h"

#define GGUF_DEFAULT_ALIGNMENT 32

/* A read position in the mapping. Every read checks the bytes left. */
typedef struct cursor {
    const emily_gguf *g;
    size_t pos;
} cursor;

static emily_status bad(const emily_gguf *g, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Fails with "gguf: <path>: <message>". */
static emily_status bad(const emily_gguf *g, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    emily_status s = emi_verror_prefixed(EMILY_ERR_ARGUMENT, "gguf", g->path, fmt, ap);
    va_end(ap);
    return s;
}

static size_t left(const cursor *c) { return c->g->size - c->pos; }

/* Takes n bytes (at *p) for `what`, or says the file ends first. */
static emily_status take(cursor *c, uint64_t n, const char *what, const unsigned char **p) {
    if (n > left(c))
        return bad(c->g, "truncated: %s needs %llu bytes at offset %zu, the file has %zu", what, (unsigned long long)n,
                   c->pos, c->g->size);
    *p = c->g->map + c->pos;
    c->pos += (size_t)n;
    return EMILY_OK;
}

static emily_status read_u32(cursor *c, const char *what, uint32_t *v) {
    const unsigned char *p = NULL;
    emily_status s = take(c, 4, what, &p);
    if (!s) *v = gguf_u32(p);
    return s;
}

static emily_status read_u64(cursor *c, const char *what, uint64_t *v) {
    const unsigned char *p = NULL;
    emily_status s = take(c, 8, what, &p);
    if (!s) *v = gguf_u64(p);
    return s;
}

static emily_status read_string(cursor *c, const char *what, const char **str, size_t *len) {
    uint64_t n;
    const unsigned char *p = NULL;
    emily_status s = read_u64(c, what, &n);
    if (!s) s = take(c, n, what, &p);
    if (!s) {
        *str = (const char *)p;
        *len = (size_t)n;
    }
    return s;
}

static bool value_type_known(uint32_t t) { return t <= EMILY_GGUF_FLOAT64; }

/* A string array: one pass over the elements, keeping where each starts
 * (so that element i is found in O(1) later). */
static emily_status index_strings(cursor *c, gguf_kv *kv) {
    /* every element takes at least its 8-byte length: the count is
     * bounded by the bytes left, and so is the index's size */
    if (kv->len > left(c) / 8)
        return bad(c->g, "truncated: the %llu strings of array %.*s do not fit in the %zu bytes left",
                   (unsigned long long)kv->len, (int)kv->key_len, kv->key, left(c));
    kv->strings = malloc((size_t)(kv->len ? kv->len : 1) * sizeof *kv->strings);
    if (!kv->strings) return emily_error(EMILY_ERR_MEMORY, "gguf: %s: out of memory", c->g->path);
    for (uint64_t i = 0; i < kv->len; i++) {
        kv->strings[i] = c->pos;
        const char *str;
        size_t n;
        emily_status s = read_string(c, "a string of an array", &str, &n);
        if (s) return s;
    }
    return EMILY_OK;
}

static emily_status check_bools(const emily_gguf *g, const gguf_kv *kv, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (kv->value[i] > 1)
            return bad(g, "key %.*s: a bool of value %u (0 or 1 only)", (int)kv->key_len, kv->key, kv->value[i]);
    return EMILY_OK;
}

static emily_status read_value(cursor *c, gguf_kv *kv) {
    const emily_gguf *g = c->g;
    uint32_t t;
    emily_status s = read_u32(c, "a value type", &t);
    if (s) return s;
    if (!value_type_known(t)) return bad(g, "key %.*s: unknown value type %u", (int)kv->key_len, kv->key, t);
    kv->type = (emily_gguf_value_type)t;
    if (t == EMILY_GGUF_STRING) {
        const char *str;
        size_t n;
        s = read_string(c, "a string value", &str, &n);
        kv->value = (const unsigned char *)str;
        kv->len = n;
        return s;
    }
    if (t != EMILY_GGUF_ARRAY) {
        s = take(c, gguf_scalar_size(kv->type), "a value", &kv->value);
        if (!s && t == EMILY_GGUF_BOOL) s = check_bools(g, kv, 1);
        return s;
    }
    uint32_t e;
    if ((s = read_u32(c, "an array's element type", &e)) || (s = read_u64(c, "an array's length", &kv->len))) return s;
    if (!value_type_known(e)) return bad(g, "key %.*s: array of unknown element type %u", (int)kv->key_len, kv->key, e);
    if (e == EMILY_GGUF_ARRAY) return bad(g, "key %.*s: arrays of arrays are not supported", (int)kv->key_len, kv->key);
    kv->elem = (emily_gguf_value_type)e;
    kv->value = g->map + c->pos;
    if (e == EMILY_GGUF_STRING) return index_strings(c, kv);
    size_t es = gguf_scalar_size(kv->elem);
    if (kv->len > left(c) / es)
        return bad(g, "truncated: array %.*s of %llu elements of %zu bytes does not fit in the %zu bytes left",
                   (int)kv->key_len, kv->key, (unsigned long long)kv->len, es, left(c));
    c->pos += (size_t)kv->len * es;
    return e == EMILY_GGUF_BOOL ? check_bools(g, kv, kv->len) : EMILY_OK;
}

static const char *kv_name(const void *ctx, size_t i, size_t *len) {
    const gguf_kv *kv = (const gguf_kv *)ctx + i;
    *len = kv->key_len;
    return kv->key;
}

static const char *tensor_name(const void *ctx, size_t i, size_t *len) {
    const gguf_tensor *t = (const gguf_tensor *)ctx + i;
    *len = t->name_len;
    return t->name;
}

/* A zeroed table of `count` entries of `size` bytes for the file's
 * `what` (count 0: one entry), once the count is checked against the
 * bytes left, each entry taking at least min_bytes of the file. */
static emily_status new_table(cursor *c, uint64_t count, size_t min_bytes, size_t size, const char *what,
                              void **table) {
    if (count > left(c) / min_bytes || count >= UINT32_MAX)
        return bad(c->g, "truncated: %llu %s do not fit in the %zu bytes left", (unsigned long long)count, what,
                   left(c));
    *table = calloc((size_t)(count ? count : 1), size);
    if (!*table) return emily_error(EMILY_ERR_MEMORY, "gguf: %s: out of memory", c->g->path);
    return EMILY_OK;
}

/* The name index of a table's count entries; a name that appears twice
 * is an error naming the entry's `kind`. */
static emily_status index_names(const emily_gguf *g, gguf_names *index, size_t count, gguf_name_fn name,
                                const void *table, const char *kind) {
    size_t dup, len;
    if (!gguf_names_build(index, count, name, table, &dup))
        return emily_error(EMILY_ERR_MEMORY, "gguf: %s: out of memory", g->path);
    if (dup == SIZE_MAX) return EMILY_OK;
    const char *twice = name(table, dup, &len);
    return bad(g, "%s %.*s appears twice", kind, (int)len, twice);
}

static emily_status read_metadata(cursor *c, emily_gguf *g, uint64_t count) {
    /* a pair takes at least 8 (key length) + 4 (type) + 1 bytes */
    void *table;
    emily_status s = new_table(c, count, 13, sizeof *g->kvs, "metadata pairs", &table);
    if (s) return s;
    g->kvs = table;
    for (uint64_t i = 0; i < count; i++) {
        gguf_kv *kv = &g->kvs[i];
        g->kv_count = (size_t)i + 1; /* so that close frees its string index */
        s = read_string(c, "a metadata key", &kv->key, &kv->key_len);
        if (!s) s = read_value(c, kv);
        if (s) return s;
    }
    return index_names(g, &g->key_index, g->kv_count, kv_name, g->kvs, "key");
}

static emily_status read_alignment(emily_gguf *g) {
    g->alignment = GGUF_DEFAULT_ALIGNMENT;
    long long i = gguf_names_find(&g->key_index, "general.alignment", 17, kv_name, g->kvs);
    if (i < 0) return EMILY_OK;
    const gguf_kv *kv = &g->kvs[i];
    if (kv->type != EMILY_GGUF_UINT32) return bad(g, "general.alignment is not a u32");
    uint32_t a = gguf_u32(kv->value);
    if (a == 0 || (a & (a - 1)) != 0) return bad(g, "general.alignment %u is not a power of two", a);
    g->alignment = a;
    return EMILY_OK;
}

static emily_status read_tensor_info(cursor *c, gguf_tensor *t) {
    const emily_gguf *g = c->g;
    uint32_t rank, type;
    uint64_t ne[4];
    emily_status s = read_string(c, "a tensor name", &t->name, &t->name_len);
    if (!s) s = read_u32(c, "a tensor's rank", &rank);
    if (s) return s;
    if (rank < 1 || rank > 4) return bad(g, "tensor %.*s: rank %u (1 to 4 only)", (int)t->name_len, t->name, rank);
    for (uint32_t d = 0; d < rank; d++)
        if ((s = read_u64(c, "a tensor's dimension", &ne[d]))) return s;
    if ((s = read_u32(c, "a tensor's type", &type)) || (s = read_u64(c, "a tensor's offset", &t->offset))) return s;
    int64_t block_len, block_bytes;
    if (!gguf_type_layout((int)type, &block_len, &block_bytes) || type > INT32_MAX)
        return bad(g, "tensor %.*s: unknown ggml type %u", (int)t->name_len, t->name, type);
    t->type = (int)type;
    t->rank = (int)rank;
    uint64_t count = 1;
    for (uint32_t d = 0; d < rank; d++) {
        if (ne[d] > (uint64_t)EMILY_MAX_ELEMENTS)
            return bad(g, "tensor %.*s: dimension %u is %llu (negative or too large)", (int)t->name_len, t->name, d,
                       (unsigned long long)ne[d]);
        if (ne[d] && count > (uint64_t)EMILY_MAX_ELEMENTS / ne[d])
            return bad(g, "tensor %.*s: more than 2^59 elements", (int)t->name_len, t->name);
        count *= ne[d] ? ne[d] : 1;
        t->shape[rank - 1 - d] = (int64_t)ne[d];
    }
    for (uint32_t d = 0; d < rank; d++)
        if (ne[d] == 0) count = 0;
    if (ne[0] % (uint64_t)block_len)
        return bad(g, "tensor %.*s: innermost dimension %llu is not a multiple of %s's block of %lld", (int)t->name_len,
                   t->name, (unsigned long long)ne[0], emily_gguf_type_name(t->type), (long long)block_len);
    /* count / block_len blocks of at most 292 bytes: below 2^59 * 10, no overflow */
    t->nbytes = count / (uint64_t)block_len * (uint64_t)block_bytes;
    if (t->offset % g->alignment)
        return bad(g, "tensor %.*s: offset %llu is not a multiple of the alignment %llu", (int)t->name_len, t->name,
                   (unsigned long long)t->offset, (unsigned long long)g->alignment);
    return EMILY_OK;
}

static emily_status read_tensors(cursor *c, emily_gguf *g, uint64_t count) {
    /* an entry takes at least 8 (name) + 4 (rank) + 8 (one dim) + 4 + 8 bytes */
    void *table;
    emily_status s = new_table(c, count, 32, sizeof *g->tensors, "tensor entries", &table);
    if (s) return s;
    g->tensors = table;
    for (uint64_t i = 0; i < count; i++)
        if ((s = read_tensor_info(c, &g->tensors[i]))) return s;
    g->tensor_count = (size_t)count;
    return index_names(g, &g->tensor_index, g->tensor_count, tensor_name, g->tensors, "tensor");
}

/* The data section starts at the first multiple of the alignment after
 * the header; every tensor must lie inside the file. */
static emily_status check_extents(emily_gguf *g, size_t header_end) {
    uint64_t a = g->alignment;
    g->data_start = (header_end + a - 1) / a * a; /* header_end < 2^63: no overflow */
    uint64_t room = g->data_start < g->size ? g->size - g->data_start : 0;
    for (size_t i = 0; i < g->tensor_count; i++) {
        gguf_tensor *t = &g->tensors[i];
        uint64_t start = t->offset;
        if (start > room || t->nbytes > room - start)
            return bad(g, "tensor %.*s: its %llu bytes at data offset %llu end past the file's %zu bytes",
                       (int)t->name_len, t->name, (unsigned long long)t->nbytes, (unsigned long long)t->offset,
                       g->size);
        t->offset = g->data_start + start;
    }
    return EMILY_OK;
}

static emily_status parse(emily_gguf *g) {
    cursor c = {g, 0};
    uint32_t magic, version;
    uint64_t tensors, kvs;
    emily_status s = read_u32(&c, "the magic", &magic);
    if (s) return s;
    if (magic != 0x46554747u) return bad(g, "not a GGUF file (no \"GGUF\" magic)");
    if ((s = read_u32(&c, "the version", &version))) return s;
    if (version == 0x02000000u || version == 0x03000000u)
        return bad(g, "a big-endian GGUF file (only little-endian files are read)");
    if (version != 2 && version != 3) return bad(g, "GGUF version %u is not supported (2 and 3 are)", version);
    g->version = version;
    if ((s = read_u64(&c, "the tensor count", &tensors)) || (s = read_u64(&c, "the metadata count", &kvs))) return s;
    if ((s = read_metadata(&c, g, kvs)) || (s = read_alignment(g)) || (s = read_tensors(&c, g, tensors))) return s;
    return check_extents(g, c.pos);
}

emily_status emily_gguf_open(const char *path, emily_gguf **out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "gguf_open: out is NULL");
    *out = NULL;
    if (!path) return emily_error(EMILY_ERR_ARGUMENT, "gguf_open: path is NULL");
    emily_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = strdup(path))) {
        free(g);
        return emily_error(EMILY_ERR_MEMORY, "gguf: %s: out of memory", path);
    }
    emily_status s = EMILY_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        s = bad(g, "cannot be opened");
    } else if (!S_ISREG(st.st_mode)) {
        s = bad(g, "not a regular file");
    } else if (st.st_size < 4) {
        s = bad(g, "truncated: %lld bytes, too short for the magic", (long long)st.st_size);
    } else {
        g->size = (size_t)st.st_size;
        void *map = mmap(NULL, g->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            g->size = 0;
            s = bad(g, "cannot be mapped");
        } else {
            g->map = map;
        }
    }
    if (fd >= 0) close(fd);
    if (!s) s = parse(g);
    if (s) {
        emily_gguf_close(g);
        return s;
    }
    *out = g;
    return EMILY_OK;
}

void emily_gguf_close(emily_gguf *g) {
    if (!g) return;
    if (g->map) munmap((void *)g->map, g->size);
    for (size_t i = 0; i < g->kv_count; i++) free(g->kvs[i].strings);
    free(g->kvs);
    free(g->tensors);
    gguf_names_free(&g->key_index);
    gguf_names_free(&g->tensor_index);
    free(g->path);
    free(g);
}
