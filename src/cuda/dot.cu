// CUDA kernels: dot family (see src/core/kernels.h for the contract).
//
// gemm, a batched matrix product, takes the same three paths as the CPU:
//  - integers: a tiled kernel with wrapping unsigned arithmetic in the
//    output's width (32 bits for 8 to 32-bit outputs, 64 for 64-bit);
//  - f64 and c128 at HIGHEST precision: a tiled kernel that computes
//    every output element as Nx.BinaryBackend does (each product rounded,
//    then added in contraction order: __dmul_rn/__dadd_rn, never fused),
//    so results match the reference bit for bit;
//  - everything else through cuBLAS: at HIGHEST, f32/f16/bf16 are widened
//    to f64 and c64 to c128 (their products are exact there), at FAST each
//    type runs in its own precision (f16/bf16 on tensor cores with f32
//    accumulation, CUBLAS_COMPUTE_32F without TF32 for f32). Results that
//    need another output type (f16, bf16, narrower ints...) are rounded
//    by a small kernel with Nx's rules (bf16: round to f32, then keep the
//    top 16 bits).
// Operands cuBLAS can read in place are passed as they are; others are
// packed into a contiguous buffer of the compute type, converting values
// as Nx does (integers exactly), except f16/bf16 operands of a FAST
// product, which are packed in their own type for the tensor cores.
#include <stdint.h>
#include <limits.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cublas_v2.h>
#include "cuda/data_types.h"
#include "cuda/dtype_dispatch.cuh"
#include "cuda/fault.h"
#include "core/kernels.h"
#include "cuda/dot_fp8.h"

using namespace emily_cuda;

