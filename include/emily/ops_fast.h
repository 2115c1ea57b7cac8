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
EMILY_API emily_status emily_layer_norm(const emily_tensor *x, const emily_tensor *gamma, const emily_tensor *beta,
                                        double eps, emily_tensor **out);

EMILY_API emily_status emily_rms_norm(const emily_tensor *x, const emily_tensor *gamma, double eps, emily_tensor **out);

/* ---- scaled dot-product attention ----------------------------------------
 *
 * emily_sdpa: softmax(q k^T * scale + mask) v per batch and head, as
 * Bumblebee's attention (Bumblebee.Layers.attention_weights_impl and
 * attention_output_impl) computes it, with the scores and the softmax
 * upcast to the working type W and the probabilities rounded back to the
 * value type before the product with v.
 *
 * Shapes: q {B, Hq, Sq, D}, k {B, Hkv, Skv, D}, v {B, Hkv, Skv, Dv}; Hq a
 * multiple of Hkv (grouped-query attention: query head h reads kv head
 * h / (Hq / Hkv); Hkv = Hq is plain multi-head attention, Hkv = 1
 * multi-query). The output is {B, Hq, Sq, Dv}, of q's type T. q, k and v
 * have one type T: f16, bf16, f32 or f64. W is f64 for f64, else f32.
 *
 * Options (p may be NULL: scale 1, nothing else):
 *   scale   a double, rounded to W once (s = W(scale)); callers wanting
 *           the usual 1/sqrt(D) pass it (Emily.Fast does by default);
 *   causal  query i sees key j iff j <= i + (Skv - Sq): the diagonal is
 *           aligned to the bottom-right corner, so that the last query
 *           row sees every key, as in decoding with a KV cache (Sq new
 *           tokens after Skv - Sq cached ones). With Sq = Skv it is the
 *           usual lower triangle; with Sq > Skv the first Sq - Skv rows
 *           see no key (see "fully masked rows");
 *   mask    NULL, or a tensor broadcastable (Nx's right-aligned rule) to
 *           {B, Hq, Sq, Skv}: u8 is a boolean mask (nonzero = keep, 0 =
 *           masked), a float type an additive mask (added to the scaled
 *           scores after rounding to W; -inf masks);
 *   sinks   NULL, or {Hq}, any float type: one extra logit per query head
 *           (gpt-oss's attention sinks) that joins the softmax's
 *           denominator and contributes no value.
 *
 * The expression (the op's contract; Emily.Fast's fallback composes it
 * of Nx ops). W(v) is v rounded to W, T(v) rounded by Nx's conversion
 * rules (bf16: through f32, then truncated); i a query row, j a key, d a
 * column; q, k, v are read exactly into W:
 *   S_ij  = W(sum_d q_id * k_jd)          a dot in W (accumulation order
 *                                         unspecified: see below)
 *   A_ij  = W(S_ij * s)                   scaled
 *   A_ij  = W(A_ij + W(mask_ij))          additive mask only
 *   L_ij  = keep_ij ? A_ij : -inf         boolean mask 0, or causal j > i + Skv - Sq
 *   m_i   = max(max_j L_ij, W(sink_h))    (no sink: max_j L_ij; -inf when empty)
 *   m'_i  = m_i == -inf ? 0 : m_i         every logit -inf: no -inf - -inf
 *   E_ij  = W(exp(L_ij - m'_i))
 *   Z_i   = W(sum_j E_ij + W(exp(W(sink_h) - m'_i)))   (no sink: sum_j E_ij)
 *   P_ij  = T(W(E_ij / Z_i)), or 0 when Z_i = 0
 *   O_id  = T(W(sum_j W(P_ij) * v_jd))    a dot in W
 * The max and the subtraction are Axon's softmax (exp(x - max) / sum);
 * Bumblebee computes every step in q's type, this computes them in W and
 * rounds the probabilities to T once, as its dot with v (in T) needs.
 *
 * Fully masked rows: a row whose every logit is -inf (all keys masked by
 * the mask or by causal, or Skv = 0) and that has no sink has Z_i = 0 and
 * gives 0, not NaN (PyTorch's and FlashAttention's choice: a NaN in a
 * padding row would reach other rows through the next layer's 0 * NaN).
 * Bumblebee masks with the type's most negative finite value instead of
 * -inf, which gives such a row the mean of all v rows; rows with at least
 * one key kept are the same either way (exp(min_finite - m) is 0). With a
 * sink a fully masked row is 0 too (the sink takes all the weight).
 *
 * Edge values follow the expression: a NaN in q, k, a kept logit or a
 * sink makes its row NaN; an infinite kept logit gives NaN (inf - inf).
 * Where P_ij is 0 because key j is masked, the kernels may skip the key
 * altogether, so an infinity or NaN of v at a masked key may or may not
 * reach the output (the composed 0 * inf is NaN).
 *
 * Accumulation and devices. The CPU engine computes the expression in
 * this order, each query block's scores at once (two passes over stored
 * scores, not an online softmax), with the two dots by BLAS in W (f32
 * products summed in f32, in BLAS's order), Z summed in double (f64: in
 * f64) in lanes, and exp as the engine's exp op computes it (f32: SIMD,
 * within an ULP of exp in double rounded once): it differs from the
 * composed form on Nx.BinaryBackend (whose dots sum in f64) by the dots'
 * order and that ULP. The
 * CUDA engine runs flash attention: key tiles streamed with an online
 * softmax (a running max, the partial sums rescaled when it grows),
 * exp as exp2 of a scaled argument, the unnormalized E_ij rounded to T
 * for the tensor-core product with v, and the division by Z at the end;
 * its results are within the rounding of those reorderings (see
 * tests/unit/test_cuda_sdpa.c), not bit for bit the CPU's.
 *
 * Empty shapes (B, Hq, Sq or Dv of 0) give an empty output; Skv = 0 gives
 * zeros (every row fully masked); D = 0 gives scores of 0.
 *
 * Errors: NULL q, k, v or out; ranks other than 4; k or v not of q's type,
 * or a type other than f16, bf16, f32, f64; mismatched B, D, Hkv or Skv;
 * Hq not a multiple of Hkv; a mask that does not broadcast to {B, Hq, Sq,
 * Skv} or is neither u8 nor float; sinks not of shape {Hq} or not float;
 * inputs on different devices. */
