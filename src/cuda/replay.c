/* Recording a graph's run as a CUDA graph and replaying it (the engine's
 * replay ops, core/engine.h; src/graph/replay.c decides when).
 *
 * A recording is an arena (runtime.h: the memory its run allocates,
 * private to it) plus the CUDA graph captured from the calling thread's
 * current stream while the graph's calls queued their work. A replay
 * launches that CUDA graph: the same kernels on the same buffers, with
 * one launch instead of one per kernel and none of the calls' host work.
 *
 * Capture is relaxed (cudaStreamCaptureModeRelaxed): an allocation that
 * finds no unused block in the arena calls cudaMalloc, which relaxed
 * capture allows. What capture cannot record is anything the host does
 * with the device's results: a read back or a wait while recording would
 * read memory nothing has written yet. So while the thread records,
 * transfers and waits fail (emi_cuda_capturing, checked in runtime.c and
 * transfer.c), which fails the recording, and the graph runs call by
 * call from then on. Index checks, which read back one flag, defer it
 * instead (emi_cuda_deferred_flag): the flag lives in the recording and
 * each launch reads all of them back once the run is done. */
#include <stdlib.h>
#include <string.h>
#include "cuda/runtime.h"
#include "cuda/kernels.h"

typedef struct cuda_recording {
    int device;
    emi_cuda_arena *arena;
    void *own_stream;      /* the recording's stream (engine handle) */
    void *previous_stream; /* the thread's current one before begin */
    bool switched;         /* own_stream is the thread's current one */
    cudaStream_t stream;   /* captured from */
    bool capturing;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaEvent_t finished; /* after the last replay's readers */
    bool have_finished;
    unsigned long long **flags; /* deferred checks' flags (arena memory) */
    int nflags, flags_cap;
    unsigned long long *host_flags; /* pinned, nflags */
} cuda_recording;

/* The recording the calling thread is capturing into, per device. */
static _Thread_local cuda_recording *tls_capture[EMILY_CUDA_MAX_DEVICES];

bool emi_cuda_capturing(int device) {
    return device >= 0 && device < EMILY_CUDA_MAX_DEVICES && tls_capture[device] != NULL;
}

emily_status emi_cuda_deferred_flag(const emily_cuda_ctx *ctx, unsigned long long **flag) {
    cuda_recording *r = emi_cuda_capturing(ctx->device) ? tls_capture[ctx->device] : NULL;
    if (!r) return emily_error(EMILY_ERR_ARGUMENT, "cuda: %s: no recording to defer a check to", ctx->op);
    if (r->nflags == r->flags_cap) {
        int cap = r->flags_cap ? 2 * r->flags_cap : 8;
        unsigned long long **f = realloc(r->flags, (size_t)cap * sizeof *f);
        if (!f) return emily_error(EMILY_ERR_MEMORY, "cuda: %s: out of host memory", ctx->op);
        r->flags = f;
        r->flags_cap = cap;
    }
    void *p;
    emily_status s = emi_cuda_scratch(ctx, sizeof **flag, &p); /* the arena's: kept until the recording goes */
    if (s) return s;
    r->flags[r->nflags++] = p;
    *flag = p;
    return EMILY_OK;
}

static void recording_free(int device, void *rec) {
    cuda_recording *r = rec;
    if (!r) return;
    if (r->capturing) { /* abandoned mid-capture: end it, drop what it got */
        cudaGraph_t g = NULL;
        if (cudaStreamEndCapture(r->stream, &g) == cudaSuccess && g) cudaGraphDestroy(g);
        tls_capture[device] = NULL;
    }
    (void)cudaDeviceSynchronize(); /* a replay and its readers may be queued */
    if (r->exec) cudaGraphExecDestroy(r->exec);
    if (r->graph) cudaGraphDestroy(r->graph);
    if (r->finished) cudaEventDestroy(r->finished);
    if (r->host_flags) cudaFreeHost(r->host_flags);
    for (int i = 0; i < r->nflags; i++) emi_cuda_free(device, r->flags[i]);
    free(r->flags);
    emi_cuda_arena_set_current(device, NULL);
    emi_cuda_arena_free(r->arena);
    if (r->switched) (void)emi_cuda_stream_set_current(device, r->previous_stream);
    if (r->own_stream) (void)emi_cuda_stream_free(device, r->own_stream);
    (void)cudaGetLastError();
    free(r);
}

