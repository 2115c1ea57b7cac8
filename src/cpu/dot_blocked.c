/* The dot family's blocked products (see dot_blocked.h): real dots at
 * HIGHEST precision (exact, in f64) and f32/f16/bf16 dots at FAST (f32
 * with FMA), on one cache-blocking driver.
 *
 * Exact (f64 and f32/f16/bf16 at HIGHEST). Why not dgemm: BLAS fuses
 * multiply-adds and reorders the sum, so f64 results drift from the
 * reference's by a few ULP where sums cancel (the corpus has such
 * cases). Here every output element is ((0 + a0*b0) + a1*b1) + ... in k
 * order, each product rounded: this file is compiled with -std=c11,
 * which implies -ffp-contract=off, and the exact tiles' targets do not
 * enable FMA. For f32, f16 and bf16 operands the products are exact in
 * f64, so the same sum is also what a fused kernel would give: the
 * reference's f64 total, rounded once. Why it is fast anyway: on Zen 4/5
 * vector multiplies and vector adds go to separate pipes, so an unfused
 * multiply-add tile runs at the rate of an FMA tile. The AVX-512 tile is
 * 8 rows x 16 columns (16 accumulators, 2 B vectors and a broadcast a
 * step); on this project's Zen 5 host one core sustains ~90 GFLOP/s,
 * above the AVX2 dgemm OpenBLAS picks for that CPU (~55). On cores with
 * one shared multiply/add pipe pair (Intel) the unfused tile runs at half
 * an FMA tile's rate.
 *
 * Fast (f32 at FAST): the same blocking with f32 panels and an AVX-512
 * FMA tile of 8 rows x 32 columns, sums in k order (like sgemm's, not
 * the reference's f64 ones). dot.c uses it where the BLAS has no AVX-512
 * kernel (it then runs at up to twice that BLAS's sgemm rate, with no
 * BLAS thread pool next to our OpenMP one).
 *
 * Blocking (Goto's): the output is cut into work items (a batch, up to
 * ITEM_M rows x ITEM_N columns); for each KC-long slice of the
 * contraction an item packs its B columns into NR-wide panels
 * ([cols/NR][kc][NR], read from any dtype and strides straight into the
 * compute type) and then each MC-row block of its A rows into MR-tall
 * panels ([mc/MR][kc][MR], in L2); each B panel (KC x NR) stays in L1
 * while the block's A panels stream past it. A tile of c is loaded from
 * c (the first slice starts from +0.0 instead), updated for each p in
 * increasing order and stored, so slices continue each sum in order.
 * Outputs of the compute type accumulate in place; others in a
 * per-thread item buffer, rounded into dst once the item's last slice is
 * done (no output-sized scratch, no operand-sized copies).
 *
 * Threads: items are handed out dynamically; every item computes whole
 * sums, so the result does not depend on the thread count. */
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>
#include "cpu/dot_blocked.h"
#include "cpu/parallel.h"
#include "cpu/dot_load.h"
#include "cpu/dtype_scalars.h"

#ifndef KC
#define KC 256 /* contraction slice: a B panel (KC x NR f64) fits L1 */
#endif
#ifndef MC
#define MC 128 /* A block rows: KC x MC f64 (256 KiB) stays in L2 */
#endif
#ifndef ITEM_M
#define ITEM_M 512 /* rows of a work item */
#endif
#ifndef ITEM_N
#define ITEM_N 512 /* columns of a work item */
#endif
enum {
    ITEM_MIN = 64, /* items are not split below this to make more of them */
    MR_MAX = 8,
    NR_MAX = 32,
    TILE_BYTES = MR_MAX * NR_MAX * 8, /* room for the largest tile of either type */
};

/* kc steps of one MR x NR tile: c (row stride ldc elements) =
 * (load ? c : 0) + sum over p of a[p][r] * b[p][j], in p order. */
typedef void (*tile_fn)(int64_t kc, const void *a, const void *b, void *c, int64_t ldc, bool load);

typedef struct tile_kernel {
    int mr, nr;
    tile_fn fn;
    ctype ct;          /* panels' and accumulators' type */
    emily_dtype inout; /* dst dtype accumulated in place */
} tile_kernel;

