/* Signs of zero (docs/semantics.md, "Signs of zero"): every element-wise op
 * of signed_zero_table.h, and the reductions, scans, windows, dot,
 * conversions, clip and select on -0.0/+0.0 data, in every float type and
 * in layouts that take different kernel paths: contiguous shapes around
 * the SIMD widths and the parallel chunking ({1}, {1,1}, {7}, {16}, {17},
 * {67,129}, {129,257}, {1024,1025}), transposed, strided, reversed and
 * broadcast views, and rank-0 operands.
 *
 * CPU cases compare each element with the reference's answer. GPU cases
 * run the same cases on cuda:0 and compare with both the reference's
 * answer and the CPU engine's bits (both NaN counts as equal: the
 * devices' NaN payloads may differ); without a usable CUDA device they
 * are listed as SKIPPED, never counted as passed. EMILY_TEST_CUDA_ON_CPU=1
 * runs the GPU cases on the CPU (a self-check of this file). */
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"
#include "signed_zero_table.h"

#define NROWS(t) (sizeof(t) / sizeof *(t))

static const emily_dtype REALS[] = {EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64};
static const emily_dtype COMPLEXES[] = {EMILY_C64, EMILY_C128};

static emily_device GPU = {EMILY_DEVICE_CUDA, 0};
/* EMILY_TEST_CUDA_ON_CPU=1: the GPU cases run on the CPU and still compare
 * with a second CPU run, so the comparison code is checked too. */
static bool gpu_on_cpu;

/* Whether results on dev are compared with the CPU engine's bits. */
static bool cross_check(emily_device dev) { return dev.type != EMILY_DEVICE_CPU || gpu_on_cpu; }

/* ---- values ------------------------------------------------------------ */

