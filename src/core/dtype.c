/* Element types and Nx.Type's promotion rules. */
#include <math.h>
#include <string.h>
#include "emily/dtype.h"
#include "core/scalar_convert.h"

static const struct {
    const char *name;
    emily_dtype_kind kind;
    int bits;
    size_t size;
} info[EMILY_DTYPE_ALL_COUNT] = {
    [EMILY_U8] = {"u8", EMILY_KIND_UNSIGNED, 8, 1},
    [EMILY_U16] = {"u16", EMILY_KIND_UNSIGNED, 16, 2},
    [EMILY_U32] = {"u32", EMILY_KIND_UNSIGNED, 32, 4},
    [EMILY_U64] = {"u64", EMILY_KIND_UNSIGNED, 64, 8},
    [EMILY_S8] = {"s8", EMILY_KIND_SIGNED, 8, 1},
    [EMILY_S16] = {"s16", EMILY_KIND_SIGNED, 16, 2},
    [EMILY_S32] = {"s32", EMILY_KIND_SIGNED, 32, 4},
    [EMILY_S64] = {"s64", EMILY_KIND_SIGNED, 64, 8},
    [EMILY_F16] = {"f16", EMILY_KIND_FLOAT, 16, 2},
    [EMILY_BF16] = {"bf16", EMILY_KIND_BFLOAT, 16, 2},
    [EMILY_F32] = {"f32", EMILY_KIND_FLOAT, 32, 4},
    [EMILY_F64] = {"f64", EMILY_KIND_FLOAT, 64, 8},
    [EMILY_C64] = {"c64", EMILY_KIND_COMPLEX, 64, 8},
    [EMILY_C128] = {"c128", EMILY_KIND_COMPLEX, 128, 16},
    /* narrow types: one element per byte in memory */
    [EMILY_F8_E5M2] = {"f8", EMILY_KIND_FLOAT, 8, 1},
    [EMILY_F8_E4M3FN] = {"f8_e4m3fn", EMILY_KIND_FLOAT8_E4M3FN, 8, 1},
    [EMILY_S2] = {"s2", EMILY_KIND_SIGNED, 2, 1},
    [EMILY_S4] = {"s4", EMILY_KIND_SIGNED, 4, 1},
    [EMILY_U2] = {"u2", EMILY_KIND_UNSIGNED, 2, 1},
    [EMILY_U4] = {"u4", EMILY_KIND_UNSIGNED, 4, 1},
};

bool emily_dtype_valid(emily_dtype t) { return t >= 0 && t < EMILY_DTYPE_COUNT; }
bool emily_dtype_known(emily_dtype t) { return t >= 0 && t < EMILY_DTYPE_ALL_COUNT; }
bool emily_dtype_is_narrow(emily_dtype t) { return t >= EMILY_DTYPE_COUNT && t < EMILY_DTYPE_ALL_COUNT; }

emily_dtype emily_dtype_compute_type(emily_dtype t) {
    switch (t) {
    case EMILY_S2:
    case EMILY_S4: return EMILY_S8;
    case EMILY_U2:
    case EMILY_U4: return EMILY_U8;
    /* f32 holds every f8 value and every sum, difference and product of
     * two exactly, so + - * round once, as Nx's f64 arithmetic does */
    case EMILY_F8_E5M2:
    case EMILY_F8_E4M3FN: return EMILY_F32;
    default: return t;
    }
}

size_t emily_dtype_size(emily_dtype t) { return emily_dtype_known(t) ? info[t].size : 0; }
int emily_dtype_bits(emily_dtype t) { return emily_dtype_known(t) ? info[t].bits : 0; }

size_t emily_dtype_binary_size(emily_dtype t, int64_t n) {
    if (!emily_dtype_known(t) || n < 0) return 0;
    return (size_t)(((uint64_t)n * (uint64_t)info[t].bits + 7) / 8);
}

emily_dtype_kind emily_dtype_kind_of(emily_dtype t) {
    return emily_dtype_known(t) ? info[t].kind : EMILY_KIND_UNSIGNED;
}
const char *emily_dtype_name(emily_dtype t) { return emily_dtype_known(t) ? info[t].name : "?"; }

