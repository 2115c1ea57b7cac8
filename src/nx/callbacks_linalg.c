/* Nx callbacks: linear algebra.
 *
 * Nx 0.13 reaches a backend through block/4 with Nx.Block.LinAlg.*
 * structs, recorded as the callback name with the struct's fields as a
 * final options argument; Nx 0.7 called lu/qr/svd/eigh/cholesky/solve/
 * determinant/triangular_solve directly with the same arguments and
 * options. Both map onto the same typed functions. Output types and
 * shapes are inferred by the typed functions (Nx decides them from the
 * inputs and options only). Options that only steer Nx's iterative
 * algorithms have the effect they have in Nx where the engine runs Nx's
 * algorithm (eigh's :eps and :max_iter, svd's :max_iter) and none
 * elsewhere (lu's :eps outside Nx 0.7's algorithm, and eigh's and
 * svd's under LAPACK).
 *
 * lu, qr, svd, eigh, solve, determinant and triangular_solve take one
 * option Nx does not have, :linalg (:lapack, the default; :reference, Nx's
 * own algorithms bit for bit; :reference_nx07, Nx 0.7's; see
 * emily_linalg_method).
 * Emily.Backend adds it from its configuration and the Nx it runs on. */
#include <stdio.h>
#include <string.h>
#include "nx/callback.h"

/* An atom option, one of `names` (in the order of their enum values):
 * its index in *out, which keeps the caller's default when the option is
 * absent or nil. Another atom fails with "<bad>:<atom>". */
static emily_status opt_choice(emily_call *c, const emily_value *opts, const char *key, const char *const *names,
                               const char *bad, int *out) {
    const emily_value *v = emi_opt_get(opts, key);
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    char what[48];
    snprintf(what, sizeof what, "option :%s", key);
    const char *name;
    emily_status s = emi_value_atom(c, v, what, false, &name);
    if (s) return s;
    for (int i = 0; names[i]; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = i;
            return EMILY_OK;
        }
    return emi_call_fail(c, EMILY_ERR_ARGUMENT, "%s:%s", bad, name);
}

/* One option of a callback: its key, its kind, where its value goes
 * (holding the default), and for an atom choice its names and the
 * message's start for another atom (opt_choice). */
typedef enum { OPT_FLOAT, OPT_INT, OPT_BOOL, OPT_CHOICE } opt_kind;
typedef struct linalg_opt {
    const char *key;
    opt_kind kind;
    void *out;
    const char *const *names;
    const char *bad;
} linalg_opt;

#define OPT(key_, kind_, out_) \
    { .key = (key_), .kind = (kind_), .out = (out_) }
#define CHOICE_OPT(key_, out_, names_, bad_) \
    { .key = (key_), .kind = OPT_CHOICE, .out = (out_), .names = (names_), .bad = (bad_) }

static const char *const method_names[] = {"lapack", "reference", "reference_nx07", NULL};
#define METHOD_BAD "invalid :linalg received. Expected one of [:lapack, :reference, :reference_nx07], received: "

/* A callback's n tensors and its options: own[0..nown) in order, then
 * :linalg into *method (NULL: a callback without it). */
static emily_status linalg_args(emily_call *c, int n, emily_tensor **ts, const linalg_opt *own, int nown,
                                emily_linalg_method *method) {
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, n, ts, &opts);
    for (int i = 0; !s && i < nown; i++) {
        const linalg_opt *o = &own[i];
        switch (o->kind) {
        case OPT_FLOAT: s = emi_opt_float(c, opts, o->key, NULL, o->out); break;
        case OPT_INT: s = emi_opt_int(c, opts, o->key, NULL, o->out); break;
        case OPT_BOOL: s = emi_opt_bool(c, opts, o->key, NULL, o->out); break;
        case OPT_CHOICE: s = opt_choice(c, opts, o->key, o->names, o->bad, o->out); break;
        }
    }
    if (s || !method) return s;
    int m = EMILY_LINALG_LAPACK;
    s = opt_choice(c, opts, "linalg", method_names, METHOD_BAD, &m);
    *method = (emily_linalg_method)m;
    return s;
}

static emily_status return_all(emily_call *c, int n, emily_tensor **ts) {
    emily_status s = EMILY_OK;
    for (int i = 0; i < n; i++) {
        emily_status si = emi_call_return(c, ts[i]); /* takes ownership even on failure */
        if (si && !s) s = si;
    }
    return s;
}

emily_status emi_cb_lu(emily_call *c) {
    emily_tensor *a, *r[3];
    double eps = 1.0e-10;
    emily_linalg_method method;
    const linalg_opt own[] = {OPT("eps", OPT_FLOAT, &eps)};
    emily_status s = linalg_args(c, 1, &a, own, 1, &method);
    if (s || (s = emily_lu_opts(a, eps, method, &r[0], &r[1], &r[2]))) return s;
    return return_all(c, 3, r);
}

