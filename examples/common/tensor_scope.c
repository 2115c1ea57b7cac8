#include <stdlib.h>
#include "tensor_scope.h"

emily_tensor *ts_hold(ts_scope *s, emily_status st, emily_tensor *t) {
    if (st || s->status) {
        emily_tensor_release(t);
        if (!s->status) s->status = st;
        return NULL;
    }
    if (s->count == s->cap) {
        int cap = s->cap ? s->cap * 2 : 32;
        emily_tensor **held = realloc(s->held, (size_t)cap * sizeof *held);
        if (!held) {
            emily_tensor_release(t);
            s->status = emily_error(EMILY_ERR_MEMORY, "tensor scope: out of memory");
            return NULL;
        }
        s->held = held;
        s->cap = cap;
    }
    s->held[s->count++] = t;
    return t;
}

void ts_record(ts_scope *s, emily_status st) {
    if (!s->status) s->status = st;
}

void ts_drop(ts_scope *s, emily_tensor *t) {
    for (int i = s->count - 1; t && i >= 0; i--) {
        if (s->held[i] == t) {
            emily_tensor_release(t);
            s->held[i] = s->held[--s->count];
            return;
        }
    }
}

emily_status ts_close(ts_scope *s, emily_tensor *result, emily_tensor **out) {
    if (out) *out = NULL;
    /* a tensor held twice (a call that returned its input retained, as
     * emily_as_type to the same type does) holds two references: one
     * moves out, the other is released */
    for (int i = 0; i < s->count; i++) {
        if (s->held[i] == result && out && !s->status && !*out) *out = result;
        else emily_tensor_release(s->held[i]);
    }
    free(s->held);
    s->held = NULL;
    s->count = s->cap = 0;
    return s->status;
}

/* Each wrapper's body: nothing once the scope has failed; the call (which
 * writes t), then its result held (two statements: the call must write t
 * before it is read). */
#define TS_WRAP(call)           \
    emily_tensor *t = NULL;     \
    if (s->status) return NULL; \
    emily_status st = (call);   \
    return ts_hold(s, st, t)

emily_tensor *ts_binary(ts_scope *s, emily_binary_op op, const emily_tensor *a, const emily_tensor *b) {
    TS_WRAP(emily_binary(op, a, b, EMILY_DTYPE_AUTO, &t));
}

emily_tensor *ts_unary(ts_scope *s, emily_unary_op op, const emily_tensor *a) { TS_WRAP(emily_unary(op, a, &t)); }

emily_tensor *ts_reduce(ts_scope *s, emily_reduce_op op, const emily_tensor *a, int axis, bool keep) {
    TS_WRAP(emily_reduce(op, a, 1, &axis, keep, EMILY_DTYPE_AUTO, &t));
}

emily_tensor *ts_dot(ts_scope *s, const emily_tensor *a, int ca, int nbatch, const int *ba, const emily_tensor *b,
                     int cb, const int *bb) {
    return ts_dot_as(s, a, ca, nbatch, ba, b, cb, bb, EMILY_DTYPE_AUTO);
}

emily_tensor *ts_dot_as(ts_scope *s, const emily_tensor *a, int ca, int nbatch, const int *ba, const emily_tensor *b,
                        int cb, const int *bb, emily_dtype out_type) {
    TS_WRAP(emily_dot(a, 1, &ca, nbatch, ba, b, 1, &cb, nbatch, bb, out_type, &t));
}

emily_tensor *ts_as_type(ts_scope *s, const emily_tensor *a, emily_dtype type) { TS_WRAP(emily_as_type(a, type, &t)); }

emily_tensor *ts_linear(ts_scope *s, const emily_tensor *a, const emily_tensor *w, const emily_tensor *bias) {
    if (s->status) return NULL;
    emily_tensor *y = ts_dot(s, a, emily_tensor_rank(a) - 1, 0, NULL, w, 1, NULL);
    emily_tensor *out = ts_binary(s, EMILY_ADD, y, bias);
    ts_drop(s, y);
    return out;
}

emily_tensor *ts_reshape(ts_scope *s, const emily_tensor *a, int rank, const int64_t *shape) {
    TS_WRAP(emily_reshape(a, rank, shape, &t));
}

emily_tensor *ts_transpose(ts_scope *s, const emily_tensor *a, const int *perm) {
    TS_WRAP(emily_transpose(a, perm, &t));
}

emily_tensor *ts_slice(ts_scope *s, const emily_tensor *a, const int64_t *starts, const int64_t *lengths) {
    TS_WRAP(emily_slice(a, starts, lengths, NULL, &t));
}

emily_tensor *ts_take(ts_scope *s, const emily_tensor *a, const emily_tensor *indices, int axis) {
    TS_WRAP(emily_take(a, indices, axis, &t));
}

emily_tensor *ts_scalar(ts_scope *s, emily_device device, double value) {
    TS_WRAP(emily_constant(device, EMILY_F32, 0, NULL, emily_scalar_float(value), &t));
}

emily_tensor *ts_rms_norm(ts_scope *s, const emily_tensor *x, const emily_tensor *gamma, double eps) {
    TS_WRAP(emily_rms_norm(x, gamma, eps, &t));
}

emily_tensor *ts_layer_norm(ts_scope *s, const emily_tensor *x, const emily_tensor *gamma, const emily_tensor *beta,
                            double eps) {
    TS_WRAP(emily_layer_norm(x, gamma, beta, eps, &t));
}

emily_tensor *ts_sdpa(ts_scope *s, const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                      const emily_sdpa_options *options) {
    TS_WRAP(emily_sdpa(q, k, v, options, &t));
}

emily_tensor *ts_quantized_linear(ts_scope *s, const emily_tensor *x, const emily_tensor *q, const emily_tensor *scales,
                                  const emily_tensor *biases, int bits, int64_t group_size) {
    TS_WRAP(emily_quantized_matmul(x, q, scales, biases, bits, group_size, true, &t));
}

emily_tensor *ts_dequantize(ts_scope *s, const emily_tensor *q, const emily_tensor *scales, const emily_tensor *biases,
                            int bits, int64_t group_size) {
    TS_WRAP(emily_dequantize(q, scales, biases, bits, group_size, &t));
}
