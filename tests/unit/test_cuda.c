/* The CUDA engine: behaviour without a GPU (always checked), and on a GPU
 * the caching allocator, streams, transfers, asynchronous execution,
 * errors, and a set of ops compared with the CPU engine.
 *
 * GPU cases run only when emily_device_count(EMILY_DEVICE_CUDA) > 0;
 * otherwise they are listed as skipped with the reason (never counted as
 * passed). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include "harness.h"

static const emily_device CUDA0 = {EMILY_DEVICE_CUDA, 0};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- without a GPU ----------------------------------------------------- */

TEST(no_gpu_fails_clearly) {
    if (emily_device_count(EMILY_DEVICE_CUDA) > 0) return; /* covered by the GPU cases */
    int64_t shape[1] = {4};
    emily_tensor *t = NULL;
    CHECK_ERR(emily_empty(CUDA0, EMILY_F32, 1, shape, &t), EMILY_ERR_DEVICE, "cuda");
    CHECK(t == NULL);
    float data[4] = {1, 2, 3, 4};
    CHECK_ERR(emily_from_binary(CUDA0, EMILY_F32, 1, shape, data, sizeof data, &t),
              EMILY_ERR_DEVICE, "cuda");
    CHECK_ERR(emily_device_check(CUDA0), EMILY_ERR_DEVICE, "cuda");
    CHECK_ERR(emily_synchronize(CUDA0), EMILY_ERR_DEVICE, "cuda");
    emily_memory_stats ms;
    CHECK_ERR(emily_memory_stats_get(CUDA0, &ms), EMILY_ERR_DEVICE, "cuda");
    CHECK_ERR(emily_memory_release_cache(CUDA0), EMILY_ERR_DEVICE, "cuda");
    emily_stream *s = NULL;
    CHECK_ERR(emily_stream_new(CUDA0, &s), EMILY_ERR_DEVICE, "cuda");
    CHECK(s == NULL);
    CHECK_ERR(emily_stream_set_current(CUDA0, NULL), EMILY_ERR_DEVICE, "cuda");
    /* moving a CPU tensor there fails too, and nothing leaks */
    emily_tensor *c = t_from(EMILY_F32, 1, shape, data);
    CHECK_ERR(emily_to_device(c, CUDA0, &t), EMILY_ERR_DEVICE, "cuda");
    CHECK(t == NULL);
    /* and CPU work goes on as before */
    float back[4];
    CHECK_OK(emily_to_binary(c, back, sizeof back));
    CHECK(back[3] == 4.0f);
    emily_tensor_release(c);
}

TEST(device_names) {
    emily_device d;
    CHECK_OK(emily_device_parse("cuda:3", &d));
    CHECK(d.type == EMILY_DEVICE_CUDA && d.index == 3);
    char buf[16];
    emily_device_format(d, buf, sizeof buf);
    CHECK(strcmp(buf, "cuda:3") == 0);
    CHECK(emily_device_count(EMILY_DEVICE_CUDA) >= 0);
    /* an index past the devices present is never usable */
    d.index = 1000;
    CHECK_ERR(emily_device_check(d), EMILY_ERR_DEVICE, "cuda");
}

TEST(cpu_streams_are_trivial) {
    emily_stream *s = NULL;
    CHECK_OK(emily_stream_new(EMILY_CPU, &s));
    CHECK(s != NULL);
    CHECK_OK(emily_stream_set_current(EMILY_CPU, s));
    int64_t shape[1] = {3};
    float data[3] = {1, 2, 3}, back[3];
    emily_tensor *t = t_from(EMILY_F32, 1, shape, data);
    CHECK_OK(emily_to_binary(t, back, sizeof back));
    CHECK(back[2] == 3.0f);
    emily_tensor_release(t);
    CHECK_OK(emily_stream_synchronize(s));
    CHECK_OK(emily_stream_set_current(EMILY_CPU, NULL));
    CHECK_OK(emily_stream_free(s));
    CHECK_OK(emily_stream_free(NULL));
    CHECK_ERR(emily_stream_new(EMILY_CPU, NULL), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_stream_synchronize(NULL), EMILY_ERR_ARGUMENT, "NULL");
    emily_device bad = {(emily_device_type)7, 0};
    CHECK_ERR(emily_stream_new(bad, &s), EMILY_ERR_DEVICE, "unknown device");
}

/* ---- on a GPU ------------------------------------------------------------ */

/* A tensor on cuda:0 from host data (aborts the case on failure). */
static emily_tensor *g_from(emily_dtype dt, int rank, const int64_t *shape, const void *data) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    emily_tensor *t = NULL;
    emily_status s = emily_from_binary(CUDA0, dt, rank, shape, data, (size_t)n * emily_dtype_size(dt), &t);
    if (s) {
        fprintf(stderr, "g_from: %s\n", emily_last_error());
        abort();
    }
    return t;
}

