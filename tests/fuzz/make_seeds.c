/* Seed corpora for the fuzz targets, from the conformance corpus files.
 *
 *   make_seeds OUTDIR EVERY FILE.jsonl[.gz]...
 *
 * From each file it takes the first 4 cases of every op and every
 * EVERY-th line, skipping lines whose case is over 4 KiB, and writes
 *   OUTDIR/json/NAME-LINE   the case as one JSON line (op, out, args; the
 *                           result and tag left out): fuzz_dispatch and
 *                           fuzz_json_values
 *   OUTDIR/terms/NAME-LINE  the same case as Emily.Native.dispatch/6 gets
 *                           it, {op, out, args} in the external term
 *                           format: fuzz_terms (tensors as
 *                           %Nx.Tensor{data: %Nx.BinaryBackend{}}, keyword
 *                           lists for options, %Complex{} for complex)
 * a few hand-made terms (tensor resources, types, shapes, devices) in
 * OUTDIR/terms, and libFuzzer dictionaries OUTDIR/json.dict and
 * OUTDIR/terms.dict. Generated: never committed. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "corpus_file.h"

#define MAX_CASE 4096

typedef struct buf {
    unsigned char *p;
    size_t n, cap;
    bool bad;
} buf;

static void put(buf *b, const void *data, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "make_seeds: out of memory\n");
            exit(1);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}
static void put8(buf *b, unsigned v) {
    unsigned char c = (unsigned char)v;
    put(b, &c, 1);
}
static void put_be(buf *b, uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; i--) put8(b, (unsigned)(v >> (8 * i)) & 0xff);
}

/* ---- external term format ---- */

static void e_atom(buf *b, const char *s) {
    size_t n = strlen(s);
    if (n < 256) {
        put8(b, 119);
        put8(b, (unsigned)n);
    } /* SMALL_ATOM_UTF8_EXT */
    else {
        put8(b, 118);
        put_be(b, n, 2);
    } /* ATOM_UTF8_EXT */
    put(b, s, n);
}
static void e_big(buf *b, bool neg, uint64_t mag) {
    unsigned char d[8];
    int n = 0;
    for (; mag; mag >>= 8) d[n++] = (unsigned char)(mag & 0xff);
    put8(b, 110); /* SMALL_BIG_EXT */
    put8(b, (unsigned)n);
    put8(b, neg ? 1 : 0);
    put(b, d, (size_t)n);
}
static void e_int(buf *b, int64_t v) {
    if (v >= 0 && v <= 255) {
        put8(b, 97);
        put8(b, (unsigned)v);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        put8(b, 98);
        put_be(b, (uint32_t)(int32_t)v, 4);
    } else e_big(b, v < 0, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}
static void e_float(buf *b, double f) {
    uint64_t bits;
    memcpy(&bits, &f, sizeof bits);
    put8(b, 70); /* NEW_FLOAT_EXT */
    put_be(b, bits, 8);
}
static void e_tuple(buf *b, size_t n) {
    if (n < 256) {
        put8(b, 104);
        put8(b, (unsigned)n);
    } else {
        put8(b, 105);
        put_be(b, n, 4);
    }
}
static void e_list(buf *b, size_t n) {
    put8(b, 108);
    put_be(b, n, 4);
} /* then n items and a tail */
static void e_nil(buf *b) { put8(b, 106); }
static void e_map(buf *b, size_t n) {
    put8(b, 116);
    put_be(b, n, 4);
}
static void e_binary(buf *b, const unsigned char *d, size_t n) {
    put8(b, 109);
    put_be(b, n, 4);
    put(b, d, n);
}
static void e_ref(buf *b, uint32_t id) { /* NEWER_REFERENCE_EXT */
    put8(b, 90);
    put_be(b, 3, 2);
    e_atom(b, "nonode@nohost");
    put_be(b, 0, 4);
    put_be(b, id, 4);
    put_be(b, 0x1234, 4);
    put_be(b, 0x5678, 4);
}

/* ---- corpus JSON to terms ---- */

static unsigned char *unbase64(const char *s, size_t *n) {
    static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char *out = malloc(strlen(s) / 4 * 3 + 3), *o = out;
    if (!out) exit(1);
    uint32_t acc = 0;
    int bits = 0;
    for (; *s; s++) {
        const char *p = strchr(B64, *s);
        if (!p) continue;
        acc = acc << 6 | (uint32_t)(p - B64);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *o++ = (unsigned char)(acc >> bits & 0xff);
        }
    }
    *n = (size_t)(o - out);
    return out;
}

