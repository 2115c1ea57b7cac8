// CUDA kernel: the dot family's FP8 product on the tensor cores (see
// src/core/kernels.h, emily_dot_kernels.gemm_fp8), through cuBLASLt.
//
// cuBLASLt multiplies FP8 matrices only in its "TN" form: in its
// column-major terms A transposed and B not, which means both operands
// stored with the contraction axis innermost (k-major), leading
// dimensions and base pointers 16-byte aligned, CUBLAS_COMPUTE_32F with
// f32 scale type. The op layer hands us a [B, M, K] and bm [B, K, N]
// (src/ops/dot.c's views); the row-major result C[M, N] is the
// column-major N x M matrix
//
//     C^T = bm^T a^T,  i.e. cuBLASLt's D = op(A) op(B) with
//     A := bm stored K x N column-major (k innermost), op T,
//     B := a  stored K x M column-major (a row-major: k innermost), op N.
//
// So `a` is read in place when its rows are k-contiguous and `bm` when its
// columns are (a [N, K] weight matrix contracted on its axis 1, the
// usual layout of a linear layer, is one); anything else is packed by a
// small tiled kernel into [B, rows, Kp] bytes, k innermost, with K padded
// to Kp, a multiple of 16, by zeros (a zero product adds nothing to the
// sums). Batches are one strided-batched product (one product per
// matrix where cuBLASLt has no batched algorithm for the shape). A
// result row length whose bytes are not a multiple of 16 is
// computed into a padded scratch matrix and copied out. Whatever
// cuBLASLt's heuristic still finds no algorithm for comes back as
// EMILY_ERR_UNSUPPORTED (no message), and the op layer computes it
// widened to f32 (src/ops/dot_fp8.c).
//
// Scales: the product of the two operand scales is cuBLASLt's alpha (it
// applies scale_a * scale_b * alpha to the f32 sums in one factor too);
// the per-operand scale pointers are left unset (1.0). Fast accumulation
// (CUBLASLT_MATMUL_DESC_FAST_ACCUM) is left off: with it on, cuBLASLt
// leaves the partial sums in the tensor cores' own accumulators, which
// keep fewer bits than f32 on Hopper; off, it carries them into f32 as it
// goes (what torch._scaled_mm does by default). tests/unit/test_cuda_fp8.c
// holds the results to f32's accumulation bound (docs/semantics.md).
#include <stdint.h>
#include <pthread.h>
#include <cuda_runtime.h>
#include <cublasLt.h>
#include "cuda/cuda_context.h"
#include "cuda/data_types.h"
#include "cuda/dot_fp8.h"
#include "core/kernels.h"