static uint64_t bits_of(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
/* The same double, -0.0 and +0.0 apart; any NaN equals any NaN. */
static bool same_value(double got, double want) {
    if (isnan(want)) return isnan(got);
    return bits_of(got) == bits_of(want);
}
/* "-" before a negative zero (printf's %g writes -0 already), "+" before a positive one. */
static const char *sgn(double x) { return x == 0 && !signbit(x) ? "+" : ""; }

/* Index of x in vals (bit for bit), or -1. */
static int value_index(const double *vals, int n, double x) {
    for (int i = 0; i < n; i++)
        if (bits_of(vals[i]) == bits_of(x)) return i;
    return -1;
}

/* ---- tensors ----------------------------------------------------------- */

/* The layouts an operand of logical shape {r, c} is given in. */
typedef enum layout {
    LAY_CONTIGUOUS,
    LAY_TRANSPOSED, /* a {c, r} tensor transposed */
    LAY_STRIDED,    /* every other column of a {r, 2c} tensor */
    LAY_REVERSED,   /* both axes reversed */
    LAY_ROW,        /* a {1, c} row broadcast to {r, c} */
    LAY_COLUMN,     /* a {r, 1} column broadcast to {r, c} */
    LAY_COUNT
} layout;
static const char *const layout_names[] = {"contiguous", "transposed", "strided", "reversed", "row", "column"};

/* n values (parts: 2 per complex value) made into a dtype tensor on dev. */
static emily_tensor *make(emily_device dev, emily_dtype dt, int rank, const int64_t *shape, const double *parts) {
    emily_dtype wide = emily_dtype_is_complex(dt) ? EMILY_C128 : EMILY_F64;
    emily_tensor *w = t_from(wide, rank, shape, parts), *n = NULL, *d = NULL;
    if (!w) return NULL;
    CHECK_OK(emily_as_type(w, dt, &n));
    emily_tensor_release(w);
    if (!n || dev.type == EMILY_DEVICE_CPU) return n;
    CHECK_OK(emily_to_device(n, dev, &d));
    emily_tensor_release(n);
    return d;
}

/* An operand of logical shape {r, c} in layout lay, made from a base
 * tensor whose k-th element (row-major) is value (k + k / nvals * salt) %
 * nvals of vals (parts doubles each): a salt coprime to nvals shifts the
 * cycle every period, so two operands of different salts meet in every
 * pair of values. */
static emily_tensor *operand(emily_device dev, emily_dtype dt, int64_t r, int64_t c, layout lay, const double *vals,
                             int nvals, int parts, int64_t salt) {
    int64_t base[2] = {r, c};
    if (lay == LAY_TRANSPOSED) base[0] = c, base[1] = r;
    if (lay == LAY_STRIDED) base[1] = 2 * c;
    if (lay == LAY_ROW) base[0] = 1;
    if (lay == LAY_COLUMN) base[1] = 1;
    int64_t n = base[0] * base[1];
    double *p = malloc(sizeof(double) * (size_t)(n * parts));
    if (!p) return NULL;
    for (int64_t k = 0; k < n; k++) {
        int64_t v = (k + k / nvals * salt) % nvals;
        for (int q = 0; q < parts; q++) p[k * parts + q] = vals[v * parts + q];
    }
    emily_tensor *t = make(dev, dt, 2, base, p), *v = NULL;
    free(p);
    if (!t) return NULL;
    int64_t full[2] = {r, c};
    switch (lay) {
    case LAY_CONTIGUOUS: return t;
    case LAY_TRANSPOSED: CHECK_OK(emily_transpose(t, (const int[]){1, 0}, &v)); break;
    case LAY_STRIDED:
        /* Nx's lengths span the source: 2c - 1 columns from 1, every other one */
        CHECK_OK(emily_slice(t, (const int64_t[]){0, 1}, (const int64_t[]){r, 2 * c - 1}, (const int64_t[]){1, 2}, &v));
        break;
    case LAY_REVERSED: CHECK_OK(emily_reverse(t, 2, (const int[]){0, 1}, &v)); break;
    default: CHECK_OK(emily_broadcast(t, 2, full, (const int[]){0, 1}, &v)); break;
    }
    emily_tensor_release(t);
    return v;
}

/* The tensor's elements as doubles (parts for complex), row-major. */
static double *values_of(const emily_tensor *t) {
    emily_dtype wide = emily_dtype_is_complex(emily_tensor_dtype(t)) ? EMILY_C128 : EMILY_F64;
    int64_t n = emily_tensor_size(t) * (wide == EMILY_C128 ? 2 : 1);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    emily_tensor *w = NULL;
    if (!out) return NULL;
    CHECK_OK(emily_as_type(t, wide, &w));
    if (w) CHECK_OK(emily_to_binary(w, out, sizeof(double) * (size_t)n));
    emily_tensor_release(w);
    return out;
}

/* The raw bytes of t. */
static unsigned char *bytes_of(const emily_tensor *t) {
    size_t nb = emily_tensor_nbytes(t);
    unsigned char *b = malloc(nb ? nb : 1);
    if (b) CHECK_OK(emily_to_binary(t, b, nb));
    return b;
}

/* Each element of a (the device's answer) equals the same element of b
 * (the CPU's), bit for bit or both NaN. */
static bool same_bits_as_cpu(const emily_tensor *a, const emily_tensor *b, const char *what) {
    if (emily_tensor_dtype(a) != emily_tensor_dtype(b) || emily_tensor_size(a) != emily_tensor_size(b)) {
        fprintf(stderr, "  FAIL %s: device and cpu results differ in type or size\n", what);
        harness_failures++;
        return false;
    }
    double *x = values_of(a), *y = values_of(b);
    unsigned char *p = bytes_of(a), *q = bytes_of(b);
    int parts = emily_dtype_is_complex(emily_tensor_dtype(a)) ? 2 : 1;
    size_t es = emily_dtype_size(emily_tensor_dtype(a)) / (size_t)parts;
    bool ok = x && y && p && q;
    for (int64_t i = 0; ok && i < emily_tensor_size(a) * parts; i++)
        if (!(isnan(x[i]) && isnan(y[i])) && memcmp(p + i * (int64_t)es, q + i * (int64_t)es, es) != 0) {
            fprintf(stderr, "  FAIL %s: element %lld: device %s%.17g, cpu %s%.17g\n", what, (long long)(i / parts),
                    sgn(x[i]), x[i], sgn(y[i]), y[i]);
            harness_failures++;
            ok = false;
        }
    free(x), free(y), free(p), free(q);
    return ok;
}

/* Checks that element i is want; reports a miss. */
static bool expect(const char *what, int64_t i, double got, double want) {
    if (same_value(got, want)) return true;
    fprintf(stderr, "  FAIL %s: element %lld: got %s%.17g, want %s%.17g\n", what, (long long)i, sgn(got), got,
            sgn(want), want);
    harness_failures++;
    return false;
}

/* ---- shapes --------------------------------------------------------------
 * Logical shapes {r, c}; all layouts for the small ones; for the two that
 * cross the CPU's parallel threshold (32768 elements, chunks of 16384)
 * contiguous and strided, and only contiguous for the largest. */
typedef struct shape2 {
    int64_t r, c;
    bool all_layouts;
} shape2;
static const shape2 shapes[] = {{1, 1, true},    {1, 7, true},      {1, 16, true},      {1, 17, true},
                                {67, 129, true}, {129, 257, false}, {1024, 1025, false}};

static bool shape_takes(const shape2 *s, layout lay) {
    return s->all_layouts || lay == LAY_CONTIGUOUS || (lay == LAY_STRIDED && s->r * s->c < 1000000);
}

/* ---- real unary ops ------------------------------------------------------ */

/* ---- real binary ops ----------------------------------------------------- */

#define MAXV 8
typedef struct binary_arg {
    emily_binary_op op;
    emily_dtype dt;
    const shape2 *shape;
    layout la, lb;
    bool scalar_a, scalar_b; /* a (or b) a rank-0 tensor of scalar_value */
    double scalar_value;
    double as[MAXV], bs[MAXV];
    int na, nb;
    double want[MAXV][MAXV];
    bool has[MAXV][MAXV]; /* no row: the reference raises, or its answer is not exact in every type */
    emily_tensor *a, *b;
} binary_arg;

/* The rows of op: its operand values and the answer for each pair. */
static void binary_rows(binary_arg *x) {
    const char *name = emily_binary_op_name(x->op);
    x->na = x->nb = 0;
    memset(x->has, 0, sizeof x->has);
    for (size_t i = 0; i < NROWS(sz_binary_rows); i++) {
        const sz_binary_row *r = &sz_binary_rows[i];
        if (strcmp(r->op, name) != 0) continue;
        int ia = value_index(x->as, x->na, r->a), ib = value_index(x->bs, x->nb, r->b);
        if (ia < 0 && x->na < MAXV) x->as[ia = x->na++] = r->a;
        if (ib < 0 && x->nb < MAXV) x->bs[ib = x->nb++] = r->b;
        if (ia >= 0 && ib >= 0) x->want[ia][ib] = r->want, x->has[ia][ib] = true;
    }
}

static emily_tensor *scalar(emily_device dev, emily_dtype dt, double v) { return make(dev, dt, 0, NULL, &v); }

static emily_tensor *run_binary(emily_device dev, binary_arg *x) {
    const shape2 *s = x->shape;
    x->a = x->scalar_a ? scalar(dev, x->dt, x->scalar_value)
                       : operand(dev, x->dt, s->r, s->c, x->la, x->as, x->na, 1, 0);
    /* b cycles with a period coprime to a's, so every pair shows up */
    x->b = x->scalar_b ? scalar(dev, x->dt, x->scalar_value)
                       : operand(dev, x->dt, s->r, s->c, x->lb, x->bs, x->nb, 1, 1);
    emily_tensor *out = NULL;
    if (x->a && x->b) CHECK_OK(emily_binary(x->op, x->a, x->b, EMILY_DTYPE_AUTO, &out));
    return out;
}

static void check_binary(const binary_arg *x, const emily_tensor *out, const char *what) {
    double *a = values_of(x->a), *b = values_of(x->b), *y = values_of(out);
    int64_t na = emily_tensor_size(x->a), nb = emily_tensor_size(x->b);
    for (int64_t i = 0; a && b && y && i < emily_tensor_size(out); i++) {
        int ia = value_index(x->as, x->na, a[na == 1 ? 0 : i]), ib = value_index(x->bs, x->nb, b[nb == 1 ? 0 : i]);
        if (ia < 0 || ib < 0 || !x->has[ia][ib]) continue;
        if (!expect(what, i, y[i], x->want[ia][ib])) break;
    }
    free(a), free(b), free(y);
}

static void release_operands(binary_arg *x) {
    emily_tensor_release(x->a);
    emily_tensor_release(x->b);
    x->a = x->b = NULL;
}

static void binary_one(emily_device dev, binary_arg *x, const char *what) {
    emily_tensor *out = run_binary(dev, x);
    if (out) check_binary(x, out, what);
    if (out && cross_check(dev)) {
        binary_arg c = *x;
        emily_tensor *cpu_out = run_binary(EMILY_CPU, &c);
        if (cpu_out) same_bits_as_cpu(out, cpu_out, what);
        emily_tensor_release(cpu_out);
        release_operands(&c);
    }
    emily_tensor_release(out);
    release_operands(x);
}

static void binary_cases(emily_device dev) {
    for (int op = 0; op < EMILY_BINARY_OP_COUNT; op++) {
        binary_arg x = {.op = (emily_binary_op)op};
        binary_rows(&x);
        if (x.na == 0) continue;
        const char *name = emily_binary_op_name(x.op);
        for (size_t d = 0; d < NROWS(REALS); d++) {
            x.dt = REALS[d];
            char what[160];
            for (size_t s = 0; s < NROWS(shapes); s++)
                for (int la = 0; la < LAY_COUNT; la++)
                    for (int lb = 0; lb < LAY_COUNT; lb++) {
                        /* each layout against a contiguous operand, and against itself */
                        if (!(la == 0 || lb == 0 || la == lb)) continue;
                        if (!shape_takes(&shapes[s], (layout)la) || !shape_takes(&shapes[s], (layout)lb)) continue;
                        x.shape = &shapes[s], x.la = (layout)la, x.lb = (layout)lb;
                        snprintf(what, sizeof what, "%s %s {%lld,%lld} %s x %s", name, emily_dtype_name(x.dt),
                                 (long long)x.shape->r, (long long)x.shape->c, layout_names[la], layout_names[lb]);
                        binary_one(dev, &x, what);
                    }
            /* a rank-0 operand on either side, for each of its values */
            static const shape2 mid = {67, 129, true};
            x.shape = &mid, x.la = x.lb = LAY_CONTIGUOUS;
            for (int side = 0; side < 2; side++)
                for (int k = 0; k < (side ? x.na : x.nb); k++) {
                    binary_arg y = x;
                    y.scalar_a = side == 1, y.scalar_b = side == 0;
                    y.scalar_value = side ? x.as[k] : x.bs[k];
                    snprintf(what, sizeof what, "%s %s with rank-0 %s %s%.17g", name, emily_dtype_name(y.dt),
                             side ? "a" : "b", sgn(y.scalar_value), y.scalar_value);
                    binary_one(dev, &y, what);
                }
        }
    }
}

/* ---- complex ops --------------------------------------------------------- */

static int cvalue_index(const double *parts, int n, double re, double im) {
    for (int i = 0; i < n; i++)
        if (bits_of(parts[2 * i]) == bits_of(re) && bits_of(parts[2 * i + 1]) == bits_of(im)) return i;
    return -1;
}

/* got (parts, or one real value when want_real) against want. */
static bool expect_c(const char *what, int64_t i, const double *got, bool want_real, sz_cplx want) {
    if (want_real) return expect(what, i, got[0], want.re);
    return expect(what, i, got[0], want.re) && expect(what, i, got[1], want.im);
}

static bool real_result(const char *op) {
    return !strcmp(op, "abs") || !strcmp(op, "real") || !strcmp(op, "imag") || !strcmp(op, "phase");
}

/* One element-wise unary op on the rows of its table: the real table
 * (parts 1) or the complex one (parts 2). */
typedef struct unary_arg {
    emily_unary_op op;
    emily_dtype dt;
    const shape2 *shape;
    layout lay;
    int parts;
    double xs[2 * 16];
    sz_cplx wants[16]; /* a real answer in .re */
    int n;
    emily_tensor *in; /* filled by run_unary */
} unary_arg;

/* The rows of a->op in its table: the inputs and the reference's answers. */
static void unary_rows(unary_arg *a) {
    const char *name = emily_unary_op_name(a->op);
    a->n = 0;
    if (a->parts == 1) {
        for (size_t i = 0; i < NROWS(sz_unary_rows) && a->n < 16; i++)
            if (strcmp(sz_unary_rows[i].op, name) == 0) {
                a->xs[a->n] = sz_unary_rows[i].x;
                a->wants[a->n++] = (sz_cplx){sz_unary_rows[i].want, 0.0};
            }
        return;
    }
    for (size_t i = 0; i < NROWS(sz_cunary_rows) && a->n < 16; i++)
        if (strcmp(sz_cunary_rows[i].op, name) == 0) {
            a->xs[2 * a->n] = sz_cunary_rows[i].x.re, a->xs[2 * a->n + 1] = sz_cunary_rows[i].x.im;
            a->wants[a->n++] = sz_cunary_rows[i].want;
        }
}

static emily_tensor *run_unary(emily_device dev, unary_arg *a) {
    emily_tensor *out = NULL;
    a->in = operand(dev, a->dt, a->shape->r, a->shape->c, a->lay, a->xs, a->n, a->parts, 3);
    if (a->in) CHECK_OK(emily_unary(a->op, a->in, &out));
    return out;
}

/* Every output element is the table's answer for its input. */
static void check_unary(const unary_arg *a, const emily_tensor *out, const char *what) {
    bool rr = a->parts == 1 || real_result(emily_unary_op_name(a->op));
    double *x = values_of(a->in), *y = values_of(out);
    for (int64_t i = 0; x && y && i < emily_tensor_size(out); i++) {
        int k = a->parts == 1 ? value_index(a->xs, a->n, x[i]) : cvalue_index(a->xs, a->n, x[2 * i], x[2 * i + 1]);
        if (k < 0 || !expect_c(what, i, y + (rr ? i : 2 * i), rr, a->wants[k])) break;
    }
    free(x), free(y);
}

/* Runs every row of the real (parts 1) or complex (parts 2) table in each
 * of the types, shapes and layouts on dev (and, for a device other than
 * the CPU, the same on the CPU to compare). Complex types take the shapes
 * that run in all layouts. */
static void unary_cases(emily_device dev, const emily_dtype *types, size_t ntypes, int parts) {
    for (int op = 0; op < EMILY_UNARY_OP_COUNT; op++) {
        unary_arg a = {.op = (emily_unary_op)op, .parts = parts};
        unary_rows(&a);
        if (a.n == 0) continue;
        for (size_t d = 0; d < ntypes; d++)
            for (size_t s = 0; s < NROWS(shapes); s++)
                for (int lay = 0; lay < LAY_COUNT; lay++) {
                    if (parts == 2 ? !shapes[s].all_layouts : !shape_takes(&shapes[s], (layout)lay)) continue;
                    a.dt = types[d], a.shape = &shapes[s], a.lay = (layout)lay;
                    char what[128];
                    snprintf(what, sizeof what, "%s %s {%lld,%lld} %s", emily_unary_op_name(a.op),
                             emily_dtype_name(a.dt), (long long)a.shape->r, (long long)a.shape->c, layout_names[lay]);
                    emily_tensor *out = run_unary(dev, &a);
                    if (out) check_unary(&a, out, what);
                    if (out && cross_check(dev)) {
                        emily_tensor *dev_in = a.in, *cpu_out = run_unary(EMILY_CPU, &a);
                        if (cpu_out) same_bits_as_cpu(out, cpu_out, what);
                        emily_tensor_release(cpu_out);
                        emily_tensor_release(a.in);
                        a.in = dev_in;
                    }
                    emily_tensor_release(out);
                    emily_tensor_release(a.in);
                }
    }
}

typedef struct cbinary_arg {
    emily_binary_op op;
    emily_dtype dt;
    layout la, lb;
    double as[2 * MAXV], bs[2 * MAXV];
    int na, nb;
    sz_cplx want[MAXV][MAXV];
    bool has[MAXV][MAXV];
    emily_tensor *a, *b;
} cbinary_arg;

static void cbinary_rows(cbinary_arg *x) {
    const char *name = emily_binary_op_name(x->op);
    for (size_t i = 0; i < NROWS(sz_cbinary_rows); i++) {
        const sz_cbinary_row *r = &sz_cbinary_rows[i];
        if (strcmp(r->op, name) != 0) continue;
        int ia = cvalue_index(x->as, x->na, r->a.re, r->a.im), ib = cvalue_index(x->bs, x->nb, r->b.re, r->b.im);
        if (ia < 0 && x->na < MAXV) ia = x->na++, x->as[2 * ia] = r->a.re, x->as[2 * ia + 1] = r->a.im;
        if (ib < 0 && x->nb < MAXV) ib = x->nb++, x->bs[2 * ib] = r->b.re, x->bs[2 * ib + 1] = r->b.im;
        if (ia >= 0 && ib >= 0) x->want[ia][ib] = r->want, x->has[ia][ib] = true;
    }
}

static emily_tensor *run_cbinary(emily_device dev, cbinary_arg *x) {
    static const shape2 s = {67, 129, true};
    x->a = operand(dev, x->dt, s.r, s.c, x->la, x->as, x->na, 2, 0);
    x->b = operand(dev, x->dt, s.r, s.c, x->lb, x->bs, x->nb, 2, 1);
    emily_tensor *out = NULL;
    if (x->a && x->b) CHECK_OK(emily_binary(x->op, x->a, x->b, EMILY_DTYPE_AUTO, &out));
    return out;
}

static void check_cbinary(const cbinary_arg *x, const emily_tensor *out, const char *what) {
    double *a = values_of(x->a), *b = values_of(x->b), *y = values_of(out);
    for (int64_t i = 0; a && b && y && i < emily_tensor_size(out); i++) {
        int ia = cvalue_index(x->as, x->na, a[2 * i], a[2 * i + 1]);
        int ib = cvalue_index(x->bs, x->nb, b[2 * i], b[2 * i + 1]);
        if (ia < 0 || ib < 0 || !x->has[ia][ib]) continue;
        if (!expect_c(what, i, y + 2 * i, false, x->want[ia][ib])) break;
    }
    free(a), free(b), free(y);
}

static void cbinary_cases(emily_device dev) {
    for (int op = 0; op < EMILY_BINARY_OP_COUNT; op++) {
        cbinary_arg x = {.op = (emily_binary_op)op};
        cbinary_rows(&x);
        if (x.na == 0) continue;
        for (size_t d = 0; d < NROWS(COMPLEXES); d++)
            for (int la = 0; la < LAY_COUNT; la++)
                for (int lb = 0; lb < LAY_COUNT; lb++) {
                    if (!(la == 0 || lb == 0)) continue;
                    x.dt = COMPLEXES[d], x.la = (layout)la, x.lb = (layout)lb;
                    char what[128];
                    snprintf(what, sizeof what, "%s %s %s x %s", emily_binary_op_name(x.op), emily_dtype_name(x.dt),
                             layout_names[la], layout_names[lb]);
                    emily_tensor *out = run_cbinary(dev, &x);
                    if (out) check_cbinary(&x, out, what);
                    if (out && cross_check(dev)) {
                        cbinary_arg c = x;
                        emily_tensor *cpu_out = run_cbinary(EMILY_CPU, &c);
                        if (cpu_out) same_bits_as_cpu(out, cpu_out, what);
                        emily_tensor_release(cpu_out);
                        emily_tensor_release(c.a);
                        emily_tensor_release(c.b);
                    }
                    emily_tensor_release(out);
                    emily_tensor_release(x.a);
                    emily_tensor_release(x.b);
                }
    }
}

/* ---- reductions, scans, windows and dot of zeros ---------------------------
 * Inputs hold only zeros: all -0.0, all +0.0, or a mix. The reference's
 * rules (docs/semantics.md, "Signs of zero"): sum and dot start from the
 * integer 0, so their zero is +0.0; products multiply the signs; max/min
 * keep the first of equal values in fold (row-major) order; a cumulative
 * sum starts from its first element, so it is -0.0 while every element so
 * far is -0.0; window sums start from +0.0. Max/min scans and windows of
 * mixed zeros depend on Nx's tree order and are left to the corpus. */

static const double NEG[] = {-0.0}, POS[] = {0.0}, MIX[] = {-0.0, -0.0, 0.0};
typedef struct zeros {
    const char *name;
    const double *vals;
    int n;
} zeros;
static const zeros patterns[] = {{"all -0", NEG, 1}, {"all +0", POS, 1}, {"mixed", MIX, 3}};

static const layout zero_layouts[] = {LAY_CONTIGUOUS, LAY_TRANSPOSED, LAY_REVERSED, LAY_STRIDED};

/* The answer for one output: a fold of x[first + k * step], k < n, in
 * that order; kind 0 sum, 1 product, 2 max, 3 min, 4 cumulative sum. */
static double fold_expect(int kind, const double *x, int64_t first, int64_t step, int64_t n) {
    double f = x[first];
    bool neg = false, all_neg = true;
    for (int64_t k = 0; k < n; k++) {
        double v = x[first + k * step];
        neg ^= signbit(v) != 0;
        all_neg &= signbit(v) != 0;
    }
    switch (kind) {
    case 0: return 0.0;              /* sum: from the integer 0 */
    case 1: return neg ? -0.0 : 0.0; /* product */
    case 2:
    case 3: return f;                     /* max/min: the first */
    default: return all_neg ? -0.0 : 0.0; /* 4, cumulative sum: from the first element */
    }
}

/* Runs f on dev: NULL with *unsupported set when dev has no kernel. */
typedef emily_status (*zero_op)(const emily_tensor *in, int which, emily_tensor **out);

static emily_status do_reduce(const emily_tensor *in, int which, emily_tensor **out) {
    static const emily_reduce_op ops[] = {EMILY_REDUCE_SUM, EMILY_REDUCE_PRODUCT, EMILY_REDUCE_MAX, EMILY_REDUCE_MIN};
    int axes_set = which / 4, naxes = axes_set == 2 ? 2 : 1;
    int axes[2] = {axes_set == 1 ? 1 : 0, 1};
    return emily_reduce(ops[which % 4], in, naxes, axes, false, EMILY_DTYPE_AUTO, out);
}
static emily_status do_cumulative(const emily_tensor *in, int which, emily_tensor **out) {
    static const emily_cumulative_op ops[] = {EMILY_CUMULATIVE_SUM, EMILY_CUMULATIVE_PRODUCT, EMILY_CUMULATIVE_MAX,
                                              EMILY_CUMULATIVE_MIN};
    return emily_cumulative(ops[which % 4], in, (which / 4) % 2, which / 8 != 0, out);
}
/* Windows of 2 x 3, stride 1, padded by one row below and one column
 * before (the padding is the op's identity: 0, 1, -inf, +inf). */
static emily_status do_window(const emily_tensor *in, int which, emily_tensor **out) {
    static const int64_t w[2] = {2, 3}, st[2] = {1, 1}, lo[2] = {0, 1}, hi[2] = {1, 0}, dil[2] = {1, 1};
    static const emily_window_op ops[] = {EMILY_WINDOW_SUM, EMILY_WINDOW_PRODUCT, EMILY_WINDOW_MAX, EMILY_WINDOW_MIN};
    return emily_window_reduce(ops[which], in, 2, w, st, lo, hi, dil, out);
}

/* The expected output of family f (0 reduce, 1 cumulative, 2 window) for
 * which, from the input's values x ({r, c}); ne its size. NULL: not
 * checked (mixed zeros in a max/min scan or window). */
static double *zero_expect(int f, int which, const double *x, int64_t r, int64_t c, bool uniform, int64_t *ne) {
    int kind = which % 4;
    bool maxmin = kind >= 2;
    if (f > 0 && maxmin && !uniform) return NULL;
    if (f == 1 && kind == 0) kind = 4;
    int64_t n = f == 0 ? (which / 4 == 0 ? c : which / 4 == 1 ? r : 1) : f == 1 ? r * c : r * (c - 1);
    double *e = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!e) return NULL;
    *ne = n;
    for (int64_t o = 0; o < n; o++) {
        if (f == 0) { /* reduce: axis 0 (outputs along c), axis 1 (along r), both */
            int a = which / 4;
            e[o] = a == 0   ? fold_expect(kind, x, o, c, r)
                   : a == 1 ? fold_expect(kind, x, o * c, 1, c)
                            : fold_expect(kind, x, 0, 1, r * c);
        } else if (f == 1) { /* scans: filled line by line below */
            e[o] = 0.0;
        } else { /* window rows i..i+1, columns j-1..j+1 (padding skipped) */
            int64_t i = o / (c - 1), j = o % (c - 1);
            bool neg = false;
            for (int64_t di = 0; di < 2; di++)
                for (int64_t dj = -1; dj < 2; dj++) {
                    int64_t ii = i + di, jj = j + dj;
                    if (ii < r && jj >= 0 && jj < c) neg ^= signbit(x[ii * c + jj]) != 0;
                }
            e[o] = kind == 0 ? 0.0 : kind == 1 ? (neg ? -0.0 : 0.0) : x[0];
        }
    }
    if (f == 1) { /* each line along the axis, in scan order (from the end when reversed) */
        int axis = (which / 4) % 2;
        bool rev = which / 8 != 0;
        int64_t lines = axis == 0 ? c : r, len = axis == 0 ? r : c, step = axis == 0 ? c : 1;
        for (int64_t l = 0; l < lines; l++) {
            bool neg = false, all_neg = true;
            for (int64_t k = 0; k < len; k++) {
                int64_t at = (axis == 0 ? l : l * c) + (rev ? len - 1 - k : k) * step;
                neg ^= signbit(x[at]) != 0;
                all_neg &= signbit(x[at]) != 0;
                e[at] = kind == 4 ? (all_neg ? -0.0 : 0.0) : kind == 1 ? (neg ? -0.0 : 0.0) : x[at];
            }
        }
    }
    return e;
}

