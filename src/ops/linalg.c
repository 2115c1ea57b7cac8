/* Linear algebra: Nx.LinAlg semantics (validation, output types and
 * shapes as Nx.Shape and Nx.LinAlg decide them) on top of the linalg
 * kernel table (src/core/kernels.h).
 *
 * Kernels work on contiguous "wide" copies (f64, or c128 for complex
 * problems) and return wide results that are rounded here to the output
 * type. solve is composed from lu, dot and two triangular solves exactly
 * as Nx.LinAlg.solve composes them, so it inherits their rounding.
 *
 * A device with its own solver library (the *_native kernels: CUDA's
 * cuSOLVER and cuBLAS) runs the default method of every op there, in the
 * input's own precision ("native" copies: f32, f64, c64 or c128, f16/bf16
 * and integers in f32); Nx's own algorithms then run on the CPU only,
 * except triangular_solve's, which such a device may have as well. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/common.h"
#include "core/kernels.h"

static emily_dtype wide_of(emily_dtype t) { return emily_dtype_is_complex(t) ? EMILY_C128 : EMILY_F64; }

static emily_status unsupported(const char *op, const emily_tensor *t) {
    char dev[32];
    emily_device_format(t->buffer->device, dev, sizeof dev);
    return emily_error(EMILY_ERR_UNSUPPORTED, "%s: not available on device %s", op, dev);
}

/* On a device with native kernels only the default method runs. */
static emily_status reference_on_cpu_only(const char *op, const emily_tensor *t) {
    char dev[32];
    emily_device_format(t->buffer->device, dev, sizeof dev);
    return emily_error(EMILY_ERR_UNSUPPORTED,
                       "%s: linalg: :reference (Nx's own algorithms) runs on the CPU only, and the "
                       "tensor is on %s: move it with emily_to_device(t, EMILY_CPU, &out) "
                       "(Nx.backend_transfer(t, {Emily.Backend, device: :cpu})) or use the default "
                       "method (linalg: :lapack), which runs on %s",
                       op, dev, dev);
}

/* The type a native kernel computes in for Nx's output type t: t itself,
 * or f32 for f16/bf16 (the solver libraries have no half-precision
 * factorizations; the result is rounded to t). */
static emily_dtype native_of(emily_dtype t) { return emily_dtype_is_complex(t) || t == EMILY_F64 ? t : EMILY_F32; }

/* The inputs' engine and its linalg table, when it has `kernel` for the
 * first input's type. */
static emily_status get_kernels(const char *op, int n, const emily_tensor *const *ts, emi_kernel kernel,
                                const emily_engine **e, const struct emily_linalg_kernels **k) {
    emily_status s = emi_check_same_device(op, n, ts, e);
    if (s) return s;
    if (!emi_engine_supports(*e, kernel, 0, ts[0]->dtype)) return unsupported(op, ts[0]);
    *k = (*e)->linalg;
    return EMILY_OK;
}

/* Whether the linalg table l has a native kernel (its device's own
 * solver library) for the op that `kernel`, any method's kernel of it,
 * belongs to. */
static bool has_native(const struct emily_linalg_kernels *l, emi_kernel kernel) {
    if (!l) return false;
    switch (kernel) {
    case EMI_KERNEL_CHOLESKY: return l->cholesky_native != NULL;
    case EMI_KERNEL_TRIANGULAR_SOLVE: return l->triangular_solve_native != NULL;
    case EMI_KERNEL_QR:
    case EMI_KERNEL_QR_NX07: return l->qr_native != NULL;
    case EMI_KERNEL_SVD:
    case EMI_KERNEL_SVD_NX07: return l->svd_native != NULL;
    case EMI_KERNEL_EIGH:
    case EMI_KERNEL_EIGH_NX07: return l->eigh_native != NULL;
    default: return false;
    }
}

/* get_kernels for an op a device may run natively: *native when the
 * inputs' device has the op's native kernel, and then only the default
 * method (EMILY_LINALG_LAPACK) runs there; otherwise the engine must have
 * `kernel`, the method's kernel. */
static emily_status linalg_kernels(const char *op, int n, const emily_tensor *const *ts, emily_linalg_method method,
                                   emi_kernel kernel, const emily_engine **e, const struct emily_linalg_kernels **k,
                                   bool *native) {
    emily_status s = emi_check_same_device(op, n, ts, e);
    if (s) return s;
    *native = has_native((*e)->linalg, kernel);
    if (!*native) return get_kernels(op, n, ts, kernel, e, k);
    if (method != EMILY_LINALG_LAPACK) return reference_on_cpu_only(op, ts[0]);
    *k = (*e)->linalg;
    return EMILY_OK;
}

/* A contiguous copy of t in type dt (a new reference). */
static emily_status to_wide(const emily_tensor *t, emily_dtype dt, emily_tensor **out) {
    emily_tensor *c;
    emily_status s = emi_convert_to(t, dt, &c);
    if (s) return s;
    s = emily_contiguous(c, out);
    emily_tensor_release(c);
    return s;
}

