/* emily_rope (emily/ops_fast.h) on the CPU: against a reference written
 * here from the header's definition, step by step with its roundings (bit
 * for bit), and against the rotation in plain double precision (within a
 * bound from the f32 angles and x's type); both pairings, partial dims,
 * every scaling, explicit tables, positions per batch entry with offsets
 * (decoding), every float type, integer position types, views, empty
 * tensors, the dispatcher and graphs, and every bad argument. */
#include <stdlib.h>
#include "harness.h"

/* ---- inputs ------------------------------------------------------------------ */

/* Values in [-2, 2) of dtype dt (made in f64, converted). */
static emily_tensor *rnd(uint64_t *st, emily_dtype dt, int rank, const int64_t *shape) {
    return t_uniform(st, dt, rank, shape, -2, 4);
}

static emily_tensor *s64s(int rank, const int64_t *shape, const int64_t *v) {
    return t_from(EMILY_S64, rank, shape, v);
}

/* ---- the reference: the header's steps -------------------------------------- */

static float f32(double v) { return (float)v; }

/* inv_i of the header, for the options (no explicit table), dims, S. */
static void ref_table(const emily_rope_options *o, int64_t dims, int64_t seq, float *inv) {
    double base = o->base;
    if (o->scaling == EMILY_ROPE_DYNAMIC) {
        double len = (double)(o->sequence_length ? o->sequence_length : seq);
        double orig = (double)o->original_max_positions;
        if (len > orig) base *= pow(o->factor * len / orig - (o->factor - 1), (double)dims / (double)(dims - 2));
    }
    for (int64_t i = 0; i < dims / 2; i++) {
        float e = f32((double)(2 * i) / (double)dims);
        inv[i] = f32(1.0 / (double)f32(pow((double)f32(base), (double)e)));
        if (o->scaling != EMILY_ROPE_LLAMA3) continue;
        float fac = f32(o->factor), lo = f32(o->low_frequency_factor), hi = f32(o->high_frequency_factor),
              orig = f32((double)o->original_max_positions);
        float w = f32((double)f32(2 * M_PI) / (double)inv[i]);
        if (w < f32((double)o->original_max_positions / o->high_frequency_factor)) continue;
        if (w > f32((double)o->original_max_positions / o->low_frequency_factor)) {
            inv[i] = f32((double)inv[i] / (double)fac);
            continue;
        }
        float s = f32((double)f32((double)f32((double)orig / (double)w) - (double)lo) /
                      (double)f32((double)hi - (double)lo));
        float a = f32((double)f32((double)f32(1.0 - (double)s) * (double)inv[i]) / (double)fac);
        inv[i] = f32((double)a + (double)f32((double)s * (double)inv[i]));
    }
}

/* x's values as doubles twice: *xv to read and the result to rotate in
 * place (both NULL, counted as a failure, when either fails). */
static double *rope_start(const emily_tensor *x, double **xv) {
    int64_t n = emily_tensor_size(x);
    *xv = harness_doubles(x);
    double *y = malloc((size_t)(n + 1) * sizeof *y);
    if (!*xv || !y) {
        harness_failures++;
        free(*xv);
        free(y);
        *xv = NULL;
        return NULL;
    }
    memcpy(y, *xv, (size_t)n * sizeof *y);
    return y;
}

/* The op's result by the header's steps; inv the table (computed or
 * explicit, as f32); positions as int64 {S} or {B, S}. */
static double *ref_rope(const emily_tensor *x, const int64_t *pos, bool batched, const emily_rope_options *o,
                        const float *inv) {
    const int64_t *sh = emily_tensor_shape(x);
    int64_t B = sh[0], S = sh[1], H = sh[2], D = sh[3], dims = o->dims ? o->dims : D, h = dims / 2;
    emily_dtype t = emily_tensor_dtype(x);
    double *xv, *y = rope_start(x, &xv);
    if (!y) return NULL;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++) {
            double p = (double)pos[batched ? b * S + s : s];
            if (o->scaling == EMILY_ROPE_LINEAR) p = (double)f32(p / (double)f32(o->factor));
            for (int64_t i = 0; i < h; i++) {
                double a = (double)f32(p * (double)inv[i]);
                double c = t_round(t, (double)f32(cos(a))), sn = t_round(t, (double)f32(sin(a)));
                int64_t iu = o->traditional ? 2 * i : i, iv = o->traditional ? 2 * i + 1 : i + h;
                for (int64_t hd = 0; hd < H; hd++) {
                    int64_t r = ((b * S + s) * H + hd) * D;
                    double u = xv[r + iu], v = xv[r + iv];
                    y[r + iu] = t_round(t, t_round(t, u * c) - t_round(t, v * sn));
                    y[r + iv] = t_round(t, t_round(t, v * c) + t_round(t, u * sn));
                }
            }
        }
    free(xv);
    return y;
}

