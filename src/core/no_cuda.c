/* Linked when libemily is built without the CUDA engine. */
#include "core/engine.h"
const emily_engine *emi_cuda_engine(void) { return NULL; }
