/* Engine graphs: a fused group lowered to the device engine's fused
 * program (core/engine.h, emi_fused_program) and run as one kernel.
 *
 * Each member call becomes the instructions its op layer function would
 * run on whole tensors, with the same choices: emily_unary's compute type
 * and its cases without a kernel, emily_binary's compute type
 * (emi_binary_compute_type: by value for a mirrored scalar input, by type
 * for a member's result, as for the kernel result it replaces), its
 * conversions around the kernel, emily_select's branch conversions and
 * as_type. So every element of a fused run has the bits of the unfused
 * calls. A member the program cannot express (a case the op layer
 * answers another way, a complex predicate), or a device that cannot run
 * the program now, leaves the whole group to run call by call: the same
 * results, and the calls' own errors. */
#include <stdlib.h>
#include <string.h>
#include "core/binary_kernels.h"
#include "core/engine.h"
#include "core/op_rules.h"
#include "core/tensor_impl.h"
#include "graph/graph_impl.h"
#include "ops/binary.h"

#define MAX_INSTR 256

typedef struct lowering {
    emi_fused_program p;
    emi_fused_instr instr[MAX_INSTR];
    int32_t nslots;
    emily_dtype slot_dtype[EMI_FUSED_MAX_INPUTS + MAX_INSTR];
    const emily_tensor *slot_tensor[EMI_FUSED_MAX_INPUTS + MAX_INSTR]; /* inputs only */
    const emily_engine *e;
} lowering;

/* Appends an instruction writing a new slot of dtype out; -1 when full. */
static int32_t emit(lowering *L, emi_fused_kind kind, int op, emily_dtype in, emily_dtype out, emily_dtype pred,
                    int32_t a, int32_t b, int32_t c) {
    if (L->p.ninstr >= MAX_INSTR || emily_dtype_is_narrow(out) || emily_dtype_is_narrow(in)) return -1;
    L->instr[L->p.ninstr++] = (emi_fused_instr){kind, op, in, out, pred, a, b, c};
    int32_t slot = L->nslots++;
    L->slot_dtype[slot] = out;
    L->slot_tensor[slot] = NULL;
    return slot;
}

/* slot as dtype `to` (as emi_convert_to: itself when it has that dtype). */
static int32_t convert(lowering *L, int32_t slot, emily_dtype to) {
    if (slot < 0 || L->slot_dtype[slot] == to) return slot;
    if (!L->e->supports(L->e, EMI_KERNEL_CONVERT, 0, (const emily_dtype[]){to, L->slot_dtype[slot]}, 2)) return -1;
    return emit(L, EMI_FUSED_CONVERT, 0, L->slot_dtype[slot], to, 0, slot, -1, -1);
}

/* emily_unary's kernel path (src/ops/unary.c). */
static int32_t lower_unary(lowering *L, emily_unary_op op, int32_t x) {
    emily_dtype t = L->slot_dtype[x], out_type;
    if (emily_unary_type(op, t, &out_type)) return -1;
    bool integer = emily_dtype_is_integer(t), cplx = emily_dtype_is_complex(t);
    emi_unary_rule rule = emi_unary_rule_of(op);
    if ((rule == EMI_UNARY_RULE_ABS && emily_dtype_kind_of(t) == EMILY_KIND_UNSIGNED) ||
        (rule == EMI_UNARY_RULE_ROUNDING && integer) || (rule == EMI_UNARY_RULE_REAL && !cplx && !integer))
        return x; /* the tensor itself */
    if (rule == EMI_UNARY_RULE_REAL && integer) return convert(L, x, out_type);
    if ((rule == EMI_UNARY_RULE_IMAG && !cplx) || (rule == EMI_UNARY_RULE_PREDICATE && integer))
        return -1; /* zeros: not worth an instruction kind */
    emily_dtype compute = t;
    bool on_double = rule == EMI_UNARY_RULE_FLOATING || rule == EMI_UNARY_RULE_FLOATING_REAL ||
                     rule == EMI_UNARY_RULE_PHASE;
    if (on_double && integer) compute = EMILY_F64;
    if (rule == EMI_UNARY_RULE_CONJUGATE && !cplx) compute = emily_type_to_real(out_type);
    if (!emi_engine_supports(L->e, EMI_KERNEL_UNARY, op, compute)) return -1;
    int32_t src = convert(L, x, compute);
    return src < 0 ? -1 : emit(L, EMI_FUSED_UNARY, op, compute, out_type, 0, src, -1, -1);
}

