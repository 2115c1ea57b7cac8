/* examples/embed (build/emily_embed): the Unicode tables, the BERT
 * normalizer and WordPiece tokenizer, the safetensors reader, and the
 * forward pass with pooling.
 *
 * Always run: units of each piece, and a tiny random BERT written here
 * (embed_synthetic.c) whose embeddings must match a double-precision
 * forward pass written from the model's definition, sentence by sentence
 * without padding (within 1e-5: f32 arithmetic over 2 layers).
 * With all-MiniLM-L6-v2 installed (scripts/setup; EMILY_MINILM_DIR, else
 * models/all-MiniLM-L6-v2): token ids identical to the reference's and
 * embeddings within 1e-4 max abs of it (tests/models/minilm_reference.json,
 * made by tests/models/minilm_reference.py with transformers + torch);
 * without it those cases print SKIPPED and do not count.
 * With a CUDA device: the same forward passes on the GPU against the CPU
 * engine's (else SKIPPED). */
#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>
#include "bert_text.h"
#include "embed_synthetic.h"
#include "harness.h"
#include "safetensors.h"
#include "sentence_embed.h"
#include "tokenizer.h"
#include "unicode_data.h"
#include "vocab.h"

static const emily_device CUDA0 = {EMILY_DEVICE_CUDA, 0};
static const char *model_dir;      /* all-MiniLM-L6-v2 */
static const char *reference_path; /* its reference outputs */

/* ---- temporary folders ---------------------------------------------------- */

static bool make_temp_dir(char *buf, size_t size) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/emily_test_embed_XXXXXX", base && *base ? base : "/tmp");
    if (mkdtemp(buf)) return true;
    fprintf(stderr, "  FAIL: cannot make a temporary folder under %s\n", base && *base ? base : "/tmp");
    harness_failures++;
    return false;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

/* ---- Unicode and UTF-8 ------------------------------------------------------ */

TEST(utf8_decoding) {
    static const struct {
        const char *bytes;
        uint32_t want[4];
        int n;
    } cases[] = {
        {"a\xC3\xA9", {'a', 0xE9}, 2},                             /* é */
        {"\xE2\x82\xAC", {0x20AC}, 1},                             /* € */
        {"\xF0\x9F\x99\x82", {0x1F642}, 1},                        /* 🙂 */
        {"\xC0\xAF", {0xFFFD, 0xFFFD}, 2},                         /* overlong '/' */
        {"\xED\xA0\x80", {0xFFFD, 0xFFFD, 0xFFFD}, 3},             /* a surrogate */
        {"\xF4\x90\x80\x80", {0xFFFD, 0xFFFD, 0xFFFD, 0xFFFD}, 4}, /* above U+10FFFF */
        {"\xE2\x82", {0xFFFD, 0xFFFD}, 2},                         /* truncated */
        {"\x80z", {0xFFFD, 'z'}, 2},                               /* stray continuation */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t n = strlen(cases[c].bytes), pos = 0;
        int got = 0;
        while (pos < n && got < 4) {
            uint32_t cp = uc_utf8_next(cases[c].bytes, n, &pos);
            CHECK(cp == cases[c].want[got]);
            got++;
        }
        CHECK(got == cases[c].n && pos == n);
    }
    uint32_t cps[] = {0x24, 0xA2, 0x20AC, 0x10348};
    for (size_t i = 0; i < 4; i++) { /* round trip */
        char buf[4];
        size_t len = (size_t)uc_utf8_put(cps[i], buf), pos = 0;
        CHECK(len == i + 1);
        CHECK(uc_utf8_next(buf, len, &pos) == cps[i] && pos == len);
    }
}

