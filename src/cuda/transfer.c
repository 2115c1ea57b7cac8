/* Host <-> device transfers through pinned staging memory.
 *
 * Upload must not return before it has read all of the host memory (the
 * caller may free or reuse it at once), but it should not wait for the
 * device either. So it copies the host bytes into pinned staging slots
 * and queues the DMA from there on the current stream; an event per slot
 * says when the slot may be written again. Small copies (up to 64 KiB)
 * take one of 32 small slots, larger ones go through 4 slots of 4 MiB in
 * turn. Download waits for the work that last used the buffer, then
 * streams it through the large slots (the DMA of chunk k+1..k+3 runs
 * while chunk k is copied out on the host); up to 1 MiB it copies
 * straight into the caller's memory and waits.
 *
 * When pinned memory cannot be had, transfers fall back to plain copies
 * followed by a wait on the stream (correct, only slower). */
#include <stdlib.h>
#include <string.h>
#include "cuda/runtime.h"

#define SMALL_SLOT ((size_t)64 << 10)
#define SMALL_SLOTS 32
#define BIG_SLOT ((size_t)4 << 20)
#define BIG_SLOTS 4
#define DIRECT_DOWNLOAD ((size_t)1 << 20)

typedef struct slot_ring {
    char *base;
    size_t slot;
    int n, next;
    cudaEvent_t ev[SMALL_SLOTS];
    bool pending[SMALL_SLOTS];
} slot_ring;

typedef struct staging {
    pthread_mutex_t lock;
    atomic_int state; /* 0: not yet, 1: ready, 2: unavailable */
    slot_ring small, big;
} staging;

static staging stages[EMILY_CUDA_MAX_DEVICES];
static pthread_mutex_t stage_init_lock = PTHREAD_MUTEX_INITIALIZER;

static void ring_destroy(slot_ring *r) {
    for (int i = 0; i < r->n; i++)
        if (r->ev[i]) cudaEventDestroy(r->ev[i]);
    if (r->base) cudaFreeHost(r->base);
    memset(r, 0, sizeof *r);
}

static bool ring_init(slot_ring *r, size_t slot, int n) {
    memset(r, 0, sizeof *r);
    if (cudaHostAlloc((void **)&r->base, slot * (size_t)n, cudaHostAllocPortable) != cudaSuccess) {
        r->base = NULL;
        return false;
    }
    r->slot = slot;
    r->n = n;
    for (int i = 0; i < n; i++)
        if (cudaEventCreateWithFlags(&r->ev[i], cudaEventDisableTiming) != cudaSuccess) {
            r->ev[i] = NULL;
            ring_destroy(r);
            return false;
        }
    return true;
}

/* The device's staging memory, created at first use; NULL if none. */
static staging *get_staging(int device) {
    staging *st = &stages[device];
    int state = atomic_load_explicit(&st->state, memory_order_acquire);
    if (state == 0) {
        pthread_mutex_lock(&stage_init_lock);
        state = atomic_load(&st->state);
        if (state == 0) {
            bool ok = ring_init(&st->small, SMALL_SLOT, SMALL_SLOTS);
            if (ok && !ring_init(&st->big, BIG_SLOT, BIG_SLOTS)) {
                ring_destroy(&st->small);
                ok = false;
            }
            (void)cudaGetLastError();
            if (ok) pthread_mutex_init(&st->lock, NULL);
            state = ok ? 1 : 2;
            atomic_store_explicit(&st->state, state, memory_order_release);
        }
        pthread_mutex_unlock(&stage_init_lock);
    }
    return state == 1 ? st : NULL;
}

/* Next slot of the ring, after the copy that last used it finished. */
static cudaError_t ring_acquire(slot_ring *r, int *idx) {
    int i = r->next;
    r->next = (r->next + 1) % r->n;
    if (r->pending[i]) {
        r->pending[i] = false;
        cudaError_t err = cudaEventSynchronize(r->ev[i]);
        if (err) return err;
    }
    *idx = i;
    return cudaSuccess;
}

