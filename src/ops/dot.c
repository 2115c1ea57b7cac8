/* dot: Nx.dot/6 semantics on top of one batched-GEMM kernel.
 *
 * Any contraction is a batched matrix product once the axes are grouped:
 * a is viewed as [batch..., free_a..., contract...] -> [B, M, K] and b as
 * [batch..., contract..., free_b...] -> [B, K, N]. Both are transposed
 * views; a group of dims becomes one dim when its strides nest (always
 * true for a contiguous tensor whose group's axes keep their relative
 * order), and BLAS takes either a row- or a column-major matrix, so most
 * dots (including every transposed matmul) run without copying. Only an
 * operand whose grouped view does not exist, or that BLAS cannot read
 * (broadcast or gapped strides), is copied to a contiguous tensor. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"
#include "core/kernels.h"

/* ---- precision setting ------------------------------------------------- */

static atomic_int precision_state = -1; /* -1: not read from the environment yet */

/* A per-call choice (the dispatcher's `precision:` option) holds for the
 * calling thread only; -1 follows the process setting. */
static _Thread_local int thread_precision = -1;

emily_dot_precision emily_dot_get_precision(void) {
    if (thread_precision >= 0) return (emily_dot_precision)thread_precision;
    int p = atomic_load(&precision_state);
    if (p < 0) {
        const char *env = getenv("EMILY_DOT_PRECISION");
        int v = (env && strcmp(env, "highest") == 0) ? EMILY_DOT_PRECISION_HIGHEST
                                                    : EMILY_DOT_PRECISION_FAST;
        int expected = -1;
        atomic_compare_exchange_strong(&precision_state, &expected, v);
        p = atomic_load(&precision_state);
    }
    return (emily_dot_precision)p;
}

emily_status emily_dot_set_precision(emily_dot_precision p) {
    if (p != EMILY_DOT_PRECISION_HIGHEST && p != EMILY_DOT_PRECISION_FAST)
        return emily_error(EMILY_ERR_ARGUMENT, "dot_set_precision: unknown precision %d", (int)p);
    atomic_store(&precision_state, (int)p);
    return EMILY_OK;
}

emily_status emily_dot_set_thread_precision(emily_dot_precision p, emily_dot_precision *previous) {
    if (p != EMILY_DOT_PRECISION_HIGHEST && p != EMILY_DOT_PRECISION_FAST &&
        p != EMILY_DOT_PRECISION_PROCESS)
        return emily_error(EMILY_ERR_ARGUMENT, "dot_set_thread_precision: unknown precision %d", (int)p);
    if (previous) *previous = (emily_dot_precision)thread_precision;
    thread_precision = (int)p;
    return EMILY_OK;
}

/* ---- validation -------------------------------------------------------- */

/* Normalizes one operand's contract and batch axes; marks them in `role`
 * (0 free, 1 contract, 2 batch) and fails on repeats or overlaps. */
static emily_status norm_operand_axes(const char *side, const emily_tensor *t, int nc,
                                      const int *c, int nb, const int *bt, int *cn, int *bn,
                                      char *role) {
    memset(role, 0, (size_t)t->rank + 1);
    for (int i = 0; i < nc + nb; i++) {
        bool is_c = i < nc;
        int ax = is_c ? c[i] : bt[i - nc];
        int a = ax < 0 ? ax + t->rank : ax;
        if (a < 0 || a >= t->rank)
            return emily_error(EMILY_ERR_AXIS,
                               "dot: %s axis %d of the %s tensor is out of range for shape %s",
                               is_c ? "contract" : "batch", ax, side, EMILY_SHAPE_STR(t));
        if (role[a])
            return emily_error(EMILY_ERR_AXIS, "dot: axis %d of the %s tensor (shape %s) is given "
                               "more than once among its contract and batch axes",
                               ax, side, EMILY_SHAPE_STR(t));
        role[a] = is_c ? 1 : 2;
        if (is_c) cn[i] = a;
        else bn[i - nc] = a;
    }
    return EMILY_OK;
}

