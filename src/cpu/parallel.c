/* The CPU engine's caller-runs parallel loop (see parallel.h). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "cpu/parallel.h"

/* ---- the helper pool -------------------------------------------------------
 *
 * One job at a time (job_lock; a caller that cannot take it runs its
 * loop alone). A job is published as: seq made odd, fields written, seq
 * made even (a seqlock, so a helper never acts on half-written fields),
 * then `next` set to (generation << 32 | 0). Chunks are claimed by
 * incrementing the low half of `next`; helpers claim with a CAS that also
 * checks the generation, so a helper that read a finished job's fields
 * can never claim a chunk of the next one. The caller returns once
 * `done` reaches the chunk count: every claimed chunk has finished. */

#define MAX_HELPERS 63
#define SPIN_ROUNDS 4000

static struct {
    pthread_mutex_t job_lock;
    pthread_mutex_t wake_lock;
    pthread_cond_t wake;
    atomic_uint_fast64_t seq;   /* even: a job's fields are complete */
    _Atomic(emily_chunk_fn) fn; /* job fields, written under odd seq */
    _Atomic(void *) ctx;
    atomic_int_fast64_t n;
    atomic_uint_fast64_t next; /* generation << 32 | next chunk */
    atomic_int_fast64_t done;  /* chunks finished in this job */
    atomic_int sleeping;       /* helpers blocked on `wake` */
    atomic_int state;          /* 0 not started, 1 starting, 2 ready */
    int helpers;
} pool = {
    .job_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake_lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline uint64_t gen_of(uint64_t seq) { return (seq >> 1) & 0xffffffffu; }

/* How many chunks one claim takes when `left` remain: a share of what is
 * left, shrinking as the job ends (guided scheduling). Claiming chunk by
 * chunk cost two contended atomics a chunk, a tenth or more of a
 * bandwidth-bound op's time at 16K elements a chunk; shares keep the
 * claims to a few dozen, each thread's chunks consecutive (one stream for
 * the prefetchers) and the ends still balanced. */
static inline int64_t claim_size(int64_t left) {
    int64_t take = left / (2 * (int64_t)(pool.helpers + 1));
    return take < 1 ? 1 : take;
}

/* Runs chunks [c, c + take) clipped to n; adds them to `done`. */
static void run_claim(emily_chunk_fn fn, void *ctx, int64_t c, int64_t take, int64_t n) {
    int64_t end = c + take < n ? c + take : n;
    for (int64_t i = c; i < end; i++) fn(ctx, i);
    atomic_fetch_add_explicit(&pool.done, end - c, memory_order_release);
}

/* Claims and runs chunks of the job with fields (fn, ctx, n) while the
 * counter still belongs to generation g. */
static void help(uint64_t g, emily_chunk_fn fn, void *ctx, int64_t n) {
    uint64_t v = atomic_load_explicit(&pool.next, memory_order_acquire);
    for (;;) {
        int64_t c = (int64_t)(v & 0xffffffffu);
        if ((v >> 32) != g || c >= n) return;
        int64_t take = claim_size(n - c);
        if (atomic_compare_exchange_weak_explicit(&pool.next, &v, v + (uint64_t)take, memory_order_acq_rel,
                                                  memory_order_acquire)) {
            run_claim(fn, ctx, c, take, n);
            v = atomic_load_explicit(&pool.next, memory_order_acquire);
        }
    }
}

static void *helper_main(void *arg) {
    (void)arg;
    uint64_t seen = atomic_load(&pool.seq);
    for (;;) {
        uint64_t s = atomic_load_explicit(&pool.seq, memory_order_acquire);
        for (int spin = 0; (s == seen || (s & 1)) && spin < SPIN_ROUNDS; spin++) {
            cpu_relax();
            s = atomic_load_explicit(&pool.seq, memory_order_acquire);
        }
        if (s == seen || (s & 1)) {
            pthread_mutex_lock(&pool.wake_lock);
            atomic_fetch_add(&pool.sleeping, 1);
            while ((s = atomic_load(&pool.seq)) == seen || (s & 1)) pthread_cond_wait(&pool.wake, &pool.wake_lock);
            atomic_fetch_sub(&pool.sleeping, 1);
            pthread_mutex_unlock(&pool.wake_lock);
        }
        /* read the job under the seqlock */
        emily_chunk_fn fn = atomic_load_explicit(&pool.fn, memory_order_relaxed);
        void *ctx = atomic_load_explicit(&pool.ctx, memory_order_relaxed);
        int64_t n = (int64_t)atomic_load_explicit(&pool.n, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&pool.seq, memory_order_relaxed) != s) continue; /* changed: retry */
        seen = s;
        help(gen_of(s), fn, ctx, n);
    }
    return NULL;
}

