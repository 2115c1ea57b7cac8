/* CPU kernels: sort, argsort and top_k over the rows of a tensor (see
 * sort.h): one row's passes (records in, sorted, values or positions
 * out, the bits of zeros and NaNs restored), tiles for rows that are
 * strided in memory, and the split of rows, or of one long row's passes,
 * over threads. */
#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "core/scalar_convert.h"
#include "cpu/dtype_scalars.h"
#include "cpu/kernels.h"
#include "cpu/sort/avx512.h"
#include "cpu/sort/sort.h"
#include "cpu/strided.h"
#include "core/kernels.h"

/* ---- one row --------------------------------------------------------------- */

/* First position in sorted keys (width kb) not below v, from lo. */
static int64_t lower_bound(const void *keys, int kb, int64_t n, uint64_t v) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        uint64_t k;
        switch (kb) {
        case 8: k = ((const uint8_t *)keys)[mid]; break;
        case 16: k = ((const uint16_t *)keys)[mid]; break;
        case 32: k = ((const uint32_t *)keys)[mid]; break;
        default: k = ((const uint64_t *)keys)[mid]; break;
        }
        if (k < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Where a float row's zeros and NaNs lie once sorted: their keys lost
 * the sign of the zero and the NaN's payload. */
typedef struct zero_nan_runs {
    int64_t z0, z1, q0, q1;
} zero_nan_runs;

static bool find_zero_nan_runs(emily_dtype dt, const void *keys, int64_t n, bool desc, zero_nan_runs *r) {
    int kb = key_bits(dt);
    uint64_t all = kb == 64 ? UINT64_MAX : ((uint64_t)1 << kb) - 1;
    uint64_t sign = (uint64_t)1 << (kb - 1);
    uint64_t zkey = sign, nkey = all; /* ascending keys of 0.0 and NaN */
    if (desc) {
        zkey = ~zkey & all;
        nkey = 0;
    }
    r->z0 = lower_bound(keys, kb, n, zkey);
    r->z1 = zkey == all ? n : lower_bound(keys, kb, n, zkey + 1);
    r->q0 = lower_bound(keys, kb, n, nkey);
    r->q1 = nkey == all ? n : lower_bound(keys, kb, n, nkey + 1);
    return r->z0 < r->z1 || r->q0 < r->q1;
}

/* The +infinity pattern of a float dtype. */
static uint64_t inf_bits(emily_dtype dt) {
    switch (dt) {
// clang-format off
#define INF_BITS(ENUM, sfx, T) \
    case EMILY_##ENUM: return EMI_INF_BITS(sfx);
        // clang-format on
        EMI_DTYPES_FLOAT(INF_BITS)
#undef INF_BITS
    default: return 0;
    }
}

/* Gives the zeros and NaNs of a written-back row their exact bits, in
 * source order: the order a stable sort leaves equal keys in. */
static void fix_zeros_and_nans(emily_dtype dt, const zero_nan_runs *runs, int64_t n, const char *s, int64_t ss, char *d,
                               int64_t ds) {
    int kb = key_bits(dt);
    uint64_t all = kb == 64 ? UINT64_MAX : ((uint64_t)1 << kb) - 1;
    uint64_t sign = (uint64_t)1 << (kb - 1);
    int64_t z0 = runs->z0, z1 = runs->z1, q0 = runs->q0, q1 = runs->q1;
    size_t es = (size_t)kb / 8;
    uint64_t inf = inf_bits(dt);
    for (int64_t i = 0; i < n && (z0 < z1 || q0 < q1); i++) {
        uint64_t b = 0;
        memcpy(&b, s + (int64_t)(i * ss) * (int64_t)es, es); /* little-endian low bytes */
        uint64_t mag = b & ~sign & all;
        if (mag == 0 && z0 < z1) memcpy(d + (size_t)(z0++ * ds) * es, &b, es);
        else if (mag > inf && q0 < q1) memcpy(d + (size_t)(q0++ * ds) * es, &b, es);
    }
}

/* Writes position p (< 2^63) as element i of an index row of dtype dt. */
static inline void put_index(char *d, emily_dtype dt, int64_t i, uint64_t p) {
    switch (dt) {
    case EMILY_S32: ((int32_t *)d)[i] = (int32_t)(uint32_t)p; break;
    case EMILY_S64: ((int64_t *)d)[i] = (int64_t)p; break;
    case EMILY_U32: ((uint32_t *)d)[i] = (uint32_t)p; break;
    case EMILY_U64: ((uint64_t *)d)[i] = p; break;
    default: emily_sc_store_int((int)dt, p, 1, d + (size_t)i * emily_dtype_size(dt)); break;
    }
}

static void row_positions(emily_dtype idt, rec_mode m, const void *recs, int64_t n, char *d, int64_t ds) {
    if (m == REC_PACKED) {
        const uint64_t *r = recs;
#if HAVE_SORT_AVX512
        if (idt == EMILY_S32 && ds == 1 && emi_sort_use_avx512()) {
            emi_cpu_positions_s32_avx512(r, n, (int32_t *)d);
            return;
        }
#endif
        if (idt == EMILY_S32 && ds == 1) {
            int32_t *o = (int32_t *)d;
            for (int64_t i = 0; i < n; i++) o[i] = (int32_t)(uint32_t)r[i];
        } else {
            for (int64_t i = 0; i < n; i++) put_index(d, idt, i * ds, r[i] & 0xffffffffu);
        }
    } else {
        const pair64 *r = recs;
        for (int64_t i = 0; i < n; i++) put_index(d, idt, i * ds, r[i].idx);
    }
}

/* ---- rows of a tensor ------------------------------------------------------ */

/* The positions of every row: all axes but `axis`, with the strides of
 * the source and of the (contiguous) destination. */
typedef struct row_walk {
    int nd;
    int64_t *shape, *sstride, *dstride;
    int64_t rows;
} row_walk;

static emily_status walk_init(row_walk *w, const emily_tensor *src, const emily_tensor *dst, int axis, const char *op) {
    int r = src->rank;
    w->shape = malloc(sizeof(int64_t) * 3 * ((size_t)r + 1));
    if (!w->shape) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    w->sstride = w->shape + r + 1;
    w->dstride = w->sstride + r + 1;
    w->nd = 0;
    w->rows = 1;
    for (int i = 0; i < r; i++) {
        if (i == axis) continue;
        w->shape[w->nd] = src->shape[i];
        w->sstride[w->nd] = src->strides[i];
        w->dstride[w->nd] = dst->strides[i];
        w->rows *= src->shape[i];
        w->nd++;
    }
    return EMILY_OK;
}

static inline void walk_offsets(const row_walk *w, int64_t row, int64_t *so, int64_t *dso) {
    int64_t s = 0, d = 0;
    for (int i = w->nd - 1; i >= 0; i--) {
        int64_t c = row % w->shape[i];
        row /= w->shape[i];
        s += c * w->sstride[i];
        d += c * w->dstride[i];
    }
    *so = s;
    *dso = d;
}

/* A values sort whose keys can live in the output row itself: it is
 * contiguous and the vector quicksort needs no second buffer. */
static bool sort_in_place(const row_args *a) {
    return a->job == JOB_SORT && a->ds == 1 && emi_sort_simd_sortable(a->dt, REC_KEYS, a->n);
}

/* Scratch bytes one row needs. */
static size_t row_scratch(const row_args *a, int T) {
    size_t n = (size_t)a->n;
    if (a->job == JOB_TOPK && emi_sort_topk_by_heap(a->n, a->k))
        return (size_t)(emi_sort_topk_threads(a, T) + 1) * (size_t)a->k * sizeof(pair64);
    if (sort_in_place(a)) return 0;
    rec_mode m = emi_sort_plan_mode(a->dt, a->n, a->job != JOB_SORT);
    return (emi_sort_simd_sortable(a->dt, m, a->n) ? 1 : 2) * n * emi_sort_rec_size(a->dt, m);
}

/* The linear passes of a row, on positions [lo, hi): records in, keys
 * back to values, positions out. */
static void records_range(const row_args *a, const char *s, rec_mode m, void *out, int64_t lo, int64_t hi) {
    size_t es = emily_dtype_size(a->dt), rs = emi_sort_rec_size(a->dt, m);
    emi_sort_row_records(a->dt, s + lo * a->ss * (int64_t)es, a->ss, hi - lo, lo, a->desc, m,
                         (char *)out + (size_t)lo * rs);
}

static void unkeys_range(const row_args *a, const void *keys, char *d, int64_t lo, int64_t hi) {
    size_t es = emily_dtype_size(a->dt);
    emi_sort_row_unkeys(a->dt, (const char *)keys + (size_t)lo * es, hi - lo, a->desc, d + (size_t)(lo * a->ds) * es,
                        a->ds);
}

static void positions_range(const row_args *a, rec_mode m, const void *recs, char *di, int64_t lo, int64_t hi) {
    size_t is = emily_dtype_size(a->idt), rs = emi_sort_rec_size(a->dt, m);
    row_positions(a->idt, m, (const char *)recs + (size_t)lo * rs, hi - lo, di + (size_t)(lo * a->ds) * is, a->ds);
}

/* sort/argsort of one long row by the vector quicksort on T threads, in
 * one parallel region: records in by slices, the sort as tasks, values
 * or positions out by slices. `out` is d (sort) or di (argsort). */
static void long_row_simd(const row_args *a, const char *s, void *recs, char *out, int T) {
    bool argsort = a->job == JOB_ARGSORT;
    rec_mode m = argsort ? emi_sort_plan_mode(a->dt, a->n, true) : REC_KEYS;
    int64_t n = a->n;
    zero_nan_runs runs;
    bool fix = false;
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        records_range(a, s, m, recs, n * t / nt, n * (t + 1) / nt);
#pragma omp barrier
#pragma omp single
        emi_sort_records(a->dt, m, recs, n, 2, NULL);
        /* the barrier closing `single` waits for every task */
        if (!argsort) {
#pragma omp single
            fix = emily_dtype_is_float(a->dt) && find_zero_nan_runs(a->dt, recs, n, a->desc, &runs);
            unkeys_range(a, recs, out, n * t / nt, n * (t + 1) / nt);
        } else {
            positions_range(a, m, recs, out, n * t / nt, n * (t + 1) / nt);
        }
    }
    if (fix) fix_zeros_and_nans(a->dt, &runs, n, s, a->ss, out, a->ds);
}

