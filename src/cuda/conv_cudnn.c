/* CUDA conv on cuDNN (struct emily_conv_kernels, src/core/kernels.h):
 * host code only, cuDNN's legacy convolution API
 * (cudnnConvolutionForward).
 *
 * What it takes: input, kernel and output of one type, f32, f16 or bf16,
 * at dot precision FAST; 1 to 3 spatial axes (a 1-D conv runs as 2-D
 * with a window of height 1); any feature groups, strides, kernel
 * dilations and symmetric padding. Everything else is declined
 * (EMILY_ERR_UNSUPPORTED, nothing written) and the op layer computes it
 * as dots: HIGHEST precision (Nx's answers: the exact path), f64 and
 * complex types, mixed types, empty operands, sizes past cuDNN's 32-bit
 * dimensions and strides.
 *
 * Precision, as the dot family decides it (src/cuda/dot.cu) at FAST:
 * each type in its own precision, f32 accumulation. f16 and bf16 run on
 * tensor cores (products exact in f32, summed in f32, rounded once to
 * the type to nearest even, as cuBLAS does for dot's half results); f32
 * runs with FMA math only (CUDNN_FMA_MATH: never TF32, as dot's f32 runs
 * without it). Only the GEMM family of algorithms is used (implicit GEMM,
 * precomputed implicit GEMM, explicit GEMM): each output is then a plain
 * f32 sum of its products, within the dot's error bound; FFT and Winograd
 * algorithms are left out because their error is not bounded by the
 * products' magnitudes. Among those, cuDNN's heuristics pick (no timing
 * runs), and only deterministic algorithms are taken.
 *
 * Layouts: cuDNN reads fully packed NCHW or NHWC operands (NCDHW /
 * NDHWC). The layout is the input's: NHWC when the input is packed
 * channels-last (Nx's conv with input_permutation [0, 3, 1, 2], Axon's
 * default), NCHW otherwise. An operand not packed in that layout, or not
 * 16-byte aligned, is copied into one with the engine's copy kernel (a
 * kernel in Axon's HWIO order, a strided view); an output in another
 * layout is computed into a packed temporary and copied into place.
 *
 * cuDNN handles are made once per device and kept in a small pool (a
 * handle is used by one thread at a time and bound to the caller's
 * stream for each call). A device where cudnnCreate fails (cuDNN's
 * libraries missing or unusable; out of memory excepted) is remembered
 * and its convs are declined: the dots compute them. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <cudnn.h>
#include "cuda/data_types.h"
#include "cuda/kernels.h"
#include "emily/emily.h"

#define MAXR 5       /* operand rank in cuDNN: N, C and up to 3 spatial axes */
#define POOL_SIZE 16 /* idle handles kept per device */

/* ---- handles ---------------------------------------------------------- */

static bool out_of_memory(cudnnStatus_t st) {
    return st == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
           st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
}

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cudnnHandle_t pool[EMILY_CUDA_MAX_DEVICES][POOL_SIZE];
static int pooled[EMILY_CUDA_MAX_DEVICES];
static bool unusable[EMILY_CUDA_MAX_DEVICES];

/* A handle for `device` (current for the calling thread), or NULL when
 * cuDNN cannot be used there. */
static cudnnHandle_t take_handle(int device) {
    cudnnHandle_t h = NULL;
    pthread_mutex_lock(&pool_lock);
    bool bad = unusable[device];
    if (!bad && pooled[device] > 0) h = pool[device][--pooled[device]];
    pthread_mutex_unlock(&pool_lock);
    if (h || bad) return h;
    cudnnStatus_t st = cudnnCreate(&h);
    if (st != CUDNN_STATUS_SUCCESS) {
        (void)cudaGetLastError(); /* a failed load may leave a CUDA error behind */
        if (!out_of_memory(st)) { /* for good: no library, or one that does not fit */
            pthread_mutex_lock(&pool_lock);
            unusable[device] = true;
            pthread_mutex_unlock(&pool_lock);
        }
        return NULL;
    }
    return h;
}

