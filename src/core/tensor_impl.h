/* Internal layout of tensors and buffers, for op semantics and kernels. */
#ifndef EMILY_TENSOR_IMPL_H
#define EMILY_TENSOR_IMPL_H

#include <stdatomic.h>
#include "emily/tensor.h"

typedef struct emily_buffer {
    atomic_long refcount;
    emily_device device;
    void *data; /* device pointer (host pointer for the CPU) */
    size_t nbytes;
    void *engine_state; /* owned by the engine (e.g. a CUDA event) */
    /* A small buffer of a device without host-addressable memory, filled
     * from host bytes (from_binary, to_device): those bytes, so that the
     * op layer can read a scalar operand's value (ops/binary.c's choice
     * of compute type) without a device round trip. Buffers are never
     * written after they are filled, so the copy stays true. */
    unsigned char mirror[16];
    uint8_t mirror_bytes; /* 0: no copy */
} emily_buffer;

struct emily_tensor {
    atomic_long refcount;
    emily_dtype dtype;
    int rank;
    int64_t *shape;   /* rank entries (points into storage below) */
    int64_t *strides; /* rank entries, in elements; 0 for broadcast axes */
    int64_t offset;   /* in elements, from buffer->data */
    int64_t size;     /* product of shape */
    emily_buffer *buffer;
    int64_t storage[]; /* shape then strides */
};

/* New tensor header over `buffer` (takes a reference to it), with the
 * given shape and strides (NULL strides: row-major contiguous). */
emily_status emi_tensor_wrap(emily_buffer *buffer, emily_dtype dtype, int rank, const int64_t *shape,
                             const int64_t *strides, int64_t offset, emily_tensor **out);
/* A view of t with new shape/strides/offset (shares the buffer). */
emily_status emi_tensor_view(const emily_tensor *t, int rank, const int64_t *shape, const int64_t *strides,
                             int64_t offset, emily_tensor **out);
emily_status emi_buffer_alloc(emily_device device, size_t nbytes, emily_buffer **out);
/* Records host bytes just copied into t's (whole, small) buffer as its
 * mirror; a no-op for host-addressable devices and larger buffers. */
void emi_buffer_mirror(emily_buffer *b, const void *bytes, size_t nbytes);
/* The bytes of t's single element from its buffer's mirror, or NULL. */
const void *emi_tensor_mirrored(const emily_tensor *t);
void emi_buffer_release(emily_buffer *b);

/* Row-major element pointer base (host devices only). NULL for a
 * zero-size tensor, which has no memory: no offset is applied to it
 * (arithmetic on a null pointer is undefined even by 0). */
static inline void *emily_tensor_base(const emily_tensor *t) {
    if (!t->buffer->data) return NULL;
    return (char *)t->buffer->data + (size_t)t->offset * emily_dtype_size(t->dtype);
}
bool emi_strides_contiguous(int rank, const int64_t *shape, const int64_t *strides);
void emi_row_major_strides(int rank, const int64_t *shape, int64_t *strides);
/* Product of shape (0 when a dimension is 0); false for a negative
 * dimension or when the product of the non-zero dimensions passes
 * EMILY_MAX_ELEMENTS (emily/tensor.h), whatever the position of a 0. */
bool emi_shape_size(int rank, const int64_t *shape, int64_t *size);
/* An op's last step (emily_to_device's too): on success hands res to
 * *out, otherwise releases it (NULL or not); returns s. */
emily_status emi_hand_out(emily_status s, emily_tensor *res, emily_tensor **out);

#endif
