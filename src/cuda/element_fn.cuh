// Element functions (device code only; common.cuh's maps and the fused
// kernels of cuda/fused.c use them): a struct with member types S (input
// storage) and D (output storage) and `static __device__ D apply(S)` (one
// input) or `static __device__ D apply(S, S)` (two inputs).
// EMILY_CUDA_FN1/FN2 define one from an expression of `v` (or `a`, `b`).
#ifndef EMILY_CUDA_ELEMENT_FN_CUH
#define EMILY_CUDA_ELEMENT_FN_CUH

#define EMILY_CUDA_FN1(NAME, ST, DT, EXPR)                                  \
    struct NAME {                                                           \
        typedef ST S;                                                       \
        typedef DT D;                                                       \
        static __device__ __forceinline__ DT apply(ST v) { return (EXPR); } \
    };
#define EMILY_CUDA_FN2(NAME, ST, DT, EXPR)                                        \
    struct NAME {                                                                 \
        typedef ST S;                                                             \
        typedef DT D;                                                             \
        static __device__ __forceinline__ DT apply(ST a, ST b) { return (EXPR); } \
    };

#endif
