/* The CUDA engine: behaviour without a GPU (always checked), and on a GPU
 * the caching allocator, streams, transfers, asynchronous execution,
 * errors, and a set of ops compared with the CPU engine.
 *
 * GPU cases run only when emily_device_count(EMILY_DEVICE_CUDA) > 0;
 * otherwise they are listed as skipped with the reason (never counted as
 * passed). */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include "harness.h"
#include "../float_parts.h"

/* The device the GPU cases run on. EMILY_TEST_CUDA_ON_CPU=1 points them at
 * the CPU instead: a check of the test code itself (CPU against CPU), not
 * of the CUDA engine. */
static emily_device CUDA0 = {EMILY_DEVICE_CUDA, 0};

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
    CHECK_ERR(emily_from_binary(CUDA0, EMILY_F32, 1, shape, data, sizeof data, &t), EMILY_ERR_DEVICE, "cuda");
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
        if (!host || !back) {
            free(host);
            free(back);
            return;
        }
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
    if (!ALLOCATED(h, back)) return;
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
            for (int64_t c = 0; c < ss[1] && ok; c++) ok = back[r * ss[1] + c] == h[(1 + 3 * r) * 129 + 2 + 5 * c];
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
    /* warm the caching allocator first: the chain needs two 256 MiB blocks,
     * and a first cudaMalloc of that size takes tens of ms on its own */
    for (int i = 0; i < 2; i++) {
        emily_tensor *w1 = NULL, *w2 = NULL;
        CHECK_OK(emily_binary(EMILY_ADD, a, a, EMILY_DTYPE_AUTO, &w1));
        CHECK_OK(emily_binary(EMILY_ADD, a, a, EMILY_DTYPE_AUTO, &w2));
        emily_tensor_release(w1);
        emily_tensor_release(w2);
    }
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
        float v = 0;
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
    if (!s1 || !s2) {
        emily_stream_free(s1);
        emily_stream_free(s2);
        return;
    }
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
    if (emily_stream_new(CUDA0, &s)) {
        job->failures++;
        return NULL;
    }
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
            if (emily_slice(c, st, len, one, &tail) || emily_to_binary(tail, v, sizeof v) || v[3] != job->id + round)
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
    CHECK_ERR(emily_binary(EMILY_ADD, g, c, EMILY_DTYPE_AUTO, &out), EMILY_ERR_DEVICE, "different devices");
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

/* ---- ops on the GPU against the CPU engine ------------------------------ */

/* Deterministic pseudo-random bits (xorshift). */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { return xorshift64(&rng_state); }
static double rnd_unit(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }

/* One float value: mostly moderate numbers, some edge values. */
static double rnd_float(int edges) {
    if (edges && rnd() % 8 == 0) {
        static const double e[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e30, -1e30, 1e-40, 65504.0, 3.0e38};
        switch (rnd() % 14) {
        case 0: return NAN;
        case 1: return INFINITY;
        case 2: return -INFINITY;
        case 3:
        case 4:
        case 5:
        case 6:
        case 7:
        case 8:
        case 9:
        case 10:
        case 11:
        case 12:
        case 13: return e[rnd() % 10];
        }
    }
    return (rnd_unit() - 0.5) * 8.0;
}

/* A host buffer for the n elements of dt and shape (n in *n, the element
 * size in *es), with pad bytes more; aborts when out of memory. */
static unsigned char *elem_buf(emily_dtype dt, int rank, const int64_t *shape, size_t pad, int64_t *n, size_t *es) {
    *n = 1;
    for (int i = 0; i < rank; i++) *n *= shape[i];
    *es = emily_dtype_size(dt);
    unsigned char *buf = malloc((size_t)*n * *es + pad);
    if (!buf) abort();
    return buf;
}

/* The tensor of dt and shape with the elements of buf, which it frees. */
static emily_tensor *tensor_of_buf(emily_dtype dt, int rank, const int64_t *shape, unsigned char *buf) {
    emily_tensor *t = t_from(dt, rank, shape, buf);
    free(buf);
    return t;
}

/* n elements of dt with random values (edge values when `edges`). */
static emily_tensor *rnd_tensor(emily_dtype dt, int rank, const int64_t *shape, int edges) {
    int64_t n;
    size_t es;
    unsigned char *buf = elem_buf(dt, rank, shape, 16, &n, &es);
    for (int64_t i = 0; i < n; i++) {
        unsigned char *p = buf + (size_t)i * es;
        uint64_t bits = rnd();
        switch (dt) {
        case EMILY_F16: {
            uint16_t h = emily_f64_to_f16(rnd_float(edges));
            memcpy(p, &h, 2);
            break;
        }
        case EMILY_BF16: {
            uint16_t h = emily_f32_to_bf16((float)rnd_float(edges));
            memcpy(p, &h, 2);
            break;
        }
        case EMILY_F32: {
            float f = (float)rnd_float(edges);
            memcpy(p, &f, 4);
            break;
        }
        case EMILY_F64: {
            double f = rnd_float(edges);
            memcpy(p, &f, 8);
            break;
        }
        case EMILY_C64: {
            float f[2] = {(float)rnd_float(edges), (float)rnd_float(edges)};
            memcpy(p, f, 8);
            break;
        }
        case EMILY_C128: {
            double f[2] = {rnd_float(edges), rnd_float(edges)};
            memcpy(p, f, 16);
            break;
        }
        default:
            /* integers: small values mostly (shifts, pow), full-range bits sometimes */
            if (!edges || rnd() % 4) bits = (uint64_t)((int64_t)(rnd() % 19) - 9);
            memcpy(p, &bits, es);
        }
    }
    return tensor_of_buf(dt, rank, shape, buf);
}

/* |a - b| in units of the last place (floats as doubles of width bits). */
static bool float_near(double a, double b, uint64_t ab, uint64_t bb, int width, int ulps, double rel_floor) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (ab == bb) return true;
    if (ulps == 0) return false;
    if (isinf(a) || isinf(b)) return a == b;
    int64_t d = fp_ordered(ab, width) - fp_ordered(bb, width);
    if (d < 0) d = -d;
    return d <= ulps || fabs(a - b) <= rel_floor;
}

/* Same dtype, shape and values (ulps > 0: floats within that many ULP,
 * complex parts also within rel of the element's magnitude). */
static bool same_tensor(const char *what, const emily_tensor *c, const emily_tensor *g, int ulps) {
    if (emily_tensor_dtype(c) != emily_tensor_dtype(g) || !t_shape_is(g, emily_tensor_rank(c), emily_tensor_shape(c))) {
        fprintf(stderr, "  %s: cuda result has type %s rank %d, cpu %s rank %d\n", what,
                emily_dtype_name(emily_tensor_dtype(g)), emily_tensor_rank(g), emily_dtype_name(emily_tensor_dtype(c)),
                emily_tensor_rank(c));
        return false;
    }
    emily_dtype dt = emily_tensor_dtype(c);
    size_t nb = emily_tensor_nbytes(c), es = emily_dtype_size(dt);
    unsigned char *cb = malloc(nb + 1), *gb = malloc(nb + 1);
    bool ok = cb && gb && !emily_to_binary(c, cb, nb) && !emily_to_binary(g, gb, nb);
    int64_t n = emily_tensor_size(c);
    for (int64_t i = 0; ok && i < n; i++) {
        const unsigned char *x = cb + (size_t)i * es, *y = gb + (size_t)i * es;
        if (emily_dtype_is_integer(dt)) {
            ok = memcmp(x, y, es) == 0;
        } else {
            int parts = emily_dtype_is_complex(dt) ? 2 : 1;
            size_t ps = es / (size_t)parts;
            double mag = 0;
            if (parts == 2) {
                uint64_t b0;
                int w0;
                double re = fp_part(dt, x, &b0, &w0), im = fp_part(dt, x + ps, &b0, &w0);
                mag = sqrt(re * re + im * im);
            }
            double floor_abs = parts == 2 ? mag * (dt == EMILY_C64 ? 1e-6 : 1e-14) : 0.0;
            for (int k = 0; k < parts && ok; k++) {
                uint64_t xb, yb;
                int w;
                double xv = fp_part(dt, x + (size_t)k * ps, &xb, &w), yv = fp_part(dt, y + (size_t)k * ps, &yb, &w);
                ok = float_near(xv, yv, xb, yb, w, ulps, floor_abs);
            }
        }
        if (!ok) {
            uint64_t xb = 0, yb = 0;
            int w;
            double xv = 0, yv = 0;
            if (!emily_dtype_is_integer(dt)) {
                xv = fp_part(dt, x, &xb, &w);
                yv = fp_part(dt, y, &yb, &w);
            } else {
                memcpy(&xb, x, es);
                memcpy(&yb, y, es);
            }
            fprintf(stderr, "  %s (%s): element %lld: cpu %.17g (0x%llx), cuda %.17g (0x%llx)\n", what,
                    emily_dtype_name(dt), (long long)i, xv, (unsigned long long)xb, yv, (unsigned long long)yb);
        }
    }
    free(cb);
    free(gb);
    return ok;
}

typedef emily_status (*op_fn)(emily_tensor *const *in, emily_tensor **out, const void *arg);

/* Runs fn on CPU inputs and on their copies on cuda:0; both must succeed
 * (or fail with the same status) and agree. */
static void compare_op(const char *what, op_fn fn, const void *arg, int nin, emily_tensor *const *cin, int ulps) {
    emily_tensor *gin[4] = {NULL, NULL, NULL, NULL}, *c = NULL, *g = NULL;
    for (int i = 0; i < nin; i++) CHECK_OK(emily_to_device(cin[i], CUDA0, &gin[i]));
    emily_status sc = fn(cin, &c, arg);
    char cmsg[256];
    snprintf(cmsg, sizeof cmsg, "%s", emily_last_error());
    emily_status sg = fn(gin, &g, arg);
    if (sc != sg) {
        fprintf(stderr, "  %s: cpu says %s (%s), cuda says %s (%s)\n", what, emily_status_name(sc), sc ? cmsg : "",
                emily_status_name(sg), sg ? emily_last_error() : "");
        harness_failures++;
    } else if (!sc && !same_tensor(what, c, g, ulps)) {
        harness_failures++;
    }
    emily_tensor_release(c);
    emily_tensor_release(g);
    for (int i = 0; i < nin; i++) emily_tensor_release(gin[i]);
}

