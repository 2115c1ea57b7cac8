/* Engine graphs: compiling (checks, constants on the device, constant
 * folding, dead calls, fusion, release points) and running. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/tensor_impl.h"
#include "graph/graph_impl.h"
#include "ops/common.h"

/* A folded call's outputs stay in the graph for its lifetime; above this
 * size (a broadcast of a constant to a large shape, say) the call runs at
 * each run instead. */
#define FOLD_MAX_BYTES ((int64_t)16 << 20)

/* Points each EMILY_V_REF of a call at its tensor for one dispatch. */
static void bind_refs(const graph_call *c, emily_tensor *const *vals) {
    for (int r = 0; r < c->nrefs; r++) {
        emily_value *slot = c->refs[r];
        slot->kind = EMILY_V_TENSOR;
        slot->tensor = vals[slot->i];
    }
}

static void unbind_refs(const graph_call *c) {
    for (int r = 0; r < c->nrefs; r++) {
        c->refs[r]->kind = EMILY_V_REF;
        c->refs[r]->tensor = NULL;
    }
}

/* Runs one call with its arguments bound; its outputs go to vals. */
emily_status emi_graph_run_call(emily_graph *g, const graph_call *c, emily_tensor **vals) {
    emily_dispatch_result res = {0};
    bind_refs(c, vals);
    emily_status s = emi_dispatch_entry(c->entry, g->device, &c->out, c->args, c->nargs, EMILY_DISPATCH_RUN, &res);
    unbind_refs(c);
    if (s) return s;
    for (int k = 0; k < res.n; k++) vals[c->first + k] = res.tensors[k];
    return EMILY_OK;
}

/* Nx's while: the condition's scalar, read on the host, is true when it
 * is not zero (a NaN is true, as Nx.to_number(pred) != 0 is). */
static emily_status truthy(const emily_tensor *pred, bool *out) {
    emily_tensor *wide = NULL;
    double v = 0;
    emily_status s = emily_as_type(pred, EMILY_F64, &wide);
    if (!s) s = emily_to_binary(wide, &v, sizeof v);
    emily_tensor_release(wide);
    *out = v != 0;
    return s;
}

/* 0: loops run until their condition says stop, as Nx's while does. A
 * harness that runs arbitrary graphs (tests/fuzz/fuzz_graph.c) sets a
 * cap so that a loop whose condition never turns false fails instead of
 * hanging; set once, before any run. */
int64_t emi_graph_while_limit = 0;

emily_status emi_graph_run_while(emily_graph *g, const graph_call *c, emily_tensor **vals) {
    (void)g;
    int64_t iterations = 0;
    size_t n = c->nargs;
    emily_tensor **state = malloc(sizeof(emily_tensor *) * n), **next = malloc(sizeof(emily_tensor *) * n);
    if (!state || !next) {
        free(state);
        free(next);
        return emily_error(EMILY_ERR_MEMORY, "while: out of host memory");
    }
    for (size_t i = 0; i < n; i++) {
        state[i] = vals[c->args[i].i];
        emily_tensor_retain(state[i]);
    }
    emily_status s = EMILY_OK;
    for (;;) {
        emily_tensor *pred = NULL;
        bool go = false;
        if ((s = emily_graph_run(c->cond, state, n, &pred, 1))) break;
        s = truthy(pred, &go);
        emily_tensor_release(pred);
        if (s || !go) break;
        if (emi_graph_while_limit > 0 && ++iterations > emi_graph_while_limit) {
            s = emily_error(EMILY_ERR_ARGUMENT, "while: more than %lld iterations (emi_graph_while_limit)",
                            (long long)emi_graph_while_limit);
            break;
        }
        if ((s = emily_graph_run(c->body, state, n, next, n))) break;
        for (size_t i = 0; i < n; i++) {
            emily_tensor_release(state[i]);
            state[i] = next[i];
        }
    }
    if (s) {
        for (size_t i = 0; i < n; i++) emily_tensor_release(state[i]);
    } else {
        for (size_t i = 0; i < n; i++) vals[c->first + (int32_t)i] = state[i];
    }
    free(state);
    free(next);
    return s;
}

