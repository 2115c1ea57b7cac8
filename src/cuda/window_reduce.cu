// window_sum/product/max/min on CUDA, with the CPU engine's results bit for
// bit (src/cpu/window.c): a thread per output folds its window's elements in
// the window's row-major order, skipping those that fall in the padding
// (the op's identity), with the CPU's accumulators: floats in double (f32
// max/min in float: the same comparisons on exactly the same values),
// complex in pairs of doubles, integers wrapping in their width; each output
// rounded once.
//
// Axes that add nothing (one position of a one-element window at index 0)
// are dropped and neighbouring identity axes (window 1, stride 1, no
// padding) merged. What is left of the common pooling shapes, two window
// axes between an optional batch and optional channels ([B, H, W, C]:
// NCHW pooling has C = 1, NHWC pooling B and C), runs in pool2_kernel: a
// row of blocks per batch index, a thread per output with 32-bit index
// arithmetic and no bounds checks for windows wholly inside the input.
// Any other window (up to the op layer's 64 axes) runs in win_kernel,
// which walks each window with an odometer.
#include "cuda/window.cuh"
#include "core/scalar_binary.h"

using namespace emily_cuda;

namespace {

// The accumulator of one output for dtype D and op OP (the CPU's
// reduce_one): init is the op's identity, add folds in element x (the
// new element first: x + acc, x * acc, max(x, acc) where NaN wins and equal
// values keep x), fin writes the result as an element.
template <emily_dtype D, int OP> struct WinFold {
    typedef storage_t<D> S;
    static constexpr bool F32_MINMAX = D == EMILY_F32 && OP >= EMILY_WINDOW_MAX;
    typedef typename std::conditional<
        is_complex(D), emily_sb_complex,
        typename std::conditional<is_integer(D), S,
                                  typename std::conditional<F32_MINMAX, float, double>::type>::type>::type A;

    static __device__ __forceinline__ A init() {
        if constexpr (is_complex(D)) {
            return emily_sb_cmake(OP == EMILY_WINDOW_PRODUCT ? 1.0 : 0.0, 0.0);
        } else if constexpr (is_integer(D)) {
            // max: the type's smallest value, min: its largest (what the
            // CPU writes for a window of padding only)
            typedef typename std::make_unsigned<S>::type U;
            constexpr U ones = (U) ~(U)0;
            constexpr S hi = is_unsigned(D) ? (S)ones : (S)(ones >> 1);
            constexpr S lo = is_unsigned(D) ? (S)0 : (S)(-(S)(ones >> 1) - 1);
            return OP == EMILY_WINDOW_SUM ? (S)0 : OP == EMILY_WINDOW_PRODUCT ? (S)1 : OP == EMILY_WINDOW_MAX ? lo : hi;
        } else {
            return OP == EMILY_WINDOW_SUM       ? (A)0.0
                   : OP == EMILY_WINDOW_PRODUCT ? (A)1.0
                   : OP == EMILY_WINDOW_MAX     ? (A)-INFINITY
                                                : (A)INFINITY;
        }
    }
    static __device__ __forceinline__ A add(A acc, S x) {
        if constexpr (is_complex(D)) {
            emily_sb_complex v = emily_sb_cmake(cv_rules<D>::re(x), cv_rules<D>::im(x));
            return OP == EMILY_WINDOW_PRODUCT ? emily_sb_cmultiply(v, acc) : emily_sb_cadd(v, acc);
        } else if constexpr (is_integer(D)) {
            return int_fold(OP, acc, x);
        } else if constexpr (F32_MINMAX) {
            return OP == EMILY_WINDOW_MAX ? emily_sb_max_f32(x, acc) : emily_sb_min_f32(x, acc);
        } else {
            double v = cv_rules<D>::re(x);
            switch (OP) {
            case EMILY_WINDOW_SUM: return v + acc;
            case EMILY_WINDOW_PRODUCT: return v * acc;
            case EMILY_WINDOW_MAX: return emily_sb_max_f64(v, acc);
            default: return emily_sb_min_f64(v, acc);
            }
        }
    }
    static __device__ __forceinline__ S fin(A acc) {
        if constexpr (is_complex(D)) {
            return cv_rules<D>::from_f64(acc.re, acc.im);
        } else if constexpr (is_integer(D)) {
            return acc;
        } else if constexpr (F32_MINMAX) {
            // the CPU's float -> double -> float: a NaN comes back quiet
            uint32_t b = emily_sc_f32_bits(acc);
            return (b & 0x7fffffffu) > 0x7f800000u ? emily_sc_bits_f32(b | 0x00400000u) : acc;
        } else {
            return cv_rules<D>::from_f64(acc, 0.0);
        }
    }
};

// ---- any window -------------------------------------------------------------

template <emily_dtype D, int OP, int CAP>
__global__ void win_kernel(const __grid_constant__ WinAxes g, int64_t total, const storage_t<D> *__restrict__ src,
                           storage_t<D> *__restrict__ dst) {
    typedef WinFold<D, OP> F;
    int64_t c[CAP], w[CAP];
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < total; o += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = o, off = 0;
        bool inside = true;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t q = rem / g.out[d];
            c[d] = (rem - q * g.out[d]) * g.step[d] - g.pad[d]; // window start
            rem = q;
            w[d] = 0;
            off += c[d] * g.ist[d];
            if (c[d] < 0 || c[d] + (g.win[d] - 1) * g.dil[d] >= g.in[d]) inside = false;
        }
        typename F::A acc = F::init();
        for (;;) {
            bool ok = inside;
            if (!ok) {
                ok = true;
                for (int d = 0; d < g.rank && ok; d++) {
                    int64_t x = c[d] + w[d] * g.dil[d];
                    ok = x >= 0 && x < g.in[d];
                }
            }
            if (ok) acc = F::add(acc, src[off]);
            // next element, the last axis fastest
            int d = g.rank - 1;
            for (; d >= 0; d--) {
                if (++w[d] < g.win[d]) {
                    off += g.dil[d] * g.ist[d];
                    break;
                }
                off -= (g.win[d] - 1) * g.dil[d] * g.ist[d];
                w[d] = 0;
            }
            if (d < 0) break;
        }
        dst[o] = F::fin(acc);
    }
}

