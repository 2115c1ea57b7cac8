/* The exact blocked update of exact_update.h.
 *
 * Structure (as in Goto's GEMM): the contraction is cut into KC-long
 * slices; for each slice, B's rows are packed into NR-wide panels
 * ([n/NR][kc][NR]) and each MC-row block of A into MR-tall panels
 * ([mc/MR][kc][MR]) unless A's rows are contiguous (then the kernel
 * reads them in place), so that one B panel stays in L1 while the A
 * block (in L2) streams past it. An MR x NR tile of c is held in vector
 * registers for the whole slice: loaded from c, updated once per p in
 * increasing p, stored back; the next slice continues from the stored
 * value, so every element sees its terms in order. Products are rounded
 * before the add (this file is built with -std=c11, which implies
 * -ffp-contract=off, and the variants enable no FMA), which makes the
 * result bit-identical to emi_xupdate_reference.
 *
 * Tiles are AVX-512 8 x 16 (16 accumulators: Zen 4/5 and Intel issue a
 * vector multiply and a vector add per cycle each, so the unfused kernel
 * runs at the FMA kernel's rate), AVX2 6 x 8, plain SSE2 4 x 4; picked at
 * run time. Padding rows/columns of partial panels are zeros; partial
 * tiles of c go through a scratch tile. */
#include "cpu/linalg/exact_update.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum {
    KC = 256, /* contraction slice: a B panel (KC x NR) stays in L1 */
    MC = 128, /* rows per A block: KC x MC doubles (256 KiB) stay in L2 */
    NC = 256, /* columns per work item, so narrow updates still split */
    MR_MAX = 8,
    NR_MAX = 16,
};

/* Work (multiply-adds, ~3 ms on one core) below which an update stays on
 * one thread. A team's start and join cost microseconds on an idle
 * machine, but on a busy one the join waits until the other thread gets a
 * core again, milliseconds each time: at load 2.7-3.7 on this 2-core
 * machine a 256 x 256 solve took 20 ms instead of 0.3 ms with threads
 * from 2^18, and a 1024 x 1024 one 30-80 ms instead of 12 ms with threads
 * from 2^24. Only updates long enough to absorb such a wait are split
 * (from 2048 x 2048 matrices up). */
#define XU_PARALLEL_MIN_DEFAULT ((int64_t)1 << 28)
static _Atomic int64_t parallel_min = XU_PARALLEL_MIN_DEFAULT;

void emi_xupdate_set_parallel_min(int64_t work) {
    atomic_store(&parallel_min, work < 0 ? XU_PARALLEL_MIN_DEFAULT : work);
}

/* a: the packed panel ([kc][MR]) when sr == 0, else row r of the tile at
 * a + r * sr (contiguous in p) */
typedef void (*xkernel_fn)(int64_t kc, const double *a, int64_t sr, const double *b, double *c, int64_t ldc, bool sub);
typedef void (*xkernel32_fn)(int64_t kc, const double *a, int64_t sr, const double *b, double *c, int64_t ldc);

typedef struct xkernel {
    int mr, nr;
    xkernel_fn fn;
    xkernel32_fn fn32;
} xkernel;

/* The k loop of a kernel: UPD(S, acc, pr) the update of one accumulator
 * vector by one product vector, AV(r) the tile's A element (r, p). */
#define XK_LOOP(SUFFIX, VL, MR, NV, UPD, AV)                                                                           \
    for (int64_t p = 0; p < kc; p++) {                                                                                 \
        xv_##SUFFIX bv[NV];                                                                                            \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) memcpy(&bv[v], b + p * (VL * NV) + v * VL, sizeof bv[v]); \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                         \
            double av = AV(r, MR);                                                                                     \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                                     \
                xv_##SUFFIX pr = av * bv[v];                                                                           \
                acc[r][v] = UPD(SUFFIX, acc[r][v], pr);                                                                \
            }                                                                                                          \
        }                                                                                                              \
    }
#define XK_PACKED(r, MR) a[p * (MR) + (r)]
#define XK_DIRECT(r, MR) a[(r)*sr + p]
#define XK32_LOOP(SUFFIX, VL, MR, NV, AV)                          \
    for (int64_t p = 0; p < kc; p++) {                             \
        xw_##SUFFIX bw;                                            \
        memcpy(&bw, b + p * (VL * NV), sizeof bw);                 \
        xs_##SUFFIX bv = __builtin_convertvector(bw, xs_##SUFFIX); \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {     \
            float av = (float)AV(r, MR);                           \
            xs_##SUFFIX pr = av * bv;                              \
            acc[r] = acc[r] - pr;                                  \
        }                                                          \
    }
