// batch_norm and layer_norm on CUDA (gpu label) against the CPU kernels on the
// same rounded inputs: x in f32/f16/bf16, gamma/beta/running stats in f32 (the
// mixed-precision layout) or in x's dtype; every output, the in-place running
// statistics, and every gradient. Device outputs start as NaN, so an element a
// kernel leaves unwritten fails. Shapes include ones whose reductions split a
// channel (or the rows) over many blocks. SKIPPED without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "kernels/backends.h"
#include "kernels/cuda/runtime.h"

#if STRATA_HAVE_CUDA
#include "device_buffer.h"
#endif

namespace strata {
namespace {

#if STRATA_HAVE_CUDA

using gpu_test::DeviceTensor;
using gpu_test::HostTensor;

double tolerance(DType dt) { return dt == DType::f32 ? 2e-5 : dt == DType::f16 ? 4e-3 : 3e-2; }

std::vector<double> as_double(const HostTensor& t) { return {t.values.begin(), t.values.end()}; }

struct Dtypes {
  DType x, param;
};

class CudaNorm : public ::testing::TestWithParam<Dtypes> {
 protected:
  void SetUp() override {
    auto st = cuda::device_status();
    if (st.device_count == 0) GTEST_SKIP() << st.reason;
  }
};

// Runs `op` on the CPU and on CUDA with the same inputs and compares everything.
// inputs[0] is x; the rest are parameters (and batch_norm's running stats).
void compare(Op op, const OpAttrs& a, std::vector<HostTensor> inputs, const std::string& what) {
  const OpInfo& info = op_info(op);
  DType xdt = inputs[0].dtype;
  std::vector<OutputSpec> specs;
  for (auto& t : inputs) specs.push_back({t.shape, t.dtype});
  auto out_specs = info.infer(specs, a);
  std::mt19937_64 rng(99);
  HostTensor gout(xdt, out_specs[0].shape);
  gout.uniform(rng, -1, 1);

  std::vector<std::unique_ptr<DeviceTensor>> dev_in;
  for (auto& t : inputs) dev_in.push_back(std::make_unique<DeviceTensor>(t));
  std::vector<HostTensor> cpu_out, gpu_out, cpu_grad, gpu_grad;
  std::vector<std::unique_ptr<DeviceTensor>> dev_out, dev_grad;
  for (auto& s : out_specs) {
    cpu_out.emplace_back(s.dtype, s.shape);
    gpu_out.emplace_back(s.dtype, s.shape);
    dev_out.push_back(std::make_unique<DeviceTensor>(gpu_out.back(), false));
  }
  for (int i = 0; i < info.inputs; ++i) {
    bool wanted = (info.differentiable >> i) & 1u;
    cpu_grad.emplace_back(inputs[static_cast<size_t>(i)].dtype,
                          wanted ? inputs[static_cast<size_t>(i)].shape : Shape{0});
    gpu_grad.emplace_back(cpu_grad.back().dtype, cpu_grad.back().shape);
    dev_grad.push_back(std::make_unique<DeviceTensor>(gpu_grad.back(), false));
  }
  auto views = [](auto& ts) {
    std::vector<TensorView> v;
    for (auto& t : ts) v.push_back(t->view());
    return v;
  };
  std::vector<TensorView> hin, hout, hgrad;
  for (auto& t : inputs) hin.push_back(t.view());
  for (auto& t : cpu_out) hout.push_back(t.view());
  for (int i = 0; i < info.inputs; ++i)
    hgrad.push_back((info.differentiable >> i) & 1u ? cpu_grad[static_cast<size_t>(i)].view() : TensorView{});
  std::vector<TensorView> din = views(dev_in), dout = views(dev_out), dgrad = views(dev_grad);
  for (int i = 0; i < info.inputs; ++i)
    if (!((info.differentiable >> i) & 1u)) dgrad[static_cast<size_t>(i)] = TensorView{};

  cpu_forward(op, a, hin.data(), hout.data());
  kernel_forward(op, a, din.data(), dout.data());
  cpu_backward(op, a, hin.data(), hout.data(), gout.view(), hgrad.data());
  DeviceTensor dgo(gout);
  kernel_backward(op, a, din.data(), dout.data(), dgo.view(), dgrad.data());
  // the CPU kernels wrote bits (and the running statistics in place): values from them
  for (auto* ts : {&cpu_out, &cpu_grad, &inputs})
    for (auto& t : *ts) t.decode();

  for (size_t i = 0; i < cpu_out.size(); ++i) {
    dev_out[i]->to_host(gpu_out[i]);
    if (cpu_out[i].dtype == DType::i32)  // indices: exactly
      EXPECT_EQ(gpu_out[i].values, cpu_out[i].values) << what << ": output " << i;
    else
      EXPECT_LE(gpu_test::scaled_error(gpu_out[i].values, as_double(cpu_out[i])), tolerance(cpu_out[i].dtype))
          << what << ": output " << i;
  }
  for (size_t i = 1; i < inputs.size(); ++i) {  // batch_norm's running stats change in place
    HostTensor after(inputs[i].dtype, inputs[i].shape);
    dev_in[i]->to_host(after);
    EXPECT_LE(gpu_test::scaled_error(after.values, as_double(inputs[i])), tolerance(inputs[i].dtype))
        << what << ": input " << i << " after the call";
  }
  for (int i = 0; i < info.inputs; ++i) {
    if (!((info.differentiable >> i) & 1u)) continue;
    dev_grad[static_cast<size_t>(i)]->to_host(gpu_grad[static_cast<size_t>(i)]);
    EXPECT_LE(gpu_test::scaled_error(gpu_grad[static_cast<size_t>(i)].values,
                                     as_double(cpu_grad[static_cast<size_t>(i)])),
              tolerance(cpu_grad[static_cast<size_t>(i)].dtype))
        << what << ": grad of input " << i;
  }
}

std::vector<HostTensor> norm_inputs(Dtypes d, const Shape& x, int64_t params, int nparams, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<HostTensor> in;
  in.emplace_back(d.x, x);
  in.back().uniform(rng, -2, 2);
  for (int i = 0; i < nparams; ++i) {
    in.emplace_back(d.param, Shape{params});
    bool positive = i == 0 || i == 3;  // gamma, running_var
    in.back().uniform(rng, positive ? 0.5f : -0.5f, positive ? 1.5f : 0.5f);
  }
  return in;
}

TEST_P(CudaNorm, BatchNormMatchesCpu) {
  Dtypes d = GetParam();
  for (const Shape& x :
       {Shape{4, 3, 5, 6}, Shape{64, 40}, Shape{8, 16, 33, 33}, Shape{32, 4, 64, 64}, Shape{0, 3}})
    for (bool training : {true, false})
      for (bool relu : {false, true})      // relu: the fused ReLU, its mask recomputed from x backward
        for (bool pool : {false, true}) {  // the fused 2x2 max pool (4-d only; 5x6 and 33x33: odd sides)
          if ((training && x[0] == 0) || (pool && x.size() != 4)) continue;
          OpAttrs a;
          a.training = training;
          a.momentum = 0.2;
          a.relu = relu;
          a.max_pool_2x2 = pool;
          std::string what = std::string("batch_norm x ") + dtype_name(d.x) + shape_str(x) + " params " +
                             dtype_name(d.param) + (training ? " train" : " eval") + (relu ? " relu" : "") +
                             (pool ? " pool" : "");
          auto inputs = norm_inputs(d, x, x[1], 4, 5);
          if (pool) {
            // x on a grid of 1/64: a window's values tie exactly (both backends
            // take the first) or differ by far more than the backends' rounding
            // of bn(x) (their batch means differ in the last bits), so both find
            // the same maximum and send the gradient to the same cell
            std::vector<float> grid = inputs[0].values;
            for (float& v : grid) v = std::round(v * 64.0f) / 64.0f;
            inputs[0].set(grid);
          }
          compare(Op::batch_norm, a, std::move(inputs), what);
        }
}

TEST_P(CudaNorm, LayerNormMatchesCpu) {
  Dtypes d = GetParam();
  for (const Shape& x : {Shape{6, 40}, Shape{3, 5, 771}, Shape{1000, 256}, Shape{0, 6}}) {
    std::string what =
        std::string("layer_norm x ") + dtype_name(d.x) + shape_str(x) + " params " + dtype_name(d.param);
    compare(Op::layer_norm, OpAttrs{}, norm_inputs(d, x, x.back(), 2, 6), what);
  }
}

INSTANTIATE_TEST_SUITE_P(Storage, CudaNorm,
                         ::testing::Values(Dtypes{DType::f32, DType::f32}, Dtypes{DType::f16, DType::f32},
                                           Dtypes{DType::bf16, DType::f32}, Dtypes{DType::f16, DType::f16},
                                           Dtypes{DType::bf16, DType::bf16}),
                         [](const ::testing::TestParamInfo<Dtypes>& p) {
                           return std::string(dtype_name(p.param.x)) + "_params_" + dtype_name(p.param.param);
                         });

#else

TEST(CudaNorm, NeedsACudaBuild) {
  GTEST_SKIP() << "built without the CUDA backend (STRATA_CUDA=OFF or no nvcc)";
}

#endif

}  // namespace
}  // namespace strata
