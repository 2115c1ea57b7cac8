// The transcendental unary ops on CUDA (rules FLOATING and FLOATING_REAL:
// exp ... cbrt with real and complex forms, erf, erfc, erf_inv): their
// kernels of unary_ops.cuh, compiled apart from the others (unary.cu).
#include "cuda/unary_ops.cuh"

namespace emily_cuda {

unary_run unary_pick_math(emily_unary_op op, emily_dtype sd, emily_dtype dd) { return pick_unary<true>(op, sd, dd); }

} // namespace emily_cuda
