/* The CPU engine: host memory, synchronous kernels (threaded with
 * OpenMP inside large kernels). */
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include "cpu/host_cache.h"
#include "cpu/kernels.h"

static atomic_size_t active_bytes, peak_bytes;

static int cpu_device_count(void) { return 1; }

/* Buffers start on a 64-byte boundary so SIMD loads never split a cache
 * line; the size is recorded in front for the statistics. */
#define HEADER 64
#define HUGE_PAGE ((size_t)2 << 20)
#define LARGE_BUFFER ((size_t)4 << 20)
/* The whole allocation behind a buffer of nbytes. */
static size_t block_size(size_t nbytes) {
    size_t total = (nbytes + HEADER + 63) & ~(size_t)63;
    if (nbytes >= LARGE_BUFFER) total = (total + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
    return total;
}

static emily_status cpu_alloc(int device, size_t nbytes, void **ptr) {
    (void)device;
    if (nbytes > SIZE_MAX - 2 * HEADER) return emily_error(EMILY_ERR_MEMORY, "cpu: cannot allocate %zu bytes", nbytes);
    size_t total = block_size(nbytes);
    /* Large buffers start on a 2 MiB boundary and ask for transparent huge
     * pages: a fresh 40 MB output otherwise costs ~10k page faults on first
     * touch, a large share of a memory-bound op's time. (A cached block of
     * the same size was made the same way.) */
    bool huge = nbytes >= LARGE_BUFFER;
    char *p = emi_host_cache_take(total);
    if (!p) {
        p = aligned_alloc(huge ? HUGE_PAGE : 64, total);
        if (!p) return emily_error(EMILY_ERR_MEMORY, "cpu: out of memory allocating %zu bytes", nbytes);
#ifdef MADV_HUGEPAGE
        if (huge) (void)madvise(p, total, MADV_HUGEPAGE); /* advice only: ignore failure */
#endif
    }
    memcpy(p, &nbytes, sizeof nbytes);
    size_t now = atomic_fetch_add(&active_bytes, nbytes) + nbytes;
    size_t peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {}
    *ptr = p + HEADER;
    return EMILY_OK;
}

static void cpu_free(int device, void *ptr) {
    (void)device;
    if (!ptr) return;
    char *p = (char *)ptr - HEADER;
    size_t nbytes;
    memcpy(&nbytes, p, sizeof nbytes);
    atomic_fetch_sub(&active_bytes, nbytes);
    if (!emi_host_cache_put(p, block_size(nbytes))) free(p);
}

static emily_status cpu_memcpy(int device, void *dst, const void *src, size_t n) {
    (void)device;
    memcpy(dst, src, n);
    return EMILY_OK;
}

static emily_status cpu_synchronize(int device) {
    (void)device;
    return EMILY_OK;
}

static emily_status cpu_memory_stats(int device, emily_memory_stats *out) {
    (void)device;
    out->active = atomic_load(&active_bytes);
    out->peak = atomic_load(&peak_bytes);
    out->cached = emi_host_cache_bytes();
    return EMILY_OK;
}

static emily_status cpu_release_cache(int device) {
    (void)device;
    emi_host_cache_clear();
    atomic_store(&peak_bytes, atomic_load(&active_bytes));
    return EMILY_OK;
}

/* Streams: CPU kernels run synchronously on the calling thread, so every
 * stream is already complete when a call returns; a stream handle only
 * has to be a distinct non-NULL value. */
static char cpu_stream_token;
static emily_status cpu_stream_new(int device, void **handle) {
    (void)device;
    *handle = &cpu_stream_token;
    return EMILY_OK;
}
static emily_status cpu_stream_noop(int device, void *handle) {
    (void)device;
    (void)handle;
    return EMILY_OK;
}

/* The tables of the families whose kernels are single functions of their
 * own files (core/device_kernels.h). */
EMI_DEVICE_SINGLE_TABLES(emi_cpu)

static const emily_engine cpu_engine = {
    .name = "cpu",
    .device_count = cpu_device_count,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_memcpy,
    .download = cpu_memcpy,
    .synchronize = cpu_synchronize,
    .memory_stats = cpu_memory_stats,
    .release_cache = cpu_release_cache,
    .host_addressable = true,
    .stream_new = cpu_stream_new,
    .stream_free = cpu_stream_noop,
    .stream_synchronize = cpu_stream_noop,
    .stream_set_current = cpu_stream_noop,
    EMI_DEVICE_FAMILY_SLOTS(emi_cpu),
    .dot = &emi_cpu_dot_kernels,
    /* every kernel of the table runs every op and dtype it is handed */
    .supports = emi_engine_has_kernel,
};

const emily_engine *emi_cpu_engine(void) { return &cpu_engine; }
