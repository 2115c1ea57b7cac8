/* Shared pieces of op semantics: argument checks with clear messages,
 * axis normalization, broadcasting, output allocation. */
#ifndef EMILY_OPS_COMMON_H
#define EMILY_OPS_COMMON_H

#include <stdio.h>
#include "core/engine.h"

/* Formats a shape as "{2, 3}" into buf. */
const char *emi_shape_str(int rank, const int64_t *shape, char *buf, size_t size);
#define EMILY_SHAPE_STR(t) emi_shape_str((t)->rank, (t)->shape, (char[256]){0}, 256)

/* Fails unless t is non-NULL (names the op and argument). */
emily_status emi_check_tensor(const char *op, const char *arg, const emily_tensor *t);
emily_status emi_check_out(const char *op, emily_tensor **out);
/* The checks that open an op of a sum/product/max/min family (cumulative,
 * window_reduce), in this order: out; op in 0..last (else an error naming
 * `family`); the tensor and its type; no complex tensor where is_max_min;
 * then t's engine into *engine. The op's enum is passed as an int so that
 * both families share it. */
emily_status emi_check_sum_to_min(const char *name, const char *family, int op, int last, bool is_max_min,
                                  const emily_tensor *t, emily_tensor **out, const emily_engine **engine);
/* The checks an op with n tensor inputs starts with, in this order: the
 * output pointer (cleared), then each input non-NULL (names[i] names it
 * in the message). */
emily_status emi_check_args(const char *op, emily_tensor **out, int n, const emily_tensor *const *ts,
                            const char *const *names);
/* emi_check_args, then all n inputs on one device, whose engine it
 * stores. */
emily_status emi_check_inputs(const char *op, emily_tensor **out, int n, const emily_tensor *const *ts,
                              const char *const *names, const emily_engine **engine);
/* Fails unless all n tensors are on the same device; stores the engine. */
emily_status emi_check_same_device(const char *op, int n, const emily_tensor *const *ts, const emily_engine **engine);
/* Fails with "<op>: not implemented on the <engine> device" unless the
 * engine has `kernel` (for kernel op kop, on dtype). */
emily_status emi_need_kernel(const char *op, const emily_engine *e, emi_kernel kernel, int kop, emily_dtype dtype);
/* Normalizes a possibly negative axis against rank; fails if out of range. */
emily_status emi_norm_axis(const char *op, int axis, int rank, int *out);
/* Normalizes and checks a list of distinct axes; `mask` (rank entries,
 * may be NULL) marks them. */
emily_status emi_norm_axes(const char *op, int naxes, const int *axes, int rank, int *out, bool *mask);
/* Nx broadcasting of two shapes (right-aligned, 1 stretches). */
emily_status emi_broadcast_shapes(const char *op, int ra, const int64_t *sa, int rb, const int64_t *sb, int *rank,
                                  int64_t *shape);
/* A view of t broadcast to (rank, shape) by right alignment, zero strides
 * on stretched axes. */
emily_status emi_broadcast_view(const emily_tensor *t, int rank, const int64_t *shape, emily_tensor **out);
/* t converted to dtype (a new reference to t when already that type). */
emily_status emi_convert_to(const emily_tensor *t, emily_dtype dtype, emily_tensor **out);
/* t in dtype and contiguous (t itself, retained, when it is both). */
emily_status emi_contiguous_as(const emily_tensor *t, emily_dtype dtype, emily_tensor **out);
/* *r replaced by op(*r, v), v a scalar constant of type dt on device
 * (*r is released once the result is made; unchanged on failure). */
emily_status emi_apply_scalar(emily_device device, emily_binary_op op, emily_dtype dt, emily_scalar v,
                              emily_tensor **r);
/* Fresh contiguous tensor on t's device. */
emily_status emi_empty_like_device(const emily_tensor *t, emily_dtype dtype, int rank, const int64_t *shape,
                                   emily_tensor **out);

/* The index of name in names[0..n) (an op list's names), or -1 (also
 * for a NULL name). */
int emi_name_index(const char *const *names, int n, const char *name);

/* An op's scratch memory: nints int64_t entries (shapes, strides) in
 * ints and nflags flags, all false, in flags (axis masks), held in the
 * struct itself when they fit (the usual ranks: the op's path allocates
 * nothing) and on the heap for longer ones (the rank goes up to
 * EMILY_MAX_RANK); an out-of-memory error names op. emi_scratch_free
 * returns it (also after a failed get). The struct must not be copied. */
#define EMI_SCRATCH_INLINE 36 /* 2 x rank + 2 entries for ranks up to 17 */
typedef struct emi_scratch {
    int64_t *ints;
    bool *flags;
    int64_t ints_here[EMI_SCRATCH_INLINE];
    bool flags_here[EMI_SCRATCH_INLINE];
} emi_scratch;
emily_status emi_scratch_get(const char *op, emi_scratch *sc, size_t nints, size_t nflags);
void emi_scratch_free(emi_scratch *sc);

/* Releases every tensor in a NULL-or-tensor array. */
void emi_release_all(int n, emily_tensor **ts);

#endif