emily_status emi_graph_run_cond(emily_graph *g, const graph_call *c, emily_tensor **vals) {
    (void)g;
    int b = 0;
    emily_status s = EMILY_OK;
    for (; b < c->nclauses; b++) {
        bool go = false;
        if ((s = truthy(vals[c->args[b].i], &go))) return s;
        if (go) break;
    }
    size_t off = (size_t)c->nclauses;
    for (int k = 0; k < b; k++) off += c->ncaptured[k];
    size_t n = c->ncaptured[b];
    emily_tensor **params = malloc(sizeof(emily_tensor *) * (n + 1));
    emily_tensor **outs = malloc(sizeof(emily_tensor *) * ((size_t)c->nout + 1));
    if (!params || !outs) {
        free(params);
        free(outs);
        return emily_error(EMILY_ERR_MEMORY, "cond: out of host memory");
    }
    for (size_t i = 0; i < n; i++) params[i] = vals[c->args[off + i].i];
    s = emily_graph_run(c->branches[b], params, n, outs, (size_t)c->nout);
    if (!s)
        for (int k = 0; k < c->nout; k++) vals[c->first + k] = outs[k];
    free(params);
    free(outs);
    return s;
}

static int64_t spec_bytes(const graph_value *v) {
    int64_t n;
    if (!emi_shape_size(v->rank, v->shape, &n)) return INT64_MAX;
    for (int i = 0; i < v->rank; i++)
        if (v->shape[i] == 0) return 0;
    return n * (int64_t)emily_dtype_size(v->dtype);
}

/* Marks every value an output depends on. */
static void mark_needed(emily_graph *g) {
    for (int32_t i = 0; i < g->noutputs; i++) {
        g->values[g->outputs[i]].needed = true;
        g->values[g->outputs[i]].is_output = true;
    }
    for (int32_t ci = g->ncalls - 1; ci >= 0; ci--) {
        graph_call *c = &g->calls[ci];
        bool needed = false;
        for (int k = 0; k < c->nout; k++) needed |= g->values[c->first + k].needed;
        if (!needed || c->folded) continue;
        for (int r = 0; r < c->nrefs; r++) g->values[c->refs[r]->i].needed = true;
    }
}

/* A folded one-element constant on a device: its bytes read back now
 * (compile time), so that the op layer sees its value as it sees that
 * of a constant made from host bytes (emi_buffer_mirror). */
static void mirror_scalar(emily_tensor *t) {
    unsigned char bytes[16];
    size_t n = emily_tensor_nbytes(t);
    /* (a sub-byte type's binary form is not its bytes in memory) */
    if (!t || emily_dtype_bits(t->dtype) < 8 || t->size != 1 || t->offset != 0 || n > sizeof bytes ||
        t->buffer->nbytes != n || emi_engine_for(t->buffer->device.type)->host_addressable)
        return;
    if (!emily_to_binary(t, bytes, n)) emi_buffer_mirror(t->buffer, bytes, n);
}

static emily_status fold_constants(emily_graph *g) {
    emily_tensor **vals = calloc((size_t)g->nvalues + 1, sizeof *vals);
    if (!vals) return emily_error(EMILY_ERR_MEMORY, "graph_compile: out of host memory");
    for (int32_t i = 0; i < g->nvalues; i++)
        if (g->values[i].kind == GV_CONST) vals[i] = g->values[i].tensor;
    emily_status s = EMILY_OK;
    for (int32_t ci = 0; ci < g->ncalls && !s; ci++) {
        graph_call *c = &g->calls[ci];
        bool all_const = true;
        for (int r = 0; all_const && r < c->nrefs; r++) all_const = g->values[c->refs[r]->i].kind == GV_CONST;
        int64_t bytes = 0;
        for (int k = 0; k < c->nout; k++) {
            int64_t b = spec_bytes(&g->values[c->first + k]);
            bytes = b > INT64_MAX - bytes ? INT64_MAX : bytes + b;
        }
        if (!all_const || bytes > FOLD_MAX_BYTES || !c->entry) continue; /* loops run at each run */
        /* a call that fails here fails at every run: say so now */
        if ((s = emi_graph_run_call(g, c, vals))) break;
        c->folded = true;
        g->stats.folded++;
        for (int k = 0; k < c->nout; k++) {
            graph_value *v = &g->values[c->first + k];
            v->kind = GV_CONST;
            v->folded = true;
            v->tensor = vals[c->first + k];
            mirror_scalar(v->tensor);
        }
    }
    free(vals);
    return s;
}

