/* The Nx.Backend callback dispatcher.
 *
 * Nx calls a backend with a callback name, an output template (type and
 * shape, or a list of them) and arguments. emily_dispatch takes the same
 * three things, decoded into emily_value trees, and maps them onto the
 * typed functions of emily/ops.h. The corpus runner and the Erlang NIF
 * both come in here; the NIF adds only term decoding. */
#ifndef EMILY_DISPATCH_H
#define EMILY_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "emily/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emily_value_kind {
    EMILY_V_NIL,
    EMILY_V_BOOL,     /* b */
    EMILY_V_INT,      /* i */
    EMILY_V_UINT,     /* u: an integer above INT64_MAX */
    EMILY_V_FLOAT,    /* f (NaN/inf arrive as atoms, see below) */
    EMILY_V_COMPLEX,  /* re, im */
    EMILY_V_ATOM,     /* str: "nan", "infinity", "neg_infinity", "asc", ... */
    EMILY_V_BINARY,   /* str, len: raw bytes */
    EMILY_V_TUPLE,    /* items, n */
    EMILY_V_LIST,     /* items, n */
    EMILY_V_OPTS,     /* items, keys, n: a keyword list, order kept */
    EMILY_V_TENSOR,   /* tensor (borrowed by the dispatcher) */
    EMILY_V_TEMPLATE, /* dtype, rank, shape: an output template */
    EMILY_V_REF       /* i: a value of an engine graph (emily/graph.h) */
} emily_value_kind;

typedef struct emily_value emily_value;
struct emily_value {
    emily_value_kind kind;
    bool b;
    int64_t i;
    uint64_t u;
    double f, re, im;
    const char *str;
    size_t len;
    emily_value *items;
    const char **keys;
    size_t n;
    emily_tensor *tensor;
    emily_dtype dtype;
    int rank;
    const int64_t *shape;
};

typedef enum emily_dispatch_mode {
    /* Run the callback; the template is authoritative (the result has
     * exactly its types and shapes, or the call fails). */
    EMILY_DISPATCH_RUN = 0,
    /* Run the callback taking from the template only what Nx's public
     * API passes as options (as_type's type, reshape's shape, iota's
     * shape and type, ...); every other output type and shape is
     * inferred by the typed functions. Used to check inference. */
    EMILY_DISPATCH_INFER = 1
} emily_dispatch_mode;

/* Result of a dispatch: one tensor, or several for multi-output
 * callbacks (lu, qr, svd, eigh, top_k). The caller releases them with
 * emily_dispatch_result_release. */
#define EMILY_DISPATCH_MAX_OUTPUTS 4
typedef struct emily_dispatch_result {
    int n;
    emily_tensor *tensors[EMILY_DISPATCH_MAX_OUTPUTS];
} emily_dispatch_result;

/* `out` is a EMILY_V_TEMPLATE or an EMILY_V_LIST/TUPLE of templates.
 * Tensors in args must all be on `device` (creation callbacks, which
 * have no tensor input, create there). */
EMILY_API emily_status emily_dispatch(const char *callback, emily_device device, const emily_value *out,
                                      const emily_value *args, size_t nargs, emily_dispatch_mode mode,
                                      emily_dispatch_result *result);
EMILY_API void emily_dispatch_result_release(emily_dispatch_result *r);

/* True if the dispatcher knows the callback name. */
EMILY_API bool emily_dispatch_supports(const char *callback);
/* Callback names the dispatcher knows, NULL-terminated. */
EMILY_API const char *const *emily_dispatch_callbacks(void);

/* How a caller that must not block (an Erlang scheduler) should run a
 * callback: what its cost grows with. */
typedef enum emily_callback_cost {
    /* Element-wise, shape, reduction and creation work: the time grows
     * with the elements in and out, so a small call is cheap. */
    EMILY_COST_INLINE = 0,
    /* Work not bounded by the elements (matrix products, sorting,
     * windows, indexing, transforms, scans, decompositions): always
     * heavy. */
    EMILY_COST_DIRTY = 1,
    /* Moves data between devices or waits for one. No callback of the
     * dispatcher is of this class today (transfers are functions of
     * their own); a scheduler treats it as heavy. */
    EMILY_COST_DEVICE = 2
} emily_callback_cost;

/* The types a callback accepts for its tensor operands (index tensors,
 * which are integers, and predicates aside); others fail with
 * EMILY_ERR_TYPE. */
typedef enum emily_dtype_class {
    EMILY_DTYPES_ANY = 0,     /* every type */
    EMILY_DTYPES_REAL = 1,    /* integers and floats, no complex */
    EMILY_DTYPES_INTEGER = 2, /* integers only */
    EMILY_DTYPES_FLOAT = 3    /* real floats only: f16, bf16, f32, f64 */
} emily_dtype_class;

/* True if `dtype` belongs to the class. */
EMILY_API bool emily_dtype_class_has(emily_dtype_class c, emily_dtype dtype);

/* A callback the dispatcher knows (one entry of its registry, which
 * lives as long as the library). */
typedef struct emily_callback {
    const char *name;
    emily_callback_cost cost;
    emily_dtype_class dtypes;
} emily_callback;

/* The callback named `callback`; NULL if the dispatcher has none. The
 * lookup is a hash table's, safe from any thread. */
EMILY_API const emily_callback *emily_dispatch_find(const char *callback);
/* emily_dispatch of a callback emily_dispatch_find returned (a caller
 * that reads its cost first looks it up once). */
EMILY_API emily_status emily_dispatch_callback(const emily_callback *cb, emily_device device, const emily_value *out,
                                               const emily_value *args, size_t nargs, emily_dispatch_mode mode,
                                               emily_dispatch_result *result);

#ifdef __cplusplus
}
#endif
#endif