/* The rotation in double, no rounding but the inputs': for the loose check
 * that the definition is the rotation meant (pairs and signs). */
static double *exact_rope(const emily_tensor *x, const int64_t *pos, bool batched, const emily_rope_options *o,
                          const float *inv, double *angle_max) {
    const int64_t *sh = emily_tensor_shape(x);
    int64_t B = sh[0], S = sh[1], H = sh[2], D = sh[3], dims = o->dims ? o->dims : D, h = dims / 2;
    double *xv, *y = rope_start(x, &xv);
    *angle_max = 0;
    if (!y) return NULL;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++) {
            double p = (double)pos[batched ? b * S + s : s];
            if (o->scaling == EMILY_ROPE_LINEAR) p /= o->factor;
            for (int64_t i = 0; i < h; i++) {
                double a = p * (double)inv[i];
                if (fabs(a) > *angle_max) *angle_max = fabs(a);
                int64_t iu = o->traditional ? 2 * i : i, iv = o->traditional ? 2 * i + 1 : i + h;
                for (int64_t hd = 0; hd < H; hd++) {
                    int64_t r = ((b * S + s) * H + hd) * D;
                    double u = xv[r + iu], v = xv[r + iv];
                    y[r + iu] = u * cos(a) - v * sin(a);
                    y[r + iv] = v * cos(a) + u * sin(a);
                }
            }
        }
    free(xv);
    return y;
}

static double rel_ulp(emily_dtype t) {
    return t == EMILY_F64 ? 0x1p-52 : t == EMILY_F32 ? 0x1p-23 : t == EMILY_F16 ? 0x1p-10 : 0x1p-7;
}

/* emily_rope(x, positions, o) against both references; the table is the
 * header's unless o has an explicit one (read back as f32). Returns the
 * result (the caller releases it). */
static emily_tensor *check_rope(const char *what, const emily_tensor *x, const int64_t *pos, bool batched,
                                const emily_rope_options *o) {
    const int64_t *sh = emily_tensor_shape(x);
    int64_t B = sh[0], S = sh[1], D = sh[3], dims = o->dims ? o->dims : D, n = emily_tensor_size(x);
    int64_t pshape[2] = {batched ? B : S, S};
    emily_tensor *pt = s64s(batched ? 2 : 1, batched ? pshape : pshape + 1, pos), *y = NULL;
    CHECK_OK(emily_rope(x, pt, o, &y));
    emily_tensor_release(pt);
    if (!y) return NULL;
    CHECK(emily_tensor_dtype(y) == emily_tensor_dtype(x) && t_shape_is(y, 4, sh));
    float *inv = malloc((size_t)(dims / 2 + 1) * sizeof *inv);
    if (!inv) {
        harness_failures++;
        return y;
    }
    if (o->inv_freq) {
        for (int64_t i = 0; i < dims / 2; i++) inv[i] = (float)t_get(o->inv_freq, i);
    } else {
        ref_table(o, dims, S, inv);
    }
    double amax = 0;
    double *want = ref_rope(x, pos, batched, o, inv), *loose = exact_rope(x, pos, batched, o, inv, &amax);
    double *got = harness_doubles(y), *xv = harness_doubles(x);
    int64_t bad = 0, far = 0;
    emily_dtype t = emily_tensor_dtype(x);
    /* an angle's f32 rounding (and linear's position), then a rounding of
     * cos/sin to T, the products and the sum: each element is within */
    double tol_rel = amax * 0x1p-23 + 6 * rel_ulp(t);
    for (int64_t i = 0; want && loose && got && xv && i < n; i++) {
        if (!(got[i] == want[i] || (got[i] != got[i] && want[i] != want[i]))) {
            if (bad++ < 3)
                fprintf(stderr, "  %s: element %lld is %.17g, the definition gives %.17g\n", what, (long long)i, got[i],
                        want[i]);
        }
        int64_t r = i - i % D;
        double mag = 0;
        for (int64_t j = 0; j < dims; j++) mag = fmax(mag, fabs(xv[r + j]));
        if (fabs(got[i] - loose[i]) > 2 * mag * tol_rel + 1e-300) {
            if (far++ < 3)
                fprintf(stderr, "  %s: element %lld is %.17g, the rotation in double %.17g\n", what, (long long)i,
                        got[i], loose[i]);
        }
    }
    CHECK(bad == 0);
    CHECK(far == 0);
    free(want);
    free(loose);
    free(got);
    free(xv);
    free(inv);
    return y;
}

