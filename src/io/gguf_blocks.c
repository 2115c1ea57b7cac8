/* ggml's block formats re-expressed, without dequantizing, as Emily's
 * affine codes (emily/ops_quant.h): every one is a code times a scale
 * plus a bias over groups of 32 consecutive elements of a row, so only
 * the code bits move and each group's scale and bias are computed once.
 *
 *   Q8_0  {f16 d; s8 q[32]}                          value d * q
 *   Q4_0  {f16 d; u8 qs[16]}                         value d * (q - 8)
 *   Q4_1  {f16 d; f16 m; u8 qs[16]}                  value d * q + m
 *   Q4_K  {f16 d; f16 dmin; u8 sc[12]; u8 qs[128]}   256 elements in 8
 *         groups; group j: value (d * sc_j) * q - (dmin * m_j), sc_j and
 *         m_j the 6-bit numbers packed in sc
 *
 * In a 32-element 4-bit group ggml keeps elements 0..15 in the low
 * nibbles of its 16 bytes and 16..31 in the high ones; Emily packs
 * element 2i in the low and 2i + 1 in the high nibble of byte i. Q4_K's
 * 128 code bytes are four runs of 32: run r holds group 2r in its low
 * nibbles and group 2r + 1 in its high ones.
 *
 * Every scale and bias below is exact in f32: an f16 times an integer
 * below 2^7 (at most 11 + 7 significant bits) or a power of two. */
#include <stdlib.h>
#include <string.h>
#include "core/scalar_convert.h"
#include "emily/ops.h"
#include "io/gguf_internal.h"

#define GROUP 32

static float f16_at(const unsigned char *p) { return emily_sc_f16_to_f32(gguf_u16(p)); }

/* Emily's 16 bytes of a 4-bit group whose element e < 16 is the nibble
 * of lo_src[e] at bit lo_shift and element e >= 16 that of
 * hi_src[e - 16] at bit hi_shift. */
static void pack_nibbles_split(const unsigned char *lo_src, int lo_shift, const unsigned char *hi_src, int hi_shift,
                               unsigned char *dst) {
    for (int i = 0; i < GROUP / 2; i++) {
        int e0 = 2 * i, e1 = 2 * i + 1;
        unsigned v0 = e0 < 16 ? (unsigned)(lo_src[e0] >> lo_shift) & 15u
                              : (unsigned)(hi_src[e0 - 16] >> hi_shift) & 15u;
        unsigned v1 = e1 < 16 ? (unsigned)(lo_src[e1] >> lo_shift) & 15u
                              : (unsigned)(hi_src[e1 - 16] >> hi_shift) & 15u;
        dst[i] = (unsigned char)(v0 | (v1 << 4));
    }
}

/* Q4_0/Q4_1: a group's 16 bytes, elements 0..15 low nibbles, 16..31 high. */
static void pack_q4_block(const unsigned char *qs, unsigned char *dst) { pack_nibbles_split(qs, 0, qs, 4, dst); }

/* Q4_K: group j's codes are the 32 nibbles (low when j is even, high
 * when odd) of the 32-byte run j / 2. */
static void pack_q4k_group(const unsigned char *qs, int j, unsigned char *dst) {
    const unsigned char *run = qs + 32 * (j / 2);
    int shift = (j % 2) * 4;
    pack_nibbles_split(run, shift, run + 16, shift, dst);
}

/* Q4_K's 6-bit scale and min of group j (0..7) from its 12 bytes: groups
 * 0..3 in the low 6 bits of bytes 0..3 (scales) and 4..7 (mins); groups
 * 4..7 in the nibbles of bytes 8..11 (scale low, min high) with their top
 * two bits in the top bits of bytes 0..3 (scales) and 4..7 (mins). */
static void q4k_scale_min(const unsigned char *sc, int j, unsigned *scale, unsigned *min) {
    if (j < 4) {
        *scale = sc[j] & 63u;
        *min = sc[j + 4] & 63u;
    } else {
        *scale = (sc[j + 4] & 15u) | ((unsigned)(sc[j - 4] >> 6) << 4);
        *min = (unsigned)(sc[j + 4] >> 4) | ((unsigned)(sc[j] >> 6) << 4);
    }
}

/* Decodes one row of `blocks` blocks into codes (row_codes bytes),
 * scales and biases (K / 32 each). */
