/* CPU kernels: FFT along one axis, with Nx.BinaryBackend's results.
 *
 * The reference (Nx.BinaryBackend.fft) computes in double precision:
 * - lengths that are powers of two or below 1024: recursive radix-2
 *   Cooley-Tukey on the even/odd halves until the length is odd, then a
 *   direct DFT of that odd length;
 * - other lengths: Bluestein's chirp-z transform through power-of-two
 *   FFTs of length m = 2^ceil(log2(2n - 1)).
 * We run the same arithmetic iteratively: the input is gathered in the
 * recursion's leaf order (bit-reversed blocks), the odd-length leaves are
 * transformed directly, then radix-2 butterfly stages double the length.
 * Every twiddle is computed exactly as the reference computes it
 * (cos/sin of the same rounded angle) and every complex operation uses
 * the same formula, so results agree to the last bit with the same libm.
 *
 * Data is kept as split real/imaginary double arrays so the butterfly
 * loops vectorize; the bit-reversed gather is cache-blocked, stages that
 * fit in cache run block by block, and two radix-2 stages share each
 * pass over memory (the same operations, so the same bits). Plans
 * (twiddle tables) are cached per length. Threads split the lines of a
 * tensor; one line runs on one thread. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/dtype_scalars.h"
#include "cpu/kernels.h"
#include "core/kernels.h"
#include "core/fft_butterfly.h"
#include "core/plan_cache.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ---- plans ------------------------------------------------------------- */

typedef struct fft_plan fft_plan;
struct fft_plan {
    int64_t n;
    int refs; /* guarded by plan_lock */
    uint64_t used;
    bool bluestein;
    /* direct path: n = q * 2^s, q odd; leaf r holds x[rev(r) + 2^s i] */
    int64_t q;
    int s, slo; /* s-bit reversal = (slo low bits, s - slo high bits) swapped */
    int64_t *rev_lo, *rev_hi;
    double *tw_re, *tw_im;     /* stage twiddles, stage t (L = q 2^t) at offset q (2^(t-1) - 1) */
    double *leaf_re, *leaf_im; /* q x q direct-DFT twiddles at [i q + k], NULL when q == 1 */
    size_t bytes;              /* memory held (for the cache budget) */
    /* Bluestein path */
    int64_t m;
    fft_plan *sub;       /* the length-m power-of-two plan */
    double *w_re, *w_im; /* chirp, n entries */
    double *b_re, *b_im; /* FFT of the chirp filter, m entries */
};

static void plan_free(fft_plan *p) {
    if (!p) return;
    free(p->rev_lo);
    free(p->rev_hi);
    free(p->tw_re);
    free(p->tw_im);
    free(p->leaf_re);
    free(p->leaf_im);
    free(p->w_re);
    free(p->w_im);
    free(p->b_re);
    free(p->b_im);
    free(p);
}

static bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

static int64_t *bit_reversal(int bits) {
    int64_t count = (int64_t)1 << bits;
    int64_t *r = malloc((size_t)count * sizeof *r);
    if (!r) return NULL;
    for (int64_t i = 0; i < count; i++) {
        int64_t v = 0;
        for (int b = 0; b < bits; b++) v |= ((i >> b) & 1) << (bits - 1 - b);
        r[i] = v;
    }
    return r;
}

static void fft_natural(const fft_plan *p, double *re, double *im, double *tre, double *tim);

