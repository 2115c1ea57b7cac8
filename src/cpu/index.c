/* CPU kernels: index family (take, take_along_axis, gather, indexed
 * add/put). See src/core/kernels.h for the contracts: inputs are
 * contiguous, dst is fresh and contiguous.
 *
 * Every kernel first reads its indices once into an int64 table,
 * checking each against its axis (an out-of-range index fails before
 * anything is read or written through it), then moves elements with
 * that table. Moves are byte copies of the element size, so every dtype
 * (complex included) takes the same path and keeps its exact bits. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "core/scalar_convert.h"
#include "cpu/dtype_scalars.h"
#include "ops/common.h"
#include "core/kernels.h"

/* Work below this many bytes moved stays on one thread. */
#define INDEX_PAR_MIN_BYTES ((int64_t)1 << 20)

/* ---- reading indices ----------------------------------------------------- */

/* Index element i of a contiguous integer array of dtype dt, as a
 * signed value; u64 values above INT64_MAX come back as -1 with *huge
 * set, so they fail the range check like any negative index. */
static inline int64_t read_index(const void *base, emily_dtype dt, int64_t i, bool *huge) {
    if (dt == EMILY_U64) {
        uint64_t v = ((const uint64_t *)base)[i];
        if (v > (uint64_t)INT64_MAX) {
            *huge = true;
            return -1;
        }
        return (int64_t)v;
    }
    switch (dt) {
// clang-format off
#define READ_INDEX(ENUM, sfx, T) \
    case EMILY_##ENUM: return (int64_t)((const T *)base)[i];
        // clang-format on
        EMI_DTYPES_INTEGER(READ_INDEX)
#undef READ_INDEX
    default: return 0;
    }
}

/* Reads `count` indices (rows of `ncols`; column c must lie in
 * [0, bounds[c])) into a new int64 table. The first bad index in
 * row-major order (where the reference stops) fails with EMILY_ERR_INDEX
 * and the reference's message (index_error). */
static emily_status load_indices(const char *op, const emily_tensor *idx, int64_t count, int ncols,
                                 const int64_t *bounds, const int *axes, int axis, const emily_tensor *t,
                                 int64_t **out) {
    *out = NULL;
    int64_t *tab = malloc(sizeof(int64_t) * (size_t)(count > 0 ? count : 1));
    if (!tab) return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory for %lld indices", op, (long long)count);
    const void *base = emily_tensor_base(idx);
    emily_dtype dt = idx->dtype;
    int64_t bad = -1;
    bool huge = false;
    if (ncols == 1) {
        int64_t n = bounds[0];
        for (int64_t i = 0; i < count; i++) {
            int64_t v = read_index(base, dt, i, &huge);
            tab[i] = v;
            if ((uint64_t)v >= (uint64_t)n && bad < 0) bad = i;
        }
    } else {
        for (int64_t i = 0; i < count; i++) {
            int64_t v = read_index(base, dt, i, &huge);
            tab[i] = v;
            if ((uint64_t)v >= (uint64_t)bounds[i % ncols] && bad < 0) bad = i;
        }
    }
    if (bad >= 0) {
        free(tab);
        return emi_index_error(op, (const char *)base + (size_t)bad * emily_dtype_size(dt), dt, bad, ncols, axes, axis,
                               t);
    }
    *out = tab;
    return EMILY_OK;
}

/* ---- element moves ------------------------------------------------------- */

/* dst[k] = src[tab[k] * stride] for k < n, elements of size es. */
static inline void gather_elems(char *d, const char *s, const int64_t *tab, int64_t n, int64_t stride, size_t es) {
    switch (es) {
// clang-format off
#define GATHER_ELEMS(BYTES, T)                                                  \
    case BYTES: {                                                               \
        T *d_ = (T *)d;                                                         \
        const T *s_ = (const T *)s;                                             \
        for (int64_t k = 0; k < n; k++) memcpy(&d_[k], &s_[tab[k] * stride], sizeof(T)); \
        break;                                                                  \
    }
        // clang-format on
        EMI_ELEMENT_SIZES(GATHER_ELEMS)
#undef GATHER_ELEMS
    default: break;
    }
}

/* ---- take ---------------------------------------------------------------- */