static cudaError_t staged_upload(slot_ring *r, char *dst, const char *src, size_t n, cudaStream_t stream) {
    for (size_t off = 0; off < n; off += r->slot) {
        size_t len = n - off < r->slot ? n - off : r->slot;
        int i;
        cudaError_t err = ring_acquire(r, &i);
        if (err) return err;
        char *slot = r->base + (size_t)i * r->slot;
        memcpy(slot, src + off, len);
        err = cudaMemcpyAsync(dst + off, slot, len, cudaMemcpyHostToDevice, stream);
        if (!err) err = cudaEventRecord(r->ev[i], stream);
        if (err) return err;
        r->pending[i] = true;
    }
    return cudaSuccess;
}

/* Chunks through the large slots; chunk k goes to slot (first + k) % n. */
static cudaError_t staged_download(slot_ring *r, char *dst, const char *src, size_t n, cudaStream_t stream) {
    size_t chunks = (n + r->slot - 1) / r->slot, issued = 0, done = 0;
    int slot_of[BIG_SLOTS];
    cudaError_t err = cudaSuccess;
    while (done < chunks && !err) {
        while (issued < chunks && issued - done < (size_t)r->n) {
            size_t off = issued * r->slot, len = n - off < r->slot ? n - off : r->slot;
            int i;
            if ((err = ring_acquire(r, &i))) break;
            err = cudaMemcpyAsync(r->base + (size_t)i * r->slot, src + off, len, cudaMemcpyDeviceToHost, stream);
            if (!err) err = cudaEventRecord(r->ev[i], stream);
            if (err) break;
            r->pending[i] = true;
            slot_of[issued % (size_t)r->n] = i;
            issued++;
        }
        if (err) break;
        int i = slot_of[done % (size_t)r->n];
        size_t off = done * r->slot, len = n - off < r->slot ? n - off : r->slot;
        r->pending[i] = false;
        if ((err = cudaEventSynchronize(r->ev[i]))) break;
        memcpy(dst + off, r->base + (size_t)i * r->slot, len);
        done++;
    }
    return err;
}

/* Either direction: waits for the work that last used the device buffer
 * (for everything when the pointer is not a buffer start), then copies
 * through the staging slots or, without them (and for small downloads),
 * directly followed by a wait. */
static emily_status transfer(const char *op, int device, void *dst, const void *src, size_t nbytes, bool upload) {
    emily_status s = emi_cuda_enter(op, device);
    if (s || nbytes == 0) return s;
    if (emi_cuda_capturing(device)) /* the data is not there yet (replay.c) */
        return emily_error(EMILY_ERR_UNSUPPORTED, "cuda: %s: not possible while recording a graph", op);
    cudaStream_t stream;
    bool known;
    s = emi_cuda_order_ptr(op, device, upload ? dst : src, &stream, &known);
    if (s) return s;
    cudaError_t err = cudaSuccess;
    if (!known) err = cudaDeviceSynchronize(); /* not a buffer start: wait for everything */
    bool direct = err || (!upload && nbytes <= DIRECT_DOWNLOAD);
    staging *st = direct ? NULL : get_staging(device);
    if (err) {
    } else if (!st) {
        err = cudaMemcpyAsync(dst, src, nbytes, upload ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream);
        if (!err) err = cudaStreamSynchronize(stream);
    } else {
        pthread_mutex_lock(&st->lock);
        if (upload) err = staged_upload(nbytes <= SMALL_SLOT ? &st->small : &st->big, dst, src, nbytes, stream);
        else err = staged_download(&st->big, dst, src, nbytes, stream);
        pthread_mutex_unlock(&st->lock);
    }
    return emi_cuda_error(op, err);
}

emily_status emi_cuda_upload(int device, void *dst, const void *src, size_t nbytes) {
    return transfer("upload", device, dst, src, nbytes, true);
}

emily_status emi_cuda_download(int device, void *dst, const void *src, size_t nbytes) {
    return transfer("download", device, dst, src, nbytes, false);
}