static fft_plan *plan_build_direct(int64_t n) {
    fft_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n;
    int64_t q = n;
    int s = 0;
    while (q > 1 && q % 2 == 0) {
        q /= 2;
        s++;
    }
    p->q = q;
    p->s = s;
    p->slo = s / 2;
    p->rev_lo = bit_reversal(p->slo);
    p->rev_hi = bit_reversal(s - p->slo);
    p->tw_re = malloc((size_t)(n > 1 ? n : 1) * sizeof(double));
    p->tw_im = malloc((size_t)(n > 1 ? n : 1) * sizeof(double));
    if (!p->rev_lo || !p->rev_hi || !p->tw_re || !p->tw_im) {
        plan_free(p);
        return NULL;
    }
    /* Stage twiddles: exp(i * (-2 * pi * k / L)), as Complex.exp computes it. */
    for (int t = 1; t <= s; t++) {
        int64_t L = q << t, h = L / 2, off = q * (((int64_t)1 << (t - 1)) - 1);
        for (int64_t k = 0; k < h; k++) {
            double theta = -2.0 * M_PI * (double)k / (double)L;
            p->tw_re[off + k] = cos(theta);
            p->tw_im[off + k] = sin(theta);
        }
    }
    /* q is odd and below 1024 (longer odd lengths go to Bluestein) */
    if (q > 1) {
        p->leaf_re = malloc((size_t)(q * q) * sizeof(double));
        p->leaf_im = malloc((size_t)(q * q) * sizeof(double));
        if (!p->leaf_re || !p->leaf_im) {
            plan_free(p);
            return NULL;
        }
        double base = -2.0 * M_PI / (double)q;
        for (int64_t k = 0; k < q; k++) {
            double tp = base * (double)k;
            for (int64_t i = 0; i < q; i++) {
                double phi = tp * (double)i;
                bool one = phi == 0;
                p->leaf_re[i * q + k] = one ? 1.0 : cos(phi);
                p->leaf_im[i * q + k] = one ? 0.0 : sin(phi);
            }
        }
    }
    p->bytes = sizeof *p + (size_t)(p->slo > 0 ? (int64_t)1 << p->slo : 1) * sizeof(int64_t) +
               (size_t)((int64_t)1 << (s - p->slo)) * sizeof(int64_t) + 2 * (size_t)n * sizeof(double) +
               (q > 1 ? 2 * (size_t)(q * q) * sizeof(double) : 0);
    return p;
}

static fft_plan *plan_get(int64_t n);
static void plan_put(fft_plan *p);

static fft_plan *plan_build_bluestein(int64_t n) {
    fft_plan *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n;
    p->bluestein = true;
    int64_t m = 1;
    while (m < 2 * n - 1) m *= 2;
    p->m = m;
    p->sub = plan_get(m);
    p->w_re = malloc((size_t)n * sizeof(double));
    p->w_im = malloc((size_t)n * sizeof(double));
    p->b_re = malloc((size_t)m * sizeof(double));
    p->b_im = malloc((size_t)m * sizeof(double));
    double *tre = malloc((size_t)m * sizeof(double)), *tim = malloc((size_t)m * sizeof(double));
    if (!p->sub || !p->w_re || !p->w_im || !p->b_re || !p->b_im || !tre || !tim) {
        free(tre);
        free(tim);
        if (p->sub) plan_put(p->sub);
        p->sub = NULL;
        plan_free(p);
        return NULL;
    }
    for (int64_t k = 0; k < n; k++) {
        double theta = -M_PI * (double)(k * k) / (double)n;
        p->w_re[k] = cos(theta);
        p->w_im[k] = sin(theta);
    }
    /* b = conj(w) ++ zeros ++ reverse(conj(w)[1..n-1]) */
    for (int64_t j = 0; j < m; j++) {
        double br = 0, bi = 0;
        if (j < n) {
            br = p->w_re[j];
            bi = -p->w_im[j];
        } else if (j > m - n) {
            br = p->w_re[m - j];
            bi = -p->w_im[m - j];
        }
        p->b_re[j] = br;
        p->b_im[j] = bi;
    }
    fft_natural(p->sub, p->b_re, p->b_im, tre, tim);
    free(tre);
    free(tim);
    p->bytes = sizeof *p + 2 * (size_t)(n + m) * sizeof(double);
    return p;
}

/* The cache: plans are immutable once built and refcounted, so a plan
 * evicted while in use lives until its last user puts it back. At most
 * PLAN_CACHE plans and PLAN_BUDGET bytes are kept (least recently used
 * go first); a plan larger than the budget is used once and freed. */
