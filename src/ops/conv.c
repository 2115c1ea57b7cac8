/* conv: Nx.conv as dots over views (emily_dot, src/ops/dot.c); no device
 * kernel of its own.
 *
 * The input, permuted to {N, C, spatial...} and padded (lo/hi and input
 * dilation as interior padding), is viewed as patches [G, N/bg, C/fg, out
 * spatial..., kernel spatial...] by strides alone (window step = stride,
 * tap step = kernel dilation); the kernel, permuted to {O, I,
 * spatial...}, as [G, O/G, I, kernel spatial...], with G the feature or
 * batch group count. One batched dot over the groups contracting (I,
 * kernel spatial) gives [G, N', out spatial..., O/G]; the dot
 * materializes the patches (im2col) with the engine's strided copy and
 * runs the device's GEMM. The result is written once into the output's
 * final (permuted) layout, or returned as it is when that layout is
 * already its own.
 *
 * Nx.BinaryBackend sums each output as sum over channels of (sum over the
 * window): f64/c128 at HIGHEST precision reproduce that exactly with two
 * dots (per-channel window sums, then the channel sums in order, both on
 * the exact kernel); every other type sums in a wider or exact
 * arithmetic where the grouping does not show.
 *
 * A device with a conv kernel of its own (struct emily_conv_kernels: the
 * CUDA engine's cuDNN) gets the conv first; it declines what it does not
 * compute (HIGHEST precision among others) and the dots run. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"
#include "ops/conv.h"

static _Atomic int64_t device_convs;

int64_t emi_conv_device_count(void) { return atomic_load(&device_convs); }

static bool is_permutation(int r, const int *p) {
    bool seen[64] = {false};
    if (r > 64) return false;
    for (int i = 0; i < r; i++) {
        if (p[i] < 0 || p[i] >= r || seen[p[i]]) return false;
        seen[p[i]] = true;
    }
    return true;
}

/* The options of one conv, normalized, and the shapes they give. */
typedef struct conv_plan {
    int r, d;                   /* rank, spatial rank */
    int ip[64], kp[64], op[64]; /* permutations */
    int64_t in[64], k[64];      /* standard-order shapes */
    int64_t stride[64], lo[64], hi[64], idil[64], kdil[64];
    int64_t fg, bg, G;
    int64_t os[64]; /* output spatial dims */
    int64_t std_shape[64], final_shape[64];
} conv_plan;

