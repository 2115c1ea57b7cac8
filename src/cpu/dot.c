/* CPU kernels: dot family.
 *
 * gemm, a batched matrix product, takes one of four paths:
 *  - integers: an exact loop in the output's width with wrapping
 *    (unsigned) arithmetic;
 *  - real floats at HIGHEST precision (f64, and f32/f16/bf16 read into
 *    f64): dot_blocked.c's exact kernel, which computes every output
 *    element as Nx.BinaryBackend does (each product rounded, then added
 *    in contraction order, never fused), so results match the reference
 *    bit for bit; BLAS cannot promise that (it fuses multiply-adds);
 *  - c128 at HIGHEST: the register-tiled complex kernel below, in the
 *    same order;
 *  - everything else through OpenBLAS: c64 at HIGHEST widened to c128;
 *    at FAST each type in its own precision (f16/bf16 in f32), except
 *    that where the CPU has AVX-512 and the BLAS only AVX2 kernels, FAST
 *    f64 takes the exact kernel and FAST f32/f16/bf16 dot_blocked.c's
 *    f32 FMA kernel (see blas_lacks_avx512); and one to four rows by a
 *    bf16 matrix stored with the contraction innermost (a bf16 linear
 *    layer in a decode step) are read in place by dot_bf16_rows.c, not
 *    converted to f32 as a whole first.
 * Operands BLAS can read in place are passed as they are; any other is
 * packed once into the compute type, converting values as Nx does. */
#include <cblas.h>
#include <omp.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/dot_bf16_rows.h"
#include "cpu/dot_blocked.h"
#include "cpu/dot_load.h"
#include "cpu/dtype_scalars.h"
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "core/kernels.h"

static bool ct_matches(ctype ct, emily_dtype t) {
    return (ct == CT_F32 && t == EMILY_F32) || (ct == CT_F64 && t == EMILY_F64) || (ct == CT_C64 && t == EMILY_C64) ||
           (ct == CT_C128 && t == EMILY_C128);
}

static emily_status oom(const char *what) {
    return emily_error(EMILY_ERR_MEMORY, "dot: out of host memory for %s", what);
}

/* n elements of es bytes (NULL when the size overflows or malloc fails;
 * a broadcast operand can describe more elements than memory holds). */
static void *alloc_elems(int64_t n, size_t es, bool zero) {
    if (n < 0 || (uint64_t)n > (SIZE_MAX - 64) / es / 2) return NULL;
    size_t bytes = (size_t)n * es + 1;
    return zero ? calloc(bytes, 1) : malloc(bytes);
}

/* Byte address of element (b, r, 0) of a rank-3 view. */
static const char *row_ptr(const emily_tensor *t, int64_t b, int64_t r) {
    return (const char *)emily_tensor_base(t) +
           (b * t->strides[0] + r * t->strides[1]) * (int64_t)emily_dtype_size(t->dtype);
}

/* Packs a rank-3 view [B, R, C] into a contiguous [B, R, C] buffer of
 * the compute type (complex interleaved). */
typedef struct pack_job {
    const emily_tensor *t;
    ctype ct;
    char *buf;
    size_t es;
    load_fn load;
    int64_t nr, nc;
} pack_job;

static void pack_rows(void *ctx, int64_t r0, int64_t r1) {
    const pack_job *j = ctx;
    bool cplx = j->ct == CT_C64 || j->ct == CT_C128;
    for (int64_t r = r0; r < r1; r++)
        j->load(row_ptr(j->t, r / j->nr, r % j->nr), j->t->strides[2], j->nc, j->ct,
                j->buf + (size_t)(r * j->nc) * j->es, cplx ? 2 : 1, 1);
}

