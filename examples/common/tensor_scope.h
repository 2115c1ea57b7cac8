/* Chains of engine calls without an error check after each: a scope
 * holds every tensor its calls make and the first failure; once a call
 * has failed, the later ones do nothing and return NULL, and closing the
 * scope releases everything but the result it hands out. Inputs are
 * borrowed as in the engine's API. */
#ifndef EMBED_TENSOR_SCOPE_H
#define EMBED_TENSOR_SCOPE_H

#include "emily/emily.h"

typedef struct ts_scope {
    emily_status status; /* the first failure (its message: emily_last_error) */
    emily_tensor **held;
    int count, cap;
} ts_scope;

#define TS_SCOPE \
    { EMILY_OK, NULL, 0, 0 }

/* Takes ownership of t made by a call that returned st; t on success,
 * NULL (and st recorded) otherwise. */
emily_tensor *ts_hold(ts_scope *s, emily_status st, emily_tensor *t);

/* Records the status of a call that makes no tensor. */
void ts_record(ts_scope *s, emily_status st);

/* Releases t now (it must be held by s) to free its memory early. */
void ts_drop(ts_scope *s, emily_tensor *t);

/* Releases every held tensor except `result`, which moves to *out (when
 * the scope has not failed; out may be NULL; a tensor held twice moves
 * one reference). Returns the scope's status. */
emily_status ts_close(ts_scope *s, emily_tensor *result, emily_tensor **out);

/* The engine's calls, on the scope. Axis arguments count from the end
 * when negative, as in the engine. */
emily_tensor *ts_binary(ts_scope *s, emily_binary_op op, const emily_tensor *a, const emily_tensor *b);
emily_tensor *ts_unary(ts_scope *s, emily_unary_op op, const emily_tensor *a);
emily_tensor *ts_reduce(ts_scope *s, emily_reduce_op op, const emily_tensor *a, int axis, bool keep);
/* a x b^T over the last axis of each ([..., k] x [n, k] -> [..., n]):
 * a linear layer's product with PyTorch's weight layout. */
emily_tensor *ts_linear(ts_scope *s, const emily_tensor *a, const emily_tensor *w, const emily_tensor *bias);
emily_tensor *ts_dot(ts_scope *s, const emily_tensor *a, int ca, int nbatch, const int *ba, const emily_tensor *b,
                     int cb, const int *bb);
/* ts_dot with an output type (EMILY_DTYPE_AUTO: Nx.Type.merge, as ts_dot). */
emily_tensor *ts_dot_as(ts_scope *s, const emily_tensor *a, int ca, int nbatch, const int *ba, const emily_tensor *b,
                        int cb, const int *bb, emily_dtype out_type);
emily_tensor *ts_as_type(ts_scope *s, const emily_tensor *a, emily_dtype type);
emily_tensor *ts_reshape(ts_scope *s, const emily_tensor *a, int rank, const int64_t *shape);
emily_tensor *ts_transpose(ts_scope *s, const emily_tensor *a, const int *perm);
/* rank(a) starts and lengths, unit steps (a view). */
emily_tensor *ts_slice(ts_scope *s, const emily_tensor *a, const int64_t *starts, const int64_t *lengths);
emily_tensor *ts_take(ts_scope *s, const emily_tensor *a, const emily_tensor *indices, int axis);
emily_tensor *ts_scalar(ts_scope *s, emily_device device, double value); /* f32, rank 0 */
/* The fused kernels (emily/ops_fast.h, emily/ops_quant.h). */
emily_tensor *ts_rms_norm(ts_scope *s, const emily_tensor *x, const emily_tensor *gamma, double eps);
emily_tensor *ts_layer_norm(ts_scope *s, const emily_tensor *x, const emily_tensor *gamma, const emily_tensor *beta,
                            double eps);
emily_tensor *ts_sdpa(ts_scope *s, const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                      const emily_sdpa_options *options);
/* x . W^T of a quantized W {n, k} (transpose true of emily_quantized_matmul). */
emily_tensor *ts_quantized_linear(ts_scope *s, const emily_tensor *x, const emily_tensor *q, const emily_tensor *scales,
                                  const emily_tensor *biases, int bits, int64_t group_size);
emily_tensor *ts_dequantize(ts_scope *s, const emily_tensor *q, const emily_tensor *scales, const emily_tensor *biases,
                            int bits, int64_t group_size);

#endif
