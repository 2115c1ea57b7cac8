/* The CUDA engine's window family (src/cuda/window_*.cu) against the CPU
 * engine: window_sum/product/max/min and window_scatter_max/min on every
 * dtype they take, with strides, dilations, padding on both sides
 * (negative too: cropping), windows wholly in the padding, empty inputs,
 * non-contiguous inputs, ranks 0 to 4, pooling shapes ([N, C, H, W] with
 * 3x3 windows: the [B, H, W] kernel) and shapes only the general kernel
 * takes. Results must equal the CPU's bit for bit (a NaN matches any
 * NaN); scatter results must too, ties and the order of additions
 * included. GPU cases only: without a CUDA device the binary says SKIPPED. */
#include "cuda_compare.h"

#define MAXR 4

typedef struct win_cfg {
    const char *label;
    int rank;
    int64_t shape[MAXR], window[MAXR], strides[MAXR], pad_lo[MAXR], pad_hi[MAXR], dil[MAXR];
    int view; /* 0 as is, 1 transposed (axes reversed), 2 a slice of every other element of the last axis */
} win_cfg;

typedef struct win_arg {
    const win_cfg *c;
    emily_window_op op;
    bool scatter, is_max;
} win_arg;

/* in[0] viewed as the case asks (a new reference in *v). */
static emily_status view_of(const win_cfg *c, emily_tensor *t, emily_tensor **v) {
    int rank = emily_tensor_rank(t);
    if (c->view == 1) {
        int perm[MAXR];
        for (int d = 0; d < rank; d++) perm[d] = rank - 1 - d;
        return emily_transpose(t, perm, v);
    }
    if (c->view == 2) {
        int64_t st[MAXR], len[MAXR], step[MAXR];
        const int64_t *sh = emily_tensor_shape(t);
        for (int d = 0; d < rank; d++) {
            st[d] = 0;
            len[d] = sh[d];
            step[d] = 1;
        }
        step[rank - 1] = 2; /* Nx's lengths: the span read, strides in it */
        return emily_slice(t, st, len, step, v);
    }
    emily_tensor_retain(t);
    *v = t;
    return EMILY_OK;
}

/* in: the tensor (reduce), or tensor, source and init (scatter, which
 * takes no dilations). */
static emily_status run_window(emily_tensor *const *in, emily_tensor **out, const void *p) {
    const win_arg *a = p;
    const win_cfg *c = a->c;
    emily_tensor *v = NULL;
    emily_status s = view_of(c, in[0], &v);
    if (s) return s;
    if (!a->scatter)
        s = emily_window_reduce(a->op, v, c->rank, c->window, c->strides, c->pad_lo, c->pad_hi, c->dil, out);
    else
        s = (a->is_max ? emily_window_scatter_max : emily_window_scatter_min)(v, in[1], in[2], c->rank, c->window,
                                                                              c->strides, c->pad_lo, c->pad_hi, out);
    emily_tensor_release(v);
    return s;
}

/* The cases: shape, window, strides, pad_lo, pad_hi, dilations (of the
 * view's shape when view != 0: `shape` is the tensor made, before it). */