#define PLAN_CACHE 16
#define PLAN_BUDGET ((size_t)128 << 20)
static pthread_mutex_t plan_lock = PTHREAD_MUTEX_INITIALIZER;
static fft_plan *plan_cache[PLAN_CACHE];
static size_t plan_cached_bytes;
static uint64_t plan_clock;

static void plan_release(fft_plan *p) {
    if (p->sub) plan_put(p->sub);
    plan_free(p);
}

EMI_PLAN_CACHE_PUT(plan_put, fft_plan, plan_lock, plan_release)

static bool plan_of_length(const fft_plan *p, int64_t n) { return p->n == n; }
EMI_PLAN_CACHE_FIND(cached_plan, fft_plan, int64_t, plan_cache, PLAN_CACHE, plan_lock, plan_clock, plan_of_length)

static fft_plan *plan_get(int64_t n) {
    fft_plan *hit = cached_plan(n);
    if (hit) return hit;
    bool direct = is_pow2(n) || n < 1024;
    fft_plan *p = direct ? plan_build_direct(n) : plan_build_bluestein(n);
    if (!p) return NULL;
    p->refs = 1;
    fft_plan *evicted[PLAN_CACHE];
    int nev = 0;
    pthread_mutex_lock(&plan_lock);
    bool present = false;
    for (int i = 0; i < PLAN_CACHE; i++) present |= plan_cache[i] && plan_of_length(plan_cache[i], n);
    /* (present: another thread built it meanwhile; ours stays private) */
    if (!present && p->bytes <= PLAN_BUDGET) {
        for (;;) {
            int free_slot = -1, lru = -1;
            for (int i = 0; i < PLAN_CACHE; i++) {
                if (!plan_cache[i]) {
                    if (free_slot < 0) free_slot = i;
                    continue;
                }
                if (lru < 0 || plan_cache[i]->used < plan_cache[lru]->used) lru = i;
            }
            if (free_slot >= 0 && plan_cached_bytes + p->bytes <= PLAN_BUDGET) {
                plan_cache[free_slot] = p;
                plan_cached_bytes += p->bytes;
                p->refs++;
                p->used = ++plan_clock;
                break;
            }
            if (lru < 0) break;
            fft_plan *e = plan_cache[lru];
            plan_cache[lru] = NULL;
            plan_cached_bytes -= e->bytes;
            if (--e->refs == 0) evicted[nev++] = e;
        }
    }
    pthread_mutex_unlock(&plan_lock);
    for (int i = 0; i < nev; i++) plan_release(evicted[i]);
    return p;
}

/* ---- the transform ----------------------------------------------------- */

/* Direct DFT of the odd-length leaf x (q points) into (yr, yi): X_0 is
 * the plain sum; X_k = sum_i x_i * exp(i phi_ki) with the terms added in
 * increasing i, the first term taken as is (Enum.reduce). All k advance
 * together so the loop over k vectorizes; each k keeps its own order. */
static void leaf_dft(const fft_plan *p, const double *xr, const double *xi, double *yr, double *yi) {
    int64_t q = p->q;
    for (int64_t k = 1; k < q; k++) {
        double c = p->leaf_re[k], s = p->leaf_im[k]; /* i = 0 */
        yr[k] = xr[0] * c - xi[0] * s;
        yi[k] = xi[0] * c + xr[0] * s;
    }
    for (int64_t i = 1; i < q; i++) {
        const double *cr = p->leaf_re + i * q, *ci = p->leaf_im + i * q;
        double ar = xr[i], ai = xi[i];
#pragma omp simd
        for (int64_t k = 1; k < q; k++) {
            double tr = ar * cr[k] - ai * ci[k], ti = ai * cr[k] + ar * ci[k];
            yr[k] = tr + yr[k];
            yi[k] = ti + yi[k];
        }
    }
    double sr = xr[0], si = xi[0];
    for (int64_t i = 1; i < q; i++) {
        sr = xr[i] + sr;
        si = xi[i] + si;
    }
    yr[0] = sr;
    yi[0] = si;
}

