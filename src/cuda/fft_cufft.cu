// The fast FFT on CUDA (precision FAST, the default): cuFFT in the output's
// precision (c64 and f32 outputs in single, c128 and f64 in double), every
// line of the tensor in one batched call.
//
// Transforms: complex-to-complex for fft and ifft (CUFFT_INVERSE is Nx's
// conj . fft . conj before its division by n), real-to-complex for rfft
// (its first n/2 + 1 points are the transform's half spectrum), and
// complex-to-real for irfft: Nx extends the half spectrum by conjugate
// symmetry and keeps the real part of the inverse, which is what C2R
// computes once the imaginary parts of points 0 and n/2 (n even), which
// cannot reach a real part, are set to 0 (C2R assumes them 0).
//
// Data goes to cuFFT directly where it can: a source of the transform's
// own input type, cut to exactly n points, whose lines have one stride
// and one distance (cuFFT's advanced layout: any axis of a contiguous
// tensor, and views of that form) is read in place; an output of that
// form is written in place, the division by n and Nx's eps-zeroing done
// by a store callback linked into cuFFT's last kernel (fft_store.cu), so
// fft of a contiguous c64 vector costs cuFFT's passes alone. Otherwise a
// pack kernel gathers, converts, cuts or zero-pads the lines into scratch
// (row after row when the source's axis is its innermost, else
// interleaved, so reads stay coalesced), and a finishing kernel scales,
// zeroes, rounds and scatters the result. Without callbacks (refused by
// cuFFT: no nvJitLink at run time) a direct output gets that kernel in
// place. Length 1 is the identity: pack and finish only.
//
// Plans are cached per (device, transform, precision, n, batch, layout,
// callback parameters): at most PLAN_CACHE, least recently used evicted
// (and destroyed once the work queued on them is done). Their work areas
// come from the engine's caching allocator for each call, so one plan
// serves several streams: a plan's stream and work area are set and its
// execution queued under the plan's own lock.
#include <cufft.h>
#include <cufftXt.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <atomic>
#include "cuda/fft.cuh"
#include "cuda/fft.h"
#include "cuda/lto/fft_store_params.h"
#include "core/plan_cache.h"
#include "fft_store_lto.h" // emi_fft_store_lto: fft_store.cu as LTO-IR (generated, see the Makefile)

using namespace emily_cuda;

