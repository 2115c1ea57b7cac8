/* Reads a tokenizer from a model folder: tokenizer.json when present (the
 * vocabulary, the normalizer's switches, WordPiece's settings and the
 * added tokens), else vocab.txt (one token a line, its id the line
 * number) with tokenizer_config.json's switches. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tokenizer_impl.h"
#include "hand_out.h"

static const char *const special_names[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

static emily_status bad_file(const char *path, const char *what) {
    return emily_error(EMILY_ERR_ARGUMENT, "tokenizer: %s: %s", path, what);
}

static bool json_flag(const json_t *obj, const char *key, bool fallback) {
    const json_t *v = json_object_get(obj, key);
    return json_is_boolean(v) ? json_is_true(v) : fallback;
}

static emily_status add_special(bert_tokenizer *t, const char *text, int32_t id) {
    if (t->nadded == TOKENIZER_MAX_ADDED)
        return emily_error(EMILY_ERR_ARGUMENT, "tokenizer: more than %d added tokens", TOKENIZER_MAX_ADDED);
    size_t n = strlen(text);
    if (n == 0) return EMILY_OK; /* an empty token never matches */
    char *copy = malloc(n + 1);
    if (!copy) return emily_error(EMILY_ERR_MEMORY, "tokenizer: out of memory");
    memcpy(copy, text, n + 1);
    t->added[t->nadded++] = (tokenizer_added){copy, n, id};
    return EMILY_OK;
}

/* [CLS], [SEP], [UNK], [PAD] by their text. */
static emily_status find_specials(bert_tokenizer *t, const char *path, const char *unk) {
    t->cls_id = vocab_find(t->vocab, NULL, "[CLS]", 5);
    t->sep_id = vocab_find(t->vocab, NULL, "[SEP]", 5);
    t->unk_id = vocab_find(t->vocab, NULL, unk, strlen(unk));
    t->pad_id = vocab_find(t->vocab, NULL, "[PAD]", 5);
    if (t->pad_id < 0) t->pad_id = 0;
    if (t->cls_id < 0 || t->sep_id < 0 || t->unk_id < 0)
        return bad_file(path, "the vocabulary lacks [CLS], [SEP] or the unknown token");
    return EMILY_OK;
}

static emily_status load_json(bert_tokenizer *t, const char *path) {
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) return emily_error(EMILY_ERR_ARGUMENT, "tokenizer: %s: line %d: %s", path, err.line, err.text);
    emily_status s = EMILY_OK;
    const json_t *model = json_object_get(root, "model");
    const json_t *vocab_obj = json_object_get(model, "vocab");
    const json_t *norm = json_object_get(root, "normalizer");
    const json_t *pre = json_object_get(root, "pre_tokenizer");
    const char *model_type = json_string_value(json_object_get(model, "type"));
    if (!model_type || strcmp(model_type, "WordPiece") != 0 || !json_is_object(vocab_obj)) {
        s = bad_file(path, "not a WordPiece tokenizer (model.type, model.vocab)");
        goto done;
    }
    const char *norm_type = json_string_value(json_object_get(norm, "type"));
    const char *pre_type = json_string_value(json_object_get(pre, "type"));
    if (!norm_type || strcmp(norm_type, "BertNormalizer") != 0 || !pre_type ||
        strcmp(pre_type, "BertPreTokenizer") != 0) {
        s = bad_file(path, "only BertNormalizer and BertPreTokenizer are supported");
        goto done;
    }
    t->text.clean_text = json_flag(norm, "clean_text", true);
    t->text.chinese_chars = json_flag(norm, "handle_chinese_chars", true);
    t->text.lowercase = json_flag(norm, "lowercase", true);
    t->text.strip_accents = json_flag(norm, "strip_accents", t->text.lowercase);

    const char *prefix = json_string_value(json_object_get(model, "continuing_subword_prefix"));
    const char *unk = json_string_value(json_object_get(model, "unk_token"));
    const json_t *max_chars = json_object_get(model, "max_input_chars_per_word");
    if (prefix && strlen(prefix) >= sizeof t->prefix) {
        s = bad_file(path, "continuing_subword_prefix too long");
        goto done;
    }
    strcpy(t->prefix, prefix ? prefix : "##");
    if (json_is_integer(max_chars) && json_integer_value(max_chars) > 0)
        t->max_chars_per_word = (size_t)json_integer_value(max_chars);

    s = vocab_new(json_object_size(vocab_obj), &t->vocab);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)vocab_obj, key, value) {
        if (s) break;
        if (!json_is_integer(value) || json_integer_value(value) < 0 || json_integer_value(value) > VOCAB_MAX_ID)
            s = bad_file(path, "a vocabulary id is not an integer in range");
        else s = vocab_add(t->vocab, key, strlen(key), (int32_t)json_integer_value(value));
    }
    size_t i;
    json_array_foreach(json_object_get(root, "added_tokens"), i, value) {
        const char *content = json_string_value(json_object_get(value, "content"));
        const json_t *id = json_object_get(value, "id");
        if (s) break;
        if (!content || !json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > VOCAB_MAX_ID)
            s = bad_file(path, "an added token lacks its content or id");
        else s = add_special(t, content, (int32_t)json_integer_value(id));
    }
    if (!s) s = find_specials(t, path, unk ? unk : "[UNK]");
