/* Sort family: sort, argsort, top_k against a reference written here
 * from Nx.BinaryBackend's comparator (a stable merge sort; NaN above
 * +inf, all NaNs equal, -0.0 equal to +0.0, descending = reversed
 * comparator with ties still in input order), over every real dtype,
 * row lengths that reach each code path (insertion sort, radix, vector
 * quicksort, one long row on several threads, many rows on several
 * threads), strided views as inputs, and bad arguments. */
#include <stdint.h>
#include <stdlib.h>
#include "harness.h"

static const emily_dtype REAL_TYPES[] = {EMILY_U8,  EMILY_U16, EMILY_U32, EMILY_U64,  EMILY_S8,  EMILY_S16,
                                         EMILY_S32, EMILY_S64, EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64};
#define NREAL (sizeof REAL_TYPES / sizeof *REAL_TYPES)

/* ---- deterministic random data ------------------------------------------ */

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) { return xorshift64(&rng_state); }

/* Bit patterns worth sorting: specials (NaNs with several payloads and
 * signs, infinities, both zeros, subnormals, extremes) mixed with a few
 * repeated values (ties) and random bits. */
static uint64_t special_bits(emily_dtype dt) {
    switch (dt) {
    case EMILY_F16: {
        static const uint16_t v[] = {0x7e00, 0xfe00, 0x7c01, 0x7c00, 0xfc00, 0x0000, 0x8000,
                                     0x0001, 0x8001, 0x3c00, 0xbc00, 0x7bff, 0xfbff};
        return v[rnd() % (sizeof v / sizeof *v)];
    }
    case EMILY_BF16: {
        static const uint16_t v[] = {0x7fc0, 0xffc0, 0x7f81, 0x7f80, 0xff80, 0x0000, 0x8000,
                                     0x0001, 0x8001, 0x3f80, 0xbf80, 0x7f7f, 0xff7f};
        return v[rnd() % (sizeof v / sizeof *v)];
    }
    case EMILY_F32: {
        static const uint32_t v[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fffffffu, 0x7f800000u,
                                     0xff800000u, 0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u,
                                     0x3f800000u, 0xbf800000u, 0x7f7fffffu, 0xff7fffffu};
        return v[rnd() % (sizeof v / sizeof *v)];
    }
    case EMILY_F64: {
        static const uint64_t v[] = {0x7ff8000000000000ull, 0xfff8000000000000ull,
                                     0x7ff0000000000001ull, 0x7ff0000000000000ull,
                                     0xfff0000000000000ull, 0,
                                     0x8000000000000000ull, 1,
                                     0x8000000000000001ull, 0x3ff0000000000000ull,
                                     0xbff0000000000000ull, 0x7fefffffffffffffull};
        return v[rnd() % (sizeof v / sizeof *v)];
    }
    default: {
        int bits = (int)emily_dtype_size(dt) * 8;
        uint64_t top = (uint64_t)1 << (bits - 1);
        uint64_t all = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
        uint64_t v[] = {0, 1, all, top, top - 1, 2, all - 1};
        return v[rnd() % (sizeof v / sizeof *v)];
    }
    }
}

/* Random row data: `mix` = 0 random bits, 1 specials + few distinct
 * values (many ties), 2 a sorted run, 3 a reversed run. */