static emily_status pack(const emily_tensor *t, ctype ct, void **out) {
    int64_t nb = t->shape[0], nr = t->shape[1], nc = t->shape[2];
    size_t es = ct_size(ct);
    char *buf = alloc_elems(nb * nr * nc, es, false);
    if (!buf) return oom("a packed operand");
    pack_job j = {t, ct, buf, es, emi_dot_loaders[t->dtype], nr, nc};
    /* rows on the engine's pool, about 16K elements a job */
    int64_t rows = nb * nr;
    emi_cpu_parallel_ranges(rows, nc > 0 && nc < 16384 ? 16384 / nc : 1, rows * nc >= EMI_CPU_MACS_PARALLEL_MIN / 4,
                            pack_rows, &j);
    *out = buf;
    return EMILY_OK;
}

/* ---- results: compute type -> the output dtype -------------------------
 *
 * One case per dtype: floats rounded from the f32 or f64 sums by Nx's
 * rules (bf16: to f32, then the top 16 bits), complex parts from c128
 * sums, integers the low bits of the 32- or 64-bit wrapping sums. */

// clang-format off
#define STORE_INTEGER(ENUM, sfx, T)                                                    \
    case EMILY_##ENUM: {                                                               \
        T *o = d;                                                                      \
        if (ct == CT_U64) { const uint64_t *s = src; for (int64_t i = 0; i < n; i++) o[i] = (T)s[i]; } \
        else { const uint32_t *s = src; for (int64_t i = 0; i < n; i++) o[i] = (T)s[i]; } \
        break;                                                                         \
    }
#define STORE_FLOAT(ENUM, sfx, T)                                                      \
    case EMILY_##ENUM: {                                                               \
        T *o = d;                                                                      \
        if (ct == CT_F32) {                                                            \
            const float *s = src;                                                      \
            _Pragma("omp parallel for if (n >= EMI_CPU_MACS_PARALLEL_MIN / 4) schedule(static)") \
            for (int64_t i = 0; i < n; i++) o[i] = emi_from_f64_##sfx(s[i]);          \
        } else {                                                                       \
            const double *s = src;                                                     \
            _Pragma("omp parallel for if (n >= EMI_CPU_MACS_PARALLEL_MIN / 4) schedule(static)") \
            for (int64_t i = 0; i < n; i++) o[i] = emi_from_f64_##sfx(s[i]);          \
        }                                                                              \
        break;                                                                         \
    }
#define STORE_COMPLEX(ENUM, sfx, T)                                                    \
    case EMILY_##ENUM: {                                                               \
        const double *s = src;                                                         \
        T *o = d;                                                                      \
        for (int64_t i = 0; i < n; i++) {                                              \
            o[i].re = s[2 * i];                                                        \
            o[i].im = s[2 * i + 1];                                                    \
        }                                                                              \
        break;                                                                         \
    }
// clang-format on

static void store_results(emily_tensor *dst, const void *src, ctype ct) {
    int64_t n = dst->size;
    void *d = emily_tensor_base(dst);
    switch (dst->dtype) {
        EMI_DTYPES_INTEGER(STORE_INTEGER)
        EMI_DTYPES_FLOAT(STORE_FLOAT)
        EMI_DTYPES_COMPLEX(STORE_COMPLEX)
    default: break;
    }
}

/* The end of a product: sums computed into tmp (the compute type ct;
 * NULL when dst held them in place) rounded into dst, the packed
 * operands and tmp freed; s passed on. */
static emily_status finish(emily_tensor *dst, ctype ct, void *tmp, void *pa, void *pb, emily_status s) {
    if (!s && tmp) store_results(dst, tmp, ct);
    free(pa);
    free(pb);
    free(tmp);
    return s;
}

/* ---- integers ----------------------------------------------------------- */

/* One output row: c[N] = a[K] x b[K, N], all contiguous, wrapping. */
#define INT_ROW(T)                                                                \
    static void int_row_##T(const T *a, const T *b, T *c, int64_t n, int64_t k) { \
        for (int64_t j = 0; j < n; j++) c[j] = 0;                                 \
        for (int64_t p = 0; p < k; p++) {                                         \
            T ap = a[p];                                                          \
            if (ap == 0) continue;                                                \
            const T *bp = b + p * n;                                              \
            for (int64_t j = 0; j < n; j++) c[j] += ap * bp[j];                   \
        }                                                                         \
    }