static void zero_family(emily_device dev, int f, zero_op run, int nwhich, const char *fname) {
    /* {129, 257}: over the CPU's parallel threshold */
    static const shape2 zshapes[] = {{1, 2, true}, {5, 3, true}, {67, 129, true}, {129, 257, false}};
    bool said = false;
    for (size_t d = 0; d < NROWS(REALS); d++)
        for (size_t s = 0; s < NROWS(zshapes); s++)
            for (size_t l = 0; l < NROWS(zero_layouts); l++)
                for (size_t p = 0; p < NROWS(patterns); p++)
                    for (int which = 0; which < nwhich; which++) {
                        const shape2 *sh = &zshapes[s];
                        if (!shape_takes(sh, zero_layouts[l])) continue;
                        emily_tensor *in = operand(dev, REALS[d], sh->r, sh->c, zero_layouts[l], patterns[p].vals,
                                                   patterns[p].n, 1, 1),
                                     *out = NULL;
                        if (!in) continue;
                        emily_status st = run(in, which, &out);
                        char what[160];
                        snprintf(what, sizeof what, "%s %d %s {%lld,%lld} %s %s", fname, which,
                                 emily_dtype_name(REALS[d]), (long long)sh->r, (long long)sh->c,
                                 layout_names[zero_layouts[l]], patterns[p].name);
                        if (st == EMILY_ERR_UNSUPPORTED && dev.type != EMILY_DEVICE_CPU) {
                            if (!said)
                                printf("signed_zero: SKIPPED %s on this device: %s\n", fname, emily_last_error());
                            said = true;
                            emily_tensor_release(in);
                            return;
                        }
                        CHECK(st == EMILY_OK);
                        double *x = values_of(in), *y = out ? values_of(out) : NULL;
                        int64_t ne = 0;
                        double *e = x ? zero_expect(f, which, x, sh->r, sh->c, patterns[p].n == 1, &ne) : NULL;
                        if (e && y) {
                            CHECK(ne == emily_tensor_size(out));
                            for (int64_t o = 0; o < ne && o < emily_tensor_size(out); o++)
                                if (!expect(what, o, y[o], e[o])) break;
                        }
                        if (out && cross_check(dev)) {
                            emily_tensor *cin = operand(EMILY_CPU, REALS[d], sh->r, sh->c, zero_layouts[l],
                                                        patterns[p].vals, patterns[p].n, 1, 1),
                                         *cout = NULL;
                            if (cin) CHECK_OK(run(cin, which, &cout));
                            if (cout) same_bits_as_cpu(out, cout, what);
                            emily_tensor_release(cin);
                            emily_tensor_release(cout);
                        }
                        free(x), free(y), free(e);
                        emily_tensor_release(in);
                        emily_tensor_release(out);
                    }
}