static int tol_for(emily_dtype out) { return out == EMILY_F16 || out == EMILY_BF16 ? 1 : 4; }

static emily_status run_convert(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    return emily_as_type(in[0], *(const emily_dtype *)arg, out);
}

TEST(gpu_as_type_matches_cpu) {
    int64_t shape[1] = {509};
    for (int s = 0; s < EMILY_DTYPE_COUNT; s++) {
        emily_tensor *x = rnd_tensor((emily_dtype)s, 1, shape, 1);
        for (int d = 0; d < EMILY_DTYPE_COUNT; d++) {
            emily_dtype to = (emily_dtype)d;
            char what[64];
            snprintf(what, sizeof what, "as_type %s -> %s", emily_dtype_name((emily_dtype)s), emily_dtype_name(to));
            compare_op(what, run_convert, &to, 1, &x, 0);
        }
        emily_tensor_release(x);
    }
}

static emily_status run_unary(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    emily_unary_op op = *(const emily_unary_op *)arg;
    return emily_unary(op, in[0], out);
}
/* The same op on a transposed view of the input. */
static emily_status run_unary_t(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    int perm[2] = {1, 0};
    emily_tensor *v = NULL;
    emily_status s = emily_transpose(in[0], perm, &v);
    if (!s) s = emily_unary(*(const emily_unary_op *)arg, v, out);
    emily_tensor_release(v);
    return s;
}

static bool unary_exact(emily_unary_op op) {
    switch (op) {
    case EMILY_ABS:
    case EMILY_NEGATE:
    case EMILY_CONJUGATE:
    case EMILY_REAL:
    case EMILY_IMAG:
    case EMILY_CEIL:
    case EMILY_FLOOR:
    case EMILY_ROUND:
    case EMILY_SIGN:
    case EMILY_IS_NAN:
    case EMILY_IS_INFINITY:
    case EMILY_LOGICAL_NOT:
    case EMILY_BITWISE_NOT:
    case EMILY_COUNT_LEADING_ZEROS:
    case EMILY_POPULATION_COUNT: return true;
    default: return false;
    }
}

TEST(gpu_unary_matches_cpu) {
    int64_t shape[1] = {1031}, shape2[2] = {37, 29};
    for (int d = 0; d < EMILY_DTYPE_COUNT; d++) {
        emily_dtype dt = (emily_dtype)d;
        emily_tensor *x = rnd_tensor(dt, 1, shape, 1), *x2 = rnd_tensor(dt, 2, shape2, 1);
        for (int o = 0; o < EMILY_UNARY_OP_COUNT; o++) {
            emily_unary_op op = (emily_unary_op)o;
            emily_dtype out;
            if (emily_unary_type(op, dt, &out)) continue; /* not allowed for this type */
            int ulps = unary_exact(op) ? 0 : tol_for(out);
            char what[64];
            snprintf(what, sizeof what, "%s(%s)", emily_unary_op_name(op), emily_dtype_name(dt));
            compare_op(what, run_unary, &op, 1, &x, ulps);
            compare_op(what, run_unary_t, &op, 1, &x2, ulps);
        }
        emily_tensor_release(x);
        emily_tensor_release(x2);
    }
}

typedef struct bin_arg {
    emily_binary_op op;
    int form; /* 0: same shape, 1: row broadcast, 2: scalar, 3: transposed a */
} bin_arg;

static emily_status run_binary(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const bin_arg *b = arg;
    if (b->form != 3) return emily_binary(b->op, in[0], in[1], EMILY_DTYPE_AUTO, out);
    int perm[2] = {1, 0};
    emily_tensor *v = NULL;
    emily_status s = emily_transpose(in[0], perm, &v);
    if (!s) s = emily_binary(b->op, v, in[1], EMILY_DTYPE_AUTO, out);
    emily_tensor_release(v);
    return s;
}

/* The ops that fail for some operand values, as the reference raises
 * (src/ops/binary_raises.c), on operands it accepts, so that their kernels
 * are still compared on random data: shift counts masked into [0, 63],
 * remainder's NaN/infinite operands and zero divisors replaced by 1,
 * complex atan2 operands cut to their real parts. */
static bool binary_raises(emily_binary_op op, emily_dtype dt) {
    return op == EMILY_LEFT_SHIFT || op == EMILY_RIGHT_SHIFT ||
           (op == EMILY_REMAINDER && !emily_dtype_is_integer(dt)) || (op == EMILY_ATAN2 && emily_dtype_is_complex(dt));
}

static emily_status valid_operand(emily_binary_op op, const emily_tensor *t, bool divisor, emily_tensor **out) {
    emily_device dev = emily_tensor_device(t);
    emily_dtype dt = emily_tensor_dtype(t);
    emily_tensor *c = NULL, *m1 = NULL, *m2 = NULL, *m = NULL, *z = NULL, *r = NULL;
    emily_status s;
    if (op == EMILY_LEFT_SHIFT || op == EMILY_RIGHT_SHIFT) {
        s = emily_constant(dev, dt, 0, NULL, emily_scalar_int(63), &c);
        if (!s) s = emily_binary(EMILY_BITWISE_AND, t, c, dt, out);
    } else if (op == EMILY_ATAN2) {
        s = emily_unary(EMILY_REAL, t, &r);
        if (!s) s = emily_as_type(r, dt, out);
    } else {
        s = emily_unary(EMILY_IS_NAN, t, &m1);
        if (!s) s = emily_unary(EMILY_IS_INFINITY, t, &m2);
        if (!s) s = emily_binary(EMILY_LOGICAL_OR, m1, m2, EMILY_DTYPE_AUTO, &m);
        if (!s && divisor) {
            emily_tensor *zero = NULL, *m3 = NULL;
            s = emily_constant(dev, dt, 0, NULL, emily_scalar_int(0), &zero);
            if (!s) s = emily_binary(EMILY_EQUAL, t, zero, EMILY_DTYPE_AUTO, &z);
            if (!s) s = emily_binary(EMILY_LOGICAL_OR, m, z, EMILY_DTYPE_AUTO, &m3);
            emily_tensor_release(zero);
            emily_tensor_release(m);
            m = m3;
        }
        if (!s) s = emily_constant(dev, dt, 0, NULL, emily_scalar_int(1), &c);
        if (!s) s = emily_select(m, c, t, dt, out);
    }
    emily_tensor *all[6] = {c, m1, m2, m, z, r};
    for (int i = 0; i < 6; i++) emily_tensor_release(all[i]);
    return s;
}

static emily_status run_binary_valid(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const bin_arg *b = arg;
    emily_tensor *x = NULL, *y = NULL;
    emily_status s = valid_operand(b->op, in[0], false, &x);
    if (!s) s = valid_operand(b->op, in[1], true, &y);
    emily_tensor *v[2] = {x, y};
    if (!s) s = run_binary(v, out, arg);
    emily_tensor_release(x);
    emily_tensor_release(y);
    return s;
}

static bool binary_exact(emily_binary_op op) { return op != EMILY_POW && op != EMILY_ATAN2 && op != EMILY_REMAINDER; }

/* contiguous(transpose(x, perm)): the tiled transpose path on planes
 * under a batch axis (NCHW <-> NHWC) and the strided path elsewhere. */
static emily_status run_permuted_copy(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    emily_tensor *v = NULL;
    emily_status s = emily_transpose(in[0], (const int *)arg, &v);
    if (!s) s = emily_contiguous(v, out);
    emily_tensor_release(v);
    return s;
}

TEST(gpu_copy_batched_transposes) {
    static const int perms[5][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {1, 0, 2, 3}, {0, 1, 3, 2}, {3, 2, 1, 0}};
    static const emily_dtype types[4] = {EMILY_U8, EMILY_BF16, EMILY_F32, EMILY_C128};
    int64_t shape[4] = {3, 40, 37, 33};
    for (int t = 0; t < 4; t++) {
        emily_tensor *x = rnd_tensor(types[t], 4, shape, 1);
        for (int p = 0; p < 5; p++) {
            char what[64];
            snprintf(what, sizeof what, "copy of transpose %d%d%d%d (%s)", perms[p][0], perms[p][1], perms[p][2],
                     perms[p][3], emily_dtype_name(types[t]));
            compare_op(what, run_permuted_copy, perms[p], 1, &x, 0);
        }
        emily_tensor_release(x);
    }
    /* more planes than a grid's z dimension holds (65535) */
    int64_t many[3] = {70001, 32, 33};
    static const int swap[3] = {0, 2, 1};
    emily_tensor *y = rnd_tensor(EMILY_U8, 3, many, 0);
    compare_op("copy of 70001 transposed planes (u8)", run_permuted_copy, swap, 1, &y, 0);
    emily_tensor_release(y);
}

