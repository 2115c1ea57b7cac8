#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "embed_synthetic.h"

const char *const syn_vocab[SYN_VOCAB] = {
    "[PAD]", "[UNK]",  "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s",  "sat", "on",  "mat", ".",   ",",   "un",
    "##aff", "##able", "a",     "dog",   "ran",    "e",   "##e", "cafe", "caf", "##é", "x",   "##y", "##z", "1",
    "##2",   "!",      "w30",   "w31",   "w32",    "w33", "w34", "w35",  "w36", "w37", "w38", "w39"};

bool syn_write_safetensors(const char *path, int n, const syn_entry *entries) {
    json_t *header = json_object();
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        const syn_entry *e = &entries[i];
        json_t *shape = json_array();
        for (int d = 0; d < e->rank; d++) json_array_append_new(shape, json_integer(e->shape[d]));
        json_object_set_new(header, e->name,
                            json_pack("{s:s, s:o, s:[I, I]}", "dtype", e->dtype, "shape", shape, "data_offsets",
                                      (json_int_t)offset, (json_int_t)offset + (json_int_t)e->nbytes));
        offset += e->nbytes;
    }
    json_object_set_new(header, "__metadata__", json_pack("{s:s}", "format", "pt"));
    char *text = json_dumps(header, JSON_COMPACT);
    json_decref(header);
    FILE *f = fopen(path, "wb");
    bool ok = text && f;
    if (ok) {
        size_t len = strlen(text),
               padded = (len + 7) / 8 * 8; /* the data 8-byte aligned, as the format's writer does */
        unsigned char le[8];
        for (int b = 0; b < 8; b++) le[b] = (unsigned char)((uint64_t)padded >> (8 * b));
        ok = fwrite(le, 1, 8, f) == 8 && fwrite(text, 1, len, f) == len;
        for (size_t p = len; ok && p < padded; p++) ok = fputc(' ', f) != EOF;
        for (int i = 0; ok && i < n; i++)
            ok = entries[i].nbytes == 0 || fwrite(entries[i].data, 1, entries[i].nbytes, f) == entries[i].nbytes;
    }
    if (f && fclose(f) != 0) ok = false;
    if (!ok) fprintf(stderr, "  syn_write_safetensors: cannot write %s\n", path);
    free(text);
    return ok;
}

/* ---- the model's values ------------------------------------------------- */

enum { P_WORD, P_POS, P_TYPE, P_EMB_G, P_EMB_B, P_TOP };
enum {
    L_QW,
    L_QB,
    L_KW,
    L_KB,
    L_VW,
    L_VB,
    L_AOW,
    L_AOB,
    L_LN1G,
    L_LN1B,
    L_IW,
    L_IB,
    L_OW,
    L_OB,
    L_LN2G,
    L_LN2B,
    L_COUNT
};

typedef struct syn_param {
    char name[96];
    const char *dtype;
    int rank;
    int64_t shape[2];
    double *v;
} syn_param;

struct syn_model {
    syn_param top[P_TOP];
    syn_param layer[SYN_LAYERS][L_COUNT];
};

static uint32_t next_random(uint32_t *state) {
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* A random value exactly representable in dtype: f16 k * 2^-11 with
 * |k| < 1024, bf16 k * 2^-8 with |k| < 128 (both within +-0.5), f32 any
 * float of (-0.5, 0.5); `kind` shifts it for biases and layer-norm gains. */
static double random_value(uint32_t *st, const char *dtype, int kind) {
    double v;
    if (strcmp(dtype, "F16") == 0) v = ldexp((double)((int)(next_random(st) % 2047) - 1023), -11);
    else if (strcmp(dtype, "BF16") == 0) v = ldexp((double)((int)(next_random(st) % 255) - 127), -8);
    else v = (double)(float)((double)next_random(st) / 16777216.0 - 0.5);
    return kind == 1 ? 1.0 + v * 0.25 : kind == 2 ? v * 0.25 : v;
}

static uint16_t f16_bits(double v) { /* exact for the values above */
    uint16_t sign = v < 0 ? 0x8000 : 0;
    double a = fabs(v);
    if (a == 0) return sign;
    int e;
    double m = frexp(a, &e);                                           /* a = m 2^e, m in [0.5, 1) */
    if (e - 1 < -14) return (uint16_t)(sign | (uint16_t)ldexp(a, 24)); /* subnormal */
    return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024));
}