static const emily_dtype floats[4] = {EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64};

/* ---- cases -------------------------------------------------------------------- */

/* x = e_0 at position p: rotate_half moves it to (cos p, 0, sin p, 0), the
 * interleaved pairing to (cos p, sin p, 0, 0) (inv_0 = 1 for any base). */
TEST(unit_vector_by_hand) {
    int64_t xs[4] = {1, 1, 1, 4}, one = 1, p = 3;
    emily_tensor *x = t_from(EMILY_F64, 4, xs, (double[]){1, 0, 0, 0});
    emily_tensor *pos = s64s(1, &one, &p), *y = NULL;
    emily_rope_options o = {.base = 10000};
    CHECK_OK(emily_rope(x, pos, &o, &y));
    double c = (double)(float)cos(3.0), s = (double)(float)sin(3.0);
    CHECK(y && t_equals(y, 4, (double[]){c, 0, s, 0}));
    emily_tensor_release(y);
    o.traditional = true;
    CHECK_OK(emily_rope(x, pos, &o, &y));
    CHECK(y && t_equals(y, 4, (double[]){c, s, 0, 0}));
    RELEASE(x, pos, y);
}

TEST(types_pairings_and_dims) {
    uint64_t st = 11;
    int64_t xs[4] = {2, 5, 3, 12}, pos[5] = {0, 1, 2, 7, 40};
    for (int ti = 0; ti < 4; ti++)
        for (int trad = 0; trad < 2; trad++)
            for (int dims = 0; dims <= 12; dims += 4) {
                emily_tensor *x = rnd(&st, floats[ti], 4, xs);
                emily_rope_options o = {.base = 10000, .traditional = trad, .dims = dims};
                char what[96];
                snprintf(what, sizeof what, "%s %s dims %d", emily_dtype_name(floats[ti]),
                         trad ? "traditional" : "rotate_half", dims);
                emily_tensor *y = check_rope(what, x, pos, false, &o);
                RELEASE(x, y);
            }
}

/* Positions per batch entry, with offsets (a KV cache: one new token at
 * positions 9 and 131), and a long prefill with base 1e5 and D 64. */
TEST(positions_per_entry_and_decoding) {
    uint64_t st = 12;
    int64_t one[4] = {2, 1, 9, 64}, dec[2] = {9, 131};
    int64_t many[4] = {1, 300, 2, 64};
    int64_t *seq = malloc(300 * sizeof *seq);
    if (!seq) {
        harness_failures++;
        return;
    }
    for (int i = 0; i < 300; i++) seq[i] = 1000 + i;
    for (int ti = 0; ti < 4; ti++) {
        emily_rope_options o = {.base = 100000};
        emily_tensor *x = rnd(&st, floats[ti], 4, one), *y = check_rope("decode", x, dec, true, &o);
        emily_tensor *x2 = rnd(&st, floats[ti], 4, many), *y2 = check_rope("offset prefill", x2, seq, true, &o);
        RELEASE(x, y, x2, y2);
    }
    free(seq);
}

/* {S} positions are the {B, S} positions repeated: the same bits (the
 * CPU's shared table against its per-token path). */
TEST(shared_positions_equal_repeated_ones) {
    uint64_t st = 13;
    int64_t xs[4] = {3, 4, 2, 16}, s1[1] = {4}, s2[2] = {3, 4};
    int64_t p1[4] = {5, 6, 7, 8}, p2[12] = {5, 6, 7, 8, 5, 6, 7, 8, 5, 6, 7, 8};
    emily_tensor *x = rnd(&st, EMILY_F32, 4, xs), *a = s64s(1, s1, p1), *b = s64s(2, s2, p2);
    emily_tensor *ya = NULL, *yb = NULL;
    CHECK_OK(emily_rope(x, a, NULL, &ya));
    CHECK_OK(emily_rope(x, b, NULL, &yb));
    CHECK(ya && yb && t_same_bytes(ya, yb));
    RELEASE(x, a, b, ya, yb);
}