#define XK_ADD(S, x, pr) ((x) + (pr))
#define XK_SUB(S, x, pr) ((x) - (pr))

#define DEFINE_XKERNEL(SUFFIX, ATTR, VL, MR, NV)                                                                       \
    typedef double xv_##SUFFIX __attribute__((vector_size(VL * 8)));                                                   \
    ATTR static void xk_##SUFFIX(int64_t kc, const double *a, int64_t sr, const double *b, double *c, int64_t ldc,     \
                                 bool sub) {                                                                           \
        xv_##SUFFIX acc[MR][NV];                                                                                       \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)      \
            memcpy(&acc[r][v], c + r * ldc + v * VL, sizeof acc[r][v]);                                                \
        if (sr == 0 && sub) {                                                                                          \
            XK_LOOP(SUFFIX, VL, MR, NV, XK_SUB, XK_PACKED)                                                             \
        } else if (sr == 0) {                                                                                          \
            XK_LOOP(SUFFIX, VL, MR, NV, XK_ADD, XK_PACKED)                                                             \
        } else if (sub) {                                                                                              \
            XK_LOOP(SUFFIX, VL, MR, NV, XK_SUB, XK_DIRECT)                                                             \
        } else {                                                                                                       \
            XK_LOOP(SUFFIX, VL, MR, NV, XK_ADD, XK_DIRECT)                                                             \
        }                                                                                                              \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)      \
            memcpy(c + r * ldc + v * VL, &acc[r][v], sizeof acc[r][v]);                                                \
    }                                                                                                                  \
    /* The f32 LU step f32(c - f32(a * b)) on f32 values held in doubles,  \
     * computed in f32 arithmetic: the f64 product of two f32 values is    \
     * exact, so rounding it to f32 is the f32 product, and rounding an    \
     * f64 difference of two f32 values to f32 is the f32 difference (f64  \
     * has more than 2 * 24 + 2 bits: the double rounding is innocuous).   \
     * Twice the lanes of the f64 kernel and no conversion per step. */                                           \
    typedef float xs_##SUFFIX __attribute__((vector_size(VL * NV * 4)));                                               \
    typedef double xw_##SUFFIX __attribute__((vector_size(VL * NV * 8)));                                              \
    ATTR static void xk32_##SUFFIX(int64_t kc, const double *a, int64_t sr, const double *b, double *c, int64_t ldc) { \
        xs_##SUFFIX acc[MR];                                                                                           \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                         \
            xw_##SUFFIX t;                                                                                             \
            memcpy(&t, c + r * ldc, sizeof t);                                                                         \
            acc[r] = __builtin_convertvector(t, xs_##SUFFIX);                                                          \
        }                                                                                                              \
        if (sr == 0) {                                                                                                 \
            XK32_LOOP(SUFFIX, VL, MR, NV, XK_PACKED)                                                                   \
        } else {                                                                                                       \
            XK32_LOOP(SUFFIX, VL, MR, NV, XK_DIRECT)                                                                   \
        }                                                                                                              \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) {                                                         \
            xw_##SUFFIX t = __builtin_convertvector(acc[r], xw_##SUFFIX);                                              \
            memcpy(c + r * ldc, &t, sizeof t);                                                                         \
        }                                                                                                              \
    }

/* (suffix, target, doubles per vector, tile rows, vectors per tile row) */
DEFINE_XKERNEL(generic, , 2, 4, 2)
#if defined(__x86_64__) && defined(__GNUC__)
DEFINE_XKERNEL(avx2, __attribute__((target("avx2"))), 4, 6, 2)
DEFINE_XKERNEL(avx512, __attribute__((target("avx512f"))), 8, 8, 2)
#endif

static const xkernel *xkernel_pick(void) {
    static const xkernel generic = {4, 4, xk_generic, xk32_generic};
#if defined(__x86_64__) && defined(__GNUC__)
    static const xkernel avx2 = {6, 8, xk_avx2, xk32_avx2};
    static const xkernel avx512 = {8, 16, xk_avx512, xk32_avx512};
    if (__builtin_cpu_supports("avx512f")) return &avx512;
    if (__builtin_cpu_supports("avx2")) return &avx2;
#endif
    return &generic;
}

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Packed sizes, in doubles: all of B's panels for one slice, and one A
 * block (per thread). Sized for the largest tile any variant uses. */
static int64_t b_pack_size(int64_t nmax) { return (int64_t)KC * (nmax + NR_MAX); }
static int64_t a_pack_size(void) { return (int64_t)KC * (MC + MR_MAX); }
/* per thread on the threaded path: one item's B chunk and A block */
static int64_t item_pack_size(void) { return b_pack_size(NC) + a_pack_size(); }

