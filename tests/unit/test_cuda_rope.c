/* The CUDA engine's rope (src/cuda/fast_rope.cu) against the CPU engine
 * (src/cpu/fast_rope.c): every float type, both pairings, partial dims,
 * positions shared by the batch and per entry (decoding offsets, large
 * and negative positions), every scaling, explicit tables, views, empty
 * tensors, edge values (random bit patterns: NaNs and infinities), and
 * the errors the op layer gives.
 *
 * Tolerance: none. The table is computed once on the host for both
 * devices; every later step is core/rope_rules.h's with no contraction
 * into FMAs, and cos/sin are computed in double (glibc on the CPU, the
 * engine's double-double sincos on the GPU) and rounded to f32, which
 * agree but where a double result lies within an ULP or two of an f32
 * rounding boundary (about one angle in 2^28: none in these cases). GPU
 * cases only: without a CUDA device the binary says SKIPPED. */
#include "cuda_compare.h"

typedef struct rope_arg {
    emily_rope_options o; /* inv_freq: in[2] when table is set */
    bool table;
} rope_arg;

/* in: x, positions, [inv_freq] */
static emily_status run_rope(emily_tensor *const *in, emily_tensor **out, const void *p) {
    const rope_arg *a = p;
    emily_rope_options o = a->o;
    o.inv_freq = a->table ? in[2] : NULL;
    return emily_rope(in[0], in[1], &o, out);
}

static const emily_dtype floats[4] = {EMILY_F16, EMILY_BF16, EMILY_F32, EMILY_F64};

/* positions {S} (batched false) or {B, S}: first + stride * k. */
static emily_tensor *positions(bool batched, int64_t b, int64_t s, int64_t first, int64_t stride) {
    int64_t n = batched ? b * s : s, shape[2] = {b, s};
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return NULL;
    for (int64_t k = 0; k < n; k++) v[k] = first + stride * k;
    emily_tensor *t = t_from(EMILY_S64, batched ? 2 : 1, batched ? shape : shape + 1, v);
    free(v);
    return t;
}

static void rope_case(const char *label, emily_dtype t, const int64_t *shape, int kind, bool batched, int64_t first,
                      int64_t stride, const rope_arg *a) {
    emily_tensor *in[3] = {tc_tensor(t, 4, shape, kind), positions(batched, shape[0], shape[1], first, stride), NULL};
    int64_t dims = a->o.dims ? a->o.dims : shape[3], h = dims / 2;
    if (a->table) in[2] = tc_tensor(EMILY_F32, 1, &h, TC_NEAR_ONE);
    char what[200];
    snprintf(what, sizeof what, "%s %s%s dims %lld scaling %d%s", label, emily_dtype_name(t),
             a->o.traditional ? " traditional" : "", (long long)dims, (int)a->o.scaling,
             a->table ? " explicit table" : "");
    tc_compare(what, run_rope, a, a->table ? 3 : 2, in);
    for (int i = 0; i < 3; i++) emily_tensor_release(in[i]);
}

TEST(gpu_rope_types_pairings_dims) {
    static const int64_t s[4] = {2, 7, 3, 64};
    for (int i = 0; i < 4; i++)
        for (int trad = 0; trad < 2; trad++)
            for (int64_t dims = 0; dims <= 64; dims += 32) {
                rope_arg a = {.o = {.base = 10000, .traditional = trad, .dims = dims}};
                rope_case("[2,7,3,64]", floats[i], s, TC_GENERAL, false, 0, 1, &a);
                rope_case("[2,7,3,64] per entry", floats[i], s, TC_GENERAL, true, 3, 5, &a);
            }
}

/* Decoding (one token at an offset), a long prefill at large positions,
 * negative positions, head sizes not a multiple of the block, random bits. */
