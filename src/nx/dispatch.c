/* emily_dispatch: callback name -> registry entry -> handler -> typed op.
 *
 * The registry is callback_list.h expanded once into a constant table in
 * list order. Lookups go through a hash table of it (open addressing,
 * at most half full), made once (pthread_once) by the first lookup from
 * any thread and only read after that, so lookups take no lock: a hash
 * and about one string comparison, where a scan of the list cost dozens
 * for most names (and a binary search several for every one). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/error_prefix.h"
#include "nx/callback.h"
#include "ops/common.h"

#define EMI_CALLBACK(name, handler, op, cost, dtypes) \
    {{#name, EMI_PASTE(EMILY_COST_, cost), EMI_PASTE(EMILY_DTYPES_, dtypes)}, emi_cb_##handler, op},
static const emily_callback_entry registry[] = {EMI_CALLBACK_LIST};
#undef EMI_CALLBACK
#define NCALLBACKS (sizeof registry / sizeof *registry)

#define SLOT_BITS 9
#define NSLOTS ((size_t)1 << SLOT_BITS)
_Static_assert(2 * NCALLBACKS <= NSLOTS, "the callback hash table must stay at most half full");

/* slots: registry position + 1 (0: free); hashes: each entry's name
 * hash; names: the names in list order, NULL after them
 * (emily_dispatch_callbacks). */
static uint16_t slots[NSLOTS];
static uint32_t hashes[NCALLBACKS];
static const char *names[NCALLBACKS + 1];

/* FNV-1a: callback names are short, and differ early or late. */
static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static void build_index(void) {
    for (size_t i = 0; i < NCALLBACKS; i++) {
        names[i] = registry[i].info.name;
        hashes[i] = name_hash(names[i]);
        size_t slot = hashes[i] & (NSLOTS - 1);
        while (slots[slot]) slot = (slot + 1) & (NSLOTS - 1);
        slots[slot] = (uint16_t)(i + 1);
    }
    names[NCALLBACKS] = NULL;
}

static pthread_once_t index_once = PTHREAD_ONCE_INIT;

const emily_callback_entry *emi_callback_find(const char *name) {
    if (!name) return NULL;
    pthread_once(&index_once, build_index);
    uint32_t h = name_hash(name);
    for (size_t slot = h & (NSLOTS - 1); slots[slot]; slot = (slot + 1) & (NSLOTS - 1)) {
        size_t i = slots[slot] - 1u;
        if (hashes[i] == h && strcmp(names[i], name) == 0) return &registry[i];
    }
    return NULL;
}

const emily_callback *emily_dispatch_find(const char *callback) {
    const emily_callback_entry *e = emi_callback_find(callback);
    return e ? &e->info : NULL;
}

bool emily_dispatch_supports(const char *callback) { return emi_callback_find(callback) != NULL; }

const char *const *emily_dispatch_callbacks(void) {
    pthread_once(&index_once, build_index);
    return names;
}

/* Each class as a mask of dtypes (bit EMILY_<T>), from the dtype list. */
#define DTYPE_BIT(ENUM, sfx, T) | (1u << EMILY_##ENUM)
/* the narrow types (computed wider, src/nx/narrow.c) */
#define NARROW_INTEGERS ((1u << EMILY_S2) | (1u << EMILY_S4) | (1u << EMILY_U2) | (1u << EMILY_U4))
#define NARROW_FLOATS ((1u << EMILY_F8_E5M2) | (1u << EMILY_F8_E4M3FN))
static const unsigned class_masks[] = {
    [EMILY_DTYPES_ANY] = 0 EMI_DTYPES(DTYPE_BIT) | NARROW_INTEGERS | NARROW_FLOATS,
    [EMILY_DTYPES_REAL] = 0 EMI_DTYPES_REAL(DTYPE_BIT) | NARROW_INTEGERS | NARROW_FLOATS,
    [EMILY_DTYPES_INTEGER] = 0 EMI_DTYPES_INTEGER(DTYPE_BIT) | NARROW_INTEGERS,
    [EMILY_DTYPES_FLOAT] = 0 EMI_DTYPES_FLOAT(DTYPE_BIT) | NARROW_FLOATS,
};
_Static_assert(EMILY_DTYPE_ALL_COUNT <= 32, "a class mask has a bit per type");
#undef DTYPE_BIT

