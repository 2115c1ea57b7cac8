/* Shared by the CUDA family tests (test_cuda_<family>.c): run one op on
 * CPU tensors and on their copies on cuda:0 and require the same status,
 * the same message and the same result bits, with random data that has the
 * values exact kernels get wrong first (both zeros, infinities, NaNs with
 * payloads, subnormals, ties).
 *
 * The GPU cases run only where a CUDA device is usable; elsewhere the
 * binary prints one SKIPPED line and passes nothing.
 * EMILY_TEST_CUDA_ON_CPU=1 runs them with both sides on the CPU: a check of
 * the test code itself, not of the CUDA engine. Everything is static inline
 * (one copy per test binary, no unused-function warnings). */
#ifndef EMILY_TEST_CUDA_COMPARE_H
#define EMILY_TEST_CUDA_COMPARE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "harness.h"
#include "core/scalar_convert.h"

/* The device the cases compare with the CPU (the CPU itself under
 * EMILY_TEST_CUDA_ON_CPU=1). */
static emily_device tc_device = {EMILY_DEVICE_CUDA, 0};

static inline uint64_t tc_rnd(void) {
    static uint64_t s = 0x9e3779b97f4a7c15ull;
    return xorshift64(&s);
}

/* Value kinds of tc_tensor. */
enum {
    TC_GENERAL,  /* values in [-4, 4) and, now and then, an edge value */
    TC_NEAR_ONE, /* |v| in [0.5, 1.5) (long products stay finite), rare edges */
    TC_TIES,     /* small integers, both zeros and NaNs: many equal keys */
    TC_BITS      /* random bit patterns (integers: full range) */
};

/* One float part of kind `kind` written into dtype dt (real) at p. */
static inline void tc_float_part(emily_dtype dt, int kind, unsigned char *p) {
    uint64_t r = tc_rnd();
    double v;
    int edge = kind == TC_TIES ? (r % 4 == 0) : (r % 64 == 0);
    if (kind == TC_BITS) {
        memcpy(p, &r, emily_dtype_size(dt) > 8 ? 8 : emily_dtype_size(dt));
        return;
    }
    if (edge) {
        static const int nedges = 7;
        switch ((r >> 8) % nedges) {
        case 0: v = 0.0; break;
        case 1: v = -0.0; break;
        case 2: v = INFINITY; break;
        case 3: v = -INFINITY; break;
        case 4: { /* a NaN with a payload, either sign */
            switch (dt) {
            case EMILY_F16: {
                uint16_t b = (uint16_t)(0x7c01u | ((r >> 20) & 0x3ffu) | ((r >> 40) & 1 ? 0x8000u : 0));
                memcpy(p, &b, 2);
                return;
            }
            case EMILY_BF16: {
                uint16_t b = (uint16_t)(0x7f81u | ((r >> 20) & 0x7fu) | ((r >> 40) & 1 ? 0x8000u : 0));
                memcpy(p, &b, 2);
                return;
            }
            case EMILY_F32:
            case EMILY_C64: {
                uint32_t b = 0x7f800001u | (uint32_t)((r >> 20) & 0x7fffffu) | ((r >> 50) & 1 ? 0x80000000u : 0);
                memcpy(p, &b, 4);
                return;
            }
            default: {
                uint64_t b = 0x7ff0000000000001ull | ((r >> 12) & 0xfffffffffffffull) | ((r >> 63) << 63);
                memcpy(p, &b, 8);
                return;
            }
            }
        }
        case 5: v = 1e-310 * (double)((r >> 30) % 7 + 1); break; /* subnormal in f64, 0 or tiny below */
        default: v = 65504.0 * (((r >> 12) & 1) ? -1 : 1); break;
        }
    } else if (kind == TC_TIES) {
        v = (double)((int)((r >> 8) % 5) - 2);
        if (v == 0 && ((r >> 20) & 1)) v = -0.0;
    } else if (kind == TC_NEAR_ONE) {
        v = (0.5 + (double)((r >> 11) & 0xfffff) / 1048576.0) * (((r >> 40) & 1) ? -1 : 1);
    } else {
        v = ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 8.0;
    }
    emily_sc_store_complex((int)dt, v, 0.0, p);
}

/* A CPU tensor of random values of kind `kind`. */
static inline emily_tensor *tc_tensor(emily_dtype dt, int rank, const int64_t *shape, int kind) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    size_t es = emily_dtype_size(dt);
    unsigned char *buf = malloc((size_t)n * es + 16);
    if (!buf) {
        harness_failures++;
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        unsigned char *p = buf + (size_t)i * es;
        if (emily_dtype_is_complex(dt)) {
            emily_dtype part = dt == EMILY_C64 ? EMILY_F32 : EMILY_F64;
            tc_float_part(part, kind, p);
            tc_float_part(part, kind, p + es / 2);
        } else if (emily_dtype_is_float(dt)) {
            tc_float_part(dt, kind, p);
        } else {
            uint64_t r = tc_rnd(), bits;
            if (kind == TC_BITS || (kind == TC_GENERAL && r % 8 == 0)) bits = tc_rnd();
            else if (kind == TC_TIES) bits = (uint64_t)((int64_t)(r % 5) - 2);
            else if (kind == TC_NEAR_ONE) bits = (uint64_t)((int64_t)(r % 5) - 2) | 1; /* odd: products wrap */
            else bits = (uint64_t)((int64_t)(r % 41) - 20);
            memcpy(p, &bits, es);
        }
    }
    emily_tensor *t = t_from(dt, rank, shape, buf);
    free(buf);
    return t;
}

/* A copy of t on tc_device (t, a CPU tensor, released). */
static inline emily_tensor *tc_on_device(emily_tensor *t) {
    emily_tensor *d = NULL;
    CHECK_OK(emily_to_device(t, tc_device, &d));
    emily_tensor_release(t);
    return d;
}

