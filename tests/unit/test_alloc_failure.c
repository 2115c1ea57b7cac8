/* Out-of-memory testing in SQLite's manner: each op runs once with its
 * first allocation failing, then its second, and so on until it runs to
 * the end without meeting the failure. Every run must either succeed
 * with the right answer (an op may fall back to a path that needs less
 * memory) or fail with EMILY_ERR_MEMORY, and leave no tensor or buffer
 * behind. This binary is linked with the allocator shim of fail_alloc.h.
 *
 * The right answer is the op's result on the same input with nothing
 * failing, computed after the injected run (so the injected run cannot
 * be handed that result's freed memory); each run's input differs from
 * the last one's, so memory left over from the previous run does not
 * hold the right answer by accident. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fail_alloc.h"
#include "harness.h"

/* Past this many allocations an op is assumed to loop on failure. */
#define MAX_ALLOCS 20000

enum { ROWS = 64, COLS = 3 };

typedef emily_status (*op_fn)(const emily_tensor *x, emily_tensor **out);

/* x: {64, 3} f32 integers that change with `seed`, zeros of both signs
 * among them (reduce_max/min's zero-sign rule reads the input again). */
static emily_tensor *input(int seed) {
    float d[ROWS * COLS];
    for (int i = 0; i < ROWS * COLS; i++) {
        int v = (i * 37 + seed * 11) % 101 - 50;
        d[i] = v == 0 && i % 2 ? -0.0f : (float)v;
    }
    int64_t shape[2] = {ROWS, COLS};
    return t_from(EMILY_F32, 2, shape, d);
}

/* emily_reduce over one axis, one op_fn per (op, axis, keep_axes). */
#define REDUCE_ON_AXIS(name, OP, axis, keep_axes)                             \
    static emily_status name(const emily_tensor *x, emily_tensor **out) {     \
        int ax = axis;                                                        \
        return emily_reduce(OP, x, 1, &ax, keep_axes, EMILY_DTYPE_AUTO, out); \
    }
/* clang-format off */
REDUCE_ON_AXIS(reduce_max0, EMILY_REDUCE_MAX, 0, false)
REDUCE_ON_AXIS(reduce_min0, EMILY_REDUCE_MIN, 0, false)
REDUCE_ON_AXIS(reduce_max1, EMILY_REDUCE_MAX, 1, false)
REDUCE_ON_AXIS(sum0,        EMILY_REDUCE_SUM, 0, true)
/* clang-format on */
#undef REDUCE_ON_AXIS
static emily_status argmax0(const emily_tensor *x, emily_tensor **out) {
    return emily_argreduce(EMILY_ARGMAX, x, 0, false, false, EMILY_DTYPE_AUTO, out);
}
static emily_status sort0(const emily_tensor *x, emily_tensor **out) {
    return emily_sort(x, 0, EMILY_SORT_DESC, true, out);
}
static emily_status cumsum0(const emily_tensor *x, emily_tensor **out) {
    return emily_cumulative_sum(x, 0, false, out);
}
static emily_status gram(const emily_tensor *x, emily_tensor **out) {
    int ca = 0, cb = 0; /* x^T x */
    return emily_dot(x, 1, &ca, 0, NULL, x, 1, &cb, 0, NULL, EMILY_DTYPE_AUTO, out);
}
static emily_status window_sum(const emily_tensor *x, emily_tensor **out) {
    int64_t window[2] = {4, 2};
    return emily_window_sum(x, 2, window, NULL, NULL, NULL, NULL, out);
}
/* r of x's qr (the default LAPACK method) */
static emily_status qr_r(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *q = NULL;
    emily_status s = emily_qr(x, EMILY_QR_REDUCED, 1e-10, &q, out);
    emily_tensor_release(q);
    return s;
}
/* the reference method's r on a wide, non-finite matrix (x^T with a
 * NaN): the shortcut that skips Nx's iterations */