bool emi_xupdate_ws_init(emily_xupdate_ws *ws, int64_t nmax, int threads) {
    if (threads < 1) threads = 1;
    if (nmax < 1) nmax = 1;
    ws->nmax = nmax;
    ws->threads = threads;
    int64_t serial = b_pack_size(nmax) + a_pack_size(), threaded = threads * item_pack_size();
    size_t count = (size_t)(serial > threaded || threads == 1 ? serial : threaded);
    ws->buf = malloc(count * sizeof(double));
    return ws->buf != NULL;
}

void emi_xupdate_ws_free(emily_xupdate_ws *ws) {
    free(ws->buf);
    ws->buf = NULL;
}

/* B panel jp of the slice [p0, p0 + kc): dst[p][j] = b(p0 + p, jp * nr + j). */
static void pack_b_panel(const emily_xupdate *u, int nr, int64_t jp, int64_t p0, int64_t kc, double *dst) {
    int64_t j0 = jp * nr, nv = imin(nr, u->n - j0);
    const double *src = u->b + p0 * u->b_rs + j0 * u->b_cs;
    if (u->b_cs == 1 && nv == nr) {
        for (int64_t p = 0; p < kc; p++) memcpy(dst + p * nr, src + p * u->b_rs, (size_t)nr * sizeof(double));
        return;
    }
    for (int64_t p = 0; p < kc; p++) {
        const double *s = src + p * u->b_rs;
        double *d = dst + p * nr;
        for (int64_t j = 0; j < nv; j++) d[j] = s[j * u->b_cs];
        for (int64_t j = nv; j < nr; j++) d[j] = 0;
    }
}

/* A rows [i0, i0 + mc) of the slice into MR-tall panels: panel ip,
 * dst[ip][p][r] = a(i0 + ip * mr + r, p0 + p). */
static void pack_a_block(const emily_xupdate *u, int mr, int64_t i0, int64_t mc, int64_t p0, int64_t kc, double *dst) {
    for (int64_t ip = 0; ip < ceil_div(mc, mr); ip++) {
        double *d = dst + ip * kc * mr;
        int64_t r0 = i0 + ip * mr, rv = imin(mr, i0 + mc - r0);
        for (int64_t r = 0; r < rv; r++) {
            const double *s = u->a + (r0 + r) * u->a_rs + p0 * u->a_cs;
            for (int64_t p = 0; p < kc; p++) d[p * mr + r] = s[p * u->a_cs];
        }
        for (int64_t r = rv; r < mr; r++)
            for (int64_t p = 0; p < kc; p++) d[p * mr + r] = 0;
    }
}

static void run_kernel(const xkernel *ker, const emily_xupdate *u, int64_t kc, const double *ap, int64_t sr,
                       const double *bp, double *c, int64_t ldc) {
    if (u->subtract && u->round_f32) ker->fn32(kc, ap, sr, bp, c, ldc);
    else ker->fn(kc, ap, sr, bp, c, ldc, u->subtract);
}

/* Whether any element of rows [i0, i0 + rows) x columns [j0, ...) is
 * needed: the tile's lowest row reaches column j0 of the diagonal. */
static bool needed(const emily_xupdate *u, int64_t i0, int64_t rows, int64_t j0) {
    return !u->lower || i0 + rows - 1 + u->diag_off >= j0;
}

/* Rows [i0, i0 + mc) x columns [j0, j0 + ncols) of one slice, with B's
 * panels for those columns already packed in bpack (panel jp at
 * (jp - j0 / nr) * kc * nr). */