namespace {

// ---- packing: [B, rows, K] of any strides -> [B, rows, Kp] bytes ----------

constexpr int TILE = 32; // a tile is 32 rows x 32 k
constexpr int TROWS = 8; // threads per block: 32 x 8, 4 elements each

// One operand as the pack kernel reads it: element (b, r, k) at
// off + b * sb + r * sr + k * sk bytes from base.
struct Src {
    const uint8_t *base;
    int64_t off, sb, sr, sk, rows, k;
};

// Reads a 32 x 32 tile through shared memory so that both the loads
// (along whichever source axis is contiguous) and the stores (along k)
// are coalesced; k past K is written as zero (Kp padding).
__global__ void pack_fp8(Src s, uint8_t *dst, int64_t kp, int64_t nb) {
    __shared__ uint8_t tile[TILE][TILE + 4];
    int64_t r0 = (int64_t)blockIdx.y * TILE, k0 = (int64_t)blockIdx.x * TILE;
    bool k_inner = s.sk == 1;
    for (int64_t b = blockIdx.z; b < nb; b += gridDim.z) {
        // load: threadIdx.x runs along the source's contiguous axis
        for (int i = threadIdx.y; i < TILE; i += TROWS) {
            int rr = k_inner ? i : (int)threadIdx.x, kk = k_inner ? (int)threadIdx.x : i;
            int64_t r = r0 + rr, k = k0 + kk;
            uint8_t v = 0;
            if (r < s.rows && k < s.k) v = s.base[s.off + b * s.sb + r * s.sr + k * s.sk];
            tile[rr][kk] = v;
        }
        __syncthreads();
        // store: threadIdx.x runs along k, the packed matrix's inner axis
        for (int i = threadIdx.y; i < TILE; i += TROWS) {
            int64_t r = r0 + i, k = k0 + threadIdx.x;
            if (r < s.rows && k < kp) dst[(b * s.rows + r) * kp + k] = tile[i][threadIdx.x];
        }
        __syncthreads();
    }
}

// ---- cuBLASLt ---------------------------------------------------------------

pthread_mutex_t lt_lock = PTHREAD_MUTEX_INITIALIZER;
cublasLtHandle_t lt_handles[EMILY_CUDA_MAX_DEVICES];
int fp8_capable[EMILY_CUDA_MAX_DEVICES]; // 0 unknown, 1 yes, -1 no

// The device's cuBLASLt handle (created at first use, kept for the
// process: a handle is not bound to a stream and may be shared by
// threads), and whether the device has FP8 tensor cores (8.9 and up).
emily_status lt_handle(int device, cublasLtHandle_t *h, bool *capable) {
    if (device < 0 || device >= EMILY_CUDA_MAX_DEVICES)
        return emily_error(EMILY_ERR_DEVICE, "cuda: dot_fp8: device %d out of range", device);
    pthread_mutex_lock(&lt_lock);
    emily_status s = EMILY_OK;
    if (!fp8_capable[device]) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
            major = minor = 0;
        fp8_capable[device] = major > 8 || (major == 8 && minor >= 9) ? 1 : -1;
    }
    if (!lt_handles[device]) {
        cublasStatus_t st = cublasLtCreate(&lt_handles[device]);
        if (st != CUBLAS_STATUS_SUCCESS) {
            lt_handles[device] = nullptr;
            s = emily_error(st == CUBLAS_STATUS_ALLOC_FAILED ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE,
                            "cuda: dot_fp8: cublasLtCreate failed (%s)", cublasGetStatusString(st));
        }
    }
    *h = lt_handles[device];
    *capable = fp8_capable[device] > 0;
    pthread_mutex_unlock(&lt_lock);
    return s;
}

cudaDataType_t lt_type(emily_dtype t) {
    switch (t) {
    case EMILY_F8_E4M3FN: return CUDA_R_8F_E4M3;
    case EMILY_F8_E5M2:
        return CUDA_R_8F_E5M2;
// clang-format off
#define LT_HALF_(E, sfx, T) \
    case EMILY_##E: return EMI_CUDA_R(sfx);
        // clang-format on
        EMI_DTYPES_HALF(LT_HALF_)
#undef LT_HALF_
    default: return CUDA_R_32F;
    }
}

// The descriptors of one product, destroyed with it.
struct Lt {
    emily_cuda_ctx ctx;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    void *scratch[4] = {nullptr, nullptr, nullptr, nullptr};
    int nscratch = 0;

    emily_status alloc(size_t n, void **p) {
        emily_status s = emi_cuda_scratch(&ctx, n ? n : 1, p);
        if (!s) scratch[nscratch++] = *p;
        return s;
    }
    ~Lt() {
        if (pref) cublasLtMatmulPreferenceDestroy(pref);
        if (ld) cublasLtMatrixLayoutDestroy(ld);
        if (lb) cublasLtMatrixLayoutDestroy(lb);
        if (la) cublasLtMatrixLayoutDestroy(la);
        if (desc) cublasLtMatmulDescDestroy(desc);
        for (int i = 0; i < nscratch; i++) emi_cuda_scratch_free(&ctx, scratch[i]);
    }
};

// An operand as cuBLASLt reads it: k innermost, `ld` bytes between rows
// (of M for a, of N for bm), `bstride` between batches.
struct Operand {
    const void *ptr;
    int64_t ld, bstride;
};

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