static emily_status qr_wide_nan(const emily_tensor *x, emily_tensor **out) {
    int perm[2] = {1, 0};
    emily_tensor *xt = NULL, *q = NULL, *nan = NULL, *w = NULL;
    float v = NAN;
    emily_status s = emily_transpose(x, perm, &xt);
    if (!s) s = emily_from_binary(EMILY_CPU, EMILY_F32, 0, NULL, &v, sizeof v, &nan);
    if (!s) s = emily_binary(EMILY_ADD, xt, nan, EMILY_DTYPE_AUTO, &w);
    if (!s) s = emily_qr_opts(w, EMILY_QR_REDUCED, 1e-10, EMILY_LINALG_REFERENCE, &q, out);
    RELEASE(xt, nan, w, q);
    return s;
}

/* g = x^T x + 64 I (3 x 3, symmetric positive definite), for the
 * square-matrix ops below; fails as the ops do. */
static emily_status spd(const emily_tensor *x, emily_tensor **g) {
    emily_tensor *xtx = NULL, *eye = NULL, *big = NULL, *scaled = NULL;
    float v = 64;
    int64_t sh[2] = {COLS, COLS};
    emily_status s = gram(x, &xtx);
    if (!s) s = emily_eye(EMILY_CPU, EMILY_F32, 2, sh, &eye);
    if (!s) s = emily_from_binary(EMILY_CPU, EMILY_F32, 0, NULL, &v, sizeof v, &big);
    if (!s) s = emily_binary(EMILY_MULTIPLY, eye, big, EMILY_DTYPE_AUTO, &scaled);
    if (!s) s = emily_binary(EMILY_ADD, xtx, scaled, EMILY_DTYPE_AUTO, g);
    RELEASE(xtx, eye, big, scaled);
    return s;
}
static emily_status eigh_vectors(const emily_tensor *x, emily_linalg_method m, emily_tensor **out) {
    emily_tensor *g = NULL, *w = NULL;
    emily_status s = spd(x, &g);
    if (!s) s = emily_eigh_opts(g, 1e-4, 1000, m, &w, out);
    emily_tensor_release(g);
    emily_tensor_release(w);
    return s;
}
static emily_status eigh_lapack(const emily_tensor *x, emily_tensor **out) {
    return eigh_vectors(x, EMILY_LINALG_LAPACK, out);
}
static emily_status eigh_reference(const emily_tensor *x, emily_tensor **out) {
    return eigh_vectors(x, EMILY_LINALG_REFERENCE, out);
}
static emily_status svd_s(const emily_tensor *x, emily_linalg_method m, bool full, emily_tensor **out) {
    emily_tensor *u = NULL, *vt = NULL;
    emily_status s = emily_svd_opts(x, full, 100, m, &u, out, &vt);
    emily_tensor_release(u);
    emily_tensor_release(vt);
    return s;
}
static emily_status svd_lapack(const emily_tensor *x, emily_tensor **out) {
    return svd_s(x, EMILY_LINALG_LAPACK, false, out);
}
static emily_status svd_reference_full(const emily_tensor *x, emily_tensor **out) {
    return svd_s(x, EMILY_LINALG_REFERENCE, true, out);
}
/* op on the symmetric positive definite matrix spd makes from x. */
static emily_status on_spd(const emily_tensor *x, emily_status (*op)(const emily_tensor *, emily_tensor **),
                           emily_tensor **out) {
    emily_tensor *g = NULL;
    emily_status s = spd(x, &g);
    if (!s) s = op(g, out);
    emily_tensor_release(g);
    return s;
}
static emily_status solve_self(const emily_tensor *g, emily_tensor **out) { return emily_solve(g, g, out); }
static emily_status solve_spd(const emily_tensor *x, emily_tensor **out) { return on_spd(x, solve_self, out); }
static emily_status lu_u(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *g = NULL, *p = NULL, *l = NULL;
    emily_status s = spd(x, &g);
    if (!s) s = emily_lu(g, &p, &l, out);
    RELEASE(g, p, l);
    return s;
}
static emily_status cholesky_spd(const emily_tensor *x, emily_tensor **out) { return on_spd(x, emily_cholesky, out); }
static emily_status determinant_spd(const emily_tensor *x, emily_tensor **out) {
    return on_spd(x, emily_determinant, out);
}
static emily_status fft0(const emily_tensor *x, emily_tensor **out) { return emily_fft(x, ROWS, 0, 1e-10, out); }
static emily_status top_k2(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *idx = NULL;
    emily_status s = emily_top_k(x, 2, EMILY_S64, out, &idx);
    emily_tensor_release(idx);
    return s;
}
static emily_status window_max(const emily_tensor *x, emily_tensor **out) {
    int64_t window[2] = {3, 2}, strides[2] = {2, 1}, lo[2] = {1, 0}, hi[2] = {1, 1};
    return emily_window_max(x, 2, window, strides, lo, hi, NULL, out);
}
/* indices {5, 1} into axis 0 */
static emily_status rows_index(emily_tensor **idx) {
    int64_t rows[5] = {0, 10, 63, 5, 7}, sh[2] = {5, 1};
    return emily_from_binary(EMILY_CPU, EMILY_S64, 2, sh, rows, sizeof rows, idx);
}
static emily_status gather_rows(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *idx = NULL;
    emily_status s = rows_index(&idx);
    if (!s) s = emily_gather(x, idx, 0, NULL, out);
    emily_tensor_release(idx);
    return s;
}
static emily_status indexed_add_rows(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *idx = NULL, *upd = NULL;
    int64_t starts[2] = {0, 0}, lens[2] = {5, COLS};
    emily_status s = rows_index(&idx);
    if (!s) s = emily_slice(x, starts, lens, NULL, &upd);
    if (!s) s = emily_indexed_add(x, idx, upd, 0, NULL, EMILY_DTYPE_AUTO, out);
    emily_tensor_release(idx);
    emily_tensor_release(upd);
    return s;
}
/* conv of x as {1, 1, 192} with its first three values as the kernel */
static emily_status conv1d(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *in = NULL, *k = NULL, *kv = NULL;
    int64_t ish[3] = {1, 1, ROWS * COLS}, ksh[3] = {1, 1, COLS}, starts[2] = {0, 0}, lens[2] = {1, COLS};
    emily_conv_opts o = {0};
    emily_status s = emily_reshape(x, 3, ish, &in);
    if (!s) s = emily_slice(x, starts, lens, NULL, &k);
    if (!s) s = emily_reshape(k, 3, ksh, &kv);
    if (!s) s = emily_conv(in, kv, &o, EMILY_DTYPE_AUTO, out);
    RELEASE(in, k, kv);
    return s;
}
static emily_status pad_interior(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *zero = NULL;
    float z = 0;
    int64_t lo[2] = {1, -1}, hi[2] = {2, 0}, interior[2] = {1, 0};
    emily_status s = emily_from_binary(EMILY_CPU, EMILY_F32, 0, NULL, &z, sizeof z, &zero);
    if (!s) s = emily_pad(x, zero, lo, hi, interior, out);
    emily_tensor_release(zero);
    return s;
}