done:
    json_decref(root);
    return s;
}

static emily_status load_vocab_txt(bert_tokenizer *t, const char *path, const char *config_path) {
    FILE *f = fopen(path, "rb");
    if (!f) return bad_file(path, "cannot be opened");
    emily_status s = vocab_new(32768, &t->vocab);
    char line[1024];
    int32_t id = 0;
    while (!s && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n') {
            s = bad_file(path, "a line longer than 1022 bytes");
            break;
        }
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        s = vocab_add(t->vocab, line, n, id++);
    }
    fclose(f);
    if (s) return s;
    /* BertTokenizer's switches; it splits its special tokens out of the text */
    json_t *config = json_load_file(config_path, 0, NULL);
    t->text.clean_text = true;
    t->text.lowercase = json_flag(config, "do_lower_case", true);
    t->text.strip_accents = json_flag(config, "strip_accents", t->text.lowercase);
    t->text.chinese_chars = json_flag(config, "tokenize_chinese_chars", true);
    json_decref(config);
    for (size_t i = 0; !s && i < sizeof special_names / sizeof *special_names; i++) {
        int32_t sid = vocab_find(t->vocab, NULL, special_names[i], strlen(special_names[i]));
        if (sid >= 0) s = add_special(t, special_names[i], sid);
    }
    return s ? s : find_specials(t, path, "[UNK]");
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s", dir, name);
    return p;
}

emily_status tokenizer_load(const char *model_dir, bert_tokenizer **out) {
    *out = NULL;
    bert_tokenizer *t = calloc(1, sizeof *t);
    char *json_path = join(model_dir, "tokenizer.json");
    char *txt_path = join(model_dir, "vocab.txt");
    char *config_path = join(model_dir, "tokenizer_config.json");
    emily_status s = EMILY_OK;
    if (!t || !json_path || !txt_path || !config_path) {
        s = emily_error(EMILY_ERR_MEMORY, "tokenizer: out of memory");
    } else {
        t->max_chars_per_word = 100;
        strcpy(t->prefix, "##");
        FILE *probe = fopen(json_path, "rb");
        if (probe) {
            fclose(probe);
            s = load_json(t, json_path);
        } else if ((probe = fopen(txt_path, "rb"))) {
            fclose(probe);
            s = load_vocab_txt(t, txt_path, config_path);
        } else {
            s = emily_error(EMILY_ERR_ARGUMENT, "tokenizer: %s has neither tokenizer.json nor vocab.txt", model_dir);
        }
    }
    free(json_path);
    free(txt_path);
    free(config_path);
    return EMBED_HAND_OUT(s, t, tokenizer_free, out);
}

void tokenizer_free(bert_tokenizer *t) {
    if (!t) return;
    for (int i = 0; i < t->nadded; i++) free(t->added[i].text);
    vocab_free(t->vocab);
    free(t);
}
