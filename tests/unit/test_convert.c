/* as_type and bitcast: Nx's conversion rules on edge values, strided
 * inputs, all 14x14 type pairs, errors, and the Nx callbacks. */
#include <stdlib.h>
#include "core/dtype_list.h"
#include "core/scalar_convert.h"
#include "core/tensor_impl.h"
#include "cpu/unary_simd.h"
#include "harness.h"

static emily_tensor *convert(const emily_tensor *t, emily_dtype dt) {
    emily_tensor *r = NULL;
    CHECK_OK(emily_as_type(t, dt, &r));
    return r;
}

/* x (an f64 scalar) converted to dt: the element's bits. */
static uint64_t f64_to_bits(double x, emily_dtype dt) {
    emily_tensor *r = t_as(SCALAR(EMILY_F64, double, x), dt);
    uint64_t b = 0;
    if (r) CHECK_OK(emily_to_binary(r, &b, emily_dtype_size(dt)));
    emily_tensor_release(r);
    return b;
}

TEST(float_to_int_truncates_and_wraps) {
    /* values from the corpus: truncation, then the low bits */
    CHECK(f64_to_bits(4.3e9, EMILY_S32) == 5032704);
    CHECK(f64_to_bits(-2.2e9, EMILY_S32) == 2094967296);
    CHECK(f64_to_bits(9.3e18, EMILY_S32) == (uint32_t)-81657856);
    CHECK(f64_to_bits(1e30, EMILY_S64) == 5076964154930102272ull);
    CHECK(f64_to_bits(1.9e19, EMILY_U64) == 553255926290448384ull);
    CHECK(f64_to_bits(-9.3e18, EMILY_U64) == 9146744073709551616ull);
    CHECK(f64_to_bits(1e300, EMILY_S64) == 0);
    CHECK(f64_to_bits(-1.5, EMILY_U8) == 255);
    CHECK(f64_to_bits(-128.9, EMILY_U16) == 65408);
    CHECK(f64_to_bits(255.9, EMILY_S8) == 0xff);
    CHECK(f64_to_bits(-0.5, EMILY_S16) == 0);
    CHECK(f64_to_bits(2.5, EMILY_U32) == 2);
    /* non-finite */
    CHECK(f64_to_bits(NAN, EMILY_S64) == 0);
    CHECK(f64_to_bits(INFINITY, EMILY_S8) == 0x7f);
    CHECK(f64_to_bits(-INFINITY, EMILY_S8) == 0x80);
    CHECK(f64_to_bits(INFINITY, EMILY_U64) == UINT64_MAX);
    CHECK(f64_to_bits(-INFINITY, EMILY_U16) == 0);
    CHECK(f64_to_bits(INFINITY, EMILY_S64) == 0x7fffffffffffffffull);
}

TEST(float_to_float_rounding) {
    CHECK(f64_to_bits(65519.99, EMILY_F16) == 0x7bff);
    CHECK(f64_to_bits(65520.0, EMILY_F16) == 0x7c00);
    CHECK(f64_to_bits(-0.0, EMILY_F16) == 0x8000);
    CHECK(f64_to_bits(1.0 + 1.0 / 2048, EMILY_F16) == 0x3c00); /* tie to even */
    CHECK(f64_to_bits(255.9, EMILY_BF16) == 0x437f);           /* truncated: 255 */
    CHECK(f64_to_bits(-128.9, EMILY_BF16) == 0xc300);          /* -128 */
    CHECK(f64_to_bits(1e39, EMILY_F32) == 0x7f800000u);
    CHECK(f64_to_bits(1e-46, EMILY_F32) == 0);
    CHECK(f64_to_bits(NAN, EMILY_BF16) == 0x7fc0);
    uint64_t c = f64_to_bits(-2.5, EMILY_C64);
    float parts[2];
    memcpy(parts, &c, 8);
    CHECK(parts[0] == -2.5f && parts[1] == 0.0f && !signbit(parts[1]));
}

TEST(int_to_float_goes_through_double) {
    int64_t s[3] = {INT64_MAX, 271, -(((int64_t)1 << 53) + 1)};
    int64_t shape[1] = {3};
    emily_tensor *t = t_from(EMILY_S64, 1, shape, s);
    emily_tensor *f = convert(t, EMILY_F32), *b = convert(t, EMILY_BF16), *h = convert(t, EMILY_F16);
    CHECK(t_get(f, 0) == 9223372036854775808.0);
    CHECK(t_get(b, 1) == 270.0); /* 271 truncated to bf16 */
    CHECK(isinf(t_get(h, 0)) && t_get(h, 1) == 271.0);
    CHECK(t_get(f, 2) == -9007199254740992.0);
    RELEASE(f, b, h, t);
    uint64_t u[2] = {UINT64_MAX, 3};
    int64_t two[1] = {2};
    t = t_from(EMILY_U64, 1, two, u);
    emily_tensor *s8 = convert(t, EMILY_S8), *c = convert(t, EMILY_C128);
    CHECK(t_get(s8, 0) == -1 && t_get(s8, 1) == 3);
    CHECK(t_get(c, 0) == 18446744073709551616.0);
    RELEASE(s8, c, t);
}