/* Zero products summed: +0.0 at both dot precisions (the reference starts
 * from the integer 0; BLAS and cuBLAS from +0.0). */
static void dot_of_zeros(emily_device dev) {
    static const int64_t dims[][3] = {{1, 1, 1}, {3, 4, 5}, {7, 16, 17}, {67, 129, 33}, {1, 300, 1}};
    static const double bvals[] = {-1.0, 2.0, -0.0, 0.0, -0.5};
    for (int prec = 0; prec < 2; prec++) {
        emily_dot_precision saved;
        CHECK_OK(emily_dot_set_thread_precision(prec ? EMILY_DOT_PRECISION_FAST : EMILY_DOT_PRECISION_HIGHEST, &saved));
        for (size_t d = 0; d < NROWS(REALS); d++)
            for (size_t k = 0; k < NROWS(dims); k++)
                for (size_t p = 0; p < NROWS(patterns); p++)
                    for (int lay = 0; lay < 2; lay++) {
                        int64_t m = dims[k][0], kk = dims[k][1], n = dims[k][2];
                        emily_tensor *a = operand(dev, REALS[d], m, kk, lay ? LAY_TRANSPOSED : LAY_CONTIGUOUS,
                                                  patterns[p].vals, patterns[p].n, 1, 1);
                        emily_tensor *b = operand(dev, REALS[d], kk, n, LAY_CONTIGUOUS, bvals, 5, 1, 0), *out = NULL;
                        if (a && b)
                            CHECK_OK(emily_dot(a, 1, (const int[]){1}, 0, NULL, b, 1, (const int[]){0}, 0, NULL,
                                               EMILY_DTYPE_AUTO, &out));
                        char what[128];
                        snprintf(what, sizeof what, "dot %s %s %lldx%lldx%lld %s %s", prec ? "fast" : "highest",
                                 emily_dtype_name(REALS[d]), (long long)m, (long long)kk, (long long)n,
                                 lay ? "transposed" : "contiguous", patterns[p].name);
                        double *y = out ? values_of(out) : NULL;
                        for (int64_t i = 0; y && i < emily_tensor_size(out); i++)
                            if (!expect(what, i, y[i], 0.0)) break;
                        free(y);
                        emily_tensor_release(a);
                        emily_tensor_release(b);
                        emily_tensor_release(out);
                    }
        CHECK_OK(emily_dot_set_thread_precision(saved, NULL));
    }
}

