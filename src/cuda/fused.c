/* CUDA: fused element-wise programs (core/engine.h, emi_fused_program),
 * each generated as CUDA C source, compiled at run time with NVRTC and
 * cached by its source text.
 *
 * The source includes the very headers the nvcc build compiles the
 * unfused kernels from (cuda/unary_fns.cuh, cuda/binary_fns.cuh,
 * core/convert_rules.h: embedded in the library by
 * tools/embed_headers.sh), and every instruction calls the element
 * function its unfused kernel maps, with the same flags (--fmad=false):
 * an element of a fused run has the bits of the unfused calls. An
 * intermediate is held in its storage type (a bf16 result is a 16-bit
 * pattern), as the unfused call writes it to memory. Compiled code is
 * also kept on disk for later processes (fused_disk.c).
 *
 * The shapes and strides are constants of the source, with the size-1
 * axes dropped and the axes contiguous for every input merged, so a
 * kernel is specialised to one layout (the cache key) and its index
 * arithmetic divides by constants. */
#include <nvrtc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/binary_kernels.h"
#include "core/dtype_list.h"
#include "core/unary_kernels.h"
#include "cuda/cuda_context.h"
#include "cuda/fused.h"

/* the headers, embedded at build time ($(BUILD)/gen/fused_headers.c) */
extern const char *const emi_fused_header_names[];
extern const char *const emi_fused_header_sources[];
extern const int emi_fused_header_count;

/* NVRTC has no C library headers: what the engine's headers take from
 * them (math.h's constants are the bit patterns nvcc's give). */
static const char *const stub_names[] = {"stdint.h", "stddef.h", "stdbool.h", "math.h", "string.h", "stdlib.h"};
static const char stub_stdint[] =
    "#pragma once\n"
    "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
    "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
    "typedef unsigned long long uint64_t; typedef unsigned long long uintptr_t; typedef long long intptr_t;\n"
    "#define INT8_MIN (-128)\n#define INT8_MAX 127\n#define INT16_MIN (-32768)\n#define INT16_MAX 32767\n"
    "#define INT32_MIN (-2147483647 - 1)\n#define INT32_MAX 2147483647\n"
    "#define INT64_MIN (-9223372036854775807LL - 1)\n#define INT64_MAX 9223372036854775807LL\n"
    "#define UINT8_MAX 255\n#define UINT16_MAX 65535\n#define UINT32_MAX 4294967295U\n"
    "#define UINT64_MAX 18446744073709551615ULL\n";
static const char stub_stddef[] =
    "#pragma once\ntypedef unsigned long size_t;\ntypedef long ptrdiff_t;\n#define NULL 0\n";
static const char stub_math[] = "#pragma once\n#define INFINITY __int_as_float(0x7f800000)\n"
                                "#define NAN __int_as_float(0x7fc00000)\n"
                                "#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)\n";
static const char stub_empty[] = "#pragma once\n";
static const char *const stub_sources[] = {stub_stdint, stub_stddef, stub_empty, stub_math, stub_empty, stub_empty};
#define NSTUBS ((int)(sizeof stub_names / sizeof stub_names[0]))

/* ---- names of the element functions and types --------------------------- */