static void *make_data(emily_dtype dt, int64_t n, int mix) {
    size_t es = emily_dtype_size(dt);
    unsigned char *d = malloc(es * (size_t)(n ? n : 1));
    static const double few[] = {-3.5, -1, 0, 0.25, 1, 2, 7, 100};
    for (int64_t i = 0; i < n; i++) {
        uint64_t b;
        int pick = (int)(rnd() % 8);
        if (mix == 2 || mix == 3) {
            int64_t v = mix == 2 ? i : n - i;
            emily_tensor *t = NULL;
            double x = (double)(v % 2000) - 1000.0;
            if (emily_dtype_is_integer(dt)) x = (double)(v % 100);
            if (emily_constant(EMILY_CPU, dt, 0, NULL, emily_scalar_float(x), &t) || emily_to_binary(t, &b, es)) b = 0;
            emily_tensor_release(t);
        } else if (mix == 1 && pick < 3) {
            b = special_bits(dt);
        } else if (mix == 1) {
            emily_tensor *t = NULL;
            b = 0;
            if (emily_constant(EMILY_CPU, dt, 0, NULL, emily_scalar_float(few[rnd() % 8]), &t) ||
                emily_to_binary(t, &b, es))
                b = 0;
            emily_tensor_release(t);
        } else {
            b = rnd();
            /* keep random floats mostly finite */
            if (dt == EMILY_F32 && (b & 0x7f800000u) == 0x7f800000u) b &= ~0x40000000ull;
            if (dt == EMILY_F64 && (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) b &= ~0x4000000000000000ull;
        }
        memcpy(d + (size_t)i * es, &b, es);
    }
    return d;
}

/* ---- the reference order ------------------------------------------------- */

typedef struct elem {
    int cls; /* 0 number, 1 NaN */
    double f;
    int64_t i;
    uint64_t u;
    int kind; /* 0 signed, 1 unsigned, 2 float */
} elem;

/* The element's bytes as each type of C it may be (read as dt's). */
typedef union raw_elem {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    int8_t s8;
    int16_t s16;
    int32_t s32;
    int64_t s64;
    float f32;
    double f64;
} raw_elem;

static elem read_elem(emily_dtype dt, const unsigned char *p) {
    elem e = {0, 0, 0, 0, 0};
    raw_elem v;
    memcpy(&v, p, emily_dtype_size(dt));
    switch (dt) {
    case EMILY_U8: e.u = v.u8; break;
    case EMILY_U16: e.u = v.u16; break;
    case EMILY_U32: e.u = v.u32; break;
    case EMILY_U64: e.u = v.u64; break;
    case EMILY_S8: e.i = v.s8; break;
    case EMILY_S16: e.i = v.s16; break;
    case EMILY_S32: e.i = v.s32; break;
    case EMILY_S64: e.i = v.s64; break;
    case EMILY_F16: e.f = emily_f16_to_f32(v.u16); break;
    case EMILY_BF16: e.f = emily_bf16_to_f32(v.u16); break;
    case EMILY_F32: e.f = v.f32; break;
    default: e.f = v.f64; break;
    }
    emily_dtype_kind k = emily_dtype_kind_of(dt);
    e.kind = k == EMILY_KIND_UNSIGNED ? 1 : k == EMILY_KIND_SIGNED ? 0 : 2;
    if (e.kind == 2 && isnan(e.f)) e.cls = 1;
    return e;
}

/* -1, 0, 1: Nx's ascending order */
static int cmp_elem(const elem *a, const elem *b) {
    if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
    if (a->cls == 1) return 0;
    if (a->kind == 1) return a->u < b->u ? -1 : a->u > b->u;
    if (a->kind == 0) return a->i < b->i ? -1 : a->i > b->i;
    return a->f < b->f ? -1 : a->f > b->f; /* -0.0 == 0.0 */
}

static const elem *g_elems;
static bool g_desc;

/* stable merge sort of positions */
static void merge_sort(int64_t *p, int64_t *tmp, int64_t n) {
    if (n < 2) return;
    int64_t h = n / 2;
    merge_sort(p, tmp, h);
    merge_sort(p + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int c = cmp_elem(&g_elems[p[j]], &g_elems[p[i]]);
        if (g_desc) c = -c;
        /* take the right element only when strictly before the left one */
        if (c < 0) tmp[k++] = p[j++];
        else tmp[k++] = p[i++];
    }
    while (i < h) tmp[k++] = p[i++];
    while (j < n) tmp[k++] = p[j++];
    memcpy(p, tmp, sizeof(int64_t) * (size_t)n);
}

/* Reference argsort of a contiguous row. */
static int64_t *ref_argsort(emily_dtype dt, const unsigned char *row, int64_t n, int64_t stride, bool desc) {
    size_t es = emily_dtype_size(dt);
    elem *e = malloc(sizeof(elem) * (size_t)(n ? n : 1));
    int64_t *p = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        e[i] = read_elem(dt, row + (size_t)(i * stride) * es);
        p[i] = i;
    }
    g_elems = e;
    g_desc = desc;
    merge_sort(p, tmp, n);
    free(e);
    free(tmp);
    return p;
}

/* Checks sort/argsort of a rank-1 tensor of n elements against the
 * reference; returns false (once) on a mismatch. */