/* Complex cumulative products of -0-0i: the signs of the zero parts depend
 * on the order of the multiplications, and the reference multiplies in
 * Nx's tree order: z, then +0+0i at odd positions and +0-0i at even ones
 * (from the end when reversed). Rows of 9 along either axis. */
static void complex_scans(emily_device dev) {
    static const double z[] = {-0.0, -0.0};
    for (size_t d = 0; d < NROWS(COMPLEXES); d++)
        for (int axis = 0; axis < 2; axis++)
            for (int rev = 0; rev < 2; rev++) {
                int64_t r = axis ? 3 : 9, c = axis ? 9 : 3;
                emily_tensor *in = operand(dev, COMPLEXES[d], r, c, LAY_CONTIGUOUS, z, 1, 2, 0), *out = NULL;
                emily_status st = in ? emily_cumulative_product(in, axis, rev, &out) : EMILY_ERR_MEMORY;
                char what[96];
                snprintf(what, sizeof what, "cumulative_product %s axis %d%s", emily_dtype_name(COMPLEXES[d]), axis,
                         rev ? " reversed" : "");
                emily_tensor_release(in);
                if (st == EMILY_ERR_UNSUPPORTED && dev.type != EMILY_DEVICE_CPU) {
                    printf("signed_zero: SKIPPED %s on this device: %s\n", what, emily_last_error());
                    return;
                }
                CHECK(st == EMILY_OK);
                double *y = out ? values_of(out) : NULL;
                for (int64_t i = 0; y && i < r * c; i++) {
                    int64_t k = axis ? i % c : i / c, pos = rev ? 8 - k : k;
                    sz_cplx want = {pos == 0 ? -0.0 : 0.0, pos == 0 || pos % 2 == 0 ? -0.0 : 0.0};
                    if (!expect_c(what, i, y + 2 * i, false, want)) break;
                }
                free(y);
                emily_tensor_release(out);
            }
}