/* Rounds a wide kernel result to `dt`, releasing the wide tensor. */
static emily_status finish(emily_tensor *wide, emily_dtype dt, emily_tensor **out) {
    emily_status s = emi_convert_to(wide, dt, out);
    emily_tensor_release(wide);
    return s;
}

/* The end of an op with n (at most 3) wide results, s the kernel's
 * status: every result rounded to types[i] into *outs[i]; on a failure,
 * nothing returned (everything released) and the first error. */
static emily_status finish_all(emily_status s, int n, emily_tensor **wide, const emily_dtype *types,
                               emily_tensor **const *outs) {
    if (s) {
        emi_release_all(n, wide);
        return s;
    }
    emily_tensor *res[3] = {NULL, NULL, NULL};
    for (int i = 0; i < n; i++) {
        emily_status si = finish(wide[i], types[i], &res[i]);
        if (!s) s = si;
    }
    if (s) {
        emi_release_all(n, res);
        return s;
    }
    for (int i = 0; i < n; i++) *outs[i] = res[i];
    return EMILY_OK;
}

/* Shapes are assembled in fixed arrays; far beyond any real batch rank. */
#define MAX_RANK 32

static emily_status check_rank(const char *op, const char *arg, const emily_tensor *t) {
    if (t->rank > MAX_RANK)
        return emily_error(EMILY_ERR_SHAPE, "%s: %s has rank %d, more than the %d supported", op, arg, t->rank,
                           MAX_RANK);
    return EMILY_OK;
}

static emily_status check_matrix(const char *op, const emily_tensor *a, bool square) {
    emily_status s = check_rank(op, "the tensor", a);
    if (s) return s;
    if (a->rank < 2)
        return emily_error(EMILY_ERR_SHAPE, "%s: tensor must have at least rank 2, got rank %d with shape %s", op,
                           a->rank, EMILY_SHAPE_STR(a));
    if (square && a->shape[a->rank - 1] != a->shape[a->rank - 2])
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: tensor must be a square matrix or a batch of square matrices, got shape %s", op,
                           EMILY_SHAPE_STR(a));
    return EMILY_OK;
}

/* Shape with the last `drop` axes replaced by the `nnew` given dims. */
static void shape_with(const emily_tensor *a, int drop, int nnew, const int64_t *dims, int *rank, int64_t *shape) {
    int keep = a->rank - drop;
    for (int i = 0; i < keep; i++) shape[i] = a->shape[i];
    for (int i = 0; i < nnew; i++) shape[keep + i] = dims[i];
    *rank = keep + nnew;
}

/* True when every output is empty. The kernels are then not called:
 * there is nothing to compute, and an empty matrix in a huge batch
 * ({4, 2^31 - 1, 0, 8}) would otherwise cost them a step per matrix
 * (8.6 billion steps for nothing). */
static bool all_empty(int n, emily_tensor *const *outs) {
    for (int i = 0; i < n; i++)
        if (outs[i]->size) return false;
    return true;
}

/* ---- the method of the decompositions ------------------------------------ */

static emily_status check_method(const char *op, emily_linalg_method method) {
    if (method != EMILY_LINALG_LAPACK && method != EMILY_LINALG_REFERENCE && method != EMILY_LINALG_REFERENCE_NX07)
        return emily_error(EMILY_ERR_ARGUMENT,
                           "%s: invalid method %d, expected EMILY_LINALG_LAPACK, "
                           "EMILY_LINALG_REFERENCE or EMILY_LINALG_REFERENCE_NX07",
                           op, (int)method);
    return EMILY_OK;
}

/* The opening checks of the ops on a and b (solve, triangular_solve). */
static emily_status check_a_b(const char *op, emily_linalg_method method, const emily_tensor *a, const emily_tensor *b,
                              emily_tensor **out) {
    emily_status s = check_method(op, method);
    if (!s) s = emi_check_out(op, out);
    if (!s) s = emi_check_tensor(op, "a", a);
    if (!s) s = emi_check_tensor(op, "b", b);
    return s;
}

/* ---- lu ---------------------------------------------------------------- */

