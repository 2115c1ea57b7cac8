// The exact FFT on CUDA (precision HIGHEST): Nx.BinaryBackend's transform
// with the CPU engine's bits (src/cpu/fft.c describes the algorithm).
//
// Same operations, same order, same twiddles: the twiddle tables are the
// CPU engine's own, built on the host with the host's cos/sin
// (emi_fft_tables_get) and uploaded for the call (the device's cos/sin
// round differently); every complex product and sum is written as the
// CPU writes it, and the library is compiled with --fmad=false, so no
// multiply-add is fused. What runs in parallel is only what the CPU also
// computes independently: the points of a leaf DFT, the butterflies of
// one radix-2 stage, the lines. One launch per stage; lines go in chunks
// whose double-precision scratch stays under CHUNK_BYTES.
//
// NaN payloads and signs are the one thing that can differ: the GPU's
// arithmetic gives its canonical NaN, x86 keeps an operand's. Every other
// bit, infinities and signed zeros included, is the CPU's.
#include "cuda/fft.cuh"
#include "core/fft_butterfly.h"

using namespace emily_cuda;

namespace {

constexpr size_t CHUNK_BYTES = (size_t)256 << 20;

// The s-bit reversal of x (s <= 62).
__device__ __forceinline__ int64_t bit_reverse(int64_t x, int s) {
    return s == 0 ? 0 : (int64_t)(__brevll((unsigned long long)x) >> (64 - s));
}

// How a line's input points are read (see input_at).
struct LineIn {
    const char *src;     // src's buffer (unused when take is 0)
    const int64_t *soff; // line offsets in src
    int64_t s_ax, take, n, h;
    bool hermitian, inverse;
};

// Point j (natural order) of line `line`'s input, as the CPU builds it:
// src[j] for j < take, else 0; INVERSE_REAL: points from h on mirror the
// half spectrum, conj(x[n - j]); the inverses then conjugate.
template <typename S>
__device__ __forceinline__ void input_at(const LineIn &in, int64_t line, int64_t j, double &xr, double &xi) {
    bool mirrored = in.hermitian && j >= in.h;
    int64_t t = mirrored ? in.n - j : j;
    double r = 0, i = 0;
    if (t < in.take) {
        S v = ((const S *)in.src)[in.soff[line] + t * in.s_ax];
        r = (double)FftPoint<S>::re(v);
        i = (double)FftPoint<S>::im(v);
    }
    if (mirrored) i = -i;
    if (in.inverse) i = -i;
    xr = r;
    xi = i;
}

// Lines [r0, r0 + R) into leaf order: slot p = rr q + i of a line holds
// point rev_s(rr) + 2^s i.
template <typename S>
__global__ void gather_leaf(LineIn in, int64_t r0, int64_t R, int64_t len, int64_t q, int s, double *yr, double *yi) {
    for (int64_t x = flat_first(); x < R * len; x += flat_step()) {
        int64_t r = x / len, p = x - r * len, rr = p / q, i = p - rr * q;
        input_at<S>(in, r0 + r, bit_reverse(rr, s) + ((int64_t)1 << s) * i, yr[x], yi[x]);
    }
}

// Direct DFT of each q-point leaf: X_0 the plain sum, X_k the sum of
// x_i exp(i phi_ki) in increasing i, the first term as is.
__global__ void leaf_dft(const double *xr, const double *xi, double *yr, double *yi, int64_t total, int64_t q,
                         const double *lr, const double *li) {
    for (int64_t x = flat_first(); x < total; x += flat_step()) {
        int64_t k = x % q;
        const double *br = xr + (x - k), *bi = xi + (x - k);
        double sr, si;
        if (k == 0) {
            sr = br[0];
            si = bi[0];
            for (int64_t i = 1; i < q; i++) {
                sr = br[i] + sr;
                si = bi[i] + si;
            }
        } else {
            double c = lr[k], s = li[k];
            sr = br[0] * c - bi[0] * s;
            si = bi[0] * c + br[0] * s;
            for (int64_t i = 1; i < q; i++) {
                double cr = lr[i * q + k], ci = li[i * q + k], ar = br[i], ai = bi[i];
                double tr = ar * cr - ai * ci, ti = ai * cr + ar * ci;
                sr = tr + sr;
                si = ti + si;
            }
        }
        yr[x] = sr;
        yi[x] = si;
    }
}

// One radix-2 stage over groups of 2h points (lines of len points):
// t = w_k * odd; even + t; even - t.
__global__ void stage(double *re, double *im, int64_t total_half, int64_t len, int64_t h, const double *wr,
                      const double *wi) {
    int64_t half = len / 2;
    for (int64_t x = flat_first(); x < total_half; x += flat_step()) {
        int64_t r = x / half, u = x - r * half, g = u / h, k = u - g * h;
        int64_t e = r * len + g * 2 * h + k, o = e + h;
        emi_fft_butterfly(wr[k], wi[k], re + e, im + e, re + o, im + o);
    }
}

// Bluestein, step 1: a = w . x zero-padded to m points, in leaf order.
template <typename S>
__global__ void chirp(LineIn in, int64_t r0, int64_t R, int64_t m, int sm, const double *w_re, const double *w_im,
                      double *ar, double *ai) {
    for (int64_t x = flat_first(); x < R * m; x += flat_step()) {
        int64_t r = x / m, j = bit_reverse(x - r * m, sm);
        double tr = 0, ti = 0;
        if (j < in.n) {
            double xr, xi;
            input_at<S>(in, r0 + r, j, xr, xi);
            double wr = w_re[j], wi = w_im[j];
            tr = wr * xr - wi * xi;
            ti = wi * xr + wr * xi;
        }
        ar[x] = tr;
        ai[x] = ti;
    }
}

// Bluestein, step 2: c = conj(A . B) (A transformed, natural order), in
// leaf order for the second transform.
__global__ void filter(const double *ar, const double *ai, const double *b_re, const double *b_im, double *cr,
                       double *ci, int64_t total, int64_t m, int sm) {
    for (int64_t x = flat_first(); x < total; x += flat_step()) {
        int64_t r = x / m, j = bit_reverse(x - r * m, sm);
        double xr = ar[r * m + j], xi = ai[r * m + j], br = b_re[j], bi = b_im[j];
        cr[x] = xr * br - xi * bi;
        ci[x] = -(xi * br + xr * bi);
    }
}

template <typename D> __device__ __forceinline__ void put(D *p, double re, double) { *p = (D)re; }
__device__ __forceinline__ void put(emily_c64 *p, double re, double im) {
    p->re = (float)re;
    p->im = (float)im;
}
__device__ __forceinline__ void put(emily_c128 *p, double re, double im) {
    p->re = re;
    p->im = im;
}

__device__ __forceinline__ double clean(double x, double eps) { return fabs(x) <= eps ? 0.0 : x; }

// Where the transformed lines are and how they end.
struct LineOut {
    const double *yr, *yi; // direct: len points a line; Bluestein: c, m points a line
    int64_t len;
    bool bluestein;
    const double *w_re, *w_im; // Bluestein's chirp
    int64_t n, keep, d_ax;
    bool inverse;
    double eps;
};

// The first `keep` points of lines [r0, r0 + R): Bluestein's last step
// (r = conj(c) / m through Complex.divide, times w), the inverse's conj
// and division by n, eps-zeroing, rounding to dst's type.
template <typename D> __global__ void finish(LineOut o, int64_t r0, int64_t R, char *dst, const int64_t *doff) {
    for (int64_t x = flat_first(); x < R * o.keep; x += flat_step()) {
        int64_t r = x / o.keep, k = x - r * o.keep;
        double yr = o.yr[r * o.len + k], yi = o.yi[r * o.len + k];
        if (o.bluestein) {
            double md = (double)o.len, mm = md * md;
            double rr = (yr * md) / mm, ri = (-yi * md) / mm, wr = o.w_re[k], wi = o.w_im[k];
            yr = rr * wr - ri * wi;
            yi = ri * wr + rr * wi;
        }
        if (o.inverse) {
            double nd = (double)o.n, nn = nd * nd;
            yr = (yr * nd) / nn;
            yi = (-yi * nd) / nn;
        }
        put(((D *)dst) + doff[r0 + r] + k * o.d_ax, clean(yr, o.eps), clean(yi, o.eps));
    }
}

struct ExactRun {
    FftJob &job;
    emi_fft_tables t = {};
    void *tables = NULL, *offsets = NULL, *work = NULL;
    // the tables on the device
    const double *tw_re = NULL, *tw_im = NULL, *leaf_re = NULL, *leaf_im = NULL;
    const double *w_re = NULL, *w_im = NULL, *b_re = NULL, *b_im = NULL;