TEST(scalings) {
    uint64_t st = 14;
    int64_t xs[4] = {1, 6, 2, 32}, pos[6] = {0, 3, 100, 2047, 5000, 9000};
    for (int ti = 0; ti < 4; ti++) {
        emily_rope_options cases[] = {
            {.base = 10000, .scaling = EMILY_ROPE_LINEAR, .factor = 2},
            {.base = 10000, .scaling = EMILY_ROPE_LINEAR, .factor = 3},
            /* S = 6 <= 4: grows the base; 10 > 6: unscaled; 8 > 4: grows */
            {.base = 10000, .scaling = EMILY_ROPE_DYNAMIC, .factor = 2, .original_max_positions = 4},
            {.base = 10000, .scaling = EMILY_ROPE_DYNAMIC, .factor = 2, .original_max_positions = 10},
            {.base = 10000,
             .scaling = EMILY_ROPE_DYNAMIC,
             .factor = 4,
             .original_max_positions = 4,
             .sequence_length = 8},
            /* Llama 3.1's, with D 32 the three bands all occur for O 8192 */
            {.base = 500000,
             .scaling = EMILY_ROPE_LLAMA3,
             .factor = 8,
             .low_frequency_factor = 1,
             .high_frequency_factor = 4,
             .original_max_positions = 8192},
            {.base = 10000,
             .scaling = EMILY_ROPE_LLAMA3,
             .factor = 32,
             .low_frequency_factor = 1,
             .high_frequency_factor = 4,
             .original_max_positions = 64,
             .traditional = true},
        };
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            emily_tensor *x = rnd(&st, floats[ti], 4, xs);
            char what[64];
            snprintf(what, sizeof what, "%s scaling case %zu", emily_dtype_name(floats[ti]), k);
            emily_tensor *y = check_rope(what, x, pos, false, &cases[k]);
            RELEASE(x, y);
        }
    }
    /* the scalings change the result (each case is not the plain table) */
    emily_tensor *x = rnd(&st, EMILY_F32, 4, xs), *p = s64s(1, (int64_t[]){6}, pos), *plain = NULL, *lin = NULL,
                 *dyn = NULL, *l3 = NULL;
    emily_rope_options o = {.base = 500000};
    CHECK_OK(emily_rope(x, p, &o, &plain));
    o.scaling = EMILY_ROPE_LINEAR, o.factor = 8;
    CHECK_OK(emily_rope(x, p, &o, &lin));
    o.scaling = EMILY_ROPE_DYNAMIC, o.original_max_positions = 2;
    CHECK_OK(emily_rope(x, p, &o, &dyn));
    o.scaling = EMILY_ROPE_LLAMA3, o.low_frequency_factor = 1, o.high_frequency_factor = 4;
    o.original_max_positions = 8192;
    CHECK_OK(emily_rope(x, p, &o, &l3));
    CHECK(plain && lin && dyn && l3 && !t_same_bytes(plain, lin) && !t_same_bytes(plain, dyn) &&
          !t_same_bytes(plain, l3));
    RELEASE(x, p, plain, lin, dyn, l3);
}

/* An explicit table: f32 and f64 (converted to f32), and the computed
 * table given explicitly gives the same bits. */
TEST(explicit_tables) {
    uint64_t st = 15;
    int64_t xs[4] = {2, 3, 2, 8}, pos[3] = {4, 5, 6}, four = 4;
    float tbl[4] = {1.0f, 0.25f, 1e-3f, 3.5f};
    emily_tensor *f = t_from(EMILY_F32, 1, &four, tbl), *f64 = t_as(t_from(EMILY_F32, 1, &four, tbl), EMILY_F64);
    for (int ti = 0; ti < 4; ti++) {
        emily_tensor *x = rnd(&st, floats[ti], 4, xs);
        emily_rope_options o = {.inv_freq = f}, o64 = {.inv_freq = f64, .traditional = true};
        emily_tensor *y = check_rope("explicit f32", x, pos, false, &o),
                     *y64 = check_rope("explicit f64", x, pos, false, &o64);
        RELEASE(x, y, y64);
    }
    float computed[4];
    emily_rope_options dflt = {.base = 10000, .dims = 8};
    ref_table(&dflt, 8, 3, computed);
    emily_tensor *ct = t_from(EMILY_F32, 1, &four, computed), *x = rnd(&st, EMILY_BF16, 4, xs),
                 *p = s64s(1, (int64_t[]){3}, pos), *a = NULL, *b = NULL;
    emily_rope_options given = {.inv_freq = ct};
    CHECK_OK(emily_rope(x, p, NULL, &a));
    CHECK_OK(emily_rope(x, p, &given, &b));
    CHECK(a && b && t_same_bytes(a, b));
    RELEASE(f, f64, ct, x, p, a, b);
}