/* layer_norm of a transposed x ({3, 64}: made contiguous) with a bf16
 * gamma (converted to the affine type) and an f32 beta. */
static emily_status layer_norm_views(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *xt = NULL, *g = NULL, *gb = NULL;
    emily_status s = emily_transpose(x, (int[]){1, 0}, &xt);
    if (!s) s = emily_iota(EMILY_CPU, EMILY_F32, 1, (int64_t[]){ROWS}, 0, &g);
    if (!s) s = emily_as_type(g, EMILY_BF16, &gb);
    if (!s) s = emily_layer_norm(xt, gb, g, 1.0e-5, out);
    RELEASE(xt, g, gb);
    return s;
}
/* rms_norm of bf16 rows of 600 broadcast from x: threaded, each job
 * with its scratch rows. */
static emily_status rms_norm_rows(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *xb = NULL, *wide = NULL, *g = NULL;
    int64_t shape[3] = {ROWS, COLS, 600};
    emily_status s = emily_as_type(x, EMILY_BF16, &xb);
    if (!s) s = emily_broadcast(xb, 3, shape, (int[]){0, 1}, &wide);
    if (!s) s = emily_iota(EMILY_CPU, EMILY_F32, 1, &shape[2], 0, &g);
    if (!s) s = emily_rms_norm(wide, g, 1.0e-6, out);
    RELEASE(xb, wide, g);
    return s;
}