static bool check_row(emily_dtype dt, int64_t n, int mix, bool desc) {
    size_t es = emily_dtype_size(dt);
    unsigned char *d = make_data(dt, n, mix);
    emily_tensor *t = t_from(dt, 1, &n, d), *s = NULL, *a = NULL;
    bool ok = true;
    emily_sort_direction dir = desc ? EMILY_SORT_DESC : EMILY_SORT_ASC;
    CHECK_OK(emily_sort(t, 0, dir, false, &s));
    CHECK_OK(emily_argsort(t, 0, dir, true, EMILY_DTYPE_AUTO, &a));
    if (!s || !a) {
        ok = false;
    } else {
        int64_t *p = ref_argsort(dt, d, n, 1, desc);
        unsigned char *sv = malloc(es * (size_t)(n ? n : 1));
        int32_t *av = malloc(4 * (size_t)(n ? n : 1));
        CHECK_OK(emily_to_binary(s, sv, es * (size_t)n));
        CHECK_OK(emily_to_binary(a, av, 4 * (size_t)n));
        for (int64_t i = 0; i < n && ok; i++) {
            if (av[i] != p[i]) {
                fprintf(stderr, "  argsort %s n=%lld mix=%d %s: position %lld is %d, want %lld\n", emily_dtype_name(dt),
                        (long long)n, mix, desc ? "desc" : "asc", (long long)i, av[i], (long long)p[i]);
                ok = false;
            } else if (memcmp(sv + (size_t)i * es, d + (size_t)p[i] * es, es) != 0) {
                fprintf(stderr, "  sort %s n=%lld mix=%d %s: element %lld has other bits\n", emily_dtype_name(dt),
                        (long long)n, mix, desc ? "desc" : "asc", (long long)i);
                ok = false;
            }
        }
        free(p);
        free(sv);
        free(av);
    }
    RELEASE(t, s, a);
    free(d);
    return ok;
}

TEST(every_dtype_matches_the_reference) {
    static const int64_t sizes[] = {1, 2, 3, 7, 24, 25, 31, 100, 129, 256, 257, 1000, 5000};
    for (size_t ti = 0; ti < NREAL; ti++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
            for (int mix = 0; mix < 4; mix++)
                for (int desc = 0; desc < 2; desc++) CHECK(check_row(REAL_TYPES[ti], sizes[si], mix, desc));
}

TEST(every_network_size_matches_the_reference) {
    /* the vector sort's in-register networks take 1 to 16 registers
     * (16 or 8 keys each, the last one partly filled): every length up
     * to 300, then lengths around the f32 first pass's 64-key steps */
    static const emily_dtype types[] = {EMILY_F32, EMILY_F64, EMILY_S32, EMILY_U64};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++) {
        for (int64_t n = 1; n <= 300; n++)
            for (int mix = 0; mix < 2; mix++) CHECK(check_row(types[ti], n, mix, n % 2 == 0));
        for (int64_t n = 1000; n < 1100; n += 7) CHECK(check_row(types[ti], n, n % 3 == 0, n % 2 == 0));
    }
}

TEST(long_rows_match_the_reference) {
    /* radix and vector quicksort on big rows; >= 2^17 uses several
     * threads on one row */
    static const emily_dtype types[] = {EMILY_F32, EMILY_F64, EMILY_S32, EMILY_U16, EMILY_BF16, EMILY_U8};
    static const int64_t sizes[] = {70000, 200000};
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t si = 0; si < 2; si++)
            for (int mix = 0; mix < 2; mix++) CHECK(check_row(types[ti], sizes[si], mix, mix == 1));
    /* many equal keys: the pivot-is-minimum split */
    CHECK(check_row(EMILY_F32, 300000, 1, false));
    CHECK(check_row(EMILY_F32, 150000, 3, true));
}

