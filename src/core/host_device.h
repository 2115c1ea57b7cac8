/* Marks scalar helpers that both the CPU (C11) and CUDA kernels (nvcc)
 * compile, so Nx's scalar semantics are written once. Headers using it
 * must stay valid C11 and valid CUDA C++: static inline functions on
 * plain types only. */
#ifndef EMILY_HOST_DEVICE_H
#define EMILY_HOST_DEVICE_H
#ifdef __CUDACC__
#define EMILY_HD static inline __host__ __device__
#else
#define EMILY_HD static inline
#endif
#endif