/* sdpa of x as bf16 q = k = v {1, 2, 32, 3}, causal, with an additive
 * key mask and sinks: the widened copies, two jobs on the pool, each
 * with its scratch. */
static emily_status sdpa_causal(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *xb = NULL, *q = NULL, *m = NULL, *sk = NULL;
    int64_t shape[4] = {1, 2, 32, 3}, keys = 32, heads = 2;
    emily_status s = emily_as_type(x, EMILY_BF16, &xb);
    if (!s) s = emily_reshape(xb, 4, shape, &q);
    if (!s) s = emily_iota(EMILY_CPU, EMILY_F32, 1, &keys, 0, &m);
    if (!s) s = emily_iota(EMILY_CPU, EMILY_F32, 1, &heads, 0, &sk);
    emily_sdpa_options o = {.scale = 0.01, .causal = true, .mask = m, .sinks = sk};
    if (!s) s = emily_sdpa(q, q, q, &o, out);
    RELEASE(xb, q, m, sk);
    return s;
}

/* rope of x as bf16 {2, 16, 3, 2} (a transposed view: a contiguous copy),
 * shared positions {16} (the CPU's table) and llama3 scaling (the host's
 * table), then with positions per entry (per-job buffers). */
static emily_status rope_llama3(const emily_tensor *x, emily_tensor **out) {
    emily_tensor *xb = NULL, *t = NULL, *x4 = NULL, *pos = NULL, *pb = NULL, *first = NULL;
    _Static_assert(ROWS * COLS == 192, "x is seen as {2, 16, 3, 2}");
    int64_t shape[4] = {2, 3, 16, 2}, seq = 16, pshape[2] = {2, 16};
    emily_rope_options o = {.base = 500000,
                            .scaling = EMILY_ROPE_LLAMA3,
                            .factor = 8,
                            .low_frequency_factor = 1,
                            .high_frequency_factor = 4,
                            .original_max_positions = 4};
    emily_status s = emily_as_type(x, EMILY_BF16, &xb);
    if (!s) s = emily_reshape(xb, 4, shape, &t);
    if (!s) s = emily_transpose(t, (int[]){0, 2, 1, 3}, &x4);
    if (!s) s = emily_iota(EMILY_CPU, EMILY_S32, 1, &seq, 0, &pos);
    if (!s) s = emily_iota(EMILY_CPU, EMILY_S64, 2, pshape, 1, &pb);
    if (!s) s = emily_rope(x4, pos, &o, &first);
    if (!s) s = emily_rope(first, pb, &o, out);
    RELEASE(xb, t, x4, pos, pb, first);
    return s;
}

/* Bytes of t, or NULL (the caller frees). */
static unsigned char *bytes_of(const emily_tensor *t, size_t *n) {
    *n = emily_tensor_nbytes(t);
    unsigned char *b = malloc(*n ? *n : 1);
    if (b && emily_to_binary(t, b, *n)) {
        free(b);
        return NULL;
    }
    return b;
}

/* Runs `fn` with allocation n failing for n = 1, 2, ... until a run
 * meets no failure; returns the number of allocations of that run. */
