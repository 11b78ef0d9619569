// The device axis of Tensor and Storage that can be checked without a GPU:
// storage from the host allocator (its statistics move), wrapped storage and its
// release callback, to(Device) on the host, copies and conversions through the
// device ops, and the errors for host access to a tensor whose storage says cuda
// (wrapped memory tagged cuda: nothing here ever dereferences it).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "core/ops.h"
#include "core/storage.h"
#include "core/tensor.h"
#include "kernels/runtime/allocator.h"

using namespace strata;

namespace {
// A tensor whose storage claims to be on cuda, over host bytes that must stay untouched.
Tensor fake_cuda_tensor(std::vector<float>& bytes, const Shape& shape, const std::string& name) {
  auto s = Storage::wrap(bytes.data(), bytes.size() * sizeof(float), Device::cuda);
  Tensor t = Tensor::from_storage(s, shape, DType::f32);
  t.set_name(name);
  return t;
}
}  // namespace

TEST(TensorDevice, HostStorageComesFromTheHostAllocator) {
  AllocatorStats before = host_allocator().stats();
  {
    Tensor t = Tensor::empty({1000}, DType::f32);
    EXPECT_EQ(t.device(), Device::cpu);
    EXPECT_EQ(t.storage()->allocator(), &host_allocator());
    AllocatorStats during = host_allocator().stats();
    EXPECT_GE(during.in_use_bytes, before.in_use_bytes + 4000);
    EXPECT_GT(during.allocations, before.allocations);
  }
  EXPECT_EQ(host_allocator().stats().in_use_bytes, before.in_use_bytes);
}

TEST(TensorDevice, ZerosFullAndFromVectorFillWhatEmptyLeaves) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16, DType::i64, DType::f64}) {
    Tensor z = Tensor::empty({5, 3}, dt);
    z.fill_(7.0);  // dirty the memory a later allocation may reuse
    z = Tensor();
    for (double v : Tensor::zeros({5, 3}, dt).to_float_vector()) EXPECT_EQ(v, 0.0) << dtype_name(dt);
    for (double v : Tensor::full({4}, -3.0, dt).to_float_vector()) EXPECT_EQ(v, -3.0) << dtype_name(dt);
  }
  EXPECT_EQ(Tensor::scalar(2.5, DType::bf16, Device::cpu).item(), 2.5);
}

TEST(TensorDevice, WrappedStorageIsViewedWithoutCopyAndReleasedOnce) {
  std::vector<float> mem{1, 2, 3, 4, 5, 6, 7};
  int released = 0;
  {
    auto s = Storage::wrap(mem.data(), mem.size() * sizeof(float), Device::cpu, [&] { ++released; });
    EXPECT_EQ(s->allocator(), nullptr);
    Tensor t = Tensor::from_storage(s, {2, 3}, DType::f32, 1);
    s.reset();
    EXPECT_EQ(t.data<float>(), mem.data() + 1);
    EXPECT_EQ(t.to_float_vector(), (std::vector<float>{2, 3, 4, 5, 6, 7}));
    t.fill_(0.5f);
    EXPECT_EQ(mem[0], 1.0f);
    EXPECT_EQ(mem[6], 0.5f);
    EXPECT_EQ(released, 0);
    EXPECT_THROW(Tensor::from_storage(t.storage(), {8}, DType::f32), ShapeError);  // 8 floats do not fit
  }
  EXPECT_EQ(released, 1);
}

TEST(TensorDevice, ToTheSameDeviceIsTheSameTensorAndCopiesGoThroughDeviceOps) {
  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(a.to(Device::cpu).same(a));
  Tensor t = transpose(a, 0, 1);  // [3, 2]
  Tensor v = a.view_as_shape({3, 2});
  Tensor c = v.clone();
  EXPECT_FALSE(c.storage() == v.storage());
  EXPECT_EQ(c.to_float_vector(), v.to_float_vector());
  Tensor h = a.to(DType::f16);
  Tensor back = Tensor::zeros({6});
  back.copy_(h);
  EXPECT_EQ(back.to_float_vector(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.to_float_vector(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(Tensor::from_vector_i64({5, -6}, {2}).to(DType::f32).to_float_vector(),
            (std::vector<float>{5, -6}));
}

TEST(TensorDevice, HostAccessToADeviceTensorNamesItAndSaysWhatToDo) {
  std::vector<float> mem(6, 123.0f);
  Tensor t = fake_cuda_tensor(mem, {2, 3}, "fc1.weight");
  EXPECT_EQ(t.device(), Device::cuda);
  TensorView v = t.view();
  EXPECT_EQ(v.device, Device::cuda);
  EXPECT_EQ(v.data, mem.data());
  try {
    (void)t.data<float>();
    FAIL() << "data<T>() on a cuda tensor did not throw";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("fc1.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda"), std::string::npos) << m;
    EXPECT_NE(m.find("to(Device::cpu)"), std::string::npos) << m;
    EXPECT_NE(m.find("view()"), std::string::npos) << m;
  }
  EXPECT_THROW((void)t.raw_data(), Error);
  EXPECT_EQ(t.to(Device::cuda).impl(), t.impl());  // already there: no copy
  for (float x : mem) EXPECT_EQ(x, 123.0f);        // nothing was written through the host
}