/* "f32" -> {:f, 32}, "bf16" -> {:bf, 16} */
static void e_type(buf *b, const char *name) {
    char kind[8] = "";
    size_t k = 0;
    while (name && name[k] >= 'a' && name[k] <= 'z' && k < 7) {
        kind[k] = name[k];
        k++;
    }
    kind[k] = 0;
    if (!name || !name[k]) {
        b->bad = true;
        return;
    }
    e_tuple(b, 2);
    e_atom(b, kind);
    e_int(b, strtol(name + k, NULL, 10));
}
static void e_shape(buf *b, const json_t *shape) {
    e_tuple(b, json_array_size(shape));
    for (size_t i = 0; i < json_array_size(shape); i++) e_int(b, json_integer_value(json_array_get(shape, i)));
}
/* %Nx.Tensor{type:, shape:} and, for an argument, data: */
static void e_tensor(buf *b, const json_t *t, bool with_data) {
    e_map(b, with_data ? 4 : 3);
    e_atom(b, "__struct__");
    e_atom(b, "Elixir.Nx.Tensor");
    e_atom(b, "type");
    e_type(b, json_string_value(json_object_get(t, "type")));
    e_atom(b, "shape");
    e_shape(b, json_object_get(t, "shape"));
    if (with_data) {
        size_t n;
        const char *d = json_string_value(json_object_get(t, "data"));
        unsigned char *bytes = unbase64(d ? d : "", &n);
        e_atom(b, "data");
        e_map(b, 2);
        e_atom(b, "__struct__");
        e_atom(b, "Elixir.Nx.BinaryBackend");
        e_atom(b, "state");
        e_binary(b, bytes, n);
        free(bytes);
    }
}

static void e_value(buf *b, const json_t *j);

static void e_number_part(buf *b, const json_t *j) {
    if (json_is_object(j) && json_object_get(j, "atom")) e_atom(b, json_string_value(json_object_get(j, "atom")));
    else e_value(b, j);
}

static void e_value(buf *b, const json_t *j) {
    const json_t *x;
    if (json_is_null(j)) e_atom(b, "nil");
    else if (json_is_true(j)) e_atom(b, "true");
    else if (json_is_false(j)) e_atom(b, "false");
    else if (json_is_integer(j)) e_int(b, json_integer_value(j));
    else if (json_is_real(j)) e_float(b, json_real_value(j));
    else if (json_is_array(j)) {
        size_t n = json_array_size(j);
        if (n) {
            e_list(b, n);
            for (size_t i = 0; i < n; i++) e_value(b, json_array_get(j, i));
        }
        e_nil(b);
    } else if (!json_is_object(j)) b->bad = true;
    else if ((x = json_object_get(j, "tuple"))) {
        e_tuple(b, json_array_size(x));
        for (size_t i = 0; i < json_array_size(x); i++) e_value(b, json_array_get(x, i));
    } else if ((x = json_object_get(j, "opts"))) {
        size_t n = json_object_size(x);
        const char *key;
        json_t *val;
        if (n) {
            e_list(b, n);
            json_object_foreach((json_t *)x, key, val) {
                e_tuple(b, 2);
                e_atom(b, key);
                e_value(b, val);
            }
        }
        e_nil(b);
    } else if ((x = json_object_get(j, "tensor"))) e_tensor(b, x, true);
    else if ((x = json_object_get(j, "atom"))) e_atom(b, json_string_value(x) ? json_string_value(x) : "");
    else if ((x = json_object_get(j, "int"))) {
        const char *s = json_string_value(x);
        if (!s) {
            b->bad = true;
            return;
        }
        errno = 0;
        if (s[0] == '-') e_int(b, strtoll(s, NULL, 10));
        else {
            unsigned long long u = strtoull(s, NULL, 10);
            if (u > INT64_MAX) e_big(b, false, u);
            else e_int(b, (int64_t)u);
        }
        if (errno) b->bad = true;
    } else if ((x = json_object_get(j, "complex"))) {
        e_map(b, 3);
        e_atom(b, "__struct__");
        e_atom(b, "Elixir.Complex");
        e_atom(b, "re");
        e_number_part(b, json_array_get(x, 0));
        e_atom(b, "im");
        e_number_part(b, json_array_get(x, 1));
    } else if ((x = json_object_get(j, "binary"))) {
        size_t n;
        const char *d = json_string_value(x);
        unsigned char *bytes = unbase64(d ? d : "", &n);
        e_binary(b, bytes, n);
        free(bytes);
    } else b->bad = true;
}

static void e_out(buf *b, const json_t *out) {
    if (json_is_array(out)) {
        e_tuple(b, json_array_size(out));
        for (size_t i = 0; i < json_array_size(out); i++) e_tensor(b, json_array_get(out, i), false);
    } else {
        e_tensor(b, out, false);
    }
}

/* ---- dictionaries ----
 * Names the fuzzer would take long to guess: ops, option keys, atoms,
 * type names and the corpus format's keys. json.dict has them as JSON
 * strings, terms.dict as atoms in the external term format. */