static const char *binary_fn(int op, emily_dtype dt) {
#define NAME_K(NAME, OP, DT, TS, TD, TC, LD, F, ST, LOOP) \
    if (op == EMILY_##OP && dt == EMILY_##DT) return #NAME;
#define NAME_OP(ENUM, name, rule) EMI_BINARY_KERNELS(rule)(NAME_K, ENUM, name)
    EMILY_BINARY_OPS(NAME_OP)
#undef NAME_K
#undef NAME_OP
    return NULL;
}

static const char *unary_fn(int op, emily_dtype sd, emily_dtype dd) {
#define NAME_K(NAME, ST, DT, SRC, DST, EXPR) \
    if (sd == EMILY_##SRC && dd == EMILY_##DST) return #NAME;
#define NAME_OP(ENUM, name, rule) \
    if (op == EMILY_##ENUM) { EMI_UNARY_KERNELS(rule)(NAME_K, ENUM, name) }
    EMILY_UNARY_OPS(NAME_OP)
#undef NAME_K
#undef NAME_OP
    return NULL;
}

static const char *storage_name(emily_dtype dt) {
// clang-format off
#define NAME_T(E, s, T) \
    case EMILY_##E: return #T;
    // clang-format on
    switch (dt) {
        EMI_DTYPES(NAME_T)
    default: return NULL;
    }
#undef NAME_T
}

/* The dtype list's suffix of a type (convert_rules.h's function names)
 * is its name. */
static const char *dtype_sfx(emily_dtype dt) { return emily_dtype_valid(dt) ? emily_dtype_name(dt) : NULL; }

/* ---- the source ------------------------------------------------------------ */

typedef struct text {
    char *s;
    size_t n, cap;
    bool failed;
} text;

static void put(text *t, const char *fmt, ...) {
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            t->failed = true;
            return;
        }
        if (t->s && t->n + (size_t)w < t->cap) {
            t->n += (size_t)w;
            return;
        }
        size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)w;
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = true;
            return;
        }
        t->s = s;
        t->cap = cap;
    }
}

/* The layout: S without its size-1 axes, axes merged where every input
 * steps through them as one; strides in elements (0: broadcast). */
typedef struct layout {
    int rank;
    int64_t dim[EMILY_MAX_RANK];
    int64_t stride[EMI_FUSED_MAX_INPUTS][EMILY_MAX_RANK];
    int64_t total;
    bool wide; /* 64-bit index arithmetic */
    int vec;   /* elements a thread reads as one pack (1: element by element) */
} layout;

static bool aligned_to(const void *ptr, size_t bytes) { return ((uintptr_t)ptr % bytes) == 0; }

static const void *first_element(const emily_tensor *t) {
    return (const char *)t->buffer->data + (size_t)t->offset * emily_dtype_size(t->dtype);
}

/* Packs: V elements of the innermost axis a thread, read and written 16
 * bytes at a time for the widest type. Where every input steps by 1 along
 * that axis (or 0: a broadcast value) and by multiples of V along the
 * others, V divides the axis, and every contiguous input and every exit
 * starts on a pack boundary; else 1. */
static int pack_width(const emi_fused_program *p, const layout *L) {
    size_t widest = 1;
    for (int k = 0; k < p->ninputs; k++)
        if (emily_dtype_size(p->inputs[k]->dtype) > widest) widest = emily_dtype_size(p->inputs[k]->dtype);
    for (int x = 0; x < p->nexits; x++)
        if (emily_dtype_size(p->exits[x]->dtype) > widest) widest = emily_dtype_size(p->exits[x]->dtype);
    int r = L->rank - 1;
    int V = (int)(16 / widest);
    if (r < 0 || V < 2 || L->dim[r] % V) return 1;
    for (int k = 0; k < p->ninputs; k++) {
        int64_t s = L->stride[k][r];
        if (s != 0 && s != 1) return 1;
        if (s == 0) continue;
        for (int q = 0; q < r; q++)
            if (L->stride[k][q] % V) return 1;
        if (!aligned_to(first_element(p->inputs[k]), (size_t)V * emily_dtype_size(p->inputs[k]->dtype))) return 1;
    }
    for (int x = 0; x < p->nexits; x++)
        if (!aligned_to(p->exits[x]->buffer->data, (size_t)V * emily_dtype_size(p->exits[x]->dtype))) return 1;
    return V;
}

