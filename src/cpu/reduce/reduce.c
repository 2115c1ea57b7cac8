/* CPU kernel: reductions (sum, product, reduce_max/min, all, any) - the
 * driver that walks the input and hands runs to a reducer (reducers.h).
 *
 * The input's dims are reordered by memory stride (largest first) and
 * adjacent dims of the same kind (kept / reduced) that are contiguous are
 * merged. The innermost dim then decides the loop:
 *  - it is reduced: each output folds contiguous (or strided) runs, one
 *    per position of the outer reduced dims ("row" reductions);
 *  - it is kept: blocks of up to COLS_MAX outputs are folded together, one
 *    input row at a time ("column" reductions), so reducing a leading
 *    axis of a contiguous tensor reads memory sequentially and the
 *    inner loop vectorizes across outputs.
 * Work is split over OpenMP threads by outputs, or inside the runs when
 * there are fewer outputs than threads.
 *
 * max/min: where the result is a zero, its sign is the one of the first
 * zero in Nx's order (Erlang's max/min keep the first of equals), fixed
 * after the fold (emi_reduce_fix_zero_signs). Serial work never enters
 * OpenMP (EMILY_PAR_FOR). */
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/kernels.h"
#include "cpu/parallel.h"
#include "cpu/reduce/reducers.h"
#include "cpu/strided.h"

#define COLS_MAX 8192 /* outputs folded together by a column reduction */

/* [op] -> the op's reducers by dtype */
static const emi_reducer *const *const reducers[EMILY_REDUCE_OP_COUNT] = {
    [EMILY_REDUCE_SUM] = emi_reduce_sum, [EMILY_REDUCE_PRODUCT] = emi_reduce_product,
    [EMILY_REDUCE_MAX] = emi_reduce_max, [EMILY_REDUCE_MIN] = emi_reduce_min,
    [EMILY_REDUCE_ALL] = emi_reduce_all, [EMILY_REDUCE_ANY] = emi_reduce_any,
};

typedef struct rdim {
    int64_t n, ss, ds; /* size, source stride, destination stride */
    bool red;
} rdim;

/* Element offsets of position `pos` of an odometer over dims[0..nd). */
static void odo(const rdim *dims, int nd, int64_t pos, int64_t *so, int64_t *dof) {
    int64_t s = 0, d = 0;
    for (int k = nd - 1; k >= 0; k--) {
        int64_t i = pos % dims[k].n;
        pos /= dims[k].n;
        s += i * dims[k].ss;
        d += i * dims[k].ds;
    }
    *so = s;
    if (dof) *dof = d;
}

static inline int64_t stride_key(int64_t s) { return s == 0 ? INT64_MAX : (s < 0 ? -s : s); }

typedef struct rplan {
    rdim *kept, *red; /* outer kept / outer reduced dims, outermost first */
    int nk, nr;
    int64_t nK, nR; /* their position counts */
    rdim run;       /* the innermost dim */
} rplan;

static emily_status plan_reduce(const emily_tensor *dst, const emily_tensor *src, const bool *reduced, rdim *buf,
                                rplan *p) {
    int r = src->rank, n = 0;
    for (int i = 0; i < r; i++) {
        if (src->shape[i] == 1) continue;
        buf[n].n = src->shape[i];
        buf[n].ss = src->strides[i];
        buf[n].red = reduced[i];
        buf[n].ds = reduced[i] ? 0 : dst->strides[i];
        n++;
    }
    /* stable sort by stride, largest first (broadcast dims outermost) */
    for (int i = 1; i < n; i++) {
        rdim d = buf[i];
        int j = i - 1;
        while (j >= 0 && stride_key(buf[j].ss) < stride_key(d.ss)) {
            buf[j + 1] = buf[j];
            j--;
        }
        buf[j + 1] = d;
    }
    /* merge contiguous neighbours of the same kind */
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0) {
            rdim *o = &buf[m - 1];
            if (o->red == buf[i].red && o->ss == buf[i].ss * buf[i].n && o->ds == buf[i].ds * buf[i].n) {
                o->n *= buf[i].n;
                o->ss = buf[i].ss;
                o->ds = buf[i].ds;
                continue;
            }
        }
        buf[m++] = buf[i];
    }
    if (m == 0) {
        p->run = (rdim){.n = 1, .ss = 0, .ds = 0, .red = true};
    } else {
        p->run = buf[--m];
    }
    /* split the outer dims: kept then reduced, each in order */
    rdim *k = buf + r, *rd = buf + 2 * r;
    p->nk = p->nr = 0;
    p->nK = p->nR = 1;
    for (int i = 0; i < m; i++) {
        if (buf[i].red) {
            rd[p->nr++] = buf[i];
            p->nR *= buf[i].n;
        } else {
            k[p->nk++] = buf[i];
            p->nK *= buf[i].n;
        }
    }
    p->kept = k;
    p->red = rd;
    return EMILY_OK;
}