TEST(unicode_classes_and_folding) {
    CHECK(uc_class(0x07) == UC_OTHER && uc_class(0x200B) == UC_OTHER && uc_class(0xE000) == UC_OTHER);
    CHECK(uc_class(0x0378) == 0); /* unassigned: kept, as Hugging Face keeps it */
    CHECK(uc_is_punctuation('$') && uc_is_punctuation('~') && uc_is_punctuation(0x2026) && uc_is_punctuation(0xBF));
    CHECK(!uc_is_punctuation('a') && !uc_is_punctuation(0x20AC)); /* € is a symbol, not ASCII */
    CHECK(uc_class(0x0301) == UC_NONSPACING_MARK);
    CHECK(uc_is_whitespace(0x3000) && uc_is_whitespace(0x85) && !uc_is_whitespace(0x200B) && !uc_is_whitespace(0x1C));
    CHECK(uc_is_cjk(0x6771) && !uc_is_cjk(0x3042));
    uint32_t out[UC_MAX_STRIPPED];
    CHECK(uc_strip_accents(0xE9, out) == 1 && out[0] == 'e');      /* é */
    CHECK(uc_strip_accents(0x0301, out) == 0);                     /* the mark itself */
    CHECK(uc_strip_accents(0x1E09, out) == 1 && out[0] == 'c');    /* ḉ: two marks */
    CHECK(uc_strip_accents(0x212B, out) == 1 && out[0] == 'A');    /* Å (angstrom sign) */
    CHECK(uc_strip_accents(0xFB01, out) == 1 && out[0] == 0xFB01); /* ﬁ: no canonical decomposition */
    CHECK(uc_strip_accents(0xD55C, out) == 3 && out[0] == 0x1112 && out[1] == 0x1161 && out[2] == 0x11AB); /* 한 */
    CHECK(uc_strip_accents(0xAC00, out) == 2 && out[0] == 0x1100 && out[1] == 0x1161);                     /* 가 */
    uint32_t low[2];
    CHECK(uc_lowercase('Q', low) == 1 && low[0] == 'q');
    CHECK(uc_lowercase(0x130, low) == 2 && low[0] == 'i' && low[1] == 0x307); /* İ */
    CHECK(uc_lowercase(0x3A3, low) == 1 && low[0] == 0x3C3);                  /* Σ: no final form */
    CHECK(uc_lowercase(0x216B, low) == 1 && low[0] == 0x217B);                /* Ⅻ */
    CHECK(uc_lowercase(0xDF, low) == 1 && low[0] == 0xDF);                    /* ß stays */
}

/* Normalizes and splits text; the words joined by '|', as UTF-8. */
static void words_of(const bert_text_options *opt, const char *text, char *out, size_t size);

typedef struct join_ctx {
    char *out;
    size_t size, len;
} join_ctx;

static emily_status join_word(void *ctx, const uint32_t *word, size_t n) {
    join_ctx *j = ctx;
    if (j->len && j->len + 1 < j->size) j->out[j->len++] = '|';
    for (size_t i = 0; i < n && j->len + 4 < j->size; i++) j->len += (size_t)uc_utf8_put(word[i], j->out + j->len);
    j->out[j->len] = '\0';
    return EMILY_OK;
}

static void words_of(const bert_text_options *opt, const char *text, char *out, size_t size) {
    cp_buf b = {0};
    join_ctx j = {out, size, 0};
    out[0] = '\0';
    CHECK_OK(bert_normalize(opt, text, strlen(text), &b));
    CHECK_OK(bert_split_words(b.v, b.len, join_word, &j));
    cp_buf_free(&b);
}

TEST(normalizer_and_pre_tokenizer) {
    bert_text_options uncased = {true, true, true, true}, cased = {true, true, false, false};
    char w[256];
    words_of(&uncased, "  Héllo,\tWORLD!! ", w, sizeof w);
    CHECK(strcmp(w, "hello|,|world|!|!") == 0);
    words_of(&cased, "  Héllo,\tWORLD!! ", w, sizeof w);
    CHECK(strcmp(w, "Héllo|,|WORLD|!|!") == 0);
    words_of(&uncased,
             "a\x01"
             "b\xE2\x80\x8B"
             "c \xEF\xBF\xBD d\xC2\xA0"
             "e",
             w, sizeof w); /* controls, ZWSP, U+FFFD, NBSP */
    CHECK(strcmp(w, "abc|d|e") == 0);
    words_of(&uncased, "東京abc", w, sizeof w);
    CHECK(strcmp(w, "東|京|abc") == 0);
    words_of(&uncased, "$5 a|b", w, sizeof w);
    CHECK(strcmp(w, "$|5|a|||b") == 0);
    words_of(&uncased, "", w, sizeof w);
    CHECK(strcmp(w, "") == 0);
}

TEST(vocab_lookups) {
    vocab *v = NULL;
    CHECK_OK(vocab_new(2, &v));
    if (!v) return;
    char name[16];
    for (int i = 0; i < 1000; i++) { /* grows past its first table */
        snprintf(name, sizeof name, "t%d", i);
        CHECK_OK(vocab_add(v, name, strlen(name), i));
    }
    CHECK_OK(vocab_add(v, "##ab", 4, 1000));
    CHECK_OK(vocab_add(v, "t5", 2, 1001)); /* a repeat keeps its first id */
    CHECK(vocab_find(v, NULL, "t5", 2) == 5);
    CHECK(vocab_find(v, NULL, "t999", 4) == 999);
    CHECK(vocab_find(v, "##", "ab", 2) == 1000 && vocab_find(v, NULL, "ab", 2) == -1);
    CHECK(vocab_find(v, NULL, "t1000", 5) == -1);
    CHECK(vocab_count(v) == 1001 && vocab_id_limit(v) == 1001);
    CHECK(vocab_token(v, 1000) && strcmp(vocab_token(v, 1000), "##ab") == 0);
    CHECK(vocab_token(v, 1001) == NULL && vocab_token(v, -1) == NULL);
    CHECK_ERR(vocab_add(v, "other", 5, 7), EMILY_ERR_ARGUMENT, "id 7");
    CHECK_ERR(vocab_add(v, "big", 3, VOCAB_MAX_ID + 1), EMILY_ERR_ARGUMENT, "outside");
    vocab_free(v);
}