/* T: element type; VL: elements per vector; MR x (NV VL) tile; MADD(acc,
 * a, b): acc + a * b for a scalar a and a vector b (unfused for exact
 * tiles). */
#define DEFINE_TILE(NAME, ATTR, T, VL, MR, NV, MADD)                                                                \
    typedef T NAME##_v __attribute__((vector_size(VL * sizeof(T))));                                                \
    ATTR static void NAME(int64_t kc, const void *av_, const void *bv_, void *cv_, int64_t ldc, bool load) {        \
        const T *a = av_, *b = bv_;                                                                                 \
        T *c = cv_;                                                                                                 \
        NAME##_v acc[MR][NV];                                                                                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) { \
            if (load) memcpy(&acc[r][v], c + r * ldc + v * VL, sizeof acc[r][v]);                                   \
            else memset(&acc[r][v], 0, sizeof acc[r][v]);                                                           \
        }                                                                                                           \
        for (int64_t p = 0; p < kc; p++) {                                                                          \
            NAME##_v bv[NV];                                                                                        \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                                    \
                memcpy(&bv[v], b + p * (VL * NV) + v * VL, sizeof bv[v]);                                           \
            _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                  \
                T ar = a[p * MR + r]; /* broadcast into each vector product */                                      \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[r][v] = MADD(acc[r][v], ar, bv[v]);        \
            }                                                                                                       \
        }                                                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)   \
            memcpy(c + r * ldc + v * VL, &acc[r][v], sizeof acc[r][v]);                                             \
    }

/* product rounded, then added */
#define MADD_UNFUSED(acc, a, b) ((acc) + (a) * (b))
#define MADD_FMA512(acc, a, b) _mm512_fmadd_ps(_mm512_set1_ps(a), (b), (acc))
#define MADD_FMA256(acc, a, b) _mm256_fmadd_ps(_mm256_set1_ps(a), (b), (acc))

/* (name, target, type, elements per vector, tile rows, vectors per row, multiply-add) */
DEFINE_TILE(exact_generic, , double, 2, 4, 2, MADD_UNFUSED)
DEFINE_TILE(fast_generic, , float, 4, 4, 2, MADD_UNFUSED)
#if defined(__x86_64__) && defined(__GNUC__)
DEFINE_TILE(exact_avx2, __attribute__((target("avx2"))), double, 4, 6, 2, MADD_UNFUSED)
DEFINE_TILE(exact_avx512, __attribute__((target("avx512f"))), double, 8, 8, 2, MADD_UNFUSED)
DEFINE_TILE(fast_avx2, __attribute__((target("avx2,fma"))), float, 8, 6, 2, MADD_FMA256)
DEFINE_TILE(fast_avx512, __attribute__((target("avx512f"))), float, 16, 8, 2, MADD_FMA512)
#endif

static const tile_kernel *tile_pick(bool fast) {
    static const tile_kernel eg = {4, 4, exact_generic, CT_F64, EMILY_F64};
    static const tile_kernel fg = {4, 8, fast_generic, CT_F32, EMILY_F32};
#if defined(__x86_64__) && defined(__GNUC__)
    static const tile_kernel e2 = {6, 8, exact_avx2, CT_F64, EMILY_F64};
    static const tile_kernel e5 = {8, 16, exact_avx512, CT_F64, EMILY_F64};
    static const tile_kernel f2 = {6, 16, fast_avx2, CT_F32, EMILY_F32};
    static const tile_kernel f5 = {8, 32, fast_avx512, CT_F32, EMILY_F32};
    if (__builtin_cpu_supports("avx512f")) return fast ? &f5 : &e5;
    if (__builtin_cpu_supports("avx2") && (!fast || __builtin_cpu_supports("fma"))) return fast ? &f2 : &e2;
#endif
    return fast ? &fg : &eg;
}

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

typedef struct job {
    const emily_tensor *a, *b;
    const char *abase, *bbase; /* operand data */
    int64_t aes, bes;          /* operand element sizes */
    emily_tensor *dst;
    int64_t nb, m, n, k;
    int64_t mi, ni; /* item rows and columns */
    int64_t ib, jb; /* items per batch down and across */
    const tile_kernel *ker;
} job;