TEST(complex_to_real_takes_the_real_part) {
    float z[4] = {-3.75f, 9.0f, NAN, 1.0f};
    int64_t two[1] = {2};
    emily_tensor *t = t_from(EMILY_C64, 1, two, z);
    emily_tensor *s = convert(t, EMILY_S32), *f = convert(t, EMILY_F64), *c = convert(t, EMILY_C128);
    CHECK(t_get(s, 0) == -3 && t_get(s, 1) == 0);
    CHECK(t_get(f, 0) == -3.75 && isnan(t_get(f, 1)));
    double cz[4];
    CHECK_OK(emily_to_binary(c, cz, sizeof cz));
    CHECK(cz[0] == -3.75 && cz[1] == 9.0 && isnan(cz[2]) && cz[3] == 1.0);
    RELEASE(s, f, c, t);
}

/* Every pair of types on the same small values: converting there and
 * back keeps values that both types hold exactly. */
TEST(all_pairs_round_trip_small_values) {
    double vals[6] = {0, 1, 2, 3, 100, 127};
    int64_t shape[1] = {6};
    emily_tensor *base = t_from(EMILY_F64, 1, shape, vals);
    for (int a = 0; a < EMILY_DTYPE_COUNT; a++) {
        emily_tensor *ta = convert(base, (emily_dtype)a);
        for (int b = 0; ta && b < EMILY_DTYPE_COUNT; b++) {
            emily_tensor *tb = convert(ta, (emily_dtype)b);
            emily_tensor *back = tb ? convert(tb, EMILY_F64) : NULL;
            for (int i = 0; back && i < 6; i++)
                if (t_get(back, i) != vals[i]) {
                    fprintf(stderr, "  %s -> %s: element %d is %g\n", emily_dtype_name((emily_dtype)a),
                            emily_dtype_name((emily_dtype)b), i, t_get(back, i));
                    CHECK(false);
                    break;
                }
            emily_tensor_release(back);
            emily_tensor_release(tb);
        }
        emily_tensor_release(ta);
    }
    emily_tensor_release(base);
}

