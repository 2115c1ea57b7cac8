/* The CUDA engine's runtime: device discovery, per-device state, streams
 * (each thread has a current stream per device), the caching allocator,
 * and the per-buffer record of the stream that last used it.
 *
 * Ordering across streams. Every live allocation records the stream that
 * last used it (and that stream's generation, so a freed stream is
 * recognised). When an op runs on stream S over a buffer last used by
 * stream T != S, S waits for an event recorded on T at that moment:
 * everything T had queued, the uses of this buffer included. The record
 * then says S. Each cross-stream use thus waits for the previous one, and
 * by transitivity for all earlier ones. On a single stream nothing is
 * recorded and nothing waits: CUDA orders work within a stream.
 *
 * The caching allocator keeps freed blocks in free lists by size class
 * (four classes per power of two, at least 512 bytes), per device. A
 * freed block keeps its last-use record, so reusing it from another
 * stream waits for the work that may still read it; reuse from the same
 * stream needs no wait. cudaMalloc is called only when a class's list is
 * empty; on out-of-memory the cache is returned to the device and the
 * allocation retried once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda/fault.h"
#include "cuda/runtime.h"

#define NCLASSES 256
#define MIN_BLOCK 512

typedef struct cuda_block {
    void *ptr;
    size_t size;
    int cls;
    emily_cuda_stream *last;       /* stream of the last use (NULL: none) */
    unsigned long long last_gen;   /* its generation then */
    struct cuda_block *next;       /* hash chain while live, free list while cached */
    struct emi_cuda_arena *arena;  /* the arena owning it (NULL: the device's cache) */
    struct cuda_block *arena_next; /* the arena's list of every block it owns */
} cuda_block;

/* A recording's private memory (runtime.h): blocks only its own
 * allocations use, freed to its own lists, never to the device's cache,
 * so that work replayed later finds them as the recording left them. */
struct emi_cuda_arena {
    int device;
    cuda_block *owned;          /* every block, by arena_next */
    cuda_block *free[NCLASSES]; /* the unused ones, by next */
    size_t bytes;
};

typedef struct cuda_device {
    pthread_mutex_t lock; /* allocator, block records, stream free list */
    atomic_int ready;
    emily_cuda_stream default_stream;
    int sm_count;
    cuda_block *cache[NCLASSES];
    cuda_block **table; /* live blocks by pointer */
    size_t table_cap, table_n;
    size_t active, peak, cached;
    emily_cuda_stream *free_streams;
} cuda_device;

static cuda_device devices[EMILY_CUDA_MAX_DEVICES];
/* The calling thread's current arena per device (NULL: none). */
static _Thread_local emi_cuda_arena *tls_arena[EMILY_CUDA_MAX_DEVICES];
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_ullong next_generation = 1;

static unsigned long long new_generation(void) { return atomic_fetch_add(&next_generation, 1); }

emily_status emi_cuda_error(const char *op, cudaError_t err) {
    if (err == cudaSuccess) return EMILY_OK;
    (void)cudaGetLastError(); /* clear it so the next launch check does not see it */
    return emily_error(err == cudaErrorMemoryAllocation ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE, "cuda: %s: %s", op,
                       cudaGetErrorString(err));
}

/* ---- devices -------------------------------------------------------- */

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int count_value;

static void count_devices(void) {
    int n = 0;
    /* Without a driver (or GPU) this fails: no CUDA devices, not an error. */
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    (void)cudaGetLastError();
    if (n < 0) n = 0;
    if (n > EMILY_CUDA_MAX_DEVICES) n = EMILY_CUDA_MAX_DEVICES;
    count_value = n;
}

int emi_cuda_device_count(void) {
    pthread_once(&count_once, count_devices);
    return count_value;
}

/* A stream whose CUDA stream and event have just been made, the default
 * stream of a device or a new one: of `device`, no library handles yet
 * (created at first use), a fresh generation (live from here on). */
