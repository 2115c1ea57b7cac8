/* Typed operations: affine weight quantization and the fused quantized
 * matmul (see emily/ops.h for conventions; docs/quantization.md for the
 * Elixir side, Emily.Quantization).
 *
 * A real float matrix w {N, K} is cut, along K, into groups of
 * group_size consecutive elements (32, 64 or 128; K a multiple of it),
 * and every group is stored as `bits`-bit codes (2, 4 or 8) with one
 * scale and one bias:
 *
 *   w[n, k] ~ q[n, k] * scale[n, k / group_size] + bias[n, k / group_size]
 *
 * Types. T is w's type (f16, bf16, f32 or f64); scales and biases are T.
 * W, the type the quantizer and the dequantizer compute in, is f64 when T
 * is f64, else f32; W(v) is v rounded to W, T(v) v rounded to T by Nx's
 * rules (bf16: to f32, then truncated). L = 2^bits - 1.
 *
 * quantize, per group g of a row (its elements read exactly into W):
 *   lo = the smallest, hi = the largest element of the group (NaNs take
 *        no part; a group of NaNs only has lo = hi = 0)
 *   scale[g] = T(W(W(hi - lo) / L))          bias[g] = T(lo)
 *   s, b     = scale[g], bias[g] read back into W (the stored values: the
 *              codes are chosen for what dequantize will compute)
 *   v        = W(W(w - b) / s)
 *   q        = 0 when s == 0 (a zero-range group, or a range below T's
 *              smallest scale) or v is NaN or v <= 0; L when v >= L;
 *              otherwise round(v), ties away from zero (Nx.round's rule)
 * so |w - dequantize(q)| <= s / 2 + (the rounding of scale and bias to T)
 * + W's rounding of the dequantized value; a zero-range group
 * dequantizes to bias = T(lo) exactly (its codes are all 0).
 * Infinities make the group's scale infinite or NaN (its values
 * dequantize to NaN): quantize finite weights.
 *
 * Packing: q is a u8 tensor {N, K * bits / 8}. Element k of a row lives
 * in byte k * bits / 8, at bit (k * bits) mod 8 of it: low bits first
 * (bits 4: element 2i is the low nibble of byte i, element 2i + 1 the
 * high nibble), the order of MLX's and GGML's packed layouts.
 *
 * dequantize: w'[n, k] = T(W(W(q * s) + b)), s and b the group's scale and
 * bias read into W (no fused multiply-add).
 *
 * quantized_matmul(x, q, scales, biases, bits, group_size, transpose):
 *   transpose true  (a dense layer, x . W^T): W = dequantize(...) is
 *                   {N, K}; x is {..., K}; out is {..., N};
 *   transpose false (x . W): W is {K, N}, quantized along N (q {K, N *
 *                   bits / 8}, scales {K, N / group_size}); x is
 *                   {..., K}; out is {..., N}.
 * computed without materializing W. On the CPU, transposed: for x of
 * fewer than 8 rows (a decode step) the codes are decoded in vector
 * registers straight into the dots, nothing stored; from 8 rows (a
 * prompt, a batch) blocks of W's rows are decoded into scratch and
 * multiplied by BLAS's gemm, each block at most 512 rows and 2^20
 * values of A (4 MB in f32, 8 MB in f64), one block per worker thread
 * at a time; both paths also copy x once (M x K values of A, K rounded
 * up to whole 32-byte, f64: 16-byte, chunks of codes). Not transposed:
 * one row of a column block at a time. The accumulation type A is f64
 * when x or the scales are f64, else f32; each weight is decoded in A as
 * A(A(q * s) + b) (s, b read exactly into A: for f32-or-narrower scales
 * this is dequantize's value), x is read exactly into A, and
 *   out[m, n] = O(sum over k of x[m, k] * w[k, n])   summed in A
 * in an order the device chooses, each product rounded to A or fused
 * into its addition (BLAS's multiply-adds), O = Nx.Type.merge(x's type,
 * T). The result is therefore that of x . dequantize(...)^T (dequantized
 * in A) within the bound of a reordered sum in A: |out - exact| <=
 * K * u_A * sum_k |x[m, k] * w[k, n]| (u_A: 2^-24 or 2^-53) plus the final
 * rounding to O (so a row's result may differ within that bound with the
 * number of rows of x, which picks the path, and with the thread count,
 * which cuts the BLAS path's blocks). An x with no rows gives an empty
 * output; K = 0 zeros.
 *
 * Errors: EMILY_ERR_MEMORY when the scratch above cannot be allocated;
 * EMILY_ERR_ARGUMENT for NULLs and bits or group_size not in the
 * lists above; EMILY_ERR_TYPE for a w, x or scales that is not a real
 * float, biases not of the scales' type, q not u8; EMILY_ERR_SHAPE for w
 * or q not a matrix, the grouped axis not a multiple of group_size, and
 * q, scales, biases or x whose shapes do not match each other (the
 * message names the op, the argument and the shapes); EMILY_ERR_DEVICE
 * for inputs on different devices. */
#ifndef EMILY_OPS_QUANT_H
#define EMILY_OPS_QUANT_H

#include <stdbool.h>
#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

EMILY_API emily_status emily_quantize(const emily_tensor *w, int bits, int64_t group_size, emily_tensor **q,
                                      emily_tensor **scales, emily_tensor **biases);

EMILY_API emily_status emily_dequantize(const emily_tensor *q, const emily_tensor *scales, const emily_tensor *biases,
                                        int bits, int64_t group_size, emily_tensor **w);

EMILY_API emily_status emily_quantized_matmul(const emily_tensor *x, const emily_tensor *q, const emily_tensor *scales,
                                              const emily_tensor *biases, int bits, int64_t group_size, bool transpose,
                                              emily_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
