/* Engine graphs: the matcher the pattern passes share (patterns.c, the
 * norms and softmax and the pass itself; patterns_attention.c). A match
 * collects the values it would make dead (its intermediates) so that the
 * pass can check nothing else reads them. */
#ifndef EMILY_GRAPH_PATTERNS_IMPL_H
#define EMILY_GRAPH_PATTERNS_IMPL_H

#include "graph/graph_impl.h"

typedef struct matcher {
    emily_graph *g;
    int32_t *uses;     /* per value: references by live calls (kept current across substitutions) */
    uint8_t *made;     /* per value: 1 where this pass made a softmax call */
    int32_t inner[32]; /* the match's intermediate values */
    int ninner;
} matcher;

static inline const graph_value *val(const matcher *m, int32_t v) { return &m->g->values[v]; }

/* The live call that makes value v, if it is `name`'s only output. */
graph_call *emi_pat_producer(const matcher *m, int32_t v, const char *name);
/* Argument i of c when it is a value reference, else -1. */
int32_t emi_pat_ref_arg(const graph_call *c, size_t i);
/* c's value joins the match's intermediates (once); false when full. */
bool emi_pat_take(matcher *m, const graph_call *c);
bool emi_pat_same_shape(const graph_value *a, const graph_value *b);
/* The value and type of a one-element real constant. */
bool emi_pat_scalar_const(const matcher *m, int32_t v, emily_dtype *dtype, double *out);
const emily_value *emi_pat_opt_of(const emily_value *opts, const char *key);
/* A two-argument call `name` making v of type t; *a and *b its arguments
 * (value references); the call joins the intermediates. */
bool emi_pat_binary(matcher *m, int32_t v, const char *name, emily_dtype t, int32_t *a, int32_t *b);
/* Every intermediate is read only by the match's calls and the root and
 * none is a graph output. */
bool emi_pat_closed(const matcher *m, const graph_call *root);
/* Axon's composed softmax over the last axis ending at root (a multiply),
 * its calls added to the intermediates (root included when add_root);
 * *x its input. */
bool emi_pat_softmax_body(matcher *m, const graph_call *root, bool add_root, int32_t *x);

/* Attention (patterns_attention.c): Bumblebee's attention ending at root
 * (the probabilities' dot with v) as one sdpa call. */
typedef struct attention_match {
    int32_t q, k, v, mask; /* mask -1: none */
    double scale;
    emily_dtype type;
    /* grouped-query attention: the transposes of the repeated k and v that
     * become transposes of the unrepeated ones (-1: none) */
    int32_t k_transpose, v_transpose, k_grouped, v_grouped;
    bool took_softmax;   /* p was a softmax call this pass made: it counts no more */
    int32_t repeats[32]; /* the repeats' values (reshapes, broadcasts), dead after */
    int nrepeats;
} attention_match;
bool emi_pat_match_attention(matcher *m, const graph_call *root, attention_match *r);
/* Rewrites root (and the grouped transposes) into the sdpa call. */
emily_status emi_pat_substitute_attention(matcher *m, graph_call *root, const attention_match *r);

#endif