static emily_status recording_begin(int device, void **rec) {
    emily_status s = emi_cuda_enter("record", device);
    if (s) return s;
    cuda_recording *r = calloc(1, sizeof *r);
    if (!r) return emily_error(EMILY_ERR_MEMORY, "cuda: record: out of host memory");
    r->device = device;
    /* Recorded on a stream of its own: another thread's work queued on
     * the thread's usual stream meanwhile must not land in the recording.
     * Its cuBLAS handle is made now (making one while recording would
     * allocate and wait). */
    r->previous_stream = emi_cuda_stream_get_current(device);
    emily_cuda_ctx ctx;
    cublasHandle_t h;
    if (!(s = emi_cuda_stream_new(device, &r->own_stream)) &&
        !(s = emi_cuda_stream_set_current(device, r->own_stream))) {
        r->switched = true;
        if (!(s = emi_cuda_begin("record", device, 0, NULL, &ctx))) s = emi_cuda_cublas(&ctx, &h);
    }
    if (!s) s = emi_cuda_arena_new(device, &r->arena);
    if (s) {
        recording_free(device, r);
        return s;
    }
    emi_cuda_arena_set_current(device, r->arena);
    *rec = r;
    return EMILY_OK;
}

static emily_status recording_capture(int device, void *rec) {
    cuda_recording *r = rec;
    emily_status s = emi_cuda_current_stream(device, &r->stream);
    if (s) return s;
    /* Nothing pending anywhere: the constants and parameters the calls
     * read need no ordering inside the recording (runtime.c, use_block). */
    cudaError_t err = cudaDeviceSynchronize();
    if (!err) err = cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeRelaxed);
    if (err) return emi_cuda_error("record", err);
    r->capturing = true;
    tls_capture[device] = r;
    return EMILY_OK;
}

static emily_status recording_end(int device, void *rec, bool keep) {
    cuda_recording *r = rec;
    emi_cuda_arena_set_current(device, NULL);
    if (r->switched) {
        (void)emi_cuda_stream_set_current(device, r->previous_stream);
        r->switched = false;
    }
    cudaError_t err = cudaSuccess;
    if (r->capturing) {
        err = cudaStreamEndCapture(r->stream, &r->graph);
        r->capturing = false;
        tls_capture[device] = NULL;
    }
    if (!keep) { /* the calls failed: their error is the one to report */
        (void)cudaGetLastError();
        return EMILY_OK;
    }
    if (err) return emi_cuda_error("record", err);
    if (!r->graph) return emily_error(EMILY_ERR_DEVICE, "cuda: record: the capture recorded nothing");
    if ((err = cudaGraphInstantiate(&r->exec, r->graph, 0))) return emi_cuda_error("record", err);
    if ((err = cudaEventCreateWithFlags(&r->finished, cudaEventDisableTiming))) return emi_cuda_error("record", err);
    if (r->nflags && (err = cudaMallocHost((void **)&r->host_flags, (size_t)r->nflags * sizeof *r->host_flags)))
        return emi_cuda_error("record", err);
    return EMILY_OK;
}

static emily_status recording_launch(int device, void *rec, bool *failed) {
    cuda_recording *r = rec;
    *failed = false;
    emily_status s = emi_cuda_enter("replay", device);
    cudaStream_t st;
    if (s || (s = emi_cuda_current_stream(device, &st))) return s;
    cudaError_t err = r->have_finished ? cudaStreamWaitEvent(st, r->finished, 0) : cudaSuccess;
    if (!err) err = cudaGraphLaunch(r->exec, st);
    for (int i = 0; !err && i < r->nflags; i++)
        err = cudaMemcpyAsync(&r->host_flags[i], r->flags[i], sizeof *r->host_flags, cudaMemcpyDeviceToHost, st);
    if (!err && r->nflags) err = cudaStreamSynchronize(st);
    if (err) return emi_cuda_error("replay", err);
    for (int i = 0; i < r->nflags; i++)
        if (r->host_flags[i] != ~0ull) *failed = true;
    return EMILY_OK;
}

static emily_status recording_finish(int device, void *rec) {
    cuda_recording *r = rec;
    cudaStream_t st;
    emily_status s = emi_cuda_current_stream(device, &st);
    if (s) return s;
    cudaError_t err = cudaEventRecord(r->finished, st);
    if (err) return emi_cuda_error("replay", err);
    r->have_finished = true;
    return EMILY_OK;
}

static size_t recording_bytes(const void *rec) {
    return rec ? emi_cuda_arena_bytes(((const cuda_recording *)rec)->arena) : 0;
}

const struct emily_replay_ops emi_cuda_replay_ops = {
    .begin = recording_begin,
    .capture = recording_capture,
    .end = recording_end,
    .launch = recording_launch,
    .finish = recording_finish,
    .bytes = recording_bytes,
    .free = recording_free,
};