INT_ROW(uint32_t)
INT_ROW(uint64_t)

static emily_status int_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b) {
    int64_t nb = dst->shape[0], m = dst->shape[1], n = dst->shape[2], k = a->shape[2];
    bool wide = emily_dtype_size(dst->dtype) == 8;
    ctype ct = wide ? CT_U64 : CT_U32; /* 8 to 32-bit sums wrap alike modulo 2^32 */
    void *pa = NULL, *pb = NULL, *tmp = NULL;
    emily_status s;
    if ((s = pack(a, ct, &pa))) goto done;
    if ((s = pack(b, ct, &pb))) goto done;
    void *c = emily_tensor_base(dst);
    if (emily_dtype_size(dst->dtype) < 4) {
        if (!(tmp = alloc_elems(dst->size, 4, false))) {
            s = oom("the result");
            goto done;
        }
        c = tmp;
    }
    int64_t rows = nb * m;
#pragma omp parallel for if (rows > 1 && rows * n * k >= EMI_CPU_MACS_PARALLEL_MIN / 4) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        int64_t bi = r / m;
        if (wide)
            int_row_uint64_t((const uint64_t *)pa + r * k, (const uint64_t *)pb + bi * k * n, (uint64_t *)c + r * n, n,
                             k);
        else
            int_row_uint32_t((const uint32_t *)pa + r * k, (const uint32_t *)pb + bi * k * n, (uint32_t *)c + r * n, n,
                             k);
    }
done:
    return finish(dst, ct, tmp, pa, pb, s);
}

/* ---- c128 as the reference computes it ----------------------------------
 *
 * A register-tiled kernel: an MR x NR tile of the output is held in
 * vector registers while the contraction runs in order, so every output
 * element is ((0 + p0) + p1) + ..., each product Complex.multiply's
 * rounded parts (this file is compiled without floating-point
 * contraction: -std=c11 implies -ffp-contract=off, and the x86 variants
 * below do not enable FMA for that reason). Operands are packed into
 * panels: A as [M/MR][K][2 MR], B as [N/NR][K][2 NR] (real and imaginary
 * planes per k), padded with zeros to whole panels. Variants for
 * AVX-512, AVX2 and SSE2 are picked at run time. */

#define KC 256 /* contraction block: a B panel slice stays in L1/L2 */

typedef struct cplx_kernel {
    int mr, nr;
    /* c: the tile's top-left element (interleaved), ldc in elements;
     * mv x nv of the tile are valid; load: continue from c */
    void (*fn)(int64_t kc, const double *a, const double *b, double *c, int64_t ldc, int mv, int nv, bool load);
} cplx_kernel;

/* NR = VL columns; per k the panel holds MR real parts then MR imaginary
 * parts (A), or VL real then VL imaginary parts (B) */