TEST(nan_zero_and_ties_follow_nx) {
    /* the doctest: [nan, -inf, 0.0, inf] */
    float x[6] = {NAN, -INFINITY, 0.0f, INFINITY, -0.0f, -NAN};
    int64_t n = 6;
    emily_tensor *t = t_from(EMILY_F32, 1, &n, x), *s = NULL, *a = NULL;
    CHECK_OK(emily_sort(t, 0, EMILY_SORT_ASC, false, &s));
    uint32_t sb[6], want_asc[6] = {0xff800000u, 0x00000000u, 0x80000000u, 0x7f800000u, 0, 0};
    float pos_nan = NAN, neg_nan = -NAN;
    memcpy(&want_asc[4], &pos_nan, 4);
    memcpy(&want_asc[5], &neg_nan, 4);
    CHECK_OK(emily_to_binary(s, sb, sizeof sb));
    CHECK(memcmp(sb, want_asc, sizeof sb) == 0);
    emily_tensor_release(s);
    CHECK_OK(emily_argsort(t, 0, EMILY_SORT_DESC, false, EMILY_S64, &a));
    int64_t ai[6], want_desc[6] = {0, 5, 3, 2, 4, 1}; /* NaNs first, ties in input order */
    CHECK(emily_tensor_dtype(a) == EMILY_S64);
    CHECK_OK(emily_to_binary(a, ai, sizeof ai));
    CHECK(memcmp(ai, want_desc, sizeof ai) == 0);
    emily_tensor_release(a);
    emily_tensor_release(t);

    /* ties keep their order in both directions */
    int32_t v[6] = {2, 1, 2, 1, 2, 3};
    t = t_from(EMILY_S32, 1, &n, v);
    CHECK_OK(emily_argsort(t, 0, EMILY_SORT_DESC, false, EMILY_DTYPE_AUTO, &a));
    int32_t d[6], wd[6] = {5, 0, 2, 4, 1, 3};
    CHECK(emily_tensor_dtype(a) == EMILY_S32);
    CHECK_OK(emily_to_binary(a, d, sizeof d));
    CHECK(memcmp(d, wd, sizeof d) == 0);
    emily_tensor_release(a);
    CHECK_OK(emily_argsort(t, 0, EMILY_SORT_ASC, false, EMILY_DTYPE_AUTO, &a));
    int32_t wa[6] = {1, 3, 0, 2, 4, 5};
    CHECK_OK(emily_to_binary(a, d, sizeof d));
    CHECK(memcmp(d, wa, sizeof d) == 0);
    emily_tensor_release(a);
    emily_tensor_release(t);
}

/* Sorting along every axis of a rank-3 tensor (and of views of it)
 * matches sorting each row by hand. */
static void check_axes(const emily_tensor *t) {
    int r = emily_tensor_rank(t);
    const int64_t *shape = emily_tensor_shape(t);
    emily_dtype dt = emily_tensor_dtype(t);
    size_t es = emily_dtype_size(dt);
    int64_t size = emily_tensor_size(t);
    unsigned char *src = malloc(es * (size_t)(size ? size : 1));
    CHECK_OK(emily_to_binary(t, src, es * (size_t)size));
    for (int axis = -r; axis < r; axis++) {
        int ax = axis < 0 ? axis + r : axis;
        for (int desc = 0; desc < 2; desc++) {
            emily_tensor *s = NULL, *a = NULL;
            emily_sort_direction dir = desc ? EMILY_SORT_DESC : EMILY_SORT_ASC;
            CHECK_OK(emily_sort(t, axis, dir, false, &s));
            CHECK_OK(emily_argsort(t, axis, dir, false, EMILY_S64, &a));
            if (!s || !a) {
                emily_tensor_release(s);
                emily_tensor_release(a);
                continue;
            }
            CHECK(t_shape_is(s, r, shape) && t_shape_is(a, r, shape));
            unsigned char *sv = malloc(es * (size_t)(size ? size : 1));
            int64_t *av = malloc(8 * (size_t)(size ? size : 1));
            CHECK_OK(emily_to_binary(s, sv, es * (size_t)size));
            CHECK_OK(emily_to_binary(a, av, 8 * (size_t)size));
            int64_t n = shape[ax], inner = 1, outer = 1;
            for (int i = ax + 1; i < r; i++) inner *= shape[i];
            for (int i = 0; i < ax; i++) outer *= shape[i];
            bool ok = true;
            for (int64_t o = 0; o < outer && ok; o++)
                for (int64_t in = 0; in < inner && ok; in++) {
                    int64_t base = o * n * inner + in;
                    int64_t *p = ref_argsort(dt, src + (size_t)base * es, n, inner, desc);
                    for (int64_t j = 0; j < n && ok; j++) {
                        int64_t at = base + j * inner;
                        ok = av[at] == p[j] &&
                             memcmp(sv + (size_t)at * es, src + (size_t)(base + p[j] * inner) * es, es) == 0;
                    }
                    free(p);
                }
            if (!ok) fprintf(stderr, "  axis %d %s of %s differs\n", axis, desc ? "desc" : "asc", emily_dtype_name(dt));
            CHECK(ok);
            free(sv);
            free(av);
            emily_tensor_release(s);
            emily_tensor_release(a);
        }
    }
    free(src);
}