/* ---- conversions, clip and select ------------------------------------------ */

/* as_type between every pair of float and complex types (and to two
 * integer types): a zero keeps its sign, a real becomes re + 0i, a complex
 * number its real part; -0.25 truncates to the integer 0. */
static void conversions(emily_device dev) {
    static const emily_dtype types[] = {EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64,
                                        EMILY_C64, EMILY_C128, EMILY_S32, EMILY_U8};
    static const double reals[] = {-0.0, 0.0, -0.25, 0.25};
    static const double cplx[] = {-0.0, -0.0, -0.0, 0.0, 0.0, -0.0, -0.25, -0.0};
    for (size_t s = 0; s < 6; s++)
        for (size_t d = 0; d < NROWS(types); d++)
            for (int lay = 0; lay < LAY_COUNT; lay++) {
                emily_dtype st = types[s], dt = types[d];
                bool sc = emily_dtype_is_complex(st), dc = emily_dtype_is_complex(dt);
                emily_tensor *in = operand(dev, st, 67, 129, (layout)lay, sc ? cplx : reals, 4, sc ? 2 : 1, 1),
                             *out = NULL;
                if (in) CHECK_OK(emily_as_type(in, dt, &out));
                char what[96];
                snprintf(what, sizeof what, "as_type %s -> %s %s", emily_dtype_name(st), emily_dtype_name(dt),
                         layout_names[lay]);
                double *x = in ? values_of(in) : NULL, *y = out ? values_of(out) : NULL;
                for (int64_t i = 0; x && y && i < emily_tensor_size(out); i++) {
                    double re = sc ? x[2 * i] : x[i], im = sc ? x[2 * i + 1] : 0.0;
                    bool ok;
                    if (emily_dtype_is_integer(dt)) ok = expect(what, i, y[i], 0.0);
                    else if (dc) ok = expect(what, i, y[2 * i], re) && expect(what, i, y[2 * i + 1], im);
                    else ok = expect(what, i, y[i], re);
                    if (!ok) break;
                }
                if (out && cross_check(dev)) {
                    emily_tensor *cin = operand(EMILY_CPU, st, 67, 129, (layout)lay, sc ? cplx : reals, 4, sc ? 2 : 1,
                                                1),
                                 *cout = NULL;
                    if (cin) CHECK_OK(emily_as_type(cin, dt, &cout));
                    if (cout) same_bits_as_cpu(out, cout, what);
                    emily_tensor_release(cin);
                    emily_tensor_release(cout);
                }
                free(x), free(y);
                emily_tensor_release(in);
                emily_tensor_release(out);
            }
}