typedef struct {
    _Alignas(16) unsigned char b[32];
} accbuf;

/* Folds the flattened (outer reduced position, run index) range [a, b)
 * of one output into acc. */
static void fold_span(const emi_reducer *R, const rplan *p, const char *base, size_t es, int64_t a, int64_t b,
                      void *acc) {
    int64_t rn = p->run.n;
    while (a < b) {
        int64_t r = a / rn, j = a % rn;
        int64_t len = rn - j < b - a ? rn - j : b - a;
        int64_t ro;
        odo(p->red, p->nr, r, &ro, NULL);
        R->run(acc, base + (ro + j * p->run.ss) * (int64_t)es, len, p->run.ss);
        a += len;
    }
}

/* An ordered fold of one output's per elements: in order, or past
 * ORDERED_CHUNK chunk by chunk (each from the fold's start), the chunks
 * combined in order starting from the first. */
static void fold_ordered(const emi_reducer *R, const rplan *p, const char *base, size_t es, int64_t per, void *acc) {
    R->init(acc, 1);
    fold_span(R, p, base, es, 0, per < ORDERED_CHUNK ? per : ORDERED_CHUNK, acc);
    for (int64_t lo = ORDERED_CHUNK; lo < per; lo += ORDERED_CHUNK) {
        accbuf part;
        R->init(part.b, 1);
        fold_span(R, p, base, es, lo, per - lo < ORDERED_CHUNK ? per : lo + ORDERED_CHUNK, part.b);
        R->merge(acc, part.b);
    }
}

/* Few outputs with long ordered folds: their fixed chunks over threads,
 * then each output's chunks combined in order. False when out of memory
 * (the caller folds serially: same result). */
static bool reduce_rows_ordered_chunks(const emi_reducer *R, const rplan *p, const char *sbase, size_t ses, char *dbase,
                                       size_t des, int64_t per) {
    int64_t nc = (per + ORDERED_CHUNK - 1) / ORDERED_CHUNK, units = p->nK * nc;
    accbuf *parts = malloc(sizeof(accbuf) * (size_t)units);
    if (!parts) return false;
    EMILY_PAR_FOR(true, u, units, {
        int64_t o = u / nc, c = u % nc, ko, kd;
        odo(p->kept, p->nk, o, &ko, &kd);
        int64_t lo = c * ORDERED_CHUNK, hi = per - lo < ORDERED_CHUNK ? per : lo + ORDERED_CHUNK;
        R->init(parts[u].b, 1);
        fold_span(R, p, sbase + ko * (int64_t)ses, ses, lo, hi, parts[u].b);
    });
    for (int64_t o = 0; o < p->nK; o++) {
        int64_t ko, kd;
        odo(p->kept, p->nk, o, &ko, &kd);
        for (int64_t c = 1; c < nc; c++) R->merge(parts[o * nc].b, parts[o * nc + c].b);
        R->store(dbase + kd * (int64_t)des, 0, parts[o * nc].b, 1);
    }
    free(parts);
    return true;
}

/* Many outputs, each folded whole by one thread: blocks of outputs are
 * jobs of the engine's caller-runs pool (an OpenMP team per reduction
 * waited a scheduler slice for a descheduled thread on a loaded host). */
typedef struct rows_job {
    const emi_reducer *R;
    const rplan *p;
    const char *sbase;
    char *dbase;
    size_t ses, des;
    int64_t per;
} rows_job;

static void rows_range(void *ctx, int64_t o0, int64_t o1) {
    const rows_job *j = ctx;
    const emi_reducer *R = j->R;
    const rplan *p = j->p;
    for (int64_t o = o0; o < o1; o++) {
        int64_t ko, kd;
        odo(p->kept, p->nk, o, &ko, &kd);
        accbuf acc;
        if (R->ordered) {
            fold_ordered(R, p, j->sbase + ko * (int64_t)j->ses, j->ses, j->per, acc.b);
        } else {
            R->init(acc.b, 1);
            fold_span(R, p, j->sbase + ko * (int64_t)j->ses, j->ses, 0, j->per, acc.b);
        }
        R->store(j->dbase + kd * (int64_t)j->des, 0, acc.b, 1);
    }
}

