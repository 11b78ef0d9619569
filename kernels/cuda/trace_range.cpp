// NVTX 3 ranges for kernels/runtime/trace_range.h. NVTX is header-only (CUDA::nvtx3):
// without a tool attached, a push or pop is a call through a null-checked
// pointer; under nsys the injected library records the range.
#include "kernels/runtime/trace_range.h"

#include <nvtx3/nvToolsExt.h>

namespace strata {

void trace_range_push(const char* name) { nvtxRangePushA(name); }

void trace_range_pop() { nvtxRangePop(); }

}  // namespace strata
