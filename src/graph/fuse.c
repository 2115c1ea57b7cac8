/* Engine graphs: fusion of elementwise chains.
 *
 * On a device whose engine runs fused programs (engine.h, `fused`: the
 * CUDA engine compiles each to one kernel), a group holds element-wise
 * calls only and runs as that program (fuse_lower.c); the slabs below
 * are the CPU's way.
 *
 * A fused group is a set of elementwise calls (unary, binary, select,
 * as_type) with one output shape S, joined through values that only the
 * group uses. A run of the group never makes those values as whole
 * tensors: S is cut into slabs along its first axis longer than 1, and
 * for each slab every call of the group runs, in order, through its own
 * dispatcher handler on slab-sized views of its inputs (a broadcast input
 * keeps its broadcast axes), so the intermediates are small tensors that
 * stay in cache, and slabs run in parallel on the engine's pool. The
 * values that leave the group are written slab by slab into whole
 * tensors.
 *
 * Reductions over trailing axes (sum, product, reduce_max, reduce_min
 * with keep_axes: true and explicit axes that leave the slab axis
 * alone) join too: a slab holds whole rows, so softmax's max, exp, sum
 * and divide, or a layer norm's mean, variance and scaling, run as one
 * group. A group's shape is its calls' iteration shape: the output's for
 * elementwise calls, the input's for reductions.
 *
 * The results are those of the unfused calls bit for bit: each element
 * goes through the same handler, the same kernel and the same type rules;
 * only the number of elements a kernel call sees changes (and the
 * elementwise kernels give each element the same bits whatever their
 * chunking, which tests/unit/test_graph.c checks against unfused runs). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"
#include "core/tensor_impl.h"
#include "cpu/parallel.h"
#include "graph/graph_impl.h"

/* Elements of S per slab: intermediates of a few slabs fit in L2. */
#define SLAB_ELEMENTS 16384
/* A call has at most this many arguments to be fused; a group at most
 * MAX_GROUP calls. */
#define FUSE_MAX_ARGS 4
#define MAX_GROUP 64

/* Fusible calls: every element-wise op of emily/op_list.h, select and
 * as_type, except the ones below. phase was never in the fusible set
 * (fused, it would give the same bits); it stays out so that graphs are
 * grouped as before. */
static bool fusible_unary(emily_unary_op op) { return op != EMILY_PHASE; }
/* Their reference raises for some operand values (ops/binary_raises.c
 * checks the whole operands before the kernel runs). */
static bool fusible_binary(emily_binary_op op) {
    return op != EMILY_REMAINDER && op != EMILY_QUOTIENT && op != EMILY_LEFT_SHIFT && op != EMILY_RIGHT_SHIFT;
}

static const char *const reduction_names[] = {"sum", "product", "reduce_max", "reduce_min", NULL};

static bool in_names(const char *const *names, const char *name) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

static bool fusible_name(const char *name) {
    emily_unary_op u;
    emily_binary_op b;
    if (emily_unary_op_from_name(name, &u)) return fusible_unary(u);
    if (emily_binary_op_from_name(name, &b)) return fusible_binary(b);
    return strcmp(name, "select") == 0 || strcmp(name, "as_type") == 0;
}

static bool is_reduction(const graph_call *c) { return in_names(reduction_names, c->callback); }

/* A call's iteration shape: its input's for a reduction (its first
 * argument), its output's otherwise. */
static const graph_value *iter_value(const emily_graph *g, const graph_call *c) {
    if (is_reduction(c) && c->nargs >= 1 && c->args[0].kind == EMILY_V_REF) return &g->values[c->args[0].i];
    return &g->values[c->first];
}

static const emily_value *opt_of(const emily_value *opts, const char *key) {
    for (size_t i = 0; opts && opts->kind == EMILY_V_OPTS && i < opts->n; i++)
        if (strcmp(opts->keys[i], key) == 0) return &opts->items[i];
    return NULL;
}

/* A reduction a slab can compute: keep_axes true and explicit axes, none
 * of them the slab axis (S's first axis longer than 1) or before it. */
