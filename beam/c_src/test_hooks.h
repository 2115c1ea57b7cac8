/* Test-only NIF functions (see test_hooks.c), present when the NIF is
 * built with EMILY_NIF_TEST (by `mix test`). */
#ifndef EMILY_NIF_TEST_HOOKS_H
#define EMILY_NIF_TEST_HOOKS_H
#ifdef EMILY_NIF_TEST
#include <erl_nif.h>

ERL_NIF_TERM nif_test_property_checked_op(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM nif_test_property_check(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM nif_test_property_description(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);
ERL_NIF_TERM nif_test_export_count(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]);

#define EMILY_TEST_NIFS                                                    \
    {"test_property_checked_op", 1, nif_test_property_checked_op, 0},      \
    {"test_property_check", 4, nif_test_property_check, ERL_NIF_DIRTY_JOB_CPU_BOUND}, \
    {"test_property_description", 1, nif_test_property_description, 0},    \
    {"test_export_count", 1, nif_test_export_count, 0},
#else
#define EMILY_TEST_NIFS
#endif
#endif