static char *words[4096];
static size_t nwords;

static void word(const char *w) {
    if (!w || !*w || strlen(w) > 64) return;
    for (size_t i = 0; i < nwords; i++)
        if (strcmp(words[i], w) == 0) return;
    if (nwords < sizeof words / sizeof *words) words[nwords++] = strdup(w);
}

static void collect(const json_t *j) {
    const char *key;
    json_t *val;
    if (json_is_array(j))
        for (size_t i = 0; i < json_array_size(j); i++) collect(json_array_get(j, i));
    if (!json_is_object(j)) return;
    json_object_foreach((json_t *)j, key, val) {
        word(key);
        if (json_is_string(val) && strcmp(key, "data") != 0 && strcmp(key, "binary") != 0) word(json_string_value(val));
        collect(val);
    }
}

static void dict_entry(FILE *f, const unsigned char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') fprintf(f, "\\%c", s[i]);
        else if (s[i] >= 32 && s[i] < 127) fputc(s[i], f);
        else fprintf(f, "\\x%02X", s[i]);
    }
    fputs("\"\n", f);
}

static void write_dicts(const char *outdir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/json.dict", outdir);
    FILE *fj = fopen(path, "w");
    snprintf(path, sizeof path, "%s/terms.dict", outdir);
    FILE *ft = fopen(path, "w");
    if (!fj || !ft) {
        fprintf(stderr, "make_seeds: cannot write the dictionaries\n");
        exit(1);
    }
    const char *more[] = {"true",
                          "false",
                          "null",
                          "nan",
                          "infinity",
                          "neg_infinity",
                          "nil",
                          "__struct__",
                          "Elixir.Nx.Tensor",
                          "Elixir.Nx.BinaryBackend",
                          "Elixir.Emily.Backend",
                          "Elixir.Complex",
                          "state",
                          "ref",
                          "bytes",
                          "re",
                          "im",
                          "cpu",
                          "cuda"};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++) word(more[i]);
    for (size_t i = 0; i < nwords; i++) {
        char q[80];
        int n = snprintf(q, sizeof q, "\"%s\"", words[i]);
        dict_entry(fj, (const unsigned char *)q, (size_t)n);
        buf b = {0};
        e_atom(&b, words[i]);
        dict_entry(ft, b.p, b.n);
        free(b.p);
        free(words[i]);
    }
    fclose(fj);
    fclose(ft);
}

/* ---- files ---- */

static void write_file(const char *dir, const char *name, const void *data, size_t n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "make_seeds: cannot write %s\n", path);
        exit(1);
    }
}

static void make_dir(const char *path) {
    if (mkdir(path, 0777) && errno != EEXIST) {
        fprintf(stderr, "make_seeds: cannot create %s\n", path);
        exit(1);
    }
}

/* Starts a new term in b: the external term format's version byte. */
static void term_start(buf *b) {
    b->n = 0;
    put8(b, 131);
}

/* The type and shape keys of a template or tensor map: type and the
 * 2-dimensional shape {d0, d1}. */
static void e_type_shape2(buf *b, const char *type, int64_t d0, int64_t d1) {
    e_atom(b, "type");
    e_type(b, type);
    e_atom(b, "shape");
    e_tuple(b, 2);
    e_int(b, d0);
    e_int(b, d1);
}

/* Starts b as a call's term {:op, template, [arguments]} whose template
 * is `type` of shape {d0, d1}; the caller writes the nargs arguments and
 * ends the list (e_nil). */
static void e_call_start(buf *b, const char *op, const char *type, int64_t d0, int64_t d1, size_t nargs) {
    term_start(b);
    e_tuple(b, 3);
    e_atom(b, op);
    e_map(b, 2);
    e_type_shape2(b, type, d0, d1);
    e_list(b, nargs);
}

/* Writes b as the next hand-made seed, extra-NN. */
static void write_extra(const char *dir, int *k, const buf *b) {
    char name[64];
    snprintf(name, sizeof name, "extra-%02d", (*k)++);
    write_file(dir, name, b->p, b->n);
}

typedef struct seen {
    char op[64];
    int n;
} seen;

/* Hand-made terms for what the corpus cannot show: tensor resources
 * (see fuzz_terms.c's pool: 0 is f32[2][3], 5 deallocated, 8 a strided
 * view), Emily structs with and without bytes, and the pieces. */