/* Sorts one row: source at soff, outputs at doff (elements). */
static void run_row(const row_args *a, int64_t soff, int64_t doff, void *scratch, int T, int64_t (*hist)[256]) {
    size_t es = emily_dtype_size(a->dt);
    const char *s = a->sbase + soff * (int64_t)es; /* signed: soff < 0 for reversed views */
    int64_t n = a->n;
    if (a->job == JOB_SORT) {
        char *d = a->dbase + (size_t)doff * es;
        void *keys = sort_in_place(a) ? (void *)d : scratch;
#if HAVE_SORT_AVX512
        if (a->dt == EMILY_F32 && a->ss == 1 && keys == (void *)d && n >= 256) {
            /* keys made and first partitioned in one pass, sorted and
             * mapped back in place */
            int64_t r[4];
            emi_cpu_sort_f32_avx512((const uint32_t *)s, n, a->desc ? UINT32_MAX : 0, (uint32_t *)d, T, r);
            zero_nan_runs runs = {r[0], r[1], r[2], r[3]};
            if (r[0] < r[1] || r[2] < r[3]) fix_zeros_and_nans(a->dt, &runs, n, s, a->ss, d, a->ds);
            return;
        }
#endif
        if (T > 1 && emi_sort_simd_sortable(a->dt, REC_KEYS, n)) {
            long_row_simd(a, s, keys, d, T);
            return;
        }
        records_range(a, s, REC_KEYS, keys, 0, n);
        keys = emi_sort_records(a->dt, REC_KEYS, keys, n, T, hist);
        zero_nan_runs runs;
        bool fix = emily_dtype_is_float(a->dt) && find_zero_nan_runs(a->dt, keys, n, a->desc, &runs);
        unkeys_range(a, keys, d, 0, n);
        if (fix) fix_zeros_and_nans(a->dt, &runs, n, s, a->ss, d, a->ds);
        return;
    }
    char *di = a->ibase + (size_t)doff * emily_dtype_size(a->idt);
    if (a->job == JOB_ARGSORT) {
        rec_mode m = emi_sort_plan_mode(a->dt, n, true);
        if (T > 1 && emi_sort_simd_sortable(a->dt, m, n)) {
            long_row_simd(a, s, scratch, di, T);
            return;
        }
        records_range(a, s, m, scratch, 0, n);
        void *recs = emi_sort_records(a->dt, m, scratch, n, T, hist);
        positions_range(a, m, recs, di, 0, n);
        return;
    }
    /* top_k: the k first of the descending order, by a heap or by
     * sorting descending records like argsort */
    char *dv = a->dbase + (size_t)doff * es;
    if (emi_sort_topk_by_heap(n, a->k)) {
        pair64 *best = emi_sort_topk_row(a, s, scratch, T);
        for (int64_t i = 0; i < a->k; i++) {
            memcpy(dv + (size_t)(i * a->ds) * es, s + (int64_t)best[i].idx * a->ss * (int64_t)es, es);
            put_index(di, a->idt, i * a->ds, best[i].idx);
        }
        return;
    }
    rec_mode m = emi_sort_plan_mode(a->dt, n, true);
    records_range(a, s, m, scratch, 0, n);
    void *recs = emi_sort_records(a->dt, m, scratch, n, T, hist);
    for (int64_t i = 0; i < a->k; i++) {
        uint64_t p = m == REC_PACKED ? (((const uint64_t *)recs)[i] & 0xffffffffu) : ((const pair64 *)recs)[i].idx;
        memcpy(dv + (size_t)(i * a->ds) * es, s + (int64_t)p * a->ss * (int64_t)es, es);
        put_index(di, a->idt, i * a->ds, p);
    }
}

