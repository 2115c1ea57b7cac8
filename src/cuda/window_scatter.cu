// window_scatter_max/min on CUDA, deterministic and equal to the CPU engine
// (src/cpu/window.c, cpu_window_scatter) bit for bit, without atomics:
//
//  1. select_kernel, a thread per window position w (row-major over
//     source's shape): scans its window of the input padded with init in
//     row-major order, taking an element whenever its key is >= (max) or
//     <= (min) the one taken so far (so the last of equal keys wins, a NaN
//     only as the first element), with the CPU's keys (floats compared as
//     f32; integers exactly, by the input's signedness; the padding's key
//     is init written into the input's type). sel[w] is the selected
//     element's row-major index in the input, or -1 when it lies in the
//     padding (the CPU drops it).
//  2. gather_kernel, a thread per output element o: visits the window
//     positions whose windows cover o, in increasing w (the order in which
//     the CPU adds them, row-major over source's shape: per axis, the
//     positions i with i * stride - pad <= x <= i * stride - pad + window - 1),
//     and adds source[w] for each w with sel[w] == o with the CPU's
//     arithmetic: float outputs accumulate in f32, each step
//     (float)(value + (double)acc) from init; integer outputs wrap in 64 bits.
//     Untouched elements get init.
// Element types are read at run time (any real types for input, source,
// init and output), as the CPU's element_access.h reads them.
#include "cuda/window.cuh"

using namespace emily_cuda;

namespace {

struct ScatterTypes {
    int tt, st, it, ot;    // input, source, init, output dtypes
    int64_t tes, ses, oes; // their element sizes (init: one element)
    bool fkeys, ukeys;     // float keys; else unsigned integer keys?
    bool tfloat, ofloat, sfloat, ifloat;
};

// A selection key: floats as f32 values, integers as 64-bit patterns.
struct Key {
    float f;
    uint64_t i;
};

__device__ __forceinline__ Key key_of(const ScatterTypes &t, const char *e) {
    Key k = {0.0f, 0};
    if (t.fkeys) k.f = (float)rt_load_f(t.tt, e);
    else k.i = rt_load_int(t.tt, e);
    return k;
}

// The padding's key: init written into the input's type and read back (a
// float or integer input), or init itself as an f32 (an integer input
// padded with a float init: float keys).
__device__ __forceinline__ Key pad_key(const ScatterTypes &t, const char *init) {
    Key k = {0.0f, 0};
    alignas(16) char tmp[16];
    if (t.tfloat) {
        emily_sc_store_complex(t.tt, rt_load_f(t.it, init), 0.0, tmp);
        k.f = (float)rt_load_f(t.tt, tmp);
    } else if (t.ifloat) {
        k.f = (float)rt_load_f(t.it, init);
    } else {
        emily_sc_store_int(t.tt, rt_load_int(t.it, init), 0, tmp);
        k.i = rt_load_int(t.tt, tmp);
    }
    return k;
}

template <int CAP>
__global__ void select_kernel(const __grid_constant__ WinAxes g, int64_t npos, const char *__restrict__ src,
                              const char *__restrict__ init, ScatterTypes t, bool is_max, int64_t *__restrict__ sel) {
    int64_t c[CAP], w[CAP];
    const Key pad = pad_key(t, init);
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < npos; p += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = p, off = 0, count = 1;
        bool inside = true;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t q = rem / g.out[d];
            c[d] = (rem - q * g.out[d]) * g.step[d] - g.pad[d];
            rem = q;
            w[d] = 0;
            off += c[d] * g.ist[d];
            count *= g.win[d];
            if (c[d] < 0 || c[d] + g.win[d] - 1 >= g.in[d]) inside = false;
        }
        Key acc = pad;
        int64_t best = 0;
        bool best_in = false;
        for (int64_t k = 0; k < count; k++) {
            bool in = inside;
            if (!in) {
                in = true;
                for (int d = 0; d < g.rank && in; d++) in = c[d] + w[d] >= 0 && c[d] + w[d] < g.in[d];
            }
            Key x = in ? key_of(t, src + off * t.tes) : pad;
            bool take;
            if (k == 0) take = true;
            else if (t.fkeys) take = is_max ? x.f >= acc.f : x.f <= acc.f;
            else if (t.ukeys) take = is_max ? x.i >= acc.i : x.i <= acc.i;
            else take = is_max ? (int64_t)x.i >= (int64_t)acc.i : (int64_t)x.i <= (int64_t)acc.i;
            if (take) {
                acc = x;
                best = k;
                best_in = in;
            }
            for (int d = g.rank - 1; d >= 0; d--) {
                if (++w[d] < g.win[d]) {
                    off += g.ist[d];
                    break;
                }
                off -= (g.win[d] - 1) * g.ist[d];
                w[d] = 0;
            }
        }
        int64_t flat = -1;
        if (best_in) {
            // the selected element's position along each axis (row-major k)
            // gives its row-major index in the input
            for (int d = g.rank - 1; d >= 0; d--) {
                int64_t q = best / g.win[d];
                w[d] = best - q * g.win[d];
                best = q;
            }
            flat = 0;
            for (int d = 0; d < g.rank; d++) flat = flat * g.in[d] + c[d] + w[d];
        }
        sel[p] = flat;
    }
}

