/* emily_dispatch: callback name -> family handler -> typed op. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "nx/callback.h"
#include "ops/common.h"

static emily_callback_fn lookup(const char *name);

static const emily_callback_entry *const families[] = {
    emi_callbacks_creation, emi_callbacks_unary,     emi_callbacks_binary,
    emi_callbacks_shape,
    emi_callbacks_reduce,   emi_callbacks_dot,         emi_callbacks_window,
    emi_callbacks_index,    emi_callbacks_sort,        emi_callbacks_cumulative,
    emi_callbacks_fft,      emi_callbacks_linalg,
};
#define NFAMILIES (sizeof families / sizeof *families)

emily_callback_fn emi_callback_find(const char *name) {
    return name ? lookup(name) : NULL;
}

static emily_callback_fn lookup(const char *name) {
    for (size_t f = 0; f < NFAMILIES; f++)
        for (const emily_callback_entry *e = families[f]; e->name; e++)
            if (strcmp(e->name, name) == 0) return e->fn;
    return NULL;
}

bool emily_dispatch_supports(const char *callback) {
    return callback && lookup(callback) != NULL;
}

static const char *callback_names[512];

static void list_callbacks(void) {
    size_t n = 0;
    for (size_t f = 0; f < NFAMILIES; f++)
        for (const emily_callback_entry *e = families[f]; e->name && n < 511; e++)
            callback_names[n++] = e->name;
    callback_names[n] = NULL;
}

const char *const *emily_dispatch_callbacks(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, list_callbacks); /* safe from any thread */
    return callback_names;
}

void emily_dispatch_result_release(emily_dispatch_result *r) {
    if (!r) return;
    for (int i = 0; i < r->n; i++) emily_tensor_release(r->tensors[i]);
    r->n = 0;
}

static int template_count(const emily_value *out) {
    if (out->kind == EMILY_V_TEMPLATE) return 1;
    return (int)out->n;
}

/* In RUN mode the template is Nx's contract: check it was honoured. */
static emily_status check_against_template(emily_call *c) {
    int want = template_count(c->out);
    if (c->result->n != want)
        return emi_call_fail(c, EMILY_ERR_INTERNAL, "produced %d outputs, the template has %d", c->result->n, want);
    for (int k = 0; k < want; k++) {
        emily_dtype dt;
        int rank;
        const int64_t *shape;
        emily_status s = emi_call_template(c, k, &dt, &rank, &shape);
        if (s) return s;
        const emily_tensor *t = c->result->tensors[k];
        bool same = t->dtype == dt && t->rank == rank;
        for (int i = 0; same && i < rank; i++) same = t->shape[i] == shape[i];
        if (!same) {
            char a[256], b[256];
            return emi_call_fail(c, EMILY_ERR_INTERNAL,
                             "output %d is %s%s but Nx expects %s%s", k, emily_dtype_name(t->dtype),
                             emi_shape_str(t->rank, t->shape, a, sizeof a), emily_dtype_name(dt),
                             emi_shape_str(rank, shape, b, sizeof b));
        }
    }
    return EMILY_OK;
}

emily_status emily_dispatch(const char *callback, emily_device device, const emily_value *out,
                            const emily_value *args, size_t nargs, emily_dispatch_mode mode,
                            emily_dispatch_result *result) {
    if (!result) return emily_error(EMILY_ERR_ARGUMENT, "dispatch: NULL result");
    result->n = 0;
    if (!callback) return emily_error(EMILY_ERR_ARGUMENT, "dispatch: NULL callback name");
    emily_callback_fn fn = lookup(callback);
    if (!fn) return emily_error(EMILY_ERR_UNSUPPORTED, "%s: unknown callback", callback);
    emily_status s = emily_device_check(device);
    if (s) return s;
    return emi_dispatch_fn(fn, callback, device, out, args, nargs, mode, result);
}

emily_status emi_dispatch_fn(emily_callback_fn fn, const char *callback, emily_device device,
                               const emily_value *out, const emily_value *args, size_t nargs,
                               emily_dispatch_mode mode, emily_dispatch_result *result) {
    result->n = 0;
    if (!out || (out->kind != EMILY_V_TEMPLATE && out->kind != EMILY_V_LIST && out->kind != EMILY_V_TUPLE))
        return emily_error(EMILY_ERR_ARGUMENT, "%s: the output template is missing", callback);
    if (nargs && !args) return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL arguments", callback);
    emily_call c = {.name = callback, .device = device, .out = out, .args = args, .nargs = nargs,
                    .mode = mode, .result = result, .arena = NULL};
    emily_status s = fn(&c);
    if (!s && mode == EMILY_DISPATCH_RUN) s = check_against_template(&c);
    emi_call_arena_free(&c);
    if (s) emily_dispatch_result_release(result);
    return s;
}
