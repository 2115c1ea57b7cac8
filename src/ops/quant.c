/* Affine quantization and the fused quantized matmul (emily/ops_quant.h).
 *
 * The op layer checks the arguments and moves every float operand into
 * one compute type (f32, or f64) before the device's kernels run, so each
 * kernel exists in two types only: w, x, scales and biases are converted
 * (weights once, at quantization; activations and a row of scales per
 * call, small next to the packed matrix), and results are converted to
 * the output type afterwards. quantize is two kernel calls around the
 * rounding of scales and biases to the stored type: the codes are chosen
 * for the values dequantize will read back. */
#include <stdlib.h>
#include "ops/common.h"
#include "ops/output_shape.h"
#include "core/kernels.h"

static emily_status check_bits(const char *op, int bits, int64_t group_size) {
    if (bits != 2 && bits != 4 && bits != 8)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: bits must be 2, 4 or 8, got %d", op, bits);
    if (group_size != 32 && group_size != 64 && group_size != 128)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: group_size must be 32, 64 or 128, got %lld", op,
                           (long long)group_size);
    return EMILY_OK;
}

static emily_status check_float(const char *op, const char *arg, const emily_tensor *t) {
    if (emily_dtype_is_float(t->dtype)) return EMILY_OK;
    return emily_error(EMILY_ERR_TYPE, "%s: %s must be a real float tensor (f16, bf16, f32 or f64), got %s", op, arg,
                       emily_dtype_known(t->dtype) ? emily_dtype_name(t->dtype) : "an invalid type");
}

/* The compute type of a float type: f64 for f64, else f32. */
static emily_dtype wide(emily_dtype t) { return t == EMILY_F64 ? EMILY_F64 : EMILY_F32; }

/* t rounded to `stored` and read back into `work` (the stored scale or
 * bias as the codes must see it). */
static emily_status round_through(const emily_tensor *t, emily_dtype stored, emily_dtype work, emily_tensor **rounded,
                                  emily_tensor **back) {
    emily_status s = emi_convert_to(t, stored, rounded);
    if (!s) s = emi_contiguous_as(*rounded, work, back);
    return s;
}

/* The packed weights' description shared by dequantize and the matmul:
 * q u8 {rows, cols * bits / 8}, scales and biases {rows, cols / g} of one
 * float type. *cols receives the unpacked width. */
static emily_status check_packed(const char *op, const emily_tensor *q, const emily_tensor *scales,
                                 const emily_tensor *biases, int bits, int64_t group_size, int64_t *cols) {
    emily_status s;
    if (q->dtype != EMILY_U8)
        return emily_error(EMILY_ERR_TYPE, "%s: q must be a u8 tensor of packed codes, got %s", op,
                           emily_dtype_known(q->dtype) ? emily_dtype_name(q->dtype) : "an invalid type");
    if ((s = check_float(op, "scales", scales))) return s;
    if (biases->dtype != scales->dtype)
        return emily_error(EMILY_ERR_TYPE, "%s: biases must have the scales' type %s, got %s", op,
                           emily_dtype_name(scales->dtype),
                           emily_dtype_known(biases->dtype) ? emily_dtype_name(biases->dtype) : "an invalid type");
    if (q->rank != 2)
        return emily_error(EMILY_ERR_SHAPE, "%s: q must be a matrix {rows, cols * %d / 8}, got %s", op, bits,
                           EMILY_SHAPE_STR(q));
    int64_t rows = q->shape[0], c = q->shape[1] * 8 / bits;
    int64_t groups = c / group_size;
    if (c % group_size != 0)
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: q %s holds rows of %lld %d-bit codes, not a multiple of the group "
                           "size %lld",
                           op, EMILY_SHAPE_STR(q), (long long)c, bits, (long long)group_size);
    const emily_tensor *sb[2] = {scales, biases};
    static const char *const names[2] = {"scales", "biases"};
    for (int i = 0; i < 2; i++)
        if (sb[i]->rank != 2 || sb[i]->shape[0] != rows || sb[i]->shape[1] != groups)
            return emily_error(EMILY_ERR_SHAPE,
                               "%s: %s must have shape {%lld, %lld} (q %s: %lld codes a row in "
                               "groups of %lld), got %s",
                               op, names[i], (long long)rows, (long long)groups, EMILY_SHAPE_STR(q), (long long)c,
                               (long long)group_size, EMILY_SHAPE_STR(sb[i]));
    *cols = c;
    return EMILY_OK;
}