namespace {

// Compute types; CT_H16 only packs an f16/bf16 operand as it is (its
// 16 bits copied) for the tensor cores of an f32 FAST product.
enum CT { CT_F32, CT_F64, CT_C64, CT_C128, CT_U32, CT_U64, CT_H16 };

size_t ct_size(CT ct) {
    static const size_t sizes[] = {4, 8, 8, 16, 4, 8, 2};
    return sizes[ct];
}

bool ct_matches(CT ct, emily_dtype t) {
    return (ct == CT_F32 && t == EMILY_F32) || (ct == CT_F64 && t == EMILY_F64) || (ct == CT_C64 && t == EMILY_C64) ||
           (ct == CT_C128 && t == EMILY_C128);
}

constexpr int BLOCK = 256;

unsigned blocks_for(int64_t n) {
    int64_t b = (n + BLOCK - 1) / BLOCK;
    if (b > 65535 * 8) b = 65535 * 8;
    return (unsigned)(b < 1 ? 1 : b);
}

// ---- packing: a strided rank-3 view of any dtype -> compute type ----------

struct View3 {
    int64_t shape[3], stride[3], offset;
};

View3 view_of(const emily_tensor *t) {
    View3 v;
    for (int i = 0; i < 3; i++) {
        v.shape[i] = t->shape[i];
        v.stride[i] = t->strides[i];
    }
    v.offset = t->offset;
    return v;
}

__device__ inline float f16_to_f32(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ inline float bf16_to_f32(uint16_t h) { return __uint_as_float((uint32_t)h << 16); }

// Reads element `off` of a dtype-D array as (re, im) and as exact integer bits.
template <int D> __device__ inline void read_elem(const char *base, int64_t off, double &re, double &im, uint64_t &u) {
    constexpr emily_dtype DT = (emily_dtype)D;
    typedef storage_t<DT> T;
    T x = ((const T *)base)[off];
    im = 0;
    u = 0;
    if constexpr (is_integer(DT)) {
        re = (double)x;
        if constexpr (is_signed(DT)) u = (uint64_t)(int64_t)x;
        else u = (uint64_t)x;
    } else if constexpr (DT == EMILY_F16) {
        re = f16_to_f32(x);
    } else if constexpr (DT == EMILY_BF16) {
        re = bf16_to_f32(x);
    } else if constexpr (is_complex(DT)) {
        re = x.re;
        im = x.im;
    } else {
        re = x;
    }
}

// dst is [B, R, C] contiguous, or [B, C, R] when `transposed`.
template <int D>
__global__ void pack_kernel(const char *base, View3 v, int ct, void *dst, int64_t total, bool transposed) {
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < total; o += (int64_t)gridDim.x * blockDim.x) {
        int64_t b, r, c;
        if (transposed) {
            r = o % v.shape[1];
            int64_t rest = o / v.shape[1];
            c = rest % v.shape[2];
            b = rest / v.shape[2];
        } else {
            c = o % v.shape[2];
            int64_t rest = o / v.shape[2];
            r = rest % v.shape[1];
            b = rest / v.shape[1];
        }
        int64_t i = o;
        int64_t off = v.offset + b * v.stride[0] + r * v.stride[1] + c * v.stride[2];
        if (ct == CT_H16) {
            ((uint16_t *)dst)[i] = ((const uint16_t *)base)[off];
            continue;
        }
        double re, im;
        uint64_t u;
        read_elem<D>(base, off, re, im, u);
        switch (ct) {
        case CT_F32: ((float *)dst)[i] = (float)re; break;
        case CT_F64: ((double *)dst)[i] = re; break;
        case CT_C64:
            ((float *)dst)[2 * i] = (float)re;
            ((float *)dst)[2 * i + 1] = (float)im;
            break;
        case CT_C128:
            ((double *)dst)[2 * i] = re;
            ((double *)dst)[2 * i + 1] = im;
            break;
        case CT_U32: ((uint32_t *)dst)[i] = (uint32_t)u; break;
        default: ((uint64_t *)dst)[i] = u; break;
        }
    }
}

// ---- results: compute type -> the output dtype -----------------------------

// The output types whose results are rounded by store_kernel: f32, f16,
// bf16 and c64 from cuBLAS's f32/f64/c128 results, and integers narrower
// than 32 bits from the wrapping u32 tiled kernel (other types are
// written in place).
template <emily_dtype D> constexpr bool rounded_by_store() {
    if constexpr (is_integer(D)) return sizeof(storage_t<D>) < 4;
    else return D == EMILY_F32 || is_half(D) || D == EMILY_C64;
}

template <emily_dtype D> __global__ void store_kernel(const void *src, int ct, void *dst, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        if constexpr (D == EMILY_F32) {
            ((float *)dst)[i] = __double2float_rn(((const double *)src)[i]);
        } else if constexpr (D == EMILY_F16) {
            double x = ct == CT_F32 ? (double)((const float *)src)[i] : ((const double *)src)[i];
            ((uint16_t *)dst)[i] = __half_as_ushort(__double2half(x)); // nearest even, once
        } else if constexpr (D == EMILY_BF16) {                        // Nx: round to f32, keep the top 16 bits
            float f = ct == CT_F32 ? ((const float *)src)[i] : __double2float_rn(((const double *)src)[i]);
            ((uint16_t *)dst)[i] = (uint16_t)(__float_as_uint(f) >> 16);
        } else if constexpr (D == EMILY_C64) {
            const double *s = (const double *)src;
            ((float *)dst)[2 * i] = __double2float_rn(s[2 * i]);
            ((float *)dst)[2 * i + 1] = __double2float_rn(s[2 * i + 1]);
        } else { // 8 and 16-bit integers: the low bits
            typedef typename bits_of<sizeof(storage_t<D>)>::type B;
            ((B *)dst)[i] = (B)((const uint32_t *)src)[i];
        }
    }
}

// ---- tiled kernels: integers (wrapping) and reference-exact f64/c128 -----
//
// Blocks of 16x16 threads; each thread holds R x R outputs (rows ty + 16i,
// columns tx + 16j) in registers while the contraction runs in order
// through TK-deep shared-memory slices, so each output is
// ((0 + a0*b0) + a1*b1) + ... in contraction order. A is packed
// transposed ([B, K, M]) so both slices load coalesced. Slices past the
// end of K are zero-filled: the extra products are +0 and adding +0 to a
// sum that starts at +0 changes nothing (such a sum is never -0).

constexpr int TK = 16;

template <typename T> __device__ inline T mul_add(T acc, T a, T b) { return acc + a * b; }
template <> __device__ inline double mul_add<double>(double acc, double a, double b) {
    return __dadd_rn(acc, __dmul_rn(a, b));
}

