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
#include "ops/dot_plan.h"

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
        int v = (env && strcmp(env, "highest") == 0) ? EMILY_DOT_PRECISION_HIGHEST : EMILY_DOT_PRECISION_FAST;
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
    if (p != EMILY_DOT_PRECISION_HIGHEST && p != EMILY_DOT_PRECISION_FAST && p != EMILY_DOT_PRECISION_PROCESS)
        return emily_error(EMILY_ERR_ARGUMENT, "dot_set_thread_precision: unknown precision %d", (int)p);
    if (previous) *previous = (emily_dot_precision)thread_precision;
    thread_precision = (int)p;
    return EMILY_OK;
}

/* ---- validation -------------------------------------------------------- */

/* Normalizes one operand's contract and batch axes; marks them in `role`
 * (0 free, 1 contract, 2 batch) and fails on repeats or overlaps. */
static emily_status norm_operand_axes(const char *op, const char *side, const emily_tensor *t, int nc, const int *c,
                                      int nb, const int *bt, int *cn, int *bn, char *role) {
    memset(role, 0, (size_t)t->rank + 1);
    for (int i = 0; i < nc + nb; i++) {
        bool is_c = i < nc;
        int ax = is_c ? c[i] : bt[i - nc];
        int a = ax < 0 ? ax + t->rank : ax;
        if (a < 0 || a >= t->rank)
            return emily_error(EMILY_ERR_AXIS, "%s: %s axis %d of the %s tensor is out of range for shape %s", op,
                               is_c ? "contract" : "batch", ax, side, EMILY_SHAPE_STR(t));
        if (role[a])
            return emily_error(EMILY_ERR_AXIS,
                               "%s: axis %d of the %s tensor (shape %s) is given "
                               "more than once among its contract and batch axes",
                               op, ax, side, EMILY_SHAPE_STR(t));
        role[a] = is_c ? 1 : 2;
        if (is_c) cn[i] = a;
        else bn[i - nc] = a;
    }
    return EMILY_OK;
}

/* Paired axes (contract or batch: `what`) of a and b must have equal
 * sizes. */
