// Reductions on CUDA: sum, product, reduce_max/min, all, any (the folds;
// the machinery is reduce.cuh) and all_close, with the accumulators and
// NaN/tie rules of src/cpu/reduce/.
#include <type_traits>
#include "cuda/reduce.cuh"

using namespace emily_cuda;

namespace {

// ---- reducers -----------------------------------------------------------
// Each has types S (input), D (output), Acc, and init/load/combine/store;
// combine(a, b) must not depend on the order of its arguments.

// Integers: wrap in U (at least 32 bits, unsigned: no overflow UB).
template <typename T, typename U, bool SUM> struct IntSumProd {
    typedef T S;
    typedef T D;
    typedef U Acc;
    __device__ U init() const { return SUM ? (U)0 : (U)1; }
    __device__ U load(T v, int64_t) const { return (U)v; }
    __device__ U combine(U a, U b) const { return SUM ? (U)(a + b) : (U)(a * b); }
    __device__ T store(U a) const { return (T)a; }
};

template <typename T, bool MAX> struct IntExtreme {
    typedef T S;
    typedef T D;
    typedef int64_t Acc; // wide enough for every type but u64 (below)
    __device__ Acc init() const { return MAX ? (Acc)INT64_MIN : (Acc)INT64_MAX; }
    __device__ Acc load(T v, int64_t) const { return (Acc)v; }
    __device__ Acc combine(Acc a, Acc b) const { return MAX ? (a > b ? a : b) : (a < b ? a : b); }
    __device__ T store(Acc a) const { return (T)a; }
};
template <bool MAX> struct U64Extreme {
    typedef uint64_t S;
    typedef uint64_t D;
    typedef uint64_t Acc;
    __device__ Acc init() const { return MAX ? 0 : UINT64_MAX; }
    __device__ Acc load(uint64_t v, int64_t) const { return v; }
    __device__ Acc combine(Acc a, Acc b) const { return MAX ? (a > b ? a : b) : (a < b ? a : b); }
    __device__ uint64_t store(Acc a) const { return a; }
};

template <class L, bool SUM> struct FloatSumProd {
    typedef typename L::T S;
    typedef typename L::T D;
    typedef double Acc;
    static constexpr bool sequential = !SUM; // products: the CPU's order
    __device__ double init() const { return SUM ? 0.0 : 1.0; }
    __device__ double load(S v, int64_t) const { return (double)L::ld(v); }
    __device__ double combine(double a, double b) const { return SUM ? a + b : a * b; }
    __device__ D store(double a) const { return L::st(a); }
};

// f64 sums: {sum, compensation}, Neumaier.
struct F64Sum {
    typedef double S;
    typedef double D;
    struct Acc {
        double s, c;
    };
    __device__ Acc init() const { return Acc{0.0, 0.0}; }
    __device__ Acc load(double v, int64_t) const { return Acc{v, 0.0}; }
    __device__ Acc combine(Acc a, Acc b) const {
        double t = a.s + b.s;
        double e = fabs(a.s) >= fabs(b.s) ? (a.s - t) + b.s : (b.s - t) + a.s;
        return Acc{t, a.c + b.c + e};
    }
    __device__ double store(Acc a) const { return isfinite(a.s) ? a.s + a.c : a.s; }
};

// max/min of floats: NaN if any, else the extreme; among equal values
// (-0.0 and 0.0) the first in fold order.
template <class L, typename C, bool MAX> struct FloatExtreme {
    typedef typename L::T S;
    typedef typename L::T D;
    struct Acc {
        C v;
        int64_t idx;
        int nan;
    };
    __device__ Acc init() const { return Acc{MAX ? (C)-INFINITY : (C)INFINITY, INT64_MAX, 0}; }
    __device__ Acc load(S x, int64_t j) const {
        C v = (C)L::ld(x);
        return Acc{v, j, v != v};
    }
    __device__ Acc combine(Acc a, Acc b) const {
        int nan = a.nan | b.nan;
        bool take_b = MAX ? (b.v > a.v) : (b.v < a.v);
        bool take_a = MAX ? (a.v > b.v) : (a.v < b.v);
        Acc r = take_b ? b : take_a ? a : (b.idx < a.idx ? b : a);
        r.nan = nan;
        return r;
    }
    __device__ D store(Acc a) const { return L::st(a.nan ? (double)NAN : (double)a.v); }
};

// Complex sums/products in a pair of doubles.
template <typename T, typename P, bool SUM> struct ComplexSumProd {
    typedef T S;
    typedef T D;
    struct Acc {
        double re, im;
    };
    static constexpr bool sequential = true; // plain sums/products in the CPU's order
    __device__ Acc init() const { return Acc{SUM ? 0.0 : 1.0, 0.0}; }
    __device__ Acc load(T v, int64_t) const { return Acc{(double)v.re, (double)v.im}; }
    __device__ Acc combine(Acc a, Acc b) const {
        if (SUM) return Acc{a.re + b.re, a.im + b.im};
        return Acc{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    }
    __device__ T store(Acc a) const {
        T r;
        r.re = (P)a.re;
        r.im = (P)a.im;
        return r;
    }
};

// all/any of "x != 0" (f16/bf16 by their bits; complex always true).
template <typename T> __device__ __forceinline__ bool nonzero(T v) { return v != 0; }
template <> __device__ __forceinline__ bool nonzero<emily_c64>(emily_c64) { return true; }
template <> __device__ __forceinline__ bool nonzero<emily_c128>(emily_c128) { return true; }
template <typename T, bool ALL, bool HALF = false> struct Truth {
    typedef T S;
    typedef uint8_t D;
    typedef uint32_t Acc;
    __device__ Acc init() const { return ALL ? 1u : 0u; }
    __device__ Acc load(T v, int64_t) const {
        if constexpr (HALF) return ((uint16_t)v & 0x7fffu) != 0;
        else return nonzero(v) ? 1u : 0u;
    }
    __device__ Acc combine(Acc a, Acc b) const { return ALL ? (a & b) : (a | b); }
    __device__ uint8_t store(Acc a) const { return (uint8_t)a; }
};

emily_status unsupported(emily_dtype t) {
    return emily_error(EMILY_ERR_TYPE, "reduce: %s is not supported for this operation on cuda", emily_dtype_name(t));
}

// sum and product: integers wrap in (at least) 32 bits, f16/bf16/f32 fold
// in double, f64 sums compensated, complex in a pair of doubles.
template <emily_dtype D>
emily_status sum_product(const emily_cuda_ctx &ctx, bool sum, emily_tensor *dst, const emily_tensor *src,
                         const bool *m) {
    typedef storage_t<D> T;
    if constexpr (is_integer(D)) {
        typedef typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type U;
        return sum ? reduce_with(ctx, IntSumProd<T, U, true>(), dst, src, m)
                   : reduce_with(ctx, IntSumProd<T, U, false>(), dst, src, m);
    } else if constexpr (D == EMILY_F64) {
        return sum ? reduce_with(ctx, F64Sum(), dst, src, m)
                   : reduce_with(ctx, FloatSumProd<LdF64, false>(), dst, src, m);
    } else if constexpr (is_float(D)) {
        return sum ? reduce_with(ctx, FloatSumProd<Ld<D>, true>(), dst, src, m)
                   : reduce_with(ctx, FloatSumProd<Ld<D>, false>(), dst, src, m);
    } else {
        typedef decltype(T::re) P;
        return sum ? reduce_with(ctx, ComplexSumProd<T, P, true>(), dst, src, m)
                   : reduce_with(ctx, ComplexSumProd<T, P, false>(), dst, src, m);
    }
}

// reduce_max and reduce_min of real types.
template <emily_dtype D>
emily_status extreme(const emily_cuda_ctx &ctx, bool mx, emily_tensor *dst, const emily_tensor *src, const bool *m) {
    typedef storage_t<D> T;
    if constexpr (D == EMILY_U64) {
        return mx ? reduce_with(ctx, U64Extreme<true>(), dst, src, m)
                  : reduce_with(ctx, U64Extreme<false>(), dst, src, m);
    } else if constexpr (is_integer(D)) {
        return mx ? reduce_with(ctx, IntExtreme<T, true>(), dst, src, m)
                  : reduce_with(ctx, IntExtreme<T, false>(), dst, src, m);
    } else if constexpr (is_float(D)) {
        typedef typename Ld<D>::C C;
        return mx ? reduce_with(ctx, FloatExtreme<Ld<D>, C, true>(), dst, src, m)
                  : reduce_with(ctx, FloatExtreme<Ld<D>, C, false>(), dst, src, m);
    } else {
        return unsupported(D);
    }
}

// all and any: f16/bf16 by their bits (one instantiation for both).
template <emily_dtype D>
emily_status truth(const emily_cuda_ctx &ctx, bool all, emily_tensor *dst, const emily_tensor *src, const bool *m) {
    if constexpr (is_half(D)) {
        return all ? reduce_with(ctx, Truth<uint16_t, true, true>(), dst, src, m)
                   : reduce_with(ctx, Truth<uint16_t, false, true>(), dst, src, m);
    } else {
        typedef storage_t<D> T;
        return all ? reduce_with(ctx, Truth<T, true>(), dst, src, m) : reduce_with(ctx, Truth<T, false>(), dst, src, m);
    }
}

emily_status reduce_dispatch(const emily_cuda_ctx &ctx, emily_reduce_op op, emily_tensor *dst, const emily_tensor *src,
                             const bool *m) {
    emily_dtype t = src->dtype;
    if (!emily_dtype_valid(t)) return unsupported(t);
    return with_dtype(t, "reduce", [&]<emily_dtype D>() -> emily_status {
        switch (op) {
        case EMILY_REDUCE_SUM:
        case EMILY_REDUCE_PRODUCT: return sum_product<D>(ctx, op == EMILY_REDUCE_SUM, dst, src, m);
        case EMILY_REDUCE_MAX:
        case EMILY_REDUCE_MIN: return extreme<D>(ctx, op == EMILY_REDUCE_MAX, dst, src, m);
        case EMILY_REDUCE_ALL:
        case EMILY_REDUCE_ANY: return truth<D>(ctx, op == EMILY_REDUCE_ALL, dst, src, m);
        default: return unsupported(D);
        }
    });
}

} // namespace

extern "C" emily_status emi_cuda_reduce(emily_reduce_op op, emily_tensor *dst, const emily_tensor *src,
                                        const bool *reduced) {
    static const char *const names[] = {"sum", "product", "reduce_max", "reduce_min", "all", "any"};
    if ((unsigned)op >= EMILY_REDUCE_OP_COUNT || !emily_dtype_valid(src->dtype))
        return emily_error(EMILY_ERR_INTERNAL, "reduce: bad op or dtype");
    if (dst->size == 0) return EMILY_OK;
    if (src->size == 0 && (op == EMILY_REDUCE_MAX || op == EMILY_REDUCE_MIN))
        return emily_error(EMILY_ERR_SHAPE, "reduce: cannot take the max/min of an empty axis");
    emily_cuda_ctx ctx;
    emily_status s = begin_dst_src(names[op], dst, src, &ctx);
    return s ? s : reduce_dispatch(ctx, op, dst, src, reduced);
}

// ---- all_close ---------------------------------------------------------------
// |a - b| <= atol + rtol * |b| element-wise as Nx computes it (each step
// rounded to the tensors' type; rtol/atol arrive as f32 values),
// infinities compared for equality, NaNs equal when asked; the same
// steps as src/cpu/reduce/. Integers: the difference and its absolute
// value wrap in the type, the bound is a double compared exactly.

namespace {

struct AcParams {
    double rtol, atol;
    bool equal_nan;
};

template <class L> __device__ __forceinline__ double round_to(double v) { return (double)L::ld(L::st(v)); }

template <class L> __device__ bool close_float(const AcParams &p, double x, double y) {
    bool ok;
    if (isinf(x) || isinf(y)) ok = x == y;
    else {
        double ad = fabs(round_to<L>(x - y));
        double tol = round_to<L>(p.atol + round_to<L>(p.rtol * fabs(y)));
        ok = ad <= tol;
    }
    if (p.equal_nan && isnan(x) && isnan(y)) ok = true;
    return ok;
}

__device__ __forceinline__ bool part_eq(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

template <class L> __device__ bool close_complex(const AcParams &p, double xr, double xi, double yr, double yi) {
    bool ok;
    if (isinf(xr) || isinf(xi) || isinf(yr) || isinf(yi)) {
        ok = part_eq(xr, yr) && part_eq(xi, yi);
    } else {
        double dr = round_to<L>(xr - yr), di = round_to<L>(xi - yi);
        double ad = round_to<L>(hypot(dr, di));
        double ab = round_to<L>(hypot(yr, yi));
        double tol = round_to<L>(p.atol + round_to<L>(p.rtol * ab));
        ok = ad <= tol;
    }
    if (p.equal_nan && (isnan(xr) || isnan(xi)) && (isnan(yr) || isnan(yi))) ok = true;
    return ok;
}

// a <= t exactly, for an integer a and a double t.
__device__ __forceinline__ bool le_exact(int64_t a, double t) {
    if (t != t) return false;
    if (t >= 9223372036854775808.0) return true;
    if (t < -9223372036854775808.0) return false;
    return a <= (int64_t)floor(t);
}
__device__ __forceinline__ bool le_exact(uint64_t a, double t) {
    if (t != t) return false;
    if (t >= 18446744073709551616.0) return true;
    if (t < 0) return false;
    return a <= (uint64_t)floor(t);
}

template <typename T, typename U, bool SIGNED> struct CloseInt {
    typedef T S;
    static __device__ bool ok(const AcParams &p, T x, T y) {
        U du = (U)((U)x - (U)y);
        double tol = p.atol + p.rtol * fabs((double)y);
        if constexpr (SIGNED) {
            T d = (T)du;
            T ad = d < 0 ? (T)(U)((U)0 - du) : d;
            return le_exact((int64_t)ad, tol);
        } else {
            return le_exact((uint64_t)du, tol);
        }
    }
};
template <class L> struct CloseFloat {
    typedef typename L::T S;
    static __device__ bool ok(const AcParams &p, S x, S y) {
        return close_float<L>(p, (double)L::ld(x), (double)L::ld(y));
    }
};
template <typename T, class L> struct CloseComplex {
    typedef T S;
    static __device__ bool ok(const AcParams &p, T x, T y) {
        return close_complex<L>(p, (double)x.re, (double)x.im, (double)y.re, (double)y.im);
    }
};

// *bad becomes 1 when some element is not close.
template <class C>
__global__ void close_kernel(Layout<2> L, AcParams p, const typename C::S *a, const typename C::S *b, unsigned *bad) {
    bool fail = false;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < L.total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t off[2];
        layout_offsets<2, int64_t>(L, i, off);
        fail |= !C::ok(p, a[off[0]], b[off[1]]);
    }
    if (__syncthreads_or(fail) && threadIdx.x == 0) atomicOr(bad, 1u);
}

__global__ void close_result(const unsigned *bad, uint8_t *dst) { *dst = *bad ? 0 : 1; }

template <class C>
emily_status close_run(const emily_cuda_ctx &ctx, const AcParams &p, const emily_tensor *a, const emily_tensor *b,
                       unsigned *bad) {
    const emily_tensor *ts[2] = {a, b};
    const typename C::S *ap = (const typename C::S *)base_of(a), *bp = (const typename C::S *)base_of(b);
    return for_layout<2>(ctx.op, ts, [&](const Layout<2> &L, const int64_t *off) -> emily_status {
        close_kernel<C><<<grid_for(ctx.device, L.total), BLOCK, 0, ctx.stream>>>(L, p, ap + off[0], bp + off[1], bad);
        return emi_cuda_launched(&ctx);
    });
}

// Integers compare in their unsigned twin, floats round by their loader,
// complex by the loader of their part type.
emily_status close_dispatch(const emily_cuda_ctx &ctx, const AcParams &p, const emily_tensor *a, const emily_tensor *b,
                            unsigned *bad) {
    return with_dtype(a->dtype, "all_close", [&]<emily_dtype D>() -> emily_status {
        typedef storage_t<D> T;
        if constexpr (is_integer(D))
            return close_run<CloseInt<T, std::make_unsigned_t<T>, is_signed(D)>>(ctx, p, a, b, bad);
        else if constexpr (is_float(D)) return close_run<CloseFloat<Ld<D>>>(ctx, p, a, b, bad);
        else if constexpr (D == EMILY_C64) return close_run<CloseComplex<T, LdF32>>(ctx, p, a, b, bad);
        else return close_run<CloseComplex<T, LdF64>>(ctx, p, a, b, bad);
    });
}

} // namespace

extern "C" emily_status emi_cuda_all_close(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, double rtol,
                                           double atol, bool equal_nan) {
    if (a->dtype != b->dtype || dst->dtype != EMILY_U8 || dst->size != 1)
        return emily_error(EMILY_ERR_INTERNAL, "all_close kernel: bad operand types");
    emily_cuda_ctx ctx;
    const emily_tensor *ts[3] = {dst, a, b};
    emily_status s = emi_cuda_begin("all_close", dev_of(dst), 3, ts, &ctx);
    if (s) return s;
    AcParams p = {(double)(float)rtol, (double)(float)atol, equal_nan};
    unsigned *bad = NULL;
    s = emi_cuda_scratch(&ctx, sizeof(unsigned), (void **)&bad);
    if (s) return s;
    s = emi_cuda_error("all_close", cudaMemsetAsync(bad, 0, sizeof(unsigned), ctx.stream));
    if (!s && a->size > 0) s = close_dispatch(ctx, p, a, b, bad);
    if (!s) {
        close_result<<<1, 1, 0, ctx.stream>>>(bad, (uint8_t *)base_of(dst) + dst->offset);
        s = emi_cuda_launched(&ctx);
    }
    emi_cuda_scratch_free(&ctx, bad);
    return s;
}
