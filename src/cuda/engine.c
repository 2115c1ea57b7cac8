/* The CUDA engine table (device type EMILY_DEVICE_CUDA). Memory, streams
 * and transfers live in runtime.c/transfer.c, kernels in the .cu files.
 * A build with the engine still runs CPU work on a machine without a GPU
 * or driver: the device count is then 0 and every CUDA entry point fails
 * with EMILY_ERR_DEVICE before it touches the GPU. */
#include "cuda/fused.h"
#include "cuda/runtime.h"
#include "cuda/kernels.h"

/* The tables of the families whose kernels are single functions of their
 * own files (core/device_kernels.h). */
EMI_DEVICE_SINGLE_TABLES(emi_cuda)

static const emily_engine cuda_engine = {
    .name = "cuda",
    .device_count = emi_cuda_device_count,
    .alloc = emi_cuda_alloc,
    .free = emi_cuda_free,
    .upload = emi_cuda_upload,
    .download = emi_cuda_download,
    .synchronize = emi_cuda_synchronize,
    .memory_stats = emi_cuda_memory_stats,
    .release_cache = emi_cuda_release_cache,
    .host_addressable = false,
    .stream_new = emi_cuda_stream_new,
    .stream_free = emi_cuda_stream_free,
    .stream_synchronize = emi_cuda_stream_synchronize,
    .stream_set_current = emi_cuda_stream_set_current,
    EMI_DEVICE_FAMILY_SLOTS(emi_cuda),
#ifdef EMILY_CUDA_HAVE_DOT
    .dot = &emi_cuda_dot_kernels,
#endif
    .conv = &emi_cuda_conv_kernels,
    .replay = &emi_cuda_replay_ops,
    .fused = &emi_cuda_fused_ops,
    /* the kernels it has run every op and dtype they are handed; the
     * families it lacks (NULL) are "not available on the cuda device" */
    .supports = emi_engine_has_kernel,
};

const emily_engine *emi_cuda_engine(void) { return &cuda_engine; }