static void rows_on_pool(const emi_reducer *R, const rplan *p, const char *sbase, size_t ses, char *dbase, size_t des,
                         int64_t per, bool par) {
    rows_job j = {R, p, sbase, dbase, ses, des, per};
    /* about REDUCE_PAR_MIN / 4 elements a job */
    int64_t want = per > 0 ? (REDUCE_PAR_MIN / 4) / per : p->nK;
    emi_cpu_parallel_ranges(p->nK, want, par, rows_range, &j);
}

static void reduce_rows(const emi_reducer *R, const rplan *p, const char *sbase, size_t ses, char *dbase, size_t des,
                        int64_t total) {
    int nth = omp_get_max_threads();
    int64_t per = p->nR * p->run.n; /* elements per output */
    bool par = total >= REDUCE_PAR_MIN && nth > 1;
    if (R->ordered) {
        if (par && p->nK < 2 * (int64_t)nth && per > ORDERED_CHUNK &&
            reduce_rows_ordered_chunks(R, p, sbase, ses, dbase, des, per))
            return;
        rows_on_pool(R, p, sbase, ses, dbase, des, per, par);
        return;
    }
    if (par && p->nK < 2 * (int64_t)nth && per >= REDUCE_PAR_MIN / 4) {
        /* few outputs: split each one's elements over the threads */
        accbuf *parts = malloc(sizeof(accbuf) * (size_t)nth);
        if (parts) {
            for (int64_t o = 0; o < p->nK; o++) {
                int64_t ko, kd;
                odo(p->kept, p->nk, o, &ko, &kd);
                const char *b = sbase + ko * (int64_t)ses;
                int used = nth;
#pragma omp parallel num_threads(nth)
                {
                    red_share sh = red_team_share(per);
#pragma omp single
                    used = sh.T;
                    R->init(parts[sh.t].b, 1);
                    fold_span(R, p, b, ses, sh.lo, sh.hi, parts[sh.t].b);
                }
                accbuf acc;
                R->init(acc.b, 1);
                for (int t = 0; t < used; t++) R->merge(acc.b, parts[t].b);
                R->store(dbase + kd * (int64_t)des, 0, acc.b, 1);
            }
            free(parts);
            return;
        }
    }
    rows_on_pool(R, p, sbase, ses, dbase, des, per, par);
}

/* Column reductions: each task folds a block of up to COLS_MAX outputs
 * (consecutive along the innermost, kept dim) over the reduced rows, one
 * row segment at a time, so the input is read in long sequential
 * stretches and the fold vectorizes across outputs. With fewer blocks
 * than threads, the rows are split too and the partial folds merged in
 * order. */