static long sweep(const char *name, op_fn fn) {
    int64_t live_t = emily_live_tensors(), live_b = emily_live_buffers();
    long n = 1;
    for (; n <= MAX_ALLOCS; n++) {
        emily_tensor *x = input((int)n);
        if (!x) return -1;
        emily_tensor *got = NULL, *want = NULL;
        fail_alloc_after(n);
        emily_status s = fn(x, &got);
        fail_alloc_after(0);
        bool fired = fail_alloc_fired();
        if (s == EMILY_OK) {
            emily_status sw = fn(x, &want);
            size_t ng = 0, nw = 0;
            unsigned char *bg = bytes_of(got, &ng), *bw = sw ? NULL : bytes_of(want, &nw);
            bool same = bg && bw && ng == nw && emily_tensor_dtype(got) == emily_tensor_dtype(want) &&
                        memcmp(bg, bw, ng) == 0;
            if (!same) {
                fprintf(stderr, "  FAIL %s: allocation %ld failing, a wrong result was returned as success\n", name, n);
                harness_failures++;
            }
            free(bg);
            free(bw);
        } else if (s != EMILY_ERR_MEMORY || !fired) {
            fprintf(stderr, "  FAIL %s: allocation %ld failing gave %s (%s)\n", name, n, emily_status_name(s),
                    emily_last_error());
            harness_failures++;
        } else if (!strstr(emily_last_error(), "memory")) {
            fprintf(stderr, "  FAIL %s: allocation %ld: the message does not say memory: %s\n", name, n,
                    emily_last_error());
            harness_failures++;
        }
        RELEASE(got, want, x);
        if (emily_live_tensors() != live_t || emily_live_buffers() != live_b) {
            fprintf(stderr, "  FAIL %s: allocation %ld failing leaked %lld tensors, %lld buffers\n", name, n,
                    (long long)(emily_live_tensors() - live_t), (long long)(emily_live_buffers() - live_b));
            harness_failures++;
            return -1;
        }
        if (!fired) break;
    }
    CHECK(n <= MAX_ALLOCS);
    return n;
}

/* The fuzz finding: a failed allocation in reduce_max/min over a
 * non-last float axis was followed by the zero-sign fix-up, whose status
 * replaced the out-of-memory one, so an uninitialized output came back
 * as a success. */
TEST(reduce_max_min_over_axis_0_fail_cleanly) {
    CHECK(sweep("reduce_max axis 0", reduce_max0) > 1);
    CHECK(sweep("reduce_min axis 0", reduce_min0) > 1);
    CHECK(sweep("reduce_max axis 1", reduce_max1) > 1);
}

/* The answer of the sweep's reduce_max against one computed here. */
TEST(reduce_max_axis_0_values) {
    emily_tensor *x = input(5), *r = NULL;
    CHECK_OK(reduce_max0(x, &r));
    for (int j = 0; r && j < COLS; j++) {
        double best = -INFINITY;
        for (int i = 0; i < ROWS; i++) best = fmax(best, t_get(x, i * COLS + j));
        CHECK(t_get(r, j) == best);
    }
    emily_tensor_release(r);
    emily_tensor_release(x);
}

TEST(other_ops_fail_cleanly) {
    CHECK(sweep("sum", sum0) > 1);
    CHECK(sweep("argmax", argmax0) > 1);
    CHECK(sweep("sort", sort0) > 1);
    CHECK(sweep("cumulative_sum", cumsum0) > 1);
    CHECK(sweep("dot", gram) > 1);
    CHECK(sweep("window_sum", window_sum) > 1);
    CHECK(sweep("qr", qr_r) > 1);
    CHECK(sweep("qr wide NaN reference", qr_wide_nan) > 1);
    CHECK(sweep("eigh", eigh_lapack) > 1);
    CHECK(sweep("eigh reference", eigh_reference) > 1);
    CHECK(sweep("svd", svd_lapack) > 1);
    CHECK(sweep("svd reference full", svd_reference_full) > 1);
    CHECK(sweep("solve", solve_spd) > 1);
    CHECK(sweep("lu", lu_u) > 1);
    CHECK(sweep("cholesky", cholesky_spd) > 1);
    CHECK(sweep("determinant", determinant_spd) > 1);
    CHECK(sweep("fft", fft0) > 1);
    CHECK(sweep("top_k", top_k2) > 1);
    CHECK(sweep("window_max", window_max) > 1);
    CHECK(sweep("gather", gather_rows) > 1);
    CHECK(sweep("indexed_add", indexed_add_rows) > 1);
    CHECK(sweep("conv", conv1d) > 1);
    CHECK(sweep("pad", pad_interior) > 1);
    CHECK(sweep("layer_norm", layer_norm_views) > 1);
    CHECK(sweep("rms_norm", rms_norm_rows) > 1);
    CHECK(sweep("sdpa", sdpa_causal) > 1);
    CHECK(sweep("rope", rope_llama3) > 1);
}

RUN_TESTS("alloc_failure", CASE(reduce_max_min_over_axis_0_fail_cleanly), CASE(reduce_max_axis_0_values),
          CASE(other_ops_fail_cleanly))