emily_dtype emily_dtype_from_name(const char *name) {
    if (!name) return EMILY_DTYPE_AUTO;
    for (int t = 0; t < EMILY_DTYPE_ALL_COUNT; t++)
        if (strcmp(info[t].name, name) == 0) return (emily_dtype)t;
    return EMILY_DTYPE_AUTO;
}

emily_dtype emily_dtype_make(emily_dtype_kind kind, int bits) {
    for (int t = 0; t < EMILY_DTYPE_ALL_COUNT; t++)
        if (info[t].kind == kind && info[t].bits == bits) return (emily_dtype)t;
    return EMILY_DTYPE_AUTO;
}

bool emily_dtype_is_integer(emily_dtype t) { return emily_dtype_known(t) && info[t].kind <= EMILY_KIND_SIGNED; }
bool emily_dtype_is_float(emily_dtype t) {
    return emily_dtype_known(t) && (info[t].kind == EMILY_KIND_FLOAT || info[t].kind == EMILY_KIND_BFLOAT ||
                                    info[t].kind == EMILY_KIND_FLOAT8_E4M3FN);
}
bool emily_dtype_is_complex(emily_dtype t) { return emily_dtype_known(t) && info[t].kind == EMILY_KIND_COMPLEX; }

static int imax(int a, int b) { return a > b ? a : b; }
static int imin(int a, int b) { return a < b ? a : b; }

/* Nx.Type's precedence: c > f = f8_e4m3fn > bf > s > u. */
static int kind_rank(emily_dtype_kind k) { return k == EMILY_KIND_FLOAT8_E4M3FN ? EMILY_KIND_FLOAT : (int)k; }

/* Nx.Type.merge: same class keeps the larger size; otherwise the higher
 * class wins, except u+s (signed, wide enough) and f+c. Two classes of
 * the same rank (f and f8_e4m3fn) give the left operand's type, as Nx's
 * sort/2 does (so f8_e4m3fn + f32 is f8_e4m3fn, f32 + f8_e4m3fn f32). */
emily_dtype emily_type_merge(emily_dtype a, emily_dtype b) {
    if (!emily_dtype_known(a) || !emily_dtype_known(b)) return EMILY_DTYPE_AUTO;
    emily_dtype_kind ka = info[a].kind, kb = info[b].kind;
    if (ka == kb) return info[a].bits >= info[b].bits ? a : b;
    bool a_lower = kind_rank(ka) < kind_rank(kb);
    emily_dtype lo = a_lower ? a : b, hi = a_lower ? b : a;
    emily_dtype_kind klo = info[lo].kind, khi = info[hi].kind;
    if (klo == EMILY_KIND_UNSIGNED && khi == EMILY_KIND_SIGNED)
        return emily_dtype_make(EMILY_KIND_SIGNED, imax(imin(info[lo].bits * 2, 64), info[hi].bits));
    if (klo == EMILY_KIND_FLOAT && khi == EMILY_KIND_COMPLEX)
        return emily_dtype_make(EMILY_KIND_COMPLEX, imax(info[lo].bits * 2, info[hi].bits));
    return hi;
}

/* Nx.Type's unsigned_size/signed_size: 0, 1 (and -1, -2) need "1 bit",
 * which keeps any type (so an s4 plus 1 stays s4), larger values 8+. */
static int unsigned_bits(uint64_t x) {
    if (x <= 1) return 1;
    if (x <= 255) return 8;
    if (x <= 65535) return 16;
    if (x <= 4294967295u) return 32;
    return 64;
}

static int signed_bits(int64_t x) {
    if (x < 0) x = -(x + 1);
    if (x <= 1) return 1;
    if (x <= 127) return 8;
    if (x <= 32767) return 16;
    if (x <= 2147483647) return 32;
    return 64;
}