/* The value of a one-element constant as f64 (false if v is not one). */
static bool constant_scalar(const emily_graph *g, int32_t id, double *out) {
    const graph_value *v = &g->values[id];
    if (v->kind != GV_CONST || emily_tensor_size(v->tensor) != 1 || emily_dtype_is_complex(v->dtype)) return false;
    emily_tensor *wide = NULL;
    bool ok = !emily_as_type(v->tensor, EMILY_F64, &wide) && !emily_to_binary(wide, out, sizeof *out);
    emily_tensor_release(wide);
    return ok;
}

/* Algebraic rewrites that keep every result bit: pow(x, 2) of an f32,
 * f16 or bf16 x is x * x. (The reference takes pow in f64: x^2 of such
 * an x is exact there, and rounded once to x's type it is the correctly
 * rounded product that multiply computes, NaN, infinities, signed zeros,
 * overflow and subnormals included. Not for f64, where libm's pow is not
 * always correctly rounded.) 3-10x faster than the f64 pow. */
static emily_status simplify(emily_graph *g) {
    const emily_callback_entry *multiply = emi_callback_find("multiply");
    for (int32_t ci = 0; ci < g->ncalls; ci++) {
        graph_call *c = &g->calls[ci];
        if (c->folded || strcmp(c->callback, "pow") != 0 || c->nargs != 2 || c->args[0].kind != EMILY_V_REF ||
            c->args[1].kind != EMILY_V_REF)
            continue;
        const graph_value *x = &g->values[c->args[0].i], *out = &g->values[c->first];
        double e;
        bool narrow_float = out->dtype == EMILY_F32 || out->dtype == EMILY_F16 || out->dtype == EMILY_BF16;
        bool same = narrow_float && x->dtype == out->dtype && x->rank == out->rank;
        for (int d = 0; same && d < x->rank; d++) same = x->shape[d] == out->shape[d];
        if (!same || !constant_scalar(g, (int32_t)c->args[1].i, &e) || e != 2.0) continue;
        c->callback = "multiply";
        c->entry = multiply;
        c->args[1] = c->args[0];
        emily_status s = emi_graph_collect_refs(g, c);
        if (s) return s;
        g->stats.rewritten++;
    }
    return EMILY_OK;
}

/* Where each value is used last (in step order) and which values each
 * step releases afterwards. */
static emily_status plan_releases(emily_graph *g) {
    int32_t *last = malloc(((size_t)g->nvalues + 1) * sizeof *last);
    int32_t *count = calloc((size_t)g->nsteps + 1, sizeof *count);
    if (!last || !count) {
        free(last);
        free(count);
        return emily_error(EMILY_ERR_MEMORY, "graph_compile: out of host memory");
    }
    for (int32_t i = 0; i < g->nvalues; i++) last[i] = -1;
    for (int32_t st = 0; st < g->nsteps; st++) {
        graph_step *step = &g->steps[st];
        const graph_call *c = &g->calls[step->call];
        /* a call's outputs unused later are released right after it */
        for (int k = 0; k < c->nout; k++) last[c->first + k] = st;
        if (step->group) continue; /* fuse.c recorded the group's inputs below */
        for (int r = 0; r < c->nrefs; r++) last[c->refs[r]->i] = st;
    }
    for (int32_t st = 0; st < g->nsteps; st++) {
        const int32_t *in;
        int nin = emi_fused_group_inputs(g->steps[st].group, &in);
        for (int i = 0; i < nin; i++)
            if (last[in[i]] < st) last[in[i]] = st;
    }
    for (int32_t i = 0; i < g->nvalues; i++) {
        const graph_value *v = &g->values[i];
        if (v->kind != GV_CALL || v->is_output || last[i] < 0) last[i] = -1;
        if (last[i] >= 0) count[last[i]]++;
    }
    emily_status s = EMILY_OK;
    for (int32_t st = 0; st < g->nsteps && !s; st++) {
        g->steps[st].release = emi_graph_alloc(g, sizeof(int32_t) * ((size_t)count[st] + 1));
        if (!g->steps[st].release) s = EMILY_ERR_MEMORY;
    }
    for (int32_t i = 0; i < g->nvalues && !s; i++) {
        g->values[i].last_use = last[i];
        if (last[i] >= 0) {
            graph_step *step = &g->steps[last[i]];
            step->release[step->nrelease++] = i;
        }
    }
    free(last);
    free(count);
    return s;
}

