/* Rotary position embedding: emily_rope (emily/ops_fast.h).
 *
 * Checks the arguments, computes the f32 frequency table on the host
 * (it depends on the options only: the base, dims and the scaling, never
 * on data, so both devices get the same table bits and no kernel needs
 * pow) and hands the device's kernel (src/core/kernels.h, the fast
 * family) a contiguous x, s64 positions and the table on x's device.
 * Linear scaling divides the positions, so the kernel applies it. */
#include <math.h>
#include <stdlib.h>
#include "ops/common.h"
#include "core/kernels.h"

#define OP "rope"

static const char *scaling_name(emily_rope_scaling k) {
    switch (k) {
    case EMILY_ROPE_NONE: return "none";
    case EMILY_ROPE_LINEAR: return "linear";
    case EMILY_ROPE_DYNAMIC: return "dynamic";
    case EMILY_ROPE_LLAMA3: return "llama3";
    }
    return "unknown";
}

static emily_status check_positive(const char *what, double v) {
    if (isfinite(v) && v > 0) return EMILY_OK;
    return emily_error(EMILY_ERR_ARGUMENT, OP ": %s must be a finite number above 0, got %g", what, v);
}

static emily_status check_shapes(const emily_tensor *x, const emily_tensor *positions) {
    if (!emily_dtype_is_float(x->dtype))
        return emily_error(EMILY_ERR_TYPE, OP ": x must be a real float tensor (f16, bf16, f32 or f64), got %s",
                           emily_dtype_valid(x->dtype) ? emily_dtype_name(x->dtype) : "an invalid type");
    if (x->rank != 4)
        return emily_error(EMILY_ERR_SHAPE, OP ": x must have rank 4 (B, S, H, D), got %s", EMILY_SHAPE_STR(x));
    if (!emily_dtype_is_integer(positions->dtype))
        return emily_error(EMILY_ERR_TYPE, OP ": positions must be an integer tensor, got %s",
                           emily_dtype_valid(positions->dtype) ? emily_dtype_name(positions->dtype)
                                                               : "an invalid type");
    int64_t b = x->shape[0], s = x->shape[1];
    bool ok = (positions->rank == 1 && positions->shape[0] == s) ||
              (positions->rank == 2 && positions->shape[0] == b && positions->shape[1] == s);
    if (!ok)
        return emily_error(EMILY_ERR_SHAPE,
                           OP ": positions must have shape {%lld} or {%lld, %lld} (S or B, S of x "
                              "%s), got %s",
                           (long long)s, (long long)b, (long long)s, EMILY_SHAPE_STR(x), EMILY_SHAPE_STR(positions));
    return EMILY_OK;
}

/* The options' checks, once dims is known (d: x's head_dim). */
static emily_status check_options(const emily_rope_options *o, int64_t d, int64_t dims) {
    emily_status s;
    if (dims < 0 || dims > d || dims % 2 != 0)
        return emily_error(EMILY_ERR_ARGUMENT, OP ": dims must be even and at most the head size D (%lld), got %lld",
                           (long long)d, (long long)dims);
    if ((unsigned)o->scaling > EMILY_ROPE_LLAMA3)
        return emily_error(EMILY_ERR_ARGUMENT, OP ": unknown scaling %d", (int)o->scaling);
    if (o->inv_freq) {
        if (o->scaling != EMILY_ROPE_NONE)
            return emily_error(EMILY_ERR_ARGUMENT,
                               OP ": an explicit inv_freq table takes no scaling (it holds any "
                                  "scaling already), got %s",
                               scaling_name(o->scaling));
        const emily_tensor *f = o->inv_freq;
        if (!emily_dtype_is_float(f->dtype))
            return emily_error(EMILY_ERR_TYPE, OP ": inv_freq must be a real float tensor, got %s",
                               emily_dtype_valid(f->dtype) ? emily_dtype_name(f->dtype) : "an invalid type");
        if (f->rank != 1 || f->shape[0] != dims / 2)
            return emily_error(EMILY_ERR_SHAPE, OP ": inv_freq must have shape {%lld} (dims / 2), got %s",
                               (long long)(dims / 2), EMILY_SHAPE_STR(f));
        return EMILY_OK;
    }
    if ((s = check_positive("base", o->base))) return s;
    if (o->scaling == EMILY_ROPE_NONE) return EMILY_OK;
    if ((s = check_positive("factor", o->factor))) return s;
    if (o->scaling == EMILY_ROPE_LINEAR) return EMILY_OK;
    if ((s = check_positive("original_max_positions", (double)o->original_max_positions))) return s;
    if (o->scaling == EMILY_ROPE_DYNAMIC) {
        if (o->sequence_length < 0)
            return emily_error(EMILY_ERR_ARGUMENT, OP ": sequence_length must be 0 (S) or more, got %lld",
                               (long long)o->sequence_length);
        if (dims <= 2)
            return emily_error(EMILY_ERR_ARGUMENT,
                               OP ": dynamic scaling needs dims above 2 (its exponent is "
                                  "dims / (dims - 2)), got %lld",
                               (long long)dims);
        return EMILY_OK;
    }
    if ((s = check_positive("low_frequency_factor", o->low_frequency_factor)) ||
        (s = check_positive("high_frequency_factor", o->high_frequency_factor)))
        return s;
    if (!(o->low_frequency_factor < o->high_frequency_factor))
        return emily_error(EMILY_ERR_ARGUMENT,
                           OP ": low_frequency_factor (%g) must be below high_frequency_factor "
                              "(%g)",
                           o->low_frequency_factor, o->high_frequency_factor);
    return EMILY_OK;
}