typedef struct emily_sdpa_options {
    double scale;              /* the scores' factor (1/sqrt(D) is the usual one) */
    bool causal;               /* bottom-right aligned causal mask */
    const emily_tensor *mask;  /* NULL, u8 (boolean, keep) or float (additive) */
    const emily_tensor *sinks; /* NULL or {Hq} float */
} emily_sdpa_options;

EMILY_API emily_status emily_sdpa(const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                                  const emily_sdpa_options *options, emily_tensor **out);

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

/* ---- rotary position embedding -------------------------------------------
 *
 * emily_rope: rotates pairs of features of x by angles proportional to each
 * token's position, as Hugging Face's and Bumblebee's Llama apply rotary
 * embeddings to queries and keys (before attention's transpose).
 *
 * Shapes: x {B, S, H, D} (batch, sequence, heads, head_dim), f16, bf16,
 * f32 or f64; positions {S} (every batch entry at the same positions) or
 * {B, S}, any integer type (values converted to s64; decoding with a KV
 * cache passes the cached length as offset). The output has x's type T
 * and shape. The first `dims` features of head_dim are rotated (dims even,
 * 0 < dims <= D; 0 in the options means D); features dims..D-1 pass
 * through unchanged. h = dims / 2 pairs, pair i with angle index i:
 *   rotate_half (default, Hugging Face's and Bumblebee's): (i, i + h)
 *   traditional (interleaved, GPT-J / llama.cpp / MLX traditional):
 *                (2i, 2i + 1)
 *
 * The frequency table inv_i, i < h, f32 (Hugging Face's inv_freq: the
 * angle is position * inv_i; MLX's `freqs` are its reciprocals). f32(v) is
 * v rounded to f32 (round to nearest even), pow, cos and sin are the host
 * C library's in double (correctly rounded but for rare inputs), every
 * other operation is written in the type it rounds to:
 *   e_i   = f32(2i / dims)
 *   b     = f32(base')                base' = base, or dynamic's below
 *   inv_i = f32(1 / f32(pow(b, e_i)))
 * which is Bumblebee's table (Nx.BinaryBackend computes the power in
 * double); Hugging Face computes the same expression with PyTorch's f32
 * pow, which differs by an ULP on about 1% of entries: pass its inv_freq
 * buffer as the explicit table to get its bits. Scalings (`scaling`):
 *   NONE     the table above;
 *   LINEAR   the positions are divided instead: p' = f32(p / f32(factor))
 *            (Bumblebee's order; Hugging Face divides the table,
 *            f32(inv_i / factor), the same bits for a power-of-two factor);
 *   DYNAMIC  (Hugging Face's dynamic NTK) with L = sequence_length (0: S)
 *            and O = original_max_positions: when L > O,
 *            base' = base * (factor * L / O - (factor - 1))^(dims / (dims - 2))
 *            in double, else base' = base; dims must be > 2. (Bumblebee
 *            raises base * (...) as a whole to the power: another table.)
 *   LLAMA3   (Hugging Face's _compute_llama3_parameters, Bumblebee's
 *            llama3 strategy) every step in f32, F = f32(factor), lo =
 *            f32(low_frequency_factor), hi = f32(high_frequency_factor),
 *            O = f32(original_max_positions):
 *              w    = f32(f32(2 pi) / inv_i)
 *              w < f32(O / hi)     -> inv_i
 *              w > f32(O / lo)     -> f32(inv_i / F)
 *              else  s = f32(f32(f32(O / w) - lo) / f32(hi - lo))
 *                    f32(f32(f32(f32(1 - s) * inv_i) / F) + f32(s * inv_i))
 * or an explicit table `inv_freq` ({h}, any float type, converted to f32;
 * scaling must then be NONE: the table already holds any scaling).
 *
 * Per token (b, s) with position p and pair i, the pair (u, v):
 *   a   = f32(p * inv_i)          p' instead of p for LINEAR; the product
 *                                 in double (exact for |p| < 2^29)
 *   c   = T(f32(cos(a)))          cos and sin in double, rounded to f32,
 *   s   = T(f32(sin(a)))          then to T (exact for f32 and f64)
 *   u'  = T(T(u * c) - T(v * s))
 *   v'  = T(T(v * c) + T(u * s))
 * T(v) rounds by Nx's conversion rules (bf16: through f32, then
 * truncated); products and sums of f16/bf16 operands are computed in f32
 * (exact products; one rounding to T). This is Bumblebee's
 * `x * cos + rotate_half(x) * sin` with its f32 cos/sin table cast to x's
 * type, on Nx.BinaryBackend, bit for bit (its dynamic scaling aside); an
 * f64 x uses the f32 angles and cos/sin, as Bumblebee and Hugging Face do.
 *
 * Devices: the table is computed once on the host and copied to x's
 * device; the CUDA kernel computes cos and sin with the engine's nearly
 * correctly rounded double-double sin/cos (cuda/correctly_rounded.cuh),
 * the CPU with the C library's, so both give the same f32 values but for
 * a double result within an ULP or two of an f32 rounding boundary
 * (about one angle in 2^28); tests/unit/test_cuda_rope.c checks bits.
 *
 * Empty x gives an empty output. Edge values follow the expression (NaN
 * and infinities in x propagate through the products).
 *
 * Errors: NULL x, positions or out; x not of rank 4 or not a real float;
 * positions not {S} or {B, S} or not an integer type; dims odd, negative
 * or above D; a non-positive or non-finite base, factor, low/high
 * frequency factor, or original_max_positions (llama3 also needs
 * low < high); a negative sequence_length; dynamic with dims <= 2; an
 * inv_freq not a float {dims / 2} or given with a scaling; an unknown
 * scaling; inputs on different devices. */
