/* Nx callbacks: sort family.
 *
 * sort(out, tensor, opts)      opts: axis, direction (:asc/:desc), stable
 * argsort(out, tensor, opts)   the same; the output type is Nx's public
 *                              :type option, so it comes from the
 *                              template in both modes
 * top_k(out, tensor, opts)     opts: k (Nx.Block.TopK's field in 0.13);
 *                              two outputs, values and indices. The
 *                              indices' type is fixed by Nx (s32 in 0.13,
 *                              s64 in 0.7): the template's in RUN mode,
 *                              inferred (s32) in INFER mode. */
#include <limits.h>
#include <string.h>
#include "nx/callback.h"

/* sort's and argsort's options (opts NULL: none). */
static emily_status sort_opts(emily_call *c, const emily_value *opts, int *axis, emily_sort_direction *dir,
                              bool *stable) {
    *axis = 0;
    *dir = EMILY_SORT_ASC;
    *stable = false;
    int64_t a = 0;
    emily_status s = emi_opt_int(c, opts, "axis", "axis", &a);
    if (s) return s;
    if (a < INT_MIN || a > INT_MAX) return emi_call_fail(c, EMILY_ERR_AXIS, "axis %lld is out of range", (long long)a);
    *axis = (int)a;
    const emily_value *v = emi_opt_get(opts, "direction");
    if (v && v->kind != EMILY_V_NIL) {
        const char *d;
        if ((s = emi_value_atom(c, v, "direction", false, &d))) return s;
        if (strcmp(d, "asc") == 0) *dir = EMILY_SORT_ASC;
        else if (strcmp(d, "desc") == 0) *dir = EMILY_SORT_DESC;
        else return emi_call_fail(c, EMILY_ERR_ARGUMENT, "unknown direction :%s, expected :asc or :desc", d);
    }
    return emi_opt_bool(c, opts, "stable", "stable", stable);
}

/* sort and argsort (c->op true) */
emily_status emi_cb_sort(emily_call *c) {
    emily_tensor *t, *out;
    const emily_value *opts;
    int axis;
    emily_sort_direction dir;
    bool stable;
    emily_dtype type;
    emily_status s = emi_call_tensors_opts(c, 1, &t, &opts);
    if (s || (s = sort_opts(c, opts, &axis, &dir, &stable))) return s;
    if (!c->op) s = emily_sort(t, axis, dir, stable, &out);
    else if (!(s = emi_call_template(c, 0, &type, NULL, NULL))) /* Nx's :type option */
        s = emily_argsort(t, axis, dir, stable, type, &out);
    return s ? s : emi_call_return(c, out);
}

emily_status emi_cb_top_k(emily_call *c) {
    emily_tensor *t, *values, *indices;
    const emily_value *opts;
    int64_t k = 1;
    emily_status s = emi_call_tensors_opts(c, 1, &t, &opts);
    if (s || (s = emi_opt_int(c, opts, "k", "k", &k))) return s;
    emily_dtype itype = EMILY_DTYPE_AUTO;
    if (c->mode == EMILY_DISPATCH_RUN && (s = emi_call_template(c, 1, &itype, NULL, NULL))) return s;
    if ((s = emily_top_k(t, k, itype, &values, &indices))) return s;
    if ((s = emi_call_return(c, values))) {
        emily_tensor_release(indices);
        return s;
    }
    return emi_call_return(c, indices);
}