/* Llama 3's band-wise scaling of one entry, every step in f32. */
static float llama3_entry(const emily_rope_options *o, float inv) {
    const float factor = (float)o->factor, lo = (float)o->low_frequency_factor, hi = (float)o->high_frequency_factor,
                orig = (float)o->original_max_positions;
    const float two_pi = (float)(2.0 * M_PI);
    float w = two_pi / inv;
    if (w < (float)((double)o->original_max_positions / o->high_frequency_factor)) return inv;
    if (w > (float)((double)o->original_max_positions / o->low_frequency_factor)) return inv / factor;
    float smooth = (orig / w - lo) / (hi - lo);
    float low_part = (1.0f - smooth) * inv;
    low_part = low_part / factor;
    float high_part = smooth * inv;
    return low_part + high_part;
}

/* The table (emily/ops_fast.h's inv_i) into inv[0..dims/2). */
static void frequency_table(const emily_rope_options *o, int64_t dims, int64_t seq, float *inv) {
    double base = o->base;
    if (o->scaling == EMILY_ROPE_DYNAMIC) {
        int64_t len = o->sequence_length > 0 ? o->sequence_length : seq;
        double orig = (double)o->original_max_positions;
        if ((double)len > orig)
            base = base * pow(o->factor * (double)len / orig - (o->factor - 1.0), (double)dims / (double)(dims - 2));
    }
    const double b = (double)(float)base;
    for (int64_t i = 0; i < dims / 2; i++) {
        float e = (float)((double)(2 * i) / (double)dims);
        float p = (float)pow(b, (double)e);
        inv[i] = (float)(1.0 / (double)p);
        if (o->scaling == EMILY_ROPE_LLAMA3) inv[i] = llama3_entry(o, inv[i]);
    }
}

/* The f32 table on x's device: the explicit one converted, or computed. */
static emily_status table_tensor(const emily_tensor *x, const emily_rope_options *o, int64_t dims, emily_tensor **out) {
    *out = NULL;
    emily_status s;
    if (o->inv_freq) {
        emily_tensor *converted = NULL;
        s = emi_convert_to(o->inv_freq, EMILY_F32, &converted);
        if (!s) s = emily_contiguous(converted, out);
        emily_tensor_release(converted);
        return s;
    }
    int64_t h = dims / 2;
    float *inv = malloc((size_t)(h > 0 ? h : 1) * sizeof *inv);
    if (!inv) return emily_error(EMILY_ERR_MEMORY, OP ": out of host memory for the table");
    frequency_table(o, dims, x->shape[1], inv);
    s = emily_from_binary(emily_tensor_device(x), EMILY_F32, 1, &h, inv, (size_t)h * sizeof *inv, out);
    free(inv);
    return s;
}

emily_status emily_rope(const emily_tensor *x, const emily_tensor *positions, const emily_rope_options *options,
                        emily_tensor **out) {
    static const char *const names[3] = {"x", "positions", "inv_freq"};
    const emily_rope_options defaults = {.base = 10000.0};
    const emily_rope_options *o = options ? options : &defaults;
    int nin = o->inv_freq ? 3 : 2;
    const emily_engine *e;
    emily_status s = emi_check_inputs(OP, out, nin, (const emily_tensor *[]){x, positions, o->inv_freq}, names, &e);
    if (s || (s = check_shapes(x, positions))) return s;
    int64_t d = x->shape[3], dims = o->dims ? o->dims : d;
    if ((s = check_options(o, d, dims))) return s;
    if ((s = emi_need_kernel(OP, e, EMI_KERNEL_ROPE, 0, x->dtype))) return s;

    emily_tensor *dst = NULL, *xc = NULL, *pos = NULL, *pc = NULL, *table = NULL;
    if ((s = emi_empty_like_device(x, x->dtype, x->rank, x->shape, &dst))) return s;
    if (x->size > 0) {
        emily_rope_params p = {.B = x->shape[0],
                               .S = x->shape[1],
                               .H = x->shape[2],
                               .D = d,
                               .dims = dims,
                               .traditional = o->traditional,
                               .batched_positions = positions->rank == 2,
                               .linear = o->scaling == EMILY_ROPE_LINEAR,
                               .linear_factor = (float)o->factor};
        s = emily_contiguous(x, &xc);
        if (!s) s = emi_convert_to(positions, EMILY_S64, &pos);
        if (!s) s = emily_contiguous(pos, &pc);
        if (!s) s = table_tensor(x, o, dims, &table);
        if (!s) s = e->fast->rope(dst, xc, pc, table, &p);
    }
    emi_release_all(4, (emily_tensor *[]){xc, pos, pc, table});
    return emi_hand_out(s, dst, out);
}