// slice[kk][c] = src[p0 + kk][c0 + c] for a [K, width] row-major matrix
// (A packed transposed is one too), zero past its edges; the block's 256
// threads share the loads.
template <typename T, int W>
__device__ __forceinline__ void load_slice(T (&slice)[TK][W], const T *src, int64_t width, int64_t c0, int64_t p0,
                                           int64_t k, int tid) {
    for (int e = tid; e < TK * W; e += 256) {
        int kk = e / W, c = e % W;
        int64_t gc = c0 + c, gk = p0 + kk;
        slice[kk][c] = (gc < width && gk < k) ? src[gk * width + gc] : T(0);
    }
}

// The same for interleaved c128 (re, im), split into two slices.
template <int W>
__device__ __forceinline__ void load_slice_c128(double (&re)[TK][W], double (&im)[TK][W], const double *src,
                                                int64_t width, int64_t c0, int64_t p0, int64_t k, int tid) {
    for (int e = tid; e < TK * W; e += 256) {
        int kk = e / W, c = e % W;
        int64_t gc = c0 + c, gk = p0 + kk;
        bool in = gc < width && gk < k;
        re[kk][c] = in ? src[2 * (gk * width + gc)] : 0.0;
        im[kk][c] = in ? src[2 * (gk * width + gc) + 1] : 0.0;
    }
}

// at: [B, K, M], b: [B, K, N], c: [B, M, N] (row-major).
template <typename T, int R>
__global__ void __launch_bounds__(256)
    tiled_real(const T *at, const T *b, T *c, int64_t nb, int64_t m, int64_t n, int64_t k) {
    constexpr int TM = 16 * R, TN = 16 * R;
    __shared__ T as[TK][TM], bs[TK][TN];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int64_t col0 = (int64_t)blockIdx.x * TN, row_tiles = (m + TM - 1) / TM;
    for (int64_t bi = blockIdx.z; bi < nb; bi += gridDim.z)
        for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
            int64_t row0 = rt * TM;
            const T *ab = at + bi * m * k, *bb = b + bi * k * n;
            T acc[R][R];
#pragma unroll
            for (int i = 0; i < R; i++)
#pragma unroll
                for (int j = 0; j < R; j++) acc[i][j] = T(0);
            for (int64_t p0 = 0; p0 < k; p0 += TK) {
                load_slice(as, ab, m, row0, p0, k, tid); // as[kk][r] = A[row0 + r][p0 + kk]
                load_slice(bs, bb, n, col0, p0, k, tid); // bs[kk][cc] = B[p0 + kk][col0 + cc]
                __syncthreads();
#pragma unroll
                for (int kk = 0; kk < TK; kk++) {
                    T av[R], bv[R];
#pragma unroll
                    for (int i = 0; i < R; i++) av[i] = as[kk][ty + 16 * i];
#pragma unroll
                    for (int j = 0; j < R; j++) bv[j] = bs[kk][tx + 16 * j];
#pragma unroll
                    for (int i = 0; i < R; i++)
#pragma unroll
                        for (int j = 0; j < R; j++) acc[i][j] = mul_add<T>(acc[i][j], av[i], bv[j]);
                }
                __syncthreads();
            }
            T *cb = c + bi * m * n;
#pragma unroll
            for (int i = 0; i < R; i++)
#pragma unroll
                for (int j = 0; j < R; j++) {
                    int64_t gr = row0 + ty + 16 * i, gc = col0 + tx + 16 * j;
                    if (gr < m && gc < n) cb[gr * n + gc] = acc[i][j];
                }
        }
}

