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

static emily_status sort_opts(emily_call *c, int *axis, emily_sort_direction *dir, bool *stable) {
    *axis = 0;
    *dir = EMILY_SORT_ASC;
    *stable = false;
    const emily_value *opts = NULL;
    emily_status s;
    if (c->nargs > 1 && (s = emi_call_opts(c, 1, &opts))) return s;
    if (!opts) return EMILY_OK;
    const emily_value *v = emi_opt_get(opts, "axis");
    if (v && v->kind != EMILY_V_NIL) {
        int64_t a;
        if ((s = emi_value_int(c, v, "axis", &a))) return s;
        if (a < INT_MIN || a > INT_MAX) return emi_call_fail(c, EMILY_ERR_AXIS, "axis %lld is out of range", (long long)a);
        *axis = (int)a;
    }
    v = emi_opt_get(opts, "direction");
    if (v && v->kind != EMILY_V_NIL) {
        const char *d;
        if ((s = emi_value_atom(c, v, "direction", false, &d))) return s;
        if (strcmp(d, "asc") == 0) *dir = EMILY_SORT_ASC;
        else if (strcmp(d, "desc") == 0) *dir = EMILY_SORT_DESC;
        else return emi_call_fail(c, EMILY_ERR_ARGUMENT, "unknown direction :%s, expected :asc or :desc", d);
    }
    v = emi_opt_get(opts, "stable");
    if (v && v->kind != EMILY_V_NIL && (s = emi_value_bool(c, v, "stable", stable))) return s;
    return EMILY_OK;
}

/* sort and argsort (c->op true) */
emily_status emi_cb_sort(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_tensor *t, *out;
    int axis;
    emily_sort_direction dir;
    bool stable;
    emily_dtype type;
    if ((s = emi_call_tensor(c, 0, &t))) return s;
    if ((s = sort_opts(c, &axis, &dir, &stable))) return s;
    if (!c->op) s = emily_sort(t, axis, dir, stable, &out);
    else if (!(s = emi_call_template(c, 0, &type, NULL, NULL))) /* Nx's :type option */
        s = emily_argsort(t, axis, dir, stable, type, &out);
    return s ? s : emi_call_return(c, out);
}

emily_status emi_cb_top_k(emily_call *c) {
    emily_status s = emi_call_arity(c, 1, 2);
    if (s) return s;
    emily_tensor *t, *values, *indices;
    if ((s = emi_call_tensor(c, 0, &t))) return s;
    int64_t k = 1;
    const emily_value *opts = NULL;
    if (c->nargs > 1 && (s = emi_call_opts(c, 1, &opts))) return s;
    const emily_value *v = opts ? emi_opt_get(opts, "k") : NULL;
    if (v && v->kind != EMILY_V_NIL && (s = emi_value_int(c, v, "k", &k))) return s;
    emily_dtype itype = EMILY_DTYPE_AUTO;
    if (c->mode == EMILY_DISPATCH_RUN && (s = emi_call_template(c, 1, &itype, NULL, NULL))) return s;
    if ((s = emily_top_k(t, k, itype, &values, &indices))) return s;
    if ((s = emi_call_return(c, values))) {
        emily_tensor_release(indices);
        return s;
    }
    return emi_call_return(c, indices);
}
