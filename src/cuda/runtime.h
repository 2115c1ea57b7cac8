/* Internals of the CUDA engine's runtime (C only): devices, streams, the
 * caching allocator and transfers. Kernel files use cuda_context.h. */
#ifndef EMILY_CUDA_RUNTIME_H
#define EMILY_CUDA_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include "cuda/cuda_context.h"

/* A stream object. The struct is never freed (freed streams go to a free
 * list and are reused), so a stale pointer is always safe to read: its
 * `gen` no longer matches the generation recorded with the pointer. */
struct emily_cuda_stream {
    int device;
    cudaStream_t stream;
    cudaEvent_t event;           /* recorded when another stream must wait */
    atomic_ullong gen;           /* unique while live; 0 once freed */
    cublasHandle_t cublas;       /* created at first use */
    cusolverDnHandle_t cusolver; /* created at first use, with its params */
    cusolverDnParams_t cusolver_params;
    struct emily_cuda_stream *next_free;
};

/* Devices present (0 without a driver or GPU). */
int emi_cuda_device_count(void);
/* Initializes the device's state at first use and makes it the calling
 * thread's current device. Fails with "cuda: <op>: ..." */
emily_status emi_cuda_enter(const char *op, int device);

/* Caching allocator (engine entries). */
emily_status emi_cuda_alloc(int device, size_t nbytes, void **ptr);
void emi_cuda_free(int device, void *ptr);
emily_status emi_cuda_memory_stats(int device, emily_memory_stats *out);
emily_status emi_cuda_release_cache(int device);
emily_status emi_cuda_synchronize(int device);

/* Streams (engine entries). */
emily_status emi_cuda_stream_new(int device, void **handle);
emily_status emi_cuda_stream_free(int device, void *handle);
emily_status emi_cuda_stream_synchronize(int device, void *handle);
emily_status emi_cuda_stream_set_current(int device, void *handle);
/* The calling thread's current stream handle (NULL: the default). */
void *emi_cuda_stream_get_current(int device);

/* Orders a transfer touching device memory `ptr` on the calling thread's
 * current stream, which is stored in *stream. *known is false when ptr is
 * not the start of a live allocation (the caller must then wait for the
 * whole device before reading it). */
emily_status emi_cuda_order_ptr(const char *op, int device, const void *ptr, cudaStream_t *stream, bool *known);

/* Arenas: while an arena is the calling thread's current one for a
 * device, that thread's allocations there (outputs, scratch) come from
 * blocks the arena owns, and blocks it owns go back to it when freed, by
 * any thread, never to the device's cache. A recorded graph (replay.c)
 * keeps its buffers this way: a replay rewrites them, and nothing else
 * can have been given them meanwhile. emi_cuda_arena_free waits for the
 * device, gives the unused blocks back to it and leaves blocks still
 * live to the device's cache. */
typedef struct emi_cuda_arena emi_cuda_arena;
emily_status emi_cuda_arena_new(int device, emi_cuda_arena **out);
void emi_cuda_arena_set_current(int device, emi_cuda_arena *a); /* NULL: none */
size_t emi_cuda_arena_bytes(const emi_cuda_arena *a);
void emi_cuda_arena_free(emi_cuda_arena *a);

/* Transfers (engine entries, src/cuda/transfer.c). */
emily_status emi_cuda_upload(int device, void *dst, const void *src, size_t nbytes);
emily_status emi_cuda_download(int device, void *dst, const void *src, size_t nbytes);

#endif
