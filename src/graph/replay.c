/* Engine graphs: replaying a run on devices that can record one (the
 * engine's replay ops, core/engine.h; on CUDA a CUDA graph).
 *
 * The first run of a compiled graph runs its calls (it creates what they
 * keep: library handles, plans, chosen algorithms). The second records
 * them: each parameter is copied into a buffer of the recording (its
 * slot), the calls run on the slots with every allocation coming from the
 * recording's own memory, and what they queue is recorded instead of run.
 * That run and every later one is a replay: the parameters that are not
 * the tensors the slots already hold are copied in, the recording is
 * launched, and the outputs are copied out of the recording's memory into
 * new tensors (the next replay rewrites it). Tensors are immutable, so a
 * slot that holds a copy of the very tensor given (a model's weights, run
 * after run) is not copied again; the slot keeps that tensor retained so
 * that its address cannot be reused meanwhile.
 *
 * The results are the calls' own: the same kernels on the same data.
 * Graphs whose runs decide on the host (while, cond, an op that reads a
 * value back such as a slice at a tensor offset) cannot be recorded: the
 * recording fails, the reason is kept (EMILY_GRAPH_TRACE=1 prints it)
 * and the graph runs call by call. A check the recording deferred (an
 * index out of range) that fails in a replay makes that run go call by
 * call too, which reports the error as the calls do. EMILY_GRAPH_REPLAY=0 or emily_graph_options.no_replay
 * turns replays off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"
#include "core/tensor_impl.h"
#include "graph/graph_impl.h"

enum { REPLAY_COLD, REPLAY_WARM, REPLAY_READY, REPLAY_OFF };

struct graph_replay {
    int state;
    const emily_engine *engine;
    void *rec;
    emily_tensor **slots;   /* nparams: the recording's parameter buffers */
    emily_tensor **sources; /* nparams: the tensors the slots hold copies of (retained) */
    emily_tensor **results; /* noutputs: the recorded outputs, in its memory */
    char why[200];          /* REPLAY_OFF: the reason */
};

static void drop_tensors(emily_tensor **ts, int n) {
    for (int i = 0; ts && i < n; i++) {
        emily_tensor_release(ts[i]);
        ts[i] = NULL;
    }
}

/* Frees the recording and its tensors (not the struct). */
static void drop_recording(emily_graph *g, graph_replay *r) {
    drop_tensors(r->results, g->noutputs);
    drop_tensors(r->slots, g->nparams);
    drop_tensors(r->sources, g->nparams);
    if (r->rec) r->engine->replay->free(g->device.index, r->rec);
    r->rec = NULL;
}

void emi_graph_replay_free(emily_graph *g) {
    graph_replay *r = g->replay;
    if (!r) return;
    drop_recording(g, r);
    free(r->slots);
    free(r->sources);
    free(r->results);
    free(r);
    g->replay = NULL;
}

static bool replay_env_off(void) {
    const char *v = getenv("EMILY_GRAPH_REPLAY");
    return v && strcmp(v, "0") == 0;
}

/* Whether the graph's steps are all work the device queues: calls and
 * fused programs, no while or cond (they decide on the host). */
static bool steps_recordable(const emily_graph *g, char *why, size_t n) {
    for (int32_t st = 0; st < g->nsteps; st++) {
        const graph_call *c = &g->calls[g->steps[st].call];
        if (c->cond || c->branches) {
            snprintf(why, n, "a %s decides on the host", c->cond ? "while loop" : "cond");
            return false;
        }
        if (g->steps[st].group && g->device.type == EMILY_DEVICE_CPU) {
            snprintf(why, n, "fused groups run on the host's pool");
            return false;
        }
    }
    return true;
}

emily_status emi_graph_replay_setup(emily_graph *g, const emily_graph_options *opts) {
    emi_graph_replay_free(g);
    const emily_engine *e = emi_engine_for(g->device.type);
    if (!e || !e->replay) return EMILY_OK; /* the device cannot: no state at all */
    graph_replay *r = calloc(1, sizeof *r);
    if (!r) return emily_error(EMILY_ERR_MEMORY, "graph_compile: out of host memory");
    r->engine = e;
    r->slots = calloc((size_t)g->nparams + 1, sizeof *r->slots);
    r->sources = calloc((size_t)g->nparams + 1, sizeof *r->sources);
    r->results = calloc((size_t)g->noutputs + 1, sizeof *r->results);
    g->replay = r;
    if (!r->slots || !r->sources || !r->results) {
        emi_graph_replay_free(g);
        return emily_error(EMILY_ERR_MEMORY, "graph_compile: out of host memory");
    }
    if (opts && opts->no_replay) {
        r->state = REPLAY_OFF;
        snprintf(r->why, sizeof r->why, "turned off (no_replay)");
    } else if (replay_env_off()) {
        r->state = REPLAY_OFF;
        snprintf(r->why, sizeof r->why, "turned off (EMILY_GRAPH_REPLAY=0)");
    } else if (!steps_recordable(g, r->why, sizeof r->why)) {
        r->state = REPLAY_OFF;
    }
    return EMILY_OK;
}

