#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Sanitizer defaults for every target (the environment can add to them):
 * an allocation above 64 MiB fails (NULL, so the library's
 * out-of-memory paths run) instead of taking the machine's memory; a
 * harness limit, not the library's. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "allocator_may_return_null=1:max_allocation_size_mb=64:detect_leaks=1";
}
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "print_stacktrace=1:halt_on_error=1"; }

void fuzz_single_thread(void) {
    setenv("OMP_NUM_THREADS", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
}

int64_t fuzz_shape_elements(int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        int64_t d = shape[i] < 0 ? 0 : shape[i];
        if (d == 0) return 0;
        n = n > INT64_MAX / d ? INT64_MAX : n * d;
    }
    return n;
}

static void add_sat(int64_t *total, int64_t n) { *total = *total > INT64_MAX - n ? INT64_MAX : *total + n; }

static bool int_ok(int64_t v) {
    uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    return m <= (uint64_t)FUZZ_MAX_INT || m >= (uint64_t)FUZZ_HUGE_INT;
}

/* The value of an integer scalar tensor (what emi_value_int accepts). */
static bool tensor_int_ok(const emily_tensor *t) {
    emily_dtype dt = emily_tensor_dtype(t);
    if (emily_tensor_size(t) != 1 || !emily_dtype_is_integer(dt)) return true;
    /* the element's bytes as each integer type (the rest zeros) */
    union {
        uint8_t u8;
        int8_t s8;
        uint16_t u16;
        int16_t s16;
        uint32_t u32;
        int32_t s32;
        uint64_t u64;
        int64_t s64;
    } raw = {0};
    if (emily_to_binary(t, &raw, emily_dtype_size(dt)) != EMILY_OK) return true;
    int64_t v;
    switch (dt) {
    case EMILY_U8: v = raw.u8; break;
    case EMILY_S8: v = raw.s8; break;
    case EMILY_U16: v = raw.u16; break;
    case EMILY_S16: v = raw.s16; break;
    case EMILY_U32: v = raw.u32; break;
    case EMILY_S32: v = raw.s32; break;
    case EMILY_U64: v = raw.u64 > INT64_MAX ? INT64_MAX : (int64_t)raw.u64; break;
    default: v = raw.s64; break;
    }
    return int_ok(v);
}

static bool scan(const emily_value *v, int64_t *total, int depth) {
    if (depth > 4096) return false;
    switch (v->kind) {
    case EMILY_V_INT: return int_ok(v->i);
    case EMILY_V_TENSOR:
        if (!v->tensor) return true;
        add_sat(total, emily_tensor_size(v->tensor));
        return tensor_int_ok(v->tensor);
    case EMILY_V_TEMPLATE: add_sat(total, fuzz_shape_elements(v->rank, v->shape)); return true;
    case EMILY_V_TUPLE:
    case EMILY_V_LIST:
    case EMILY_V_OPTS:
        for (size_t i = 0; i < v->n; i++)
            if (!scan(&v->items[i], total, depth + 1)) return false;
        return true;
    default: return true;
    }
}

bool fuzz_call_ok(const emily_value *out, const emily_value *args, size_t nargs) {
    int64_t total = 0;
    if (!scan(out, &total, 0)) return false;
    for (size_t i = 0; i < nargs; i++)
        if (!scan(&args[i], &total, 0)) return false;
    return total <= FUZZ_MAX_ELEMENTS;
}

__attribute__((weak)) bool fuzz_alloc_failed(void) { return false; }

void fuzz_check_live(int64_t tensors, int64_t buffers, const char *what) {
    int64_t t = emily_live_tensors(), b = emily_live_buffers();
    if (t != tensors || b != buffers) {
        fprintf(stderr, "%s: %lld tensor handles and %lld buffers alive after the input, %lld and %lld before\n", what,
                (long long)t, (long long)b, (long long)tensors, (long long)buffers);
        abort();
    }
}