static inline int64_t tw_offset(const fft_plan *p, int t) { return p->q * (((int64_t)1 << (t - 1)) - 1); }

/* One radix-2 stage (group length L = q 2^t) over [lo, hi):
 * t = tw * odd; even + t; even - t, as the reference combines. */
static void stage1(const fft_plan *p, int t, double *re, double *im, int64_t lo, int64_t hi) {
    int64_t L = p->q << t, h = L / 2;
    const double *wr = p->tw_re + tw_offset(p, t), *wi = p->tw_im + tw_offset(p, t);
    for (int64_t g = lo; g < hi; g += L) {
        double *er = re + g, *ei = im + g, *or_ = re + g + h, *oi = im + g + h;
#pragma omp simd
        for (int64_t k = 0; k < h; k++) emi_fft_butterfly(wr[k], wi[k], er + k, ei + k, or_ + k, oi + k);
    }
}

/* Stages t and t + 1 in one pass over [lo, hi): exactly stage1(t) then
 * stage1(t + 1), with each element loaded and stored once. */
static void stage2(const fft_plan *p, int t, double *re, double *im, int64_t lo, int64_t hi) {
    int64_t L = p->q << t, h = L / 2;
    const double *w1r = p->tw_re + tw_offset(p, t), *w1i = p->tw_im + tw_offset(p, t);
    const double *w2r = p->tw_re + tw_offset(p, t + 1), *w2i = p->tw_im + tw_offset(p, t + 1);
    for (int64_t g = lo; g < hi; g += 2 * L) {
        double *r0 = re + g, *i0 = im + g, *r1 = re + g + h, *i1 = im + g + h;
        double *r2 = re + g + L, *i2 = im + g + L, *r3 = re + g + L + h, *i3 = im + g + L + h;
#pragma omp simd
        for (int64_t k = 0; k < h; k++) {
            double c = w1r[k], s = w1i[k];
            double a0r = r0[k], a0i = i0[k], a1r = r1[k], a1i = i1[k];
            double a2r = r2[k], a2i = i2[k], a3r = r3[k], a3i = i3[k];
            double t1r = c * a1r - s * a1i, t1i = s * a1r + c * a1i;
            double t3r = c * a3r - s * a3i, t3i = s * a3r + c * a3i;
            double b0r = a0r + t1r, b0i = a0i + t1i, b1r = a0r - t1r, b1i = a0i - t1i;
            double b2r = a2r + t3r, b2i = a2i + t3i, b3r = a2r - t3r, b3i = a2i - t3i;
            double c2 = w2r[k], s2 = w2i[k], c3 = w2r[k + h], s3 = w2i[k + h];
            double ur = c2 * b2r - s2 * b2i, ui = s2 * b2r + c2 * b2i;
            double vr = c3 * b3r - s3 * b3i, vi = s3 * b3r + c3 * b3i;
            r0[k] = b0r + ur;
            i0[k] = b0i + ui;
            r2[k] = b0r - ur;
            i2[k] = b0i - ui;
            r1[k] = b1r + vr;
            i1[k] = b1i + vi;
            r3[k] = b1r - vr;
            i3[k] = b1i - vi;
        }
    }
}

/* Stages first..last over [lo, hi), two at a time. */
static void stages(const fft_plan *p, int first, int last, double *re, double *im, int64_t lo, int64_t hi) {
    int t = first;
    for (; t + 1 <= last; t += 2) stage2(p, t, re, im, lo, hi);
    if (t == last) stage1(p, t, re, im, lo, hi);
}

/* Elements per cache block for the early stages (double re + im). */
#define BLOCK_ELEMS 8192

/* Transforms (re, im), already in leaf order, in place; (tre, tim) is
 * scratch of q points. */