typedef enum emily_rope_scaling {
    EMILY_ROPE_NONE = 0,
    EMILY_ROPE_LINEAR,
    EMILY_ROPE_DYNAMIC,
    EMILY_ROPE_LLAMA3
} emily_rope_scaling;

typedef struct emily_rope_options {
    int64_t dims;                   /* features rotated; 0: all of D */
    double base;                    /* the table's base (Llama: 10000, 500000, ...) */
    bool traditional;               /* interleaved pairs (2i, 2i + 1) */
    emily_rope_scaling scaling;     /* NONE, LINEAR, DYNAMIC, LLAMA3 */
    double factor;                  /* LINEAR, DYNAMIC, LLAMA3 */
    double low_frequency_factor;    /* LLAMA3 */
    double high_frequency_factor;   /* LLAMA3 */
    int64_t original_max_positions; /* DYNAMIC, LLAMA3 */
    int64_t sequence_length;        /* DYNAMIC: the length the base adapts to; 0: S */
    const emily_tensor *inv_freq;   /* NULL, or the explicit table {dims / 2} */
} emily_rope_options;

/* options NULL: dims D, base 10000, rotate_half, no scaling. */
EMILY_API emily_status emily_rope(const emily_tensor *x, const emily_tensor *positions,
                                  const emily_rope_options *options, emily_tensor **out);

#ifdef __cplusplus
}
#endif
#endif
