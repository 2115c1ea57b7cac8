/* Engine graphs (emily/graph.h): the structures shared by building,
 * compiling, running and serializing. */
#ifndef EMILY_GRAPH_IMPL_H
#define EMILY_GRAPH_IMPL_H

#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include "emily/emily.h"
#include "emily/graph.h"
#include "nx/callback.h"

/* The graph's own memory: copies of names and value trees, freed with
 * the graph. */
typedef struct graph_block graph_block;

typedef enum { GV_PARAM, GV_CONST, GV_CALL } graph_value_kind;

typedef struct graph_value {
    graph_value_kind kind;
    int32_t node;         /* GV_CALL: the call; GV_PARAM: parameter index */
    int k;                /* GV_CALL: output index of the call */
    emily_tensor *tensor; /* GV_CONST (owned) */
    emily_dtype dtype;    /* GV_PARAM and GV_CALL: the spec */
    int rank;
    const int64_t *shape;
    /* compile: the step after which a run releases it (-1: never) */
    int32_t last_use;
    bool folded; /* GV_CONST computed by compile from call `node` */
    bool needed; /* an output depends on it */
    bool is_output;
} graph_value;

typedef struct graph_call {
    const char *callback;
    const emily_callback_entry *entry; /* resolved by add_call */
    emily_value out;                   /* template tree */
    emily_value *args;                 /* argument trees, EMILY_V_REF for values */
    size_t nargs;
    int32_t first, nout;
    /* the EMILY_V_REF nodes of args, in tree order */
    emily_value **refs;
    int nrefs;
    /* a while loop (callback "while", entry NULL): its state is args */
    emily_graph *cond, *body;
    /* a conditional (callback "cond", entry NULL): args are the nclauses
     * predicates, then each branch's captured values (ncaptured[b]) */
    emily_graph **branches;
    int nclauses;
    size_t *ncaptured;
    /* compile */
    bool folded, dropped;
    int32_t fused_group; /* -1: runs alone */
} graph_call;

/* One thing a run executes: a call, or a fused group of elementwise
 * calls (fuse.c) whose intermediates never exist as tensors. */
typedef struct graph_step {
    int32_t call; /* the call, or the group's last call */
    struct fused_group *group;
    int32_t *release; /* values freed after this step */
    int nrelease;
} graph_step;

struct emily_graph {
    graph_block *mem;
    graph_value *values;
    int32_t nvalues, values_cap;
    graph_call *calls;
    int32_t ncalls, calls_cap;
    int32_t *params; /* value ids of the parameters, in order */
    int32_t nparams, params_cap;
    int32_t *outputs;
    int32_t noutputs;
    /* compiled */
    bool compiled;
    emily_device device;
    graph_step *steps;
    int32_t nsteps;
    emily_graph_stats stats;
    pthread_mutex_t run_lock;
    struct graph_replay *replay; /* replay.c (NULL: the device cannot record) */
};

/* graph memory */
void *emi_graph_alloc(emily_graph *g, size_t n);
char *emi_graph_strdup(emily_graph *g, const char *s, size_t len);
/* Deep copy of a value tree into graph memory. Tensors become constants
 * (retained) referenced by EMILY_V_REF; EMILY_V_REF ids must be below
 * `limit`. `where` names the copy in messages. */
emily_status emi_graph_copy_value(emily_graph *g, const emily_value *src, emily_value *dst, int32_t limit,
                                  const char *where);
/* Collects the EMILY_V_REF nodes of a call's arguments (call->refs). */
emily_status emi_graph_collect_refs(emily_graph *g, graph_call *c);
emily_status emi_graph_push_value(emily_graph *g, graph_value v, int32_t *id);

/* The spec of output k of a template tree (NULL if absent). */
const emily_value *emi_graph_template_at(const emily_value *out, int k);
int emi_graph_template_count(const emily_value *out);

/* Runs a while call and a cond call (compile.c). */
emily_status emi_graph_run_while(emily_graph *g, const graph_call *c, emily_tensor **vals);
emily_status emi_graph_run_cond(emily_graph *g, const graph_call *c, emily_tensor **vals);
/* Iterations a while loop may run before failing (0: no limit; see
 * compile.c). */
extern int64_t emi_graph_while_limit;
/* Nesting of while bodies inside while bodies is limited to this. */
#define GRAPH_MAX_NESTING 16

/* Runs one call with its EMILY_V_REF arguments bound to vals; its
 * outputs are stored in vals. */
emily_status emi_graph_run_call(emily_graph *g, const graph_call *c, emily_tensor **vals);

/* Runs the compiled graph's calls on params (compile.c): outputs[k]
 * receives a new reference; step_s, when not NULL, each step's seconds
 * (the device synchronized around each). */
emily_status emi_graph_run_calls(emily_graph *g, emily_tensor *const *params, emily_tensor **outputs, double *step_s);

/* replay (replay.c): setup at compile; a run tries a replay first (*done
 * false: run the calls); free with the graph. */
typedef struct graph_replay graph_replay;
emily_status emi_graph_replay_setup(emily_graph *g, const emily_graph_options *opts);
emily_status emi_graph_replay_run(emily_graph *g, emily_tensor *const *params, emily_tensor **outputs, bool *done);
void emi_graph_replay_free(emily_graph *g);

/* pattern fusion (patterns.c, patterns_attention.c): composed layer
 * norms, rms norms, softmaxes and attentions replaced by the fused ops'
 * calls, after folding and before dead calls are dropped. */
emily_status emi_graph_patterns(emily_graph *g, const emily_graph_options *opts);
/* A text listing of g's live calls (dump.c; EMILY_GRAPH_DUMP=1 prints
 * each graph the pattern pass sees). */
void emi_graph_dump(const emily_graph *g, FILE *f);

/* fusion (fuse.c): plans fused groups over the compiled graph's steps,
 * and runs one. */
typedef struct fused_group {
    int32_t *calls; /* member calls, in order */
    int ncalls;
    int32_t *inputs; /* values read from outside the group */
    int ninputs;
    int32_t *exits; /* member values used outside the group */
    int nexits;
    int rank, axis; /* S's rank and the axis cut into slabs */
    const int64_t *shape;
    int64_t rows_per_slab, slabs;
    bool parallel;
} fused_group;
emily_status emi_graph_fuse(emily_graph *g);
emily_status emi_fused_group_run(emily_graph *g, const fused_group *fg, emily_tensor **vals);
void emi_fused_group_free(fused_group *fg);
/* The values a group reads (0 for NULL). */
int emi_fused_group_inputs(const fused_group *fg, const int32_t **values);
/* A group run as the device engine's fused program (fuse_lower.c), or
 * call by call where the program cannot be made or run. */
emily_status emi_fused_group_run_program(emily_graph *g, const fused_group *fg, emily_tensor **vals);

#endif
