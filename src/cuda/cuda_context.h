/* What a CUDA kernel file needs from the CUDA engine: the device and
 * stream an op runs on, buffer ordering across streams, scratch memory,
 * cuBLAS and cuSOLVER handles and error conversion. Plain C (included from C and
 * from nvcc-compiled .cu files).
 *
 * The pattern of every CUDA kernel entry point:
 *
 *     emily_cuda_ctx ctx;
 *     const emily_tensor *ts[] = {dst, a, b};
 *     emily_status s = emi_cuda_begin("add", dst->buffer->device.index, 3, ts, &ctx);
 *     if (s) return s;
 *     my_kernel<<<grid, block, 0, ctx.stream>>>(...);
 *     return emi_cuda_launched(&ctx);
 *
 * emi_cuda_begin makes the device current for the calling thread,
 * takes the thread's current stream for it, and makes that stream wait
 * for work other streams queued on the tensors' buffers (the engine
 * records, per buffer, the stream that last used it). Work is only
 * enqueued: nothing waits for the device here. */
#ifndef EMILY_CUDA_CONTEXT_H
#define EMILY_CUDA_CONTEXT_H

#include <cuda_runtime_api.h>
#include <cublas_v2.h>
#include <cusolverDn.h>

#ifdef __cplusplus
/* The core headers are C11: their refcounts are _Atomic long, which C++
 * spells std::atomic<long> (same size and alignment with gcc); their
 * functions have C linkage. */
#include <atomic>
using std::atomic_long;
extern "C" {
#endif

#include "core/engine.h"

#define EMILY_CUDA_MAX_DEVICES 64

typedef struct emily_cuda_stream emily_cuda_stream; /* the engine's stream object */

typedef struct emily_cuda_ctx {
    const char *op;
    int device;
    cudaStream_t stream;
    emily_cuda_stream *owner;
} emily_cuda_ctx;

/* Starts an op (see above). NULL entries of ts and empty tensors are
 * skipped; n may be 0. */
emily_status emi_cuda_begin(const char *op, int device, int n, const emily_tensor *const *ts, emily_cuda_ctx *ctx);
/* Call after the launches of an op: reports a failed launch as
 * "cuda: <op>: <message>". */
emily_status emi_cuda_launched(const emily_cuda_ctx *ctx);

/* cudaSuccess -> EMILY_OK; otherwise "cuda: <op>: <cudaGetErrorString>"
 * as EMILY_ERR_MEMORY for out-of-memory and EMILY_ERR_DEVICE otherwise. */
emily_status emi_cuda_error(const char *op, cudaError_t err);

/* Temporary device memory for one op, from the caching allocator,
 * ordered on ctx's stream: free it right after the launches that use it
 * (reuse by another stream waits for this one). */
emily_status emi_cuda_scratch(const emily_cuda_ctx *ctx, size_t nbytes, void **ptr);
void emi_cuda_scratch_free(const emily_cuda_ctx *ctx, void *ptr);

/* True while the calling thread records the work it queues on `device`
 * into a graph to replay (replay.c): then nothing may be read back from
 * the device or waited for (the work has not run), and transfers and
 * waits fail. A check that reads back a flag to report bad input defers
 * it instead: emi_cuda_deferred_flag gives 8 bytes of the recording's
 * memory, kept as long as it is, which the check's kernel must leave at
 * ~0 when everything is fine; each replay reads the flags back. */
bool emi_cuda_capturing(int device);
emily_status emi_cuda_deferred_flag(const emily_cuda_ctx *ctx, unsigned long long **flag);

/* A cuBLAS handle bound to ctx's stream (created at first use, default
 * math mode: no TF32). */
emily_status emi_cuda_cublas(const emily_cuda_ctx *ctx, cublasHandle_t *out);

/* A cuSOLVER dense handle bound to ctx's stream and a parameter object
 * for its 64-bit API (default algorithms), both created at first use. */
emily_status emi_cuda_cusolver(const emily_cuda_ctx *ctx, cusolverDnHandle_t *handle, cusolverDnParams_t *params);

/* Multiprocessors of a device (after emi_cuda_begin succeeded for it). */
int emi_cuda_sm_count(int device);

/* The calling thread's current CUDA stream for `device` (for tests and
 * benchmarks that time with CUDA events). */
emily_status emi_cuda_current_stream(int device, cudaStream_t *out);

#ifdef __cplusplus
}
#endif
#endif
