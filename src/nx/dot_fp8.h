/* The dispatcher's dot of two 8-bit float tensors on a device with an
 * FP8 kernel (src/nx/dot_fp8.c). */
#ifndef EMILY_NX_DOT_FP8_H
#define EMILY_NX_DOT_FP8_H

#include "nx/callback.h"

/* Both tensors 8-bit floats in a pair the tensor cores multiply (not
 * e5m2 x e5m2). */
bool emi_dot_fp8_operands(const emily_tensor *a, const emily_tensor *b);

/* A `dot` call (RUN mode) of two such tensors with an f8, f8_e4m3fn,
 * f32, bf16 or f16 template, on a device whose engine has an FP8 kernel:
 * emi_dispatch_narrow hands it to emi_dispatch_dot_fp8 instead of
 * widening it. */
bool emi_dot_fp8_routes(const emily_callback_entry *entry, emily_device device, const emily_value *out,
                        const emily_value *args, size_t nargs, emily_dispatch_mode mode);
emily_status emi_dispatch_dot_fp8(const emily_callback_entry *entry, emily_device device, const emily_value *out,
                                  const emily_value *args, size_t nargs, emily_dispatch_result *result);

#endif