static void make_layout(const emi_fused_program *p, layout *L) {
    L->rank = 0;
    L->total = 1;
    for (int d = 0; d < p->rank; d++) {
        L->total *= p->shape[d];
        if (p->shape[d] == 1) continue;
        int r = L->rank;
        for (int k = 0; k < p->ninputs; k++) {
            const emily_tensor *t = p->inputs[k];
            int id = d - (p->rank - t->rank);
            L->stride[k][r] = id < 0 || t->shape[id] == 1 ? 0 : t->strides[id];
        }
        bool merge = r > 0;
        for (int k = 0; merge && k < p->ninputs; k++) merge = L->stride[k][r - 1] == L->stride[k][r] * p->shape[d];
        if (merge) {
            L->dim[r - 1] *= p->shape[d];
            for (int k = 0; k < p->ninputs; k++) L->stride[k][r - 1] = L->stride[k][r];
        } else {
            L->dim[r] = p->shape[d];
            L->rank++;
        }
    }
    /* offsets from each input's first element, and the index, in 32 bits
     * when they fit */
    L->wide = L->total > INT32_MAX;
    for (int k = 0; k < p->ninputs && !L->wide; k++) {
        int64_t reach = 0;
        for (int r = 0; r < L->rank; r++) {
            int64_t s = L->stride[k][r] < 0 ? -L->stride[k][r] : L->stride[k][r];
            reach += s * (L->dim[r] - 1);
            if (reach > INT32_MAX) L->wide = true;
        }
    }
    L->vec = pack_width(p, L);
}

/* An instruction's right-hand side; false where no element function
 * exists for it. */
static bool put_instr(text *t, const emi_fused_program *p, const emi_fused_instr *in, int32_t slot) {
    const char *out_t = storage_name(in->out);
    if (!out_t) return false;
    put(t, "        const %s v%d = ", out_t, (int)slot);
    switch (in->kind) {
    case EMI_FUSED_UNARY: {
        const char *fn = unary_fn(in->op, in->in, in->out);
        if (!fn) return false;
        put(t, "unary_kernels::%s::apply(v%d);\n", fn, (int)in->a);
        return true;
    }
    case EMI_FUSED_BINARY: {
        const char *fn = binary_fn(in->op, in->in);
        if (!fn || emi_binary_kernel_output((emily_binary_op)in->op, in->in) != in->out) return false;
        put(t, "binary_fns::%s::apply(v%d, v%d);\n", fn, (int)in->a, (int)in->b);
        return true;
    }
    case EMI_FUSED_CONVERT: {
        const char *si = dtype_sfx(in->in), *so = dtype_sfx(in->out);
        if (!si || !so) return false;
        /* convert.cu's rules: integers wrap, the rest through f64 parts */
        if (emily_dtype_is_integer(in->in) && emily_dtype_is_integer(in->out)) put(t, "(%s)v%d;\n", out_t, (int)in->a);
        else put(t, "emi_cv_from_f64_%s(emi_cv_re_%s(v%d), emi_cv_im_%s(v%d));\n", so, si, (int)in->a, si, (int)in->a);
        return true;
    }
    case EMI_FUSED_SELECT:
        /* select.cu's truth: nonzero bits for integers, the value bits of
         * f16/bf16 (NaN true, -0 false), the value itself for f32/f64 */
        if (emily_dtype_is_complex(in->pred) || !storage_name(in->pred)) return false;
        if (in->pred == EMILY_F16 || in->pred == EMILY_BF16)
            put(t, "(v%d & 0x7fffu) != 0 ? v%d : v%d;\n", (int)in->a, (int)in->b, (int)in->c);
        else put(t, "v%d != 0 ? v%d : v%d;\n", (int)in->a, (int)in->b, (int)in->c);
        return true;
    }
    (void)p;
    return false;
}

/* Elements a thread loads before it computes any: enough bytes in
 * flight per thread to keep the memory busy (16 for the narrowest type). */
static int elements_per_thread(const emi_fused_program *p) {
    size_t narrow = 16;
    for (int k = 0; k < p->ninputs; k++)
        if (emily_dtype_size(p->inputs[k]->dtype) < narrow) narrow = emily_dtype_size(p->inputs[k]->dtype);
    for (int x = 0; x < p->nexits; x++)
        if (emily_dtype_size(p->exits[x]->dtype) < narrow) narrow = emily_dtype_size(p->exits[x]->dtype);
    return narrow <= 2 ? 8 : narrow == 4 ? 4 : 2;
}

