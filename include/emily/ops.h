/* Typed operations with Nx's semantics.
 *
 * Each function validates its inputs, infers the output type and shape
 * by Nx's rules, and runs on the device of its inputs (all tensor inputs
 * must share one device). Output tensors are new references.
 * Where a function takes `emily_dtype out_type`, EMILY_DTYPE_AUTO means
 * "infer like Nx"; an explicit type is what Nx's output template says
 * (Nx decides it before calling a backend, e.g. for number operands). */
#ifndef EMILY_OPS_H
#define EMILY_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include "emily/tensor.h"
#include "emily/op_list.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- creation ---------------------------------------------------------- */
EMILY_API emily_status emily_constant(emily_device device, emily_dtype dtype, int rank, const int64_t *shape,
                                      emily_scalar value, emily_tensor **out);
/* axis < 0: counts over the flattened tensor. */
EMILY_API emily_status emily_iota(emily_device device, emily_dtype dtype, int rank, const int64_t *shape, int axis,
                                  emily_tensor **out);
/* Ones on the diagonal of the last two axes (rank >= 2). */
EMILY_API emily_status emily_eye(emily_device device, emily_dtype dtype, int rank, const int64_t *shape,
                                 emily_tensor **out);

/* ---- types ------------------------------------------------------------- */
EMILY_API emily_status emily_as_type(const emily_tensor *t, emily_dtype dtype, emily_tensor **out);
/* Reinterprets the bits; dtype must have the same size. */
EMILY_API emily_status emily_bitcast(const emily_tensor *t, emily_dtype dtype, emily_tensor **out);

/* ---- element-wise ------------------------------------------------------ */
/* Generated from emily/op_list.h. */
#define EMILY_OP_ENUM_(ENUM, name, rule) EMILY_##ENUM,
typedef enum emily_unary_op { EMILY_UNARY_OPS(EMILY_OP_ENUM_) EMILY_UNARY_OP_COUNT } emily_unary_op;

typedef enum emily_binary_op { EMILY_BINARY_OPS(EMILY_OP_ENUM_) EMILY_BINARY_OP_COUNT } emily_binary_op;
#undef EMILY_OP_ENUM_

EMILY_API const char *emily_unary_op_name(emily_unary_op op); /* Nx callback name */
EMILY_API const char *emily_binary_op_name(emily_binary_op op);
/* Looks up an op by its Nx callback name; returns false if unknown. */
EMILY_API bool emily_unary_op_from_name(const char *name, emily_unary_op *op);
EMILY_API bool emily_binary_op_from_name(const char *name, emily_binary_op *op);

/* Output type Nx gives a unary op applied to `t` (EMILY_DTYPE_AUTO and
 * an error when the type is not allowed). */
EMILY_API emily_status emily_unary_type(emily_unary_op op, emily_dtype t, emily_dtype *out);
EMILY_API emily_status emily_binary_type(emily_binary_op op, emily_dtype a, emily_dtype b, emily_dtype *out);

EMILY_API emily_status emily_unary(emily_unary_op op, const emily_tensor *t, emily_tensor **out);
/* Where Nx.BinaryBackend raises for operand values, fails with
 * EMILY_ERR_ARGUMENT and its message: a negative shift count ("cannot
 * left shift by -1"), a float remainder of NaN/infinity or by zero
 * (Erlang's :math.fmod errors), complex atan2 operands with a nonzero
 * imaginary part (docs/semantics.md, "Binary ops"). */
EMILY_API emily_status emily_binary(emily_binary_op op, const emily_tensor *a, const emily_tensor *b,
                                    emily_dtype out_type, emily_tensor **out);
EMILY_API emily_status emily_select(const emily_tensor *pred, const emily_tensor *on_true, const emily_tensor *on_false,
                                    emily_dtype out_type, emily_tensor **out);
EMILY_API emily_status emily_clip(const emily_tensor *t, const emily_tensor *min, const emily_tensor *max,
                                  emily_dtype out_type, emily_tensor **out);

