// The CUDA elementwise, reduction, layout and dropout kernels against the CPU
// backend, forward and backward, in f32 / f16 / bf16 storage, on shapes that
// reach every launch path: same-shape vectorised and odd sizes, broadcasts
// (bias rows, columns, both sides, scalars), row and column reductions with and
// without split partial sums, permutes that keep or move the last axis, concat
// and slice along inner and outer axes. Device outputs start as NaN so a kernel
// that leaves an element unwritten fails. Dropout masks must equal the CPU's
// exactly (same counter RNG). SKIPPED without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "device_buffer.h"
#include "kernels/backends.h"
#include "kernels/cuda/runtime.h"
#include "kernels/device_ops_backends.h"
#include "kernels/runtime/allocator.h"
#include "kernels/runtime/half.h"

namespace strata {
namespace {

// A tensor kept as host bytes (in its dtype) and a device copy (gpu_test::DeviceMemory).
struct Buf {
  std::vector<unsigned char> host;
  gpu_test::DeviceMemory mem;
  TensorView h, d;
  Buf(DType dt, const Shape& s)
      : host(std::max<size_t>(static_cast<size_t>(shape_numel(s)) * dtype_size(dt), 1)),
        mem(host.size()),
        h{host.data(), dt, s, Device::cpu},
        d{mem.data, dt, s, Device::cuda} {}