TEST(axes_views_and_many_rows) {
    int64_t shape[3] = {4, 5, 6};
    for (size_t ti = 0; ti < NREAL; ti++) {
        emily_dtype dt = REAL_TYPES[ti];
        void *d = make_data(dt, 120, 1);
        emily_tensor *t = t_from(dt, 3, shape, d);
        check_axes(t);
        /* transposed, reversed and broadcast views */
        int perm[3] = {2, 0, 1}, rev[2] = {0, 2};
        emily_tensor *v = NULL;
        CHECK_OK(emily_transpose(t, perm, &v));
        if (v) check_axes(v);
        emily_tensor_release(v);
        CHECK_OK(emily_reverse(t, 2, rev, &v));
        if (v) check_axes(v);
        emily_tensor_release(v);
        int64_t bshape[4] = {2, 4, 5, 6};
        int baxes[3] = {1, 2, 3};
        CHECK_OK(emily_broadcast(t, 4, bshape, baxes, &v));
        if (v) check_axes(v);
        emily_tensor_release(v);
        emily_tensor_release(t);
        free(d);
    }
    /* many rows: split over threads */
    int64_t big[2] = {300, 257};
    void *d = make_data(EMILY_F32, 300 * 257, 1);
    emily_tensor *t = t_from(EMILY_F32, 2, big, d);
    check_axes(t);
    emily_tensor_release(t);
    free(d);
}

TEST(scalars_and_empty_tensors) {
    float x = -0.0f;
    emily_tensor *t = t_from(EMILY_F32, 0, NULL, &x), *s = NULL, *a = NULL;
    CHECK_OK(emily_sort(t, 0, EMILY_SORT_ASC, false, &s));
    CHECK(s && emily_tensor_rank(s) == 0);
    uint32_t b = 1;
    if (s) CHECK_OK(emily_to_binary(s, &b, 4));
    CHECK(b == 0x80000000u);
    CHECK_OK(emily_argsort(t, -1, EMILY_SORT_DESC, false, EMILY_DTYPE_AUTO, &a));
    CHECK(a && emily_tensor_rank(a) == 0 && t_get(a, 0) == 0);
    emily_tensor_release(s);
    emily_tensor_release(a);
    CHECK_ERR(emily_sort(t, 1, EMILY_SORT_ASC, false, &s), EMILY_ERR_AXIS, "rank 0");
    emily_tensor_release(t);

    int64_t shape[2] = {3, 0};
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_S16, 2, shape, &t));
    for (int axis = 0; axis < 2; axis++) {
        CHECK_OK(emily_sort(t, axis, EMILY_SORT_ASC, false, &s));
        CHECK(t_shape_is(s, 2, shape));
        CHECK_OK(emily_argsort(t, axis, EMILY_SORT_ASC, false, EMILY_DTYPE_AUTO, &a));
        CHECK(t_shape_is(a, 2, shape) && emily_tensor_dtype(a) == EMILY_S32);
        emily_tensor_release(s);
        emily_tensor_release(a);
    }
    emily_tensor *v = NULL, *ix = NULL;
    CHECK_ERR(emily_top_k(t, 1, EMILY_DTYPE_AUTO, &v, &ix), EMILY_ERR_ARGUMENT, "k (1)");
    emily_tensor_release(t);
    int64_t shape2[2] = {0, 4};
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_F32, 2, shape2, &t));
    CHECK_OK(emily_top_k(t, 2, EMILY_DTYPE_AUTO, &v, &ix));
    int64_t want[2] = {0, 2};
    CHECK(t_shape_is(v, 2, want) && t_shape_is(ix, 2, want));
    RELEASE(v, ix, t);
}

TEST(argsort_index_types) {
    int64_t n = 300;
    void *d = make_data(EMILY_S32, n, 0);
    emily_tensor *t = t_from(EMILY_S32, 1, &n, d), *a8 = NULL, *af = NULL, *a64 = NULL;
    CHECK_OK(emily_argsort(t, 0, EMILY_SORT_ASC, false, EMILY_U8, &a8));
    CHECK_OK(emily_argsort(t, 0, EMILY_SORT_ASC, false, EMILY_F32, &af));
    CHECK_OK(emily_argsort(t, 0, EMILY_SORT_ASC, false, EMILY_S64, &a64));
    if (a8 && af && a64) {
        for (int64_t i = 0; i < n; i++) {
            double p = t_get(a64, i);
            CHECK(t_get(a8, i) == (double)((int64_t)p % 256)); /* wraps like Nx */
            CHECK(t_get(af, i) == p);
        }
    }
    RELEASE(a8, af, a64, t);
    free(d);
}

/* top_k of each row equals the first k of the reference descending
 * argsort (values with their exact bits). */