static void extra_terms(const char *dir) {
    buf b = {0};
    int k = 0;
    for (uint32_t id = 0; id < 10; id++) { /* {:add, f32[2][3], [ref, ref]} */
        e_call_start(&b, "add", "f32", 2, 3, 2);
        e_ref(&b, id);
        e_ref(&b, id);
        e_nil(&b);
        write_extra(dir, &k, &b);
    }
    for (int with_bytes = 0; with_bytes < 2; with_bytes++) { /* %Nx.Tensor{data: %Emily.Backend{}} as f32[3][2] */
        e_call_start(&b, "negate", "f32", 3, 2, 1);
        e_map(&b, 4);
        e_atom(&b, "__struct__");
        e_atom(&b, "Elixir.Nx.Tensor");
        e_type_shape2(&b, "f32", 3, 2);
        e_atom(&b, "data");
        e_map(&b, 3);
        e_atom(&b, "__struct__");
        e_atom(&b, "Elixir.Emily.Backend");
        e_atom(&b, "ref");
        e_ref(&b, with_bytes ? 9 : 0); /* 9: a reference that is no resource */
        e_atom(&b, "bytes");
        if (with_bytes) {
            unsigned char bytes[24] = {0};
            e_binary(&b, bytes, sizeof bytes);
        } else {
            e_atom(&b, "nil");
        }
        e_nil(&b);
        write_extra(dir, &k, &b);
    }
    const char *types[] = {"f32", "bf16", "c128", "u8"};
    for (int i = 0; i < 4; i++) {
        term_start(&b);
        e_type(&b, types[i]);
        write_extra(dir, &k, &b);
    }
    term_start(&b); /* a shape */
    e_tuple(&b, 3);
    e_int(&b, 2);
    e_int(&b, 0);
    e_int(&b, 5);
    write_extra(dir, &k, &b);
    term_start(&b); /* devices */
    e_atom(&b, "cpu");
    write_extra(dir, &k, &b);
    term_start(&b);
    e_tuple(&b, 2);
    e_atom(&b, "cuda");
    e_int(&b, 1);
    write_extra(dir, &k, &b);
    free(b.p);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: make_seeds OUTDIR EVERY FILE.jsonl[.gz]...\n");
        return 2;
    }
    const char *outdir = argv[1];
    long every = strtol(argv[2], NULL, 10);
    if (every < 1) every = 1;
    char json_dir[4096], terms_dir[4096];
    snprintf(json_dir, sizeof json_dir, "%s/json", outdir);
    snprintf(terms_dir, sizeof terms_dir, "%s/terms", outdir);
    make_dir(outdir);
    make_dir(json_dir);
    make_dir(terms_dir);
    size_t written = 0;
    for (int a = 3; a < argc; a++) {
        corpus_file *f = corpus_file_open(argv[a]);
        if (!f) {
            fprintf(stderr, "make_seeds: cannot open %s\n", argv[a]);
            return 1;
        }
        const char *base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        char stem[64];
        snprintf(stem, sizeof stem, "%.*s", (int)strcspn(base, "."), base);
        seen ops[512];
        int nops = 0;
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        long lineno = 0;
        while ((len = corpus_file_line(f, &line, &cap)) > 0) {
            lineno++;
            json_error_t err;
            json_t *c = json_loadb(line, (size_t)len, 0, &err);
            const char *op = c ? json_string_value(json_object_get(c, "op")) : NULL;
            if (!op) {
                json_decref(c);
                continue;
            }
            word(op);
            collect(json_object_get(c, "out"));
            collect(json_object_get(c, "args"));
            int i = 0;
            while (i < nops && strcmp(ops[i].op, op) != 0) i++;
            if (i == nops && nops < 512) {
                snprintf(ops[nops].op, sizeof ops[nops].op, "%s", op);
                ops[nops++].n = 0;
            }
            bool take = lineno % every == 0 || (i < nops && ops[i].n < 4);
            if (take) {
                json_t *s = json_pack("{s:s, s:O, s:O}", "op", op, "out", json_object_get(c, "out"), "args",
                                      json_object_get(c, "args"));
                char *text = s ? json_dumps(s, JSON_COMPACT) : NULL;
                buf b = {0};
                term_start(&b);
                e_tuple(&b, 3);
                e_atom(&b, op);
                e_out(&b, json_object_get(c, "out"));
                e_value(&b, json_object_get(c, "args"));
                if (text && strlen(text) <= MAX_CASE && !b.bad) {
                    char name[128];
                    snprintf(name, sizeof name, "%s-%06ld", stem, lineno);
                    write_file(json_dir, name, text, strlen(text));
                    write_file(terms_dir, name, b.p, b.n);
                    written++;
                    if (i < nops) ops[i].n++;
                }
                free(b.p);
                free(text);
                json_decref(s);
            }
            json_decref(c);
        }
        free(line);
        corpus_file_close(f);
    }
    extra_terms(terms_dir);
    write_dicts(outdir);
    printf("make_seeds: %zu cases into %s/json and %s/terms\n", written, outdir, outdir);
    return 0;
}