/* Rows whose elements are strided (the axis is not the innermost one in
 * memory) but lie next to other rows (the innermost of the other axes is
 * contiguous) go TILE_ROWS at a time through contiguous tiles: one pass
 * reads the tile's rows together, so every cache line read serves each
 * of them, the rows are sorted as contiguous rows, and one pass writes
 * them back the same way. */
#define TILE_ROWS 16
#define TILE_MAX_BYTES ((int64_t)8 << 20)

typedef struct row_plan {
    row_walk w;
    bool tiled;
    int64_t L, gpl, B; /* innermost other axis, tiles per line of it, rows per tile */
    int64_t units;     /* rows, or tiles */
    row_args inner;    /* the job on a tile's contiguous rows */
    size_t need;       /* scratch of one row */
    size_t ein, eout;  /* element sizes in and out */
} row_plan;

/* Tile rows b < cnt of n elements; memory row b starts at b and steps
 * by st. in: tile[b][j] = mem[b + j * st]; else the reverse. One case
 * per element size. */
// clang-format off
#define TILE_MOVE(BYTES, T)                                                              \
    case BYTES:                                                                          \
        TILE_MOVE_OF(T);                                                                 \
        break;
#define TILE_MOVE_OF(T)                                                                  \
    do {                                                                                 \
        T *t_ = (T *)tile;                                                               \
        T *m_ = (T *)mem;                                                                \
        if (in) {                                                                        \
            for (int64_t j = 0; j < n; j++)                                              \
                for (int64_t b = 0; b < cnt; b++) t_[b * n + j] = m_[b + j * st];        \
        } else {                                                                         \
            for (int64_t j = 0; j < n; j++)                                              \
                for (int64_t b = 0; b < cnt; b++) m_[b + j * st] = t_[b * n + j];        \
        }                                                                                \
    } while (0)
