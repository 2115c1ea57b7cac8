// Standalone check of the flash-attention kernel (src/cuda/attention_flash.cuh)
// without the engine: a minute to compile instead of the library's build.
// Random f16/bf16 inputs, the kernel against a double-precision reference
// (tolerance: the probabilities' and the output's rounding to T), and the
// time of bf16 B8 H16 S4096 D128 causal and full in TFLOP/s. Not part of
// the Makefile's build:
//
//   nvcc -std=c++20 -O3 --fmad=false -Iinclude -Isrc \
//        -gencode arch=compute_90,code=sm_90 bench/gpu/sdpa_flash_check.cu -o /tmp/sdpa_flash_check
//   /tmp/sdpa_flash_check        # prints ok/FAIL per case, TIMING lines, ALL OK
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>
#include "cuda/attention_flash.cuh"
using namespace emily_attention;

static uint64_t st = 88172645463325252ull;
static double urand() { st ^= st << 13; st ^= st >> 7; st ^= st << 17; return (double)(st >> 11) / 9007199254740992.0; }
static uint16_t to_t(bool bf, double x) { return bf ? emily_sc_f32_to_bf16((float)x) : emily_sc_f64_to_f16(x); }
static double from_t(bool bf, uint16_t h) { return bf ? emily_sc_bf16_to_f32(h) : emily_sc_f16_to_f32(h); }
#define CK(x) do { cudaError_t e = (x); if (e) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1); } } while (0)

template <bool BF, int D, bool CAUSAL, int MASK>
static void launch(const FlashArgs &fa, int64_t bh, int64_t sq) {
    constexpr int NW = 8;
    size_t smem = flash_smem_bytes<D, NW>();
    auto k = flash_kernel<BF, D, NW, CAUSAL, MASK>;
    CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    dim3 grid((unsigned)bh, (unsigned)((sq + 127) / 128));
    k<<<grid, NW * 32, smem>>>(fa);
}
template <bool BF, int D> static void go(const FlashArgs &fa, bool causal, int mask, int64_t bh, int64_t sq) {
    if (causal) { if (mask == 1) launch<BF, D, true, 1>(fa, bh, sq); else if (mask == 2) launch<BF, D, true, 2>(fa, bh, sq); else launch<BF, D, true, 0>(fa, bh, sq); }
    else { if (mask == 1) launch<BF, D, false, 1>(fa, bh, sq); else if (mask == 2) launch<BF, D, false, 2>(fa, bh, sq); else launch<BF, D, false, 0>(fa, bh, sq); }
}
template <bool BF> static void go_d(int D, const FlashArgs &fa, bool causal, int mask, int64_t bh, int64_t sq) {
    if (D == 64) go<BF, 64>(fa, causal, mask, bh, sq); else if (D == 80) go<BF, 80>(fa, causal, mask, bh, sq);
    else if (D == 96) go<BF, 96>(fa, causal, mask, bh, sq); else go<BF, 128>(fa, causal, mask, bh, sq);
}