// c128 as Complex.multiply then add: (ar*br - ai*bi, ai*br + ar*bi), each
// operation rounded. Operands interleaved (re, im); at is [B, K, M].
constexpr int CR = 4, CTM = 16 * CR, CTN = 16 * CR;
__global__ void __launch_bounds__(256)
    tiled_c128(const double *at, const double *b, double *c, int64_t nb, int64_t m, int64_t n, int64_t k) {
    __shared__ double asr[TK][CTM], asi[TK][CTM], bsr[TK][CTN], bsi[TK][CTN];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int64_t col0 = (int64_t)blockIdx.x * CTN, row_tiles = (m + CTM - 1) / CTM;
    for (int64_t bi = blockIdx.z; bi < nb; bi += gridDim.z)
        for (int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
            int64_t row0 = rt * CTM;
            const double *ab = at + 2 * bi * m * k, *bb = b + 2 * bi * k * n;
            double accr[CR][CR], acci[CR][CR];
#pragma unroll
            for (int i = 0; i < CR; i++)
#pragma unroll
                for (int j = 0; j < CR; j++) accr[i][j] = acci[i][j] = 0.0;
            for (int64_t p0 = 0; p0 < k; p0 += TK) {
                load_slice_c128(asr, asi, ab, m, row0, p0, k, tid);
                load_slice_c128(bsr, bsi, bb, n, col0, p0, k, tid);
                __syncthreads();
#pragma unroll 4
                for (int kk = 0; kk < TK; kk++) {
                    double ar[CR], ai[CR], br[CR], bim[CR];
#pragma unroll
                    for (int i = 0; i < CR; i++) {
                        ar[i] = asr[kk][ty + 16 * i];
                        ai[i] = asi[kk][ty + 16 * i];
                    }
#pragma unroll
                    for (int j = 0; j < CR; j++) {
                        br[j] = bsr[kk][tx + 16 * j];
                        bim[j] = bsi[kk][tx + 16 * j];
                    }
#pragma unroll
                    for (int i = 0; i < CR; i++)
#pragma unroll
                        for (int j = 0; j < CR; j++) {
                            double pre = __dsub_rn(__dmul_rn(ar[i], br[j]), __dmul_rn(ai[i], bim[j]));
                            double pim = __dadd_rn(__dmul_rn(ai[i], br[j]), __dmul_rn(ar[i], bim[j]));
                            accr[i][j] = __dadd_rn(accr[i][j], pre);
                            acci[i][j] = __dadd_rn(acci[i][j], pim);
                        }
                }
                __syncthreads();
            }
            double *cb = c + 2 * bi * m * n;
#pragma unroll
            for (int i = 0; i < CR; i++)
#pragma unroll
                for (int j = 0; j < CR; j++) {
                    int64_t gr = row0 + ty + 16 * i, gc = col0 + tx + 16 * j;
                    if (gr < m && gc < n) {
                        cb[2 * (gr * n + gc)] = accr[i][j];
                        cb[2 * (gr * n + gc) + 1] = acci[i][j];
                    }
                }
        }
}

#ifndef EMILY_DOT_CUDA_R
#define EMILY_DOT_CUDA_R 8 /* outputs per thread along each side, real kernels */
#endif
constexpr int RR = EMILY_DOT_CUDA_R, RTM = 16 * RR, RTN = 16 * RR;

// ---- host side ---------------------------------------------------------------

struct Gemm {
    emily_cuda_ctx ctx;
    void *scratch[3] = {nullptr, nullptr, nullptr};
    int nscratch = 0;

    // n elements of es bytes; a broadcast operand can describe more
    // elements than memory holds
    emily_status alloc(int64_t n, size_t es, void **p) {
        if (n < 0 || (uint64_t)n > (SIZE_MAX - 64) / es / 2)
            return emily_error(EMILY_ERR_MEMORY, "cuda: dot: %lld elements do not fit in memory", (long long)n);
        emily_status s = emi_cuda_scratch(&ctx, n ? (size_t)n * es : 1, p);
        if (!s) scratch[nscratch++] = *p;
        return s;
    }
    ~Gemm() {
        for (int i = 0; i < nscratch; i++) emi_cuda_scratch_free(&ctx, scratch[i]);
    }
};

template <int D> emily_status launch_pack(Gemm &g, const emily_tensor *t, CT ct, void *dst, bool transposed) {
    int64_t total = t->shape[0] * t->shape[1] * t->shape[2];
    pack_kernel<D><<<blocks_for(total), BLOCK, 0, g.ctx.stream>>>((const char *)t->buffer->data, view_of(t), (int)ct,
                                                                  dst, total, transposed);
    return emi_cuda_launched(&g.ctx);
}

