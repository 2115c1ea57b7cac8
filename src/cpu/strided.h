/* Walking strided tensors on the host.
 *
 * An emily_iter describes up to EMILY_ITER_MAX_OPS operands sharing one
 * shape, each with its own strides (in elements). Dimensions of size 1
 * are dropped and adjacent dimensions that are contiguous for every
 * operand are merged, so a kernel runs one tight inner loop of
 * `inner_n` elements with per-operand `inner_stride` for each of
 * `outer_n` outer positions. Outer positions are randomly accessible,
 * which lets OpenMP split them. */
#ifndef EMILY_CPU_STRIDED_H
#define EMILY_CPU_STRIDED_H

#include <stdint.h>
#include "core/tensor_impl.h"

#define EMILY_ITER_MAX_OPS 4

typedef struct emily_iter {
    int nops;
    int rank;        /* outer dimensions, after merging */
    int64_t inner_n; /* innermost run length (1 for a scalar) */
    int64_t outer_n; /* number of inner runs */
    int64_t inner_stride[EMILY_ITER_MAX_OPS];
    int64_t *shape;   /* rank outer dims */
    int64_t *strides; /* rank * nops, strides[d * nops + k] */
} emily_iter;

/* shape has `rank` dims; strides[k] the k-th operand's strides. */
emily_status emi_iter_init(emily_iter *it, int nops, int rank, const int64_t *shape, const int64_t *const *strides);
void emi_iter_free(emily_iter *it);
/* Element offsets (relative to each operand's base) of outer run `pos`. */
void emi_iter_offsets(const emily_iter *it, int64_t pos, int64_t *offsets);

/* Convenience: init from tensors (all with the same shape). */
emily_status emi_iter_tensors(emily_iter *it, int nops, const emily_tensor *const *ts);

/* The widest vector ISA this CPU runs (checked once): 2 AVX-512F,
 * 1 AVX2, 0 anything else. Kernels with function-level target
 * attributes pick their path with it. */
int emi_cpu_isa(void);

/* for (int64_t VAR = 0; VAR < COUNT; VAR++) { BODY }, split over the
 * OpenMP threads when PAR is true. The serial case runs without entering
 * OpenMP at all: a `parallel for if(false)` still builds a team of one,
 * which costs about a microsecond, more than a small kernel. */
#define EMILY_PAR_FOR(PAR, VAR, COUNT, ...)                                                                           \
    do {                                                                                                              \
        int64_t emily_n_ = (COUNT);                                                                                   \
        if (PAR) {                                                                                                    \
            _Pragma("omp parallel for schedule(static)") for (int64_t VAR = 0; VAR < emily_n_; VAR++) { __VA_ARGS__ } \
        } else {                                                                                                      \
            for (int64_t VAR = 0; VAR < emily_n_; VAR++) { __VA_ARGS__ }                                              \
        }                                                                                                             \
    } while (0)

/* Splits [0, n) work into chunks worth running on several threads:
 * true when n elements are enough to pay for a thread team. */
#define EMILY_PARALLEL_MIN 32768
#endif
