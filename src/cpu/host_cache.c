/* The CPU allocator's cache of freed buffers (see host_cache.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include "cpu/host_cache.h"

#if defined(__SANITIZE_ADDRESS__)
#define HOST_CACHE_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOST_CACHE_ENABLED 0
#endif
#endif
#ifndef HOST_CACHE_ENABLED
#define HOST_CACHE_ENABLED 1
#endif

enum { SLOTS = 16 };
#define SMALLEST ((size_t)64 << 10)
#define LARGEST ((size_t)32 << 20)
#define CAPACITY ((size_t)64 << 20)

typedef struct slot {
    void *block; /* NULL: free slot */
    size_t total;
    uint64_t age; /* when it was put: the smallest goes first */
} slot;

static slot slots[SLOTS];
static size_t held;
static uint64_t clock_ticks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void *emi_host_cache_take(size_t total) {
    if (!HOST_CACHE_ENABLED || total < SMALLEST || total > LARGEST) return NULL;
    void *block = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].block && slots[i].total == total) {
            block = slots[i].block;
            slots[i].block = NULL;
            held -= total;
            break;
        }
    pthread_mutex_unlock(&lock);
    return block;
}

bool emi_host_cache_put(void *block, size_t total) {
    if (!HOST_CACHE_ENABLED || total < SMALLEST || total > LARGEST) return false;
    void *evicted[SLOTS];
    int n_evicted = 0;
    pthread_mutex_lock(&lock);
    /* make room: the oldest blocks go until this one fits and a slot is free */
    for (;;) {
        int free_slot = -1, oldest = -1;
        for (int i = 0; i < SLOTS; i++) {
            if (!slots[i].block) free_slot = free_slot < 0 ? i : free_slot;
            else if (oldest < 0 || slots[i].age < slots[oldest].age) oldest = i;
        }
        if (free_slot >= 0 && held + total <= CAPACITY) {
            slots[free_slot] = (slot){block, total, ++clock_ticks};
            held += total;
            break;
        }
        evicted[n_evicted++] = slots[oldest].block;
        held -= slots[oldest].total;
        slots[oldest].block = NULL;
    }
    pthread_mutex_unlock(&lock);
    /* free outside the lock */
    for (int i = 0; i < n_evicted; i++) free(evicted[i]);
    return true;
}

size_t emi_host_cache_bytes(void) {
    pthread_mutex_lock(&lock);
    size_t bytes = held;
    pthread_mutex_unlock(&lock);
    return bytes;
}

void emi_host_cache_clear(void) {
    void *blocks[SLOTS];
    int n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].block) {
            blocks[n++] = slots[i].block;
            slots[i].block = NULL;
        }
    held = 0;
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++) free(blocks[i]);
}