/* The kernel's source, or NULL (no element function for an instruction,
 * or out of memory). Caller frees. Each thread takes U elements a grid
 * stride apart (neighbouring threads, neighbouring elements): it loads
 * the inputs of all U, then computes and stores each. */
static char *packed_source(const emi_fused_program *p, const layout *L);

static char *program_source(const emi_fused_program *p, const layout *L) {
    if (L->vec > 1) return packed_source(p, L);
    text t = {0};
    const char *I = L->wide ? "long long" : "int";
    int U = elements_per_thread(p);
    put(&t,
        "#include \"cuda/unary_fns.cuh\"\n"
        "#include \"cuda/binary_fns.cuh\"\n"
        "#include \"core/convert_rules.h\"\n"
        "using namespace emily_cuda;\n"
        "struct fused_args { const void *in[%d]; void *out[%d]; };\n"
        "extern \"C\" __global__ void __launch_bounds__(%d) emily_fused(fused_args p, long long total) {\n"
        "    const long long step = (long long)gridDim.x * blockDim.x;\n"
        "    for (long long b = blockIdx.x * (long long)blockDim.x + threadIdx.x; b < total; b += %d * step) {\n",
        EMI_FUSED_MAX_INPUTS, EMI_FUSED_MAX_EXITS, EMI_CUDA_FUSED_BLOCK, U);
    for (int k = 0; k < p->ninputs; k++) {
        const char *ty = storage_name(p->inputs[k]->dtype);
        if (!ty) {
            free(t.s);
            return NULL;
        }
        put(&t, "        %s in%d[%d];\n", ty, k, U);
    }
    put(&t,
        "#pragma unroll\n"
        "        for (int u = 0; u < %d; u++) {\n"
        "            const long long i = b + u * step;\n"
        "            if (i >= total) break;\n"
        "            %s q = (%s)i;\n",
        U, I, I);
    for (int r = L->rank - 1; r >= 1; r--)
        put(&t, "            const %s c%d = q %% %lld; q /= %lld;\n", I, r, (long long)L->dim[r], (long long)L->dim[r]);
    if (L->rank >= 1) put(&t, "            const %s c0 = q;\n", I);
    else put(&t, "            (void)q;\n");
    for (int k = 0; k < p->ninputs; k++) {
        const char *ty = storage_name(p->inputs[k]->dtype);
        put(&t, "            in%d[u] = ((const %s *)p.in[%d])[0", k, ty, k);
        for (int r = 0; r < L->rank; r++)
            if (L->stride[k][r]) put(&t, " + c%d * (%s)%lld", r, I, (long long)L->stride[k][r]);
        put(&t, "];\n");
    }
    put(&t,
        "        }\n"
        "#pragma unroll\n"
        "        for (int u = 0; u < %d; u++) {\n"
        "            const long long i = b + u * step;\n"
        "            if (i >= total) break;\n",
        U);
    for (int k = 0; k < p->ninputs; k++)
        put(&t, "        const %s v%d = in%d[u];\n", storage_name(p->inputs[k]->dtype), k, k);
    for (int j = 0; j < p->ninstr; j++)
        if (!put_instr(&t, p, &p->instr[j], (int32_t)(p->ninputs + j))) {
            free(t.s);
            return NULL;
        }
    for (int x = 0; x < p->nexits; x++) {
        const char *ty = storage_name(p->exits[x]->dtype);
        if (!ty) {
            free(t.s);
            return NULL;
        }
        put(&t, "        ((%s *)p.out[%d])[i] = v%d;\n", ty, x, (int)p->exit_slot[x]);
    }
    put(&t, "        }\n    }\n}\n");
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s;
}

/* ---- compiling ------------------------------------------------------------- */

