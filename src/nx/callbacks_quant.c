/* Nx callbacks: affine quantization (emily/ops_quant.h).
 *
 * Emily.Quantization (beam/lib/emily/quantization.ex) calls Nx.block/4
 * with its structs; Emily.Backend.block/4 (and Emily.Compiler) send them
 * here by name with the struct's fields as a final options argument:
 *
 *   quantize(out {q, scales, biases}, w, opts)
 *   dequantize(out, q, scales, biases, opts)
 *   quantized_matmul(out, x, q, scales, biases, opts)
 *
 * opts: bits (default 4), group_size (default 64), and for the matmul
 * transpose (default true: x . W^T, a dense layer's product). The output
 * types are inferred in both modes; the dispatcher checks them against
 * Nx's templates in RUN mode. */
#include "nx/callback.h"
#include "ops/output_shape.h"

/* The tensors, then bits and group_size (and transpose) from opts. */
static emily_status quant_args(emily_call *c, int n, emily_tensor **ts, int *bits, int64_t *gs, bool *transpose) {
    const emily_value *opts = NULL;
    emily_status s = emi_call_tensors_opts(c, n, ts, &opts);
    int64_t b = 4;
    if (!s) s = emi_opt_int(c, opts, "bits", NULL, &b);
    if (!s) s = emi_opt_int(c, opts, "group_size", NULL, gs);
    if (!s && transpose) s = emi_opt_bool(c, opts, "transpose", NULL, transpose);
    if (!s && (b < 0 || b > 64))
        return emi_call_fail(c, EMILY_ERR_ARGUMENT, "option :bits must be 2, 4 or 8, got %lld", (long long)b);
    *bits = (int)b;
    return s;
}

emily_status emi_cb_quantize(emily_call *c) {
    emily_tensor *w = NULL, *q = NULL, *sc = NULL, *bi = NULL;
    int bits;
    int64_t gs = 64;
    emily_status s = quant_args(c, 1, &w, &bits, &gs, NULL);
    if (s || (s = emily_quantize(w, bits, gs, &q, &sc, &bi))) return s;
    emily_tensor *ts[3] = {q, sc, bi};
    for (int i = 0; i < 3; i++) {
        emily_status si = emi_call_return(c, ts[i]); /* takes ownership even on failure */
        if (si && !s) s = si;
    }
    return s;
}

emily_status emi_cb_dequantize(emily_call *c) {
    emily_tensor *ts[3] = {NULL, NULL, NULL}, *r;
    int bits;
    int64_t gs = 64;
    emily_status s = quant_args(c, 3, ts, &bits, &gs, NULL);
    if (s || (s = emily_dequantize(ts[0], ts[1], ts[2], bits, gs, &r))) return s;
    return emi_call_return(c, r);
}

emily_status emi_cb_quantized_matmul(emily_call *c) {
    emily_tensor *ts[4] = {NULL, NULL, NULL, NULL}, *r;
    int bits;
    int64_t gs = 64;
    bool transpose = true;
    emily_status s = quant_args(c, 4, ts, &bits, &gs, &transpose);
    if (s) return s;
    /* {..., N} grows with x's rows and the weights' together (and is
     * filled even where K is 0): checked against Nx's before the work */
    emily_dtype dtype;
    int64_t *shape = emi_call_alloc(c, sizeof(int64_t) * ((size_t)emily_tensor_rank(ts[0]) + 1));
    if (!shape) return EMILY_ERR_MEMORY;
    if ((s = emi_quantized_matmul_output_shape(ts[0], ts[1], ts[2], ts[3], bits, gs, transpose, &dtype, shape)) ||
        (s = emi_call_check_output(c, 0, dtype, emily_tensor_rank(ts[0]), shape)))
        return s;
    if ((s = emily_quantized_matmul(ts[0], ts[1], ts[2], ts[3], bits, gs, transpose, &r))) return s;
    return emi_call_return(c, r);
}
