/* A small cache of freed host buffers for the CPU engine's allocator.
 *
 * glibc serves a large malloc from fresh pages (mmap, or a heap it trims
 * back on free), so an op that allocates its outputs and workspace anew
 * each call pays a page fault per 4 KiB on first touch: a fifth of a
 * 256 x 256 qr's time. Buffers between 64 KiB and 32 MiB are kept here
 * when freed (64 MiB in all, the oldest given back first) and handed out
 * again for an allocation of exactly the same size, which repeated calls
 * of an op on one shape make. Blocks are whole allocations (header
 * included) made by cpu_alloc; the cache never touches their contents.
 * Under AddressSanitizer nothing is cached, so that a use after free
 * stays detectable. Thread-safe. */
#ifndef EMILY_CPU_HOST_CACHE_H
#define EMILY_CPU_HOST_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* A cached block of exactly `total` bytes, or NULL. */
void *emi_host_cache_take(size_t total);
/* Keeps the block for reuse; false when it does not fit the cache (the
 * caller frees it). */
bool emi_host_cache_put(void *block, size_t total);
/* Bytes held in the cache. */
size_t emi_host_cache_bytes(void);
/* Frees every cached block. */
void emi_host_cache_clear(void);

#endif