#define DEFINE_CPLX_KERNEL(SUFFIX, ATTR, VL, CMR)                                                                      \
    typedef double vd_##SUFFIX __attribute__((vector_size(VL * 8)));                                                   \
    ATTR static void exact_cplx_##SUFFIX(int64_t kc, const double *a, const double *b, double *c, int64_t ldc, int mv, \
                                         int nv, bool load) {                                                          \
        double tre[CMR][VL], tim[CMR][VL];                                                                             \
        vd_##SUFFIX accr[CMR], acci[CMR];                                                                              \
        for (int r = 0; r < CMR; r++)                                                                                  \
            for (int j = 0; j < VL; j++) {                                                                             \
                bool in = load && r < mv && j < nv;                                                                    \
                tre[r][j] = in ? c[2 * (r * ldc + j)] : 0.0;                                                           \
                tim[r][j] = in ? c[2 * (r * ldc + j) + 1] : 0.0;                                                       \
            }                                                                                                          \
        for (int r = 0; r < CMR; r++) {                                                                                \
            memcpy(&accr[r], tre[r], sizeof accr[r]);                                                                  \
            memcpy(&acci[r], tim[r], sizeof acci[r]);                                                                  \
        }                                                                                                              \
        for (int64_t p = 0; p < kc; p++) {                                                                             \
            vd_##SUFFIX br, bi;                                                                                        \
            memcpy(&br, b + p * 2 * VL, sizeof br);                                                                    \
            memcpy(&bi, b + p * 2 * VL + VL, sizeof bi);                                                               \
            _Pragma("GCC unroll 8") for (int r = 0; r < CMR; r++) {                                                    \
                double ar = a[p * 2 * CMR + r], ai = a[p * 2 * CMR + CMR + r];                                         \
                /* Complex.multiply: (ar*br - ai*bi, ai*br + ar*bi) */                                                 \
                vd_##SUFFIX rr = ar * br, ii = ai * bi, ir = ai * br, ri = ar * bi;                                    \
                vd_##SUFFIX pre = rr - ii, pim = ir + ri;                                                              \
                accr[r] = accr[r] + pre;                                                                               \
                acci[r] = acci[r] + pim;                                                                               \
            }                                                                                                          \
        }                                                                                                              \
        for (int r = 0; r < CMR; r++) {                                                                                \
            memcpy(tre[r], &accr[r], sizeof accr[r]);                                                                  \
            memcpy(tim[r], &acci[r], sizeof acci[r]);                                                                  \
        }                                                                                                              \
        for (int r = 0; r < mv; r++)                                                                                   \
            for (int j = 0; j < nv; j++) {                                                                             \
                c[2 * (r * ldc + j)] = tre[r][j];                                                                      \
                c[2 * (r * ldc + j) + 1] = tim[r][j];                                                                  \
            }                                                                                                          \
    }

/* (suffix, target, doubles per vector, tile rows) */
DEFINE_CPLX_KERNEL(generic, , 2, 4)
#if defined(__x86_64__) && defined(__GNUC__)
DEFINE_CPLX_KERNEL(avx2, __attribute__((target("avx2"))), 4, 4)
DEFINE_CPLX_KERNEL(avx512, __attribute__((target("avx512f"))), 8, 6)
#endif

static const cplx_kernel *cplx_kernel_pick(void) {
    static const cplx_kernel generic = {4, 2, exact_cplx_generic};
#if defined(__x86_64__) && defined(__GNUC__)
    static const cplx_kernel avx2 = {4, 4, exact_cplx_avx2};
    static const cplx_kernel avx512 = {6, 8, exact_cplx_avx512};
    if (__builtin_cpu_supports("avx512f")) return &avx512;
    if (__builtin_cpu_supports("avx2")) return &avx2;
#endif
    return &generic;
}

/* Packs a rank-3 view into zero-padded panels: as A ([B][M/MR][K][w*MR],
 * rows across the panel) when !as_b, or as B ([B][N/NR][K][w*NR],
 * columns across), w = 2 for complex (real block then imaginary block). */