static void add_pattern_stats(emily_graph_stats *to, const emily_graph *from) {
    if (!from) return;
    to->patterns += from->stats.patterns;
    to->pattern_layer_norm += from->stats.pattern_layer_norm;
    to->pattern_rms_norm += from->stats.pattern_rms_norm;
    to->pattern_softmax += from->stats.pattern_softmax;
    to->pattern_attention += from->stats.pattern_attention;
}

emily_status emily_graph_compile(emily_graph *g, emily_device device, const emily_graph_options *opts) {
    if (!g) return emily_error(EMILY_ERR_ARGUMENT, "graph_compile: NULL graph");
    if (g->compiled) return emily_error(EMILY_ERR_ARGUMENT, "graph_compile: the graph is already compiled");
    emily_status s = emily_device_check(device);
    if (s) return s;
    if (!g->outputs && g->noutputs == 0)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_compile: the graph has no outputs (emily_graph_set_outputs)");
    bool optimize = !(opts && opts->no_optimize);
    g->device = device;
    memset(&g->stats, 0, sizeof g->stats);
    /* constants live on the graph's device */
    for (int32_t i = 0; i < g->nvalues; i++) {
        graph_value *v = &g->values[i];
        if (v->kind != GV_CONST || emily_device_equal(emily_tensor_device(v->tensor), device)) continue;
        emily_tensor *moved;
        if ((s = emily_to_device(v->tensor, device, &moved))) return s;
        emily_tensor_release(v->tensor);
        v->tensor = moved;
        v->shape = moved->shape;
    }
    /* loop conditions and bodies, for the same device */
    for (int32_t ci = 0; ci < g->ncalls; ci++) {
        graph_call *c = &g->calls[ci];
        if (c->cond &&
            ((s = emily_graph_compile(c->cond, device, opts)) || (s = emily_graph_compile(c->body, device, opts))))
            return s;
        for (int b = 0; c->branches && b <= c->nclauses; b++)
            if ((s = emily_graph_compile(c->branches[b], device, opts))) return s;
    }
    for (int32_t i = 0; i < g->nvalues; i++) g->stats.constants += g->values[i].kind == GV_CONST;
    g->stats.params = g->nparams;
    g->stats.calls = g->ncalls;
    g->stats.outputs = g->noutputs;
    if (optimize && ((s = fold_constants(g)) || (s = simplify(g)) || (s = emi_graph_patterns(g, opts)))) return s;
    /* the substitutions in the loop bodies and branches count here too */
    for (int32_t ci = 0; ci < g->ncalls; ci++) {
        const graph_call *c = &g->calls[ci];
        add_pattern_stats(&g->stats, c->cond);
        add_pattern_stats(&g->stats, c->body);
        for (int b = 0; c->branches && b <= c->nclauses; b++) add_pattern_stats(&g->stats, c->branches[b]);
    }
    mark_needed(g);
    g->steps = calloc((size_t)g->ncalls + 1, sizeof *g->steps);
    if (!g->steps) return emily_error(EMILY_ERR_MEMORY, "graph_compile: out of host memory");
    g->nsteps = 0;
    for (int32_t ci = 0; ci < g->ncalls; ci++) {
        graph_call *c = &g->calls[ci];
        if (c->folded) continue;
        bool needed = !optimize;
        for (int k = 0; k < c->nout; k++) needed |= g->values[c->first + k].needed;
        if (!needed) {
            c->dropped = true;
            g->stats.dropped++;
            continue;
        }
        g->steps[g->nsteps++] = (graph_step){.call = ci};
    }
    if (optimize && (s = emi_graph_fuse(g))) return s;
    if ((s = plan_releases(g))) return s;
    g->stats.steps = g->nsteps;
    if ((s = emi_graph_replay_setup(g, opts))) return s;
    g->compiled = true;
    return EMILY_OK;
}

