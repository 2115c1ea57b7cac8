/* The device interface: each device type supplies an engine, a table of
 * memory functions and kernels. Op semantics (src/ops) validate, infer
 * the output, build views, allocate the output on the inputs' device and
 * then call a kernel through this table; they never know which device
 * runs it. Kernels may be asynchronous: they enqueue and return.
 *
 * Kernel conventions: `dst` is a fresh contiguous tensor unless a kernel
 * says otherwise; inputs are views of any strides (zero strides for
 * broadcast axes, negative for reversed ones) on the same device. A NULL
 * entry means "not implemented on this device" and the op fails with
 * EMILY_ERR_UNSUPPORTED naming op and device. */
#ifndef EMILY_ENGINE_H
#define EMILY_ENGINE_H

#include "emily/ops.h"
#include "core/tensor_impl.h"

typedef struct emily_engine emily_engine;

/* Kernel families of the later ops; each is defined by its own header
 * under src/ops and filled by each device's engine. */
struct emily_dot_kernels;
struct emily_window_kernels;
struct emily_index_kernels;
struct emily_sort_kernels;
struct emily_cumulative_kernels;
struct emily_fft_kernels;
struct emily_linalg_kernels;

struct emily_engine {
    const char *name;
    /* devices present (0 if none) */
    int (*device_count)(void);

    /* memory: alloc/free go through the engine's caching allocator */
    emily_status (*alloc)(int device, size_t nbytes, void **ptr);
    void (*free)(int device, void *ptr);
    emily_status (*upload)(int device, void *dst, const void *src, size_t nbytes);
    /* waits for queued work touching src, then copies to host memory */
    emily_status (*download)(int device, void *dst, const void *src, size_t nbytes);
    emily_status (*synchronize)(int device);
    emily_status (*memory_stats)(int device, emily_memory_stats *out);
    emily_status (*release_cache)(int device);
    /* true if buffer memory is directly addressable by the host */
    bool host_addressable;

    /* Streams (src/core/stream.c implements include/emily/device.h's
     * emily_stream_* API on these). A handle is the engine's own stream
     * object; NULL stands for the device's default stream.
     * stream_new: a new queue on `device`.
     * stream_free: waits for the stream's work, then destroys it; a
     *   thread whose current stream it was falls back to the default.
     * stream_synchronize: waits for the stream's work (NULL: default).
     * stream_set_current: the calling thread's current stream for
     *   `device` (NULL: back to the default stream). */
    emily_status (*stream_new)(int device, void **handle);
    emily_status (*stream_free)(int device, void *handle);
    emily_status (*stream_synchronize)(int device, void *handle);
    emily_status (*stream_set_current)(int device, void *handle);

    /* dst (any strides, same shape and dtype as src) <- src */
    emily_status (*copy)(emily_tensor *dst, const emily_tensor *src);
    /* dst <- src converted with Nx's as_type rules (types may differ) */
    emily_status (*convert)(emily_tensor *dst, const emily_tensor *src);
    /* every element of dst <- value converted to dst's dtype */
    emily_status (*fill)(emily_tensor *dst, const emily_scalar *value);
    emily_status (*iota)(emily_tensor *dst, int axis);
    emily_status (*eye)(emily_tensor *dst);
    /* src has the op's compute type (see src/ops/elementwise.c); dst the
     * output type */
    emily_status (*unary)(emily_unary_op op, emily_tensor *dst, const emily_tensor *src);
    /* a and b have the same (compute) dtype and dst's shape (broadcast
     * views); dst has a's dtype, or u8 for comparisons/logical ops (the op
     * layer converts to the output type afterwards) */
    emily_status (*binary)(emily_binary_op op, emily_tensor *dst,
                           const emily_tensor *a, const emily_tensor *b);
    /* pred is u8-compatible integer/float (nonzero = true) in dst's shape;
     * on_true/on_false have dst's dtype and shape (broadcast views) */
    emily_status (*select)(emily_tensor *dst, const emily_tensor *pred,
                           const emily_tensor *on_true, const emily_tensor *on_false);
    /* dst has src's rank with reduced axes of size 1 (reduced[i] true);
     * src has dst's dtype except for ALL/ANY (dst u8) */
    emily_status (*reduce)(emily_reduce_op op, emily_tensor *dst,
                           const emily_tensor *src, const bool *reduced);
    /* axis < 0: flattened. dst holds indices in its integer dtype, with
     * src's rank and axis of size 1 (or rank 0 when flattened) */
    emily_status (*argreduce)(emily_arg_op op, emily_tensor *dst,
                              const emily_tensor *src, int axis, bool tie_break_high);
    /* a, b same dtype and shape; dst u8 scalar */
    emily_status (*all_close)(emily_tensor *dst, const emily_tensor *a,
                              const emily_tensor *b, double rtol, double atol,
                              bool equal_nan);

    const struct emily_dot_kernels *dot;
    const struct emily_window_kernels *window;
    const struct emily_index_kernels *index;
    const struct emily_sort_kernels *sort;
    const struct emily_cumulative_kernels *cumulative;
    const struct emily_fft_kernels *fft;
    const struct emily_linalg_kernels *linalg;
};

/* The engine of a device type, or NULL when it was not built in. */
const emily_engine *emi_engine_for(emily_device_type type);
/* Fails with a clear message unless the device exists and works. */
emily_status emi_engine_get(emily_device d, const emily_engine **out);

/* Engines are linked in by these (NULL when not built). */
const emily_engine *emi_cpu_engine(void);
const emily_engine *emi_cuda_engine(void);

#endif