static inline bool tc_part_nan(emily_dtype part, const unsigned char *p) {
    switch (part) {
    case EMILY_F16: {
        uint16_t b;
        memcpy(&b, p, 2);
        return (b & 0x7fffu) > 0x7c00u;
    }
    case EMILY_BF16: {
        uint16_t b;
        memcpy(&b, p, 2);
        return (b & 0x7fffu) > 0x7f80u;
    }
    case EMILY_F32: {
        uint32_t b;
        memcpy(&b, p, 4);
        return (b & 0x7fffffffu) > 0x7f800000u;
    }
    default: {
        uint64_t b;
        memcpy(&b, p, 8);
        return (b & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    }
    }
}

/* Same dtype, shape and element bits; a NaN matches any NaN (payloads
 * produced by arithmetic differ between x86 and the GPU). Prints the first
 * few differences. */
static inline bool tc_same(const char *what, const emily_tensor *c, const emily_tensor *g) {
    emily_dtype dt = emily_tensor_dtype(c);
    if (dt != emily_tensor_dtype(g) || !t_shape_is(g, emily_tensor_rank(c), emily_tensor_shape(c))) {
        fprintf(stderr, "  %s: cuda result has type %s rank %d, cpu %s rank %d\n", what,
                emily_dtype_name(emily_tensor_dtype(g)), emily_tensor_rank(g), emily_dtype_name(dt),
                emily_tensor_rank(c));
        return false;
    }
    size_t nb = emily_tensor_nbytes(c), es = emily_dtype_size(dt);
    unsigned char *cb = malloc(nb + 1), *gb = malloc(nb + 1);
    bool ok = cb && gb && !emily_to_binary(c, cb, nb) && !emily_to_binary(g, gb, nb);
    int shown = 0;
    int parts = emily_dtype_is_complex(dt) ? 2 : 1;
    size_t ps = es / (size_t)parts;
    emily_dtype part = dt == EMILY_C64 ? EMILY_F32 : dt == EMILY_C128 ? EMILY_F64 : dt;
    for (size_t i = 0; cb && gb && i < nb; i += es) {
        bool same = true;
        for (int k = 0; k < parts; k++) {
            const unsigned char *x = cb + i + (size_t)k * ps, *y = gb + i + (size_t)k * ps;
            if (memcmp(x, y, ps) == 0) continue;
            if (!emily_dtype_is_integer(dt) && tc_part_nan(part, x) && tc_part_nan(part, y)) continue;
            same = false;
        }
        if (same) continue;
        ok = false;
        if (shown++ < 5) {
            uint64_t x[2] = {0, 0}, y[2] = {0, 0};
            memcpy(x, cb + i, es);
            memcpy(y, gb + i, es);
            fprintf(stderr, "  %s (%s): element %zu: cpu bits 0x%llx%s, cuda bits 0x%llx%s\n", what,
                    emily_dtype_name(dt), i / es, (unsigned long long)x[0], es > 8 ? "..." : "",
                    (unsigned long long)y[0], es > 8 ? "..." : "");
        }
    }
    if (shown > 5) fprintf(stderr, "  %s: %d elements differ\n", what, shown);
    free(cb);
    free(gb);
    return ok;
}

typedef emily_status (*tc_fn)(emily_tensor *const *in, emily_tensor **out, const void *arg);

/* Runs fn on the CPU tensors cin[0..nin) and on their copies on
 * tc_device: both must return `want`, with the same message when it is an
 * error, or agree bit for bit. Releases nothing of cin. */
static inline void tc_expect(const char *what, tc_fn fn, const void *arg, int nin, emily_tensor *const *cin,
                             emily_status want) {
    emily_tensor *gin[4] = {NULL, NULL, NULL, NULL}, *c = NULL, *g = NULL;
    bool up = true;
    for (int i = 0; i < nin; i++) {
        if (!cin[i] || emily_to_device(cin[i], tc_device, &gin[i])) up = false;
    }
    if (!up) {
        fprintf(stderr, "  %s: inputs could not be made (%s)\n", what, emily_last_error());
        harness_failures++;
    } else {
        emily_status sc = fn(cin, &c, arg);
        char cmsg[512];
        snprintf(cmsg, sizeof cmsg, "%s", sc ? emily_last_error() : "");
        emily_status sg = fn(gin, &g, arg);
        if (sc != want) {
            fprintf(stderr, "  %s: cpu says %s (%s), the case wants %s\n", what, emily_status_name(sc), cmsg,
                    emily_status_name(want));
            harness_failures++;
        } else {
            harness_gpu_verdict(what, sc, cmsg, sg, c, g, tc_same);
        }
    }
    emily_tensor_release(c);
    emily_tensor_release(g);
    for (int i = 0; i < nin; i++) emily_tensor_release(gin[i]);
}

/* tc_expect of a call that must succeed. */
static inline void tc_compare(const char *what, tc_fn fn, const void *arg, int nin, emily_tensor *const *cin) {
    tc_expect(what, fn, arg, nin, cin, EMILY_OK);
}

/* main() of a CUDA family test: the GPU cases, or one SKIPPED line. */
#define TC_MAIN(suite, ...)                                                                          \
    int main(int argc, char **argv) {                                                                \
        static const harness_case cases_[] = {__VA_ARGS__, {NULL, NULL}};                            \
        if (!harness_args(argc, argv)) return 2;                                                     \
        static const harness_gpu_cases g_ = {suite,      cases_, cases_, suite " (cpu against cpu)", \
                                             &tc_device, NULL,   false};                             \
        return harness_gpu_finish(0, &g_);                                                           \
    }

#endif