/* EMILY_GRAPH_PROFILE=1: after each run, the time spent per callback on
 * stderr (a tuning aid; the steps are timed one by one, the device
 * synchronized around each, so GPU times are the steps' own). */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct profile_row {
    const char *name;
    double seconds;
    int64_t count, elements;
} profile_row;

static int by_time(const void *a, const void *b) {
    double x = ((const profile_row *)a)->seconds, y = ((const profile_row *)b)->seconds;
    return (x < y) - (x > y);
}

static void print_profile(emily_graph *g, const double *step_s, bool by_shape) {
    profile_row *rows = calloc((size_t)g->nsteps + 1, sizeof *rows);
    char(*names)[96] = calloc((size_t)g->nsteps + 1, sizeof *names);
    if (!rows || !names) {
        free(rows);
        free(names);
        return;
    }
    int n = 0;
    double total = 0;
    for (int32_t st = 0; st < g->nsteps; st++) {
        const graph_call *c = &g->calls[g->steps[st].call];
        const char *name = g->steps[st].group ? "(fused group)" : c->callback;
        if (by_shape) { /* EMILY_GRAPH_PROFILE=2: one row per callback and output shape */
            const graph_value *ov = &g->values[c->first];
            char shp[80];
            snprintf(names[st], sizeof names[st], "%s %s%s", name, emily_dtype_name(ov->dtype),
                     emi_shape_str(ov->rank, ov->shape, shp, sizeof shp));
            name = names[st];
        }
        int r = 0;
        while (r < n && strcmp(rows[r].name, name) != 0) r++;
        if (r == n) rows[n++].name = name;
        rows[r].seconds += step_s[st];
        rows[r].count++;
        int64_t el;
        const graph_value *v = &g->values[c->first];
        if (emi_shape_size(v->rank, v->shape, &el)) rows[r].elements += el;
        total += step_s[st];
    }
    qsort(rows, (size_t)n, sizeof *rows, by_time);
    fprintf(stderr, "emily graph run: %d steps, %.3f ms\n", (int)g->nsteps, total * 1e3);
    for (int r = 0; r < n; r++)
        fprintf(stderr, "  %-40s %6lld calls %9.3f ms %5.1f%%  %lld output elements\n", rows[r].name,
                (long long)rows[r].count, rows[r].seconds * 1e3, total > 0 ? 100 * rows[r].seconds / total : 0,
                (long long)rows[r].elements);
    free(rows);
    free(names);
}

