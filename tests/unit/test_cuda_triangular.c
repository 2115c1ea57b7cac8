/* triangular_solve's method (emily_triangular_solve_opts, the callback's
 * :linalg option). On CUDA, EMILY_LINALG_REFERENCE runs Nx's substitution
 * on the GPU (src/cuda/linalg_triangular_exact.cu), which must give the
 * CPU kernel's bits: f32, f64, c64, c128 and the types the op layer widens
 * (f16, bf16, s32, mixed inputs), every left_side/lower/transform_a
 * combination, vector and matrix right-hand sides, batches, views, NaN and
 * infinity, the zero-pivot error. The CPU runs Nx's substitution whatever
 * the method. The option's parsing and errors are checked everywhere.
 *
 * Without a GPU the GPU cases are listed as skipped, never passed.
 * EMILY_TEST_CUDA_ON_CPU=1 runs them with the "GPU" side on the CPU too
 * (a self-check of this file). */
#include <stdlib.h>
#include "triangular_cases.h"
#include "harness.h"
#include "core/engine.h"
#include "core/kernels.h"

static emily_device DEV = {EMILY_DEVICE_CUDA, 0};

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void) { return (double)(xorshift64(&rng) >> 11) * 0x1p-52 - 1.0; }

static int64_t prod(int rank, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    return n;
}

/* A CPU tensor of type dt: entries in [-1, 1] (complex parts too; small
 * integers for integer types), plus `diag` on the diagonal of each
 * trailing square matrix (0: none). */
static emily_tensor *random_tensor(emily_dtype dt, int rank, const int64_t *shape, double diag) {
    int64_t total = prod(rank, shape), n = shape[rank - 1], m = rank >= 2 ? shape[rank - 2] : 1;
    bool cx = emily_dtype_is_complex(dt), integer = emily_dtype_is_integer(dt);
    double *v = calloc((size_t)(2 * total + 2), sizeof *v);
    for (int64_t i = 0; i < total; i++) {
        v[2 * i] = integer ? (double)(int)(urand() * 4) : urand();
        v[2 * i + 1] = cx ? urand() : 0;
        int64_t r = (i / n) % m, c = i % n;
        if (diag != 0 && m == n && r == c) v[2 * i] += diag;
    }
    emily_tensor *w = t_from(EMILY_C128, rank, shape, v), *t = NULL;
    free(v);
    if (!w) return NULL;
    /* real types take the real parts */
    emily_tensor *r = NULL;
    if (!cx) CHECK_OK(emily_unary(EMILY_REAL, w, &r));
    CHECK_OK(emily_as_type(cx ? w : r, dt, &t));
    RELEASE(w, r);
    return t;
}

static emily_tensor *on_dev(const emily_tensor *t) {
    emily_tensor *d = NULL;
    CHECK_OK(emily_to_device(t, DEV, &d));
    return d;
}

/* Same type, shape and values: every part the same bits, or NaN in both
 * (the devices may carry different NaN payloads). */
static bool same_values(const char *what, const emily_tensor *got, const emily_tensor *want) {
    if (!got || !want || emily_tensor_dtype(got) != emily_tensor_dtype(want) ||
        !t_shape_is(got, emily_tensor_rank(want), emily_tensor_shape(want))) {
        fprintf(stderr, "  %s: missing result or another type/shape\n", what);
        return false;
    }
    int64_t n = emily_tensor_size(want);
    double *g = calloc((size_t)(2 * n + 2), sizeof *g), *w = calloc((size_t)(2 * n + 2), sizeof *w);
    emily_tensor *gc = NULL, *wc = NULL;
    bool ok = !emily_as_type(got, EMILY_C128, &gc) && !emily_as_type(want, EMILY_C128, &wc) &&
              !emily_to_binary(gc, g, (size_t)(2 * n) * sizeof *g) &&
              !emily_to_binary(wc, w, (size_t)(2 * n) * sizeof *w);
    for (int64_t i = 0; ok && i < 2 * n; i++)
        if (memcmp(&g[i], &w[i], sizeof g[i]) != 0 && !(g[i] != g[i] && w[i] != w[i])) {
            fprintf(stderr, "  %s: element %lld part %lld: %a, want %a\n", what, (long long)(i / 2), (long long)(i % 2),
                    g[i], w[i]);
            ok = false;
        }
    RELEASE(gc, wc);
    free(g), free(w);
    return ok;
}