static emily_status check_out_type(const emily_tensor *a, const emily_tensor *b,
                                   emily_dtype out_type, emily_dtype *dt) {
    if (out_type == EMILY_DTYPE_AUTO) {
        *dt = emily_type_merge(a->dtype, b->dtype);
        return EMILY_OK;
    }
    if (!emily_dtype_valid(out_type))
        return emily_error(EMILY_ERR_TYPE, "dot: invalid output type %d", (int)out_type);
    const emily_tensor *ts[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        emily_dtype in = ts[i]->dtype;
        bool ok = emily_dtype_is_complex(out_type) ||
                  (emily_dtype_is_float(out_type) && !emily_dtype_is_complex(in)) ||
                  (emily_dtype_is_integer(out_type) && emily_dtype_is_integer(in));
        if (!ok)
            return emily_error(EMILY_ERR_TYPE, "dot: cannot compute a %s dot of %s and %s operands",
                               emily_dtype_name(out_type), emily_dtype_name(a->dtype),
                               emily_dtype_name(b->dtype));
    }
    *dt = out_type;
    return EMILY_OK;
}

/* ---- grouping axes into a rank-3 view ---------------------------------- */

/* Merges the dims order[0..n) of t into one dim: its size, and a stride
 * that walks them in row-major order. False when the strides do not nest
 * that way (a copy is needed). Size-1 dims are ignored. */
static bool merge_group(const emily_tensor *t, int n, const int *order, int64_t *size,
                        int64_t *stride) {
    int64_t sz = 1, st = 0, expect = 0;
    bool have = false;
    for (int i = n - 1; i >= 0; i--) {
        int64_t dim = t->shape[order[i]], s = t->strides[order[i]];
        if (dim == 1) continue;
        if (dim == 0) { *size = 0; *stride = 0; return true; }
        if (have && s != expect) return false;
        if (!have) { st = s; have = true; }
        expect = s * dim;
        sz *= dim;
    }
    *size = sz;
    *stride = st;
    return true;
}

/* A [G0, G1, G2] view of t whose three groups of axes are given by
 * `order` (lengths n0, n1, n2; the groups' dims in row-major order), that
 * BLAS can read as G1 x G2 matrices. Copies t (transposed) when needed. */
static emily_status gemm_view(const emily_tensor *t, const int *order, int n0, int n1, int n2,
                              emily_tensor **out) {
    int64_t shape[3], strides[3];
    const int ns[3] = {n0, n1, n2};
    bool ok = true;
    for (int g = 0, at = 0; g < 3; at += ns[g], g++)
        ok = ok && merge_group(t, ns[g], order + at, &shape[g], &strides[g]);
    emily_gemm_layout lay;
    if (ok && emily_gemm_layout_of(shape[1], shape[2], strides[1], strides[2], &lay))
        return emi_tensor_view(t, 3, shape, strides, t->offset, out);

    /* Copy the transposed view to a contiguous tensor; it then groups
     * row-major. */
    int r = t->rank;
    int64_t *buf = malloc(sizeof(int64_t) * 2 * ((size_t)r + 1));
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "dot: out of host memory");
    int64_t *pshape = buf, *pstrides = buf + r + 1;
    for (int i = 0; i < r; i++) {
        pshape[i] = t->shape[order[i]];
        pstrides[i] = t->strides[order[i]];
    }
    emily_tensor *perm = NULL, *copy = NULL;
    emily_status s = emi_tensor_view(t, r, pshape, pstrides, t->offset, &perm);
    free(buf);
    if (!s) s = emily_contiguous(perm, &copy);
    emily_tensor_release(perm);
    if (s) return s;
    int64_t sizes[3] = {1, 1, 1};
    for (int g = 0, at = 0; g < 3; at += ns[g], g++)
        for (int i = 0; i < ns[g]; i++) sizes[g] *= t->shape[order[at + i]];
    int64_t cstrides[3] = {sizes[1] * sizes[2], sizes[2], 1};
    s = emi_tensor_view(copy, 3, sizes, cstrides, copy->offset, out);
    emily_tensor_release(copy);
    return s;
}

/* ---- emily_dot --------------------------------------------------------- */