static void check_top_k(emily_dtype dt, int64_t rows, int64_t n, int64_t k, int mix) {
    size_t es = emily_dtype_size(dt);
    unsigned char *d = make_data(dt, rows * n, mix);
    int64_t shape[2] = {rows, n};
    emily_tensor *t = t_from(dt, 2, shape, d), *v = NULL, *ix = NULL;
    CHECK_OK(emily_top_k(t, k, EMILY_DTYPE_AUTO, &v, &ix));
    if (v && ix) {
        int64_t want[2] = {rows, k};
        CHECK(t_shape_is(v, 2, want) && t_shape_is(ix, 2, want));
        CHECK(emily_tensor_dtype(v) == dt && emily_tensor_dtype(ix) == EMILY_S32);
        unsigned char *vv = malloc(es * (size_t)(rows * k));
        int32_t *iv = malloc(4 * (size_t)(rows * k));
        CHECK_OK(emily_to_binary(v, vv, es * (size_t)(rows * k)));
        CHECK_OK(emily_to_binary(ix, iv, 4 * (size_t)(rows * k)));
        bool ok = true;
        for (int64_t r = 0; r < rows && ok; r++) {
            int64_t *p = ref_argsort(dt, d + (size_t)(r * n) * es, n, 1, true);
            for (int64_t j = 0; j < k && ok; j++)
                ok = iv[r * k + j] == p[j] &&
                     memcmp(vv + (size_t)(r * k + j) * es, d + (size_t)(r * n + p[j]) * es, es) == 0;
            free(p);
        }
        if (!ok)
            fprintf(stderr, "  top_k %s rows=%lld n=%lld k=%lld differs\n", emily_dtype_name(dt), (long long)rows,
                    (long long)n, (long long)k);
        CHECK(ok);
        free(vv);
        free(iv);
    }
    RELEASE(v, ix, t);
    free(d);
}

TEST(top_k_matches_the_reference) {
    for (size_t ti = 0; ti < NREAL; ti++) {
        emily_dtype dt = REAL_TYPES[ti];
        check_top_k(dt, 3, 6, 1, 1);
        check_top_k(dt, 3, 6, 6, 1);
        check_top_k(dt, 4, 500, 3, 1);   /* heap selection */
        check_top_k(dt, 2, 500, 200, 0); /* full sort */
        check_top_k(dt, 200, 300, 5, 1); /* rows on threads */
        check_top_k(dt, 2, 5000, 7, 1);  /* a heap fed over several chunks */
    }
    check_top_k(EMILY_F32, 1, 200000, 50000, 1); /* one long row, sorted */
    check_top_k(EMILY_F64, 1, 200000, 3, 0);
    /* one long row, selected on several threads: NaNs and ties (mix 1),
     * rising values (every element enters the selection), falling ones */
    for (int mix = 0; mix < 4; mix++) {
        check_top_k(EMILY_F32, 1, 300001, 10, mix);
        check_top_k(EMILY_S32, 1, 300001, 10, mix);
    }
    check_top_k(EMILY_F32, 1, 300000, 1, 1);
    check_top_k(EMILY_F32, 1, 300000, 30000, 1); /* slices of k each */
    check_top_k(EMILY_F16, 1, 140000, 5, 1);
    check_top_k(EMILY_U8, 1, 140000, 5, 0);
    check_top_k(EMILY_U64, 1, 140000, 17, 1);
    /* the vector filter's tail: rows that are not whole vectors */
    for (int64_t n = 25; n < 200; n += 13) check_top_k(EMILY_F32, 2, n, 3, 1);
    /* the doctest: NaN first, then inf, then 0.0 */
    float x[4] = {NAN, -INFINITY, INFINITY, 0.0f};
    int64_t n = 4;
    emily_tensor *t = t_from(EMILY_F32, 1, &n, x), *v = NULL, *ix = NULL;
    CHECK_OK(emily_top_k(t, 3, EMILY_S64, &v, &ix));
    CHECK(isnan(t_get(v, 0)) && t_get(v, 1) == INFINITY && t_get(v, 2) == 0.0);
    CHECK(emily_tensor_dtype(ix) == EMILY_S64 && t_get(ix, 0) == 0 && t_get(ix, 1) == 2 && t_get(ix, 2) == 3);
    emily_tensor_release(v);
    emily_tensor_release(ix);
    /* a long strided row: the selection reads through the stride */
    {
        int64_t sh2[2] = {150000, 2};
        unsigned char *xs = make_data(EMILY_F32, 300000, 1);
        emily_tensor *m2 = t_from(EMILY_F32, 2, sh2, xs), *tr = NULL;
        int pm[2] = {1, 0};
        CHECK_OK(emily_transpose(m2, pm, &tr));
        CHECK_OK(emily_top_k(tr, 4, EMILY_S64, &v, &ix));
        for (int r = 0; r < 2; r++) {
            int64_t *p = ref_argsort(EMILY_F32, xs + 4 * r, 150000, 2, true);
            for (int j = 0; j < 4; j++) {
                CHECK(t_get(ix, r * 4 + j) == (double)p[j]);
                uint32_t got = 0, want;
                float gv = (float)t_get(v, r * 4 + j);
                memcpy(&want, xs + 4 * (2 * p[j] + r), 4);
                memcpy(&got, &gv, 4);
                CHECK(got == want || (isnan(gv) && (want & 0x7fffffffu) > 0x7f800000u));
            }
            free(p);
        }
        RELEASE(v, ix, tr, m2);
        free(xs);
    }
    /* a transposed view: top_k runs along its last axis */
    int64_t shape[2] = {3, 4};
    float m[12] = {1, 9, 3, 4, 8, 2, 7, 5, 0, 6, 11, 10};
    emily_tensor *tm = t_from(EMILY_F32, 2, shape, m), *tv = NULL;
    int perm[2] = {1, 0};
    CHECK_OK(emily_transpose(tm, perm, &tv));
    CHECK_OK(emily_top_k(tv, 2, EMILY_DTYPE_AUTO, &v, &ix));
    double wv[8] = {8, 1, 9, 6, 11, 7, 10, 5}, wi[8] = {1, 0, 0, 2, 2, 1, 2, 1};
    for (int i = 0; i < 8; i++) CHECK(t_get(v, i) == wv[i] && t_get(ix, i) == wi[i]);
    RELEASE(v, ix, tv, tm, t);
}

