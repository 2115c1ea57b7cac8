/* The one list of Nx callbacks the dispatcher knows. The registry that
 * emily_dispatch searches (src/nx/dispatch.c), the declarations of the
 * handlers (src/nx/callback.h) and the names emily_dispatch_callbacks()
 * lists are all expanded from it.
 *
 * To expand it, define EMI_CALLBACK(name, handler, op, cost, dtypes) and
 * write EMI_CALLBACK_LIST; each entry is one such call:
 *   name     the Nx.Backend callback (a C identifier, stringized);
 *   handler  the function emi_cb_<handler> that runs it, defined in
 *            src/nx/callbacks_<family>.c;
 *   op       handed to the handler as c->op, for a handler that serves
 *            several callbacks (0 where the handler serves one);
 *   cost     INLINE, DIRTY or DEVICE: EMILY_COST_* (emily/dispatch.h);
 *   dtypes   ANY, REAL, INTEGER or FLOAT: EMILY_DTYPES_*, the types its
 *            tensor operands may have.
 * cost and dtypes are bare words, or for the element-wise ops macros
 * that name one: paste them with EMI_PASTE (core/dtype_list.h), which
 * expands its arguments first.
 *
 * The element-wise callbacks are not written here: every op of
 * EMILY_UNARY_OPS and EMILY_BINARY_OPS (emily/op_list.h) is one, run by
 * the family's handler with the op's enum as `op`, its dtype class
 * derived from its type rule (EMI_DTYPES_OF_*_<rule> below). Adding an
 * op to op_list.h adds its callback.
 *
 * The order is the order of emily_dispatch_callbacks() (the fuzz
 * targets' seeds pick callbacks by index): new callbacks go at the end
 * of their family. */
#ifndef EMILY_NX_CALLBACK_LIST_H
#define EMILY_NX_CALLBACK_LIST_H

#include "emily/op_list.h"
#include "core/dtype_list.h"

/* The dtype class of each unary type rule (see emily/op_list.h and
 * emily_unary_type): the rules that reject complex inputs are REAL, the
 * integer-only rule INTEGER; every other rule takes any type. */
#define EMI_DTYPES_OF_UNARY_FLOATING ANY
#define EMI_DTYPES_OF_UNARY_FLOATING_REAL REAL
#define EMI_DTYPES_OF_UNARY_ABS ANY
#define EMI_DTYPES_OF_UNARY_INTEGER INTEGER
#define EMI_DTYPES_OF_UNARY_ROUNDING REAL
#define EMI_DTYPES_OF_UNARY_CONJUGATE ANY
#define EMI_DTYPES_OF_UNARY_SAME ANY
#define EMI_DTYPES_OF_UNARY_REAL ANY
#define EMI_DTYPES_OF_UNARY_IMAG ANY
#define EMI_DTYPES_OF_UNARY_PREDICATE ANY
#define EMI_DTYPES_OF_UNARY_PHASE ANY
#define EMI_DTYPES_OF_UNARY_LOGICAL ANY

/* The same for the binary type rules (emily_binary_type). */
#define EMI_DTYPES_OF_BINARY_ARITH ANY
#define EMI_DTYPES_OF_BINARY_REAL REAL
#define EMI_DTYPES_OF_BINARY_FLOATING ANY
#define EMI_DTYPES_OF_BINARY_ATAN2 ANY
#define EMI_DTYPES_OF_BINARY_INTEGER INTEGER
#define EMI_DTYPES_OF_BINARY_EQUALITY ANY
#define EMI_DTYPES_OF_BINARY_ORDER REAL
#define EMI_DTYPES_OF_BINARY_LOGICAL ANY
#define EMI_DTYPES_OF_BINARY_ARITH_SCALAR ANY
#define EMI_DTYPES_OF_BINARY_REAL_SCALAR REAL
#define EMI_DTYPES_OF_BINARY_INTEGER_SCALAR INTEGER

