/* The GGUF reader (emily/gguf.h): files written by the test's own writer
 * (gguf_writer.c) with every metadata type, arrays and tensors of every
 * loadable type, their block encodings made here from chosen codes,
 * scales and mins, so that ggml's value of every element is known (in
 * double) and emily_dequantize of the loaded triple must give it exactly;
 * the quantized matmul on loaded weights; malformed files (truncated at
 * every byte, bad magic and version, huge counts and lengths, extents
 * past the end, misaligned offsets, bad ranks and dimensions, unknown
 * types, duplicates); and, where it is installed, SmolLM2's Q4_1 file
 * against values the gguf Python package computed
 * (tests/models/smollm2_gguf_reference.py). */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>
#include "gguf_writer.h"
#include "harness.h"

enum { T_U8, T_S8, T_U16, T_S16, T_U32, T_S32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_S64, T_F64 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static char dir[64];

static unsigned rnd(unsigned n) { return (unsigned)(xorshift64(&rng) % n); }

/* A path in the test's directory. */
static const char *path_of(const char *name) {
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* A file from encoded pairs and tensors, opened (NULL, counted, when
 * that fails). */
static emily_gguf *write_open(const char *name, const gw *kvs, uint64_t kv_count, const gw_tensor *ts, size_t n) {
    gw f = {0};
    gw_file(&f, 3, kvs, kv_count, ts, n, 32);
    emily_gguf *g = NULL;
    CHECK(gw_save(&f, path_of(name)));
    CHECK_OK(emily_gguf_open(path_of(name), &g));
    gw_free(&f);
    return g;
}

/* An f16 with a random sign, a mantissa and an exponent in [lo, hi]
 * (unbiased): products and sums of such values with small integers stay
 * exact in double. */
static uint16_t rnd_f16(int lo, int hi) {
    unsigned e = (unsigned)(lo + (int)rnd((unsigned)(hi - lo + 1)) + 15);
    return (uint16_t)((rnd(2) << 15) | (e << 10) | rnd(1024));
}

static double f16_value(uint16_t h) {
    int e = (h >> 10) & 31;
    double m = e ? 1024 + (h & 1023) : (h & 1023);
    double v = ldexp(m, (e ? e : 1) - 25);
    return h >> 15 ? -v : v;
}

static void put16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

/* ---- block encodings, from chosen codes ------------------------------------ */

/* One tensor of `rows` rows of k elements in the block format `type`:
 * the file's bytes (malloc'd) and ggml's value of every element (in
 * double, exact). */
typedef struct block_case {
    unsigned char *bytes;
    size_t nbytes;
    double *want;
} block_case;

static block_case encode(int type, int64_t rows, int64_t k) {
    int64_t blen = type == EMILY_GGML_Q4_K ? 256 : 32;
    int64_t bbytes = type == EMILY_GGML_Q8_0 ? 34 : type == EMILY_GGML_Q4_0 ? 18 : type == EMILY_GGML_Q4_1 ? 20 : 144;
    int64_t nblocks = rows * k / blen;
    block_case c = {malloc((size_t)(nblocks * bbytes) + 1), (size_t)(nblocks * bbytes),
                    malloc((size_t)(rows * k) * sizeof(double) + 8)};
    if (!c.bytes || !c.want) {
        harness_failures++;
        return c;
    }
    for (int64_t b = 0; b < nblocks; b++) {
        unsigned char *blk = c.bytes + b * bbytes;
        double *w = c.want + b * blen;
        uint16_t d = rnd_f16(-8, 3), m = rnd_f16(-8, 3);
        put16(blk, d);
        if (type == EMILY_GGML_Q8_0) {
            for (int i = 0; i < 32; i++) {
                int q = (int)rnd(256) - 128;
                blk[2 + i] = (unsigned char)(int8_t)q;
                w[i] = f16_value(d) * q;
            }
        } else if (type == EMILY_GGML_Q4_0 || type == EMILY_GGML_Q4_1) {
            int at = type == EMILY_GGML_Q4_0 ? 2 : 4;
            if (type == EMILY_GGML_Q4_1) put16(blk + 2, m);
            unsigned q[32];
            for (int i = 0; i < 32; i++) q[i] = rnd(16);
            /* ggml's order: byte j holds element j (low) and j + 16 (high) */
            for (int j = 0; j < 16; j++) blk[at + j] = (unsigned char)(q[j] | (q[j + 16] << 4));
            for (int i = 0; i < 32; i++)
                w[i] = type == EMILY_GGML_Q4_0 ? f16_value(d) * ((int)q[i] - 8) : f16_value(d) * q[i] + f16_value(m);
        } else {
            put16(blk + 2, m);
            unsigned sc[8], mn[8];
            for (int j = 0; j < 8; j++) {
                sc[j] = rnd(64);
                mn[j] = rnd(64);
            }
            unsigned char *s = blk + 4;
            for (int j = 0; j < 4; j++) {
                s[j] = (unsigned char)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
                s[j + 4] = (unsigned char)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
                s[j + 8] = (unsigned char)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
            }
            unsigned char *qs = blk + 16;
            for (int g = 0; g < 8; g++) {
                for (int l = 0; l < 32; l++) {
                    unsigned q = rnd(16);
                    /* run g / 2, low nibbles for even groups */
                    unsigned char *byte = qs + 32 * (g / 2) + l;
                    *byte = (unsigned char)(g % 2 ? (*byte & 15) | (q << 4) : (*byte & 0xf0) | q);
                    w[g * 32 + l] = f16_value(d) * sc[g] * q - f16_value(m) * mn[g];
                }
            }
        }
    }
    return c;
}

static void block_case_free(block_case *c) {
    free(c->bytes);
    free(c->want);
}

/* emily_dequantize of the loaded triple (f32 scales) equals ggml's value
 * rounded to f32, element for element. */
static void check_dequantized(const emily_gguf_tensor *t, const double *want, int64_t n, const char *what) {
    emily_tensor *w = NULL;
    CHECK_OK(emily_dequantize(t->q, t->scales, t->biases, t->bits, t->group_size, &w));
    double *got = harness_doubles(w);
    int64_t bad = 0;
    for (int64_t i = 0; got && i < n; i++)
        if (got[i] != (double)(float)want[i] && bad++ < 3)
            fprintf(stderr, "  %s: element %lld is %.9g, want %.9g\n", what, (long long)i, got[i], want[i]);
    CHECK(got && emily_tensor_size(w) == n && bad == 0);
    free(got);
    emily_tensor_release(w);
}

TEST(block_types_dequantize_exactly) {
    static const int types[4] = {EMILY_GGML_Q8_0, EMILY_GGML_Q4_0, EMILY_GGML_Q4_1, EMILY_GGML_Q4_K};
    static const int bits[4] = {8, 4, 4, 4};
    for (int ti = 0; ti < 4; ti++) {
        int64_t rows = 3, k = 512, rows2 = 2, mid = 2; /* a 2-D and a 3-D tensor */
        block_case a = encode(types[ti], rows, k), b = encode(types[ti], rows2 * mid, k);
        gw kvs = {0};
        gw_tensor ts[2] = {
            {"w2", 2, {(uint64_t)k, (uint64_t)rows}, (uint32_t)types[ti], a.bytes, a.nbytes},
            {"w3", 3, {(uint64_t)k, (uint64_t)mid, (uint64_t)rows2}, (uint32_t)types[ti], b.bytes, b.nbytes}};
        emily_gguf *g = write_open("blocks.gguf", &kvs, 0, ts, 2);
        emily_gguf_tensor t;
        CHECK_OK(emily_gguf_load(g, "w2", EMILY_CPU, EMILY_F32, &t));
        CHECK(t.dense == NULL && t.bits == bits[ti] && t.group_size == 32);
        CHECK(t_shape_is(t.q, 2, (int64_t[]){rows, k * bits[ti] / 8}));
        CHECK(t_shape_is(t.scales, 2, (int64_t[]){rows, k / 32}) && t_shape_is(t.biases, 2, (int64_t[]){rows, k / 32}));
        CHECK(emily_tensor_dtype(t.q) == EMILY_U8 && emily_tensor_dtype(t.scales) == EMILY_F32);
        check_dequantized(&t, a.want, rows * k, emily_gguf_type_name(types[ti]));
        emily_gguf_tensor_release(&t);
        CHECK(t.q == NULL && t.scales == NULL);
        /* rank 3: {2, 2, K} loads as N = 4 rows */
        CHECK_OK(emily_gguf_load(g, "w3", EMILY_CPU, EMILY_F32, &t));
        CHECK(t_shape_is(t.q, 2, (int64_t[]){rows2 * mid, k * bits[ti] / 8}));
        check_dequantized(&t, b.want, rows2 * mid * k, "rank 3");
        emily_gguf_tensor_release(&t);
        emily_gguf_close(g);
        block_case_free(&a);
        block_case_free(&b);
    }
}

/* A block tensor with K = 0 and a huge N holds no elements: it loads at
 * once as {N, 0} codes (fuzz_gguf found the loader walking its rows). */
TEST(empty_block_tensors) {
    gw kvs = {0};
    gw_tensor ts[2] = {{"wide", 2, {0, (uint64_t)1 << 58}, EMILY_GGML_Q4_K, NULL, 0},
                       {"none", 2, {64, 0}, EMILY_GGML_Q8_0, NULL, 0}};
    emily_gguf *g = write_open("empty.gguf", &kvs, 0, ts, 2);
    emily_gguf_tensor t;
    CHECK_OK(emily_gguf_load(g, "wide", EMILY_CPU, EMILY_F32, &t));
    CHECK(t_shape_is(t.q, 2, (int64_t[]){(int64_t)1 << 58, 0}) &&
          t_shape_is(t.scales, 2, (int64_t[]){(int64_t)1 << 58, 0}));
    emily_gguf_tensor_release(&t);
    CHECK_OK(emily_gguf_load(g, "none", EMILY_CPU, EMILY_BF16, &t));
    CHECK(t_shape_is(t.q, 2, (int64_t[]){0, 64}) && t_shape_is(t.biases, 2, (int64_t[]){0, 2}));
    emily_gguf_tensor_release(&t);
    emily_gguf_close(g);
}

/* The codes themselves: Q4_1's nibbles repacked to Emily's order, Q8_0's
 * shifted by 128, scales and biases as emily/gguf.h lists them. */
TEST(triple_by_hand) {
    unsigned char q41[20] = {0}, q80[34] = {0};
    put16(q41, 0x3c00);     /* d = 1 */
    put16(q41 + 2, 0xc000); /* m = -2 */
    for (int j = 0; j < 16; j++) q41[4 + j] = (unsigned char)(j | ((15 - j) << 4));
    put16(q80, 0x3800); /* d = 0.5 */
    for (int i = 0; i < 32; i++) q80[2 + i] = (unsigned char)(int8_t)(i - 16);
    gw kvs = {0};
    gw_tensor ts[2] = {{"a", 1, {32}, EMILY_GGML_Q4_1, q41, 20}, {"b", 1, {32}, EMILY_GGML_Q8_0, q80, 34}};
    emily_gguf *g = write_open("hand.gguf", &kvs, 0, ts, 2);
    emily_gguf_tensor t;
    CHECK_OK(emily_gguf_load(g, "a", EMILY_CPU, EMILY_F32, &t));
    /* element e: e < 16 -> e, e >= 16 -> 15 - (e - 16); Emily byte i = e(2i) | e(2i+1) << 4 */
    unsigned char want[16];
    for (int i = 0; i < 16; i++) {
        int e0 = 2 * i, e1 = 2 * i + 1;
        int v0 = e0 < 16 ? e0 : 31 - e0, v1 = e1 < 16 ? e1 : 31 - e1;
        want[i] = (unsigned char)(v0 | (v1 << 4));
    }
    CHECK(t_holds(t.q, EMILY_U8, want, 16));
    CHECK(t_holds(t.scales, EMILY_F32, (float[]){1.0f}, 4) && t_holds(t.biases, EMILY_F32, (float[]){-2.0f}, 4));
    emily_gguf_tensor_release(&t);
    CHECK_OK(emily_gguf_load(g, "b", EMILY_CPU, EMILY_F16, &t));
    unsigned char w8[32];
    for (int i = 0; i < 32; i++) w8[i] = (unsigned char)(i - 16 + 128);
    CHECK(t_holds(t.q, EMILY_U8, w8, 32));
    CHECK(t_holds(t.scales, EMILY_F16, (uint16_t[]){0x3800}, 2) &&
          t_holds(t.biases, EMILY_F16, (uint16_t[]){0xd400}, 2)); /* -64 */
    emily_gguf_tensor_release(&t);
    CHECK_OK(emily_gguf_load(g, "b", EMILY_CPU, EMILY_BF16, &t));
    CHECK(t_holds(t.scales, EMILY_BF16, (uint16_t[]){0x3f00}, 2) &&
          t_holds(t.biases, EMILY_BF16, (uint16_t[]){0xc280}, 2));
    emily_gguf_tensor_release(&t);
    emily_gguf_close(g);
}

/* f16 and bf16 scales: Emily's conversion of the f32 ones (Nx's rules),
 * so Q8_0 (d exactly an f16) keeps every value exact in f16. */
TEST(narrow_scale_types) {
    block_case a = encode(EMILY_GGML_Q8_0, 2, 64), b = encode(EMILY_GGML_Q4_K, 2, 256);
    gw kvs = {0};
    gw_tensor ts[2] = {{"a", 2, {64, 2}, EMILY_GGML_Q8_0, a.bytes, a.nbytes},
                       {"b", 2, {256, 2}, EMILY_GGML_Q4_K, b.bytes, b.nbytes}};
    emily_gguf *g = write_open("narrow.gguf", &kvs, 0, ts, 2);
    emily_gguf_tensor t32, t16;
    CHECK_OK(emily_gguf_load(g, "a", EMILY_CPU, EMILY_F16, &t16));
    CHECK_OK(emily_gguf_load(g, "a", EMILY_CPU, EMILY_F32, &t32));
    CHECK(emily_tensor_dtype(t16.scales) == EMILY_F16 && emily_tensor_dtype(t16.biases) == EMILY_F16);
    double *s16 = harness_doubles(t16.scales), *s32 = harness_doubles(t32.scales);
    double *b16 = harness_doubles(t16.biases), *b32 = harness_doubles(t32.biases);
    for (int i = 0; s16 && s32 && b16 && b32 && i < 4; i++) CHECK(s16[i] == s32[i] && b16[i] == b32[i]);
    free(s16), free(s32), free(b16), free(b32);
    emily_gguf_tensor_release(&t16);
    emily_gguf_tensor_release(&t32);
    for (int st = 0; st < 2; st++) {
        emily_dtype dt = st ? EMILY_BF16 : EMILY_F16;
        emily_gguf_tensor tn, tf;
        CHECK_OK(emily_gguf_load(g, "b", EMILY_CPU, dt, &tn));
        CHECK_OK(emily_gguf_load(g, "b", EMILY_CPU, EMILY_F32, &tf));
        emily_tensor *want = NULL;
        CHECK_OK(emily_as_type(tf.scales, dt, &want));
        CHECK(t_same_bytes(tn.scales, want));
        emily_tensor_release(want);
        emily_gguf_tensor_release(&tn);
        emily_gguf_tensor_release(&tf);
    }
    emily_gguf_close(g);
    block_case_free(&a);
    block_case_free(&b);
}

/* x . W^T on loaded weights against the product of x and ggml's values
 * in double, within emily/ops_quant.h's bound (a reordered f32 sum and
 * the final rounding). */
TEST(quantized_matmul_on_loaded_weights) {
    static const int types[3] = {EMILY_GGML_Q4_1, EMILY_GGML_Q8_0, EMILY_GGML_Q4_K};
    for (int ti = 0; ti < 3; ti++) {
        int64_t n = 5, k = 512, m = 3;
        block_case c = encode(types[ti], n, k);
        gw kvs = {0};
        gw_tensor ts[1] = {{"w", 2, {(uint64_t)k, (uint64_t)n}, (uint32_t)types[ti], c.bytes, c.nbytes}};
        emily_gguf *g = write_open("matmul.gguf", &kvs, 0, ts, 1);
        emily_gguf_tensor t;
        CHECK_OK(emily_gguf_load(g, "w", EMILY_CPU, EMILY_F32, &t));
        float *xv = malloc((size_t)(m * k) * sizeof *xv);
        for (int64_t i = 0; xv && i < m * k; i++) xv[i] = (float)((int)rnd(2001) - 1000) / 256.0f;
        emily_tensor *x = t_from(EMILY_F32, 2, (int64_t[]){m, k}, xv), *out = NULL;
        CHECK_OK(emily_quantized_matmul(x, t.q, t.scales, t.biases, t.bits, 32, true, &out));
        double *got = harness_doubles(out);
        for (int64_t r = 0; got && xv && r < m; r++) {
            for (int64_t j = 0; j < n; j++) {
                double exact = 0, mag = 0;
                for (int64_t i = 0; i < k; i++) {
                    double w = (double)(float)c.want[j * k + i];
                    exact += xv[r * k + i] * w;
                    mag += fabs(xv[r * k + i] * w);
                }
                double bound = (double)k * 0x1p-24 * mag + 0x1p-24 * fabs(exact) + 1e-30;
                if (!(fabs(got[r * n + j] - exact) <= bound)) {
                    fprintf(stderr, "  %s: out[%lld, %lld] = %.9g, want %.9g within %.3g\n",
                            emily_gguf_type_name(types[ti]), (long long)r, (long long)j, got[r * n + j], exact, bound);
                    harness_failures++;
                }
            }
        }
        free(got);
        free(xv);
        RELEASE(x, out);
        emily_gguf_tensor_release(&t);
        emily_gguf_close(g);
        block_case_free(&c);
    }
}

/* Plain types: the file's bytes under the reversed shape. */
TEST(dense_types) {
    static const struct {
        int type;
        emily_dtype dt;
        size_t size;
    } plain[8] = {{EMILY_GGML_F32, EMILY_F32, 4}, {EMILY_GGML_F16, EMILY_F16, 2}, {EMILY_GGML_BF16, EMILY_BF16, 2},
                  {EMILY_GGML_F64, EMILY_F64, 8}, {EMILY_GGML_I8, EMILY_S8, 1},   {EMILY_GGML_I16, EMILY_S16, 2},
                  {EMILY_GGML_I32, EMILY_S32, 4}, {EMILY_GGML_I64, EMILY_S64, 8}};
    static const uint32_t ranks[8] = {1, 2, 3, 4, 2, 1, 3, 2};
    static const uint64_t nes[8][4] = {{7}, {3, 2}, {2, 3, 1}, {1, 2, 1, 2}, {5, 0}, {1}, {2, 2, 2}, {4, 3}};
    static const char *names[8] = {"f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64"};
    unsigned char bytes[8][128];
    gw_tensor ts[8];
    for (int i = 0; i < 8; i++) {
        uint64_t count = 1;
        for (uint32_t d = 0; d < ranks[i]; d++) count *= nes[i][d];
        for (size_t b = 0; b < sizeof bytes[i]; b++) bytes[i][b] = (unsigned char)rnd(256);
        if (plain[i].dt == EMILY_F16 || plain[i].dt == EMILY_BF16 || plain[i].dt == EMILY_F32 ||
            plain[i].dt == EMILY_F64)
            for (size_t b = plain[i].size - 1; b < sizeof bytes[i]; b += plain[i].size)
                bytes[i][b] &= 0x3f; /* no NaNs */
        ts[i] = (gw_tensor){names[i], ranks[i], {0}, (uint32_t)plain[i].type, bytes[i], (size_t)count * plain[i].size};
        memcpy(ts[i].ne, nes[i], sizeof ts[i].ne);
    }
    gw kvs = {0};
    emily_gguf *g = write_open("dense.gguf", &kvs, 0, ts, 8);
    CHECK(emily_gguf_tensor_count(g) == 8);
    for (int i = 0; g && i < 8; i++) {
        emily_gguf_tensor_info info;
        CHECK_OK(emily_gguf_tensor_info_at(g, (size_t)i, &info));
        CHECK(info.name_len == strlen(names[i]) && memcmp(info.name, names[i], info.name_len) == 0);
        CHECK(info.ggml_type == plain[i].type && info.rank == (int)ranks[i] && info.nbytes == ts[i].nbytes);
        CHECK(info.offset % 32 == 0);
        int64_t shape[4];
        for (uint32_t d = 0; d < ranks[i]; d++) {
            shape[d] = (int64_t)nes[i][ranks[i] - 1 - d];
            CHECK(info.shape[d] == shape[d]);
        }
        size_t idx;
        CHECK_OK(emily_gguf_find_tensor(g, names[i], &idx));
        CHECK(idx == (size_t)i);
        emily_gguf_tensor t;
        CHECK_OK(emily_gguf_load(g, names[i], EMILY_CPU, EMILY_F32, &t));
        CHECK(t.q == NULL && t.bits == 0 && t_shape_is(t.dense, (int)ranks[i], shape));
        CHECK(t_holds(t.dense, plain[i].dt, bytes[i], ts[i].nbytes));
        emily_gguf_tensor_release(&t);
    }
    emily_gguf_close(g);
}

/* Every metadata type, arrays of each, and the accessors' errors. */
TEST(metadata_values) {
    gw k = {0};
    gw_key(&k, "u8", T_U8), gw_u8(&k, 200);
    gw_key(&k, "s8", T_S8), gw_u8(&k, 0x80);
    gw_key(&k, "u16", T_U16), gw_u16(&k, 65535);
    gw_key(&k, "s16", T_S16), gw_u16(&k, 0x8000);
    gw_key(&k, "u32", T_U32), gw_u32(&k, 4000000000u);
    gw_key(&k, "s32", T_S32), gw_u32(&k, 0xffffffffu);
    gw_key(&k, "f32", T_F32), gw_f32(&k, 0.1f);
    gw_key(&k, "bool", T_BOOL), gw_u8(&k, 1);
    gw_key(&k, "str", T_STR), gw_str(&k, "llama");
    gw_key(&k, "u64", T_U64), gw_u64(&k, UINT64_MAX);
    gw_key(&k, "s64", T_S64), gw_u64(&k, (uint64_t)INT64_MIN);
    gw_key(&k, "f64", T_F64), gw_f64(&k, 1e100);
    gw_key(&k, "empty", T_STR), gw_str(&k, "");
    gw_key(&k, "a.str", T_ARR), gw_array(&k, T_STR, 3), gw_str(&k, "a"), gw_str(&k, ""), gw_str(&k, "ccc");
    gw_key(&k, "a.s32", T_ARR), gw_array(&k, T_S32, 2), gw_u32(&k, 7), gw_u32(&k, (uint32_t)-9);
    gw_key(&k, "a.f32", T_ARR), gw_array(&k, T_F32, 2), gw_f32(&k, 1.5f), gw_f32(&k, -2.0f);
    gw_key(&k, "a.bool", T_ARR), gw_array(&k, T_BOOL, 2), gw_u8(&k, 0), gw_u8(&k, 1);
    gw_key(&k, "a.u64", T_ARR), gw_array(&k, T_U64, 2), gw_u64(&k, 5), gw_u64(&k, UINT64_MAX);
    gw_key(&k, "a.f64", T_ARR), gw_array(&k, T_F64, 1), gw_f64(&k, -0.25);
    gw_key(&k, "a.none", T_ARR), gw_array(&k, T_U8, 0);
    gw_key(&k, "general.alignment", T_U32), gw_u32(&k, 32);
    emily_gguf *g = write_open("meta.gguf", &k, 21, NULL, 0);
    gw_free(&k);
    if (!g) return;
    CHECK(emily_gguf_key_count(g) == 21 && emily_gguf_tensor_count(g) == 0);
    int64_t i;
    double f;
    const char *s;
    size_t n;
    emily_gguf_value_type et;
    static const struct {
        const char *key;
        int64_t v;
    } ints[] = {{"u8", 200},           {"s8", -128}, {"u16", 65535}, {"s16", -32768},
                {"u32", 4000000000ll}, {"s32", -1},  {"bool", 1},    {"s64", INT64_MIN}};
    for (size_t j = 0; j < sizeof ints / sizeof *ints; j++) {
        i = 0;
        CHECK_OK(emily_gguf_get_int(g, ints[j].key, &i));
        CHECK(i == ints[j].v);
    }
    CHECK_ERR(emily_gguf_get_int(g, "u64", &i), EMILY_ERR_TYPE,
              "key u64 holds the u64 18446744073709551615, above INT64_MAX");
    CHECK_ERR(emily_gguf_get_int(g, "f32", &i), EMILY_ERR_TYPE,
              "gguf_get_int: key f32 holds f32, not an integer or bool");
    CHECK_OK(emily_gguf_get_float(g, "f32", &f));
    CHECK(f == (double)0.1f);
    CHECK_OK(emily_gguf_get_float(g, "f64", &f));
    CHECK(f == 1e100);
    CHECK_OK(emily_gguf_get_float(g, "u64", &f));
    CHECK(f == 18446744073709551616.0);
    CHECK_OK(emily_gguf_get_float(g, "s16", &f));
    CHECK(f == -32768);
    CHECK_ERR(emily_gguf_get_float(g, "str", &f), EMILY_ERR_TYPE, "key str holds string, not a number");
    CHECK_OK(emily_gguf_get_string(g, "str", &s, &n));
    CHECK(n == 5 && memcmp(s, "llama", 5) == 0);
    CHECK_OK(emily_gguf_get_string(g, "empty", &s, &n));
    CHECK(n == 0);
    CHECK_ERR(emily_gguf_get_string(g, "u8", &s, &n), EMILY_ERR_TYPE, "key u8 holds u8, not a string");
    CHECK_ERR(emily_gguf_get_string(g, "nope", &s, &n), EMILY_ERR_ARGUMENT, "key nope is not in");
    CHECK(emily_gguf_has_key(g, "a.str") && !emily_gguf_has_key(g, "a.st") && !emily_gguf_has_key(g, NULL));
    CHECK_OK(emily_gguf_get_array(g, "a.str", &et, &n));
    CHECK(et == EMILY_GGUF_STRING && n == 3);
    static const char *strs[3] = {"a", "", "ccc"};
    for (size_t j = 0; j < 3; j++) {
        CHECK_OK(emily_gguf_get_array_string(g, "a.str", j, &s, &n));
        CHECK(n == strlen(strs[j]) && memcmp(s, strs[j], n) == 0);
    }
    CHECK_ERR(emily_gguf_get_array_string(g, "a.str", 3, &s, &n), EMILY_ERR_INDEX,
              "index 3 of key a.str, an array of 3");
    CHECK_ERR(emily_gguf_get_array_string(g, "a.s32", 0, &s, &n), EMILY_ERR_TYPE,
              "key a.s32 is an array of s32, not of strings");
    CHECK_ERR(emily_gguf_get_array_int(g, "a.str", 0, &i), EMILY_ERR_TYPE, "is an array of string, not of integers");
    CHECK_ERR(emily_gguf_get_array_int(g, "str", 0, &i), EMILY_ERR_TYPE, "key str holds string, not an array");
    CHECK_OK(emily_gguf_get_array_int(g, "a.s32", 1, &i));
    CHECK(i == -9);
    CHECK_OK(emily_gguf_get_array_int(g, "a.bool", 1, &i));
    CHECK(i == 1);
    CHECK_OK(emily_gguf_get_array_int(g, "a.u64", 0, &i));
    CHECK(i == 5);
    CHECK_ERR(emily_gguf_get_array_int(g, "a.u64", 1, &i), EMILY_ERR_TYPE, "above INT64_MAX");
    CHECK_OK(emily_gguf_get_array_float(g, "a.f32", 0, &f));
    CHECK(f == 1.5);
    CHECK_OK(emily_gguf_get_array_float(g, "a.f64", 0, &f));
    CHECK(f == -0.25);
    CHECK_OK(emily_gguf_get_array_float(g, "a.s32", 1, &f));
    CHECK(f == -9);
    CHECK_ERR(emily_gguf_get_array_float(g, "a.bool", 0, &f), EMILY_ERR_TYPE, "not a number");
    CHECK_ERR(emily_gguf_get_array_int(g, "a.f32", 0, &i), EMILY_ERR_TYPE, "not of integers");
    CHECK_OK(emily_gguf_get_array(g, "a.none", &et, &n));
    CHECK(et == EMILY_GGUF_UINT8 && n == 0);
    CHECK_ERR(emily_gguf_get_array_int(g, "a.none", 0, &i), EMILY_ERR_INDEX, "an array of 0");
    CHECK_ERR(emily_gguf_get_array(g, "u8", &et, &n), EMILY_ERR_TYPE, "not an array");
    CHECK_ERR(emily_gguf_get_array(g, "a.zz", &et, &n), EMILY_ERR_ARGUMENT, "key a.zz is not in");
    const char *key;
    CHECK_OK(emily_gguf_key_at(g, 8, &key, &n, &et));
    CHECK(n == 3 && memcmp(key, "str", 3) == 0 && et == EMILY_GGUF_STRING);
    CHECK_ERR(emily_gguf_key_at(g, 21, &key, &n, &et), EMILY_ERR_INDEX, "index 21, the file has 21 keys");
    /* NULLs */
    CHECK_ERR(emily_gguf_get_int(NULL, "u8", &i), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_gguf_get_int(g, NULL, &i), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_gguf_get_int(g, "u8", NULL), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_gguf_get_string(g, "str", &s, NULL), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_gguf_get_array(g, "a.str", &et, NULL), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_gguf_get_array_string(g, "a.str", 0, NULL, &n), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_gguf_get_array_float(g, "a.f32", 0, NULL), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_gguf_key_at(NULL, 0, &key, &n, &et), EMILY_ERR_ARGUMENT, "NULL");
    CHECK(emily_gguf_key_count(NULL) == 0 && emily_gguf_tensor_count(NULL) == 0);
    emily_gguf_close(g);
    emily_gguf_close(NULL);
}

/* ---- malformed files ----------------------------------------------------------- */

/* Saves f as a file (and frees f), which opening must refuse with
 * EMILY_ERR_ARGUMENT and `needle`. */
static void refuses(gw *f, const char *needle) {
    emily_gguf *g = (emily_gguf *)&g; /* must come back NULL */
    CHECK(gw_save(f, path_of("bad.gguf")));
    gw_free(f);
    CHECK_ERR(emily_gguf_open(path_of("bad.gguf"), &g), EMILY_ERR_ARGUMENT, needle);
    CHECK(g == NULL);
    emily_gguf_close(g);
}

/* A small valid file: metadata with a string array, a Q8_0 and an F32
 * tensor. */
static void small_file(gw *f) {
    gw k = {0};
    gw_key(&k, "general.architecture", T_STR), gw_str(&k, "llama");
    gw_key(&k, "tok", T_ARR), gw_array(&k, T_STR, 2), gw_str(&k, "hi"), gw_str(&k, "there");
    gw_key(&k, "n", T_ARR), gw_array(&k, T_S32, 2), gw_u32(&k, 1), gw_u32(&k, 2);
    static unsigned char q[68], d[12];
    for (size_t i = 0; i < sizeof q; i++) q[i] = (unsigned char)i;
    q[1] = q[35] = 0x3c; /* finite scales */
    gw_tensor ts[2] = {{"q", 2, {32, 2}, EMILY_GGML_Q8_0, q, 68}, {"x", 1, {3}, EMILY_GGML_F32, d, 12}};
    gw_file(f, 3, &k, 3, ts, 2, 32);
    gw_free(&k);
}

TEST(truncated_at_every_byte) {
    gw f = {0};
    small_file(&f);
    emily_gguf *g = NULL;
    CHECK(gw_save(&f, path_of("small.gguf")));
    CHECK_OK(emily_gguf_open(path_of("small.gguf"), &g));
    emily_gguf_tensor t;
    CHECK_OK(emily_gguf_load(g, "q", EMILY_CPU, EMILY_F32, &t));
    emily_gguf_tensor_release(&t);
    emily_gguf_close(g);
    size_t full = f.n;
    for (size_t n = 0; n < full; n++) {
        f.n = n;
        g = (emily_gguf *)&g;
        CHECK(gw_save(&f, path_of("cut.gguf")));
        emily_status s = emily_gguf_open(path_of("cut.gguf"), &g);
        const char *msg = emily_last_error();
        if (s != EMILY_ERR_ARGUMENT || g != NULL || !strstr(msg, "gguf: ") ||
            !(strstr(msg, "truncated") || strstr(msg, "end past the file"))) {
            fprintf(stderr, "  cut at %zu of %zu: %s \"%s\"\n", n, full, emily_status_name(s), msg);
            harness_failures++;
        }
    }
    gw_free(&f);
}

/* A header with the given counts followed by `rest`. */
static void header(gw *f, uint32_t version, uint64_t tensors, uint64_t kvs) {
    *f = (gw){0};
    gw_bytes(f, "GGUF", 4);
    gw_u32(f, version);
    gw_u64(f, tensors);
    gw_u64(f, kvs);
}

/* A version 3 header of one metadata pair, and the pair's key and value
 * type; the value follows. */
static void one_key(gw *f, const char *key, uint32_t type) {
    header(f, 3, 0, 1);
    gw_key(f, key, type);
}

/* A file of one tensor entry as given, with `data` bytes after the header. */
static void one_tensor(gw *f, uint32_t rank, const uint64_t *ne, uint32_t type, uint64_t offset, size_t data) {
    header(f, 3, 1, 0);
    gw_str(f, "t");
    gw_u32(f, rank);
    for (uint32_t d = 0; d < rank; d++) gw_u64(f, ne[d]);
    gw_u32(f, type);
    gw_u64(f, offset);
    static const unsigned char zeros[64] = {0};
    while (f->n % 32) gw_u8(f, 0);
    gw_bytes(f, zeros, data);
}

TEST(malformed_headers) {
    gw f;
    header(&f, 3, 0, 0);
    f.b[0] = 'X';
    refuses(&f, "not a GGUF file");
    header(&f, 1, 0, 0);
    refuses(&f, "GGUF version 1 is not supported");
    header(&f, 4, 0, 0);
    refuses(&f, "GGUF version 4 is not supported");
    header(&f, 0x03000000u, 0, 0);
    refuses(&f, "big-endian");
    header(&f, 3, 0, UINT64_MAX);
    refuses(&f, "18446744073709551615 metadata pairs do not fit");
    header(&f, 3, (uint64_t)1 << 62, 0);
    refuses(&f, "tensor entries do not fit");
    header(&f, 3, 0, 1);
    gw_u64(&f, (uint64_t)1 << 60);
    gw_u64(&f, 0), gw_u64(&f, 0);
    refuses(&f, "truncated: a metadata key needs 1152921504606846976 bytes");
    one_key(&f, "k", T_STR), gw_u64(&f, UINT64_MAX);
    refuses(&f, "truncated: a string value needs");
    one_key(&f, "k", T_ARR), gw_array(&f, T_U64, (uint64_t)1 << 61), gw_u64(&f, 0);
    refuses(&f, "truncated: array k of 2305843009213693952 elements");
    one_key(&f, "k", T_ARR), gw_array(&f, T_STR, UINT64_MAX / 2);
    refuses(&f, "strings of array k do not fit");
    one_key(&f, "k", T_ARR), gw_array(&f, T_STR, 2), gw_str(&f, "a"), gw_u64(&f, 1000);
    refuses(&f, "truncated: a string of an array needs 1000 bytes");
    one_key(&f, "k", 13), gw_u32(&f, 0);
    refuses(&f, "key k: unknown value type 13");
    one_key(&f, "k", T_ARR), gw_array(&f, 77, 0);
    refuses(&f, "key k: array of unknown element type 77");
    one_key(&f, "k", T_ARR), gw_array(&f, T_ARR, 0);
    refuses(&f, "key k: arrays of arrays are not supported");
    one_key(&f, "k", T_BOOL), gw_u8(&f, 2);
    refuses(&f, "key k: a bool of value 2");
    header(&f, 3, 0, 2);
    gw_key(&f, "k", T_U8), gw_u8(&f, 2);
    gw_key(&f, "k", T_U8), gw_u8(&f, 3);
    refuses(&f, "key k appears twice");
    one_key(&f, "general.alignment", T_U32), gw_u32(&f, 24);
    refuses(&f, "general.alignment 24 is not a power of two");
    one_key(&f, "general.alignment", T_U64), gw_u64(&f, 32);
    refuses(&f, "general.alignment is not a u32");
    /* a directory, a missing file, NULLs */
    emily_gguf *g = NULL;
    CHECK_ERR(emily_gguf_open(dir, &g), EMILY_ERR_ARGUMENT, "not a regular file");
    CHECK_ERR(emily_gguf_open(path_of("missing.gguf"), &g), EMILY_ERR_ARGUMENT, "cannot be opened");
    CHECK_ERR(emily_gguf_open(NULL, &g), EMILY_ERR_ARGUMENT, "path is NULL");
    CHECK_ERR(emily_gguf_open(dir, NULL), EMILY_ERR_ARGUMENT, "out is NULL");
}

TEST(malformed_tensors) {
    gw f;
    one_tensor(&f, 2, (uint64_t[]){4, 2}, EMILY_GGML_F32, 0, 32);
    emily_gguf *g = NULL;
    CHECK(gw_save(&f, path_of("ok.gguf")));
    CHECK_OK(emily_gguf_open(path_of("ok.gguf"), &g)); /* the baseline the cases below break */
    emily_gguf_close(g);
    gw_free(&f);
    one_tensor(&f, 2, (uint64_t[]){4, 2}, EMILY_GGML_F32, 0, 31);
    refuses(&f, "tensor t: its 32 bytes at data offset 0 end past the file");
    one_tensor(&f, 2, (uint64_t[]){4, 2}, EMILY_GGML_F32, 32, 32);
    refuses(&f, "end past the file");
    one_tensor(&f, 2, (uint64_t[]){4, 2}, EMILY_GGML_F32, UINT64_MAX - 31, 32);
    refuses(&f, "end past the file");
    one_tensor(&f, 2, (uint64_t[]){4, 2}, EMILY_GGML_F32, 16, 64);
    refuses(&f, "tensor t: offset 16 is not a multiple of the alignment 32");
    one_tensor(&f, 0, NULL, EMILY_GGML_F32, 0, 4);
    refuses(&f, "tensor t: rank 0 (1 to 4 only)");
    one_tensor(&f, 5, (uint64_t[]){1, 1, 1, 1, 1}, EMILY_GGML_F32, 0, 4);
    refuses(&f, "tensor t: rank 5");
    one_tensor(&f, 2, (uint64_t[]){(uint64_t)-3, 2}, EMILY_GGML_F32, 0, 4);
    refuses(&f, "tensor t: dimension 0 is 18446744073709551613 (negative or too large)");
    one_tensor(&f, 3, (uint64_t[]){(uint64_t)1 << 30, (uint64_t)1 << 30, 1024}, EMILY_GGML_I8, 0, 4);
    refuses(&f, "tensor t: more than 2^59 elements");
    one_tensor(&f, 2, (uint64_t[]){0, (uint64_t)1 << 58}, EMILY_GGML_F32, 0, 0);
    CHECK(gw_save(&f, path_of("zero.gguf"))); /* zero elements: valid, 0 bytes */
    CHECK_OK(emily_gguf_open(path_of("zero.gguf"), &g));
    emily_gguf_close(g);
    gw_free(&f);
    one_tensor(&f, 2, (uint64_t[]){33, 2}, EMILY_GGML_Q8_0, 0, 64);
    refuses(&f, "tensor t: innermost dimension 33 is not a multiple of Q8_0's block of 32");
    one_tensor(&f, 1, (uint64_t[]){128}, EMILY_GGML_Q4_K, 0, 64);
    refuses(&f, "innermost dimension 128 is not a multiple of Q4_K's block of 256");
    static const uint32_t unknown[4] = {4, 31, 100, 0x80000005u};
    for (int i = 0; i < 4; i++) {
        one_tensor(&f, 1, (uint64_t[]){4}, unknown[i], 0, 16);
        char want[64];
        snprintf(want, sizeof want, "tensor t: unknown ggml type %u", unknown[i]);
        refuses(&f, want);
    }
    /* two tensors of one name */
    gw k = {0};
    static unsigned char d[16];
    gw_tensor ts[2] = {{"a", 1, {4}, EMILY_GGML_F32, d, 16}, {"a", 1, {2}, EMILY_GGML_F32, d, 8}};
    f = (gw){0};
    gw_file(&f, 3, &k, 0, ts, 2, 32);
    refuses(&f, "tensor a appears twice");
}

/* Known but not loadable types are listed and refused by name; load's
 * other errors. */
TEST(load_errors) {
    static unsigned char q6[210 * 2], f32[16];
    gw k = {0};
    gw_tensor ts[2] = {{"blk.0.ffn_down.weight", 2, {256, 2}, 14 /* Q6_K */, q6, sizeof q6},
                       {"x", 1, {4}, EMILY_GGML_F32, f32, 16}};
    emily_gguf *g = write_open("q6k.gguf", &k, 0, ts, 2);
    emily_gguf_tensor_info info;
    CHECK_OK(emily_gguf_tensor_info_at(g, 0, &info));
    CHECK(info.ggml_type == 14 && info.nbytes == 420 && info.shape[0] == 2 && info.shape[1] == 256);
    CHECK(strcmp(emily_gguf_type_name(info.ggml_type), "Q6_K") == 0 && emily_gguf_type_name(4) == NULL &&
          emily_gguf_type_name(-1) == NULL && emily_gguf_type_name(1000) == NULL);
    emily_gguf_tensor t = {(emily_tensor *)&t, NULL, NULL, NULL, 0, 0};
    CHECK_ERR(emily_gguf_load(g, "blk.0.ffn_down.weight", EMILY_CPU, EMILY_F32, &t), EMILY_ERR_TYPE,
              "gguf_load: tensor blk.0.ffn_down.weight is of ggml type Q6_K, which Emily does not load");
    CHECK(t.dense == NULL);
    CHECK_ERR(emily_gguf_load(g, "y", EMILY_CPU, EMILY_F32, &t), EMILY_ERR_ARGUMENT, "gguf_load: tensor y is not in");
    CHECK_ERR(emily_gguf_load(g, "x", EMILY_CPU, EMILY_F64, &t), EMILY_ERR_TYPE,
              "scale_type must be f32, f16 or bf16, got f64");
    CHECK_ERR(emily_gguf_load(g, "x", EMILY_CPU, EMILY_F32, NULL), EMILY_ERR_ARGUMENT, "out is NULL");
    CHECK_ERR(emily_gguf_load(NULL, "x", EMILY_CPU, EMILY_F32, &t), EMILY_ERR_ARGUMENT, "NULL");
    emily_device bogus = {EMILY_DEVICE_CUDA, 7};
    CHECK(emily_gguf_load(g, "x", bogus, EMILY_F32, &t) != EMILY_OK && t.dense == NULL);
    size_t idx;
    CHECK_ERR(emily_gguf_find_tensor(g, "z", &idx), EMILY_ERR_ARGUMENT, "tensor z is not in");
    CHECK_ERR(emily_gguf_tensor_info_at(g, 2, &info), EMILY_ERR_INDEX, "index 2, the file has 2 tensors");
    CHECK_ERR(emily_gguf_tensor_info_at(g, 0, NULL), EMILY_ERR_ARGUMENT, "NULL");
    emily_gguf_tensor_release(NULL);
    emily_gguf_close(g);
}

/* ---- SmolLM2's file --------------------------------------------------------- */

static const char *smollm2_path(void) {
    const char *p = getenv("EMILY_SMOLLM2_GGUF");
    return p && *p ? p : "models/SmolLM2-135M-Instruct/SmolLM2-135M-Instruct.Q4_1.gguf";
}

TEST(smollm2_file) {
    const char *path = smollm2_path();
    emily_gguf *g = NULL;
    CHECK_OK(emily_gguf_open(path, &g));
    if (!g) return;
    static const struct {
        const char *key;
        int64_t v;
    } ints[] = {{"llama.block_count", 30},         {"llama.embedding_length", 576},
                {"llama.attention.head_count", 9}, {"llama.attention.head_count_kv", 3},
                {"llama.vocab_size", 49152},       {"llama.feed_forward_length", 1536}};
    for (size_t j = 0; j < sizeof ints / sizeof *ints; j++) {
        int64_t v = -1;
        CHECK_OK(emily_gguf_get_int(g, ints[j].key, &v));
        CHECK(v == ints[j].v);
    }
    double base;
    CHECK_OK(emily_gguf_get_float(g, "llama.rope.freq_base", &base));
    CHECK(base == 100000.0);
    const char *s;
    size_t n;
    emily_gguf_value_type et;
    CHECK_OK(emily_gguf_get_string(g, "general.architecture", &s, &n));
    CHECK(n == 5 && memcmp(s, "llama", 5) == 0);
    CHECK_OK(emily_gguf_get_string(g, "tokenizer.ggml.pre", &s, &n));
    CHECK(n == 6 && memcmp(s, "smollm", 6) == 0);
    CHECK_OK(emily_gguf_get_array(g, "tokenizer.ggml.tokens", &et, &n));
    CHECK(et == EMILY_GGUF_STRING && n == 49152);
    CHECK_OK(emily_gguf_get_array(g, "tokenizer.ggml.merges", &et, &n));
    CHECK(et == EMILY_GGUF_STRING && n == 48900);
    CHECK(emily_gguf_tensor_count(g) == 272);

    json_error_t jerr;
    json_t *ref = json_load_file("tests/models/smollm2_gguf_reference.json", 0, &jerr);
    CHECK(ref != NULL);
    const char *token_key;
    json_t *tok;
    json_object_foreach(json_object_get(ref, "tokens"), token_key, tok) {
        CHECK_OK(emily_gguf_get_array_string(g, "tokenizer.ggml.tokens", (size_t)atoll(token_key), &s, &n));
        CHECK(n == json_string_length(tok) && memcmp(s, json_string_value(tok), n) == 0);
    }
    const char *name;
    json_t *entry;
    json_object_foreach(json_object_get(ref, "tensors"), name, entry) {
        emily_gguf_tensor t;
        CHECK_OK(emily_gguf_load(g, name, EMILY_CPU, EMILY_F32, &t));
        emily_tensor *w = NULL;
        CHECK_OK(emily_dequantize(t.q, t.scales, t.biases, t.bits, t.group_size, &w));
        const int64_t *shape = w ? emily_tensor_shape(w) : NULL;
        json_t *want_shape = json_object_get(entry, "shape");
        CHECK(shape && shape[0] == json_integer_value(json_array_get(want_shape, 0)) &&
              shape[1] == json_integer_value(json_array_get(want_shape, 1)));
        double *v = harness_doubles(w);
        const char *row_key;
        json_t *row;
        json_object_foreach(json_object_get(entry, "rows"), row_key, row) {
            int64_t r = atoll(row_key), k = shape ? shape[1] : 0;
            double sum = 0;
            for (int64_t i = 0; v && i < k; i++) sum += v[r * k + i];
            double want_sum = strtod(json_string_value(json_object_get(row, "sum")), NULL);
            if (sum != want_sum) {
                fprintf(stderr, "  %s row %lld: sum %a, want %a\n", name, (long long)r, sum, want_sum);
                harness_failures++;
            }
            size_t j;
            json_t *pair;
            json_array_foreach(json_object_get(row, "values"), j, pair) {
                int64_t i = json_integer_value(json_array_get(pair, 0));
                double want = strtod(json_string_value(json_array_get(pair, 1)), NULL);
                CHECK(v && v[r * k + i] == want);
            }
        }
        free(v);
        emily_tensor_release(w);
        emily_gguf_tensor_release(&t);
    }
    json_decref(ref);
    emily_gguf_close(g);
}

static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/emily_gguf_XXXXXX");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "test_gguf: no temporary directory\n");
        exit(1);
    }
}