static emily_status conv_plan_make(const emily_tensor *t, const emily_tensor *k, const emily_conv_opts *o,
                                   conv_plan *p) {
    static const emily_conv_opts defaults = {0};
    if (!o) o = &defaults;
    int r = t->rank;
    if (r < 3 || k->rank < 3)
        return emily_error(EMILY_ERR_SHAPE,
                           "conv: the input and the kernel need rank 3 or more, got "
                           "shapes %s and %s",
                           EMILY_SHAPE_STR(t), EMILY_SHAPE_STR(k));
    if (k->rank != r)
        return emily_error(EMILY_ERR_SHAPE,
                           "conv: the input (shape %s) and the kernel (shape %s) "
                           "must have the same rank",
                           EMILY_SHAPE_STR(t), EMILY_SHAPE_STR(k));
    if (r > 64) return emily_error(EMILY_ERR_SHAPE, "conv: rank %d is above the supported 64", r);
    p->r = r;
    p->d = r - 2;
    const int *perms[3] = {o->input_permutation, o->kernel_permutation, o->output_permutation};
    int *dst[3] = {p->ip, p->kp, p->op};
    static const char *const names[3] = {"input", "kernel", "output"};
    for (int w = 0; w < 3; w++) {
        for (int i = 0; i < r; i++) dst[w][i] = perms[w] ? perms[w][i] : i;
        if (!is_permutation(r, dst[w])) {
            char buf[256];
            size_t used = 0;
            for (int i = 0; i < r && used < sizeof buf - 16; i++)
                used += (size_t)snprintf(buf + used, sizeof buf - used, i ? ", %d" : "%d", dst[w][i]);
            return emily_error(EMILY_ERR_AXIS,
                               "conv: %s_permutation [%s] is not a permutation of "
                               "the %d axes",
                               names[w], buf, r);
        }
    }
    for (int j = 0; j < r; j++) {
        p->in[j] = t->shape[p->ip[j]];
        p->k[j] = k->shape[p->kp[j]];
    }
    /* 0 is the zero-initialized struct's "not given" (emily/ops_dot.h) */
    if (o->feature_group_size < 0)
        return emily_error(EMILY_ERR_ARGUMENT, "conv: feature_group_size must be positive, got %lld",
                           (long long)o->feature_group_size);
    if (o->batch_group_size < 0)
        return emily_error(EMILY_ERR_ARGUMENT, "conv: batch_group_size must be positive, got %lld",
                           (long long)o->batch_group_size);
    p->fg = o->feature_group_size > 0 ? o->feature_group_size : 1;
    p->bg = o->batch_group_size > 0 ? o->batch_group_size : 1;
    int64_t N = p->in[0], C = p->in[1], O = p->k[0], I = p->k[1];
    if (p->fg != 1 && p->bg != 1)
        return emily_error(EMILY_ERR_ARGUMENT,
                           "conv: either batch groups or feature groups must be 1, "
                           "got batch_group_size %lld and feature_group_size %lld",
                           (long long)p->bg, (long long)p->fg);
    if (N % p->bg)
        return emily_error(EMILY_ERR_SHAPE,
                           "conv: batch_group_size %lld does not divide the input "
                           "batch size %lld",
                           (long long)p->bg, (long long)N);
    if (O % p->fg || O % p->bg)
        return emily_error(EMILY_ERR_SHAPE,
                           "conv: the kernel's %lld output channels are not divisible "
                           "by the group size %lld (kernel shape %s)",
                           (long long)O, (long long)(p->fg > 1 ? p->fg : p->bg), EMILY_SHAPE_STR(k));
    if (C != I * p->fg)
        return emily_error(EMILY_ERR_SHAPE,
                           "conv: the input's %lld channels divided by "
                           "feature_group_size %lld must match the kernel's %lld input channels "
                           "(input %s, kernel %s after permutation)",
                           (long long)C, (long long)p->fg, (long long)I, EMILY_SHAPE_STR(t), EMILY_SHAPE_STR(k));
    p->G = p->fg > 1 ? p->fg : p->bg;
    for (int i = 0; i < p->d; i++) {
        p->stride[i] = o->strides ? o->strides[i] : 1;
        p->lo[i] = o->padding_lo ? o->padding_lo[i] : 0;
        p->hi[i] = o->padding_hi ? o->padding_hi[i] : 0;
        p->idil[i] = o->input_dilation ? o->input_dilation[i] : 1;
        p->kdil[i] = o->kernel_dilation ? o->kernel_dilation[i] : 1;
        if (p->stride[i] < 1)
            return emily_error(EMILY_ERR_ARGUMENT,
                               "conv: strides must be positive, got %lld at "
                               "spatial dimension %d",
                               (long long)p->stride[i], i);
        if (p->idil[i] < 1 || p->kdil[i] < 1)
            return emily_error(EMILY_ERR_ARGUMENT,
                               "conv: dilations must be positive, got input %lld "
                               "and kernel %lld at spatial dimension %d",
                               (long long)p->idil[i], (long long)p->kdil[i], i);
        int64_t s = p->in[2 + i], ks = p->k[2 + i];
        /* dilated and padded input, dilated window: checked arithmetic,
         * as the window ops do (huge dilations or padding overflow) */
        int64_t dil = 0, padded, f = 0;
        if ((s > 0 && (__builtin_mul_overflow(s - 1, p->idil[i] - 1, &dil) || __builtin_add_overflow(dil, s, &dil))) ||
            __builtin_add_overflow(dil, p->lo[i], &padded) || __builtin_add_overflow(padded, p->hi[i], &padded))
            return emily_error(EMILY_ERR_ARGUMENT,
                               "conv: the dilated, padded input overflows at "
                               "spatial dimension %d (input_dilation %lld, padding {%lld, %lld})",
                               i, (long long)p->idil[i], (long long)p->lo[i], (long long)p->hi[i]);
        if (ks > 0 && (__builtin_mul_overflow(ks - 1, p->kdil[i], &f) || __builtin_add_overflow(f, 1, &f)))
            return emily_error(EMILY_ERR_ARGUMENT,
                               "conv: the dilated window overflows at spatial "
                               "dimension %d (kernel_dilation %lld)",
                               i, (long long)p->kdil[i]);
        if (padded < f)
            return emily_error(EMILY_ERR_SHAPE,
                               "conv: the window (%lld with dilation) is larger than "
                               "the padded input (%lld) at spatial dimension %d: the result would "
                               "be empty",
                               (long long)f, (long long)padded, i);
        p->os[i] = (padded - f) / p->stride[i] + 1;
    }
    p->std_shape[0] = N / p->bg;
    p->std_shape[1] = O;
    for (int i = 0; i < p->d; i++) p->std_shape[2 + i] = p->os[i];
    for (int j = 0; j < r; j++) p->final_shape[p->op[j]] = p->std_shape[j];
    return EMILY_OK;
}

