/* CPU kernels: window family (window_sum/product/max/min and the select
 * and scatter of window_scatter_max/min).
 *
 * Every window's elements are listed once (offsets in the source and
 * per-axis positions); a window wholly inside the input takes the fast
 * path (no bounds checks), others skip elements that fall in the
 * padding, which for the reductions is the op's identity. Outputs are
 * split over OpenMP threads. */
#include <math.h>
#include <stdlib.h>
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/element_access.h"
#include "core/scalar_binary.h"
#include "core/kernels.h"

typedef struct win_plan {
    int rank;
    int64_t count; /* elements per window */
    int64_t *pos;  /* count * rank: offset of each element along each axis */
    int64_t *off;  /* count: element offset in src */
    int64_t *span; /* rank: (window - 1) * dilation */
} win_plan;

static void plan_free(win_plan *p) {
    free(p->pos);
    free(p->off);
    free(p->span);
}

static emily_status plan_make(win_plan *p, const emily_tensor *src, const int64_t *window, const int64_t *dilations) {
    int r = src->rank;
    int64_t count = 1;
    for (int d = 0; d < r; d++) count *= window[d];
    p->rank = r;
    p->count = count;
    p->pos = malloc(sizeof(int64_t) * (size_t)(count * (r ? r : 1)));
    p->off = malloc(sizeof(int64_t) * (size_t)count);
    p->span = malloc(sizeof(int64_t) * (size_t)(r ? r : 1));
    if (!p->pos || !p->off || !p->span) {
        plan_free(p);
        return emily_error(EMILY_ERR_MEMORY, "window: out of host memory for a window of %lld elements",
                           (long long)count);
    }
    for (int d = 0; d < r; d++) p->span[d] = (window[d] - 1) * (dilations ? dilations[d] : 1);
    for (int64_t k = 0; k < count; k++) {
        int64_t rem = k, off = 0;
        for (int d = r - 1; d >= 0; d--) {
            int64_t i = rem % window[d];
            rem /= window[d];
            int64_t at = i * (dilations ? dilations[d] : 1);
            p->pos[k * r + d] = at;
            off += at * src->strides[d];
        }
        p->off[k] = off;
    }
    return EMILY_OK;
}

/* The window start (per axis, in input coordinates) of output element o;
 * returns whether the whole window lies inside the input. */
static bool window_start(const emily_tensor *dst, const emily_tensor *src, const win_plan *p, const int64_t *strides,
                         const int64_t *pad_lo, int64_t o, int64_t *start, int64_t *base) {
    bool inside = true;
    int64_t off = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
        int64_t i = o % dst->shape[d];
        o /= dst->shape[d];
        int64_t s = i * strides[d] - pad_lo[d];
        start[d] = s;
        off += s * src->strides[d];
        if (s < 0 || s + p->span[d] >= src->shape[d]) inside = false;
    }
    *base = off;
    return inside;
}

static bool elem_inside(const win_plan *p, const emily_tensor *src, const int64_t *start, int64_t k) {
    for (int d = 0; d < p->rank; d++) {
        int64_t x = start[d] + p->pos[k * p->rank + d];
        if (x < 0 || x >= src->shape[d]) return false;
    }
    return true;
}

/* Nx's element_max/element_min with the new element first: NaN wins,
 * and on equal values the new element is kept. */
static inline double fmax_new(double x, double acc) { return emily_sb_max_f64(x, acc); }
static inline double fmin_new(double x, double acc) { return emily_sb_min_f64(x, acc); }

