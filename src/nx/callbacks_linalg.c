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
 * its index in *out, dflt when absent or nil. Another atom fails with
 * "<bad>:<atom>". */
static emily_status opt_choice(emily_call *c, const emily_value *opts, const char *key, const char *const *names,
                               int dflt, const char *bad, int *out) {
    const emily_value *v = emi_opt_get(opts, key);
    *out = dflt;
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

static emily_status opt_method(emily_call *c, const emily_value *opts, emily_linalg_method *out) {
    static const char *const names[] = {"lapack", "reference", "reference_nx07", NULL};
    int i;
    emily_status s = opt_choice(c, opts, "linalg", names, EMILY_LINALG_LAPACK,
                                "invalid :linalg received. Expected one of [:lapack, :reference, "
                                ":reference_nx07], received: ",
                                &i);
    *out = (emily_linalg_method)i;
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
    emily_tensor *a;
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 1, &a, &opts);
    if (s) return s;
    double eps = 1.0e-10;
    emily_linalg_method method;
    if ((s = emi_opt_float(c, opts, "eps", NULL, &eps)) || (s = opt_method(c, opts, &method))) return s;
    emily_tensor *r[3];
    if ((s = emily_lu_opts(a, eps, method, &r[0], &r[1], &r[2]))) return s;
    return return_all(c, 3, r);
}

emily_status emi_cb_triangular_solve(emily_call *c) {
    emily_tensor *ab[2];
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 2, ab, &opts);
    if (s) return s;
    bool left_side = true, lower = true;
    if ((s = emi_opt_bool(c, opts, "left_side", NULL, &left_side)) ||
        (s = emi_opt_bool(c, opts, "lower", NULL, &lower)))
        return s;
    static const char *const transforms[] = {"none", "transpose", "conjugate", NULL};
    int tr;
    if ((s = opt_choice(c, opts, "transform_a", transforms, EMILY_TRANSFORM_NONE,
                        "invalid value for :transform_a option, expected :none, :transpose, "
                        "or :conjugate, got: ",
                        &tr)))
        return s;
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    emily_tensor *out;
    if ((s = emily_triangular_solve_opts(ab[0], ab[1], left_side, lower, (emily_transform_a)tr, method, &out)))
        return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_qr(emily_call *c) {
    emily_tensor *a;
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 1, &a, &opts);
    if (s) return s;
    double eps = 1.0e-10;
    if ((s = emi_opt_float(c, opts, "eps", NULL, &eps))) return s;
    static const char *const modes[] = {"reduced", "complete", NULL};
    int mode;
    if ((s = opt_choice(c, opts, "mode", modes, EMILY_QR_REDUCED,
                        "invalid :mode received. Expected one of [:reduced, :complete], received: ", &mode)))
        return s;
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    emily_tensor *r[2];
    if ((s = emily_qr_opts(a, (emily_qr_mode)mode, eps, method, &r[0], &r[1]))) return s;
    return return_all(c, 2, r);
}

emily_status emi_cb_svd(emily_call *c) {
    emily_tensor *a;
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 1, &a, &opts);
    if (s) return s;
    bool full = true;
    int64_t max_iter = 100;
    if ((s = emi_opt_bool(c, opts, "full_matrices?", NULL, &full)) ||
        (s = emi_opt_int(c, opts, "max_iter", NULL, &max_iter)))
        return s;
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    emily_tensor *r[3];
    if ((s = emily_svd_opts(a, full, max_iter, method, &r[0], &r[1], &r[2]))) return s;
    return return_all(c, 3, r);
}

emily_status emi_cb_eigh(emily_call *c) {
    emily_tensor *a;
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 1, &a, &opts);
    if (s) return s;
    double eps = 1.0e-4;
    int64_t max_iter = 1000;
    if ((s = emi_opt_float(c, opts, "eps", NULL, &eps)) || (s = emi_opt_int(c, opts, "max_iter", NULL, &max_iter)))
        return s;
    emily_linalg_method method;
    if ((s = opt_method(c, opts, &method))) return s;
    emily_tensor *r[2];
    if ((s = emily_eigh_opts(a, eps, max_iter, method, &r[0], &r[1]))) return s;
    return return_all(c, 2, r);
}

emily_status emi_cb_cholesky(emily_call *c) {
    emily_tensor *a, *out;
    const emily_value *opts;
    emily_status s = emi_call_tensors_opts(c, 1, &a, &opts);
    if (s || (s = emily_cholesky(a, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_solve(emily_call *c) {
    emily_tensor *ab[2], *out;
    const emily_value *opts;
    emily_linalg_method method;
    emily_status s = emi_call_tensors_opts(c, 2, ab, &opts);
    if (s || (s = opt_method(c, opts, &method)) || (s = emily_solve_opts(ab[0], ab[1], method, &out))) return s;
    return emi_call_return(c, out);
}

emily_status emi_cb_determinant(emily_call *c) {
    emily_tensor *a, *out;
    const emily_value *opts;
    emily_linalg_method method;
    emily_status s = emi_call_tensors_opts(c, 1, &a, &opts);
    if (s || (s = opt_method(c, opts, &method)) || (s = emily_determinant_opts(a, method, &out))) return s;
    return emi_call_return(c, out);
}