/* clip(x, lo, hi) = (m < hi ? m : hi) with m = (x > lo ? x : lo), the
 * reference's two comparisons: with zero bounds the answer is one of the
 * operands, chosen by those comparisons (-0.0 == 0.0). */
static double clip_expect(double x, double lo, double hi) {
    double m = x > lo ? x : lo;
    return m < hi ? m : hi;
}

static void clip_and_select(emily_device dev) {
    static const double xs[] = {-0.0, 0.0, -2.0, 2.0, -0.25};
    static const double bounds[] = {-0.0, 0.0};
    for (size_t d = 0; d < NROWS(REALS); d++)
        for (int lay = 0; lay < LAY_COUNT; lay++) {
            emily_dtype dt = REALS[d];
            for (int l = 0; l < 2; l++)
                for (int h = 0; h < 2; h++) {
                    emily_tensor *x = operand(dev, dt, 67, 129, (layout)lay, xs, 5, 1, 1);
                    emily_tensor *lo = scalar(dev, dt, bounds[l]), *hi = scalar(dev, dt, bounds[h]), *out = NULL;
                    if (x && lo && hi) CHECK_OK(emily_clip(x, lo, hi, EMILY_DTYPE_AUTO, &out));
                    char what[96];
                    snprintf(what, sizeof what, "clip %s %s to [%s%g, %s%g]", emily_dtype_name(dt), layout_names[lay],
                             sgn(bounds[l]), bounds[l], sgn(bounds[h]), bounds[h]);
                    double *v = x ? values_of(x) : NULL, *y = out ? values_of(out) : NULL;
                    for (int64_t i = 0; v && y && i < emily_tensor_size(out); i++)
                        if (!expect(what, i, y[i], clip_expect(v[i], bounds[l], bounds[h]))) break;
                    free(v), free(y);
                    emily_tensor_release(x), emily_tensor_release(lo), emily_tensor_release(hi);
                    emily_tensor_release(out);
                }
            /* select copies the chosen operand's bits */
            static const double preds[] = {1, 0, 0, 2, -0.0};
            emily_tensor *p = operand(dev, EMILY_F32, 67, 129, (layout)lay, preds, 5, 1, 0);
            emily_tensor *t = operand(dev, dt, 67, 129, LAY_CONTIGUOUS, NEG, 1, 1, 0);
            emily_tensor *f = operand(dev, dt, 67, 129, (layout)lay, POS, 1, 1, 0), *out = NULL;
            if (p && t && f) CHECK_OK(emily_select(p, t, f, EMILY_DTYPE_AUTO, &out));
            char what[96];
            snprintf(what, sizeof what, "select %s %s", emily_dtype_name(dt), layout_names[lay]);
            double *pv = p ? values_of(p) : NULL, *y = out ? values_of(out) : NULL;
            for (int64_t i = 0; pv && y && i < emily_tensor_size(out); i++)
                if (!expect(what, i, y[i], pv[i] != 0 ? -0.0 : 0.0)) break;
            free(pv), free(y);
            emily_tensor_release(p), emily_tensor_release(t), emily_tensor_release(f);
            emily_tensor_release(out);
        }
}

