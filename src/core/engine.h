/* The device interface: each device type supplies an engine, a table of
 * memory functions, streams and kernel families (src/core/kernels.h).
 * Op semantics (src/ops) validate, infer the output, build views,
 * allocate the output on the inputs' device, ask supports() whether the
 * device has the kernel, and call it through the family's table; they
 * never know which device runs it.
 *
 * An engine is a constant table: every family pointer is the address of
 * the family's constant table, so engines need no initialization and are
 * safe to read from any thread. */
#ifndef EMILY_ENGINE_H
#define EMILY_ENGINE_H

#include "emily/ops.h"
#include "core/tensor_impl.h"
#include "core/kernels.h"

typedef struct emily_engine emily_engine;

/* Recording a compiled graph's run once and replaying it (optional: NULL
 * where the device cannot). src/graph/replay.c drives it:
 * - begin: a new recording; from now on the calling thread's allocations
 *   on the device come from the recording's own memory;
 * - capture: from now on, until end, the work the thread queues on the
 *   device is recorded instead of run;
 * - end: stops both; with keep (and a recording that worked) it becomes
 *   replayable, otherwise it fails with the reason;
 * - launch: queues the recorded work on the thread's current stream
 *   after the previous replay's finish; *failed tells whether a check the
 *   recording deferred (an index out of range) failed in this run (the
 *   caller then runs the calls themselves for the error);
 * - finish: marks the end of what reads the recording's memory after a
 *   launch (the outputs' copies), which the next launch waits for;
 * - bytes: the recording's memory;
 * - free: waits for the device, frees the recording and its memory
 *   (blocks still live are left to the device's cache). */
struct emily_replay_ops {
    emily_status (*begin)(int device, void **rec);
    emily_status (*capture)(int device, void *rec);
    emily_status (*end)(int device, void *rec, bool keep);
    emily_status (*launch)(int device, void *rec, bool *failed);
    emily_status (*finish)(int device, void *rec);
    size_t (*bytes)(const void *rec);
    void (*free)(int device, void *rec);
};

/* A fused element-wise program (optional: NULL where the device runs a
 * graph's fused groups call by call or, as the CPU, slab by slab).
 * src/graph/fuse_lower.c lowers a group of a compiled graph's element-wise
 * calls to one, with the op layer's own choices of compute types, so
 * that each element goes through exactly the kernels, conversions and
 * roundings the unfused calls would apply, and the device runs it as
 * one kernel over the group's shape. Slots: the inputs are slots
 * 0..ninputs-1, instruction k writes slot ninputs + k. */
typedef enum emi_fused_kind {
    EMI_FUSED_UNARY,   /* op: emily_unary_op; a of dtype `in` -> `out` */
    EMI_FUSED_BINARY,  /* op: emily_binary_op; a, b of dtype `in` -> `out` */
    EMI_FUSED_SELECT,  /* a: the predicate (dtype `pred`, real), b, c of dtype `out` */
    EMI_FUSED_CONVERT, /* as_type of a from `in` to `out` */
} emi_fused_kind;

typedef struct emi_fused_instr {
    emi_fused_kind kind;
    int op;
    emily_dtype in, out, pred;
    int32_t a, b, c;
} emi_fused_instr;

#define EMI_FUSED_MAX_INPUTS 16
#define EMI_FUSED_MAX_EXITS 16

typedef struct emi_fused_program {
    int rank;
    const int64_t *shape; /* the iteration shape S (size > 0) */
    int ninputs;          /* each broadcasts to S right-aligned */
    const emily_tensor *inputs[EMI_FUSED_MAX_INPUTS];
    int ninstr;
    const emi_fused_instr *instr;
    int nexits; /* fresh row-major tensors of shape S */
    int32_t exit_slot[EMI_FUSED_MAX_EXITS];
    emily_tensor *exits[EMI_FUSED_MAX_EXITS];
} emi_fused_program;

/* run: computes the exits; EMILY_ERR_UNSUPPORTED (no message needed)
 * when the device cannot run this program now (the caller runs the
 * calls one by one instead). */
struct emily_fused_ops {
    emily_status (*run)(const emi_fused_program *p);
};

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

    /* Kernel families (NULL: the device has none of the family). */
    const struct emily_copy_kernels *copy;
    const struct emily_creation_kernels *creation;
    const struct emily_elementwise_kernels *elementwise;
    const struct emily_reduce_kernels *reduce;
    const struct emily_dot_kernels *dot;
    const struct emily_window_kernels *window;
    const struct emily_index_kernels *index;
    const struct emily_sort_kernels *sort;
    const struct emily_cumulative_kernels *cumulative;
    const struct emily_fft_kernels *fft;
    const struct emily_linalg_kernels *linalg;
    const struct emily_conv_kernels *conv; /* optional: see kernels.h */
    const struct emily_fast_kernels *fast;
    const struct emily_quant_kernels *quant;
    const struct emily_replay_ops *replay; /* optional: see above */
    const struct emily_fused_ops *fused;   /* optional: see above */

    /* True if the device runs kernel k for op `op` (the family's op enum:
     * emily_unary_op for EMI_KERNEL_UNARY, ...; 0 where it has none) on
     * operands of `dtypes` (the op's input or compute types, n of them;
     * n may be 0). The op layer asks before every kernel call and fails
     * with EMILY_ERR_UNSUPPORTED naming op and device when the answer is
     * no. A device whose kernels cover every op and dtype they are handed
     * answers emi_engine_has_kernel. */
    bool (*supports)(const emily_engine *e, emi_kernel k, int op, const emily_dtype *dtypes, int n);
};

/* True if e's table has kernel k (its family and entry are not NULL). */
bool emi_engine_has_kernel(const emily_engine *e, emi_kernel k, int op, const emily_dtype *dtypes, int n);

/* e->supports for one operand dtype. */
static inline bool emi_engine_supports(const emily_engine *e, emi_kernel k, int op, emily_dtype dtype) {
    return e->supports(e, k, op, &dtype, 1);
}

/* The engine of a device type, or NULL when it was not built in. */
const emily_engine *emi_engine_for(emily_device_type type);
/* Fails with a clear message unless the device exists and works. */
emily_status emi_engine_get(emily_device d, const emily_engine **out);

/* Engines are linked in by these (NULL when not built). */
const emily_engine *emi_cpu_engine(void);
const emily_engine *emi_cuda_engine(void);

#endif
