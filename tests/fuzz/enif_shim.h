/* A stand-in for the parts of ERTS's NIF API (erl_nif.h) that the NIF's
 * term decoding (beam/c_src/terms.c) calls, so that it can be fuzzed
 * outside a VM. Terms are decoded from the external term format (what
 * erlang:term_to_binary/1 writes) into small structs that live in an
 * ErlNifEnv until it is reset; an ERL_NIF_TERM is a pointer to one.
 *
 * Covered: atoms (all four encodings), integers (small, 32-bit, bignums),
 * floats (both encodings), binaries and bitstrings, tuples, lists
 * (proper, improper, STRING_EXT), maps, references, pids, ports and
 * export funs. Refused as binary_to_term refuses them: NaN and infinite
 * floats, invalid UTF-8 atoms, duplicate map keys, malformed bitstrings,
 * this VM's references with more than 18 bits in their first ID word;
 * not covered (refused): compressed terms, atom cache references, local
 * funs. Bytes after the term are ignored, as binary_to_term/1 ignores
 * them. Nesting is limited to SHIM_MAX_DEPTH. */
#ifndef EMILY_FUZZ_ENIF_SHIM_H
#define EMILY_FUZZ_ENIF_SHIM_H

#include <erl_nif.h>
#include <stddef.h>

#define SHIM_MAX_DEPTH 256

ErlNifEnv *shim_env_new(void);
/* Frees every term made in the env (decoded or made by enif_make_*). */
void shim_env_reset(ErlNifEnv *env);
void shim_env_free(ErlNifEnv *env);

/* Decodes `size` bytes of external term format (version byte 131 first;
 * bytes after the term are ignored, as binary_to_term/1 ignores them).
 * 0, or -1 for bytes binary_to_term would refuse (or that the shim does
 * not cover). The bytes are copied. */
int shim_binary_to_term(ErlNifEnv *env, const unsigned char *data, size_t size, ERL_NIF_TERM *out);

/* Resource types and objects: a reference of this VM (node
 * nonode@nohost, creation 0) whose first ID word is w names
 * objs[w % (n + 1)] of `type` (w % (n + 1) == n: a reference that is no
 * resource); other nodes' references are never resources. The objects
 * stay the caller's. */
ErlNifResourceType *shim_resource_type(const char *name);
void shim_set_resources(ErlNifResourceType *type, void **objs, size_t n);

#endif
