/* Allocation-failure injection for the unit tests (SQLite-style OOM
 * testing). test_alloc_failure is linked with `ld --wrap` for malloc,
 * calloc, realloc and aligned_alloc (see the Makefile), so every
 * allocation the library makes (it is linked statically) and the test's
 * own go through fail_alloc.c, which can make one of them fail.
 * Allocations inside shared libraries (OpenBLAS, libgomp) are not
 * affected. Only the test binary that is linked this way may include
 * this header. */
#ifndef EMILY_TEST_FAIL_ALLOC_H
#define EMILY_TEST_FAIL_ALLOC_H

#include <stdbool.h>

/* Arms the injector: the n-th allocation from now (n >= 1) fails, once;
 * n = 0 disarms it. */
void fail_alloc_after(long n);
/* Whether the failure armed last happened (disarming keeps the answer). */
bool fail_alloc_fired(void);

#endif