  void set(const std::vector<float>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (h.dtype == DType::f32) h.as<float>()[i] = v[i];
      if (h.dtype == DType::f16) h.as<uint16_t>()[i] = float_to_f16_bits(v[i]);
      if (h.dtype == DType::bf16) h.as<uint16_t>()[i] = float_to_bf16_bits(v[i]);
    }
    if (h.bytes()) cuda_dev::copy(h, d);
  }
  static float value(const TensorView& v, size_t i) {
    if (v.dtype == DType::f16) return f16_bits_to_float(v.as<uint16_t>()[i]);
    if (v.dtype == DType::bf16) return bf16_bits_to_float(v.as<uint16_t>()[i]);
    return v.as<float>()[i];
  }
  // the device result, as floats
  std::vector<float> device_values() {
    std::vector<unsigned char> tmp(host.size());
    TensorView t = h;
    t.data = tmp.data();
    if (h.bytes()) cuda_dev::copy(d, t);
    std::vector<float> r(static_cast<size_t>(h.numel()));
    for (size_t i = 0; i < r.size(); ++i) r[i] = value(t, i);
    return r;
  }
  void poison() { cuda_dev::fill(d, std::numeric_limits<double>::quiet_NaN()); }
};

std::vector<float> randoms(int64_t n, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(rng);
  return v;
}

double tolerance(DType dt) { return dt == DType::f32 ? 1e-5 : dt == DType::f16 ? 2e-3 : 1.6e-2; }

// sum_bound[i], when given: the most two f32 summations of output i's terms may
// differ by in other orders (a reduction's own rounding, apart from the output's).
void expect_close(const TensorView& cpu, Buf& gpu, DType dt, const std::string& what, bool exact = false,
                  const std::vector<double>* sum_bound = nullptr) {
  auto g = gpu.device_values();
  double tol = tolerance(dt);
  for (size_t i = 0; i < g.size(); ++i) {
    float c = Buf::value(cpu, i);
    if (exact)
      ASSERT_EQ(g[i], c) << what << " element " << i;
    else
      ASSERT_NEAR(g[i], c, tol * (1 + std::fabs(c)) + (sum_bound ? (*sum_bound)[i] : 0.0))
          << what << " element " << i;
  }
}

// For sum and mean: a sum of n terms in f32 rounds by up to about
// (log2 n + 1) * 2^-24 * sum|x| in a blocked or tree order, whatever its result:
// the CPU and the GPU add in different orders, so with terms of both signs the
// results can differ by far more than 1e-5 of the (cancelled, small) sum. Seen
// on the H200 (2026-12-04): sum over 8192 rows, 2.26872 against 2.26867. The
// bound is twice that, per output, from the op run again on |x|.
std::vector<double> summation_bound(Op op, const OpAttrs& a, const std::vector<TensorView>& in_h,
                                    const OutputSpec& out) {
  std::vector<float> abs_values(static_cast<size_t>(in_h[0].numel()));
  for (size_t i = 0; i < abs_values.size(); ++i) abs_values[i] = std::fabs(Buf::value(in_h[0], i));
  TensorView abs_in{abs_values.data(), DType::f32, in_h[0].shape, Device::cpu};
  std::vector<float> s(static_cast<size_t>(shape_numel(out.shape)));
  TensorView abs_out{s.data(), DType::f32, out.shape, Device::cpu};
  cpu_forward(op, a, &abs_in, &abs_out);
  const double n = static_cast<double>(in_h[0].numel()) / std::max<double>(1, static_cast<double>(s.size()));
  std::vector<double> bound(s.size());
  for (size_t i = 0; i < s.size(); ++i) bound[i] = 2 * (std::log2(std::max(n, 1.0)) + 1) * 0x1p-24 * s[i];
  return bound;
}

// Runs op forward and backward on both backends and compares every output and gradient.
void check(Op op, const OpAttrs& a, const std::vector<Shape>& shapes, DType dt, bool exact = false) {
  const OpInfo& info = op_info(op);
  std::string what = std::string(info.name) + " " + dtype_name(dt);
  for (auto& s : shapes) {
    what += ' ';
    what += shape_str(s);
  }
  std::mt19937 rng(static_cast<uint32_t>(shapes.size() * 131 + static_cast<size_t>(op)));
  std::vector<OutputSpec> specs;
  for (auto& s : shapes) specs.push_back({s, dt});
  auto out_specs = info.infer(specs, a);

  std::vector<std::unique_ptr<Buf>> in, out, gin;
  std::vector<TensorView> in_h, in_d, out_h, out_d, gin_h, gin_d;
  for (size_t i = 0; i < shapes.size(); ++i) {
    in.push_back(std::make_unique<Buf>(dt, shapes[i]));
    bool divisor = op == Op::div && i == 1;  // keep b away from 0
    in.back()->set(randoms(in.back()->h.numel(), rng, divisor ? 0.5f : -2.0f, 2.0f));
    in_h.push_back(in.back()->h);
    in_d.push_back(in.back()->d);
  }
  for (auto& o : out_specs) {
    out.push_back(std::make_unique<Buf>(o.dtype, o.shape));
    out.back()->poison();
    out_h.push_back(out.back()->h);
    out_d.push_back(out.back()->d);
  }
  cpu_forward(op, a, in_h.data(), out_h.data());
  kernel_forward(op, a, in_d.data(), out_d.data());
  std::vector<double> sum_bound;
  const bool summation = op == Op::sum || op == Op::mean;
  if (summation) sum_bound = summation_bound(op, a, in_h, out_specs[0]);
  for (size_t k = 0; k < out.size(); ++k)
    expect_close(out_h[k], *out[k], dt, what + " output " + std::to_string(k), exact,
                 summation ? &sum_bound : nullptr);

  Buf go(dt, out_specs[0].shape);
  go.set(randoms(go.h.numel(), rng, -1.0f, 1.0f));
  for (size_t i = 0; i < shapes.size(); ++i) {
    gin.push_back(std::make_unique<Buf>(dt, shapes[i]));
    gin.back()->poison();
    bool diff = (info.differentiable >> i) & 1u;
    gin_h.push_back(diff ? gin.back()->h : TensorView{});
    gin_d.push_back(diff ? gin.back()->d : TensorView{});
  }
  cpu_backward(op, a, in_h.data(), out_h.data(), go.h, gin_h.data());
  // the device backward sees its own forward outputs
  kernel_backward(op, a, in_d.data(), out_d.data(), go.d, gin_d.data());
  for (size_t i = 0; i < shapes.size(); ++i)
    if (gin_h[i].defined()) expect_close(gin_h[i], *gin[i], dt, what + " grad " + std::to_string(i), exact);
}

class CudaEwOps : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    auto st = cuda::device_status();
    if (st.device_count == 0) GTEST_SKIP() << st.reason;
  }
};