static void set_param(syn_param *p, const char *name, const char *dtype, int64_t d0, int64_t d1, int kind,
                      uint32_t *st) {
    snprintf(p->name, sizeof p->name, "%s", name);
    p->dtype = dtype;
    p->rank = d1 ? 2 : 1;
    p->shape[0] = d0;
    p->shape[1] = d1;
    size_t n = (size_t)(d0 * (d1 ? d1 : 1));
    p->v = malloc(n * sizeof *p->v);
    for (size_t i = 0; p->v && i < n; i++) p->v[i] = random_value(st, dtype, kind);
}

/* The parameter's bytes in its dtype (malloc'd). */
static void *encode(const syn_param *p, size_t *nbytes) {
    size_t n = (size_t)(p->shape[0] * (p->rank == 2 ? p->shape[1] : 1));
    bool half = strcmp(p->dtype, "F32") != 0;
    *nbytes = n * (half ? 2 : 4);
    unsigned char *out = malloc(*nbytes ? *nbytes : 1);
    for (size_t i = 0; out && i < n; i++) {
        float f = (float)p->v[i];
        uint32_t bits;
        memcpy(&bits, &f, 4);
        if (strcmp(p->dtype, "F16") == 0) {
            uint16_t h = f16_bits(p->v[i]);
            memcpy(out + 2 * i, &h, 2);
        } else if (half) { /* BF16: the top half of the f32 (exact) */
            uint16_t h = (uint16_t)(bits >> 16);
            memcpy(out + 2 * i, &h, 2);
        } else {
            memcpy(out + 4 * i, &f, 4);
        }
    }
    return out;
}