/* clang-format off */
static const win_cfg cfgs[] = {
    {"pool 3x3", 4, {2, 3, 9, 11}, {1, 1, 3, 3}, {1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}, {1, 1, 1, 1}, 0},
    {"pool 3x3 stride 2 pad 1", 4, {2, 3, 9, 10}, {1, 1, 3, 3}, {1, 1, 2, 2}, {0, 0, 1, 1}, {0, 0, 1, 1}, {1, 1, 1, 1}, 0},
    {"pool 2x3 dilated", 4, {2, 2, 12, 13}, {1, 1, 2, 3}, {1, 1, 1, 2}, {0, 0, 2, 0}, {0, 0, 0, 1}, {1, 1, 3, 2}, 0},
    {"pool cropped", 4, {1, 3, 9, 9}, {1, 1, 3, 2}, {1, 1, 2, 1}, {0, 0, -1, 1}, {0, 0, 0, -2}, {1, 1, 1, 1}, 0},
    {"pool NHWC", 4, {2, 9, 11, 3}, {1, 3, 3, 1}, {1, 2, 1, 1}, {0, 1, 1, 0}, {0, 1, 0, 0}, {1, 1, 2, 1}, 0},
    {"pool channels last only", 3, {9, 11, 4}, {3, 2, 1}, {1, 2, 1}, {1, 0, 0}, {1, 1, 0}, {1, 1, 1}, 0},
    {"1-D", 1, {20}, {4}, {3}, {2}, {1}, {1}, 0},
    {"2-D all axes", 2, {7, 9}, {3, 2}, {2, 1}, {1, 0}, {2, 1}, {1, 2}, 0},
    {"padding-only windows", 1, {3}, {2}, {1}, {4}, {3}, {1}, 0},
    {"empty input", 2, {2, 0}, {1, 2}, {1, 1}, {0, 2}, {0, 1}, {1, 1}, 0},
    {"3-D general", 4, {3, 6, 7, 5}, {2, 3, 2, 2}, {1, 2, 1, 3}, {0, 1, -1, 2}, {1, 0, 0, 2}, {1, 1, 2, 1}, 0},
    {"batch windowed too", 3, {4, 8, 8}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 0},
    {"transposed input", 3, {7, 9, 2}, {1, 3, 2}, {1, 2, 1}, {0, 1, 0}, {0, 1, 0}, {1, 1, 1}, 1},
    {"strided input", 4, {2, 3, 8, 15}, {1, 1, 3, 3}, {1, 1, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 1}, {1, 1, 1, 1}, 2},
    {"rank 0", 0, {0}, {0}, {0}, {0}, {0}, {0}, 0},
    {"size-1 axes", 4, {1, 5, 1, 6}, {1, 2, 1, 3}, {1, 1, 1, 2}, {0, 0, 0, 1}, {0, 1, 0, 0}, {1, 1, 1, 1}, 0},
};
/* clang-format on */
#define NCFG ((int)(sizeof cfgs / sizeof cfgs[0]))

static const emily_dtype all_types[] = {EMILY_U8,  EMILY_U16, EMILY_U32,  EMILY_U64, EMILY_S8,  EMILY_S16, EMILY_S32,
                                        EMILY_S64, EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64, EMILY_C64, EMILY_C128};
#define NTYPES ((int)(sizeof all_types / sizeof all_types[0]))

static const char *op_name(emily_window_op op) {
    static const char *names[] = {"window_sum", "window_product", "window_max", "window_min"};
    return names[op];
}

static void reduce_case(const win_cfg *c, emily_window_op op, emily_dtype dt, int kind) {
    emily_tensor *t = tc_tensor(dt, c->rank, c->shape, kind);
    win_arg a = {c, op, false, false};
    char what[160];
    snprintf(what, sizeof what, "%s: %s %s", c->label, op_name(op), emily_dtype_name(dt));
    bool refused = op >= EMILY_WINDOW_MAX && emily_dtype_is_complex(dt);
    tc_expect(what, run_window, &a, 1, &t, refused ? EMILY_ERR_TYPE : EMILY_OK);
    emily_tensor_release(t);
}

TEST(gpu_window_reduce_matches_cpu) {
    for (int i = 0; i < NCFG; i++)
        for (int k = 0; k < NTYPES; k++)
            for (int op = 0; op < 4; op++) {
                emily_dtype dt = all_types[k];
                int kind = op == EMILY_WINDOW_PRODUCT ? TC_NEAR_ONE : op >= EMILY_WINDOW_MAX ? TC_TIES : TC_GENERAL;
                reduce_case(&cfgs[i], (emily_window_op)op, dt, kind); /* complex max/min: both refuse */
                if (i == 0) reduce_case(&cfgs[i], (emily_window_op)op, dt, TC_BITS);
            }
}

/* The benchmark's shape scaled down: [4, 16, 56, 56] f32 max pooling 3x3,
 * stride 1 (no padding, and padding 1) and stride 2, and channels last;
 * sums and bf16 min too. */
