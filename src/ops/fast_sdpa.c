/* Fused scaled dot-product attention: emily_sdpa (emily/ops_fast.h).
 *
 * Checks the arguments with messages that name the op, the argument and
 * the shapes, then hands the device's kernel (src/core/kernels.h, the
 * fast family) contiguous q, k, v, the mask as a {B, Hq, Sq, Skv} view of
 * a contiguous tensor in the kernel's type (u8 for a boolean mask, W for
 * an additive one: the mask is converted at its own, usually small, shape
 * and broadcast by strides, never materialized at the full shape) and the
 * sinks as a contiguous W vector. */
#include "ops/common.h"
#include "ops/output_shape.h"
#include "core/kernels.h"

#define OP "sdpa"

static emily_status check_rank4(const char *arg, const emily_tensor *t, const char *want) {
    if (t->rank == 4) return EMILY_OK;
    return emily_error(EMILY_ERR_SHAPE, OP ": %s must have rank 4 (%s), got %s", arg, want, EMILY_SHAPE_STR(t));
}

/* k's or v's axis `axis` must equal q's (or k's) size there. */
static emily_status check_axis(const char *arg, const emily_tensor *t, int axis, const char *other_arg,
                               const emily_tensor *other, int other_axis, const char *what) {
    if (t->shape[axis] == other->shape[other_axis]) return EMILY_OK;
    return emily_error(EMILY_ERR_SHAPE, OP ": %s's %s (axis %d, %lld) must equal %s's (%lld): %s is %s, %s is %s", arg,
                       what, axis, (long long)t->shape[axis], other_arg, (long long)other->shape[other_axis], arg,
                       EMILY_SHAPE_STR(t), other_arg, EMILY_SHAPE_STR(other));
}

static emily_status check_shapes(const emily_tensor *q, const emily_tensor *k, const emily_tensor *v) {
    emily_status s;
    if ((s = check_rank4("q", q, "B, Hq, Sq, D")) || (s = check_rank4("k", k, "B, Hkv, Skv, D")) ||
        (s = check_rank4("v", v, "B, Hkv, Skv, Dv")))
        return s;
    if ((s = check_axis("k", k, 0, "q", q, 0, "batch size B")) ||
        (s = check_axis("v", v, 0, "q", q, 0, "batch size B")) ||
        (s = check_axis("k", k, 3, "q", q, 3, "head size D")) ||
        (s = check_axis("v", v, 1, "k", k, 1, "kv head count Hkv")) ||
        (s = check_axis("v", v, 2, "k", k, 2, "key count Skv")))
        return s;
    int64_t hq = q->shape[1], hkv = k->shape[1];
    if (hkv == 0 ? hq != 0 : hq % hkv != 0)
        return emily_error(EMILY_ERR_SHAPE,
                           OP ": q's head count Hq (%lld) must be a multiple of k's Hkv (%lld): "
                              "q is %s, k is %s",
                           (long long)hq, (long long)hkv, EMILY_SHAPE_STR(q), EMILY_SHAPE_STR(k));
    return EMILY_OK;
}

static emily_status check_types(const emily_tensor *q, const emily_tensor *k, const emily_tensor *v) {
    if (!emily_dtype_is_float(q->dtype))
        return emily_error(EMILY_ERR_TYPE, OP ": q must be a real float tensor (f16, bf16, f32 or f64), got %s",
                           emily_dtype_valid(q->dtype) ? emily_dtype_name(q->dtype) : "an invalid type");
    const emily_tensor *kv[2] = {k, v};
    for (int i = 0; i < 2; i++)
        if (kv[i]->dtype != q->dtype)
            return emily_error(EMILY_ERR_TYPE, OP ": %s must have q's type %s, got %s", i ? "v" : "k",
                               emily_dtype_name(q->dtype),
                               emily_dtype_valid(kv[i]->dtype) ? emily_dtype_name(kv[i]->dtype) : "an invalid type");
    return EMILY_OK;
}

