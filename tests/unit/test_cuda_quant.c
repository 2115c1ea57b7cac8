/* The CUDA engine's quantization kernels (src/cuda/quant_matmul.cu)
 * against the CPU engine's (src/cpu/quant.c, quant_matmul.c).
 *
 * quantize and dequantize: the CPU's bits. Both devices take every scalar
 * step from core/quant_rules.h with no contraction into FMAs, so codes,
 * scales, biases and dequantized weights must be identical (a NaN
 * matches any NaN).
 *
 * quantized_matmul: the devices sum in different orders (the header's
 * reordered sum), so the GPU's result must be within 2 K u_A sum |x w|
 * (plus the output's rounding) of the CPU's: each is within half that of
 * the exact sum of the same decoded weights. Every width, group size,
 * both orientations, the GEMV path (few rows: 1, 7, 32) and the tiled one
 * (33 rows and more), odd N, f16/bf16/f64 inputs, K = 0, an x with no
 * rows, and the op layer's errors. GPU cases only: without a CUDA device
 * the binary says SKIPPED (EMILY_TEST_CUDA_ON_CPU=1 checks the test code
 * with both sides on the CPU). */
#include "cuda_compare.h"

static const int widths[3] = {2, 4, 8};
static const int64_t group_sizes[3] = {32, 64, 128};

/* ---- quantize and dequantize: bit for bit ------------------------------------- */

typedef struct quant_arg {
    int bits;
    int64_t gs;
    int which; /* quantize's output: 0 q, 1 scales, 2 biases; 3 dequantize(quantize(w)) */
} quant_arg;

static emily_status run_quant(emily_tensor *const *in, emily_tensor **out, const void *p) {
    const quant_arg *a = p;
    emily_tensor *r[3] = {NULL, NULL, NULL};
    emily_status s = emily_quantize(in[0], a->bits, a->gs, &r[0], &r[1], &r[2]);
    if (!s && a->which == 3) s = emily_dequantize(r[0], r[1], r[2], a->bits, a->gs, out);
    else if (!s) {
        *out = r[a->which];
        r[a->which] = NULL;
    }
    for (int i = 0; i < 3; i++) emily_tensor_release(r[i]);
    return s;
}

TEST(gpu_quantize_and_dequantize_bits) {
    static const emily_dtype types[4] = {EMILY_F32, EMILY_F16, EMILY_BF16, EMILY_F64};
    static const int64_t shape[2] = {13, 384}, ties[2] = {4, 256}, empty[2] = {0, 128};
    for (int ti = 0; ti < 4; ti++)
        for (int wi = 0; wi < 3; wi++)
            for (int gi = 0; gi < 3; gi++) {
                emily_tensor *w[3] = {tc_tensor(types[ti], 2, shape, TC_GENERAL),
                                      tc_tensor(types[ti], 2, ties, TC_TIES),
                                      tc_tensor(types[ti], 2, empty, TC_GENERAL)};
                for (int c = 0; c < 3; c++)
                    for (int which = 0; which < 4; which++) {
                        quant_arg a = {widths[wi], group_sizes[gi], which};
                        char what[160];
                        snprintf(what, sizeof what, "%s %s bits %d group %lld output %d",
                                 c == 0   ? "general"
                                 : c == 1 ? "ties"
                                          : "empty",
                                 emily_dtype_name(types[ti]), a.bits, (long long)a.gs, which);
                        tc_compare(what, run_quant, &a, 1, &w[c]);
                    }
                for (int c = 0; c < 3; c++) emily_tensor_release(w[c]);
            }
}

/* ---- quantized_matmul: within the reordered-sum bound -------------------------- */

typedef struct mm_arg {
    int bits;
    int64_t gs;
    bool transpose;
} mm_arg;

/* in: x, q, scales, biases */
static emily_status run_mm(emily_tensor *const *in, emily_tensor **out, const void *p) {
    const mm_arg *a = p;
    return emily_quantized_matmul(in[0], in[1], in[2], in[3], a->bits, a->gs, a->transpose, out);
}

/* The bound of the case being compared: 2 K u_A |x| . |w| per element. */
static emily_tensor *mm_mag;
static double mm_scale;
static emily_dtype mm_out;

static double out_ulp(emily_dtype dt, double v) {
    double u = dt == EMILY_F64 ? 0x1p-52 : dt == EMILY_F32 ? 0x1p-23 : dt == EMILY_F16 ? 0x1p-10 : 0x1p-7;
    int e;
    frexp(fabs(v) > 1e-300 ? fabs(v) : 1e-300, &e);
    return ldexp(u, e - 1) * 2;
}