/* One thread's packed panels, item buffer and B row buffer (elements of
 * the compute type). */
typedef struct workspace {
    char *apack, *bpack, *cbuf, *row;
} workspace;

/* Sized for this product's slices and items, so that small products
 * (the corpus is mostly small) allocate little. */
static bool ws_init(workspace *w, const job *j) {
    size_t es = ct_size(j->ker->ct), kc = (size_t)imin(KC, j->k);
    size_t a = kc * (size_t)imin(MC + MR_MAX, j->mi + MR_MAX), b = kc * (size_t)(j->ni + NR_MAX);
    size_t c = j->dst->dtype == j->ker->inout ? 0 : (size_t)(j->mi * j->ni);
    w->apack = malloc(es * (a + b + c + (size_t)j->ni));
    if (!w->apack) return false; /* no offsets from a NULL block */
    w->bpack = w->apack + es * a;
    w->cbuf = w->bpack + es * b;
    w->row = w->cbuf + es * c;
    return true;
}

/* Byte address of element (b, r, c) of operand t (base: its data, es:
 * its element size, looked up once per product). */
static const char *elem_ptr(const emily_tensor *t, const char *base, int64_t es, int64_t b, int64_t r, int64_t c) {
    return base + (b * t->strides[0] + r * t->strides[1] + c * t->strides[2]) * es;
}

/* B rows [p0, p0 + kc), columns [j0, j0 + cols) of batch bi into panels
 * dst[jp][p][j], zero-padded to whole panels. */
static void pack_b(const job *jb, int64_t bi, int64_t p0, int64_t kc, int64_t j0, int64_t cols, workspace *w) {
    const emily_tensor *b = jb->b;
    int nr = jb->ker->nr;
    ctype ct = jb->ker->ct;
    int64_t np = ceil_div(cols, nr), tail = cols - (np - 1) * nr;
    load_fn load = emi_dot_loaders[b->dtype];
    /* contiguous f64 rows into f64 panels, f32 rows into either */
    bool direct = b->strides[2] == 1 && (b->dtype == EMILY_F32 || (b->dtype == EMILY_F64 && ct == CT_F64));
    if (direct) {
        /* panel by panel: each panel's writes are one contiguous run (p
         * outer scattered them over every panel at once) */
        int64_t rs = b->strides[1] * jb->bes; /* bytes from one B row to the next */
        const char *src0 = elem_ptr(b, jb->bbase, jb->bes, bi, p0, j0);
        for (int64_t jp = 0; jp < np; jp++) {
            int64_t cnt = jp == np - 1 ? tail : nr;
            const char *sp = src0 + (size_t)(jp * nr) * (size_t)jb->bes;
#define PACK_B_PANEL(ST, DT)                                        \
    {                                                               \
        DT *d = (DT *)w->bpack + jp * kc * nr;                      \
        for (int64_t p = 0; p < kc; p++, d += nr, sp += rs) {       \
            const ST *sr = (const ST *)sp;                          \
            if (cnt == nr) {                                        \
                for (int64_t j = 0; j < nr; j++) d[j] = (DT)sr[j];  \
            } else {                                                \
                for (int64_t j = 0; j < cnt; j++) d[j] = (DT)sr[j]; \
                for (int64_t j = cnt; j < nr; j++) d[j] = 0;        \
            }                                                       \
        }                                                           \
    }
            if (b->dtype == EMILY_F64) PACK_B_PANEL(double, double)
            else if (ct == CT_F64) PACK_B_PANEL(float, double)
            else PACK_B_PANEL(float, float)
#undef PACK_B_PANEL
        }
        return;
    }
    for (int64_t p = 0; p < kc; p++) {
        const char *row = w->row;
        load(elem_ptr(b, jb->bbase, jb->bes, bi, p0 + p, j0), b->strides[2], cols, ct, w->row, 1, 1);
        /* typed copies (a memcpy call per 16-value panel row cost 7% of
         * a large product) */
#define PACK_B_ROW(T)                                   \
    for (int64_t jp = 0; jp < np; jp++) {               \
        T *d = (T *)w->bpack + (jp * kc + p) * nr;      \
        const T *sr = (const T *)row + jp * nr;         \
        int64_t cnt = jp == np - 1 ? tail : nr;         \
        for (int64_t j = 0; j < cnt; j++) d[j] = sr[j]; \
        for (int64_t j = cnt; j < nr; j++) d[j] = 0;    \
    }
        if (ct == CT_F64) {
            PACK_B_ROW(double)
        } else {
            PACK_B_ROW(float)
        }
#undef PACK_B_ROW
    }
}

