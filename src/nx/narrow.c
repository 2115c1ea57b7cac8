/* Callbacks on the narrow types (f8, f8_e4m3fn, s2, s4, u2, u4).
 *
 * Nx.BinaryBackend reads every element into an exact Elixir number,
 * computes (integers exactly, floats in f64) and writes the result with
 * the output type's rules: sub-byte integers keep their low bits, f8
 * rounds to f16 and keeps its top byte, f8_e4m3fn rounds and saturates.
 * The dispatcher gets the same answers by running the callback in each
 * narrow type's compute type (emily_dtype_compute_type): every narrow
 * tensor argument is converted to it, every narrow output template is
 * widened to it, the callback runs as for any other type, and each output
 * whose template was narrow is converted back with emily_as_type (Nx's
 * write rules). Why this is exact:
 *  - s2/s4 in s8, u2/u4 in u8: the wide integer ops wrap modulo 2^8,
 *    and 2^bits divides 2^8, so keeping the low bits afterwards gives the
 *    exact result modulo 2^bits, as Nx's write does; quotients, shifts,
 *    comparisons and min/max of values that fit the narrow type are
 *    exact in the wide one. Two ops depend on the width itself and are
 *    mapped: count_leading_zeros and population_count count over the
 *    narrow type's bits (below).
 *  - f8/f8_e4m3fn in f32: f32 holds every f8 value, and sums, differences
 *    and products of two exactly, so these round once, as Nx's f64
 *    arithmetic does; other functions round to f32 first, which can only
 *    differ from Nx where the f32 rounding lands on a rounding boundary
 *    of the 8-bit type (docs/semantics.md, "Narrow types").
 * as_type and bitcast convert or reinterpret themselves (ops/convert.c)
 * and never come here. A dot of two 8-bit floats on a device with an FP8
 * kernel keeps its operands for the tensor cores (src/nx/dot_fp8.c). */
#include <stdlib.h>
#include "nx/callback.h"
#include "nx/dot_fp8.h"
#include "ops/common.h"

static bool value_has_narrow(const emily_value *v) {
    switch (v->kind) {
    case EMILY_V_TENSOR: return v->tensor && emily_dtype_is_narrow(v->tensor->dtype);
    case EMILY_V_TEMPLATE: return emily_dtype_is_narrow(v->dtype);
    case EMILY_V_TUPLE:
    case EMILY_V_LIST:
    case EMILY_V_OPTS:
        for (size_t i = 0; i < v->n; i++)
            if (value_has_narrow(&v->items[i])) return true;
        return false;
    default: return false;
    }
}

bool emi_call_has_narrow(const emily_value *out, const emily_value *args, size_t nargs) {
    if (value_has_narrow(out)) return true;
    for (size_t i = 0; i < nargs; i++)
        if (value_has_narrow(&args[i])) return true;
    return false;
}

/* What a widened call owns: the value arrays and the converted tensors. */
typedef struct widened {
    void **blocks;
    size_t nblocks, cap_blocks;
    emily_tensor **tensors;
    size_t ntensors, cap_tensors;
} widened;

static bool keep(void ***list, size_t *n, size_t *cap, void *p) {
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        void **grown = realloc(*list, c * sizeof *grown);
        if (!grown) return false;
        *list = grown;
        *cap = c;
    }
    (*list)[(*n)++] = p;
    return true;
}

static void widened_free(widened *w) {
    for (size_t i = 0; i < w->nblocks; i++) free(w->blocks[i]);
    for (size_t i = 0; i < w->ntensors; i++) emily_tensor_release(w->tensors[i]);
    free(w->blocks);
    free(w->tensors);
}

static emily_status out_of_memory(const char *callback) {
    return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", callback);
}

/* The unsigned narrow type of a sub-byte integer's width. */
static emily_dtype unsigned_of(emily_dtype t) { return emily_dtype_bits(t) == 2 ? EMILY_U2 : EMILY_U4; }

