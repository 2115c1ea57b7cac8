/* Fault injection for the CUDA engine's tests (tests/unit/test_cuda_fault.c):
 * makes one real failure happen at the next site of a kind, so the tests
 * can check that it becomes an Emily error naming the op and that the
 * device keeps working (docs/reliability.md, "GPU faults").
 *
 * Nothing is armed in normal runs; a site costs one relaxed atomic load.
 * Plain C, included from C and from nvcc-compiled files. */
#ifndef EMILY_CUDA_FAULT_H
#define EMILY_CUDA_FAULT_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum emi_cuda_fault {
    EMI_CUDA_FAULT_NONE,
    /* emi_cuda_launched: a real launch with an impossible block size
     * (see fault.cu for the error CUDA gives), which clears at the check */
    EMI_CUDA_FAULT_LAUNCH,
    /* the caching allocator's cudaMalloc asks for 2^50 bytes: a real
     * device out-of-memory (after the allocator's retry without cache) */
    EMI_CUDA_FAULT_ALLOC,
    /* a cuBLAS or cuSOLVER call that succeeded reports
     * EXECUTION_FAILED: the error path of a failed library call */
    EMI_CUDA_FAULT_LIBRARY,
    /* emi_cuda_launched: a kernel writes through a wild pointer, a real
     * sticky fault (cudaErrorIllegalAddress) that ends the context */
    EMI_CUDA_FAULT_ILLEGAL_ADDRESS
} emi_cuda_fault;

/* Arms one fault: the (skip + 1)-th site of `kind` reached fails, once.
 * EMI_CUDA_FAULT_NONE disarms. */
void emi_cuda_fault_arm(emi_cuda_fault kind, int skip);
/* Whether the fault armed for `kind` happens at this site (then it is
 * disarmed). */
bool emi_cuda_fault_fire(emi_cuda_fault kind);
/* Whether a fault is still armed (its site was not reached). */
bool emi_cuda_fault_pending(void);
/* At a launch check: queues the launch fault armed for this site (LAUNCH
 * or ILLEGAL_ADDRESS) on `stream` (a cudaStream_t), if any. */
void emi_cuda_fault_at_launch(void *stream);

#ifdef __cplusplus
}
#endif
#endif
