/* Strided copy: the one kernel every view-based op (pad, concatenate,
 * reverse, slice, put_slice, contiguous) is built on.
 *
 * The iterator merges dims so most copies are runs of memcpy or one
 * strided loop. A transposing copy (the destination's innermost dim is
 * strided in the source while another dim is contiguous there) goes by
 * square tiles, so both sides stay in cache. */
#include <string.h>
#include "cpu/dtype_scalars.h"
#include "cpu/kernels.h"
#include "cpu/strided.h"
#include "cpu/parallel.h"

/* A copy moves each element once: below this many elements one thread
 * finishes before a team of two would have paid for itself (and a busy
 * machine makes the team much dearer). */
#define COPY_PAR_MIN ((int64_t)1 << 18)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1

/* 8 x 8 block of 4-byte elements: src rows (stride ss) become dst
 * columns (dst rows of stride ds). Moves bits only. */
__attribute__((target("avx2"))) static inline void tr8x8_32(const uint32_t *s, int64_t ss, uint32_t *d, int64_t ds) {
    __m256 r0 = _mm256_loadu_ps((const float *)(s + 0 * ss)), r1 = _mm256_loadu_ps((const float *)(s + 1 * ss));
    __m256 r2 = _mm256_loadu_ps((const float *)(s + 2 * ss)), r3 = _mm256_loadu_ps((const float *)(s + 3 * ss));
    __m256 r4 = _mm256_loadu_ps((const float *)(s + 4 * ss)), r5 = _mm256_loadu_ps((const float *)(s + 5 * ss));
    __m256 r6 = _mm256_loadu_ps((const float *)(s + 6 * ss)), r7 = _mm256_loadu_ps((const float *)(s + 7 * ss));
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    _mm256_storeu_ps((float *)(d + 0 * ds), _mm256_permute2f128_ps(u0, u4, 0x20));
    _mm256_storeu_ps((float *)(d + 1 * ds), _mm256_permute2f128_ps(u1, u5, 0x20));
    _mm256_storeu_ps((float *)(d + 2 * ds), _mm256_permute2f128_ps(u2, u6, 0x20));
    _mm256_storeu_ps((float *)(d + 3 * ds), _mm256_permute2f128_ps(u3, u7, 0x20));
    _mm256_storeu_ps((float *)(d + 4 * ds), _mm256_permute2f128_ps(u0, u4, 0x31));
    _mm256_storeu_ps((float *)(d + 5 * ds), _mm256_permute2f128_ps(u1, u5, 0x31));
    _mm256_storeu_ps((float *)(d + 6 * ds), _mm256_permute2f128_ps(u2, u6, 0x31));
    _mm256_storeu_ps((float *)(d + 7 * ds), _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* 4 x 4 block of 8-byte elements. */
__attribute__((target("avx2"))) static inline void tr4x4_64(const uint64_t *s, int64_t ss, uint64_t *d, int64_t ds) {
    __m256d r0 = _mm256_loadu_pd((const double *)(s + 0 * ss)), r1 = _mm256_loadu_pd((const double *)(s + 1 * ss));
    __m256d r2 = _mm256_loadu_pd((const double *)(s + 2 * ss)), r3 = _mm256_loadu_pd((const double *)(s + 3 * ss));
    __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
    __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
    _mm256_storeu_pd((double *)(d + 0 * ds), _mm256_permute2f128_pd(t0, t2, 0x20));
    _mm256_storeu_pd((double *)(d + 1 * ds), _mm256_permute2f128_pd(t1, t3, 0x20));
    _mm256_storeu_pd((double *)(d + 2 * ds), _mm256_permute2f128_pd(t0, t2, 0x31));
    _mm256_storeu_pd((double *)(d + 3 * ds), _mm256_permute2f128_pd(t1, t3, 0x31));
}

/* One tile [j0, j1) x [i0, i1) of d[j * dj + i] = s[j + i * si], by
 * B x B blocks, the ragged edges element by element. */
#define TILE_SIMD(NAME, T, B, BLOCKFN)                                                                                 \
    __attribute__((target("avx2"))) static void NAME(T *d, int64_t dj, const T *s, int64_t si, int64_t j0, int64_t j1, \
                                                     int64_t i0, int64_t i1) {                                         \
        int64_t jb = j0 + (j1 - j0) / (B) * (B), ib = i0 + (i1 - i0) / (B) * (B);                                      \
        for (int64_t i = i0; i < ib; i += (B))                                                                         \
            for (int64_t j = j0; j < jb; j += (B)) BLOCKFN(s + j + i * si, si, d + j * dj + i, dj);                    \
        for (int64_t j = j0; j < j1; j++)                                                                              \
            for (int64_t i = (j < jb ? ib : i0); i < i1; i++) d[j * dj + i] = s[j + i * si];                           \
    }
TILE_SIMD(tile_32, uint32_t, 8, tr8x8_32)
TILE_SIMD(tile_64, uint64_t, 4, tr4x4_64)
#endif

/* Runs of the iterator's inner dim, a block of them a job of the
 * engine's caller-runs pool (about 16K elements a job: an attention
 * head's [b, h, s, d] copy has 12288 runs of 32); an OpenMP team per
 * copy waited for descheduled threads on a loaded host. */
typedef struct copy_job {
    emily_iter it;
    char *dbase;
    const char *sbase;
    size_t es;
} copy_job;

/* One case of copy_runs per element size. */
// clang-format off
#define COPY_RUN(BYTES, T)                                                                \
    case BYTES: {                                                                         \
        T *d = (T *)j->dbase + off[0];                                                    \
        const T *s = (const T *)j->sbase + off[1];                                        \
        for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];                            \
        break;                                                                            \
    }
// clang-format on

static void copy_runs(void *ctx, int64_t p0, int64_t p1) {
    const copy_job *j = ctx;
    int64_t n = j->it.inner_n, ds = j->it.inner_stride[0], ss = j->it.inner_stride[1];
    for (int64_t pos = p0; pos < p1; pos++) {
        int64_t off[2];
        emi_iter_offsets(&j->it, pos, off);
        if (ds == 1 && ss == 1) {
            memcpy(j->dbase + off[0] * (int64_t)j->es, j->sbase + off[1] * (int64_t)j->es, (size_t)n * j->es);
            continue;
        }
        switch (j->es) {
            EMI_ELEMENT_SIZES(COPY_RUN)
        default: break;
        }
    }
}

/* Tiled transposing copy. Dim `td` of the iterator's outer dims and the
 * inner dim form the tile plane; the other outer dims are walked as
 * "planes". One case per element size; tiles of TB x TB elements. */
// clang-format off
#define TILE_LOOP(BYTES, T)                                                     \
    case BYTES:                                                                 \
        TILE_LOOP_TB(T, (BYTES <= 4 ? 64 : 32))                                 \
        break;
#define TILE_LOOP_TB(T, TB)                                                     \
    EMILY_PAR_FOR(total >= COPY_PAR_MIN, u, units, {                      \
        int64_t q = u / (ntj * nti), t = u % (ntj * nti);                       \
        int64_t j0 = (t / nti) * (TB), i0 = (t % nti) * (TB);                  \
        int64_t j1 = j0 + (TB) < nj ? j0 + (TB) : nj;                           \
        int64_t i1 = i0 + (TB) < ni ? i0 + (TB) : ni;                           \
        int64_t off[2];                                                         \
        plane_offsets(&it, td, q, off);                                         \
        T *restrict d = (T *)dbase + off[0];                                    \
        const T *restrict s = (const T *)sbase + off[1];                        \
        for (int64_t j = j0; j < j1; j++)                                       \
            for (int64_t i = i0; i < i1; i++) d[j * dj + i * di] = s[j * sj + i * si]; \
    });
// clang-format on

/* Offsets of plane q: position q over the outer dims other than td. */
static void plane_offsets(const emily_iter *it, int td, int64_t q, int64_t *off) {
    off[0] = off[1] = 0;
    for (int d = it->rank - 1; d >= 0; d--) {
        if (d == td) continue;
        int64_t i = q % it->shape[d];
        q /= it->shape[d];
        off[0] += i * it->strides[d * 2];
        off[1] += i * it->strides[d * 2 + 1];
    }
}

static inline int64_t iabs64(int64_t x) { return x < 0 ? -x : x; }

#ifdef HAVE_X86
typedef struct tile_job {
    const emily_iter *it;
    int td;
    char *dbase;
    const char *sbase;
    size_t es;
    int64_t nj, ni, dj, si, tb, ntj, nti;
} tile_job;

static void tile_unit(const tile_job *j, int64_t u) {
    int64_t q = u / (j->ntj * j->nti), t = u % (j->ntj * j->nti);
    int64_t j0 = (t / j->nti) * j->tb, i0 = (t % j->nti) * j->tb;
    int64_t j1 = j0 + j->tb < j->nj ? j0 + j->tb : j->nj, i1 = i0 + j->tb < j->ni ? i0 + j->tb : j->ni;
    int64_t off[2];
    plane_offsets(j->it, j->td, q, off);
    if (j->es == 4)
        tile_32((uint32_t *)j->dbase + off[0], j->dj, (const uint32_t *)j->sbase + off[1], j->si, j0, j1, i0, i1);
    else tile_64((uint64_t *)j->dbase + off[0], j->dj, (const uint64_t *)j->sbase + off[1], j->si, j0, j1, i0, i1);
}

/* Tiles [lo, hi), one pool job: a job of one tile (8-16 KiB) spent a
 * large share of a transpose's time claiming it (two contended atomics a
 * tile), so a job takes about 16K elements' worth. */
static void tile_units(void *ctx, int64_t lo, int64_t hi) {
    for (int64_t u = lo; u < hi; u++) tile_unit(ctx, u);
}
#endif

emily_status emi_cpu_copy(emily_tensor *dst, const emily_tensor *src) {
    if (dst->size == 0) return EMILY_OK;
    const emily_tensor *ts[2] = {dst, src};
    emily_iter it;
    emily_status s = emi_iter_tensors(&it, 2, ts);
    if (s) return s;
    char *dbase = emily_tensor_base(dst);
    const char *sbase = emily_tensor_base(src);
    int64_t total = dst->size;
    size_t es = emily_dtype_size(dst->dtype);

    /* a transposing copy: the source's innermost stride is large while an
     * outer dim is (nearly) contiguous in the source */
    int td = -1;
    if (it.inner_n >= 8 && iabs64(it.inner_stride[1]) > 1) {
        int64_t best = iabs64(it.inner_stride[1]);
        for (int d = 0; d < it.rank; d++) {
            int64_t st = iabs64(it.strides[d * 2 + 1]);
            if (st != 0 && st < best && it.shape[d] >= 8) {
                best = st;
                td = d;
            }
        }
    }
    if (td >= 0) {
        int64_t nj = it.shape[td], ni = it.inner_n;
        int64_t dj = it.strides[td * 2], sj = it.strides[td * 2 + 1];
        int64_t di = it.inner_stride[0], si = it.inner_stride[1];
        int64_t tb = es <= 4 ? 64 : 32;
        int64_t ntj = (nj + tb - 1) / tb, nti = (ni + tb - 1) / tb;
        int64_t units = it.outer_n / nj * ntj * nti;
#ifdef HAVE_X86
        if ((es == 4 || es == 8) && di == 1 && sj == 1 && emi_cpu_isa() >= 1) {
            /* the common transpose: vector blocks, tiles on the pool */
            tile_job tj = {&it, td, dbase, sbase, es, nj, ni, dj, si, tb, ntj, nti};
            emi_cpu_parallel_ranges(units, 16384 / (tb * tb), total >= COPY_PAR_MIN, tile_units, &tj);
            emi_iter_free(&it);
            return EMILY_OK;
        }
#endif
        switch (es) {
            EMI_ELEMENT_SIZES(TILE_LOOP)
        default: s = emily_error(EMILY_ERR_INTERNAL, "copy: bad element size");
        }
        emi_iter_free(&it);
        return s;
    }

    if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16) {
        emi_iter_free(&it);
        return emily_error(EMILY_ERR_INTERNAL, "copy: bad element size");
    }
    copy_job j = {.it = it, .dbase = dbase, .sbase = sbase, .es = es};
    int64_t per = it.inner_n > 0 && it.inner_n < 16384 ? 16384 / it.inner_n : 1;
    emi_cpu_parallel_ranges(it.outer_n, per, total >= COPY_PAR_MIN, copy_runs, &j);
    emi_iter_free(&it);
    return EMILY_OK;
}
