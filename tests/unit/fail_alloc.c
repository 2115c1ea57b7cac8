/* The allocator shim of fail_alloc.h: `ld --wrap=malloc` turns the
 * program's calls of malloc into __wrap_malloc and lets __real_malloc
 * name the C library's (the same for calloc, realloc, aligned_alloc). */
#include <stdatomic.h>
#include <stddef.h>
#include "fail_alloc.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t count, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t count, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);

/* allocations left before the failing one (0: disarmed); atomic because
 * kernels may allocate from OpenMP threads */
static atomic_long countdown;
static atomic_bool fired;

void fail_alloc_after(long n) {
    if (n > 0) atomic_store(&fired, false); /* disarming keeps the answer */
    atomic_store(&countdown, n > 0 ? n : 0);
}

bool fail_alloc_fired(void) { return atomic_load(&fired); }

/* True when this allocation is the one to fail. */
static bool should_fail(void) {
    long left = atomic_load(&countdown);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&countdown, &left, left - 1)) {
            if (left != 1) return false;
            atomic_store(&fired, true);
            return true;
        }
    }
    return false;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t count, size_t n) { return should_fail() ? NULL : __real_calloc(count, n); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t align, size_t n) { return should_fail() ? NULL : __real_aligned_alloc(align, n); }