// g.aux: source's strides; g.aux2: the row-major strides of source's shape.
template <int CAP>
__global__ void gather_kernel(const __grid_constant__ WinAxes g, int64_t total, const int64_t *__restrict__ sel,
                              const char *__restrict__ source, const char *__restrict__ init, ScatterTypes t,
                              char *__restrict__ dst) {
    int64_t lo[CAP], hi[CAP], i[CAP];
    const double init_d = t.ifloat ? (double)(float)rt_load_f(t.it, init) : rt_load_f(t.it, init);
    const uint64_t init_i = rt_load_int(t.it, init);
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < total; o += (int64_t)gridDim.x * blockDim.x) {
        // the window positions covering o, per axis
        int64_t rem = o, wflat = 0, soff = 0;
        bool any = true;
        for (int d = g.rank - 1; d >= 0; d--) {
            int64_t q = rem / g.in[d], x = rem - q * g.in[d];
            rem = q;
            int64_t a = ceil_div(x + g.pad[d] - g.win[d] + 1, g.step[d]), b = floor_div(x + g.pad[d], g.step[d]);
            lo[d] = a > 0 ? a : 0;
            hi[d] = b < g.out[d] - 1 ? b : g.out[d] - 1;
            if (lo[d] > hi[d]) any = false;
            i[d] = lo[d];
            wflat += lo[d] * g.aux2[d];
            soff += lo[d] * g.aux[d];
        }
        bool touched = false;
        float accf = 0.0f;
        uint64_t acci = 0;
        while (any) {
            if (sel[wflat] == o) {
                const char *v = source + soff * t.ses;
                if (t.ofloat) {
                    double vd = t.sfloat ? (double)(float)rt_load_f(t.st, v) : rt_load_f(t.st, v);
                    accf = (float)(vd + (touched ? (double)accf : init_d));
                } else {
                    acci = (touched ? acci : init_i) + rt_load_int(t.st, v);
                }
                touched = true;
            }
            int d = g.rank - 1;
            for (; d >= 0; d--) {
                if (++i[d] <= hi[d]) {
                    wflat += g.aux2[d];
                    soff += g.aux[d];
                    break;
                }
                wflat -= (hi[d] - lo[d]) * g.aux2[d];
                soff -= (hi[d] - lo[d]) * g.aux[d];
                i[d] = lo[d];
            }
            if (d < 0) break;
        }
        char *out = dst + o * t.oes;
        if (t.ofloat) emily_sc_store_complex(t.ot, touched ? (double)accf : rt_load_f(t.it, init), 0.0, out);
        else emily_sc_store_int(t.ot, touched ? acci : init_i, 0, out);
    }
}

} // namespace