/* lu on the device's solver: p in a's type, l and u in the float type. */
static emily_status lu_native(const struct emily_linalg_kernels *k, const emily_tensor *a, emily_linalg_method method,
                              emily_tensor **p, emily_tensor **l, emily_tensor **u) {
    if (method != EMILY_LINALG_LAPACK) return reference_on_cpu_only("lu", a);
    emily_dtype t = emily_type_to_floating(a->dtype), nt = native_of(t);
    emily_tensor *an, *pn = NULL, *ln = NULL, *un = NULL;
    emily_status s = to_wide(a, nt, &an);
    if (s) return s;
    if (!(s = emi_empty_like_device(a, nt, a->rank, a->shape, &pn)) &&
        !(s = emi_empty_like_device(a, nt, a->rank, a->shape, &ln)) &&
        !(s = emi_empty_like_device(a, nt, a->rank, a->shape, &un)))
        s = all_empty(3, (emily_tensor *[]){pn, ln, un}) ? EMILY_OK : k->lu_native(pn, ln, un, an);
    emily_tensor_release(an);
    return finish_all(s, 3, (emily_tensor *[]){pn, ln, un}, (emily_dtype[]){a->dtype, t, t},
                      (emily_tensor * *const[]){p, l, u});
}

emily_status emily_lu(const emily_tensor *a, emily_tensor **p, emily_tensor **l, emily_tensor **u) {
    return emily_lu_opts(a, 1.0e-10, EMILY_LINALG_LAPACK, p, l, u);
}

emily_status emily_lu_opts(const emily_tensor *a, double eps, emily_linalg_method method, emily_tensor **p,
                           emily_tensor **l, emily_tensor **u) {
    const char *op = "lu";
    emily_status s;
    if ((s = check_method(op, method))) return s;
    if ((s = emi_check_out(op, p)) || (s = emi_check_out(op, l)) || (s = emi_check_out(op, u))) return s;
    if ((s = emi_check_tensor(op, "tensor", a)) || (s = check_matrix(op, a, true))) return s;
    if (method == EMILY_LINALG_REFERENCE_NX07 && !(eps >= 0))
        return emily_error(EMILY_ERR_ARGUMENT, "%s: eps must be a non-negative number, got %g", op, eps);
    bool nx07 = method == EMILY_LINALG_REFERENCE_NX07;
    const emily_engine *e;
    const struct emily_linalg_kernels *k;
    if ((s = emi_check_same_device(op, 1, &a, &e))) return s;
    if (e->linalg && e->linalg->lu_native) return lu_native(e->linalg, a, method, p, l, u);
    if ((s = get_kernels(op, 1, &a, nx07 ? EMI_KERNEL_LU_NX07 : EMI_KERNEL_LU, &e, &k))) return s;
    emily_dtype t = emily_type_to_floating(a->dtype), w = wide_of(t);
    emily_tensor *at = NULL, *aw = NULL, *pw = NULL, *lw = NULL, *uw = NULL;
    /* Nx 0.8+'s LU computes in the float type; Nx 0.7's reads the input's
     * own values */
    if ((s = emi_convert_to(a, nx07 ? a->dtype : t, &at))) return s;
    s = to_wide(at, w, &aw);
    emily_tensor_release(at);
    if (s) return s;
    if (!(s = emi_empty_like_device(a, EMILY_F64, a->rank, a->shape, &pw)) &&
        !(s = emi_empty_like_device(a, w, a->rank, a->shape, &lw)) &&
        !(s = emi_empty_like_device(a, w, a->rank, a->shape, &uw)))
        s = all_empty(3, (emily_tensor *[]){pw, lw, uw}) ? EMILY_OK
            : nx07                                       ? k->lu_nx07(pw, lw, uw, aw, eps)
                                                         : k->lu(pw, lw, uw, aw, t);
    emily_tensor_release(aw);
    return finish_all(s, 3, (emily_tensor *[]){pw, lw, uw}, (emily_dtype[]){a->dtype, t, t},
                      (emily_tensor * *const[]){p, l, u});
}

/* ---- cholesky ---------------------------------------------------------- */

emily_status emily_cholesky(const emily_tensor *a, emily_tensor **out) {
    const char *op = "cholesky";
    emily_status s;
    if ((s = emi_check_out(op, out))) return s;
    if ((s = emi_check_tensor(op, "tensor", a)) || (s = check_matrix(op, a, true))) return s;
    const emily_engine *e;
    const struct emily_linalg_kernels *k;
    bool native;
    if ((s = linalg_kernels(op, 1, &a, EMILY_LINALG_LAPACK, EMI_KERNEL_CHOLESKY, &e, &k, &native))) return s;
    emily_dtype t = emily_type_to_floating(a->dtype), w = native ? native_of(t) : wide_of(t);
    /* Nx's algorithm reads `a` in its own type (no cast to t first). */
    emily_tensor *aw, *lw;
    if ((s = to_wide(a, w, &aw))) return s;
    if (!(s = emi_empty_like_device(a, w, a->rank, a->shape, &lw))) {
        s = !lw->size ? EMILY_OK : native ? k->cholesky_native(lw, aw) : k->cholesky(lw, aw, t);
        if (s) emily_tensor_release(lw);
    }
    emily_tensor_release(aw);
    if (s) return s;
    return finish(lw, t, out);
}

/* ---- triangular_solve -------------------------------------------------- */