/* ---- the tokenizer on the synthetic model's vocab.txt --------------------- */

static void check_ids(const bert_tokenizer *t, const char *text, int max_length, int n, const int32_t *want) {
    int32_t *ids = NULL;
    int count = 0;
    CHECK_OK(tokenizer_encode(t, text, strlen(text), max_length, &ids, &count));
    bool same = count == n && (n == 0 || memcmp(ids, want, (size_t)n * sizeof *ids) == 0);
    if (!same) {
        fprintf(stderr, "  FAIL: \"%s\" (max %d): got", text, max_length);
        for (int i = 0; i < count; i++) fprintf(stderr, " %d", (int)ids[i]);
        fprintf(stderr, "\n");
        harness_failures++;
    }
    free(ids);
}

TEST(wordpiece_from_vocab_txt) {
    char dir[512];
    if (!make_temp_dir(dir, sizeof dir)) return;
    syn_model *m = syn_write_model(dir, 7, false);
    CHECK(m != NULL);
    bert_tokenizer *t = NULL;
    CHECK_OK(tokenizer_load(dir, &t));
    if (t) {
        /* [CLS]=2 [SEP]=3 [UNK]=1 [MASK]=4 the=5 cat=6 ##s=7 sat=8 ... */
        check_ids(t, "The cats sat, unaffable!", 64, 11, (int32_t[]){2, 5, 6, 7, 8, 12, 13, 14, 15, 29, 3});
        check_ids(t, "dogs xyz xq", 64, 8, (int32_t[]){2, 17, 7, 24, 25, 26, 1, 3}); /* a word with no piece: [UNK] */
        check_ids(t, "Café cafe e\xCC\x81", 64, 5, (int32_t[]){2, 21, 21, 19, 3});   /* accents stripped */
        check_ids(t, "the[MASK]cat [CLS]", 64, 6, (int32_t[]){2, 5, 4, 6, 2, 3});    /* special tokens in the text */
        check_ids(t, "the cat sat on the mat", 5, 5, (int32_t[]){2, 5, 6, 8, 3});    /* truncated to 5 */
        check_ids(t, "the cats", 3, 3, (int32_t[]){2, 5, 3});                        /* a word cut inside */
        check_ids(t, "", 2, 2, (int32_t[]){2, 3});
        check_ids(t, "12 12", 64, 6, (int32_t[]){2, 27, 28, 27, 28, 3});
        int32_t *ids = NULL;
        int n = 0;
        CHECK_ERR(tokenizer_encode(t, "x", 1, 1, &ids, &n), EMILY_ERR_ARGUMENT, "max_length 1");
        CHECK(ids == NULL && n == 0);
        CHECK(tokenizer_pad_id(t) == 0 && tokenizer_id_limit(t) == SYN_VOCAB);
        CHECK(tokenizer_token(t, 6) && strcmp(tokenizer_token(t, 6), "cat") == 0);
    }
    tokenizer_free(t);
    syn_free(m);
    remove_dir(dir);
}

/* ---- safetensors ------------------------------------------------------------ */

TEST(safetensors_reads_f32_f16_bf16) {
    char dir[512], path[600];
    if (!make_temp_dir(dir, sizeof dir)) return;
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    float f32[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.125f, 1e-3f};
    uint16_t f16[3] = {0x3C00, 0xC000, 0x3555}; /* 1, -2, 0.333251953125 */
    uint16_t bf16[2] = {0x3FC0, 0xC2F7};        /* 1.5, -123.5 */
    int64_t s64[2] = {7, -9};
    syn_entry e[] = {{"a.f32", "F32", 2, {2, 3}, f32, sizeof f32},  {"b.f16", "F16", 1, {3}, f16, sizeof f16},
                     {"c.bf16", "BF16", 1, {2}, bf16, sizeof bf16}, {"d.i64", "I64", 1, {2}, s64, sizeof s64},
                     {"e.empty", "F32", 2, {0, 4}, NULL, 0},        {"f.f8", "F8_E4M3", 1, {1}, f16, 1}};
    CHECK(syn_write_safetensors(path, 6, e));
    st_file *f = NULL;
    CHECK_OK(st_open(path, &f));
    if (!f) {
        remove_dir(dir);
        return;
    }
    st_tensor info;
    CHECK_OK(st_get(f, "a.f32", &info));
    CHECK(info.dtype == EMILY_F32 && info.rank == 2 && info.shape[0] == 2 && info.shape[1] == 3 &&
          info.nbytes == sizeof f32 && memcmp(info.data, f32, sizeof f32) == 0);
    CHECK_OK(st_get(f, "d.i64", &info));
    CHECK(info.dtype == EMILY_S64 && memcmp(info.data, s64, sizeof s64) == 0);
    CHECK(st_has(f, "b.f16") && !st_has(f, "nope"));
    const struct {
        const char *name;
        double want[3];
        int n;
    } loads[] = {{"b.f16", {1, -2, 0.333251953125}, 3}, {"c.bf16", {1.5, -123.5}, 2}, {"d.i64", {7, -9}, 2}};
    for (size_t i = 0; i < sizeof loads / sizeof *loads; i++) {
        emily_tensor *t = NULL;
        CHECK_OK(st_load_f32(f, loads[i].name, EMILY_CPU, &t));
        CHECK(t && emily_tensor_dtype(t) == EMILY_F32 && emily_tensor_size(t) == loads[i].n);
        for (int k = 0; t && k < loads[i].n; k++) CHECK(t_get(t, k) == loads[i].want[k]);
        emily_tensor_release(t);
    }
    emily_tensor *t = NULL;
    CHECK_OK(st_load_f32(f, "e.empty", EMILY_CPU, &t));
    CHECK(t && emily_tensor_size(t) == 0);
    emily_tensor_release(t);
    CHECK_ERR(st_load_f32(f, "nope", EMILY_CPU, &t), EMILY_ERR_ARGUMENT, "tensor nope: not in the file");
    CHECK_ERR(st_get(f, "__metadata__", &info), EMILY_ERR_ARGUMENT, "not in the file");
    CHECK_ERR(st_get(f, "f.f8", &info), EMILY_ERR_TYPE, "dtype F8_E4M3 is not supported");
    st_close(f);
    remove_dir(dir);
}

