// The one device dispatch (kernels/runtime/dispatch_stub.h) and the one views-share-a-
// device check (kernels/runtime/view_device.h) behind the op table, the device ops and
// the metric ops: views on two devices are refused naming both roles and both
// devices, undefined views and absent arrays are passed over, and a device no
// backend registered is a clear error. Views tagged cuda point at host memory;
// every call that meets one here throws before touching it (a build without
// CUDA also checks that the stub backend's errors still say so).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/backends.h"
#include "kernels/device_ops.h"
#include "kernels/metric_ops.h"
#include "kernels/runtime/dispatch_stub.h"
#include "kernels/runtime/view_device.h"

namespace strata {
namespace {

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void expect_parts(const std::string& m, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(m.empty()) << "no error";
  for (const char* p : parts) EXPECT_NE(m.find(p), std::string::npos) << "missing '" << p << "' in: " << m;
}

TensorView f32(std::vector<float>& v, Device d = Device::cpu) {
  return TensorView{v.data(), DType::f32, {static_cast<int64_t>(v.size())}, d};
}

TEST(DispatchStub, OpTableNamesBothRolesAndDevices) {
  std::vector<float> a(4, 1.0f), b(4, 2.0f), c(4, 0.0f), go(4, 1.0f), ga(4, 0.0f);
  TensorView in[2] = {f32(a), f32(b, Device::cuda)};
  TensorView out[1] = {f32(c)};
  expect_parts(message_of([&] { kernel_forward(Op::add, OpAttrs{}, in, out); }),
               {"add: ", "input 1 is on cuda", "input 0 is on cpu", "mixed devices"});
  EXPECT_EQ(c, std::vector<float>(4, 0.0f));

  TensorView cpu_in[2] = {f32(a), f32(b)};
  kernel_forward(Op::add, OpAttrs{}, cpu_in, out);
  EXPECT_EQ(c, std::vector<float>(4, 3.0f));
  TensorView grad_in[2] = {f32(ga), TensorView{}};
  expect_parts(
      message_of([&] { kernel_backward(Op::add, OpAttrs{}, cpu_in, out, f32(go, Device::cuda), grad_in); }),
      {"add: ", "grad_output is on cuda", "input 0 is on cpu"});
  EXPECT_EQ(ga, std::vector<float>(4, 0.0f));
  // a gradient slot not asked for is not a view, whatever its device tag: the CPU runs
  grad_in[1] = TensorView{nullptr, DType::f32, {4}, Device::cuda};
  kernel_backward(Op::add, OpAttrs{}, cpu_in, out, f32(go), grad_in);
  EXPECT_EQ(ga, std::vector<float>(4, 1.0f));
}

TEST(DispatchStub, DeviceOpsNameBothRolesAndDevices) {
  std::vector<float> x(4, 1.0f), y(4, 2.0f), m(4, 0.0f);
  expect_parts(message_of([&] { dev::axpy(1.0, f32(x), f32(y, Device::cuda)); }),
               {"device op axpy: ", "y is on cuda", "x is on cpu", "mixed devices"});
  EXPECT_EQ(y, std::vector<float>(4, 2.0f));

  // arrays: the offending view is named with its index; an absent array (buf) is skipped
  TensorView w[2] = {f32(x), f32(y)}, g[2] = {f32(m), f32(m, Device::cuda)};
  expect_parts(message_of([&] { dev::sgd_step(w, g, nullptr, 2, dev::SgdStep{}); }),
               {"device op sgd_step: ", "g 1 is on cuda", "w 0 is on cpu"});
  TensorView mv[2] = {f32(m), f32(m)}, vv[2] = {f32(m), f32(m, Device::cuda)};
  expect_parts(message_of([&] { dev::adamw_step(w, w, mv, vv, 2, dev::AdamWStep{}); }),
               {"device op adamw_step: ", "v 1 is on cuda", "w 0 is on cpu"});

  std::vector<float> out(1, 0.0f);
  expect_parts(message_of([&] {
                 dev::sum_of_squares(w, 2, TensorView{out.data(), DType::f32, {}, Device::cuda});
               }),
               {"device op sum_of_squares: ", "out is on cuda", "xs 0 is on cpu"});
  dev::synchronize(Device::cpu);  // a no-op
}

TEST(DispatchStub, MetricOpsNameBothRolesAndDevices) {
  std::vector<float> logits = {1, 2, 0, 5};
  std::vector<int64_t> labels = {1, 0};
  double top1 = 0, top5 = 0, acc = 0;
  float loss = 0.5f;
  TensorView lv{logits.data(), DType::f32, {2, 2}}, labv{labels.data(), DType::i64, {2}};
  TensorView t1{&top1, DType::f64, {}}, t5_cuda{&top5, DType::f64, {}, Device::cuda};
  expect_parts(message_of([&] { dev::count_hits(lv, labv, t1, t5_cuda); }),
               {"metric op count_hits: ", "top5 is on cuda", "logits is on cpu", "mixed devices"});
  EXPECT_EQ(top1, 0.0);
  expect_parts(message_of([&] {
                 dev::add_scaled(TensorView{&loss, DType::f32, {}}, 2.0,
                                 TensorView{&acc, DType::f64, {}, Device::cuda});
               }),
               {"metric op add_scaled: ", "acc is on cuda", "x is on cpu"});
  EXPECT_EQ(acc, 0.0);

  // top5 is optional: undefined, it is skipped whatever its device tag
  dev::count_hits(lv, labv, t1, TensorView{nullptr, DType::f64, {}, Device::cuda});
  EXPECT_EQ(top1, 1.0);
}

TEST(DispatchStub, CommonDeviceSkipsUndefinedViewsAndAbsentArrays) {
  std::vector<float> a(2), b(2);
  TensorView none{nullptr, DType::f32, {2}, Device::cuda};
  EXPECT_EQ(common_device("t", {}), Device::cpu);
  EXPECT_EQ(common_device("t", {{"x", none}}), Device::cpu);
  TensorView arr[2] = {none, f32(a, Device::cuda)};
  EXPECT_EQ(common_device("t", {{"x", f32(b, Device::cuda)}, {"w", arr, 2}, {"buf", nullptr, 2}}),
            Device::cuda);
  expect_parts(message_of([&] {
                 common_device("t", {{"w", arr, 2}, {"y", f32(b)}});
               }),
               {"t: y is on cpu but w 1 is on cuda"});
}

int twice(int x) { return 2 * x; }

TEST(DispatchStub, UnregisteredBackendIsAClearError) {
  DispatchStub<int(int)> stub{"test op"};
  stub.set(Device::cpu, &twice);
  EXPECT_EQ(stub(Device::cpu, 21), 42);
  expect_parts(message_of([&] { stub(Device::cuda, 1); }),
               {"test op", "no implementation registered", "cuda"});
  expect_parts(message_of([&] { stub(static_cast<Device>(7), 1); }), {"test op", "device 7"});
}

// Only in a build without CUDA (the sanitizer builds of scripts/test.sh run it):
// with CUDA the cuda column holds the real kernels, and a skip here would be a
// skip reason the suite does not allow (tests/support/allowed_skips.txt).
#if !defined(STRATA_HAVE_CUDA)
TEST(DispatchStub, WithoutCudaTheCudaColumnSaysSo) {
  std::vector<float> a(4), b(4), c(4);
  TensorView in[2] = {f32(a, Device::cuda), f32(b, Device::cuda)};
  TensorView out[1] = {f32(c, Device::cuda)};
  expect_parts(message_of([&] { kernel_forward(Op::add, OpAttrs{}, in, out); }),
               {"a tensor is on cuda, but strata was built without CUDA"});
  expect_parts(message_of([&] { dev::fill(f32(a, Device::cuda), 1.0); }),
               {"device op fill on a cuda tensor, but strata was built without CUDA"});
  double acc = 0;
  float x = 1;
  expect_parts(message_of([&] {
                 dev::add_scaled(TensorView{&x, DType::f32, {}, Device::cuda}, 1.0,
                                 TensorView{&acc, DType::f64, {}, Device::cuda});
               }),
               {"metric op add_scaled on a cuda tensor, but strata was built without CUDA"});
  dev::synchronize(Device::cuda);  // a no-op without CUDA, as before
}
#endif

}  // namespace
}  // namespace strata