// A contiguous [B, R, C] (or [B, C, R] when transposed) copy of t in the
// compute type (scratch memory).
emily_status pack(Gemm &g, const emily_tensor *t, CT ct, void **out, bool transposed = false) {
    int64_t total = t->shape[0] * t->shape[1] * t->shape[2];
    emily_status s = g.alloc(total, ct_size(ct), out);
    if (s || total == 0) return s;
    return with_dtype(t->dtype, "dot",
                      [&]<emily_dtype D>() -> emily_status { return launch_pack<D>(g, t, ct, *out, transposed); });
}

emily_status store(Gemm &g, const void *src, CT ct, emily_tensor *dst) {
    return with_dtype(dst->dtype, "dot", [&]<emily_dtype D>() -> emily_status {
        if constexpr (rounded_by_store<D>()) {
            store_kernel<D><<<blocks_for(dst->size), BLOCK, 0, g.ctx.stream>>>(
                src, (int)ct, (char *)dst->buffer->data + (size_t)dst->offset * emily_dtype_size(dst->dtype),
                dst->size);
            return emi_cuda_launched(&g.ctx);
        } else {
            return emily_error(EMILY_ERR_INTERNAL, "dot: no result conversion to %s", emily_dtype_name(D));
        }
    });
}

void *dst_base(emily_tensor *dst) {
    return (char *)dst->buffer->data + (size_t)dst->offset * emily_dtype_size(dst->dtype);
}

// Column tiles on x; row tiles and batches on y and z, which the kernels
// walk in strides when there are more than the grid holds.
dim3 tile_grid(int64_t nb, int64_t m, int64_t n, int tm, int tn) {
    int64_t y = (m + tm - 1) / tm, z = nb;
    if (y > 65535) y = 65535;
    if (z > 65535) z = 65535;
    return dim3((unsigned)((n + tn - 1) / tn), (unsigned)(y < 1 ? 1 : y), (unsigned)(z < 1 ? 1 : z));
}

emily_status tiled_path(Gemm &g, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b) {
    int64_t nb = dst->shape[0], m = dst->shape[1], n = dst->shape[2], k = a->shape[2];
    if ((n + 63) / 64 > INT_MAX)
        return emily_error(EMILY_ERR_UNSUPPORTED, "dot: %lld output columns exceed the cuda grid", (long long)n);
    CT ct;
    switch (dst->dtype) {
    case EMILY_F64: ct = CT_F64; break;
    case EMILY_C128: ct = CT_C128; break;
    case EMILY_U64:
    case EMILY_S64: ct = CT_U64; break;
    default: ct = CT_U32; break; // 8 to 32-bit integers wrap alike modulo 2^32
    }
    void *pa, *pb, *pc = dst_base(dst);
    emily_status s;
    if ((s = pack(g, a, ct, &pa, true))) return s; // [B, K, M]
    if ((s = pack(g, b, ct, &pb))) return s;
    bool narrow = ct == CT_U32 && emily_dtype_size(dst->dtype) < 4;
    if (narrow && (s = g.alloc(dst->size, 4, &pc))) return s;
    dim3 block(16, 16), grid = tile_grid(nb, m, n, RTM, RTN);
    switch (ct) {
    case CT_F64:
        tiled_real<double, RR>
            <<<grid, block, 0, g.ctx.stream>>>((const double *)pa, (const double *)pb, (double *)pc, nb, m, n, k);
        break;
    case CT_C128:
        grid = tile_grid(nb, m, n, CTM, CTN);
        tiled_c128<<<grid, block, 0, g.ctx.stream>>>((const double *)pa, (const double *)pb, (double *)pc, nb, m, n, k);
        break;
    case CT_U64:
        tiled_real<uint64_t, RR>
            <<<grid, block, 0, g.ctx.stream>>>((const uint64_t *)pa, (const uint64_t *)pb, (uint64_t *)pc, nb, m, n, k);
        break;
    default:
        tiled_real<uint32_t, RR>
            <<<grid, block, 0, g.ctx.stream>>>((const uint32_t *)pa, (const uint32_t *)pb, (uint32_t *)pc, nb, m, n, k);
        break;
    }
    if ((s = emi_cuda_launched(&g.ctx))) return s;
    return narrow ? store(g, pc, ct, dst) : EMILY_OK;
}