TEST(gpu_binary_matches_cpu) {
    int64_t sa[2] = {41, 67}, srow[1] = {67}, st[2] = {67, 41};
    for (int d = 0; d < EMILY_DTYPE_COUNT; d++) {
        emily_dtype dt = (emily_dtype)d;
        emily_tensor *a = rnd_tensor(dt, 2, sa, 1), *b = rnd_tensor(dt, 2, sa, 1);
        emily_tensor *row = rnd_tensor(dt, 1, srow, 1), *sc = rnd_tensor(dt, 0, NULL, 0);
        emily_tensor *at = rnd_tensor(dt, 2, st, 1);
        for (int o = 0; o < EMILY_BINARY_OP_COUNT; o++) {
            emily_dtype out;
            if (emily_binary_type((emily_binary_op)o, dt, dt, &out)) continue;
            int ulps = binary_exact((emily_binary_op)o) ? 0 : tol_for(out);
            if (emily_dtype_is_complex(dt) && o == EMILY_POW) ulps = 4;
            char what[64];
            snprintf(what, sizeof what, "%s(%s)", emily_binary_op_name((emily_binary_op)o), emily_dtype_name(dt));
            bin_arg args[4] = {
                {(emily_binary_op)o, 0}, {(emily_binary_op)o, 1}, {(emily_binary_op)o, 2}, {(emily_binary_op)o, 3}};
            emily_tensor *in0[2] = {a, b}, *in1[2] = {a, row}, *in2[2] = {sc, a}, *in3[2] = {at, b};
            compare_op(what, run_binary, &args[0], 2, in0, ulps);
            compare_op(what, run_binary, &args[1], 2, in1, ulps);
            compare_op(what, run_binary, &args[2], 2, in2, ulps);
            compare_op(what, run_binary, &args[3], 2, in3, ulps);
            if (binary_raises((emily_binary_op)o, dt))
                for (int f = 0; f < 4; f++) {
                    emily_tensor **in = f == 0 ? in0 : f == 1 ? in1 : f == 2 ? in2 : in3;
                    compare_op(what, run_binary_valid, &args[f], 2, in, ulps);
                }
        }
        emily_tensor_release(a);
        emily_tensor_release(b);
        emily_tensor_release(row);
        emily_tensor_release(sc);
        emily_tensor_release(at);
    }
}

static emily_status run_select(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    (void)arg;
    return emily_select(in[0], in[1], in[2], EMILY_DTYPE_AUTO, out);
}

TEST(gpu_select_matches_cpu) {
    int64_t shape[2] = {33, 65}, row[1] = {65};
    for (int p = 0; p < EMILY_DTYPE_COUNT; p++) {
        if (emily_dtype_is_complex((emily_dtype)p)) continue;
        emily_tensor *pred = rnd_tensor((emily_dtype)p, 2, shape, 1);
        for (int d = 0; d < EMILY_DTYPE_COUNT; d++) {
            emily_tensor *x = rnd_tensor((emily_dtype)d, 2, shape, 1), *y = rnd_tensor((emily_dtype)d, 1, row, 1);
            emily_tensor *in[3] = {pred, x, y};
            char what[64];
            snprintf(what, sizeof what, "select(%s, %s)", emily_dtype_name((emily_dtype)p),
                     emily_dtype_name((emily_dtype)d));
            compare_op(what, run_select, NULL, 3, in, 0);
            emily_tensor_release(x);
            emily_tensor_release(y);
        }
        emily_tensor_release(pred);
    }
}

typedef struct red_arg {
    emily_reduce_op op;
    int naxes;
    int axes[3];
    bool keep;
    bool transpose;
} red_arg;

static emily_status run_reduce(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const red_arg *r = arg;
    emily_tensor *v = NULL;
    emily_status s = EMILY_OK;
    if (r->transpose) {
        int perm[2] = {1, 0};
        s = emily_transpose(in[0], perm, &v);
    }
    if (!s) s = emily_reduce(r->op, v ? v : in[0], r->naxes, r->naxes ? r->axes : NULL, r->keep, EMILY_DTYPE_AUTO, out);
    emily_tensor_release(v);
    return s;
}

/* Zeros of both signs and a few NaNs: max/min must keep the first zero. */
static emily_tensor *zeros_tensor(emily_dtype dt, int rank, const int64_t *shape, int nans) {
    emily_tensor *t = rnd_tensor(EMILY_F64, rank, shape, 0), *r = NULL;
    int64_t n = emily_tensor_size(t);
    double *v = malloc(sizeof(double) * (size_t)n);
    if (!v) abort();
    for (int64_t i = 0; i < n; i++) v[i] = (rnd() & 1) ? 0.0 : -0.0;
    for (int k = 0; k < nans && n; k++) v[rnd() % (uint64_t)n] = NAN;
    emily_tensor *z = t_from(EMILY_F64, rank, shape, v);
    CHECK_OK(emily_as_type(z, dt, &r));
    emily_tensor_release(z);
    emily_tensor_release(t);
    free(v);
    return r;
}

/* zeros_tensor {rows, cols} of each real float type, without NaNs and
 * with `nans` of them, each handed to check. */
static void on_signed_zeros(int64_t rows, int64_t cols, int nans, void (*check)(emily_tensor *z)) {
    const int64_t shape[2] = {rows, cols};
    const emily_dtype ftypes[] = {EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64};
    for (size_t k = 0; k < 4; k++)
        for (int with_nans = 0; with_nans < 2; with_nans++) {
            emily_tensor *z = zeros_tensor(ftypes[k], 2, shape, with_nans * nans);
            check(z);
            emily_tensor_release(z);
        }
}

/* Signed zeros and NaNs in max/min. */
static void max_min_of_zeros(emily_tensor *z) {
    for (int axis = -1; axis < 2; axis++)
        for (int o = EMILY_REDUCE_MAX; o <= EMILY_REDUCE_MIN; o++) {
            red_arg r = {(emily_reduce_op)o, axis < 0 ? 0 : 1, {axis < 0 ? 0 : axis}, false, false};
            compare_op("max/min of signed zeros", run_reduce, &r, 1, &z, 0);
        }
}

TEST(gpu_reductions_match_cpu) {
    /* clang-format off */
    static const struct {
        int rank;
        int64_t shape[3];
        int naxes;
        int axes[3];
        bool transpose;
    } cases[] = {
        {1, {1000}, 0, {0}, false},        {2, {7, 1000}, 1, {1}, false},
        {2, {1000, 7}, 1, {0}, false},     {3, {3, 4, 5}, 2, {0, 2}, false},
        {1, {300001}, 0, {0}, false},      {2, {2, 200003}, 1, {1}, false},
        {2, {100003, 3}, 1, {0}, false},   {2, {50, 60}, 1, {0}, true},
        {2, {50, 60}, 1, {1}, true},       {3, {64, 3, 129}, 2, {0, 2}, false},
        {2, {0, 5}, 1, {0}, false},
    };
    /* clang-format on */
    const emily_dtype types[] = {EMILY_U8,   EMILY_S16, EMILY_S32, EMILY_U64, EMILY_S64, EMILY_F16,
                                 EMILY_BF16, EMILY_F32, EMILY_F64, EMILY_C64, EMILY_C128};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
            emily_dtype dt = types[k];
            emily_tensor *x = rnd_tensor(dt, cases[c].rank, cases[c].shape, 0);
            for (int o = 0; o < EMILY_REDUCE_OP_COUNT; o++) {
                if (emily_dtype_is_complex(dt) && (o == EMILY_REDUCE_MAX || o == EMILY_REDUCE_MIN)) continue;
                red_arg r = {(emily_reduce_op)o,
                             cases[c].naxes,
                             {cases[c].axes[0], cases[c].axes[1], 0},
                             c % 2 == 0,
                             cases[c].transpose};
                bool exact = !emily_dtype_is_float(dt) && !emily_dtype_is_complex(dt);
                exact = exact || o == EMILY_REDUCE_MAX || o == EMILY_REDUCE_MIN;
                char what[80];
                snprintf(what, sizeof what, "reduce op %d case %zu (%s)", o, c, emily_dtype_name(dt));
                compare_op(what, run_reduce, &r, 1, &x, exact ? 0 : 4);
            }
            emily_tensor_release(x);
        }
    }
    /* signed zeros and NaNs in max/min */
    on_signed_zeros(64, 300, 5, max_min_of_zeros);
}

typedef struct arg_arg {
    emily_arg_op op;
    int axis;
    bool high;
    emily_dtype type;
} arg_arg;

static emily_status run_arg(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const arg_arg *a = arg;
    return emily_argreduce(a->op, in[0], a->axis, false, a->high, a->type, out);
}

TEST(gpu_argreduce_matches_cpu) {
    int64_t shape[2] = {300, 257};
    const emily_dtype types[] = {EMILY_U8,  EMILY_S8,   EMILY_S32, EMILY_U64, EMILY_S64,
                                 EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        /* integers take few distinct values: many ties */
        emily_tensor *x = rnd_tensor(types[k], 2, shape, 1);
        for (int op = 0; op < 2; op++)
            for (int axis = -1; axis < 2; axis++)
                for (int high = 0; high < 2; high++) {
                    arg_arg a = {(emily_arg_op)op, axis, high != 0, axis == 0 ? EMILY_U16 : EMILY_S32};
                    char what[64];
                    snprintf(what, sizeof what, "arg%s axis %d high %d (%s)", op ? "min" : "max", axis, high,
                             emily_dtype_name(types[k]));
                    compare_op(what, run_arg, &a, 1, &x, 0);
                }
        emily_tensor_release(x);
    }
}

typedef struct close_arg {
    double rtol, atol;
    bool equal_nan;
} close_arg;

static emily_status run_close(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const close_arg *c = arg;
    return emily_all_close(in[0], in[1], c->rtol, c->atol, c->equal_nan, out);
}

TEST(gpu_all_close_matches_cpu) {
    int64_t shape[1] = {777};
    for (int d = 0; d < EMILY_DTYPE_COUNT; d++) {
        emily_tensor *a = rnd_tensor((emily_dtype)d, 1, shape, 1), *b = NULL;
        CHECK_OK(emily_contiguous(a, &b)); /* equal, NaNs included */
        for (int en = 0; en < 2; en++) {
            close_arg c = {1e-5, 1e-8, en != 0};
            emily_tensor *in[2] = {a, b};
            compare_op("all_close(a, a)", run_close, &c, 2, in, 0);
            emily_tensor *r = rnd_tensor((emily_dtype)d, 1, shape, 0);
            emily_tensor *in2[2] = {a, r};
            compare_op("all_close(a, r)", run_close, &c, 2, in2, 0);
            emily_tensor_release(r);
        }
        emily_tensor_release(a);
        emily_tensor_release(b);
    }
}