static emily_status pack_panels(const emily_tensor *t, bool as_b, int width, bool cplx, double **out) {
    int64_t nb = t->shape[0];
    int64_t outer = as_b ? t->shape[2] : t->shape[1]; /* across panels */
    int64_t k = as_b ? t->shape[1] : t->shape[2];
    int64_t np = (outer + width - 1) / width, w = cplx ? 2 : 1;
    size_t panel = (size_t)(k * width * w);
    double *buf = alloc_elems(nb * np * (int64_t)panel, sizeof(double), true);
    if (!buf) return oom("packed panels");
    load_fn load = emi_dot_loaders[t->dtype];
    ctype ct = cplx ? CT_C128 : CT_F64;
    int64_t es = (int64_t)emily_dtype_size(t->dtype);
    if (!as_b) {
        /* row r of batch bi: its K values go down the panel at stride w*MR */
        int64_t rows = nb * outer;
#pragma omp parallel for if (rows * k >= EMI_CPU_MACS_PARALLEL_MIN / 4) schedule(static)
        for (int64_t rr = 0; rr < rows; rr++) {
            int64_t bi = rr / outer, r = rr % outer;
            double *d = buf + (size_t)(bi * np + r / width) * panel + r % width;
            load(row_ptr(t, bi, r), t->strides[2], k, ct, d, w * width, width);
        }
    } else {
        /* row p (a contraction index) of batch bi: its N values split
         * across panels, contiguous within each */
        int64_t rows = nb * k;
#pragma omp parallel for if (rows * outer >= EMI_CPU_MACS_PARALLEL_MIN / 4) schedule(static)
        for (int64_t rr = 0; rr < rows; rr++) {
            int64_t bi = rr / k, p = rr % k;
            const char *src = row_ptr(t, bi, p);
            for (int64_t jp = 0; jp < np; jp++) {
                int64_t n0 = jp * width, cnt = outer - n0 < width ? outer - n0 : width;
                double *d = buf + (size_t)(bi * np + jp) * panel + (size_t)(p * width * w);
                load(src + n0 * t->strides[2] * es, t->strides[2], cnt, ct, d, 1, width);
            }
        }
    }
    *out = buf;
    return EMILY_OK;
}

static emily_status cplx_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b) {
    int64_t nb = dst->shape[0], m = dst->shape[1], n = dst->shape[2], k = a->shape[2];
    const cplx_kernel *ker = cplx_kernel_pick();
    int mr = ker->mr, nr = ker->nr;
    double *pa = NULL, *pb = NULL;
    emily_status s;
    if ((s = pack_panels(a, false, mr, true, &pa))) goto done;
    if ((s = pack_panels(b, true, nr, true, &pb))) goto done;
    double *c = emily_tensor_base(dst);
    int64_t mp = (m + mr - 1) / mr, np = (n + nr - 1) / nr;
    /* work items: (batch, column panel, group of row panels) */
    enum { ROW_GROUP = 8 };
    int64_t groups = (mp + ROW_GROUP - 1) / ROW_GROUP, items = nb * np * groups;
#pragma omp parallel for if (items > 1 && m * n * k * nb >= EMI_CPU_MACS_PARALLEL_MIN) schedule(dynamic)
    for (int64_t it = 0; it < items; it++) {
        int64_t bi = it / (np * groups), rest = it % (np * groups);
        int64_t jp = rest / groups, g = rest % groups;
        const double *bpanel = pb + (size_t)((bi * np + jp) * k * nr * 2);
        int nv = (int)(n - jp * nr < nr ? n - jp * nr : nr);
        int64_t ip_end = (g + 1) * ROW_GROUP < mp ? (g + 1) * ROW_GROUP : mp;
        for (int64_t pc = 0; pc < k; pc += KC) {
            int64_t kc = k - pc < KC ? k - pc : KC;
            for (int64_t ip = g * ROW_GROUP; ip < ip_end; ip++) {
                const double *apanel = pa + (size_t)((bi * mp + ip) * k * mr * 2);
                int mv = (int)(m - ip * mr < mr ? m - ip * mr : mr);
                double *ctile = c + (size_t)((bi * m + ip * mr) * n + jp * nr) * 2;
                ker->fn(kc, apanel + pc * mr * 2, bpanel + pc * nr * 2, ctile, n, mv, nv, pc > 0);
            }
        }
    }
done:
    free(pa);
    free(pb);
    return s;
}

/* ---- floating point through BLAS ---------------------------------------- */

typedef struct operand {
    const char *base;     /* element (0, 0) of batch 0 */
    int64_t batch_stride; /* in elements */
    emily_gemm_layout lay;
} operand;

static bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* In place when BLAS can read the operand as it is, else packed. */
static emily_status prepare(const emily_tensor *t, ctype ct, operand *op, void **packed) {
    *packed = NULL;
    if (ct_matches(ct, t->dtype) &&
        emily_gemm_layout_of(t->shape[1], t->shape[2], t->strides[1], t->strides[2], &op->lay) &&
        fits_int(op->lay.ld)) {
        op->base = emily_tensor_base(t);
        op->batch_stride = t->strides[0];
        return EMILY_OK;
    }
    emily_status s = pack(t, ct, packed);
    if (s) return s;
    op->base = *packed;
    op->batch_stride = t->shape[1] * t->shape[2];
    op->lay.column_major = false;
    op->lay.ld = t->shape[2] > 1 ? t->shape[2] : 1;
    return EMILY_OK;
}

/* Rows [r0, r1) x columns [c0, c1) of batch bi's m x n product. */
static void blas_gemm(ctype ct, const operand *a, const operand *b, void *c, int64_t bi, int m, int n, int k, int r0,
                      int r1, int c0, int c1) {
    size_t es = ct_size(ct);
    /* row r of a (m x k): at r * ld when row-major, r when column-major;
     * column j of b (k x n): j when row-major, j * ld when column-major */
    size_t aoff = (size_t)r0 * (a->lay.column_major ? 1 : (size_t)a->lay.ld);
    size_t boff = (size_t)c0 * (b->lay.column_major ? (size_t)b->lay.ld : 1);
    const void *pa = a->base + ((size_t)(bi * a->batch_stride) + aoff) * es;
    const void *pb = b->base + ((size_t)(bi * b->batch_stride) + boff) * es;
    void *pc = (char *)c + ((size_t)bi * (size_t)m * (size_t)n + (size_t)r0 * (size_t)n + (size_t)c0) * es;
    enum CBLAS_TRANSPOSE ta = a->lay.column_major ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = b->lay.column_major ? CblasTrans : CblasNoTrans;
    int lda = (int)a->lay.ld, ldb = (int)b->lay.ld, ldc = n > 1 ? n : 1;
    m = r1 - r0;
    n = c1 - c0;
    /* One row (a decode step's activation times a weight matrix): gemv.
     * OpenBLAS's gemm packs all of b first, several times gemv's cost when
     * b is read once (measured 313 against 52 us for 1 x 576 by 576 x
     * 1536); the sum per element is still one BLAS dot. */
    if (m == 1 && (ct == CT_F32 || ct == CT_F64)) {
        int incx = a->lay.column_major ? lda : 1;
        /* b row-major (k x n): y = b^T x; column-major (n x k rows): y = b x */
        enum CBLAS_TRANSPOSE tv = b->lay.column_major ? CblasNoTrans : CblasTrans;
        int rows = b->lay.column_major ? n : k, cols = b->lay.column_major ? k : n;
        if (ct == CT_F32) cblas_sgemv(CblasRowMajor, tv, rows, cols, 1.0f, pb, ldb, pa, incx, 0.0f, pc, 1);
        else cblas_dgemv(CblasRowMajor, tv, rows, cols, 1.0, pb, ldb, pa, incx, 0.0, pc, 1);
        return;
    }
    switch (ct) {
    case CT_F32: cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, pa, lda, pb, ldb, 0.0f, pc, ldc); break;
    case CT_F64: cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, pa, lda, pb, ldb, 0.0, pc, ldc); break;
    case CT_C64: {
        const float one[2] = {1, 0}, zero[2] = {0, 0};
        cblas_cgemm(CblasRowMajor, ta, tb, m, n, k, one, pa, lda, pb, ldb, zero, pc, ldc);
        break;
    }
    case CT_C128: {
        const double one[2] = {1, 0}, zero[2] = {0, 0};
        cblas_zgemm(CblasRowMajor, ta, tb, m, n, k, one, pa, lda, pb, ldb, zero, pc, ldc);
        break;
    }
    default: break;
    }
}

