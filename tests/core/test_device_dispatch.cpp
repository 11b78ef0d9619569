// Mixed devices are refused where they meet, naming what met: run_op checks its
// inputs before it allocates or dispatches (the message names the op and each
// input's name or index, shape, dtype and device), the kernel dispatcher checks
// views, and gradient accumulation checks both sides. Device tensors here are host
// bytes tagged cuda (Storage::wrap); every path tested throws before touching them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "core/autograd.h"
#include "core/ops.h"
#include "core/storage.h"
#include "kernels/backends.h"

using namespace strata;

namespace {
Tensor tagged_cuda(std::vector<float>& mem, const Shape& shape) {
  return Tensor::from_storage(Storage::wrap(mem.data(), mem.size() * sizeof(float), Device::cuda), shape,
                              DType::f32);
}
std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(DeviceDispatch, RunOpNamesTheOpAndEveryInputOnMixedDevices) {
  std::vector<float> mem(6, 9.0f);
  Tensor gpu = tagged_cuda(mem, {2, 3});
  gpu.set_name("h.bias");
  Tensor cpu = Tensor::ones({2, 3});
  std::string m = message_of([&] { (void)add(cpu, gpu); });
  ASSERT_FALSE(m.empty()) << "mixed devices accepted";
  for (const char* part : {"add", "input 0", "'h.bias'", "[2, 3]", "cpu", "cuda"})
    EXPECT_NE(m.find(part), std::string::npos) << "missing '" << part << "' in: " << m;
  m = message_of([&] { (void)matmul(Tensor::ones({3, 2}), gpu); });
  EXPECT_NE(m.find("matmul"), std::string::npos) << m;
  for (float x : mem) EXPECT_EQ(x, 9.0f);
}

TEST(DeviceDispatch, KernelDispatchRefusesViewsOnTwoDevices) {
  std::vector<float> a(4, 1.0f), b(4, 2.0f), c(4, 0.0f);
  TensorView in[2] = {TensorView{a.data(), DType::f32, {4}},
                      TensorView{b.data(), DType::f32, {4}, Device::cuda}};
  TensorView out[1] = {TensorView{c.data(), DType::f32, {4}}};
  std::string m = message_of([&] { kernel_forward(Op::add, OpAttrs{}, in, out); });
  EXPECT_NE(m.find("add"), std::string::npos) << m;
  EXPECT_NE(m.find("mixed devices"), std::string::npos) << m;
  EXPECT_EQ(c, std::vector<float>(4, 0.0f));
}

TEST(DeviceDispatch, GradientAccumulationRefusesMixedDevices) {
  std::vector<float> mem(3, 1.0f);
  Tensor g = tagged_cuda(mem, {3});
  Tensor a = Tensor::zeros({3});
  std::string m = message_of([&] { accumulate_into(a, g); });
  EXPECT_NE(m.find("cuda"), std::string::npos) << m;
  EXPECT_EQ(a.to_float_vector(), std::vector<float>(3, 0.0f));
}

TEST(DeviceDispatch, AccumulationAddsHalfIntoFloatAndFloatIntoHalf) {
  Tensor a = Tensor::from_vector({1, 2, 3}, {3});
  accumulate_into(a, Tensor::from_vector({0.5f, 0.25f, -1}, {3}, DType::f16));
  EXPECT_EQ(a.to_float_vector(), (std::vector<float>{1.5f, 2.25f, 2}));
  Tensor h = Tensor::from_vector({1, 2, 3}, {3}, DType::bf16);
  accumulate_into(h, Tensor::from_vector({1, 1, 1}, {3}));
  EXPECT_EQ(h.dtype(), DType::bf16);
  EXPECT_EQ(h.to_float_vector(), (std::vector<float>{2, 3, 4}));
}
