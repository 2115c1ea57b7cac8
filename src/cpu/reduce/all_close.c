/* CPU kernel: all_close, |a - b| <= atol + rtol * |b| element-wise as
 * Nx computes it (each step rounded to the tensors' type; rtol and atol
 * arrive as f32 scalars), infinities compared for equality, NaNs equal
 * when asked. One test per dtype class, dispatched by an expansion of the
 * dtype list; the first element that is not close stops every thread. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include "cpu/element_access.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"

typedef struct acparams {
    emily_dtype dt;
    double rtol, atol;
    bool equal_nan;
} acparams;

static bool close_float(const acparams *p, double x, double y) {
    bool ok;
    if (isinf(x) || isinf(y)) ok = x == y;
    else {
        double ad = fabs(we_round(p->dt, x - y));
        double tol = we_round(p->dt, p->atol + we_round(p->dt, p->rtol * fabs(y)));
        ok = ad <= tol;
    }
    if (p->equal_nan && isnan(x) && isnan(y)) ok = true;
    return ok;
}

static inline bool part_eq(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static bool close_complex(const acparams *p, double xr, double xi, double yr, double yi) {
    bool ok;
    if (isinf(xr) || isinf(xi) || isinf(yr) || isinf(yi)) {
        /* Nx compares the two %Complex{} structs: parts equal as terms */
        ok = part_eq(xr, yr) && part_eq(xi, yi);
    } else {
        double dr = we_round(p->dt, xr - yr), di = we_round(p->dt, xi - yi);
        double ad = we_round(p->dt, hypot(dr, di));
        double ab = we_round(p->dt, hypot(yr, yi));
        double tol = we_round(p->dt, p->atol + we_round(p->dt, p->rtol * ab));
        ok = ad <= tol;
    }
    if (p->equal_nan && (isnan(xr) || isnan(xi)) && (isnan(yr) || isnan(yi))) ok = true;
    return ok;
}

/* Integers: the difference and its absolute value wrap in the type; the
 * bound is computed in f64 and compared exactly. */
#define CLOSE_INT(T, U, NEG)                                        \
    {                                                               \
        T x = ((const T *)pa)[i * sa], y = ((const T *)pb)[i * sb]; \
        T d, ad;                                                    \
        U du = (U)((U)x - (U)y);                                    \
        memcpy(&d, &du, sizeof d);                                  \
        if (NEG(d)) {                                               \
            U nu = (U)(0 - du);                                     \
            memcpy(&ad, &nu, sizeof ad);                            \
        } else ad = d;                                              \
        double tol = p->atol + p->rtol * fabs((double)y);           \
        ok = (long double)ad <= (long double)tol;                   \
    }

#define NEVER_NEG(d) ((void)(d), 0)
#define IS_NEG(d) ((d) < 0)

/* One case of close_at per dtype. */
// clang-format off
#define CLOSE_UNSIGNED(ENUM, sfx, T) \
    case EMILY_##ENUM: CLOSE_INT(T, EMI_BITS(sfx), NEVER_NEG) break;
#define CLOSE_SIGNED(ENUM, sfx, T) \
    case EMILY_##ENUM: CLOSE_INT(T, EMI_BITS(sfx), IS_NEG) break;
#define CLOSE_FLOAT(ENUM, sfx, T)                                                        \
    case EMILY_##ENUM:                                                                   \
        ok = close_float(p, emi_to_f64_##sfx(((const T *)pa)[i * sa]),                   \
                         emi_to_f64_##sfx(((const T *)pb)[i * sb]));                     \
        break;
#define CLOSE_COMPLEX(ENUM, sfx, T)                                                      \
    case EMILY_##ENUM: {                                                                 \
        T x = ((const T *)pa)[i * sa], y = ((const T *)pb)[i * sb];                      \
        ok = close_complex(p, x.re, x.im, y.re, y.im);                                   \
        break;                                                                           \
    }
// clang-format on

static bool close_at(const acparams *p, const char *pa, int64_t sa, const char *pb, int64_t sb, int64_t i) {
    bool ok = true;
    switch (p->dt) {
        EMI_DTYPES_UNSIGNED(CLOSE_UNSIGNED)
        EMI_DTYPES_SIGNED(CLOSE_SIGNED)
        EMI_DTYPES_FLOAT(CLOSE_FLOAT)
        EMI_DTYPES_COMPLEX(CLOSE_COMPLEX)
    default: break;
    }
    return ok;
}

emily_status emi_cpu_all_close(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, double rtol,
                               double atol, bool equal_nan) {
    acparams p = {.dt = a->dtype, .rtol = (double)(float)rtol, .atol = (double)(float)atol, .equal_nan = equal_nan};
    uint8_t result = 1;
    if (a->size > 0) {
        const emily_tensor *ts[2] = {a, b};
        emily_iter it;
        emily_status s = emi_iter_tensors(&it, 2, ts);
        if (s) return s;
        size_t es = emily_dtype_size(a->dtype);
        const char *ab = emily_tensor_base(a), *bb = emily_tensor_base(b);
        atomic_int all = 1; /* cleared by any element not close; stops the others */
        EMILY_PAR_FOR(a->size >= EMILY_PARALLEL_MIN, pos, it.outer_n, {
            int64_t off[2];
            emi_iter_offsets(&it, pos, off);
            const char *pa = ab + off[0] * (int64_t)es, *pb = bb + off[1] * (int64_t)es;
            for (int64_t i = 0; i < it.inner_n && atomic_load_explicit(&all, memory_order_relaxed); i++)
                if (!close_at(&p, pa, it.inner_stride[0], pb, it.inner_stride[1], i))
                    atomic_store_explicit(&all, 0, memory_order_relaxed);
        });
        emi_iter_free(&it);
        result = (uint8_t)atomic_load(&all);
    }
    memcpy(emily_tensor_base(dst), &result, 1);
    return EMILY_OK;
}