static bool same_dims(const int64_t *x, const int64_t *y, int n) {
    for (int i = 0; i < n; i++)
        if (x[i] != y[i]) return false;
    return true;
}

/* Nx.Shape.triangular_solve / Nx.Shape.solve: whether b is a vector per
 * matrix (b_vector) or a matrix; fails with Nx's message otherwise. */
static emily_status solve_shapes(const char *op, const emily_tensor *a, const emily_tensor *b, bool left_side,
                                 bool *b_vector) {
    emily_status s;
    if ((s = check_rank(op, "a", a)) || (s = check_rank(op, "b", b))) return s;
    if (a->rank < 2 || a->shape[a->rank - 1] != a->shape[a->rank - 2])
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: expected a square matrix or a batch of square matrices for a, got shape %s", op,
                           EMILY_SHAPE_STR(a));
    int batch = a->rank - 2;
    int64_t n = a->shape[a->rank - 1];
    if (b->rank == batch + 1 && same_dims(a->shape, b->shape, batch) && b->shape[batch] == n) {
        *b_vector = true;
        return EMILY_OK;
    }
    if (b->rank == batch + 2 && same_dims(a->shape, b->shape, batch) &&
        (left_side ? b->shape[batch] == n : b->shape[batch + 1] == n)) {
        *b_vector = false;
        return EMILY_OK;
    }
    return emily_error(EMILY_ERR_SHAPE,
                       "%s: incompatible dimensions for a and b: a has shape %s, b has shape %s "
                       "(expected b of shape [batch..., %lld] or [batch..., %s])",
                       op, EMILY_SHAPE_STR(a), EMILY_SHAPE_STR(b), (long long)n, left_side ? "n, m" : "m, n");
}

emily_status emily_triangular_solve(const emily_tensor *a, const emily_tensor *b, bool left_side, bool lower,
                                    emily_transform_a transform, emily_tensor **out) {
    return emily_triangular_solve_opts(a, b, left_side, lower, transform, EMILY_LINALG_LAPACK, out);
}

/* Nx's substitution (the `triangular_solve` kernel, in double) runs for
 * every method on a device without a native solve (the CPU) and for the
 * reference methods on one with it (CUDA, whose default is cuBLAS in the
 * input's precision). */
emily_status emily_triangular_solve_opts(const emily_tensor *a, const emily_tensor *b, bool left_side, bool lower,
                                         emily_transform_a transform, emily_linalg_method method, emily_tensor **out) {
    const char *op = "triangular_solve";
    emily_status s;
    if ((s = check_a_b(op, method, a, b, out))) return s;
    if (transform != EMILY_TRANSFORM_NONE && transform != EMILY_TRANSFORM_TRANSPOSE &&
        transform != EMILY_TRANSFORM_CONJUGATE)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: invalid transform_a %d, expected none, transpose or conjugate", op,
                           (int)transform);
    bool b_vector;
    if ((s = solve_shapes(op, a, b, left_side, &b_vector))) return s;
    const emily_tensor *ts[2] = {a, b};
    const emily_engine *e;
    const struct emily_linalg_kernels *k;
    if ((s = emi_check_same_device(op, 2, ts, &e))) return s;
    bool native = e->linalg && e->linalg->triangular_solve_native && method == EMILY_LINALG_LAPACK;
    if (!native && (s = get_kernels(op, 2, ts, EMI_KERNEL_TRIANGULAR_SOLVE, &e, &k))) return s;
    if (native) k = e->linalg;
    emily_dtype t = emily_type_to_floating(emily_type_merge(a->dtype, b->dtype));
    emily_dtype w = native ? native_of(t) : wide_of(t);
    emily_tensor *aw = NULL, *bw = NULL, *xw = NULL;
    if ((s = to_wide(a, w, &aw))) return s;
    if ((s = to_wide(b, w, &bw))) {
        emily_tensor_release(aw);
        return s;
    }
    if (!(s = emi_empty_like_device(b, w, b->rank, b->shape, &xw))) {
        s = !xw->size ? EMILY_OK
            : native  ? k->triangular_solve_native(xw, aw, bw, b_vector, left_side, lower, transform)
                      : k->triangular_solve(xw, aw, bw, b_vector, left_side, lower, transform);
        if (s) emily_tensor_release(xw);
    }
    emily_tensor_release(aw);
    emily_tensor_release(bw);
    if (s) return s;
    return finish(xw, t, out);
}

/* ---- solve ------------------------------------------------------------- */

/* b as [..., n, m]: a vector b gets a trailing axis of 1. */
static emily_status as_matrix_rhs(const emily_tensor *b, bool b_vector, emily_tensor **bm) {
    if (!b_vector) {
        emily_tensor_retain((emily_tensor *)b);
        *bm = (emily_tensor *)b;
        return EMILY_OK;
    }
    int64_t shape[MAX_RANK + 1];
    for (int i = 0; i < b->rank; i++) shape[i] = b->shape[i];
    shape[b->rank] = 1;
    return emily_reshape(b, b->rank + 1, shape, bm);
}

