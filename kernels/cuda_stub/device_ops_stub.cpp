// Device ops in a build without CUDA: every call names what is missing.
#include <string>

#include "base/error.h"
#include "kernels/device_ops_backends.h"

namespace strata::cuda_dev {
namespace {
[[noreturn]] void no_cuda(const char* op) {
  throw Error(
      std::string("device op ") + op +
      " on a cuda tensor, but strata was built without CUDA (STRATA_CUDA=OFF or no nvcc at configure time)");
}
}  // namespace

void fill(const TensorView&, double) { no_cuda("fill"); }
void convert(const TensorView&, const TensorView&) { no_cuda("convert"); }
void strided_copy(const TensorView&, const std::vector<int64_t>&, const TensorView&) {
  no_cuda("strided_copy");
}
void copy(const TensorView&, const TensorView&) { no_cuda("copy"); }
void axpy(double, const TensorView&, const TensorView&) { no_cuda("axpy"); }
void scale(const TensorView&, double) { no_cuda("scale"); }
void sum_of_squares(const TensorView*, size_t, const TensorView&) { no_cuda("sum_of_squares"); }
void unscale_found_inf(const TensorView*, size_t, float, const TensorView&) { no_cuda("unscale_found_inf"); }
void sgd_step(const TensorView*, const TensorView*, const TensorView*, size_t, const dev::SgdStep&, float) {
  no_cuda("sgd_step");
}
void adamw_step(const TensorView*, const TensorView*, const TensorView*, const TensorView*, size_t,
                const dev::AdamWStep&, float) {
  no_cuda("adamw_step");
}
void normalize_u8(const TensorView&, const TensorView&, const float*, const float*, size_t) {
  no_cuda("normalize_u8");
}
void synchronize() {}

void register_kernels(DeviceOpStubs& s) {
#define STRATA_X(fn) s.fn.set(Device::cuda, &fn);
  STRATA_DEVICE_OP_LIST(STRATA_X)
#undef STRATA_X
  s.synchronize.set(Device::cuda, &synchronize);
}

}  // namespace strata::cuda_dev