static bool slab_local_reduction(const emily_graph *g, const graph_call *c) {
    if (c->nargs != 2 || c->args[0].kind != EMILY_V_REF || c->args[1].kind != EMILY_V_OPTS) return false;
    const emily_value *keep = opt_of(&c->args[1], "keep_axes"), *axes = opt_of(&c->args[1], "axes");
    if (!keep || keep->kind != EMILY_V_BOOL || !keep->b || !axes || axes->kind != EMILY_V_LIST || axes->n == 0)
        return false;
    const graph_value *in = &g->values[c->args[0].i];
    int a0 = 0;
    while (a0 < in->rank - 1 && in->shape[a0] == 1) a0++;
    for (size_t i = 0; i < axes->n; i++) {
        if (axes->items[i].kind != EMILY_V_INT) return false;
        int64_t ax = axes->items[i].i < 0 ? axes->items[i].i + in->rank : axes->items[i].i;
        if (ax < 0 || ax >= in->rank || ax <= a0) return false;
    }
    return true;
}

/* An input of shape (r, dims) broadcasts to S (rank R) when right-aligned
 * each of its dims is S's or 1. */
static bool broadcasts_to(int r, const int64_t *dims, int R, const int64_t *S) {
    if (r > R) return false;
    for (int i = 0; i < r; i++) {
        int64_t d = dims[i], s = S[i + R - r];
        if (d != s && d != 1) return false;
    }
    return true;
}

static bool fusible_call(const emily_graph *g, const graph_call *c, bool slabs) {
    if (c->folded || c->dropped || c->nout != 1 || c->nargs > FUSE_MAX_ARGS) return false;
    if (is_reduction(c) ? !slabs || !slab_local_reduction(g, c) : !fusible_name(c->callback)) return false;
    const graph_value *out = iter_value(g, c);
    int64_t n;
    if (out->rank < 1 || !emi_shape_size(out->rank, out->shape, &n) || n == 0) return false;
    int refs = 0;
    for (size_t a = 0; a < c->nargs; a++) {
        const emily_value *v = &c->args[a];
        if (v->kind == EMILY_V_REF) {
            const graph_value *in = &g->values[v->i];
            if (!broadcasts_to(in->rank, in->shape, out->rank, out->shape)) return false;
            refs++;
        } else if (v->kind == EMILY_V_TUPLE || v->kind == EMILY_V_LIST || v->kind == EMILY_V_OPTS) {
            for (size_t i = 0; i < v->n; i++)
                if (v->items[i].kind == EMILY_V_REF) return false; /* only top-level tensors are sliced */
        }
    }
    return refs == c->nrefs && refs > 0;
}