static void teardown(void) {
    static const char *files[] = {"blocks.gguf", "hand.gguf", "narrow.gguf", "matmul.gguf", "dense.gguf",
                                  "meta.gguf",   "bad.gguf",  "small.gguf",  "cut.gguf",    "ok.gguf",
                                  "zero.gguf",   "q6k.gguf",  "empty.gguf"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) unlink(path_of(files[i]));
    rmdir(dir);
}

int main(int argc, char **argv) {
    static const harness_case cases[] = {CASE(block_types_dequantize_exactly),
                                         CASE(empty_block_tensors),
                                         CASE(triple_by_hand),
                                         CASE(narrow_scale_types),
                                         CASE(quantized_matmul_on_loaded_weights),
                                         CASE(dense_types),
                                         CASE(metadata_values),
                                         CASE(truncated_at_every_byte),
                                         CASE(malformed_headers),
                                         CASE(malformed_tensors),
                                         CASE(load_errors),
                                         {NULL, NULL}};
    static const harness_case with_model[] = {CASE(smollm2_file), {NULL, NULL}};
    if (!harness_args(argc, argv)) return 2;
    setup();
    int rc = harness_run("gguf", cases);
    /* the model case runs only where the file is; it is not counted otherwise */
    if (access(smollm2_path(), R_OK) == 0) rc = harness_run("gguf (SmolLM2-135M-Instruct.Q4_1.gguf)", with_model) || rc;
    else printf("gguf: SKIPPED 1 model case: %s is not installed (set EMILY_SMOLLM2_GGUF)\n", smollm2_path());
    teardown();
    return harness_finish(rc);
}