/* x (b's shape as [..., n, m]) back in b's shape and Nx's template type
 * t; takes x. */
static emily_status finish_solve(emily_tensor *x, const emily_tensor *b, emily_dtype t, emily_tensor **out) {
    emily_tensor *shaped;
    emily_status s = emily_reshape(x, b->rank, b->shape, &shaped);
    emily_tensor_release(x);
    if (s) return s;
    /* Nx's template type; differs from the composition's only for mixed
     * half-precision/integer inputs, where Nx's own answer is inconsistent. */
    s = emi_convert_to(shaped, t, out);
    emily_tensor_release(shaped);
    return s;
}

/* Nx 0.7's solve: Nx.LinAlg.solve's fallback there (its Nx.BinaryBackend
 * had no solve), {q, r} = qr(a), x = triangular_solve(r, adjoint(q) . b,
 * lower: false), with Nx 0.7's qr. */
static emily_status solve_nx07(const emily_tensor *a, const emily_tensor *b, bool b_vector, emily_dtype t,
                               emily_tensor **out) {
    emily_tensor *q = NULL, *r = NULL, *qh = NULL, *bm = NULL, *qb = NULL, *x = NULL;
    emily_status s = emily_qr_opts(a, EMILY_QR_REDUCED, 1.0e-10, EMILY_LINALG_REFERENCE_NX07, &q, &r);
    /* adjoint(q) . b contracts q's rows with b's rows, conjugated (Nx's
     * conjugate of a real tensor would make it complex) */
    if (!s && emily_dtype_is_complex(emily_tensor_dtype(q))) {
        s = emily_unary(EMILY_CONJUGATE, q, &qh);
    } else if (!s) {
        emily_tensor_retain(q);
        qh = q;
    }
    if (!s) s = as_matrix_rhs(b, b_vector, &bm);
    if (!s) {
        int rank = a->rank, batch = rank - 2, contract[1] = {rank - 2}, batches[MAX_RANK];
        for (int i = 0; i < batch; i++) batches[i] = i;
        /* the reference method promises Nx's bits: its dot at HIGHEST */
        emily_dot_precision saved;
        emily_dot_set_thread_precision(EMILY_DOT_PRECISION_HIGHEST, &saved);
        s = emily_dot(qh, 1, contract, batch, batches, bm, 1, contract, batch, batches,
                      emily_type_merge(emily_tensor_dtype(q), b->dtype), &qb);
        emily_dot_set_thread_precision(saved, NULL);
    }
    if (!s) s = emily_triangular_solve(r, qb, true, false, EMILY_TRANSFORM_NONE, &x);
    emily_tensor *tmp[5] = {q, r, qh, bm, qb};
    emi_release_all(5, tmp);
    if (s) return s;
    return finish_solve(x, b, t, out);
}

emily_status emily_solve(const emily_tensor *a, const emily_tensor *b, emily_tensor **out) {
    return emily_solve_opts(a, b, EMILY_LINALG_LAPACK, out);
}