static void run_block(const emily_xupdate *u, const xkernel *ker, int64_t i0, int64_t mc, int64_t j0, int64_t ncols,
                      int64_t p0, int64_t kc, const double *bpack, double *apack) {
    int mr = ker->mr, nr = ker->nr;
    /* Rows of A that are contiguous in p are read in place (eight row
     * streams): packing them cost more than it saved, most of all in the
     * factorizations' many narrow updates (measured 5-8% of a solve). */
    bool direct = u->a_cs == 1;
    if (!direct) pack_a_block(u, mr, i0, mc, p0, kc, apack);
    else if (mc % mr) /* the partial last tile */
        pack_a_block(u, mr, i0 + mc / mr * mr, mc % mr, p0, kc, apack + mc / mr * kc * mr);
    for (int64_t jp = j0 / nr; jp < ceil_div(j0 + ncols, nr); jp++) {
        const double *bp = bpack + (jp - j0 / nr) * kc * nr;
        int64_t jj = jp * nr, nv = imin(nr, u->n - jj);
        for (int64_t ip = 0; ip < ceil_div(mc, mr); ip++) {
            int64_t ii = i0 + ip * mr, mv = imin(mr, i0 + mc - ii);
            if (!needed(u, ii, mv, jj)) continue;
            double *ct = u->c + ii * u->ldc + jj;
            bool in_place = direct && mv == mr;
            const double *ap = in_place ? u->a + ii * u->a_rs + p0 : apack + ip * kc * mr;
            int64_t sr = in_place ? u->a_rs : 0;
            if (mv == mr && nv == nr) {
                run_kernel(ker, u, kc, ap, sr, bp, ct, u->ldc);
            } else {
                double tile[MR_MAX * NR_MAX];
                for (int64_t r = 0; r < mr; r++)
                    for (int64_t j = 0; j < nr; j++) tile[r * nr + j] = (r < mv && j < nv) ? ct[r * u->ldc + j] : 0.0;
                run_kernel(ker, u, kc, ap, sr, bp, tile, nr);
                for (int64_t r = 0; r < mv; r++)
                    for (int64_t j = 0; j < nv; j++) ct[r * u->ldc + j] = tile[r * nr + j];
            }
        }
    }
}

void emi_xupdate_run(const emily_xupdate *u, emily_xupdate_ws *ws) {
    if (u->m <= 0 || u->n <= 0 || u->k <= 0) return;
    const xkernel *ker = xkernel_pick();
    int nr = ker->nr;
    /* items: MC-row blocks x NC-column chunks (NC is a multiple of every NR) */
    int64_t mb = ceil_div(u->m, MC), nb = ceil_div(u->n, NC), items = mb * nb;
    int64_t work = u->m * u->n * u->k;
    int threads = (int)imin(ws->threads, items);
    if (threads > 1 && work >= atomic_load(&parallel_min) && !omp_in_parallel()) {
        /* Each item packs its own B chunk and runs every slice, so the
         * threads meet only once, at the end: under load a thread can wait
         * milliseconds for the other to get a core at every meeting. */
#pragma omp parallel for num_threads(threads) schedule(dynamic)
        for (int64_t it = 0; it < items; it++) {
            int64_t i0 = (it / nb) * MC, j0 = (it % nb) * NC;
            int64_t mc = imin(MC, u->m - i0), ncols = imin(NC, u->n - j0);
            if (!needed(u, i0, mc, j0)) continue;
            double *bpack = ws->buf + (int64_t)omp_get_thread_num() * item_pack_size();
            double *apack = bpack + b_pack_size(NC);
            for (int64_t p0 = 0; p0 < u->k; p0 += KC) {
                int64_t kc = imin(KC, u->k - p0);
                for (int64_t jp = j0 / nr; jp < ceil_div(j0 + ncols, nr); jp++)
                    pack_b_panel(u, nr, jp, p0, kc, bpack + (jp - j0 / nr) * kc * nr);
                run_block(u, ker, i0, mc, j0, ncols, p0, kc, bpack, apack);
            }
        }
        return;
    }
    int64_t np = ceil_div(u->n, nr);
    double *bpack = ws->buf, *apack = ws->buf + b_pack_size(ws->nmax);
    for (int64_t p0 = 0; p0 < u->k; p0 += KC) {
        int64_t kc = imin(KC, u->k - p0);
        for (int64_t jp = 0; jp < np; jp++) pack_b_panel(u, nr, jp, p0, kc, bpack + jp * kc * nr);
        for (int64_t i0 = 0; i0 < u->m; i0 += MC) {
            int64_t mc = imin(MC, u->m - i0);
            if (needed(u, i0, mc, 0)) run_block(u, ker, i0, mc, 0, u->n, p0, kc, bpack, apack);
        }
    }
}

void emi_xupdate_reference(const emily_xupdate *u) {
    for (int64_t i = 0; i < u->m; i++)
        for (int64_t j = 0; j < u->n; j++) {
            if (u->lower && i + u->diag_off < j) continue;
            double acc = u->c[i * u->ldc + j];
            for (int64_t p = 0; p < u->k; p++) {
                double pr = u->a[i * u->a_rs + p * u->a_cs] * u->b[p * u->b_rs + j * u->b_cs];
                if (u->subtract && u->round_f32) acc = (double)(float)(acc - (double)(float)pr);
                else acc = u->subtract ? acc - pr : acc + pr;
            }
            u->c[i * u->ldc + j] = acc;
        }
}