/* One op-list entry as a callback. (`...`: columns op_list.h may gain.) */
#define EMI_CALLBACK_OF_UNARY(ENUM, name, rule, ...) \
    EMI_CALLBACK(name, unary, EMILY_##ENUM, INLINE, EMI_DTYPES_OF_UNARY_##rule)
#define EMI_CALLBACK_OF_BINARY(ENUM, name, rule, ...) \
    EMI_CALLBACK(name, binary, EMILY_##ENUM, INLINE, EMI_DTYPES_OF_BINARY_##rule)

/* Cost classes: DIRTY where the work is not bounded by the elements in
 * and out (a product's inner dimension, a window's size, a sort's
 * comparisons, a decomposition's iterations), INLINE otherwise. */
/* clang-format off */
#define EMI_CALLBACK_LIST                                                            \
    /* creation: src/nx/callbacks_creation.c */                                      \
    EMI_CALLBACK(constant, constant, 0, INLINE, ANY)                                 \
    EMI_CALLBACK(iota, iota, 0, INLINE, ANY)                                         \
    EMI_CALLBACK(eye, eye, 0, INLINE, ANY)                                           \
    /* unary: src/nx/callbacks_unary.c */                                            \
    EMILY_UNARY_OPS(EMI_CALLBACK_OF_UNARY)                                           \
    EMI_CALLBACK(as_type, as_type, 0, INLINE, ANY)                                   \
    EMI_CALLBACK(bitcast, bitcast, 0, INLINE, REAL)                                  \
    /* binary: src/nx/callbacks_binary.c */                                          \
    EMILY_BINARY_OPS(EMI_CALLBACK_OF_BINARY)                                         \
    EMI_CALLBACK(select, select, 0, INLINE, ANY)                                     \
    EMI_CALLBACK(clip, clip, 0, INLINE, REAL)                                        \
    /* shape: src/nx/callbacks_shape.c */                                            \
    EMI_CALLBACK(reshape, reshape, 0, INLINE, ANY)                                   \
    EMI_CALLBACK(squeeze, squeeze, 0, INLINE, ANY)                                   \
    EMI_CALLBACK(broadcast, broadcast, 0, INLINE, ANY)                               \
    EMI_CALLBACK(transpose, transpose, 0, INLINE, ANY)                               \
    EMI_CALLBACK(pad, pad, 0, INLINE, ANY)                                           \
    EMI_CALLBACK(reverse, reverse, 0, INLINE, ANY)                                   \
    EMI_CALLBACK(concatenate, concat_or_stack, false, INLINE, ANY)                   \
    EMI_CALLBACK(stack, concat_or_stack, true, INLINE, ANY)                          \
    EMI_CALLBACK(slice, slice, 0, INLINE, ANY)                                       \
    EMI_CALLBACK(put_slice, put_slice, 0, INLINE, ANY)                               \
    /* reductions: src/nx/callbacks_reduce.c */                                      \
    EMI_CALLBACK(sum, aggregate, EMILY_REDUCE_SUM, INLINE, ANY)                      \
    EMI_CALLBACK(product, aggregate, EMILY_REDUCE_PRODUCT, INLINE, ANY)              \
    EMI_CALLBACK(reduce_max, aggregate, EMILY_REDUCE_MAX, INLINE, REAL)              \
    EMI_CALLBACK(reduce_min, aggregate, EMILY_REDUCE_MIN, INLINE, REAL)              \
    EMI_CALLBACK(all, aggregate, EMILY_REDUCE_ALL, INLINE, ANY)                      \
    EMI_CALLBACK(any, aggregate, EMILY_REDUCE_ANY, INLINE, ANY)                      \
    EMI_CALLBACK(argmax, argreduce, EMILY_ARGMAX, INLINE, REAL)                      \
    EMI_CALLBACK(argmin, argreduce, EMILY_ARGMIN, INLINE, REAL)                      \
    EMI_CALLBACK(all_close, all_close, 0, INLINE, ANY)                               \
    /* products: src/nx/callbacks_dot.c */                                           \
    EMI_CALLBACK(dot, dot, 0, DIRTY, ANY)                                            \
    EMI_CALLBACK(conv, conv, 0, DIRTY, ANY)                                          \
    /* windows: src/nx/callbacks_window.c */                                         \
    EMI_CALLBACK(window_sum, window_reduce, EMILY_WINDOW_SUM, DIRTY, ANY)            \
    EMI_CALLBACK(window_product, window_reduce, EMILY_WINDOW_PRODUCT, DIRTY, ANY)    \
    EMI_CALLBACK(window_max, window_reduce, EMILY_WINDOW_MAX, DIRTY, REAL)           \
    EMI_CALLBACK(window_min, window_reduce, EMILY_WINDOW_MIN, DIRTY, REAL)           \
    EMI_CALLBACK(window_scatter_max, window_scatter, true, DIRTY, REAL)              \
    EMI_CALLBACK(window_scatter_min, window_scatter, false, DIRTY, REAL)             \
    /* indexing: src/nx/callbacks_index.c */                                         \
    EMI_CALLBACK(take, take, false, DIRTY, ANY)                                      \
    EMI_CALLBACK(take_along_axis, take, true, DIRTY, ANY)                            \
    EMI_CALLBACK(gather, gather, 0, DIRTY, ANY)                                      \
    EMI_CALLBACK(indexed_add, indexed, true, DIRTY, ANY)                             \
    EMI_CALLBACK(indexed_put, indexed, false, DIRTY, ANY)                            \
    /* sorting: src/nx/callbacks_sort.c */                                           \
    EMI_CALLBACK(sort, sort, false, DIRTY, REAL)                                     \
    EMI_CALLBACK(argsort, sort, true, DIRTY, REAL)                                   \
    EMI_CALLBACK(top_k, top_k, 0, DIRTY, REAL)                                       \
    /* scans: src/nx/callbacks_cumulative.c */                                       \
    EMI_CALLBACK(cumulative_sum, cumulative, EMILY_CUMULATIVE_SUM, DIRTY, ANY)       \
    EMI_CALLBACK(cumulative_product, cumulative, EMILY_CUMULATIVE_PRODUCT, DIRTY, ANY) \
    EMI_CALLBACK(cumulative_max, cumulative, EMILY_CUMULATIVE_MAX, DIRTY, REAL)      \
    EMI_CALLBACK(cumulative_min, cumulative, EMILY_CUMULATIVE_MIN, DIRTY, REAL)      \
    /* transforms: src/nx/callbacks_fft.c */                                         \
    EMI_CALLBACK(fft, fft, 0, DIRTY, ANY)                                            \
    EMI_CALLBACK(ifft, ifft, 0, DIRTY, ANY)                                          \
    EMI_CALLBACK(fft2, fft2, 0, DIRTY, ANY)                                          \
    EMI_CALLBACK(ifft2, ifft2, 0, DIRTY, ANY)                                        \
    EMI_CALLBACK(rfft, rfft, 0, DIRTY, REAL)                                         \
    EMI_CALLBACK(irfft, irfft, 0, DIRTY, ANY)                                        \
    /* linear algebra: src/nx/callbacks_linalg.c */                                  \
    EMI_CALLBACK(lu, lu, 0, DIRTY, ANY)                                              \
    EMI_CALLBACK(triangular_solve, triangular_solve, 0, DIRTY, ANY)                  \
    EMI_CALLBACK(qr, qr, 0, DIRTY, ANY)                                              \
    EMI_CALLBACK(svd, svd, 0, DIRTY, REAL)                                           \
    EMI_CALLBACK(eigh, eigh, 0, DIRTY, ANY)                                          \
    EMI_CALLBACK(cholesky, cholesky, 0, DIRTY, ANY)                                  \
    EMI_CALLBACK(solve, solve, 0, DIRTY, ANY)                                        \
    EMI_CALLBACK(determinant, determinant, 0, DIRTY, ANY)                            \
    /* fused transformer kernels (Emily.Fast): src/nx/callbacks_fast.c */           \
    EMI_CALLBACK(layer_norm, layer_norm, 0, INLINE, FLOAT)                           \
    EMI_CALLBACK(rms_norm, rms_norm, 0, INLINE, FLOAT)                               \
    EMI_CALLBACK(sdpa, sdpa, 0, DIRTY, REAL)                                         \
    EMI_CALLBACK(softmax, softmax, 0, INLINE, FLOAT)                                 \
    /* affine quantization (Emily.Quantization): src/nx/callbacks_quant.c */        \
    EMI_CALLBACK(quantize, quantize, 0, DIRTY, ANY)                                  \
    EMI_CALLBACK(dequantize, dequantize, 0, DIRTY, ANY)                              \
    EMI_CALLBACK(quantized_matmul, quantized_matmul, 0, DIRTY, ANY)                  \
    /* rope (Emily.Fast, callbacks_fast.c): last, as fuzz seeds index this list */ \
    EMI_CALLBACK(rope, rope, 0, INLINE, REAL)
/* clang-format on */

#endif