emily_status emily_solve_opts(const emily_tensor *a, const emily_tensor *b, emily_linalg_method method,
                              emily_tensor **out) {
    const char *op = "solve";
    emily_status s;
    if ((s = check_a_b(op, method, a, b, out))) return s;
    bool b_vector;
    if ((s = solve_shapes(op, a, b, true, &b_vector))) return s;
    const emily_tensor *ts[2] = {a, b};
    const emily_engine *e;
    const struct emily_linalg_kernels *k;
    emily_dtype merged = emily_type_merge(a->dtype, b->dtype);
    emily_dtype t = emily_type_to_floating(merged);
    if ((s = emi_check_same_device(op, 2, ts, &e))) return s;
    if (e->linalg && e->linalg->solve_native) {
        if (method != EMILY_LINALG_LAPACK) return reference_on_cpu_only(op, a);
        emily_dtype nt = native_of(t);
        emily_tensor *an = NULL, *bn = NULL, *xn = NULL;
        if (!(s = to_wide(a, nt, &an)) && !(s = to_wide(b, nt, &bn)) &&
            !(s = emi_empty_like_device(b, nt, b->rank, b->shape, &xn)))
            s = xn->size ? e->linalg->solve_native(xn, an, bn, b_vector) : EMILY_OK;
        emily_tensor_release(an);
        emily_tensor_release(bn);
        if (s) {
            emily_tensor_release(xn);
            return s;
        }
        return finish(xn, t, out);
    }
    /* (the composition runs lu and triangular_solve: a device without lu
     * has no solve) */
    if ((s = get_kernels(op, 2, ts, EMI_KERNEL_LU, &e, &k))) return s;
    if (method == EMILY_LINALG_REFERENCE_NX07) return solve_nx07(a, b, b_vector, t, out);
    if (a->dtype == EMILY_F64 && b->dtype == EMILY_F64 && emily_dot_get_precision() == EMILY_DOT_PRECISION_HIGHEST &&
        emi_engine_supports(e, EMI_KERNEL_SOLVE, 0, EMILY_F64)) {
        /* the device computes the whole composition in one kernel */
        emily_tensor *ac = NULL, *bc = NULL, *x = NULL;
        if (!(s = emily_contiguous(a, &ac)) && !(s = emily_contiguous(b, &bc)) &&
            !(s = emi_empty_like_device(b, EMILY_F64, b->rank, b->shape, &x)))
            s = x->size ? k->solve(x, ac, bc, b_vector) : EMILY_OK;
        emily_tensor_release(ac);
        emily_tensor_release(bc);
        return emi_hand_out(s, x, out);
    }
    emily_tensor *p = NULL, *l = NULL, *u = NULL, *bm = NULL, *bp = NULL, *y = NULL, *x = NULL;
    if ((s = emily_lu(a, &p, &l, &u))) return s;
    /* b' = p^T . b (Nx.dot(p, [-2], batch, b, [-2], batch)), in merge(a, b) */
    int r = a->rank, batch = r - 2;
    s = as_matrix_rhs(b, b_vector, &bm);
    if (!s) {
        int contract[1] = {r - 2}, batches[MAX_RANK];
        for (int i = 0; i < batch; i++) batches[i] = i;
        s = emily_dot(p, 1, contract, batch, batches, bm, 1, contract, batch, batches, merged, &bp);
    }
    if (!s) s = emily_triangular_solve(l, bp, true, true, EMILY_TRANSFORM_NONE, &y);
    if (!s) s = emily_triangular_solve(u, y, true, false, EMILY_TRANSFORM_NONE, &x);
    emily_tensor *tmp[6] = {p, l, u, bm, bp, y};
    emi_release_all(6, tmp);
    if (s) return s;
    return finish_solve(x, b, t, out);
}

/* ---- determinant ------------------------------------------------------- */

emily_status emily_determinant(const emily_tensor *a, emily_tensor **out) {
    return emily_determinant_opts(a, EMILY_LINALG_LAPACK, out);
}

emily_status emily_determinant_opts(const emily_tensor *a, emily_linalg_method method, emily_tensor **out) {
    const char *op = "determinant";
    emily_status s;
    if ((s = check_method(op, method))) return s;
    if ((s = emi_check_out(op, out))) return s;
    if ((s = emi_check_tensor(op, "tensor", a))) return s;
    if (a->rank < 2 || a->shape[a->rank - 1] != a->shape[a->rank - 2])
        return emily_error(EMILY_ERR_SHAPE, "%s: expects a square matrix or a batch of square matrices, got shape %s",
                           op, EMILY_SHAPE_STR(a));
    const emily_engine *e;
    const struct emily_linalg_kernels *k;
    emily_dtype t = emily_type_to_floating(a->dtype), w = wide_of(t);
    if ((s = emi_check_same_device(op, 1, &a, &e))) return s;
    if (e->linalg && e->linalg->determinant_native) {
        if (method != EMILY_LINALG_LAPACK) return reference_on_cpu_only(op, a);
        emily_dtype nt = native_of(t);
        emily_tensor *an, *dn = NULL;
        if ((s = to_wide(a, nt, &an))) return s;
        if (!(s = emi_empty_like_device(a, nt, a->rank - 2, a->shape, &dn)))
            s = dn->size ? e->linalg->determinant_native(dn, an) : EMILY_OK;
        emily_tensor_release(an);
        return finish_all(s, 1, &dn, &t, (emily_tensor * *const[]){out});
    }
    if ((s = get_kernels(op, 1, &a, EMI_KERNEL_DETERMINANT, &e, &k))) return s;
    /* Nx 0.7's 2x2 and 3x3 determinants are the explicit products too */
    bool nx07 = method == EMILY_LINALG_REFERENCE_NX07 && a->shape[a->rank - 1] >= 4;
    if (nx07 && !emi_engine_supports(e, EMI_KERNEL_DETERMINANT_NX07, 0, a->dtype)) return unsupported(op, a);
    emily_tensor *ac, *dw;
    if ((s = nx07 ? to_wide(a, w, &ac) : emily_contiguous(a, &ac))) return s;
    if (!(s = emi_empty_like_device(a, w, a->rank - 2, a->shape, &dw))) {
        s = !dw->size ? EMILY_OK : nx07 ? k->determinant_nx07(dw, ac, t) : k->determinant(dw, ac, t);
        if (s) emily_tensor_release(dw);
    }
    emily_tensor_release(ac);
    if (s) return s;
    return finish(dw, t, out);
}