emily_status emily_quantize(const emily_tensor *w, int bits, int64_t group_size, emily_tensor **q,
                            emily_tensor **scales, emily_tensor **biases) {
    static const char *op = "quantize";
    emily_status s;
    if ((s = emi_check_out(op, q)) || (s = emi_check_out(op, scales)) || (s = emi_check_out(op, biases))) return s;
    const emily_engine *e;
    if ((s = emi_check_inputs(op, q, 1, &w, (const char *const[]){"w"}, &e))) return s;
    if ((s = check_bits(op, bits, group_size)) || (s = check_float(op, "w", w))) return s;
    if (w->rank != 2)
        return emily_error(EMILY_ERR_SHAPE, "%s: w must be a matrix {N, K}, got %s", op, EMILY_SHAPE_STR(w));
    int64_t n = w->shape[0], k = w->shape[1];
    if (k % group_size != 0)
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: w's last axis (K = %lld, shape %s) must be a multiple of the group "
                           "size %lld",
                           op, (long long)k, EMILY_SHAPE_STR(w), (long long)group_size);
    if ((s = emi_need_kernel(op, e, EMI_KERNEL_QUANTIZE, 0, w->dtype)) ||
        (s = emi_need_kernel(op, e, EMI_KERNEL_QUANT_RANGES, 0, w->dtype)))
        return s;
    emily_dtype t = w->dtype, work = wide(t);
    int64_t qshape[2] = {n, k * bits / 8}, gshape[2] = {n, k / group_size};
    emily_tensor *qt = NULL, *sc = NULL, *bi = NULL, *ww = NULL, *sw = NULL, *bw = NULL, *sr = NULL, *br = NULL;
    s = emi_empty_like_device(w, EMILY_U8, 2, qshape, &qt);
    if (!s && n * k == 0) {
        /* nothing to quantize: empty codes and, for empty rows, empty groups */
        s = emi_empty_like_device(w, t, 2, gshape, &sr);
        if (!s) s = emi_empty_like_device(w, t, 2, gshape, &br);
        goto done;
    }
    if (!s) s = emi_contiguous_as(w, work, &ww);
    if (!s) s = emi_empty_like_device(w, work, 2, gshape, &sc);
    if (!s) s = emi_empty_like_device(w, work, 2, gshape, &bi);
    if (!s) s = e->quant->ranges(sc, bi, ww, bits, group_size);
    if (!s) s = round_through(sc, t, work, &sr, &sw);
    if (!s) s = round_through(bi, t, work, &br, &bw);
    if (!s) s = e->quant->quantize(qt, ww, sw, bw, bits, group_size);
done:
    emi_release_all(6, (emily_tensor *[]){sc, bi, ww, sw, bw, NULL});
    if (s) {
        emi_release_all(3, (emily_tensor *[]){qt, sr, br});
        return s;
    }
    *q = qt;
    *scales = sr;
    *biases = br;
    return EMILY_OK;
}

emily_status emily_dequantize(const emily_tensor *q, const emily_tensor *scales, const emily_tensor *biases, int bits,
                              int64_t group_size, emily_tensor **w) {
    static const char *op = "dequantize";
    static const char *const names[3] = {"q", "scales", "biases"};
    const emily_tensor *ts[3] = {q, scales, biases};
    const emily_engine *e;
    emily_status s = emi_check_inputs(op, w, 3, ts, names, &e);
    int64_t cols = 0;
    if (s || (s = check_bits(op, bits, group_size)) ||
        (s = check_packed(op, q, scales, biases, bits, group_size, &cols)))
        return s;
    if ((s = emi_need_kernel(op, e, EMI_KERNEL_DEQUANTIZE, 0, scales->dtype))) return s;
    emily_dtype t = scales->dtype, work = wide(t);
    int64_t shape[2] = {q->shape[0], cols};
    emily_tensor *res = NULL, *qc = NULL, *sw = NULL, *bw = NULL, *out = NULL;
    if ((s = emi_empty_like_device(q, work, 2, shape, &res))) return s;
    if (res->size > 0) {
        s = emily_contiguous(q, &qc);
        if (!s) s = emi_contiguous_as(scales, work, &sw);
        if (!s) s = emi_contiguous_as(biases, work, &bw);
        if (!s) s = e->quant->dequantize(res, qc, sw, bw, bits, group_size);
    }
    if (!s) s = emi_convert_to(res, t, &out);
    emi_release_all(4, (emily_tensor *[]){res, qc, sw, bw});
    return emi_hand_out(s, out, w);
}