TEST(bad_arguments) {
    int64_t n = 3;
    float x[3] = {3, 1, 2};
    emily_tensor *t = t_from(EMILY_F32, 1, &n, x), *o = NULL, *v = NULL, *ix = NULL;
    CHECK_ERR(emily_sort(NULL, 0, EMILY_SORT_ASC, false, &o), EMILY_ERR_ARGUMENT, "sort: tensor is NULL");
    CHECK_ERR(emily_sort(t, 0, EMILY_SORT_ASC, false, NULL), EMILY_ERR_ARGUMENT, "output pointer");
    CHECK_ERR(emily_sort(t, 1, EMILY_SORT_ASC, false, &o), EMILY_ERR_AXIS, "axis 1");
    CHECK_ERR(emily_sort(t, -2, EMILY_SORT_ASC, false, &o), EMILY_ERR_AXIS, "axis -2");
    CHECK_ERR(emily_sort(t, 0, (emily_sort_direction)7, false, &o), EMILY_ERR_ARGUMENT, "direction");
    CHECK_ERR(emily_argsort(t, 0, EMILY_SORT_ASC, false, EMILY_C64, &o), EMILY_ERR_TYPE, "real type");
    CHECK_ERR(emily_argsort(t, 0, EMILY_SORT_ASC, false, (emily_dtype)99, &o), EMILY_ERR_TYPE, "invalid");
    CHECK_ERR(emily_argsort(NULL, 0, EMILY_SORT_ASC, false, EMILY_S32, &o), EMILY_ERR_ARGUMENT, "NULL");
    CHECK_ERR(emily_top_k(t, 0, EMILY_DTYPE_AUTO, &v, &ix), EMILY_ERR_ARGUMENT, "at least 1");
    CHECK_ERR(emily_top_k(t, 4, EMILY_DTYPE_AUTO, &v, &ix), EMILY_ERR_ARGUMENT, "larger than the last axis");
    CHECK_ERR(emily_top_k(t, 1, EMILY_C128, &v, &ix), EMILY_ERR_TYPE, "real type");
    CHECK_ERR(emily_top_k(t, 1, EMILY_DTYPE_AUTO, NULL, &ix), EMILY_ERR_ARGUMENT, "output pointer");
    CHECK_ERR(emily_top_k(t, 1, EMILY_DTYPE_AUTO, &v, NULL), EMILY_ERR_ARGUMENT, "output pointer");
    CHECK_ERR(emily_top_k(NULL, 1, EMILY_DTYPE_AUTO, &v, &ix), EMILY_ERR_ARGUMENT, "NULL");
    emily_tensor *sc = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_F32, 0, NULL, emily_scalar_float(1), &sc));
    CHECK_ERR(emily_top_k(sc, 1, EMILY_DTYPE_AUTO, &v, &ix), EMILY_ERR_SHAPE, "rank 1");
    emily_tensor_release(sc);
    emily_tensor *c = NULL;
    CHECK_OK(emily_constant(EMILY_CPU, EMILY_C64, 1, &n, emily_scalar_complex(1, 2), &c));
    CHECK_ERR(emily_sort(c, 0, EMILY_SORT_ASC, false, &o), EMILY_ERR_TYPE, "complex");
    CHECK_ERR(emily_argsort(c, 0, EMILY_SORT_ASC, false, EMILY_S32, &o), EMILY_ERR_TYPE, "complex");
    CHECK_ERR(emily_top_k(c, 1, EMILY_DTYPE_AUTO, &v, &ix), EMILY_ERR_TYPE, "complex");
    CHECK(o == NULL && v == NULL && ix == NULL);
    emily_tensor_release(c);
    emily_tensor_release(t);
}