// Operand t viewed as [B, rows, K] with strides (sb, sr, sk) in elements
// (bytes: f8), read in place when cuBLASLt can, else packed.
emily_status operand(Lt &lt, const emily_tensor *t, int64_t rows, int64_t k, int64_t kp, int64_t sb, int64_t sr,
                     int64_t sk, Operand *op) {
    int64_t nb = t->shape[0];
    const uint8_t *base = (const uint8_t *)t->buffer->data;
    const uint8_t *p = base + t->offset;
    // a single row's stride is free: any ld >= K does
    int64_t ld = rows <= 1 ? kp : sr;
    bool in_place = k == kp && (k <= 1 || sk == 1) && ld >= k && ld % 16 == 0 && aligned16(p) &&
                    (nb <= 1 || (sb > 0 && sb % 16 == 0));
    if (in_place) {
        *op = {p, ld, nb <= 1 ? rows * ld : sb};
        return EMILY_OK;
    }
    void *dst;
    emily_status s = lt.alloc((size_t)(nb * rows * kp), &dst);
    if (s) return s;
    Src src = {base, t->offset, sb, sr, sk, rows, k};
    int64_t gz = nb > 65535 ? 65535 : nb, gy = (rows + TILE - 1) / TILE;
    if (gy > 65535) return EMILY_ERR_UNSUPPORTED; // beyond the grid: the widened path
    dim3 grid((unsigned)((kp + TILE - 1) / TILE), (unsigned)gy, (unsigned)gz), block(TILE, TROWS);
    pack_fp8<<<grid, block, 0, lt.ctx.stream>>>(src, (uint8_t *)dst, kp, nb);
    if ((s = emi_cuda_launched(&lt.ctx))) return s;
    *op = {dst, kp, rows * kp};
    return EMILY_OK;
}

emily_status lt_fail(cublasStatus_t st, const char *what) {
    return emily_error(st == CUBLAS_STATUS_ALLOC_FAILED ? EMILY_ERR_MEMORY : EMILY_ERR_DEVICE,
                       "cuda: dot_fp8: %s failed (%s)", what, cublasGetStatusString(st));
}

// A column-major rows x cols layout of `type` with `batch` matrices.
cublasStatus_t layout(cublasLtMatrixLayout_t *l, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                      int32_t batch, int64_t bstride) {
    cublasStatus_t st = cublasLtMatrixLayoutCreate(l, type, (uint64_t)rows, (uint64_t)cols, ld);
    if (st == CUBLAS_STATUS_SUCCESS && batch > 1) {
        st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &bstride,
                                                  sizeof bstride);
    }
    return st;
}

// The layouts of one product of `batch` matrices (replacing earlier
// ones) and cuBLASLt's best algorithm for them (*found false: none).
emily_status plan(Lt &lt, cublasLtHandle_t h, cudaDataType_t ta, cudaDataType_t tb, cudaDataType_t tc, int64_t m,
                  int64_t n, int64_t kp, const Operand &oa, const Operand &ob, int64_t ldd, int32_t batch,
                  cublasLtMatmulHeuristicResult_t *best, bool *found) {
    cublasLtMatrixLayout_t *ls[3] = {&lt.la, &lt.lb, &lt.ld};
    for (cublasLtMatrixLayout_t *l : ls)
        if (*l) {
            cublasLtMatrixLayoutDestroy(*l);
            *l = nullptr;
        }
    cublasStatus_t st;
    if ((st = layout(&lt.la, tb, kp, n, ob.ld, batch, ob.bstride)) ||
        (st = layout(&lt.lb, ta, kp, m, oa.ld, batch, oa.bstride)) ||
        (st = layout(&lt.ld, tc, n, m, ldd, batch, m * ldd)))
        return lt_fail(st, "a matrix layout");
    int count = 0;
    st = cublasLtMatmulAlgoGetHeuristic(h, lt.desc, lt.la, lt.lb, lt.ld, lt.ld, lt.pref, 1, best, &count);
    *found = st == CUBLAS_STATUS_SUCCESS && count > 0;
    return EMILY_OK;
}

constexpr size_t WORKSPACE = (size_t)32 << 20; // what cuBLAS asks for on Hopper