static void reduce_one(emily_window_op op, emily_dtype dt, int cls, const char *sb, size_t es, const win_plan *p,
                       const emily_tensor *src, bool inside, const int64_t *start, int64_t base, char *out) {
    bool uns = we_unsigned(dt);
    if (cls == 0) {
        uint64_t acc;
        bool have = false;
        acc = op == EMILY_WINDOW_PRODUCT ? 1 : 0;
        for (int64_t k = 0; k < p->count; k++) {
            if (!inside && !elem_inside(p, src, start, k)) continue;
            uint64_t x = we_load_int(dt, sb + (base + p->off[k]) * (int64_t)es);
            switch (op) {
            case EMILY_WINDOW_SUM: acc += x; break;
            case EMILY_WINDOW_PRODUCT: acc *= x; break;
            case EMILY_WINDOW_MAX:
                if (!have || (uns ? x >= acc : (int64_t)x >= (int64_t)acc)) acc = x;
                break;
            case EMILY_WINDOW_MIN:
                if (!have || (uns ? x <= acc : (int64_t)x <= (int64_t)acc)) acc = x;
                break;
            }
            have = true;
        }
        if (!have && (op == EMILY_WINDOW_MAX || op == EMILY_WINDOW_MIN)) {
            /* only padding: the type's smallest (max) or largest (min) value */
            int bits = emily_dtype_bits(dt);
            uint64_t umax = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
            if (uns) acc = op == EMILY_WINDOW_MAX ? 0 : umax;
            else acc = op == EMILY_WINDOW_MAX ? (uint64_t)(-(int64_t)(umax >> 1) - 1) : umax >> 1;
        }
        we_store_int(dt, acc, out);
    } else if (cls == 1) {
        double acc = op == EMILY_WINDOW_SUM       ? 0.0
                     : op == EMILY_WINDOW_PRODUCT ? 1.0
                     : op == EMILY_WINDOW_MAX     ? -INFINITY
                                                  : INFINITY;
        for (int64_t k = 0; k < p->count; k++) {
            if (!inside && !elem_inside(p, src, start, k)) continue;
            double x = we_load_f(dt, sb + (base + p->off[k]) * (int64_t)es);
            switch (op) {
            case EMILY_WINDOW_SUM: acc = x + acc; break;
            case EMILY_WINDOW_PRODUCT: acc = x * acc; break;
            case EMILY_WINDOW_MAX: acc = fmax_new(x, acc); break;
            case EMILY_WINDOW_MIN: acc = fmin_new(x, acc); break;
            }
        }
        we_store_f(dt, acc, 0.0, out);
    } else {
        emily_sb_complex acc = emily_sb_cmake(op == EMILY_WINDOW_PRODUCT ? 1.0 : 0.0, 0.0);
        for (int64_t k = 0; k < p->count; k++) {
            if (!inside && !elem_inside(p, src, start, k)) continue;
            const char *e = sb + (base + p->off[k]) * (int64_t)es;
            emily_sb_complex x = emily_sb_cmake(we_load_f(dt, e), we_load_im(dt, e));
            acc = op == EMILY_WINDOW_PRODUCT ? emily_sb_cmultiply(x, acc) : emily_sb_cadd(x, acc);
        }
        we_store_f(dt, acc.re, acc.im, out);
    }
}

static emily_status cpu_window_reduce(emily_window_op op, emily_tensor *dst, const emily_tensor *src,
                                      const int64_t *window, const int64_t *strides, const int64_t *dilations,
                                      const int64_t *pad_lo) {
    win_plan p;
    emily_status s = plan_make(&p, src, window, dilations);
    if (s) return s;
    int r = src->rank;
    emily_dtype dt = src->dtype;
    int cls = we_class(dt);
    size_t es = emily_dtype_size(dt);
    /* NULL for an empty source (all windows then lie in the padding) */
    const char *sb = emily_tensor_base(src);
    char *db = emily_tensor_base(dst);
    bool par = dst->size * p.count >= EMILY_PARALLEL_MIN && dst->size > 1;
    EMILY_PAR_FOR(par, o, dst->size, {
        int64_t start[64];
        int64_t base;
        bool inside = window_start(dst, src, &p, strides, pad_lo, o, start, &base);
        reduce_one(op, dt, cls, sb, es, &p, src, inside, start, base, db + o * (int64_t)es);
    });
    (void)r;
    plan_free(&p);
    return EMILY_OK;
}

/* ---- select and scatter ------------------------------------------------- */

/* Selection key of one element of the padded input: Nx compares the two
 * numbers as fresh tensors, floats as f32 (so f64 values round to f32
 * first); integers are compared exactly here (see docs/semantics.md). */
typedef struct key {
    double f;
    uint64_t i;
} key;