namespace emily_cuda {

emily_status window_scatter(bool is_max, emily_tensor *dst, const emily_tensor *src, const emily_tensor *source,
                            const emily_tensor *init, const int64_t *window, const int64_t *strides,
                            const int64_t *pad_lo) {
    const char *name = is_max ? "window_scatter_max" : "window_scatter_min";
    const emily_tensor *all[4] = {dst, src, source, init};
    for (int k = 0; k < 4; k++)
        if (!emily_dtype_valid(all[k]->dtype) || emily_dtype_is_complex(all[k]->dtype))
            return emily_error(EMILY_ERR_TYPE, "cuda: %s: complex or invalid types are not supported", name);
    bool shapes = init->size == 1 && source->rank == src->rank && dst->rank == src->rank &&
                  emily_tensor_is_contiguous(dst);
    for (int d = 0; shapes && d < src->rank; d++) shapes = dst->shape[d] == src->shape[d];
    if (!shapes)
        return emily_error(EMILY_ERR_INTERNAL, "cuda: %s: output, input, source or init shapes do not fit", name);
    if (dst->size == 0 || source->size == 0) return EMILY_OK;
    WinAxes g;
    emily_status s = win_axes(name, g, src, source->shape, window, strides, NULL, pad_lo);
    if (s) return s;
    int64_t rm = 1;
    for (int d = src->rank - 1; d >= 0; d--) {
        g.aux[d] = source->strides[d];
        g.aux2[d] = rm;
        rm *= source->shape[d];
    }
    ScatterTypes t;
    t.tt = (int)src->dtype;
    t.st = (int)source->dtype;
    t.it = (int)init->dtype;
    t.ot = (int)dst->dtype;
    t.tes = (int64_t)emily_dtype_size(src->dtype);
    t.ses = (int64_t)emily_dtype_size(source->dtype);
    t.oes = (int64_t)emily_dtype_size(dst->dtype);
    t.tfloat = emily_dtype_is_float(src->dtype);
    t.ifloat = emily_dtype_is_float(init->dtype);
    t.sfloat = emily_dtype_is_float(source->dtype);
    t.ofloat = emily_dtype_is_float(dst->dtype);
    t.fkeys = t.tfloat || t.ifloat;
    t.ukeys = !t.fkeys && is_unsigned(src->dtype);
    emily_cuda_ctx ctx;
    if ((s = emi_cuda_begin(name, dev_of(dst), 4, all, &ctx))) return s;
    const char *sp = src->size ? base_of(src) + (size_t)src->offset * t.tes : NULL;
    const char *vp = base_of(source) + (size_t)source->offset * t.ses;
    const char *ip = base_of(init) + (size_t)init->offset * emily_dtype_size(init->dtype);
    char *dp = base_of(dst) + (size_t)dst->offset * t.oes;
    int64_t *sel = NULL;
    if ((s = emi_cuda_scratch(&ctx, (size_t)source->size * sizeof(int64_t), (void **)&sel))) return s;
    auto launch = [&]<int CAP>() -> emily_status {
        select_kernel<CAP>
            <<<grid_for(ctx.device, source->size), BLOCK, 0, ctx.stream>>>(g, source->size, sp, ip, t, is_max, sel);
        emily_status e = emi_cuda_launched(&ctx);
        if (e) return e;
        gather_kernel<CAP><<<grid_for(ctx.device, dst->size), BLOCK, 0, ctx.stream>>>(g, dst->size, sel, vp, ip, t, dp);
        return emi_cuda_launched(&ctx);
    };
    s = g.rank <= WIN_SMALL ? launch.template operator()<WIN_SMALL>() : launch.template operator()<WIN_CAP>();
    emi_cuda_scratch_free(&ctx, sel);
    return s;
}

} // namespace emily_cuda