/* The mask: u8 or float, broadcastable to full = {B, Hq, Sq, Skv}. */
static emily_status check_mask(const emily_tensor *m, const int64_t *full) {
    if (m->dtype != EMILY_U8 && !emily_dtype_is_float(m->dtype))
        return emily_error(EMILY_ERR_TYPE,
                           OP ": mask must be u8 (a boolean mask) or a real float type (an additive mask), got %s",
                           emily_dtype_valid(m->dtype) ? emily_dtype_name(m->dtype) : "an invalid type");
    bool ok = m->rank <= 4;
    for (int d = 0; ok && d < m->rank; d++) {
        int64_t n = m->shape[d], want = full[4 - m->rank + d];
        ok = n == 1 || n == want;
    }
    if (ok) return EMILY_OK;
    return emily_error(EMILY_ERR_SHAPE,
                       OP ": mask of shape %s does not broadcast to {B, Hq, Sq, Skv} = "
                          "{%lld, %lld, %lld, %lld}",
                       EMILY_SHAPE_STR(m), (long long)full[0], (long long)full[1], (long long)full[2],
                       (long long)full[3]);
}

static emily_status check_sinks(const emily_tensor *t, int64_t hq) {
    if (!emily_dtype_is_float(t->dtype))
        return emily_error(EMILY_ERR_TYPE, OP ": sinks must be a real float tensor, got %s",
                           emily_dtype_valid(t->dtype) ? emily_dtype_name(t->dtype) : "an invalid type");
    if (t->rank == 1 && t->shape[0] == hq) return EMILY_OK;
    return emily_error(EMILY_ERR_SHAPE, OP ": sinks must have shape {%lld} (Hq), got %s", (long long)hq,
                       EMILY_SHAPE_STR(t));
}

emily_status emi_sdpa_output_shape(const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                                   int64_t shape[4]) {
    emily_status s = check_shapes(q, k, v);
    if (s) return s;
    shape[0] = q->shape[0], shape[1] = q->shape[1], shape[2] = q->shape[2], shape[3] = v->shape[3];
    return EMILY_OK;
}

emily_status emily_sdpa(const emily_tensor *q, const emily_tensor *k, const emily_tensor *v,
                        const emily_sdpa_options *options, emily_tensor **out) {
    static const char *const names[5] = {"q", "k", "v", "mask", "sinks"};
    emily_sdpa_options none = {.scale = 1.0};
    const emily_sdpa_options *o = options ? options : &none;
    /* the optional tensors join the device check only when present */
    const emily_tensor *ts[5] = {q, k, v, NULL, NULL};
    const char *tnames[5] = {names[0], names[1], names[2], NULL, NULL};
    int n = 3;
    if (o->mask) ts[n] = o->mask, tnames[n++] = names[3];
    if (o->sinks) ts[n] = o->sinks, tnames[n++] = names[4];
    const emily_engine *e;
    int64_t oshape[4];
    emily_status s = emi_check_inputs(OP, out, n, ts, tnames, &e);
    if (s || (s = check_types(q, k, v)) || (s = emi_sdpa_output_shape(q, k, v, oshape))) return s;
    int64_t full[4] = {q->shape[0], q->shape[1], q->shape[2], k->shape[2]};
    if (o->mask && (s = check_mask(o->mask, full))) return s;
    if (o->sinks && (s = check_sinks(o->sinks, q->shape[1]))) return s;
    if ((s = emi_need_kernel(OP, e, EMI_KERNEL_SDPA, 0, q->dtype))) return s;

    emily_dtype w = q->dtype == EMILY_F64 ? EMILY_F64 : EMILY_F32;
    emily_tensor *dst = NULL, *qc = NULL, *kc = NULL, *vc = NULL, *m0 = NULL, *m = NULL, *sk = NULL;
    if ((s = emi_empty_like_device(q, q->dtype, 4, oshape, &dst))) return s;
    if (dst->size > 0) {
        emily_sdpa_params p = {.B = q->shape[0],
                               .Hq = q->shape[1],
                               .Hkv = k->shape[1],
                               .Sq = q->shape[2],
                               .Skv = k->shape[2],
                               .D = q->shape[3],
                               .Dv = v->shape[3],
                               .scale = o->scale,
                               .causal = o->causal};
        s = emily_contiguous(q, &qc);
        if (!s) s = emily_contiguous(k, &kc);
        if (!s) s = emily_contiguous(v, &vc);
        if (!s && o->mask) {
            s = emi_contiguous_as(o->mask, o->mask->dtype == EMILY_U8 ? EMILY_U8 : w, &m0);
            if (!s) s = emi_broadcast_view(m0, 4, full, &m);
            p.mask = m;
        }
        if (!s && o->sinks) {
            s = emi_contiguous_as(o->sinks, w, &sk);
            p.sinks = sk;
        }
        if (!s) s = e->fast->sdpa(dst, qc, kc, vc, &p);
    }
    emi_release_all(7, (emily_tensor *[]){qc, kc, vc, m0, m, sk, NULL});
    return emi_hand_out(s, dst, out);
}
