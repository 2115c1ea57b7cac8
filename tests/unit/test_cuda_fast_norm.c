/* The CUDA engine's layer_norm and rms_norm (src/cuda/fast_norm.cu)
 * against the CPU engine (src/cpu/fast_norm.c): every combination of
 * float types for x, gamma and beta, rows shorter and longer than a warp,
 * more rows than the grid has warps, views, empty tensors, eps 0, edge
 * values (both zeros, infinities, NaNs, f16's largest value), and the
 * errors the op layer gives.
 *
 * Tolerance: none. Both engines sum each row as 256 partial sums of
 * 8-element chunks in double (f64 rows in f64), each partial in index
 * order, combined in one order (src/core/norm_rules.h), and round every later
 * step through the same shared helpers with no contraction into FMAs (the
 * CPU's -ffp-contract=off, nvcc's --fmad=false), so every result must have
 * the CPU's bits (a NaN matches any NaN). GPU cases only: without a CUDA
 * device the binary says SKIPPED. */
#include "cuda_compare.h"

typedef struct norm_arg {
    bool rms;
    bool beta;
    double eps;
    int view;        /* 0 as is; 1 x transposed (its last two axes swapped, then normalized); 2 offset, below */
    int64_t rows, n; /* view 2's shape */
} norm_arg;

/* View 2: x ({rows * n + 1}), gamma and beta ({n + 1}) from their element 1
 * on, x as {rows, n}: rows whose length is a multiple of 8 off the 16-byte
 * alignment the kernel's chunk loads take. */
static emily_status offset_views(const norm_arg *a, emily_tensor *const *in, emily_tensor **v) {
    int64_t one = 1, len = a->rows * a->n, shape[2] = {a->rows, a->n}, stride = 1;
    emily_tensor *flat = NULL;
    emily_status s = emily_slice(in[0], &one, &len, &stride, &flat);
    if (!s) s = emily_reshape(flat, 2, shape, &v[0]);
    for (int i = 1; i < 3 && !s; i++) s = emily_slice(in[i], &one, &a->n, &stride, &v[i]);
    emily_tensor_release(flat);
    return s;
}

/* in: x, gamma, beta */
static emily_status run_norm(emily_tensor *const *in, emily_tensor **out, const void *p) {
    const norm_arg *a = p;
    emily_tensor *x = in[0], *t = NULL, *v[3] = {NULL, NULL, NULL};
    emily_status s = EMILY_OK;
    if (a->view == 2) {
        s = offset_views(a, in, v);
        if (!s)
            s = a->rms ? emily_rms_norm(v[0], v[1], a->eps, out)
                       : emily_layer_norm(v[0], v[1], a->beta ? v[2] : NULL, a->eps, out);
        for (int i = 0; i < 3; i++) emily_tensor_release(v[i]);
        return s;
    }
    if (a->view) {
        int rank = emily_tensor_rank(in[0]), perm[8];
        for (int d = 0; d < rank; d++) perm[d] = d;
        perm[rank - 1] = rank - 2;
        perm[rank - 2] = rank - 1;
        s = emily_transpose(in[0], perm, &t);
        x = t;
    }
    if (!s)
        s = a->rms ? emily_rms_norm(x, in[1], a->eps, out)
                   : emily_layer_norm(x, in[1], a->beta ? in[2] : NULL, a->eps, out);
    emily_tensor_release(t);
    return s;
}

static const emily_dtype floats[4] = {EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64};

/* Both ops (layer_norm with and without beta) on x of `shape` with
 * gamma/beta of types gt/bt. */
static void norm_all(const char *label, emily_dtype xt, emily_dtype gt, emily_dtype bt, int rank, const int64_t *shape,
                     int kind, int view, double eps) {
    int64_t n = shape[rank - 1 - (view ? 1 : 0)];
    emily_tensor *in[3] = {tc_tensor(xt, rank, shape, kind), tc_tensor(gt, 1, &n, kind), tc_tensor(bt, 1, &n, kind)};
    for (int op = 0; op < 3; op++) {
        norm_arg a = {op == 2, op == 0, eps, view, 0, 0};
        char what[200];
        snprintf(what, sizeof what, "%s %s x %s gamma %s%s%s eps %g%s", label, a.rms ? "rms_norm" : "layer_norm",
                 emily_dtype_name(xt), emily_dtype_name(gt), op == 0 ? " beta " : "",
                 op == 0 ? emily_dtype_name(bt) : "", eps, view ? " transposed" : "");
        tc_compare(what, run_norm, &a, 3, in);
    }
    for (int i = 0; i < 3; i++) emily_tensor_release(in[i]);
}

/* Every type combination on short rows (fewer elements than lanes, a
 * warp's worth, one more) and one of 384. */
TEST(gpu_norm_every_type_combination) {
    static const int64_t s1[2] = {3, 7}, s2[2] = {5, 32}, s3[3] = {2, 2, 33}, s4[2] = {9, 384};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 4; k += 3) {
                emily_dtype xt = floats[i], gt = floats[j], bt = floats[(j + k) % 4];
                norm_all("[3,7]", xt, gt, bt, 2, s1, TC_GENERAL, 0, 1.0e-5);
                norm_all("[5,32]", xt, gt, bt, 2, s2, TC_GENERAL, 0, 1.0e-5);
                norm_all("[2,2,33]", xt, gt, bt, 3, s3, TC_NEAR_ONE, 0, 1.0e-6);
                norm_all("[9,384]", xt, gt, bt, 2, s4, TC_GENERAL, 0, 1.0e-5);
            }
}