    explicit ExactRun(FftJob &j) : job(j) {}
    ~ExactRun() {
        if (work) emi_cuda_scratch_free(&job.ctx, work);
        if (offsets) emi_cuda_scratch_free(&job.ctx, offsets);
        if (tables) emi_cuda_scratch_free(&job.ctx, tables);
        emi_fft_tables_put(&t);
    }

    unsigned grid(int64_t total) const { return grid_for(job.ctx.device, total); }

    // The CPU's tables, packed into one host block and uploaded at once.
    emily_status upload_tables() {
        emily_status s = emi_fft_tables_get(job.n, &t);
        if (s) return s;
        int64_t ntw = t.len - t.q, nleaf = t.q > 1 ? t.q * t.q : 0, nw = t.bluestein ? t.n : 0,
                nb = t.bluestein ? t.m : 0;
        int64_t total = 2 * (ntw + nleaf + nw + nb);
        size_t bytes = (size_t)(total > 0 ? total : 1) * sizeof(double);
        double *host = (double *)malloc(bytes);
        if (!host) return emily_error(EMILY_ERR_MEMORY, "cuda: fft: out of host memory for the tables");
        struct {
            const double *from;
            int64_t count;
            const double **to;
        } parts[8] = {{t.tw_re, ntw, &tw_re},       {t.tw_im, ntw, &tw_im}, {t.leaf_re, nleaf, &leaf_re},
                      {t.leaf_im, nleaf, &leaf_im}, {t.w_re, nw, &w_re},    {t.w_im, nw, &w_im},
                      {t.b_re, nb, &b_re},          {t.b_im, nb, &b_im}};
        s = emi_cuda_scratch(&job.ctx, bytes, &tables);
        if (!s) {
            int64_t at = 0;
            for (auto &pt : parts) {
                if (pt.count) memcpy(host + at, pt.from, (size_t)pt.count * sizeof(double));
                *pt.to = (const double *)tables + at;
                at += pt.count;
            }
            s = emi_cuda_engine()->upload(job.ctx.device, tables, host,
                                          bytes); // returns once host is read
        }
        free(host);
        return s;
    }