static emily_status cpu_window_scatter(bool is_max, emily_tensor *dst, const emily_tensor *src,
                                       const emily_tensor *source, const emily_tensor *init, const int64_t *window,
                                       const int64_t *strides, const int64_t *pad_lo) {
    win_plan p;
    emily_status s = plan_make(&p, src, window, NULL);
    if (s) return s;
    emily_dtype tt = src->dtype, st = source->dtype, it = init->dtype, ot = dst->dtype;
    const char *ib = emily_tensor_base(init);
    bool init_float = emily_dtype_is_float(it);
    bool float_keys = emily_dtype_is_float(tt) || init_float;
    bool uns_keys = !float_keys && we_unsigned(tt);
    /* the padding element: init written into the padded tensor's type */
    key pad;
    if (emily_dtype_is_float(tt)) {
        char tmp[16];
        we_store_f(tt, we_load_f(it, ib), 0.0, tmp);
        pad.f = (float)we_load_f(tt, tmp);
        pad.i = 0;
    } else if (init_float) {
        pad.f = (float)we_load_f(it, ib);
        pad.i = 0;
    } else {
        char tmp[16];
        we_store_int(tt, we_load_int(it, ib), tmp);
        pad.i = we_load_int(tt, tmp);
        pad.f = 0;
    }
    bool out_float = emily_dtype_is_float(ot);
    int64_t n = dst->size;
    float *accf = NULL;
    uint64_t *acci = NULL;
    unsigned char *touched = calloc((size_t)(n ? n : 1), 1);
    if (out_float) accf = malloc(sizeof(float) * (size_t)(n ? n : 1));
    else acci = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    if (!touched || (!accf && !acci)) {
        free(touched);
        free(accf);
        free(acci);
        plan_free(&p);
        return emily_error(EMILY_ERR_MEMORY, "window_scatter: out of host memory");
    }
    size_t tes = emily_dtype_size(tt), ses = emily_dtype_size(st), oes = emily_dtype_size(ot);
    const char *tb = emily_tensor_base(src), *srcb = emily_tensor_base(source); /* NULL: empty */
    double init_d = init_float ? (double)(float)we_load_f(it, ib) : we_load_f(it, ib);
    uint64_t init_i = we_load_int(it, ib);
    int r = src->rank;
    int64_t start[64], widx[64];
    for (int64_t w = 0; w < source->size; w++) {
        /* window position w (row-major over source's shape) */
        int64_t rem = w, soff = 0;
        for (int d = r - 1; d >= 0; d--) {
            int64_t i = rem % source->shape[d];
            rem /= source->shape[d];
            widx[d] = i;
            start[d] = i * strides[d] - pad_lo[d];
            soff += i * source->strides[d];
        }
        int64_t base = 0;
        bool inside = true;
        for (int d = 0; d < r; d++) {
            base += start[d] * src->strides[d];
            if (start[d] < 0 || start[d] + p.span[d] >= src->shape[d]) inside = false;
        }
        int64_t sel = 0;
        key acc = {0, 0};
        for (int64_t k = 0; k < p.count; k++) {
            key x;
            if (inside || elem_inside(&p, src, start, k)) {
                const char *e = tb + (base + p.off[k]) * (int64_t)tes;
                if (float_keys) x.f = (float)we_load_f(tt, e), x.i = 0;
                else x.i = we_load_int(tt, e), x.f = 0;
            } else {
                x = pad;
            }
            bool take;
            if (k == 0) take = true;
            else if (float_keys) take = is_max ? x.f >= acc.f : x.f <= acc.f;
            else if (uns_keys) take = is_max ? x.i >= acc.i : x.i <= acc.i;
            else take = is_max ? (int64_t)x.i >= (int64_t)acc.i : (int64_t)x.i <= (int64_t)acc.i;
            if (take) {
                sel = k;
                acc = x;
            }
        }
        /* the selected position, dropped when it lies in the padding */
        if (!inside && !elem_inside(&p, src, start, sel)) continue;
        int64_t flat = 0;
        for (int d = 0; d < r; d++) flat = flat * dst->shape[d] + start[d] + p.pos[sel * r + d];
        const char *v = srcb + soff * (int64_t)ses;
        if (out_float) {
            double vd = emily_dtype_is_float(st) ? (double)(float)we_load_f(st, v) : we_load_f(st, v);
            if (!touched[flat]) accf[flat] = (float)(vd + init_d);
            else accf[flat] = (float)(vd + (double)accf[flat]);
        } else {
            uint64_t vi = we_load_int(st, v);
            acci[flat] = (touched[flat] ? acci[flat] : init_i) + vi;
        }
        touched[flat] = 1;
        (void)widx;
    }
    char *db = emily_tensor_base(dst);
    for (int64_t o = 0; o < n; o++) {
        char *out = db + o * (int64_t)oes;
        if (out_float) {
            if (touched[o]) we_store_f(ot, accf[o], 0.0, out);
            else we_store_f(ot, we_load_f(it, ib), 0.0, out);
        } else {
            we_store_int(ot, touched[o] ? acci[o] : init_i, out);
        }
    }
    free(touched);
    free(accf);
    free(acci);
    plan_free(&p);
    return EMILY_OK;
}

const struct emily_window_kernels emi_cpu_window_kernels = {
    .reduce = cpu_window_reduce,
    .scatter = cpu_window_scatter,
};