static void fft_stages(const fft_plan *p, double *re, double *im, double *tre, double *tim) {
    int64_t n = p->n, q = p->q;
    if (q > 1)
        for (int64_t b = 0; b < n; b += q) {
            leaf_dft(p, re + b, im + b, tre, tim);
            memcpy(re + b, tre, (size_t)q * sizeof(double));
            memcpy(im + b, tim, (size_t)q * sizeof(double));
        }
    /* stages whose groups fit in a block run block by block */
    int tb = 0;
    while (tb < p->s && (q << (tb + 1)) <= BLOCK_ELEMS) tb++;
    int64_t blk = q << tb;
    if (tb > 0)
        for (int64_t b = 0; b < n; b += blk) stages(p, 1, tb, re, im, b, b + blk);
    if (tb < p->s) stages(p, tb + 1, p->s, re, im, 0, n);
}

/* Natural-order (xr, xi) of p->n points -> leaf order (re, im). The
 * power-of-two part is a bit reversal done as a blocked transpose: with
 * r = hi 2^slo + lo, rev(r) = rev_lo(lo) 2^(s-slo) + rev_hi(hi), so for
 * each h2 = rev_hi(hi) the reads x[rev_lo(lo) H + h2] touch the same 2^slo
 * cache lines as for h2 - 1, and the writes are a contiguous row. */
static void to_leaf_order(const fft_plan *p, const double *xr, const double *xi, double *re, double *im) {
    int64_t q = p->q, H = (int64_t)1 << (p->s - p->slo), B = (int64_t)1 << p->slo;
    if (q == 1) {
        for (int64_t h2 = 0; h2 < H; h2++) {
            double *dr = re + p->rev_hi[h2] * B, *di = im + p->rev_hi[h2] * B;
            for (int64_t lo = 0; lo < B; lo++) {
                int64_t src = p->rev_lo[lo] * H + h2;
                dr[lo] = xr[src];
                di[lo] = xi[src];
            }
        }
        return;
    }
    int64_t P = H * B;
    for (int64_t hi = 0; hi < H; hi++)
        for (int64_t lo = 0; lo < B; lo++) {
            int64_t r = hi * B + lo, src = p->rev_lo[lo] * H + p->rev_hi[hi];
            for (int64_t i = 0; i < q; i++) {
                re[r * q + i] = xr[src + P * i];
                im[r * q + i] = xi[src + P * i];
            }
        }
}

/* fft_list of a direct plan on natural-order data, in place; (tre, tim)
 * scratch of n points. */
static void fft_natural(const fft_plan *p, double *re, double *im, double *tre, double *tim) {
    to_leaf_order(p, re, im, tre, tim);
    memcpy(re, tre, (size_t)p->n * sizeof(double));
    memcpy(im, tim, (size_t)p->n * sizeof(double));
    fft_stages(p, re, im, tre, tim);
}

/* Scratch (doubles) a Bluestein line needs besides its input and output. */
static int64_t bluestein_scratch(const fft_plan *p) { return 6 * p->m; }