/* Nx.LinAlg.triangular_solve's doctest: [[3, 0, 0, 0], [2, 1, 0, 0], [1,
 * 0, 1, 0], [1, 1, 1, 1]] x = [4, 2, 4, 2] (s32, so f32) prints
 * [1.3333334, -0.6666667, 2.6666667, -1.3333334]; cuBLAS in f32 gives
 * [1.3333334, -0.66666675, 2.6666665, -1.3333331]. */
static void check_doctest(emily_device dev, emily_linalg_method method) {
    int64_t as[2] = {4, 4}, bs[1] = {4};
    int32_t a[16] = {3, 0, 0, 0, 2, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1}, b[4] = {4, 2, 4, 2};
    emily_tensor *ac = t_from(EMILY_S32, 2, as, a), *bc = t_from(EMILY_S32, 1, bs, b), *ad = NULL, *bd = NULL,
                 *x = NULL;
    CHECK_OK(emily_to_device(ac, dev, &ad));
    CHECK_OK(emily_to_device(bc, dev, &bd));
    CHECK_OK(emily_triangular_solve_opts(ad, bd, true, true, EMILY_TRANSFORM_NONE, method, &x));
    const float want[4] = {1.3333334f, -0.6666667f, 2.6666667f, -1.3333334f};
    CHECK(x && t_holds(x, EMILY_F32, want, sizeof want));
    RELEASE(ac, bc, ad, bd, x);
}

/* ---- without a GPU --------------------------------------------------------- */

/* The CUDA engine has Nx's triangular_solve (and still none of the other
 * reference algorithms); the CPU has no native entries. */
TEST(cuda_table_has_reference_triangular_solve) {
    const emily_engine *c = emi_cpu_engine();
    CHECK(c->linalg && c->linalg->triangular_solve && !c->linalg->triangular_solve_native);
    const emily_engine *e = emi_cuda_engine();
    if (!e) return; /* a build without the CUDA engine */
    CHECK(emi_engine_supports(e, EMI_KERNEL_TRIANGULAR_SOLVE, 0, EMILY_F64));
    CHECK(e->linalg->triangular_solve_native != NULL);
    CHECK(!emi_engine_supports(e, EMI_KERNEL_LU, 0, EMILY_F64));
}

/* On the CPU every method is Nx's substitution: the same bits. */
TEST(cpu_methods_agree) {
    int64_t as[3] = {3, 7, 7}, bs[3] = {3, 7, 2};
    emily_tensor *a = random_tensor(EMILY_C64, 3, as, 8), *b = random_tensor(EMILY_C64, 3, bs, 0);
    for (int opt = 0; opt < 12; opt++) {
        bool left = opt & 1, lower = opt & 2;
        emily_transform_a tr = (emily_transform_a)(opt / 4);
        emily_tensor *x0 = NULL;
        int64_t bt[3] = {3, 2, 7};
        emily_tensor *bb = left ? NULL : random_tensor(EMILY_C64, 3, bt, 0);
        CHECK_OK(emily_triangular_solve(a, left ? b : bb, left, lower, tr, &x0));
        for (int m = 0; m < 3; m++) {
            emily_tensor *x = NULL;
            CHECK_OK(emily_triangular_solve_opts(a, left ? b : bb, left, lower, tr, (emily_linalg_method)m, &x));
            CHECK(t_same_bytes(x, x0));
            RELEASE(x);
        }
        RELEASE(x0, bb);
    }
    check_doctest(EMILY_CPU, EMILY_LINALG_LAPACK);
    check_doctest(EMILY_CPU, EMILY_LINALG_REFERENCE);
    RELEASE(a, b);
}