emily_status emi_cuda_fused_compile(const char *source, int arch, void **cubin, size_t *size, char **log) {
    *cubin = NULL;
    *size = 0;
    if (log) *log = NULL;
    int nh = emi_fused_header_count + NSTUBS;
    const char **names = malloc(sizeof(char *) * (size_t)nh), **srcs = malloc(sizeof(char *) * (size_t)nh);
    if (!names || !srcs) {
        free(names);
        free(srcs);
        return emily_error(EMILY_ERR_MEMORY, "fused kernel: out of host memory");
    }
    for (int i = 0; i < emi_fused_header_count; i++) {
        names[i] = emi_fused_header_names[i];
        srcs[i] = emi_fused_header_sources[i];
    }
    for (int i = 0; i < NSTUBS; i++) {
        names[emi_fused_header_count + i] = stub_names[i];
        srcs[emi_fused_header_count + i] = stub_sources[i];
    }
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, source, "emily_fused.cu", nh, srcs, names);
    free(names);
    free(srcs);
    if (r != NVRTC_SUCCESS) return emily_error(EMILY_ERR_DEVICE, "fused kernel: nvrtc: %s", nvrtcGetErrorString(r));
    char archopt[32];
    snprintf(archopt, sizeof archopt, "-arch=sm_%d", arch);
    /* the nvcc build's flags that decide an element's bits (Makefile) */
    const char *opts[] = {archopt, "-std=c++20", "--fmad=false", "-default-device"};
    r = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    emily_status s = EMILY_OK;
    if (r != NVRTC_SUCCESS) {
        size_t n = 0;
        if (log && nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && (*log = malloc(n + 1)))
            if (nvrtcGetProgramLog(prog, *log) != NVRTC_SUCCESS) (*log)[0] = 0;
        s = emily_error(EMILY_ERR_DEVICE, "fused kernel: nvrtc: %s", nvrtcGetErrorString(r));
    } else if ((r = nvrtcGetCUBINSize(prog, size)) != NVRTC_SUCCESS || !(*cubin = malloc(*size)) ||
               (r = nvrtcGetCUBIN(prog, *cubin)) != NVRTC_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        s = r != NVRTC_SUCCESS ? emily_error(EMILY_ERR_DEVICE, "fused kernel: nvrtc: %s", nvrtcGetErrorString(r))
                               : emily_error(EMILY_ERR_MEMORY, "fused kernel: out of host memory");
    }
    nvrtcDestroyProgram(&prog);
    return s;
}

/* The packed form (L->vec = V > 1): a thread takes V neighbours of the
 * innermost axis, reads each contiguous input's V elements as one pack
 * and a broadcast input's one element, computes the V elements and
 * writes each exit's V as one pack. */
