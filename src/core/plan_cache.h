/* The shared half of the engines' FFT plan caches (src/cpu/fft.c,
 * src/cuda/fft_cufft.cu), written once: a fixed array of refcounted
 * plans under a mutex, each stamped with a tick of a clock when used so
 * that the least recently used can go first. How a missed plan is built
 * and put in (the CPU cache also keeps a byte budget) stays with each
 * engine. Plan is a struct with `int refs` (the cache's reference and
 * each user's) and `uint64_t used`, both guarded by the cache's lock. */
#ifndef EMILY_CORE_PLAN_CACHE_H
#define EMILY_CORE_PLAN_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Defines `static Plan *fn(Key key)`: the plan of slots[0 .. count) for
 * which same(plan, key) holds, with one more reference and the next tick
 * of clock; NULL when none does (the caller builds it). */
#define EMI_PLAN_CACHE_FIND(fn, Plan, Key, slots, count, lock, clock, same) \
    static Plan *fn(Key key) {                                              \
        Plan *hit = NULL;                                                   \
        pthread_mutex_lock(&(lock));                                        \
        for (int i = 0; i < (count) && !hit; i++)                           \
            if ((slots)[i] && same((slots)[i], key)) hit = (slots)[i];      \
        if (hit) {                                                          \
            hit->refs++;                                                    \
            hit->used = ++(clock);                                          \
        }                                                                   \
        pthread_mutex_unlock(&(lock));                                      \
        return hit;                                                         \
    }

/* Defines `static void fn(Plan *p)`: gives back a reference to p (NULL:
 * nothing); the last one frees it with destroy(p), outside the lock. */
#define EMI_PLAN_CACHE_PUT(fn, Plan, lock, destroy) \
    static void fn(Plan *p) {                       \
        if (!p) return;                             \
        pthread_mutex_lock(&(lock));                \
        bool dead = --p->refs == 0;                 \
        pthread_mutex_unlock(&(lock));              \
        if (dead) destroy(p);                       \
    }

#endif