static void stream_mark_live(emily_cuda_stream *st, int device) {
    st->device = device;
    st->cublas = NULL;
    st->cusolver = NULL;
    st->cusolver_params = NULL;
    atomic_store(&st->gen, new_generation());
}

static emily_status init_device(const char *op, int device) {
    cuda_device *dev = &devices[device];
    emily_status s = EMILY_OK;
    pthread_mutex_lock(&init_lock);
    if (atomic_load_explicit(&dev->ready, memory_order_acquire)) goto done;
    cudaError_t err = cudaSetDevice(device);
    if (err) {
        s = emi_cuda_error(op, err);
        goto done;
    }
    emily_cuda_stream *ds = &dev->default_stream;
    err = cudaStreamCreateWithFlags(&ds->stream, cudaStreamNonBlocking);
    if (err) {
        s = emi_cuda_error(op, err);
        goto done;
    }
    err = cudaEventCreateWithFlags(&ds->event, cudaEventDisableTiming);
    if (err) {
        cudaStreamDestroy(ds->stream);
        s = emi_cuda_error(op, err);
        goto done;
    }
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms < 1) sms = 1;
    (void)cudaGetLastError();
    dev->table_cap = 1024;
    dev->table = calloc(dev->table_cap, sizeof *dev->table);
    if (!dev->table) {
        cudaEventDestroy(ds->event);
        cudaStreamDestroy(ds->stream);
        s = emily_error(EMILY_ERR_MEMORY, "cuda: %s: out of host memory", op);
        goto done;
    }
    pthread_mutex_init(&dev->lock, NULL);
    dev->sm_count = sms;
    stream_mark_live(ds, device);
    atomic_store_explicit(&dev->ready, 1, memory_order_release);
done:
    pthread_mutex_unlock(&init_lock);
    return s;
}

emily_status emi_cuda_enter(const char *op, int device) {
    int n = emi_cuda_device_count();
    if (device < 0 || device >= n)
        return emily_error(EMILY_ERR_DEVICE, "cuda: %s: device cuda:%d not found (%d present)", op, device, n);
    if (!atomic_load_explicit(&devices[device].ready, memory_order_acquire)) {
        emily_status s = init_device(op, device);
        if (s) return s;
    }
    /* With one device it is every thread's current device already. */
    if (n > 1) {
        cudaError_t err = cudaSetDevice(device);
        if (err) return emi_cuda_error(op, err);
    }
    return EMILY_OK;
}

int emi_cuda_sm_count(int device) {
    if (device < 0 || device >= EMILY_CUDA_MAX_DEVICES) return 1;
    return devices[device].sm_count > 0 ? devices[device].sm_count : 1;
}

/* ---- streams -------------------------------------------------------- */

typedef struct tls_stream {
    emily_cuda_stream *s;
    unsigned long long gen;
} tls_stream;
static _Thread_local tls_stream tls_current[EMILY_CUDA_MAX_DEVICES];

static emily_cuda_stream *current_stream(int device) {
    tls_stream *e = &tls_current[device];
    if (e->s && atomic_load_explicit(&e->s->gen, memory_order_acquire) == e->gen) return e->s;
    e->s = NULL; /* never set, or freed since */
    return &devices[device].default_stream;
}

emily_status emi_cuda_current_stream(int device, cudaStream_t *out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "cuda: current_stream: NULL output");
    emily_status s = emi_cuda_enter("current_stream", device);
    if (s) return s;
    *out = current_stream(device)->stream;
    return EMILY_OK;
}