/* A file of the header `json` (its length written first, or `length` if
 * non-zero) followed by `data` bytes of zeros. */
static void check_bad_header(const char *dir, const char *json, uint64_t length, size_t data, const char *needle) {
    char path[600];
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    size_t n = strlen(json);
    unsigned char *bytes = calloc(8 + n + data, 1);
    if (!bytes) return;
    uint64_t len = length ? length : n;
    for (int b = 0; b < 8; b++) bytes[b] = (unsigned char)(len >> (8 * b));
    memcpy(bytes + 8, json, n);
    CHECK(syn_write_file(dir, "bad.safetensors", bytes, 8 + n + data));
    free(bytes);
    st_file *f = NULL;
    st_tensor info;
    emily_status s = st_open(path, &f);
    if (!s) s = st_get(f, "x", &info);
    if (!s || !strstr(emily_last_error(), needle)) {
        fprintf(stderr, "  FAIL: header %s: got \"%s\", wanted \"%s\"\n", json, s ? emily_last_error() : "success",
                needle);
        harness_failures++;
    }
    st_close(f);
}

TEST(safetensors_refuses_malformed_files) {
    char dir[512], path[600];
    if (!make_temp_dir(dir, sizeof dir)) return;
    st_file *f = NULL;
    snprintf(path, sizeof path, "%s/missing.safetensors", dir);
    CHECK_ERR(st_open(path, &f), EMILY_ERR_ARGUMENT, "cannot be opened");
    CHECK_ERR(st_open(dir, &f), EMILY_ERR_ARGUMENT, "not a regular");
    CHECK(syn_write_file(dir, "short.safetensors", "\x02\0\0", 3));
    snprintf(path, sizeof path, "%s/short.safetensors", dir);
    CHECK_ERR(st_open(path, &f), EMILY_ERR_ARGUMENT, "shorter than");
    CHECK(f == NULL);
    const char *ok = "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}";
    check_bad_header(dir, ok, 1000, 8, "header length beyond the file");
    check_bad_header(dir, "{\"x\": ", 0, 8, "not a JSON object");
    check_bad_header(dir, "[1, 2]", 0, 8, "not a JSON object");
    check_bad_header(dir, ok, 0, 4, "outside the file");
    check_bad_header(dir, "{\"x\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 0, 16,
                     "exactly the shape's bytes");
    check_bad_header(dir, "{\"x\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", 0, 8,
                     "not an integer");
    check_bad_header(dir, "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 0, 8,
                     "outside the file");
    check_bad_header(dir, "{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", 0, 8, "[begin, end]");
    check_bad_header(dir, "{\"x\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}", 0,
                     8, "rank above 8");
    check_bad_header(dir,
                     "{\"x\": {\"dtype\": \"F32\", \"shape\": [2147483647, 2147483647, 2147483647], "
                     "\"data_offsets\": [0, 8]}}",
                     0, 8, "too many elements");
    check_bad_header(dir, "{\"x\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", 0, 8, "dtype (missing)");
    remove_dir(dir);
}

/* ---- the forward pass on the synthetic model --------------------------------- */

/* Sentences of the synthetic vocabulary: lengths 1 to SYN_POSITIONS. */
enum { SYN_SENTENCES = 5 };
static const int syn_lengths[SYN_SENTENCES] = {3, 12, 1, 7, 2};