/* The products run on the engine's caller-runs pool, OpenBLAS on one
 * thread per call: OpenBLAS's own threads next to the engine's (and the
 * BEAM's schedulers) oversubscribed the cores (a BERT forward took 359 ms
 * where one BLAS thread took 155 ms), and with one BLAS thread a single
 * large product used one core. Each batch's product is cut into blocks
 * of rows (or of columns, for short wide ones such as a decode step's
 * 1 x k by k x n) so that every thread has work; each output element is
 * still one BLAS dot over the whole contraction. The cut depends on the
 * thread count, so FAST results may differ between thread counts within
 * the accumulation bound (as BLAS's own threading does). */
typedef struct blas_job {
    ctype ct;
    const operand *a, *b;
    void *c;
    int64_t nb, m, n, k, rb, cb, rows, cols;
} blas_job;

static void blas_task(void *ctx, int64_t t) {
    const blas_job *j = ctx;
    int64_t per = j->rb * j->cb, bi = t / per, rest = t % per;
    int64_t r0 = (rest / j->cb) * j->rows, c0 = (rest % j->cb) * j->cols;
    int64_t r1 = r0 + j->rows < j->m ? r0 + j->rows : j->m, c1 = c0 + j->cols < j->n ? c0 + j->cols : j->n;
    blas_gemm(j->ct, j->a, j->b, j->c, bi, (int)j->m, (int)j->n, (int)j->k, (int)r0, (int)r1, (int)c0, (int)c1);
}

void emi_cpu_blas_one_thread(void) {
    static atomic_int single = 0;
    if (!atomic_exchange(&single, 1)) openblas_set_num_threads(1);
}

static void blas_on_pool(ctype ct, const operand *a, const operand *b, void *c, int64_t nb, int64_t m, int64_t n,
                         int64_t k) {
    emi_cpu_blas_one_thread();
    int64_t threads = omp_get_max_threads();
    blas_job j = {ct, a, b, c, nb, m, n, k, 1, 1, m, n};
    int64_t work = m * n * k;
    if (threads > 1 && work * nb >= EMI_CPU_MACS_PARALLEL_MIN && nb < 2 * threads) {
        int64_t want = (2 * threads + nb - 1) / nb; /* blocks per product */
        if (m >= n) {
            j.rows = (m + want - 1) / want;
            if (j.rows < 32) j.rows = 32 < m ? 32 : m;
            j.rb = (m + j.rows - 1) / j.rows;
        } else {
            j.cols = (n + want - 1) / want;
            j.cols = (j.cols + 63) / 64 * 64; /* whole vectors of columns */
            if (j.cols > n) j.cols = n;
            j.cb = (n + j.cols - 1) / j.cols;
        }
    }
    int64_t tasks = nb * j.rb * j.cb;
    if (threads > 1 && work * nb >= EMI_CPU_MACS_PARALLEL_MIN) emi_cpu_parallel(tasks, blas_task, &j);
    else
        for (int64_t t = 0; t < tasks; t++) blas_task(&j, t);
}

static emily_status blas_path(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, ctype ct) {
    int64_t nb = dst->shape[0], m = dst->shape[1], n = dst->shape[2], k = a->shape[2];
    if (!fits_int(m) || !fits_int(n) || !fits_int(k))
        return emily_error(EMILY_ERR_UNSUPPORTED,
                           "dot: a %lld x %lld by %lld x %lld product exceeds BLAS's 32-bit sizes", (long long)m,
                           (long long)k, (long long)k, (long long)n);
    operand oa, ob;
    void *pa = NULL, *pb = NULL, *tmp = NULL;
    emily_status s;
    if ((s = prepare(a, ct, &oa, &pa))) goto done;
    if ((s = prepare(b, ct, &ob, &pb))) goto done;
    void *c = emily_tensor_base(dst);
    if (!ct_matches(ct, dst->dtype)) {
        if (!(tmp = alloc_elems(dst->size, ct_size(ct), false))) {
            s = oom("the result");
            goto done;
        }
        c = tmp;
    }
    blas_on_pool(ct, &oa, &ob, c, nb, m, n, k);
done:
    return finish(dst, ct, tmp, pa, pb, s);
}