/* Whether every value of the narrow type t is exactly a value of the
 * computed type w, of the same class (integer or inexact). */
static bool holds(emily_dtype w, emily_dtype t) {
    if (!emily_dtype_valid(w)) return false;
    if (emily_dtype_is_integer(t))
        return emily_dtype_is_integer(w) &&
               (emily_dtype_kind_of(t) == EMILY_KIND_UNSIGNED || emily_dtype_kind_of(w) == EMILY_KIND_SIGNED);
    return !emily_dtype_is_integer(w); /* f16, bf16, f32, f64 and complex hold every 8-bit float */
}

/* The type a narrow tensor argument of type t runs in: the call's
 * (widened) output type where that holds t, so that the callback's own
 * type inference finds the template's type (Nx's f16 + f8_e4m3fn is an
 * f16, u4 + s4 an s8); else t's compute type. */
static emily_dtype widen_to(emily_dtype t, emily_dtype out_type) {
    return holds(out_type, t) ? out_type : emily_dtype_compute_type(t);
}

/* dst <- src with every narrow tensor converted to `as` (when AUTO: to
 * widen_to(its type, prefer)) and every narrow template widened to its
 * compute type; arrays and tensors are owned by w. */
static emily_status widen_value(const char *callback, widened *w, const emily_value *src, emily_dtype as,
                                emily_dtype prefer, emily_value *dst) {
    *dst = *src;
    switch (src->kind) {
    case EMILY_V_TENSOR: {
        if (!src->tensor || !emily_dtype_is_narrow(src->tensor->dtype)) return EMILY_OK;
        emily_dtype to = as == EMILY_DTYPE_AUTO ? widen_to(src->tensor->dtype, prefer) : as;
        emily_tensor *t;
        emily_status s = emily_as_type(src->tensor, to, &t);
        if (s) return s;
        if (!keep((void ***)&w->tensors, &w->ntensors, &w->cap_tensors, t)) {
            emily_tensor_release(t);
            return out_of_memory(callback);
        }
        dst->tensor = t;
        return EMILY_OK;
    }
    case EMILY_V_TEMPLATE:
        if (emily_dtype_is_narrow(src->dtype)) dst->dtype = emily_dtype_compute_type(src->dtype);
        return EMILY_OK;
    case EMILY_V_TUPLE:
    case EMILY_V_LIST:
    case EMILY_V_OPTS: {
        if (!value_has_narrow(src)) return EMILY_OK;
        emily_value *items = calloc(src->n, sizeof *items);
        if (!items || !keep(&w->blocks, &w->nblocks, &w->cap_blocks, items)) {
            free(items);
            return out_of_memory(callback);
        }
        for (size_t i = 0; i < src->n; i++) {
            emily_status s = widen_value(callback, w, &src->items[i], as, prefer, &items[i]);
            if (s) return s;
        }
        dst->items = items;
        return EMILY_OK;
    }
    default: return EMILY_OK;
    }
}

/* The narrow dtype output k's template asks for, or AUTO. */
static emily_dtype template_narrow(const emily_value *out, int k) {
    const emily_value *t = out->kind == EMILY_V_TEMPLATE ? out : (size_t)k < out->n ? &out->items[k] : NULL;
    return t && t->kind == EMILY_V_TEMPLATE && emily_dtype_is_narrow(t->dtype) ? t->dtype : EMILY_DTYPE_AUTO;
}

/* count_leading_zeros of an unsigned b-bit value v computed as a u8:
 * the u8 count less the 8 - b high bits that are always zero. */
static emily_status clz_to_width(emily_device device, int bits, emily_tensor **r) {
    return emi_apply_scalar(device, EMILY_SUBTRACT, EMILY_U8, emily_scalar_int(8 - bits), r);
}

