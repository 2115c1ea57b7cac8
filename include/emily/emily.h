/* libemily: a tensor engine with Nx's semantics. */
#ifndef EMILY_H
#define EMILY_H

#include "emily/status.h"
#include "emily/dtype.h"
#include "emily/device.h"
#include "emily/tensor.h"
#include "emily/ops.h"
#include "emily/dispatch.h"
#include "emily/graph.h"
#include "emily/gguf.h"

#define EMILY_VERSION "0.1.0"
EMILY_API const char *emily_version(void);

#endif