/* Integer position types: the same result as s64. */
TEST(position_types) {
    uint64_t st = 16;
    int64_t xs[4] = {1, 4, 2, 8}, ps[1] = {4};
    int64_t pos[4] = {0, 5, 200, 255};
    emily_tensor *x = rnd(&st, EMILY_F32, 4, xs), *p = s64s(1, ps, pos), *want = NULL;
    CHECK_OK(emily_rope(x, p, NULL, &want));
    const emily_dtype types[] = {EMILY_U8, EMILY_S16, EMILY_S32, EMILY_U32, EMILY_U64};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        emily_tensor *q = NULL, *y = NULL;
        CHECK_OK(emily_as_type(p, types[k], &q));
        CHECK_OK(emily_rope(x, q, NULL, &y));
        CHECK(y && want && t_same_bytes(y, want));
        RELEASE(q, y);
    }
    /* negative positions rotate the other way */
    int64_t neg[4] = {0, -5, -200, -255};
    emily_tensor *pn = s64s(1, ps, neg),
                 *yn = check_rope("negative positions", x, neg, false, &(emily_rope_options){.base = 10000});
    RELEASE(x, p, want, pn, yn);
}

/* A transposed view of x ({B, H, S, D} seen as {B, S, H, D}) gives what
 * its contiguous copy gives; empty tensors give empty outputs. */
TEST(views_and_empty) {
    uint64_t st = 17;
    int64_t bhsd[4] = {2, 3, 5, 8}, pos[5] = {1, 2, 3, 4, 5}, five = 5;
    emily_tensor *t = rnd(&st, EMILY_F16, 4, bhsd), *v = NULL, *c = NULL, *p = s64s(1, &five, pos);
    CHECK_OK(emily_transpose(t, (int[]){0, 2, 1, 3}, &v));
    CHECK_OK(emily_contiguous(v, &c));
    emily_tensor *yv = NULL, *yc = NULL;
    CHECK_OK(emily_rope(v, p, NULL, &yv));
    CHECK_OK(emily_rope(c, p, NULL, &yc));
    CHECK(yv && yc && t_same_bytes(yv, yc));
    RELEASE(t, v, c, p, yv, yc);
    int64_t shapes[3][4] = {{0, 5, 2, 8}, {2, 0, 2, 8}, {2, 5, 0, 8}};
    for (int k = 0; k < 3; k++) {
        emily_tensor *x = NULL, *y = NULL, *q = NULL;
        CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 4, shapes[k], &x));
        CHECK_OK(emily_empty(EMILY_CPU, EMILY_S32, 1, &shapes[k][1], &q));
        CHECK_OK(emily_rope(x, q, NULL, &y));
        CHECK(y && t_shape_is(y, 4, shapes[k]) && emily_tensor_size(y) == 0);
        RELEASE(x, q, y);
    }
}

/* NaN and infinities propagate through the products of their pair only;
 * a pass-through feature keeps its value. Pairs for dims 4: (0, 2), (1, 3). */
TEST(edge_values) {
    int64_t xs[4] = {1, 1, 1, 6}, one = 1, p = 1;
    emily_tensor *x = t_from(EMILY_F32, 4, xs, (float[]){NAN, 1, 0, 2, NAN, -INFINITY}),
                 *xi = t_from(EMILY_F32, 4, xs, (float[]){INFINITY, 1, 0, 2, 3, 4});
    emily_tensor *pos = s64s(1, &one, &p), *y = NULL, *yi = NULL;
    emily_rope_options o = {.base = 10000, .dims = 4};
    CHECK_OK(emily_rope(x, pos, &o, &y));
    CHECK_OK(emily_rope(xi, pos, &o, &yi));
    if (y && yi) {
        CHECK(isnan(t_get(y, 0)) && isnan(t_get(y, 2)));
        CHECK(isfinite(t_get(y, 1)) && isfinite(t_get(y, 3)));
        CHECK(isnan(t_get(y, 4)) && t_get(y, 5) == -INFINITY);
        /* (inf, 0) at angle 1: (inf * cos 1 - 0, 0 + inf * sin 1) */
        CHECK(t_get(yi, 0) == INFINITY && t_get(yi, 2) == INFINITY);
        CHECK(t_get(yi, 4) == 3 && t_get(yi, 5) == 4);
    }
    RELEASE(x, xi, pos, y, yi);
}

