/* Typed operations: fused transformer kernels (see emily/ops.h for
 * conventions). Each op computes, in one kernel, what a composed Nx
 * expression computes in many; the expression is written out below, step
 * by step, with the type every intermediate is rounded to, because that
 * is the op's contract: on any device the result is that expression's,
 * except for the order of the row sums (see "Sums" below). Emily.Fast
 * (beam/lib/emily/fast.ex) runs the same expression where the engine is
 * not the backend; docs/fast.md explains both.
 *
 * Both ops normalize every row of the last axis of x (n = its size,
 * rank >= 1). gamma and beta have shape {n}. x, gamma and beta are real
 * floats (f16, bf16, f32, f64); types may differ. Types:
 *   O  the output type: Nx.Type.merge of the inputs' types (x, gamma,
 *      beta), as the composed expression's last operation types it;
 *   W  the statistics type: f64 when x is f64, else f32 (x is read
 *      exactly into it);
 *   A  the affine type: f64 when O is f64, else f32.
 * W(v) and A(v) mean v rounded to that type, O(v) rounded by Nx's
 * conversion rules (bf16: through f32, then truncated). eps is rounded to
 * W once (Nx makes a number operand a tensor of the other operand's
 * type): e = W(eps).
 *
 * layer_norm (Axon.Layers.layer_norm, channel_index -1, evaluated in W and
 * A instead of in x's type):
 *   mean = W(W(sum_j x_j) / n)              (the sum accumulated wide)
 *   c_j  = W(x_j - mean)
 *   var  = W(W(sum_j W(c_j * c_j)) / n)     (Nx.variance, biased)
 *   r    = var >= e ? W(1 / sqrt(W(var + e))) : W(1 / sqrt(e))
 *   y_j  = O(A(A(A(gamma_j * r) * c_j) + beta_j))     (no beta: O(A(...)))
 * (Axon's select keeps r finite for var below e; (gamma * r) * c is its
 * order of the products.) For f16/bf16 x this is the composed form with
 * every operand upcast to f32 and the result rounded once; Axon itself
 * does not upcast (it computes in x's type, rounding after each step), so
 * for f16/bf16 the fused result is the more accurate one.
 *
 * rms_norm (Bumblebee.Layers.rms_norm with its defaults: upcast
 * :normalization, shift 0.0, channel_index -1):
 *   ms   = W(W(sum_j W(x_j * x_j)) / n)
 *   r    = W(1 / sqrt(W(ms + e)))
 *   z_j  = X(W(x_j * r))                    X: x's own type
 *   y_j  = O(A(z_j * gamma_j))
 * The normalized value is rounded to x's type before the scale, as
 * Bumblebee (and Hugging Face's LlamaRMSNorm) does, so f16/bf16 round
 * twice. One difference: Bumblebee casts an f64 x to f32 for the
 * normalization; here W is f64 for f64 x.
 *
 * Sums: f16/bf16/f32 rows are summed in double, f64 rows in f64, each row
 * as 32 interleaved partial sums (element j into partial j mod 32, each
 * partial in index order) combined pairwise, partial k with k + 16, then
 * k with k + 8, 4, 2, 1: one warp's butterfly on the GPU, the same order
 * on the CPU, so the two devices agree bit for bit. Nx.BinaryBackend sums
 * in index order in f64; f32 results are therefore its bits except where
 * the double sums round differently to f32, and f64 results are within
 * the usual bound of a reordered sum (n * eps * sum |terms|).
 *
 * Edge values follow the expression: a NaN in a row makes the row NaN
 * (layer_norm: inf too, through inf - inf), a constant row normalizes to
 * beta (layer_norm: c_j = 0 and r = W(1 / sqrt(e)); with eps 0, r is
 * infinite and y is NaN), rows of length 1 are constant rows. An x with
 * no rows, or rows of length 0, gives an empty output of x's shape.
 *
 * Errors: NULL arguments, x of rank 0, gamma or beta not of shape {n},
 * non-float types (integers, complex), inputs on different devices. */
#ifndef EMILY_OPS_FAST_H
#define EMILY_OPS_FAST_H

#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* beta may be NULL (layer norm without bias). */
EMILY_API emily_status emily_layer_norm(const emily_tensor *x, const emily_tensor *gamma,
                                        const emily_tensor *beta, double eps, emily_tensor **out);

EMILY_API emily_status emily_rms_norm(const emily_tensor *x, const emily_tensor *gamma, double eps,
                                      emily_tensor **out);

/* softmax over the last axis (Axon.Activations.softmax with axis -1:
 * x - stop_grad(reduce_max(x)), exp, and the reciprocal of the sum times
 * the exponentials), every step in x's own type X as the composed
 * expression computes it (the output has x's type and shape; x is f16,
 * bf16, f32 or f64, rank >= 1; n = the last axis' size). Per row:
 *   m   = max_j x_j                       (NaN if any x_j is NaN; -inf for
 *                                          a row of -inf)
 *   d_j = X(x_j - m)
 *   e_j = X(exp(d_j))                     the device's exp kernel for X,
 *                                          the one emily_unary(EMILY_EXP)
 *                                          runs on a contiguous tensor
 *   s   = X(sum_j e_j)                    summed wide, rounded once
 *   r   = X(1 / s)
 *   y_j = X(r * e_j)
 * X(v) of an arithmetic step is emily_binary's rounding: f32 and f64
 * compute in their type, f16 and bf16 in f32 and round once by Nx's rules
 * (bf16: truncated from the f32). The sum is accumulated in double (f64:
 * in f64) in the order "Sums" describes above and rounded once to X, as
 * emily_sum rounds its double sum; the two orders give the same X value
 * except where the double sums straddle a rounding boundary of X. So the
 * result is the composed calls' (reduce_max, subtract, exp, sum, divide,
 * multiply on this device) bit for bit but for that. Edge values follow
 * the expression: a NaN or a +inf in a row makes the row NaN (inf - inf),
 * a -inf element gives 0 (a row of -inf only is NaN). An x with no rows
 * or rows of length 0 gives an empty output.
 *
 * Errors: NULL arguments, x of rank 0, non-float types. */
EMILY_API emily_status emily_softmax(const emily_tensor *x, emily_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