// ---- [B, H, W, C] pooling ----------------------------------------------------

struct Pool2 {
    int64_t B, sb;                  // batch (leading identity axes) and its stride
    int64_t C, sc;                  // channels (trailing identity axes) and their stride
    int64_t H, W, sh, sw;           // input plane
    int64_t OH, OW;                 // output plane (OH * OW * C < 2^31)
    int64_t kh, kw, th, tw, ph, pw; // window, steps, padding
    int64_t dh, dw;                 // dilations
};

template <emily_dtype D, int OP>
__global__ void __launch_bounds__(BLOCK)
    pool2_kernel(Pool2 p, const storage_t<D> *__restrict__ src, storage_t<D> *__restrict__ dst) {
    typedef storage_t<D> S;
    typedef WinFold<D, OP> F;
    const uint32_t plane = (uint32_t)(p.OH * p.OW * p.C), OW = (uint32_t)p.OW, C = (uint32_t)p.C;
    const int64_t rstep = p.dh * p.sh, cstep = p.dw * p.sw;
    for (int64_t b = blockIdx.y; b < p.B; b += gridDim.y) {
        S *out = dst + b * (int64_t)plane;
        for (uint32_t o = blockIdx.x * blockDim.x + threadIdx.x; o < plane; o += gridDim.x * blockDim.x) {
            // o = (oh * OW + ow) * C + c, channels fastest
            uint32_t pix = o, c = 0;
            if (C > 1) {
                pix = o / C;
                c = o - pix * C;
            }
            uint32_t oh = pix / OW, ow = pix - oh * OW;
            const S *base = src + b * p.sb + (int64_t)c * p.sc;
            int64_t h0 = (int64_t)oh * p.th - p.ph, w0 = (int64_t)ow * p.tw - p.pw;
            typename F::A acc = F::init();
            if (h0 >= 0 && h0 + (p.kh - 1) * p.dh < p.H && w0 >= 0 && w0 + (p.kw - 1) * p.dw < p.W) {
                const S *r = base + h0 * p.sh + w0 * p.sw;
                for (int64_t i = 0; i < p.kh; i++, r += rstep) {
                    const S *e = r;
                    for (int64_t j = 0; j < p.kw; j++, e += cstep) acc = F::add(acc, *e);
                }
            } else {
                for (int64_t i = 0; i < p.kh; i++) {
                    int64_t h = h0 + i * p.dh;
                    if (h < 0 || h >= p.H) continue;
                    for (int64_t j = 0; j < p.kw; j++) {
                        int64_t x = w0 + j * p.dw;
                        if (x >= 0 && x < p.W) acc = F::add(acc, base[h * p.sh + x * p.sw]);
                    }
                }
            }
            out[o] = F::fin(acc);
        }
    }
}

