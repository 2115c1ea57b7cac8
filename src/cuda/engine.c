/* The CUDA engine table (device type EMILY_DEVICE_CUDA). Memory, streams
 * and transfers live in runtime.c/transfer.c, kernels in the .cu files.
 * A build with the engine still runs CPU work on a machine without a GPU
 * or driver: the device count is then 0 and every CUDA entry point fails
 * with EMILY_ERR_DEVICE before it touches the GPU. */
#include "cuda/runtime.h"
#include "cuda/kernels.h"
#ifdef EMILY_CUDA_HAVE_DOT
#include "ops/dot_kernels.h"
#endif

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
    .copy = emi_cuda_copy,
    .convert = emi_cuda_convert,
    .fill = emi_cuda_fill,
    .iota = emi_cuda_iota,
    .eye = emi_cuda_eye,
    .unary = emi_cuda_unary,
    .binary = emi_cuda_binary,
    .select = emi_cuda_select,
    .reduce = emi_cuda_reduce,
    .argreduce = emi_cuda_argreduce,
    .all_close = emi_cuda_all_close,
};

/* Family tables defined in other translation units are read at first
 * use (they cannot be static initializers here). */
static emily_engine cuda_engine_full;
static pthread_once_t cuda_engine_once = PTHREAD_ONCE_INIT;

static void cuda_engine_init(void) {
    emily_engine e = cuda_engine;
    e.sort = &emi_cuda_sort_kernels;
#ifdef EMILY_CUDA_HAVE_DOT
    e.dot = &emi_cuda_dot_kernels;
#endif
    cuda_engine_full = e;
}

const emily_engine *emi_cuda_engine(void) {
    pthread_once(&cuda_engine_once, cuda_engine_init);
    return &cuda_engine_full;
}