emily_status emily_graph_run(emily_graph *g, emily_tensor *const *params, size_t nparams, emily_tensor **outputs,
                             size_t noutputs) {
    if (!g) return emily_error(EMILY_ERR_ARGUMENT, "graph_run: NULL graph");
    if (!g->compiled) return emily_error(EMILY_ERR_ARGUMENT, "graph_run: the graph is not compiled");
    if (nparams != (size_t)g->nparams)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_run: %zu parameters given, the graph has %d", nparams,
                           (int)g->nparams);
    if (noutputs != (size_t)g->noutputs)
        return emily_error(EMILY_ERR_ARGUMENT, "graph_run: room for %zu outputs, the graph has %d", noutputs,
                           (int)g->noutputs);
    if ((nparams && !params) || (noutputs && !outputs))
        return emily_error(EMILY_ERR_ARGUMENT, "graph_run: NULL parameters or outputs");
    for (size_t i = 0; i < noutputs; i++) outputs[i] = NULL;
    for (size_t i = 0; i < nparams; i++) {
        const graph_value *v = &g->values[g->params[i]];
        const emily_tensor *t = params[i];
        /* narrow types (f8, s4, ...) are welcome: every call runs through
         * the dispatcher, which computes them in their compute types (or,
         * for a dot of two 8-bit floats, in emily_dot_fp8), and fused
         * groups leave them out (fuse_lower.c) */
        if (!t) return emily_error(EMILY_ERR_ARGUMENT, "graph_run: parameter %zu is NULL", i);
        bool same = t->dtype == v->dtype && t->rank == v->rank;
        for (int d = 0; same && d < v->rank; d++) same = t->shape[d] == v->shape[d];
        if (!same) {
            char a[256], b[256];
            return emily_error(EMILY_ERR_SHAPE, "graph_run: parameter %zu is %s%s, the graph expects %s%s", i,
                               emily_dtype_name(t->dtype), emi_shape_str(t->rank, t->shape, a, sizeof a),
                               emily_dtype_name(v->dtype), emi_shape_str(v->rank, v->shape, b, sizeof b));
        }
        if (!emily_device_equal(emily_tensor_device(t), g->device)) {
            char a[32], b[32];
            emily_device_format(emily_tensor_device(t), a, sizeof a);
            emily_device_format(g->device, b, sizeof b);
            return emily_error(EMILY_ERR_DEVICE, "graph_run: parameter %zu is on %s, the graph runs on %s", i, a, b);
        }
    }
    const char *prof_env = getenv("EMILY_GRAPH_PROFILE");
    double *step_s = prof_env && (prof_env[0] == '1' || prof_env[0] == '2')
                         ? calloc((size_t)g->nsteps + 1, sizeof *step_s)
                         : NULL;
    pthread_mutex_lock(&g->run_lock);
    bool replayed = false;
    emily_status s = step_s ? EMILY_OK : emi_graph_replay_run(g, params, outputs, &replayed);
    if (!s && !replayed) s = emi_graph_run_calls(g, params, outputs, step_s);
    if (!s && step_s) print_profile(g, step_s, prof_env[0] == '2');
    pthread_mutex_unlock(&g->run_lock);
    free(step_s);
    return s;
}

emily_status emi_graph_run_calls(emily_graph *g, emily_tensor *const *params, emily_tensor **outputs, double *step_s) {
    emily_tensor **vals = calloc((size_t)g->nvalues + 1, sizeof *vals);
    if (!vals) return emily_error(EMILY_ERR_MEMORY, "graph_run: out of host memory");
    for (int32_t i = 0; i < g->nvalues; i++)
        if (g->values[i].kind == GV_CONST) vals[i] = g->values[i].tensor;
    for (int32_t i = 0; i < g->nparams; i++) vals[g->params[i]] = params[i];

    emily_status s = EMILY_OK;
    int64_t live = 0, peak = 0;
    for (int32_t st = 0; st < g->nsteps && !s; st++) {
        const graph_step *step = &g->steps[st];
        const graph_call *c = &g->calls[step->call];
        double t0 = 0;
        if (step_s) emily_synchronize(g->device); /* device work of earlier steps stays out */
        if (step_s) t0 = now_s();
        s = step->group   ? emi_fused_group_run(g, step->group, vals)
            : c->cond     ? emi_graph_run_while(g, c, vals)
            : c->branches ? emi_graph_run_cond(g, c, vals)
                          : emi_graph_run_call(g, c, vals);
        if (step_s && !s) s = emily_synchronize(g->device); /* this step's device work */
        if (step_s) step_s[st] = now_s() - t0;
        if (s) break;
        for (int k = 0; k < c->nout; k++)
            if (vals[c->first + k]) live += (int64_t)emily_tensor_nbytes(vals[c->first + k]);
        if (live > peak) peak = live;
        for (int r = 0; r < step->nrelease; r++) {
            int32_t id = step->release[r];
            if (vals[id]) live -= (int64_t)emily_tensor_nbytes(vals[id]);
            emily_tensor_release(vals[id]);
            vals[id] = NULL;
        }
    }
    if (!s) g->stats.peak_bytes = peak;
    if (!s)
        for (int32_t k = 0; k < g->noutputs; k++) {
            outputs[k] = vals[g->outputs[k]];
            emily_tensor_retain(outputs[k]);
        }
    /* intermediates still held: the outputs (retained above for the
     * caller) and, after an error, whatever was computed */
    for (int32_t i = 0; i < g->nvalues; i++)
        if (g->values[i].kind == GV_CALL) emily_tensor_release(vals[i]);
    free(vals);
    return s;
}