static emily_status cpu_take(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int axis,
                             int64_t outer, int64_t n, int64_t inner) {
    int64_t m = idx->size;
    int64_t *tab;
    emily_status s = load_indices("take", idx, m, 1, &n, &axis, axis, src, &tab);
    if (s) return s;
    if (dst->size == 0) { /* indices checked, nothing to move (and no buffer to offset) */
        free(tab);
        return EMILY_OK;
    }
    size_t es = emily_dtype_size(src->dtype);
    const char *sb = emily_tensor_base(src);
    char *db = emily_tensor_base(dst);
    bool par = (int64_t)es * outer * m * inner >= INDEX_PAR_MIN_BYTES;
    if (inner == 1 && outer == 1) {
        /* one long row of element gathers: split it in chunks */
        int64_t chunks = par ? 16 : 1;
        EMILY_PAR_FOR(par, c, chunks, {
            int64_t lo = m * c / chunks, hi = m * (c + 1) / chunks;
            gather_elems(db + (size_t)lo * es, sb, tab + lo, hi - lo, 1, es);
        });
    } else if (inner == 1) {
        EMILY_PAR_FOR(par, o, outer,
                      { gather_elems(db + (size_t)(o * m) * es, sb + (size_t)(o * n) * es, tab, m, 1, es); });
    } else {
        size_t run = (size_t)inner * es;
        EMILY_PAR_FOR(par, u, outer * m, {
            int64_t o = u / m, j = u % m;
            memcpy(db + (size_t)u * run, sb + ((size_t)(o * n + tab[j])) * run, run);
        });
    }
    free(tab);
    return EMILY_OK;
}

/* ---- take_along_axis ----------------------------------------------------- */

/* take_along_axis reading s32/s64 indices in place: each index is
 * checked as it is used (a bad one stops the copy; the error is then
 * reported through load_indices, which finds the first bad index). */
// clang-format off
#define ALONG_DIRECT(IT, BYTES, T)                                                      \
    case BYTES:                                                                         \
    EMILY_PAR_FOR(par, u, outer * m, {                                                  \
        if (!atomic_load_explicit(&bad, memory_order_relaxed)) {                        \
            int64_t o = u / m;                                                          \
            const IT *ip = (const IT *)ib + u * inner;                                  \
            T *d = (T *)db + u * inner;                                                 \
            /* src's row is addressed only after the index is checked: an   \
             * empty src (n == 0) has no storage to point into */            \
            for (int64_t r = 0; r < inner; r++) {                                       \
                int64_t v = (int64_t)ip[r];                                             \
                if ((uint64_t)v >= (uint64_t)n) {                                       \
                    atomic_store_explicit(&bad, 1, memory_order_relaxed);              \
                    break;                                                              \
                }                                                                       \
                memcpy(&d[r], (const T *)sb + (o * n + v) * inner + r, sizeof(T));      \
            }                                                                           \
        }                                                                               \
    });                                                                                 \
    break;
#define ALONG_DIRECT_S32(BYTES, T) ALONG_DIRECT(int32_t, BYTES, T)
#define ALONG_DIRECT_S64(BYTES, T) ALONG_DIRECT(int64_t, BYTES, T)
// clang-format on

/* take_along_axis through the checked int64 table: one case per element
 * size. */
// clang-format off
#define ALONG_TABLE(BYTES, T)                                                           \
    case BYTES:                                                                         \
        for (int64_t r = 0; r < inner; r++)                                             \
            memcpy(d + r * BYTES, sr + (t[r] * inner + r) * BYTES, BYTES);              \
        break;
// clang-format on