TEST(gpu_transfers_roundtrip) {
    /* sizes around the staging thresholds: small slots, large slots, several chunks */
    const size_t sizes[] = {1, 3, 4096, 65535, 65536, 65537, (1 << 20) + 3, (9 << 20) + 5, 33u << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        unsigned char *host = malloc(n), *back = malloc(n);
        CHECK(host && back);
        if (!host || !back) { free(host); free(back); return; }
        for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(i * 131 + k);
        int64_t shape[1] = {(int64_t)n};
        emily_tensor *t = NULL;
        CHECK_OK(emily_from_binary(CUDA0, EMILY_U8, 1, shape, host, n, &t));
        /* upload has finished reading `host` when it returns */
        memset(host, 0xEE, n);
        CHECK_OK(emily_to_binary(t, back, n));
        bool same = true;
        for (size_t i = 0; i < n && same; i++) same = back[i] == (unsigned char)(i * 131 + k);
        CHECK(same);
        emily_tensor_release(t);
        free(host);
        free(back);
    }
    /* zero-size tensors need no memory */
    int64_t zshape[2] = {0, 5};
    emily_tensor *z = NULL;
    CHECK_OK(emily_empty(CUDA0, EMILY_F64, 2, zshape, &z));
    CHECK_OK(emily_to_binary(z, NULL, 0));
    emily_tensor_release(z);
}

TEST(gpu_allocator_caches) {
    CHECK_OK(emily_synchronize(CUDA0));
    CHECK_OK(emily_memory_release_cache(CUDA0));
    emily_memory_stats a, b, c, d;
    CHECK_OK(emily_memory_stats_get(CUDA0, &a));
    CHECK(a.cached == 0);
    int64_t shape[1] = {1 << 20}; /* 4 MiB of f32 */
    emily_tensor *t = NULL;
    CHECK_OK(emily_empty(CUDA0, EMILY_F32, 1, shape, &t));
    CHECK_OK(emily_memory_stats_get(CUDA0, &b));
    CHECK(b.active >= a.active + (4u << 20));
    CHECK(b.peak >= b.active);
    emily_tensor_release(t);
    CHECK_OK(emily_memory_stats_get(CUDA0, &c));
    CHECK(c.active == a.active);
    CHECK(c.cached >= (4u << 20));
    /* the same size again comes from the cache */
    CHECK_OK(emily_empty(CUDA0, EMILY_F32, 1, shape, &t));
    CHECK_OK(emily_memory_stats_get(CUDA0, &d));
    CHECK(d.cached + (4u << 20) <= c.cached);
    emily_tensor_release(t);
    CHECK_OK(emily_memory_release_cache(CUDA0));
    CHECK_OK(emily_memory_stats_get(CUDA0, &d));
    CHECK(d.cached == 0);
    CHECK(d.peak == d.active);
    /* an impossible allocation is a memory error naming the device, and
     * the engine keeps working afterwards */
    int64_t huge[2] = {1 << 20, 1 << 20}; /* 4 TiB of f32 */
    CHECK_ERR(emily_empty(CUDA0, EMILY_F32, 2, huge, &t), EMILY_ERR_MEMORY, "cuda");
    CHECK_OK(emily_empty(CUDA0, EMILY_F32, 1, shape, &t));
    emily_tensor_release(t);
}

TEST(gpu_copy_views) {
    /* transpose (tiled path), reversed and strided views, broadcasts */
    int64_t shape[2] = {67, 129};
    int n = 67 * 129;
    int32_t *h = malloc(sizeof(int32_t) * (size_t)n), *back = malloc(sizeof(int32_t) * (size_t)n);
    if (!h || !back) { free(h); free(back); CHECK(0); return; }
    for (int i = 0; i < n; i++) h[i] = i * 7 - 3;
    emily_tensor *g = g_from(EMILY_S32, 2, shape, h);
    int perm[2] = {1, 0};
    emily_tensor *tv = NULL, *tc = NULL;
    CHECK_OK(emily_transpose(g, perm, &tv));
    if (tv) CHECK_OK(emily_contiguous(tv, &tc));
    if (tc) {
        CHECK_OK(emily_to_binary(tc, back, sizeof(int32_t) * (size_t)n));
        bool ok = true;
        for (int r = 0; r < 129 && ok; r++)
            for (int c = 0; c < 67 && ok; c++) ok = back[r * 67 + c] == h[c * 129 + r];
        CHECK(ok);
    }
    emily_tensor_release(tc);
    emily_tensor_release(tv);
    int axes[1] = {1};
    emily_tensor *rv = NULL;
    CHECK_OK(emily_reverse(g, 1, axes, &rv));
    if (rv) {
        CHECK_OK(emily_to_binary(rv, back, sizeof(int32_t) * (size_t)n));
        bool ok = true;
        for (int r = 0; r < 67 && ok; r++)
            for (int c = 0; c < 129 && ok; c++) ok = back[r * 129 + c] == h[r * 129 + 128 - c];
        CHECK(ok);
    }
    emily_tensor_release(rv);
    int64_t starts[2] = {1, 2}, lengths[2] = {30, 40}, strides[2] = {3, 5};
    emily_tensor *sv = NULL;
    CHECK_OK(emily_slice(g, starts, lengths, strides, &sv));
    if (sv) {
        int64_t cnt = emily_tensor_size(sv);
        CHECK_OK(emily_to_binary(sv, back, sizeof(int32_t) * (size_t)cnt));
        const int64_t *ss = emily_tensor_shape(sv);
        bool ok = true;
        for (int64_t r = 0; r < ss[0] && ok; r++)
            for (int64_t c = 0; c < ss[1] && ok; c++)
                ok = back[r * ss[1] + c] == h[(1 + 3 * r) * 129 + 2 + 5 * c];
        CHECK(ok);
    }
    emily_tensor_release(sv);
    emily_tensor_release(g);
    free(h);
    free(back);
}