emily_status emi_cuda_stream_new(int device, void **handle) {
    emily_status s = emi_cuda_enter("stream_new", device);
    if (s) return s;
    cuda_device *dev = &devices[device];
    pthread_mutex_lock(&dev->lock);
    emily_cuda_stream *st = dev->free_streams;
    if (st) dev->free_streams = st->next_free;
    pthread_mutex_unlock(&dev->lock);
    if (!st && !(st = calloc(1, sizeof *st)))
        return emily_error(EMILY_ERR_MEMORY, "cuda: stream_new: out of host memory");
    cudaError_t err = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking);
    if (!err) {
        err = cudaEventCreateWithFlags(&st->event, cudaEventDisableTiming);
        if (err) cudaStreamDestroy(st->stream);
    }
    if (err) {
        pthread_mutex_lock(&dev->lock);
        st->next_free = dev->free_streams;
        dev->free_streams = st;
        pthread_mutex_unlock(&dev->lock);
        return emi_cuda_error("stream_new", err);
    }
    st->next_free = NULL;
    stream_mark_live(st, device);
    *handle = st;
    return EMILY_OK;
}

emily_status emi_cuda_stream_free(int device, void *handle) {
    emily_cuda_stream *st = handle;
    if (!st) return emily_error(EMILY_ERR_ARGUMENT, "cuda: stream_free: the default stream cannot be freed");
    if (st->device != device)
        return emily_error(EMILY_ERR_DEVICE, "cuda: stream_free: the stream belongs to cuda:%d, not cuda:%d",
                           st->device, device);
    emily_status s = emi_cuda_enter("stream_free", device);
    if (s) return s;
    cuda_device *dev = &devices[device];
    /* Wait for its work: afterwards no buffer needs to wait for it, which
     * is what a generation of 0 tells everyone holding the pointer. */
    s = emi_cuda_error("stream_free", cudaStreamSynchronize(st->stream));
    pthread_mutex_lock(&dev->lock);
    atomic_store_explicit(&st->gen, 0, memory_order_release);
    pthread_mutex_unlock(&dev->lock);
    if (st->cublas) cublasDestroy(st->cublas);
    st->cublas = NULL;
    if (st->cusolver_params) cusolverDnDestroyParams(st->cusolver_params);
    if (st->cusolver) cusolverDnDestroy(st->cusolver);
    st->cusolver = NULL;
    st->cusolver_params = NULL;
    cudaEventDestroy(st->event);
    cudaStreamDestroy(st->stream);
    (void)cudaGetLastError();
    pthread_mutex_lock(&dev->lock);
    st->next_free = dev->free_streams;
    dev->free_streams = st;
    pthread_mutex_unlock(&dev->lock);
    return s;
}

/* A wait while the thread records (replay.c) would wait for nothing. */
static emily_status no_wait_while_recording(const char *op, int device) {
    if (!emi_cuda_capturing(device)) return EMILY_OK;
    return emily_error(EMILY_ERR_UNSUPPORTED, "cuda: %s: not possible while recording a graph", op);
}

emily_status emi_cuda_stream_synchronize(int device, void *handle) {
    emily_status s = emi_cuda_enter("stream_synchronize", device);
    if (!s) s = no_wait_while_recording("stream_synchronize", device);
    if (s) return s;
    emily_cuda_stream *st = handle ? (emily_cuda_stream *)handle : &devices[device].default_stream;
    return emi_cuda_error("stream_synchronize", cudaStreamSynchronize(st->stream));
}

void *emi_cuda_stream_get_current(int device) {
    if (device < 0 || device >= EMILY_CUDA_MAX_DEVICES) return NULL;
    emily_cuda_stream *st = current_stream(device);
    return st == &devices[device].default_stream ? NULL : st;
}

emily_status emi_cuda_stream_set_current(int device, void *handle) {
    emily_status s = emi_cuda_enter("stream_set_current", device);
    if (s) return s;
    emily_cuda_stream *st = handle;
    if (st && st->device != device)
        return emily_error(EMILY_ERR_DEVICE, "cuda: stream_set_current: the stream belongs to cuda:%d, not cuda:%d",
                           st->device, device);
    tls_current[device].s = st;
    tls_current[device].gen = st ? atomic_load(&st->gen) : 0;
    return EMILY_OK;
}