bool syn_write_file(const char *dir, const char *name, const void *bytes, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(bytes, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    return ok;
}

syn_model *syn_write_model(const char *dir, unsigned seed, bool prefixed) {
    syn_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    uint32_t st = seed;
    const char *pre = prefixed ? "bert." : "";
    char name[96];
#define TOP(idx, nm, dt, d0, d1, kind)                       \
    snprintf(name, sizeof name, "%sembeddings.%s", pre, nm); \
    set_param(&m->top[idx], name, dt, d0, d1, kind, &st)
    TOP(P_WORD, "word_embeddings.weight", "F16", SYN_VOCAB, SYN_HIDDEN, 0);
    TOP(P_POS, "position_embeddings.weight", "F32", SYN_POSITIONS, SYN_HIDDEN, 0);
    TOP(P_TYPE, "token_type_embeddings.weight", "BF16", 2, SYN_HIDDEN, 0);
    TOP(P_EMB_G, "LayerNorm.weight", "F32", SYN_HIDDEN, 0, 1);
    TOP(P_EMB_B, "LayerNorm.bias", "F32", SYN_HIDDEN, 0, 2);
#undef TOP
    static const struct {
        const char *name;
        int out, in, kind; /* in 0: a vector of out; 1 and 2 for hidden and ff sizes */
    } parts[L_COUNT] = {{"attention.self.query.weight", 1, 1, 0},
                        {"attention.self.query.bias", 1, 0, 2},
                        {"attention.self.key.weight", 1, 1, 0},
                        {"attention.self.key.bias", 1, 0, 2},
                        {"attention.self.value.weight", 1, 1, 0},
                        {"attention.self.value.bias", 1, 0, 2},
                        {"attention.output.dense.weight", 1, 1, 0},
                        {"attention.output.dense.bias", 1, 0, 2},
                        {"attention.output.LayerNorm.weight", 1, 0, 1},
                        {"attention.output.LayerNorm.bias", 1, 0, 2},
                        {"intermediate.dense.weight", 2, 1, 0},
                        {"intermediate.dense.bias", 2, 0, 2},
                        {"output.dense.weight", 1, 2, 0},
                        {"output.dense.bias", 1, 0, 2},
                        {"output.LayerNorm.weight", 1, 0, 1},
                        {"output.LayerNorm.bias", 1, 0, 2}};
    for (int l = 0; l < SYN_LAYERS; l++) {
        for (int p = 0; p < L_COUNT; p++) {
            int64_t out = parts[p].out == 1 ? SYN_HIDDEN : SYN_FF;
            int64_t in = parts[p].in == 0 ? 0 : parts[p].in == 1 ? SYN_HIDDEN : SYN_FF;
            /* a bf16 and an f16 matrix among the f32 ones */
            const char *dt = (l == 0 && p == L_QW) ? "BF16" : (l == 1 && p == L_IW) ? "F16" : "F32";
            snprintf(name, sizeof name, "%sencoder.layer.%d.%s", pre, l, parts[p].name);
            set_param(&m->layer[l][p], name, dt, out, in, parts[p].kind, &st);
        }
    }
    /* the file: every parameter, plus the position_ids buffer real checkpoints carry */
    enum { N = P_TOP + SYN_LAYERS * L_COUNT };
    syn_entry entries[N + 1];
    void *bytes[N];
    int64_t position_ids[SYN_POSITIONS];
    for (int i = 0; i < SYN_POSITIONS; i++) position_ids[i] = i;
    bool ok = true;
    for (int i = 0; i < N; i++) {
        const syn_param *p = i < P_TOP ? &m->top[i] : &m->layer[(i - P_TOP) / L_COUNT][(i - P_TOP) % L_COUNT];
        size_t nb = 0;
        ok = ok && p->v;
        bytes[i] = encode(p, &nb);
        ok = ok && bytes[i];
        entries[i] = (syn_entry){p->name, p->dtype, p->rank, {p->shape[0], p->shape[1]}, bytes[i], nb};
    }
    snprintf(name, sizeof name, "%sembeddings.position_ids", pre);
    entries[N] = (syn_entry){name, "I64", 2, {1, SYN_POSITIONS}, position_ids, sizeof position_ids};
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ok = ok && syn_write_safetensors(path, N + 1, entries);
    for (int i = 0; i < N; i++) free(bytes[i]);
    char config[512];
    snprintf(config, sizeof config,
             "{\"architectures\": [\"BertModel\"], \"model_type\": \"bert\", \"hidden_act\": \"gelu\",\n"
             " \"hidden_size\": %d, \"num_attention_heads\": %d, \"num_hidden_layers\": %d,\n"
             " \"intermediate_size\": %d, \"max_position_embeddings\": %d, \"type_vocab_size\": 2,\n"
             " \"vocab_size\": %d, \"layer_norm_eps\": %g, \"position_embedding_type\": \"absolute\"}\n",
             SYN_HIDDEN, SYN_HEADS, SYN_LAYERS, SYN_FF, SYN_POSITIONS, SYN_VOCAB, SYN_EPS);
    ok = ok && syn_write_file(dir, "config.json", config, strlen(config));
    char vocab[1024] = "";
    for (int i = 0; i < SYN_VOCAB; i++) {
        strcat(vocab, syn_vocab[i]);
        strcat(vocab, "\n");
    }
    ok = ok && syn_write_file(dir, "vocab.txt", vocab, strlen(vocab));
    if (!ok) {
        fprintf(stderr, "  syn_write_model: cannot write the model into %s\n", dir);
        syn_free(m);
        return NULL;
    }
    return m;
}

void syn_free(syn_model *m) {
    if (!m) return;
    for (int i = 0; i < P_TOP; i++) free(m->top[i].v);
    for (int l = 0; l < SYN_LAYERS; l++)
        for (int p = 0; p < L_COUNT; p++) free(m->layer[l][p].v);
    free(m);
}

/* ---- the forward pass, from BERT's definition ---------------------------- */

/* y[i][o] = b[o] + sum_k x[i][k] w[o][k] (PyTorch's Linear) */
static void linear(int n, int in, int out, const double *x, const double *w, const double *b, double *y) {
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++) {
            double acc = b[o];
            for (int k = 0; k < in; k++) acc += x[i * in + k] * w[o * in + k];
            y[i * out + o] = acc;
        }
}

