/* The CUDA engine's cumulative family (src/cuda/cumulative*.cu) against the
 * CPU engine: cumulative_sum/product/max/min on every dtype, both
 * directions, every axis, on shapes that reach each path of the kernels
 * (Nx's tree order in one block and across tiles, recursively; the running
 * folds a thread per line and 32 rows per block; the chunked f32/f64 sums
 * of long rows), with edge values (both zeros, infinities, NaNs, ties).
 * Every result must equal the CPU's bit for bit (a NaN matches any NaN).
 * GPU cases only: without a CUDA device the binary says SKIPPED. */
#include "cuda_compare.h"

typedef struct scan_arg {
    emily_cumulative_op op;
    int axis;
    bool reverse;
    int view; /* 0 as is, 1 transposed first (a non-contiguous input) */
} scan_arg;

static emily_status run_scan(emily_tensor *const *in, emily_tensor **out, const void *p) {
    const scan_arg *a = p;
    if (a->view == 0) return emily_cumulative(a->op, in[0], a->axis, a->reverse, out);
    int rank = emily_tensor_rank(in[0]), perm[8];
    for (int d = 0; d < rank; d++) perm[d] = rank - 1 - d;
    emily_tensor *t = NULL;
    emily_status s = emily_transpose(in[0], perm, &t);
    if (!s) s = emily_cumulative(a->op, t, a->axis, a->reverse, out);
    emily_tensor_release(t);
    return s;
}

static const char *op_name(emily_cumulative_op op) {
    static const char *names[] = {"sum", "product", "max", "min"};
    return names[op];
}

static const emily_dtype all_types[] = {EMILY_U8,  EMILY_U16, EMILY_U32,  EMILY_U64, EMILY_S8,  EMILY_S16, EMILY_S32,
                                        EMILY_S64, EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64, EMILY_C64, EMILY_C128};
#define NTYPES ((int)(sizeof all_types / sizeof all_types[0]))

/* Data for an op: products near one (so long products stay finite), ties
 * for max/min (equal zeros of both signs decide which element wins). */
static int kind_for(emily_cumulative_op op, int variant) {
    if (variant == 1) return TC_BITS;
    if (op == EMILY_CUMULATIVE_PRODUCT) return TC_NEAR_ONE;
    if (op == EMILY_CUMULATIVE_MAX || op == EMILY_CUMULATIVE_MIN) return TC_TIES;
    return TC_GENERAL;
}

/* Every op (max/min not on complex) along every axis of `shape`, both
 * directions, on dtype dt. */
static void scan_all(const char *label, emily_dtype dt, int rank, const int64_t *shape, int variant) {
    for (int op = 0; op < 4; op++) {
        if (op >= EMILY_CUMULATIVE_MAX && emily_dtype_is_complex(dt)) continue;
        emily_tensor *t = tc_tensor(dt, rank, shape, kind_for((emily_cumulative_op)op, variant));
        for (int axis = 0; axis < (rank ? rank : 1); axis++) {
            for (int rev = 0; rev < 2; rev++) {
                scan_arg a = {(emily_cumulative_op)op, axis, rev == 1, 0};
                char what[160];
                snprintf(what, sizeof what, "%s cumulative_%s %s axis %d%s", label, op_name(a.op), emily_dtype_name(dt),
                         axis, rev ? " reverse" : "");
                tc_compare(what, run_scan, &a, 1, &t);
            }
        }
        emily_tensor_release(t);
    }
}

/* Small shapes: a thread per line, single-block trees (several lines a
 * block, lines `inner` apart), rank 0 and size-1 axes. */
TEST(gpu_cumulative_small_shapes) {
    static const int64_t s0[1] = {1}, s1[1] = {37}, s2[3] = {3, 7, 5}, s3[2] = {1, 9}, s4[4] = {2, 1, 3, 4};
    for (int k = 0; k < NTYPES; k++) {
        scan_all("rank 0", all_types[k], 0, s0, 0);
        scan_all("[1]", all_types[k], 1, s0, 0);
        scan_all("[37]", all_types[k], 1, s1, 0);
        scan_all("[3,7,5]", all_types[k], 3, s2, 0);
        scan_all("[1,9]", all_types[k], 2, s3, 0);
        scan_all("[2,1,3,4]", all_types[k], 4, s4, 1);
    }
}

/* Rows of 64+ elements (32 rows a block through shared memory), tiles of
 * a tree with a partial last tile, lines `inner` apart longer than a tile. */
TEST(gpu_cumulative_medium_shapes) {
    static const int64_t rows[2] = {67, 130}, tiles[2] = {3, 5001}, cols[2] = {4097, 3};
    for (int k = 0; k < NTYPES; k++) {
        scan_all("[67,130]", all_types[k], 2, rows, 0);
        scan_all("[3,5001]", all_types[k], 2, tiles, 0);
        scan_all("[4097,3]", all_types[k], 2, cols, 0);
    }
}

/* Every path on one kind of data at sizes that cut lines several ways. */
static void one_case(const char *label, emily_cumulative_op op, emily_dtype dt, int rank, const int64_t *shape,
                     int axis, bool rev, int kind) {
    emily_tensor *t = tc_tensor(dt, rank, shape, kind);
    scan_arg a = {op, axis, rev, 0};
    char what[160];
    snprintf(what, sizeof what, "%s cumulative_%s %s axis %d%s", label, op_name(op), emily_dtype_name(dt), axis,
             rev ? " reverse" : "");
    tc_compare(what, run_scan, &a, 1, &t);
    emily_tensor_release(t);
}