// An operand as cuBLAS reads it.
struct Operand {
    const void *ptr;
    long long batch_stride; // elements
    emily_gemm_layout lay;
    cudaDataType_t type;
};

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

cudaDataType_t data_type(CT ct) {
    switch (ct) {
    case CT_F32: return CUDA_R_32F;
    case CT_F64: return CUDA_R_64F;
    case CT_C64: return CUDA_C_32F;
    default: return CUDA_C_64F;
    }
}

// cuBLAS's type of a half operand kept in its own type.
cudaDataType_t own_type(emily_dtype t) {
    cudaDataType_t r = CUDA_R_32F;
    emi_cuda_data_type(t, &r);
    return r;
}

// In place when cuBLAS can read the operand as it is (its dtype is the
// compute type, or f16/bf16 for an f32 FAST product), else packed (f16/bf16
// of an f32 FAST product in their own type).
emily_status prepare(Gemm &g, const emily_tensor *t, CT ct, bool half_ok, Operand *op) {
    bool same = ct_matches(ct, t->dtype);
    bool half = half_ok && is_half(t->dtype);
    if ((same || half) && emily_gemm_layout_of(t->shape[1], t->shape[2], t->strides[1], t->strides[2], &op->lay) &&
        fits_int(op->lay.ld)) {
        op->ptr = (const char *)t->buffer->data + (size_t)t->offset * emily_dtype_size(t->dtype);
        op->batch_stride = t->strides[0];
        op->type = same ? data_type(ct) : own_type(t->dtype);
        return EMILY_OK;
    }
    // a half operand cuBLAS cannot read in place is packed in its own type
    // (the tensor cores still take it), anything else in the compute type
    void *p;
    emily_status s = pack(g, t, half ? CT_H16 : ct, &p);
    if (s) return s;
    op->ptr = p;
    op->batch_stride = t->shape[1] * t->shape[2];
    op->lay.column_major = false;
    op->lay.ld = t->shape[2] > 1 ? t->shape[2] : 1;
    op->type = !half ? data_type(ct) : own_type(t->dtype);
    return EMILY_OK;
}

emily_status cublas_status(cublasStatus_t st) {
    if (st == CUBLAS_STATUS_SUCCESS && emi_cuda_fault_fire(EMI_CUDA_FAULT_LIBRARY)) st = CUBLAS_STATUS_EXECUTION_FAILED;
    if (st == CUBLAS_STATUS_SUCCESS) return EMILY_OK;
    return emily_error(st == CUBLAS_STATUS_ALLOC_FAILED ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE,
                       "cuda: dot: cuBLAS failed (%s)", cublasGetStatusString(st));
}

