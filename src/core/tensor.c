/* Tensor handles, buffers and views. */
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"

static atomic_llong live_tensors, live_buffers;
int64_t emily_live_tensors(void) { return atomic_load(&live_tensors); }
int64_t emily_live_buffers(void) { return atomic_load(&live_buffers); }

emily_scalar emily_scalar_int(int64_t v) { return (emily_scalar){.kind = EMILY_SCALAR_INT, .i = v}; }
emily_scalar emily_scalar_float(double v) { return (emily_scalar){.kind = EMILY_SCALAR_FLOAT, .re = v}; }
emily_scalar emily_scalar_complex(double re, double im) {
    return (emily_scalar){.kind = EMILY_SCALAR_COMPLEX, .re = re, .im = im};
}

bool emi_shape_size(int rank, const int64_t *shape, int64_t *size) {
    /* the product of the non-zero dimensions is what bounds strides
     * (emi_row_major_strides counts a 0 as 1), so it is checked even
     * after a 0 */
    int64_t n = 1;
    bool zero = false;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) return false;
        if (shape[i] == 0) {
            zero = true;
            continue;
        }
        if (n > EMILY_MAX_ELEMENTS / shape[i]) return false;
        n *= shape[i];
    }
    *size = zero ? 0 : n;
    return true;
}

/* The rank and shape checks of every tensor made (emily/tensor.h's
 * limits), with `op`'s name in the message. */
static emily_status check_shape(const char *op, int rank, const int64_t *shape, int64_t *size) {
    if (rank < 0 || rank > EMILY_MAX_RANK)
        return emily_error(EMILY_ERR_SHAPE, "%s: rank %d is outside 0..%d (EMILY_MAX_RANK)", op, rank, EMILY_MAX_RANK);
    if (rank > 0 && !shape) return emily_error(EMILY_ERR_SHAPE, "%s: NULL shape", op);
    if (!emi_shape_size(rank, shape, size))
        return emily_error(EMILY_ERR_SHAPE,
                           "%s: invalid shape (a negative dimension, or too many elements: the "
                           "non-zero dimensions multiply to more than %lld)",
                           op, (long long)EMILY_MAX_ELEMENTS);
    return EMILY_OK;
}

void emi_row_major_strides(int rank, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

bool emi_strides_contiguous(int rank, const int64_t *shape, const int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        if (shape[i] == 0) return true;
        if (shape[i] != 1 && strides[i] != s) return false;
        s *= shape[i];
    }
    return true;
}

emily_status emi_buffer_alloc(emily_device device, size_t nbytes, emily_buffer **out) {
    const emily_engine *e;
    emily_status s = emi_engine_get(device, &e);
    if (s) return s;
    emily_buffer *b = calloc(1, sizeof *b);
    if (!b) return emily_error(EMILY_ERR_MEMORY, "buffer: out of host memory");
    if (nbytes > 0) {
        s = e->alloc(device.index, nbytes, &b->data);
        if (s) {
            free(b);
            return s;
        }
    }
    atomic_init(&b->refcount, 1);
    b->device = device;
    b->nbytes = nbytes;
    atomic_fetch_add(&live_buffers, 1);
    *out = b;
    return EMILY_OK;
}

void emi_buffer_mirror(emily_buffer *b, const void *bytes, size_t nbytes) {
    const emily_engine *e = emi_engine_for(b->device.type);
    if (!e || e->host_addressable || nbytes != b->nbytes || nbytes > sizeof b->mirror) return;
    memcpy(b->mirror, bytes, nbytes);
    b->mirror_bytes = (uint8_t)nbytes;
}

const void *emi_tensor_mirrored(const emily_tensor *t) {
    size_t es = emily_dtype_size(t->dtype);
    if (t->size != 1 || t->offset < 0 || (size_t)t->offset * es + es > t->buffer->mirror_bytes) return NULL;
    return t->buffer->mirror + (size_t)t->offset * es;
}

