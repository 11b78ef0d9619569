// Walks the op table on the CPU: for every op, every registered case and every
// storage dtype, the cpu backend (through kernel_forward/kernel_backward) is
// checked against the double-precision reference by the shared op suite
// (tests/kernels/op_suite.h; the cuda backend runs the same suite in
// tests/kernels/cuda/test_op_table_cuda.cpp), and the reference backward is checked
// against central finite differences of the reference forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/runtime/allocator.h"
#include "op_placement.h"
#include "op_suite.h"

namespace strata::testing {
namespace {

void expect_complete(const Backend& b) {
  for (int i = 0; i < kOpCount; ++i) {
    EXPECT_NE(b.ops[i].forward, nullptr) << b.name << " " << op_info(static_cast<Op>(i)).name << " forward";
    EXPECT_NE(b.ops[i].backward, nullptr) << b.name << " " << op_info(static_cast<Op>(i)).name << " backward";
  }
}

TEST(OpRegistry, EveryOpHasCasesAndKernels) {
  for (int i = 0; i < kOpCount; ++i) {
    Op op = static_cast<Op>(i);
    const OpInfo& info = op_info(op);
    EXPECT_TRUE(case_registry().count(op))
        << "op '" << info.name << "' has no test cases (tests/kernels/cases_*.cpp)";
    EXPECT_GE(info.outputs, 1) << info.name;
  }
  expect_complete(reference_backend());
  expect_complete(cpu_backend());
  if (cuda_backend_built())
    expect_complete(cuda_backend());  // a table of placeholders until every kernel lands
}

// Outputs start as NaN: a kernel that leaves an element unwritten (relying on
// zeroed memory) is an infinite error, so the check can fail on every op.
TEST(OpHarness, UnwrittenOutputsFailTheComparison) {
  for (DType dt : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    Buffer b(dt, {3});
    for (double v : b.to_double()) EXPECT_TRUE(std::isnan(v)) << dtype_name(dt);
    EXPECT_EQ(scaled_error(b.to_double(), {0, 0, 0}), INFINITY) << dtype_name(dt);
    EXPECT_EQ(scaled_error(b.to_double(), b.to_double()), INFINITY) << dtype_name(dt);
  }
  Buffer ids(DType::i64, {2});
  for (double v : ids.to_double()) EXPECT_LT(v, 0) << "integer outputs start as a negative garbage pattern";
  Buffer overrun(DType::f32, {2});
  EXPECT_TRUE(overrun.sentinel_intact());
  overrun.bytes[overrun.view.bytes()] = std::byte{0};
  EXPECT_FALSE(overrun.sentinel_intact());
}

// Host memory that calls itself cuda: lets the placement's device round trip
// (data and guard up, kernel writes and overruns back) run without a GPU.
class FakeDeviceMemory : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    ++live;
    return std::malloc(bytes);
  }
  void deallocate(void* p, size_t) override {
    --live;
    std::free(p);
  }
  Device device() const override { return Device::cuda; }
  const char* name() const override { return "fake device"; }
  AllocatorStats stats() const override { return {}; }
  int live = 0;
};

void copy_between_host_and_fake(const TensorView& src, const TensorView& dst) {
  EXPECT_NE(src.device, dst.device) << "a placement copy always crosses devices";
  ASSERT_EQ(src.bytes(), dst.bytes());
  std::memcpy(dst.data, src.data, src.bytes());
}

