/* Tensors: a refcounted handle holding dtype, shape, strides and offset
 * over a refcounted device buffer. Views (reshape, transpose, broadcast,
 * slice, squeeze, reverse) share the buffer. Shapes have any rank
 * (including 0) and may contain zero-size dimensions.
 *
 * Ownership: every function that returns a tensor through an `out`
 * argument gives the caller one reference; emily_tensor_release drops
 * it. Inputs are borrowed. */
#ifndef EMILY_TENSOR_H
#define EMILY_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "emily/device.h"
#include "emily/dtype.h"
#include "emily/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct emily_tensor emily_tensor;

/* Limits on shapes, checked wherever a tensor or view is made (failing
 * with EMILY_ERR_SHAPE):
 * - at most EMILY_MAX_RANK dimensions. Nx has no limit, but a rank in the
 *   thousands is never a real tensor, and ops take a step per axis.
 * - the product of the non-zero dimensions at most EMILY_MAX_ELEMENTS,
 *   wherever a zero dimension sits ({0, 2^62, 2^62} is refused like
 *   {2^62, 2^62, 0}): a tensor's strides, offsets and byte counts, and
 *   those of any view or part of its shape, then never overflow. */
#define EMILY_MAX_RANK 1024
#define EMILY_MAX_ELEMENTS (INT64_MAX / 16) /* 2^59 - 1: bytes fit in int64 */

/* A scalar value as Nx passes it: an integer, a float (NaN and
 * infinities included) or a complex number. */
typedef enum emily_scalar_kind {
    EMILY_SCALAR_INT,    /* value.i */
    EMILY_SCALAR_UINT,   /* value.u, for integers above INT64_MAX */
    EMILY_SCALAR_FLOAT,  /* value.re */
    EMILY_SCALAR_COMPLEX /* value.re, value.im */
} emily_scalar_kind;

typedef struct emily_scalar {
    emily_scalar_kind kind;
    int64_t i;
    uint64_t u;
    double re, im;
} emily_scalar;

EMILY_API emily_scalar emily_scalar_int(int64_t v);
EMILY_API emily_scalar emily_scalar_float(double v);
EMILY_API emily_scalar emily_scalar_complex(double re, double im);

/* Uninitialized contiguous tensor. */
EMILY_API emily_status emily_empty(emily_device device, emily_dtype dtype, int rank, const int64_t *shape,
                                   emily_tensor **out);
/* Copies `nbytes` of row-major, little-endian data in Nx's binary form
 * into a new tensor on `device`. `nbytes` must be
 * emily_dtype_binary_size(dtype, elements): the tensor's byte size, but
 * for s2, s4, u2 and u4, whose elements come packed as in Nx's
 * bitstrings (first element in the most significant bits, the last byte
 * padded with zero bits). */
EMILY_API emily_status emily_from_binary(emily_device device, emily_dtype dtype, int rank, const int64_t *shape,
                                         const void *data, size_t nbytes, emily_tensor **out);
/* Writes the tensor's elements, row-major, into `dst` in Nx's binary
 * form (`nbytes` must be emily_dtype_binary_size of the type and the
 * element count; sub-byte elements packed as emily_from_binary reads
 * them). Waits for pending work. */
EMILY_API emily_status emily_to_binary(const emily_tensor *t, void *dst, size_t nbytes);
/* If the tensor is contiguous and lives in host memory, stores a pointer
 * to its bytes (valid while the tensor lives) after waiting for pending
 * work; otherwise fails with EMILY_ERR_ARGUMENT. For zero-copy reads. */
EMILY_API emily_status emily_host_data(const emily_tensor *t, const void **data);
/* Explicit transfer between devices (a new tensor; contiguous). */
EMILY_API emily_status emily_to_device(const emily_tensor *t, emily_device device, emily_tensor **out);
/* A contiguous copy on the same device (a new reference to `t` itself
 * when it is already contiguous and starts at offset 0). */
EMILY_API emily_status emily_contiguous(const emily_tensor *t, emily_tensor **out);

EMILY_API void emily_tensor_retain(emily_tensor *t);
EMILY_API void emily_tensor_release(emily_tensor *t); /* NULL is ignored */

EMILY_API emily_dtype emily_tensor_dtype(const emily_tensor *t);
EMILY_API int emily_tensor_rank(const emily_tensor *t);
EMILY_API const int64_t *emily_tensor_shape(const emily_tensor *t);
EMILY_API const int64_t *emily_tensor_strides(const emily_tensor *t); /* in elements */
EMILY_API int64_t emily_tensor_size(const emily_tensor *t);           /* elements */
EMILY_API size_t emily_tensor_nbytes(const emily_tensor *t);
EMILY_API emily_device emily_tensor_device(const emily_tensor *t);
EMILY_API bool emily_tensor_is_contiguous(const emily_tensor *t);

/* Number of live tensor handles and buffers in this process (for leak
 * tests). */
EMILY_API int64_t emily_live_tensors(void);
EMILY_API int64_t emily_live_buffers(void);

#ifdef __cplusplus
}
#endif
#endif