TEST(strided_and_broadcast_inputs) {
    /* a transposed 2x3 view of s16 data, and a zero-stride broadcast */
    int16_t d[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    emily_tensor *t = t_from(EMILY_S16, 2, shape, d);
    int64_t tshape[2] = {3, 2}, tstrides[2] = {1, 3};
    emily_tensor *tv = NULL, *bv = NULL, *rv = NULL;
    CHECK_OK(emi_tensor_view(t, 2, tshape, tstrides, 0, &tv));
    emily_tensor *r = convert(tv, EMILY_F32);
    float want[6] = {1, 4, 2, 5, 3, 6};
    float got[6];
    CHECK_OK(emily_to_binary(r, got, sizeof got));
    CHECK(memcmp(got, want, sizeof want) == 0);
    emily_tensor_release(r);
    int64_t bshape[2] = {4, 3}, bstrides[2] = {0, 1};
    CHECK_OK(emi_tensor_view(t, 2, bshape, bstrides, 3, &bv)); /* row {4,5,6} x4 */
    r = convert(bv, EMILY_U8);
    uint8_t gb[12];
    CHECK_OK(emily_to_binary(r, gb, sizeof gb));
    CHECK(gb[0] == 4 && gb[2] == 6 && gb[9] == 4 && gb[11] == 6);
    emily_tensor_release(r);
    int64_t rshape[1] = {6}, rstrides[1] = {-1};
    CHECK_OK(emi_tensor_view(t, 1, rshape, rstrides, 5, &rv)); /* reversed */
    r = convert(rv, EMILY_C64);
    CHECK(t_get(r, 0) == 6 && t_get(r, 5) == 1);
    RELEASE(r, tv, bv, rv, t);
}

TEST(sizes_scalars_and_identity) {
    float x = 2.75f;
    emily_tensor *t = t_from(EMILY_F32, 0, NULL, &x);
    emily_tensor *same = convert(t, EMILY_F32);
    CHECK(same == t); /* Nx returns the tensor itself */
    emily_tensor_release(same);
    emily_tensor *r = convert(t, EMILY_S8);
    CHECK(emily_tensor_rank(r) == 0 && t_get(r, 0) == 2);
    emily_tensor_release(r);
    emily_tensor_release(t);
    int64_t empty[2] = {0, 3};
    emily_tensor *e = NULL;
    CHECK_OK(emily_empty(EMILY_CPU, EMILY_BF16, 2, empty, &e));
    r = convert(e, EMILY_C128);
    CHECK(emily_tensor_size(r) == 0 && t_shape_is(r, 2, empty));
    emily_tensor_release(r);
    emily_tensor_release(e);
    /* large enough for the threaded path, with values that wrap */
    int64_t n[1] = {200003};
    emily_tensor *big = NULL;
    CHECK_OK(emily_iota(EMILY_CPU, EMILY_S32, 1, n, 0, &big));
    r = convert(big, EMILY_U8);
    uint8_t *v = malloc(200003);
    CHECK_OK(emily_to_binary(r, v, 200003));
    bool ok = true;
    for (int64_t i = 0; i < n[0]; i++) ok = ok && v[i] == (uint8_t)i;
    CHECK(ok);
    free(v);
    emily_tensor_release(r);
    emily_tensor_release(big);
}

/* f32 -> f16/bf16: the SIMD paths of each instruction set, called
 * directly, against the scalar rules, bit for bit (NaN written as Nx's
 * canonical NaN). */
static bool cpu_has(const char *isa) {
    return strcmp(isa, "avx2") == 0 ? emi_cpu_has_avx2_set() : emi_cpu_has_avx512_set();
}

TEST(half_conversion_simd_paths) {
    int64_t n = 0, cap = 1100000;
    float *x = malloc((size_t)cap * sizeof *x);
    uint16_t *h = malloc((size_t)cap * 2);
    /* a sample of all bit patterns (every 4001st), plus edge values */
    for (uint64_t b = 0; b <= 0xffffffffull && n < cap - 32; b += 4001) {
        uint32_t u = (uint32_t)b;
        memcpy(&x[n++], &u, 4);
    }
    float edge[] = {65504.0f,
                    65519.99f,
                    65520.0f,
                    5.960464477539063e-08f,
                    2.98e-08f,
                    2.9802322e-08f,
                    1.0f + 1.0f / 2048,
                    1.0f + 3.0f / 2048,
                    -0.0f,
                    INFINITY,
                    -INFINITY,
                    NAN,
                    -NAN,
                    1.00781238f,
                    3.4e38f,
                    1e-45f};
    for (size_t k = 0; k < sizeof edge / sizeof *edge; k++) x[n++] = edge[k];
    struct {
        const char *isa;
        emily_vec_fn (*get)(emily_dtype, emily_dtype);
    } isas[2] = {{"avx2", emi_convert_avx2}, {"avx512", emi_convert_avx512}};
    for (int k = 0; k < 2; k++) {
        if (!cpu_has(isas[k].isa)) continue;
        emily_vec_fn f16 = isas[k].get(EMILY_F32, EMILY_F16), bf16 = isas[k].get(EMILY_F32, EMILY_BF16);
        CHECK(f16 && bf16);
        if (!f16 || !bf16) continue;
        for (int64_t len = 1; len <= 33; len++) f16(h, x, len); /* tails */
        f16(h, x, n);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            uint16_t want = isnan(x[i]) ? 0x7e00 : emily_f64_to_f16((double)x[i]);
            if (h[i] != want && bad++ < 3)
                fprintf(stderr, "  %s f16(%.9g) = %04x, want %04x\n", isas[k].isa, x[i], h[i], want);
        }
        CHECK(bad == 0);
        for (int64_t len = 1; len <= 33; len++) bf16(h, x, len);
        bf16(h, x, n);
        bad = 0;
        for (int64_t i = 0; i < n; i++)
            if (h[i] != emily_f32_to_bf16(x[i]) && bad++ < 3)
                fprintf(stderr, "  %s bf16(%.9g) = %04x\n", isas[k].isa, x[i], h[i]);
        CHECK(bad == 0);
        /* f16 -> f32: every f16 pattern, exact */
        emily_vec_fn up = isas[k].get(EMILY_F16, EMILY_F32);
        CHECK(up != NULL);
        if (!up) continue;
        uint16_t all[65536];
        float back[65536];
        for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
        for (int64_t len = 1; len <= 33; len++) up(back, all + 31000, len);
        up(back, all, 65536);
        bad = 0;
        for (int i = 0; i < 65536; i++) {
            float want = emily_f16_to_f32((uint16_t)i);
            if (memcmp(&back[i], &want, 4) != 0 && !(isnan(want) && isnan(back[i]))) bad++;
        }
        CHECK(bad == 0);
    }
    /* and through as_type on a long contiguous tensor (threaded) */
    int64_t shape[1] = {n};
    emily_tensor *t = t_from(EMILY_F32, 1, shape, x);
    emily_tensor *r = convert(t, EMILY_F16);
    CHECK_OK(emily_to_binary(r, h, (size_t)n * 2));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) bad += h[i] != (isnan(x[i]) ? 0x7e00 : emily_f64_to_f16((double)x[i]));
    CHECK(bad == 0);
    emily_tensor_release(r);
    emily_tensor_release(t);
    free(x);
    free(h);
}