static void syn_sentence(int s, int32_t *ids) {
    ids[0] = 2; /* [CLS] */
    for (int i = 1; i < syn_lengths[s]; i++) ids[i] = (int32_t)(5 + (s * 7 + i * 3) % (SYN_VOCAB - 5));
    if (syn_lengths[s] > 1) ids[syn_lengths[s] - 1] = 3; /* [SEP] */
}

/* The synthetic model's embeddings on `device`, in batches of batch_size
 * (padded), into out[SYN_SENTENCES][SYN_HIDDEN]. */
static bool syn_embed_on(const char *dir, emily_device device, int batch_size, float *out) {
    bert_model *m = NULL;
    CHECK_OK(bert_load(dir, device, &m));
    if (!m) return false;
    int32_t ids[SYN_SENTENCES][SYN_POSITIONS];
    const int32_t *rows[SYN_SENTENCES];
    for (int s = 0; s < SYN_SENTENCES; s++) {
        syn_sentence(s, ids[s]);
        rows[s] = ids[s];
    }
    emily_status st = embed_ids(m, SYN_SENTENCES, rows, syn_lengths, 0, batch_size, out, NULL);
    CHECK_OK(st);
    bert_free(m);
    return st == EMILY_OK;
}

static double max_abs_diff(int n, const float *a, const float *b) {
    double worst = 0;
    for (int i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - (double)b[i]));
    return worst;
}

TEST(synthetic_bert_matches_its_definition) {
    for (int prefixed = 0; prefixed < 2; prefixed++) {
        char dir[512];
        if (!make_temp_dir(dir, sizeof dir)) return;
        syn_model *ref = syn_write_model(dir, 1234u + (unsigned)prefixed, prefixed);
        CHECK(ref != NULL);
        float batched[SYN_SENTENCES * SYN_HIDDEN], single[SYN_SENTENCES * SYN_HIDDEN];
        if (ref && syn_embed_on(dir, EMILY_CPU, 8, batched) && syn_embed_on(dir, EMILY_CPU, 1, single)) {
            double worst = 0, norm_err = 0;
            for (int s = 0; s < SYN_SENTENCES; s++) {
                int32_t ids[SYN_POSITIONS];
                double want[SYN_HIDDEN], norm = 0;
                syn_sentence(s, ids);
                syn_embed(ref, ids, syn_lengths[s], want);
                for (int h = 0; h < SYN_HIDDEN; h++) {
                    double got = batched[s * SYN_HIDDEN + h];
                    worst = fmax(worst, fabs(got - want[h]));
                    norm += got * got;
                }
                norm_err = fmax(norm_err, fabs(sqrt(norm) - 1));
            }
            double pad = max_abs_diff(SYN_SENTENCES * SYN_HIDDEN, batched, single);
            printf("  synthetic BERT%s: max abs diff %.2e from the definition, %.2e batched vs one at a time\n",
                   prefixed ? " (bert. names)" : "", worst, pad);
            CHECK(worst < 1e-5);
            CHECK(pad < 1e-5); /* padding changes nothing but rounding */
            CHECK(norm_err < 1e-6);
        }
        syn_free(ref);
        remove_dir(dir);
    }
}

