/* The CUDA engine's fused element-wise programs (fused.c): the engine's
 * `fused` ops, and the source generation and NVRTC compilation alone
 * (no device needed), for tests. */
#ifndef EMILY_CUDA_FUSED_H
#define EMILY_CUDA_FUSED_H

#include "core/engine.h"

/* Threads per block of a fused kernel. */
#define EMI_CUDA_FUSED_BLOCK 256

extern const struct emily_fused_ops emi_cuda_fused_ops;

/* The CUDA C source of p's kernel (the cache key), or NULL where an
 * instruction has no element function. Caller frees. */
char *emi_cuda_fused_source(const emi_fused_program *p);

/* Compiles source for sm_<arch> with NVRTC: *cubin (caller frees) or an
 * error, with NVRTC's log in *log when log is not NULL (caller frees). */
emily_status emi_cuda_fused_compile(const char *source, int arch, void **cubin, size_t *size, char **log);

/* The cubin of source for sm_<arch>: from the disk cache (fused_disk.c;
 * *from_disk true) or compiled and stored there. Caller frees *cubin. */
emily_status emi_cuda_fused_cubin(const char *source, int arch, void **cubin, size_t *size, char **log,
                                  bool *from_disk);

#endif