emily_status emi_dispatch_narrow(const emily_callback_entry *entry, emily_device device, const emily_value *out,
                                 const emily_value *args, size_t nargs, emily_dispatch_mode mode,
                                 emily_dispatch_result *result) {
    const char *callback = entry->info.name;
    /* a dot of two 8-bit floats keeps them for the tensor cores */
    if (emi_dot_fp8_routes(entry, device, out, args, nargs, mode))
        return emi_dispatch_dot_fp8(entry, device, out, args, nargs, result);
    bool counts = entry->fn == emi_cb_unary &&
                  (entry->op == EMILY_COUNT_LEADING_ZEROS || entry->op == EMILY_POPULATION_COUNT);
    /* the counts read the bits of the narrow type: its unsigned twin,
     * zero-extended into a u8, counted there */
    emily_dtype in_as = EMILY_DTYPE_AUTO;
    int bits = 8;
    if (counts && nargs >= 1 && args[0].kind == EMILY_V_TENSOR && args[0].tensor &&
        emily_dtype_is_narrow(args[0].tensor->dtype) && emily_dtype_is_integer(args[0].tensor->dtype)) {
        bits = emily_dtype_bits(args[0].tensor->dtype);
        in_as = unsigned_of(args[0].tensor->dtype);
    }
    widened w = {0};
    /* wide_out is read only once widened: a failed calloc above leaves it
     * unset (found by test_alloc_corpus: a segfault reading items[0]) */
    emily_value wide_out = {0}, *wide_args = nargs ? calloc(nargs, sizeof *wide_args) : NULL;
    emily_status s = nargs && !wide_args ? out_of_memory(callback) : EMILY_OK;
    if (!s) s = widen_value(callback, &w, out, EMILY_DTYPE_AUTO, EMILY_DTYPE_AUTO, &wide_out);
    /* the output type narrow inputs prefer (the first template's) */
    emily_dtype prefer = s                                                          ? EMILY_DTYPE_AUTO
                         : wide_out.kind == EMILY_V_TEMPLATE                        ? wide_out.dtype
                         : wide_out.n && wide_out.items[0].kind == EMILY_V_TEMPLATE ? wide_out.items[0].dtype
                                                                                    : EMILY_DTYPE_AUTO;
    for (size_t i = 0; !s && i < nargs; i++) {
        s = widen_value(callback, &w, &args[i], in_as, prefer, &wide_args[i]);
        /* the unsigned twin, then its u8 */
        if (!s && in_as != EMILY_DTYPE_AUTO && wide_args[i].kind == EMILY_V_TENSOR && wide_args[i].tensor &&
            emily_dtype_is_narrow(wide_args[i].tensor->dtype)) {
            emily_value twin = wide_args[i];
            s = widen_value(callback, &w, &twin, EMILY_U8, prefer, &wide_args[i]);
        }
    }
    if (!s && in_as != EMILY_DTYPE_AUTO && wide_out.kind == EMILY_V_TEMPLATE) wide_out.dtype = EMILY_U8;
    /* (nothing narrow is left, or this would come back here) */
    if (!s && emi_call_has_narrow(&wide_out, wide_args, nargs))
        s = emily_error(EMILY_ERR_INTERNAL, "%s: a narrow type was not widened", callback);
    if (!s) s = emi_dispatch_entry(entry, device, &wide_out, wide_args, nargs, mode, result);
    free(wide_args);
    widened_free(&w);
    if (s) return s;
    for (int k = 0; k < result->n; k++) {
        emily_dtype want = template_narrow(out, k);
        if (in_as != EMILY_DTYPE_AUTO && entry->op == EMILY_COUNT_LEADING_ZEROS && bits < 8 &&
            (s = clz_to_width(device, bits, &result->tensors[k])))
            break;
        if (want == EMILY_DTYPE_AUTO) continue;
        emily_tensor *narrow;
        if ((s = emily_as_type(result->tensors[k], want, &narrow))) break;
        emily_tensor_release(result->tensors[k]);
        result->tensors[k] = narrow;
    }
    if (s) emily_dispatch_result_release(result);
    return s;
}
