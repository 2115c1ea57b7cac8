/* The tensor half of emily/gguf.h: infos, lookup by name, and loading
 * (plain types copied as they are; block types in gguf_blocks.c). */
#include <string.h>
#include "io/gguf_internal.h"

static const char *tensor_name(const void *ctx, size_t i, size_t *len) {
    const gguf_tensor *t = (const gguf_tensor *)ctx + i;
    *len = t->name_len;
    return t->name;
}

size_t emily_gguf_tensor_count(const emily_gguf *g) { return g ? g->tensor_count : 0; }

emily_status emily_gguf_tensor_info_at(const emily_gguf *g, size_t i, emily_gguf_tensor_info *out) {
    if (!g || !out) return emily_error(EMILY_ERR_ARGUMENT, "gguf_tensor_info_at: NULL argument");
    if (i >= g->tensor_count)
        return emily_error(EMILY_ERR_INDEX, "gguf_tensor_info_at: index %zu, the file has %zu tensors", i,
                           g->tensor_count);
    const gguf_tensor *t = &g->tensors[i];
    *out = (emily_gguf_tensor_info){.name = t->name,
                                    .name_len = t->name_len,
                                    .ggml_type = t->type,
                                    .rank = t->rank,
                                    .offset = t->offset,
                                    .nbytes = t->nbytes};
    memcpy(out->shape, t->shape, sizeof t->shape);
    return EMILY_OK;
}

emily_status emily_gguf_find_tensor(const emily_gguf *g, const char *name, size_t *index) {
    if (!g || !name || !index) return emily_error(EMILY_ERR_ARGUMENT, "gguf_find_tensor: NULL argument");
    long long i = gguf_names_find(&g->tensor_index, name, strlen(name), tensor_name, g->tensors);
    if (i < 0) return emily_error(EMILY_ERR_ARGUMENT, "gguf_find_tensor: tensor %s is not in %s", name, g->path);
    *index = (size_t)i;
    return EMILY_OK;
}

/* The Emily type of a plain ggml type; false for block types. */
static bool plain_dtype(int type, emily_dtype *out) {
    switch (type) {
    case EMILY_GGML_F32: *out = EMILY_F32; return true;
    case EMILY_GGML_F16: *out = EMILY_F16; return true;
    case EMILY_GGML_BF16: *out = EMILY_BF16; return true;
    case EMILY_GGML_F64: *out = EMILY_F64; return true;
    case EMILY_GGML_I8: *out = EMILY_S8; return true;
    case EMILY_GGML_I16: *out = EMILY_S16; return true;
    case EMILY_GGML_I32: *out = EMILY_S32; return true;
    case EMILY_GGML_I64: *out = EMILY_S64; return true;
    default: return false;
    }
}

emily_status emily_gguf_load(const emily_gguf *g, const char *name, emily_device device, emily_dtype scale_type,
                             emily_gguf_tensor *out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "gguf_load: out is NULL");
    memset(out, 0, sizeof *out);
    if (!g || !name) return emily_error(EMILY_ERR_ARGUMENT, "gguf_load: NULL argument");
    if (scale_type != EMILY_F32 && scale_type != EMILY_F16 && scale_type != EMILY_BF16)
        return emily_error(EMILY_ERR_TYPE, "gguf_load: scale_type must be f32, f16 or bf16, got %s",
                           emily_dtype_name(scale_type));
    size_t i;
    emily_status s = emily_gguf_find_tensor(g, name, &i);
    if (s) return emily_error(s, "gguf_load: tensor %s is not in %s", name, g->path);
    const gguf_tensor *t = &g->tensors[i];
    emily_dtype dt;
    if (plain_dtype(t->type, &dt))
        return emily_from_binary(device, dt, t->rank, t->shape, g->map + t->offset, (size_t)t->nbytes, &out->dense);
    if (t->type == EMILY_GGML_Q8_0 || t->type == EMILY_GGML_Q4_0 || t->type == EMILY_GGML_Q4_1 ||
        t->type == EMILY_GGML_Q4_K)
        return gguf_load_blocks(g, t, device, scale_type, out);
    return emily_error(EMILY_ERR_TYPE,
                       "gguf_load: tensor %s is of ggml type %s, which Emily does not load "
                       "(F32, F16, BF16, F64, I8, I16, I32, I64, Q8_0, Q4_0, Q4_1 and Q4_K)",
                       name, emily_gguf_type_name(t->type));
}

void emily_gguf_tensor_release(emily_gguf_tensor *t) {
    if (!t) return;
    emily_tensor_release(t->dense);
    emily_tensor_release(t->q);
    emily_tensor_release(t->scales);
    emily_tensor_release(t->biases);
    memset(t, 0, sizeof *t);
}