/* Rows of one element, long rows, more rows than the grid's warps (the
 * blocks' row loop), rows at and past each size the kernel keeps in
 * registers, and random bit patterns (NaNs and infinities of every
 * kind in many rows). */
TEST(gpu_norm_shapes) {
    /* gamma f32 where set (else x's type); each size of the rows kept in
     * registers, full and partial, and the first length past them */
    static const struct {
        const char *label;
        int64_t shape[2];
        int kind;
        bool f32_gamma;
    } cases[] = {{"[17,1]", {17, 1}, TC_GENERAL, false},       {"[3,20001]", {3, 20001}, TC_GENERAL, false},
                 {"[50000,8]", {50000, 8}, TC_GENERAL, false}, {"[4096,384]", {4096, 384}, TC_GENERAL, true},
                 {"[9,384] bits", {9, 384}, TC_BITS, false},   {"[6,257]", {6, 257}, TC_GENERAL, false},
                 {"[6,512]", {6, 512}, TC_GENERAL, false},     {"[6,520]", {6, 520}, TC_GENERAL, false},
                 {"[5,1024]", {5, 1024}, TC_GENERAL, false},   {"[4,1500]", {4, 1500}, TC_GENERAL, true},
                 {"[70,4096]", {70, 4096}, TC_GENERAL, true},  {"[3,4097]", {3, 4097}, TC_GENERAL, false}};
    for (int i = 0; i < 4; i++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            emily_dtype t = floats[i];
            norm_all(cases[c].label, t, cases[c].f32_gamma ? EMILY_F32 : t, t, 2, cases[c].shape, cases[c].kind, 0,
                     1.0e-5);
        }
}

/* Constant rows with eps 0 (NaN through inf * 0), ties data, a transposed
 * x, x/gamma/beta off the chunks' alignment, empty tensors. */
TEST(gpu_norm_edges_and_views) {
    static const int64_t s[3] = {4, 40, 12}, empty[2] = {0, 8}, empty_rows[3] = {2, 3, 0};
    for (int i = 0; i < 4; i++) {
        emily_dtype t = floats[i];
        norm_all("[4,40,12] ties", t, t, t, 3, s, TC_TIES, 0, 0.0);
        norm_all("[4,40,12]", t, EMILY_F32, t, 3, s, TC_GENERAL, 1, 1.0e-5);
        for (int op = 0; op < 3; op++) {
            static const int64_t flat[1] = {9 * 384 + 1}, vec[1] = {385};
            norm_arg a = {op == 2, op == 0, 1.0e-5, 2, 9, 384};
            emily_tensor *in[3] = {tc_tensor(t, 1, flat, TC_GENERAL), tc_tensor(EMILY_F32, 1, vec, TC_GENERAL),
                                   tc_tensor(EMILY_F32, 1, vec, TC_GENERAL)};
            char what[120];
            snprintf(what, sizeof what, "[9,384] offset by one %s %s", emily_dtype_name(t),
                     op == 2 ? "rms_norm" : "layer_norm");
            tc_compare(what, run_norm, &a, 3, in);
            for (int i = 0; i < 3; i++) emily_tensor_release(in[i]);
        }
        norm_all("[0,8]", t, t, t, 2, empty, TC_GENERAL, 0, 1.0e-5);
        norm_all("[2,3,0]", t, t, t, 3, empty_rows, TC_GENERAL, 0, 1.0e-5);
    }
}

/* The op layer's errors, the same on both devices. */
TEST(gpu_norm_errors) {
    static const int64_t s[2] = {3, 5}, three[1] = {3};
    emily_tensor *in[3] = {tc_tensor(EMILY_F32, 2, s, TC_GENERAL), tc_tensor(EMILY_F32, 1, three, TC_GENERAL),
                           tc_tensor(EMILY_F32, 1, three, TC_GENERAL)};
    norm_arg ln = {false, true, 1e-5, 0, 0, 0}, rms = {true, false, 1e-6, 0, 0, 0};
    tc_expect("gamma of the wrong size", run_norm, &ln, 3, in, EMILY_ERR_SHAPE);
    tc_expect("rms gamma of the wrong size", run_norm, &rms, 3, in, EMILY_ERR_SHAPE);
    emily_tensor_release(in[0]);
    in[0] = tc_tensor(EMILY_S32, 2, s, TC_GENERAL);
    tc_expect("integer x", run_norm, &rms, 3, in, EMILY_ERR_TYPE);
    for (int i = 0; i < 3; i++) emily_tensor_release(in[i]);
}

TC_MAIN("cuda_fast_norm", CASE(gpu_norm_every_type_combination), CASE(gpu_norm_shapes), CASE(gpu_norm_edges_and_views),
        CASE(gpu_norm_errors))
