/* CPU kernels: cumulative family (sum, product, max, min along an axis).
 *
 * src and dst are contiguous, viewed as [outer, n, inner]. Integers wrap
 * (64-bit accumulators, low bits stored); f32, f64 and c128 accumulate
 * in f64 (parts), each output rounded once. Float max and min, and every
 * f16, bf16 and c64 scan, replay Nx.BinaryBackend's associative scan
 * exactly (see tree_scan below).
 *
 * f32/f64 sums have fast paths: rows along the last axis are split into
 * fixed chunks whose f64 totals are added first, so a single long row
 * runs on every thread (the chunking, not the thread count, fixes the
 * order of additions: results do not depend on the machine). */
#include <stdlib.h>
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/element_access.h"
#include "core/scalar_binary.h"
#include "core/kernels.h"
#include "core/ordered_fold.h"

#define CUM_BLOCK 256              /* inner positions per task of the generic path */
#define CUM_CHUNK EMI_CUMSUM_CHUNK /* elements per chunk of a long row */

/* ---- fast paths: f32 / f64 sums ---------------------------------------
 * Accumulators start at -0.0, the exact identity of IEEE addition: the
 * reference's scan starts from the first element, so a run of -0.0
 * stays -0.0 (starting from +0.0 would give +0.0). */