/* Bluestein's transform of natural-order (xr, xi) (n points) into (yr, yi). */
static void bluestein_line(const fft_plan *p, const double *xr, const double *xi, double *yr, double *yi,
                           double *scratch) {
    int64_t n = p->n, m = p->m;
    const fft_plan *sp = p->sub;
    double *ar = scratch, *ai = scratch + m, *cr = scratch + 2 * m, *ci = scratch + 3 * m;
    double *tr = scratch + 4 * m, *ti = scratch + 5 * m;
    /* a = w . x, zero-padded to m */
    for (int64_t j = 0; j < m; j++) {
        if (j < n) {
            double wr = p->w_re[j], wi = p->w_im[j];
            tr[j] = wr * xr[j] - wi * xi[j];
            ti[j] = wi * xr[j] + wr * xi[j];
        } else {
            tr[j] = 0;
            ti[j] = 0;
        }
    }
    to_leaf_order(sp, tr, ti, ar, ai);
    fft_stages(sp, ar, ai, tr, ti);
    /* c = conj(A . B): the conj of Nx's ifft_list */
#pragma omp simd
    for (int64_t j = 0; j < m; j++) {
        double xr2 = ar[j], xi2 = ai[j], br = p->b_re[j], bi = p->b_im[j];
        tr[j] = xr2 * br - xi2 * bi;
        ti[j] = -(xi2 * br + xr2 * bi);
    }
    to_leaf_order(sp, tr, ti, cr, ci);
    fft_stages(sp, cr, ci, tr, ti);
    /* r = conj(.) / m through Complex.divide: (re * m) / (m * m); then r . w */
    double mm = (double)m * (double)m, md = (double)m;
#pragma omp simd
    for (int64_t k = 0; k < n; k++) {
        double rr = (cr[k] * md) / mm, ri = (-ci[k] * md) / mm;
        double wr = p->w_re[k], wi = p->w_im[k];
        yr[k] = rr * wr - ri * wi;
        yi[k] = ri * wr + rr * wi;
    }
}

/* ---- the kernel -------------------------------------------------------- */

typedef struct line_geom {
    int rank, axis;
    const int64_t *shape;
    const int64_t *sstrides; /* src strides */
    int64_t inner;           /* product of dst dims after the axis */
    int64_t keep;            /* dst points along the axis */
} line_geom;

/* Offset (elements) in src of the start of line `li`. */
static int64_t src_line_offset(const line_geom *g, int64_t li) {
    int64_t off = 0;
    for (int d = g->rank - 1; d >= 0; d--) {
        if (d == g->axis) continue;
        int64_t dim = g->shape[d];
        off += (li % dim) * g->sstrides[d];
        li /= dim;
    }
    return off;
}

/* The element types of a transform: real f32/f64 and complex c64/c128,
 * each case read through dtype_scalars.h's helpers. */
#define FFT_TYPES(X) EMI_DTYPES_NATIVE_FLOAT(X) EMI_DTYPES_COMPLEX(X)

/* Reads up to `count` points of the line at `base` (stride in elements)
 * into (xr, xi), zero-filling up to `total`. */
static void gather(emily_dtype dt, const void *base, int64_t stride, int64_t count, int64_t total, double *xr,
                   double *xi) {
    switch (dt) {
// clang-format off
#define GATHER(ENUM, sfx, T)                                                           \
    case EMILY_##ENUM: {                                                               \
        const T *x = base;                                                             \
        for (int64_t i = 0; i < count; i++) {                                          \
            xr[i] = emi_to_f64_##sfx(x[i * stride]);                                   \
            xi[i] = emi_im_of_##sfx(x[i * stride]);                                    \
        }                                                                              \
        break;                                                                         \
    }
        // clang-format on
        FFT_TYPES(GATHER)
#undef GATHER
    default: break;
    }
    for (int64_t i = count; i < total; i++) {
        xr[i] = 0;
        xi[i] = 0;
    }
}

static inline double clean(double x, double eps) { return fabs(x) <= eps ? 0.0 : x; }

/* Writes `count` points (yr, yi), |x| <= eps written as 0, to the line
 * at `base`: real types take the real parts, complex parts are rounded
 * to the part type. */
static void scatter(emily_dtype dt, void *base, int64_t stride, int64_t count, const double *yr, const double *yi,
                    double eps) {
    switch (dt) {
// clang-format off
#define SCATTER_REAL(ENUM, sfx, T)                                                     \
    case EMILY_##ENUM: {                                                               \
        T *y = base;                                                                   \
        for (int64_t k = 0; k < count; k++) y[k * stride] = (T)clean(yr[k], eps);      \
        break;                                                                         \
    }
#define SCATTER_COMPLEX(ENUM, sfx, T)                                                  \
    case EMILY_##ENUM: {                                                               \
        T *y = base;                                                                   \
        for (int64_t k = 0; k < count; k++) {                                          \
            y[k * stride].re = clean(yr[k], eps);                                      \
            y[k * stride].im = clean(yi[k], eps);                                      \
        }                                                                              \
        break;                                                                         \
    }
        // clang-format on
        EMI_DTYPES_NATIVE_FLOAT(SCATTER_REAL)
        EMI_DTYPES_COMPLEX(SCATTER_COMPLEX)