/* The Nx callbacks: both option forms and the templates' types. */
TEST(callbacks) {
    int64_t n = 4;
    float x[4] = {NAN, -INFINITY, INFINITY, 0.0f};
    emily_tensor *t = t_from(EMILY_F32, 1, &n, x);
    const char *keys[3] = {"axis", "direction", "stable"};
    emily_value ov[3] = {v_int(0), v_atom("desc"), v_bool(true)};
    emily_value arg[2] = {v_tensor(t), v_opts(keys, ov, 3)};
    emily_value tmpl = v_tmpl(EMILY_S64, 1, &n);
    emily_dispatch_result r = {0};
    CHECK_OK(emily_dispatch("argsort", EMILY_CPU, &tmpl, arg, 2, EMILY_DISPATCH_INFER, &r));
    CHECK(r.n == 1 && emily_tensor_dtype(r.tensors[0]) == EMILY_S64 && t_get(r.tensors[0], 0) == 0 &&
          t_get(r.tensors[0], 1) == 2);
    emily_dispatch_result_release(&r);
    tmpl.dtype = EMILY_F32;
    CHECK_OK(emily_dispatch("sort", EMILY_CPU, &tmpl, arg, 2, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 1 && isnan(t_get(r.tensors[0], 0)) && t_get(r.tensors[0], 3) == -INFINITY);
    emily_dispatch_result_release(&r);
    ov[1].str = "sideways";
    CHECK_ERR(emily_dispatch("sort", EMILY_CPU, &tmpl, arg, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT, "sideways");

    /* top_k: indices' type from the template in RUN mode (s64 as Nx 0.7), s32 inferred */
    const char *kkeys[1] = {"k"};
    emily_value kv = v_int(2);
    arg[1] = v_opts(kkeys, &kv, 1);
    int64_t two = 2;
    emily_value outs[2] = {v_tmpl(EMILY_F32, 1, &two), v_tmpl(EMILY_S64, 1, &two)};
    emily_value list = v_list(outs, 2);
    CHECK_OK(emily_dispatch("top_k", EMILY_CPU, &list, arg, 2, EMILY_DISPATCH_RUN, &r));
    CHECK(r.n == 2 && emily_tensor_dtype(r.tensors[1]) == EMILY_S64 && t_get(r.tensors[1], 1) == 2);
    emily_dispatch_result_release(&r);
    CHECK_OK(emily_dispatch("top_k", EMILY_CPU, &list, arg, 2, EMILY_DISPATCH_INFER, &r));
    CHECK(r.n == 2 && emily_tensor_dtype(r.tensors[1]) == EMILY_S32);
    emily_dispatch_result_release(&r);
    kv.i = 9;
    CHECK_ERR(emily_dispatch("top_k", EMILY_CPU, &list, arg, 2, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT, "k (9)");
    emily_tensor_release(t);
}

RUN_TESTS("sort", CASE(every_dtype_matches_the_reference), CASE(every_network_size_matches_the_reference),
          CASE(long_rows_match_the_reference), CASE(nan_zero_and_ties_follow_nx), CASE(axes_views_and_many_rows),
          CASE(scalars_and_empty_tensors), CASE(argsort_index_types), CASE(top_k_matches_the_reference),
          CASE(bad_arguments), CASE(callbacks))
