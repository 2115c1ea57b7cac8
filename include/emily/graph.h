/* Engine graphs: a program of dispatcher callbacks, built once and run
 * many times.
 *
 * A graph holds values, numbered from 0 in the order they are added:
 * parameters (tensors given at each run), constants (tensors the graph
 * holds) and the outputs of calls. A call is exactly an emily_dispatch
 * call (emily/dispatch.h): a callback name, its output template(s) and
 * its arguments, where an argument of kind EMILY_V_REF names an earlier
 * value. Values can only name earlier values, so a graph has no cycles.
 *
 *     emily_graph *g;
 *     int32_t x, y, sum;
 *     emily_graph_create(&g);
 *     emily_graph_add_param(g, EMILY_F32, 1, (int64_t[]){3}, &x);
 *     emily_graph_add_param(g, EMILY_F32, 1, (int64_t[]){3}, &y);
 *     emily_value out = {.kind = EMILY_V_TEMPLATE, .dtype = EMILY_F32, .rank = 1, .shape = dims};
 *     emily_value args[2] = {{.kind = EMILY_V_REF, .i = x}, {.kind = EMILY_V_REF, .i = y}};
 *     emily_graph_add_call(g, "add", &out, args, 2, &sum);
 *     emily_graph_set_outputs(g, 1, &sum);
 *     emily_graph_compile(g, EMILY_CPU);
 *     emily_graph_run(g, (emily_tensor *[]){a, b}, 2, &result, 1);
 *
 * emily_graph_compile checks the graph and optimizes it for one device:
 * calls whose arguments are all constants are computed once (constant
 * folding), calls no output depends on are dropped, and each
 * intermediate tensor is released after its last use. Results are those
 * of running the calls one by one with emily_dispatch, bit for bit
 * (docs/graph.md; fusion of elementwise chains is the next step there).
 *
 * Graphs can be saved to a file and loaded again (a model recorded from
 * Elixir can be replayed from C; `build/emily_run` does that). */
#ifndef EMILY_GRAPH_H
#define EMILY_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include "emily/dispatch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emily_graph emily_graph;

EMILY_API emily_status emily_graph_create(emily_graph **out);
/* Frees the graph and the tensors it holds (NULL is ignored). */
EMILY_API void emily_graph_free(emily_graph *g);

/* A parameter: the next tensor of emily_graph_run's params, which must
 * have this type and shape. *value receives its value id. */
EMILY_API emily_status emily_graph_add_param(emily_graph *g, emily_dtype dtype, int rank, const int64_t *shape,
                                             int32_t *value);
/* A constant: the graph retains t. */
EMILY_API emily_status emily_graph_add_const(emily_graph *g, emily_tensor *t, int32_t *value);
/* A call of dispatcher callback `callback` (emily_dispatch_supports)
 * with output template(s) `out` (an EMILY_V_TEMPLATE, or a list or tuple
 * of them for multi-output callbacks) and arguments. EMILY_V_REF
 * arguments (field i) name earlier values; EMILY_V_TENSOR arguments are
 * retained as constants. Everything is copied. *first receives the value
 * id of output 0; output k of a multi-output call is *first + k. */
EMILY_API emily_status emily_graph_add_call(emily_graph *g, const char *callback, const emily_value *out,
                                            const emily_value *args, size_t nargs, int32_t *first);
/* A loop (Nx's while): the state starts as the n values `initial`;
 * while `cond` (a graph of n parameters, the state, and one rank-0
 * output) gives a non-zero value, `body` (n parameters, n outputs of the
 * parameters' types and shapes) computes the next state. The loop's
 * outputs, *first to *first + n - 1, are the final state. The graph takes
 * cond and body (freed with it, compiled with it; also freed on any
 * failure here except being given the same graph twice, which takes
 * nothing); they must not be compiled or used elsewhere. */
EMILY_API emily_status emily_graph_add_while(emily_graph *g, emily_graph *cond, emily_graph *body, size_t n,
                                             const int32_t *initial, int32_t *first);
/* A conditional (Nx's cond): the first of the nclauses rank-0 values
 * `preds` that is not zero picks its branch, none picks the last one
 * (branches has nclauses + 1 graphs). Branch b takes ncaptured[b]
 * parameters, the values captured[offset_b ...] of this graph (offset_b
 * the sum of the earlier counts); every branch has the same number of
 * outputs, of the same types and shapes, which are the call's outputs
 * (*first ...). The graph takes the branches, also when it fails here,
 * except for NULL arguments, a clause count out of range (1 to 1024), a
 * branch given twice or the graph itself as a branch, which take
 * nothing. */