static bool mm_close(const char *what, const emily_tensor *c, const emily_tensor *g) {
    if (emily_tensor_dtype(c) != emily_tensor_dtype(g) || !t_shape_is(g, emily_tensor_rank(c), emily_tensor_shape(c))) {
        fprintf(stderr, "  %s: the results' types or shapes differ\n", what);
        return false;
    }
    int bad = 0;
    double *cv = harness_doubles(c), *gv = harness_doubles(g), *mv = harness_doubles(mm_mag);
    for (int64_t i = 0; cv && gv && mv && i < emily_tensor_size(c); i++) {
        double x = cv[i], y = gv[i];
        double bound = mm_scale * mv[i] + out_ulp(mm_out, x);
        if (x == y || (x != x && y != y)) continue; /* equal infinities, NaNs */
        if (!(fabs(x - y) <= bound) && bad++ < 3)
            fprintf(stderr, "  %s: element %lld: cpu %.17g, cuda %.17g, bound %.3g\n", what, (long long)i, x, y, bound);
    }
    bool ok = cv && gv && mv && bad == 0;
    free(cv), free(gv), free(mv);
    return ok;
}

/* x {m, k} (or {2, m/2, k}) against weights quantized from w. */
static void mm_case(emily_dtype xt, emily_dtype wt, int bits, int64_t gs, bool transpose, int64_t m, int64_t n,
                    int64_t k, bool batched) {
    int64_t wshape[2] = {transpose ? n : k, transpose ? k : n};
    int64_t xshape[3] = {2, m / 2, k}, xflat[2] = {m, k};
    emily_tensor *w = tc_tensor(wt, 2, wshape, TC_NEAR_ONE);
    emily_tensor *x = batched ? tc_tensor(xt, 3, xshape, TC_NEAR_ONE) : tc_tensor(xt, 2, xflat, TC_NEAR_ONE);
    emily_tensor *in[4] = {x, NULL, NULL, NULL};
    CHECK_OK(emily_quantize(w, bits, gs, &in[1], &in[2], &in[3]));
    /* |x| . |dequantize(w)| on the CPU, in the accumulation type */
    emily_dtype acc = (xt == EMILY_F64 || wt == EMILY_F64) ? EMILY_F64 : EMILY_F32;
    emily_tensor *deq = NULL, *ad = NULL, *ax = NULL, *xa = NULL, *da = NULL;
    CHECK_OK(emily_dequantize(in[1], in[2], in[3], bits, gs, &deq));
    CHECK_OK(emily_as_type(deq, acc, &da));
    CHECK_OK(emily_as_type(x, acc, &xa));
    CHECK_OK(emily_unary(EMILY_ABS, da, &ad));
    CHECK_OK(emily_unary(EMILY_ABS, xa, &ax));
    int ca = emily_tensor_rank(x) - 1, cb = transpose ? 1 : 0;
    mm_mag = NULL;
    CHECK_OK(emily_dot(ax, 1, &ca, 0, NULL, ad, 1, &cb, 0, NULL, EMILY_DTYPE_AUTO, &mm_mag));
    mm_scale = 2.0 * (double)(k + 2) * (acc == EMILY_F64 ? 0x1p-53 : 0x1p-24);
    mm_out = emily_type_merge(xt, wt);
    mm_arg a = {bits, gs, transpose};
    char what[200];
    snprintf(what, sizeof what, "x %s {%lld, %lld}%s, w %s {%lld, %lld}, bits %d, group %lld%s", emily_dtype_name(xt),
             (long long)m, (long long)k, batched ? " batched" : "", emily_dtype_name(wt), (long long)wshape[0],
             (long long)wshape[1], bits, (long long)gs, transpose ? ", transposed" : "");
    if (mm_mag) {
        emily_tensor *gin[4] = {NULL, NULL, NULL, NULL}, *c = NULL, *g = NULL;
        bool up = true;
        for (int i = 0; i < 4; i++)
            if (!in[i] || emily_to_device(in[i], tc_device, &gin[i])) up = false;
        if (!up) {
            fprintf(stderr, "  %s: inputs could not be moved (%s)\n", what, emily_last_error());
            harness_failures++;
        } else {
            emily_status sc = run_mm(in, &c, &a);
            char cmsg[512];
            snprintf(cmsg, sizeof cmsg, "%s", sc ? emily_last_error() : "");
            emily_status sg = run_mm(gin, &g, &a);
            harness_gpu_verdict(what, sc, cmsg, sg, c, g, mm_close);
        }
        emily_tensor_release(c);
        emily_tensor_release(g);
        for (int i = 0; i < 4; i++) emily_tensor_release(gin[i]);
    }
    emily_tensor *rel[] = {w, x, in[1], in[2], in[3], deq, ad, ax, xa, da, mm_mag};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) emily_tensor_release(rel[i]);
    mm_mag = NULL;
}