void emi_buffer_release(emily_buffer *b) {
    if (!b || atomic_fetch_sub(&b->refcount, 1) != 1) return;
    if (b->data) {
        const emily_engine *e = emi_engine_for(b->device.type);
        if (e) e->free(b->device.index, b->data);
    }
    atomic_fetch_sub(&live_buffers, 1);
    free(b);
}

emily_status emi_tensor_wrap(emily_buffer *buffer, emily_dtype dtype, int rank, const int64_t *shape,
                             const int64_t *strides, int64_t offset, emily_tensor **out) {
    int64_t size;
    emily_status s = check_shape("tensor", rank, shape, &size);
    if (s) return s;
    emily_tensor *t = malloc(sizeof *t + 2 * (size_t)rank * sizeof(int64_t));
    if (!t) return emily_error(EMILY_ERR_MEMORY, "tensor: out of host memory");
    atomic_init(&t->refcount, 1);
    t->dtype = dtype;
    t->rank = rank;
    t->shape = t->storage;
    t->strides = t->storage + rank;
    if (rank) memcpy(t->shape, shape, (size_t)rank * sizeof(int64_t));
    if (strides) {
        if (rank) memcpy(t->strides, strides, (size_t)rank * sizeof(int64_t));
    } else {
        emi_row_major_strides(rank, shape, t->strides);
    }
    t->offset = offset;
    t->size = size;
    t->buffer = buffer;
    atomic_fetch_add(&buffer->refcount, 1);
    atomic_fetch_add(&live_tensors, 1);
    *out = t;
    return EMILY_OK;
}

emily_status emi_tensor_view(const emily_tensor *t, int rank, const int64_t *shape, const int64_t *strides,
                             int64_t offset, emily_tensor **out) {
    return emi_tensor_wrap(t->buffer, t->dtype, rank, shape, strides, offset, out);
}

emily_status emily_empty(emily_device device, emily_dtype dtype, int rank, const int64_t *shape, emily_tensor **out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "empty: NULL output");
    *out = NULL;
    if (!emily_dtype_known(dtype)) return emily_error(EMILY_ERR_TYPE, "empty: invalid dtype %d", (int)dtype);
    int64_t size;
    emily_status s = check_shape("empty", rank, shape, &size);
    if (s) return s;
    emily_buffer *b;
    s = emi_buffer_alloc(device, (size_t)size * emily_dtype_size(dtype), &b);
    if (s) return s;
    s = emi_tensor_wrap(b, dtype, rank, shape, NULL, 0, out);
    emi_buffer_release(b); /* the tensor holds it now (or it is freed) */
    return s;
}

void emily_tensor_retain(emily_tensor *t) {
    if (t) atomic_fetch_add(&t->refcount, 1);
}

void emily_tensor_release(emily_tensor *t) {
    if (!t || atomic_fetch_sub(&t->refcount, 1) != 1) return;
    emi_buffer_release(t->buffer);
    atomic_fetch_sub(&live_tensors, 1);
    free(t);
}

emily_dtype emily_tensor_dtype(const emily_tensor *t) { return t ? t->dtype : EMILY_DTYPE_AUTO; }
int emily_tensor_rank(const emily_tensor *t) { return t ? t->rank : -1; }
const int64_t *emily_tensor_shape(const emily_tensor *t) { return t ? t->shape : NULL; }
const int64_t *emily_tensor_strides(const emily_tensor *t) { return t ? t->strides : NULL; }
int64_t emily_tensor_size(const emily_tensor *t) { return t ? t->size : 0; }
size_t emily_tensor_nbytes(const emily_tensor *t) { return t ? (size_t)t->size * emily_dtype_size(t->dtype) : 0; }
emily_device emily_tensor_device(const emily_tensor *t) { return t ? t->buffer->device : EMILY_CPU; }
bool emily_tensor_is_contiguous(const emily_tensor *t) {
    return t && emi_strides_contiguous(t->rank, t->shape, t->strides);
}