// clang-format on

static void tile_move(bool in, void *tile, void *mem, int64_t n, int64_t cnt, int64_t st, size_t es) {
    switch (es) {
        EMI_ELEMENT_SIZES(TILE_MOVE)
    default: break;
    }
}

/* Offsets inside one scratch block keep every part aligned for any
 * element or record type. */
static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

static void run_unit(const row_args *a, const row_plan *p, int64_t u, char *scratch, int T, int64_t (*hist)[256]) {
    int64_t so, dso;
    if (!p->tiled) {
        walk_offsets(&p->w, u, &so, &dso);
        run_row(a, so, dso, scratch, T, hist);
        return;
    }
    int64_t o = u / p->gpl, g = u % p->gpl, n = a->n;
    int64_t r0 = o * p->L + g * p->B, cnt = p->L - g * p->B < p->B ? p->L - g * p->B : p->B;
    walk_offsets(&p->w, r0, &so, &dso);
    char *tin = scratch + align64(p->need), *tout = tin + align64((size_t)(p->B * n) * p->ein);
    tile_move(true, tin, (char *)a->sbase + so * (int64_t)p->ein, n, cnt, a->ss, p->ein);
    row_args t = p->inner;
    t.sbase = tin;
    t.dbase = t.ibase = tout;
    for (int64_t b = 0; b < cnt; b++) run_row(&t, b * n, b * n, scratch, 1, hist);
    char *out = a->job == JOB_SORT ? a->dbase : a->ibase;
    tile_move(false, tout, out + (size_t)dso * p->eout, n, cnt, a->ds, p->eout);
}

/* Runs the job over every row of src along `axis`; dst gives the
 * output strides (values or indices, same rank as src). */
