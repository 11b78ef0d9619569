// strata-bench train-step: training-step throughput of a registered model on the
// GPU beside the same steps on the CPU, in one run, as a ratio. Synthetic
// Fashion-MNIST-shaped data resident on the device (the loader is measured by
// `strata-bench loader`); forward, cross-entropy, backward and an SGD step per
// iteration, timed after warm-up with the device synchronised at both ends.
//   strata-bench train-step [--model cnn|mlp] [--device cpu|cuda|both] [--batch 128]
//                           [--steps 30] [--warmup 5] [--precision fp32|bf16|fp16]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "bench_args.h"
#include "core/ops.h"
#include "core/precision.h"
#include "core/random.h"
#include "kernels/cuda/runtime.h"
#include "kernels/device_ops.h"
#include "models/registry.h"
#include "nn/optim/sgd.h"
#include "registry.h"

namespace strata::bench {
namespace {

struct StepResult {
  double samples_per_s = 0;
  double last_loss = 0;
};

StepResult run_steps(const std::string& model_name, Device device, int64_t batch, int steps, int warmup,
                     Precision precision) {
  models::ModelSpec spec;
  spec.name = model_name;
  spec.input_shape = {1, 28, 28};
  spec.num_classes = 10;
  spec.channels = {32, 64};
  spec.hidden = {128};
  spec.seed = 1;
  auto model = models::build_model(spec);
  model->to(device);
  SGD opt(model->named_parameters(), SGDOptions{.lr = 0.01, .momentum = 0.9});
  Generator g(7);
  Tensor x = Tensor::normal({batch, 1, 28, 28}, 0.0, 1.0, g).to(device);
  std::vector<int64_t> labels(static_cast<size_t>(batch));
  for (auto& l : labels) l = static_cast<int64_t>(g.next_u64() % 10);
  Tensor y = Tensor::from_vector_i64(labels, {batch}).to(device);
  AutocastGuard autocast(precision);
  Tensor loss;
  auto step = [&] {
    opt.zero_grad();
    loss = cross_entropy(cast(model->forward(x), DType::f32), y);
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < warmup; ++i) step();
  dev::synchronize(device);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  dev::synchronize(device);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return {static_cast<double>(batch) * steps / secs, loss.item()};
}

}  // namespace
}  // namespace strata::bench

namespace strata::bench {
namespace {

int train_step_main(const std::vector<std::string>&, BenchCli& cli) {
  std::string model = "cnn", which = "both", precision_name_arg = "fp32";
  int64_t batch = 128;
  int steps = 30, warmup = 5;
  cli.app.add_option("--model", model, "An image model of the registry (cnn, mlp, resnet)")
      ->capture_default_str();
  cli.app.add_option("--device", which, "Where to train")
      ->check(CLI::IsMember({"cpu", "cuda", "both"}))
      ->capture_default_str();
  cli.app.add_option("--batch", batch, "Samples per step")->capture_default_str();
  cli.app.add_option("--steps", steps, "Timed steps")->capture_default_str();
  cli.app.add_option("--warmup", warmup, "Untimed steps first")->capture_default_str();
  cli.app.add_option("--precision", precision_name_arg, "fp32, fp16 or bf16")->capture_default_str();
  if (int rc = cli.parse(); rc >= 0) return rc;
  Precision precision = precision_from_name(precision_name_arg);
  bool want_cuda = which != "cpu", want_cpu = which != "cuda";
  auto status = cuda::device_status();
  if (want_cuda && status.device_count == 0) {
    std::printf("train-step %s: SKIPPED: %s\n", model.c_str(), status.reason.c_str());
    return 0;
  }
  std::printf("train-step: model %s, batch %lld, %d steps after %d warm-up, %s\n", model.c_str(),
              static_cast<long long>(batch), steps, warmup, precision_name(precision));
  StepResult gpu, cpu;
  if (want_cuda) {
    gpu = run_steps(model, Device::cuda, batch, steps, warmup, precision);
    std::printf("  cuda (%s): %10.1f samples/s  (loss %.4f)\n", status.name.c_str(), gpu.samples_per_s,
                gpu.last_loss);
  }
  if (want_cpu) {
    // the CPU side runs fewer steps: it is the yardstick, not the subject
    int cpu_steps = want_cuda ? std::max(3, steps / 10) : steps;
    cpu = run_steps(model, Device::cpu, batch, cpu_steps, want_cuda ? 1 : warmup, precision);
    std::printf("  cpu:        %10.1f samples/s  (loss %.4f)\n", cpu.samples_per_s, cpu.last_loss);
  }
  if (want_cuda && want_cpu) std::printf("  ratio cuda/cpu: %.2f\n", gpu.samples_per_s / cpu.samples_per_s);
  return 0;
}

const BenchRegistrar train_step_registrar("train-step",
                                          "training-step samples/s of a model on cuda beside the cpu "
                                          "(--model cnn|mlp, --device cpu|cuda|both, --batch, --precision)",
                                          train_step_main);

}  // namespace
}  // namespace strata::bench