TEST(method_errors) {
    int64_t as[2] = {2, 2}, bs[1] = {2};
    emily_tensor *a = random_tensor(EMILY_F32, 2, as, 3), *b = random_tensor(EMILY_F32, 1, bs, 0), *x = NULL;
    CHECK_ERR(emily_triangular_solve_opts(a, b, true, true, EMILY_TRANSFORM_NONE, (emily_linalg_method)7, &x),
              EMILY_ERR_ARGUMENT, "triangular_solve: invalid method 7");
    CHECK_ERR(emily_triangular_solve_opts(a, b, true, true, EMILY_TRANSFORM_NONE, (emily_linalg_method)-1, &x),
              EMILY_ERR_ARGUMENT, "invalid method -1");
    CHECK(x == NULL);
    /* the callback: :linalg is an atom among Emily's methods */
    const char *keys[2] = {"lower", "linalg"};
    emily_value tmpl = v_tmpl(EMILY_F32, 1, bs);
    emily_value items[2], args[3] = {v_tensor(a), v_tensor(b), v_opts(keys, items, 2)};
    emily_dispatch_result r = {0};
    items[0] = v_bool(true);
    items[1] = v_atom("reference");
    CHECK(dispatch_ok("triangular_solve", &tmpl, args, 3) == 1);
    items[1] = v_atom("reference_nx07");
    CHECK(dispatch_ok("triangular_solve", &tmpl, args, 3) == 1);
    items[1] = v_atom("fastest");
    CHECK_ERR(emily_dispatch("triangular_solve", EMILY_CPU, &tmpl, args, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "invalid :linalg received. Expected one of [:lapack, :reference, :reference_nx07], received: :fastest");
    items[1] = v_int(1);
    CHECK_ERR(emily_dispatch("triangular_solve", EMILY_CPU, &tmpl, args, 3, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "linalg");
    CHECK(r.n == 0);
    RELEASE(a, b);
}

/* ---- on the GPU ------------------------------------------------------------ */

/* Every type, shape and option: the GPU's :reference result is the CPU's. */
TEST(gpu_reference_matches_cpu_bits) {
    static const tri_case cases[] = {{2, {1, 1}, {1}, 1},
                                     {2, {4, 4}, {4}, 1},
                                     {2, {4, 4}, {4, 3}, 2},
                                     {2, {5, 5}, {2, 5}, 2},
                                     {3, {20, 6, 6}, {20, 6, 3}, 3},
                                     {3, {20, 6, 6}, {20, 6}, 2},
                                     {2, {40, 40}, {40, 33}, 2},
                                     {3, {3, 17, 17}, {3, 5, 17}, 3}};
    static const emily_dtype types[] = {EMILY_F32, EMILY_F64, EMILY_C64, EMILY_C128, EMILY_F16, EMILY_BF16, EMILY_S32};
    for (size_t d = 0; d < sizeof types / sizeof *types; d++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int opt = 0; opt < TRI_OPTION_SETS; opt++) {
                tri_setup o;
                if (!tri_options(&cases[c], opt, &o)) continue;
                emily_dtype dt = types[d];
                emily_tensor *a = random_tensor(dt, o.rank, cases[c].a, (double)o.n + 4), /* integers reach -3 */
                    *b = random_tensor(dt, o.brank, cases[c].b, 0);
                emily_tensor *ad = on_dev(a), *bd = on_dev(b), *x = NULL, *xc = NULL, *xh = NULL;
                emily_linalg_method method = opt % 5 == 4 ? EMILY_LINALG_REFERENCE_NX07 : EMILY_LINALG_REFERENCE;
                CHECK_OK(emily_triangular_solve_opts(ad, bd, o.left, o.lower, o.tr, method, &x));
                CHECK_OK(emily_triangular_solve(a, b, o.left, o.lower, o.tr, &xc));
                if (x) CHECK_OK(emily_to_device(x, EMILY_CPU, &xh));
                char what[112];
                snprintf(what, sizeof what, "triangular_solve %s case %zu left %d lower %d transform %d",
                         emily_dtype_name(dt), c, o.left, o.lower, (int)o.tr);
                CHECK(x && emily_tensor_device(x).type == DEV.type);
                CHECK(same_values(what, xh, xc));
                RELEASE(a, b, ad, bd, x, xc, xh);
            }
}

/* The GPU's :reference solve of (ad, bd) and the CPU's of (a, b), left
 * side, with lower and transform as given: the same values. */
static void same_as_cpu(const char *what, emily_tensor *a, emily_tensor *b, emily_tensor *ad, emily_tensor *bd,
                        bool lower, emily_transform_a tr) {
    emily_tensor *x = NULL, *xc = NULL, *xh = NULL;
    CHECK_OK(emily_triangular_solve_opts(ad, bd, true, lower, tr, EMILY_LINALG_REFERENCE, &x));
    CHECK_OK(emily_triangular_solve(a, b, true, lower, tr, &xc));
    if (x) CHECK_OK(emily_to_device(x, EMILY_CPU, &xh));
    CHECK(same_values(what, xh, xc));
    RELEASE(x, xc, xh);
}

/* Mixed input types (merged as Nx merges them), a view as b, NaN and
 * infinity in the inputs, the doctest, empty shapes. */
TEST(gpu_reference_edges) {
    int64_t as[3] = {2, 6, 6}, bs[3] = {2, 6, 4}, bts[3] = {2, 4, 6};
    emily_tensor *a = random_tensor(EMILY_F32, 3, as, 6), *b = random_tensor(EMILY_F64, 3, bs, 0);
    emily_tensor *ad = on_dev(a), *bd = on_dev(b);
    same_as_cpu("f32 a, f64 b", a, b, ad, bd, false, EMILY_TRANSFORM_TRANSPOSE);
    /* b transposed: a strided view */
    emily_tensor *bt = random_tensor(EMILY_F32, 3, bts, 0), *btd = on_dev(bt), *v = NULL, *vd = NULL;
    int perm[3] = {0, 2, 1};
    CHECK_OK(emily_transpose(bt, perm, &v));
    CHECK_OK(emily_transpose(btd, perm, &vd));
    same_as_cpu("view b", a, v, ad, vd, true, EMILY_TRANSFORM_NONE);
    /* NaN and infinity spread as on the CPU */
    double av[9] = {2, 0, 0, NAN, 1, 0, 1, INFINITY, 4}, bv[3] = {1, -INFINITY, 3};
    int64_t s2[2] = {3, 3}, s1[1] = {3};
    emily_tensor *na = t_from(EMILY_F64, 2, s2, av), *nb = t_from(EMILY_F64, 1, s1, bv);
    emily_tensor *nad = on_dev(na), *nbd = on_dev(nb);
    same_as_cpu("NaN and infinity", na, nb, nad, nbd, true, EMILY_TRANSFORM_NONE);
    check_doctest(DEV, EMILY_LINALG_REFERENCE);
    /* empty: no matrices, no right-hand sides */
    int64_t e0[3] = {0, 3, 3}, eb0[2] = {0, 3}, e1[2] = {3, 3}, eb1[2] = {3, 0};
    emily_tensor *ea = random_tensor(EMILY_F32, 3, e0, 3), *eb = random_tensor(EMILY_F32, 2, eb0, 0);
    emily_tensor *fa = random_tensor(EMILY_F32, 2, e1, 3), *fb = random_tensor(EMILY_F32, 2, eb1, 0);
    emily_tensor *ead = on_dev(ea), *ebd = on_dev(eb), *fad = on_dev(fa), *fbd = on_dev(fb);
    emily_tensor *y1 = NULL, *y2 = NULL;
    CHECK_OK(emily_triangular_solve_opts(ead, ebd, true, true, EMILY_TRANSFORM_NONE, EMILY_LINALG_REFERENCE, &y1));
    CHECK_OK(emily_triangular_solve_opts(fad, fbd, true, true, EMILY_TRANSFORM_NONE, EMILY_LINALG_REFERENCE, &y2));
    CHECK(y1 && t_shape_is(y1, 2, eb0) && y2 && t_shape_is(y2, 2, eb1));
    RELEASE(a, b, ad, bd, bt, btd, v, vd, na, nb, nad, nbd, ea, eb, fa, fb, ead, ebd, fad, fbd, y1, y2);
}

/* A zero on a diagonal: the CPU's error and message, for the first zero
 * in (matrix, row) order. */
TEST(gpu_reference_zero_pivot) {
    static const emily_dtype types[] = {EMILY_F32, EMILY_C128};
    for (int d = 0; d < 2; d++) {
        int64_t as[3] = {3, 5, 5}, bs[2] = {3, 5};
        emily_tensor *a0 = random_tensor(types[d], 3, as, 5), *b = random_tensor(types[d], 2, bs, 0);
        double *v = calloc(2 * 75, sizeof *v);
        emily_tensor *wide = NULL;
        CHECK_OK(emily_as_type(a0, EMILY_C128, &wide));
        CHECK_OK(emily_to_binary(wide, v, 2 * 75 * sizeof *v));
        v[2 * (50 + 6)] = v[2 * (50 + 6) + 1] = 0;   /* matrix 2, row 1 */
        v[2 * (50 + 18)] = v[2 * (50 + 18) + 1] = 0; /* matrix 2, row 3 */
        emily_tensor *zw = t_from(EMILY_C128, 3, as, v), *z = NULL, *r = NULL;
        if (!emily_dtype_is_complex(types[d])) CHECK_OK(emily_unary(EMILY_REAL, zw, &r));
        CHECK_OK(emily_as_type(r ? r : zw, types[d], &z));
        emily_tensor *zd = on_dev(z), *bd = on_dev(b), *x = NULL;
        emily_status gs = emily_triangular_solve_opts(zd, bd, true, true, EMILY_TRANSFORM_NONE, EMILY_LINALG_REFERENCE,
                                                      &x);
        char gmsg[512];
        snprintf(gmsg, sizeof gmsg, "%s", emily_last_error());
        emily_status cs = emily_triangular_solve(z, b, true, true, EMILY_TRANSFORM_NONE, &x);
        CHECK(gs == EMILY_ERR_ARGUMENT && cs == EMILY_ERR_ARGUMENT && x == NULL);
        CHECK(strcmp(gmsg, emily_last_error()) == 0);
        CHECK(strstr(gmsg, "zero on the diagonal at row 1 of matrix 2") != NULL);
        free(v);
        RELEASE(a0, b, wide, zw, z, r, zd, bd);
    }
}

#define GPU_CASES CASE(gpu_reference_matches_cpu_bits), CASE(gpu_reference_edges), CASE(gpu_reference_zero_pivot)

int main(int argc, char **argv) {
    if (!harness_args(argc, argv)) return 2;
    static const harness_case always[] = {
        CASE(cuda_table_has_reference_triangular_solve), CASE(cpu_methods_agree), CASE(method_errors), {NULL, NULL}};
    static const harness_case gpu[] = {GPU_CASES, {NULL, NULL}};
    int rc = harness_run("cuda_triangular (without a GPU too)", always);
    const char *on_cpu = getenv("EMILY_TEST_CUDA_ON_CPU");
    if (on_cpu && strcmp(on_cpu, "1") == 0) {
        printf("cuda_triangular: EMILY_TEST_CUDA_ON_CPU=1: GPU cases run on the CPU (a self-check of the test)\n");
        DEV = EMILY_CPU;
        return harness_finish(harness_run("cuda_triangular cases on cpu", gpu) || rc);
    }
    if (emily_device_count(EMILY_DEVICE_CUDA) == 0) {
        int skipped = 0;
        for (const harness_case *c = gpu; c->name; c++) skipped++;
        printf("cuda_triangular: SKIPPED %d GPU cases: no CUDA device usable here "
               "(no GPU, no driver, or a build without the CUDA engine)\n",
               skipped);
        return rc; /* not harness_finish: --only may name a GPU case skipped here */
    }
    printf("cuda_triangular: %d device(s)\n", emily_device_count(EMILY_DEVICE_CUDA));
    return harness_finish(harness_run("cuda_triangular (GPU)", gpu) || rc);
}