/* Enqueuing must not wait for the device: a chain of large adds returns
 * long before the device has finished it. */
TEST(gpu_ops_are_async) {
    int64_t shape[1] = {1 << 26}; /* 256 MiB of f32 */
    emily_tensor *a = NULL;
    CHECK_OK(emily_constant(CUDA0, EMILY_F32, 1, shape, emily_scalar_float(1.0), &a));
    if (!a) return;
    CHECK_OK(emily_synchronize(CUDA0));
    double t0 = now_s();
    emily_tensor *x = a;
    emily_tensor_retain(x);
    for (int i = 0; i < 40; i++) {
        emily_tensor *y = NULL;
        CHECK_OK(emily_binary(EMILY_ADD, x, a, EMILY_DTYPE_AUTO, &y));
        emily_tensor_release(x);
        x = y;
        if (!x) break;
    }
    double t1 = now_s();
    CHECK_OK(emily_synchronize(CUDA0));
    double t2 = now_s();
    printf("  async: enqueue %.3f ms, device work %.3f ms\n", 1e3 * (t1 - t0), 1e3 * (t2 - t0));
    CHECK(t1 - t0 < 0.5 * (t2 - t0));
    if (x) {
        float v;
        int64_t idx[1] = {12345}, one[1] = {1}, st[1] = {1};
        emily_tensor *e = NULL;
        CHECK_OK(emily_slice(x, idx, one, st, &e));
        if (e) CHECK_OK(emily_to_binary(e, &v, sizeof v));
        CHECK(v == 41.0f);
        emily_tensor_release(e);
    }
    emily_tensor_release(x);
    emily_tensor_release(a);
}

/* Work on one stream that reads a buffer written on another waits for it. */
TEST(gpu_streams_order_buffers) {
    emily_stream *s1 = NULL, *s2 = NULL;
    CHECK_OK(emily_stream_new(CUDA0, &s1));
    CHECK_OK(emily_stream_new(CUDA0, &s2));
    if (!s1 || !s2) { emily_stream_free(s1); emily_stream_free(s2); return; }
    int64_t shape[1] = {1 << 24};
    emily_tensor *a = NULL, *x = NULL, *y = NULL;
    CHECK_OK(emily_stream_set_current(CUDA0, s1));
    CHECK_OK(emily_constant(CUDA0, EMILY_F32, 1, shape, emily_scalar_float(2.0), &a));
    x = a;
    emily_tensor_retain(x);
    for (int i = 0; i < 20 && x; i++) { /* a long chain on s1 */
        emily_tensor *t = NULL;
        CHECK_OK(emily_binary(EMILY_ADD, x, a, EMILY_DTYPE_AUTO, &t));
        emily_tensor_release(x);
        x = t;
    }
    CHECK_OK(emily_stream_set_current(CUDA0, s2));
    if (x) CHECK_OK(emily_binary(EMILY_MULTIPLY, x, a, EMILY_DTYPE_AUTO, &y)); /* on s2 */
    emily_tensor_release(x);
    emily_tensor_release(a);
    /* reading back from s2 sees the finished chain: (2 + 20 * 2) * 2 */
    if (y) {
        float *back = malloc(sizeof(float) << 24);
        if (back) {
            CHECK_OK(emily_to_binary(y, back, sizeof(float) << 24));
            CHECK(back[0] == 84.0f && back[(1 << 24) - 1] == 84.0f);
        }
        free(back);
    }
    emily_tensor_release(y);
    CHECK_OK(emily_stream_synchronize(s1));
    /* freeing the current stream falls back to the default stream */
    CHECK_OK(emily_stream_free(s2));
    emily_tensor *z = NULL;
    int64_t one[1] = {3};
    CHECK_OK(emily_constant(CUDA0, EMILY_S32, 1, one, emily_scalar_int(5), &z));
    if (z) CHECK(t_get(z, 2) == 5.0);
    emily_tensor_release(z);
    CHECK_OK(emily_stream_set_current(CUDA0, NULL));
    CHECK_OK(emily_stream_free(s1));
    /* a stream of another device is refused */
    emily_stream *cs = NULL;
    CHECK_OK(emily_stream_new(EMILY_CPU, &cs));
    CHECK_ERR(emily_stream_set_current(CUDA0, cs), EMILY_ERR_DEVICE, "belongs to cpu");
    emily_stream_free(cs);
}

