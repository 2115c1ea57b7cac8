// Fault injection for the CUDA engine's tests (fault.h).
#include <atomic>
#include <cuda_runtime_api.h>
#include "cuda/fault.h"

namespace {

std::atomic<int> armed_kind{EMI_CUDA_FAULT_NONE};
std::atomic<int> armed_skip{0};

__global__ void touch(int *p) {
    if (p) p[threadIdx.x] = 1;
}

} // namespace

extern "C" void emi_cuda_fault_arm(emi_cuda_fault kind, int skip) {
    armed_skip.store(skip < 0 ? 0 : skip, std::memory_order_relaxed);
    armed_kind.store(kind, std::memory_order_release);
}

extern "C" bool emi_cuda_fault_fire(emi_cuda_fault kind) {
    if (armed_kind.load(std::memory_order_relaxed) != kind) return false;
    if (armed_skip.fetch_sub(1, std::memory_order_acq_rel) > 0) return false;
    int want = kind;
    return armed_kind.compare_exchange_strong(want, EMI_CUDA_FAULT_NONE);
}

extern "C" bool emi_cuda_fault_pending(void) {
    return armed_kind.load(std::memory_order_acquire) != EMI_CUDA_FAULT_NONE;
}

// A bad launch: 4096 threads a block is past every device's limit of
// 1024 (CUDA 13 on an H100, driver 580, reports cudaErrorInvalidValue,
// "invalid argument", not cudaErrorInvalidConfiguration). A wild write:
// an address in the first page, which no allocation holds.
extern "C" void emi_cuda_fault_at_launch(void *stream) {
    cudaStream_t st = static_cast<cudaStream_t>(stream);
    if (emi_cuda_fault_fire(EMI_CUDA_FAULT_LAUNCH)) touch<<<1, 4096, 0, st>>>(nullptr);
    if (emi_cuda_fault_fire(EMI_CUDA_FAULT_ILLEGAL_ADDRESS)) touch<<<1, 1, 0, st>>>(reinterpret_cast<int *>(64));
}