/* The CPU's chunked f32/f64 sums: rows of at least 2^16 elements, a
 * partial last chunk, a length that is not a multiple of 4 (the chunk
 * totals' tail), several rows. */
TEST(gpu_cumulative_long_sums) {
    static const int64_t one[1] = {(1 << 16)}, odd[2] = {1, 200003}, many[2] = {3, 70001};
    static const emily_dtype ft[2] = {EMILY_F32, EMILY_F64};
    for (int k = 0; k < 2; k++)
        for (int rev = 0; rev < 2; rev++) {
            one_case("[65536]", EMILY_CUMULATIVE_SUM, ft[k], 1, one, 0, rev, TC_GENERAL);
            one_case("[1,200003]", EMILY_CUMULATIVE_SUM, ft[k], 2, odd, 1, rev, TC_GENERAL);
            one_case("[3,70001]", EMILY_CUMULATIVE_SUM, ft[k], 2, many, 1, rev, TC_GENERAL);
        }
    /* 2^24 + 3 f32: 513 chunks, 17 blocks of 32 */
    static const int64_t big[1] = {(1 << 24) + 3};
    one_case("[2^24+3]", EMILY_CUMULATIVE_SUM, EMILY_F32, 1, big, 0, false, TC_GENERAL);
    one_case("[2^24+3]", EMILY_CUMULATIVE_SUM, EMILY_F32, 1, big, 0, true, TC_GENERAL);
}

/* Trees of more than one level of tiles (2048^2 = 4M elements: the tile
 * aggregates are themselves cut into tiles), and integers on both of their
 * paths (the tree; a thread per line when 16384+ lines lie inner apart). */
TEST(gpu_cumulative_deep_trees) {
    static const int64_t deep[1] = {((int64_t)1 << 22) + 12345}, wide[2] = {5, 20000};
    one_case("[2^22+12345]", EMILY_CUMULATIVE_SUM, EMILY_F16, 1, deep, 0, false, TC_GENERAL);
    one_case("[2^22+12345]", EMILY_CUMULATIVE_MAX, EMILY_F32, 1, deep, 0, true, TC_TIES);
    one_case("[2^22+12345]", EMILY_CUMULATIVE_PRODUCT, EMILY_C64, 1, deep, 0, false, TC_NEAR_ONE);
    one_case("[2^22+12345]", EMILY_CUMULATIVE_SUM, EMILY_S32, 1, deep, 0, true, TC_BITS);
    /* c128 products run Nx's tree in tiles of 2^10 (16-byte elements):
     * 2^20 + 777 cuts the aggregates into tiles again */
    static const int64_t deep128[1] = {((int64_t)1 << 20) + 777};
    one_case("[2^20+777]", EMILY_CUMULATIVE_PRODUCT, EMILY_C128, 1, deep128, 0, true, TC_NEAR_ONE);
    for (int op = 0; op < 4; op++) {
        one_case("[5,20000]", (emily_cumulative_op)op, EMILY_S16, 2, wide, 0, op & 1, TC_GENERAL);
        one_case("[5,20000]", (emily_cumulative_op)op, EMILY_U64, 2, wide, 0, !(op & 1), TC_BITS);
    }
}

/* A transposed (non-contiguous) input, empty tensors and the errors the op
 * layer gives on both devices. */
TEST(gpu_cumulative_views_empty_errors) {
    static const int64_t s[3] = {4, 6, 5}, empty[2] = {0, 3};
    emily_tensor *t = tc_tensor(EMILY_F32, 3, s, TC_GENERAL);
    for (int axis = 0; axis < 3; axis++) {
        scan_arg a = {EMILY_CUMULATIVE_SUM, axis, axis == 1, 1};
        tc_compare("transposed f32 cumulative_sum", run_scan, &a, 1, &t);
        scan_arg m = {EMILY_CUMULATIVE_MIN, axis, axis != 1, 1};
        tc_compare("transposed f32 cumulative_min", run_scan, &m, 1, &t);
    }
    emily_tensor_release(t);
    emily_tensor *e = tc_tensor(EMILY_F64, 2, empty, TC_GENERAL);
    scan_arg a0 = {EMILY_CUMULATIVE_PRODUCT, 0, false, 0}, a1 = {EMILY_CUMULATIVE_MAX, 1, true, 0};
    tc_compare("empty cumulative_product", run_scan, &a0, 1, &e);
    tc_compare("empty cumulative_max", run_scan, &a1, 1, &e);
    emily_tensor_release(e);
    /* complex max, a bad axis */
    emily_tensor *c = tc_tensor(EMILY_C64, 2, s, TC_GENERAL);
    scan_arg cm = {EMILY_CUMULATIVE_MAX, 0, false, 0}, bad = {EMILY_CUMULATIVE_SUM, 2, false, 0};
    tc_expect("complex cumulative_max", run_scan, &cm, 1, &c, EMILY_ERR_TYPE);
    tc_expect("bad axis", run_scan, &bad, 1, &c, EMILY_ERR_AXIS);
    emily_tensor_release(c);
}

TC_MAIN("cuda_cumulative", CASE(gpu_cumulative_small_shapes), CASE(gpu_cumulative_medium_shapes),
        CASE(gpu_cumulative_long_sums), CASE(gpu_cumulative_deep_trees), CASE(gpu_cumulative_views_empty_errors))