static bool same_shape(const graph_value *a, const graph_value *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

/* A call reading a tensor that broadcasts along some axis (not a scalar):
 * alone, it still runs best as a fused program, whose kernel steps
 * through its strides with constant divisors. */
static bool broadcast_input(const emily_graph *g, const graph_call *c) {
    const graph_value *out = iter_value(g, c);
    for (int r = 0; r < c->nrefs; r++) {
        const graph_value *in = &g->values[c->refs[r]->i];
        int64_t n;
        if (!same_shape(in, out) && emi_shape_size(in->rank, in->shape, &n) && n > 1) return true;
    }
    return false;
}

static int32_t find(int32_t *parent, int32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
}

void emi_fused_group_free(fused_group *fg) {
    if (!fg) return;
    free(fg->calls);
    free(fg->inputs);
    free(fg->exits);
    free(fg);
}

int emi_fused_group_inputs(const fused_group *fg, const int32_t **values) {
    if (!fg) return 0;
    *values = fg->inputs;
    return fg->ninputs;
}

static bool in_list(const int32_t *xs, int n, int32_t x) {
    for (int i = 0; i < n; i++)
        if (xs[i] == x) return true;
    return false;
}

/* The group of steps [members] (indices into g->steps, increasing). */
/* A member's value leaves the group (an exit) when it is a graph output
 * or any step outside the run reads it. */
static bool read_outside(const emily_graph *g, int32_t v, int32_t run, const int32_t *run_of) {
    if (g->values[v].is_output) return true;
    for (int32_t st = 0; st < g->nsteps; st++) {
        if (run_of[st] == run) continue;
        const graph_call *c = &g->calls[g->steps[st].call];
        for (int q = 0; q < c->nrefs; q++)
            if (c->refs[q]->i == v) return true;
    }
    return false;
}

static fused_group *make_group(const emily_graph *g, const int32_t *member_calls, int n, int32_t run,
                               const int32_t *run_of) {
    fused_group *fg = calloc(1, sizeof *fg);
    if (!fg) return NULL;
    fg->calls = malloc(sizeof(int32_t) * (size_t)n);
    fg->inputs = malloc(sizeof(int32_t) * (size_t)(n * FUSE_MAX_ARGS));
    fg->exits = malloc(sizeof(int32_t) * (size_t)n);
    if (!fg->calls || !fg->inputs || !fg->exits) {
        emi_fused_group_free(fg);
        return NULL;
    }
    memcpy(fg->calls, member_calls, sizeof(int32_t) * (size_t)n);
    fg->ncalls = n;
    for (int k = 0; k < n; k++) {
        const graph_call *c = &g->calls[fg->calls[k]];
        for (int r = 0; r < c->nrefs; r++) {
            int32_t v = (int32_t)c->refs[r]->i;
            const graph_value *gv = &g->values[v];
            bool member = gv->kind == GV_CALL && in_list(fg->calls, n, gv->node);
            if (!member && !in_list(fg->inputs, fg->ninputs, v)) fg->inputs[fg->ninputs++] = v;
        }
        if (read_outside(g, c->first, run, run_of)) fg->exits[fg->nexits++] = c->first;
    }
    const graph_value *out = iter_value(g, &g->calls[fg->calls[n - 1]]);
    fg->rank = out->rank;
    fg->shape = out->shape;
    fg->axis = 0;
    while (fg->axis < fg->rank - 1 && fg->shape[fg->axis] == 1) fg->axis++;
    int64_t inner = 1;
    for (int i = fg->axis + 1; i < fg->rank; i++) inner *= fg->shape[i];
    fg->rows_per_slab = inner >= SLAB_ELEMENTS ? 1 : SLAB_ELEMENTS / inner;
    fg->slabs = (fg->shape[fg->axis] + fg->rows_per_slab - 1) / fg->rows_per_slab;
    /* one slab large enough to be threaded by the kernels themselves:
     * slabs one after another */
    fg->parallel = inner < SLAB_ELEMENTS * 2 && fg->slabs > 1;
    return fg;
}

emily_status emi_graph_fuse(emily_graph *g) {
    const emily_engine *eng = emi_engine_for(g->device.type);
    /* slabs: the CPU's way of running a group; else the engine's fused
     * programs, element-wise calls only */
    bool slabs = g->device.type == EMILY_DEVICE_CPU;
    if ((!slabs && !(eng && eng->fused)) || g->nsteps < 2) return EMILY_OK;
    int32_t ns = g->nsteps, nv = g->nvalues;
    bool *fus = calloc((size_t)ns + 1, sizeof *fus);
    int32_t *parent = malloc(((size_t)ns + 1) * sizeof *parent);
    int32_t *step_of_call = malloc(((size_t)g->ncalls + 1) * sizeof *step_of_call);
    /* per value: consumers that are not fusible with the producer (or
     * outputs); and the last step reading it */
    int32_t *outside = calloc((size_t)nv + 1, sizeof *outside);
    int32_t *members = malloc(((size_t)ns + 1) * sizeof *members);
    int32_t *size = malloc(((size_t)ns + 1) * sizeof *size);
    int32_t *lastm = malloc(((size_t)ns + 1) * sizeof *lastm);
    int32_t *call_of_step = malloc(((size_t)ns + 1) * sizeof *call_of_step);
    int32_t *run_of = malloc(((size_t)ns + 1) * sizeof *run_of);
    emily_status s = EMILY_OK;
    if (!fus || !parent || !step_of_call || !outside || !members || !size || !lastm || !call_of_step || !run_of) {
        s = emily_error(EMILY_ERR_MEMORY, "graph_compile: out of host memory");
        goto done;
    }
    for (int32_t c = 0; c < g->ncalls; c++) step_of_call[c] = -1;
    for (int32_t st = 0; st < ns; st++) {
        call_of_step[st] = g->steps[st].call;
        step_of_call[g->steps[st].call] = st;
        fus[st] = fusible_call(g, &g->calls[g->steps[st].call], slabs);
        parent[st] = st;
    }
    for (int32_t v = 0; v < nv; v++) {
        if (g->values[v].is_output) outside[v] = 1;
    }
    /* a value joins its producer and consumer when every consumer is a
     * fusible call of the producer's shape */
    for (int32_t st = 0; st < ns; st++) {
        const graph_call *c = &g->calls[g->steps[st].call];
        for (int r = 0; r < c->nrefs; r++) {
            int32_t v = (int32_t)c->refs[r]->i;
            const graph_value *gv = &g->values[v];
            int32_t pst = gv->kind == GV_CALL ? step_of_call[gv->node] : -1;
            if (pst < 0 || !fus[pst] || !fus[st] || !same_shape(iter_value(g, &g->calls[gv->node]), iter_value(g, c)))
                outside[v] = 1;
        }
    }
    for (int32_t st = 0; st < ns; st++) {
        if (!fus[st]) continue;
        const graph_call *c = &g->calls[g->steps[st].call];
        for (int r = 0; r < c->nrefs; r++) {
            int32_t v = (int32_t)c->refs[r]->i;
            const graph_value *gv = &g->values[v];
            if (gv->kind != GV_CALL || outside[v]) continue;
            int32_t pst = step_of_call[gv->node];
            parent[find(parent, pst)] = find(parent, st);
        }
    }
    /* Each connected set of fusible calls is cut, in step order, into
     * runs that can execute as one step at their last member: a run ends
     * before a member when a step between the run's last member and that
     * one (not in the run) reads a value the run makes, or at MAX_GROUP
     * calls. Runs of two calls or more become groups; a run's values read
     * by anything outside it leave it whole (its exits). */
    for (int32_t st = 0; st < ns; st++) {
        run_of[st] = -1;
        lastm[st] = -1;
        size[st] = 0;
    }
    int32_t nruns = 0;
    for (int32_t st = 0; st < ns; st++) {
        if (!fus[st] || run_of[st] >= 0) continue; /* a set is cut once, from its first step */
        int32_t r = find(parent, st), run = -1, prev = -1;
        for (int32_t m = st; m < ns; m++) {
            if (!fus[m] || find(parent, m) != r) continue;
            bool conflict = run < 0 || size[run] >= MAX_GROUP;
            for (int32_t x = prev + 1; !conflict && x < m; x++) {
                if (run_of[x] == run) continue;
                const graph_call *xc = &g->calls[g->steps[x].call];
                for (int q = 0; !conflict && q < xc->nrefs; q++) {
                    const graph_value *gv = &g->values[xc->refs[q]->i];
                    conflict = gv->kind == GV_CALL && step_of_call[gv->node] >= 0 &&
                               run_of[step_of_call[gv->node]] == run;
                }
            }
            if (conflict) run = nruns++;
            run_of[m] = run;
            size[run]++;
            lastm[run] = m;
            prev = m;
        }
    }
    int32_t kept = 0;
    graph_step *steps = g->steps;
    for (int32_t st = 0; st < ns; st++) {
        int32_t run = run_of[st];
        if (run < 0 || (size[run] < 2 && (slabs || !broadcast_input(g, &g->calls[call_of_step[st]])))) {
            steps[kept++] = steps[st];
            continue;
        }
        if (st != lastm[run]) continue; /* runs with its group, at the last member */
        /* the calls, not the steps: steps[] is being compacted in place */
        int n = 0;
        for (int32_t m = 0; m <= st; m++)
            if (run_of[m] == run) members[n++] = call_of_step[m];
        fused_group *fg = make_group(g, members, n, run, run_of);
        if (fg && !slabs && (fg->ninputs > EMI_FUSED_MAX_INPUTS || fg->nexits > EMI_FUSED_MAX_EXITS)) {
            /* more than a fused program takes: the calls run alone */
            emi_fused_group_free(fg);
            for (int32_t m = 0; m <= st; m++)
                if (run_of[m] == run) steps[kept++] = (graph_step){.call = call_of_step[m]};
            continue;
        }
        if (!fg) {
            s = emily_error(EMILY_ERR_MEMORY, "graph_compile: out of host memory");
            goto done;
        }
        steps[kept] = steps[st];
        steps[kept].group = fg;
        kept++;
        g->stats.fused_groups++;
        g->stats.fused_calls += n;
    }
    g->nsteps = kept;
done:
    free(fus);
    free(parent);
    free(step_of_call);
    free(outside);
    free(members);
    free(size);
    free(lastm);
    free(call_of_step);
    free(run_of);
    return s;
}

/* ---- running ------------------------------------------------------------ */

typedef struct slab_job {
    emily_graph *g;
    const fused_group *fg;
    emily_tensor **vals; /* the run's values (inputs read, exits set) */
    atomic_int status;   /* the first failure's, and its message */
    char msg[512];
} slab_job;

/* A view of t (an input broadcasting to S) restricted to rows [r0, r1)
 * of S's slab axis, or t itself where that axis is broadcast. */
static emily_status input_slab(const fused_group *fg, emily_tensor *t, int64_t r0, int64_t r1, emily_tensor **out) {
    int ia = fg->axis - (fg->rank - t->rank);
    if (ia < 0 || t->shape[ia] == 1 || (r0 == 0 && r1 == t->shape[ia])) {
        emily_tensor_retain(t);
        *out = t;
        return EMILY_OK;
    }
    int64_t shape[EMILY_MAX_RANK];
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
    shape[ia] = r1 - r0;
    return emi_tensor_view(t, t->rank, shape, t->strides, t->offset + r0 * t->strides[ia], out);
}

static emily_status run_slab(slab_job *j, int64_t slab) {
    const fused_group *fg = j->fg;
    emily_graph *g = j->g;
    int64_t r0 = slab * fg->rows_per_slab;
    int64_t r1 = r0 + fg->rows_per_slab < fg->shape[fg->axis] ? r0 + fg->rows_per_slab : fg->shape[fg->axis];
    emily_tensor *local[MAX_GROUP + 1] = {0}; /* member results for this slab */
    emily_tensor *held[MAX_GROUP * FUSE_MAX_ARGS] = {0};
    int nheld = 0;
    emily_status s = EMILY_OK;
    int64_t shape[EMILY_MAX_RANK];
    for (int k = 0; k < fg->ncalls && !s; k++) {
        const graph_call *c = &g->calls[fg->calls[k]];
        emily_value args[FUSE_MAX_ARGS];
        memcpy(args, c->args, sizeof(emily_value) * c->nargs);
        for (size_t a = 0; a < c->nargs && !s; a++) {
            if (args[a].kind != EMILY_V_REF) continue;
            int32_t v = (int32_t)args[a].i;
            const graph_value *gv = &g->values[v];
            int m = -1;
            for (int q = 0; gv->kind == GV_CALL && q < k; q++)
                if (fg->calls[q] == gv->node) m = q;
            emily_tensor *t;
            if (m >= 0) t = local[m];
            else {
                s = input_slab(fg, j->vals[v], r0, r1, &t);
                if (s) break;
                held[nheld++] = t;
            }
            args[a].kind = EMILY_V_TENSOR;
            args[a].tensor = t;
        }
        if (s) break;
        const graph_value *ov = &g->values[c->first];
        memcpy(shape, ov->shape, sizeof(int64_t) * (size_t)ov->rank);
        shape[fg->axis] = r1 - r0;
        emily_value tmpl = {.kind = EMILY_V_TEMPLATE, .dtype = ov->dtype, .rank = ov->rank, .shape = shape};
        emily_dispatch_result res = {0};
        s = emi_dispatch_entry(c->entry, g->device, &tmpl, args, c->nargs, EMILY_DISPATCH_RUN, &res);
        if (!s) local[k] = res.tensors[0];
    }
    /* the values leaving the group: this slab into their whole tensors */
    const emily_engine *e = emi_engine_for(g->device.type);
    for (int x = 0; x < fg->nexits && !s; x++) {
        int m = 0;
        while (g->calls[fg->calls[m]].first != fg->exits[x]) m++;
        emily_tensor *whole = j->vals[fg->exits[x]], *dst = NULL;
        s = input_slab(fg, whole, r0, r1, &dst);
        if (!s) s = e->copy->copy(dst, local[m]);
        emily_tensor_release(dst);
    }
    for (int k = 0; k < fg->ncalls; k++) emily_tensor_release(local[k]);
    for (int h = 0; h < nheld; h++) emily_tensor_release(held[h]);
    return s;
}

static void slab_task(void *ctx, int64_t slab) {
    slab_job *j = ctx;
    if (atomic_load(&j->status)) return;
    emily_status s = run_slab(j, slab);
    if (s) {
        int expected = 0;
        /* the message is the failing thread's own (emily_last_error) */
        if (atomic_compare_exchange_strong(&j->status, &expected, -1)) {
            snprintf(j->msg, sizeof j->msg, "%s", emily_last_error());
            atomic_store(&j->status, (int)s);
        }
    }
}

emily_status emi_fused_group_run(emily_graph *g, const fused_group *fg, emily_tensor **vals) {
    if (g->device.type != EMILY_DEVICE_CPU) return emi_fused_group_run_program(g, fg, vals);
    emily_status s = EMILY_OK;
    for (int x = 0; x < fg->nexits && !s; x++) {
        const graph_value *v = &g->values[fg->exits[x]];
        s = emily_empty(g->device, v->dtype, v->rank, v->shape, &vals[fg->exits[x]]);
    }
    if (s) return s;
    slab_job j = {.g = g, .fg = fg, .vals = vals};
    atomic_init(&j.status, 0);
    if (fg->parallel) emi_cpu_parallel(fg->slabs, slab_task, &j);
    else
        for (int64_t sl = 0; sl < fg->slabs; sl++) slab_task(&j, sl);
    s = (emily_status)atomic_load(&j.status);
    if (s) return emily_error(s, "%s", j.msg);
    return EMILY_OK;
}