TEST(as_type_bad_input) {
    float x = 1;
    emily_tensor *t = t_from(EMILY_F32, 0, NULL, &x), *r = NULL;
    CHECK_ERR(emily_as_type(NULL, EMILY_F32, &r), EMILY_ERR_ARGUMENT, "as_type: tensor is NULL");
    CHECK_ERR(emily_as_type(t, EMILY_F32, NULL), EMILY_ERR_ARGUMENT, "as_type: output pointer is NULL");
    CHECK_ERR(emily_as_type(t, (emily_dtype)EMILY_DTYPE_ALL_COUNT, &r), EMILY_ERR_TYPE,
              "as_type: invalid target type 20");
    CHECK_ERR(emily_as_type(t, EMILY_DTYPE_AUTO, &r), EMILY_ERR_TYPE, "invalid target type");
    CHECK(r == NULL);
    emily_tensor_release(t);
}

TEST(bitcast_reinterprets) {
    float f[2] = {1.0f, -0.0f};
    int64_t two[1] = {2};
    emily_tensor *t = t_from(EMILY_F32, 1, two, f), *r = NULL;
    CHECK_OK(emily_bitcast(t, EMILY_U32, &r));
    uint32_t u[2];
    CHECK_OK(emily_to_binary(r, u, sizeof u));
    CHECK(u[0] == 0x3f800000u && u[1] == 0x80000000u);
    emily_tensor *back = NULL;
    CHECK_OK(emily_bitcast(r, EMILY_S32, &back));
    CHECK(t_get(back, 1) == (double)INT32_MIN);
    emily_tensor_release(back);
    emily_tensor_release(r);
    /* a strided view keeps its element order */
    int8_t s[4] = {0, -1, -2, -3};
    int64_t four[1] = {4}, two_shape[1] = {2}, st[1] = {-2};
    emily_tensor *s8 = t_from(EMILY_S8, 1, four, s), *view = NULL;
    CHECK_OK(emi_tensor_view(s8, 1, two_shape, st, 3, &view)); /* {-3, -1} */
    CHECK_OK(emily_bitcast(view, EMILY_U8, &r));
    CHECK(t_get(r, 0) == 253 && t_get(r, 1) == 255);
    RELEASE(r, view, s8);
    r = NULL;
    CHECK_ERR(emily_bitcast(t, EMILY_F16, &r), EMILY_ERR_TYPE,
              "bitcast: input type width must match the new type width, got f32 and f16");
    CHECK_ERR(emily_bitcast(t, EMILY_C64, &r), EMILY_ERR_TYPE, "bitcast: complex types are not supported");
    CHECK_ERR(emily_bitcast(NULL, EMILY_U32, &r), EMILY_ERR_ARGUMENT, "bitcast: tensor is NULL");
    CHECK_ERR(emily_bitcast(t, EMILY_U32, NULL), EMILY_ERR_ARGUMENT, "bitcast");
    CHECK_ERR(emily_bitcast(t, (emily_dtype)-5, &r), EMILY_ERR_TYPE, "invalid target type");
    CHECK(r == NULL);
    emily_tensor_release(t);
}

/* core/dtype_list.h writes its rows twice (the plain lists and the _WITH
 * ones for nested expansions): both list every type once, in enum order,
 * with emily/dtype.h's names and sizes, and each class sub-list holds
 * its class. */