TEST(bad_arguments) {
    uint64_t st = 18;
    int64_t xs[4] = {2, 3, 2, 8}, x3s[3] = {3, 2, 8}, xodd[4] = {2, 3, 2, 7};
    int64_t pos[6] = {0, 1, 2, 3, 4, 5};
    emily_tensor *x = rnd(&st, EMILY_F32, 4, xs), *x3 = rnd(&st, EMILY_F32, 3, x3s), *xo = rnd(&st, EMILY_F32, 4, xodd),
                 *xi = NULL, *xc = NULL;
    CHECK_OK(emily_as_type(x, EMILY_S32, &xi));
    CHECK_OK(emily_as_type(x, EMILY_C64, &xc));
    emily_tensor *p = s64s(1, (int64_t[]){3}, pos), *pb = s64s(2, (int64_t[]){2, 3}, pos),
                 *pw = s64s(1, (int64_t[]){4}, pos), *pw2 = s64s(2, (int64_t[]){3, 2}, pos),
                 *p3 = s64s(3, (int64_t[]){1, 2, 3}, pos), *pf = NULL;
    CHECK_OK(emily_as_type(p, EMILY_F32, &pf));
    emily_tensor *t4 = rnd(&st, EMILY_F32, 1, (int64_t[]){4}), *t3 = rnd(&st, EMILY_F32, 1, (int64_t[]){3}), *ti = NULL,
                 *y = NULL;
    CHECK_OK(emily_as_type(t4, EMILY_S32, &ti));
    emily_rope_options o = {.base = 10000};
    CHECK_ERR(emily_rope(NULL, p, &o, &y), EMILY_ERR_ARGUMENT, "rope: x is NULL");
    CHECK_ERR(emily_rope(x, NULL, &o, &y), EMILY_ERR_ARGUMENT, "rope: positions is NULL");
    CHECK_ERR(emily_rope(x, p, &o, NULL), EMILY_ERR_ARGUMENT, "rope: output pointer is NULL");
    CHECK_ERR(emily_rope(x3, p, &o, &y), EMILY_ERR_SHAPE, "rope: x must have rank 4 (B, S, H, D), got {3, 2, 8}");
    CHECK_ERR(emily_rope(xi, p, &o, &y), EMILY_ERR_TYPE, "rope: x must be a real float tensor");
    CHECK_ERR(emily_rope(xc, p, &o, &y), EMILY_ERR_TYPE, "got c64");
    CHECK_ERR(emily_rope(x, pf, &o, &y), EMILY_ERR_TYPE, "rope: positions must be an integer tensor, got f32");
    CHECK_ERR(emily_rope(x, pw, &o, &y), EMILY_ERR_SHAPE,
              "rope: positions must have shape {3} or {2, 3} (S or B, S of x {2, 3, 2, 8}), got {4}");
    CHECK_ERR(emily_rope(x, pw2, &o, &y), EMILY_ERR_SHAPE, "got {3, 2}");
    CHECK_ERR(emily_rope(x, p3, &o, &y), EMILY_ERR_SHAPE, "got {1, 2, 3}");
    CHECK_OK(emily_rope(x, pb, &o, &y));
    emily_tensor_release(y);
    y = NULL;
    /* dims */
    emily_rope_options d = o;
    d.dims = 6 + 1;
    CHECK_ERR(emily_rope(x, p, &d, &y), EMILY_ERR_ARGUMENT,
              "rope: dims must be even and at most the head size D (8), got 7");
    d.dims = 10;
    CHECK_ERR(emily_rope(x, p, &d, &y), EMILY_ERR_ARGUMENT, "got 10");
    d.dims = -2;
    CHECK_ERR(emily_rope(x, p, &d, &y), EMILY_ERR_ARGUMENT, "got -2");
    CHECK_ERR(emily_rope(xo, p, &o, &y), EMILY_ERR_ARGUMENT, "head size D (7), got 7");
    /* base and scalings */
    const double bad_numbers[3] = {0.0, -1.0, NAN};
    for (int k = 0; k < 3; k++) {
        emily_rope_options b = {.base = bad_numbers[k]};
        CHECK_ERR(emily_rope(x, p, &b, &y), EMILY_ERR_ARGUMENT, "rope: base must be a finite number above 0");
        b = (emily_rope_options){.base = 1e4, .scaling = EMILY_ROPE_LINEAR, .factor = bad_numbers[k]};
        CHECK_ERR(emily_rope(x, p, &b, &y), EMILY_ERR_ARGUMENT, "rope: factor must be a finite");
    }
    CHECK_ERR(emily_rope(x, p, &(emily_rope_options){.base = INFINITY}, &y), EMILY_ERR_ARGUMENT, "base must be");
    emily_rope_options dyn = {.base = 1e4, .scaling = EMILY_ROPE_DYNAMIC, .factor = 2};
    CHECK_ERR(emily_rope(x, p, &dyn, &y), EMILY_ERR_ARGUMENT,
              "rope: original_max_positions must be a finite number above 0, got 0");
    dyn.original_max_positions = 2, dyn.sequence_length = -1;
    CHECK_ERR(emily_rope(x, p, &dyn, &y), EMILY_ERR_ARGUMENT, "rope: sequence_length must be 0 (S) or more, got -1");
    dyn.sequence_length = 0, dyn.dims = 2;
    CHECK_ERR(emily_rope(x, p, &dyn, &y), EMILY_ERR_ARGUMENT, "rope: dynamic scaling needs dims above 2");
    emily_rope_options l3 = {.base = 5e5,
                             .scaling = EMILY_ROPE_LLAMA3,
                             .factor = 8,
                             .original_max_positions = 8192,
                             .low_frequency_factor = 1};
    CHECK_ERR(emily_rope(x, p, &l3, &y), EMILY_ERR_ARGUMENT,
              "rope: high_frequency_factor must be a finite number above 0, got 0");
    l3.high_frequency_factor = 1;
    CHECK_ERR(emily_rope(x, p, &l3, &y), EMILY_ERR_ARGUMENT,
              "rope: low_frequency_factor (1) must be below high_frequency_factor (1)");
    l3.low_frequency_factor = -1;
    CHECK_ERR(emily_rope(x, p, &l3, &y), EMILY_ERR_ARGUMENT, "rope: low_frequency_factor must be");
    emily_rope_options unknown = {.base = 1e4, .scaling = (emily_rope_scaling)9};
    CHECK_ERR(emily_rope(x, p, &unknown, &y), EMILY_ERR_ARGUMENT, "rope: unknown scaling 9");
    /* explicit tables */
    emily_rope_options e = {.inv_freq = t3};
    CHECK_ERR(emily_rope(x, p, &e, &y), EMILY_ERR_SHAPE, "rope: inv_freq must have shape {4} (dims / 2), got {3}");
    e.inv_freq = ti;
    CHECK_ERR(emily_rope(x, p, &e, &y), EMILY_ERR_TYPE, "rope: inv_freq must be a real float tensor, got s32");
    e.inv_freq = t4, e.scaling = EMILY_ROPE_LINEAR, e.factor = 2;
    CHECK_ERR(emily_rope(x, p, &e, &y), EMILY_ERR_ARGUMENT,
              "rope: an explicit inv_freq table takes no scaling (it holds any scaling already), got linear");
    e.scaling = EMILY_ROPE_NONE, e.dims = 6;
    CHECK_ERR(emily_rope(x, p, &e, &y), EMILY_ERR_SHAPE, "{3} (dims / 2), got {4}");
    CHECK(y == NULL);
    RELEASE(x, x3, xo, xi, xc, p, pb, pw, pw2, p3, pf, t4, t3, ti);
}