/* emily_binary's plain path (src/ops/binary.c), output type o. */
static int32_t lower_binary(lowering *L, emily_binary_op op, int32_t x, int32_t y, emily_dtype o) {
    emily_dtype c;
    if (!emi_binary_compute_type(L->e, op, L->slot_dtype[x], L->slot_tensor[x], L->slot_dtype[y], L->slot_tensor[y], o,
                                 &c) ||
        emi_binary_kernel_operands(op, c, c) != EMILY_OK || !emi_engine_supports(L->e, EMI_KERNEL_BINARY, op, c))
        return -1;
    int32_t xc = convert(L, x, c), yc = convert(L, y, c);
    if (xc < 0 || yc < 0) return -1;
    emily_dtype kout = emi_binary_kernel_output(op, c);
    int32_t r = emit(L, EMI_FUSED_BINARY, op, c, kout, 0, xc, yc, -1);
    bool pred = emi_binary_rule_is_predicate(emi_binary_rule_of(op));
    return !pred && c != o ? convert(L, r, o) : r;
}

/* emily_select's path (src/ops/select.c), output type o. */
static int32_t lower_select(lowering *L, int32_t p, int32_t t, int32_t f, emily_dtype o) {
    if (emily_dtype_is_complex(L->slot_dtype[p]) || !emi_engine_supports(L->e, EMI_KERNEL_SELECT, 0, o)) return -1;
    int32_t tc = convert(L, t, o), fc = convert(L, f, o);
    if (tc < 0 || fc < 0) return -1;
    return emit(L, EMI_FUSED_SELECT, 0, o, o, L->slot_dtype[p], p, tc, fc);
}

/* The slot holding value v: a member's result, or an input (added). */
static int32_t slot_of(lowering *L, const emily_graph *g, const fused_group *fg, const int32_t *member_slot, int k,
                       int32_t v, emily_tensor **vals) {
    const graph_value *gv = &g->values[v];
    for (int q = 0; gv->kind == GV_CALL && q < k; q++)
        if (fg->calls[q] == gv->node) return member_slot[q];
    for (int i = 0; i < L->p.ninputs; i++)
        if (L->p.inputs[i] == vals[v]) return i;
    if (L->p.ninputs >= EMI_FUSED_MAX_INPUTS || !vals[v]) return -1;
    /* narrow types run through the dispatcher (src/nx/narrow.c) */
    if (emily_dtype_is_narrow(emily_tensor_dtype(vals[v]))) return -1;
    /* inputs take the first slots: every instruction's slot is renumbered
     * when an input arrives after it (inputs are few; done at the end) */
    int i = L->p.ninputs++;
    L->p.inputs[i] = vals[v];
    return -2 - i; /* an input, numbered at the end */
}

