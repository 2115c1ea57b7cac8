/* The CUDA libraries' names of emily's float types, one row per type of
 * the dtype list's floats (core/dtype_list.h), by its suffix:
 *
 *   EMI_CUDA_R(sfx)      cuBLAS / cuBLASLt's cudaDataType_t (library_types.h);
 *   EMI_CUDNN_DATA(sfx)  cuDNN's cudnnDataType_t (cudnn.h, which the file
 *                        that expands it includes).
 *
 * emi_cuda_data_type maps a dtype value to the first. Valid C11 (the
 * engine's host files) and CUDA C++. */
#ifndef EMILY_CUDA_DATA_TYPES_H
#define EMILY_CUDA_DATA_TYPES_H

#include <stdbool.h>
#include <library_types.h>
#include "emily/dtype.h"
#include "core/dtype_list.h"

#define EMI_CUDA_R_f16 CUDA_R_16F
#define EMI_CUDA_R_bf16 CUDA_R_16BF
#define EMI_CUDA_R_f32 CUDA_R_32F
#define EMI_CUDA_R_f64 CUDA_R_64F
#define EMI_CUDA_R(sfx) EMI_PASTE(EMI_CUDA_R_, sfx)

#define EMI_CUDNN_DATA_f16 CUDNN_DATA_HALF
#define EMI_CUDNN_DATA_bf16 CUDNN_DATA_BFLOAT16
#define EMI_CUDNN_DATA_f32 CUDNN_DATA_FLOAT
#define EMI_CUDNN_DATA_f64 CUDNN_DATA_DOUBLE
#define EMI_CUDNN_DATA(sfx) EMI_PASTE(EMI_CUDNN_DATA_, sfx)

/* cuBLAS's type of a float dtype t into *out; false for other types. */
static inline bool emi_cuda_data_type(emily_dtype t, cudaDataType_t *out) {
    switch (t) {
#define EMI_CUDA_R_CASE_(E, sfx, T) \
    case EMILY_##E: *out = EMI_CUDA_R(sfx); return true;
        EMI_DTYPES_FLOAT(EMI_CUDA_R_CASE_)
#undef EMI_CUDA_R_CASE_
    default: return false;
    }
}

#endif
