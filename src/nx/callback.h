/* What a callback handler sees, and helpers to decode its arguments.
 *
 * Each family of callbacks lives in src/nx/callbacks_<family>.c; the
 * registry (src/nx/callback_list.h) names each callback's handler,
 * emi_cb_<handler>. A handler decodes c->args (emily_value trees, see
 * emily/dispatch.h), calls the typed function of emily/ops.h and hands
 * the result to emi_call_return. Every decoding helper fails with a
 * message naming the callback and the argument. Memory from
 * emi_call_alloc lives until the dispatch ends. */
#ifndef EMILY_NX_CALLBACK_H
#define EMILY_NX_CALLBACK_H

#include "emily/emily.h"
#include "nx/callback_list.h"

typedef struct emily_arena_block emily_arena_block;

typedef struct emily_call {
    const char *name;
    /* the registry entry's op (callback_list.h): which op of its family
     * a handler serving several callbacks runs */
    int op;
    emily_device device;
    const emily_value *out;
    const emily_value *args;
    size_t nargs;
    emily_dispatch_mode mode;
    emily_dispatch_result *result;
    emily_arena_block *arena;
} emily_call;

typedef emily_status (*emily_callback_fn)(emily_call *c);

/* One entry of the registry: the public view first, so that an
 * emily_callback from emily_dispatch_find is its entry. */
typedef struct emily_callback_entry {
    emily_callback info;
    emily_callback_fn fn;
    int op;
} emily_callback_entry;

/* The handlers (several callbacks may share one). */
#define EMI_CALLBACK(name, handler, op, cost, dtypes) emily_status emi_cb_##handler(emily_call *c);
EMI_CALLBACK_LIST
#undef EMI_CALLBACK

/* The entry of a callback name (NULL: unknown), and emily_dispatch with
 * it already found (the device already checked): engine graphs resolve
 * each call's entry once. */
const emily_callback_entry *emi_callback_find(const char *name);
emily_status emi_dispatch_entry(const emily_callback_entry *entry, emily_device device, const emily_value *out,
                                const emily_value *args, size_t nargs, emily_dispatch_mode mode,
                                emily_dispatch_result *result);

/* A call with a narrow type (emily/dtype.h) among its tensors or output
 * templates, and emi_dispatch_entry for it: run in the compute types
 * and converted back (src/nx/narrow.c). */
bool emi_call_has_narrow(const emily_value *out, const emily_value *args, size_t nargs);
emily_status emi_dispatch_narrow(const emily_callback_entry *entry, emily_device device, const emily_value *out,
                                 const emily_value *args, size_t nargs, emily_dispatch_mode mode,
                                 emily_dispatch_result *result);

/* Scratch memory freed when the dispatch ends (NULL + error on OOM). */
void *emi_call_alloc(emily_call *c, size_t nbytes);
void emi_call_arena_free(emily_call *c);

/* Fails with "<callback>: <message>". */
emily_status emi_call_fail(emily_call *c, emily_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Positional arguments. */
emily_status emi_call_arity(emily_call *c, size_t min, size_t max);
const emily_value *emi_call_arg(emily_call *c, size_t i); /* NULL if absent */
emily_status emi_call_tensor(emily_call *c, size_t i, emily_tensor **t);
emily_status emi_call_tensor_list(emily_call *c, size_t i, emily_tensor ***ts, int *n);
emily_status emi_call_int(emily_call *c, size_t i, int64_t *v);
/* Checks the arity (min to max arguments) and reads the first n, which
 * must be tensors, into ts. */
emily_status emi_call_tensors(emily_call *c, size_t min, size_t max, int n, emily_tensor **ts);

/* Values (from args or options); `what` names them in messages. */
emily_status emi_value_int(emily_call *c, const emily_value *v, const char *what, int64_t *out);
emily_status emi_value_float(emily_call *c, const emily_value *v, const char *what, double *out);
emily_status emi_value_bool(emily_call *c, const emily_value *v, const char *what, bool *out);
/* atom name (or NULL for nil when allow_nil) */
emily_status emi_value_atom(emily_call *c, const emily_value *v, const char *what, bool allow_nil, const char **out);
/* A list or tuple of integers. */
emily_status emi_value_int_list(emily_call *c, const emily_value *v, const char *what, int64_t **out, int *n);
/* Same, narrowed to int (axes); nil gives *out = NULL, *n = -1. */
emily_status emi_value_axes(emily_call *c, const emily_value *v, const char *what, int **out, int *n);
/* A number, complex or nan/infinity/neg_infinity atom as a scalar. */
emily_status emi_value_scalar(emily_call *c, const emily_value *v, const char *what, emily_scalar *out);
/* Integer held by a rank-0 (or single element) integer tensor. */
emily_status emi_value_tensor_int(emily_call *c, const emily_tensor *t, const char *what, int64_t *out);

/* Options: the keyword list argument at position i. */
emily_status emi_call_opts(emily_call *c, size_t i, const emily_value **opts);
/* (out, n tensors, [opts]): checks the arity, reads the tensors and the
 * keyword list after them (*opts NULL when there is none). */
emily_status emi_call_tensors_opts(emily_call *c, int n, emily_tensor **ts, const emily_value **opts);
/* The value of key in an options list (NULL if absent). */
const emily_value *emi_opt_get(const emily_value *opts, const char *key);
/* An option given and not nil, read into *out (which keeps the caller's
 * default otherwise); `what` names it in messages (NULL: "option :key").
 * opts may be NULL. */
emily_status emi_opt_int(emily_call *c, const emily_value *opts, const char *key, const char *what, int64_t *out);
emily_status emi_opt_float(emily_call *c, const emily_value *opts, const char *key, const char *what, double *out);
emily_status emi_opt_bool(emily_call *c, const emily_value *opts, const char *key, const char *what, bool *out);
/* Like emi_opt_get, but missing keys fail. */
emily_status emi_opt_need(emily_call *c, const emily_value *opts, const char *key, const emily_value **out);

/* Output templates: k-th template (0 for single-output callbacks). */
emily_status emi_call_template(emily_call *c, int k, emily_dtype *dtype, int *rank, const int64_t **shape);
/* In RUN mode, fails unless output k of this dtype (EMILY_DTYPE_AUTO: any)
 * and shape is what template k says ("output k is ... but Nx expects
 * ..."; the dispatcher checks every result so). Callbacks whose result or
 * work can outgrow their operands (options, broadcasting, indices, empty
 * inputs) call it before the work, with the shape the op layer computes
 * without it (src/ops/output_shape.h, emi_conv_output_shape,
 * emi_dot_output_shape): a call whose operands or options disagree with
 * its template then costs nothing. OK in INFER mode. */
emily_status emi_call_check_output(emily_call *c, int k, emily_dtype dtype, int rank, const int64_t *shape);
/* The template type in RUN mode; EMILY_DTYPE_AUTO in INFER mode. Use it
 * where Nx decides the output type before calling the backend (numbers
 * as operands). */
emily_dtype emi_call_out_type(emily_call *c);

/* Appends an output (the call takes ownership, even on failure). */
emily_status emi_call_return(emily_call *c, emily_tensor *t);

#endif