typedef struct create_arg {
    int kind; /* 0 constant, 1 iota, 2 eye */
    emily_dtype dt;
    int axis;
} create_arg;

static emily_status run_create(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const create_arg *c = arg;
    emily_device dev = emily_tensor_device(in[0]);
    int64_t shape[3] = {3, 70, 45};
    switch (c->kind) {
    case 0: return emily_constant(dev, c->dt, 3, shape, emily_scalar_float(-2.75), out);
    case 1: return emily_iota(dev, c->dt, 3, shape, c->axis, out);
    default: return emily_eye(dev, c->dt, 3, shape, out);
    }
}

TEST(gpu_creation_matches_cpu) {
    int64_t one[1] = {1};
    emily_tensor *anchor = rnd_tensor(EMILY_U8, 1, one, 0); /* only says which device */
    for (int d = 0; d < EMILY_DTYPE_COUNT; d++)
        for (int kind = 0; kind < 3; kind++)
            for (int axis = -1; axis < (kind == 1 ? 3 : 0); axis++) {
                create_arg c = {kind, (emily_dtype)d, axis};
                compare_op("constant/iota/eye", run_create, &c, 1, &anchor, 0);
            }
    emily_tensor_release(anchor);
}

/* The flat kernels' paths by size: one element (its own small launch), a
 * length that runs the unrolled main loop, its remainder and the scalar
 * tail, and an offset view whose start is not 16-byte aligned (the
 * strided kernel); reductions over many short rows (a warp a row, rows
 * starting misaligned) and one long run cut into parts. */
TEST(gpu_flat_and_row_paths_match_cpu) {
    int64_t sizes[3] = {1, 7, 200003};
    static const emily_binary_op bops[] = {EMILY_ADD, EMILY_MULTIPLY, EMILY_LESS, EMILY_MAX, EMILY_POW};
    static const emily_unary_op uops[] = {EMILY_NEGATE, EMILY_EXP, EMILY_ABS};
    for (int d = 0; d < EMILY_DTYPE_COUNT; d++) {
        emily_dtype dt = (emily_dtype)d;
        for (int k = 0; k < 3; k++) {
            emily_tensor *a = rnd_tensor(dt, 1, &sizes[k], 1), *b = rnd_tensor(dt, 1, &sizes[k], 1);
            emily_tensor *sc = rnd_tensor(dt, 0, NULL, 0);
            /* a[1:] as a view: misaligned for every type of at most 8 bytes */
            emily_tensor *va = NULL, *vb = NULL;
            int64_t start[1] = {1}, len[1] = {sizes[k] - 1}, step[1] = {1};
            if (sizes[k] > 1) {
                CHECK_OK(emily_slice(a, start, len, step, &va));
                CHECK_OK(emily_slice(b, start, len, step, &vb));
            }
            for (size_t o = 0; o < sizeof bops / sizeof *bops; o++) {
                emily_dtype out;
                if (emily_binary_type(bops[o], dt, dt, &out)) continue;
                int ulps = binary_exact(bops[o]) ? 0 : tol_for(out);
                if (emily_dtype_is_complex(dt) && bops[o] == EMILY_POW) ulps = 4;
                char what[80];
                snprintf(what, sizeof what, "%s(%s) n=%lld", emily_binary_op_name(bops[o]), emily_dtype_name(dt),
                         (long long)sizes[k]);
                bin_arg arg = {bops[o], 0};
                emily_tensor *same[2] = {a, b}, *bc[2] = {sc, a}, *views[2] = {va, vb};
                compare_op(what, run_binary, &arg, 2, same, ulps);
                compare_op(what, run_binary, &arg, 2, bc, ulps);
                if (va) compare_op(what, run_binary, &arg, 2, views, ulps);
            }
            for (size_t o = 0; o < sizeof uops / sizeof *uops; o++) {
                emily_unary_op op = uops[o];
                emily_dtype out;
                if (emily_unary_type(op, dt, &out)) continue;
                int ulps = unary_exact(op) ? 0 : tol_for(out);
                char what[80];
                snprintf(what, sizeof what, "%s(%s) n=%lld", emily_unary_op_name(op), emily_dtype_name(dt),
                         (long long)sizes[k]);
                compare_op(what, run_unary, &op, 1, &a, ulps);
                if (va) compare_op(what, run_unary, &op, 1, &va, ulps);
            }
            emily_tensor_release(a);
            emily_tensor_release(b);
            emily_tensor_release(sc);
            emily_tensor_release(va);
            emily_tensor_release(vb);
        }
    }
    /* rows: 513 x 2048 (a warp a row, aligned), 2000 x 37 (misaligned
     * rows), 1 x 3000001 (one run cut into parts, unrolled folds) */
    static const int64_t rshape[3][2] = {{513, 2048}, {2000, 37}, {1, 3000001}};
    const emily_dtype rtypes[] = {EMILY_U8,   EMILY_S32, EMILY_S64, EMILY_F16,
                                  EMILY_BF16, EMILY_F32, EMILY_F64, EMILY_C64};
    for (int c = 0; c < 3; c++)
        for (size_t k = 0; k < sizeof rtypes / sizeof *rtypes; k++) {
            emily_dtype dt = rtypes[k];
            /* sums of plain values (edge values such as +-max would make
             * them depend on the order); max/min/arg see the edge values */
            emily_tensor *plain = rnd_tensor(dt, 2, rshape[c], 0), *x = rnd_tensor(dt, 2, rshape[c], 1);
            for (int o = 0; o < EMILY_REDUCE_OP_COUNT; o++) {
                if (emily_dtype_is_complex(dt) && (o == EMILY_REDUCE_MAX || o == EMILY_REDUCE_MIN)) continue;
                if (o == EMILY_REDUCE_PRODUCT) continue; /* products fold in order: another kernel */
                red_arg r = {(emily_reduce_op)o, 1, {1, 0, 0}, false, false};
                bool extreme = o == EMILY_REDUCE_MAX || o == EMILY_REDUCE_MIN;
                bool exact = (!emily_dtype_is_float(dt) && !emily_dtype_is_complex(dt)) || extreme;
                char what[80];
                snprintf(what, sizeof what, "row reduce op %d %lldx%lld (%s)", o, (long long)rshape[c][0],
                         (long long)rshape[c][1], emily_dtype_name(dt));
                compare_op(what, run_reduce, &r, 1, o == EMILY_REDUCE_SUM ? &plain : &x, exact ? 0 : 4);
            }
            for (int op = 0; op < 2; op++) {
                arg_arg a = {(emily_arg_op)op, 1, false, EMILY_S64};
                char what[80];
                snprintf(what, sizeof what, "arg%s rows %lldx%lld (%s)", op ? "min" : "max", (long long)rshape[c][0],
                         (long long)rshape[c][1], emily_dtype_name(dt));
                if (!emily_dtype_is_complex(dt)) compare_op(what, run_arg, &a, 1, &x, 0);
            }
            emily_tensor_release(plain);
            emily_tensor_release(x);
        }
}

/* ---- index family ---------------------------------------------------------- */

enum { IX_TAKE, IX_ALONG, IX_GATHER, IX_ADD, IX_PUT };
typedef struct index_arg {
    int kind;
    int axis;         /* take, take_along_axis */
    int naxes;        /* gather, indexed ops */
    const int *axes;  /* NULL: the leading axes */
    emily_dtype out;  /* indexed ops */
    bool slice_first; /* take the tensor from row 1 on (a view with an offset) */
} index_arg;

static emily_status run_index(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const index_arg *a = arg;
    emily_tensor *t = in[0], *view = NULL;
    if (a->slice_first) {
        int rank = emily_tensor_rank(t);
        const int64_t *shape = emily_tensor_shape(t);
        int64_t starts[8] = {1, 0, 0, 0, 0, 0, 0, 0}, lengths[8];
        for (int i = 0; i < rank && i < 8; i++) lengths[i] = shape[i];
        lengths[0] -= 1;
        emily_status s = emily_slice(t, starts, lengths, NULL, &view);
        if (s) return s;
        t = view;
    }
    emily_status s;
    switch (a->kind) {
    case IX_TAKE: s = emily_take(t, in[1], a->axis, out); break;
    case IX_ALONG: s = emily_take_along_axis(t, in[1], a->axis, out); break;
    case IX_GATHER: s = emily_gather(t, in[1], a->naxes, a->axes, out); break;
    case IX_ADD: s = emily_indexed_add(t, in[1], in[2], a->naxes, a->axes, a->out, out); break;
    default: s = emily_indexed_put(t, in[1], in[2], a->naxes, a->axes, a->out, out); break;
    }
    emily_tensor_release(view);
    return s;
}

/* Like compare_op, bit for bit, and the call must end with `want` on the
 * CPU; failures must carry the CPU's exact message. */
static void compare_index(const char *what, const index_arg *a, int nin, emily_tensor *const *cin, emily_status want) {
    emily_tensor *gin[3] = {NULL, NULL, NULL}, *c = NULL, *g = NULL;
    for (int i = 0; i < nin; i++) CHECK_OK(emily_to_device(cin[i], CUDA0, &gin[i]));
    emily_status sc = run_index(cin, &c, a);
    char cmsg[512];
    snprintf(cmsg, sizeof cmsg, "%s", sc ? emily_last_error() : "");
    emily_status sg = run_index(gin, &g, a);
    char gmsg[512];
    snprintf(gmsg, sizeof gmsg, "%s", sg ? emily_last_error() : "");
    if (sc != want) {
        fprintf(stderr, "  %s: cpu says %s (%s), the case wants %s\n", what, emily_status_name(sc), cmsg,
                emily_status_name(want));
        harness_failures++;
    }
    if (sc != sg || strcmp(cmsg, gmsg) != 0) {
        fprintf(stderr, "  %s: cpu says %s (%s), cuda says %s (%s)\n", what, emily_status_name(sc), cmsg,
                emily_status_name(sg), gmsg);
        harness_failures++;
    } else if (!sc && !same_tensor(what, c, g, 0)) {
        harness_failures++;
    }
    CHECK((c == NULL) == (sc != EMILY_OK) && (g == NULL) == (sg != EMILY_OK));
    emily_tensor_release(c);
    emily_tensor_release(g);
    for (int i = 0; i < nin; i++) emily_tensor_release(gin[i]);
}

