/* fuzz_gguf: emily_gguf_open on any bytes (written to a memfd, opened by
 * its /proc path: the reader takes a path), then every accessor on every
 * key and array element, every tensor info, and emily_gguf_load of every
 * tensor (f32 scales, and f16 for every other one) with its result read
 * back (a block type's triple dequantized first). A tensor of more than
 * FUZZ_MAX_ELEMENTS elements is listed but not loaded (a valid file may
 * ask for gigabytes; the size checks are open's).
 *
 * What counts as a failure besides the sanitizers: a failed call without
 * a message, a load that fails on a file open accepted for any reason
 * but the type (Q6_K ...), tensors left alive.
 *
 * Seeds: with EMILY_FUZZ_GGUF_SEEDS=DIR in the environment,
 * LLVMFuzzerInitialize writes small valid files into DIR (every metadata
 * type, arrays, one tensor of each loadable type and a Q6_K), and with
 * EMILY_FUZZ_GGUF_DICT=FILE a dictionary; scripts/fuzz does that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fuzz_common.h"
#include "../unit/gguf_writer.h"

static int memfd = -1;
static char memfd_path[64];

static void need_message(emily_status s, const char *what) {
    if (s && !emily_last_error()[0]) {
        fprintf(stderr, "fuzz_gguf: %s failed without a message\n", what);
        abort();
    }
}

static void walk_metadata(const emily_gguf *g) {
    for (size_t i = 0; i < emily_gguf_key_count(g); i++) {
        const char *k;
        size_t n;
        emily_gguf_value_type t;
        if (emily_gguf_key_at(g, i, &k, &n, &t)) abort();
        char key[256];
        if (n >= sizeof key || memchr(k, 0, n)) continue; /* not reachable by a C string */
        memcpy(key, k, n);
        key[n] = 0;
        if (!emily_gguf_has_key(g, key)) abort();
        int64_t iv;
        double fv;
        const char *s;
        size_t len, count;
        emily_gguf_value_type et;
        need_message(emily_gguf_get_int(g, key, &iv), "get_int");
        need_message(emily_gguf_get_float(g, key, &fv), "get_float");
        need_message(emily_gguf_get_string(g, key, &s, &len), "get_string");
        if (emily_gguf_get_array(g, key, &et, &count)) continue;
        for (size_t j = 0; j <= count && j < 4096; j++) {
            need_message(emily_gguf_get_array_int(g, key, j, &iv), "get_array_int");
            need_message(emily_gguf_get_array_float(g, key, j, &fv), "get_array_float");
            emily_status st = emily_gguf_get_array_string(g, key, j, &s, &len);
            need_message(st, "get_array_string");
            if (!st && len && (s[0] == 1 || s[len - 1] == 1)) iv = 0; /* read both ends */
        }
    }
}

static void read_back(const emily_tensor *t) {
    if (!t) abort();
    size_t nb = emily_dtype_binary_size(emily_tensor_dtype(t), emily_tensor_size(t));
    void *buf = malloc(nb ? nb : 1);
    if (buf && emily_to_binary(t, buf, nb)) {
        fprintf(stderr, "fuzz_gguf: a loaded tensor cannot be read back: %s\n", emily_last_error());
        abort();
    }
    free(buf);
}

static void walk_tensors(const emily_gguf *g) {
    for (size_t i = 0; i < emily_gguf_tensor_count(g); i++) {
        emily_gguf_tensor_info info;
        if (emily_gguf_tensor_info_at(g, i, &info)) abort();
        char name[256];
        if (info.name_len >= sizeof name || memchr(info.name, 0, info.name_len)) continue;
        memcpy(name, info.name, info.name_len);
        name[info.name_len] = 0;
        size_t at;
        if (emily_gguf_find_tensor(g, name, &at) || at != i) abort();
        if (fuzz_shape_elements(info.rank, info.shape) > FUZZ_MAX_ELEMENTS) continue;
        emily_gguf_tensor t;
        emily_status s = emily_gguf_load(g, name, EMILY_CPU, i % 2 ? EMILY_F16 : EMILY_F32, &t);
        need_message(s, "gguf_load");
        if (s) {
            if (s != EMILY_ERR_TYPE || !strstr(emily_last_error(), "which Emily does not load")) {
                fprintf(stderr, "fuzz_gguf: load of an accepted tensor failed: %s\n", emily_last_error());
                abort();
            }
            continue;
        }
        if (t.dense) {
            read_back(t.dense);
        } else {
            emily_tensor *w = NULL;
            s = emily_dequantize(t.q, t.scales, t.biases, t.bits, t.group_size, &w);
            if (s) {
                fprintf(stderr, "fuzz_gguf: dequantize of a loaded triple failed: %s\n", emily_last_error());
                abort();
            }
            read_back(w);
            emily_tensor_release(w);
        }
        emily_gguf_tensor_release(&t);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int64_t tensors = emily_live_tensors(), buffers = emily_live_buffers();
    if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size) abort();
    emily_gguf *g = NULL;
    emily_status s = emily_gguf_open(memfd_path, &g);
    need_message(s, "gguf_open");
    if (!s) {
        walk_metadata(g);
        walk_tensors(g);
        emily_gguf_close(g);
    } else if (g) {
        abort();
    }
    fuzz_check_live(tensors, buffers, "fuzz_gguf");
    return 0;
}