/* The conv by the device's own kernel into a fresh output in its final
 * layout (*out), or EMILY_ERR_UNSUPPORTED when the device declines. src
 * is the input in standard order; `padded` says the op layer has padded
 * it already (the kernel then pads with 0). */
static emily_status conv_on_device(const emily_engine *e, const emily_tensor *src, const emily_tensor *kernel,
                                   const conv_plan *p, bool padded, emily_dtype dt, emily_tensor **out) {
    int r = p->r, d = p->d;
    int64_t shape[64], strides[64], pad[64] = {0};
    for (int i = 0; i < d && !padded; i++) pad[i] = p->lo[i];
    emily_tensor *kstd = NULL, *final = NULL, *fview = NULL;
    emily_status s;
    for (int j = 0; j < r; j++) {
        shape[j] = p->k[j];
        strides[j] = kernel->strides[p->kp[j]];
    }
    if ((s = emi_tensor_view(kernel, r, shape, strides, kernel->offset, &kstd))) goto done;
    if ((s = emily_empty(src->buffer->device, dt, r, p->final_shape, &final))) goto done;
    for (int j = 0; j < r; j++) strides[j] = final->strides[p->op[j]];
    if ((s = emi_tensor_view(final, r, p->std_shape, strides, 0, &fview))) goto done;
    emily_conv_params cp = {d, p->fg, p->stride, pad, p->kdil};
    s = e->conv->conv(fview, src, kstd, &cp, emily_dot_get_precision());
    if (!s) {
        atomic_fetch_add(&device_convs, 1);
        *out = final;
        final = NULL;
    }
done:
    emily_tensor_release(kstd);
    emily_tensor_release(fview);
    emily_tensor_release(final);
    return s;
}

emily_status emi_conv_output_shape(const emily_tensor *input, const emily_tensor *kernel, const emily_conv_opts *opts,
                                   int *rank, int64_t *shape) {
    emily_status s;
    if ((s = emi_check_tensor("conv", "input", input))) return s;
    if ((s = emi_check_tensor("conv", "kernel", kernel))) return s;
    conv_plan *p = malloc(sizeof *p);
    if (!p) return emily_error(EMILY_ERR_MEMORY, "conv: out of host memory");
    if (!(s = conv_plan_make(input, kernel, opts, p))) {
        *rank = p->r;
        memcpy(shape, p->final_shape, sizeof(int64_t) * (size_t)p->r);
    }
    free(p);
    return s;
}