/* A rows [i0, i0 + mc), columns [p0, p0 + kc) of batch bi into panels
 * dst[ip][p][r], zero-padded to whole panels. */
static void pack_a(const job *jb, int64_t bi, int64_t i0, int64_t mc, int64_t p0, int64_t kc, workspace *w) {
    const emily_tensor *a = jb->a;
    int mr = jb->ker->mr;
    ctype ct = jb->ker->ct;
    size_t es = ct_size(ct);
    load_fn load = emi_dot_loaders[a->dtype];
    int64_t rows = round_up(mc, mr);
    if (a->strides[2] == 1 && (a->dtype == EMILY_F32 || (a->dtype == EMILY_F64 && ct == CT_F64)) && mc == rows) {
        /* the common case, by whole panels: p outer, so the stores run
         * contiguously and the mr rows are read as mr sequential streams
         * (the loader writes one row at stride mr instead) */
        for (int64_t ip = 0; ip < rows / mr; ip++) {
            const char *src[MR_MAX];
            for (int r = 0; r < mr; r++) src[r] = elem_ptr(a, jb->abase, jb->aes, bi, i0 + ip * mr + r, p0);
            char *d = w->apack + (size_t)(ip * kc * mr) * es;
#define PACK_A_LOOP(ST, DT)                                                                 \
    if (mr == 8) /* the AVX-512 tiles' height, unrolled */                                  \
        for (int64_t p = 0; p < kc; p++)                                                    \
            for (int r = 0; r < 8; r++) ((DT *)d)[p * 8 + r] = (DT)((const ST *)src[r])[p]; \
    else                                                                                    \
        for (int64_t p = 0; p < kc; p++)                                                    \
            for (int r = 0; r < mr; r++) ((DT *)d)[p * mr + r] = (DT)((const ST *)src[r])[p];
            if (a->dtype == EMILY_F64) {
                PACK_A_LOOP(double, double)
            } else if (ct == CT_F64) {
                PACK_A_LOOP(float, double)
            } else {
                PACK_A_LOOP(float, float)
            }
#undef PACK_A_LOOP
        }
        return;
    }
    for (int64_t r = 0; r < rows; r++) {
        char *d = w->apack + (size_t)((r / mr) * kc * mr + r % mr) * es;
        if (r < mc) {
            load(elem_ptr(a, jb->abase, jb->aes, bi, i0 + r, p0), a->strides[2], kc, ct, d, mr, 1);
        } else {
            for (int64_t p = 0; p < kc; p++) memset(d + (size_t)(p * mr) * es, 0, es);
        }
    }
}

/* Rounds an item's sums (rows x cols of the compute type, row stride
 * ldc) into dst (f32, f16 or bf16), one loop per case so that each
 * vectorizes: f64 sums (exact), or f32 sums, which widen exactly, so one
 * rounding either way (bf16, Nx's way: to f32, then the top 16 bits). */
// clang-format off
#define STORE_ITEM(ENUM, sfx, T)                                                       \
    case EMILY_##ENUM:                                                                 \
        for (int64_t r = 0; r < rows; r++) {                                           \
            T *o = (T *)base + off + r * n;                                            \
            if (ct == CT_F64) {                                                        \
                const double *sd = (const double *)c + r * ldc;                        \
                for (int64_t j = 0; j < cols; j++) o[j] = emi_from_f64_##sfx(sd[j]);  \
            } else {                                                                   \
                const float *sf = (const float *)c + r * ldc;                          \
                for (int64_t j = 0; j < cols; j++) o[j] = emi_from_f64_##sfx(sf[j]);  \
            }                                                                          \
        }                                                                              \
        break;
