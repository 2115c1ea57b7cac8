/* Linked when libemily is built without the CUDA engine. */
#include "core/engine.h"
const emily_engine *emily_cuda_engine(void) { return NULL; }
