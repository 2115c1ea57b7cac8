/* Typed operations: dot family (see emily/ops.h for conventions). */
#ifndef EMILY_OPS_DOT_H
#define EMILY_OPS_DOT_H

#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Generalized dot product (Nx.dot/6).
 *
 * contract_a[i] of `a` is contracted with contract_b[i] of `b` (equal
 * sizes); batch_a[i] is paired with batch_b[i] (equal sizes). Axes may be
 * negative. The output shape is: the batch dims (in batch_a's order),
 * then a's remaining dims, then b's remaining dims, each in axis order.
 * Nx requires batch axes to be the leading axes 0..n-1; Emily accepts any
 * distinct batch axes and places their dims first.
 *
 * out_type EMILY_DTYPE_AUTO is Nx.Type.merge of the input types. Values
 * are converted to the output's domain as Nx.BinaryBackend does (an
 * integer operand of a float dot is read exactly, not first rounded to
 * the output float type); integer dots wrap in the output's width. */
EMILY_API emily_status emily_dot(const emily_tensor *a, int ncontract_a, const int *contract_a, int nbatch_a,
                                 const int *batch_a, const emily_tensor *b, int ncontract_b, const int *contract_b,
                                 int nbatch_b, const int *batch_b, emily_dtype out_type, emily_tensor **out);

/* A dot of two 8-bit float tensors (f8_e4m3fn or f8 = E5M2, in any
 * mix), for quantized models: the result is
 *
 *     (a_scale * b_scale) * sum_k a[.., k] * b[.., k]
 *
 * that is (a * a_scale) . (b * b_scale), each product exact and the
 * products summed in f32, then scaled (a_scale * b_scale, rounded to
 * f32) and rounded once to out_type. Axes as for emily_dot.
 *
 * On a CUDA device with FP8 tensor cores (compute capability 8.9 and
 * up) it runs as one cuBLASLt FP8 matrix product (e4m3 x e4m3, e4m3 x
 * e5m2, e5m2 x e4m3), packing operands into the layout the tensor cores
 * read where they are not in it already; f32, bf16 and f16 outputs come
 * straight from the tensor cores (bf16 and f16 rounded to nearest even,
 * as PyTorch's torch._scaled_mm). Everywhere else (the CPU, e5m2 x
 * e5m2, a product cuBLASLt refuses) both operands are converted to f32
 * exactly and multiplied by emily_dot at the thread's precision, then
 * scaled; outputs other than f32 are then converted with Nx's rules
 * (emily_as_type). Sums are within f32's accumulation bound either way
 * (docs/semantics.md, "FP8 matrix products").
 *
 * out_type: EMILY_F32, EMILY_BF16, EMILY_F16, EMILY_F8_E4M3FN or
 * EMILY_F8_E5M2 (the 8-bit ones: the f32 result converted with Nx's
 * write rules); EMILY_DTYPE_AUTO is Nx.Type.merge of the two input types
 * (what Nx's template says for such a dot). Other operand or output types
 * fail with EMILY_ERR_TYPE. */
EMILY_API emily_status emily_dot_fp8(const emily_tensor *a, int ncontract_a, const int *contract_a, int nbatch_a,
                                     const int *batch_a, float a_scale, const emily_tensor *b, int ncontract_b,
                                     const int *contract_b, int nbatch_b, const int *batch_b, float b_scale,
                                     emily_dtype out_type, emily_tensor **out);

/* emily_dot_fp8 of matrices: a [..., M, K] times b [..., K, N], the
 * leading axes (equal sizes, both ranks equal, >= 2) batched. */
EMILY_API emily_status emily_matmul_fp8(const emily_tensor *a, float a_scale, const emily_tensor *b, float b_scale,
                                        emily_dtype out_type, emily_tensor **out);

/* Nx.dot/2: rank-0 operands are not handled here (Nx multiplies them);
 * vector.vector, matrix.vector, vector.matrix, and for rank >= 2 the last
 * axis of `a` against the second-to-last of `b`. */
EMILY_API emily_status emily_matmul(const emily_tensor *a, const emily_tensor *b, emily_tensor **out);