TEST_P(CudaEwOps, BinaryOpsWithBroadcasting) {
  std::vector<std::vector<Shape>> cases = {{{37, 53}, {37, 53}}, {{64, 1100}, {64, 1100}}, {{4, 3, 6}, {6}},
                                           {{4, 3, 6}, {3, 1}},  {{4, 1, 6}, {1, 3, 1}},   {{2, 7}, {}},
                                           {{}, {5, 3}},         {{512, 768}, {768}}};
  for (Op op : {Op::add, Op::sub, Op::mul, Op::div})
    for (auto& c : cases) check(op, {}, c, GetParam());
}

TEST_P(CudaEwOps, Activations) {
  for (Op op : {Op::relu, Op::gelu, Op::tanh, Op::sigmoid})
    for (Shape s : {Shape{3, 7}, Shape{40, 2000}, Shape{1}}) check(op, {}, {s}, GetParam());
}

TEST_P(CudaEwOps, SumAndMeanOverAxes) {
  struct R {
    Shape s;
    std::vector<int64_t> axes;
    bool keep;
  };
  std::vector<R> cases = {
      {{4, 5, 6}, {}, false},          {{4, 5, 6}, {-1}, false},  {{4, 5, 6}, {0}, true},
      {{4, 5, 6}, {1}, false},         {{4, 5, 6}, {0, 2}, true}, {{300, 1000}, {1}, false},
      {{8192, 64}, {0}, false},        {{3, 100000}, {1}, true},  {{100000, 3}, {1}, false},
      {{2, 300, 5, 7}, {1, 3}, false}, {{2048, 1024}, {}, false}};
  for (Op op : {Op::sum, Op::mean})
    for (auto& c : cases) {
      OpAttrs a;
      a.axes = c.axes;
      a.keepdim = c.keep;
      check(op, a, {c.s}, GetParam());
    }
}

TEST_P(CudaEwOps, LayoutOpsMoveDataExactly) {
  DType dt = GetParam();
  OpAttrs r;
  r.shape = {6, -1};
  check(Op::reshape, r, {{4, 6}}, dt, true);
  for (std::vector<int64_t> axes : {std::vector<int64_t>{3, 1, 0, 2}, {0, 1, 3, 2}, {1, 0}}) {
    OpAttrs p;
    p.axes = axes;
    check(Op::permute, p, {axes.size() == 2 ? Shape{33, 65} : Shape{2, 3, 4, 5}}, dt, true);
  }
  for (int64_t axis : {0, 1, -1}) {
    OpAttrs c;
    c.axis = axis;
    Shape b = {2, 3, 4};
    b[static_cast<size_t>(axis < 0 ? 2 : axis)] = 5;
    check(Op::concat, c, {{2, 3, 4}, b}, dt, true);
  }
  for (auto [axis, start, end] : {std::tuple<int64_t, int64_t, int64_t>{1, 2, 7}, {0, -3, 100}, {2, 0, 1}}) {
    OpAttrs s;
    s.axis = axis;
    s.start = start;
    s.end = end;
    check(Op::slice, s, {{4, 10, 3}}, dt, true);
  }
}

TEST_P(CudaEwOps, DropoutMaskEqualsTheCpuMask) {
  for (bool training : {true, false}) {
    OpAttrs a;
    a.p = 0.3;
    a.training = training;
    a.seed = 1234;
    check(Op::dropout, a, {{1000, 37}}, GetParam(), true);
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaEwOps, ::testing::Values(DType::f32, DType::f16, DType::bf16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace strata