static void convert_row(int type, const unsigned char *src, int64_t blocks, unsigned char *codes, float *scales,
                        float *biases) {
    for (int64_t b = 0; b < blocks; b++) {
        switch (type) {
        case EMILY_GGML_Q8_0: {
            const unsigned char *blk = src + b * 34;
            float d = f16_at(blk);
            /* s8 q -> u8 q + 128: flipping the sign bit */
            for (int i = 0; i < GROUP; i++) codes[b * GROUP + i] = (unsigned char)(blk[2 + i] ^ 0x80u);
            scales[b] = d;
            biases[b] = -128.0f * d;
            break;
        }
        case EMILY_GGML_Q4_0: {
            const unsigned char *blk = src + b * 18;
            float d = f16_at(blk);
            pack_q4_block(blk + 2, codes + b * 16);
            scales[b] = d;
            biases[b] = -8.0f * d;
            break;
        }
        case EMILY_GGML_Q4_1: {
            const unsigned char *blk = src + b * 20;
            pack_q4_block(blk + 4, codes + b * 16);
            scales[b] = f16_at(blk);
            biases[b] = f16_at(blk + 2);
            break;
        }
        default: { /* Q4_K */
            const unsigned char *blk = src + b * 144;
            float d = f16_at(blk), dmin = f16_at(blk + 2);
            for (int j = 0; j < 8; j++) {
                unsigned sc, m;
                q4k_scale_min(blk + 4, j, &sc, &m);
                pack_q4k_group(blk + 16, j, codes + (b * 8 + j) * 16);
                scales[b * 8 + j] = d * (float)sc;
                biases[b * 8 + j] = -(dmin * (float)m);
            }
            break;
        }
        }
    }
}

/* A host array of f32 values as a tensor of `type` on device. */
static emily_status floats_tensor(emily_device device, emily_dtype type, const int64_t *shape, const float *v, size_t n,
                                  emily_tensor **out) {
    emily_tensor *f = NULL;
    emily_status s = emily_from_binary(device, EMILY_F32, 2, shape, v, n * sizeof *v, &f);
    if (s || type == EMILY_F32) {
        *out = f;
        return s;
    }
    s = emily_as_type(f, type, out);
    emily_tensor_release(f);
    return s;
}

emily_status gguf_load_blocks(const emily_gguf *g, const gguf_tensor *t, emily_device device, emily_dtype scale_type,
                              emily_gguf_tensor *out) {
    int bits = t->type == EMILY_GGML_Q8_0 ? 8 : 4;
    int64_t k = t->shape[t->rank - 1], rows = 1;
    for (int d = 0; d < t->rank - 1; d++) rows *= t->shape[d];
    int64_t block_len, block_bytes;
    gguf_type_layout(t->type, &block_len, &block_bytes);
    int64_t blocks = k / block_len, groups = k / GROUP, row_codes = k * bits / 8;
    /* open checked rows * k <= EMILY_MAX_ELEMENTS: no size below overflows */
    size_t n_groups = (size_t)(rows * groups), n_codes = (size_t)(rows * row_codes);
    unsigned char *codes = malloc(n_codes ? n_codes : 1);
    float *scales = malloc((n_groups ? n_groups : 1) * sizeof *scales);
    float *biases = malloc((n_groups ? n_groups : 1) * sizeof *biases);
    emily_status s = EMILY_OK;
    if (!codes || !scales || !biases) {
        s = emily_error(EMILY_ERR_MEMORY, "gguf_load: out of memory for tensor %.*s", (int)t->name_len, t->name);
    } else {
        const unsigned char *data = g->map + t->offset;
        /* (no rows to convert when K is 0: N alone may be huge, 2^58) */
        for (int64_t r = 0; k && r < rows; r++)
            convert_row(t->type, data + r * blocks * block_bytes, blocks, codes + r * row_codes, scales + r * groups,
                        biases + r * groups);
        int64_t qshape[2] = {rows, row_codes}, sshape[2] = {rows, groups};
        s = emily_from_binary(device, EMILY_U8, 2, qshape, codes, n_codes, &out->q);
        if (!s) s = floats_tensor(device, scale_type, sshape, scales, n_groups, &out->scales);
        if (!s) s = floats_tensor(device, scale_type, sshape, biases, n_groups, &out->biases);
    }
    free(codes);
    free(scales);
    free(biases);
    if (s) {
        emily_gguf_tensor_release(out);
        return s;
    }
    out->bits = bits;
    out->group_size = GROUP;
    return EMILY_OK;
}