EMILY_API emily_status emily_graph_add_cond(emily_graph *g, size_t nclauses, const int32_t *preds,
                                            emily_graph **branches, const size_t *ncaptured, const int32_t *captured,
                                            int32_t *first);

/* The values emily_graph_run returns, in order (repeats allowed). */
EMILY_API emily_status emily_graph_set_outputs(emily_graph *g, size_t n, const int32_t *values);

typedef struct emily_graph_options {
    /* 0: optimize (folding, dead calls, fusion); 1: run every call as
     * added, one by one (for checking the optimizer). */
    int no_optimize;
    /* 0: on devices that can record a run (CUDA), the second run records
     * the calls' work and later runs replay it in one launch (docs/graph.md);
     * 1: every run runs the calls. EMILY_GRAPH_REPLAY=0 does the same. */
    int no_replay;
    /* 0: the composed forms of layer_norm, rms_norm and softmax (as Axon
     * and Bumblebee write them) become the fused ops (emily/ops_fast.h),
     * where the types and shapes are the fused op's contract exactly
     * (docs/graph.md: what that changes in rounding); 1: they stay.
     * EMILY_GRAPH_PATTERNS=0 does the same. */
    int no_patterns;
} emily_graph_options;

/* Checks and optimizes the graph for `device` (opts may be NULL). A
 * compiled graph can be run; it can no longer be changed. */
EMILY_API emily_status emily_graph_compile(emily_graph *g, emily_device device, const emily_graph_options *opts);

/* Runs a compiled graph: params[i] is parameter i (on the graph's
 * device, with its type and shape); outputs[k] receives a new reference
 * the caller releases. Runs of one graph from several threads are
 * serialized. */
EMILY_API emily_status emily_graph_run(emily_graph *g, emily_tensor *const *params, size_t nparams,
                                       emily_tensor **outputs, size_t noutputs);

typedef struct emily_graph_stats {
    int64_t params, constants, calls;  /* as built */
    int64_t folded;                    /* calls computed at compile time */
    int64_t dropped;                   /* calls no output needs */
    int64_t rewritten;                 /* calls replaced by cheaper ones with the same bits */
    int64_t fused_calls, fused_groups; /* elementwise calls run inside fused groups */
    int64_t steps;                     /* what one run executes */
    int64_t outputs;
    int64_t peak_bytes;   /* intermediates alive at once, at most (last run) */
    int64_t replays;      /* runs that replayed a recording */
    int64_t replay_bytes; /* the recording's device memory (0: none) */
    /* composed subgraphs replaced by one fused call (emily_graph_options.no_patterns),
     * in all and by pattern; a graph counts those of the loop bodies and
     * branches it holds too */
    int64_t patterns;
    int64_t pattern_layer_norm, pattern_rms_norm, pattern_softmax;
    int64_t pattern_attention; /* Bumblebee's attention as one sdpa call */
} emily_graph_stats;
EMILY_API emily_status emily_graph_get_stats(const emily_graph *g, emily_graph_stats *stats);

/* Parameter and output descriptions (after building). */
EMILY_API size_t emily_graph_num_params(const emily_graph *g);
EMILY_API size_t emily_graph_num_outputs(const emily_graph *g);
EMILY_API emily_status emily_graph_param_spec(const emily_graph *g, size_t i, emily_dtype *dtype, int *rank,
                                              const int64_t **shape);

/* The type and shape of value `value` (a parameter, constant or call
 * output). */
EMILY_API emily_status emily_graph_value_spec(const emily_graph *g, int32_t value, emily_dtype *dtype, int *rank,
                                              const int64_t **shape);

/* Saves a graph (compiled or not; constants are written with their
 * bytes) and loads one (not compiled). Loading checks everything: a
 * malformed or truncated file, an unknown callback, a reference to a
 * value not defined before it are EMILY_ERR_ARGUMENT naming the place. */
EMILY_API emily_status emily_graph_save(const emily_graph *g, const char *path);
EMILY_API emily_status emily_graph_load(const char *path, emily_graph **out);
/* The same from and to memory (*bytes from save_buffer: free()). */
EMILY_API emily_status emily_graph_save_buffer(const emily_graph *g, void **bytes, size_t *size);
EMILY_API emily_status emily_graph_load_buffer(const void *bytes, size_t size, emily_graph **out);

#ifdef __cplusplus
}
#endif
#endif