static bool tracing(void) {
    const char *t = getenv("EMILY_GRAPH_TRACE");
    return t && t[0] == '1';
}

static void trace_off(const emily_graph *g, const graph_replay *r) {
    if (tracing()) fprintf(stderr, "emily graph: %d steps run call by call: %s\n", (int)g->nsteps, r->why);
}

/* Copies params[i] into slot i unless the slot holds it already. */
static emily_status fill_slot(graph_replay *r, int i, emily_tensor *param) {
    if (r->sources[i] == param) return EMILY_OK;
    if (emily_tensor_size(param)) {
        emily_status s = r->engine->copy->copy(r->slots[i], param);
        if (s) return s;
    }
    emily_tensor_retain(param);
    emily_tensor_release(r->sources[i]);
    r->sources[i] = param;
    return EMILY_OK;
}

static emily_status record(emily_graph *g, graph_replay *r, emily_tensor *const *params) {
    const struct emily_replay_ops *ops = r->engine->replay;
    int dev = g->device.index;
    emily_status s = ops->begin(dev, &r->rec);
    if (s) return s;
    for (int32_t i = 0; i < g->nparams && !s; i++) {
        const graph_value *v = &g->values[g->params[i]];
        s = emily_empty(g->device, v->dtype, v->rank, v->shape, &r->slots[i]);
        if (!s) s = fill_slot(r, i, params[i]);
    }
    if (!s) s = ops->capture(dev, r->rec);
    if (!s) s = emi_graph_run_calls(g, r->slots, r->results, NULL);
    emily_status ended = ops->end(dev, r->rec, s == EMILY_OK);
    return s ? s : ended;
}

emily_status emi_graph_replay_run(emily_graph *g, emily_tensor *const *params, emily_tensor **outputs, bool *done) {
    *done = false;
    graph_replay *r = g->replay;
    if (!r || r->state == REPLAY_OFF) return EMILY_OK;
    if (r->state == REPLAY_COLD) { /* this run makes what the calls keep */
        r->state = REPLAY_WARM;
        return EMILY_OK;
    }
    if (r->state == REPLAY_WARM) {
        emily_status s = record(g, r, params);
        if (s) {
            snprintf(r->why, sizeof r->why, "recording failed: %s", emily_last_error());
            drop_recording(g, r);
            r->state = REPLAY_OFF;
            trace_off(g, r);
            return EMILY_OK;
        }
        r->state = REPLAY_READY;
        g->stats.replay_bytes = (int64_t)r->engine->replay->bytes(r->rec);
        if (tracing())
            fprintf(stderr, "emily graph: %d steps recorded for replay (%lld bytes of device memory)\n", (int)g->nsteps,
                    (long long)g->stats.replay_bytes);
    }
    const struct emily_replay_ops *ops = r->engine->replay;
    int dev = g->device.index;
    emily_status s = EMILY_OK;
    for (int32_t i = 0; i < g->nparams && !s; i++) s = fill_slot(r, i, params[i]);
    bool failed = false;
    if (!s) s = ops->launch(dev, r->rec, &failed);
    if (s || failed) return s; /* failed: the calls themselves report it */
    for (int32_t k = 0; k < g->noutputs && !s; k++) {
        const graph_value *v = &g->values[g->outputs[k]];
        emily_tensor *t = NULL;
        if (v->kind == GV_PARAM) { /* the tensor given, not its slot */
            t = params[v->node];
            emily_tensor_retain(t);
        } else if (v->kind == GV_CONST) {
            t = v->tensor;
            emily_tensor_retain(t);
        } else if (!(s = emily_empty(g->device, v->dtype, v->rank, v->shape, &t)) && emily_tensor_size(t)) {
            s = r->engine->copy->copy(t, r->results[k]);
        }
        outputs[k] = t;
    }
    if (!s) s = ops->finish(dev, r->rec);
    if (s) {
        drop_tensors(outputs, g->noutputs);
        return s;
    }
    g->stats.replays++;
    *done = true;
    return EMILY_OK;
}