TEST(OpHarness, PlacementRoundTripsDataAndGuard) {
  FakeDeviceMemory mem;
  Buffer b(DType::f32, {4}), unused;
  b.from_double({1, 2, 3, 4});
  {
    Placement place(Device::cuda, mem, copy_between_host_and_fake);
    TensorView v = place.place(b);
    EXPECT_FALSE(place.place(unused).defined());
    EXPECT_EQ(v.device, Device::cuda);
    EXPECT_EQ(v.dtype, DType::f32);
    EXPECT_EQ(v.shape, b.view.shape);
    ASSERT_NE(v.data, b.view.data);
    EXPECT_EQ(std::memcmp(v.data, b.bytes.data(), b.bytes.size()), 0) << "data and guard go up";
    v.as<float>()[2] = 7;                                       // the "kernel" writes
    static_cast<std::byte*>(v.data)[v.bytes()] = std::byte{0};  // and overruns by one byte
    place.fetch(b);
    EXPECT_EQ(b.to_double(), (std::vector<double>{1, 2, 7, 4}));
    EXPECT_FALSE(b.sentinel_intact()) << "an overrun on the device shows on the host";
    EXPECT_EQ(mem.live, 1);
  }
  EXPECT_EQ(mem.live, 0) << "device copies are freed with the placement";
  Placement host(Device::cpu);
  EXPECT_EQ(host.place(b).data, b.view.data) << "cpu runs use the host buffers themselves";
}

class OpTable : public ::testing::TestWithParam<OpParam> {};

TEST_P(OpTable, MatchesReference) { expect_backend_matches_reference(GetParam()); }

class OpGradient : public ::testing::TestWithParam<OpParam> {};

// d/dx_j sum(out0 * R) by central differences vs the reference backward, in double.
TEST_P(OpGradient, ReferenceMatchesFiniteDifferences) {
  const OpParam p = GetParam();
  OpCase oc = op_case(p);
  const OpInfo& info = op_info(p.op);
  OpInputs in = make_inputs(p.op, oc, DType::f64, 5 + p.index);
  auto specs = output_specs(p.op, oc.attrs, in, DType::f64);
  auto R = random_vector(static_cast<size_t>(shape_numel(specs[0].shape)), 7 + p.index);
  auto analytic = run_reference(p.op, oc.attrs, in, &R);
  auto objective = [&](const OpInputs& x) {
    auto out = run_reference(p.op, oc.attrs, x, nullptr).outputs[0].to_double();
    double s = 0;
    for (size_t k = 0; k < out.size(); ++k) s += out[k] * R[k];
    return s;
  };
  for (int i = 0; i < info.inputs; ++i) {
    if (!(info.differentiable & (1u << i)) || oc.inputs[i].constant) continue;
    auto x = in.buffers[i].to_double();
    auto g = analytic.grad_inputs[i].to_double();
    // check coordinates spread over the tensor: 64 up to 4,096 elements, fewer
    // beyond, 8 from 32,768 on. Each coordinate costs two whole reference runs,
    // and the large cases (there for the CPU kernels' blocked paths, OpTable
    // above) run the same reference code as the small ones; 64 on them took 90%
    // of this test's time
    const size_t coords = std::clamp<size_t>(64 * 4096 / std::max<size_t>(x.size(), 1), 8, 64);
    size_t stride = std::max<size_t>(1, x.size() / coords);
    for (size_t j = 0; j < x.size(); j += stride) {
      OpInputs plus = convert_inputs(in, DType::f64), minus = convert_inputs(in, DType::f64);
      auto xp = x, xm = x;
      xp[j] += oc.fd_step;
      xm[j] -= oc.fd_step;
      plus.buffers[i].from_double(xp);
      minus.buffers[i].from_double(xm);
      double fd = (objective(plus) - objective(minus)) / (2 * oc.fd_step);
      EXPECT_NEAR(g[j], fd, 1e-5 * std::max(1.0, std::fabs(fd)))
          << info.name << " (" << oc.label << ") input " << i << " element " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, OpTable, ::testing::ValuesIn(op_params(true, {BackendKind::cpu})),
                         op_param_name);
INSTANTIATE_TEST_SUITE_P(All, OpGradient, ::testing::ValuesIn(op_params(false, {BackendKind::cpu})),
                         op_case_name);

}  // namespace
}  // namespace strata::testing