/* The dispatcher's rope callback: options by name, the scaling an atom,
 * the explicit table after positions when inv_frequency says so. */
TEST(dispatch_callback) {
    uint64_t st = 19;
    int64_t xs[4] = {1, 3, 2, 8}, pos[3] = {2, 3, 4}, four = 4;
    emily_tensor *x = rnd(&st, EMILY_BF16, 4, xs), *p = s64s(1, (int64_t[]){3}, pos),
                 *t = rnd(&st, EMILY_F32, 1, &four), *want = NULL, *want_t = NULL, *plain = NULL;
    emily_rope_options o = {.dims = 8,
                            .base = 500000,
                            .traditional = true,
                            .scaling = EMILY_ROPE_LLAMA3,
                            .factor = 8,
                            .low_frequency_factor = 1,
                            .high_frequency_factor = 4,
                            .original_max_positions = 16};
    CHECK_OK(emily_rope(x, p, &o, &want));
    CHECK_OK(emily_rope(x, p, &(emily_rope_options){.inv_freq = t}, &want_t));
    CHECK_OK(emily_rope(x, p, NULL, &plain));
    emily_value out = v_tmpl(EMILY_BF16, 4, xs);
    const char *keys[8] = {"dims",
                           "base",
                           "traditional",
                           "scaling",
                           "factor",
                           "low_frequency_factor",
                           "high_frequency_factor",
                           "original_max_positions"};
    emily_value vals[8] = {v_int(8),   v_float(500000), v_bool(true), v_atom("llama3"),
                           v_float(8), v_int(1),        v_int(4),     v_int(16)};
    emily_value args[4] = {v_tensor(x), v_tensor(p), v_opts(keys, vals, 8)};
    emily_dispatch_result r = {0};
    CHECK_DISPATCH_SAME("rope", EMILY_DISPATCH_RUN, &out, args, 3, want);
    /* no options: the defaults */
    CHECK_DISPATCH_SAME("rope", EMILY_DISPATCH_RUN, &out, args, 2, plain);
    /* an explicit table; nil scaling */
    const char *tkeys[2] = {"inv_frequency", "scaling"};
    emily_value tvals[2] = {v_bool(true), {.kind = EMILY_V_NIL}};
    emily_value targs[4] = {v_tensor(x), v_tensor(p), v_tensor(t), v_opts(tkeys, tvals, 2)};
    CHECK_DISPATCH_SAME("rope", EMILY_DISPATCH_RUN, &out, targs, 4, want_t);
    /* errors: an unknown scaling, a table the options do not announce */
    vals[3] = v_atom("yarn");
    CHECK_ERR(emily_dispatch("rope", EMILY_CPU, &out, args, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "option :scaling must be :none, :linear, :dynamic or :llama3, got :yarn");
    vals[3] = v_int(1);
    CHECK_ERR(emily_dispatch("rope", EMILY_CPU, &out, args, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "option :scaling must be an atom");
    tvals[0] = v_bool(false);
    CHECK_ERR(emily_dispatch("rope", EMILY_CPU, &out, targs, 4, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "expected 2 tensors (x, positions) before the options, got 3");
    RELEASE(x, p, t, want, want_t, plain);
}

/* In an engine graph, the same bits as the eager call. */
TEST(runs_in_a_graph) {
    uint64_t st = 20;
    int64_t xs[4] = {2, 4, 3, 16}, pos[4] = {7, 8, 9, 10}, four = 4;
    emily_tensor *x = rnd(&st, EMILY_F32, 4, xs), *p = s64s(1, &four, pos), *want = NULL;
    emily_rope_options o = {.base = 10000, .dims = 8, .scaling = EMILY_ROPE_LINEAR, .factor = 4};
    CHECK_OK(emily_rope(x, p, &o, &want));
    emily_graph *gr = NULL;
    CHECK_OK(emily_graph_create(&gr));
    int32_t px = -1, pp = -1;
    emily_value tx = v_tmpl(EMILY_F32, 4, xs);
    CHECK_OK(emily_graph_add_param(gr, EMILY_F32, 4, xs, &px));
    CHECK_OK(emily_graph_add_param(gr, EMILY_S64, 1, &four, &pp));
    const char *keys[4] = {"dims", "base", "scaling", "factor"};
    /* graphs copy an atom's len bytes (v_atom leaves len 0) */
    emily_value linear = {.kind = EMILY_V_ATOM, .str = "linear", .len = 6};
    emily_value vals[4] = {v_int(8), v_float(10000), linear, v_float(4)};
    int32_t call = GRAPH_CALL(gr, "rope", &tx, v_ref(px), v_ref(pp), v_opts(keys, vals, 4));
    CHECK_OK(emily_graph_set_outputs(gr, 1, &call));
    CHECK_OK(emily_graph_compile(gr, EMILY_CPU, NULL));
    emily_tensor *res[1] = {NULL};
    CHECK_OK(emily_graph_run(gr, (emily_tensor *[]){x, p}, 2, res, 1));
    CHECK(res[0] && want && t_same_bytes(res[0], want));
    emily_graph_free(gr);
    RELEASE(x, p, want, res[0]);
}

RUN_TESTS("rope", CASE(unit_vector_by_hand), CASE(types_pairings_and_dims), CASE(positions_per_entry_and_decoding),
          CASE(shared_positions_equal_repeated_ones), CASE(scalings), CASE(explicit_tables), CASE(position_types),
          CASE(views_and_empty), CASE(edge_values), CASE(bad_arguments), CASE(dispatch_callback), CASE(runs_in_a_graph))