static emily_status cpu_take_along_axis(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int axis,
                                        int64_t outer, int64_t n, int64_t inner) {
    int64_t total = idx->size;
    int64_t m = total / (outer * inner);
    size_t es = emily_dtype_size(src->dtype);
    const char *sb = emily_tensor_base(src);
    const char *ib = emily_tensor_base(idx);
    char *db = emily_tensor_base(dst);
    bool par = (int64_t)es * total >= INDEX_PAR_MIN_BYTES;
    /* dst[o, j, r] = src[o, idx[o, j, r], r] */
    if (idx->dtype == EMILY_S32 || idx->dtype == EMILY_S64) {
        atomic_int bad = 0;
        if (idx->dtype == EMILY_S32) {
            switch (es) {
                EMI_ELEMENT_SIZES(ALONG_DIRECT_S32)
            default: break;
            }
        } else {
            switch (es) {
                EMI_ELEMENT_SIZES(ALONG_DIRECT_S64)
            default: break;
            }
        }
        if (!atomic_load(&bad)) return EMILY_OK;
        int64_t *tab;
        emily_status s = load_indices("take_along_axis", idx, total, 1, &n, NULL, axis, src, &tab);
        free(tab);
        return s ? s : emily_error(EMILY_ERR_INTERNAL, "take_along_axis: index check disagrees");
    }
    int64_t *tab;
    emily_status s = load_indices("take_along_axis", idx, total, 1, &n, NULL, axis, src, &tab);
    if (s) return s;
    EMILY_PAR_FOR(par, u, outer * m, {
        int64_t o = u / m;
        const int64_t *t = tab + u * inner;
        char *d = db + (size_t)(u * inner) * es;
        const char *sr = sb + (size_t)(o * n * inner) * es;
        switch (es) {
            EMI_ELEMENT_SIZES(ALONG_TABLE)
        default: break;
        }
    });
    free(tab);
    return EMILY_OK;
}

/* ---- shared layout of gather and indexed ops ----------------------------- */

/* The non-indexed axes of a contiguous tensor: those before the last
 * indexed axis ("pre", walked one by one) and the contiguous run after
 * it ("tail" elements). */
typedef struct rest_layout {
    int npre;
    int64_t *pre_shape, *pre_stride; /* npre entries */
    int64_t pre_count;               /* product of pre_shape */
    int64_t tail;
    int64_t *axis_stride; /* stride of each indexed axis */
    int64_t *bounds;      /* size of each indexed axis */
} rest_layout;

static void rest_free(rest_layout *l) {
    free(l->pre_shape);
    free(l->pre_stride);
    free(l->axis_stride);
    free(l->bounds);
}

static emily_status rest_init(const char *op, const emily_tensor *t, int naxes, const int *axes, rest_layout *l) {
    memset(l, 0, sizeof *l);
    int r = t->rank;
    l->pre_shape = malloc(sizeof(int64_t) * ((size_t)r + 1));
    l->pre_stride = malloc(sizeof(int64_t) * ((size_t)r + 1));
    l->axis_stride = malloc(sizeof(int64_t) * ((size_t)naxes + 1));
    l->bounds = malloc(sizeof(int64_t) * ((size_t)naxes + 1));
    if (!l->pre_shape || !l->pre_stride || !l->axis_stride || !l->bounds) {
        rest_free(l);
        return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    }
    int64_t stride = 1;
    int last = naxes > 0 ? axes[naxes - 1] : -1;
    l->tail = 1;
    int np = 0;
    /* strides of a row-major tensor, and which axes are indexed (a mask,
     * not a search of `axes` per axis: that was quadratic in the rank) */
    int64_t *strides = malloc(sizeof(int64_t) * ((size_t)r + 1));
    bool *indexed = calloc((size_t)r + 1, 1);
    if (!strides || !indexed) {
        free(strides);
        free(indexed);
        rest_free(l);
        return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    }
    for (int i = r - 1; i >= 0; i--) {
        strides[i] = stride;
        stride *= t->shape[i];
    }
    for (int j = 0; j < naxes; j++) indexed[axes[j]] = true;
    for (int i = r - 1; i > last; i--) l->tail *= t->shape[i];
    for (int i = 0; i < last; i++) {
        /* an axis of size 1 adds nothing to any offset: leaving it out
         * keeps pre_offset's work per element small whatever the rank */
        if (indexed[i] || t->shape[i] == 1) continue;
        l->pre_shape[np] = t->shape[i];
        l->pre_stride[np] = strides[i];
        np++;
    }
    free(indexed);
    l->npre = np;
    l->pre_count = 1;
    for (int i = 0; i < np; i++) l->pre_count *= l->pre_shape[i];
    for (int j = 0; j < naxes; j++) {
        l->axis_stride[j] = strides[axes[j]];
        l->bounds[j] = t->shape[axes[j]];
    }
    free(strides);
    return EMILY_OK;
}

/* Element offset of pre position q (row-major over pre_shape). */
static inline int64_t pre_offset(const rest_layout *l, int64_t q) {
    int64_t off = 0;
    for (int i = l->npre - 1; i >= 0; i--) {
        int64_t c = q % l->pre_shape[i];
        q /= l->pre_shape[i];
        off += c * l->pre_stride[i];
    }
    return off;
}