emily_status emi_quantized_matmul_output_shape(const emily_tensor *x, const emily_tensor *q, const emily_tensor *scales,
                                               const emily_tensor *biases, int bits, int64_t group_size, bool transpose,
                                               emily_dtype *dtype, int64_t *shape) {
    static const char *op = "quantized_matmul";
    int64_t cols = 0;
    emily_status s;
    if ((s = check_bits(op, bits, group_size)) || (s = check_float(op, "x", x)) ||
        (s = check_packed(op, q, scales, biases, bits, group_size, &cols)))
        return s;
    if (x->rank < 1) return emily_error(EMILY_ERR_SHAPE, "%s: x must have rank 1 or more ({..., K}), got a scalar", op);
    /* the weight matrix: {N, K} when transposed into the product, {K, N}
     * otherwise; its rows are q's rows either way */
    int64_t kdim = transpose ? cols : q->shape[0], ndim = transpose ? q->shape[0] : cols;
    if (x->shape[x->rank - 1] != kdim) {
        char wshape[64];
        snprintf(wshape, sizeof wshape, "{%lld, %lld}", (long long)q->shape[0], (long long)cols);
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: x's last axis (%s) must match the weights' %s axis (K = %lld of the "
                           "dequantized %s%s)",
                           op, EMILY_SHAPE_STR(x), transpose ? "last" : "first", (long long)kdim, wshape,
                           transpose ? ", transposed" : "");
    }
    for (int d = 0; d < x->rank - 1; d++) shape[d] = x->shape[d];
    shape[x->rank - 1] = ndim;
    *dtype = emily_type_merge(x->dtype, scales->dtype);
    return EMILY_OK;
}

emily_status emily_quantized_matmul(const emily_tensor *x, const emily_tensor *q, const emily_tensor *scales,
                                    const emily_tensor *biases, int bits, int64_t group_size, bool transpose,
                                    emily_tensor **out) {
    static const char *op = "quantized_matmul";
    static const char *const names[4] = {"x", "q", "scales", "biases"};
    const emily_tensor *ts[4] = {x, q, scales, biases};
    const emily_engine *e;
    emily_status s = emi_check_inputs(op, out, 4, ts, names, &e);
    emi_scratch sc;
    emily_dtype otype = EMILY_DTYPE_AUTO;
    if (s || (s = emi_scratch_get(op, &sc, (size_t)x->rank + 1, 0))) return s;
    int64_t *oshape = sc.ints;
    if ((s = emi_quantized_matmul_output_shape(x, q, scales, biases, bits, group_size, transpose, &otype, oshape)) ||
        (s = emi_need_kernel(op, e, EMI_KERNEL_QUANT_MATMUL, 0, x->dtype))) {
        emi_scratch_free(&sc);
        return s;
    }
    int64_t kdim = x->shape[x->rank - 1], ndim = oshape[x->rank - 1];
    emily_dtype acc = (x->dtype == EMILY_F64 || scales->dtype == EMILY_F64) ? EMILY_F64 : EMILY_F32;
    int64_t m = kdim > 0 ? x->size / kdim : 0;
    if (kdim == 0) {
        m = 1;
        for (int d = 0; d < x->rank - 1; d++) m *= x->shape[d];
    }
    emily_tensor *res = NULL, *xc = NULL, *x2 = NULL, *qc = NULL, *sw = NULL, *bw = NULL, *d2 = NULL, *o = NULL;
    s = emi_empty_like_device(x, acc, x->rank, oshape, &res);
    if (!s && res->size > 0) {
        int64_t x2shape[2] = {m, kdim}, d2shape[2] = {m, ndim};
        s = emi_contiguous_as(x, acc, &xc);
        if (!s) s = emily_reshape(xc, 2, x2shape, &x2);
        if (!s) s = emily_reshape(res, 2, d2shape, &d2);
        if (!s) s = emily_contiguous(q, &qc);
        if (!s) s = emi_contiguous_as(scales, acc, &sw);
        if (!s) s = emi_contiguous_as(biases, acc, &bw);
        if (!s) s = e->quant->matmul(d2, x2, qc, sw, bw, bits, group_size, transpose);
    }
    if (!s) s = emi_convert_to(res, otype, &o);
    emi_scratch_free(&sc);
    emi_release_all(7, (emily_tensor *[]){res, xc, x2, qc, sw, bw, d2});
    return emi_hand_out(s, o, out);
}