/* ---- shape ------------------------------------------------------------- */
EMILY_API emily_status emily_reshape(const emily_tensor *t, int rank, const int64_t *shape, emily_tensor **out);
/* axes == NULL (naxes ignored): every axis of size 1. */
EMILY_API emily_status emily_squeeze(const emily_tensor *t, int naxes, const int *axes, emily_tensor **out);
/* `axes[i]` is the output axis that input axis i maps to (Nx.broadcast). */
EMILY_API emily_status emily_broadcast(const emily_tensor *t, int rank, const int64_t *shape, const int *axes,
                                       emily_tensor **out);
EMILY_API emily_status emily_transpose(const emily_tensor *t, const int *perm, emily_tensor **out);
/* Per axis: lo, hi (may be negative) and interior padding (>= 0). */
EMILY_API emily_status emily_pad(const emily_tensor *t, const emily_tensor *value, const int64_t *lo, const int64_t *hi,
                                 const int64_t *interior, emily_tensor **out);
EMILY_API emily_status emily_reverse(const emily_tensor *t, int naxes, const int *axes, emily_tensor **out);
EMILY_API emily_status emily_concatenate(int n, const emily_tensor *const *ts, int axis, emily_dtype out_type,
                                         emily_tensor **out);
EMILY_API emily_status emily_stack(int n, const emily_tensor *const *ts, int axis, emily_dtype out_type,
                                   emily_tensor **out);
/* Start indices are clamped like Nx: into [0, dim - length]. */
EMILY_API emily_status emily_slice(const emily_tensor *t, const int64_t *starts, const int64_t *lengths,
                                   const int64_t *strides, emily_tensor **out);
EMILY_API emily_status emily_put_slice(const emily_tensor *t, const int64_t *starts, const emily_tensor *update,
                                       emily_dtype out_type, emily_tensor **out);
/* In place: writes update into target at starts (no new tensor; every view
 * of target's buffer sees the write). For state that grows step by step,
 * such as a decoder's key/value cache, where put_slice would copy the
 * whole target each step. update has target's rank and dtype; starts are
 * not clamped (unlike put_slice): an update that does not fit at starts
 * is an error, and so is a target axis of stride 0 (broadcast) that would
 * take more than one row. The write is ordered on the device like any op
 * (a CUDA stream's later ops see it). Do not write into a tensor another
 * thread reads, or that a compiled graph holds as a constant. */
EMILY_API emily_status emily_write_slice(emily_tensor *target, const int64_t *starts, const emily_tensor *update);

/* ---- reductions -------------------------------------------------------- */
typedef enum emily_reduce_op {
    EMILY_REDUCE_SUM,
    EMILY_REDUCE_PRODUCT,
    EMILY_REDUCE_MAX,
    EMILY_REDUCE_MIN,
    EMILY_REDUCE_ALL,
    EMILY_REDUCE_ANY,
    EMILY_REDUCE_OP_COUNT
} emily_reduce_op;

/* axes == NULL: all axes. */
EMILY_API emily_status emily_reduce(emily_reduce_op op, const emily_tensor *t, int naxes, const int *axes,
                                    bool keep_axes, emily_dtype out_type, emily_tensor **out);

typedef enum emily_arg_op { EMILY_ARGMAX, EMILY_ARGMIN } emily_arg_op;
/* axis < 0: over the flattened tensor (keep_axis then ignored).
 * tie_break_high: the last index of equal extremes instead of the first. */
EMILY_API emily_status emily_argreduce(emily_arg_op op, const emily_tensor *t, int axis, bool keep_axis,
                                       bool tie_break_high, emily_dtype out_type, emily_tensor **out);

EMILY_API emily_status emily_all_close(const emily_tensor *a, const emily_tensor *b, double rtol, double atol,
                                       bool equal_nan, emily_tensor **out);

#ifdef __cplusplus
}
#endif

/* The remaining families (dot, conv, windows, indexing, sort, cumulative,
 * FFT, linear algebra, fused transformer kernels, quantization) each have a header of
 * their own. */
#include "emily/ops_dot.h"
#include "emily/ops_window.h"
#include "emily/ops_index.h"
#include "emily/ops_sort.h"
#include "emily/ops_cumulative.h"
#include "emily/ops_fft.h"
#include "emily/ops_linalg.h"
#include "emily/ops_fast.h"
#include "emily/ops_quant.h"

#endif
