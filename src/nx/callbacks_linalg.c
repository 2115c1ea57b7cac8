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
 * lu, qr, svd, eigh, solve and determinant take one option Nx does not have,
 * :linalg (:lapack, the default; :reference, Nx's own algorithms bit for
 * bit; :reference_nx07, Nx 0.7's; see emily_linalg_method).
 * Emily.Backend adds it from its configuration and the Nx it runs on. */
#include <stdio.h>
#include <string.h>
#include "nx/callback.h"

/* The optional keyword list at position i (NULL when absent). */
static emily_status optional_opts(emily_call *c, size_t i, const emily_value **opts) {
    *opts = NULL;
    if (c->nargs <= i) return EMILY_OK;
    return emi_call_opts(c, i, opts);
}

static emily_status opt_bool(emily_call *c, const emily_value *opts, const char *key, bool dflt,
                             bool *out) {
    const emily_value *v = emi_opt_get(opts, key);
    *out = dflt;
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    char what[48];
    snprintf(what, sizeof what, "option :%s", key);
    return emi_value_bool(c, v, what, out);
}

static emily_status opt_float(emily_call *c, const emily_value *opts, const char *key, double dflt,
                              double *out) {
    const emily_value *v = emi_opt_get(opts, key);
    *out = dflt;
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    char what[48];
    snprintf(what, sizeof what, "option :%s", key);
    return emi_value_float(c, v, what, out);
}

static emily_status opt_method(emily_call *c, const emily_value *opts, emily_linalg_method *out) {
    const emily_value *v = emi_opt_get(opts, "linalg");
    *out = EMILY_LINALG_LAPACK;
    if (!v || v->kind == EMILY_V_NIL) return EMILY_OK;
    const char *name;
    emily_status s = emi_value_atom(c, v, "option :linalg", false, &name);
    if (s) return s;
    if (strcmp(name, "lapack") == 0) return EMILY_OK;
    if (strcmp(name, "reference") == 0) {
        *out = EMILY_LINALG_REFERENCE;
        return EMILY_OK;
    }
    if (strcmp(name, "reference_nx07") == 0) {
        *out = EMILY_LINALG_REFERENCE_NX07;
        return EMILY_OK;
    }
    return emi_call_fail(c, EMILY_ERR_ARGUMENT,
                     "invalid :linalg received. Expected one of [:lapack, :reference, "
                     ":reference_nx07], received: :%s", name);
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
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_tensor *a;
    const emily_value *opts;
    if ((s = emi_call_tensor(c, 0, &a)) || (s = optional_opts(c, 1, &opts))) return s;
    double eps;
    emily_linalg_method method;
    if ((s = opt_float(c, opts, "eps", 1.0e-10, &eps)) || (s = opt_method(c, opts, &method))) return s;
    emily_tensor *r[3];
    if ((s = emily_lu_opts(a, eps, method, &r[0], &r[1], &r[2]))) return s;
    return return_all(c, 3, r);
}

emily_status emi_cb_triangular_solve(emily_call *c) {
    emily_status s = emi_call_arity(c, 2, 3);
    if (s) return s;
    emily_tensor *a, *b;
    const emily_value *opts;
    if ((s = emi_call_tensor(c, 0, &a)) || (s = emi_call_tensor(c, 1, &b)) || (s = optional_opts(c, 2, &opts)))
        return s;
    bool left_side, lower;
    if ((s = opt_bool(c, opts, "left_side", true, &left_side)) ||
        (s = opt_bool(c, opts, "lower", true, &lower)))
        return s;
    emily_transform_a tr = EMILY_TRANSFORM_NONE;
    const emily_value *v = emi_opt_get(opts, "transform_a");
    if (v && v->kind != EMILY_V_NIL) {
        const char *name;
        if ((s = emi_value_atom(c, v, "option :transform_a", false, &name))) return s;
        if (strcmp(name, "none") == 0) tr = EMILY_TRANSFORM_NONE;
        else if (strcmp(name, "transpose") == 0) tr = EMILY_TRANSFORM_TRANSPOSE;
        else if (strcmp(name, "conjugate") == 0) tr = EMILY_TRANSFORM_CONJUGATE;
        else
            return emi_call_fail(c, EMILY_ERR_ARGUMENT,
                             "invalid value for :transform_a option, expected :none, :transpose, "
                             "or :conjugate, got: :%s", name);
    }
    emily_tensor *out;
    if ((s = emily_triangular_solve(a, b, left_side, lower, tr, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_qr(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_tensor *a;
    const emily_value *opts;
    if ((s = emi_call_tensor(c, 0, &a)) || (s = optional_opts(c, 1, &opts))) return s;
    double eps;
    if ((s = opt_float(c, opts, "eps", 1.0e-10, &eps))) return s;
    emily_qr_mode mode = EMILY_QR_REDUCED;
    const emily_value *v = emi_opt_get(opts, "mode");
    if (v && v->kind != EMILY_V_NIL) {
        const char *name;
        if ((s = emi_value_atom(c, v, "option :mode", false, &name))) return s;
        if (strcmp(name, "reduced") == 0) mode = EMILY_QR_REDUCED;
        else if (strcmp(name, "complete") == 0) mode = EMILY_QR_COMPLETE;
        else
            return emi_call_fail(c, EMILY_ERR_ARGUMENT,
                             "invalid :mode received. Expected one of [:reduced, :complete], "
                             "received: :%s", name);
    }
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    emily_tensor *r[2];
    if ((s = emily_qr_opts(a, mode, eps, method, &r[0], &r[1]))) return s;
    return return_all(c, 2, r);
}

emily_status emi_cb_svd(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_tensor *a;
    const emily_value *opts;
    if ((s = emi_call_tensor(c, 0, &a)) || (s = optional_opts(c, 1, &opts))) return s;
    bool full;
    if ((s = opt_bool(c, opts, "full_matrices?", true, &full))) return s;
    int64_t max_iter = 100;
    const emily_value *mi = emi_opt_get(opts, "max_iter");
    if (mi && mi->kind != EMILY_V_NIL && (s = emi_value_int(c, mi, "option :max_iter", &max_iter))) return s;
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    emily_tensor *r[3];
    if ((s = emily_svd_opts(a, full, max_iter, method, &r[0], &r[1], &r[2]))) return s;
    return return_all(c, 3, r);
}

emily_status emi_cb_eigh(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_tensor *a;
    const emily_value *opts;
    if ((s = emi_call_tensor(c, 0, &a)) || (s = optional_opts(c, 1, &opts))) return s;
    double eps;
    int64_t max_iter = 1000;
    if ((s = opt_float(c, opts, "eps", 1.0e-4, &eps))) return s;
    const emily_value *mi = emi_opt_get(opts, "max_iter");
    if (mi && mi->kind != EMILY_V_NIL && (s = emi_value_int(c, mi, "option :max_iter", &max_iter))) return s;
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    emily_tensor *r[2];
    if ((s = emily_eigh_opts(a, eps, max_iter, method, &r[0], &r[1]))) return s;
    return return_all(c, 2, r);
}

emily_status emi_cb_cholesky(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_tensor *a, *out;
    const emily_value *opts;
    if ((s = emi_call_tensor(c, 0, &a)) || (s = optional_opts(c, 1, &opts))) return s;
    if ((s = emily_cholesky(a, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_solve(emily_call *c) {
    emily_status s = emi_call_arity(c, 2, 3);
    if (s) return s;
    emily_tensor *a, *b, *out;
    const emily_value *opts;
    if ((s = emi_call_tensor(c, 0, &a)) || (s = emi_call_tensor(c, 1, &b)) || (s = optional_opts(c, 2, &opts)))
        return s;
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    if ((s = emily_solve_opts(a, b, method, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_determinant(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_tensor *a, *out;
    const emily_value *opts;
    if ((s = emi_call_tensor(c, 0, &a)) || (s = optional_opts(c, 1, &opts))) return s;
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    if ((s = emily_determinant_opts(a, method, &out))) return s;
    return emi_call_return(c, out);
}