static emily_status reduce_cols(const emi_reducer *R, const rplan *p, const char *sbase, size_t ses, char *dbase,
                                size_t des, int64_t total) {
    int nth = omp_get_max_threads();
    bool par = total >= REDUCE_PAR_MIN && nth > 1;
    int64_t T = par ? nth : 1, rn = p->run.n, bw = COLS_MAX;
    if (par && p->nK < T) {
        int64_t want = (rn + T - 1) / T;
        want = (want + 63) / 64 * 64;
        if (want < bw) bw = want;
    }
    if (bw > rn) bw = rn;
    int64_t nblk = (rn + bw - 1) / bw, tasks = p->nK * nblk;
    int64_t parts = 1;
    if (R->ordered) parts = (p->nR + ORDERED_CHUNK - 1) / ORDERED_CHUNK; /* fixed chunks of rows */
    else if (par && tasks < T && p->nR >= 4 * T) parts = T / tasks;
    size_t as = R->acc_size;
    /* accumulators: one block per thread, or per (block, row part) */
    int64_t slots = parts > 1 ? tasks * parts : T;
    unsigned char *bufs = malloc((size_t)slots * (size_t)bw * as + 64);
    if (!bufs) return emily_error(EMILY_ERR_MEMORY, "reduce: out of host memory");
    int64_t units = tasks * parts;
    EMILY_PAR_FOR(par, u, units, {
        int64_t task = u / parts, part = u % parts;
        int64_t o = task / nblk, j0 = (task % nblk) * bw;
        int64_t len = rn - j0 < bw ? rn - j0 : bw;
        unsigned char *acc = bufs + (size_t)(parts > 1 ? u : omp_get_thread_num()) * (size_t)bw * as;
        int64_t ko, kd;
        odo(p->kept, p->nk, o, &ko, &kd);
        R->init(acc, len);
        const char *b = sbase + (ko + j0 * p->run.ss) * (int64_t)ses;
        int64_t r0 = p->nR * part / parts, r1 = p->nR * (part + 1) / parts;
        if (R->ordered) {
            r0 = part * ORDERED_CHUNK;
            r1 = p->nR - r0 < ORDERED_CHUNK ? p->nR : r0 + ORDERED_CHUNK;
        }
        for (int64_t r = r0; r < r1; r++) {
            int64_t ro;
            odo(p->red, p->nr, r, &ro, NULL);
            R->cols(acc, b + ro * (int64_t)ses, len, p->run.ss);
        }
        if (parts == 1) R->store(dbase + (kd + j0 * p->run.ds) * (int64_t)des, p->run.ds, acc, len);
    });
    if (parts > 1) {
        for (int64_t task = 0; task < tasks; task++) {
            int64_t o = task / nblk, j0 = (task % nblk) * bw;
            int64_t len = rn - j0 < bw ? rn - j0 : bw;
            unsigned char *acc = bufs + (size_t)(task * parts) * (size_t)bw * as;
            for (int64_t part = 1; part < parts; part++) {
                const unsigned char *pa = bufs + (size_t)(task * parts + part) * (size_t)bw * as;
                for (int64_t j = 0; j < len; j++) R->merge(acc + (size_t)j * as, pa + (size_t)j * as);
            }
            int64_t ko, kd;
            odo(p->kept, p->nk, o, &ko, &kd);
            R->store(dbase + (kd + j0 * p->run.ds) * (int64_t)des, p->run.ds, acc, len);
        }
    }
    free(bufs);
    return EMILY_OK;
}

emily_status emi_cpu_reduce(emily_reduce_op op, emily_tensor *dst, const emily_tensor *src, const bool *reduced) {
    if ((unsigned)op >= EMILY_REDUCE_OP_COUNT || !emily_dtype_valid(src->dtype))
        return emily_error(EMILY_ERR_INTERNAL, "reduce: bad op or dtype");
    const emi_reducer *R = reducers[op][src->dtype];
    if (!R)
        return emily_error(EMILY_ERR_TYPE, "reduce: %s is not supported for this operation",
                           emily_dtype_name(src->dtype));
    if (dst->size == 0) return EMILY_OK;
    size_t ses = emily_dtype_size(src->dtype), des = emily_dtype_size(dst->dtype);
    char *dbase = emily_tensor_base(dst);
    if (src->size == 0) {
        /* every output folds nothing: the starting value */
        if (op == EMILY_REDUCE_MAX || op == EMILY_REDUCE_MIN)
            return emily_error(EMILY_ERR_SHAPE, "reduce: cannot take the max/min of an empty axis");
        _Alignas(64) unsigned char acc[32];
        R->init(acc, 1);
        for (int64_t o = 0; o < dst->size; o++) R->store(dbase + o * (int64_t)des, 0, acc, 1);
        return EMILY_OK;
    }
    rdim *buf = malloc(sizeof(rdim) * (3 * (size_t)src->rank + 1));
    if (!buf) return emily_error(EMILY_ERR_MEMORY, "reduce: out of host memory");
    rplan p;
    emily_status s = plan_reduce(dst, src, reduced, buf, &p);
    if (!s) {
        const char *sbase = emily_tensor_base(src);
        if (p.run.red) reduce_rows(R, &p, sbase, ses, dbase, des, src->size);
        else s = reduce_cols(R, &p, sbase, ses, dbase, des, src->size);
        /* only over a finished fold: the first error is the answer (the
         * fix-up's own success must not hide a failed fold's status) */
        if (!s && (op == EMILY_REDUCE_MAX || op == EMILY_REDUCE_MIN) && emily_dtype_is_float(src->dtype))
            s = emi_reduce_fix_zero_signs(dst, src, reduced);
    }
    free(buf);
    return s;
}