emily_status blas_path(Gemm &g, emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, CT ct) {
    int64_t nb = dst->shape[0], m = dst->shape[1], n = dst->shape[2], k = a->shape[2];
    if (!fits_int(m) || !fits_int(n) || !fits_int(k) || !fits_int(nb))
        return emily_error(EMILY_ERR_UNSUPPORTED,
                           "dot: a batch of %lld %lld x %lld by %lld x %lld products exceeds cuBLAS's 32-bit sizes",
                           (long long)nb, (long long)m, (long long)k, (long long)k, (long long)n);
    cublasHandle_t h;
    emily_status s = emi_cuda_cublas(&g.ctx, &h);
    if (s) return s;
    // f16/bf16 operands of an f32 FAST product go to the tensor cores as
    // they are when both have the same half type
    bool half_ok = ct == CT_F32 && a->dtype == b->dtype && is_half(a->dtype);
    Operand oa, ob;
    if ((s = prepare(g, a, ct, half_ok, &oa))) return s;
    if ((s = prepare(g, b, ct, half_ok, &ob))) return s;
    if (oa.type != ob.type) { // one half operand was packed: pack the other too
        void *p;
        const emily_tensor *t = oa.type == data_type(ct) ? b : a;
        Operand *o = oa.type == data_type(ct) ? &ob : &oa;
        if ((s = pack(g, t, ct, &p))) return s;
        o->ptr = p;
        o->batch_stride = t->shape[1] * t->shape[2];
        o->lay.column_major = false;
        o->lay.ld = t->shape[2] > 1 ? t->shape[2] : 1;
        o->type = data_type(ct);
    }
    void *pc = dst_base(dst);
    bool direct = ct_matches(ct, dst->dtype);
    cudaDataType_t ctype = data_type(ct);
    // FAST with half operands and a result of their type: cuBLAS rounds its
    // f32 accumulators to the half type itself (round to nearest even, as
    // PyTorch and JAX do), which saves writing and re-reading an f32 result.
    // At HIGHEST, and for any other mix, the store kernel applies Nx's
    // conversion rules (bf16 keeps the top 16 bits of the f32 value).
    if (!direct && oa.type == ob.type && oa.type != data_type(ct) && dst->dtype == a->dtype && dst->dtype == b->dtype) {
        direct = true;
        ctype = oa.type;
    }
    if (!direct && (s = g.alloc(dst->size, ct_size(ct), &pc))) return s;
    // Row-major C[M, N] = A B is column-major C^T[N, M] = B^T A^T: a
    // row-major operand is its own transpose in column-major terms.
    cublasOperation_t tp = ob.lay.column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tq = oa.lay.column_major ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldc = n > 1 ? (int)n : 1;
    long long strc = (long long)m * n;
    cublasComputeType_t compute = (ct == CT_F32 || ct == CT_C64) ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F;
    const float onef[2] = {1, 0}, zerof[2] = {0, 0};
    const double oned[2] = {1, 0}, zerod[2] = {0, 0};
    bool single = ct == CT_F32 || ct == CT_C64;
    const void *alpha = single ? (const void *)onef : (const void *)oned;
    const void *beta = single ? (const void *)zerof : (const void *)zerod;
    cublasStatus_t st = cublasGemmStridedBatchedEx(
        h, tp, tq, (int)n, (int)m, (int)k, alpha, ob.ptr, ob.type, (int)ob.lay.ld, ob.batch_stride, oa.ptr, oa.type,
        (int)oa.lay.ld, oa.batch_stride, beta, pc, ctype, ldc, strc, (int)nb, compute, CUBLAS_GEMM_DEFAULT);
    if ((s = cublas_status(st))) return s;
    if ((s = emi_cuda_launched(&g.ctx))) return s;
    return direct ? EMILY_OK : store(g, pc, ct, dst);
}

emily_status cuda_gemm(emily_tensor *dst, const emily_tensor *a, const emily_tensor *b, emily_dot_precision precision) {
    if (dst->size == 0) return EMILY_OK;
    Gemm g;
    const emily_tensor *ts[3] = {dst, a, b};
    emily_status s = emi_cuda_begin("dot", dst->buffer->device.index, 3, ts, &g.ctx);
    if (s) return s;
    if (a->shape[2] == 0) // empty contraction: zeros
        return emi_cuda_error("dot", cudaMemsetAsync(dst_base(dst), 0, emily_tensor_nbytes(dst), g.ctx.stream));
    bool fast = precision == EMILY_DOT_PRECISION_FAST;
    emily_dtype t = dst->dtype;
    if (t == EMILY_F64) return fast ? blas_path(g, dst, a, b, CT_F64) : tiled_path(g, dst, a, b);
    if (t == EMILY_C128) return fast ? blas_path(g, dst, a, b, CT_C128) : tiled_path(g, dst, a, b);
    if (t == EMILY_C64) return blas_path(g, dst, a, b, fast ? CT_C64 : CT_C128);
    if (is_float(t)) return blas_path(g, dst, a, b, fast ? CT_F32 : CT_F64); // f32, f16, bf16
    return tiled_path(g, dst, a, b);
}

} // namespace

// gemm_fp8: the FP8 tensor-core product (dot_fp8.cu)
extern "C" const struct emily_dot_kernels emi_cuda_dot_kernels = {cuda_gemm, emi_cuda_gemm_fp8};