TEST(gpu_window_pooling_sizes) {
    /* clang-format off */
    static const win_cfg pools[] = {
        {"max pool 3x3 s1", 4, {4, 16, 56, 56}, {1, 1, 3, 3}, {1, 1, 1, 1}, {0, 0, 0, 0}, {0, 0, 0, 0}, {1, 1, 1, 1}, 0},
        {"max pool 3x3 s1 p1", 4, {4, 16, 56, 56}, {1, 1, 3, 3}, {1, 1, 1, 1}, {0, 0, 1, 1}, {0, 0, 1, 1}, {1, 1, 1, 1}, 0},
        {"max pool 3x3 s2 p1", 4, {4, 16, 56, 56}, {1, 1, 3, 3}, {1, 1, 2, 2}, {0, 0, 1, 1}, {0, 0, 1, 1}, {1, 1, 1, 1}, 0},
        {"max pool NHWC 3x3 s2 p1", 4, {4, 56, 56, 16}, {1, 3, 3, 1}, {1, 2, 2, 1}, {0, 1, 1, 0}, {0, 1, 1, 0}, {1, 1, 1, 1}, 0},
    };
    /* clang-format on */
    for (int i = 0; i < 4; i++) {
        reduce_case(&pools[i], EMILY_WINDOW_MAX, EMILY_F32, TC_GENERAL);
        reduce_case(&pools[i], EMILY_WINDOW_SUM, EMILY_F32, TC_GENERAL);
        reduce_case(&pools[i], EMILY_WINDOW_MIN, EMILY_BF16, TC_TIES);
    }
}

/* (tensor, source, init) type triples: the output is merge(source, init);
 * float keys when the tensor or init is a float. */
/* clang-format off */
static const emily_dtype triples[][3] = {
    {EMILY_F32, EMILY_F32, EMILY_F32},  {EMILY_F64, EMILY_F64, EMILY_F64},  {EMILY_F16, EMILY_F16, EMILY_F16},
    {EMILY_BF16, EMILY_F32, EMILY_BF16}, {EMILY_F64, EMILY_F32, EMILY_S8},   {EMILY_S32, EMILY_S32, EMILY_S32},
    {EMILY_U8, EMILY_U8, EMILY_U8},     {EMILY_S16, EMILY_U16, EMILY_S64},  {EMILY_U64, EMILY_U8, EMILY_U16},
    {EMILY_S8, EMILY_F32, EMILY_S8},    {EMILY_U32, EMILY_S16, EMILY_F16},  {EMILY_S64, EMILY_S64, EMILY_F64},
};
/* clang-format on */
#define NTRIPLES ((int)(sizeof triples / sizeof triples[0]))

static void scatter_case(const win_cfg *c, bool is_max, const emily_dtype *ty, int kind, int init_kind) {
    /* the window positions: the output shape of a reduce with the same
     * window (no dilation) */
    int64_t pos[MAXR];
    int64_t vshape[MAXR];
    for (int d = 0; d < c->rank; d++) vshape[d] = c->shape[d];
    if (c->view == 1)
        for (int d = 0; d < c->rank; d++) vshape[d] = c->shape[c->rank - 1 - d];
    if (c->view == 2) vshape[c->rank - 1] = (c->shape[c->rank - 1] + 1) / 2;
    for (int d = 0; d < c->rank; d++) {
        int64_t padded = c->pad_lo[d] + vshape[d] + c->pad_hi[d];
        pos[d] = (padded - c->window[d]) / c->strides[d] + 1;
    }
    emily_tensor *in[3];
    in[0] = tc_tensor(ty[0], c->rank, c->shape, kind);
    in[1] = tc_tensor(ty[1], c->rank, pos, TC_GENERAL);
    in[2] = tc_tensor(ty[2], 0, pos, init_kind);
    win_cfg nodil = *c;
    for (int d = 0; d < c->rank; d++) nodil.dil[d] = 1;
    win_arg a = {&nodil, EMILY_WINDOW_MAX, true, is_max};
    char what[200];
    snprintf(what, sizeof what, "%s: window_scatter_%s %s/%s/%s", c->label, is_max ? "max" : "min",
             emily_dtype_name(ty[0]), emily_dtype_name(ty[1]), emily_dtype_name(ty[2]));
    tc_compare(what, run_window, &a, 3, in);
    for (int i = 0; i < 3; i++) emily_tensor_release(in[i]);
}

