/* What the conv op layer offers besides emily_conv (src/ops/conv.c). */
#ifndef EMILY_OPS_CONV_H
#define EMILY_OPS_CONV_H

#include "emily/emily.h"

/* The shape emily_conv(input, kernel, opts) gives (rank <= 64 into
 * shape), or its shape and argument errors, without computing anything. */
emily_status emi_conv_output_shape(const emily_tensor *input, const emily_tensor *kernel, const emily_conv_opts *opts,
                                   int *rank, int64_t *shape);

#endif