emily_status emily_dot(const emily_tensor *a, int ncontract_a, const int *contract_a,
                       int nbatch_a, const int *batch_a,
                       const emily_tensor *b, int ncontract_b, const int *contract_b,
                       int nbatch_b, const int *batch_b,
                       emily_dtype out_type, emily_tensor **out) {
    emily_status s;
    if ((s = emi_check_out("dot", out))) return s;
    if ((s = emi_check_tensor("dot", "left tensor", a))) return s;
    if ((s = emi_check_tensor("dot", "right tensor", b))) return s;
    if (ncontract_a < 0 || ncontract_b < 0 || nbatch_a < 0 || nbatch_b < 0)
        return emily_error(EMILY_ERR_ARGUMENT, "dot: negative axis count");
    if ((ncontract_a && !contract_a) || (ncontract_b && !contract_b) || (nbatch_a && !batch_a) ||
        (nbatch_b && !batch_b))
        return emily_error(EMILY_ERR_ARGUMENT, "dot: NULL axis list with a nonzero count");
    if (ncontract_a != ncontract_b)
        return emily_error(EMILY_ERR_AXIS, "dot: %d contract axes for the left tensor but %d for the "
                           "right tensor (shapes %s and %s)", ncontract_a, ncontract_b,
                           EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    if (nbatch_a != nbatch_b)
        return emily_error(EMILY_ERR_AXIS, "dot: %d batch axes for the left tensor but %d for the "
                           "right tensor (shapes %s and %s); both or neither must be batched",
                           nbatch_a, nbatch_b, EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    const emily_tensor *both[2] = {a, b};
    const emily_engine *e;
    if ((s = emi_check_same_device("dot", 2, both, &e))) return s;
    emily_dtype dt = EMILY_DTYPE_AUTO;
    if ((s = check_out_type(a, b, out_type, &dt))) return s;

    int ra = a->rank, rb = b->rank, nc = ncontract_a, nb = nbatch_a;
    if (nc + nb > ra || nc + nb > rb)
        return emily_error(EMILY_ERR_AXIS, "dot: %d contract and %d batch axes given for shapes %s and %s",
                           nc, nb, EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    /* scratch: normalized axes, roles, orders, output shape */
    size_t nints = 2 * ((size_t)nc + nb) + (size_t)ra + rb + 4;
    int *ints = malloc(nints * sizeof(int));
    char *role = malloc((size_t)ra + rb + 2);
    int64_t *oshape = malloc(((size_t)ra + rb + 1) * sizeof(int64_t));
    emily_tensor *a3 = NULL, *b3 = NULL, *res = NULL, *d3 = NULL;
    if (!ints || !role || !oshape) {
        s = emily_error(EMILY_ERR_MEMORY, "dot: out of host memory");
        goto done;
    }
    int *ca = ints, *cb = ca + nc, *ba = cb + nc, *bb = ba + nb, *oa = bb + nb, *ob = oa + ra;
    char *role_a = role, *role_b = role + ra + 1;
    if ((s = norm_operand_axes("left", a, nc, contract_a, nb, batch_a, ca, ba, role_a))) goto done;
    if ((s = norm_operand_axes("right", b, nc, contract_b, nb, batch_b, cb, bb, role_b))) goto done;
    for (int i = 0; i < nc; i++)
        if (a->shape[ca[i]] != b->shape[cb[i]]) {
            s = emily_error(EMILY_ERR_SHAPE, "dot: contract axis %d of the left tensor (size %lld) does "
                            "not match axis %d of the right tensor (size %lld); shapes %s and %s",
                            ca[i], (long long)a->shape[ca[i]], cb[i], (long long)b->shape[cb[i]],
                            EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
            goto done;
        }
    for (int i = 0; i < nb; i++)
        if (a->shape[ba[i]] != b->shape[bb[i]]) {
            s = emily_error(EMILY_ERR_SHAPE, "dot: batch axis %d of the left tensor (size %lld) does "
                            "not match axis %d of the right tensor (size %lld); shapes %s and %s",
                            ba[i], (long long)a->shape[ba[i]], bb[i], (long long)b->shape[bb[i]],
                            EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
            goto done;
        }

    /* a: [batch, free_a, contract]; b: [batch, contract, free_b]; the
     * output: [batch, free_a, free_b]. */
    int k = 0, orank = 0;
    for (int i = 0; i < nb; i++) { oa[k++] = ba[i]; oshape[orank++] = a->shape[ba[i]]; }
    for (int i = 0; i < ra; i++)
        if (!role_a[i]) { oa[k++] = i; oshape[orank++] = a->shape[i]; }
    for (int i = 0; i < nc; i++) oa[k++] = ca[i];
    k = 0;
    for (int i = 0; i < nb; i++) ob[k++] = bb[i];
    for (int i = 0; i < nc; i++) ob[k++] = cb[i];
    for (int i = 0; i < rb; i++)
        if (!role_b[i]) { ob[k++] = i; oshape[orank++] = b->shape[i]; }
    int nfree_a = ra - nc - nb, nfree_b = rb - nc - nb;

    if ((s = emi_empty_like_device(a, dt, orank, oshape, &res))) goto done;
    if (res->size == 0) goto done; /* nothing to compute */

    if ((s = gemm_view(a, oa, nb, nfree_a, nc, &a3))) goto done;
    if ((s = gemm_view(b, ob, nb, nc, nfree_b, &b3))) goto done;
    int64_t dshape[3] = {a3->shape[0], a3->shape[1], b3->shape[2]};
    if ((s = emi_tensor_view(res, 3, dshape, NULL, 0, &d3))) goto done;
    if (!e->supports(e, EMI_KERNEL_GEMM, 0, (const emily_dtype[]){dt, a->dtype, b->dtype}, 3)) {
        s = emily_error(EMILY_ERR_UNSUPPORTED, "dot: not available on the %s device", e->name);
        goto done;
    }
    s = e->dot->gemm(d3, a3, b3, emily_dot_get_precision());

done:
    emily_tensor_release(a3);
    emily_tensor_release(b3);
    emily_tensor_release(d3);
    free(ints);
    free(role);
    free(oshape);
    if (s) emily_tensor_release(res);
    else *out = res;
    return s;
}

emily_status emily_matmul(const emily_tensor *a, const emily_tensor *b, emily_tensor **out) {
    emily_status s;
    if ((s = emi_check_out("matmul", out))) return s;
    if ((s = emi_check_tensor("matmul", "left tensor", a))) return s;
    if ((s = emi_check_tensor("matmul", "right tensor", b))) return s;
    /* a rank-0 operand: Nx multiplies, which is a dot without contraction */
    if (a->rank == 0 || b->rank == 0)
        return emily_dot(a, 0, NULL, 0, NULL, b, 0, NULL, 0, NULL, EMILY_DTYPE_AUTO, out);
    int ca = a->rank - 1, cb = b->rank == 1 ? 0 : b->rank - 2;
    return emily_dot(a, 1, &ca, 0, NULL, b, 1, &cb, 0, NULL, EMILY_DTYPE_AUTO, out);
}

/* ---- conv ---------------------------------------------------------------
 *
 * Nx.conv as dots over views. The input, permuted to {N, C, spatial...}
 * and padded (lo/hi and input dilation as interior padding), is viewed as
 * patches [G, N/bg, C/fg, out spatial..., kernel spatial...] by strides
 * alone (window step = stride, tap step = kernel dilation); the kernel,
 * permuted to {O, I, spatial...}, as [G, O/G, I, kernel spatial...], with
 * G the feature or batch group count. One batched dot over the groups
 * contracting (I, kernel spatial) gives [G, N', out spatial..., O/G]; the
 * dot materializes the patches (im2col) with the engine's strided copy and
 * runs the device's GEMM. The result is written once into the output's
 * final (permuted) layout, or returned as it is when that layout is
 * already its own.
 *
 * Nx.BinaryBackend sums each output as sum over channels of (sum over the
 * window): f64/c128 at HIGHEST precision reproduce that exactly with two
 * dots (per-channel window sums, then the channel sums in order, both on
 * the exact kernel); every other type sums in a wider or exact
 * arithmetic where the grouping does not show. */

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
    int r, d;                     /* rank, spatial rank */
    int ip[64], kp[64], op[64];   /* permutations */
    int64_t in[64], k[64];        /* standard-order shapes */
    int64_t stride[64], lo[64], hi[64], idil[64], kdil[64];
    int64_t fg, bg, G;
    int64_t os[64];               /* output spatial dims */
    int64_t std_shape[64], final_shape[64];
} conv_plan;

static emily_status conv_plan_make(const emily_tensor *t, const emily_tensor *k,
                                   const emily_conv_opts *o, conv_plan *p) {
    static const emily_conv_opts defaults = {0};
    if (!o) o = &defaults;
    int r = t->rank;
    if (r < 3 || k->rank < 3)
        return emily_error(EMILY_ERR_SHAPE, "conv: the input and the kernel need rank 3 or more, got "
                           "shapes %s and %s", EMILY_SHAPE_STR(t), EMILY_SHAPE_STR(k));
    if (k->rank != r)
        return emily_error(EMILY_ERR_SHAPE, "conv: the input (shape %s) and the kernel (shape %s) "
                           "must have the same rank", EMILY_SHAPE_STR(t), EMILY_SHAPE_STR(k));
    if (r > 64)
        return emily_error(EMILY_ERR_SHAPE, "conv: rank %d is above the supported 64", r);
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
            return emily_error(EMILY_ERR_AXIS, "conv: %s_permutation [%s] is not a permutation of "
                               "the %d axes", names[w], buf, r);
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
        return emily_error(EMILY_ERR_ARGUMENT, "conv: either batch groups or feature groups must be 1, "
                           "got batch_group_size %lld and feature_group_size %lld",
                           (long long)p->bg, (long long)p->fg);
    if (N % p->bg)
        return emily_error(EMILY_ERR_SHAPE, "conv: batch_group_size %lld does not divide the input "
                           "batch size %lld", (long long)p->bg, (long long)N);
    if (O % p->fg || O % p->bg)
        return emily_error(EMILY_ERR_SHAPE, "conv: the kernel's %lld output channels are not divisible "
                           "by the group size %lld (kernel shape %s)", (long long)O,
                           (long long)(p->fg > 1 ? p->fg : p->bg), EMILY_SHAPE_STR(k));
    if (C != I * p->fg)
        return emily_error(EMILY_ERR_SHAPE, "conv: the input's %lld channels divided by "
                           "feature_group_size %lld must match the kernel's %lld input channels "
                           "(input %s, kernel %s after permutation)", (long long)C,
                           (long long)p->fg, (long long)I, EMILY_SHAPE_STR(t), EMILY_SHAPE_STR(k));
    p->G = p->fg > 1 ? p->fg : p->bg;
    for (int i = 0; i < p->d; i++) {
        p->stride[i] = o->strides ? o->strides[i] : 1;
        p->lo[i] = o->padding_lo ? o->padding_lo[i] : 0;
        p->hi[i] = o->padding_hi ? o->padding_hi[i] : 0;
        p->idil[i] = o->input_dilation ? o->input_dilation[i] : 1;
        p->kdil[i] = o->kernel_dilation ? o->kernel_dilation[i] : 1;
        if (p->stride[i] < 1)
            return emily_error(EMILY_ERR_ARGUMENT, "conv: strides must be positive, got %lld at "
                               "spatial dimension %d", (long long)p->stride[i], i);
        if (p->idil[i] < 1 || p->kdil[i] < 1)
            return emily_error(EMILY_ERR_ARGUMENT, "conv: dilations must be positive, got input %lld "
                               "and kernel %lld at spatial dimension %d", (long long)p->idil[i],
                               (long long)p->kdil[i], i);
        int64_t s = p->in[2 + i], ks = p->k[2 + i];
        /* dilated and padded input, dilated window: checked arithmetic,
         * as the window ops do (huge dilations or padding overflow) */
        int64_t dil = 0, padded, f = 0;
        if ((s > 0 && (__builtin_mul_overflow(s - 1, p->idil[i] - 1, &dil) ||
                       __builtin_add_overflow(dil, s, &dil))) ||
            __builtin_add_overflow(dil, p->lo[i], &padded) ||
            __builtin_add_overflow(padded, p->hi[i], &padded))
            return emily_error(EMILY_ERR_ARGUMENT, "conv: the dilated, padded input overflows at "
                               "spatial dimension %d (input_dilation %lld, padding {%lld, %lld})",
                               i, (long long)p->idil[i], (long long)p->lo[i], (long long)p->hi[i]);
        if (ks > 0 && (__builtin_mul_overflow(ks - 1, p->kdil[i], &f) || __builtin_add_overflow(f, 1, &f)))
            return emily_error(EMILY_ERR_ARGUMENT, "conv: the dilated window overflows at spatial "
                               "dimension %d (kernel_dilation %lld)", i, (long long)p->kdil[i]);
        if (padded < f)
            return emily_error(EMILY_ERR_SHAPE, "conv: the window (%lld with dilation) is larger than "
                               "the padded input (%lld) at spatial dimension %d: the result would "
                               "be empty", (long long)f, (long long)padded, i);
        p->os[i] = (padded - f) / p->stride[i] + 1;
    }
    p->std_shape[0] = N / p->bg;
    p->std_shape[1] = O;
    for (int i = 0; i < p->d; i++) p->std_shape[2 + i] = p->os[i];
    for (int j = 0; j < r; j++) p->final_shape[p->op[j]] = p->std_shape[j];
    return EMILY_OK;
}

emily_status emily_conv(const emily_tensor *input, const emily_tensor *kernel,
                        const emily_conv_opts *opts, emily_dtype out_type, emily_tensor **out) {
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
        if ((s = emily_from_binary(input->buffer->device, input->dtype, 0, NULL, zbits,
                                   emily_dtype_size(input->dtype), &zero)))
            goto done;
        if ((s = emily_pad(tin, zero, lo, hi, interior, &padded))) goto done;
    } else {
        emily_tensor_retain(tin);
        padded = tin;
    }

    /* patches [G, N', I, out spatial..., kernel spatial...] */
    int64_t G = p->G, I = p->k[1], O = p->k[0];
    const int64_t *ps = padded->strides;
    shape[0] = G;
    shape[1] = p->std_shape[0];
    shape[2] = I;
    if (p->bg > 1) { strides[0] = p->std_shape[0] * ps[0]; strides[1] = ps[0]; }
    else { strides[0] = I * ps[1]; strides[1] = ps[0]; }
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
    shape[0] = G; strides[0] = (O / G) * ks[0];
    shape[1] = O / G; strides[1] = ks[0];
    shape[2] = I; strides[2] = ks[1];
    for (int i = 0; i < d; i++) { shape[3 + i] = p->k[2 + i]; strides[3 + i] = ks[2 + i]; }
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
        shape[0] = p->std_shape[0]; strides[0] = 0;
        for (int j = 0; j < r; j++) { shape[1 + j] = p->k[j]; strides[1 + j] = ks[j]; }
        if ((s = emi_tensor_view(kernel, 1 + r, shape, strides, kernel->offset, &kb))) goto done;
        /* contract the kernel's (I, spatial) with the patches' (I, kernel spatial) */
        ca[0] = 2;
        cb[0] = 2;
        for (int i = 0; i < d; i++) { ca[1 + i] = 3 + i; cb[1 + i] = 3 + d + i; }
        int b0 = 0;
        /* patches here drop the group axis: view them from index 1 */
        emily_tensor *pv = NULL;
        s = emi_tensor_view(patches, 2 + 2 * d, patches->shape + 1, patches->strides + 1,
                              patches->offset, &pv);
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
        for (int i = 0; i < d; i++) { ca[1 + i] = 3 + d + i; cb[1 + i] = 3 + i; }
        int b0 = 0;
        if ((s = emily_dot(patches, 1 + d, ca, 1, &b0, kview, 1 + d, cb, 1, &b0, dt, &res))) goto done;
    } else {
        /* per-channel window sums [G, I, N', out spatial..., O/G] ... */
        for (int i = 0; i < d; i++) { ca[i] = 3 + d + i; cb[i] = 3 + i; }
        int ba[2] = {0, 2}, bb[2] = {0, 2};
        if ((s = emily_dot(patches, d, ca, 2, ba, kview, d, cb, 2, bb, dt, &part))) goto done;
        /* ... then the channels in order: a dot with ones */
        size_t es = emily_dtype_size(dt);
        onebuf = calloc((size_t)I, es);
        if (!onebuf) { s = emily_error(EMILY_ERR_MEMORY, "conv: out of host memory"); goto done; }
        for (int64_t i = 0; i < I; i++) ((double *)onebuf)[i * (int64_t)(es / 8)] = 1.0;
        if ((s = emily_from_binary(part->buffer->device, dt, 1, &I, onebuf, (size_t)I * es, &ones)))
            goto done;
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
        for (int j = 0; j < r; j++) { shape[j] = p->std_shape[j]; strides[j] = fstd[j]; }
    } else {
        shape[0] = G; strides[0] = (O / G) * fstd[1];
        shape[1] = p->std_shape[0]; strides[1] = fstd[0];
        for (int i = 0; i < d; i++) { shape[2 + i] = p->os[i]; strides[2 + i] = fstd[2 + i]; }
        shape[2 + d] = O / G; strides[2 + d] = fstd[1];
    }
    bool same = res->offset == 0 && emily_tensor_is_contiguous(res);
    for (int i = 0; same && i < rr; i++)
        same = shape[i] == 1 || strides[i] == res->strides[i];
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
    if (s) emily_tensor_release(final);
    else *out = final;
    return s;
}
