/* What every device's kernels provide the engine table (core/kernels.h),
 * written once for a device with prefix P (emi_cpu, emi_cuda):
 *
 *  - EMI_DEVICE_KERNELS_DECLARE(P), in the device's kernels.h, declares
 *    the twelve kernels of the families that are single functions of
 *    their own files (P_copy, P_convert, P_convert_narrow, P_fill, P_iota,
 *    P_eye, P_unary, P_binary, P_select, P_reduce, P_argreduce,
 *    P_all_close), the fast family's P_sdpa, P_softmax and P_rope, and the
 *    family tables the family's own file defines (P_dot_kernels,
 *    P_window_kernels, P_index_kernels, P_sort_kernels,
 *    P_cumulative_kernels, P_fft_kernels, P_linalg_kernels,
 *    P_fast_kernels, P_quant_kernels);
 *  - EMI_DEVICE_SINGLE_TABLES(P), in the engine table's file, defines the
 *    four tables of the single-function families (P_copy_kernels,
 *    P_creation_kernels, P_elementwise_kernels, P_reduce_kernels);
 *  - EMI_DEVICE_FAMILY_SLOTS(P), in the engine table's initializer, points
 *    its family slots at those tables, all but .dot (which a CUDA build
 *    without dot.cu leaves out) and the families one device alone has.
 *
 * Plain C (the CUDA engine's kernels.h declares these for its .cu files
 * inside extern "C"). */
#ifndef EMILY_CORE_DEVICE_KERNELS_H
#define EMILY_CORE_DEVICE_KERNELS_H

#include "core/engine.h"

#define EMI_DEVICE_KERNELS_DECLARE(P)                                                                             \
    emily_status P##_copy(emily_tensor *dst, const emily_tensor *src);                                            \
    emily_status P##_convert(emily_tensor *dst, const emily_tensor *src);                                         \
    emily_status P##_convert_narrow(emily_tensor *dst, const emily_tensor *src);                                  \
    emily_status P##_fill(emily_tensor *dst, const emily_scalar *value);                                          \
    emily_status P##_iota(emily_tensor *dst, int axis);                                                           \
    emily_status P##_eye(emily_tensor *dst);                                                                      \
    emily_status P##_unary(emily_unary_op op, emily_tensor *dst, const emily_tensor *src);                        \
    emily_status P##_binary(emily_binary_op op, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b); \
    emily_status P##_select(emily_tensor *dst, const emily_tensor *pred, const emily_tensor *on_true,             \
                            const emily_tensor *on_false);                                                        \
    emily_status P##_reduce(emily_reduce_op op, emily_tensor *dst, const emily_tensor *src, const bool *reduced); \
    emily_status P##_argreduce(emily_arg_op op, emily_tensor *dst, const emily_tensor *src, int axis,             \
                               bool tie_break_high);                                                              \
    emily_status P##_all_close(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, double rtol,      \
                               double atol, bool equal_nan);                                                      \
    emily_status P##_sdpa(emily_tensor *dst, const emily_tensor *q, const emily_tensor *k, const emily_tensor *v, \
                          const emily_sdpa_params *p);                                                            \
    emily_status P##_softmax(emily_tensor *dst, const emily_tensor *x);                                           \
    emily_status P##_rope(emily_tensor *dst, const emily_tensor *x, const emily_tensor *positions,                \
                          const emily_tensor *inv_freq, const emily_rope_params *p);                              \
    extern const struct emily_dot_kernels P##_dot_kernels;                                                        \
    extern const struct emily_window_kernels P##_window_kernels;                                                  \
    extern const struct emily_index_kernels P##_index_kernels;                                                    \
    extern const struct emily_sort_kernels P##_sort_kernels;                                                      \
    extern const struct emily_cumulative_kernels P##_cumulative_kernels;                                          \
    extern const struct emily_fft_kernels P##_fft_kernels;                                                        \
    extern const struct emily_linalg_kernels P##_linalg_kernels;                                                  \
    extern const struct emily_fast_kernels P##_fast_kernels;                                                      \
    extern const struct emily_quant_kernels P##_quant_kernels;

#define EMI_DEVICE_SINGLE_TABLES(P)                                                      \
    static const struct emily_copy_kernels P##_copy_kernels = {                          \
        .copy = P##_copy, .convert = P##_convert, .convert_narrow = P##_convert_narrow}; \
    static const struct emily_creation_kernels P##_creation_kernels = {                  \
        .fill = P##_fill, .iota = P##_iota, .eye = P##_eye};                             \
    static const struct emily_elementwise_kernels P##_elementwise_kernels = {            \
        .unary = P##_unary, .binary = P##_binary, .select = P##_select};                 \
    static const struct emily_reduce_kernels P##_reduce_kernels = {                      \
        .reduce = P##_reduce, .argreduce = P##_argreduce, .all_close = P##_all_close};

#define EMI_DEVICE_FAMILY_SLOTS(P)                                                                         \
    .copy = &P##_copy_kernels, .creation = &P##_creation_kernels, .elementwise = &P##_elementwise_kernels, \
    .reduce = &P##_reduce_kernels, .window = &P##_window_kernels, .index = &P##_index_kernels,             \
    .sort = &P##_sort_kernels, .cumulative = &P##_cumulative_kernels, .fft = &P##_fft_kernels,             \
    .linalg = &P##_linalg_kernels, .fast = &P##_fast_kernels, .quant = &P##_quant_kernels

#endif