static int failures = 0;
static void check(bool bf, int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq, int64_t Skv, int D, bool causal, int mask, bool sinks) {
    size_t nq = B * Hq * Sq * D, nk = B * Hkv * Skv * D;
    std::vector<uint16_t> q(nq), k(nk), v(nk), o(nq);
    for (auto &x : q) x = to_t(bf, urand() * 2 - 1);
    for (auto &x : k) x = to_t(bf, urand() * 2 - 1);
    for (auto &x : v) x = to_t(bf, urand() * 2 - 1);
    std::vector<float> madd; std::vector<uint8_t> mb; std::vector<float> sk(Hq);
    // mask {B, 1, Sq, Skv}
    size_t nm = B * Sq * Skv;
    if (mask == 1) { madd.resize(nm); for (auto &x : madd) x = (float)(urand() * 2 - 2); }
    if (mask == 2) { mb.resize(nm); for (auto &x : mb) x = urand() < 0.75; }
    for (auto &x : sk) x = (float)(urand() * 3 - 1);
    uint16_t *dq, *dk, *dv, *dout; void *dm = nullptr; float *ds = nullptr;
    CK(cudaMalloc(&dq, nq * 2)); CK(cudaMalloc(&dk, nk * 2)); CK(cudaMalloc(&dv, nk * 2)); CK(cudaMalloc(&dout, nq * 2));
    CK(cudaMemcpy(dq, q.data(), nq * 2, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dk, k.data(), nk * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dv, v.data(), nk * 2, cudaMemcpyHostToDevice));
    if (mask == 1) { CK(cudaMalloc(&dm, nm * 4)); CK(cudaMemcpy(dm, madd.data(), nm * 4, cudaMemcpyHostToDevice)); }
    if (mask == 2) { CK(cudaMalloc(&dm, nm)); CK(cudaMemcpy(dm, mb.data(), nm, cudaMemcpyHostToDevice)); }
    if (sinks) { CK(cudaMalloc(&ds, Hq * 4)); CK(cudaMemcpy(ds, sk.data(), Hq * 4, cudaMemcpyHostToDevice)); }
    FlashArgs fa{dq, dk, dv, dout, Hq, Hkv, Sq, Skv, (float)(1.0 / sqrt((double)D)), dm, {Sq * Skv, 0, Skv, 1}, sinks ? ds : nullptr};
    if (bf) go_d<true>(D, fa, causal, mask, B * Hq, Sq); else go_d<false>(D, fa, causal, mask, B * Hq, Sq);
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(o.data(), dout, nq * 2, cudaMemcpyDeviceToHost));
    double worst = 0; int64_t bad = 0;
    std::vector<double> p(Skv);
    for (int64_t b = 0; b < B; b++) for (int64_t h = 0; h < Hq; h++) for (int64_t i = 0; i < Sq; i++) {
        int64_t hk = h / (Hq / Hkv);
        double m = sinks ? sk[h] : -INFINITY; bool any = false;
        for (int64_t j = 0; j < Skv; j++) {
            double s = 0; for (int d = 0; d < D; d++) s += from_t(bf, q[((b*Hq+h)*Sq+i)*D+d]) * from_t(bf, k[((b*Hkv+hk)*Skv+j)*D+d]);
            s *= 1.0 / sqrt((double)D);
            bool keep = !causal || j <= i + Skv - Sq;
            size_t mo = (b * Sq + i) * Skv + j;
            if (mask == 1) s += madd[mo];
            if (mask == 2 && !mb[mo]) keep = false;
            p[j] = keep ? s : -INFINITY; if (keep) { any = true; m = fmax(m, s); }
        }
        double z = sinks ? exp(sk[h] - m) : 0;
        for (int64_t j = 0; j < Skv; j++) { p[j] = exp(p[j] - m); z += p[j]; }
        for (int d = 0; d < D; d++) {
            double acc = 0, mag = 0;
            if (any) for (int64_t j = 0; j < Skv; j++) { double vv = from_t(bf, v[((b*Hkv+hk)*Skv+j)*D+d]); acc += p[j] / z * vv; mag += p[j] / z * fabs(vv); }
            double got = from_t(bf, o[((b*Hq+h)*Sq+i)*D+d]);
            // bf16/f16 rounding of p (2^-8 / 2^-11 relative) and of the output
            double tol = (bf ? 0x1p-7 : 0x1p-10) * (mag + fabs(acc)) + 1e-6;
            double err = fabs(got - acc);
            if (!(err <= tol)) { if (bad++ < 4) printf("   b%ld h%ld i%ld d%d: got %g want %g (tol %g)\n", (long)b, (long)h, (long)i, d, got, acc, tol); }
            if (err / (mag + 1e-30) > worst) worst = err / (mag + 1e-30);
        }
    }
    printf("%s %s B%ld Hq%ld Hkv%ld Sq%ld Skv%ld D%d%s%s%s: worst err/sum|pv| %.3g, %ld bad\n", bad ? "FAIL" : "ok  ", bf ? "bf16" : "f16 ",
           (long)B, (long)Hq, (long)Hkv, (long)Sq, (long)Skv, D, causal ? " causal" : "", mask == 1 ? " additive" : mask == 2 ? " boolean" : "", sinks ? " sinks" : "", worst, (long)bad);
    if (bad) failures++;
    cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dout); cudaFree(dm); cudaFree(ds);
}

static void timing(int64_t B, int64_t H, int64_t S, int D, bool causal) {
    size_t n = B * H * S * D;
    uint16_t *dq, *dk, *dv, *dout;
    CK(cudaMalloc(&dq, n * 2)); CK(cudaMalloc(&dk, n * 2)); CK(cudaMalloc(&dv, n * 2)); CK(cudaMalloc(&dout, n * 2));
    std::vector<uint16_t> h(n); for (auto &x : h) x = to_t(true, urand() * 2 - 1);
    CK(cudaMemcpy(dq, h.data(), n * 2, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dk, h.data(), n * 2, cudaMemcpyHostToDevice)); CK(cudaMemcpy(dv, h.data(), n * 2, cudaMemcpyHostToDevice));
    FlashArgs fa{dq, dk, dv, dout, H, H, S, S, (float)(1.0 / sqrt((double)D)), nullptr, {0, 0, 0, 0}, nullptr};
    for (int i = 0; i < 3; i++) go_d<true>(D, fa, causal, 0, B * H, S);
    CK(cudaDeviceSynchronize());
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    int reps = 20; cudaEventRecord(a);
    for (int i = 0; i < reps; i++) go_d<true>(D, fa, causal, 0, B * H, S);
    cudaEventRecord(b); CK(cudaEventSynchronize(b));
    float ms; cudaEventElapsedTime(&ms, a, b); ms /= reps;
    double flops = 4.0 * B * H * S * S * D * (causal ? 0.5 : 1.0);
    printf("timing bf16 B%ld H%ld S%ld D%d%s: %.3f ms, %.1f TFLOP/s\n", (long)B, (long)H, (long)S, D, causal ? " causal" : "", ms, flops / ms / 1e9);
    cudaFree(dq); cudaFree(dk); cudaFree(dv); cudaFree(dout);
}

int main() {
    for (int bf = 1; bf >= 0; bf--) {
        check(bf, 1, 2, 2, 7, 7, 64, false, 0, false);
        check(bf, 2, 4, 2, 129, 129, 128, true, 0, false);
        check(bf, 1, 2, 1, 1, 200, 128, true, 0, false);
        check(bf, 1, 2, 2, 200, 70, 80, true, 0, false);
        check(bf, 1, 3, 3, 65, 300, 96, false, 1, false);
        check(bf, 2, 2, 2, 130, 130, 64, true, 2, true);
        check(bf, 1, 8, 2, 257, 257, 128, false, 2, false);
        check(bf, 1, 4, 4, 300, 300, 128, true, 0, true);
    }
    timing(8, 16, 4096, 128, true);
    timing(8, 16, 4096, 128, false);
    timing(4, 16, 2048, 64, true);
    printf(failures ? "FAILED %d\n" : "ALL OK\n", failures);
    return failures != 0;
}
