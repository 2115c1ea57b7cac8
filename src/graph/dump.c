/* Engine graphs: a text listing of a graph's live calls, for reading the
 * exact call shapes a front end records (EMILY_GRAPH_DUMP=1 prints each
 * graph the pattern pass sees, after folding and before substitution).
 * One line per call:
 *
 *   v12 = dot(v10, [3], [0, 1], v11, [3], [0, 1]) : f32{2, 12, 16, 16}
 *
 * values as vN, one-element constants as their value and type
 * (k0.17678f32), larger constants as their type and shape. */
#include <stdio.h>
#include "core/tensor_impl.h"
#include "graph/graph_impl.h"

static void dump_shape(FILE *f, emily_dtype dt, int rank, const int64_t *shape) {
    fprintf(f, "%s{", emily_dtype_name(dt));
    for (int i = 0; i < rank; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)shape[i]);
    fputc('}', f);
}

static void dump_ref(FILE *f, const emily_graph *g, int32_t v) {
    const graph_value *gv = &g->values[v];
    if (gv->kind != GV_CONST) {
        fprintf(f, "v%d", (int)v);
        return;
    }
    double x;
    emily_tensor *wide = NULL;
    if (emily_tensor_size(gv->tensor) == 1 && !emily_dtype_is_complex(gv->dtype) &&
        !emily_as_type(gv->tensor, EMILY_F64, &wide) && !emily_to_binary(wide, &x, sizeof x))
        fprintf(f, "k%.9g%s", x, emily_dtype_name(gv->dtype));
    else dump_shape(f, gv->dtype, gv->rank, gv->shape), fprintf(f, "@v%d", (int)v);
    emily_tensor_release(wide);
}

static void dump_value(FILE *f, const emily_graph *g, const emily_value *a) {
    switch (a->kind) {
    case EMILY_V_REF: dump_ref(f, g, (int32_t)a->i); break;
    case EMILY_V_NIL: fputs("nil", f); break;
    case EMILY_V_BOOL: fputs(a->b ? "true" : "false", f); break;
    case EMILY_V_INT: fprintf(f, "%lld", (long long)a->i); break;
    case EMILY_V_UINT: fprintf(f, "%llu", (unsigned long long)a->u); break;
    case EMILY_V_FLOAT: fprintf(f, "%.9g", a->f); break;
    case EMILY_V_ATOM: fprintf(f, ":%s", a->str); break;
    case EMILY_V_TEMPLATE: dump_shape(f, a->dtype, a->rank, a->shape); break;
    case EMILY_V_TUPLE:
    case EMILY_V_LIST:
        fputc(a->kind == EMILY_V_LIST ? '[' : '{', f);
        for (size_t i = 0; i < a->n; i++) {
            if (i) fputs(", ", f);
            dump_value(f, g, &a->items[i]);
        }
        fputc(a->kind == EMILY_V_LIST ? ']' : '}', f);
        break;
    case EMILY_V_OPTS:
        fputc('[', f);
        for (size_t i = 0; i < a->n; i++) {
            fprintf(f, "%s%s: ", i ? ", " : "", a->keys[i]);
            dump_value(f, g, &a->items[i]);
        }
        fputc(']', f);
        break;
    default: fputs("?", f); break;
    }
}

void emi_graph_dump(const emily_graph *g, FILE *f) {
    fprintf(f, "emily graph: %d params, %d calls, outputs", (int)g->nparams, (int)g->ncalls);
    for (int32_t i = 0; i < g->noutputs; i++) fprintf(f, " v%d", (int)g->outputs[i]);
    fputc('\n', f);
    for (int32_t i = 0; i < g->nparams; i++) {
        const graph_value *p = &g->values[g->params[i]];
        fprintf(f, "  v%d = param %d : ", (int)g->params[i], (int)i);
        dump_shape(f, p->dtype, p->rank, p->shape);
        fputc('\n', f);
    }
    for (int32_t ci = 0; ci < g->ncalls; ci++) {
        const graph_call *c = &g->calls[ci];
        if (c->folded) continue;
        fprintf(f, "  v%d", (int)c->first);
        for (int32_t k = 1; k < c->nout; k++) fprintf(f, ", v%d", (int)(c->first + k));
        fprintf(f, " = %s(", c->callback);
        for (size_t i = 0; i < c->nargs; i++) {
            if (i) fputs(", ", f);
            dump_value(f, g, &c->args[i]);
        }
        fputs(") : ", f);
        for (int32_t k = 0; k < c->nout; k++) {
            const graph_value *v = &g->values[c->first + k];
            if (k) fputs(", ", f);
            dump_shape(f, v->dtype, v->rank, v->shape);
        }
        fputc('\n', f);
    }
}
