// Built without CUDA: no tensor is on a device, so nothing asks for a stream.
#include "base/error.h"
#include "distributed/cuda/stream_order.h"

namespace strata {

StreamId compute_stream() {
  throw Error("compute_stream: strata was built without CUDA (STRATA_CUDA=OFF or no nvcc at configure time)");
}

}  // namespace strata