static void layer_norm(int n, double *x, const double *g, const double *b) {
    for (int i = 0; i < n; i++) {
        double *r = x + i * SYN_HIDDEN, mean = 0, var = 0;
        for (int k = 0; k < SYN_HIDDEN; k++) mean += r[k] / SYN_HIDDEN;
        for (int k = 0; k < SYN_HIDDEN; k++) var += (r[k] - mean) * (r[k] - mean) / SYN_HIDDEN;
        for (int k = 0; k < SYN_HIDDEN; k++) r[k] = (r[k] - mean) / sqrt(var + SYN_EPS) * g[k] + b[k];
    }
}

void syn_embed(const syn_model *m, const int32_t *ids, int n, double out[SYN_HIDDEN]) {
    enum { H = SYN_HIDDEN, D = SYN_HIDDEN / SYN_HEADS, S = SYN_POSITIONS };
    double x[S * H], q[S * H], k[S * H], v[S * H], ctx[S * H], a[S * H], f[S * SYN_FF];
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++)
            x[i * H + h] = m->top[P_WORD].v[ids[i] * H + h] + m->top[P_POS].v[i * H + h] + m->top[P_TYPE].v[h];
    layer_norm(n, x, m->top[P_EMB_G].v, m->top[P_EMB_B].v);
    for (int l = 0; l < SYN_LAYERS; l++) {
        const syn_param *p = m->layer[l];
        linear(n, H, H, x, p[L_QW].v, p[L_QB].v, q);
        linear(n, H, H, x, p[L_KW].v, p[L_KB].v, k);
        linear(n, H, H, x, p[L_VW].v, p[L_VB].v, v);
        for (int hd = 0; hd < SYN_HEADS; hd++) {
            for (int i = 0; i < n; i++) {
                double s[S], top = -INFINITY, z = 0;
                for (int j = 0; j < n; j++) {
                    s[j] = 0;
                    for (int c = 0; c < D; c++) s[j] += q[i * H + hd * D + c] * k[j * H + hd * D + c];
                    s[j] /= sqrt((double)D);
                    top = fmax(top, s[j]);
                }
                for (int j = 0; j < n; j++) z += s[j] = exp(s[j] - top);
                for (int c = 0; c < D; c++) {
                    double acc = 0;
                    for (int j = 0; j < n; j++) acc += s[j] / z * v[j * H + hd * D + c];
                    ctx[i * H + hd * D + c] = acc;
                }
            }
        }
        linear(n, H, H, ctx, p[L_AOW].v, p[L_AOB].v, a);
        for (int i = 0; i < n * H; i++) x[i] += a[i];
        layer_norm(n, x, p[L_LN1G].v, p[L_LN1B].v);
        linear(n, H, SYN_FF, x, p[L_IW].v, p[L_IB].v, f);
        for (int i = 0; i < n * SYN_FF; i++) f[i] = 0.5 * f[i] * (1 + erf(f[i] / sqrt(2.0)));
        linear(n, SYN_FF, H, f, p[L_OW].v, p[L_OB].v, a);
        for (int i = 0; i < n * H; i++) x[i] += a[i];
        layer_norm(n, x, p[L_LN2G].v, p[L_LN2B].v);
    }
    double norm = 0;
    for (int h = 0; h < H; h++) {
        out[h] = 0;
        for (int i = 0; i < n; i++) out[h] += x[i * H + h] / n;
        norm += out[h] * out[h];
    }
    for (int h = 0; h < H; h++) out[h] /= fmax(sqrt(norm), 1e-12);
}