/* ---- the kernel --------------------------------------------------------- */

/* Whether FAST real products skip BLAS: where the CPU has AVX-512 but
 * the BLAS runs AVX2 kernels (Debian's OpenBLAS 0.3.21 picks "Haswell"
 * on Zen 4/5), dot_blocked.c's AVX-512 tiles are faster. The unfused
 * f64 8 x 16 tile does at least as many multiply-adds a cycle as an AVX2
 * FMA dgemm tile (twice as many on Zen 5, whose multiplies and adds
 * have separate full-width pipes) and its answer is the reference's; the
 * f32 FMA tile has twice an AVX2 tile's lanes. Against AVX-512 BLAS
 * kernels the unfused tile would lose up to half, so those keep BLAS. */
static bool blas_lacks_avx512(void) {
    static atomic_int state = -1;
    int st = atomic_load_explicit(&state, memory_order_relaxed);
    if (st < 0) {
        st = 0;
#if defined(__x86_64__) && defined(__GNUC__)
        const char *core = openblas_get_corename();
        st = __builtin_cpu_supports("avx512f") && core && !strcasestr(core, "skylakex") &&
             !strcasestr(core, "cooperlake") && !strcasestr(core, "sapphire");
#endif
        atomic_store_explicit(&state, st, memory_order_relaxed);
    }
    return st != 0;
}

/* FAST rows by a bf16 matrix read in place (src/cpu/dot_bf16_rows.c,
 * where it applies): into dst when it is f32, else into f32 sums rounded
 * into it as BLAS's would be. */
static emily_status bf16_rows(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b) {
    float *tmp = NULL, *c = emily_tensor_base(dst);
    if (dst->dtype != EMILY_F32) {
        if (!(tmp = alloc_elems(dst->size, sizeof(float), false))) return oom("the result");
        c = tmp;
    }
    return finish(dst, CT_F32, tmp, NULL, NULL, emi_cpu_fast_bf16_rows(a, b, c));
}

static emily_status cpu_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b,
                             emily_dot_precision precision) {
    if (dst->size == 0) return EMILY_OK;
    if (a->shape[2] == 0) { /* empty contraction */
        memset(emily_tensor_base(dst), 0, emily_tensor_nbytes(dst));
        return EMILY_OK;
    }
    bool fast = precision == EMILY_DOT_PRECISION_FAST;
    if (emily_dtype_is_integer(dst->dtype)) return int_gemm(dst, a, b);
    switch (dst->dtype) {
    case EMILY_F64:
        return fast && !blas_lacks_avx512() ? blas_path(dst, a, b, CT_F64) : emi_cpu_exact_real_gemm(dst, a, b);
    case EMILY_C128: return fast ? blas_path(dst, a, b, CT_C128) : cplx_gemm(dst, a, b);
    case EMILY_C64: return blas_path(dst, a, b, fast ? CT_C64 : CT_C128);
    default: /* f32, f16 and bf16: f32 products at FAST */
        if (!fast) return emi_cpu_exact_real_gemm(dst, a, b);
        if (emi_cpu_fast_bf16_rows_applies(a, b)) return bf16_rows(dst, a, b);
        /* one to four rows: a stream over b, whatever the BLAS */
        if (emi_cpu_fast_f32_gemv(dst, a, b)) return EMILY_OK;
        return blas_lacks_avx512() ? emi_cpu_fast_f32_gemm(dst, a, b) : blas_path(dst, a, b, CT_F32);
    }
}

/* no gemm_fp8: the op layer widens 8-bit floats to f32 (src/ops/dot_fp8.c) */
const struct emily_dot_kernels emi_cpu_dot_kernels = {
    .gemm = cpu_gemm,
};