// clang-format on

static void store_item(emily_tensor *dst, ctype ct, const void *c, int64_t ldc, int64_t off, int64_t rows,
                       int64_t cols) {
    int64_t n = dst->shape[2];
    void *base = emily_tensor_base(dst);
    switch (dst->dtype) {
        EMI_DTYPES_FLOAT(STORE_ITEM)
    default: break;
    }
}

static void run_item(const job *jb, int64_t it, workspace *w) {
    int mr = jb->ker->mr, nr = jb->ker->nr;
    size_t es = ct_size(jb->ker->ct);
    int64_t per = jb->ib * jb->jb, bi = it / per, rest = it % per;
    int64_t i0 = (rest / jb->jb) * jb->mi, j0 = (rest % jb->jb) * jb->ni;
    int64_t rows = imin(jb->mi, jb->m - i0), cols = imin(jb->ni, jb->n - j0);
    int64_t off = (bi * jb->m + i0) * jb->n + j0; /* dst element of the item's corner */
    bool in_place = jb->dst->dtype == jb->ker->inout;
    char *c = in_place ? (char *)emily_tensor_base(jb->dst) + (size_t)off * es : w->cbuf;
    int64_t ldc = in_place ? jb->n : cols;
    for (int64_t p0 = 0; p0 < jb->k; p0 += KC) {
        int64_t kc = imin(KC, jb->k - p0);
        bool load = p0 > 0;
        pack_b(jb, bi, p0, kc, j0, cols, w);
        for (int64_t i1 = 0; i1 < rows; i1 += MC) {
            int64_t mc = imin(MC, rows - i1);
            pack_a(jb, bi, i0 + i1, mc, p0, kc, w);
            for (int64_t jp = 0; jp < ceil_div(cols, nr); jp++) {
                const char *bp = w->bpack + (size_t)(jp * kc * nr) * es;
                int64_t nv = imin(nr, cols - jp * nr);
                for (int64_t ip = 0; ip < ceil_div(mc, mr); ip++) {
                    const char *ap = w->apack + (size_t)(ip * kc * mr) * es;
                    int64_t mv = imin(mr, mc - ip * mr);
                    char *ct = c + (size_t)((i1 + ip * mr) * ldc + jp * nr) * es;
                    if (mv == mr && nv == nr) {
                        jb->ker->fn(kc, ap, bp, ct, ldc, load);
                        continue;
                    }
                    /* a partial tile goes through a whole one */
                    _Alignas(64) unsigned char t[TILE_BYTES];
                    if (load)
                        for (int64_t r = 0; r < mv; r++)
                            memcpy(t + (size_t)(r * nr) * es, ct + (size_t)(r * ldc) * es, (size_t)nv * es);
                    jb->ker->fn(kc, ap, bp, t, nr, load);
                    for (int64_t r = 0; r < mv; r++)
                        memcpy(ct + (size_t)(r * ldc) * es, t + (size_t)(r * nr) * es, (size_t)nv * es);
                }
            }
        }
    }
    if (!in_place) store_item(jb->dst, jb->ker->ct, c, ldc, off, rows, cols);
}

/* A pool thread's packing workspace, kept between products (grown when
 * a product needs more): allocating it per item would cost more than
 * small items take. */
static _Thread_local char *pool_ws;
static _Thread_local size_t pool_ws_bytes;

static bool ws_pool(workspace *w, const job *j) {
    size_t es = ct_size(j->ker->ct), kc = (size_t)imin(KC, j->k);
    size_t a = kc * (size_t)imin(MC + MR_MAX, j->mi + MR_MAX), b = kc * (size_t)(j->ni + NR_MAX);
    size_t c = j->dst->dtype == j->ker->inout ? 0 : (size_t)(j->mi * j->ni);
    size_t bytes = es * (a + b + c + (size_t)j->ni);
    if (pool_ws_bytes < bytes) {
        free(pool_ws);
        pool_ws = malloc(bytes);
        pool_ws_bytes = pool_ws ? bytes : 0;
        if (!pool_ws) return false;
    }
    w->apack = pool_ws;
    w->bpack = w->apack + es * a;
    w->cbuf = w->bpack + es * b;
    w->row = w->cbuf + es * c;
    return true;
}