emily_status gemm_fp8(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm, float alpha) {
    if (dst->size == 0) return EMILY_OK;
    int64_t nb = dst->shape[0], m = dst->shape[1], n = dst->shape[2], k = a->shape[2];
    if (k == 0 || nb > INT32_MAX) return EMILY_ERR_UNSUPPORTED; // the widened path writes the zeros
    cudaDataType_t ta = lt_type(a->dtype), tb = lt_type(bm->dtype), tc = lt_type(dst->dtype);
    bool inputs_ok = (a->dtype == EMILY_F8_E4M3FN || a->dtype == EMILY_F8_E5M2) &&
                     (bm->dtype == EMILY_F8_E4M3FN || bm->dtype == EMILY_F8_E5M2) &&
                     !(a->dtype == EMILY_F8_E5M2 && bm->dtype == EMILY_F8_E5M2); // no e5m2 x e5m2 kernels
    bool out_ok = dst->dtype == EMILY_F32 || dst->dtype == EMILY_BF16 || dst->dtype == EMILY_F16;
    if (!inputs_ok || !out_ok) return EMILY_ERR_UNSUPPORTED;

    Lt lt;
    const emily_tensor *ts[3] = {dst, a, bm};
    emily_status s = emi_cuda_begin("dot_fp8", dst->buffer->device.index, 3, ts, &lt.ctx);
    if (s) return s;
    cublasLtHandle_t h;
    bool capable;
    if ((s = lt_handle(lt.ctx.device, &h, &capable))) return s;
    if (!capable) return EMILY_ERR_UNSUPPORTED;

    int64_t kp = (k + 15) / 16 * 16;
    Operand oa, ob;
    // a: [B, M, K] as rows of k; bm: [B, K, N] as its N columns of k
    if ((s = operand(lt, a, m, k, kp, a->strides[0], a->strides[1], a->strides[2], &oa))) return s;
    if ((s = operand(lt, bm, n, k, kp, bm->strides[0], bm->strides[2], bm->strides[1], &ob))) return s;
    // the result: column-major N x M per batch, ld a multiple of 16 bytes
    size_t es = emily_dtype_size(dst->dtype);
    int64_t align = 16 / (int64_t)es, ldd = (n + align - 1) / align * align;
    void *out = (char *)dst->buffer->data + (size_t)dst->offset * es;
    bool direct = ldd == n && aligned16(out);
    if (!direct && (s = lt.alloc((size_t)(nb * m * ldd) * es, &out))) return s;
    void *workspace;
    if ((s = lt.alloc(WORKSPACE, &workspace))) return s;

    cublasStatus_t st;
    cublasOperation_t opt = CUBLAS_OP_T, opn = CUBLAS_OP_N;
    if ((st = cublasLtMatmulDescCreate(&lt.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) ||
        (st = cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opt, sizeof opt)) ||
        (st = cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opn, sizeof opn)))
        return lt_fail(st, "the matmul descriptor");
    uint64_t ws = WORKSPACE;
    if ((st = cublasLtMatmulPreferenceCreate(&lt.pref)) ||
        (st = cublasLtMatmulPreferenceSetAttribute(lt.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws)))
        return lt_fail(st, "the matmul preference");
    // one strided-batched product; where cuBLASLt has none for the batch,
    // one product per matrix
    cublasLtMatmulHeuristicResult_t best;
    bool found = false;
    int64_t per_call = nb;
    if ((s = plan(lt, h, ta, tb, tc, m, n, kp, oa, ob, ldd, (int32_t)nb, &best, &found))) return s;
    if (!found && nb > 1) {
        per_call = 1;
        if ((s = plan(lt, h, ta, tb, tc, m, n, kp, oa, ob, ldd, 1, &best, &found))) return s;
    }
    if (!found) return EMILY_ERR_UNSUPPORTED; // refused: widen
    const float beta = 0.0f;
    for (int64_t i = 0; i < nb; i += per_call) {
        const uint8_t *pa = (const uint8_t *)oa.ptr + (per_call == 1 ? i * oa.bstride : 0);
        const uint8_t *pb = (const uint8_t *)ob.ptr + (per_call == 1 ? i * ob.bstride : 0);
        char *pd = (char *)out + (per_call == 1 ? (size_t)(i * m * ldd) * es : 0);
        st = cublasLtMatmul(h, lt.desc, &alpha, pb, lt.la, pa, lt.lb, &beta, pd, lt.ld, pd, lt.ld, &best.algo,
                            workspace, WORKSPACE, lt.ctx.stream);
        if (st == CUBLAS_STATUS_NOT_SUPPORTED && i == 0) return EMILY_ERR_UNSUPPORTED;
        if (st != CUBLAS_STATUS_SUCCESS) return lt_fail(st, "cublasLtMatmul");
    }
    if ((s = emi_cuda_launched(&lt.ctx))) return s;
    if (direct) return EMILY_OK;
    // the padded rows into dst: B * M rows of N elements
    size_t width = (size_t)n * es;
    return emi_cuda_error("dot_fp8", cudaMemcpy2DAsync((char *)dst->buffer->data + (size_t)dst->offset * es, width, out,
                                                       (size_t)ldd * es, width, (size_t)(nb * m),
                                                       cudaMemcpyDeviceToDevice, lt.ctx.stream));
}

} // namespace

extern "C" emily_status emi_cuda_gemm_fp8(emily_tensor *dst, const emily_tensor *a, const emily_tensor *bm,
                                          float alpha) {
    return gemm_fp8(dst, a, bm, alpha);
}