typedef struct thread_job {
    int id;
    int failures;
} thread_job;

static void *thread_work(void *arg) {
    thread_job *job = arg;
    emily_stream *s = NULL;
    if (emily_stream_new(CUDA0, &s)) { job->failures++; return NULL; }
    if (emily_stream_set_current(CUDA0, s)) job->failures++;
    int64_t shape[1] = {1 << 20};
    for (int round = 0; round < 20; round++) {
        emily_tensor *a = NULL, *b = NULL, *c = NULL;
        if (emily_constant(CUDA0, EMILY_S32, 1, shape, emily_scalar_int(job->id), &a) ||
            emily_constant(CUDA0, EMILY_S32, 1, shape, emily_scalar_int(round), &b) ||
            emily_binary(EMILY_ADD, a, b, EMILY_DTYPE_AUTO, &c)) {
            job->failures++;
        } else {
            int32_t v[4];
            int64_t st[1] = {(1 << 20) - 4}, len[1] = {4}, one[1] = {1};
            emily_tensor *tail = NULL;
            if (emily_slice(c, st, len, one, &tail) || emily_to_binary(tail, v, sizeof v) ||
                v[3] != job->id + round)
                job->failures++;
            emily_tensor_release(tail);
        }
        emily_tensor_release(a);
        emily_tensor_release(b);
        emily_tensor_release(c);
    }
    if (emily_stream_free(s)) job->failures++;
    return NULL;
}

TEST(gpu_threads_with_own_streams) {
    pthread_t th[4];
    thread_job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (thread_job){.id = 100 * (i + 1), .failures = 0};
        CHECK(pthread_create(&th[i], NULL, thread_work, &jobs[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK(jobs[i].failures == 0);
    }
}

TEST(gpu_errors) {
    int64_t shape[1] = {4};
    float data[4] = {1, 2, 3, 4};
    emily_tensor *g = g_from(EMILY_F32, 1, shape, data);
    emily_tensor *c = t_from(EMILY_F32, 1, shape, data);
    emily_tensor *out = NULL;
    CHECK_ERR(emily_binary(EMILY_ADD, g, c, EMILY_DTYPE_AUTO, &out), EMILY_ERR_DEVICE,
              "different devices");
    CHECK(out == NULL);
    emily_device far = {EMILY_DEVICE_CUDA, 77};
    CHECK_ERR(emily_to_device(g, far, &out), EMILY_ERR_DEVICE, "cuda:77");
    /* transfers both ways */
    emily_tensor *back = NULL;
    CHECK_OK(emily_to_device(g, EMILY_CPU, &back));
    if (back) CHECK(t_get(back, 3) == 4.0);
    emily_tensor_release(back);
    float small[2];
    CHECK_ERR(emily_to_binary(g, small, sizeof small), EMILY_ERR_ARGUMENT, "bytes");
    CHECK_ERR(emily_host_data(g, (const void **)&out), EMILY_ERR_ARGUMENT, "host memory");
    emily_tensor_release(g);
    emily_tensor_release(c);
}

int main(void) {
    static const harness_case always[] = {
        CASE(no_gpu_fails_clearly), CASE(device_names), CASE(cpu_streams_are_trivial), {NULL, NULL}};
    static const harness_case gpu[] = {
        CASE(gpu_transfers_roundtrip), CASE(gpu_allocator_caches), CASE(gpu_copy_views),
        CASE(gpu_ops_are_async), CASE(gpu_streams_order_buffers), CASE(gpu_threads_with_own_streams),
        CASE(gpu_errors), {NULL, NULL}};
    int rc = harness_run("cuda (without a GPU too)", always);
    int n = emily_device_count(EMILY_DEVICE_CUDA);
    if (n == 0) {
        int skipped = 0;
        for (const harness_case *c = gpu; c->name; c++) skipped++;
        printf("cuda: SKIPPED %d GPU cases: no CUDA device usable here "
               "(no GPU, no driver, or a build without the CUDA engine)\n", skipped);
        return rc;
    }
    printf("cuda: %d device(s)\n", n);
    return harness_run("cuda (GPU)", gpu) || rc;
}