typedef struct items_job {
    const job *j;
    atomic_int failed;
} items_job;

static void run_item_on_pool(void *ctx, int64_t it) {
    items_job *ij = ctx;
    workspace w;
    if (!ws_pool(&w, ij->j)) {
        atomic_store(&ij->failed, 1);
        return;
    }
    run_item(ij->j, it, &w);
}

static emily_status blocked_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm, bool fast) {
    job j = {.a = a, .b = bm, .dst = dst, .ker = tile_pick(fast)};
    j.abase = emily_tensor_base(a);
    j.bbase = emily_tensor_base(bm);
    j.aes = (int64_t)emily_dtype_size(a->dtype);
    j.bes = (int64_t)emily_dtype_size(bm->dtype);
    j.nb = dst->shape[0];
    j.m = dst->shape[1];
    j.n = dst->shape[2];
    j.k = a->shape[2];
    int mr = j.ker->mr, nr = j.ker->nr;
    int T = omp_get_max_threads();
    if (j.m * j.n * j.k * j.nb < EMI_CPU_MACS_PARALLEL_MIN) T = 1;
    /* items as large as ITEM_M x ITEM_N, halved (the longer side first) until
     * there are two a thread: each split repacks the operands once more
     * (at 256^2 two items a thread took 0.21 ms on two cores, four 0.25) */
    j.mi = imin(ITEM_M, round_up(j.m, mr));
    j.ni = imin(ITEM_N, round_up(j.n, nr));
    for (;;) {
        int64_t items = j.nb * ceil_div(j.m, j.mi) * ceil_div(j.n, j.ni);
        if (T == 1 || items >= 2 * (int64_t)T) break;
        if (j.mi >= j.ni && j.mi > ITEM_MIN) j.mi = round_up(j.mi / 2, mr);
        else if (j.ni > ITEM_MIN) j.ni = round_up(j.ni / 2, nr);
        else if (j.mi > ITEM_MIN) j.mi = round_up(j.mi / 2, mr);
        else break;
    }
    j.ib = ceil_div(j.m, j.mi);
    j.jb = ceil_div(j.n, j.ni);
    int64_t items = j.nb * j.ib * j.jb;
    if (T > items) T = (int)items;
    if (T <= 1) {
        workspace w;
        if (!ws_init(&w, &j)) return emily_error(EMILY_ERR_MEMORY, "dot: out of host memory for packed panels");
        for (int64_t it = 0; it < items; it++) run_item(&j, it, &w);
        free(w.apack);
        return EMILY_OK;
    }
    /* items on the engine's caller-runs pool (no OpenMP team to fork and
     * join per product), each thread packing into its own workspace */
    items_job ij = {.j = &j, .failed = 0};
    emi_cpu_parallel(items, run_item_on_pool, &ij);
    /* a thread without its workspace leaves its items undone */
    if (atomic_load(&ij.failed)) return emily_error(EMILY_ERR_MEMORY, "dot: out of host memory for packed panels");
    return EMILY_OK;
}

emily_status emi_cpu_exact_real_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm) {
    return blocked_gemm(dst, a, bm, false);
}

/* ---- FAST matrix-vector products ------------------------------------
 * A product of one to four rows (a decode step's x W) is a stream over
 * B, memory-bound: packing B into panels (the blocked path) or BLAS's
 * small-M kernels read it more than once or fill tiles with padding.
 * Here each output vector of 16 columns accumulates a[r][p] * B[p][j..]
 * with f32 fused multiply-adds for p in increasing order from +0.0 (the
 * blocked FAST tile's sequence), B read once, columns in blocks on the
 * engine's pool. f32 operands and output, B's columns contiguous. */
#if defined(__x86_64__) && defined(__GNUC__)
#define GEMV_COLS 1024 /* columns per pool job: 4 rows of them stay in L1 */

typedef struct gemv_job {
    const float *a, *b;
    float *c;
    int64_t m, n, k, lda, ldb, sa, sb, blocks;
} gemv_job;