TEST(gpu_rope_positions_and_shapes) {
    static const int64_t dec[4] = {4, 1, 8, 128}, prefill[4] = {1, 2048, 3, 64}, odd[4] = {3, 5, 2, 6},
                         wide[4] = {1, 3, 1, 600}, bits[4] = {2, 9, 4, 32};
    rope_arg a = {.o = {.base = 500000}}, part = {.o = {.base = 10000, .dims = 4}};
    for (int i = 0; i < 4; i++) {
        emily_dtype t = floats[i];
        rope_case("decode", t, dec, TC_GENERAL, true, 4097, 13, &a);
        rope_case("prefill", t, prefill, TC_GENERAL, false, 100000, 1, &a);
        rope_case("negative", t, odd, TC_GENERAL, true, -50, 7, &a);
        rope_case("odd head size, 4 of 6 rotated", t, odd, TC_GENERAL, false, 0, 1, &part);
        rope_case("600 wide", t, wide, TC_GENERAL, false, 9, 1, &a);
        rope_case("bits", t, bits, TC_BITS, false, 0, 1, &a);
    }
}

TEST(gpu_rope_scalings_and_tables) {
    static const int64_t s[4] = {2, 40, 2, 128};
    rope_arg cases[] = {
        {.o = {.base = 10000, .scaling = EMILY_ROPE_LINEAR, .factor = 3}},
        {.o = {.base = 10000, .scaling = EMILY_ROPE_DYNAMIC, .factor = 2, .original_max_positions = 16}},
        {.o = {.base = 500000,
               .scaling = EMILY_ROPE_LLAMA3,
               .factor = 8,
               .low_frequency_factor = 1,
               .high_frequency_factor = 4,
               .original_max_positions = 8192}},
        {.o = {.traditional = true}, .table = true},
        {.o = {.dims = 64}, .table = true},
    };
    for (int i = 0; i < 4; i++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            rope_case("[2,40,2,128]", floats[i], s, TC_GENERAL, k % 2 == 0, 9000, 3, &cases[k]);
}

/* A transposed x ({B, H, S, D} seen as {B, S, H, D}) and empty tensors. */
static emily_status run_rope_transposed(emily_tensor *const *in, emily_tensor **out, const void *p) {
    (void)p;
    emily_tensor *v = NULL;
    emily_status s = emily_transpose(in[0], (int[]){0, 2, 1, 3}, &v);
    if (!s) s = emily_rope(v, in[1], NULL, out);
    emily_tensor_release(v);
    return s;
}

TEST(gpu_rope_views_and_empty) {
    static const int64_t bhsd[4] = {2, 4, 6, 16}, empty[4] = {2, 0, 3, 8};
    rope_arg a = {.o = {.base = 10000}};
    for (int i = 0; i < 4; i++) {
        emily_tensor *in[2] = {tc_tensor(floats[i], 4, bhsd, TC_GENERAL), positions(false, 2, 6, 1, 1)};
        tc_compare("transposed", run_rope_transposed, NULL, 2, in);
        emily_tensor_release(in[0]);
        emily_tensor_release(in[1]);
        rope_case("empty", floats[i], empty, TC_GENERAL, false, 0, 1, &a);
    }
}

/* The op layer's errors, the same on both devices. */
TEST(gpu_rope_errors) {
    static const int64_t s[4] = {1, 3, 2, 8}, three = 3;
    emily_tensor *in[3] = {tc_tensor(EMILY_F32, 4, s, TC_GENERAL), positions(false, 1, 4, 0, 1),
                           tc_tensor(EMILY_F32, 1, &three, TC_GENERAL)};
    rope_arg plain = {.o = {.base = 10000}}, odd = {.o = {.base = 10000, .dims = 3}},
             table = {.o = {.base = 0}, .table = true};
    tc_expect("positions of the wrong length", run_rope, &plain, 2, in, EMILY_ERR_SHAPE);
    emily_tensor_release(in[1]);
    in[1] = positions(false, 1, 3, 0, 1);
    tc_expect("odd dims", run_rope, &odd, 2, in, EMILY_ERR_ARGUMENT);
    tc_expect("a table of the wrong size", run_rope, &table, 3, in, EMILY_ERR_SHAPE);
    for (int i = 0; i < 3; i++) emily_tensor_release(in[i]);
}

TC_MAIN("cuda_rope", CASE(gpu_rope_types_pairings_dims), CASE(gpu_rope_positions_and_shapes),
        CASE(gpu_rope_scalings_and_tables), CASE(gpu_rope_views_and_empty), CASE(gpu_rope_errors))