#undef SCATTER_REAL
#undef SCATTER_COMPLEX
    default: break;
    }
}

/* Element `idx` of a line (f32/f64 real, c64/c128 complex). */
static inline void read_point(emily_dtype dt, const void *base, int64_t off, double *r, double *i) {
    switch (dt) {
// clang-format off
#define READ_POINT(ENUM, sfx, T)                                                       \
    case EMILY_##ENUM: {                                                               \
        T x = ((const T *)base)[off];                                                  \
        *r = emi_to_f64_##sfx(x);                                                      \
        *i = emi_im_of_##sfx(x);                                                       \
        break;                                                                         \
    }
        // clang-format on
        FFT_TYPES(READ_POINT)
#undef READ_POINT
    default: break;
    }
}

/* Gathers a line straight into a direct plan's leaf order: point j is
 * src[j] for j < take and 0 after; conjugated when `conj`. */
static void gather_leaf(const fft_plan *p, emily_dtype dt, const void *base, int64_t stride, int64_t take, bool conj,
                        double *re, double *im) {
    int64_t q = p->q, H = (int64_t)1 << (p->s - p->slo), B = (int64_t)1 << p->slo, P = H * B;
    double sign = conj ? -1.0 : 1.0;
    for (int64_t hi = 0; hi < H; hi++) {
        int64_t h2 = q == 1 ? hi : p->rev_hi[hi];
        int64_t row = q == 1 ? p->rev_hi[hi] : hi;
        for (int64_t lo = 0; lo < B; lo++) {
            int64_t src = p->rev_lo[lo] * H + h2, r = row * B + lo;
            for (int64_t i = 0; i < q; i++) {
                int64_t j = src + P * i;
                double xr = 0, xi = 0;
                if (j < take) read_point(dt, base, j * stride, &xr, &xi);
                re[r * q + i] = xr;
                im[r * q + i] = sign * xi;
            }
        }
    }
}