/* A forked child has none of the parent's helper threads: start over. */
static void pool_after_fork_child(void) {
    pthread_mutex_init(&pool.job_lock, NULL);
    pthread_mutex_init(&pool.wake_lock, NULL);
    pthread_cond_init(&pool.wake, NULL);
    atomic_store(&pool.sleeping, 0);
    atomic_store(&pool.state, 0);
    pool.helpers = 0;
}

static int wanted_threads(void) {
#ifdef _OPENMP
    int n = omp_get_max_threads();
#else
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    int n = c > 0 ? (int)c : 1;
#endif
    return n < 1 ? 1 : n > MAX_HELPERS + 1 ? MAX_HELPERS + 1 : n;
}

/* Starts the helpers once; returns how many run (0: loop alone). */
static int pool_helpers(void) {
    int st = atomic_load_explicit(&pool.state, memory_order_acquire);
    if (st == 2) return pool.helpers;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&pool.state, &expected, 1)) {
        /* another thread is starting them: run alone this time */
        return atomic_load_explicit(&pool.state, memory_order_acquire) == 2 ? pool.helpers : 0;
    }
    static atomic_int atfork_done;
    if (!atomic_exchange(&atfork_done, 1)) pthread_atfork(NULL, NULL, pool_after_fork_child);
    int want = wanted_threads() - 1, started = 0;
    for (; started < want; started++) {
        pthread_t th;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr)) break;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&th, &attr, helper_main, NULL);
        pthread_attr_destroy(&attr);
        if (err) break; /* fewer helpers (maybe none): still correct */
    }
    pool.helpers = started;
    atomic_store_explicit(&pool.state, 2, memory_order_release);
    return started;
}

void emi_cpu_parallel(int64_t nchunks, emily_chunk_fn fn, void *ctx) {
    if (nchunks <= 0) return;
    if (nchunks == 1 || nchunks > 0x7fffffffll || pool_helpers() == 0 || pthread_mutex_trylock(&pool.job_lock) != 0) {
        for (int64_t c = 0; c < nchunks; c++) fn(ctx, c);
        return;
    }
    /* publish */
    uint64_t s = atomic_load_explicit(&pool.seq, memory_order_relaxed);
    atomic_store_explicit(&pool.seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&pool.fn, fn, memory_order_relaxed);
    atomic_store_explicit(&pool.ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&pool.n, nchunks, memory_order_relaxed);
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    atomic_store_explicit(&pool.seq, s + 2, memory_order_release);
    uint64_t g = gen_of(s + 2);
    atomic_store_explicit(&pool.next, g << 32, memory_order_seq_cst);
    /* seq_cst store of seq/next then load of sleeping pairs with the
     * helper's increment-then-recheck under wake_lock: no lost wake-up */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load(&pool.sleeping) > 0) {
        pthread_mutex_lock(&pool.wake_lock);
        pthread_cond_broadcast(&pool.wake);
        pthread_mutex_unlock(&pool.wake_lock);
    }
    /* run chunks ourselves (a claim sized from a stale count may reach
     * past the end: run_claim clips it, and the counter stays below 2^32
     * because each claim is at most half of what was left) */
    for (;;) {
        uint64_t seen = atomic_load_explicit(&pool.next, memory_order_relaxed);
        int64_t take = claim_size(nchunks - (int64_t)(seen & 0xffffffffu));
        uint64_t v = atomic_fetch_add_explicit(&pool.next, (uint64_t)take, memory_order_acq_rel);
        int64_t c = (int64_t)(v & 0xffffffffu);
        if (c >= nchunks) break;
        run_claim(fn, ctx, c, take, nchunks);
    }
    /* wait for chunks a helper claimed */
    for (int spin = 0; atomic_load_explicit(&pool.done, memory_order_acquire) < nchunks; spin++) {
        if (spin < SPIN_ROUNDS) cpu_relax();
        else sched_yield();
    }
    pthread_mutex_unlock(&pool.job_lock);
}

typedef struct {
    emily_range_fn fn;
    void *ctx;
    int64_t n, per;
} range_job;

static void range_chunk(void *p, int64_t c) {
    const range_job *j = p;
    int64_t lo = c * j->per, hi = lo + j->per < j->n ? lo + j->per : j->n;
    j->fn(j->ctx, lo, hi);
}

void emi_cpu_parallel_ranges(int64_t n, int64_t per_job, bool parallel, emily_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (!parallel) {
        fn(ctx, 0, n);
        return;
    }
    range_job j = {fn, ctx, n, per_job < 1 ? 1 : per_job};
    emi_cpu_parallel((n + j.per - 1) / j.per, range_chunk, &j);
}