    // The radix-2 stages 1..s of a direct plan over R lines of len points.
    emily_status stages(double *re, double *im, int64_t R) {
        for (int st = 1; st <= t.s; st++) {
            int64_t h = t.q << (st - 1), total_half = R * (t.len / 2);
            int64_t off = t.q * (((int64_t)1 << (st - 1)) - 1);
            stage<<<grid(total_half), BLOCK, 0, job.ctx.stream>>>(re, im, total_half, t.len, h, tw_re + off,
                                                                  tw_im + off);
            emily_status s = emi_cuda_launched(&job.ctx);
            if (s) return s;
        }
        return EMILY_OK;
    }

    template <typename S, typename D> emily_status run() {
        emily_status s = upload_tables();
        if (!s) s = emi_cuda_scratch(&job.ctx, 2 * (size_t)job.lines * sizeof(int64_t), &offsets);
        int64_t *doff = (int64_t *)offsets, *soff = doff + job.lines;
        if (!s) s = job.line_offsets(doff, soff);
        if (s) return s;
        // per line, len points (m for Bluestein) in y and, with leaves or
        // for Bluestein, in z: the gathered line and the leaf DFTs' output,
        // or a and c
        int parts = t.bluestein || t.q > 1 ? 4 : 2;
        int64_t chunk = (int64_t)(CHUNK_BYTES / ((size_t)(parts * t.len) * sizeof(double)));
        if (chunk < 1) chunk = 1;
        if (chunk > job.lines) chunk = job.lines;
        int64_t seg = chunk * t.len;
        if ((s = emi_cuda_scratch(&job.ctx, (size_t)(parts * seg) * sizeof(double), &work))) return s;
        double *yr = (double *)work, *yi = yr + seg, *zr = parts > 2 ? yr + 2 * seg : NULL,
               *zi = parts > 2 ? yr + 3 * seg : NULL;
        bool hermitian = job.mode == EMILY_FFT_INVERSE_REAL, inverse = job.mode != EMILY_FFT_FORWARD;
        LineIn in = {job.src->size ? (const char *)base_of(job.src) : NULL,
                     soff,
                     job.s_ax,
                     job.take,
                     job.n,
                     job.n / 2 + 1,
                     hermitian,
                     inverse};
        for (int64_t r0 = 0; r0 < job.lines && !s; r0 += chunk) {
            int64_t R = job.lines - r0 < chunk ? job.lines - r0 : chunk;
            LineOut o = {yr, yi, t.len, t.bluestein, w_re, w_im, job.n, job.keep, job.d_ax, inverse, job.eps};
            if (t.bluestein) {
                int64_t m = t.m;
                chirp<S><<<grid(R * m), BLOCK, 0, job.ctx.stream>>>(in, r0, R, m, t.s, w_re, w_im, yr, yi);
                if ((s = emi_cuda_launched(&job.ctx)) || (s = stages(yr, yi, R))) break;
                filter<<<grid(R * m), BLOCK, 0, job.ctx.stream>>>(yr, yi, b_re, b_im, zr, zi, R * m, m, t.s);
                if ((s = emi_cuda_launched(&job.ctx)) || (s = stages(zr, zi, R))) break;
                o.yr = zr;
                o.yi = zi;
            } else {
                // with leaves, gather into z and let the leaf DFTs write y
                double *gr = t.q > 1 ? zr : yr, *gi = t.q > 1 ? zi : yi;
                gather_leaf<S><<<grid(R * t.len), BLOCK, 0, job.ctx.stream>>>(in, r0, R, t.len, t.q, t.s, gr, gi);
                if ((s = emi_cuda_launched(&job.ctx))) break;
                if (t.q > 1) {
                    leaf_dft<<<grid(R * t.len), BLOCK, 0, job.ctx.stream>>>(zr, zi, yr, yi, R * t.len, t.q, leaf_re,
                                                                            leaf_im);
                    if ((s = emi_cuda_launched(&job.ctx))) break;
                }
                if ((s = stages(yr, yi, R))) break;
            }
            finish<D><<<grid(R * job.keep), BLOCK, 0, job.ctx.stream>>>(o, r0, R, base_of(job.dst), doff);
            s = emi_cuda_launched(&job.ctx);
        }
        return s;
    }
};

} // namespace

namespace emily_cuda {

emily_status fft_exact(FftJob &job) {
    ExactRun run(job);
    return with_fft_source(job.src->dtype, [&]<typename S>() -> emily_status {
        switch (job.dst->dtype) {
        case EMILY_C64: return run.run<S, emily_c64>();
        case EMILY_C128: return run.run<S, emily_c128>();
        case EMILY_F32: return run.run<S, float>();
        default: return run.run<S, double>();
        }
    });
}

} // namespace emily_cuda
