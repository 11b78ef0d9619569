#include "op_suite.h"

#include <cctype>
#include <cmath>
#include <random>

namespace strata::testing {

std::vector<OpParam> op_params(bool with_half, const std::vector<BackendKind>& backends) {
  std::vector<OpParam> ps;
  for (BackendKind b : backends)
    for (int i = 0; i < kOpCount; ++i) {
      Op op = static_cast<Op>(i);
      auto it = case_registry().find(op);
      if (it == case_registry().end()) continue;
      auto cases = it->second();
      for (size_t k = 0; k < cases.size(); ++k) {
        ps.push_back({op, k, DType::f32, b});
        if (with_half && cases[k].half) {
          ps.push_back({op, k, DType::f16, b});
          ps.push_back({op, k, DType::bf16, b});
        }
      }
    }
  return ps;
}

void PrintTo(const OpParam& p, std::ostream* os) {
  *os << op_info(p.op).name << " case " << p.index << " (" << op_case(p).label << ") " << dtype_name(p.dtype)
      << " on " << backend_name(p.backend);
}

OpCase op_case(const OpParam& p) { return case_registry().at(p.op)().at(p.index); }

namespace {

std::string identifier(std::string s) {
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

}  // namespace

std::string op_case_name(const ::testing::TestParamInfo<OpParam>& p) {
  return identifier(std::string(op_info(p.param.op).name) + "_" + op_case(p.param).label + "_" +
                    dtype_name(p.param.dtype));
}

std::string op_param_name(const ::testing::TestParamInfo<OpParam>& p) {
  return identifier(op_case_name(p) + "_" + backend_name(p.param.backend));
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

void expect_backend_matches_reference(const OpParam& p) {
  OpCase oc = op_case(p);
  const OpInfo& info = op_info(p.op);
  // inputs are drawn in their storage dtypes, so both runs see identical values
  OpInputs in = make_inputs(p.op, oc, p.dtype, 17 + p.index);
  auto specs = output_specs(p.op, oc.attrs, in, p.dtype);
  // grad_out in output 0's storage dtype (f32 for a stat output beside half inputs)
  auto go =
      round_to(specs[0].dtype, random_vector(static_cast<size_t>(shape_numel(specs[0].shape)), 99 + p.index));
  auto ref = run_reference(p.op, oc.attrs, in, &go);
  // emulated: odd cases on buffers 8 bytes off 16-byte alignment (the
  // launchers' scalar paths), even cases aligned (their 16-byte vector paths)
  set_cuda_sim_shift(p.index % 2 == 1 ? 8 : 0);
  auto got = run_backend(p.backend, p.op, oc.attrs, in, p.dtype, &go);
  set_cuda_sim_shift(0);
  const char* where = backend_name(p.backend);
  double tol = tolerance(p.dtype) * oc.tol_scale;
  for (int o = 0; o < info.outputs; ++o) {
    const Buffer& out = got.outputs[o];
    EXPECT_TRUE(out.sentinel_intact()) << info.name << " output " << o << " overran its buffer on " << where;
    bool integer = !is_floating(out.view.dtype);
    if (integer && p.dtype != DType::f32) continue;  // rounding to half can create ties
    double err = scaled_error(out.to_double(), ref.outputs[o].to_double(), oc.error_scale);
    EXPECT_LE(err, integer ? 0.0 : tol)
        << info.name << " output " << o << " (" << oc.label << ") on " << where;
  }
  for (int i = 0; i < info.inputs; ++i) {
    if (!(info.differentiable & (1u << i))) continue;
    const Buffer& g = got.grad_inputs[i];
    EXPECT_TRUE(g.sentinel_intact()) << info.name << " grad of input " << i << " overran its buffer on "
                                     << where;
    auto gd = g.to_double();
    double err = scaled_error(gd, ref.grad_inputs[i].to_double(), oc.error_scale);
    EXPECT_LE(err, tol * 2) << info.name << " grad of input " << i << " (" << oc.label << ") on " << where;
    for (double v : gd) ASSERT_TRUE(std::isfinite(v)) << info.name << " non-finite gradient of input " << i;
  }
}

}  // namespace strata::testing
