/* The rotation composed of element-wise engine calls on the two halves
 * of each adjacent pair (llama_rope.h). */
#include <math.h>
#include <stdlib.h>
#include "llama_rope.h"

emily_status llama_rope_table_make(llama_rope_table *t, const llama_config *c, emily_device device,
                                   int64_t pos, int64_t n) {
    t->cos = t->sin = NULL;
    t->rope_dims = c->rope_dims;
    t->head_dim = c->head_dim;
    int64_t half = c->rope_dims / 2;
    float *buf = malloc(sizeof(float) * 2 * (size_t)(n * half));
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "llama_rope: out of host memory");
    float *cs = buf, *sn = buf + n * half;
    for (int64_t i = 0; i < half; i++) {
        /* torch: base ** (arange(0, dims, 2).float() / dims), then 1 / that, all f32 */
        float e = (float)(2 * i) / (float)c->rope_dims;
        float inv = 1.0f / powf((float)c->rope_base, e);
        for (int64_t p = 0; p < n; p++) {
            float angle = (float)(pos + p) * inv;
            cs[p * half + i] = (float)cos((double)angle);
            sn[p * half + i] = (float)sin((double)angle);
        }
    }
    int64_t shape[4] = {1, n, 1, half};
    size_t bytes = sizeof(float) * (size_t)(n * half);
    emily_status s = emily_from_binary(device, EMILY_F32, 4, shape, cs, bytes, &t->cos);
    if (!s) s = emily_from_binary(device, EMILY_F32, 4, shape, sn, bytes, &t->sin);
    free(buf);
    if (s) llama_rope_table_free(t);
    return s;
}

void llama_rope_table_free(llama_rope_table *t) {
    emily_tensor_release(t->cos);
    emily_tensor_release(t->sin);
    t->cos = t->sin = NULL;
}

emily_tensor *llama_rope_apply(ts_scope *parent, const llama_rope_table *t, const emily_tensor *x) {
    if (parent->status || !x) return NULL;
    if (t->rope_dims != t->head_dim) {
        ts_record(parent, emily_error(EMILY_ERR_UNSUPPORTED,
                                      "llama_rope: partial rotation (%d of %d features)",
                                      t->rope_dims, t->head_dim));
        return NULL;
    }
    ts_scope s = TS_SCOPE;
    const int64_t *xs = emily_tensor_shape(x);
    int64_t half = t->rope_dims / 2;
    int64_t pairs[5] = {xs[0], xs[1], xs[2], half, 2}, one[5] = {xs[0], xs[1], xs[2], half, 1};
    int64_t flat[4] = {xs[0], xs[1], xs[2], half};
    emily_tensor *xp = ts_reshape(&s, x, 5, pairs);
    int64_t at0[5] = {0, 0, 0, 0, 0}, at1[5] = {0, 0, 0, 0, 1};
    emily_tensor *a = ts_reshape(&s, ts_slice(&s, xp, at0, one), 4, flat);
    emily_tensor *b = ts_reshape(&s, ts_slice(&s, xp, at1, one), 4, flat);
    emily_tensor *ya = ts_binary(&s, EMILY_SUBTRACT, ts_binary(&s, EMILY_MULTIPLY, a, t->cos),
                                 ts_binary(&s, EMILY_MULTIPLY, b, t->sin));
    emily_tensor *yb = ts_binary(&s, EMILY_ADD, ts_binary(&s, EMILY_MULTIPLY, a, t->sin),
                                 ts_binary(&s, EMILY_MULTIPLY, b, t->cos));
    emily_tensor *stacked = NULL;
    if (!s.status) {
        const emily_tensor *both[2] = {ya, yb};
        emily_status st = emily_stack(2, both, 4, EMILY_DTYPE_AUTO, &stacked);
        ts_hold(&s, st, stacked);
    }
    emily_tensor *out = NULL;
    emily_status st = ts_close(&s, ts_reshape(&s, stacked, 4, xs), &out);
    return ts_hold(parent, st, out);
}