/* Rows of B in order, each row's block of columns read once,
 * contiguously: c[r][j] = fma(a[r][p], B[p][j], c[r][j]) for p = 0, 1,
 * ... with c starting at +0.0 (the accumulators are the output's block,
 * which stays in L1). */
__attribute__((target("avx512f"))) static void gemv_block(void *ctx, int64_t t) {
    const gemv_job *jb = ctx;
    int64_t bi = t / jb->blocks, blk = t % jb->blocks;
    int64_t j0 = blk * GEMV_COLS, j1 = j0 + GEMV_COLS < jb->n ? j0 + GEMV_COLS : jb->n;
    const float *a = jb->a + bi * jb->sa, *b = jb->b + bi * jb->sb;
    float *c = jb->c + bi * jb->m * jb->n;
    int64_t m = jb->m, n = jb->n, w = j1 - j0, full = w / 16 * 16;
    __mmask16 tail = (__mmask16)((1u << (w - full)) - 1u);
    for (int64_t r = 0; r < m; r++) memset(c + r * n + j0, 0, sizeof(float) * (size_t)w);
    for (int64_t p = 0; p < jb->k; p++) {
        const float *bp = b + p * jb->ldb + j0;
        for (int64_t r = 0; r < m; r++) {
            __m512 av = _mm512_set1_ps(a[r * jb->lda + p]);
            float *cr = c + r * n + j0;
            int64_t j = 0;
            for (; j + 64 <= full; j += 64) {
                __m512 c0 = _mm512_loadu_ps(cr + j), c1 = _mm512_loadu_ps(cr + j + 16);
                __m512 c2 = _mm512_loadu_ps(cr + j + 32), c3 = _mm512_loadu_ps(cr + j + 48);
                c0 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bp + j), c0);
                c1 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bp + j + 16), c1);
                c2 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bp + j + 32), c2);
                c3 = _mm512_fmadd_ps(av, _mm512_loadu_ps(bp + j + 48), c3);
                _mm512_storeu_ps(cr + j, c0);
                _mm512_storeu_ps(cr + j + 16, c1);
                _mm512_storeu_ps(cr + j + 32, c2);
                _mm512_storeu_ps(cr + j + 48, c3);
            }
            for (; j < full; j += 16)
                _mm512_storeu_ps(cr + j, _mm512_fmadd_ps(av, _mm512_loadu_ps(bp + j), _mm512_loadu_ps(cr + j)));
            if (tail)
                _mm512_mask_storeu_ps(
                    cr + j, tail,
                    _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(tail, bp + j), _mm512_maskz_loadu_ps(tail, cr + j)));
        }
    }
}

bool emi_cpu_fast_f32_gemv(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm) {
    int64_t m = dst->shape[1], n = dst->shape[2], k = a->shape[2];
    if (m > 4 || dst->dtype != EMILY_F32 || a->dtype != EMILY_F32 || bm->dtype != EMILY_F32 ||
        !__builtin_cpu_supports("avx512f") || bm->strides[2] != 1 || a->strides[2] != 1 || n < 16 || k < 1)
        return false;
    gemv_job jb = {emily_tensor_base(a),
                   emily_tensor_base(bm),
                   emily_tensor_base(dst),
                   m,
                   n,
                   k,
                   a->strides[1],
                   bm->strides[1],
                   a->strides[0],
                   bm->strides[0],
                   (n + GEMV_COLS - 1) / GEMV_COLS};
    int64_t tasks = dst->shape[0] * jb.blocks;
    if (m * n * k * dst->shape[0] >= EMI_CPU_MACS_PARALLEL_MIN / 4) emi_cpu_parallel(tasks, gemv_block, &jb);
    else
        for (int64_t t = 0; t < tasks; t++) gemv_block(&jb, t);
    return true;
}
#else
bool emi_cpu_fast_f32_gemv(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm) {
    (void)dst;
    (void)a;
    (void)bm;
    return false;
}
#endif

emily_status emi_cpu_fast_f32_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm) {
    if (emi_cpu_fast_f32_gemv(dst, a, bm)) return EMILY_OK;
    return blocked_gemm(dst, a, bm, true);
}