namespace {

// ---- errors -------------------------------------------------------------------

const char *cufft_message(cufftResult r) {
    switch (r) {
    case CUFFT_INVALID_PLAN: return "invalid plan";
    case CUFFT_ALLOC_FAILED: return "out of device memory";
    case CUFFT_INVALID_TYPE: return "invalid type";
    case CUFFT_INVALID_VALUE: return "invalid value";
    case CUFFT_INTERNAL_ERROR: return "internal error";
    case CUFFT_EXEC_FAILED: return "execution failed";
    case CUFFT_SETUP_FAILED: return "setup failed";
    case CUFFT_INVALID_SIZE: return "invalid size";
    case CUFFT_UNALIGNED_DATA: return "unaligned data";
    case CUFFT_INVALID_DEVICE: return "invalid device";
    case CUFFT_NO_WORKSPACE: return "no workspace";
    case CUFFT_NOT_IMPLEMENTED: return "not implemented";
    case CUFFT_NOT_SUPPORTED: return "not supported";
    case CUFFT_MISSING_DEPENDENCY: return "missing dependency";
    case CUFFT_NVRTC_FAILURE: return "NVRTC failure";
    case CUFFT_NVJITLINK_FAILURE: return "nvJitLink failure";
    default: return "unknown error";
    }
}

emily_status cufft_error(const char *what, cufftResult r) {
    if (r == CUFFT_SUCCESS) return EMILY_OK;
    return emily_error(r == CUFFT_ALLOC_FAILED ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE, "cuda: fft: cuFFT %s: %s (%d)",
                       what, cufft_message(r), (int)r);
}

// ---- plans ----------------------------------------------------------------------

enum Kind : int64_t { KIND_C2C, KIND_R2C, KIND_C2R };

// All int64 fields: no padding, compared with memcmp.
struct PlanKey {
    int64_t device, kind, dbl, n, batch, istride, idist, ostride, odist, inembed, onembed;
    int64_t callback; // 0, or 1 with the store parameters below
    int64_t dir, eps_bits, scale_bits;
};

struct Plan {
    PlanKey key;
    cufftHandle handle;
    size_t work;                  // work area bytes
    bool callback;                // made with the store callback
    emi_fft_store_params *params; // the callback's, device memory (or NULL)
    cudaEvent_t done;             // recorded after each execution
    pthread_mutex_t exec;
    int refs; // the cache's and each user's (under cache_lock)
    uint64_t used;
};

constexpr int PLAN_CACHE = 16;
pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
Plan *cache[PLAN_CACHE];
uint64_t cache_clock;

// Store callbacks are off unless EMILY_CUDA_FFT_CALLBACKS=1 (or a test
// turns them on): cuFFT links an LTO callback into each plan with
// nvJitLink when the plan is made, a JIT link per new (length, batch,
// layout) that costs far more than the separate finishing pass it saves
// for all but very long transforms. -1: the environment not read yet.
std::atomic<int> callbacks_on{-1};

bool callbacks_enabled() {
    int v = callbacks_on.load();
    if (v < 0) {
        const char *e = getenv("EMILY_CUDA_FFT_CALLBACKS");
        int expected = -1;
        callbacks_on.compare_exchange_strong(expected, e && e[0] == '1' ? 1 : 0);
        v = callbacks_on.load();
    }
    return v == 1;
}
std::atomic<long long> count_callback{0}, count_refused{0}, count_plain{0};

// Frees a plan nobody holds, once the work queued on it has run.
void plan_destroy(Plan *p) {
    int cur = -1;
    cudaGetDevice(&cur);
    cudaSetDevice((int)p->key.device);
    if (p->done) {
        cudaEventSynchronize(p->done);
        cudaEventDestroy(p->done);
    }
    cufftDestroy(p->handle);
    if (p->params) cudaFree(p->params);
    if (cur >= 0) cudaSetDevice(cur);
    pthread_mutex_destroy(&p->exec);
    free(p);
}

EMI_PLAN_CACHE_PUT(plan_put, Plan, cache_lock, plan_destroy)

bool same_key(const Plan *p, const PlanKey &k) { return memcmp(&p->key, &k, sizeof k) == 0; }
EMI_PLAN_CACHE_FIND(cached_plan, Plan, const PlanKey &, cache, PLAN_CACHE, cache_lock, cache_clock, same_key)

cufftType cufft_type(const PlanKey &k) {
    switch (k.kind) {
    case KIND_C2C: return k.dbl ? CUFFT_Z2Z : CUFFT_C2C;
    case KIND_R2C: return k.dbl ? CUFFT_D2Z : CUFFT_R2C;
    default: return k.dbl ? CUFFT_Z2D : CUFFT_C2R;
    }
}

// The store callback of a plan's output type (its LTO symbol and type).
void callback_of(const PlanKey &k, const char **name, cufftXtCallbackType *type) {
    bool complex_out = k.kind != KIND_C2R;
    if (complex_out) {
        *name = k.dbl ? "emily_fft_store_z" : "emily_fft_store_c";
        *type = k.dbl ? CUFFT_CB_ST_COMPLEX_DOUBLE : CUFFT_CB_ST_COMPLEX;
    } else {
        *name = k.dbl ? "emily_fft_store_d" : "emily_fft_store_r";
        *type = k.dbl ? CUFFT_CB_ST_REAL_DOUBLE : CUFFT_CB_ST_REAL;
    }
}

// A handle planned for k, with the store callback when `callback` (and
// `params` then holds its device parameters).
cufftResult make_handle(const PlanKey &k, bool callback, const emi_fft_store_params &host_params, cufftHandle *out,
                        size_t *work, emi_fft_store_params **params) {
    *params = NULL;
    cufftHandle h;
    cufftResult r = cufftCreate(&h);
    if (r) return r;
    r = cufftSetAutoAllocation(h, 0);
    if (!r && callback) {
        if (cudaMalloc((void **)params, sizeof **params) != cudaSuccess ||
            cudaMemcpy(*params, &host_params, sizeof host_params, cudaMemcpyHostToDevice) != cudaSuccess) {
            r = CUFFT_ALLOC_FAILED;
        } else {
            const char *name;
            cufftXtCallbackType type;
            callback_of(k, &name, &type);
            r = cufftXtSetJITCallback(h, name, emi_fft_store_lto, sizeof emi_fft_store_lto, type, (void **)params);
        }
    }
    if (!r) {
        long long n = k.n, inembed = k.inembed, onembed = k.onembed;
        r = cufftMakePlanMany64(h, 1, &n, &inembed, k.istride, k.idist, &onembed, k.ostride, k.odist, cufft_type(k),
                                k.batch, work);
    }
    if (r) {
        cufftDestroy(h);
        if (*params) cudaFree(*params);
        *params = NULL;
        cudaGetLastError(); // a failed cudaMalloc must not fail the next launch
        return r;
    }
    *out = h;
    return CUFFT_SUCCESS;
}

// cuFFT loads nvJitLink by its soname when it links a callback. Where the
// loader's path lacks it but the toolkit's lib64 holds it beside libcufft
// (a toolkit found through our rpath), load it from there first: cuFFT's
// own dlopen then finds it loaded. Nothing happens if neither has it
// (plans are then made without callbacks).
void preload_nvjitlink() {
    char name[64], path[4096];
    snprintf(name, sizeof name, "libnvJitLink.so.%d", CUDART_VERSION / 1000);
    if (dlopen(name, RTLD_NOW | RTLD_GLOBAL)) return;
    Dl_info info;
    if (!dladdr((void *)&cufftCreate, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, name);
    dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}

pthread_once_t nvjitlink_once = PTHREAD_ONCE_INIT;

Plan *plan_build(const PlanKey &k, const emi_fft_store_params &host_params, emily_status *s) {
    Plan *p = (Plan *)calloc(1, sizeof *p);
    if (!p) {
        *s = emily_error(EMILY_ERR_MEMORY, "cuda: fft: out of host memory for a plan");
        return NULL;
    }
    p->key = k;
    cufftResult r = CUFFT_NOT_SUPPORTED;
    if (k.callback) {
        pthread_once(&nvjitlink_once, preload_nvjitlink);
        r = make_handle(k, true, host_params, &p->handle, &p->work, &p->params);
        if (r == CUFFT_SUCCESS) {
            p->callback = true;
            count_callback++;
        } else {
            count_refused++;
        }
    }
    if (!p->callback) {
        r = make_handle(k, false, host_params, &p->handle, &p->work, &p->params);
        if (r == CUFFT_SUCCESS && !k.callback) count_plain++;
    }
    cudaError_t ev = r == CUFFT_SUCCESS ? cudaEventCreateWithFlags(&p->done, cudaEventDisableTiming) : cudaSuccess;
    if (r != CUFFT_SUCCESS || ev != cudaSuccess) {
        *s = r != CUFFT_SUCCESS ? cufft_error("plan", r) : emi_cuda_error("fft", ev);
        if (r == CUFFT_SUCCESS) {
            cufftDestroy(p->handle);
            if (p->params) cudaFree(p->params);
        }
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->exec, NULL);
    p->refs = 1;
    return p;
}

// The cached plan for k (built outside the lock on a miss); the caller
// puts it back with plan_put.
Plan *plan_get(const PlanKey &k, const emi_fft_store_params &host_params, emily_status *s) {
    Plan *hit = cached_plan(k);
    if (hit) return hit;
    Plan *p = plan_build(k, host_params, s);
    if (!p) return NULL;
    Plan *evicted = NULL;
    pthread_mutex_lock(&cache_lock);
    int empty = -1, lru = -1;
    bool present = false;
    for (int i = 0; i < PLAN_CACHE; i++) {
        if (!cache[i]) {
            if (empty < 0) empty = i;
            continue;
        }
        if (same_key(cache[i], k)) present = true;
        if (lru < 0 || cache[i]->used < cache[lru]->used) lru = i;
    }
    // (present: another thread built it meanwhile; ours is used once)
    if (!present) {
        int slot = empty >= 0 ? empty : lru;
        if (cache[slot] && --cache[slot]->refs == 0) evicted = cache[slot];
        cache[slot] = p;
        p->refs++;
        p->used = ++cache_clock;
    }
    pthread_mutex_unlock(&cache_lock);
    if (evicted) plan_destroy(evicted);
    return p;
}

// Queues the plan's transform on ctx's stream, with a work area from the
// caching allocator.
emily_status plan_exec(const emily_cuda_ctx &ctx, Plan *p, void *in, void *out, int dir) {
    void *work = NULL;
    emily_status s = p->work ? emi_cuda_scratch(&ctx, p->work, &work) : EMILY_OK;
    if (s) return s;
    pthread_mutex_lock(&p->exec);
    cufftResult r = cufftSetStream(p->handle, ctx.stream);
    if (!r && work) r = cufftSetWorkArea(p->handle, work);
    if (!r) {
        const PlanKey &k = p->key;
        switch (cufft_type(k)) {
        case CUFFT_C2C: r = cufftExecC2C(p->handle, (cufftComplex *)in, (cufftComplex *)out, dir); break;
        case CUFFT_Z2Z: r = cufftExecZ2Z(p->handle, (cufftDoubleComplex *)in, (cufftDoubleComplex *)out, dir); break;
        case CUFFT_R2C: r = cufftExecR2C(p->handle, (cufftReal *)in, (cufftComplex *)out); break;
        case CUFFT_D2Z: r = cufftExecD2Z(p->handle, (cufftDoubleReal *)in, (cufftDoubleComplex *)out); break;
        case CUFFT_C2R: r = cufftExecC2R(p->handle, (cufftComplex *)in, (cufftReal *)out); break;
        default: r = cufftExecZ2D(p->handle, (cufftDoubleComplex *)in, (cufftDoubleReal *)out); break;
        }
    }
    cudaError_t ev = r ? cudaSuccess : cudaEventRecord(p->done, ctx.stream);
    pthread_mutex_unlock(&p->exec);
    if (work) emi_cuda_scratch_free(&ctx, work);
    if (r) return cufft_error("exec", r);
    return ev ? emi_cuda_error(ctx.op, ev) : emi_cuda_launched(&ctx);
}

// ---- kernels --------------------------------------------------------------------

template <typename P> struct Cplx;
template <> struct Cplx<float> { typedef cufftComplex T; };
template <> struct Cplx<double> { typedef cufftDoubleComplex T; };

template <typename P> __device__ __forceinline__ void set(P *w, P re, P) { *w = re; }
__device__ __forceinline__ void set(cufftComplex *w, float re, float im) { *w = make_float2(re, im); }
__device__ __forceinline__ void set(cufftDoubleComplex *w, double re, double im) { *w = make_double2(re, im); }

template <typename P> __device__ __forceinline__ void get(const P *w, P &re, P &im) {
    re = *w;
    im = 0;
}
__device__ __forceinline__ void get(const cufftComplex *w, float &re, float &im) {
    re = w->x;
    im = w->y;
}
__device__ __forceinline__ void get(const cufftDoubleComplex *w, double &re, double &im) {
    re = w->x;
    im = w->y;
}

template <typename P> __device__ __forceinline__ void put(P *d, P re, P) { *d = re; }
__device__ __forceinline__ void put(emily_c64 *d, float re, float im) {
    d->re = re;
    d->im = im;
}
__device__ __forceinline__ void put(emily_c128 *d, double re, double im) {
    d->re = re;
    d->im = im;
}

// Lines laid out for cuFFT: element j of line r at r * dist + j * stride.
struct Lines {
    int64_t stride, dist;
};

// Position x of a flat range over R lines of len points: j fastest when
// the lines' points are contiguous, else r (neighbouring lines are then
// neighbours in memory).
__device__ __forceinline__ void line_point(int64_t x, int64_t R, int64_t len, bool points_fast, int64_t &r,
                                           int64_t &j) {
    if (points_fast) {
        r = x / len;
        j = x - r * len;
    } else {
        j = x / R;
        r = x - j * R;
    }
}

// W[line r][j] <- point j of src's line r for j < take (converted to the
// work precision), else 0; `real_ends`: the imaginary parts of points 0
// and n/2 (even n) are 0 (C2R's input).
template <typename S, typename W, typename P>
__global__ void pack(const S *src, const int64_t *soff, int64_t s_ax, int64_t take, int64_t R, int64_t len, Lines wl,
                     W *w, bool real_ends, int64_t n) {
    typedef typename FftPoint<S>::P SP;
    for (int64_t x = flat_first(); x < R * len; x += flat_step()) {
        int64_t r, j;
        line_point(x, R, len, wl.stride == 1, r, j);
        SP re = 0, im = 0;
        if (j < take) {
            S v = src[soff[r] + j * s_ax];
            re = FftPoint<S>::re(v);
            im = FftPoint<S>::im(v);
        }
        if (real_ends && (j == 0 || 2 * j == n)) im = 0;
        set(w + r * wl.dist + j * wl.stride, (P)re, (P)im);
    }
}

template <typename P> __device__ __forceinline__ P scale_clean(P v, P scale, P eps) {
    v = v * scale;
    return fabs(v) <= eps ? (P)0 : v;
}

// The first `keep` points of each of R transformed lines (wl layout in
// W), scaled, eps-zeroed and written in D (of W's precision, or real) to
// dst: at doff[r] + k * d_ax, or with doff NULL at dl's layout (in place
// over a direct output).
template <typename W, typename P, typename D>
__global__ void finish(const W *w, Lines wl, int64_t R, int64_t keep, D *dst, const int64_t *doff, int64_t d_ax,
                       Lines dl, P scale, P eps) {
    bool points_fast = doff ? d_ax == 1 : dl.stride == 1;
    for (int64_t x = flat_first(); x < R * keep; x += flat_step()) {
        int64_t r, k;
        line_point(x, R, keep, points_fast, r, k);
        P re, im;
        get(w + r * wl.dist + k * wl.stride, re, im);
        D *d = doff ? dst + doff[r] + k * d_ax : dst + r * dl.dist + k * dl.stride;
        put(d, scale_clean(re, scale, eps), scale_clean(im, scale, eps));
    }
}

// The layout of t's lines along `axis` as one stride and one distance
// between lines that do not overlap, when its other dims allow (they
// merge into one, or are all 1); false otherwise.
bool line_layout(const emily_tensor *t, int axis, int64_t lines, Lines *out) {
    int64_t dist = 0, dsize = 1;
    bool have = false;
    for (int d = 0; d < t->rank; d++) {
        if (d == axis || t->shape[d] == 1) continue;
        if (!have) {
            dist = t->strides[d];
            dsize = t->shape[d];
            have = true;
        } else if (dist == t->strides[d] * t->shape[d]) {
            dist = t->strides[d];
            dsize *= t->shape[d];
        } else {
            return false;
        }
    }
    int64_t len = t->shape[axis], stride = len > 1 ? t->strides[axis] : 1;
    if (!have) dist = len * stride;
    if (stride <= 0 || dist <= 0 || dsize != lines) return false;
    // disjoint lines: one after the other, or interleaved
    if (!(dist >= len * stride || stride >= dist * lines)) return false;
    out->stride = stride;
    out->dist = dist;
    return true;
}

// The largest float <= eps (|x| <= it exactly when the float x has
// |x| <= eps; NaN stays NaN and never compares).
float eps_as_float(double eps) {
    float f = (float)eps;
    if ((double)f > eps) f = nextafterf(f, -INFINITY);
    return f;
}

uint64_t bits_of(double d) {
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

struct FastRun {
    FftJob &job;
    int64_t kind, in_len, out_len;
    void *scratch[3] = {NULL, NULL, NULL}; // packed input, unpacked output, line offsets
    Plan *plan = NULL;

    explicit FastRun(FftJob &j) : job(j) {}
    ~FastRun() {
        for (void *p : scratch)
            if (p) emi_cuda_scratch_free(&job.ctx, p);
        if (plan) plan_put(plan);
    }

    emily_status alloc(int i, size_t bytes) { return emi_cuda_scratch(&job.ctx, bytes, &scratch[i]); }

    template <typename S, typename P, typename D> emily_status run() {
        typedef typename Cplx<P>::T C;
        bool dbl = sizeof(P) == 8;
        bool src_real = !emily_dtype_is_complex(job.src->dtype);
        int64_t n = job.n, h = n / 2 + 1, R = job.lines;
        kind = job.mode == EMILY_FFT_INVERSE_REAL                           ? KIND_C2R
               : job.mode == EMILY_FFT_FORWARD && src_real && job.keep <= h ? KIND_R2C
                                                                            : KIND_C2C;
        bool identity = n == 1;
        if (identity) kind = KIND_C2C;
        in_len = kind == KIND_C2R ? h : n;
        out_len = kind == KIND_R2C ? h : n;
        size_t in_es = kind == KIND_R2C ? sizeof(P) : sizeof(C), out_es = kind == KIND_C2R ? sizeof(P) : sizeof(C);
        emily_dtype in_type = kind == KIND_R2C ? (dbl ? EMILY_F64 : EMILY_F32) : (dbl ? EMILY_C128 : EMILY_C64);
        // the transform's input and output, in place where the layouts allow
        Lines il, ol;
        bool in_direct = !identity && kind != KIND_C2R && job.len_in == n && job.src->dtype == in_type &&
                         line_layout(job.src, job.axis, R, &il);
        bool out_direct = !identity && job.keep == out_len && line_layout(job.dst, job.axis, R, &ol);
        emily_status s = EMILY_OK;
        int64_t *doff = NULL, *soff = NULL;
        if (!in_direct || !out_direct) {
            if ((s = alloc(2, 2 * (size_t)R * sizeof(int64_t)))) return s;
            doff = (int64_t *)scratch[2];
            soff = doff + R;
            if ((s = job.line_offsets(doff, soff))) return s;
        }
        char *in, *out;
        size_t src_es = emily_dtype_size(job.src->dtype), dst_es = emily_dtype_size(job.dst->dtype);
        if (in_direct) {
            in = base_of(job.src) + (size_t)job.src->offset * src_es;
        } else {
            // rows when the source's points are contiguous (or it is empty), else interleaved
            il = job.s_ax == 1 || job.len_in <= 1 ? Lines{1, in_len} : Lines{R, 1};
            if ((s = alloc(0, (size_t)(R * in_len) * in_es))) return s;
            in = (char *)scratch[0];
            const S *sp = job.src->size ? (const S *)base_of(job.src) : NULL;
            unsigned g = grid_for(job.ctx.device, R * in_len);
            if (kind == KIND_R2C)
                pack<S, P, P>
                    <<<g, BLOCK, 0, job.ctx.stream>>>(sp, soff, job.s_ax, job.take, R, in_len, il, (P *)in, false, n);
            else
                pack<S, C, P><<<g, BLOCK, 0, job.ctx.stream>>>(sp, soff, job.s_ax, job.take, R, in_len, il, (C *)in,
                                                               kind == KIND_C2R, n);
            if ((s = emi_cuda_launched(&job.ctx))) return s;
        }
        if (out_direct) {
            out = base_of(job.dst) + (size_t)job.dst->offset * dst_es;
        } else if (!in_direct && kind == KIND_C2C) {
            out = in; // in place
            ol = il;
        } else {
            ol = job.d_ax == 1 ? Lines{1, out_len} : Lines{R, 1};
            if ((s = alloc(1, (size_t)(R * out_len) * out_es))) return s;
            out = (char *)scratch[1];
        }
        bool inverse = job.mode != EMILY_FFT_FORWARD;
        double scale = inverse ? 1.0 / (double)n : 1.0;
        emi_fft_store_params params = {scale, job.eps, (float)scale, eps_as_float(job.eps)};
        bool fused = false;
        if (!identity) {
            bool want_cb = out_direct && callbacks_enabled();
            PlanKey k = {job.ctx.device,
                         kind,
                         dbl,
                         n,
                         R,
                         il.stride,
                         il.dist,
                         ol.stride,
                         ol.dist,
                         in_len,
                         out_len,
                         want_cb,
                         want_cb && kind == KIND_C2C ? (int64_t)inverse : 0,
                         want_cb ? (int64_t)bits_of(job.eps) : 0,
                         want_cb ? (int64_t)bits_of(scale) : 0};
            if (!(plan = plan_get(k, params, &s))) return s;
            fused = plan->callback;
            if ((s = plan_exec(job.ctx, plan, in, out, inverse ? CUFFT_INVERSE : CUFFT_FORWARD))) return s;
        }
        if (fused) return EMILY_OK;
        // scaling, eps-zeroing, rounding: in place over a direct output, else to dst
        P sc = (P)scale, ep = dbl ? (P)job.eps : (P)params.eps_f;
        D *dp = (D *)base_of(job.dst);
        unsigned g = grid_for(job.ctx.device, R * job.keep);
        if (out_direct) dp += job.dst->offset;
        if (kind == KIND_C2R)
            finish<P, P, D><<<g, BLOCK, 0, job.ctx.stream>>>((const P *)out, ol, R, job.keep, dp,
                                                             out_direct ? NULL : doff, job.d_ax, ol, sc, ep);
        else
            finish<C, P, D><<<g, BLOCK, 0, job.ctx.stream>>>((const C *)out, ol, R, job.keep, dp,
                                                             out_direct ? NULL : doff, job.d_ax, ol, sc, ep);
        return emi_cuda_launched(&job.ctx);
    }
};

} // namespace

void emi_cuda_fft_set_callbacks(bool on) { callbacks_on.store(on ? 1 : 0); }

bool emi_cuda_fft_callbacks(void) { return callbacks_enabled(); }

void emi_cuda_fft_plan_counts_get(emi_cuda_fft_plan_counts *out) {
    out->with_callback = count_callback.load();
    out->callback_refused = count_refused.load();
    out->plain = count_plain.load();
}

namespace emily_cuda {

emily_status fft_cufft(FftJob &job) {
    FastRun run(job);
    return with_fft_source(job.src->dtype, [&]<typename S>() -> emily_status {
        switch (job.dst->dtype) {
        case EMILY_C64: return run.run<S, float, emily_c64>();
        case EMILY_C128: return run.run<S, double, emily_c128>();
        case EMILY_F32: return run.run<S, float, float>();
        default: return run.run<S, double, double>();
        }
    });
}

} // namespace emily_cuda