static void give_handle(int device, cudnnHandle_t h) {
    pthread_mutex_lock(&pool_lock);
    if (pooled[device] < POOL_SIZE) {
        pool[device][pooled[device]++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&pool_lock);
    if (h) cudnnDestroy(h);
}

/* ---- layouts ---------------------------------------------------------- */

/* Strides of a fully packed operand [d0, d1, spatial...]: row-major
 * (NCHW), or channels-last (NHWC: d1 innermost, then the spatial axes
 * from the last, then d0). */
static void packed_strides(int r, const int64_t *shape, bool channels_last, int64_t *st) {
    int64_t acc = 1;
    if (channels_last) {
        st[1] = 1;
        acc = shape[1];
        for (int j = r - 1; j >= 2; j--) {
            st[j] = acc;
            acc *= shape[j];
        }
        st[0] = acc;
    } else {
        for (int j = r - 1; j >= 0; j--) {
            st[j] = acc;
            acc *= shape[j];
        }
    }
}

static char *data_of(const emily_tensor *t) {
    return (char *)t->buffer->data + (size_t)t->offset * emily_dtype_size(t->dtype);
}

/* True if t is packed in that layout (strides of size-1 axes do not
 * matter) and its first element 16-byte aligned (cuDNN's vectorized
 * kernels read that way). */
static bool is_packed(const emily_tensor *t, bool channels_last) {
    int64_t st[MAXR];
    packed_strides(t->rank, t->shape, channels_last, st);
    for (int j = 0; j < t->rank; j++)
        if (t->shape[j] > 1 && t->strides[j] != st[j]) return false;
    return ((uintptr_t)data_of(t) & 15) == 0;
}

/* A fresh tensor of t's shape and dtype, packed in that layout (a view
 * in standard order over memory in the layout's order). */
static emily_status packed_like(const emily_tensor *t, bool channels_last, emily_tensor **out) {
    int r = t->rank;
    int64_t mem[MAXR], st[MAXR];
    /* the shape in memory order */
    mem[0] = t->shape[0];
    if (channels_last) {
        for (int j = 2; j < r; j++) mem[j - 1] = t->shape[j];
        mem[r - 1] = t->shape[1];
    } else {
        for (int j = 1; j < r; j++) mem[j] = t->shape[j];
    }
    emily_tensor *buf = NULL;
    emily_status s = emily_empty(t->buffer->device, t->dtype, r, mem, &buf);
    if (s) return s;
    packed_strides(r, t->shape, channels_last, st);
    s = emi_tensor_view(buf, r, t->shape, st, 0, out);
    emily_tensor_release(buf);
    return s;
}

/* t itself when it is packed in the layout, else a packed copy of it. */
static emily_status packed_operand(const emily_tensor *t, bool channels_last, emily_tensor **out) {
    if (is_packed(t, channels_last)) {
        emily_tensor_retain((emily_tensor *)t);
        *out = (emily_tensor *)t;
        return EMILY_OK;
    }
    emily_status s = packed_like(t, channels_last, out);
    if (!s && (s = emi_cuda_copy(*out, t))) {
        emily_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

/* ---- cuDNN -------------------------------------------------------------- */

/* cuDNN's type of the operands: f32 and the half types (f64 is left to
 * the dots). */
static bool cudnn_type(emily_dtype t, cudnnDataType_t *out) {
    switch (t) {
// clang-format off
#define CUDNN_CASE_(E, sfx, T) \
    case EMILY_##E: *out = EMI_CUDNN_DATA(sfx); return true;
        // clang-format on
        CUDNN_CASE_(F32, f32, float)
        EMI_DTYPES_HALF(CUDNN_CASE_)
#undef CUDNN_CASE_
    default: return false;
    }
}

/* cuDNN's dims of a packed operand: rank 4 or 5 (a 1-D conv gets a
 * spatial axis of 1 before its one), the strides of the packed layout. */
static int cudnn_dims(const emily_tensor *t, bool channels_last, int *dims, int *strides) {
    int64_t shape[MAXR], st[MAXR];
    int r = t->rank;
    if (r == 3) {
        shape[0] = t->shape[0];
        shape[1] = t->shape[1];
        shape[2] = 1;
        shape[3] = t->shape[2];
        r = 4;
    } else {
        memcpy(shape, t->shape, sizeof(int64_t) * (size_t)r);
    }
    packed_strides(r, shape, channels_last, st);
    for (int j = 0; j < r; j++) {
        dims[j] = (int)shape[j];
        strides[j] = (int)st[j];
    }
    return r;
}

/* Every size, stride and parameter cuDNN is given must fit its ints:
 * operands of fewer than 2^31 elements, parameters below 2^31. */
static bool fits_int(const emily_tensor *t) { return t->size <= INT_MAX; }

static bool gemm_family(cudnnConvolutionFwdAlgo_t a) {
    return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
           a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
}

/* What decides cuDNN's choice for a conv: its descriptors' numbers (all
 * fields set, padding bytes zeroed, so keys compare with memcmp). */
typedef struct algo_key {
    int device, type, channels_last, nb, groups;
    int xd[MAXR], wd[MAXR], yd[MAXR], pad[MAXR - 2], stride[MAXR - 2], dil[MAXR - 2];
} algo_key;

typedef struct descs {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    algo_key key;
} descs;

/* ---- the algorithm each shape takes ----------------------------------- */

/* cuDNN 9's heuristics query and workspace query cost milliseconds per
 * call (the benchmark's bf16 conv: 2.7 ms a call for a kernel cuDNN times
 * at 0.24 ms), so each key's choice is kept: the algorithm, its math type
 * and workspace size. A small table, replaced round robin. */
#define ALGO_CACHE 64

typedef struct algo_choice {
    bool used;
    algo_key key;
    cudnnConvolutionFwdAlgo_t algo;
    cudnnMathType_t math;
    size_t bytes;
} algo_choice;

static pthread_mutex_t algo_lock = PTHREAD_MUTEX_INITIALIZER;
static algo_choice algo_cache[ALGO_CACHE];
static int algo_next;

static bool algo_lookup(const algo_key *k, algo_choice *out) {
    bool found = false;
    pthread_mutex_lock(&algo_lock);
    for (int i = 0; i < ALGO_CACHE && !found; i++)
        if (algo_cache[i].used && memcmp(&algo_cache[i].key, k, sizeof *k) == 0) {
            *out = algo_cache[i];
            found = true;
        }
    pthread_mutex_unlock(&algo_lock);
    return found;
}

/* Stores (or, with keep false, forgets) the choice for c->key. */
static void algo_store(const algo_choice *c, bool keep) {
    pthread_mutex_lock(&algo_lock);
    int at = -1;
    for (int i = 0; i < ALGO_CACHE && at < 0; i++)
        if (algo_cache[i].used && memcmp(&algo_cache[i].key, &c->key, sizeof c->key) == 0) at = i;
    if (!keep) {
        if (at >= 0) algo_cache[at].used = false;
    } else {
        if (at < 0) {
            at = algo_next;
            algo_next = (algo_next + 1) % ALGO_CACHE;
        }
        algo_cache[at] = *c;
        algo_cache[at].used = true;
    }
    pthread_mutex_unlock(&algo_lock);
}

static void descs_free(descs *d) {
    if (d->x) cudnnDestroyTensorDescriptor(d->x);
    if (d->y) cudnnDestroyTensorDescriptor(d->y);
    if (d->w) cudnnDestroyFilterDescriptor(d->w);
    if (d->conv) cudnnDestroyConvolutionDescriptor(d->conv);
}

/* Describes the conv; false when cuDNN refuses the description (or the
 * output it would compute is not dst's shape). */
static bool describe(descs *d, const emily_tensor *x, const emily_tensor *w, const emily_tensor *y,
                     const emily_conv_params *p, bool channels_last, cudnnDataType_t type) {
    int xd[MAXR], xs[MAXR], wd[MAXR], ws[MAXR], yd[MAXR], ys[MAXR], out[MAXR];
    int nb = cudnn_dims(x, channels_last, xd, xs);
    cudnn_dims(w, channels_last, wd, ws);
    cudnn_dims(y, channels_last, yd, ys);
    int pad[MAXR - 2], stride[MAXR - 2], dil[MAXR - 2];
    int off = p->spatial == 1; /* 1-D: the added axis has no padding, step 1 */
    if (off) pad[0] = 0, stride[0] = 1, dil[0] = 1;
    for (int i = 0; i < p->spatial; i++) {
        pad[off + i] = (int)p->padding[i];
        stride[off + i] = (int)p->strides[i];
        dil[off + i] = (int)p->dilations[i];
    }
    cudnnTensorFormat_t fmt = channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
    if (cudnnCreateTensorDescriptor(&d->x) || cudnnCreateTensorDescriptor(&d->y) ||
        cudnnCreateFilterDescriptor(&d->w) || cudnnCreateConvolutionDescriptor(&d->conv))
        return false;
    if (cudnnSetTensorNdDescriptor(d->x, type, nb, xd, xs) || cudnnSetTensorNdDescriptor(d->y, type, nb, yd, ys) ||
        cudnnSetFilterNdDescriptor(d->w, type, fmt, nb, wd) ||
        cudnnSetConvolutionNdDescriptor(d->conv, nb - 2, pad, stride, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ||
        cudnnSetConvolutionGroupCount(d->conv, (int)p->groups) ||
        cudnnGetConvolutionNdForwardOutputDim(d->conv, d->x, d->w, nb, out))
        return false;
    for (int j = 0; j < nb; j++)
        if (out[j] != yd[j]) return false;
    algo_key *k = &d->key;
    memset(k, 0, sizeof *k);
    k->type = (int)type;
    k->channels_last = channels_last;
    k->nb = nb;
    k->groups = (int)p->groups;
    memcpy(k->xd, xd, sizeof(int) * (size_t)nb);
    memcpy(k->wd, wd, sizeof(int) * (size_t)nb);
    memcpy(k->yd, yd, sizeof(int) * (size_t)nb);
    memcpy(k->pad, pad, sizeof(int) * (size_t)(nb - 2));
    memcpy(k->stride, stride, sizeof(int) * (size_t)(nb - 2));
    memcpy(k->dil, dil, sizeof(int) * (size_t)(nb - 2));
    return true;
}

/* EMILY_CUDA_CONV_TRACE=1: cuDNN's ranking and the algorithm taken, on
 * stderr, for the first conv of the process (to see which kernels a
 * shape gets). */
static bool trace_choice(const cudnnConvolutionFwdAlgoPerf_t *perf, int n, int chosen, cudnnMathType_t math) {
    static atomic_int done = 0;
    const char *e = getenv("EMILY_CUDA_CONV_TRACE");
    if (!e || e[0] != '1' || atomic_exchange(&done, 1)) return false;
    for (int i = 0; i < n; i++)
        fprintf(stderr, "cudnn conv: rank %d algo %d status %d determinism %d math %d time %g ms memory %zu%s\n", i,
                (int)perf[i].algo, (int)perf[i].status, (int)perf[i].determinism, (int)perf[i].mathType,
                (double)perf[i].time, perf[i].memory, i == chosen ? "  <- taken" : "");
    fprintf(stderr, "cudnn conv: taken with math type %d\n", (int)math);
    return true;
}

/* With the trace: every algorithm timed by cuDNN itself (any family,
 * deterministic or not), at the math type last set. */
static void trace_timings(cudnnHandle_t h, descs *d) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    cudnnStatus_t st = cudnnFindConvolutionForwardAlgorithm(h, d->x, d->w, d->conv, d->y,
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf);
    if (st) fprintf(stderr, "cudnn conv: find failed (%s)\n", cudnnGetErrorString(st));
    for (int i = 0; i < n; i++)
        fprintf(stderr, "cudnn conv: timed algo %d status %d determinism %d math %d: %.4f ms\n", (int)perf[i].algo,
                (int)perf[i].status, (int)perf[i].determinism, (int)perf[i].mathType, (double)perf[i].time);
}

typedef enum { TRY_OK, TRY_NEXT, TRY_FAILED } try_result;

/* One algorithm at math type m: its workspace (*bytes, queried unless
 * known), the launch. TRY_NEXT when cuDNN refuses it before launching
 * anything (cuDNN 9's codes come in categories of 1000) or its workspace
 * does not fit; TRY_FAILED with *err set otherwise. */
static try_result try_algo(const emily_cuda_ctx *ctx, cudnnHandle_t h, descs *d, const emily_tensor *x,
                           const emily_tensor *w, emily_tensor *y, cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t m,
                           bool known, size_t *bytes, emily_status *err) {
    if (cudnnSetConvolutionMathType(d->conv, m)) return TRY_NEXT;
    if (!known && cudnnGetConvolutionForwardWorkspaceSize(h, d->x, d->w, d->conv, d->y, algo, bytes)) return TRY_NEXT;
    void *work = NULL;
    if (*bytes && emi_cuda_scratch(ctx, *bytes, &work)) return TRY_NEXT; /* too large: the next one */
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t st = cudnnConvolutionForward(h, &one, d->x, data_of(x), d->w, data_of(w), d->conv, algo, work, *bytes,
                                               &zero, d->y, data_of(y));
    if (work) emi_cuda_scratch_free(ctx, work);
    if (st == CUDNN_STATUS_SUCCESS) return TRY_OK;
    if (CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED || CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM)
        return TRY_NEXT;
    *err = emily_error(out_of_memory(st) ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE, "cuda: conv: cuDNN failed (%s)",
                       cudnnGetErrorString(st));
    return TRY_FAILED;
}

/* Runs the conv with the algorithm this shape took before, or else the
 * first usable one in cuDNN's ranking (then kept for the shape).
 * EMILY_ERR_UNSUPPORTED (no message) when none takes it. */
static emily_status run(const emily_cuda_ctx *ctx, cudnnHandle_t h, descs *d, emily_dtype dt, const emily_tensor *x,
                        const emily_tensor *w, emily_tensor *y) {
    if (cudnnSetStream(h, ctx->stream)) return EMILY_ERR_UNSUPPORTED;
    d->key.device = ctx->device;
    emily_status err = EMILY_OK;
    algo_choice c;
    if (algo_lookup(&d->key, &c)) {
        switch (try_algo(ctx, h, d, x, w, y, c.algo, c.math, true, &c.bytes, &err)) {
        case TRY_OK: return emi_cuda_launched(ctx);
        case TRY_FAILED: return err;
        case TRY_NEXT: algo_store(&c, false); break; /* refused now: rank again */
        }
    }
    /* f32: FMA only (no TF32); f16/bf16: tensor cores */
    cudnnMathType_t math = dt == EMILY_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int n = 0;
    if (cudnnSetConvolutionMathType(d->conv, math) ||
        cudnnGetConvolutionForwardAlgorithm_v7(h, d->x, d->w, d->conv, d->y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n,
                                               perf))
        return EMILY_ERR_UNSUPPORTED;
    for (int i = 0; i < n; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].determinism != CUDNN_DETERMINISTIC ||
            !gemm_family(perf[i].algo))
            continue;
        /* the ranking's math type for half types (tensor cores or not); f32 keeps FMA */
        c.key = d->key;
        c.algo = perf[i].algo;
        c.math = dt == EMILY_F32 ? CUDNN_FMA_MATH : perf[i].mathType;
        c.bytes = 0;
        try_result r = try_algo(ctx, h, d, x, w, y, c.algo, c.math, false, &c.bytes, &err);
        if (r == TRY_FAILED) return err;
        if (r == TRY_NEXT) continue;
        algo_store(&c, true);
        if (trace_choice(perf, n, i, c.math)) trace_timings(h, d);
        return emi_cuda_launched(ctx);
    }
    return EMILY_ERR_UNSUPPORTED;
}

/* EMILY_CUDA_CONV=dots declines every conv (the op layer's im2col and
 * cuBLAS then run them): a switch for comparing the two paths. Read once. */
static bool cudnn_declined_by_env(void) {
    static atomic_int state = -1; /* -1: not read yet */
    int v = atomic_load(&state);
    if (v < 0) {
        const char *e = getenv("EMILY_CUDA_CONV");
        v = e && strcmp(e, "dots") == 0;
        atomic_store(&state, v);
    }
    return v == 1;
}

static emily_status cuda_conv(emily_tensor *dst, const emily_tensor *input, const emily_tensor *kernel,
                              const emily_conv_params *p, emily_dot_precision precision) {
    cudnnDataType_t type;
    if (cudnn_declined_by_env() || precision != EMILY_DOT_PRECISION_FAST || input->dtype != dst->dtype ||
        kernel->dtype != dst->dtype || !cudnn_type(dst->dtype, &type) || p->spatial < 1 || p->spatial > 3 ||
        input->rank != p->spatial + 2 || p->groups > INT_MAX)
        return EMILY_ERR_UNSUPPORTED;
    if (dst->size == 0 || input->size == 0 || kernel->size == 0 || !fits_int(dst) || !fits_int(input) ||
        !fits_int(kernel))
        return EMILY_ERR_UNSUPPORTED;
    for (int i = 0; i < p->spatial; i++)
        if (p->padding[i] < 0 || p->padding[i] > INT_MAX || p->strides[i] > INT_MAX || p->dilations[i] > INT_MAX)
            return EMILY_ERR_UNSUPPORTED;

    emily_cuda_ctx ctx;
    const emily_tensor *ts[3] = {dst, input, kernel};
    emily_status s = emi_cuda_begin("conv", dst->buffer->device.index, 3, ts, &ctx);
    if (s) return s;
    cudnnHandle_t h = take_handle(ctx.device);
    if (!h) return EMILY_ERR_UNSUPPORTED;

    /* f16/bf16 in NHWC: cuDNN's tensor-core GEMM kernels read channels
     * last, and handed NCHW they run others (32x256x56x56 bf16 3x3 on the
     * H200: 5 ms vs PyTorch's 0.27); the copies in and out cost a pass
     * each. f32 (FMA math) keeps the input's layout (C == 1 is packed
     * both ways: NCHW). */
    bool half = dst->dtype == EMILY_F16 || dst->dtype == EMILY_BF16;
    bool cl = half || (!is_packed(input, false) && is_packed(input, true));
    emily_tensor *x = NULL, *w = NULL, *y = NULL;
    descs d = {0};
    if ((s = packed_operand(input, cl, &x)) || (s = packed_operand(kernel, cl, &w))) goto done;
    if (is_packed(dst, cl)) {
        emily_tensor_retain(dst);
        y = dst;
    } else if ((s = packed_like(dst, cl, &y))) {
        goto done;
    }
    if (!describe(&d, x, w, y, p, cl, type)) {
        s = EMILY_ERR_UNSUPPORTED;
        goto done;
    }
    /* order the operands as cuDNN uses them (a fresh temporary's memory
     * may still be in use by another stream's work) */
    const emily_tensor *used[4] = {dst, x, w, y};
    if ((s = emi_cuda_begin("conv", ctx.device, 4, used, &ctx))) goto done;
    if ((s = run(&ctx, h, &d, dst->dtype, x, w, y))) goto done;
    if (y != dst) s = emi_cuda_copy(dst, y);

done:
    descs_free(&d);
    give_handle(ctx.device, h);
    emily_tensor_release(x);
    emily_tensor_release(w);
    emily_tensor_release(y);
    return s;
}

const struct emily_conv_kernels emi_cuda_conv_kernels = {.conv = cuda_conv};