TEST(gpu_window_scatter_matches_cpu) {
    for (int i = 0; i < NCFG; i++) {
        /* scatter needs a tensor with elements (its output has its shape) */
        int64_t size = 1;
        for (int d = 0; d < cfgs[i].rank; d++) size *= cfgs[i].shape[d];
        if (cfgs[i].rank == 0 || size == 0) continue;
        for (int k = 0; k < NTRIPLES; k++)
            for (int mx = 0; mx < 2; mx++) {
                scatter_case(&cfgs[i], mx == 1, triples[k], TC_TIES, TC_TIES);
                if (k < 3) scatter_case(&cfgs[i], mx == 1, triples[k], TC_GENERAL, TC_GENERAL);
            }
    }
    /* overlapping windows (stride < window): several contributions per
     * element, added in order in f32 */
    static const win_cfg ov = {"overlapping", 2, {30, 31}, {4, 5}, {1, 2}, {1, 2}, {2, 1}, {1, 1}, 0};
    for (int k = 0; k < NTRIPLES; k++) {
        scatter_case(&ov, true, triples[k], TC_TIES, TC_GENERAL);
        scatter_case(&ov, false, triples[k], TC_GENERAL, TC_TIES);
    }
    /* pooling backward at a realistic size */
    static const win_cfg pool = {
        "pool backward", 4, {2, 8, 56, 56}, {1, 1, 3, 3}, {1, 1, 2, 2}, {0, 0, 1, 1}, {0, 0, 1, 1}, {1, 1, 1, 1}, 0};
    scatter_case(&pool, true, triples[0], TC_GENERAL, TC_GENERAL);
}

/* Errors the op layer gives on both devices (complex types, a non-scalar
 * init, a source of the wrong shape, a window that does not fit). */
TEST(gpu_window_errors_match_cpu) {
    static const win_cfg c = {"errors", 2, {5, 6}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 0};
    static const win_cfg big = {"window too large", 2, {5, 6}, {6, 2}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 0};
    emily_tensor *z = tc_tensor(EMILY_C64, 2, c.shape, TC_GENERAL);
    win_arg a = {&c, EMILY_WINDOW_MAX, false, true}, s = {&c, EMILY_WINDOW_SUM, false, false},
            b = {&big, EMILY_WINDOW_SUM, false, false}, sc = {&c, EMILY_WINDOW_MAX, true, true};
    tc_expect("complex window_max", run_window, &a, 1, &z, EMILY_ERR_TYPE);
    tc_compare("complex window_sum", run_window, &s, 1, &z);
    tc_expect("window too large", run_window, &b, 1, &z, EMILY_ERR_SHAPE);
    static const int64_t pos[2] = {4, 5}, wrong[2] = {4, 4}, vec[1] = {2};
    emily_tensor *in[3] = {tc_tensor(EMILY_F32, 2, c.shape, TC_GENERAL), tc_tensor(EMILY_F32, 2, wrong, TC_GENERAL),
                           tc_tensor(EMILY_F32, 0, pos, TC_GENERAL)};
    tc_expect("scatter source of the wrong shape", run_window, &sc, 3, in, EMILY_ERR_SHAPE);
    emily_tensor_release(in[1]);
    emily_tensor_release(in[2]);
    in[1] = tc_tensor(EMILY_F32, 2, pos, TC_GENERAL);
    in[2] = tc_tensor(EMILY_F32, 1, vec, TC_GENERAL);
    tc_expect("scatter init not a scalar", run_window, &sc, 3, in, EMILY_ERR_SHAPE);
    emily_tensor_release(in[0]);
    in[0] = z;
    emily_tensor_release(in[2]);
    in[2] = tc_tensor(EMILY_F32, 0, pos, TC_GENERAL);
    tc_expect("scatter complex tensor", run_window, &sc, 3, in, EMILY_ERR_TYPE);
    for (int i = 0; i < 3; i++) emily_tensor_release(in[i]);
}

TC_MAIN("cuda_window", CASE(gpu_window_reduce_matches_cpu), CASE(gpu_window_pooling_sizes),
        CASE(gpu_window_scatter_matches_cpu), CASE(gpu_window_errors_match_cpu))