#define DEFINE_ROW_SUM(NAME, T)                                                                         \
    static double NAME##_total(const T *x, int64_t n) {                                                 \
        double a0 = -0.0, a1 = -0.0, a2 = -0.0, a3 = -0.0;                                              \
        int64_t i = 0;                                                                                  \
        for (; i + 4 <= n; i += 4) {                                                                    \
            a0 += x[i];                                                                                 \
            a1 += x[i + 1];                                                                             \
            a2 += x[i + 2];                                                                             \
            a3 += x[i + 3];                                                                             \
        }                                                                                               \
        for (; i < n; i++) a0 += x[i];                                                                  \
        return (a0 + a1) + (a2 + a3);                                                                   \
    }                                                                                                   \
    /* forward (step 1) or reverse (step -1) running sum from acc */                                    \
    static void NAME##_run(const T *x, T *y, int64_t n, double acc, int rev) {                          \
        if (!rev)                                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                           \
                acc += x[i];                                                                            \
                y[i] = (T)acc;                                                                          \
            }                                                                                           \
        else                                                                                            \
            for (int64_t i = n - 1; i >= 0; i--) {                                                      \
                acc += x[i];                                                                            \
                y[i] = (T)acc;                                                                          \
            }                                                                                           \
    }                                                                                                   \
    static emily_status NAME(T *dst, const T *src, int64_t outer, int64_t n, int64_t inner, bool rev) { \
        if (inner == 1 && n >= 2 * CUM_CHUNK) {                                                         \
            int64_t nch = (n + CUM_CHUNK - 1) / CUM_CHUNK;                                              \
            double *tot = malloc(sizeof(double) * (size_t)nch);                                         \
            if (!tot) return emily_error(EMILY_ERR_MEMORY, "cumulative_sum: out of host memory");       \
            for (int64_t r = 0; r < outer; r++) {                                                       \
                const T *x = src + r * n;                                                               \
                T *y = dst + r * n;                                                                     \
                _Pragma("omp parallel for schedule(static)") for (int64_t c = 0; c < nch; c++) {        \
                    int64_t b = c * CUM_CHUNK, e = b + CUM_CHUNK < n ? b + CUM_CHUNK : n;               \
                    tot[c] = NAME##_total(x + b, e - b);                                                \
                }                                                                                       \
                /* exclusive prefix in the scan's direction */                                          \
                double run = -0.0;                                                                      \
                for (int64_t k = 0; k < nch; k++) {                                                     \
                    int64_t c = rev ? nch - 1 - k : k;                                                  \
                    double t = tot[c];                                                                  \
                    tot[c] = run;                                                                       \
                    run += t;                                                                           \
                }                                                                                       \
                _Pragma("omp parallel for schedule(static)") for (int64_t c = 0; c < nch; c++) {        \
                    int64_t b = c * CUM_CHUNK, e = b + CUM_CHUNK < n ? b + CUM_CHUNK : n;               \
                    NAME##_run(x + b, y + b, e - b, tot[c], rev);                                       \
                }                                                                                       \
            }                                                                                           \
            free(tot);                                                                                  \
            return EMILY_OK;                                                                            \
        }                                                                                               \
        if (inner == 1) {                                                                               \
            EMILY_PAR_FOR(outer *n >= EMILY_PARALLEL_MIN && outer > 1, r, outer,                        \
                          { NAME##_run(src + r * n, dst + r * n, n, -0.0, rev); });                     \
            return EMILY_OK;                                                                            \
        }                                                                                               \
        int64_t nb = (inner + CUM_BLOCK - 1) / CUM_BLOCK;                                               \
        EMILY_PAR_FOR(outer *n *inner >= EMILY_PARALLEL_MIN && outer * nb > 1, task, outer * nb, {      \
            int64_t r = task / nb, j0 = (task % nb) * CUM_BLOCK;                                        \
            int64_t m = inner - j0 < CUM_BLOCK ? inner - j0 : CUM_BLOCK;                                \
            double acc[CUM_BLOCK];                                                                      \
            for (int64_t j = 0; j < m; j++) acc[j] = -0.0;                                              \
            for (int64_t k = 0; k < n; k++) {                                                           \
                int64_t kk = rev ? n - 1 - k : k;                                                       \
                const T *x = src + (r * n + kk) * inner + j0;                                           \
                T *y = dst + (r * n + kk) * inner + j0;                                                 \
                for (int64_t j = 0; j < m; j++) {                                                       \
                    acc[j] += x[j];                                                                     \
                    y[j] = (T)acc[j];                                                                   \
                }                                                                                       \
            }                                                                                           \
        });                                                                                             \
        return EMILY_OK;                                                                                \
    }

#define ROW_SUM(ENUM, sfx, T) DEFINE_ROW_SUM(sum_##sfx, T)
EMI_DTYPES_NATIVE_FLOAT(ROW_SUM)

/* ---- exact tree scan ------------------------------------------------------
 * Nx.BinaryBackend has no cumulative kernels: Nx runs an associative scan
 * of elementwise Nx ops, each rounding to the tensor's type. Where that
 * order shows (the sign of tied zeros in float max/min; the per-step
 * rounding of f16, bf16 and c64 sums and products, which moves results
 * by more than the output type's last bit) the scan is replayed exactly. */

typedef struct cv {
    double re, im;
} cv;

typedef cv (*pair_fn)(cv a, cv b, emily_dtype dt);

/* In place, Nx's associative scan of x[0..n): the reduction applied to
 * (odd, even) pairs, the half-size scan of those, then the even
 * positions. tmp has room for n values. */
static void tree_scan(cv *x, int64_t n, cv *tmp, pair_fn f, emily_dtype dt) {
    if (n < 2) return;
    int64_t h = n / 2;
    cv *r = tmp;
    for (int64_t k = 0; k < h; k++) r[k] = f(x[2 * k + 1], x[2 * k], dt);
    tree_scan(r, h, tmp + h, f, dt);
    if (n % 2 == 0) {
        for (int64_t k = 0; k < h; k++) {
            if (k > 0) x[2 * k] = f(r[k - 1], x[2 * k], dt);
            x[2 * k + 1] = r[k];
        }
    } else {
        for (int64_t k = 0; k < h; k++) {
            x[2 * k + 1] = r[k];
            x[2 * k + 2] = f(r[k], x[2 * k + 2], dt);
        }
    }
}

/* A value rounded to dt as Nx writes it (parts for complex). */
static cv round_to(cv v, emily_dtype dt) {
    char tmp[16];
    we_store_f(dt, v.re, v.im, tmp);
    cv r = {we_load_f(dt, tmp), we_load_im(dt, tmp)};
    return r;
}

static cv pmax(cv a, cv b, emily_dtype dt) {
    (void)dt;
    cv r = {emily_sb_max_f64(a.re, b.re), 0.0};
    return r;
}
static cv pmin(cv a, cv b, emily_dtype dt) {
    (void)dt;
    cv r = {emily_sb_min_f64(a.re, b.re), 0.0};
    return r;
}
static cv padd(cv a, cv b, emily_dtype dt) {
    emily_sb_complex z = emily_sb_cadd(emily_sb_cmake(a.re, a.im), emily_sb_cmake(b.re, b.im));
    cv r = {z.re, z.im};
    return round_to(r, dt);
}
static cv pmul(cv a, cv b, emily_dtype dt) {
    cv r;
    if (emily_dtype_is_complex(dt)) {
        emily_sb_complex z = emily_sb_cmultiply(emily_sb_cmake(a.re, a.im), emily_sb_cmake(b.re, b.im));
        r.re = z.re;
        r.im = z.im;
    } else {
        r.re = a.re * b.re;
        r.im = 0.0;
    }
    return round_to(r, dt);
}

static emily_status tree_rows(emily_cumulative_op op, emily_tensor *dst, const emily_tensor *src, int64_t outer,
                              int64_t n, int64_t inner, bool rev) {
    emily_dtype dt = src->dtype;
    size_t es = emily_dtype_size(dt);
    const char *sb = emily_tensor_base(src);
    char *db = emily_tensor_base(dst);
    pair_fn f = op == EMILY_CUMULATIVE_MAX   ? pmax
                : op == EMILY_CUMULATIVE_MIN ? pmin
                : op == EMILY_CUMULATIVE_SUM ? padd
                                             : pmul;
    int64_t rows = outer * inner;
    bool par = rows > 1 && rows * n >= EMILY_PARALLEL_MIN;
    int failed = 0;
    EMILY_PAR_FOR(par, row, rows, {
        cv *buf = malloc(sizeof(cv) * (size_t)(2 * n));
        if (!buf) {
            _Pragma("omp atomic write") failed = 1;
        } else {
            int64_t r = row / inner, j = row % inner;
            for (int64_t k = 0; k < n; k++) {
                int64_t kk = rev ? n - 1 - k : k;
                const char *e = sb + ((r * n + kk) * inner + j) * (int64_t)es;
                buf[k].re = we_load_f(dt, e);
                buf[k].im = we_load_im(dt, e);
            }
            tree_scan(buf, n, buf + n, f, dt);
            for (int64_t k = 0; k < n; k++) {
                int64_t kk = rev ? n - 1 - k : k;
                we_store_f(dt, buf[k].re, buf[k].im, db + ((r * n + kk) * inner + j) * (int64_t)es);
            }
            free(buf);
        }
    });
    if (failed) return emily_error(EMILY_ERR_MEMORY, "cumulative: out of host memory for a row of %lld", (long long)n);
    return EMILY_OK;
}

/* ---- generic path -------------------------------------------------------- */

static emily_status generic_scan(emily_cumulative_op op, emily_tensor *dst, const emily_tensor *src, int64_t outer,
                                 int64_t n, int64_t inner, bool rev) {
    emily_dtype dt = src->dtype;
    int cls = we_class(dt);
    bool uns = we_unsigned(dt);
    size_t es = emily_dtype_size(dt);
    const char *sb = emily_tensor_base(src);
    char *db = emily_tensor_base(dst);
    int64_t nb = (inner + CUM_BLOCK - 1) / CUM_BLOCK;
    bool par = outer * nb > 1 && outer * n * inner >= EMILY_PARALLEL_MIN;
    EMILY_PAR_FOR(par, task, outer * nb, {
        int64_t r = task / nb, j0 = (task % nb) * CUM_BLOCK;
        int64_t m = inner - j0 < CUM_BLOCK ? inner - j0 : CUM_BLOCK;
        uint64_t ai[CUM_BLOCK];
        double ar[CUM_BLOCK], aim[CUM_BLOCK];
        for (int64_t k = 0; k < n; k++) {
            int64_t kk = rev ? n - 1 - k : k;
            int64_t base = (r * n + kk) * inner + j0;
            for (int64_t j = 0; j < m; j++) {
                const char *e = sb + (base + j) * (int64_t)es;
                char *out = db + (base + j) * (int64_t)es;
                if (cls == 0) {
                    uint64_t x = we_load_int(dt, e);
                    if (k == 0) ai[j] = x;
                    else if (op == EMILY_CUMULATIVE_SUM) ai[j] += x;
                    else if (op == EMILY_CUMULATIVE_PRODUCT) ai[j] *= x;
                    else if (op == EMILY_CUMULATIVE_MAX) {
                        if (uns ? x > ai[j] : (int64_t)x > (int64_t)ai[j]) ai[j] = x;
                    } else if (uns ? x < ai[j] : (int64_t)x < (int64_t)ai[j]) {
                        ai[j] = x;
                    }
                    we_store_int(dt, ai[j], out);
                } else if (cls == 1) {
                    double x = we_load_f(dt, e);
                    if (k == 0) ar[j] = x;
                    else if (op == EMILY_CUMULATIVE_SUM) ar[j] += x;
                    else ar[j] *= x;
                    we_store_f(dt, ar[j], 0.0, out);
                } else {
                    emily_sb_complex x = emily_sb_cmake(we_load_f(dt, e), we_load_im(dt, e));
                    if (k == 0) {
                        ar[j] = x.re;
                        aim[j] = x.im;
                    } else {
                        emily_sb_complex a = emily_sb_cmake(ar[j], aim[j]);
                        a = op == EMILY_CUMULATIVE_SUM ? emily_sb_cadd(a, x) : emily_sb_cmultiply(a, x);
                        ar[j] = a.re;
                        aim[j] = a.im;
                    }
                    we_store_f(dt, ar[j], aim[j], out);
                }
            }
        }
    });
    return EMILY_OK;
}

/* f16, bf16 and c64: types whose per-step rounding moves a scan's result
 * by more than their last bit, so Nx's tree order is replayed. c128
 * products too: the signs of zero parts of a complex product depend on
 * the order of the multiplications ((-0-0i)^4 is +0+0i in the tree's
 * order, -0+0i from left to right). */
static bool follows_tree_order(emily_cumulative_op op, emily_dtype dt) {
    switch (dt) {
// clang-format off
#define HALF_CASE(ENUM, sfx, T) case EMILY_##ENUM:
        // clang-format on
        EMI_DTYPES_HALF(HALF_CASE)
#undef HALF_CASE
    case EMILY_C64: return true;
    case EMILY_C128: return op == EMILY_CUMULATIVE_PRODUCT;
    default: return false;
    }
}

static emily_status cpu_scan(emily_cumulative_op op, emily_tensor *dst, const emily_tensor *src, int64_t outer,
                             int64_t n, int64_t inner, bool rev) {
    emily_dtype dt = src->dtype;
    /* f32 and f64 sums: the fast paths */
    if (op == EMILY_CUMULATIVE_SUM) {
        switch (dt) {
// clang-format off
#define ROW_SUM_CASE(ENUM, sfx, T) \
    case EMILY_##ENUM: return sum_##sfx(emily_tensor_base(dst), emily_tensor_base(src), outer, n, inner, rev);
            // clang-format on
            EMI_DTYPES_NATIVE_FLOAT(ROW_SUM_CASE)
#undef ROW_SUM_CASE
        default: break;
        }
    }
    if ((op == EMILY_CUMULATIVE_MAX || op == EMILY_CUMULATIVE_MIN) && emily_dtype_is_float(dt))
        return tree_rows(op, dst, src, outer, n, inner, rev);
    if (follows_tree_order(op, dt)) return tree_rows(op, dst, src, outer, n, inner, rev);
    return generic_scan(op, dst, src, outer, n, inner, rev);
}

const struct emily_cumulative_kernels emi_cpu_cumulative_kernels = {
    .scan = cpu_scan,
};