/* Sub-byte elements in Nx's binary form: element i is bits [i*b, i*b+b)
 * of the byte stream, most significant bit first (Nx's bitstrings:
 * s4 [1, -2, 3] is <<0x1e, 0x3::4>>, padded here with zero bits to a
 * whole byte). In memory each element has a byte, sign- or
 * zero-extended. */
static void unpack_sub_byte(emily_dtype dtype, const uint8_t *packed, uint8_t *bytes, int64_t n) {
    int b = emily_dtype_bits(dtype);
    bool is_signed = emily_dtype_kind_of(dtype) == EMILY_KIND_SIGNED;
    for (int64_t i = 0; i < n; i++) {
        int64_t bit = i * b;
        unsigned v = (packed[bit / 8] >> (8 - b - (int)(bit % 8))) & ((1u << b) - 1u);
        if (is_signed && (v >> (b - 1))) v |= ~((1u << b) - 1u); /* sign-extend */
        bytes[i] = (uint8_t)v;
    }
}

static void pack_sub_byte(emily_dtype dtype, const uint8_t *bytes, uint8_t *packed, int64_t n) {
    int b = emily_dtype_bits(dtype);
    memset(packed, 0, emily_dtype_binary_size(dtype, n));
    for (int64_t i = 0; i < n; i++) {
        int64_t bit = i * b;
        packed[bit / 8] |= (uint8_t)((bytes[i] & ((1u << b) - 1u)) << (8 - b - (int)(bit % 8)));
    }
}

static bool is_sub_byte(emily_dtype dtype) { return emily_dtype_bits(dtype) < 8; }

emily_status emily_from_binary(emily_device device, emily_dtype dtype, int rank, const int64_t *shape, const void *data,
                               size_t nbytes, emily_tensor **out) {
    if (!out) return emily_error(EMILY_ERR_ARGUMENT, "from_binary: NULL output");
    *out = NULL;
    emily_tensor *t;
    emily_status s = emily_empty(device, dtype, rank, shape, &t);
    if (s) return s;
    size_t want = emily_dtype_binary_size(dtype, t->size), stored = emily_tensor_nbytes(t);
    if (nbytes != want) {
        long long count = (long long)emily_tensor_size(t);
        emily_tensor_release(t);
        return emily_error(EMILY_ERR_ARGUMENT, "from_binary: %zu bytes given, a %s tensor of %lld elements needs %zu",
                           nbytes, emily_dtype_name(dtype), count, want);
    }
    if (want && !data) {
        emily_tensor_release(t);
        return emily_error(EMILY_ERR_ARGUMENT, "from_binary: NULL data");
    }
    if (want) {
        uint8_t *unpacked = NULL;
        if (is_sub_byte(dtype)) {
            if (!(unpacked = malloc(stored))) {
                emily_tensor_release(t);
                return emily_error(EMILY_ERR_MEMORY, "from_binary: out of host memory");
            }
            unpack_sub_byte(dtype, data, unpacked, t->size);
            data = unpacked;
        }
        s = emi_engine_for(device.type)->upload(device.index, t->buffer->data, data, stored);
        if (!s) emi_buffer_mirror(t->buffer, data, stored);
        free(unpacked);
        if (s) {
            emily_tensor_release(t);
            return s;
        }
    }
    *out = t;
    return EMILY_OK;
}

emily_status emily_contiguous(const emily_tensor *t, emily_tensor **out) {
    if (!t || !out) return emily_error(EMILY_ERR_ARGUMENT, "contiguous: NULL argument");
    if (t->offset == 0 && emily_tensor_is_contiguous(t)) {
        emily_tensor_retain((emily_tensor *)t);
        *out = (emily_tensor *)t;
        return EMILY_OK;
    }
    emily_tensor *c;
    emily_status s = emily_empty(t->buffer->device, t->dtype, t->rank, t->shape, &c);
    if (s) return s;
    if (c->size) {
        s = emi_engine_for(t->buffer->device.type)->copy->copy(c, t);
        if (s) {
            emily_tensor_release(c);
            return s;
        }
    }
    *out = c;
    return EMILY_OK;
}