emily_status emily_conv(const emily_tensor *input, const emily_tensor *kernel, const emily_conv_opts *opts,
                        emily_dtype out_type, emily_tensor **out) {
    emily_status s;
    if ((s = emi_check_out("conv", out))) return s;
    if ((s = emi_check_tensor("conv", "input", input))) return s;
    if ((s = emi_check_tensor("conv", "kernel", kernel))) return s;
    const emily_tensor *both[2] = {input, kernel};
    const emily_engine *e;
    if ((s = emi_check_same_device("conv", 2, both, &e))) return s;
    emily_dtype dt;
    if (out_type == EMILY_DTYPE_AUTO) {
        dt = emily_type_to_floating(emily_type_merge(input->dtype, kernel->dtype));
    } else {
        bool cplx_in = emily_dtype_is_complex(input->dtype) || emily_dtype_is_complex(kernel->dtype);
        if (!emily_dtype_valid(out_type) ||
            !(emily_dtype_is_complex(out_type) || (emily_dtype_is_float(out_type) && !cplx_in)))
            return emily_error(EMILY_ERR_TYPE, "conv: cannot compute a %s convolution of %s and %s",
                               emily_dtype_name(out_type), emily_dtype_name(input->dtype),
                               emily_dtype_name(kernel->dtype));
        dt = out_type;
    }
    conv_plan *p = malloc(sizeof *p);
    if (!p) return emily_error(EMILY_ERR_MEMORY, "conv: out of host memory");
    emily_tensor *tin = NULL, *zero = NULL, *padded = NULL, *patches = NULL, *kview = NULL;
    emily_tensor *res = NULL, *part = NULL, *ones = NULL, *final = NULL, *fview = NULL;
    void *onebuf = NULL;
    if ((s = conv_plan_make(input, kernel, opts, p))) goto done;
    int r = p->r, d = p->d;
    int64_t shape[130], strides[130];

    /* the input in standard order, padded */
    for (int j = 0; j < r; j++) {
        shape[j] = input->shape[p->ip[j]];
        strides[j] = input->strides[p->ip[j]];
    }
    if ((s = emi_tensor_view(input, r, shape, strides, input->offset, &tin))) goto done;
    /* the device's kernel pads by the same amount on both sides itself;
     * other padding and input dilation it gets applied (after emily_pad
     * below). Batch groups always take the dots. */
    bool on_device = e->conv && e->conv->conv && p->bg == 1, same_pad = true;
    for (int i = 0; i < d; i++) same_pad &= p->lo[i] == p->hi[i] && p->lo[i] >= 0 && p->idil[i] == 1;
    if (on_device && same_pad) {
        if ((s = conv_on_device(e, tin, kernel, p, false, dt, &final)) != EMILY_ERR_UNSUPPORTED) goto done;
        s = EMILY_OK;
    }
    bool need_pad = false;
    for (int i = 0; i < d; i++) need_pad |= p->lo[i] || p->hi[i] || p->idil[i] > 1;
    if (need_pad) {
        int64_t lo[64] = {0}, hi[64] = {0}, interior[64] = {0};
        for (int i = 0; i < d; i++) {
            lo[2 + i] = p->lo[i];
            hi[2 + i] = p->hi[i];
            interior[2 + i] = p->idil[i] - 1;
        }
        uint64_t zbits[2] = {0, 0};
        if ((s = emily_from_binary(input->buffer->device, input->dtype, 0, NULL, zbits, emily_dtype_size(input->dtype),
                                   &zero)))
            goto done;
        if ((s = emily_pad(tin, zero, lo, hi, interior, &padded))) goto done;
    } else {
        emily_tensor_retain(tin);
        padded = tin;
    }
    if (on_device && !same_pad) {
        if ((s = conv_on_device(e, padded, kernel, p, true, dt, &final)) != EMILY_ERR_UNSUPPORTED) goto done;
        s = EMILY_OK;
    }

    /* patches [G, N', I, out spatial..., kernel spatial...] */
    int64_t G = p->G, I = p->k[1], O = p->k[0];
    const int64_t *ps = padded->strides;
    shape[0] = G;
    shape[1] = p->std_shape[0];
    shape[2] = I;
    if (p->bg > 1) {
        strides[0] = p->std_shape[0] * ps[0];
        strides[1] = ps[0];
    } else {
        strides[0] = I * ps[1];
        strides[1] = ps[0];
    }
    strides[2] = ps[1];
    for (int i = 0; i < d; i++) {
        /* a step is only taken along an axis longer than 1, and then it
         * stays inside the padded input; a huge stride or dilation on an
         * axis of 1 would overflow for nothing, so that stride is 0 */
        shape[3 + i] = p->os[i];
        strides[3 + i] = p->os[i] > 1 ? ps[2 + i] * p->stride[i] : 0;
        shape[3 + d + i] = p->k[2 + i];
        strides[3 + d + i] = p->k[2 + i] > 1 ? ps[2 + i] * p->kdil[i] : 0;
    }
    if ((s = emi_tensor_view(padded, 3 + 2 * d, shape, strides, padded->offset, &patches))) goto done;

    /* kernel [G, O/G, I, kernel spatial...] */
    int64_t ks[64];
    for (int j = 0; j < r; j++) ks[j] = kernel->strides[p->kp[j]];
    shape[0] = G;
    strides[0] = (O / G) * ks[0];
    shape[1] = O / G;
    strides[1] = ks[0];
    shape[2] = I;
    strides[2] = ks[1];
    for (int i = 0; i < d; i++) {
        shape[3 + i] = p->k[2 + i];
        strides[3 + i] = ks[2 + i];
    }
    if ((s = emi_tensor_view(kernel, 3 + d, shape, strides, kernel->offset, &kview))) goto done;

    int ca[65], cb[65];
    int64_t window = 1;
    for (int i = 0; i < d; i++) window *= p->k[2 + i];
    bool two_level = (dt == EMILY_F64 || dt == EMILY_C128) &&
                     emily_dot_get_precision() == EMILY_DOT_PRECISION_HIGHEST && I > 1 && window > 1;
    /* Channels-first outputs (out channels before the spatial axes) come
     * out of kernel x patches in their final order: [N, O, spatial...],
     * the kernel broadcast over the batch. */
    bool kernel_first = !two_level && G == 1;
    for (int i = 0; kernel_first && i < d; i++) kernel_first = p->op[1] < p->op[2 + i];
    if (kernel_first) {
        emily_tensor *kb = NULL; /* kernel [N', O, I, kernel spatial...], batch stride 0 */
        shape[0] = p->std_shape[0];
        strides[0] = 0;
        for (int j = 0; j < r; j++) {
            shape[1 + j] = p->k[j];
            strides[1 + j] = ks[j];
        }
        if ((s = emi_tensor_view(kernel, 1 + r, shape, strides, kernel->offset, &kb))) goto done;
        /* contract the kernel's (I, spatial) with the patches' (I, kernel spatial) */
        ca[0] = 2;
        cb[0] = 2;
        for (int i = 0; i < d; i++) {
            ca[1 + i] = 3 + i;
            cb[1 + i] = 3 + d + i;
        }
        int b0 = 0;
        /* patches here drop the group axis: view them from index 1 */
        emily_tensor *pv = NULL;
        s = emi_tensor_view(patches, 2 + 2 * d, patches->shape + 1, patches->strides + 1, patches->offset, &pv);
        if (!s) {
            for (int i = 0; i <= d; i++) cb[i] -= 1;
            s = emily_dot(kb, 1 + d, ca, 1, &b0, pv, 1 + d, cb, 1, &b0, dt, &res);
        }
        emily_tensor_release(kb);
        emily_tensor_release(pv);
        if (s) goto done;
    } else if (!two_level) {
        ca[0] = 2;
        cb[0] = 2;
        for (int i = 0; i < d; i++) {
            ca[1 + i] = 3 + d + i;
            cb[1 + i] = 3 + i;
        }
        int b0 = 0;
        if ((s = emily_dot(patches, 1 + d, ca, 1, &b0, kview, 1 + d, cb, 1, &b0, dt, &res))) goto done;
    } else {
        /* per-channel window sums [G, I, N', out spatial..., O/G] ... */
        for (int i = 0; i < d; i++) {
            ca[i] = 3 + d + i;
            cb[i] = 3 + i;
        }
        int ba[2] = {0, 2}, bb[2] = {0, 2};
        if ((s = emily_dot(patches, d, ca, 2, ba, kview, d, cb, 2, bb, dt, &part))) goto done;
        /* ... then the channels in order: a dot with ones */
        size_t es = emily_dtype_size(dt);
        onebuf = calloc((size_t)I, es);
        if (!onebuf) {
            s = emily_error(EMILY_ERR_MEMORY, "conv: out of host memory");
            goto done;
        }
        for (int64_t i = 0; i < I; i++) ((double *)onebuf)[i * (int64_t)(es / 8)] = 1.0;
        if ((s = emily_from_binary(part->buffer->device, dt, 1, &I, onebuf, (size_t)I * es, &ones))) goto done;
        int c1 = 1, c0 = 0;
        if ((s = emily_dot(part, 1, &c1, 0, NULL, ones, 1, &c0, 0, NULL, dt, &res))) goto done;
    }

    /* res: [G, N', out spatial..., O/G] (or [N', O, out spatial...] kernel
     * first) -> the output's final layout */
    if ((s = emily_empty(input->buffer->device, dt, r, p->final_shape, &final))) goto done;
    int64_t fstd[64];
    for (int j = 0; j < r; j++) fstd[j] = final->strides[p->op[j]];
    int rr = kernel_first ? r : 3 + d;
    if (kernel_first) {
        for (int j = 0; j < r; j++) {
            shape[j] = p->std_shape[j];
            strides[j] = fstd[j];
        }
    } else {
        shape[0] = G;
        strides[0] = (O / G) * fstd[1];
        shape[1] = p->std_shape[0];
        strides[1] = fstd[0];
        for (int i = 0; i < d; i++) {
            shape[2 + i] = p->os[i];
            strides[2 + i] = fstd[2 + i];
        }
        shape[2 + d] = O / G;
        strides[2 + d] = fstd[1];
    }
    bool same = res->offset == 0 && emily_tensor_is_contiguous(res);
    for (int i = 0; same && i < rr; i++) same = shape[i] == 1 || strides[i] == res->strides[i];
    if (same) {
        /* res already holds the output's bytes in order */
        emily_tensor_release(final);
        final = NULL;
        int64_t rstr[64];
        emi_row_major_strides(r, p->final_shape, rstr);
        s = emi_tensor_view(res, r, p->final_shape, rstr, 0, &final);
        goto done;
    }
    if (final->size) {
        if ((s = emi_tensor_view(final, rr, shape, strides, 0, &fview))) goto done;
        s = e->copy->copy(fview, res);
    }

done:
    emily_tensor_release(tin);
    emily_tensor_release(zero);
    emily_tensor_release(padded);
    emily_tensor_release(patches);
    emily_tensor_release(kview);
    emily_tensor_release(res);
    emily_tensor_release(part);
    emily_tensor_release(ones);
    emily_tensor_release(fview);
    free(onebuf);
    free(p);
    return emi_hand_out(s, final, out);
}