TEST(bert_load_reports_bad_models) {
    char dir[512];
    if (!make_temp_dir(dir, sizeof dir)) return;
    bert_model *m = NULL;
    CHECK_ERR(bert_load(dir, EMILY_CPU, &m), EMILY_ERR_ARGUMENT, "config.json");
    syn_model *ref = syn_write_model(dir, 5, false);
    CHECK(ref != NULL);
    CHECK_OK(bert_load(dir, EMILY_CPU, &m));
    if (m) { /* the forward pass refuses what it cannot run */
        int64_t shape[2] = {1, SYN_POSITIONS + 1};
        emily_tensor *ids = NULL, *mask = NULL, *h = NULL, *mask64 = NULL;
        CHECK_OK(emily_constant(EMILY_CPU, EMILY_S32, 2, shape, emily_scalar_int(1), &ids));
        CHECK_OK(emily_constant(EMILY_CPU, EMILY_F32, 2, shape, emily_scalar_float(1), &mask));
        CHECK_ERR(bert_forward(m, ids, mask, &h), EMILY_ERR_SHAPE, "positions");
        shape[1] = 2;
        CHECK_OK(emily_constant(EMILY_CPU, EMILY_F64, 2, shape, emily_scalar_float(1), &mask64));
        emily_tensor *ids2 = NULL;
        CHECK_OK(emily_constant(EMILY_CPU, EMILY_S32, 2, shape, emily_scalar_int(1), &ids2));
        CHECK_ERR(bert_forward(m, ids2, mask64, &h), EMILY_ERR_TYPE, "f32");
        CHECK_ERR(bert_forward(m, ids2, mask, &h), EMILY_ERR_SHAPE, "[batch, seq]");
        CHECK(h == NULL);
        emily_tensor *all[] = {ids, mask, mask64, ids2};
        for (int i = 0; i < 4; i++) emily_tensor_release(all[i]);
        int32_t bad[2] = {2, SYN_VOCAB};
        const int32_t *rows[1] = {bad};
        int counts[1] = {2};
        float out[SYN_HIDDEN];
        CHECK_ERR(embed_ids(m, 1, rows, counts, 0, 1, out, NULL), EMILY_ERR_INDEX, "outside the vocabulary");
    }
    bert_free(m);
    m = NULL;
    static const struct {
        const char *config, *needle;
    } configs[] = {
        {"{\"model_type\": \"bert\", \"hidden_act\": \"relu\"}", "hidden_act is \"relu\""},
        {"{\"hidden_size\": 10, \"num_attention_heads\": 3, \"vocab_size\": 5, \"num_hidden_layers\": 1,"
         " \"intermediate_size\": 4, \"max_position_embeddings\": 4}",
         "not a multiple"},
        {"{\"hidden_size\": 16}", "vocab_size is missing"},
        {"[]", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof configs / sizeof *configs; i++) {
        CHECK(syn_write_file(dir, "config.json", configs[i].config, strlen(configs[i].config)));
        CHECK_ERR(bert_load(dir, EMILY_CPU, &m), EMILY_ERR_ARGUMENT, configs[i].needle);
        CHECK(m == NULL);
    }
    /* a config that asks for other sizes than the weights have */
    char config[512];
    snprintf(config, sizeof config,
             "{\"hidden_size\": %d, \"num_attention_heads\": %d, \"vocab_size\": %d, \"num_hidden_layers\": %d,"
             " \"intermediate_size\": %d, \"max_position_embeddings\": %d}",
             SYN_HIDDEN, SYN_HEADS, SYN_VOCAB, SYN_LAYERS + 1, SYN_FF * 2, SYN_POSITIONS);
    CHECK(syn_write_file(dir, "config.json", config, strlen(config)));
    CHECK_ERR(bert_load(dir, EMILY_CPU, &m), EMILY_ERR_SHAPE,
              "encoder.layer.0.intermediate.dense.weight has shape {24, 16}; config.json asks for {48, 16}");
    CHECK_ERR(bert_load(dir, CUDA0, &m), emily_device_count(EMILY_DEVICE_CUDA) ? EMILY_ERR_SHAPE : EMILY_ERR_DEVICE,
              emily_device_count(EMILY_DEVICE_CUDA) ? "intermediate" : "cuda");
    syn_free(ref);
    remove_dir(dir);
}

/* ---- all-MiniLM-L6-v2 against the reference ----------------------------------- */

typedef struct reference {
    json_t *root;
    int n;
    const char **texts;
    float *embeddings; /* n x hidden */
    int hidden, max_length;
} reference;

static bool load_reference(reference *r) {
    memset(r, 0, sizeof *r);
    json_error_t err;
    r->root = json_load_file(reference_path, JSON_ALLOW_NUL, &err); /* a tokenizer case holds U+0000 */
    if (!r->root) {
        fprintf(stderr, "  FAIL: %s: %s\n", reference_path, err.text);
        harness_failures++;
        return false;
    }
    const json_t *sentences = json_object_get(r->root, "sentences");
    r->n = (int)json_array_size(sentences);
    r->max_length = (int)json_integer_value(json_object_get(r->root, "max_length"));
    r->hidden = (int)json_array_size(json_object_get(json_array_get(sentences, 0), "embedding"));
    r->texts = calloc((size_t)r->n + 1, sizeof *r->texts);
    r->embeddings = calloc((size_t)(r->n * r->hidden) + 1, sizeof *r->embeddings);
    bool ok = r->texts && r->embeddings && r->n > 0 && r->hidden > 0;
    for (int i = 0; ok && i < r->n; i++) {
        const json_t *s = json_array_get(sentences, (size_t)i);
        const json_t *emb = json_object_get(s, "embedding");
        r->texts[i] = json_string_value(json_object_get(s, "text"));
        ok = r->texts[i] && (int)json_array_size(emb) == r->hidden;
        for (int h = 0; ok && h < r->hidden; h++)
            r->embeddings[i * r->hidden + h] = (float)json_number_value(json_array_get(emb, (size_t)h));
    }
    CHECK(ok);
    return ok;
}

static void free_reference(reference *r) {
    json_decref(r->root);
    free(r->texts);
    free(r->embeddings);
}

/* Every text of a JSON list of {text, ids} tokenizes to exactly its ids. */
static int check_id_list(const bert_tokenizer *t, const json_t *list, int max_length) {
    int checked = 0;
    size_t i;
    const json_t *item;
    json_array_foreach(list, i, item) {
        const char *text = json_string_value(json_object_get(item, "text"));
        const json_t *want = json_object_get(item, "ids");
        int32_t *ids = NULL;
        int n = 0;
        CHECK(text != NULL);
        if (!text) continue;
        CHECK_OK(tokenizer_encode(t, text, json_string_length(json_object_get(item, "text")), max_length, &ids, &n));
        bool same = (size_t)n == json_array_size(want);
        for (int k = 0; same && k < n; k++) same = ids[k] == json_integer_value(json_array_get(want, (size_t)k));
        if (!same) {
            fprintf(stderr, "  FAIL: ids differ from the reference's:\n    got ");
            for (int k = 0; k < n; k++) fprintf(stderr, " %d", (int)ids[k]);
            fprintf(stderr, "\n    want");
            for (size_t k = 0; k < json_array_size(want); k++)
                fprintf(stderr, " %d", (int)json_integer_value(json_array_get(want, k)));
            fprintf(stderr, "\n    text: %s\n", text);
            harness_failures++;
        }
        free(ids);
        checked++;
    }
    return checked;
}

TEST(minilm_tokenizer_matches_reference) {
    reference r;
    bert_tokenizer *t = NULL;
    if (!load_reference(&r)) return;
    CHECK_OK(tokenizer_load(model_dir, &t));
    if (t) {
        int n = check_id_list(t, json_object_get(r.root, "sentences"), r.max_length);
        n += check_id_list(t, json_object_get(r.root, "tokenizer_cases"), r.max_length);
        printf("  %d texts tokenized as the reference does\n", n);
        CHECK(n >= 20);
    }
    tokenizer_free(t);
    free_reference(&r);
}

/* all-MiniLM-L6-v2 on one device, with its tokenizer. */
typedef struct minilm {
    bert_tokenizer *tok;
    bert_model *model;
} minilm;

static bool minilm_open(minilm *mm, const reference *r, emily_device device) {
    memset(mm, 0, sizeof *mm);
    CHECK_OK(tokenizer_load(model_dir, &mm->tok));
    if (mm->tok) CHECK_OK(bert_load(model_dir, device, &mm->model));
    bool ok = mm->tok && mm->model && mm->model->cfg.hidden == r->hidden;
    CHECK(ok);
    return ok;
}

static void minilm_close(minilm *mm) {
    bert_free(mm->model);
    tokenizer_free(mm->tok);
}

/* The reference sentences in batches of batch_size, forward passes of at
 * most max_tokens positions (0: whole batches); out is r->n x r->hidden. */
static bool minilm_embed(const minilm *mm, const reference *r, int batch_size, int max_tokens, float *out) {
    embed_options opt = {r->max_length, batch_size, max_tokens, NULL, NULL};
    emily_status s = embed_texts(mm->tok, mm->model, r->n, r->texts, &opt, out, NULL, NULL);
    CHECK_OK(s);
    return s == EMILY_OK;
}

TEST(minilm_embeddings_match_reference) {
    reference r;
    minilm mm;
    if (!load_reference(&r)) return;
    size_t n = (size_t)r.n * (size_t)r.hidden;
    float *whole = malloc(n * sizeof *whole), *parts = malloc(n * sizeof *parts);
    float *single = malloc(n * sizeof *single);
    /* one batch padded to the longest (256); passes of 512 positions (the
     * CPU's default: 2 sentences at a time here); one sentence at a time */
    if (whole && parts && single && minilm_open(&mm, &r, EMILY_CPU) && minilm_embed(&mm, &r, 32, 0, whole) &&
        minilm_embed(&mm, &r, 32, 512, parts) && minilm_embed(&mm, &r, 1, 0, single)) {
        double diff = max_abs_diff((int)n, whole, r.embeddings);
        double diff_parts = max_abs_diff((int)n, parts, r.embeddings);
        double pad = fmax(max_abs_diff((int)n, whole, single), max_abs_diff((int)n, parts, single));
        printf("  %d sentences on the cpu: max abs diff %.2e from the reference (limit 1e-4), "
               "%.2e in passes of 512 positions; %.2e against one at a time\n",
               r.n, diff, diff_parts, pad);
        CHECK(diff < 1e-4);
        CHECK(diff_parts < 1e-4);
        CHECK(pad < 1e-5);
    }
    minilm_close(&mm);
    free(whole);
    free(parts);
    free(single);
    free_reference(&r);
}

/* ---- on a GPU ---------------------------------------------------------------- */

/* cuBLAS and OpenBLAS sum the products in other orders, and the GPU's
 * exp/erf differ from glibc's in the last bit: f32 results agree to a
 * few ULP per op, which six layers and the normalization keep well below
 * 1e-5 on values of size ~0.05 to 1. */
#define GPU_TOLERANCE 1e-5

TEST(gpu_synthetic_bert_matches_cpu) {
    char dir[512];
    if (!make_temp_dir(dir, sizeof dir)) return;
    syn_model *ref = syn_write_model(dir, 99, false);
    float cpu[SYN_SENTENCES * SYN_HIDDEN], gpu[SYN_SENTENCES * SYN_HIDDEN];
    if (ref && syn_embed_on(dir, EMILY_CPU, 8, cpu) && syn_embed_on(dir, CUDA0, 8, gpu)) {
        double diff = max_abs_diff(SYN_SENTENCES * SYN_HIDDEN, cpu, gpu);
        printf("  synthetic BERT: cuda vs cpu max abs diff %.2e (limit %.0e)\n", diff, GPU_TOLERANCE);
        CHECK(diff < GPU_TOLERANCE);
    }
    syn_free(ref);
    remove_dir(dir);
}

TEST(gpu_minilm_matches_cpu) {
    reference r;
    minilm on_cpu, on_gpu;
    if (!load_reference(&r)) return;
    size_t n = (size_t)r.n * (size_t)r.hidden;
    float *cpu = malloc(n * sizeof *cpu), *gpu = malloc(n * sizeof *gpu);
    if (cpu && gpu && minilm_open(&on_cpu, &r, EMILY_CPU) && minilm_open(&on_gpu, &r, CUDA0) &&
        minilm_embed(&on_cpu, &r, 32, 0, cpu) && minilm_embed(&on_gpu, &r, 32, 0, gpu)) {
        double diff = max_abs_diff((int)n, cpu, gpu), ref = max_abs_diff((int)n, gpu, r.embeddings);
        printf("  all-MiniLM-L6-v2: cuda vs cpu max abs diff %.2e (limit %.0e), cuda vs reference "
               "%.2e (limit 1e-4)\n",
               diff, GPU_TOLERANCE, ref);
        CHECK(diff < GPU_TOLERANCE);
        CHECK(ref < 1e-4);
    }
    minilm_close(&on_cpu);
    minilm_close(&on_gpu);
    free(cpu);
    free(gpu);
    free_reference(&r);
}

/* ---- main: what runs here, and what is skipped and why ------------------------- */

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case always[] = {CASE(utf8_decoding),
                                          CASE(unicode_classes_and_folding),
                                          CASE(normalizer_and_pre_tokenizer),
                                          CASE(vocab_lookups),
                                          CASE(wordpiece_from_vocab_txt),
                                          CASE(safetensors_reads_f32_f16_bf16),
                                          CASE(safetensors_refuses_malformed_files),
                                          CASE(synthetic_bert_matches_its_definition),
                                          CASE(bert_load_reports_bad_models),
                                          {NULL, NULL}};
    static const harness_case with_model[] = {
        CASE(minilm_tokenizer_matches_reference), CASE(minilm_embeddings_match_reference), {NULL, NULL}};
    static const harness_case on_gpu[] = {CASE(gpu_synthetic_bert_matches_cpu), {NULL, NULL}};
    static const harness_case on_gpu_with_model[] = {CASE(gpu_minilm_matches_cpu), {NULL, NULL}};

    const char *env = getenv("EMILY_MINILM_DIR");
    model_dir = env && *env ? env : "models/all-MiniLM-L6-v2";
    env = getenv("EMILY_MINILM_REFERENCE");
    reference_path = env && *env ? env : "tests/models/minilm_reference.json";
    char probe[1024];
    snprintf(probe, sizeof probe, "%s/model.safetensors", model_dir);
    bool have_model = access(probe, R_OK) == 0 && access(reference_path, R_OK) == 0;
    bool have_gpu = emily_device_count(EMILY_DEVICE_CUDA) > 0;
    char why_model[1200];
    snprintf(why_model, sizeof why_model, "%s not found (scripts/setup installs the model; EMILY_MINILM_DIR names it)",
             access(reference_path, R_OK) != 0 ? reference_path : probe);
    const char *why_gpu = "no CUDA device usable here (no GPU, no driver, or a build without the CUDA engine)";

    int rc = harness_run("embed", always);
    bool skipped = false;
    if (have_model) rc = harness_run("embed (all-MiniLM-L6-v2)", with_model) || rc;
    else printf("embed: SKIPPED %d model cases: %s\n", harness_count_cases(with_model), why_model), skipped = true;
    if (have_gpu) rc = harness_run("embed (GPU)", on_gpu) || rc;
    else printf("embed: SKIPPED %d GPU cases: %s\n", harness_count_cases(on_gpu), why_gpu), skipped = true;
    if (have_gpu && have_model) rc = harness_run("embed (GPU, all-MiniLM-L6-v2)", on_gpu_with_model) || rc;
    else
        printf("embed: SKIPPED %d GPU model case: %s\n", harness_count_cases(on_gpu_with_model),
               have_gpu ? why_model : why_gpu),
            skipped = true;
    /* not harness_finish when something was skipped: --only may name a skipped case */
    return skipped ? rc : harness_finish(rc);
}