emily_status emily_to_binary(const emily_tensor *t, void *dst, size_t nbytes) {
    if (!t) return emily_error(EMILY_ERR_ARGUMENT, "to_binary: NULL tensor");
    size_t want = emily_dtype_binary_size(t->dtype, t->size), stored = emily_tensor_nbytes(t);
    if (nbytes != want)
        return emily_error(EMILY_ERR_ARGUMENT, "to_binary: buffer of %zu bytes, tensor has %zu", nbytes, want);
    if (want == 0) return EMILY_OK;
    if (!dst) return emily_error(EMILY_ERR_ARGUMENT, "to_binary: NULL destination");
    emily_tensor *c;
    emily_status s = emily_contiguous(t, &c);
    if (s) return s;
    const emily_engine *e = emi_engine_for(c->buffer->device.type);
    uint8_t *bytes = is_sub_byte(t->dtype) ? malloc(stored) : dst;
    if (!bytes) s = emily_error(EMILY_ERR_MEMORY, "to_binary: out of host memory");
    else s = e->download(c->buffer->device.index, bytes, emily_tensor_base(c), stored);
    if (!s && bytes != dst) pack_sub_byte(t->dtype, bytes, dst, t->size);
    if (bytes != dst) free(bytes);
    emily_tensor_release(c);
    return s;
}

emily_status emily_host_data(const emily_tensor *t, const void **data) {
    if (!t || !data) return emily_error(EMILY_ERR_ARGUMENT, "host_data: NULL argument");
    const emily_engine *e = emi_engine_for(t->buffer->device.type);
    if (!e->host_addressable || !emily_tensor_is_contiguous(t))
        return emily_error(EMILY_ERR_ARGUMENT, "host_data: tensor is not contiguous in host memory");
    emily_status s = e->synchronize(t->buffer->device.index);
    if (s) return s;
    *data = emily_tensor_base(t);
    return EMILY_OK;
}

emily_status emily_to_device(const emily_tensor *t, emily_device device, emily_tensor **out) {
    if (!t || !out) return emily_error(EMILY_ERR_ARGUMENT, "to_device: NULL argument");
    *out = NULL;
    emily_device from = t->buffer->device;
    if (emily_device_equal(from, device)) return emily_contiguous(t, out);
    emily_tensor *c, *r;
    emily_status s = emily_contiguous(t, &c);
    if (s) return s;
    s = emily_empty(device, t->dtype, t->rank, t->shape, &r);
    if (s) {
        emily_tensor_release(c);
        return s;
    }
    size_t n = emily_tensor_nbytes(c);
    if (n) {
        const emily_engine *ef = emi_engine_for(from.type), *et = emi_engine_for(device.type);
        if (ef->host_addressable) {
            s = ef->synchronize(from.index);
            if (!s) s = et->upload(device.index, r->buffer->data, emily_tensor_base(c), n);
            if (!s) emi_buffer_mirror(r->buffer, emily_tensor_base(c), n);
        } else if (et->host_addressable) {
            s = ef->download(from.index, r->buffer->data, emily_tensor_base(c), n);
        } else { /* device to device through host memory */
            void *tmp = malloc(n);
            if (!tmp) s = emily_error(EMILY_ERR_MEMORY, "to_device: out of host memory");
            else {
                s = ef->download(from.index, tmp, emily_tensor_base(c), n);
                if (!s) s = et->upload(device.index, r->buffer->data, tmp, n);
                if (!s) emi_buffer_mirror(r->buffer, tmp, n);
                free(tmp);
            }
        }
    }
    emily_tensor_release(c);
    return emi_hand_out(s, r, out);
}

emily_status emi_hand_out(emily_status s, emily_tensor *res, emily_tensor **out) {
    if (s) {
        emily_tensor_release(res);
        return s;
    }
    *out = res;
    return EMILY_OK;
}