/* (Both precisions: the CPU's transform is the reference's.) */
static emily_status cpu_fft(emily_tensor *dst, const emily_tensor *src, int axis, int64_t n, emily_fft_mode mode,
                            double eps, emily_dot_precision precision) {
    (void)precision;
    if (n < 1) return emily_error(EMILY_ERR_ARGUMENT, "fft: length must be positive, got %lld", (long long)n);
    int64_t len_in = src->shape[axis];
    line_geom g = {.rank = src->rank,
                   .axis = axis,
                   .shape = src->shape,
                   .sstrides = src->strides,
                   .inner = 1,
                   .keep = dst->shape[axis]};
    for (int d = axis + 1; d < dst->rank; d++) g.inner *= dst->shape[d];
    int64_t lines = g.keep ? dst->size / g.keep : 0;
    if (lines == 0 || g.keep == 0) return EMILY_OK;
    fft_plan *p = plan_get(n);
    if (!p)
        return emily_error(EMILY_ERR_MEMORY, "fft: out of host memory planning a length-%lld transform", (long long)n);
    bool inverse = mode != EMILY_FFT_FORWARD, hermitian = mode == EMILY_FFT_INVERSE_REAL;
    /* hermitian: the half spectrum has h points; the full line is built */
    int64_t h = n / 2 + 1, take = hermitian ? (len_in < h ? len_in : h) : (len_in < n ? len_in : n);
    bool natural = p->bluestein || hermitian; /* needs the line in natural order first */
    size_t es = emily_dtype_size(src->dtype), ds = emily_dtype_size(dst->dtype);
    const char *sbase = emily_tensor_base(src);
    char *dbase = emily_tensor_base(dst);
    int64_t sstride = src->strides[axis];
    int64_t per_line = 2 * n + (natural ? 2 * n : 0) + (p->bluestein ? bluestein_scratch(p) : 2 * p->q);
    bool line_parallel = lines > 1 && (double)lines * (double)n >= 32768;
    int failed = 0;
#pragma omp parallel if (line_parallel) reduction(| : failed)
    {
        double *buf = malloc((size_t)per_line * sizeof(double));
        if (!buf) failed = 1;
#pragma omp for schedule(static)
        for (int64_t li = 0; li < lines; li++) {
            if (!buf) continue;
            double *yr = buf, *yi = buf + n, *xr = buf + 2 * n, *xi = buf + 3 * n;
            double *scratch = buf + (natural ? 4 * n : 2 * n);
            /* an empty input (no memory, take = 0) is all padding */
            const char *sp = sbase ? sbase + (size_t)src_line_offset(&g, li) * es : NULL;
            if (!natural) {
                gather_leaf(p, src->dtype, sp, sstride, take, inverse, yr, yi);
                fft_stages(p, yr, yi, scratch, scratch + p->q);
            } else {
                gather(src->dtype, sp, sstride, take, n, xr, xi);
                if (hermitian)
                    for (int64_t j = 0; h + j < n; j++) { /* conj(x[n - h - j]) at h + j */
                        xr[h + j] = xr[n - h - j];
                        xi[h + j] = -xi[n - h - j];
                    }
                if (inverse)
                    for (int64_t i = 0; i < n; i++) xi[i] = -xi[i];
                if (p->bluestein) {
                    bluestein_line(p, xr, xi, yr, yi, scratch);
                } else {
                    to_leaf_order(p, xr, xi, yr, yi);
                    fft_stages(p, yr, yi, scratch, scratch + p->q);
                }
            }
            if (inverse) {
                /* conj, then Complex.divide by n: (re * n) / (n * n) */
                double nd = (double)n, nn = nd * nd;
                for (int64_t k = 0; k < g.keep; k++) {
                    yr[k] = (yr[k] * nd) / nn;
                    yi[k] = (-yi[k] * nd) / nn;
                }
            }
            int64_t outer = li / g.inner, in = li % g.inner;
            char *dp = dbase + (size_t)(outer * g.keep * g.inner + in) * ds;
            scatter(dst->dtype, dp, g.inner, g.keep, yr, yi, eps);
        }
        free(buf);
    }
    plan_put(p);
    if (failed) return emily_error(EMILY_ERR_MEMORY, "fft: out of host memory for a length-%lld line", (long long)n);
    return EMILY_OK;
}

/* ---- the tables for other devices (core/kernels.h) ---------------------- */

emily_status emi_fft_tables_get(int64_t n, emi_fft_tables *out) {
    if (n < 1) return emily_error(EMILY_ERR_ARGUMENT, "fft: length must be positive, got %lld", (long long)n);
    fft_plan *p = plan_get(n);
    if (!p)
        return emily_error(EMILY_ERR_MEMORY, "fft: out of host memory planning a length-%lld transform", (long long)n);
    const fft_plan *d = p->bluestein ? p->sub : p;
    *out = (emi_fft_tables){.n = n,
                            .bluestein = p->bluestein,
                            .len = d->n,
                            .q = d->q,
                            .s = d->s,
                            .tw_re = d->tw_re,
                            .tw_im = d->tw_im,
                            .leaf_re = d->leaf_re,
                            .leaf_im = d->leaf_im,
                            .m = p->m,
                            .w_re = p->w_re,
                            .w_im = p->w_im,
                            .b_re = p->b_re,
                            .b_im = p->b_im,
                            .plan = p};
    return EMILY_OK;
}

void emi_fft_tables_put(emi_fft_tables *t) {
    if (!t || !t->plan) return;
    plan_put(t->plan);
    t->plan = NULL;
}

const struct emily_fft_kernels emi_cpu_fft_kernels = {
    .fft = cpu_fft,
};