emily_status emi_cuda_synchronize(int device) {
    emily_status s = emi_cuda_enter("synchronize", device);
    if (!s) s = no_wait_while_recording("synchronize", device);
    return s ? s : emi_cuda_error("synchronize", cudaDeviceSynchronize());
}

/* ---- block records -------------------------------------------------- */

static size_t hash_ptr(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p >> 9;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 32) & (cap - 1);
}

static cuda_block *table_find(cuda_device *dev, const void *p) {
    for (cuda_block *b = dev->table[hash_ptr(p, dev->table_cap)]; b; b = b->next)
        if (b->ptr == p) return b;
    return NULL;
}

static void table_insert(cuda_device *dev, cuda_block *b) {
    if (dev->table_n + 1 > dev->table_cap) { /* grow; on failure keep longer chains */
        size_t cap = dev->table_cap * 2;
        cuda_block **t = calloc(cap, sizeof *t);
        if (t) {
            for (size_t i = 0; i < dev->table_cap; i++)
                for (cuda_block *x = dev->table[i], *nx; x; x = nx) {
                    nx = x->next;
                    size_t h = hash_ptr(x->ptr, cap);
                    x->next = t[h];
                    t[h] = x;
                }
            free(dev->table);
            dev->table = t;
            dev->table_cap = cap;
        }
    }
    size_t h = hash_ptr(b->ptr, dev->table_cap);
    b->next = dev->table[h];
    dev->table[h] = b;
    dev->table_n++;
}

static cuda_block *table_remove(cuda_device *dev, const void *p) {
    cuda_block **link = &dev->table[hash_ptr(p, dev->table_cap)];
    for (cuda_block *b = *link; b; link = &b->next, b = b->next)
        if (b->ptr == p) {
            *link = b->next;
            b->next = NULL;
            dev->table_n--;
            return b;
        }
    return NULL;
}

/* Orders a use of block b on stream s after its last use (lock held). */
static emily_status use_block(const char *op, cuda_block *b, emily_cuda_stream *s) {
    /* While this thread records (replay.c), a block not of the recording
     * is a constant or a parameter the calls only read: the device was
     * idle when recording began, so nothing is pending on it, and its
     * record is left as it is (an event of the recording's stream means
     * nothing outside the recording). */
    if (!b->arena && emi_cuda_capturing(s->device)) return EMILY_OK;
    unsigned long long sgen = atomic_load_explicit(&s->gen, memory_order_relaxed);
    if (b->last == s && b->last_gen == sgen) return EMILY_OK;
    emily_cuda_stream *l = b->last;
    if (l && l != s && atomic_load_explicit(&l->gen, memory_order_acquire) == b->last_gen) {
        cudaError_t err = cudaEventRecord(l->event, l->stream);
        if (!err) err = cudaStreamWaitEvent(s->stream, l->event, 0);
        if (err) return emi_cuda_error(op, err);
    }
    b->last = s;
    b->last_gen = sgen;
    return EMILY_OK;
}

emily_status emi_cuda_begin(const char *op, int device, int n, const emily_tensor *const *ts, emily_cuda_ctx *ctx) {
    emily_status s = emi_cuda_enter(op, device);
    if (s) return s;
    cuda_device *dev = &devices[device];
    pthread_mutex_lock(&dev->lock);
    emily_cuda_stream *cur = current_stream(device);
    for (int i = 0; i < n && !s; i++) {
        const emily_tensor *t = ts[i];
        if (!t || !t->buffer->data) continue;
        if (t->buffer->device.type != EMILY_DEVICE_CUDA || t->buffer->device.index != device) {
            char d[32];
            emily_device_format(t->buffer->device, d, sizeof d);
            s = emily_error(EMILY_ERR_DEVICE, "cuda: %s: operand %d is on %s, the op runs on cuda:%d", op, i, d,
                            device);
            break;
        }
        cuda_block *b = table_find(dev, t->buffer->data);
        if (b) s = use_block(op, b, cur);
    }
    pthread_mutex_unlock(&dev->lock);
    if (s) return s;
    ctx->op = op;
    ctx->device = device;
    ctx->stream = cur->stream;
    ctx->owner = cur;
    return EMILY_OK;
}