static emily_status run_rows(const char *op, row_args *a, const emily_tensor *src, const emily_tensor *dst, int axis) {
    row_plan p;
    memset(&p, 0, sizeof p);
    emily_status s = walk_init(&p.w, src, dst, axis, op);
    if (s) return s;
    a->n = src->shape[axis];
    a->ss = src->strides[axis];
    a->ds = dst->strides[axis];
    a->sbase = emily_tensor_base(src);
    p.ein = emily_dtype_size(a->dt);
    p.eout = emily_dtype_size(a->job == JOB_SORT ? a->dt : a->idt);
    int nd = p.w.nd;
    if (a->job != JOB_TOPK && a->ss != 1 && nd > 0 && p.w.shape[nd - 1] > 1 && p.w.sstride[nd - 1] == 1 &&
        p.w.dstride[nd - 1] == 1) {
        int64_t per_row = a->n * (int64_t)(p.ein + p.eout);
        p.B = TILE_MAX_BYTES / (per_row > 0 ? per_row : 1);
        if (p.B > TILE_ROWS) p.B = TILE_ROWS;
        if (p.B > p.w.shape[nd - 1]) p.B = p.w.shape[nd - 1];
        p.tiled = p.B >= 2;
    }
    size_t tile_bytes = 0;
    if (p.tiled) {
        p.L = p.w.shape[nd - 1];
        p.gpl = (p.L + p.B - 1) / p.B;
        p.units = p.w.rows / p.L * p.gpl;
        p.inner = *a;
        p.inner.ss = p.inner.ds = 1;
        p.need = row_scratch(&p.inner, 1);
        tile_bytes = align64(p.need) - p.need + align64((size_t)(p.B * a->n) * p.ein) + (size_t)(p.B * a->n) * p.eout;
    }
    if (!p.tiled) p.units = p.w.rows;
    int64_t total = p.w.rows * a->n;
    int nth = omp_get_max_threads();
    bool serial = p.units == 1 || total < SORT_PAR_MIN || nth < 2;
    /* serial units; a long single row may still split its passes */
    int T = (serial && p.w.rows == 1 && a->n >= SORT_PAR_ROW_MIN && nth > 1) ? nth : 1;
    if (!p.tiled) p.need = row_scratch(a, T);
    size_t need = p.need + tile_bytes;
    if (serial) {
        void *scratch = malloc(need ? need : 1);
        int64_t(*hist)[256] = malloc(sizeof(int64_t) * 256 * (size_t)T);
        if (!scratch || !hist) {
            free(scratch);
            free(hist);
            free(p.w.shape);
            return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory for rows of %lld elements", op,
                               (long long)a->n);
        }
        for (int64_t u = 0; u < p.units; u++) run_unit(a, &p, u, scratch, T, hist);
        free(scratch);
        free(hist);
        free(p.w.shape);
        return EMILY_OK;
    }
    /* units split over threads, one scratch per chunk of units */
    int64_t chunks = (int64_t)nth * 4 < p.units ? (int64_t)nth * 4 : p.units;
    atomic_int failed = 0;
    EMILY_PAR_FOR(true, c, chunks, {
        int64_t lo = p.units * c / chunks, hi = p.units * (c + 1) / chunks;
        void *scratch = malloc(need ? need : 1);
        int64_t(*hist)[256] = malloc(sizeof(int64_t) * 256);
        if (!scratch || !hist) {
            atomic_store(&failed, 1);
        } else {
            for (int64_t u = lo; u < hi; u++) run_unit(a, &p, u, scratch, 1, hist);
        }
        free(scratch);
        free(hist);
    });
    free(p.w.shape);
    if (atomic_load(&failed))
        return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory for rows of %lld elements", op, (long long)a->n);
    return EMILY_OK;
}

/* ---- kernels --------------------------------------------------------------- */

static emily_status cpu_sort(emily_tensor *dst, const emily_tensor *src, int axis, bool descending) {
    if (src->size == 0) return EMILY_OK;
    row_args a = {.job = JOB_SORT, .dt = src->dtype, .idt = src->dtype, .desc = descending};
    a.dbase = emily_tensor_base(dst);
    return run_rows("sort", &a, src, dst, axis);
}

static emily_status cpu_argsort(emily_tensor *dst, const emily_tensor *src, int axis, bool descending) {
    if (src->size == 0) return EMILY_OK;
    row_args a = {.job = JOB_ARGSORT, .dt = src->dtype, .idt = dst->dtype, .desc = descending};
    a.ibase = emily_tensor_base(dst);
    return run_rows("argsort", &a, src, dst, axis);
}

static emily_status cpu_top_k(emily_tensor *values, emily_tensor *indices, const emily_tensor *src, int64_t k) {
    if (values->size == 0) return EMILY_OK;
    row_args a = {.job = JOB_TOPK, .dt = src->dtype, .idt = indices->dtype, .desc = true, .k = k};
    a.dbase = emily_tensor_base(values);
    a.ibase = emily_tensor_base(indices);
    return run_rows("top_k", &a, src, values, src->rank - 1);
}

const struct emily_sort_kernels emi_cpu_sort_kernels = {
    .sort = cpu_sort,
    .argsort = cpu_argsort,
    .top_k = cpu_top_k,
};