/* The LAPACK kernel runs when asked for, present, and the wide input is
 * finite: LAPACK's iterations are not defined on NaN or infinity, while
 * the reference algorithm propagates them the way Nx does. (Only host
 * engines have LAPACK kernels, so aw is in host memory here.) */
static bool use_lapack(emily_linalg_method method, bool have_kernel, const emily_tensor *aw) {
    if (method != EMILY_LINALG_LAPACK || !have_kernel) return false;
    const double *x = emily_tensor_base(aw);
    int64_t count = emily_tensor_size(aw) * (emily_dtype_is_complex(aw->dtype) ? 2 : 1);
    for (int64_t i = 0; i < count; i++)
        if (!isfinite(x[i])) return false;
    return true;
}

/* ---- qr ---------------------------------------------------------------- */

emily_status emily_qr(const emily_tensor *a, emily_qr_mode mode, double eps, emily_tensor **q, emily_tensor **r) {
    return emily_qr_opts(a, mode, eps, EMILY_LINALG_LAPACK, q, r);
}

emily_status emily_qr_opts(const emily_tensor *a, emily_qr_mode mode, double eps, emily_linalg_method method,
                           emily_tensor **q, emily_tensor **r) {
    const char *op = "qr";
    emily_status s;
    if ((s = emi_check_out(op, q)) || (s = emi_check_out(op, r))) return s;
    if ((s = emi_check_tensor(op, "tensor", a)) || (s = check_matrix(op, a, false))) return s;
    if (mode != EMILY_QR_REDUCED && mode != EMILY_QR_COMPLETE)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: invalid mode %d, expected reduced or complete", op, (int)mode);
    if ((s = check_method(op, method))) return s;
    const emily_engine *e;
    const struct emily_linalg_kernels *k;
    bool native;
    emi_kernel kernel = method == EMILY_LINALG_REFERENCE_NX07 ? EMI_KERNEL_QR_NX07 : EMI_KERNEL_QR;
    if ((s = linalg_kernels(op, 1, &a, method, kernel, &e, &k, &native))) return s;
    bool complete = mode == EMILY_QR_COMPLETE;
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], kk = m < n ? m : n;
    emily_dtype t = emily_type_to_floating(a->dtype), w = native ? native_of(t) : wide_of(t);
    int64_t qd[2] = {m, complete ? m : kk}, rd[2] = {complete ? m : kk, n};
    int64_t qshape[MAX_RANK], rshape[MAX_RANK];
    int qrank, rrank;
    shape_with(a, 2, 2, qd, &qrank, qshape);
    shape_with(a, 2, 2, rd, &rrank, rshape);
    emily_tensor *aw, *qw = NULL, *rw = NULL;
    if ((s = to_wide(a, w, &aw))) return s;
    if (!(s = emi_empty_like_device(a, w, qrank, qshape, &qw)) &&
        !(s = emi_empty_like_device(a, w, rrank, rshape, &rw)))
        s = all_empty(2, (emily_tensor *[]){qw, rw}) ? EMILY_OK
            : native                                 ? k->qr_native(qw, rw, aw, complete, eps)
                                                     : (method == EMILY_LINALG_REFERENCE_NX07 ? k->qr_nx07
                                                        : use_lapack(method, emi_engine_supports(e, EMI_KERNEL_QR_LAPACK, 0, w), aw)
                                                            ? k->qr_lapack
                                                            : k->qr)(qw, rw, aw, complete, eps, t);
    emily_tensor_release(aw);
    return finish_all(s, 2, (emily_tensor *[]){qw, rw}, (emily_dtype[]){t, t}, (emily_tensor * *const[]){q, r});
}

/* ---- svd --------------------------------------------------------------- */

emily_status emily_svd(const emily_tensor *a, bool full_matrices, emily_tensor **u, emily_tensor **sv,
                       emily_tensor **vt) {
    return emily_svd_opts(a, full_matrices, 100, EMILY_LINALG_LAPACK, u, sv, vt);
}