static emily_status check_pairs(const char *op, const char *what, const emily_tensor *a, const emily_tensor *b, int n,
                                const int *xa, const int *xb) {
    for (int i = 0; i < n; i++)
        if (a->shape[xa[i]] != b->shape[xb[i]])
            return emily_error(EMILY_ERR_SHAPE,
                               "%s: %s axis %d of the left tensor (size %lld) does "
                               "not match axis %d of the right tensor (size %lld); shapes %s and %s",
                               op, what, xa[i], (long long)a->shape[xa[i]], xb[i], (long long)b->shape[xb[i]],
                               EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    return EMILY_OK;
}

static emily_status check_out_type(const emily_tensor *a, const emily_tensor *b, emily_dtype out_type,
                                   emily_dtype *dt) {
    if (out_type == EMILY_DTYPE_AUTO) {
        *dt = emily_type_merge(a->dtype, b->dtype);
        return EMILY_OK;
    }
    if (!emily_dtype_valid(out_type)) return emily_error(EMILY_ERR_TYPE, "dot: invalid output type %d", (int)out_type);
    const emily_tensor *ts[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        emily_dtype in = ts[i]->dtype;
        bool ok = emily_dtype_is_complex(out_type) || (emily_dtype_is_float(out_type) && !emily_dtype_is_complex(in)) ||
                  (emily_dtype_is_integer(out_type) && emily_dtype_is_integer(in));
        if (!ok)
            return emily_error(EMILY_ERR_TYPE, "dot: cannot compute a %s dot of %s and %s operands",
                               emily_dtype_name(out_type), emily_dtype_name(a->dtype), emily_dtype_name(b->dtype));
    }
    *dt = out_type;
    return EMILY_OK;
}

/* ---- grouping axes into a rank-3 view ---------------------------------- */

/* Merges the dims order[0..n) of t into one dim: its size, and a stride
 * that walks them in row-major order. False when the strides do not nest
 * that way (a copy is needed). Size-1 dims are ignored. */
static bool merge_group(const emily_tensor *t, int n, const int *order, int64_t *size, int64_t *stride) {
    int64_t sz = 1, st = 0, expect = 0;
    bool have = false;
    for (int i = n - 1; i >= 0; i--) {
        int64_t dim = t->shape[order[i]], s = t->strides[order[i]];
        if (dim == 1) continue;
        if (dim == 0) {
            *size = 0;
            *stride = 0;
            return true;
        }
        if (have && s != expect) return false;
        if (!have) {
            st = s;
            have = true;
        }
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
static emily_status gemm_view(const emily_tensor *t, const int *order, int n0, int n1, int n2, emily_tensor **out) {
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

/* ---- the views of a dot (ops/dot_plan.h) ------------------------------- */

/* emi_dot_check's checks of the axis counts and lists. */
static emily_status check_counts(const char *op, const emily_tensor *a, int ncontract_a, const int *contract_a,
                                 int nbatch_a, const int *batch_a, const emily_tensor *b, int ncontract_b,
                                 const int *contract_b, int nbatch_b, const int *batch_b) {
    if (ncontract_a < 0 || ncontract_b < 0 || nbatch_a < 0 || nbatch_b < 0)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: negative axis count", op);
    if ((ncontract_a && !contract_a) || (ncontract_b && !contract_b) || (nbatch_a && !batch_a) ||
        (nbatch_b && !batch_b))
        return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL axis list with a nonzero count", op);
    if (ncontract_a != ncontract_b)
        return emily_error(EMILY_ERR_AXIS,
                           "%s: %d contract axes for the left tensor but %d for the "
                           "right tensor (shapes %s and %s)",
                           op, ncontract_a, ncontract_b, EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    if (nbatch_a != nbatch_b)
        return emily_error(EMILY_ERR_AXIS,
                           "%s: %d batch axes for the left tensor but %d for the "
                           "right tensor (shapes %s and %s); both or neither must be batched",
                           op, nbatch_a, nbatch_b, EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    return EMILY_OK;
}

emily_status emi_dot_check(const char *op, const emily_tensor *a, int ncontract_a, const int *contract_a, int nbatch_a,
                           const int *batch_a, const emily_tensor *b, int ncontract_b, const int *contract_b,
                           int nbatch_b, const int *batch_b, const emily_engine **e) {
    emily_status s = check_counts(op, a, ncontract_a, contract_a, nbatch_a, batch_a, b, ncontract_b, contract_b,
                                  nbatch_b, batch_b);
    const emily_tensor *both[2] = {a, b};
    return s ? s : emi_check_same_device(op, 2, both, e);
}

/* The output's shape (a's batch dims, a's free dims, b's free dims)
 * from the normalized batch axes of a and the roles of each operand's
 * axes (0: free). */
static void output_shape(const emily_tensor *a, const emily_tensor *b, int nb, const int *ba, const char *role_a,
                         const char *role_b, int *orank, int64_t *oshape) {
    int r = 0;
    for (int i = 0; i < nb; i++) oshape[r++] = a->shape[ba[i]];
    for (int i = 0; i < a->rank; i++)
        if (!role_a[i]) oshape[r++] = a->shape[i];
    for (int i = 0; i < b->rank; i++)
        if (!role_b[i]) oshape[r++] = b->shape[i];
    *orank = r;
}

void emi_dot_views_release(emi_dot_views *v) {
    emily_tensor_release(v->a3);
    emily_tensor_release(v->b3);
    emily_tensor_release(v->d3);
    v->a3 = v->b3 = v->d3 = NULL;
}

/* emi_dot_check_axes, and the output's shape where shape is not NULL. */
static emily_status check_axes(const char *op, const emily_tensor *a, int nc, const int *contract_a, int nb,
                               const int *batch_a, const emily_tensor *b, const int *contract_b, const int *batch_b,
                               int *orank, int64_t *oshape) {
    int ra = a->rank, rb = b->rank;
    if (nc + nb > ra || nc + nb > rb)
        return emily_error(EMILY_ERR_AXIS, "%s: %d contract and %d batch axes given for shapes %s and %s", op, nc, nb,
                           EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    int *ints = malloc((2 * ((size_t)nc + nb) + 1) * sizeof(int));
    char *role = malloc((size_t)ra + rb + 2);
    emily_status s;
    if (!ints || !role) {
        s = emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    } else {
        int *ca = ints, *cb = ca + nc, *ba = cb + nc, *bb = ba + nb;
        if (!(s = norm_operand_axes(op, "left", a, nc, contract_a, nb, batch_a, ca, ba, role)) &&
            !(s = norm_operand_axes(op, "right", b, nc, contract_b, nb, batch_b, cb, bb, role + ra + 1)) &&
            !(s = check_pairs(op, "contract", a, b, nc, ca, cb)) && !(s = check_pairs(op, "batch", a, b, nb, ba, bb)) &&
            oshape)
            output_shape(a, b, nb, ba, role, role + ra + 1, orank, oshape);
    }
    free(ints);
    free(role);
    return s;
}

emily_status emi_dot_check_axes(const char *op, const emily_tensor *a, int nc, const int *contract_a, int nb,
                                const int *batch_a, const emily_tensor *b, const int *contract_b, const int *batch_b) {
    return check_axes(op, a, nc, contract_a, nb, batch_a, b, contract_b, batch_b, NULL, NULL);
}

emily_status emi_dot_output_shape(const char *op, const emily_tensor *a, int ncontract_a, const int *contract_a,
                                  int nbatch_a, const int *batch_a, const emily_tensor *b, int ncontract_b,
                                  const int *contract_b, int nbatch_b, const int *batch_b, int *rank, int64_t *shape) {
    emily_status s = check_counts(op, a, ncontract_a, contract_a, nbatch_a, batch_a, b, ncontract_b, contract_b,
                                  nbatch_b, batch_b);
    return s ? s : check_axes(op, a, ncontract_a, contract_a, nbatch_a, batch_a, b, contract_b, batch_b, rank, shape);
}

emily_status emi_dot_views_make(const char *op, const emily_tensor *a, int nc, const int *contract_a, int nb,
                                const int *batch_a, const emily_tensor *b, const int *contract_b, const int *batch_b,
                                emily_dtype dt, emi_dot_views *v) {
    emily_status s;
    v->res = v->a3 = v->b3 = v->d3 = NULL;
    int ra = a->rank, rb = b->rank;
    if (nc + nb > ra || nc + nb > rb)
        return emily_error(EMILY_ERR_AXIS, "%s: %d contract and %d batch axes given for shapes %s and %s", op, nc, nb,
                           EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b));
    /* scratch: normalized axes, roles, orders, output shape */
    size_t nints = 2 * ((size_t)nc + nb) + (size_t)ra + rb + 4;
    int *ints = malloc(nints * sizeof(int));
    char *role = malloc((size_t)ra + rb + 2);
    int64_t *oshape = malloc(((size_t)ra + rb + 1) * sizeof(int64_t));
    if (!ints || !role || !oshape) {
        s = emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
        goto done;
    }
    int *ca = ints, *cb = ca + nc, *ba = cb + nc, *bb = ba + nb, *oa = bb + nb, *ob = oa + ra;
    char *role_a = role, *role_b = role + ra + 1;
    if ((s = norm_operand_axes(op, "left", a, nc, contract_a, nb, batch_a, ca, ba, role_a))) goto done;
    if ((s = norm_operand_axes(op, "right", b, nc, contract_b, nb, batch_b, cb, bb, role_b))) goto done;
    if ((s = check_pairs(op, "contract", a, b, nc, ca, cb)) || (s = check_pairs(op, "batch", a, b, nb, ba, bb)))
        goto done;

    /* a: [batch, free_a, contract]; b: [batch, contract, free_b]; the
     * output: [batch, free_a, free_b]. */
    int k = 0, orank;
    for (int i = 0; i < nb; i++) oa[k++] = ba[i];
    for (int i = 0; i < ra; i++)
        if (!role_a[i]) oa[k++] = i;
    for (int i = 0; i < nc; i++) oa[k++] = ca[i];
    k = 0;
    for (int i = 0; i < nb; i++) ob[k++] = bb[i];
    for (int i = 0; i < nc; i++) ob[k++] = cb[i];
    for (int i = 0; i < rb; i++)
        if (!role_b[i]) ob[k++] = i;
    output_shape(a, b, nb, ba, role_a, role_b, &orank, oshape);
    int nfree_a = ra - nc - nb, nfree_b = rb - nc - nb;

    if ((s = emi_empty_like_device(a, dt, orank, oshape, &v->res))) goto done;
    if (v->res->size == 0) goto done; /* nothing to compute */

    if ((s = gemm_view(a, oa, nb, nfree_a, nc, &v->a3))) goto done;
    if ((s = gemm_view(b, ob, nb, nc, nfree_b, &v->b3))) goto done;
    int64_t dshape[3] = {v->a3->shape[0], v->a3->shape[1], v->b3->shape[2]};
    s = emi_tensor_view(v->res, 3, dshape, NULL, 0, &v->d3);

done:
    free(ints);
    free(role);
    free(oshape);
    if (s) {
        emi_dot_views_release(v);
        emily_tensor_release(v->res);
        v->res = NULL;
    }
    return s;
}

/* ---- emily_dot --------------------------------------------------------- */

emily_status emily_dot(const emily_tensor *a, int ncontract_a, const int *contract_a, int nbatch_a, const int *batch_a,
                       const emily_tensor *b, int ncontract_b, const int *contract_b, int nbatch_b, const int *batch_b,
                       emily_dtype out_type, emily_tensor **out) {
    emily_status s;
    if ((s = emi_check_out("dot", out))) return s;
    if ((s = emi_check_tensor("dot", "left tensor", a))) return s;
    if ((s = emi_check_tensor("dot", "right tensor", b))) return s;
    const emily_engine *e;
    if ((s = emi_dot_check("dot", a, ncontract_a, contract_a, nbatch_a, batch_a, b, ncontract_b, contract_b, nbatch_b,
                           batch_b, &e)))
        return s;
    emily_dtype dt = EMILY_DTYPE_AUTO;
    if ((s = check_out_type(a, b, out_type, &dt))) return s;
    emi_dot_views v;
    if ((s = emi_dot_views_make("dot", a, ncontract_a, contract_a, nbatch_a, batch_a, b, contract_b, batch_b, dt, &v)))
        return s;
    if (v.res->size == 0) return emi_hand_out(EMILY_OK, v.res, out);
    if (!e->supports(e, EMI_KERNEL_GEMM, 0, (const emily_dtype[]){dt, a->dtype, b->dtype}, 3))
        s = emily_error(EMILY_ERR_UNSUPPORTED, "dot: not available on the %s device", e->name);
    else s = e->dot->gemm(v.d3, v.a3, v.b3, emily_dot_get_precision());
    emi_dot_views_release(&v);
    return emi_hand_out(s, v.res, out);
}

emily_status emily_matmul(const emily_tensor *a, const emily_tensor *b, emily_tensor **out) {
    emily_status s;
    if ((s = emi_check_out("matmul", out))) return s;
    if ((s = emi_check_tensor("matmul", "left tensor", a))) return s;
    if ((s = emi_check_tensor("matmul", "right tensor", b))) return s;
    /* a rank-0 operand: Nx multiplies, which is a dot without contraction */
    if (a->rank == 0 || b->rank == 0) return emily_dot(a, 0, NULL, 0, NULL, b, 0, NULL, 0, NULL, EMILY_DTYPE_AUTO, out);
    int ca = a->rank - 1, cb = b->rank == 1 ? 0 : b->rank - 2;
    return emily_dot(a, 1, &ca, 0, NULL, b, 1, &cb, 0, NULL, EMILY_DTYPE_AUTO, out);
}