static char *packed_source(const emi_fused_program *p, const layout *L) {
    text t = {0};
    const char *I = L->wide ? "long long" : "int";
    int V = L->vec, r = L->rank - 1;
    put(&t,
        "#include \"cuda/unary_fns.cuh\"\n"
        "#include \"cuda/binary_fns.cuh\"\n"
        "#include \"core/convert_rules.h\"\n"
        "using namespace emily_cuda;\n"
        "struct fused_args { const void *in[%d]; void *out[%d]; };\n",
        EMI_FUSED_MAX_INPUTS, EMI_FUSED_MAX_EXITS);
    for (int k = 0; k < p->ninputs; k++)
        if (L->stride[k][r])
            put(&t, "struct __align__(%d) pin%d { %s v[%d]; };\n", (int)(V * emily_dtype_size(p->inputs[k]->dtype)), k,
                storage_name(p->inputs[k]->dtype), V);
    for (int x = 0; x < p->nexits; x++)
        put(&t, "struct __align__(%d) pout%d { %s v[%d]; };\n", (int)(V * emily_dtype_size(p->exits[x]->dtype)), x,
            storage_name(p->exits[x]->dtype), V);
    put(&t,
        "extern \"C\" __global__ void __launch_bounds__(%d) emily_fused(fused_args p, long long total) {\n"
        "    const long long step = (long long)gridDim.x * blockDim.x;\n"
        "    for (long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x; j < total / %d; j += step) {\n"
        "        %s q = (%s)(j * %d);\n",
        EMI_CUDA_FUSED_BLOCK, V, I, I, V);
    for (int d = r; d >= 1; d--)
        put(&t, "        const %s c%d = q %% %lld; q /= %lld;\n", I, d, (long long)L->dim[d], (long long)L->dim[d]);
    put(&t, "        const %s c0 = q;\n", I);
    for (int k = 0; k < p->ninputs; k++) {
        const char *ty = storage_name(p->inputs[k]->dtype);
        if (!ty) {
            free(t.s);
            return NULL;
        }
        if (L->stride[k][r])
            put(&t, "        const pin%d x%d = *(const pin%d *)&((const %s *)p.in[%d])[0", k, k, k, ty, k);
        else put(&t, "        const %s x%d = ((const %s *)p.in[%d])[0", ty, k, ty, k);
        for (int d = 0; d < L->rank; d++)
            if (L->stride[k][d]) put(&t, " + c%d * (%s)%lld", d, I, (long long)L->stride[k][d]);
        put(&t, "];\n");
    }
    for (int x = 0; x < p->nexits; x++) put(&t, "        pout%d y%d;\n", x, x);
    put(&t, "#pragma unroll\n        for (int e = 0; e < %d; e++) {\n", V);
    for (int k = 0; k < p->ninputs; k++)
        put(&t, "        const %s v%d = x%d%s;\n", storage_name(p->inputs[k]->dtype), k, k,
            L->stride[k][r] ? ".v[e]" : "");
    for (int j = 0; j < p->ninstr; j++)
        if (!put_instr(&t, p, &p->instr[j], (int32_t)(p->ninputs + j))) {
            free(t.s);
            return NULL;
        }
    for (int x = 0; x < p->nexits; x++) {
        if (!storage_name(p->exits[x]->dtype)) {
            free(t.s);
            return NULL;
        }
        put(&t, "        y%d.v[e] = v%d;\n", x, (int)p->exit_slot[x]);
    }
    put(&t, "        }\n");
    for (int x = 0; x < p->nexits; x++)
        put(&t, "        *(pout%d *)&((%s *)p.out[%d])[j * %d] = y%d;\n", x, storage_name(p->exits[x]->dtype), x, V, x);
    put(&t, "    }\n}\n");
    if (t.failed) {
        free(t.s);
        return NULL;
    }
    return t.s;
}

char *emi_cuda_fused_source(const emi_fused_program *p) {
    layout L;
    make_layout(p, &L);
    return program_source(p, &L);
}

/* ---- the cache ------------------------------------------------------------- */

/* One compiled (or failed) source per architecture; never evicted (a
 * model has tens of distinct groups). */
typedef struct kernel_entry {
    struct kernel_entry *next;
    uint64_t hash;
    int arch;
    char *source;
    cudaLibrary_t library;
    cudaKernel_t kernel; /* NULL: the compilation failed */
} kernel_entry;

#define NBUCKETS 256
static kernel_entry *buckets[NBUCKETS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv1a(const char *s, int arch) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)arch;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static kernel_entry *find(uint64_t h, int arch, const char *source) {
    for (kernel_entry *e = buckets[h % NBUCKETS]; e; e = e->next)
        if (e->hash == h && e->arch == arch && strcmp(e->source, source) == 0) return e;
    return NULL;
}

static int device_arch(int device) {
    static int archs[EMILY_CUDA_MAX_DEVICES];
    if (device < 0 || device >= EMILY_CUDA_MAX_DEVICES) return 0;
    if (!archs[device]) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
            return 0;
        archs[device] = major * 10 + minor;
    }
    return archs[device];
}

/* The kernel for source on device, compiling it once; NULL where it
 * cannot be compiled or loaded (not while recording a graph: then only
 * kernels compiled before are used). */