bool emily_dtype_class_has(emily_dtype_class c, emily_dtype dtype) {
    if ((unsigned)c >= sizeof class_masks / sizeof *class_masks || !emily_dtype_known(dtype)) return false;
    return (class_masks[c] >> (unsigned)dtype) & 1u;
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
        const emily_tensor *t = c->result->tensors[k];
        emily_status s = emi_call_check_output(c, k, t->dtype, t->rank, t->shape);
        if (s) return s;
    }
    return EMILY_OK;
}

/* Memory and device errors from below the op layer (an allocator, a
 * transfer) name their own stage ("cuda: alloc: out of memory ..."), not the
 * callback a user called: prefix the callback's name where the message
 * lacks it. */
static void name_the_callback(const char *callback, emily_status s) {
    if (s != EMILY_ERR_MEMORY && s != EMILY_ERR_DEVICE) return;
    const char *msg = emily_last_error();
    size_t n = strlen(callback);
    for (const char *p = strstr(msg, callback); p; p = strstr(p + 1, callback))
        if ((p == msg || p[-1] == ' ') && p[n] == ':') return; /* "cuda: add: ..." */
    (void)emi_error_prefixed(s, callback, NULL, "%s", msg);
}

emily_status emily_dispatch(const char *callback, emily_device device, const emily_value *out, const emily_value *args,
                            size_t nargs, emily_dispatch_mode mode, emily_dispatch_result *result) {
    if (!result) return emily_error(EMILY_ERR_ARGUMENT, "dispatch: NULL result");
    result->n = 0;
    if (!callback) return emily_error(EMILY_ERR_ARGUMENT, "dispatch: NULL callback name");
    const emily_callback_entry *e = emi_callback_find(callback);
    if (!e) return emily_error(EMILY_ERR_UNSUPPORTED, "%s: unknown callback", callback);
    return emily_dispatch_callback(&e->info, device, out, args, nargs, mode, result);
}

emily_status emily_dispatch_callback(const emily_callback *cb, emily_device device, const emily_value *out,
                                     const emily_value *args, size_t nargs, emily_dispatch_mode mode,
                                     emily_dispatch_result *result) {
    if (!result) return emily_error(EMILY_ERR_ARGUMENT, "dispatch: NULL result");
    result->n = 0;
    if (!cb) return emily_error(EMILY_ERR_ARGUMENT, "dispatch: NULL callback");
    emily_status s = emily_device_check(device);
    if (s) return s;
    /* info is an entry's first member (emily_dispatch_find hands it out) */
    return emi_dispatch_entry((const emily_callback_entry *)cb, device, out, args, nargs, mode, result);
}

emily_status emi_dispatch_entry(const emily_callback_entry *entry, emily_device device, const emily_value *out,
                                const emily_value *args, size_t nargs, emily_dispatch_mode mode,
                                emily_dispatch_result *result) {
    const char *callback = entry->info.name;
    result->n = 0;
    if (!out || (out->kind != EMILY_V_TEMPLATE && out->kind != EMILY_V_LIST && out->kind != EMILY_V_TUPLE))
        return emily_error(EMILY_ERR_ARGUMENT, "%s: the output template is missing", callback);
    if (nargs && !args) return emily_error(EMILY_ERR_ARGUMENT, "%s: NULL arguments", callback);
    /* narrow types run in their compute types (src/nx/narrow.c), except
     * in the two callbacks that convert and reinterpret them */
    if (entry->fn != emi_cb_as_type && entry->fn != emi_cb_bitcast && emi_call_has_narrow(out, args, nargs))
        return emi_dispatch_narrow(entry, device, out, args, nargs, mode, result);
    emily_call c = {.name = callback,
                    .op = entry->op,
                    .device = device,
                    .out = out,
                    .args = args,
                    .nargs = nargs,
                    .mode = mode,
                    .result = result,
                    .arena = NULL};
    emily_status s = entry->fn(&c);
    if (!s && mode == EMILY_DISPATCH_RUN) s = check_against_template(&c);
    emi_call_arena_free(&c);
    if (s) {
        emily_dispatch_result_release(result);
        name_the_callback(callback, s);
    }
    return s;
}