// ---- the host side --------------------------------------------------------------

bool identity_axis(const WinAxes &g, int d) {
    return g.win[d] == 1 && g.step[d] == 1 && g.pad[d] == 0 && g.out[d] == g.in[d];
}

// Drops axes that add nothing and merges neighbouring identity axes whose
// input strides allow it (the output is contiguous: its axes always merge).
void simplify(WinAxes &g) {
    int m = 0;
    for (int d = 0; d < g.rank; d++) {
        if (g.out[d] == 1 && g.win[d] == 1 && g.pad[d] == 0 && g.in[d] >= 1) continue;
        if (m > 0 && identity_axis(g, d) && identity_axis(g, m - 1) && g.ist[m - 1] == g.ist[d] * g.in[d]) {
            g.in[m - 1] *= g.in[d];
            g.out[m - 1] = g.in[m - 1];
            g.ist[m - 1] = g.ist[d];
            continue;
        }
        g.out[m] = g.out[d];
        g.in[m] = g.in[d];
        g.ist[m] = g.ist[d];
        g.win[m] = g.win[d];
        g.step[m] = g.step[d];
        g.dil[m] = g.win[d] == 1 ? 1 : g.dil[d];
        g.pad[m] = g.pad[d];
        m++;
    }
    g.rank = m;
}

// The [B, H, W, C] form of g, when it has one (false otherwise): at most
// two window axes, between an optional batch and optional channels
// (identity axes, merged into one each by simplify).
bool as_pool2(const WinAxes &g, Pool2 &p) {
    int lo = 0, hi = g.rank; // the window axes: [lo, hi)
    if (hi - lo > 2 && identity_axis(g, lo)) lo++;
    if (hi - lo > 2 && identity_axis(g, hi - 1)) hi--;
    if (hi - lo > 2) return false;
    p.B = lo > 0 ? g.in[0] : 1;
    p.sb = lo > 0 ? g.ist[0] : 0;
    p.C = hi < g.rank ? g.in[hi] : 1;
    p.sc = hi < g.rank ? g.ist[hi] : 0;
    // a missing axis is one element: out 1, in 1, stride 0, window 1, step 1, no padding
    const int h = hi - 2, w = hi - 1;
    bool hv = h >= lo, wv = w >= lo;
    p.OH = hv ? g.out[h] : 1, p.H = hv ? g.in[h] : 1, p.sh = hv ? g.ist[h] : 0, p.kh = hv ? g.win[h] : 1;
    p.th = hv ? g.step[h] : 1, p.ph = hv ? g.pad[h] : 0, p.dh = hv ? g.dil[h] : 1;
    p.OW = wv ? g.out[w] : 1, p.W = wv ? g.in[w] : 1, p.sw = wv ? g.ist[w] : 0, p.kw = wv ? g.win[w] : 1;
    p.tw = wv ? g.step[w] : 1, p.pw = wv ? g.pad[w] : 0, p.dw = wv ? g.dil[w] : 1;
    return p.OH * p.OW * p.C <= INT32_MAX;
}

