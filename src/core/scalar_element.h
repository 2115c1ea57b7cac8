/* One element of a dtype holding an emily_scalar: the value constant()
 * fills with, converted on the host with Nx's number -> dtype rules
 * (core/scalar_convert.h), the same bytes for every device. */
#ifndef EMILY_CORE_SCALAR_ELEMENT_H
#define EMILY_CORE_SCALAR_ELEMENT_H

#include "emily/tensor.h"
#include "core/scalar_convert.h"

/* Writes emily_dtype_size(dtype) bytes at out. */
static inline void emi_scalar_element(emily_dtype dtype, const emily_scalar *v, unsigned char *out) {
    switch (v->kind) {
    case EMILY_SCALAR_INT: emily_sc_store_int((int)dtype, (uint64_t)v->i, 0, out); break;
    case EMILY_SCALAR_UINT: emily_sc_store_int((int)dtype, v->u, 1, out); break;
    case EMILY_SCALAR_FLOAT: emily_sc_store_complex((int)dtype, v->re, 0.0, out); break;
    case EMILY_SCALAR_COMPLEX: emily_sc_store_complex((int)dtype, v->re, v->im, out); break;
    }
}

#endif
