// Walks the op table: for every op, every registered case and every storage
// dtype, the CPU kernels are checked against the double-precision reference
// (forward, all outputs, and backward), sentinels after each output must be
// intact, and the reference backward is checked against central finite
// differences of the reference forward.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "op_harness.h"

namespace strata::testing {

std::map<Op, CaseFn>& case_registry() {
  static std::map<Op, CaseFn> r;
  return r;
}

namespace {

struct Param {
  Op op;
  size_t index;
  DType dtype;
};

std::vector<Param> all_params(bool with_half) {
  std::vector<Param> ps;
  for (int i = 0; i < kOpCount; ++i) {
    Op op = static_cast<Op>(i);
    auto it = case_registry().find(op);
    if (it == case_registry().end()) continue;
    auto cases = it->second();
    for (size_t k = 0; k < cases.size(); ++k) {
      ps.push_back({op, k, DType::f32});
      if (with_half && cases[k].half) {
        ps.push_back({op, k, DType::f16});
        ps.push_back({op, k, DType::bf16});
      }
    }
  }
  return ps;
}

std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  auto c = case_registry()[p.param.op]()[p.param.index];
  std::string s = std::string(op_info(p.param.op).name) + "_" + c.label + "_" + dtype_name(p.param.dtype);
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

double tolerance(DType dt) {
  switch (dt) {
    case DType::f32:
      return 2e-5;
    case DType::f16:
      return 4e-3;
    case DType::bf16:
      return 3e-2;
    default:
      return 0;
  }
}

std::vector<double> random_vector(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

class OpTable : public ::testing::TestWithParam<Param> {
 protected:
  OpCase c() const { return case_registry()[GetParam().op]().at(GetParam().index); }
};

TEST(OpRegistry, EveryOpHasCasesAndKernels) {
  for (int i = 0; i < kOpCount; ++i) {
    Op op = static_cast<Op>(i);
    const OpInfo& info = op_info(op);
    EXPECT_TRUE(case_registry().count(op))
        << "op '" << info.name << "' has no test cases (tests/kernels/cases_*.cpp)";
    EXPECT_NE(reference_backend().ops[i].forward, nullptr) << info.name;
    EXPECT_NE(cpu_backend().ops[i].backward, nullptr) << info.name;
    EXPECT_GE(info.outputs, 1) << info.name;
  }
}

TEST_P(OpTable, CpuMatchesReference) {
  const Param p = GetParam();
  OpCase oc = c();
  const OpInfo& info = op_info(p.op);
  // inputs are drawn in the storage dtype, so both backends see identical values
  OpInputs in = make_inputs(p.op, oc, p.dtype, 17 + p.index);
  auto ref_probe = run_reference(p.op, oc.attrs, in, nullptr);
  auto go = random_vector(static_cast<size_t>(ref_probe.outputs[0].view.numel()), 99 + p.index);
  {  // round grad_out to the storage dtype so both backends see identical values
    Buffer g(p.dtype, ref_probe.outputs[0].view.shape);
    g.from_double(go);
    go = g.to_double();
  }
  auto ref = run_reference(p.op, oc.attrs, in, &go);
  auto got = run_cpu(p.op, oc.attrs, in, p.dtype, &go);
  double tol = tolerance(p.dtype) * oc.tol_scale;
  for (int o = 0; o < info.outputs; ++o) {
    EXPECT_TRUE(got.outputs[o].sentinel_intact()) << "output " << o << " overran its buffer";
    bool integer = !is_floating(got.outputs[o].view.dtype);
    if (integer && p.dtype != DType::f32) continue;  // rounding to half can create ties
    double err = scaled_error(got.outputs[o].to_double(), ref.outputs[o].to_double());
    EXPECT_LE(err, integer ? 0.0 : tol) << info.name << " output " << o << " (" << oc.label << ")";
  }
  for (int i = 0; i < info.inputs; ++i) {
    if (!(info.differentiable & (1u << i))) continue;
    EXPECT_TRUE(got.grad_inputs[i].sentinel_intact()) << "grad of input " << i << " overran its buffer";
    double err = scaled_error(got.grad_inputs[i].to_double(), ref.grad_inputs[i].to_double());
    EXPECT_LE(err, tol * 2) << info.name << " grad of input " << i << " (" << oc.label << ")";
    for (double v : got.grad_inputs[i].to_double()) ASSERT_TRUE(std::isfinite(v)) << "non-finite gradient";
  }
}

class OpGradient : public OpTable {};

// d/dx_j sum(out0 * R) by central differences vs the reference backward, in double.
TEST_P(OpGradient, ReferenceMatchesFiniteDifferences) {
  const Param p = GetParam();
  OpCase oc = c();
  const OpInfo& info = op_info(p.op);
  OpInputs in = make_inputs(p.op, oc, DType::f64, 5 + p.index);
  auto probe = run_reference(p.op, oc.attrs, in, nullptr);
  auto R = random_vector(static_cast<size_t>(probe.outputs[0].view.numel()), 7 + p.index);
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
    // check at most 64 coordinates spread over the tensor
    size_t stride = std::max<size_t>(1, x.size() / 64);
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

INSTANTIATE_TEST_SUITE_P(All, OpTable, ::testing::ValuesIn(all_params(true)), param_name);
INSTANTIATE_TEST_SUITE_P(All, OpGradient, ::testing::ValuesIn(all_params(false)), param_name);

}  // namespace
}  // namespace strata::testing
