// compute_stream() for CUDA builds (the handle and communicator sides are in
// nccl_communicator.cpp).
#include "distributed/cuda/stream_order.h"

#include "kernels/cuda/context.h"

namespace strata {

StreamId compute_stream() { return reinterpret_cast<StreamId>(cuda::context().stream); }

}  // namespace strata