/* Convolution (Nx.conv): options, NULL pointers meaning Nx's defaults.
 * Arrays have one entry per spatial dimension (rank - 2) or, for the
 * permutations, one per axis. */
typedef struct emily_conv_opts {
    const int64_t *strides;         /* NULL: 1 */
    const int64_t *padding_lo;      /* NULL: 0; negative values crop */
    const int64_t *padding_hi;      /* NULL: 0 */
    const int64_t *input_dilation;  /* NULL: 1 */
    const int64_t *kernel_dilation; /* NULL: 1 */
    /* 0 (not given) or 1: no groups; negative sizes are an
     * EMILY_ERR_ARGUMENT. (Nx's own 0 is refused by the dispatcher, which
     * passes what Nx gives.) */
    int64_t feature_group_size;
    int64_t batch_group_size;
    /* input_permutation[j]: the input axis holding standard axis j of
     * {batch, channels, spatial...}; kernel: {out channels, in channels,
     * spatial...}; output: standard axis j of {batch, out channels,
     * spatial...} goes to output axis output_permutation[j]. NULL: identity */
    const int *input_permutation;
    const int *kernel_permutation;
    const int *output_permutation;
} emily_conv_opts;

/* Nx.conv with Nx's semantics (no kernel flip, no conjugation; products
 * summed per input channel over the window, then over the channels).
 * out_type EMILY_DTYPE_AUTO: Nx.Type.to_floating(merge(input, kernel)). */
EMILY_API emily_status emily_conv(const emily_tensor *input, const emily_tensor *kernel, const emily_conv_opts *opts,
                                  emily_dtype out_type, emily_tensor **out);

/* How floating-point dots multiply and accumulate.
 *
 * FAST (the default): each type in its own precision, like numpy, MLX,
 *   PyTorch and EXLA: sgemm/dgemm/cgemm/zgemm (f16/bf16 products summed
 *   in f32 and rounded once; cuBLAS COMPUTE_32F without TF32 on CUDA).
 *   Sums of long or cancelling contractions differ from the reference
 *   by up to the accumulation type's error bound (docs/semantics.md,
 *   "Dot precision").
 * HIGHEST: Nx.BinaryBackend's answers. f64 and c128 dots are computed
 *   exactly as the reference does (each product rounded, then added in
 *   contraction order, no fused multiply-add), so they match it bit for
 *   bit; f32, f16, bf16 and c64 dots accumulate in f64 (products of these
 *   types are exact in f64) and round once to the output type, within an
 *   ULP of the reference at any contraction length. f32 runs at about
 *   half the speed of an f32 BLAS.
 * Integer dots are exact (wrapping) in both. The same setting applies to
 * conv, to the compositions that use dot (solve), and to the FFTs on
 * CUDA (emily/ops_fft.h: FAST is cuFFT in the output's precision, HIGHEST
 * the reference's bits; the CPU's FFT is the reference's at both).
 *
 * The process-wide value starts from the environment variable
 * EMILY_DOT_PRECISION ("highest" or "fast"; anything else is FAST), read
 * at first use. A thread can override it for the calls it makes (the
 * dispatcher's per-call `precision:` option does this around one call). */
typedef enum emily_dot_precision {
    EMILY_DOT_PRECISION_PROCESS = -1, /* thread override only: follow the process value */
    EMILY_DOT_PRECISION_HIGHEST = 0,
    EMILY_DOT_PRECISION_FAST = 1
} emily_dot_precision;

/* Process-wide setting (atomic; affects dots started afterwards). */
EMILY_API emily_status emily_dot_set_precision(emily_dot_precision p);
/* The precision a dot started now on this thread uses. */
EMILY_API emily_dot_precision emily_dot_get_precision(void);
/* This thread's override (PROCESS: none); *previous (may be NULL)
 * receives the override it replaces, to restore it afterwards. */
EMILY_API emily_status emily_dot_set_thread_precision(emily_dot_precision p, emily_dot_precision *previous);

#ifdef __cplusplus
}
#endif
#endif