/* ---- the cases ------------------------------------------------------------ */

/* Each case runs once on the CPU (name) and once on cuda:0 (gpu_name). */
/* clang-format off */
#define SZ_CASES(X)                                                                     \
    X(unary_ops, unary_cases(dev, REALS, NROWS(REALS), 1))                              \
    X(binary_ops, binary_cases(dev))                                                    \
    X(complex_unary_ops, unary_cases(dev, COMPLEXES, NROWS(COMPLEXES), 2))              \
    X(complex_binary_ops, cbinary_cases(dev))                                           \
    X(reductions, zero_family(dev, 0, do_reduce, 12, "reduce"))                         \
    X(cumulative, zero_family(dev, 1, do_cumulative, 16, "cumulative"); complex_scans(dev)) \
    X(windows, zero_family(dev, 2, do_window, 4, "window"))                             \
    X(dot, dot_of_zeros(dev))                                                           \
    X(as_type, conversions(dev))                                                        \
    X(clip_select, clip_and_select(dev))
/* clang-format on */

#define SZ_DEFINE(name, ...)                                  \
    static void run_##name(emily_device dev) { __VA_ARGS__; } \
    TEST(name) { run_##name(EMILY_CPU); }                     \
    TEST(gpu_##name) { run_##name(GPU); }
SZ_CASES(SZ_DEFINE)
#define SZ_CPU_CASE(name, ...) CASE(name),
#define SZ_GPU_CASE(name, ...) CASE(gpu_##name),

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case cpu[] = {SZ_CASES(SZ_CPU_CASE){NULL, NULL}};
    static const harness_case gpu[] = {SZ_CASES(SZ_GPU_CASE){NULL, NULL}};
    int rc = harness_run("signed_zero", cpu);
    static const harness_gpu_cases g = {"signed_zero", gpu,         gpu,  "signed_zero gpu cases on cpu",
                                        &GPU,          &gpu_on_cpu, false};
    return harness_gpu_finish(rc, &g);
}
