// The host-side floor under chain.c's number: what the CUDA runtime and
// driver alone cost per kernel launch on this machine, with no engine
// around them. Times N back-to-back launches of an empty kernel on one
// non-blocking stream (host time to enqueue them, as chain.c measures) in
// three ways: the <<<>>> launch with a 48-byte and with a 288-byte
// parameter block (the sizes of the engine's flat and strided binary
// kernels), and cuLaunchKernel through the driver API. Prints one JSON
// object per case.
//
//   launch_floor [--n 10000] [--reps 5]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>

struct Small { long long a[6]; };  // 48 bytes
struct Large { long long a[36]; }; // 288 bytes

__global__ void empty_small(Small) {}
__global__ void empty_large(Large) {}

static double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static int check(cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 0;
    std::fprintf(stderr, "launch_floor: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(int argc, char **argv) {
    int n = 10000, reps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--n")) n = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    }
    if (n < 1 || reps < 1 || reps > 100) return 2;
    cudaStream_t st;
    if (check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream")) return 1;
    CUfunction fn;
    if (check(cudaGetFuncBySymbol((cudaFunction_t *)&fn, (const void *)empty_small), "function")) return 1;
    Small sp = {};
    Large lp = {};
    const char *names[3] = {"launch_runtime_48B", "launch_runtime_288B", "launch_driver_48B"};
    for (int c = 0; c < 3; c++) {
        double t[100];
        for (int r = -1; r < reps; r++) { // r = -1: warm-up
            if (check(cudaStreamSynchronize(st), "sync")) return 1;
            double t0 = now_us();
            for (int i = 0; i < n; i++) {
                if (c == 0) empty_small<<<1, 32, 0, st>>>(sp);
                else if (c == 1) empty_large<<<1, 32, 0, st>>>(lp);
                else {
                    void *args[1] = {&sp};
                    if (cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, (CUstream)st, args, nullptr) != CUDA_SUCCESS) {
                        std::fprintf(stderr, "launch_floor: cuLaunchKernel failed\n");
                        return 1;
                    }
                }
            }
            double t1 = now_us();
            if (check(cudaGetLastError(), "launch")) return 1;
            if (r >= 0) t[r] = (t1 - t0) / n;
        }
        std::sort(t, t + reps);
        std::printf("{\"case\": \"%s\", \"n\": %d, \"host_us_per_op\": %.3f}\n", names[c], n, t[reps / 2]);
    }
    return check(cudaStreamSynchronize(st), "sync");
}
