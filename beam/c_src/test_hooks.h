/* Test-only NIF functions (see test_hooks.c), present when the NIF is
 * built with EMILY_NIF_TEST (by `mix test`). */
#ifndef EMILY_NIF_TEST_HOOKS_H
#define EMILY_NIF_TEST_HOOKS_H
#ifdef EMILY_NIF_TEST
#include "emily_nif.h"

/* Added to NIF_FUNCTIONS (emily_nif.h) in test builds. */
/* clang-format off */
#define NIF_TEST_FUNCTIONS(X)                                                             \
    X(test_property_checked_op, 2, 0) X(test_property_check, 4, NIF_DIRTY)                \
    X(test_property_description, 1, 0) X(test_export_count, 1, 0)
/* clang-format on */
NIF_TEST_FUNCTIONS(NIF_DECLARE)
#else
#define NIF_TEST_FUNCTIONS(X)
#endif
#endif