emily_status emily_svd_opts(const emily_tensor *a, bool full_matrices, int64_t max_iter, emily_linalg_method method,
                            emily_tensor **u, emily_tensor **sv, emily_tensor **vt) {
    const char *op = "svd";
    emily_status s;
    if ((s = check_method(op, method))) return s;
    if (max_iter < 0)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: max_iter must be non-negative, got %lld", op, (long long)max_iter);
    if ((s = emi_check_out(op, u)) || (s = emi_check_out(op, sv)) || (s = emi_check_out(op, vt))) return s;
    if ((s = emi_check_tensor(op, "tensor", a)) || (s = check_matrix(op, a, false))) return s;
    if (emily_dtype_is_complex(a->dtype))
        return emily_error(EMILY_ERR_TYPE,
                           "%s: complex tensors are not supported (Nx.LinAlg.svd/2 rejects them), got %s", op,
                           emily_dtype_name(a->dtype));
    const emily_engine *e;
    const struct emily_linalg_kernels *k;
    bool native;
    emi_kernel kernel = method == EMILY_LINALG_REFERENCE_NX07 ? EMI_KERNEL_SVD_NX07 : EMI_KERNEL_SVD;
    if ((s = linalg_kernels(op, 1, &a, method, kernel, &e, &k, &native))) return s;
    int64_t m = a->shape[a->rank - 2], n = a->shape[a->rank - 1], kk = m < n ? m : n;
    emily_dtype t = emily_type_to_floating(a->dtype), w = native ? native_of(t) : EMILY_F64;
    int64_t ud[2] = {m, full_matrices ? m : kk}, vd[2] = {full_matrices ? n : kk, n}, sd[1] = {kk};
    int64_t ushape[MAX_RANK], sshape[MAX_RANK], vshape[MAX_RANK];
    int urank, srank, vrank;
    shape_with(a, 2, 2, ud, &urank, ushape);
    shape_with(a, 2, 1, sd, &srank, sshape);
    shape_with(a, 2, 2, vd, &vrank, vshape);
    emily_tensor *aw, *uw = NULL, *sw = NULL, *vw = NULL;
    if ((s = to_wide(a, w, &aw))) return s;
    if (!(s = emi_empty_like_device(a, w, urank, ushape, &uw)) &&
        !(s = emi_empty_like_device(a, w, srank, sshape, &sw)) &&
        !(s = emi_empty_like_device(a, w, vrank, vshape, &vw)))
        s = all_empty(3, (emily_tensor *[]){uw, sw, vw}) ? EMILY_OK
            : native                                     ? k->svd_native(uw, sw, vw, aw, full_matrices)
                                                         : (method == EMILY_LINALG_REFERENCE_NX07 ? k->svd_nx07
                                                            : use_lapack(method, emi_engine_supports(e, EMI_KERNEL_SVD_LAPACK, 0, EMILY_F64), aw)
                                                                ? k->svd_lapack
                                                                : k->svd)(uw, sw, vw, aw, full_matrices, max_iter, t, emily_dtype_is_integer(a->dtype));
    emily_tensor_release(aw);
    return finish_all(s, 3, (emily_tensor *[]){uw, sw, vw}, (emily_dtype[]){t, t, t},
                      (emily_tensor * *const[]){u, sv, vt});
}

/* ---- eigh -------------------------------------------------------------- */

emily_status emily_eigh(const emily_tensor *a, emily_tensor **eigenvalues, emily_tensor **eigenvectors) {
    return emily_eigh_opts(a, 1.0e-4, 1000, EMILY_LINALG_LAPACK, eigenvalues, eigenvectors);
}

emily_status emily_eigh_opts(const emily_tensor *a, double eps, int64_t max_iter, emily_linalg_method method,
                             emily_tensor **eigenvalues, emily_tensor **eigenvectors) {
    const char *op = "eigh";
    emily_status s;
    if ((s = check_method(op, method))) return s;
    if ((s = emi_check_out(op, eigenvalues)) || (s = emi_check_out(op, eigenvectors))) return s;
    if ((s = emi_check_tensor(op, "tensor", a)) || (s = check_matrix(op, a, true))) return s;
    if (max_iter < 0)
        return emily_error(EMILY_ERR_ARGUMENT, "%s: max_iter must be non-negative, got %lld", op, (long long)max_iter);
    bool nx07 = method == EMILY_LINALG_REFERENCE_NX07;
    const emily_engine *e;
    const struct emily_linalg_kernels *k;
    bool native;
    if ((s = linalg_kernels(op, 1, &a, method, nx07 ? EMI_KERNEL_EIGH_NX07 : EMI_KERNEL_EIGH, &e, &k, &native)))
        return s;
    emily_dtype t = emily_type_to_floating(a->dtype), w = native ? native_of(t) : wide_of(t);
    emily_tensor *aw, *ww = NULL, *vw = NULL;
    if ((s = to_wide(a, w, &aw))) return s;
    if (!(s = emi_empty_like_device(a, w, a->rank - 1, a->shape, &ww)) &&
        !(s = emi_empty_like_device(a, w, a->rank, a->shape, &vw)))
        s = all_empty(2, (emily_tensor *[]){ww, vw}) ? EMILY_OK
            : native                                 ? k->eigh_native(ww, vw, aw)
            : nx07                                   ? k->eigh_nx07(ww, vw, aw, eps, max_iter)
                   : (use_lapack(method, emi_engine_supports(e, EMI_KERNEL_EIGH_LAPACK, 0, w), aw)
                          ? k->eigh_lapack
                          : k->eigh)(ww, vw, aw, eps, max_iter, t);
    emily_tensor_release(aw);
    return finish_all(s, 2, (emily_tensor *[]){ww, vw}, (emily_dtype[]){t, t},
                      (emily_tensor * *const[]){eigenvalues, eigenvectors});
}