emily_status emi_cuda_launched(const emily_cuda_ctx *ctx) {
    emi_cuda_fault_at_launch(ctx->stream);
    return emi_cuda_error(ctx->op, cudaGetLastError());
}

emily_status emi_cuda_order_ptr(const char *op, int device, const void *ptr, cudaStream_t *stream, bool *known) {
    cuda_device *dev = &devices[device];
    emily_status s = EMILY_OK;
    pthread_mutex_lock(&dev->lock);
    emily_cuda_stream *cur = current_stream(device);
    cuda_block *b = table_find(dev, ptr);
    if (b) s = use_block(op, b, cur);
    pthread_mutex_unlock(&dev->lock);
    *stream = cur->stream;
    *known = b != NULL;
    return s;
}

emily_status emi_cuda_cublas(const emily_cuda_ctx *ctx, cublasHandle_t *out) {
    if (!ctx || !out) return emily_error(EMILY_ERR_ARGUMENT, "cuda: cublas: NULL argument");
    cuda_device *dev = &devices[ctx->device];
    emily_cuda_stream *st = ctx->owner;
    emily_status s = EMILY_OK;
    pthread_mutex_lock(&dev->lock);
    if (!st->cublas) {
        cublasHandle_t h;
        cublasStatus_t cs = cublasCreate(&h);
        if (cs == CUBLAS_STATUS_SUCCESS) {
            cs = cublasSetStream(h, st->stream);
            if (cs != CUBLAS_STATUS_SUCCESS) cublasDestroy(h);
        }
        if (cs != CUBLAS_STATUS_SUCCESS)
            s = emily_error(cs == CUBLAS_STATUS_ALLOC_FAILED ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE,
                            "cuda: %s: cuBLAS initialization failed (status %d)", ctx->op, (int)cs);
        else st->cublas = h;
    }
    if (!s) *out = st->cublas;
    pthread_mutex_unlock(&dev->lock);
    return s;
}

emily_status emi_cuda_cusolver(const emily_cuda_ctx *ctx, cusolverDnHandle_t *handle, cusolverDnParams_t *params) {
    if (!ctx || !handle || !params) return emily_error(EMILY_ERR_ARGUMENT, "cuda: cusolver: NULL argument");
    cuda_device *dev = &devices[ctx->device];
    emily_cuda_stream *st = ctx->owner;
    emily_status s = EMILY_OK;
    pthread_mutex_lock(&dev->lock);
    if (!st->cusolver) {
        cusolverDnHandle_t h = NULL;
        cusolverDnParams_t p = NULL;
        cusolverStatus_t cs = cusolverDnCreate(&h);
        if (cs == CUSOLVER_STATUS_SUCCESS) cs = cusolverDnSetStream(h, st->stream);
        if (cs == CUSOLVER_STATUS_SUCCESS) cs = cusolverDnCreateParams(&p);
        if (cs != CUSOLVER_STATUS_SUCCESS) {
            if (h) cusolverDnDestroy(h);
            s = emily_error(cs == CUSOLVER_STATUS_ALLOC_FAILED ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE,
                            "cuda: %s: cuSOLVER initialization failed (status %d)", ctx->op, (int)cs);
        } else {
            st->cusolver = h;
            st->cusolver_params = p;
        }
    }
    if (!s) {
        *handle = st->cusolver;
        *params = st->cusolver_params;
    }
    pthread_mutex_unlock(&dev->lock);
    return s;
}

/* ---- caching allocator ---------------------------------------------- */