static cudaKernel_t kernel_for(const char *source, int device) {
    pthread_mutex_lock(&cache_lock);
    int arch = device_arch(device); /* (its table is the lock's too) */
    if (!arch) {
        pthread_mutex_unlock(&cache_lock);
        return NULL;
    }
    uint64_t h = fnv1a(source, arch);
    kernel_entry *e = find(h, arch, source);
    if (e || emi_cuda_capturing(device)) {
        pthread_mutex_unlock(&cache_lock);
        return e ? e->kernel : NULL;
    }
    e = calloc(1, sizeof *e);
    char *copy = strdup(source);
    if (!e || !copy) {
        free(e);
        free(copy);
        pthread_mutex_unlock(&cache_lock);
        return NULL;
    }
    e->hash = h;
    e->arch = arch;
    e->source = copy;
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    bool from_disk;
    if (emi_cuda_fused_cubin(source, arch, &cubin, &size, &log, &from_disk) == EMILY_OK &&
        cudaLibraryLoadData(&e->library, cubin, NULL, NULL, 0, NULL, NULL, 0) == cudaSuccess &&
        cudaLibraryGetKernel(&e->kernel, e->library, "emily_fused") != cudaSuccess)
        e->kernel = NULL;
    if (!e->kernel) {
        (void)cudaGetLastError();
        const char *trace = getenv("EMILY_GRAPH_TRACE");
        if (trace && trace[0] == '1')
            fprintf(stderr, "emily: a fused kernel did not compile (its calls run one by one): %s\n%s\n%s\n",
                    emily_last_error(), log ? log : "", source);
    }
    free(log);
    free(cubin);
    e->next = buckets[h % NBUCKETS];
    buckets[h % NBUCKETS] = e;
    pthread_mutex_unlock(&cache_lock);
    return e->kernel;
}

/* ---- running --------------------------------------------------------------- */

struct fused_args {
    const void *in[EMI_FUSED_MAX_INPUTS];
    void *out[EMI_FUSED_MAX_EXITS];
};

static emily_status fused_run(const emi_fused_program *p) {
    if (p->nexits < 1 || p->ninputs > EMI_FUSED_MAX_INPUTS || p->nexits > EMI_FUSED_MAX_EXITS)
        return EMILY_ERR_UNSUPPORTED;
    int device = p->exits[0]->buffer->device.index;
    layout L;
    make_layout(p, &L);
    char *source = program_source(p, &L);
    cudaKernel_t k = source ? kernel_for(source, device) : NULL;
    free(source);
    if (!k) return EMILY_ERR_UNSUPPORTED; /* the caller runs the calls one by one */
    const emily_tensor *ts[EMI_FUSED_MAX_INPUTS + EMI_FUSED_MAX_EXITS];
    struct fused_args args;
    memset(&args, 0, sizeof args);
    int n = 0;
    for (int x = 0; x < p->nexits; x++) {
        ts[n++] = p->exits[x];
        args.out[x] = p->exits[x]->buffer->data;
    }
    for (int i = 0; i < p->ninputs; i++) {
        const emily_tensor *t = p->inputs[i];
        ts[n++] = t;
        args.in[i] = first_element(t);
    }
    emily_cuda_ctx ctx;
    emily_status s = emi_cuda_begin("fused", device, n, ts, &ctx);
    if (s) return s;
    long long total = (long long)p->exits[0]->size;
    long long per_block = (long long)EMI_CUDA_FUSED_BLOCK * (L.vec > 1 ? L.vec : elements_per_thread(p));
    long long blocks = (total + per_block - 1) / per_block, most = (long long)emi_cuda_sm_count(device) * 16;
    if (most > 0 && blocks > most) blocks = most;
    dim3 grid = {(unsigned)blocks, 1, 1}, block = {EMI_CUDA_FUSED_BLOCK, 1, 1};
    void *params[] = {&args, &total};
    cudaError_t err = cudaLaunchKernel((const void *)k, grid, block, params, 0, ctx.stream);
    if (err != cudaSuccess) return emi_cuda_error("fused", err);
    return emi_cuda_launched(&ctx);
}

const struct emily_fused_ops emi_cuda_fused_ops = {.run = fused_run};