/* ---- seeds ---------------------------------------------------------------- */

static void save(const gw *f, const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gw_save(f, path);
}

static void write_seeds(const char *dir) {
    gw k = {0};
    gw_key(&k, "general.architecture", 8), gw_str(&k, "llama");
    gw_key(&k, "general.alignment", 4), gw_u32(&k, 32);
    gw_key(&k, "u8", 0), gw_u8(&k, 7);
    gw_key(&k, "s16", 3), gw_u16(&k, 0x8001);
    gw_key(&k, "f32", 6), gw_f32(&k, 1e-5f);
    gw_key(&k, "b", 7), gw_u8(&k, 1);
    gw_key(&k, "u64", 10), gw_u64(&k, UINT64_MAX);
    gw_key(&k, "s64", 11), gw_u64(&k, 5);
    gw_key(&k, "f64", 12), gw_f64(&k, 1e5);
    gw_key(&k, "tokenizer.ggml.tokens", 9), gw_array(&k, 8, 3), gw_str(&k, "<s>"), gw_str(&k, "a"), gw_str(&k, "");
    gw_key(&k, "ids", 9), gw_array(&k, 5, 2), gw_u32(&k, 1), gw_u32(&k, 2);
    gw_key(&k, "fs", 9), gw_array(&k, 6, 1), gw_f32(&k, 0.5f);
    static unsigned char bytes[2048];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 37 + 11);
    for (size_t i = 0; i < sizeof bytes; i += 2) bytes[i + 1] &= 0x3f; /* finite f16 scales */
    static const struct {
        const char *name;
        uint32_t type;
        uint64_t ne0, ne1;
        size_t nbytes;
    } tensors[] = {{"q8_0", 8, 64, 2, 136},  {"q4_0", 2, 32, 3, 54}, {"q4_1", 3, 64, 1, 40}, {"q4_k", 12, 256, 2, 288},
                   {"f32", 0, 3, 2, 24},     {"f16", 1, 4, 1, 8},    {"bf16", 30, 2, 2, 8},  {"f64", 28, 2, 1, 16},
                   {"i8", 24, 5, 1, 5},      {"i16", 25, 3, 1, 6},   {"i32", 26, 2, 2, 16},  {"i64", 27, 1, 1, 8},
                   {"q6_k", 14, 256, 1, 210}};
    gw f = {0};
    gw_file(&f, 3, &k, 12, NULL, 0, 32);
    save(&f, dir, "metadata.gguf");
    gw_free(&f);
    size_t n = sizeof tensors / sizeof *tensors;
    for (size_t i = 0; i < n; i++) {
        gw_tensor t = {tensors[i].name, 2, {tensors[i].ne0, tensors[i].ne1}, tensors[i].type, bytes, tensors[i].nbytes};
        f = (gw){0};
        gw_file(&f, i % 2 ? 2 : 3, &k, 12, &t, 1, 32);
        save(&f, dir, tensors[i].name);
        gw_free(&f);
    }
    gw_free(&k);
}

static void write_dict(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    static const char *words[] = {
        "GGUF", "general.alignment", "general.architecture", "tokenizer.ggml.tokens", "llama", "weight"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) fprintf(f, "\"%s\"\n", words[i]);
    fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    fuzz_single_thread();
    memfd = memfd_create("fuzz_gguf", 0);
    if (memfd < 0) abort();
    snprintf(memfd_path, sizeof memfd_path, "/proc/self/fd/%d", memfd);
    const char *dir = getenv("EMILY_FUZZ_GGUF_SEEDS"), *dict = getenv("EMILY_FUZZ_GGUF_DICT");
    if (dir) write_seeds(dir);
    if (dict) write_dict(dict);
    return 0;
}