emily_status emi_cb_triangular_solve(emily_call *c) {
    static const char *const transforms[] = {"none", "transpose", "conjugate", NULL};
    emily_tensor *ab[2], *out;
    bool left_side = true, lower = true;
    int tr = EMILY_TRANSFORM_NONE;
    emily_linalg_method method;
    const linalg_opt own[] = {OPT("left_side", OPT_BOOL, &left_side), OPT("lower", OPT_BOOL, &lower),
                              CHOICE_OPT("transform_a", &tr, transforms,
                                         "invalid value for :transform_a option, expected :none, :transpose, "
                                         "or :conjugate, got: ")};
    emily_status s = linalg_args(c, 2, ab, own, 3, &method);
    if (s || (s = emily_triangular_solve_opts(ab[0], ab[1], left_side, lower, (emily_transform_a)tr, method, &out)))
        return s;
    return emi_call_return(c, out);
}

/* qr's and svd's factors of an {..., m, n} input (k is min(m, n)): the
 * complete m x m (and n x n) ones can be far larger than the input (an
 * empty {2^20, 0} has a 2^40-element Q), so Nx's templates are checked
 * before the work. Output i is the batch
 * dims, then dims[i]'s rows and columns, each m, n or k; a 0 leaves that
 * dim out (svd's S is {..., k}). Inputs the op will refuse are left to
 * it. */
typedef struct factor_dims {
    char rows, cols; /* 'm', 'n', 'k' or 0 (none) */
} factor_dims;

static emily_status check_factor_shapes(emily_call *c, const emily_tensor *a, int nout, const factor_dims *dims) {
    int rank = emily_tensor_rank(a);
    if (rank < 2) return EMILY_OK;
    const int64_t *shape = emily_tensor_shape(a);
    int64_t m = shape[rank - 2], n = shape[rank - 1], k = m < n ? m : n;
    for (int i = 0; i < nout; i++) {
        int64_t out[EMILY_MAX_RANK];
        int r = rank - 2;
        memcpy(out, shape, (size_t)r * sizeof *out);
        const char pick[2] = {dims[i].rows, dims[i].cols};
        for (int j = 0; j < 2; j++)
            if (pick[j]) out[r++] = pick[j] == 'm' ? m : pick[j] == 'n' ? n : k;
        emily_status s = emi_call_check_output(c, i, EMILY_DTYPE_AUTO, r, out);
        if (s) return s;
    }
    return EMILY_OK;
}

emily_status emi_cb_qr(emily_call *c) {
    static const char *const modes[] = {"reduced", "complete", NULL};
    emily_tensor *a, *r[2];
    double eps = 1.0e-10;
    int mode = EMILY_QR_REDUCED;
    emily_linalg_method method;
    const linalg_opt own[] = {
        OPT("eps", OPT_FLOAT, &eps),
        CHOICE_OPT("mode", &mode, modes, "invalid :mode received. Expected one of [:reduced, :complete], received: ")};
    emily_status s = linalg_args(c, 1, &a, own, 2, &method);
    const factor_dims reduced[2] = {{'m', 'k'}, {'k', 'n'}}, complete[2] = {{'m', 'm'}, {'m', 'n'}};
    if (!s) s = check_factor_shapes(c, a, 2, mode == EMILY_QR_COMPLETE ? complete : reduced);
    if (s || (s = emily_qr_opts(a, (emily_qr_mode)mode, eps, method, &r[0], &r[1]))) return s;
    return return_all(c, 2, r);
}

emily_status emi_cb_svd(emily_call *c) {
    emily_tensor *a, *r[3];
    bool full = true;
    int64_t max_iter = 100;
    emily_linalg_method method;
    const linalg_opt own[] = {OPT("full_matrices?", OPT_BOOL, &full), OPT("max_iter", OPT_INT, &max_iter)};
    emily_status s = linalg_args(c, 1, &a, own, 2, &method);
    const factor_dims thin[3] = {{'m', 'k'}, {'k', 0}, {'k', 'n'}}, whole[3] = {{'m', 'm'}, {'k', 0}, {'n', 'n'}};
    if (!s) s = check_factor_shapes(c, a, 3, full ? whole : thin);
    if (s || (s = emily_svd_opts(a, full, max_iter, method, &r[0], &r[1], &r[2]))) return s;
    return return_all(c, 3, r);
}

emily_status emi_cb_eigh(emily_call *c) {
    emily_tensor *a, *r[2];
    double eps = 1.0e-4;
    int64_t max_iter = 1000;
    emily_linalg_method method;
    const linalg_opt own[] = {OPT("eps", OPT_FLOAT, &eps), OPT("max_iter", OPT_INT, &max_iter)};
    emily_status s = linalg_args(c, 1, &a, own, 2, &method);
    if (s || (s = emily_eigh_opts(a, eps, max_iter, method, &r[0], &r[1]))) return s;
    return return_all(c, 2, r);
}

emily_status emi_cb_cholesky(emily_call *c) {
    emily_tensor *a, *out;
    emily_status s = linalg_args(c, 1, &a, NULL, 0, NULL);
    if (s || (s = emily_cholesky(a, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_solve(emily_call *c) {
    emily_tensor *ab[2], *out;
    emily_linalg_method method;
    emily_status s = linalg_args(c, 2, ab, NULL, 0, &method);
    if (s || (s = emily_solve_opts(ab[0], ab[1], method, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_determinant(emily_call *c) {
    emily_tensor *a, *out;
    emily_linalg_method method;
    emily_status s = linalg_args(c, 1, &a, NULL, 0, &method);
    if (s || (s = emily_determinant_opts(a, method, &out))) return s;
    return emi_call_return(c, out);
}