static const emily_dtype index_types[] = {EMILY_S64, EMILY_S32, EMILY_U8, EMILY_U64,
                                          EMILY_S16, EMILY_U32, EMILY_S8, EMILY_U16};

/* Indices of dtype dt (rank, shape): element k is random in
 * [0, bounds[k % ncols]) (so repeats are common), except element bad_at
 * (when >= 0), which holds the 64-bit pattern bad (its low bytes). */
static emily_tensor *idx_tensor(emily_dtype dt, int rank, const int64_t *shape, int ncols, const int64_t *bounds,
                                int64_t bad_at, uint64_t bad) {
    int64_t n;
    size_t es;
    unsigned char *buf = elem_buf(dt, rank, shape, 8, &n, &es);
    for (int64_t k = 0; k < n; k++) {
        int64_t b = bounds[ncols > 0 ? k % ncols : 0];
        uint64_t v = k == bad_at ? bad : (b > 0 ? rnd() % (uint64_t)b : 0);
        memcpy(buf + (size_t)k * es, &v, es); /* little-endian low bytes */
    }
    return tensor_of_buf(dt, rank, shape, buf);
}

/* compare_index of x indexed by idx, which must end with `want`; what
 * the case is, as printf writes fmt. */
__attribute__((format(printf, 5, 6))) static void compare_xi(const index_arg *a, emily_tensor *x, emily_tensor *idx,
                                                             emily_status want, const char *fmt, ...) {
    char what[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    emily_tensor *in[2] = {x, idx};
    compare_index(what, a, 2, in, want);
}

/* One case of the dtype loops below: x (random, of dt and the rank-3
 * shape), case k, indices of type it. */
typedef void index_case_fn(emily_tensor *x, const int64_t *shape, emily_dtype dt, int k, emily_dtype it);

/* body for every dtype and each case k < ncases, the index types in turn
 * from index_types[ti]. */
static void each_dtype_and_case(const int64_t *shape, int ncases, int ti, index_case_fn *body) {
    for (int d = 0; d < EMILY_DTYPE_COUNT; d++) {
        emily_dtype dt = (emily_dtype)d;
        emily_tensor *x = rnd_tensor(dt, 3, shape, 1);
        for (int k = 0; k < ncases; k++) body(x, shape, dt, k, index_types[ti++ % 8]);
        emily_tensor_release(x);
    }
}

static void take_one(emily_tensor *x, const int64_t *shape, emily_dtype dt, int axis, emily_dtype it) {
    int64_t ishape[2] = {4, 3};
    emily_tensor *idx = idx_tensor(it, 2, ishape, 1, &shape[axis], -1, 0);
    index_arg a = {IX_TAKE, axis, 0, NULL, EMILY_DTYPE_AUTO, false};
    for (int sl = 0; sl < (axis > 0 ? 2 : 1); sl++) {
        a.slice_first = sl == 1; /* then the tensor at an offset */
        compare_xi(&a, x, idx, EMILY_OK, "take axis %d (%s, %s indices)", axis, emily_dtype_name(dt),
                   emily_dtype_name(it));
    }
    emily_tensor_release(idx);
}

TEST(gpu_take_matches_cpu) {
    static const int64_t shape[3] = {7, 5, 3};
    each_dtype_and_case(shape, 3, 0, take_one);
    /* the vector paths: 16-byte rows (the benchmark's shape, smaller),
     * 20-byte rows (4-byte vectors), 3-byte rows, one element a row, many
     * runs; at an offset that keeps or breaks 16-byte alignment */
    static const struct {
        emily_dtype dt;
        int64_t shape[3];
        int rank, axis;
        int64_t m;
    } big[] = {
        {EMILY_BF16, {1000, 768, 1}, 2, 0, 4096}, {EMILY_F32, {101, 5, 1}, 2, 0, 300},
        {EMILY_U8, {50, 3, 1}, 2, 0, 77},         {EMILY_C128, {30, 2, 1}, 2, 1, 5},
        {EMILY_F64, {3, 1000, 2}, 3, 1, 2000},    {EMILY_S16, {9, 70000, 1}, 2, 1, 70001},
    };
    for (size_t k = 0; k < sizeof big / sizeof *big; k++) {
        emily_tensor *x = rnd_tensor(big[k].dt, big[k].rank, big[k].shape, 1);
        int64_t ishape[1] = {big[k].m};
        /* in range of the tensor from row 1 on too */
        int64_t bound = big[k].shape[big[k].axis] - (big[k].axis == 0 ? 1 : 0);
        emily_tensor *idx = idx_tensor(EMILY_S64, 1, ishape, 1, &bound, -1, 0);
        for (int sl = 0; sl < 2; sl++) {
            index_arg a = {IX_TAKE, big[k].axis, 0, NULL, EMILY_DTYPE_AUTO, sl == 1};
            compare_xi(&a, x, idx, EMILY_OK, "take %s case %zu%s", emily_dtype_name(big[k].dt), k,
                       a.slice_first ? " at an offset" : "");
        }
        RELEASE(idx, x);
    }
    /* bad indices: the first in row order, with its value as written */
    emily_tensor *x = rnd_tensor(EMILY_F32, 3, shape, 0);
    static const struct {
        emily_dtype it;
        uint64_t v;
        int axis;
    } bad[] = {
        {EMILY_S32, (uint64_t)-3, 0},  {EMILY_S64, 9, 1}, {EMILY_U8, 255, 2}, {EMILY_U64, UINT64_MAX, 0},
        {EMILY_S8, (uint64_t)-128, 1}, {EMILY_U16, 5, 1},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        int64_t ishape[2] = {3, 4};
        int64_t n = shape[bad[k].axis];
        emily_tensor *idx = idx_tensor(bad[k].it, 2, ishape, 1, &n, 5, bad[k].v);
        index_arg a = {IX_TAKE, bad[k].axis, 0, NULL, EMILY_DTYPE_AUTO, false};
        compare_xi(&a, x, idx, EMILY_ERR_INDEX, "take, bad %s index", emily_dtype_name(bad[k].it));
        emily_tensor_release(idx);
    }
    /* two bad indices: the first is reported */
    {
        int32_t iv[5] = {1, 9, -3, 12, 2};
        int64_t ishape[1] = {5};
        emily_tensor *idx = t_from(EMILY_S32, 1, ishape, iv);
        index_arg a = {IX_TAKE, 0, 0, NULL, EMILY_DTYPE_AUTO, false};
        compare_xi(&a, x, idx, EMILY_ERR_INDEX, "take, two bad indices");
        emily_tensor_release(idx);
    }
    emily_tensor_release(x);
    /* an empty result still checks its indices */
    {
        int64_t eshape[2] = {4, 0}, ishape[1] = {2};
        emily_tensor *e = rnd_tensor(EMILY_F64, 2, eshape, 0);
        int64_t good[2] = {1, 3}, badv[2] = {1, 7};
        emily_tensor *i1 = t_from(EMILY_S64, 1, ishape, good), *i2 = t_from(EMILY_S64, 1, ishape, badv);
        index_arg a = {IX_TAKE, 0, 0, NULL, EMILY_DTYPE_AUTO, false};
        compare_xi(&a, e, i1, EMILY_OK, "take into an empty result");
        compare_xi(&a, e, i2, EMILY_ERR_INDEX, "take into an empty result, bad index");
        RELEASE(i1, i2, e);
    }
}

static void take_along_one(emily_tensor *x, const int64_t *shape, emily_dtype dt, int axis, emily_dtype it) {
    int64_t ishape[3] = {4, 6, 5};
    ishape[axis] = axis == 1 ? 9 : 3; /* more and fewer than the axis' size */
    emily_tensor *idx = idx_tensor(it, 3, ishape, 1, &shape[axis], -1, 0);
    index_arg a = {IX_ALONG, axis, 0, NULL, EMILY_DTYPE_AUTO, false};
    compare_xi(&a, x, idx, EMILY_OK, "take_along_axis axis %d (%s, %s indices)", axis, emily_dtype_name(dt),
               emily_dtype_name(it));
    emily_tensor_release(idx);
    /* a bad index in the middle, and one more after it */
    ishape[axis] = 2;
    int64_t total = ishape[0] * ishape[1] * ishape[2];
    emily_tensor *bi = idx_tensor(it, 3, ishape, 1, &shape[axis], total / 2, (uint64_t)-1);
    compare_xi(&a, x, bi, EMILY_ERR_INDEX, "take_along_axis axis %d, bad %s index", axis, emily_dtype_name(it));
    emily_tensor_release(bi);
}

TEST(gpu_take_along_axis_matches_cpu) {
    static const int64_t shape[3] = {4, 6, 5};
    each_dtype_and_case(shape, 3, 3, take_along_one);
    /* a larger one: 300 x 1000 bf16 along the last axis */
    int64_t lshape[2] = {300, 1000}, ishape[2] = {300, 1500};
    emily_tensor *x = rnd_tensor(EMILY_BF16, 2, lshape, 1);
    emily_tensor *idx = idx_tensor(EMILY_S32, 2, ishape, 1, &lshape[1], -1, 0);
    index_arg a = {IX_ALONG, 1, 0, NULL, EMILY_DTYPE_AUTO, false};
    compare_xi(&a, x, idx, EMILY_OK, "take_along_axis 300x1000 bf16");
    RELEASE(idx, x);
}

/* Bounds of the columns of gather/indexed indices: the sizes of `axes`
 * (or of the leading axes). */
static void col_bounds(const int64_t *shape, int ncols, const int *axes, int64_t *bounds) {
    for (int c = 0; c < ncols; c++) bounds[c] = shape[axes ? axes[c] : c];
}

static const int gather_ax02[2] = {0, 2}, gather_ax1[1] = {1}, gather_ax12[2] = {1, 2};
static const struct {
    const int *axes;
    int naxes;
    int irank;
    int64_t ishape[3];
} gather_cases[] = {
    {gather_ax02, 2, 3, {4, 3, 2}}, {gather_ax1, 1, 2, {10, 1}},  {NULL, 3, 2, {8, 3}},
    {NULL, 2, 2, {6, 2}},           {gather_ax12, 2, 2, {11, 2}}, {NULL, 0, 2, {3, 0}},
};

static void gather_one(emily_tensor *x, const int64_t *shape, emily_dtype dt, int k, emily_dtype it) {
    int64_t bounds[3];
    col_bounds(shape, gather_cases[k].naxes, gather_cases[k].axes, bounds);
    emily_tensor *idx = idx_tensor(it, gather_cases[k].irank, gather_cases[k].ishape, gather_cases[k].naxes, bounds, -1,
                                   0);
    index_arg a = {IX_GATHER, 0, gather_cases[k].naxes, gather_cases[k].axes, EMILY_DTYPE_AUTO, false};
    compare_xi(&a, x, idx, EMILY_OK, "gather case %d (%s, %s indices)", k, emily_dtype_name(dt), emily_dtype_name(it));
    emily_tensor_release(idx);
    if (gather_cases[k].naxes == 2) { /* a bad index in column 1 */
        emily_tensor *bi = idx_tensor(it, gather_cases[k].irank, gather_cases[k].ishape, 2, bounds, 5, 100);
        compare_xi(&a, x, bi, EMILY_ERR_INDEX, "gather case %d, bad %s index", k, emily_dtype_name(it));
        emily_tensor_release(bi);
    }
}

TEST(gpu_gather_matches_cpu) {
    static const int64_t shape[3] = {5, 6, 7};
    each_dtype_and_case(shape, (int)(sizeof gather_cases / sizeof *gather_cases), 5, gather_one);
    /* more index columns, and more non-indexed axes before the last
     * indexed one, than fit the kernels' small parameters */
    {
        int64_t s10[10] = {2, 3, 2, 2, 3, 2, 2, 2, 3, 4}, ishape[2] = {50, 9}, bounds[9];
        int axes[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
        emily_tensor *x = rnd_tensor(EMILY_F32, 10, s10, 1);
        col_bounds(s10, 9, axes, bounds);
        emily_tensor *idx = idx_tensor(EMILY_S64, 2, ishape, 9, bounds, -1, 0);
        emily_tensor *bi = idx_tensor(EMILY_S32, 2, ishape, 9, bounds, 9 * 7 + 4, 3);
        index_arg a = {IX_GATHER, 0, 9, axes, EMILY_DTYPE_AUTO, false};
        compare_xi(&a, x, idx, EMILY_OK, "gather, 9 index columns");
        compare_xi(&a, x, bi, EMILY_ERR_INDEX, "gather, 9 index columns, bad index");
        RELEASE(bi, idx, x);
        int64_t s12[12] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 5}, ishape2[2] = {7, 1};
        int last[1] = {11};
        x = rnd_tensor(EMILY_C64, 12, s12, 1);
        idx = idx_tensor(EMILY_U8, 2, ishape2, 1, &s12[11], -1, 0);
        index_arg b = {IX_GATHER, 0, 1, last, EMILY_DTYPE_AUTO, false};
        compare_xi(&b, x, idx, EMILY_OK, "gather, 11 axes before the indexed one");
        RELEASE(idx, x);
    }
    /* rows of 16-byte vectors */
    {
        int64_t s[2] = {2000, 512}, ishape[2] = {3000, 1};
        emily_tensor *x = rnd_tensor(EMILY_F16, 2, s, 1);
        emily_tensor *idx = idx_tensor(EMILY_S32, 2, ishape, 1, s, -1, 0);
        index_arg a = {IX_GATHER, 0, 1, NULL, EMILY_DTYPE_AUTO, false};
        compare_xi(&a, x, idx, EMILY_OK, "gather 3000 rows of 2000x512 f16");
        RELEASE(idx, x);
    }
}

/* One indexed_add and one indexed_put of updates (un, ushape) into
 * target (tdt, trank, tshape) at random indices (repeats likely) on
 * `axes`, out type `out`; then the same with a bad index at bad_at. */
static void indexed_case(const char *name, emily_dtype tdt, int trank, const int64_t *tshape, emily_dtype udt,
                         int urank, const int64_t *ushape, int naxes, const int *axes, emily_dtype out, emily_dtype it,
                         int edges, int64_t bad_at) {
    emily_tensor *t = rnd_tensor(tdt, trank, tshape, edges);
    emily_tensor *u = rnd_tensor(udt, urank, ushape, edges);
    int64_t bounds[16], ishape[2] = {ushape[0], naxes};
    col_bounds(tshape, naxes, axes, bounds);
    emily_tensor *idx = idx_tensor(it, 2, ishape, naxes, bounds, -1, 0);
    for (int op = IX_ADD; op <= IX_PUT; op++) {
        index_arg a = {op, 0, naxes, axes, out, false};
        char what[128];
        snprintf(what, sizeof what, "%s %s (%s into %s)", op == IX_ADD ? "indexed_add" : "indexed_put", name,
                 emily_dtype_name(udt), emily_dtype_name(tdt));
        emily_tensor *in[3] = {t, idx, u};
        compare_index(what, &a, 3, in, EMILY_OK);
        if (bad_at >= 0 && naxes > 0) {
            emily_tensor *bi = idx_tensor(it, 2, ishape, naxes, bounds, bad_at, (uint64_t)-2);
            emily_tensor *in2[3] = {t, bi, u};
            char w2[160];
            snprintf(w2, sizeof w2, "%s, bad %s index", what, emily_dtype_name(it));
            compare_index(w2, &a, 3, in2, EMILY_ERR_INDEX);
            emily_tensor_release(bi);
        }
    }
    emily_tensor_release(idx);
    emily_tensor_release(u);
    emily_tensor_release(t);
}

TEST(gpu_indexed_matches_cpu) {
    static const int64_t t2[2] = {6, 5};
    static const int ax1[1] = {1};
    /* every dtype into itself: rows of one axis (updates full, and
     * narrower than the target), the other axis, both axes */
    int ti = 0;
    for (int d = 0; d < EMILY_DTYPE_COUNT; d++) {
        emily_dtype dt = (emily_dtype)d;
        emily_dtype it = index_types[ti++ % 8];
        int64_t u1[2] = {40, 5}, u2[2] = {40, 3}, u3[2] = {40, 4}, u4[1] = {40};
        indexed_case("rows", dt, 2, t2, dt, 2, u1, 1, NULL, EMILY_DTYPE_AUTO, it, 1, 17);
        indexed_case("narrow rows", dt, 2, t2, dt, 2, u2, 1, NULL, EMILY_DTYPE_AUTO, it, 1, -1);
        indexed_case("columns", dt, 2, t2, dt, 2, u3, 1, ax1, EMILY_DTYPE_AUTO, it, 1, 39);
        indexed_case("elements", dt, 2, t2, dt, 1, u4, 2, NULL, EMILY_DTYPE_AUTO, it, 1, 41);
    }
    /* mixed types: conversions on put, integer sums into floats (exact,
     * rounded once), wrapping, complex */
    /* clang-format off */
    static const struct { emily_dtype t, u, out; } mix[] = {
        {EMILY_S32, EMILY_F32, EMILY_DTYPE_AUTO}, {EMILY_U8, EMILY_S64, EMILY_U8},
        {EMILY_F16, EMILY_S32, EMILY_DTYPE_AUTO}, {EMILY_F64, EMILY_S64, EMILY_DTYPE_AUTO},
        {EMILY_F32, EMILY_U64, EMILY_DTYPE_AUTO}, {EMILY_BF16, EMILY_F32, EMILY_BF16},
        {EMILY_F32, EMILY_C64, EMILY_DTYPE_AUTO}, {EMILY_C128, EMILY_S16, EMILY_DTYPE_AUTO},
        {EMILY_S8, EMILY_U16, EMILY_S8},          {EMILY_U32, EMILY_F64, EMILY_F16},
        {EMILY_F64, EMILY_F16, EMILY_C64},        {EMILY_S64, EMILY_S64, EMILY_F64},
    };
    /* clang-format on */
    for (size_t k = 0; k < sizeof mix / sizeof *mix; k++) {
        int64_t u1[2] = {60, 5};
        indexed_case("mixed", mix[k].t, 2, t2, mix[k].u, 2, u1, 1, NULL, mix[k].out, index_types[k % 8], 1, 3);
    }
    /* long runs of one position: the order of a float sum shows */
    static const emily_dtype sums[] = {EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64, EMILY_C64, EMILY_S64};
    for (size_t k = 0; k < sizeof sums / sizeof *sums; k++) {
        int64_t t1[1] = {3}, u1[1] = {5000};
        indexed_case("5000 updates on 3 positions", sums[k], 1, t1, sums[k], 1, u1, 1, NULL, EMILY_DTYPE_AUTO,
                     EMILY_S32, 0, 4999);
        indexed_case("5000 updates with edge values", sums[k], 1, t1, sums[k], 1, u1, 1, NULL, EMILY_DTYPE_AUTO,
                     EMILY_U8, 1, -1);
    }
    {
        int64_t t1[1] = {3}, u1[1] = {5000};
        indexed_case("5000 s64 updates into f64", EMILY_F64, 1, t1, EMILY_S64, 1, u1, 1, NULL, EMILY_DTYPE_AUTO,
                     EMILY_S32, 1, -1);
        indexed_case("5000 u64 updates into f32", EMILY_F32, 1, t1, EMILY_U64, 1, u1, 1, NULL, EMILY_DTYPE_AUTO,
                     EMILY_S32, 1, -1);
    }
    /* no indexed axes: every row updates the whole target */
    {
        int64_t u0[3] = {7, 6, 5};
        indexed_case("whole target", EMILY_F32, 2, t2, EMILY_F32, 3, u0, 0, NULL, EMILY_DTYPE_AUTO, EMILY_S64, 1, -1);
    }
    /* many index columns, many block axes (the kernels' large parameters) */
    {
        int64_t t10[10] = {2, 3, 2, 2, 3, 2, 2, 2, 3, 4}, u10[2] = {80, 4};
        int axes[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
        indexed_case("9 index columns", EMILY_F32, 10, t10, EMILY_F32, 2, u10, 9, axes, EMILY_DTYPE_AUTO, EMILY_S64, 1,
                     100);
        int64_t t11[11] = {3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3};
        int64_t u11[11] = {20, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
        int first[1] = {0};
        indexed_case("10 block axes", EMILY_S32, 11, t11, EMILY_S32, 11, u11, 1, first, EMILY_DTYPE_AUTO, EMILY_U16, 1,
                     19);
        indexed_case("10 block axes", EMILY_F64, 11, t11, EMILY_F32, 11, u11, 1, first, EMILY_DTYPE_AUTO, EMILY_U16, 1,
                     -1);
    }
    /* a larger one: 10000 rows into 1000 x 64 */
    {
        int64_t tb[2] = {1000, 64}, ub[2] = {10000, 64};
        indexed_case("10000 rows", EMILY_F32, 2, tb, EMILY_F32, 2, ub, 1, NULL, EMILY_DTYPE_AUTO, EMILY_S64, 0, 9999);
        indexed_case("10000 rows", EMILY_BF16, 2, tb, EMILY_BF16, 2, ub, 1, NULL, EMILY_DTYPE_AUTO, EMILY_S32, 1, -1);
    }
    /* transposed updates (the op makes them contiguous first) */
    {
        int64_t ushape[2] = {5, 40};
        emily_tensor *t = rnd_tensor(EMILY_F64, 2, t2, 1), *uu = rnd_tensor(EMILY_F64, 2, ushape, 1), *ut = NULL;
        int perm[2] = {1, 0};
        CHECK_OK(emily_transpose(uu, perm, &ut));
        int64_t ishape[2] = {40, 1};
        emily_tensor *idx = idx_tensor(EMILY_S64, 2, ishape, 1, t2, -1, 0);
        index_arg a = {IX_ADD, 0, 1, NULL, EMILY_DTYPE_AUTO, false};
        emily_tensor *in[3] = {t, idx, ut};
        if (ut) compare_index("indexed_add of transposed updates", &a, 3, in, EMILY_OK);
        emily_tensor_release(idx);
        emily_tensor_release(ut);
        emily_tensor_release(uu);
        emily_tensor_release(t);
    }
}

/* ---- sort family --------------------------------------------------------- */

/* Sort results are exact (values keep their bits, NaN payloads and zero
 * signs included; positions are integers converted by Nx's rules), so the
 * two devices must agree byte for byte. */
static bool same_bytes(const char *what, const emily_tensor *c, const emily_tensor *g) {
    if (emily_tensor_dtype(c) != emily_tensor_dtype(g) || !t_shape_is(g, emily_tensor_rank(c), emily_tensor_shape(c))) {
        fprintf(stderr, "  %s: cuda result has type %s rank %d, cpu %s rank %d\n", what,
                emily_dtype_name(emily_tensor_dtype(g)), emily_tensor_rank(g), emily_dtype_name(emily_tensor_dtype(c)),
                emily_tensor_rank(c));
        return false;
    }
    size_t nb = emily_tensor_nbytes(c), es = emily_dtype_size(emily_tensor_dtype(c));
    unsigned char *cb = malloc(nb + 1), *gb = malloc(nb + 1);
    bool ok = cb && gb && !emily_to_binary(c, cb, nb) && !emily_to_binary(g, gb, nb);
    for (size_t i = 0; ok && i < nb; i += es) {
        if (memcmp(cb + i, gb + i, es) == 0) continue;
        uint64_t x = 0, y = 0;
        memcpy(&x, cb + i, es);
        memcpy(&y, gb + i, es);
        fprintf(stderr, "  %s (%s): element %zu: cpu bits 0x%llx, cuda bits 0x%llx\n", what,
                emily_dtype_name(emily_tensor_dtype(c)), i / es, (unsigned long long)x, (unsigned long long)y);
        ok = false;
    }
    free(cb);
    free(gb);
    return ok;
}

/* Like compare_op (one input), the results compared byte for byte. */
static void compare_exact(const char *what, op_fn fn, const void *arg, emily_tensor *cin) {
    emily_tensor *gin = NULL, *c = NULL, *g = NULL;
    CHECK_OK(emily_to_device(cin, CUDA0, &gin));
    emily_status sc = fn(&cin, &c, arg);
    char cmsg[256];
    snprintf(cmsg, sizeof cmsg, "%s", emily_last_error());
    emily_status sg = gin ? fn(&gin, &g, arg) : EMILY_ERR_DEVICE;
    harness_gpu_verdict(what, sc, cmsg, sg, c, g, same_bytes);
    emily_tensor_release(c);
    emily_tensor_release(g);
    emily_tensor_release(gin);
}

/* Element bits for sorting: small values (many ties), the float edges
 * (both zeros, both infinities, NaNs of both signs with payloads,
 * signalling ones) and fully random bits (subnormals, more NaNs). */
static emily_tensor *sort_data(emily_dtype dt, int rank, const int64_t *shape) {
    static const uint64_t f16e[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x3c00, 0xbc00, 0x0001};
    static const uint64_t bf16e[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x3f80, 0xbf80, 0x0001};
    static const uint64_t f32e[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                    0xffc00001u, 0x7f800001u, 0x3f800000u, 0xbf800000u, 0x00000001u};
    static const uint64_t f64e[] = {0,
                                    0x8000000000000000ull,
                                    0x7ff0000000000000ull,
                                    0xfff0000000000000ull,
                                    0x7ff8000000000000ull,
                                    0xfff8000000000001ull,
                                    0x7ff0000000000001ull,
                                    0x3ff0000000000000ull,
                                    0xbff0000000000000ull,
                                    1};
    int64_t n;
    size_t es;
    unsigned char *buf = elem_buf(dt, rank, shape, 16, &n, &es);
    for (int64_t i = 0; i < n; i++) {
        uint64_t bits = rnd(), pick = rnd() % 8;
        const uint64_t *edge = dt == EMILY_F16    ? f16e
                               : dt == EMILY_BF16 ? bf16e
                               : dt == EMILY_F32  ? f32e
                               : dt == EMILY_F64  ? f64e
                                                  : NULL;
        if (pick < 2 && edge) {
            bits = edge[rnd() % 10];
        } else if (pick < 6) {
            /* small values: ties */
            double v = (double)((int64_t)(rnd() % 9) - 4);
            switch (dt) {
            case EMILY_F16: bits = emily_f64_to_f16(v); break;
            case EMILY_BF16: bits = emily_f32_to_bf16((float)v); break;
            case EMILY_F32: {
                float f = (float)v;
                uint32_t u;
                memcpy(&u, &f, 4);
                bits = u;
                break;
            }
            case EMILY_F64: memcpy(&bits, &v, 8); break;
            default: bits = (uint64_t)(int64_t)v; break;
            }
        }
        memcpy(buf + (size_t)i * es, &bits, es);
    }
    return tensor_of_buf(dt, rank, shape, buf);
}

typedef struct sort_arg {
    int kind; /* 0 sort, 1 argsort, 2 top_k values, 3 top_k indices */
    int axis;
    bool desc;
    emily_dtype itype;
    int64_t k;
    int view; /* 0 as is, 1 axes reversed (transpose), 2 every axis reversed, 3 every other element */
} sort_arg;

static emily_status sort_view(const emily_tensor *t, int view, emily_tensor **out) {
    int r = emily_tensor_rank(t);
    const int64_t *sh = emily_tensor_shape(t);
    int perm[16];
    int64_t starts[16], lens[16], steps[16];
    if (r > 16) return EMILY_ERR_ARGUMENT;
    for (int i = 0; i < r; i++) {
        perm[i] = r - 1 - i;
        starts[i] = 0;
        lens[i] = sh[i];
        steps[i] = 2;
    }
    switch (view) {
    case 1: return emily_transpose(t, perm, out);
    case 2: return emily_reverse(t, r, perm, out);
    default: return emily_slice(t, starts, lens, steps, out);
    }
}

static emily_status run_sort_op(emily_tensor *const *in, emily_tensor **out, const void *arg) {
    const sort_arg *a = arg;
    emily_tensor *v = NULL, *x = in[0];
    emily_status s = EMILY_OK;
    if (a->view) {
        s = sort_view(in[0], a->view, &v);
        if (s) return s;
        x = v;
    }
    emily_sort_direction d = a->desc ? EMILY_SORT_DESC : EMILY_SORT_ASC;
    if (a->kind == 0) {
        s = emily_sort(x, a->axis, d, true, out);
    } else if (a->kind == 1) {
        s = emily_argsort(x, a->axis, d, true, a->itype, out);
    } else {
        emily_tensor *vals = NULL, *idx = NULL;
        s = emily_top_k(x, a->k, a->itype, &vals, &idx);
        if (!s) {
            *out = a->kind == 2 ? vals : idx;
            emily_tensor_release(a->kind == 2 ? idx : vals);
        }
    }
    emily_tensor_release(v);
    return s;
}

/* sort and argsort along every axis, both directions, every real dtype,
 * index types that wrap (u8) and round (f16, bf16); contiguous inputs,
 * transposed, reversed (negative strides) and stepped views. Shapes: one
 * row, one long row (several radix tiles), many short rows (the row
 * number above the key; two sorts for 64-bit keys), rows of one element,
 * rank 3, empty. */

/* compare_exact of one sort, when it is this process's (--part) */
static void sort_compare(const char *what, op_fn fn, const void *arg, emily_tensor *x) {
    if (harness_mine()) compare_exact(what, fn, arg, x);
}

/* Only ties, only NaNs, both zeros: the original order must stay. */
static void sort_of_zeros(emily_tensor *z) {
    for (int kind = 0; kind < 2; kind++)
        for (int desc = 0; desc < 2; desc++) {
            sort_arg a = {kind, 1, desc != 0, EMILY_S32, 0, 0};
            sort_compare("sort of signed zeros and NaNs", run_sort_op, &a, z);
        }
}

/* body(dt, &it) for each real dtype in order; it counts on across them
 * (the index types are taken in turn). */
static void each_real_dtype(void (*body)(emily_dtype dt, int *it)) {
    int it = 0;
    for (int d = 0; d < EMILY_DTYPE_COUNT; d++)
        if (!emily_dtype_is_complex((emily_dtype)d)) body((emily_dtype)d, &it);
}

static const struct {
    int rank;
    int64_t shape[3];
} sort_cases[] = {{1, {1000}}, {2, {1, 70001}}, {2, {300, 37}}, {2, {2000, 3}},
                  {2, {5, 1}}, {3, {3, 4, 5}},  {2, {0, 5}},    {1, {1}}};

static void sort_dtype(emily_dtype dt, int *it) {
    static const emily_dtype itypes[] = {EMILY_DTYPE_AUTO, EMILY_U8,   EMILY_F16, EMILY_S64,
                                         EMILY_U64,        EMILY_BF16, EMILY_F32, EMILY_S16};
    for (size_t c = 0; c < sizeof sort_cases / sizeof *sort_cases; c++) {
        emily_tensor *x = sort_data(dt, sort_cases[c].rank, sort_cases[c].shape);
        bool big = sort_cases[c].shape[1] > 10000;
        for (int view = 0; view < (big ? 1 : 4); view++)
            for (int axis = -1; axis < sort_cases[c].rank; axis++)
                for (int kind = 0; kind < 2; kind++)
                    for (int desc = 0; desc < 2; desc++) {
                        sort_arg a = {kind, axis, desc != 0, itypes[(*it)++ % 8], 0, view};
                        char what[128];
                        snprintf(what, sizeof what, "%s %s shape case %zu axis %d view %d (index %s)",
                                 kind ? "argsort" : "sort", desc ? "desc" : "asc", c, axis, view,
                                 kind ? emily_dtype_name(a.itype == EMILY_DTYPE_AUTO ? EMILY_S32 : a.itype) : "-");
                        sort_compare(what, run_sort_op, &a, x);
                    }
        emily_tensor_release(x);
    }
    /* rank 0 */
    emily_tensor *s0 = sort_data(dt, 0, NULL);
    for (int kind = 0; kind < 2; kind++) {
        sort_arg a = {kind, 0, false, EMILY_DTYPE_AUTO, 0, 0};
        sort_compare("sort/argsort of rank 0", run_sort_op, &a, s0);
    }
    emily_tensor_release(s0);
}

/* sort/argsort of each dtype of dts (the real dtypes in six cases, so a
 * slow tool such as compute-sanitizer's racecheck can take them in
 * parallel processes) */
static void sort_dtypes(int n, const emily_dtype *dts) {
    int it = 0;
    for (int i = 0; i < n; i++) sort_dtype(dts[i], &it);
}
#define SORT_DTYPES(...) \
    sort_dtypes(sizeof((emily_dtype[]){__VA_ARGS__}) / sizeof(emily_dtype), (emily_dtype[]){__VA_ARGS__})
TEST(gpu_sort_u8_u16_match_cpu) { SORT_DTYPES(EMILY_U8, EMILY_U16); }
TEST(gpu_sort_u32_u64_match_cpu) { SORT_DTYPES(EMILY_U32, EMILY_U64); }
TEST(gpu_sort_s8_s16_match_cpu) { SORT_DTYPES(EMILY_S8, EMILY_S16); }
TEST(gpu_sort_s32_s64_match_cpu) { SORT_DTYPES(EMILY_S32, EMILY_S64); }
TEST(gpu_sort_halves_match_cpu) { SORT_DTYPES(EMILY_F16, EMILY_BF16); }

/* f32 and f64, both signs of zero, and views of rank 10 */
TEST(gpu_sort_matches_cpu) {
    SORT_DTYPES(EMILY_F32, EMILY_F64);
    on_signed_zeros(3, 4000, 700, sort_of_zeros);
    /* rank 10 with every axis reversed: 9 other axes that cannot merge, so
     * the rows come in several layout blocks */
    int64_t s10[10] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 3};
    emily_tensor *t10 = sort_data(EMILY_S32, 10, s10);
    const int axes10[] = {0, 4, 9};
    for (int i = 0; i < 3; i++)
        for (int kind = 0; kind < 2; kind++) {
            sort_arg a = {kind, axes10[i], i == 1, EMILY_S64, 0, 1};
            sort_compare("sort of a rank-10 transposed view", run_sort_op, &a, t10);
        }
    for (int kind = 2; kind < 4; kind++) {
        sort_arg a = {kind, -1, true, EMILY_U8, 2, 1};
        sort_compare("top_k of a rank-10 transposed view", run_sort_op, &a, t10);
    }
    emily_tensor_release(t10);
}

/* top_k: the benchmark's shape (scaled down), k of 1, of the whole row,
 * one long row, a transposed and a reversed input, every real dtype, and
 * the errors of a k out of range (the op's message on both devices).
 * Rows of 2048 to 2^16 elements with k <= 256 and keys of up to 32 bits
 * go through the per-row selection (also on a transposed and a reversed
 * input), the rest through the sort: both sides of each limit are here. */
/* clang-format off */
static const struct {
    int rank;
    int64_t shape[3];
    int64_t k;
    int view;
} top_k_cases[] = {{2, {32, 5000}, 50, 0}, {2, {7, 13}, 13, 0},     {2, {7, 13}, 1, 0},
                   {1, {70001}, 1000, 0},   {3, {3, 4, 5}, 3, 0},    {2, {40, 300}, 7, 1},
                   {2, {40, 300}, 40, 2},   {2, {64, 63}, 5, 3},     {2, {0, 5}, 2, 0},
                   {2, {4, 0}, 1, 0},       {2, {4, 6}, 7, 0},       {2, {4, 6}, 0, 0},
                   {2, {3, 5000}, 256, 0},  {2, {3, 5000}, 257, 0},  {2, {2, 65536}, 10, 0},
                   {2, {2, 65537}, 10, 0},  {2, {3, 2048}, 3, 0},    {2, {3, 2047}, 3, 0},
                   {2, {5000, 3}, 4, 1},    {2, {3, 5000}, 9, 2}};
/* clang-format on */

static void top_k_dtype(emily_dtype dt, int *it) {
    static const emily_dtype itypes[] = {EMILY_DTYPE_AUTO, EMILY_S64, EMILY_U8, EMILY_F16, EMILY_U32};
    for (size_t c = 0; c < sizeof top_k_cases / sizeof *top_k_cases; c++) {
        emily_tensor *x = sort_data(dt, top_k_cases[c].rank, top_k_cases[c].shape);
        for (int kind = 2; kind < 4; kind++) {
            sort_arg a = {kind, -1, true, itypes[(*it)++ % 5], top_k_cases[c].k, top_k_cases[c].view};
            char what[96];
            snprintf(what, sizeof what, "top_k %s case %zu k %lld", kind == 2 ? "values" : "indices", c,
                     (long long)top_k_cases[c].k);
            compare_exact(what, run_sort_op, &a, x);
        }
        emily_tensor_release(x);
    }
}

TEST(gpu_top_k_matches_cpu) { each_real_dtype(top_k_dtype); }

/* clang-format off */
#define GPU_OP_CASES                                                                     \
    CASE(gpu_as_type_matches_cpu), CASE(gpu_unary_matches_cpu), CASE(gpu_binary_matches_cpu), \
        CASE(gpu_select_matches_cpu), CASE(gpu_reductions_match_cpu),                    \
        CASE(gpu_argreduce_matches_cpu), CASE(gpu_all_close_matches_cpu),                \
        CASE(gpu_creation_matches_cpu), CASE(gpu_flat_and_row_paths_match_cpu),         \
        CASE(gpu_take_matches_cpu), CASE(gpu_take_along_axis_matches_cpu),              \
        CASE(gpu_gather_matches_cpu), CASE(gpu_indexed_matches_cpu),                    \
        CASE(gpu_sort_u8_u16_match_cpu), CASE(gpu_sort_u32_u64_match_cpu), CASE(gpu_sort_s8_s16_match_cpu),   \
        CASE(gpu_sort_s32_s64_match_cpu), CASE(gpu_sort_halves_match_cpu), CASE(gpu_sort_matches_cpu),      \
        CASE(gpu_top_k_matches_cpu)
/* clang-format on */

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    /* clang-format off */
    static const harness_case always[] = {
        CASE(no_gpu_fails_clearly), CASE(device_names), CASE(cpu_streams_are_trivial), {NULL, NULL}};
    static const harness_case gpu[] = {
        CASE(gpu_transfers_roundtrip), CASE(gpu_allocator_caches), CASE(gpu_copy_views), CASE(gpu_copy_batched_transposes),
        CASE(gpu_ops_are_async), CASE(gpu_streams_order_buffers), CASE(gpu_threads_with_own_streams),
        CASE(gpu_errors), GPU_OP_CASES, {NULL, NULL}};
    static const harness_case ops_only[] = {GPU_OP_CASES, {NULL, NULL}};
    /* clang-format on */
    int rc = harness_run("cuda (without a GPU too)", always);
    static const harness_gpu_cases g = {"cuda", gpu, ops_only, "cuda op cases on cpu", &CUDA0, NULL, true};
    return harness_gpu_finish(rc, &g);
}