/* ---- gather -------------------------------------------------------------- */

static emily_status cpu_gather(emily_tensor *dst, const emily_tensor *src, const emily_tensor *idx, int naxes,
                               const int *axes) {
    const char *op = "gather";
    rest_layout l;
    emily_status s = rest_init(op, src, naxes, axes, &l);
    if (s) return s;
    int64_t rows = 1;
    for (int i = 0; i < idx->rank - 1; i++) rows *= idx->shape[i];
    int64_t *tab = NULL;
    if (naxes > 0 && (s = load_indices(op, idx, idx->size, naxes, l.bounds, axes, 0, src, &tab))) {
        rest_free(&l);
        return s;
    }
    if (dst->size == 0) { /* indices checked, nothing to move (and no buffer to offset) */
        free(tab);
        rest_free(&l);
        return EMILY_OK;
    }
    size_t es = emily_dtype_size(src->dtype);
    const char *sb = emily_tensor_base(src);
    char *db = emily_tensor_base(dst);
    int64_t block = l.pre_count * l.tail;
    bool par = (int64_t)es * rows * block >= INDEX_PAR_MIN_BYTES;
    size_t run = (size_t)l.tail * es;
    EMILY_PAR_FOR(par, u, rows * l.pre_count, {
        int64_t row = u / l.pre_count, q = u % l.pre_count;
        int64_t base = 0;
        for (int k = 0; k < naxes; k++) base += tab[row * naxes + k] * l.axis_stride[k];
        base += pre_offset(&l, q);
        memcpy(db + (size_t)u * run, sb + (size_t)base * es, run);
    });
    free(tab);
    rest_free(&l);
    return EMILY_OK;
}

/* ---- indexed_add / indexed_put ------------------------------------------- */

/* A value read from one element: integers as 64-bit patterns (with
 * their signedness), floats and complex numbers as doubles. */
typedef struct sval {
    int kind; /* 0 integer, 1 real, 2 complex */
    bool is_unsigned;
    uint64_t bits;
    double re, im;
} sval;

/* One case of load_value per dtype: the element read into x, then
 * `SET` stores it (a signed integer's conversion to uint64_t is its sign
 * extension). */
// clang-format off
#define LOAD_VALUE(ENUM, T, SET)     \
    case EMILY_##ENUM: {             \
        T x;                         \
        memcpy(&x, p, sizeof x);     \
        SET;                         \
        break;                       \
    }