/* Size class of n bytes: 512 bytes, then four steps per power of two. */
static bool size_class(size_t n, int *cls, size_t *size) {
    if (n <= MIN_BLOCK) {
        *cls = 0;
        *size = MIN_BLOCK;
        return true;
    }
    if (n > ((size_t)1 << 60)) return false;
    int k = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^k < n <= 2^(k+1) */
    size_t base = (size_t)1 << k, step = base >> 2;
    size_t q = (n - base + step - 1) / step; /* 1..4 */
    *cls = (k - 9) * 4 + (int)q;
    *size = base + q * step;
    return *cls < NCLASSES;
}

/* Returns every cached block to the device (lock held). */
static emily_status drop_cache(cuda_device *dev) {
    /* Cached blocks may still be read by queued work: wait for it all. */
    cudaError_t err = cudaDeviceSynchronize();
    if (err) return emi_cuda_error("release_cache", err);
    for (int c = 0; c < NCLASSES; c++) {
        for (cuda_block *b = dev->cache[c], *nx; b; b = nx) {
            nx = b->next;
            cudaFree(b->ptr);
            free(b);
        }
        dev->cache[c] = NULL;
    }
    (void)cudaGetLastError();
    dev->cached = 0;
    return EMILY_OK;
}

static emily_status alloc_on(const char *op, int device, size_t nbytes, void **ptr) {
    emily_status s = emi_cuda_enter(op, device);
    if (s) return s;
    int cls;
    size_t size;
    if (!size_class(nbytes, &cls, &size))
        return emily_error(EMILY_ERR_MEMORY, "cuda: %s: cannot allocate %zu bytes", op, nbytes);
    cuda_device *dev = &devices[device];
    pthread_mutex_lock(&dev->lock);
    emily_cuda_stream *cur = current_stream(device);
    emi_cuda_arena *arena = tls_arena[device];
    cuda_block **list = arena ? &arena->free[cls] : &dev->cache[cls];
    cuda_block *b = *list;
    if (b) {
        *list = b->next;
        b->next = NULL;
        if (!arena) dev->cached -= b->size;
    } else {
        b = calloc(1, sizeof *b);
        if (!b) {
            pthread_mutex_unlock(&dev->lock);
            return emily_error(EMILY_ERR_MEMORY, "cuda: %s: out of host memory", op);
        }
        void *p = NULL;
        /* an injected fault asks for 2^50 bytes, a real out-of-memory */
        size_t ask = emi_cuda_fault_fire(EMI_CUDA_FAULT_ALLOC) ? (size_t)1 << 50 : size;
        cudaError_t err = cudaMalloc(&p, ask);
        if (err == cudaErrorMemoryAllocation && dev->cached) {
            (void)cudaGetLastError();
            if (!drop_cache(dev)) err = cudaMalloc(&p, ask);
        }
        if (err) {
            size_t active = dev->active, cached = dev->cached;
            pthread_mutex_unlock(&dev->lock);
            free(b);
            (void)cudaGetLastError();
            return emily_error(err == cudaErrorMemoryAllocation ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE,
                               "cuda: %s: %s allocating %zu bytes on cuda:%d (%zu bytes in use, %zu cached)", op,
                               cudaGetErrorString(err), nbytes, device, active, cached);
        }
        b->ptr = p;
        b->size = size;
        b->cls = cls;
        if (arena) {
            b->arena = arena;
            b->arena_next = arena->owned;
            arena->owned = b;
            arena->bytes += size;
        }
    }
    s = use_block(op, b, cur);
    if (s) { /* keep the block cached; the error is the event's */
        b->next = *list;
        *list = b;
        if (!arena) dev->cached += b->size;
        pthread_mutex_unlock(&dev->lock);
        return s;
    }
    table_insert(dev, b);
    dev->active += b->size;
    if (dev->active > dev->peak) dev->peak = dev->active;
    pthread_mutex_unlock(&dev->lock);
    *ptr = b->ptr;
    return EMILY_OK;
}

emily_status emi_cuda_alloc(int device, size_t nbytes, void **ptr) { return alloc_on("alloc", device, nbytes, ptr); }

