// strata-bench train-step-lm: training-step throughput of a GPT config in tokens
// per second and its MFU against the dense GEMM rate measured on the same device
// in the same run (a bf16/fp16/fp32 n x n x n matmul through strata's own op,
// cuBLASLt on CUDA), as a ratio. Synthetic token ids resident on the device;
// forward, cross-entropy, backward, clipping-free AdamW step (the config's
// optimizer, its decay groups) per iteration, timed after warm-up with the
// device synchronised at both ends. FLOPs per token: the model's counter
// (models/registry.h, 6N + 12 L T C for GPT).
//   strata-bench train-step-lm --config configs/gpt2_124m.yaml [--device cpu|cuda]
//       [--context T] [--batch B] [--steps 10] [--warmup 2] [--gemm-n 4096]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "bench_args.h"
#include "core/autograd.h"
#include "core/ops.h"
#include "core/precision.h"
#include "core/random.h"
#include "kernels/cuda/runtime.h"
#include "kernels/device_ops.h"
#include "models/registry.h"
#include "registry.h"
#include "train/config/load.h"
#include "train/make_optimizer.h"

namespace strata::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// FLOP/s of an n x n x n matmul in the compute dtype of `precision`: the rate a
// training step's GEMMs could reach at best on this device.
double measured_gemm_flops(Device device, Precision precision, int64_t n) {
  AutocastGuard autocast(precision);
  const DType dt = precision == Precision::fp32 ? DType::f32 : compute_dtype();
  Generator g(3);
  Tensor a = cast(Tensor::normal({n, n}, 0.0, 1.0, g), dt).to(device);
  Tensor b = cast(Tensor::normal({n, n}, 0.0, 1.0, g), dt).to(device);
  NoGradGuard no_grad;
  Tensor c = matmul(a, b);  // warm-up: plans, workspaces, clocks
  dev::synchronize(device);
  const int reps = device == Device::cpu ? 2 : 10;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) c = matmul(a, b);
  dev::synchronize(device);
  return 2.0 * static_cast<double>(n) * n * n * reps / seconds_since(t0);
}

int train_step_lm_main(const std::vector<std::string>&, BenchCli& cli) {
  std::string config = "configs/gpt2_124m.yaml", which = "cuda";
  int64_t context = 0, batch = 0, gemm_n_arg = 0;
  int steps = 10, warmup = 2;
  cli.app.add_option("--config", config, "The GPT config")->capture_default_str();
  cli.app.add_option("--device", which, "Where to train")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cli.app.add_option("--context", context, "Tokens per sequence (default: the config's model.context)");
  cli.app.add_option("--batch", batch, "Sequences per step (default: the config's data.batch_size)");
  cli.app.add_option("--steps", steps, "Timed steps")->capture_default_str();
  cli.app.add_option("--warmup", warmup, "Untimed steps first")->capture_default_str();
  cli.app.add_option("--gemm-n", gemm_n_arg,
                     "Size of the GEMM whose rate MFU is measured against (default: "
                     "8192 on cuda, 1024 on cpu)");
  if (int rc = cli.parse(); rc >= 0) return rc;
  const Device device = which == "cuda" ? Device::cuda : Device::cpu;
  if (device == Device::cuda && cuda::device_status().device_count == 0) {
    std::printf("train-step-lm %s: SKIPPED: %s\n", config.c_str(), cuda::device_status().reason.c_str());
    return 0;
  }
  TrainConfig cfg = load_config(config);
  models::ModelSpec spec = models::spec_from_config(cfg);
  if (context > 0) spec.context = context;
  const int64_t B = batch > 0 ? batch : cfg.data.batch_size;
  const int64_t gemm_n = gemm_n_arg > 0 ? gemm_n_arg : device == Device::cuda ? 8192 : 1024;
  const Precision precision = precision_from_name(cfg.precision.dtype);
  const models::ModelEntry& entry = models::model_entry(spec.name);
  if (entry.task != "causal_lm") {
    std::fprintf(stderr, "train-step-lm: %s: model %s is not a language model\n", config.c_str(),
                 spec.name.c_str());
    return 2;
  }
  const int64_t T = spec.context, V = spec.vocab_size;
  auto model = entry.build(spec);
  model->to(device);
  auto opt = make_optimizer(cfg.optimizer, *model);
  Generator g(11);
  std::vector<int64_t> ids(static_cast<size_t>(B * (T + 1)));
  for (auto& id : ids) id = static_cast<int64_t>(g.next_u64() % static_cast<uint64_t>(V));
  std::vector<int64_t> in, tg;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      in.push_back(ids[static_cast<size_t>(b * (T + 1) + t)]);
      tg.push_back(ids[static_cast<size_t>(b * (T + 1) + t + 1)]);
    }
  Tensor x = Tensor::from_vector_i64(in, {B, T}).to(device);
  Tensor y = Tensor::from_vector_i64(tg, {B * T}).to(device);
  std::printf(
      "train-step-lm: %s, %ld parameters, batch %ld x context %ld, %s, %d steps after %d warm-up, %s\n",
      config.c_str(), static_cast<long>(model->num_parameters()), static_cast<long>(B), static_cast<long>(T),
      precision_name(precision), steps, warmup, device_name(device));
  Tensor loss;
  auto step = [&] {
    opt->zero_grad();
    {
      AutocastGuard autocast(precision);
      loss = cross_entropy(reshape((*model)(x), {B * T, V}), y);
    }
    loss.backward();
    NoGradGuard no_grad;
    opt->step();
  };
  for (int i = 0; i < warmup; ++i) step();
  dev::synchronize(device);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  dev::synchronize(device);
  const double secs = seconds_since(t0);
  const double tokens_per_s = static_cast<double>(B * T) * steps / secs;
  const double achieved = tokens_per_s * entry.train_flops(spec);
  const double peak = measured_gemm_flops(device, precision, gemm_n);
  std::printf("  %s: %10.0f tokens/s  %8.3f ms/step  loss %.4f\n", device_name(device), tokens_per_s,
              1e3 * secs / steps, loss.item());
  std::printf("  model FLOPs: %.3g per token, %.2f TFLOP/s achieved\n", entry.train_flops(spec),
              achieved / 1e12);
  std::printf("  peer: %ld^3 %s matmul in this run: %.2f TFLOP/s\n", static_cast<long>(gemm_n),
              precision_name(precision), peak / 1e12);
  std::printf("  ratio (MFU vs measured GEMM): %.3f\n", achieved / peak);
  return 0;
}

const BenchRegistrar train_step_lm_registrar("train-step-lm",
                                             "GPT training-step tokens/s and MFU against the GEMM rate "
                                             "measured in the same run (--config, --device cpu|cuda, "
                                             "--context, --batch)",
                                             train_step_lm_main);

}  // namespace
}  // namespace strata::bench