/* The group as a program; false where a member cannot be expressed. */
static bool lower(lowering *L, emily_graph *g, const fused_group *fg, emily_tensor **vals) {
    /* Two passes: the inputs first (their slots come first), then the
     * instructions. */
    int32_t member_slot[MAX_INSTR] = {0};
    if (fg->ncalls > MAX_INSTR) return false;
    for (int k = 0; k < fg->ncalls; k++) {
        const graph_call *c = &g->calls[fg->calls[k]];
        for (int r = 0; r < c->nrefs; r++) {
            const graph_value *gv = &g->values[c->refs[r]->i];
            bool member = false;
            for (int q = 0; gv->kind == GV_CALL && q < k; q++) member |= fg->calls[q] == gv->node;
            if (!member && slot_of(L, g, fg, member_slot, 0, (int32_t)c->refs[r]->i, vals) == -1) return false;
        }
    }
    L->nslots = L->p.ninputs;
    for (int i = 0; i < L->p.ninputs; i++) {
        L->slot_dtype[i] = L->p.inputs[i]->dtype;
        L->slot_tensor[i] = L->p.inputs[i];
    }
    for (int k = 0; k < fg->ncalls; k++) {
        const graph_call *c = &g->calls[fg->calls[k]];
        int32_t a[3] = {-1, -1, -1};
        int na = 0;
        for (size_t i = 0; i < c->nargs && na < 3; i++) {
            if (c->args[i].kind != EMILY_V_REF) continue;
            a[na] = slot_of(L, g, fg, member_slot, k, (int32_t)c->args[i].i, vals);
            if (a[na] < 0) return false; /* (every input was added above) */
            na++;
        }
        emily_dtype o = g->values[c->first].dtype;
        emily_unary_op u;
        emily_binary_op b;
        int32_t r = -1;
        if (na == 1 && emily_unary_op_from_name(c->callback, &u)) r = lower_unary(L, u, a[0]);
        else if (na == 2 && emily_binary_op_from_name(c->callback, &b)) r = lower_binary(L, b, a[0], a[1], o);
        else if (na == 3 && strcmp(c->callback, "select") == 0) r = lower_select(L, a[0], a[1], a[2], o);
        else if (na == 1 && strcmp(c->callback, "as_type") == 0) r = convert(L, a[0], o);
        if (r < 0 || L->slot_dtype[r] != o) return false;
        member_slot[k] = r;
    }
    L->p.rank = fg->rank;
    L->p.shape = fg->shape;
    L->p.instr = L->instr;
    for (int x = 0; x < fg->nexits; x++) {
        int m = 0;
        while (g->calls[fg->calls[m]].first != fg->exits[x]) m++;
        L->p.exit_slot[x] = member_slot[m];
    }
    L->p.nexits = fg->nexits;
    return true;
}

/* The members one by one, as unfused steps; intermediates released. */
static emily_status run_calls(emily_graph *g, const fused_group *fg, emily_tensor **vals) {
    emily_status s = EMILY_OK;
    for (int k = 0; k < fg->ncalls && !s; k++) s = emi_graph_run_call(g, &g->calls[fg->calls[k]], vals);
    for (int k = 0; k < fg->ncalls; k++) {
        int32_t v = g->calls[fg->calls[k]].first;
        bool exit = false;
        for (int x = 0; x < fg->nexits; x++) exit |= fg->exits[x] == v;
        if (!exit || s) {
            emily_tensor_release(vals[v]);
            vals[v] = NULL;
        }
    }
    return s;
}

emily_status emi_fused_group_run_program(emily_graph *g, const fused_group *fg, emily_tensor **vals) {
    const emily_engine *e = emi_engine_for(g->device.type);
    lowering *L = calloc(1, sizeof *L);
    if (!L) return emily_error(EMILY_ERR_MEMORY, "graph_run: out of host memory");
    L->e = e;
    emily_status s = EMILY_OK;
    if (!e || !e->fused || !lower(L, g, fg, vals)) {
        free(L);
        return run_calls(g, fg, vals);
    }
    for (int x = 0; x < fg->nexits && !s; x++) {
        const graph_value *v = &g->values[fg->exits[x]];
        s = emily_empty(g->device, v->dtype, v->rank, v->shape, &L->p.exits[x]);
    }
    if (!s) s = e->fused->run(&L->p);
    if (!s)
        for (int x = 0; x < fg->nexits; x++) vals[fg->exits[x]] = L->p.exits[x];
    else
        for (int x = 0; x < fg->nexits; x++) emily_tensor_release(L->p.exits[x]);
    free(L);
    if (s == EMILY_ERR_UNSUPPORTED) return run_calls(g, fg, vals);
    return s;
}