void emi_cuda_free(int device, void *ptr) {
    if (!ptr || device < 0 || device >= EMILY_CUDA_MAX_DEVICES) return;
    cuda_device *dev = &devices[device];
    if (!atomic_load_explicit(&dev->ready, memory_order_acquire)) return;
    pthread_mutex_lock(&dev->lock);
    cuda_block *b = table_remove(dev, ptr);
    if (b && b->arena) { /* back to its arena, whichever thread frees it */
        dev->active -= b->size;
        b->next = b->arena->free[b->cls];
        b->arena->free[b->cls] = b;
    } else if (b) {
        dev->active -= b->size;
        dev->cached += b->size;
        b->next = dev->cache[b->cls];
        dev->cache[b->cls] = b;
    }
    pthread_mutex_unlock(&dev->lock);
}

/* ---- arenas (runtime.h) ---------------------------------------------- */

emily_status emi_cuda_arena_new(int device, emi_cuda_arena **out) {
    emily_status s = emi_cuda_enter("arena_new", device);
    if (s) return s;
    emi_cuda_arena *a = calloc(1, sizeof *a);
    if (!a) return emily_error(EMILY_ERR_MEMORY, "cuda: arena_new: out of host memory");
    a->device = device;
    *out = a;
    return EMILY_OK;
}

void emi_cuda_arena_set_current(int device, emi_cuda_arena *a) {
    if (device >= 0 && device < EMILY_CUDA_MAX_DEVICES) tls_arena[device] = a;
}

size_t emi_cuda_arena_bytes(const emi_cuda_arena *a) { return a ? a->bytes : 0; }

void emi_cuda_arena_free(emi_cuda_arena *a) {
    if (!a) return;
    cuda_device *dev = &devices[a->device];
    /* Queued work may still use the blocks (a replay, its output copies). */
    (void)cudaDeviceSynchronize();
    pthread_mutex_lock(&dev->lock);
    if (tls_arena[a->device] == a) tls_arena[a->device] = NULL;
    for (int c = 0; c < NCLASSES; c++) {
        /* unused blocks are marked by arena = NULL (given back below);
         * live ones still name the arena */
        for (cuda_block *b = a->free[c]; b; b = b->next) b->arena = NULL;
        a->free[c] = NULL;
    }
    for (cuda_block *b = a->owned, *nx; b; b = nx) {
        nx = b->arena_next;
        b->arena_next = NULL;
        if (b->arena) { /* still live: it goes to the device's cache when freed */
            b->arena = NULL;
            continue;
        }
        cudaFree(b->ptr);
        free(b);
    }
    (void)cudaGetLastError();
    pthread_mutex_unlock(&dev->lock);
    free(a);
}

emily_status emi_cuda_scratch(const emily_cuda_ctx *ctx, size_t nbytes, void **ptr) {
    return alloc_on(ctx->op, ctx->device, nbytes ? nbytes : 1, ptr);
}

void emi_cuda_scratch_free(const emily_cuda_ctx *ctx, void *ptr) { emi_cuda_free(ctx->device, ptr); }

emily_status emi_cuda_memory_stats(int device, emily_memory_stats *out) {
    emily_status s = emi_cuda_enter("memory_stats", device);
    if (s) return s;
    cuda_device *dev = &devices[device];
    pthread_mutex_lock(&dev->lock);
    out->active = dev->active;
    out->peak = dev->peak;
    out->cached = dev->cached;
    pthread_mutex_unlock(&dev->lock);
    return EMILY_OK;
}

emily_status emi_cuda_release_cache(int device) {
    emily_status s = emi_cuda_enter("release_cache", device);
    if (s) return s;
    cuda_device *dev = &devices[device];
    pthread_mutex_lock(&dev->lock);
    s = drop_cache(dev);
    dev->peak = dev->active;
    pthread_mutex_unlock(&dev->lock);
    return s;
}