typedef struct {
    emily_dtype dt;
    const char *sfx;
    size_t size;
} list_row;
#define LIST_ROW(E, s, T) {EMILY_##E, #s, sizeof(T)},
#define LIST_ROW_WITH(E, s, T, unused) {EMILY_##E, #s, sizeof(T)},
#define CHECK_CLASS(E, s, T, pred) CHECK(pred(EMILY_##E));
#define CHECK_PARTS(E, s, T, PE, ps, PT, unused)                                        \
    CHECK(emily_type_to_real(EMILY_##E) == EMILY_##PE && sizeof(T) == 2 * sizeof(PT) && \
          strcmp(#ps, emily_dtype_name(EMILY_##PE)) == 0);
static bool is_unsigned(emily_dtype t) { return emily_dtype_kind_of(t) == EMILY_KIND_UNSIGNED; }
static bool is_signed(emily_dtype t) { return emily_dtype_kind_of(t) == EMILY_KIND_SIGNED; }
static bool is_half(emily_dtype t) { return emily_dtype_is_float(t) && emily_dtype_bits(t) == 16; }
static bool is_native_float(emily_dtype t) { return emily_dtype_is_float(t) && emily_dtype_bits(t) > 16; }

TEST(dtype_lists_agree) {
    const list_row plain[] = {EMI_DTYPES(LIST_ROW)}, with[] = {EMI_DTYPES_WITH(LIST_ROW_WITH, ~)};
    CHECK(sizeof plain / sizeof *plain == EMILY_DTYPE_COUNT && sizeof with / sizeof *with == EMILY_DTYPE_COUNT);
    for (int i = 0; i < EMILY_DTYPE_COUNT; i++) {
        const list_row *rows[2] = {&plain[i], &with[i]};
        for (int k = 0; k < 2; k++) {
            CHECK(rows[k]->dt == (emily_dtype)i);
            CHECK(strcmp(rows[k]->sfx, emily_dtype_name((emily_dtype)i)) == 0);
            CHECK(rows[k]->size == emily_dtype_size((emily_dtype)i));
        }
    }
    EMI_DTYPES_UNSIGNED_WITH(CHECK_CLASS, is_unsigned)
    EMI_DTYPES_SIGNED_WITH(CHECK_CLASS, is_signed)
    EMI_DTYPES_HALF_WITH(CHECK_CLASS, is_half)
    EMI_DTYPES_NATIVE_FLOAT_WITH(CHECK_CLASS, is_native_float)
    EMI_DTYPES_COMPLEX_WITH(CHECK_CLASS, emily_dtype_is_complex)
    EMI_COMPLEX_PARTS_WITH(CHECK_PARTS, ~)
}

TEST(callbacks) {
    int64_t two[1] = {2};
    emily_tensor *t = VEC(EMILY_S32, int32_t, -1, 300);
    emily_value out = v_tmpl(EMILY_U8, 1, two), arg = v_tensor(t);
    emily_dispatch_result r = {0};
    for (int mode = 0; mode < 2; mode++) {
        CHECK_OK(emily_dispatch("as_type", EMILY_CPU, &out, &arg, 1, (emily_dispatch_mode)mode, &r));
        CHECK(r.n == 1 && t_get(r.tensors[0], 0) == 255 && t_get(r.tensors[0], 1) == 44);
        emily_dispatch_result_release(&r);
    }
    out.dtype = EMILY_F32;
    CHECK_OK(emily_dispatch("bitcast", EMILY_CPU, &out, &arg, 1, EMILY_DISPATCH_INFER, &r));
    CHECK(r.n == 1 && emily_tensor_dtype(r.tensors[0]) == EMILY_F32 && isnan(t_get(r.tensors[0], 0)));
    emily_dispatch_result_release(&r);
    emily_value num = {.kind = EMILY_V_INT, .i = 3};
    CHECK_ERR(emily_dispatch("as_type", EMILY_CPU, &out, &num, 1, EMILY_DISPATCH_RUN, &r), EMILY_ERR_ARGUMENT,
              "as_type: argument 1 must be a tensor, got integer");
    out.dtype = EMILY_F16;
    CHECK_ERR(emily_dispatch("bitcast", EMILY_CPU, &out, &arg, 1, EMILY_DISPATCH_RUN, &r), EMILY_ERR_TYPE,
              "got s32 and f16");
    emily_tensor_release(t);
}

RUN_TESTS("convert", CASE(dtype_lists_agree), CASE(float_to_int_truncates_and_wraps), CASE(float_to_float_rounding),
          CASE(int_to_float_goes_through_double), CASE(complex_to_real_takes_the_real_part),
          CASE(all_pairs_round_trip_small_values), CASE(strided_and_broadcast_inputs), CASE(sizes_scalars_and_identity),
          CASE(half_conversion_simd_paths), CASE(as_type_bad_input), CASE(bitcast_reinterprets), CASE(callbacks))