/* Nx.Type.merge_number for a float or complex type: the type itself,
 * except f8_e4m3fn, which no clause of Nx's names, so it falls to the
 * last one: {:f, 32}. */
static emily_dtype number_merge_other(emily_dtype t) {
    return info[t].kind == EMILY_KIND_FLOAT8_E4M3FN ? EMILY_F32 : t;
}

emily_dtype emily_type_merge_int(emily_dtype t, int64_t v) {
    if (!emily_dtype_known(t)) return EMILY_DTYPE_AUTO;
    switch (info[t].kind) {
    case EMILY_KIND_UNSIGNED:
        if (v >= 0) return emily_dtype_make(EMILY_KIND_UNSIGNED, imax(unsigned_bits((uint64_t)v), info[t].bits));
        return emily_type_merge_int(emily_dtype_make(EMILY_KIND_SIGNED, imin(info[t].bits * 2, 64)), v);
    case EMILY_KIND_SIGNED: return emily_dtype_make(EMILY_KIND_SIGNED, imax(signed_bits(v), info[t].bits));
    default: return number_merge_other(t);
    }
}

emily_dtype emily_type_merge_uint(emily_dtype t, uint64_t v) {
    if (v <= INT64_MAX) return emily_type_merge_int(t, (int64_t)v);
    if (!emily_dtype_known(t)) return EMILY_DTYPE_AUTO;
    if (info[t].kind == EMILY_KIND_UNSIGNED) return EMILY_U64;
    if (info[t].kind == EMILY_KIND_SIGNED) return EMILY_S64;
    return number_merge_other(t);
}

emily_dtype emily_type_merge_float(emily_dtype t) {
    if (!emily_dtype_known(t)) return EMILY_DTYPE_AUTO;
    return emily_dtype_is_integer(t) ? EMILY_F32 : number_merge_other(t);
}

emily_dtype emily_type_to_floating(emily_dtype t) {
    if (!emily_dtype_known(t)) return EMILY_DTYPE_AUTO;
    if (emily_dtype_is_integer(t)) return emily_type_merge(t, EMILY_F32);
    return t;
}

emily_dtype emily_type_to_real(emily_dtype t) {
    if (t == EMILY_C64) return EMILY_F32;
    if (t == EMILY_C128) return EMILY_F64;
    if (emily_dtype_is_float(t)) return t;
    return emily_dtype_known(t) ? EMILY_F32 : EMILY_DTYPE_AUTO;
}

emily_dtype emily_type_to_complex(emily_dtype t) {
    if (emily_dtype_is_complex(t)) return t;
    if (t == EMILY_F64) return EMILY_C128;
    return emily_dtype_known(t) ? EMILY_C64 : EMILY_DTYPE_AUTO;
}

/* u64 -> s64, other unsigned -> u32, s64 -> s64, other signed -> s32. */
emily_dtype emily_type_to_aggregate(emily_dtype t) {
    if (!emily_dtype_is_integer(t)) return t;
    if (info[t].bits == 64) return EMILY_S64;
    return info[t].kind == EMILY_KIND_UNSIGNED ? EMILY_U32 : EMILY_S32;
}

/* ---- half precision (the rules live in core/scalar_convert.h) ---- */

float emily_f16_to_f32(uint16_t h) { return emily_sc_f16_to_f32(h); }
uint16_t emily_f64_to_f16(double x) { return emily_sc_f64_to_f16(x); }
float emily_bf16_to_f32(uint16_t h) { return emily_sc_bf16_to_f32(h); }
uint16_t emily_f32_to_bf16(float x) { return emily_sc_f32_to_bf16(x); }

double emily_f8_e5m2_to_f64(uint8_t v) { return emily_sc_f8e5m2_to_f64(v); }
uint8_t emily_f64_to_f8_e5m2(double x) { return emily_sc_f64_to_f8e5m2(x); }
double emily_f8_e4m3fn_to_f64(uint8_t v) { return emily_sc_f8e4m3_to_f64(v); }
uint8_t emily_f64_to_f8_e4m3fn(double x) { return emily_sc_f64_to_f8e4m3(x); }