#define LOAD_UNSIGNED(ENUM, sfx, T) LOAD_VALUE(ENUM, T, v.is_unsigned = true; v.bits = x)
#define LOAD_SIGNED(ENUM, sfx, T) LOAD_VALUE(ENUM, T, v.bits = (uint64_t)x)
#define LOAD_FLOAT(ENUM, sfx, T) LOAD_VALUE(ENUM, T, v.kind = 1; v.re = emi_to_f64_##sfx(x))
#define LOAD_COMPLEX(ENUM, sfx, T) \
    LOAD_VALUE(ENUM, T, v.kind = 2; v.re = emi_to_f64_##sfx(x); v.im = emi_im_of_##sfx(x))
// clang-format on

static inline sval load_value(const char *p, emily_dtype dt) {
    sval v = {0, false, 0, 0.0, 0.0};
    switch (dt) {
        EMI_DTYPES_UNSIGNED(LOAD_UNSIGNED)
        EMI_DTYPES_SIGNED(LOAD_SIGNED)
        EMI_DTYPES_FLOAT(LOAD_FLOAT)
        EMI_DTYPES_COMPLEX(LOAD_COMPLEX)
    default: break;
    }
    return v;
}

static inline double sval_real(const sval *v) {
    if (v->kind) return v->re;
    return v->is_unsigned ? (double)v->bits : (double)(int64_t)v->bits;
}

/* Writes v into one element of dtype dt with Nx's conversion rules. */
static inline void store_value(char *p, emily_dtype dt, const sval *v) {
    if (v->kind == 0) emily_sc_store_int((int)dt, v->bits, v->is_unsigned, p);
    else emily_sc_store_complex((int)dt, v->re, v->kind == 2 ? v->im : 0.0, p);
}

/* Offsets (in target elements) of every element of one update block,
 * relative to the block's indexed position: the block has the update's
 * trailing shape on the target's non-indexed axes. */
static emily_status block_offsets(const char *op, const emily_tensor *target, const emily_tensor *updates, int naxes,
                                  const int *axes, int64_t bsize, int64_t **out) {
    int r = target->rank;
    int64_t *offs = malloc(sizeof(int64_t) * (size_t)(bsize > 0 ? bsize : 1));
    int64_t *strides = malloc(sizeof(int64_t) * ((size_t)r + 1));
    int64_t *bshape = malloc(sizeof(int64_t) * ((size_t)r + 1));
    int64_t *bstride = malloc(sizeof(int64_t) * ((size_t)r + 1));
    if (!offs || !strides || !bshape || !bstride) {
        free(offs);
        free(strides);
        free(bshape);
        free(bstride);
        return emily_error(EMILY_ERR_MEMORY, "%s: out of host memory", op);
    }
    int64_t st = 1;
    for (int i = r - 1; i >= 0; i--) {
        strides[i] = st;
        st *= target->shape[i];
    }
    int nb = 0, u = 0;
    for (int i = 0, k = 0; i < r; i++) {
        if (k < naxes && axes[k] == i) {
            k++;
            continue;
        }
        bshape[nb] = updates->shape[1 + u];
        bstride[nb] = strides[i];
        u++;
        /* an axis of size 1 adds nothing to any offset (keeps the work
         * per element small whatever the rank) */
        if (bshape[nb] != 1) nb++;
    }
    for (int64_t q = 0; q < bsize; q++) {
        int64_t rem = q, off = 0;
        for (int i = nb - 1; i >= 0; i--) {
            off += (rem % bshape[i]) * bstride[i];
            rem /= bshape[i];
        }
        offs[q] = off;
    }
    free(strides);
    free(bshape);
    free(bstride);
    *out = offs;
    return EMILY_OK;
}

/* A float or complex accumulator per target element (kept apart from
 * integer sums, which must stay exact like Elixir's integers). */
typedef struct acc_slot {
    double re, im;
    __int128 isum;
} acc_slot;

static emily_status cpu_indexed(emily_indexed_op iop, emily_tensor *dst, const emily_tensor *target,
                                const emily_tensor *idx, const emily_tensor *updates, int naxes, const int *axes) {
    const char *op = iop == EMILY_INDEXED_ADD ? "indexed_add" : "indexed_put";
    int64_t n = updates->shape[0];
    int64_t bsize = n > 0 ? updates->size / n : 0;
    rest_layout l;
    emily_status s = rest_init(op, target, naxes, axes, &l);
    if (s) return s;
    int64_t *tab = NULL, *offs = NULL;
    acc_slot *acc = NULL;
    int64_t *order = NULL;
    if (n * naxes > 0 && (s = load_indices(op, idx, n * naxes, naxes, l.bounds, axes, 0, target, &tab))) goto done;
    if ((s = block_offsets(op, target, updates, naxes, axes, bsize, &offs))) goto done;

    emily_dtype dt = dst->dtype, ut = updates->dtype, tt = target->dtype;
    size_t des = emily_dtype_size(dt), ues = emily_dtype_size(ut), tes = emily_dtype_size(tt);
    char *db = emily_tensor_base(dst);
    const char *ub = emily_tensor_base(updates);
    const char *tb = emily_tensor_base(target);

    if (iop == EMILY_INDEXED_PUT) {
        /* in row order: the last write of a position wins */
        for (int64_t j = 0; j < n; j++) {
            int64_t base = 0;
            for (int k = 0; k < naxes; k++) base += tab[j * naxes + k] * l.axis_stride[k];
            const char *u = ub + (size_t)(j * bsize) * ues;
            if (ut == dt) {
                for (int64_t q = 0; q < bsize; q++)
                    memcpy(db + (size_t)(base + offs[q]) * des, u + (size_t)q * ues, des);
            } else {
                for (int64_t q = 0; q < bsize; q++) {
                    sval v = load_value(u + (size_t)q * ues, ut);
                    store_value(db + (size_t)(base + offs[q]) * des, dt, &v);
                }
            }
        }
        goto done;
    }

    if (emily_dtype_is_integer(dt)) {
        /* integer sums wrap in dst's width: order does not matter */
        for (int64_t j = 0; j < n; j++) {
            int64_t base = 0;
            for (int k = 0; k < naxes; k++) base += tab[j * naxes + k] * l.axis_stride[k];
            const char *u = ub + (size_t)(j * bsize) * ues;
            for (int64_t q = 0; q < bsize; q++) {
                char *d = db + (size_t)(base + offs[q]) * des;
                sval cur = load_value(d, dt), add = load_value(u + (size_t)q * ues, ut);
                cur.bits += add.bits;
                store_value(d, dt, &cur);
            }
        }
        goto done;
    }

    /* floats and complex numbers: sum each position's updates in row
     * order from 0 (exactly for integer updates), then add the target.
     * One accumulator per distinct position, in first-touch order; a
     * position finds its accumulator through a table over the target
     * when the target is not much larger than the updates, else through
     * a hash table over the updates (memory stays proportional to the
     * inputs). */
    int64_t m = n * bsize;
    bool dense = target->size <= 4 * m + 4096;
    int64_t cap = 16;
    while (!dense && cap < 2 * m) cap *= 2;
    int64_t nmap = dense ? target->size : cap;
    acc = malloc(sizeof(acc_slot) * (size_t)(m > 0 ? m : 1));
    order = malloc(sizeof(int64_t) * (size_t)(m > 0 ? m : 1));
    int64_t *map = malloc(sizeof(int64_t) * (size_t)(nmap > 0 ? nmap : 1));
    int64_t *keys = dense ? NULL : malloc(sizeof(int64_t) * (size_t)cap);
    if (!acc || !order || !map || (!dense && !keys)) {
        free(map);
        free(keys);
        s = emily_error(EMILY_ERR_MEMORY, "%s: out of host memory for the sums of %lld updates", op, (long long)m);
        goto done;
    }
    memset(map, 0xff, sizeof(int64_t) * (size_t)nmap); /* -1: no accumulator yet */
    int64_t nslots = 0;
    bool int_updates = emily_dtype_is_integer(ut);
    for (int64_t j = 0; j < n; j++) {
        int64_t base = 0;
        for (int k = 0; k < naxes; k++) base += tab[j * naxes + k] * l.axis_stride[k];
        const char *u = ub + (size_t)(j * bsize) * ues;
        for (int64_t q = 0; q < bsize; q++) {
            int64_t pos = base + offs[q];
            int64_t *slot;
            if (dense) {
                slot = &map[pos];
            } else {
                uint64_t h = ((uint64_t)pos * 0x9e3779b97f4a7c15ull) & (uint64_t)(cap - 1);
                while (map[h] >= 0 && keys[h] != pos) h = (h + 1) & (uint64_t)(cap - 1);
                keys[h] = pos;
                slot = &map[h];
            }
            if (*slot < 0) {
                *slot = nslots;
                order[nslots] = pos;
                acc[nslots].re = 0.0;  /* Elixir's integer 0 */
                acc[nslots].im = -0.0; /* a missing imaginary part changes nothing */
                acc[nslots].isum = 0;
                nslots++;
            }
            acc_slot *a = &acc[*slot];
            sval v = load_value(u + (size_t)q * ues, ut);
            if (int_updates) {
                a->isum += v.is_unsigned ? (__int128)v.bits : (__int128)(int64_t)v.bits;
            } else {
                a->re += v.re;
                if (v.kind == 2) a->im += v.im;
            }
        }
    }
    free(map);
    free(keys);
    for (int64_t i = 0; i < nslots; i++) {
        int64_t pos = order[i];
        const acc_slot *a = &acc[i];
        sval t = load_value(tb + (size_t)pos * tes, tt);
        double sre = int_updates ? (double)a->isum : a->re;
        sval r = {2, false, 0, 0.0, 0.0};
        r.re = sval_real(&t) + sre;
        r.im = (t.kind == 2 ? t.im : -0.0) + a->im;
        store_value(db + (size_t)pos * des, dt, &r);
    }

done:
    free(tab);
    free(offs);
    free(acc);
    free(order);
    rest_free(&l);
    return s;
}

const struct emily_index_kernels emi_cpu_index_kernels = {
    .take = cpu_take,
    .take_along_axis = cpu_take_along_axis,
    .gather = cpu_gather,
    .indexed = cpu_indexed,
};