/* Every width and group size, both orientations; the GEMV path (1, 7, 32
 * rows) and the tiled one (33, 100 rows); odd N. */
TEST(gpu_matmul_every_width_and_group) {
    static const int64_t rows[5] = {1, 7, 32, 33, 100};
    for (int wi = 0; wi < 3; wi++)
        for (int gi = 0; gi < 3; gi++)
            for (int r = 0; r < 5; r++) {
                int bits = widths[wi];
                int64_t gs = group_sizes[gi];
                mm_case(EMILY_F32, EMILY_F32, bits, gs, true, rows[r], 37, 384, false);
                mm_case(EMILY_F32, EMILY_F32, bits, gs, false, rows[r], 256, 19, false);
            }
}

/* Input types (the output their merge), batched x, model sizes. */
TEST(gpu_matmul_types_and_sizes) {
    static const emily_dtype types[4] = {EMILY_F32, EMILY_F16, EMILY_BF16, EMILY_F64};
    for (int xi = 0; xi < 4; xi++)
        for (int wi = 0; wi < 4; wi++) {
            mm_case(types[xi], types[wi], 4, 64, true, 2, 29, 256, false);
            mm_case(types[xi], types[wi], 4, 64, true, 64, 29, 256, true);
            mm_case(types[xi], types[wi], 8, 32, false, 6, 64, 40, true);
        }
    mm_case(EMILY_F32, EMILY_F32, 4, 64, true, 1, 1536, 576, false);
    mm_case(EMILY_BF16, EMILY_BF16, 4, 64, true, 1, 49152, 576, false);
    mm_case(EMILY_F32, EMILY_F32, 4, 64, true, 512, 1536, 576, false);
}

/* K = 0 (zeros), x without rows, and the op layer's errors: the same on
 * both devices. */
TEST(gpu_matmul_edges_and_errors) {
    static const int64_t wz[2] = {3, 0}, xz[2] = {2, 0}, ws[2] = {4, 64}, x0[2] = {0, 64}, xbad[2] = {2, 32};
    emily_tensor *in[4] = {tc_tensor(EMILY_F32, 2, xz, TC_GENERAL), NULL, NULL, NULL};
    emily_tensor *w = tc_tensor(EMILY_F32, 2, wz, TC_GENERAL);
    CHECK_OK(emily_quantize(w, 4, 64, &in[1], &in[2], &in[3]));
    mm_arg a = {4, 64, true};
    tc_compare("K = 0", run_mm, &a, 4, in);
    emily_tensor_release(w);
    for (int i = 0; i < 4; i++) emily_tensor_release(in[i]);

    w = tc_tensor(EMILY_F32, 2, ws, TC_GENERAL);
    in[0] = tc_tensor(EMILY_F32, 2, x0, TC_GENERAL);
    CHECK_OK(emily_quantize(w, 4, 32, &in[1], &in[2], &in[3]));
    mm_arg b = {4, 32, true};
    tc_compare("x without rows", run_mm, &b, 4, in);
    emily_tensor_release(in[0]);
    in[0] = tc_tensor(EMILY_F32, 2, xbad, TC_GENERAL);
    tc_expect("x of the wrong K", run_mm, &b, 4, in, EMILY_ERR_SHAPE);
    mm_arg c = {3, 32, true};
    tc_expect("bits 3", run_mm, &c, 4, in, EMILY_ERR_ARGUMENT);
    emily_tensor_release(in[0]);
    in[0] = tc_tensor(EMILY_S32, 2, xbad, TC_GENERAL);
    tc_expect("integer x", run_mm, &b, 4, in, EMILY_ERR_TYPE);
    emily_tensor_release(w);
    for (int i = 0; i < 4; i++) emily_tensor_release(in[i]);
}

TC_MAIN("cuda_quant", CASE(gpu_quantize_and_dequantize_bits), CASE(gpu_matmul_every_width_and_group),
        CASE(gpu_matmul_types_and_sizes), CASE(gpu_matmul_edges_and_errors))