emily_status cuda_window_reduce(emily_window_op op, emily_tensor *dst, const emily_tensor *src, const int64_t *window,
                                const int64_t *strides, const int64_t *dilations, const int64_t *pad_lo) {
    static const char *names[] = {"window_sum", "window_product", "window_max", "window_min"};
    if ((unsigned)op > (unsigned)EMILY_WINDOW_MIN)
        return emily_error(EMILY_ERR_ARGUMENT, "cuda: window_reduce: unknown op %d", (int)op);
    const char *name = names[op];
    emily_dtype dt = src->dtype;
    if (!emily_dtype_valid(dt) || dst->dtype != dt || dst->rank != src->rank || !emily_tensor_is_contiguous(dst))
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: expects a contiguous output of the input's type and rank",
                           name);
    if (op >= EMILY_WINDOW_MAX && emily_dtype_is_complex(dt))
        return emily_error(EMILY_ERR_TYPE, "cuda: %s: complex tensors (%s) are not supported", name,
                           emily_dtype_name(dt));
    if (dst->size == 0) return EMILY_OK;
    WinAxes g;
    emily_status s = win_axes(name, g, src, dst->shape, window, strides, dilations, pad_lo);
    if (s) return s;
    simplify(g);
    emily_cuda_ctx ctx;
    if ((s = begin_dst_src(name, dst, src, &ctx))) return s;
    size_t es = emily_dtype_size(dt);
    // an empty input: every window lies in the padding, nothing is read
    const char *sp = src->size ? base_of(src) + (size_t)src->offset * es : NULL;
    char *dp = base_of(dst) + (size_t)dst->offset * es;
    Pool2 p;
    bool pool = as_pool2(g, p);
    return with_dtype(dt, name, [&]<emily_dtype D>() -> emily_status {
        typedef storage_t<D> S;
        auto launch = [&]<int OP>() -> emily_status {
            if constexpr (is_complex(D) && OP >= EMILY_WINDOW_MAX) {
                return EMILY_OK; // refused above
            } else {
                if (pool) {
                    int64_t gx = (p.OH * p.OW * p.C + BLOCK - 1) / BLOCK;
                    dim3 grid((unsigned)(gx < INT32_MAX ? gx : INT32_MAX), (unsigned)(p.B < 65535 ? p.B : 65535));
                    pool2_kernel<D, OP><<<grid, BLOCK, 0, ctx.stream>>>(p, (const S *)sp, (S *)dp);
                } else if (g.rank <= WIN_SMALL) {
                    win_kernel<D, OP, WIN_SMALL><<<grid_for(ctx.device, dst->size), BLOCK, 0, ctx.stream>>>(
                        g, dst->size, (const S *)sp, (S *)dp);
                } else {
                    win_kernel<D, OP, WIN_CAP><<<grid_for(ctx.device, dst->size), BLOCK, 0, ctx.stream>>>(
                        g, dst->size, (const S *)sp, (S *)dp);
                }
                return emi_cuda_launched(&ctx);
            }
        };
        switch (op) {
        case EMILY_WINDOW_SUM: return launch.template operator()<EMILY_WINDOW_SUM>();
        case EMILY_WINDOW_PRODUCT: return launch.template operator()<EMILY_WINDOW_PRODUCT>();
        case EMILY_WINDOW_MAX: return launch.template operator()<EMILY_WINDOW_MAX>();
        default: return launch.template operator()<EMILY_WINDOW_MIN>();
        }
    });
}

} // namespace

extern "C" const struct emily_window_kernels emi_cuda_window_kernels = {cuda_window_reduce, window_scatter};
